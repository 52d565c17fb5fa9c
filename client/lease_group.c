/* SPDX-License-Identifier: MIT */
/*
 * lease_group.c -- a mirrored or striped lease's handle (lease.h's
 * struct rmpc_group over group.h's member states): made over its members,
 * kept by a cluster's keeper, renewed member by member, and what it says
 * of itself and of each member.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chan.h"
#include "ec_lease.h"
#include "fault.h"
#include "group.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"
#include "stripe.h"
#include "util.h"

_Static_assert(sizeof(((struct rmpc_member_at *)0)->host) ==
	       RMP_TOKEN_HOST_MAX + 1, "a member's host is a token's");

/* group_layout_ok -- m fits the layout: members in no group, each
 * holding its stripe's part of length bytes, the replicas of a stripe on
 * distinct clients; a stripe may miss members (NULL), not all. */
static bool group_layout_ok(struct rmp_lease *const *m, unsigned stripes,
			    unsigned replicas, uint64_t unit, uint64_t length)
{
	for (unsigned s = 0; s < stripes; s++) {
		uint64_t need = stripes == 1 ? length :
				rmpc_stripe_size(stripes, unit, length, s);
		unsigned have = 0;

		for (unsigned j = 0; j < replicas; j++) {
			const struct rmp_lease *x = m[s * replicas + j];

			if (!x)
				continue;
			if (x->group || x->length < need)
				return false;
			for (unsigned i = 0; i < j; i++)
				if (m[s * replicas + i] &&
				    m[s * replicas + i]->c == x->c)
					return false;
			have++;
		}
		if (!have)
			return false;
	}
	return true;
}

/* make_group -- the handle over m, its layout checked by the caller. */
static int make_group(struct rmp_lease *const *m, unsigned stripes,
		      unsigned replicas, uint64_t stripe_unit, uint64_t length,
		      struct rmpc_lease_list *owner, struct rmp_lease **out)
{
	struct rmp_lease *l;
	struct rmpc_group *g;
	unsigned n = stripes * replicas;

	l = calloc(1, sizeof(*l));
	g = calloc(1, sizeof(*g));
	if (g) {
		g->plans = calloc(RMPC_GROUP_PLANS(n), sizeof(*g->plans));
		g->at = calloc(n, sizeof(*g->at));
	}
	if (!l || !g || !g->plans || !g->at) {
		free(l);
		if (g) {
			free(g->plans);
			free(g->at);
		}
		free(g);
		return -ENOMEM;
	}
	g->stripes = stripes;
	g->replicas = replicas;
	g->stripe_unit = stripe_unit;
	g->n = n;
	g->member_timeout_ms = RMPC_MEMBER_TIMEOUT_MS;
	l->group = g;
	l->length = length;
	l->access = RMP_ACC_READ | RMP_ACC_WRITE;
	for (unsigned i = 0; i < n; i++) {
		/* a member that could not be attached is lost from the
		 * start */
		(void)rmpc_member_swap(g, i, m[i]); /* the slot was empty */
		if (!m[i])
			continue;
		rmpc_group_at(l, i, m[i]->host, m[i]->port);
		l->access &= m[i]->access;
		g->wait_ms = RMP_MAX(g->wait_ms,
				     (uint32_t)m[i]->c->opts.op_timeout_ms);
		l->id = m[i]->id;
		l->flags = m[i]->flags;
	}
	if (owner)
		LIST_INSERT_HEAD(owner, l, link);
	*out = l;
	return 0;
}

int rmpc_group_new(struct rmp_lease *const *m, unsigned stripes,
		   unsigned replicas, uint64_t stripe_unit, uint64_t length,
		   struct rmpc_lease_list *owner, struct rmp_lease **out)
{
	unsigned n = stripes * replicas;

	if (!stripes || stripes > RMPC_STRIPES_MAX || !replicas ||
	    replicas > RMPC_REPLICAS_MAX || n < 2 || !length ||
	    !stripe_unit || (stripe_unit & (stripe_unit - 1)) ||
	    !group_layout_ok(m, stripes, replicas, stripe_unit, length))
		return -EINVAL;
	return make_group(m, stripes, replicas, stripe_unit, length, owner,
			  out);
}

int rmpc_group_new_ec(struct rmp_lease *const *m, unsigned k,
		      unsigned parity, uint64_t chunk, uint64_t length,
		      struct rmpc_lease_list *owner, struct rmp_lease **out)
{
	struct rmpc_ec *ec;
	unsigned have = 0;
	uint64_t need;
	int err = rmpc_ec_new(k, parity, chunk, length, &ec);

	if (err)
		return err;
	need = rmpc_ec_member_size(&ec->lo);
	/* members in no group, each with a member's bytes (that each is
	 * on a node of its own is the placement's and the record's rule) */
	for (unsigned i = 0; !err && i < k + parity; i++) {
		if (!m[i])
			continue;
		have++;
		if (m[i]->group || m[i]->length < need)
			err = -EINVAL;
	}
	if (!err && have < k)
		err = -EINVAL;
	if (!err)
		err = make_group(m, k + parity, 1, chunk, length, owner, out);
	if (err) {
		rmpc_ec_free(ec);
		return err;
	}
	(*out)->group->ec = ec;
	(*out)->group->ec_k = k;
	return 0;
}

void rmpc_group_keep(struct rmp_lease *l, const struct rmpc_group_keeper *k,
		     void *arg, const char *token, uint32_t member_timeout_ms)
{
	l->group->member_timeout_ms = member_timeout_ms;
	l->group->keeper = k;
	l->group->keeper_arg = arg;
	snprintf(l->group->token, sizeof(l->group->token), "%s", token);
}

void rmpc_group_swap(struct rmp_lease *l, unsigned i, struct rmp_lease *m)
{
	rmp_lease_close(rmpc_member_swap(l->group, i, m));
	if (m)
		rmpc_group_at(l, i, m->host, m->port);
}

void rmpc_group_at(struct rmp_lease *l, unsigned i, const char *host,
		   uint16_t port)
{
	struct rmpc_member_at *a = &l->group->at[i];

	snprintf(a->host, sizeof(a->host), "%s", host);
	a->port = port;
}

_Static_assert(RMPC_STRIPES_MAX <= 32, "rmpc_group_wait: a stripe a bit");

/* The pause between two tries of a call that waits on a suspect member:
 * short at first (a restarted daemon is back in a second), then at most
 * half a second (each try attaches anew: a connect, an ATTACH). */
#define WAIT_POLL_FIRST_MS 50u
#define WAIT_POLL_MAX_MS 500u

bool rmpc_group_wait(struct rmp_lease *l, uint32_t stripes, int err,
		     int said, uint64_t deadline, struct rmpc_backoff *b)
{
	const struct rmpc_group *g = l->group;
	uint64_t now = rmp_now_ms();
	bool waits = false;
	struct timespec ts = { 0 };

	if (!err || rmpc_fault_of(err) == RMPC_FAULT_CALLER || !g->keeper ||
	    now >= deadline ||
	    (said && rmpc_fault_of(said) != RMPC_FAULT_TRANSIENT))
		return false;
	for (unsigned s = 0; s < g->stripes; s++)
		waits = waits || ((stripes >> s & 1) && rmpc_group_waits(g, s));
	if (!waits)
		return false;
	ts.tv_nsec = 1000000L * (long)RMP_MIN(
		deadline - now, rmpc_backoff_fail(b, WAIT_POLL_FIRST_MS,
						  WAIT_POLL_MAX_MS, now));
	nanosleep(&ts, NULL);
	return true;
}

uint64_t rmpc_group_deadline(const struct rmp_lease *l)
{
	return rmp_now_ms() + l->group->wait_ms;
}

/* renew_once -- renew every live member: 0 when each stripe keeps
 * one (those that failed leave LIVE), else the first error of a stripe
 * that kept none (-EHOSTUNREACH: they were suspect before; -EKEYEXPIRED:
 * they were lost). */
static int renew_once(struct rmp_lease *l, uint32_t ttl_s)
{
	struct rmpc_group *g = l->group;
	struct rmpc_tally t = { .first = { 0 } };
	int err;

	for (unsigned i = 0; i < g->n; i++) {
		if (!rmpc_member_live(g, i))
			continue;
		err = rmpc_lease_renew_one(g->m[i], ttl_s);
		if (err == -EINVAL)
			return err; /* the ttl: the same to every server */
		rmpc_tally_add(g, &t, i, err, rmp_now_ms());
	}
	err = rmpc_tally_error(g, &t, -EKEYEXPIRED);
	if (err)
		return err;
	return g->keeper ? g->keeper->renewed(l, ttl_s) : 0;
}

int rmp_lease_renew(struct rmp_lease *l, uint32_t ttl_s)
{
	if (!l)
		return -EINVAL;
	return l->group ? rmpc_group_renew(l, ttl_s) :
			  rmpc_lease_renew_one(l, ttl_s);
}

int rmpc_group_renew(struct rmp_lease *l, uint32_t ttl_s)
{
	uint64_t deadline = rmpc_group_deadline(l);
	struct rmpc_backoff pause = { 0 };
	int err, said = 0, first = 0;

	/* a stripe whose members are all suspect waits as a write does */
	for (;;) {
		err = renew_once(l, ttl_s);
		first = first ? first : err;
		if (!rmpc_group_wait(l, UINT32_MAX, err, said, deadline,
				     &pause))
			break;
		said = l->group->keeper->refresh(l);
	}
	return err ? first : 0;
}

/* member_of -- the public state of member i of g. */
static int member_of(const struct rmpc_group *g, unsigned i)
{
	switch (g->state[i]) {
	case RMPC_MEMBER_LIVE:
		return g->m[i] ? RMP_MEMBER_LIVE : RMP_MEMBER_LOST;
	case RMPC_MEMBER_SUSPECT:
		return RMP_MEMBER_SUSPECT;
	case RMPC_MEMBER_STALE:
		return RMP_MEMBER_STALE;
	case RMPC_MEMBER_MISSED:
		return RMP_MEMBER_MISSED;
	default:
		return RMP_MEMBER_LOST;
	}
}

const char *rmp_member_state_name(int state)
{
	static const char *const name[] = {
		[RMP_MEMBER_LIVE] = "live", [RMP_MEMBER_SUSPECT] = "suspect",
		[RMP_MEMBER_STALE] = "stale", [RMP_MEMBER_LOST] = "lost",
		[RMP_MEMBER_MISSED] = "missed",
	};

	return state >= 0 && state <= RMP_MEMBER_MISSED ? name[state] : "?";
}

int rmp_lease_member_info(const struct rmp_lease *l, unsigned i,
			  struct rmp_member_info *mi)
{
	const struct rmp_lease *m = l;
	const struct rmpc_rail_set *s;
	struct rmp_member_info o;

	if (!l || !mi || mi->size < sizeof(o))
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.state = RMP_MEMBER_LIVE;
	if (l->group) {
		if (i >= l->group->n)
			return -ENOENT;
		m = l->group->m[i];
		o.stripe = i / l->group->replicas;
		o.replica = i % l->group->replicas;
		o.state = member_of(l->group, i);
	} else if (i) {
		return -ENOENT;
	}
	if (l->group) {
		snprintf(o.host, sizeof(o.host), "%s", l->group->at[i].host);
		o.port = l->group->at[i].port;
	}
	if (m) {
		snprintf(o.host, sizeof(o.host), "%s", m->host);
		o.port = m->port;
		s = m->c ? m->c->rails : NULL;
		o.rails = s ? s->n : 1;
		for (unsigned r = 0; s && r < s->n; r++)
			o.rails_up += !s->r[r].down;
		if (!s)
			o.rails_up = m->c && !rmpc_broken(m->c);
	}
	memcpy(mi, &o, sizeof(o));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * cluster_lease.c -- cluster leases with a record: a mirrored (or
 * striped) lease's member list is published in etcd when it is made, so
 * that its one token (rmpc://ID-SECRET) reaches it from anywhere given
 * the etcd URL. Here: publishing at alloc, attaching by that token, and
 * the group's keeper (lease.h), which keeps the record in step with
 * renewals and the free, marks a member stale in it before a write
 * done without that member counts, and attaches the members anew when
 * they all failed. Repair is cluster_repair.c's.
 *
 * Epochs: every member is attached by the epoch of the record read
 * (protocol 5's ATTACH epoch), and a repair's fence carries the epoch it
 * publishes to every live member first (cluster_repair.c). A member
 * whose group knows a newer epoch refuses the attach (-ESTALE): a record
 * put back in etcd from before a repair is never used, nor the member
 * it replaced.
 *
 * Why a record, and not the member list in the token: a repair replaces
 * a member, and every holder of the token must find the new one; a
 * token cannot change in the hands of those who hold it.
 */
#include "cluster_int.h"
#include "ec_lease.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "group.h"
#include "util.h"

/* Most reads of a record one attach makes while it keeps changing. */
#define ATTACH_TRIES 5
/* How often a holder looks whether a repair is over. */
#define REPAIR_POLL_MS 100u
/* The time a repair may hold the lease: a base, and the copy at a rate
 * an emulated NIC keeps up (a real one is a hundred times faster); never
 * more than REPAIR_MAX_MS (a longer copy fails: repair a larger lease
 * on a faster network). */
#define REPAIR_BASE_MS 20000u
#define REPAIR_BYTES_PER_MS (16u << 10)
#define REPAIR_MAX_MS (10u * 60 * 1000)

static int keeper_renewed(struct rmp_lease *l, uint32_t ttl_s);
static void keeper_ending(struct rmp_lease *l, bool freed);
static int keeper_missed(struct rmp_lease *l, const bool *missed);
static int keeper_retry(struct rmp_lease *l);
static int keeper_claim(struct rmp_lease *l);

static const struct rmpc_group_keeper keeper = {
	.renewed = keeper_renewed,
	.ending = keeper_ending,
	.missed = keeper_missed,
	.refresh = cl_lease_refresh,
	.retry = keeper_retry,
	.claim = keeper_claim,
};

uint64_t cl_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void cl_member_token(const struct rmp_lease *m, struct rmp_token *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->host, m->host, sizeof(t->host));
	t->port = m->port;
	t->id = m->id;
	t->secret = m->secret;
}

struct cl_node *cl_member_node(struct rmp_cluster *cl,
			       const struct rmp_token *t)
{
	for (unsigned i = 0; i < cl->nnodes; i++) {
		struct cl_node *n = &cl->nodes[i];

		if (n->m.port != t->port)
			continue;
		for (unsigned a = 0; a < n->m.naddrs; a++)
			if (!strcmp(n->m.addrs[a], t->host))
				return n;
	}
	return NULL;
}

int cl_member_attach(struct rmp_cluster *cl, const struct rmp_token *t,
		     uint32_t access, bool exclusive, uint64_t epoch,
		     struct rmp_lease **out)
{
	struct rmp_attach_opts o;
	char text[RMP_TOKEN_MAX];
	struct cl_conn *k;
	struct cl_node *n = cl_member_node(cl, t);
	int ret;

	*out = NULL;
	if (cl->synced && (!n || !n->present)) {
		cl_say(cl, "%s port %u is not in the membership", t->host,
		       t->port);
		return -EHOSTDOWN;
	}
	if (rmp_token_format(t, text, sizeof(text)) < 0) {
		cl_say(cl, "a member token that cannot be written");
		return -EINVAL;
	}
	k = cl_member_conn(cl, n, t, text, &ret);
	if (!k)
		return ret;
	rmp_attach_opts_init(&o);
	o.access = access;
	o.flags = exclusive ? RMP_ATTACH_EXCLUSIVE : 0;
	ret = cl_conn_attach(cl, k, text, &o, epoch, out);
	return ret;
}

uint64_t cl_repair_budget_ms(uint64_t bytes)
{
	return RMP_MIN(REPAIR_BASE_MS + bytes / REPAIR_BYTES_PER_MS,
		       REPAIR_MAX_MS);
}

/* clear_mark -- a repair's mark whose time is over: taken off by a txn
 * on the revision read, so that a repair that publishes late (paused,
 * its clock behind) fails instead of naming members we did not write. */
static int clear_mark(struct rmp_cluster *cl, struct cl_record *rec)
{
	struct cl_record cleared = *rec;
	int ret;

	cleared.r.repair_until_ms = 0;
	ret = cl_record_replace(cl, &cleared);
	if (!ret)
		*rec = cleared;
	rmp_wipe(&cleared, sizeof(cleared));
	return ret;
}

int cl_record_settled(struct rmp_cluster *cl, struct cl_record *rec)
{
	uint64_t start = cl_wall_ms();
	int ret = cl_record_read(cl, rec);

	/* a repair holds the lease: its members' keys are being revoked
	 * and a new member filled; what we attached now could miss what
	 * the copy takes, so wait for its new list, or its deadline (no
	 * longer than a repair of this length may take from now: a mark
	 * set far ahead by a malicious holder does not hold us) */
	uint64_t mark = 0;

	for (int i = 0; !ret && rec->r.repair_until_ms; i++) {
		uint64_t now = cl_wall_ms(), end;
		struct timespec ts = { 0, 0 };

		if (rec->r.repair_until_ms != mark) { /* a new mark: a new cap */
			mark = rec->r.repair_until_ms;
			start = now;
		}
		end = RMP_MIN(mark, start + cl_repair_budget_ms(rec->r.length *
								rec->r.replicas));

		if (now >= end) {
			ret = clear_mark(cl, rec);
			if (ret == -EAGAIN) /* published meanwhile, or cleared */
				ret = cl_record_read(cl, rec);
			if (ret || i > ATTACH_TRIES)
				break;
			continue;
		}
		ts.tv_nsec = 1000000L * (long)RMP_MIN(end - now,
						      REPAIR_POLL_MS);
		nanosleep(&ts, NULL);
		ret = cl_record_read(cl, rec);
	}
	if (!ret && rec->r.repair_until_ms) {
		cl_say(cl, "the lease's record stays under repair");
		ret = -EAGAIN;
	}
	return ret;
}

/* What attach_all does with a member of the record. */
enum use {
	ATTACH,  /* attach it */
	KEEP,    /* the handle has it, live: counts as live */
	SKIP,    /* stale: it lacks a write (the record says so) */
};

/* same_token -- a and b name one lease. */
static bool same_token(const struct rmp_token *a, const struct rmp_token *b)
{
	return a->port == b->port && a->id == b->id &&
	       !strcmp(a->host, b->host);
}

/*
 * keep_of -- for the record rec as read, what to do with each member of
 * the handle l: skip one the record marks stale (a repair must replace
 * it), keep a live one the record still names, attach the rest (lost
 * otherwise, or new; one stale here that a newer epoch no longer marks:
 * a repair caught it up in place). -EPROTO when rec is not l's shape or
 * older than what l knows (an old record put back).
 */
static int keep_of(struct rmp_lease *l, const struct cl_record *rec,
		   enum use *keep)
{
	const struct rmpc_group *g = l->group;
	const struct cl_lease *cx = g->keeper_arg;
	const struct rmp_lease_record *r = &rec->r, *was = &cx->rec.r;

	if (r->stripes != was->stripes || r->replicas != was->replicas ||
	    r->stripe_unit != was->stripe_unit || r->length != was->length ||
	    r->epoch < was->epoch) {
		cl_say(cx->cl, "the lease's record in etcd has another shape "
		       "or an older epoch than this handle knows");
		return -EPROTO;
	}
	/* "the same" is the member this handle knew in slot i (its handle
	 * may be gone: a member never attached, or dropped) */
	for (unsigned i = 0; i < g->n; i++) {
		bool same = same_token(&was->member[i], &r->member[i]);

		bool caught_up = g->state[i] == RMPC_MEMBER_STALE &&
				 r->epoch > was->epoch;

		/* a newer epoch: a repair fenced every member, our keys
		 * to those still live among them too */
		bool fenced = r->epoch > was->epoch;

		keep[i] = r->stale[i] ? SKIP : !same ? ATTACH :
			  rmpc_member_live(g, i) ? (fenced ? ATTACH : KEEP) :
			  rmpc_member_away(g, i) || caught_up ? ATTACH : SKIP;
	}
	return 0;
}

/* dead_member -- an answer of a member's server that says only that
 * member is gone (its lease ended there, its node is down): the others
 * may hold the bytes. */
static bool dead_member(int err)
{
	enum rmpc_fault f = rmpc_fault_of(err);

	return f == RMPC_FAULT_GONE || f == RMPC_FAULT_TRANSIENT ||
	       f == RMPC_FAULT_REVOKED;
}

/*
 * attach_all -- the members of rec keep says ATTACH attached into m by
 * rec's epoch (dead ones left NULL, why[i] their error when why is not
 * NULL): 0 when each stripe has one at least, kept or attached; else
 * -EHOSTDOWN (a stripe's members all gone), a stripe's first error of a
 * member's way when one was not gone (it may come back: -ETIMEDOUT;
 * -EHOSTUNREACH when its node's backoff held it) or the first error that is not
 * of one member (the tenant,
 * the access: the same at every member; -ESTALE: the record is older
 * than what a member knows). With wait false (a suspect member's
 * retry), a member whose node could not be reached lately is not tried
 * (-EAGAIN in why): a connect to it could take its timeout.
 */
static int attach_all(struct rmp_cluster *cl, const struct cl_record *rec,
		      uint32_t access, bool behind, const enum use *keep,
		      struct rmp_lease **m, int *why, bool wait)
{
	const struct rmp_lease_record *r = &rec->r;
	unsigned all_live = 0;
	int any_way = 0;

	for (unsigned s = 0; s < r->stripes; s++) {
		unsigned live = 0;
		int way = 0; /* a member's way failed, not its lease */
		bool tried = false; /* cl->err says why one failed */

		for (unsigned j = 0; j < r->replicas; j++) {
			unsigned i = s * r->replicas + j;
			int ret;

			if (keep[i] != ATTACH) {
				live += keep[i] == KEEP;
				continue;
			}
			struct cl_node *n = cl_member_node(cl, &r->member[i]);
			uint64_t now = rmp_now_ms();

			if (!wait && n && !rmpc_backoff_due(&n->backoff, now)) {
				if (why)
					why[i] = -EAGAIN;
				way = way ? way : -EHOSTUNREACH;
				continue;
			}
			tried = true;
			ret = cl_member_attach(cl, &r->member[i], access,
					       false, behind ? 0 : r->epoch,
					       &m[i]);
			if (n && rmpc_fault_of(ret) == RMPC_FAULT_TRANSIENT)
				cl_node_unreachable(n, rmp_now_ms());
			if (ret && !dead_member(ret))
				return ret;
			if (why)
				why[i] = ret;
			if (ret && rmpc_fault_of(ret) != RMPC_FAULT_GONE)
				way = way ? way : ret;
			live += !ret;
		}
		all_live += live;
		any_way = any_way ? any_way : way;
		/* an erasure-coded lease: any k of its members */
		if (!live && !r->ec_data) {
			char last[CL_ERRBUF];

			snprintf(last, sizeof(last), "%s", tried ? cl->err :
				 "its nodes could not be reached lately");
			cl_say(cl, "stripe %u of the lease has no member %s "
			       "(%s)", s, way ? "within reach now" : "left",
			       last);
			/* one unreachable: it may come back (a flap) */
			return way ? way : -EHOSTDOWN;
		}
	}
	if (r->ec_data && all_live < r->ec_data) {
		cl_say(cl, "the erasure-coded lease has %u of its %u members "
		       "%s, and needs %u", all_live, r->stripes,
		       any_way ? "within reach now" : "left", r->ec_data);
		return any_way ? any_way : -EHOSTDOWN;
	}
	return 0;
}

static void close_all(struct rmp_lease **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		rmp_lease_close(m[i]);
		m[i] = NULL;
	}
}

/*
 * attach_current -- rec read (a repair waited out) and its members not
 * the handle l keeps (NULL: none; keep_of) attached into m, then the
 * record read once more: if it changed meanwhile (a repair began), what
 * we attached may miss its copy, so again. 0, or an error with why in
 * cl->err. why: as attach_all's. With wait false, a record under repair
 * is not waited out: -EAGAIN.
 */
static int attach_current(struct rmp_cluster *cl, struct cl_record *rec,
			  uint32_t access, bool behind, struct rmp_lease *l,
			  struct rmp_lease **m, int *why, bool wait)
{
	int64_t stale_at = -1; /* the revision a member found old */

	for (int tries = 0; tries < ATTACH_TRIES; tries++) {
		struct cl_record again = *rec;
		enum use keep[RMP_LREC_MEMBERS_MAX] = { ATTACH };
		int ret;

		ret = wait ? cl_record_settled(cl, rec) :
			     cl_record_read(cl, rec);
		if (!ret && !wait && rec->r.repair_until_ms)
			ret = -EAGAIN;
		if (!ret && rec->mod_revision == stale_at)
			ret = -ESTALE; /* read again: still the old one */
		if (!ret && l)
			ret = keep_of(l, rec, keep);
		if (!ret)
			ret = attach_all(cl, rec, access, behind, keep, m, why,
					 wait);
		if (!ret)
			ret = cl_record_read(cl, &again);
		if (!ret && again.mod_revision == rec->mod_revision)
			ret = 1;
		rmp_wipe(&again, sizeof(again));
		if (ret == 1)
			return 0;
		close_all(m, RMP_LREC_MEMBERS_MAX);
		if (ret == -ESTALE && stale_at != rec->mod_revision) {
			/* a repair may have published meanwhile: once more */
			stale_at = rec->mod_revision;
			continue;
		}
		if (ret == -ESTALE)
			cl_say(cl, "a member of the lease knows a newer epoch "
			       "than its record in etcd (epoch %" PRIu64 "): "
			       "the record was put back from before a repair, "
			       "or a repair could not finish; its members are "
			       "not used (rmpool repair TOKEN)", rec->r.epoch);
		if (ret)
			return ret;
	}
	cl_say(cl, "the lease's record in etcd kept changing");
	return -EAGAIN;
}

/* keep -- l's record is cx's from now on. */
static int keep(struct rmp_lease *l, struct cl_lease *cx)
{
	char token[RMP_CTOKEN_MAX];

	if (rmp_ctoken_format(&cx->rec.t, token, sizeof(token)) < 0)
		return -EINVAL;
	rmpc_group_keep(l, &keeper, cx, token, cx->cl->member_timeout_ms);
	rmp_wipe(token, sizeof(token));
	return 0;
}

int cl_lease_publish(struct rmp_cluster *cl, struct rmp_lease *l,
		     const char *spread)
{
	struct rmpc_group *g = l->group;
	struct cl_lease *cx = calloc(1, sizeof(*cx));
	struct rmp_lease_record *r;
	uint64_t ttl = UINT64_MAX;
	int ret;

	if (!cx) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	cx->cl = cl;
	rmp_ctoken_new(&cx->rec.t);
	ret = cl_record_key(cl, &cx->rec);
	if (ret) {
		rmp_wipe(cx, sizeof(*cx));
		free(cx);
		return ret;
	}
	r = &cx->rec.r;
	r->length = l->length;
	r->stripe_unit = g->stripe_unit;
	r->stripes = g->stripes;
	r->replicas = g->replicas;
	r->ec_data = g->ec ? g->ec->lo.k : 0;
	r->epoch = 1;
	snprintf(r->spread, sizeof(r->spread), "%s", spread ? spread : "");
	for (unsigned i = 0; i < g->n; i++) {
		cl_member_token(g->m[i], &r->member[i]);
		ttl = RMP_MIN(ttl, g->m[i]->ttl_ms);
	}
	ret = cl_record_create(cl, &cx->rec, ttl);
	if (!ret)
		ret = keep(l, cx);
	if (ret) {
		rmp_wipe(cx, sizeof(*cx));
		free(cx);
	}
	return ret;
}

int cl_lease_attach(struct rmp_cluster *cl, const char *token,
		    const struct rmp_attach_opts *opts, bool behind,
		    struct rmp_lease **out)
{
	struct rmp_lease *m[RMP_LREC_MEMBERS_MAX] = { 0 };
	struct cl_lease *cx = calloc(1, sizeof(*cx));
	unsigned n;
	int ret;

	*out = NULL;
	if (!cx) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	cx->cl = cl;
	cx->access = opts ? opts->access : 0;
	cx->behind = behind;
	ret = rmp_ctoken_parse(token, &cx->rec.t);
	if (ret)
		cl_say(cl, "not a cluster lease token");
	if (!ret)
		ret = cl_record_key(cl, &cx->rec);
	if (!ret)
		ret = cl_members_current(cl);
	if (!ret)
		ret = attach_current(cl, &cx->rec, cx->access, behind, NULL, m,
				     NULL, true);
	n = cx->rec.r.stripes * cx->rec.r.replicas;
	if (!ret && cx->rec.r.ec_data) {
		ret = rmpc_group_new_ec(m, cx->rec.r.ec_data,
					cx->rec.r.stripes - cx->rec.r.ec_data,
					cx->rec.r.stripe_unit, cx->rec.r.length,
					&cl->groups, out);
		if (ret) {
			cl_say(cl, "the record's members do not hold an "
			       "erasure-coded lease of its length");
			close_all(m, n);
		}
	} else if (!ret) {
		ret = rmpc_group_new(m, cx->rec.r.stripes, cx->rec.r.replicas,
				     cx->rec.r.stripe_unit, cx->rec.r.length,
				     &cl->groups, out);
		if (ret) {
			cl_say(cl, "out of memory");
			close_all(m, n);
		}
	}
	for (unsigned i = 0; !ret && i < n; i++) {
		rmpc_group_at(*out, i, cx->rec.r.member[i].host,
			      cx->rec.r.member[i].port);
		if (cx->rec.r.stale[i])
			rmpc_member_stale((*out)->group, i, rmp_now_ms());
	}
	if (!ret) {
		ret = keep(*out, cx);
		if (ret) {
			rmp_lease_close(*out);
			*out = NULL;
		}
	}
	if (ret) {
		rmp_wipe(cx, sizeof(*cx));
		free(cx);
	}
	return ret;
}

/* keeper_renewed -- the record lives as long as the renewed members. */
static int keeper_renewed(struct rmp_lease *l, uint32_t ttl_s)
{
	struct cl_lease *cx = l->group->keeper_arg;
	struct rmpc_group *g = l->group;
	uint64_t ttl = UINT64_MAX;
	int ret;

	(void)ttl_s; /* the servers may have granted less: ask them */
	for (unsigned i = 0; i < g->n; i++)
		if (rmpc_member_live(g, i))
			ttl = RMP_MIN(ttl, g->m[i]->ttl_ms);
	/* the tenant's key as it is now: a rotated key reseals the record
	 * at this renewal (the one before still opens it) */
	ret = cl_record_key(cx->cl, &cx->rec);
	if (ret)
		return ret;
	ret = cl_record_extend(cx->cl, &cx->rec, ttl);
	if (ret == -EAGAIN) {
		/* written meanwhile (a repair, another holder's renewal):
		 * once more on what it is now, a repair waited out (not to
		 * overwrite its mark, nor to make its publish fail) */
		struct cl_record now = cx->rec;

		ret = cl_record_settled(cx->cl, &now);
		if (!ret && (now.r.epoch != cx->rec.r.epoch ||
			     memcmp(now.r.member, cx->rec.r.member,
				    sizeof(now.r.member)))) {
			/* other members: the handle takes them first (the
			 * record is never ahead of the handle's members) */
			ret = cl_lease_refresh(l);
		} else if (!ret) {
			/* the same members: take the rest as it is now, the
			 * stale marks of other holders above all (resealing
			 * our older copy would unmark them) */
			for (unsigned i = 0; i < g->n; i++)
				if (now.r.stale[i])
					rmpc_member_stale(g, i, rmp_now_ms());
			cx->rec = now;
		}
		if (!ret)
			ret = cl_record_extend(cx->cl, &cx->rec, ttl);
		rmp_wipe(&now, sizeof(now));
	}
	if (ret == -ENOENT) {
		/* its etcd lease ran out while the members lived on: the
		 * members are ours, so the record is written again */
		cx->rec.r.repair_until_ms = 0;
		ret = cl_record_create(cx->cl, &cx->rec, ttl);
	}
	return ret;
}

static void keeper_ending(struct rmp_lease *l, bool freed)
{
	struct cl_lease *cx = l->group->keeper_arg;

	cl_claim_release(cx);
	if (freed)
		cl_record_drop(cx->cl, &cx->rec);
	rmp_wipe(cx, sizeof(*cx));
	free(cx);
}

/*
 * keeper_missed -- the members missed[] names marked stale in the
 * record, if it is still the one the handle read (a compare-and-swap),
 * at the next epoch; then the members the handle writes to learn that
 * epoch (an ATTACH by it each), so that the record from before the mark,
 * put back in etcd, names a member that refuses it: the stale one never
 * becomes live again that way. 0, -EAGAIN (it changed), or the etcd
 * error.
 */
static int keeper_missed(struct rmp_lease *l, const bool *missed)
{
	struct cl_lease *cx = l->group->keeper_arg;
	struct rmpc_group *g = l->group;
	struct cl_record rec = cx->rec;
	bool any = false;
	int ret = 0;

	for (unsigned i = 0; i < g->n; i++) {
		any = any || (missed[i] && !rec.r.stale[i]);
		rec.r.stale[i] = rec.r.stale[i] || missed[i];
	}
	if (any && rec.r.epoch >= INT64_MAX) {
		cl_say(cx->cl, "the lease's record is at its last epoch");
		ret = -EIO;
	} else if (any) {
		rec.r.epoch++;
		ret = cl_record_replace(cx->cl, &rec);
	}
	if (!ret) {
		cx->rec = rec;
		/* a member failing now is away; the next write marks it */
		for (unsigned i = 0; any && i < g->n; i++) {
			int err;

			if (!rmpc_member_live(g, i))
				continue;
			err = rmpc_lease_pin_epoch(g->m[i], rec.r.epoch);
			if (err)
				rmpc_member_failed(g, i, err, rmp_now_ms());
		}
	}
	rmp_wipe(&rec, sizeof(rec));
	return ret;
}

/* refresh -- cl_lease_refresh; with wait false, keeper_retry's. */
static int refresh(struct rmp_lease *l, bool wait)
{
	struct cl_lease *cx = l->group->keeper_arg;
	struct rmp_lease *m[RMP_LREC_MEMBERS_MAX] = { 0 };
	int why[RMP_LREC_MEMBERS_MAX] = { 0 };
	struct rmpc_group *g = l->group;
	struct cl_record rec = cx->rec;
	int ret;

	cl_members_current(cx->cl); /* etcd down: every member is tried */
	ret = attach_current(cx->cl, &rec, cx->access, false, l, m, why, wait);
	for (unsigned i = 0; !ret && i < g->n; i++) {
		if (m[i]) {
			rmpc_group_swap(l, i, m[i]);
			/* attached anew: a fence may have revoked our keys,
			 * and a repair's fence breaks claims */
			cl_claim_doubt(cx);
		} else if (rec.r.stale[i] &&
			   same_token(&cx->rec.r.member[i], &rec.r.member[i])) {
			/* another holder's write went on without it */
			rmpc_member_stale(g, i, rmp_now_ms());
		} else if (!same_token(&cx->rec.r.member[i],
				       &rec.r.member[i])) {
			/* replaced by a repair, and the new one is not to be
			 * had now: the old one is written no more (the new
			 * one is missed only if a write goes on without it) */
			rmpc_group_swap(l, i, NULL); /* lost */
			rmpc_group_at(l, i, rec.r.member[i].host,
				      rec.r.member[i].port);
			if (rec.r.stale[i])
				rmpc_member_stale(g, i, rmp_now_ms());
		} else if (rmpc_fault_of(why[i]) == RMPC_FAULT_GONE) {
			/* its server no longer holds it, or its node left */
			rmpc_member_lost(g, i);
		} else if (g->m[i]) {
			/* kept: attached again (a reconnect) by this epoch */
			rmpc_lease_set_epoch(g->m[i], rec.r.epoch);
		}
	}
	if (!ret && rec.r.epoch != cx->rec.r.epoch)
		cl_claim_doubt(cx); /* a repair's, or another's mark */
	if (!ret)
		cx->rec = rec;
	rmp_wipe(&rec, sizeof(rec));
	return ret;
}

int cl_lease_refresh(struct rmp_lease *l)
{
	return refresh(l, true);
}

static int keeper_retry(struct rmp_lease *l)
{
	struct cl_lease *cx = l->group->keeper_arg;
	struct rmpc_group *g = l->group;
	int ret;

	/* the membership is taken in from its watch (no etcd round trip
	 * while it is in sync); out of sync, a read of etcd could wait */
	if (cx->cl->synced)
		cl_members_current(cx->cl);
	if (!cx->cl->synced)
		return -EAGAIN;
	ret = refresh(l, false);
	/* a stale member whose server holds it again (a flap, a restart
	 * from state_dir) is caught up where it is: no other node's memory,
	 * no operator. This call waits for the copy. */
	for (unsigned i = 0; !ret && i < g->n; i++) {
		if (g->state[i] == RMPC_MEMBER_STALE) {
			cx->cl->catch_up(l); /* cl_lease_catch_up */
			break;
		}
	}
	return ret;
}

static int keeper_claim(struct rmp_lease *l)
{
	return cl_claim_hold(l->group->keeper_arg);
}

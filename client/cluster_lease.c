/* SPDX-License-Identifier: MIT */
/*
 * cluster_lease.c -- cluster leases with a record: a mirrored (or
 * striped) lease's member list is published in etcd when it is made, so
 * that its one token (rmpc://ID-SECRET) reaches it from anywhere given
 * the etcd URL. Here: publishing at alloc, attaching by that token, and
 * the group's keeper (lease.h), which keeps the record in step with
 * renewals and the free and attaches the members anew when they all
 * failed. Repair is cluster_repair.c's.
 *
 * Why a record, and not the member list in the token: a repair replaces
 * a member, and every holder of the token must find the new one; a
 * token cannot change in the hands of those who hold it.
 */
#include "cluster_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* Most reads of a record one attach makes while it keeps changing. */
#define ATTACH_TRIES 5
/* How often a holder looks whether a repair is over. */
#define REPAIR_POLL_MS 100u

static int keeper_renewed(struct rmp_lease *l, uint32_t ttl_s);
static void keeper_ending(struct rmp_lease *l, bool freed);
static int keeper_refresh(struct rmp_lease *l);

static const struct rmpc_group_keeper keeper = {
	.renewed = keeper_renewed,
	.ending = keeper_ending,
	.refresh = keeper_refresh,
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
		     uint32_t access, bool exclusive, struct rmp_lease **out)
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
	k = cl_token_conn(cl, text, &ret);
	if (!k)
		return ret;
	rmp_attach_opts_init(&o);
	o.access = access;
	o.flags = exclusive ? RMP_ATTACH_EXCLUSIVE : 0;
	return cl_conn_attach(cl, k, text, &o, out);
}

int cl_record_settled(struct rmp_cluster *cl, struct cl_record *rec)
{
	int ret = cl_record_read(cl, rec);

	/* a repair holds the lease: its members' keys are being revoked
	 * and a new member filled; what we attached now could miss what
	 * the copy takes, so wait for its new list (or its deadline) */
	while (!ret && rec->r.repair_until_ms > cl_wall_ms()) {
		uint64_t left = rec->r.repair_until_ms - cl_wall_ms();
		struct timespec ts = { 0, 1000000L * (long)RMP_MIN(left,
						REPAIR_POLL_MS) };

		nanosleep(&ts, NULL);
		ret = cl_record_read(cl, rec);
	}
	return ret;
}

/*
 * attach_all -- every member of rec attached (dead ones, and those that
 * refuse for a reason of their node, left NULL) into m: 0 when each
 * stripe has one at least; else the first member's error.
 */
static int attach_all(struct rmp_cluster *cl, const struct cl_record *rec,
		      uint32_t access, struct rmp_lease **m)
{
	const struct rmp_lease_record *r = &rec->r;
	int first = 0;

	for (unsigned s = 0; s < r->stripes; s++) {
		unsigned live = 0;
		int err = 0;

		for (unsigned j = 0; j < r->replicas; j++) {
			unsigned i = s * r->replicas + j;
			int ret = cl_member_attach(cl, &r->member[i], access,
						   false, &m[i]);

			live += !ret;
			err = err ? err : ret;
			/* the tenant, the secret, the access: the same at
			 * every member, so no use asking the others */
			if (ret == -EPERM || ret == -EACCES || ret == -ENOENT ||
			    ret == -EKEYREJECTED)
				return ret;
		}
		if (!live)
			first = first ? first : err;
	}
	return first;
}

static void close_all(struct rmp_lease **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		rmp_lease_close(m[i]);
		m[i] = NULL;
	}
}

/*
 * attach_current -- rec read (a repair waited out) and its members
 * attached into m, then the record read once more: if it changed
 * meanwhile (a repair began), what we attached may miss its copy, so
 * again. 0, or an error with why in cl->err.
 */
static int attach_current(struct rmp_cluster *cl, struct cl_record *rec,
			  uint32_t access, struct rmp_lease **m)
{
	for (int tries = 0; tries < ATTACH_TRIES; tries++) {
		struct cl_record again = *rec;
		int ret;

		ret = cl_record_settled(cl, rec);
		if (!ret)
			ret = attach_all(cl, rec, access, m);
		if (!ret)
			ret = cl_record_read(cl, &again);
		if (ret) {
			close_all(m, RMP_LREC_MEMBERS_MAX);
			return ret;
		}
		if (again.mod_revision == rec->mod_revision)
			return 0;
		close_all(m, RMP_LREC_MEMBERS_MAX);
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
	rmpc_group_keep(l, &keeper, cx, token);
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
	r = &cx->rec.r;
	r->length = l->length;
	r->stripe_unit = g->stripe_unit;
	r->stripes = g->stripes;
	r->replicas = g->replicas;
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
		    const struct rmp_attach_opts *opts, struct rmp_lease **out)
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
	ret = rmp_ctoken_parse(token, &cx->rec.t);
	if (ret)
		cl_say(cl, "not a cluster lease token");
	if (!ret)
		ret = cl_members_current(cl);
	if (!ret)
		ret = attach_current(cl, &cx->rec, cx->access, m);
	n = cx->rec.r.stripes * cx->rec.r.replicas;
	if (!ret) {
		ret = rmpc_group_new(m, cx->rec.r.stripes, cx->rec.r.replicas,
				     cx->rec.r.stripe_unit, cx->rec.r.length,
				     &cl->groups, out);
		if (ret) {
			cl_say(cl, "out of memory");
			close_all(m, n);
		}
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
		if (!g->lost[i])
			ttl = RMP_MIN(ttl, g->m[i]->ttl_ms);
	ret = cl_record_extend(cx->cl, &cx->rec, ttl);
	if (ret == -EAGAIN) {
		/* a repair elsewhere wrote it: once more on its list */
		ret = cl_record_read(cx->cl, &cx->rec);
		if (!ret)
			ret = cl_record_extend(cx->cl, &cx->rec, ttl);
	}
	return ret;
}

static void keeper_ending(struct rmp_lease *l, bool freed)
{
	struct cl_lease *cx = l->group->keeper_arg;

	if (freed)
		cl_record_drop(cx->cl, &cx->rec);
	rmp_wipe(cx, sizeof(*cx));
	free(cx);
}

/* keeper_refresh -- every member attached anew from the record as it
 * is now; the group takes them in place of its old handles. */
static int keeper_refresh(struct rmp_lease *l)
{
	struct cl_lease *cx = l->group->keeper_arg;
	struct rmp_lease *m[RMP_LREC_MEMBERS_MAX] = { 0 };
	struct rmpc_group *g = l->group;
	struct cl_record rec = cx->rec;
	int ret;

	cl_members_current(cx->cl); /* etcd down: every member is tried */
	ret = attach_current(cx->cl, &rec, cx->access, m);
	if (ret)
		return ret;
	/* an older record put back by someone who can write etcd (not
	 * forge it: it is sealed) must not take us back to old members */
	if (rec.r.stripes * rec.r.replicas != g->n ||
	    rec.r.length != cx->rec.r.length ||
	    rec.r.epoch < cx->rec.r.epoch) {
		close_all(m, RMP_LREC_MEMBERS_MAX);
		cl_say(cx->cl, "the lease's record in etcd has another shape "
		       "or an older epoch");
		return -EPROTO;
	}
	for (unsigned i = 0; i < g->n; i++) {
		if (m[i])
			rmpc_group_swap(l, i, m[i]);
		else
			rmpc_group_lose(l, i);
	}
	cx->rec = rec;
	return 0;
}

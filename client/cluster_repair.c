/* SPDX-License-Identifier: MIT */
/*
 * cluster_repair.c -- rmp_lease_repair: a cluster lease that lost
 * members gets new ones on other nodes, filled from a live member of
 * their stripe, and its new member list published in etcd.
 *
 * Which members: those whose node left the membership, that the handle
 * could not attach, or that the record marks stale (a write went on
 * without them: any holder's, io_group.c).
 *
 * Writes by other holders during the copy are not lost:
 *   1. the record is marked "under repair until T" at the epoch F the
 *      repair will publish (the record's + 1), by a txn on the revision
 *      read (one repair at a time);
 *   2. every live member is attached again exclusively, over a
 *      connection of the repair's own, by F: every other key to it is
 *      revoked
 *      (this process's other handles' too) and the server answers once
 *      their invalidations are done, so no other holder's write lands
 *      after this point; and from now on every member refuses a record
 *      older than F (-ESTALE). The new members learn F too;
 *   3. the new members are filled from the live ones;
 *   4. the new list is published at epoch F and the mark cleared, by a
 *      txn on the revision of 1.
 * A holder whose call failed at 2 reads the record, finds the mark,
 * waits for 4 and does its call again on the new list (keeper_refresh).
 * One that attached between 1 and 2 reads the record once more after
 * attaching, sees it changed, and does the same (attach_current). If T
 * passes before 4, the repair gives up and puts the old list back at
 * epoch F (undo); holders go on with it.
 *
 * A record put back in etcd from before a repair (a rollback) names a
 * member that repair replaced, with a live one that knows F: every
 * attach by it is refused, so nobody reads the replaced member's old
 * bytes. A repair started on such a record first looks through the
 * record's history in etcd for the newest record (cl_record_newest) and
 * writes that one again. When the members still know an epoch no record
 * has (a repair that fenced them and could not publish, nor undo), no
 * newer list exists: the repair asks each member which epoch it knows,
 * takes those behind the newest as dead and the rest as live, and
 * publishes past the newest (recover_epochs). When etcd has compacted
 * the history, nothing can be told, and the repair refuses (-ESTALE).
 */
#include "cluster_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec_lease.h"
#include "fault.h"
#include "group.h"
#include "io_int.h"
#include "util.h"

#define COPY_CHUNK (1u << 20)

/* One repair under way. */
struct repair {
	struct rmp_cluster *cl;
	struct rmp_lease *l;
	struct cl_lease *cx;
	bool dead[RMP_LREC_MEMBERS_MAX];            /* to be replaced */
	/* of them, caught up where they are (only behind, their server
	 * holds them): the copy overwrites them, the record keeps them */
	bool in_place[RMP_LREC_MEMBERS_MAX];
	struct rmp_lease *fresh[RMP_LREC_MEMBERS_MAX]; /* their successors */
	unsigned ndead;
	bool marked;                                /* step 1 done */
	uint64_t epoch;   /* F: the epoch the fence carries and step 4
			   * publishes */
	bool recovered;   /* the record was behind its members' epochs:
			   * published even with nothing to replace */
	bool unknown;   /* step 4's outcome unknown: the new leases kept
			 * (they may be the record's now; their ttl ends
			 * them if not) */
	bool fenced_any;                            /* step 2 began */
	struct rmp_client *fc[RMP_LREC_MEMBERS_MAX];   /* the fence's own
							* connections ... */
	struct rmp_lease *fenced[RMP_LREC_MEMBERS_MAX]; /* ... and handles */
	struct rmp_token old[RMP_LREC_MEMBERS_MAX];  /* replaced, alive */
};

/* span -- the members a member is kept apart from and filled from:
 * its stripe's replicas; every member of an erasure-coded lease. */
static unsigned span(const struct repair *rp)
{
	return rp->l->group->ec ? rp->l->group->n : rp->cx->rec.r.replicas;
}

/* live_of -- a live member of the stripe of member i (of an
 * erasure-coded lease: any live member), or NULL. */
static struct rmp_lease *live_of(const struct repair *rp, unsigned i)
{
	const struct rmpc_group *g = rp->l->group;
	unsigned r = span(rp), s = i / r;

	for (unsigned j = s * r; j < (s + 1) * r; j++) {
		if (rp->dead[j])
			continue;
		if (rp->fenced[j])
			return rp->fenced[j];
		if (rmpc_member_live(g, j))
			return g->m[j];
	}
	return NULL;
}

/* find_dead -- the members to replace: their node gone from the
 * membership, marked stale in the record, or lost by the handle once it
 * was brought up to date with the record (not to be attached). */
static void find_dead(struct repair *rp)
{
	struct rmpc_group *g = rp->l->group;
	const struct rmp_lease_record *r = &rp->cx->rec.r;

	for (unsigned i = 0; i < g->n; i++) {
		struct cl_node *n = cl_member_node(rp->cl, &r->member[i]);

		rp->dead[i] = rp->dead[i] || !n || !n->present ||
			      !rmpc_member_live(g, i) || r->stale[i];
		rp->ndead += rp->dead[i];
		if (rp->dead[i] && n && n->present)
			rp->old[i] = r->member[i]; /* reachable: freed after */
	}
}

/* in_place_may -- dead member i may be caught up where it is, by what
 * costs nothing to look at: the record marks it stale (a write went on
 * while it was away), its node is present and can be fenced (not one
 * key for its whole pool). */
static bool in_place_may(struct repair *rp, unsigned i)
{
	const struct rmp_lease_record *r = &rp->cx->rec.r;
	const struct cl_node *n = cl_member_node(rp->cl, &r->member[i]);

	return r->stale[i] && n && n->present &&
	       strcmp(n->m.keys_mode, RMP_KEYS_POOL_NAME);
}

/* still_held -- member i's server still holds its lease: 0, or the
 * attach's error (cl->err cleared: no error of the repair's). */
static int still_held(struct repair *rp, unsigned i)
{
	struct rmp_lease *h = NULL;
	int ret = cl_member_attach(rp->cl, &rp->cx->rec.r.member[i], 0, false,
				   0, &h);

	if (ret)
		rp->cl->err[0] = '\0';
	rmp_lease_close(h);
	return ret;
}

/* in_place_ok -- dead member i may be caught up where it is and its
 * server still holds it: a flap or a restart costs no other node's
 * memory. */
static bool in_place_ok(struct repair *rp, unsigned i)
{
	return in_place_may(rp, i) && !still_held(rp, i);
}

/* ec_sources -- an erasure-coded lease has k live members to rebuild
 * the others from (else said). */
static bool ec_sources(struct repair *rp)
{
	const struct rmpc_group *g = rp->l->group;
	unsigned live = 0;

	for (unsigned i = 0; i < g->n; i++)
		live += !rp->dead[i];
	if (live >= g->ec_k)
		return true;
	cl_say(rp->cl, "the erasure-coded lease has %u live members, and "
	       "needs %u to rebuild the others: its bytes are lost", live,
	       g->ec_k);
	return false;
}

/* place_fresh -- a new lease for each dead member, apart from the other
 * members of its stripe (on other values of the spread label), but one
 * caught up in place. */
static int place_fresh(struct repair *rp)
{
	struct rmp_cluster *cl = rp->cl;
	const struct rmp_lease_record *r = &rp->cx->rec.r;
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_alloc_opts ao;

	/* first which stay where they are: a new member must avoid their
	 * nodes as it avoids the live ones' */
	for (unsigned i = 0; i < rp->l->group->n; i++) {
		if (rp->dead[i] && !rp->in_place[i] && live_of(rp, i) &&
		    in_place_ok(rp, i)) {
			rp->in_place[i] = true;
			memset(&rp->old[i], 0, sizeof(rp->old[i])); /* kept */
		}
	}
	if (rp->l->group->ec && !ec_sources(rp))
		return -EIO;
	for (unsigned i = 0; i < rp->l->group->n; i++) {
		unsigned avoid[RMPC_MEMBERS_MAX], navoid = 0, s = i / span(rp);
		struct rmp_lease *src = live_of(rp, i);
		struct cl_node *gone = cl_member_node(cl, &r->member[i]);
		/* a copy: placing turns the etcd loop, which may move
		 * cl->nodes (a node registering) */
		char gone_name[RMP_CLUSTER_NODE_LEN];
		int ret;

		snprintf(gone_name, sizeof(gone_name), "%s",
			 gone ? gone->m.node : "");
		if (!rp->dead[i] || rp->in_place[i])
			continue;
		if (!src) {
			cl_say(cl, "stripe %u has no live replica: its bytes "
			       "are lost", s);
			return -EIO;
		}
		for (unsigned j = s * span(rp); j < (s + 1) * span(rp); j++) {
			struct cl_node *n = cl_member_node(cl, &r->member[j]);

			if (j == i)
				continue;
			/* a member placed anew is where its fresh lease is */
			if (rp->fresh[j]) {
				struct rmp_token ft;

				cl_member_token(rp->fresh[j], &ft);
				n = cl_member_node(cl, &ft);
			} else if (rp->dead[j] && !rp->in_place[j]) {
				n = NULL;
			}
			if (n)
				avoid[navoid++] = (unsigned)(n - cl->nodes);
		}
		rmp_lease_info(src, &info);
		rmp_alloc_opts_init(&ao);
		ao.ttl_s = (uint32_t)RMP_MAX(1, (info.ttl_ms + 999) / 1000);
		ao.flags = src->flags & RMP_LEASE_EPHEMERAL;
		ret = cl_alloc_apart(cl, src->length, &ao,
				     r->spread[0] ? r->spread : NULL, avoid,
				     navoid, gone ? gone_name : NULL,
				     &rp->fresh[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* fence_one -- member i attached exclusively over a connection of the
 * repair's own, by the repair's epoch. */
static int fence_one(struct repair *rp, unsigned i)
{
	const struct rmp_token *t = &rp->cx->rec.r.member[i];
	struct rmp_attach_opts o;
	char text[RMP_TOKEN_MAX];
	int ret = rmp_client_new(&rp->fc[i], &rp->cl->copts);

	if (!ret)
		ret = rmp_client_connect(rp->fc[i], t->host, t->port);
	if (!ret && rmp_token_format(t, text, sizeof(text)) < 0)
		ret = -EINVAL;
	rmp_attach_opts_init(&o);
	o.flags = RMP_ATTACH_EXCLUSIVE;
	if (!ret)
		ret = rmpc_lease_attach_epoch(rp->fc[i], text, &o, rp->epoch,
					      &rp->fenced[i]);
	if (ret)
		cl_say(rp->cl, "fencing %s port %u: %s (%s)", t->host, t->port,
		       rmp_strerror(ret), rp->fc[i] ?
		       rmp_client_last_error(rp->fc[i]) : "");
	return ret;
}

/* fence -- every live member attached exclusively by the repair's
 * epoch (step 2): from then on every other key to them, this handle's
 * too, is revoked, and they refuse an older record. Each ATTACH's reply
 * comes once the server has proven the other keys dead (or fails: a key
 * it could not prove dead is -EIO), so the copy may begin at once. */
static int fence(struct repair *rp)
{
	struct rmpc_group *g = rp->l->group;

	for (unsigned i = 0; i < g->n; i++) {
		int ret;

		if (rp->dead[i])
			continue;
		rp->fenced_any = true;
		ret = fence_one(rp, i);
		if (ret)
			return ret;
		/* this handle's key there is revoked: attached anew after */
		rmpc_member_failed(g, i, -EKEYREVOKED, rmp_now_ms());
	}
	/* a member to replace that its server still answers for (stale, or
	 * lost by this handle alone): its other holders' keys revoked too,
	 * so that none reads its old bytes after the new list is out (best
	 * effort: one out of reach is fenced by its ttl) */
	for (unsigned i = 0; i < g->n; i++) {
		const struct cl_node *n;

		if (!rp->dead[i])
			continue;
		n = cl_member_node(rp->cl, &rp->cx->rec.r.member[i]);
		if (rp->in_place[i] && fence_one(rp, i))
			return -EIO; /* said: the copy would have no target */
		if (!rp->in_place[i] && n && n->present && fence_one(rp, i))
			rp->cl->err[0] = '\0';
	}
	return 0;
}

/* pin_fresh -- each new member attached once more by the repair's
 * epoch, on the connection that leased it (the same key): its server
 * learns the epoch before the record names it. */
static int pin_fresh(struct repair *rp)
{
	for (unsigned i = 0; i < RMP_LREC_MEMBERS_MAX; i++) {
		struct rmp_lease *h = NULL;
		char text[RMP_TOKEN_MAX];
		struct rmp_token t;
		int ret;

		if (!rp->fresh[i])
			continue;
		cl_member_token(rp->fresh[i], &t);
		ret = rmp_token_format(&t, text, sizeof(text)) < 0 ? -EINVAL :
		      rmpc_lease_attach_epoch(rp->fresh[i]->c, text, NULL,
					      rp->epoch, &h);
		rmp_wipe(text, sizeof(text));
		if (ret) {
			cl_say(rp->cl, "the new member on %s port %u: %s (%s)",
			       t.host, t.port, rmp_strerror(ret),
			       rmp_client_last_error(rp->fresh[i]->c));
			return ret;
		}
		rmp_lease_close(rp->fresh[i]);
		rp->fresh[i] = h;
	}
	return 0;
}

/* unfence -- the fence's connections closed (their keys with them). */
static void unfence(struct repair *rp)
{
	for (unsigned i = 0; i < RMP_LREC_MEMBERS_MAX; i++) {
		rmp_client_free(rp->fc[i]); /* frees fenced[i] too */
		rp->fc[i] = NULL;
		rp->fenced[i] = NULL;
	}
}

/* target -- the handle that dead member i is filled by: its new lease,
 * or its own fenced one when caught up in place. Nobody renewed that
 * one while it was stale: as long as a live one, as a new member would
 * be (best effort: its ttl ends it, or the next renewal extends it). */
static struct rmp_lease *target(struct repair *rp, unsigned i)
{
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_lease *dst = rp->fenced[i];

	if (!rp->in_place[i])
		return rp->fresh[i];
	if (dst && !rmp_lease_info(live_of(rp, i), &info))
		(void)rmp_lease_renew(dst, (uint32_t)RMP_MAX(
			1, (info.ttl_ms + 999) / 1000));
	return dst;
}

/* copy_ec -- an erasure-coded lease's dead members rebuilt, a step of
 * rows at a time, each row decoded from k fenced live members that hold
 * one write of it; and its rows torn by a writer's death mended while
 * every data member lives (step 3). */
static int copy_ec(struct repair *rp)
{
	const struct rmpc_group *g = rp->l->group;
	struct rmpc_ec *ec = g->ec;
	struct rmp_lease *src[RMPC_MEMBERS_MAX] = { NULL };
	struct rmp_lease *dst[RMPC_MEMBERS_MAX] = { NULL };
	uint64_t bad = 0, mended = 0;
	int ret = 0;

	for (unsigned i = 0; i < g->n; i++) {
		if (rp->dead[i])
			dst[i] = target(rp, i);
		else
			src[i] = rp->fenced[i];
	}
	for (uint64_t r = 0; !ret && r < ec->lo.rows; r += ec->step_rows) {
		if (cl_wall_ms() >= rp->cx->rec.r.repair_until_ms)
			ret = -ETIMEDOUT;
		if (!ret)
			ret = rmpc_ec_rebuild_rows(ec, src, dst, r, RMP_MIN(
				ec->step_rows, ec->lo.rows - r), &bad,
				&mended);
	}
	if (ret == -EBADMSG)
		cl_say(rp->cl, "row %" PRIu64 " of the erasure-coded lease: "
		       "no %u of its members hold one write of it (a writer "
		       "died within it): rmpool scrub mends it while every "
		       "data member lives", bad, ec->lo.k);
	else if (ret == -EAGAIN)
		cl_say(rp->cl, "row %" PRIu64 " of the erasure-coded lease "
		       "has a write under way (a holder's, which the fence "
		       "cut short and makes again once this repair is "
		       "undone): try again", bad);
	else if (ret)
		cl_say(rp->cl, "rebuilding the new members: %s",
		       rmp_strerror(ret));
	return ret;
}

/* copy -- each new member filled from a live one of its stripe (of an
 * erasure-coded lease: decoded), in time (step 3). */
static int copy(struct repair *rp)
{
	char *buf;
	int ret;

	if (rp->l->group->ec)
		return copy_ec(rp);
	buf = malloc(COPY_CHUNK);
	ret = buf ? 0 : -ENOMEM;
	for (unsigned i = 0; !ret && i < rp->l->group->n; i++) {
		struct rmp_lease *src = live_of(rp, i), *dst = rp->dead[i] ?
			target(rp, i) : NULL;

		if (!dst)
			continue;
		for (uint64_t off = 0; !ret && off < src->length;
		     off += COPY_CHUNK) {
			size_t n = (size_t)RMP_MIN(COPY_CHUNK,
						   src->length - off);

			if (cl_wall_ms() >= rp->cx->rec.r.repair_until_ms)
				ret = -ETIMEDOUT;
			/* members are leases of one server each: their
			 * data calls (no group's: no writer claim) */
			if (!ret)
				ret = rmpc_rails_rw(src, off, buf, n, false);
			if (!ret)
				ret = rmpc_rails_rw(dst, off, buf, n, true);
		}
		if (ret)
			cl_say(rp->cl, "copying to the new replica: %s",
			       rmp_strerror(ret));
	}
	free(buf);
	return ret;
}

/* publish -- the new list, the mark cleared (step 4); the handle takes
 * the new members. */
static int publish(struct repair *rp)
{
	struct cl_record rec = rp->cx->rec;
	int ret;

	for (unsigned i = 0; i < rp->l->group->n; i++) {
		if (rp->fresh[i])
			cl_member_token(rp->fresh[i], &rec.r.member[i]);
		if (rp->fresh[i] || rp->in_place[i])
			rec.r.stale[i] = false;
	}
	rec.r.epoch = rp->epoch;
	rec.r.repair_until_ms = 0;
	if (cl_wall_ms() >= rp->cx->rec.r.repair_until_ms) {
		cl_say(rp->cl, "the repair took longer than its deadline");
		return -ETIMEDOUT;
	}
	ret = cl_record_replace(rp->cl, &rec);
	if (ret == -ETIMEDOUT || ret == -ECONNREFUSED || ret == -EIO) {
		/* the txn may have been done all the same: look (twice) */
		struct cl_record now = rec;
		int look = cl_record_read(rp->cl, &now);

		if (look)
			look = cl_record_read(rp->cl, &now);
		if (!look && now.r.epoch == rec.r.epoch &&
		    !now.r.repair_until_ms &&
		    !memcmp(now.r.member, rec.r.member, sizeof(rec.r.member)) &&
		    !memcmp(now.r.stale, rec.r.stale, sizeof(rec.r.stale)))
			ret = 0, rec = now;
		else if (look)
			rp->unknown = true; /* then keep the new leases */
		rmp_wipe(&now, sizeof(now));
	}
	if (!ret) {
		rp->cx->rec = rec;
		for (unsigned i = 0; i < rp->l->group->n; i++) {
			/* one caught up in place: attached anew by the
			 * refresh after the fence (its key here revoked) */
			if (rp->in_place[i])
				rmpc_group_swap(rp->l, i, NULL);
			if (!rp->fresh[i])
				continue;
			rmpc_group_swap(rp->l, i, rp->fresh[i]);
			rp->fresh[i] = NULL;
		}
		for (unsigned i = 0; i < rp->l->group->n; i++)
			if (rp->l->group->m[i])
				rmpc_lease_set_epoch(rp->l->group->m[i],
						     rp->epoch);
	}
	rmp_wipe(&rec, sizeof(rec));
	return ret;
}

/* undo -- a repair that failed: its new leases freed, the mark taken
 * back (best effort: its deadline ends it anyway), at the fence's epoch
 * once the fence began (the members refuse an older record now). */
static void undo(struct repair *rp)
{
	for (unsigned i = 0; i < RMP_LREC_MEMBERS_MAX; i++) {
		if (rp->unknown)
			rmp_lease_close(rp->fresh[i]);
		else
			rmp_lease_free(rp->fresh[i]);
	}
	if (rp->marked && !rp->unknown) {
		struct cl_record rec = rp->cx->rec;
		char why[CL_ERRBUF];

		snprintf(why, sizeof(why), "%s", rp->cl->err);
		rec.r.repair_until_ms = 0;
		if (rp->fenced_any)
			rec.r.epoch = rp->epoch;
		if (!cl_record_replace(rp->cl, &rec))
			rp->cx->rec = rec;
		rmp_wipe(&rec, sizeof(rec));
		snprintf(rp->cl->err, sizeof(rp->cl->err), "%s", why);
	}
}

/* mark -- step 1: the record says the lease is under repair, at the
 * epoch F the fence will carry: never behind its members, so a repair
 * that dies after the fence (its process killed, etcd out of reach for
 * its undo) leaves a record that attaches once its mark is cleared. */
static int mark(struct repair *rp)
{
	uint64_t bytes = 0, was = rp->cx->rec.r.epoch;
	int ret;

	/* the budget holders allow it too (cl_record_settled) */
	bytes = rp->cx->rec.r.length * rp->cx->rec.r.replicas;
	rp->cx->rec.r.repair_until_ms = cl_wall_ms() +
		cl_repair_budget_ms(bytes);
	rp->cx->rec.r.epoch = rp->epoch;
	ret = cl_record_replace(rp->cl, &rp->cx->rec);
	if (ret) {
		rp->cx->rec.r.repair_until_ms = 0;
		rp->cx->rec.r.epoch = was;
		if (ret == -EAGAIN)
			cl_say(rp->cl, "the lease's record changed meanwhile "
			       "(another repair?): try again");
		return ret;
	}
	rp->marked = true;
	return 0;
}

/* fenceable -- no live member is on a node of one key for its whole
 * pool (lease_keys = pool): its key is never revoked, so no fence. */
static int fenceable(struct repair *rp)
{
	for (unsigned i = 0; i < rp->l->group->n; i++) {
		const struct cl_node *n =
			cl_member_node(rp->cl, &rp->cx->rec.r.member[i]);

		if (rp->dead[i] || !n ||
		    strcmp(n->m.keys_mode, RMP_KEYS_POOL_NAME))
			continue;
		cl_say(rp->cl, "node %s grants one key for its whole pool "
		       "(lease_keys = pool): a repair cannot fence the other "
		       "holders' writes there", n->m.node);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* free_replaced -- each replaced member still to be reached freed (best
 * effort): a holder that has not refreshed would read its old bytes,
 * and its memory would stay taken until its ttl. */
static void free_replaced(struct repair *rp)
{
	for (unsigned i = 0; i < RMP_LREC_MEMBERS_MAX; i++) {
		char text[RMP_TOKEN_MAX];
		struct cl_conn *k;
		int err;

		if (!rp->dead[i] || !rp->old[i].port ||
		    rmp_token_format(&rp->old[i], text, sizeof(text)) < 0)
			continue;
		k = cl_token_conn(rp->cl, text, &err);
		if (k)
			rmp_lease_free_token(k->c, text);
		rmp_wipe(text, sizeof(text));
	}
}

/*
 * recover_epochs -- the record is behind what its members know (the
 * handle's refresh got -ESTALE): put back from before a repair, or left
 * by a repair whose undo did not reach etcd. Each member is asked its
 * epoch (an ATTACH by epoch 0 asks nothing of it); those behind the
 * newest missed a fence (replaced, or away): dead. The rest were fenced
 * last, hold every acknowledged write, and are live. The repair then
 * publishes past the newest, even with nothing to replace. Every member
 * must answer: one that does not may know a newer epoch still, and
 * those that answered may have missed its writes (-EAGAIN then: try
 * again once it answers). 0, or the error with why in cl->err.
 */
static int recover_epochs(struct repair *rp)
{
	const struct rmp_lease_record *r = &rp->cx->rec.r;
	uint64_t newest = r->epoch, knows[RMP_LREC_MEMBERS_MAX] = { 0 };
	unsigned n = r->stripes * r->replicas;

	for (unsigned i = 0; i < n; i++) {
		struct rmp_lease *m = NULL;

		if (cl_member_attach(rp->cl, &r->member[i], 0, false, 0, &m)) {
			char why[CL_ERRBUF / 2];

			snprintf(why, sizeof(why), "%.*s", (int)sizeof(why) - 1,
				 rp->cl->err);
			cl_say(rp->cl, "the lease's record is behind its members, "
			       "and member %u (%s port %u) does not answer: it "
			       "may know the newest epoch, and the others lack "
			       "its writes; try again once it answers (%s)", i,
			       r->member[i].host, r->member[i].port, why);
			return -EAGAIN;
		}
		knows[i] = m->server_epoch;
		newest = RMP_MAX(newest, knows[i]);
		if (!rp->l->group->m[i] && !r->stale[i]) {
			rmpc_group_swap(rp->l, i, m);
			rmpc_lease_set_epoch(m, newest);
		} else {
			rmp_lease_close(m);
		}
	}
	for (unsigned i = 0; i < n; i++)
		rp->dead[i] = knows[i] < newest;
	rp->cx->rec.r.epoch = newest;
	rp->recovered = true;
	return 0;
}

/* run -- the repair of the members find_dead chose (those in place
 * already known to be so): steps 1 to 4, or undone. */
static int run(struct repair *rp)
{
	int ret;

	rp->epoch = rp->cx->rec.r.epoch + 1;
	ret = fenceable(rp);
	if (!ret)
		ret = place_fresh(rp);
	if (!ret)
		ret = pin_fresh(rp);
	if (!ret)
		ret = mark(rp);
	if (!ret)
		ret = fence(rp);
	/* no holder writes now: a claim left by a writer that died goes
	 * (best effort: its ttl ends it too), a live one claims anew */
	if (!ret && rp->l->group->ec) {
		cl_claim_break(rp->cl, &rp->cx->rec);
		cl_claim_doubt(rp->cx); /* this handle's too */
	}
	if (!ret)
		ret = copy(rp);
	if (!ret)
		ret = publish(rp);
	if (ret)
		undo(rp);
	unfence(rp);
	if (!ret) {
		free_replaced(rp);
		rp->cx->behind = false;
	}
	/* the fence revoked this handle's keys too: attached anew (the
	 * repair itself is done or undone whatever this says) */
	if (rp->fenced_any)
		cl_lease_refresh(rp->l);
	return ret;
}

int rmp_lease_repair(struct rmp_lease *l)
{
	struct repair rp = { 0 };
	bool recover;
	int ret;

	if (!l)
		return -EINVAL;
	if (!l->group || !l->group->keeper)
		return -EOPNOTSUPP;
	rp.l = l;
	rp.cx = l->group->keeper_arg;
	rp.cl = rp.cx->cl;
	/* the handle brought up to date with the record first (a repair
	 * under way waited out; the members it lacks attached; a record of
	 * another shape refused; one older than its members recovered) */
	ret = cl_members_current(rp.cl);
	recover = rp.cx->behind; /* rmp_cluster_repair looked at history */
	if (!ret && !recover)
		ret = cl_lease_refresh(l);
	if (ret == -ESTALE && !recover) {
		/* put back over a newer record? that one again; still behind
		 * its members, no newer list was ever published: recover */
		int newest = cl_record_newest(rp.cl, &rp.cx->rec);

		if (newest < 0)
			return newest;
		ret = newest ? cl_lease_refresh(l) : -ESTALE;
		recover = ret == -ESTALE;
	}
	if (recover) {
		ret = cl_record_settled(rp.cl, &rp.cx->rec);
		if (!ret)
			ret = recover_epochs(&rp);
	}
	if (ret)
		return ret;
	find_dead(&rp);
	/* an erasure-coded lease is also scrubbed: its rows looked at */
	if (!rp.ndead && !rp.recovered && !l->group->ec)
		return 0;
	return run(&rp);
}

/* catch_up_candidate -- member i of a catch-up, by what costs nothing
 * to look at: in_place_may, a live replica to copy from, and its node
 * not known out of reach (its backoff). */
static bool catch_up_candidate(struct repair *rp, unsigned i, uint64_t now)
{
	struct cl_node *n = cl_member_node(rp->cl, &rp->cx->rec.r.member[i]);

	return in_place_may(rp, i) && live_of(rp, i) &&
	       rmpc_backoff_due(&n->backoff, now);
}

int cl_lease_catch_up(struct rmp_lease *l)
{
	struct repair rp = { 0 };
	struct rmpc_group *g = l->group;
	uint64_t now = rmp_now_ms(), bytes = 0;
	int ret;

	rp.l = l;
	rp.cx = g->keeper_arg;
	rp.cl = rp.cx->cl;
	if (rp.cx->behind || rp.cx->rec.r.repair_until_ms ||
	    rp.cx->caught_up_failed == rp.cx->rec.r.epoch)
		return 0;
	find_dead(&rp);
	/* every member to repair qualifies by what costs nothing first; a
	 * member to place anew is for rmp_lease_repair (an operator's or a
	 * caller's), which moves memory to another node */
	for (unsigned i = 0; i < g->n; i++) {
		if (!rp.dead[i])
			continue;
		if (!catch_up_candidate(&rp, i, now))
			return 0;
		bytes += live_of(&rp, i)->length;
	}
	/* the copy is this data call's wait: a larger one is for an
	 * explicit repair */
	if (!bytes || bytes > CL_CATCH_UP_MAX_BYTES)
		return 0;
	for (unsigned i = 0; i < g->n; i++) {
		if (!rp.dead[i])
			continue;
		ret = still_held(&rp, i);
		if (ret) {
			struct cl_node *n =
				cl_member_node(rp.cl, &rp.cx->rec.r.member[i]);

			if (rmpc_fault_of(ret) == RMPC_FAULT_TRANSIENT && n)
				cl_node_unreachable(n, now); /* later */
			else /* gone there: for a repair, not tried again */
				rp.cx->caught_up_failed = rp.cx->rec.r.epoch;
			return 0;
		}
		rp.in_place[i] = true;
		memset(&rp.old[i], 0, sizeof(rp.old[i])); /* kept */
	}
	ret = run(&rp);
	/* not again on this record: a fence on every try would revoke
	 * every holder's keys every few seconds */
	if (ret)
		rp.cx->caught_up_failed = rp.cx->rec.r.epoch;
	return ret;
}

int rmp_cluster_repair(struct rmp_cluster *cl, const char *token)
{
	struct rmp_lease *l;
	int ret;

	if (!cl || !token)
		return -EINVAL;
	if (!rmp_ctoken_is(token)) {
		cl_say(cl, "not a cluster lease token (rmpc://)");
		return -EOPNOTSUPP;
	}
	ret = cl_lease_attach(cl, token, NULL, false, &l);
	if (ret == -ESTALE) {
		/* put back over a newer record? that one again (its members
		 * attach then); still behind its members: recover */
		struct cl_record rec = { 0 };

		ret = rmp_ctoken_parse(token, &rec.t) ? -EINVAL :
		      cl_record_key(cl, &rec);
		if (!ret)
			ret = cl_record_newest(cl, &rec);
		rmp_wipe(&rec, sizeof(rec));
		if (ret >= 0)
			ret = cl_lease_attach(cl, token, NULL, false, &l);
		if (ret == -ESTALE)
			ret = cl_lease_attach(cl, token, NULL, true, &l);
	}
	if (ret)
		return ret;
	ret = rmp_lease_repair(l);
	rmp_lease_close(l);
	return ret;
}

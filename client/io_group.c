/* SPDX-License-Identifier: MIT */
/*
 * io_group.c -- the data calls on a mirrored or striped lease: a call
 * cut into one part per stripe it touches (stripe.c), the parts moved
 * together (a leg per member, over the rails of its node when it has
 * several: io_rails.c's rmpc_rails_legs); within a stripe,
 * reads from one replica with failover to the next within the call,
 * writes to all of them at once. What a member's failure means is
 * decided here (lost, not an error while its stripe has another), and
 * when a write counts as done: every member it was not made on marked
 * stale first (the keeper's missed, a compare-and-swap on the record),
 * so that no acknowledged write is lost to a reader or a repair in any
 * process.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "fault.h"
#include "group.h"
#include "io_int.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"
#include "stripe.h"
#include "util.h"

_Static_assert(RMPC_LEGS_MAX >= RMPC_MEMBERS_MAX,
	       "rmpc_rw takes a leg per member of a group");

/* caller_error -- err says the call itself is wrong (the same at every
 * replica), not that the replica failed. */
static bool caller_error(int err)
{
	return rmpc_fault_of(err) == RMPC_FAULT_CALLER;
}

/* A call on a group cut into its stripes' parts. */
struct parts {
	struct rmpc_stripe_piece p[RMPC_STRIPES_MAX];
	unsigned n;
	int first[RMPC_STRIPES_MAX];  /* a part's first member error */
};

/* split -- [off, off+len) of l into its parts: 0, or -ERANGE outside
 * the lease (the sum overflowing too). */
static int split(struct rmp_lease *l, uint64_t off, uint64_t len,
		 struct parts *pt)
{
	const struct rmpc_group *g = l->group;

	if (len > l->length || off > l->length - len)
		return -ERANGE;
	memset(pt->first, 0, sizeof(pt->first));
	pt->n = rmpc_stripe_split(g->stripes, g->stripe_unit, off, len,
				  pt->p);
	return 0;
}

/* leg_of -- the leg of member i for part p of a call on local. */
static struct rmpc_leg leg_of(const struct rmpc_group *g, unsigned i,
			      const struct rmpc_stripe_piece *p, char *local)
{
	return (struct rmpc_leg){
		.l = g->m[i], .off = p->off, .len = p->len,
		.local = local + p->local, .unit = g->stripe_unit,
		.gap = (uint64_t)(g->stripes - 1) * g->stripe_unit,
	};
}

/* next_live -- the first member of part p's stripe from replica j on
 * not lost, or -1. */
static int next_live(const struct rmpc_group *g,
		     const struct rmpc_stripe_piece *p, unsigned j)
{
	for (; j < g->replicas; j++)
		if (rmpc_member_live(g, p->stripe * g->replicas + j))
			return (int)(p->stripe * g->replicas + j);
	return -1;
}

/* read_once -- each part from the first live replica of its stripe,
 * failing over; but with fenced, a key the server revoked (-EKEYREVOKED)
 * or a newer epoch a member knows (-ESTALE, when a rail's handle is
 * attached after the fence) ends the call: a repair's fence, whose new
 * record must be read before another replica is (it may be one the
 * repair replaced). */
static int read_once(struct rmp_lease *l, uint64_t off, char *dst,
		     size_t len, bool fenced)
{
	struct rmpc_group *g = l->group;
	struct rmpc_leg legs[RMPC_STRIPES_MAX];
	unsigned part[RMPC_STRIPES_MAX], member[RMPC_STRIPES_MAX];
	bool done[RMPC_STRIPES_MAX] = { false };
	struct parts pt;
	int err;

	if (g->ec)
		return rmpc_ec_read_once(l, off, dst, len, fenced);
	err = split(l, off, len, &pt);
	if (err)
		return err;
	/* Each round reads every part not read yet from the first live
	 * replica of its stripe; a replica that failed is lost, and the
	 * next round tries the next. */
	for (;;) {
		unsigned nl = 0;

		for (unsigned i = 0; i < pt.n; i++) {
			int m;

			if (done[i])
				continue;
			m = next_live(g, &pt.p[i], 0);
			if (m < 0)
				return pt.first[i] ? pt.first[i] : -EIO;
			part[nl] = i;
			member[nl] = (unsigned)m;
			legs[nl++] = leg_of(g, (unsigned)m, &pt.p[i], dst);
		}
		if (!nl)
			return 0;
		rmpc_rails_legs(legs, nl, false, g->plans);
		for (unsigned k = 0; k < nl; k++) {
			unsigned i = part[k];

			err = legs[k].err;
			if (caller_error(err))
				return err;
			done[i] = !err;
			if (err)
				rmpc_member_failed(g, member[k], err,
						   rmp_now_ms());
			/* a fence: our key revoked, or (a rail's handle
			 * attached after it) the member's newer epoch */
			if ((err == -EKEYREVOKED || err == -ESTALE) && fenced)
				return err;
			pt.first[i] = pt.first[i] ? pt.first[i] : err;
		}
	}
}

/* write_once -- to every live replica at once; a member that fails is
 * lost (the write may be done without it). The stripes it was made on
 * (on one replica at least) are added to *made, failed or not. */
static int write_once(struct rmp_lease *l, uint64_t off, char *src,
		      size_t len, uint32_t *made)
{
	struct rmpc_group *g = l->group;
	struct rmpc_leg legs[RMPC_LEGS_MAX];
	unsigned part[RMPC_LEGS_MAX], member[RMPC_LEGS_MAX], nl = 0;
	unsigned ok[RMPC_STRIPES_MAX] = { 0 };
	struct parts pt;
	int err;

	if (g->ec)
		return rmpc_ec_write_once(l, off, src, len, made);
	err = split(l, off, len, &pt);
	if (err)
		return err;
	for (unsigned i = 0; i < pt.n; i++) {
		unsigned s = pt.p[i].stripe, before = nl;

		for (unsigned j = 0; j < g->replicas; j++) {
			if (!rmpc_member_live(g, s * g->replicas + j))
				continue;
			part[nl] = i;
			member[nl] = s * g->replicas + j;
			legs[nl] = leg_of(g, member[nl], &pt.p[i], src);
			nl++;
		}
		if (nl == before)
			return -EIO; /* a stripe with no replica left */
	}
	rmpc_rails_legs(legs, nl, true, g->plans);
	for (unsigned k = 0; k < nl; k++) {
		unsigned i = part[k];

		err = legs[k].err;
		if (caller_error(err))
			return err;
		if (err)
			rmpc_member_failed(g, member[k], err, rmp_now_ms());
		pt.first[i] = pt.first[i] ? pt.first[i] : err;
		ok[i] += !err;
	}
	for (unsigned i = 0; i < pt.n; i++)
		if (ok[i])
			*made |= UINT32_C(1) << pt.p[i].stripe;
	for (unsigned i = 0; i < pt.n; i++)
		if (!ok[i])
			return pt.first[i];
	return 0;
}

/* lacking -- the members that lack the write of [off, off+len) just
 * made and are not known to (missed): the lost members of the stripes
 * it touched, whenever they were lost (in this call, or before it: a
 * read, a renewal, a flush lose members too). Into need; how many. */
static unsigned lacking(struct rmp_lease *l, uint64_t off, uint64_t len,
			bool *need)
{
	struct rmpc_group *g = l->group;
	unsigned n = 0;
	struct parts pt;

	if (split(l, off, len, &pt))
		return 0;
	/* one whose earlier mark failed is named by every mark until one
	 * is made */
	for (unsigned j = 0; j < g->n; j++)
		/* every member of an erasure-coded lease holds every row */
		need[j] = rmpc_member_owes(g, j) ||
			  (g->ec && rmpc_member_away(g, j));
	for (unsigned i = 0; !g->ec && i < pt.n; i++) {
		unsigned first = pt.p[i].stripe * g->replicas;

		for (unsigned j = first; j < first + g->replicas; j++)
			need[j] = need[j] || rmpc_member_away(g, j);
	}
	for (unsigned j = 0; j < g->n; j++)
		n += need[j];
	return n;
}

/* again -- a call on l failed with err for want of a live member: when
 * l is a cluster lease, its record may name members anew (a repair
 * revoked our keys and replaced a lost replica; a connection came back):
 * true when the call may be tried once more. *said: the refresh's
 * answer (left as it was when none was asked). */
static bool again(struct rmp_lease *l, int err, int *said)
{
	const struct rmpc_group_keeper *k = l->group->keeper;

	if (!err || caller_error(err) || !k)
		return false;
	*said = k->refresh(l);
	return !*said;
}

/* retry_suspects -- when a suspect member of l is due to be tried
 * again, the keeper's retry: the record read (not while a repair holds
 * it) and the members away attached anew by its epoch, LIVE if their
 * server still holds the lease. Its failure is no error of the call:
 * the others serve it. */
static void retry_suspects(struct rmp_lease *l)
{
	const struct rmpc_group_keeper *k = l->group->keeper;

	if (!k || !rmpc_group_retry(l->group, rmp_now_ms()))
		return;
	/* -EAGAIN: nothing was tried (a repair, etcd out of sync) */
	if (k->retry(l) != -EAGAIN)
		rmpc_group_tried(l->group, rmp_now_ms());
}

/* wait_suspect -- rmpc_group_wait for the stripes [off, off+len) of l
 * touches. */
static bool wait_suspect(struct rmp_lease *l, uint64_t off, uint64_t len,
			 int err, int said, uint64_t deadline,
			 struct rmpc_backoff *b)
{
	uint32_t stripes = 0;
	struct parts pt;

	if (split(l, off, len, &pt))
		return false;
	for (unsigned i = 0; i < pt.n; i++)
		stripes |= UINT32_C(1) << pt.p[i].stripe;
	if (l->group->ec) /* any member may bring back the k a call needs */
		stripes = (UINT32_C(1) << l->group->n) - 1;
	return rmpc_group_wait(l, stripes, err, said, deadline, b);
}

int rmpc_group_read(struct rmp_lease *l, uint64_t off, char *dst, size_t len)
{
	uint64_t deadline = rmpc_group_deadline(l);
	struct rmpc_backoff pause = { 0 };
	int err, said = 0, first = 0;

	do {
		retry_suspects(l);
		/* a cluster lease's first try stops at a revoked key (a
		 * fence): the record is read again before any other
		 * replica is */
		err = read_once(l, off, dst, len, l->group->keeper != NULL);
		if (again(l, err, &said))
			err = read_once(l, off, dst, len, false);
		first = first ? first : err;
	} while (wait_suspect(l, off, len, err, said, deadline, &pause));
	/* after a wait, "no member left" says less than what failed */
	return err ? first : 0;
}

/* Most times one write is made again on a record that moved under it. */
#define WRITE_TRIES 3

/* write_tries -- rmpc_group_write's tries at one time; *said: the
 * last refresh's answer; *refused: a coded lease's writer claim failed
 * (no use waiting for a member). */
static int write_tries(struct rmp_lease *l, uint64_t off, char *src,
		       size_t len, int *said, bool *refused)
{
	struct rmpc_group *g = l->group;
	const struct rmpc_group_keeper *k = g->keeper;
	bool need[RMPC_MEMBERS_MAX];
	bool unmarked = false; /* made without need[], and not marked */
	uint32_t made = 0;     /* stripes it was made on, in any try */
	int err = 0;

	retry_suspects(l);
	for (int tries = 0; tries < WRITE_TRIES; tries++) {
		/* a write is the same bytes again: all of it goes to the
		 * new list */
		if (tries && (caller_error(err) || !k || (*said = k->refresh(l))))
			break;
		/* a coded lease has one writer: two would each update
		 * parity from the old (ec_tags.h) and lose a delta. Asked
		 * here before a try, and by io_ec.c before each later step
		 * of rows; refused, what a try before left unmarked is
		 * marked below */
		err = g->ec && k ? k->claim(l) : 0;
		*refused = err != 0;
		if (*refused)
			break;
		unmarked = false;
		err = write_once(l, off, src, len, &made);
		*refused = err == -EBUSY;
		if (*refused)
			break;
		/* a stripe with no member left: refresh; not a coded row
		 * torn by another writer (-EBADMSG), which no refresh mends */
		if (err && !caller_error(err) && err != -EBADMSG && k)
			continue;
		if (err || !lacking(l, off, len, need))
			break;
		/* Members it was not made on: it counts as done once the
		 * record says they are stale. The record moved meanwhile
		 * (-EAGAIN): a repair's fence may be what failed us, so the
		 * write goes to the members of the record as it is now.
		 * Any other answer (etcd out of reach): not done. */
		err = k ? k->missed(l, need) : 0;
		if (!err) {
			for (unsigned i = 0; i < g->n; i++)
				if (need[i])
					rmpc_member_stale(g, i, rmp_now_ms());
			break;
		}
		unmarked = true;
		if (err != -EAGAIN)
			break;
	}
	/* not acknowledged, but made on some members and not on need[]:
	 * those are not taken back (a retry, a refresh) before a mark, or
	 * the replicas would differ where the write went */
	for (unsigned i = 0; unmarked && i < g->n; i++)
		if (need[i])
			rmpc_member_missed(g, i);
	/* failed on some stripe after it was made on another: the away
	 * replicas of a stripe it was made on differ from it now, the same.
	 * A coded lease's made names the members that lack a row done (its
	 * tag finished on k others); one away from rows cut short only may
	 * come back as it is (a flap): each row's tags say which member
	 * holds which write (ec_tags.h), and a decode uses k that agree */
	if (err && !unmarked && !caller_error(err))
		for (unsigned i = 0; i < g->n; i++)
			if ((made >> (i / g->replicas) & 1) &&
			    rmpc_member_away(g, i))
				rmpc_member_missed(g, i);
	return err;
}

int rmpc_group_write(struct rmp_lease *l, uint64_t off, char *src, size_t len)
{
	uint64_t deadline = rmpc_group_deadline(l);
	struct rmpc_backoff pause = { 0 };
	int err, said = 0, first = 0;
	bool refused = false;

	/* a stripe whose members are all SUSPECT: nothing was written on
	 * it (write_once posts nothing then), or its write failed on each
	 * (not acknowledged): it is made anew once one is back */
	do {
		err = write_tries(l, off, src, len, &said, &refused);
		first = first ? first : err;
	} while (!refused &&
		 wait_suspect(l, off, len, err, said, deadline, &pause));
	/* refused: the claim's answer, not a member's error before it */
	return refused ? err : err ? first : 0;
}

int rmpc_group_flush(struct rmp_lease *l)
{
	struct rmpc_group *g = l->group;
	struct rmpc_tally t = { .first = { 0 } };

	for (unsigned i = 0; i < g->n; i++)
		if (rmpc_member_live(g, i))
			rmpc_tally_add(g, &t, i, rmpc_flush_one(g->m[i]),
				       rmp_now_ms());
	return rmpc_tally_error(g, &t, -EIO);
}

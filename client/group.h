/* SPDX-License-Identifier: MIT */
/*
 * group.h -- a mirrored or striped lease's members and the state of each:
 * the one writer of a member's state (group.c), as the daemon's
 * lc_set_state is of a lease's. Pure: no call leaves it.
 *
 * The lease's bytes are cut in units of stripe_unit; unit u is in stripe
 * u % stripes (at (u / stripes) * stripe_unit of it); each stripe has
 * replicas members of the same bytes, on distinct clients (members of
 * different stripes may share one). Reads go to the first live replica
 * of a stripe; writes, renewals and the free to every live one. A stripe
 * with no live replica fails the calls that touch it.
 *
 *   state    meaning                                  leaves by
 *   LIVE     read, written, renewed                   a call failing on it
 *   SUSPECT  its way failed (TRANSIENT, REVOKED in    a write without it
 *            fault.h): the node may answer again;     (STALE), GONE or
 *            not used; tried again (a refresh, which  member_timeout_ms
 *            reads the record and attaches it anew)   past and a try
 *            after a backoff (RETRY_*_MS)             failed (LOST), a
 *                                                     refresh (swap)
 *   MISSED   a write went on without it, and the      the record marked
 *            record could not be made to say so (etcd (STALE), a new
 *            out of reach): never used or attached    member (swap)
 *            again until a mark makes it STALE
 *   STALE    a write went on without it (the record   a new member (swap),
 *            says so): it lacks bytes; never read,    also itself caught
 *            written or attached again as it is;      up in place (a
 *            after a backoff (RETRY_*_MS) the keeper  catch-up: swap)
 *            tries to catch it up where it is
 *   LOST     gone (its lease ended there, its node    a write without it
 *            left, it is no server of ours) or        (STALE), a refresh
 *            failed for a reason of its own           (swap)
 *
 * A member that could not be attached starts LOST. rmpc_member_swap puts
 * a new handle in a slot: LIVE (or LOST when there is none), whatever
 * the slot's state was.
 */
#ifndef RMPC_GROUP_H
#define RMPC_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"

struct rmp_lease;
struct rmpc_group_keeper;
struct rmpc_ec;
struct rmpc_rail_plan;

/* Most replicas of a mirrored lease. */
#define RMPC_REPLICAS_MAX 3u
/* Most stripes of a striped lease. */
#define RMPC_STRIPES_MAX 16u
/* Room for a cluster lease's token (common/lease_record.h). */
#define RMPC_GROUP_TOKEN_MAX 112u
#define RMPC_MEMBERS_MAX (RMPC_STRIPES_MAX * RMPC_REPLICAS_MAX)
/* the legs one data call of a group of n members moves at most */
#define RMPC_GROUP_PLANS(n) (3 * (n))

/* A suspect member is tried again after 4 s, then every 8 s: a flap or
 * a daemon's restart is over in seconds, and a node that died has left
 * etcd by the first try when its ttl is short (then it is lost without
 * a connect; a connect to a dead host may hold the data call that
 * tries it for the connect timeout). */
#define RMPC_MEMBER_RETRY_FIRST_MS 4000u
#define RMPC_MEMBER_RETRY_MAX_MS 8000u
/* ... and lost after 30 s suspect: longer than a daemon restarted from
 * its state_dir, a link flap or a switch's reboot; by then a node that
 * died has left etcd (its ttl) and its member is lost for that, so this
 * bound is for a node alive to etcd that its clients cannot reach. A
 * repair may replace a lost member. */
#define RMPC_MEMBER_TIMEOUT_MS 30000u

enum rmpc_member_state {
	RMPC_MEMBER_LIVE = 0,
	RMPC_MEMBER_SUSPECT,
	RMPC_MEMBER_STALE,
	RMPC_MEMBER_LOST,
	RMPC_MEMBER_MISSED,
};

/* Where a member's lease is: the server its token names (a token's host,
 * RMP_TOKEN_HOST_MAX + 1 bytes: lease_group.c checks). */
struct rmpc_member_at {
	char host[256];
	uint16_t port;
};

struct rmpc_group {
	unsigned stripes;     /* 1..RMPC_STRIPES_MAX */
	unsigned replicas;    /* 1..RMPC_REPLICAS_MAX; stripes * replicas >= 2 */
	uint64_t stripe_unit; /* bytes, a power of two */
	unsigned n;           /* stripes * replicas */
	/* m[s * replicas + j]: replica j of stripe s (NULL: none) */
	struct rmp_lease *m[RMPC_MEMBERS_MAX];
	/* read anywhere; written by group.c only */
	enum rmpc_member_state state[RMPC_MEMBERS_MAX];
	uint64_t suspect_ms[RMPC_MEMBERS_MAX];    /* SUSPECT since */
	struct rmpc_backoff retry[RMPC_MEMBERS_MAX]; /* SUSPECT: next try */
	uint32_t member_timeout_ms; /* SUSPECT this long: LOST (0: never) */
	/* a call whose stripe has only SUSPECT members waits this long for
	 * one to come back (the members' op timeout; 0: never) */
	uint32_t wait_ms;
	/* the cluster lease's record (NULL: none), kept by the cluster */
	const struct rmpc_group_keeper *keeper;
	void *keeper_arg;
	char token[RMPC_GROUP_TOKEN_MAX]; /* its token; "": none */
	/* RMPC_GROUP_PLANS(n) of them: a data call's scratch over the
	 * members' rails (io_rails.c), made with the handle, not at each
	 * call; one a leg, and io_ec.c moves up to three legs a member (its
	 * tag of a row, its bytes, its tag again) */
	struct rmpc_rail_plan *plans;
	/* n of them: where each member is, also one never attached (its
	 * node gone when the handle was made): rmp_lease_member_info */
	struct rmpc_member_at *at;
	/* an erasure-coded lease (ec_lease.h): its k data members then m
	 * parity are the n "stripes" of one replica; NULL: none */
	struct rmpc_ec *ec;
	unsigned ec_k; /* its k (else 0): the lease lives while k members do */
};

/* rmpc_member_failed -- a call on member i failed with err (not the
 * caller's) at now: SUSPECT when the way to it failed (its next try
 * after a backoff), else LOST. A STALE or LOST member stays as it is. */
void rmpc_member_failed(struct rmpc_group *g, unsigned i, int err,
			uint64_t now);
/* rmpc_member_lost -- member i is gone: LOST (a STALE one stays). */
void rmpc_member_lost(struct rmpc_group *g, unsigned i);
/* rmpc_member_stale -- member i lacks a write (the record says so):
 * STALE; a catch-up in place is due after RMPC_MEMBER_RETRY_FIRST_MS from
 * now (its node may still be out of reach). */
void rmpc_member_stale(struct rmpc_group *g, unsigned i, uint64_t now);
/* rmpc_member_missed -- member i (away) lacks a write the record could
 * not be made to say: MISSED, until a mark makes it STALE. */
void rmpc_member_missed(struct rmpc_group *g, unsigned i);
/* rmpc_member_swap -- slot i holds m now (NULL: none, LOST), LIVE:
 * returns the handle it held, for the caller to close. */
struct rmp_lease *rmpc_member_swap(struct rmpc_group *g, unsigned i,
				   struct rmp_lease *m);

/*
 * rmpc_group_retry -- whether a SUSPECT or STALE member is due to be
 * tried again at now: if so, each due one's next wait is longer. The try
 * (the keeper's retry) attaches every member away anew: LIVE by a swap,
 * LOST when its server says it is gone; and catches the STALE ones up
 * where they are when their servers still hold them.
 * rmpc_group_tried -- a try ended at now, and the members still SUSPECT
 * or STALE were tried: those suspect for member_timeout_ms are LOST
 * (never one that was not tried since: an idle handle loses nobody);
 * the others wait their next wait from now.
 */
bool rmpc_group_retry(struct rmpc_group *g, uint64_t now);
void rmpc_group_tried(struct rmpc_group *g, uint64_t now);

/* rmpc_member_live -- member i is LIVE (and has a handle). */
bool rmpc_member_live(const struct rmpc_group *g, unsigned i);
/* rmpc_member_away -- member i is SUSPECT or LOST: a write without it
 * leaves it lacking bytes the record does not know of yet; a refresh
 * may attach it anew. */
bool rmpc_member_away(const struct rmpc_group *g, unsigned i);
/* rmpc_member_owes -- member i is MISSED: any write's mark names it. */
bool rmpc_member_owes(const struct rmpc_group *g, unsigned i);
/*
 * A call made on each LIVE member (a renewal, a flush): a stripe lives
 * while one of its members did it.
 * rmpc_tally_add -- member i answered err at now (rmpc_member_failed on
 * an error).
 * rmpc_tally_error -- 0 when a member of every stripe did it (k members
 * of an erasure-coded lease); else the first error of the first stripe
 * none did (of any member), and when none of its members was tried:
 * -EHOSTUNREACH when one is SUSPECT, else none.
 */
struct rmpc_tally {
	int first[RMPC_STRIPES_MAX];
	unsigned ok[RMPC_STRIPES_MAX];
};
void rmpc_tally_add(struct rmpc_group *g, struct rmpc_tally *t, unsigned i,
		    int err, uint64_t now);
int rmpc_tally_error(const struct rmpc_group *g, const struct rmpc_tally *t,
		     int none);

/* rmpc_group_waits -- stripe s has no LIVE replica but a SUSPECT one:
 * a call on it waits for that one (within its op timeout) before it
 * fails. */
bool rmpc_group_waits(const struct rmpc_group *g, unsigned s);
/* rmpc_group_live -- how many replicas of stripe s are LIVE. */
unsigned rmpc_group_live(const struct rmpc_group *g, unsigned s);

#endif /* RMPC_GROUP_H */

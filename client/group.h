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
 *            fault.h): the node may answer again;     (STALE), GONE (LOST),
 *            not used by this handle until a refresh  a refresh (swap)
 *            attaches it anew
 *   STALE    a write went on without it (the record   a new member (swap)
 *            says so): it lacks bytes; never read,
 *            written or attached again as it is
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

struct rmp_lease;
struct rmpc_group_keeper;
struct rmpc_rail_plan;

/* Most replicas of a mirrored lease. */
#define RMPC_REPLICAS_MAX 3u
/* Most stripes of a striped lease. */
#define RMPC_STRIPES_MAX 16u
/* Room for a cluster lease's token (common/lease_record.h). */
#define RMPC_GROUP_TOKEN_MAX 112u
#define RMPC_MEMBERS_MAX (RMPC_STRIPES_MAX * RMPC_REPLICAS_MAX)

enum rmpc_member_state {
	RMPC_MEMBER_LIVE = 0,
	RMPC_MEMBER_SUSPECT,
	RMPC_MEMBER_STALE,
	RMPC_MEMBER_LOST,
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
	/* the cluster lease's record (NULL: none), kept by the cluster */
	const struct rmpc_group_keeper *keeper;
	void *keeper_arg;
	char token[RMPC_GROUP_TOKEN_MAX]; /* its token; "": none */
	/* n of them: a data call's scratch over the members' rails
	 * (io_rails.c), made with the handle, not at each call */
	struct rmpc_rail_plan *plans;
};

/* rmpc_member_failed -- a call on member i failed with err (not the
 * caller's): SUSPECT when the way to it failed, else LOST. A STALE or
 * LOST member stays as it is. */
void rmpc_member_failed(struct rmpc_group *g, unsigned i, int err);
/* rmpc_member_lost -- member i is gone: LOST (a STALE one stays). */
void rmpc_member_lost(struct rmpc_group *g, unsigned i);
/* rmpc_member_stale -- member i lacks a write (the record says so):
 * STALE. */
void rmpc_member_stale(struct rmpc_group *g, unsigned i);
/* rmpc_member_swap -- slot i holds m now (NULL: none, LOST), LIVE:
 * returns the handle it held, for the caller to close. */
struct rmp_lease *rmpc_member_swap(struct rmpc_group *g, unsigned i,
				   struct rmp_lease *m);

/* rmpc_member_live -- member i is LIVE (and has a handle). */
bool rmpc_member_live(const struct rmpc_group *g, unsigned i);
/* rmpc_member_away -- member i is SUSPECT or LOST: a write without it
 * leaves it lacking bytes the record does not know of yet; a refresh
 * may attach it anew. */
bool rmpc_member_away(const struct rmpc_group *g, unsigned i);
/* rmpc_group_live -- how many replicas of stripe s are LIVE. */
unsigned rmpc_group_live(const struct rmpc_group *g, unsigned s);

#endif /* RMPC_GROUP_H */

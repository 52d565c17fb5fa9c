/* SPDX-License-Identifier: MIT */
/* lease.h -- lease handles (struct rmp_lease) and whether one can be used now. */
#ifndef RMPC_LEASE_H
#define RMPC_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "group.h"
#include "rails.h"
#include "token.h"

struct rmp_attach_opts;
struct rmp_client;
struct rmpc_group;

struct rmp_lease {
	struct rmp_client *c;       /* NULL for a mirrored lease's handle */
	LIST_ENTRY(rmp_lease) link; /* in c->leases; a mirrored lease's
				     * in its owner's list (rmpc_group_new) */
	struct rmpc_group *group;   /* a mirrored or striped lease: its members */
	uint64_t gen;      /* c->gen of the connection that made the handle */
	uint64_t id, secret;
	uint64_t addr, length;
	uint64_t ttl_ms;   /* as reported by the server ... */
	uint64_t stamp_ms; /* ... at this local time (rmp_now_ms) */
	uint32_t rkey, access, flags;
	uint32_t holders;  /* as last reported */
	/* A member of a cluster lease: the epoch of the record it is
	 * attached by, sent with every ATTACH of it (0: none); and the
	 * group epoch its server holds, as its last ATTACH told. */
	uint64_t epoch;
	uint64_t server_epoch;
	char host[RMP_TOKEN_HOST_MAX + 1]; /* server, for the token */
	uint16_t port;
	/* With rails (rails.h): the handle of the same lease on rail i's
	 * connection, attached when first used there (rail[0] unused: l
	 * itself); closed with l. */
	struct rmp_lease *rail[RMPC_RAILS_MAX];
};

/*
 * A group's keeper: the cluster code (client/cluster_lease.c) keeps the
 * member list of a cluster lease in etcd, which must follow what is done
 * to the handle. lease.c and io_group.c sit below the cluster code, so
 * they reach it through these pointers (set by rmpc_group_keep):
 *   renewed  after the members were renewed by ttl_s: the record's etcd
 *            lease follows (0 or the error the renewal returns)
 *   ending   the handle goes (freed: the lease was freed, its record
 *            goes too; else closed): release keeper_arg
 *   missed   a write the others took was not made on the members
 *            missed[i] names (lost before or during it): mark them stale
 *            in the record, by a compare-and-swap on the record the
 *            handle read; only then is the write acknowledged. 0 (the
 *            record says so now), -EAGAIN (the record changed since: a
 *            repair under way or done, whose fence may be what failed
 *            us, or another holder's mark; refresh and write again), or
 *            an etcd error (the write is not acknowledged)
 *   refresh  read the record again (waiting out a repair) and attach
 *            anew the members it names that the handle lost (not one
 *            it marks stale) or that it replaced; 0 when the handle may
 *            try again
 *   retry    a suspect member's wait is over (group.h): refresh, but
 *            never waiting on a data call's path: nothing (-EAGAIN)
 *            while a repair holds the record or the membership is not
 *            in sync with etcd (a call on etcd could wait its timeout)
 *   claim    before each try of a write of an erasure-coded lease, and
 *            each later step of its rows: the handle is the lease's one
 *            writer (its claim in etcd, kept alive: two etcd round trips
 *            per half its ttl). 0, -EBUSY (another handle's claim: this
 *            try or step posts nothing), or etcd's error
 */
struct rmpc_group_keeper {
	int (*renewed)(struct rmp_lease *l, uint32_t ttl_s);
	void (*ending)(struct rmp_lease *l, bool freed);
	int (*missed)(struct rmp_lease *l, const bool *missed);
	int (*refresh)(struct rmp_lease *l);
	int (*retry)(struct rmp_lease *l);
	int (*claim)(struct rmp_lease *l);
};

/* rmpc_group_keep -- l's record is kept by keeper with arg; token its
 * cluster token (rmp_lease_token gives it); a member suspect for
 * member_timeout_ms is lost (0: never). */
void rmpc_group_keep(struct rmp_lease *l, const struct rmpc_group_keeper *k,
		     void *arg, const char *token, uint32_t member_timeout_ms);

/*
 * rmpc_group_swap -- member i of l is now m (attached anew; NULL: none):
 * the old handle is closed, i is live again (lost without m).
 */
void rmpc_group_swap(struct rmp_lease *l, unsigned i, struct rmp_lease *m);

/* rmpc_group_at -- member i of l is at host:port (its record's token):
 * what rmp_lease_member_info says of a member never attached. */
void rmpc_group_at(struct rmp_lease *l, unsigned i, const char *host,
		   uint16_t port);

LIST_HEAD(rmpc_lease_list, rmp_lease);

/* rmpc_group_renew -- rmp_lease_renew of a group (lease_group.c, which
 * has rmp_lease_renew: a group's or, by rmpc_lease_renew_one, a lease of
 * one server's, lease.c). */
int rmpc_group_renew(struct rmp_lease *l, uint32_t ttl_s);
int rmpc_lease_renew_one(struct rmp_lease *l, uint32_t ttl_s);

/*
 * rmpc_group_wait -- a call on the stripes of l set in the bit mask
 * stripes failed with err: when one of them has no LIVE replica but a
 * SUSPECT one (its node may answer again: every link flapped, its daemon
 * restarts), the last refresh said nothing worse than that a way failed
 * (said: its answer, 0 when none; not that the lease or a node is gone)
 * and deadline (rmpc_group_deadline of the call's start: the members'
 * op timeout) is ahead, pause (b: the pauses so far) and return true:
 * the call refreshes (which attaches the suspects anew) and tries again.
 * Only a cluster lease's members come back (its keeper attaches them).
 */
bool rmpc_group_wait(struct rmp_lease *l, uint32_t stripes, int err,
		     int said, uint64_t deadline, struct rmpc_backoff *b);
uint64_t rmpc_group_deadline(const struct rmp_lease *l);

/*
 * rmpc_group_new -- one handle over the stripes * replicas lease handles
 * m (in the order of rmpc_group.m; 2..RMPC_STRIPES_MAX *
 * RMPC_REPLICAS_MAX of them; the replicas of a stripe each of a
 * different client; NULL for one that could not be attached: lost from
 * the start, but a stripe needs one at least), which it takes over:
 * freed with it. length: the lease's bytes, laid out in units of
 * stripe_unit (a power of two); each member must hold its stripe's part
 * of them. The handle is put on owner (NULL: none), whose keeper frees
 * what is left on it when the clients go. 0, -EINVAL, -ENOMEM (then m
 * stays the caller's).
 */
int rmpc_group_new(struct rmp_lease *const *m, unsigned stripes,
		   unsigned replicas, uint64_t stripe_unit, uint64_t length,
		   struct rmpc_lease_list *owner, struct rmp_lease **out);

/*
 * rmpc_group_new_ec -- as rmpc_group_new, one handle over an
 * erasure-coded lease of length bytes: m[0 .. k) its data members, then
 * parity more (ec_layout.h), coded in chunks of chunk bytes; each
 * member holds rmpc_ec_member_size bytes at least; k of them at least
 * are there (not NULL).
 */
int rmpc_group_new_ec(struct rmp_lease *const *m, unsigned k,
		      unsigned parity, uint64_t chunk, uint64_t length,
		      struct rmpc_lease_list *owner, struct rmp_lease **out);


/*
 * rmpc_lease_usable -- l was made on the current connection, which works
 * (-ENOTCONN), and, with check_expiry, its deadline as last reported by
 * the server has not passed (-EKEYEXPIRED: posting would only make the
 * NIC answer a remote access error and break the connection). With
 * reconnecting on, a lost connection is made again first and a handle of
 * an earlier one attached again.
 */
int rmpc_lease_usable(struct rmp_lease *l, bool check_expiry);

/*
 * rmpc_lease_on_rail -- l's handle on rail i, whose client is rc: l
 * itself for rail 0; else attached there (by l's id and secret, with
 * its access, not exclusive) the first time, and again when rc's
 * connection was made anew since. Rail 0's handle after its connection
 * was made anew is attached again too. 0 or the error of the ATTACH.
 */
int rmpc_lease_on_rail(struct rmp_lease *l, struct rmp_client *rc,
		       unsigned i, struct rmp_lease **out);

/*
 * rmpc_lease_attach_epoch -- rmp_lease_attach_with for a member of a
 * cluster lease attached by a record of epoch (0: none, as
 * rmp_lease_attach_with): the server refuses it with -ESTALE when the
 * lease's group was attached by a newer record, and keeps a newer epoch;
 * the handle sends epoch with each ATTACH it makes again (a reconnect,
 * a rail). rmpc_lease_set_epoch -- the epoch of l from now on (its
 * record moved on; the server learns it at l's next ATTACH).
 */
int rmpc_lease_attach_epoch(struct rmp_client *c, const char *token,
			    const struct rmp_attach_opts *opts, uint64_t epoch,
			    struct rmp_lease **out);
void rmpc_lease_set_epoch(struct rmp_lease *l, uint64_t epoch);
/* rmpc_lease_pin_epoch -- rmpc_lease_set_epoch, and an ATTACH of l by it
 * at once (its connection's key comes back unchanged): its server knows
 * the epoch from now on. 0 or the error of the ATTACH. */
int rmpc_lease_pin_epoch(struct rmp_lease *l, uint64_t epoch);

/* rmpc_lease_rail_drop -- close the handle of every lease of c on rail
 * i (its client goes). */
void rmpc_lease_rail_drop(struct rmp_client *c, unsigned i);

/* rmpc_leases_free -- free every lease handle of c (rmp_client_free). */
void rmpc_leases_free(struct rmp_client *c);

#endif /* RMPC_LEASE_H */

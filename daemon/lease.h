/* SPDX-License-Identifier: MIT */
/* lease.h -- the lease table: lookup by id and expiry order. */
#ifndef RMP_LEASE_H
#define RMP_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/queue.h>

#include "alloc.h"

struct rmp_holder;
struct rmp_key;
struct rmp_pool;
struct rmp_tenant;

TAILQ_HEAD(rmp_key_list, rmp_key);

/*
 * The life of a lease, moved by lifecycle.c only:
 *
 *   GRANTED --end--> REVOKING --key proven dead--> ZEROING --> (freed)
 *                        \--proof failed---------> QUARANTINED
 *
 * GRANTED: in the table, reachable through its keys (one per holder).
 * REVOKING: out of the table; its keys are being invalidated.
 * ZEROING: no key reaches the extent; it is being zeroed, then reused.
 * QUARANTINED: a key could not be proven dead: the extent is never reused.
 */
enum rmp_lease_state {
	RMP_LEASE_GRANTED,
	RMP_LEASE_REVOKING,
	RMP_LEASE_ZEROING,
	RMP_LEASE_QUARANTINED,
};
#define RMP_LEASE_STATES 4

/* rmp_lease_state_name -- "granted", "revoking", "zeroing",
 * "quarantined" (logs, rmpoolctl, metrics labels); "?" for no state. */
const char *rmp_lease_state_name(enum rmp_lease_state s);

/*
 * One lease. The table owns the indexing (hash by id, min-heap by
 * deadline); the lifecycle owns the rest of the fields.
 */
struct rmp_lease {
	uint64_t id;
	uint64_t secret;
	/* Which pool (that of the device its ALLOC came on, or another it
	 * spilled to) and where in it; length as granted (rounded to the
	 * grain). */
	struct rmp_pool *pool;
	struct rmp_extent ext;
	uint32_t access;      /* RMP_ACC_* */
	uint32_t flags;       /* RMP_LEASE_F_* */
	uint64_t deadline_ms; /* CLOCK_MONOTONIC milliseconds */
	uint64_t ttl_ms;      /* as last granted (auto-renew extends by it) */
	char owner[32];       /* client name that allocated it (for admin) */
	enum rmp_lease_state state;
	struct rmp_tenant *tenant; /* whose it is: charged, may act on it */

	/* Its live keys, one per holder (connection) that reaches it. */
	struct rmp_key_list keys;
	unsigned nkeys;
	/* Its keys revoked and not settled yet, in the order of their
	 * revocation (the revokes-th last): an exclusive ATTACH is answered
	 * once those revoked before it have settled. */
	struct rmp_key_list revoking;
	uint64_t revokes;
	/* The connection an ephemeral lease ends with (NULL once gone). */
	struct rmp_holder *owner_holder;
	/* An ephemeral lease whose owner's connection failed through no
	 * fault of its own waits until then for an ATTACH of its tenant to
	 * adopt it (on the lifecycle's orphans, by state_link), else ends
	 * (0: not waiting). */
	uint64_t orphan_until_ms;
	unsigned keys_unsettled;  /* keys not yet proven dead (or unproven) */
	bool tainted;             /* a key of it could not be proven dead */
	uint64_t created_ms;
	uint64_t zero_at_ms;      /* ZEROING: its extent is zeroed then */
	uint32_t jslot;           /* its journal record (0: none) */
	/* The highest group epoch an ATTACH gave (a member of a cluster
	 * lease; 0: none): an ATTACH under an older one is refused. */
	uint64_t group_epoch;
	TAILQ_ENTRY(rmp_lease) state_link;  /* ending / settling / quarantined,
					     * or orphans (GRANTED) */

	/* table internals */
	SLIST_ENTRY(rmp_lease) hash_link; /* its bucket's chain */
	uint32_t heap_idx;
};

TAILQ_HEAD(rmp_lease_list, rmp_lease);

struct rmp_lease_table;

struct rmp_lease_table *rmp_lease_table_new(void);
/* Frees the table only; leases still in it are not freed. Accepts NULL. */
void rmp_lease_table_free(struct rmp_lease_table *t);

/*
 * rmp_lease_table_add -- index l (its id and deadline_ms must be set).
 * Returns 0, -EEXIST when the id is already present, -ENOMEM.
 */
int rmp_lease_table_add(struct rmp_lease_table *t, struct rmp_lease *l);
/* Unindex l (must be in the table). */
void rmp_lease_table_del(struct rmp_lease_table *t, struct rmp_lease *l);
struct rmp_lease *rmp_lease_table_find(const struct rmp_lease_table *t,
				       uint64_t id);
/* Change l's deadline and restore heap order: O(log n). */
void rmp_lease_table_set_deadline(struct rmp_lease_table *t,
				  struct rmp_lease *l, uint64_t deadline_ms);
/* The lease with the earliest deadline, or NULL when empty. */
struct rmp_lease *rmp_lease_table_first(const struct rmp_lease_table *t);
uint64_t rmp_lease_table_count(const struct rmp_lease_table *t);
/* Call fn on every lease (order unspecified); fn must not modify t. */
void rmp_lease_table_foreach(const struct rmp_lease_table *t,
			     void (*fn)(struct rmp_lease *l, void *arg),
			     void *arg);

#endif /* RMP_LEASE_H */

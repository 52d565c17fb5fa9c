/* SPDX-License-Identifier: MIT */
/* lease.h -- the lease table: lookup by id and expiry order. */
#ifndef RMP_LEASE_H
#define RMP_LEASE_H

#include <stdint.h>

struct rmp_conn;
struct ibv_mw;
struct ibv_mr;

/*
 * One lease. The table owns the indexing (hash by id, min-heap by
 * deadline); the daemon owns the rest of the fields.
 */
struct rmp_lease {
	uint64_t id;
	uint64_t secret;
	uint64_t offset;      /* in the pool */
	uint64_t length;      /* as granted (rounded to the allocator grain) */
	uint32_t access;      /* RMP_ACC_* */
	uint32_t flags;       /* RMP_LEASE_F_* */
	uint64_t deadline_ms; /* CLOCK_MONOTONIC milliseconds */
	uint64_t ttl_ms;      /* as last granted (auto-renew extends by it) */
	char owner[32];       /* client name that allocated it (for admin) */

	/* The connection it is granted to, or NULL while detached. */
	struct rmp_conn *conn;
	/* Key of the current grant (window / region mode). */
	uint32_t rkey;
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	/* Links of the owning connection's lease list (daemon use). */
	struct rmp_lease *conn_next, *conn_prev;

	/* table internals */
	struct rmp_lease *hash_next;
	uint32_t heap_idx;
};

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

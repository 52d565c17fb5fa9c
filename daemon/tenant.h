/* SPDX-License-Identifier: MIT */
/* tenant.h -- tenants: keys, limits, usage, and the connect-time proof. */
#ifndef RMP_TENANT_H
#define RMP_TENANT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "auth.h"
#include "config.h"

/*
 * A tenant is who may lease how much: its key proves a connection is its
 * own; its leases count against its limits across all its connections,
 * whether a connection holds them or not. Anonymous clients (naming no
 * tenant) form one more tenant, "anonymous", when the config enables it.
 * Pure bookkeeping: no I/O after rmp_tenants_new() read the key files.
 */
struct rmp_tenant {
	char name[RMP_TENANT_MAX + 1]; /* "anonymous" for the anonymous one */
	bool anonymous;
	bool usable;          /* has a key (or is the enabled anonymous) */
	bool stranger;        /* rmp_tenants_for_connect's stand-in */
	/*
	 * Counts the reloads that voided the proofs made so far: its key
	 * changed, it was removed, anonymous access was turned off. A
	 * connection keeps the epoch it proved (never 0 while usable).
	 */
	uint32_t epoch;
	uint8_t key[RMP_KEY_MAX];
	size_t key_len;
	struct rmp_tenant_limits limits;
	/* The lease limit in force: limits.leases, or when that is 0 an
	 * equal share of [pool] max_leases (rmp_tenant_lease_share). */
	uint64_t max_leases;
	uint64_t bytes, leases;  /* leased now (alive, connected or not) */
	/* Of its ended leases, not back in the pool yet (keys being
	 * revoked, grace, zeroing; quarantined: for good). */
	uint64_t ending_bytes;
	uint32_t connections;    /* connected now, its key proven */
	uint32_t pending;        /* connected, naming it, still to prove it */
	uint64_t auth_failures, quota_refusals;

	/* The table's: still in the config (else refused, kept only while
	 * leases or connections point at it). */
	bool configured;
	TAILQ_ENTRY(rmp_tenant) link;
};

struct rmp_tenants;

/*
 * rmp_tenants_new -- the tenants of cfg, their key files read (a missing
 * file leaves that tenant unusable, with a warning saying how to create
 * it; a file others can read, or not a key, is an error). Returns NULL on
 * error (logged).
 */
struct rmp_tenants *rmp_tenants_new(const struct rmp_config *cfg);
/*
 * rmp_tenants_reload -- make the table what cfg says: limits, keys and
 * networks change in place (leases and connections keep their tenant
 * and its usage), new tenants are added, removed ones are refused from
 * now on while their leases and connections live to their end. Every
 * key file is read first: when one cannot be (other than missing), the
 * table is left as it was and -errno returned (logged). *changes gets
 * the number of tenants that changed (each logged).
 */
int rmp_tenants_reload(struct rmp_tenants *ts, const struct rmp_config *cfg,
		       unsigned *changes);
/* rmp_tenants_next -- the tenant after prev (NULL: the first), in config
 * order (removed ones still in use after), then anonymous when enabled or
 * in use; NULL after the last. */
const struct rmp_tenant *rmp_tenants_next(const struct rmp_tenants *ts,
					  const struct rmp_tenant *prev);
/* Wipes the keys. Accepts NULL. */
void rmp_tenants_free(struct rmp_tenants *ts);

/*
 * rmp_tenants_find -- the usable tenant called name ("" = anonymous).
 * NULL when there is none: *why is then RMP_REJ_UNKNOWN_TENANT or
 * RMP_REJ_ANONYMOUS.
 */
struct rmp_tenant *rmp_tenants_find(struct rmp_tenants *ts, const char *name,
				    unsigned *why);

/*
 * rmp_tenants_for_connect -- the tenant a connect request names, whose key
 * its AUTH must prove: the usable tenant called name, or for a name no
 * usable tenant has a stranger (t->stranger) with a random key nobody
 * knows, whose proofs fail as a wrong key's do and after the same work,
 * so that a peer cannot learn which tenant names exist. NULL only for ""
 * while anonymous access is off (*why = RMP_REJ_ANONYMOUS): that is not
 * a secret.
 */
struct rmp_tenant *rmp_tenants_for_connect(struct rmp_tenants *ts,
					   const char *name, unsigned *why);

/*
 * rmp_tenants_owner -- the tenant a lease recovered after a restart
 * belongs to, by the name the journal kept ("anonymous" for the anonymous
 * one): a configured tenant, usable or not (a missing key file may be
 * created later, and its holders attach again then), or anonymous while
 * it is enabled. NULL when there is none: *why is then
 * RMP_REJ_UNKNOWN_TENANT or RMP_REJ_ANONYMOUS.
 */
struct rmp_tenant *rmp_tenants_owner(struct rmp_tenants *ts, const char *name,
				     unsigned *why);

/*
 * rmp_tenants_check_proof -- does proof prove t's key for these nonces
 * (ours, the accept data's, and the client's, its AUTH's), version,
 * client name and server endpoint (our end of the connection,
 * rmp_auth_endpoint)? Returns RMP_DETAIL_NONE (yes; the proof is
 * remembered, and server_proof is the server's answer to it, common/
 * auth.h), RMP_DETAIL_BAD_PROOF or RMP_DETAIL_REPLAYED (it was accepted
 * on an earlier connection); server_proof is zeroed but on success. The
 * anonymous tenant has no key: any proof is accepted for it while it is
 * enabled, and its server proof is zeros (it proves nothing). A tenant
 * that is not usable (removed, or its key gone, by a reload since the
 * connection was admitted) and the stranger accept none:
 * RMP_DETAIL_BAD_PROOF, after the work of checking a proof.
 */
unsigned rmp_tenants_check_proof(struct rmp_tenants *ts,
				 const struct rmp_tenant *t,
				 const uint8_t snonce[RMP_NONCE_LEN],
				 const uint8_t cnonce[RMP_NONCE_LEN],
				 uint8_t version, const char *name,
				 const uint8_t server[RMP_ENDPOINT_LEN],
				 const uint8_t proof[RMP_PROOF_LEN],
				 uint8_t server_proof[RMP_PROOF_LEN]);

/*
 * rmp_tenant_lease_share -- a tenant's lease limit when its config sets
 * none: [pool] max_leases split evenly among the tenants that may lease
 * (the configured ones, and anonymous clients when enabled), so that no
 * tenant can take the slots of another. At least 1.
 */
uint64_t rmp_tenant_lease_share(const struct rmp_config *cfg);

/*
 * rmp_tenant_charge -- one more lease of bytes for t. 0, or -EDQUOT with
 * *detail RMP_DETAIL_BYTES / RMP_DETAIL_LEASES (counted as a refusal).
 * Its ended leases' bytes still out of the pool count too, up to the
 * byte limit once more: a FREE right before an ALLOC works at the limit,
 * but ALLOC and FREE in a loop cannot hold the pool's bytes in their
 * grace and zeroing beyond twice the limit.
 */
int rmp_tenant_charge(struct rmp_tenant *t, uint64_t bytes, unsigned *detail);
/* rmp_tenant_uncharge -- a charge whose lease was never granted. */
void rmp_tenant_uncharge(struct rmp_tenant *t, uint64_t bytes);
/* rmp_tenant_end -- a lease of bytes ended: its bytes are ending. */
void rmp_tenant_end(struct rmp_tenant *t, uint64_t bytes);
/* rmp_tenant_settled -- ending bytes are back in the pool. */
void rmp_tenant_settled(struct rmp_tenant *t, uint64_t bytes);
/* rmp_tenant_adopt -- charge a lease recovered after a restart, whatever
 * the limits say now: they apply to new leases. */
void rmp_tenant_adopt(struct rmp_tenant *t, uint64_t bytes);

/*
 * rmp_tenant_current -- does a proof made in epoch still give t's rights
 * (new leases, keys and time)? Not once a reload removed t, changed its
 * key or turned anonymous access off: every request of the connection
 * that made it is refused (-EKEYREVOKED, FREE and STAT too), and it is
 * closed after rotate_grace, its keys with it.
 */
bool rmp_tenant_current(const struct rmp_tenant *t, uint32_t epoch);

/* rmp_tenant_may_connect -- below its connection limit? */
bool rmp_tenant_may_connect(const struct rmp_tenant *t);

#endif /* RMP_TENANT_H */

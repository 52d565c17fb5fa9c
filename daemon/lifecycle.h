/* SPDX-License-Identifier: MIT */
/* lifecycle.h -- the one owner of a lease's life: grant to reuse. */
#ifndef RMP_LIFECYCLE_H
#define RMP_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "keys.h"
#include "lease.h"
#include "proto.h"

struct event_base;
struct rmp_journal;
struct rmp_pool;
struct rmp_tenants;
struct rmp_lifecycle;

/*
 * Everything that happens to a lease goes through here: grant, renew,
 * keys for more holders on ATTACH (or a takeover), the end (revoke every
 * key -> proof that no key reaches the extent -> zero -> reuse, or
 * quarantine when proof fails), expiry, the per-tenant accounting and
 * the audit log. Callers above (requests,
 * connections, the server) ask; they never change a lease themselves.
 *
 * Revocation never waits on a client: a key whose invalidation has not
 * completed within cfg->server.revoke_timeout_ms gets its holder killed
 * (QP to error, and holder->fail called); if even that does not settle
 * it within another timeout, the extent is quarantined.
 */
struct rmp_lifecycle_params {
	struct event_base *base;
	/* The pools, pool i that of device i (a holder's dev); each keeps
	 * its own leases across restarts in its journal (pool->journal;
	 * NULL: they die with the process). All or none have one. */
	struct rmp_pool *const *pools;
	unsigned npools;
	enum rmp_keys_mode keys_mode;
	const struct rmp_config *cfg; /* read at every use: may be reloaded */
	/* Tenants, to name a recovered lease's owner. */
	struct rmp_tenants *tenants;
};

struct rmp_lifecycle_stats {
	uint64_t leases;            /* granted (in the table) */
	uint64_t ending;            /* revoking or zeroing */
	uint64_t revoking;          /* waiting for their keys to die */
	uint64_t zeroing_bytes;
	uint64_t quarantined_bytes;
	uint64_t quarantined_leases;
	uint64_t keys;              /* live keys of granted leases */
	uint64_t leased_bytes;      /* bytes of granted leases */
	uint64_t revoking_bytes;
	/* Events since start (metrics). */
	uint64_t grants, renewals, frees, expiries, revocations, takeovers,
		 attaches, refusals;
};

/* NULL on failure (logged). */
struct rmp_lifecycle *rmp_lifecycle_new(const struct rmp_lifecycle_params *p);
/*
 * rmp_lifecycle_free -- finish zeroing, free what is left. Call after
 * rmp_lifecycle_end_all and after every holder is detached. Accepts NULL.
 */
void rmp_lifecycle_free(struct rmp_lifecycle *lc);

/*
 * rmp_lifecycle_recover -- after a restart, for each pool with a journal:
 * take back the journal's live leases (when pool->journal_found: the
 * journal had a valid header) with their own bytes, ids and secrets, in
 * that pool; they have no keys until a holder attaches by token.
 * Auto-renewed ones get one more ttl from now (their connections are
 * gone). Every byte of the pool that no recovered lease covers is zeroed
 * when the memory is an earlier process's (pool->adopted). Logs the
 * outcome. 0, or -ENOMEM (logged): the daemon must not start (see the
 * function).
 */
int rmp_lifecycle_recover(struct rmp_lifecycle *lc);

/* rmp_lifecycle_pool_stats -- granted leases in pool and their bytes
 * (a walk of the table: for operators, not for requests). */
void rmp_lifecycle_pool_stats(const struct rmp_lifecycle *lc,
			      const struct rmp_pool *pool, uint64_t *leases,
			      uint64_t *bytes);

/* rmp_lifecycle_persistent -- do leases outlive the process (a journal)? */
bool rmp_lifecycle_persistent(const struct rmp_lifecycle *lc);

/*
 * Requests. Each returns 0 or a negative errno; *detail (RMP_DETAIL_*)
 * says more about an -EDQUOT or -EPERM. Leases belong to the tenant of
 * the holder that allocated them: only holders of that tenant may renew,
 * free or attach them, and they must name the secret too.
 */

/*
 * rmp_lifecycle_grant -- ALLOC for holder h: the lease and h's key to it.
 * The lease is in the pool of h's device; when that one has no room and
 * the request has RMP_LEASE_F_SPILL, in another (the first with room, in
 * device order), and then it carries RMP_LEASE_F_SPILLED.
 * -EINVAL (bad length, alignment, access, flags; ttl outside the bounds),
 * -EFBIG (above max_lease), -EDQUOT (the tenant's bytes or leases),
 * -ENOSPC (pool full; RMP_DETAIL_RETURNING when the bytes of leases still
 * ending would make the room, RMP_DETAIL_SERVER_LEASES at max_leases),
 * -ESHUTDOWN (draining), -ENOMEM, or the key's error.
 */
int rmp_lifecycle_grant(struct rmp_lifecycle *lc, struct rmp_holder *h,
			const struct rmp_alloc_req *r, struct rmp_lease **out,
			struct rmp_key **key, unsigned *detail);
/* RENEW (no key changes): -ENOENT (no such lease or wrong secret),
 * -EKEYEXPIRED, -EPERM (another tenant's), -EINVAL (ttl). */
int rmp_lifecycle_renew(struct rmp_lifecycle *lc, struct rmp_holder *h,
			uint64_t id, uint64_t secret, uint32_t ttl_s,
			uint64_t *ttl_ms, unsigned *detail);
/* FREE: every key is revoked, then the extent zeroed. Errors as RENEW. */
int rmp_lifecycle_free_lease(struct rmp_lifecycle *lc, struct rmp_holder *h,
			     uint64_t id, uint64_t secret, unsigned *detail);
/*
 * ATTACH: h gets its own key beside the lease's other keys, with the
 * access asked for (0 = the lease's; more gives -EACCES); exclusive
 * revokes every other key first. A non-zero epoch older than the lease's
 * group epoch gives -ESTALE (RMP_DETAIL_EPOCH) before any key moves; a
 * newer one becomes the group epoch. Errors as RENEW, plus -EDQUOT (the
 * keys-per-lease limit) and the key's error.
 *
 * An exclusive ATTACH is a fence: its answer must mean that no key of
 * the lease revoked before it (now, or earlier and not settled yet)
 * reaches the bytes any more. When all of those are settled already
 * (region mode deregisters at once; a dead holder's windows go with its
 * QP) it returns 0 and *fence 0, or -EIO when one of the lease's keys
 * could not be proven dead (the lease is tainted: no fence can hold).
 * Otherwise it returns 0 with *fence naming the wait: the caller must not
 * answer until the fence upcall (rmp_lifecycle_on_fence) for it comes.
 * That is within revoke_timeout for a live victim (its QP is killed
 * then, and the flush proves its keys dead), as soon as a victim's
 * connection closes, at once when the lease ends meanwhile. Without
 * exclusive, *fence is 0.
 */
int rmp_lifecycle_attach(struct rmp_lifecycle *lc, struct rmp_holder *h,
			 const struct rmp_attach_req *r, struct rmp_lease **out,
			 struct rmp_key **key, unsigned *detail,
			 uint64_t *fence);

/* The outcome of a fence (an exclusive ATTACH rmp_lifecycle_attach could
 * not answer at once). */
struct rmp_fence_done {
	uint64_t fence;          /* as rmp_lifecycle_attach named it */
	/*
	 * 0: every key revoked before the ATTACH is proven dead; d describes
	 * the lease as the taker's key reaches it now. -EIO: a key of the
	 * lease could not be proven dead (it may still work; the extent is
	 * quarantined when the lease ends), so nothing can be promised.
	 * -EKEYEXPIRED or -ENOENT: the lease ended meanwhile (expired or
	 * revoked, or freed: what a new ATTACH would hear).
	 */
	int status;
	struct rmp_lease_desc d;
};

/*
 * rmp_fence_done_fn -- the fence of h's exclusive ATTACH is decided:
 * answer it now. Called once per fence, never for a holder detached
 * meanwhile (rmp_lifecycle_detach drops its fences), and only from the
 * event loop (a timer of the lifecycle), never from within a call into
 * the lifecycle: the callee may close connections. An upcall because
 * who answers, the connection, is a layer above the lifecycle, which
 * cannot name it; the connection layer registers it.
 */
typedef void rmp_fence_done_fn(void *ctx, struct rmp_holder *h,
			       const struct rmp_fence_done *done);
void rmp_lifecycle_on_fence(struct rmp_lifecycle *lc, rmp_fence_done_fn *fn,
			    void *ctx);
/* The wire description of a granted lease as key k reaches it (without
 * RMP_LEASE_F_SPILLED, which only an ALLOC's reply carries). */
void rmp_lifecycle_describe(const struct rmp_lifecycle *lc,
			    const struct rmp_lease *l, const struct rmp_key *k,
			    struct rmp_lease_desc *d);

/*
 * rmp_holder_current -- may h still get new leases, keys and time? Yes
 * once it proved its tenant, until a reload voids that proof (see
 * rmp_tenant_current).
 */
bool rmp_holder_current(const struct rmp_holder *h);

/*
 * rmp_lifecycle_detach -- h is going (its QP killed already): its keys
 * are revoked; ephemeral leases it allocated end; others live on to
 * their deadline (an auto-renew one that lost its last holder gets one
 * more ttl). Keys of h already being revoked settle now, or on the
 * flush of their requests: h must not be freed until rmp_holder_idle.
 * Fences of h's exclusive ATTACHes still waiting are dropped: no upcall
 * names h after this.
 *
 * grace: h's connection failed through no fault of its client's (a
 * remote access error on a key the server had revoked for someone
 * else): its ephemeral leases do not end at once but wait a grace
 * (EPHEMERAL_GRACE_MS, lifecycle_int.h says why) for an ATTACH of their
 * tenant, which adopts them (they end with that connection from then
 * on); they end when nobody comes.
 */
void rmp_lifecycle_detach(struct rmp_lifecycle *lc, struct rmp_holder *h,
			  bool grace);

/* A key work request (RMP_WR_BIND / RMP_WR_INV) completed. */
void rmp_lifecycle_on_key_wc(struct rmp_lifecycle *lc, struct rmp_key *k,
			     enum rmp_wr_tag tag, const struct ibv_wc *wc);

/* No new grants (-ESHUTDOWN) while draining. */
void rmp_lifecycle_set_draining(struct rmp_lifecycle *lc, bool on);
bool rmp_lifecycle_draining(const struct rmp_lifecycle *lc);
/* End every lease (server stop). */
void rmp_lifecycle_end_all(struct rmp_lifecycle *lc, const char *why);
void rmp_lifecycle_stats(const struct rmp_lifecycle *lc,
			 struct rmp_lifecycle_stats *st);

/*
 * Operators (ops.c). Leases are found by id alone: the operator needs
 * no secret. Each action is audited with who asked.
 */

/* rmp_lifecycle_find -- the granted lease id, or NULL. */
const struct rmp_lease *rmp_lifecycle_find(const struct rmp_lifecycle *lc,
					   uint64_t id);
/* rmp_lifecycle_foreach -- fn on every granted lease, in no order; fn
 * must not change the lifecycle. */
void rmp_lifecycle_foreach(const struct rmp_lifecycle *lc,
			   void (*fn)(const struct rmp_lease *l, void *arg),
			   void *arg);
/*
 * rmp_lifecycle_revoke -- end lease id now, as expiry does (later
 * requests for it get -EKEYEXPIRED). 0 or -ENOENT.
 */
int rmp_lifecycle_revoke(struct rmp_lifecycle *lc, uint64_t id,
			 const char *who);
/* rmp_lifecycle_extend -- deadline = now + ttl_ms, and ttl = ttl_ms.
 * 0, -ENOENT, -EINVAL (0 or above ttl_max). */
int rmp_lifecycle_extend(struct rmp_lifecycle *lc, uint64_t id,
			 uint64_t ttl_ms, const char *who);
/* rmp_lifecycle_config_changed -- the configuration was reloaded: pick
 * up a new expiry tick. */
void rmp_lifecycle_config_changed(struct rmp_lifecycle *lc);

#endif /* RMP_LIFECYCLE_H */

/* SPDX-License-Identifier: MIT */
/* keys.h -- remote keys of leases: memory windows, regions or the pool key. */
#ifndef RMP_KEYS_H
#define RMP_KEYS_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "device.h"
#include "lease.h"
#include "proto.h"

struct rmp_pool;
struct rmp_lease;
struct rmp_tenant;

/*
 * A holder is the queue pair that keys are granted to: one client
 * connection. Keys bound to it work through that QP only (window mode) or
 * through QPs of its PD only (region mode, a PD per connection).
 */
/* Unbound windows a holder keeps for its next grants (window mode). */
#define RMP_HOLDER_SPARE_MW 32u
/* Key work requests a holder holds back while its owner answers one
 * request (see rmp_holder_hold): a request makes two at most. */
#define RMP_HOLDER_HELD 4u

struct rmp_holder {
	struct ibv_qp *qp;
	struct ibv_pd *pd;     /* the QP's PD: windows and regions live there */
	unsigned dev;          /* the QP's device: pool MRs mr[dev] */
	bool alive;            /* the QP still executes work requests */
	unsigned key_wrs;      /* key WRs posted on qp, completion due */
	unsigned key_wrs_max;
	unsigned invs_waiting; /* LOCAL_INVs that found key_wrs full */
	char label[160];       /* "client #7 (name, 192.0.2.1:4242)" for logs */
	const char *name;      /* the client's name, for lease owners */
	const char *peer;      /* "ADDR:PORT", for the audit log */
	struct rmp_tenant *tenant; /* set once the connection proved it */
	uint32_t tenant_epoch;     /* tenant->epoch then; 0: voided since */

	/* Kept by the lease lifecycle: the live keys granted to it, and
	 * how many of its keys were revoked by another's doing (another
	 * holder's takeover or FREE, an operator; not its own requests, not
	 * a deadline): a remote access error on this QP is then most
	 * likely one of those, not an attack (conn.c). */
	struct rmp_key_list keys;
	unsigned nkeys;
	unsigned revoked_by_others;
	/*
	 * Kept by the key module: its keys being revoked, not yet settled
	 * (DEAD or UNPROVEN). They still name h, so h may not be freed
	 * while any is here (rmp_holder_idle); a LOCAL_INV that waits for
	 * room (inv_waiting) is one of them.
	 */
	struct rmp_key_list revoking;
	/*
	 * Kept by the key module: windows in h's PD, invalidated (proven by
	 * a successful LOCAL_INV) or never bound, for the next grants. A
	 * grant then costs no ibv_alloc_mw and a revoke no ibv_dealloc_mw.
	 */
	struct ibv_mw *spare_mw[RMP_HOLDER_SPARE_MW];
	unsigned nspare_mw;
	/*
	 * Kept by the key module between rmp_holder_hold and
	 * rmp_holder_post: key work requests counted as posted but not yet
	 * handed to the device, so that they ring one doorbell with the
	 * reply that follows them.
	 */
	bool holding;
	unsigned nheld;
	struct ibv_send_wr held[RMP_HOLDER_HELD];
	/*
	 * Set by the owner of the QP (the connection): the lifecycle calls
	 * it when the holder must go (a revocation timed out, a key
	 * operation failed). It must not free the holder.
	 */
	void (*fail)(struct rmp_holder *h, const char *why);
};

/*
 * A key's states. All their transitions are in keys.c (set_state):
 * LIVE -> INVALIDATING (a LOCAL_INV posted) -> DEAD or UNPROVEN, or LIVE
 * -> DEAD or UNPROVEN at once (region, pool, a dead QP). A key being
 * revoked that has not settled yet waits on rmp_keys' revoking list.
 */
enum rmp_key_state {
	RMP_KEY_LIVE,          /* grants access through its holder */
	RMP_KEY_INVALIDATING,  /* a LOCAL_INV is on its way */
	RMP_KEY_DEAD,          /* proven unusable */
	RMP_KEY_UNPROVEN,      /* could not be proven unusable */
};
#define RMP_KEY_STATES 4
/* rmp_key_state_name -- "live", "invalidating", "dead", "unproven". */
const char *rmp_key_state_name(enum rmp_key_state s);

struct rmp_key {
	struct rmp_lease *lease;
	struct rmp_holder *holder;
	enum rmp_key_state state;
	uint32_t rkey;
	uint32_t access;       /* RMP_ACC_*, within the lease's */
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	unsigned wrs;          /* work requests naming this key, due */
	bool revoke_wanted;    /* revoke once the due requests complete */
	bool inv_waiting;      /* its LOCAL_INV waits for room (invs_waiting) */
	bool in_holder_revoking; /* on holder->revoking */
	const char *why;       /* for UNPROVEN: what failed */

	/* Kept by the lease lifecycle: live keys in their lease's and
	 * holder's lists; once revoked, until settled, on the lease's list
	 * of revocations (lease_link again), as its revoke_seq-th. */
	TAILQ_ENTRY(rmp_key) lease_link;
	TAILQ_ENTRY(rmp_key) holder_link;
	uint64_t revoke_seq;
	/* Kept by the key module: revocations awaited (rmp_keys.revoking)
	 * and their holder's (rmp_holder.revoking). */
	TAILQ_ENTRY(rmp_key) revoke_link;
	TAILQ_ENTRY(rmp_key) holder_revoke_link;
	uint64_t revoke_deadline_ms;
	unsigned revoke_round;  /* 0 not waiting, 1 waiting, 2 holder killed */
};

/*
 * rmp_keys_settled_fn -- a key being revoked (rmp_keys_revoke) settled:
 * DEAD or UNPROVEN. Called once per revocation, from rmp_keys_revoke
 * itself, from a completion (rmp_keys_on_wc), from a dead holder
 * (rmp_keys_holder_dead) or from the revoke timeout
 * (rmp_keys_revoke_overdue). An upcall because the key's owner, the lease
 * lifecycle, is the layer above: it accounts the key to its lease and
 * gives it back (rmp_key_release); the key module cannot name it.
 */
typedef void rmp_keys_settled_fn(void *ctx, struct rmp_key *k);

/* The key module's context: the mode, and the revocations in flight.
 * (Each lease names the pool its bytes are in.) */
struct rmp_keys {
	enum rmp_keys_mode mode;
	/* The config's revoke_timeout, read where it lives: a reload
	 * applies to the next revocation. */
	const uint64_t *revoke_timeout_ms;
	struct rmp_key_list revoking; /* awaited, oldest deadline first */
	rmp_keys_settled_fn *settled;
	void *settled_ctx;
};

/* rmp_keys_init -- ks for mode; revocations get *revoke_timeout_ms,
 * and each that settles is told to settled(ctx, k). */
void rmp_keys_init(struct rmp_keys *ks, enum rmp_keys_mode mode,
		   const uint64_t *revoke_timeout_ms,
		   rmp_keys_settled_fn *settled, void *ctx);

/*
 * rmp_keys_revoke -- make k stop working: its settled upcall comes now
 * (region, pool, a dead QP) or later (a LOCAL_INV's completion, a dead
 * holder, the revoke timeout). Within revoke_timeout_ms, or k's holder
 * is killed and failed (h->fail); if even that settles nothing within
 * another revoke_timeout_ms, k settles UNPROVEN.
 */
void rmp_keys_revoke(struct rmp_keys *ks, struct rmp_key *k);

/*
 * rmp_keys_on_wc -- a work request tagged with k completed: settles k
 * when it proves it dead, frees a released key once nothing of it is
 * due, fails a holder whose QP broke, posts the invalidations that
 * waited for room.
 */
void rmp_keys_on_wc(struct rmp_keys *ks, struct rmp_key *k,
		    enum rmp_wr_tag tag, const struct ibv_wc *wc);

/*
 * rmp_keys_holder_dead -- h's QP is dead (its connection closes): a key
 * of it whose revocation waits (for room, or after a verbs call that
 * failed) is unusable now and settles; one with requests due settles on
 * their flush. After it no key waits for a timeout that could find h
 * freed.
 */
void rmp_keys_holder_dead(struct rmp_keys *ks, struct rmp_holder *h);

/*
 * rmp_keys_revoke_due -- when the first awaited revocation is overdue
 * (*at_ms), false when none is awaited; rmp_keys_revoke_overdue then
 * deals with those due by now_ms. The caller owns the timer.
 */
bool rmp_keys_revoke_due(const struct rmp_keys *ks, uint64_t *at_ms);
void rmp_keys_revoke_overdue(struct rmp_keys *ks, uint64_t now_ms);

/*
 * rmp_key_release -- the owner is done with k (settled, or never revoked
 * at shutdown): freed now, or by rmp_keys_on_wc once no work request
 * naming it is due.
 */
void rmp_key_release(struct rmp_key *k);

/* rmp_keys_abandon -- the daemon stops: free every awaited key. */
void rmp_keys_abandon(struct rmp_keys *ks);

/* Remote address of l's first byte as clients see it (on every device). */
uint64_t rmp_lease_remote_addr(const struct rmp_lease *l);

/*
 * rmp_key_grant -- a key to l's bytes with access (RMP_ACC_*), usable
 * through h only (as far as the mode allows; pool mode gives the pool
 * key, which neither limits access nor holder). In window mode the bind is posted on
 * h's QP, so it executes before anything posted after it (the reply).
 * Returns 0 and *out, or -errno (-EAGAIN: h has too many key operations
 * in flight; -ENOTCONN: h is not alive).
 */
int rmp_key_grant(const struct rmp_keys *ks, struct rmp_holder *h,
		  struct rmp_lease *l, uint32_t access, struct rmp_key **out);

/*
 * The single steps below rmp_keys_revoke and rmp_keys_on_wc, for the unit
 * test of the state machine. Outcome of rmp_key_revoke and rmp_key_on_wc:
 */
#define RMP_KEY_SETTLED 1u       /* state is DEAD or UNPROVEN now */
#define RMP_KEY_HOLDER_BROKEN 2u /* the holder's QP failed: fail the holder */
#define RMP_KEY_HOLDER_ROOM 4u   /* LOCAL_INVs wait for room that is there
				  * now: rmp_key_revoke them again */

/*
 * rmp_key_revoke -- make k stop working. Returns RMP_KEY_SETTLED when it
 * is DEAD (deregistered, deallocated; pool mode: nothing to revoke) or
 * UNPROVEN (the verbs call failed) already, 0 when a LOCAL_INV (or a due
 * completion) is awaited: rmp_key_on_wc settles it later. A LOCAL_INV
 * that finds the holder's key work requests at their bound waits
 * (inv_waiting); rmp_key_on_wc says RMP_KEY_HOLDER_ROOM when there is
 * room again, and calling rmp_key_revoke again posts it.
 */
unsigned rmp_key_revoke(const struct rmp_keys *ks, struct rmp_key *k);

/*
 * rmp_key_on_wc -- a work request tagged with k completed. Returns the
 * RMP_KEY_* flags of what changed.
 */
unsigned rmp_key_on_wc(const struct rmp_keys *ks, struct rmp_key *k,
		       enum rmp_wr_tag tag, const struct ibv_wc *wc);

/*
 * rmp_key_give_up -- k could not be proven dead (no completion even
 * after its holder was killed): settle it as UNPROVEN with why.
 */
void rmp_key_give_up(struct rmp_key *k, const char *why);

/* rmp_key_idle -- no work request naming k is due: k may be freed. */
bool rmp_key_idle(const struct rmp_key *k);
/* rmp_key_free -- free the object (an UNPROVEN key's verbs object is
 * deliberately left allocated). Accepts NULL. */
void rmp_key_free(struct rmp_key *k);

/*
 * rmp_holder_init -- an empty holder for qp (alive) of device dev, before
 * any grant; key_wrs_max: key work requests it may have in flight.
 */
void rmp_holder_init(struct rmp_holder *h, struct ibv_qp *qp,
		     struct ibv_pd *pd, unsigned dev, unsigned key_wrs_max);

/*
 * rmp_holder_idle -- nothing of h's keys is due: no key work request in
 * flight, no key of it being revoked. Only then may h be freed.
 */
bool rmp_holder_idle(const struct rmp_holder *h);

/*
 * rmp_holder_first_revoking / rmp_holder_next_revoking -- h's keys being
 * revoked, oldest revocation first (NULL at the end). Read the next one
 * before acting on a key: settling takes it off the list.
 */
struct rmp_key *rmp_holder_first_revoking(const struct rmp_holder *h);
struct rmp_key *rmp_holder_next_revoking(const struct rmp_key *k);

/*
 * rmp_holder_abandon -- the daemon stops and h is freed whatever is due:
 * forget its key work requests and revocations (the keys themselves are
 * freed by their owner, and must not reach h again).
 */
void rmp_holder_abandon(struct rmp_holder *h);

/*
 * rmp_holder_drop_windows -- deallocate h's spare windows. Call before
 * its PD goes; h gets no more grants.
 */
void rmp_holder_drop_windows(struct rmp_holder *h);

/*
 * rmp_holder_hold -- from now until rmp_holder_post, h's key work requests
 * (a grant's bind, a revoke's LOCAL_INV) are held back instead of posted.
 * For the owner of the QP while it answers one request.
 */
void rmp_holder_hold(struct rmp_holder *h);

/*
 * rmp_holder_post -- post what h holds back with tail (may be NULL) in one
 * ibv_post_send: one doorbell; stop holding. Binds go before tail (a reply
 * must not name a key that is not bound yet), invalidations after it: the
 * reply need not wait for them, as the extent is not reused before they
 * complete (the send queue executes them right after it). Returns 0, or
 * -errno with *bad the first work request not posted: each held one from
 * there on (tail->next included) must be completed by the caller as
 * flushed (IBV_WC_WR_FLUSH_ERR), as if the QP had failed.
 */
int rmp_holder_post(struct rmp_holder *h, struct ibv_send_wr *tail,
		    struct ibv_send_wr **bad);

/*
 * rmp_holder_kill -- move h's QP to the error state: nothing more executes
 * on it (its type-2 windows with it) and every posted request completes
 * with a flush error. Idempotent.
 */
void rmp_holder_kill(struct rmp_holder *h);

#endif /* RMP_KEYS_H */

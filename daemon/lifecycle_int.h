/* SPDX-License-Identifier: MIT */
/*
 * lifecycle_int.h -- what the files of the lease lifecycle share, and no
 * one else: lifecycle.c (requests, operators, the whole), lifecycle_end.c
 * (revoke, zero, quarantine), lifecycle_expiry.c (deadlines, expiry, the
 * journal's records), lifecycle_fence.c (an exclusive ATTACH's answer
 * held until the keys revoked before it are dead), lifecycle_recover.c
 * (a restart's leases).
 */
#ifndef RMP_LIFECYCLE_INT_H
#define RMP_LIFECYCLE_INT_H

#include <inttypes.h>
#include <sys/time.h>
#include <event2/event.h>

#include "journal.h"
#include "keys.h"
#include "lease.h"
#include "lifecycle.h"
#include "log.h"
#include "pool.h"
#include "tenant.h"

/* Extents up to this size are zeroed at once, in the loop (a few µs). */
#define ZERO_INLINE_MAX (256u << 10)
/*
 * An extent whose keys are all dead waits this long before it is zeroed
 * and reused. A LOCAL_INV completes while the device may still answer a
 * READ it began before: Soft-RoCE checks the key for each packet, and a
 * packet checked before the invalidation completed is copied after it -
 * a freed lease's READ came back half zeroed by the memset that followed
 * (test-free-race). Later packets are cut off, so only a copy under way
 * is waited for; it takes microseconds. Coarse-clock ms (tick 1-4 ms).
 */
#define ZERO_GRACE_MS 20
/* Ids and secrets of recently expired leases, for "expired" answers. */
#define EXPIRED_RING 1024
/*
 * An ephemeral lease whose owner's connection failed on a key the server
 * revoked for someone else (rmp_lifecycle_detach's grace) waits this long
 * for an ATTACH of its tenant before it ends. librmpool reconnects at the
 * next call after such an error and attaches each handle again at its
 * next use: an application that goes on working comes back within
 * milliseconds; one that does not want the lease any more (what
 * ephemeral is for) holds its bytes only this much longer.
 */
#define EPHEMERAL_GRACE_MS 10000u

/*
 * lc_fence -- an exclusive ATTACH that waits for the keys of its lease
 * revoked before it (lifecycle_fence.c): while l is set, for every key
 * of l's revoking list up to revoke_seq upto to settle; then decided
 * (done filled, l NULL) and on the list of fences due, which a timer of
 * the loop hands to the upcall.
 */
struct lc_fence {
	TAILQ_ENTRY(lc_fence) link;
	struct rmp_holder *h;     /* the taker */
	struct rmp_lease *l;      /* NULL once decided */
	uint64_t upto;
	struct rmp_fence_done done;
};
TAILQ_HEAD(lc_fence_list, lc_fence);

struct rmp_lifecycle {
	struct event_base *base;
	const struct rmp_config *cfg;
	struct rmp_pool *pools[RMP_DEVICES_MAX]; /* pool i: device i's */
	unsigned npools;
	bool persistent;  /* the pools have journals: leases outlive us */
	struct rmp_keys keys;
	struct rmp_lease_table *table;
	struct rmp_tenants *tenants;
	struct rmp_zeroer *zeroer;
	struct event *expiry_ev, *revoke_ev, *settle_ev, *fence_ev, *orphan_ev;
	uint64_t expiry_at_ms;  /* when expiry_ev fires, if pending */
	uint64_t revoke_at_ms;  /* when revoke_ev fires, if pending */
	uint64_t settle_at_ms;  /* when settle_ev fires, if pending */
	uint64_t fence_at_ms;   /* when fence_ev fires, if pending */
	uint64_t orphan_at_ms;  /* when orphan_ev fires, if pending */
	/* Ephemeral leases waiting to be adopted, in order of their
	 * orphan_until_ms (every one gets the same grace). */
	struct rmp_lease_list orphans;
	/* Exclusive ATTACHes waiting for their fence, and those decided
	 * whose upcall is due (fence_ev). */
	struct lc_fence_list fences, fences_due;
	uint64_t next_fence;
	rmp_fence_done_fn *fence_fn;
	void *fence_ctx;
	struct rmp_lease_list ending;      /* REVOKING leases */
	struct rmp_lease_list settling;    /* ZEROING leases in their grace */
	struct rmp_lease_list quarantined; /* QUARANTINED leases */
	uint64_t nending, nrevoking, zeroing_bytes, quarantined_bytes, nquarantined;
	uint64_t nkeys; /* live keys of all leases */
	uint64_t leased_bytes, revoking_bytes;
	/* per pool (as pools[]): bytes of leases ending there (revoking or
	 * zeroing) that will return to it; not those quarantined */
	uint64_t returning_bytes[RMP_DEVICES_MAX];
	struct {
		uint64_t grants, renewals, frees, expiries, revocations,
			 takeovers, attaches, refusals;
	} n;
	bool draining;
	struct {
		uint64_t id, secret;
	} expired[EXPIRED_RING];
	uint32_t expired_next;
};

/*
 * lc_set_state -- the only place a lease changes state; what each state
 * means is in lease.h.
 */
static inline void lc_set_state(struct rmp_lease *l, enum rmp_lease_state s)
{
	log_debug("lease %016" PRIx64 ": %s -> %s", l->id,
		  rmp_lease_state_name(l->state), rmp_lease_state_name(s));
	l->state = s;
}

/*
 * audit -- one line per lease event an operator must be able to trace:
 * what, whose (tenant), who (client, peer), which lease, then the event's
 * own fields (fmt with at least one argument). Never a secret. A macro, so
 * that the line is formatted in one pass: one is written on every grant
 * and every free.
 */
#define audit(h, t, event, id, fmt, ...)                                     \
	log_notice("audit: %s tenant=%s client=%s peer=%s lease=%016" PRIx64 \
		   " " fmt, (event), (t) ? (t)->name : "-", audit_name(h),   \
		   audit_peer(h), (uint64_t)(id), __VA_ARGS__)

static inline const char *audit_name(const struct rmp_holder *h)
{
	return h ? h->name : "-";
}

static inline const char *audit_peer(const struct rmp_holder *h)
{
	return h ? h->peer : "-";
}

/*
 * lc_arm_timer -- have ev fire wait ms after now, unless it is armed to fire
 * no later than that already (*at_ms: when it fires, while pending):
 * re-arming on every grant or revoke costs the control path, and a timer
 * that fires early finds nothing due and arms again.
 */
static inline void lc_arm_timer(struct event *ev, uint64_t *at_ms,
				uint64_t now, uint64_t wait)
{
	struct timeval tv;

	if (event_pending(ev, EV_TIMEOUT, NULL) && *at_ms <= now + wait)
		return;
	*at_ms = now + wait;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(ev, &tv);
}

/* lc_holder_current -- h proved its tenant's current key
 * (rmp_holder_current). */
/* lc_returning -- the returning_bytes of l's pool (the last pool's for
 * one that is none of them: never, the lifecycle placed it). */
static inline uint64_t *lc_returning(struct rmp_lifecycle *lc,
				     const struct rmp_lease *l)
{
	unsigned i = 0;

	while (i + 1 < lc->npools && lc->pools[i] != l->pool)
		i++;
	return &lc->returning_bytes[i];
}

static inline bool lc_holder_current(const struct rmp_holder *h)
{
	return h->tenant && rmp_tenant_current(h->tenant, h->tenant_epoch);
}

/*
 * Whose doing a revocation is (lc_drop_key, lc_end_lease): the holder
 * whose request or close it is; LC_BY_NOBODY for a lease's deadline and
 * the server's stop; LC_BY_OPERATOR for rmpoolctl. A key revoked by
 * neither its own holder nor nobody counts in its holder's
 * revoked_by_others.
 */
#define LC_BY_NOBODY ((const struct rmp_holder *)NULL)
extern const struct rmp_holder lc_by_operator;
#define LC_BY_OPERATOR (&lc_by_operator)

/* lifecycle_end.c */
void lc_drop_key(struct rmp_lifecycle *lc, struct rmp_key *k,
		 const struct rmp_holder *by);
void lc_end_lease(struct rmp_lifecycle *lc, struct rmp_lease *l,
		  const char *why, const struct rmp_holder *by);
void lc_on_key_settled(void *ctx, struct rmp_key *k);
void lc_on_revoke_timeout(int fd, short what, void *arg);
void lc_on_settle(evutil_socket_t fd, short what, void *arg);
void lc_on_zeroed(void *ctx, void *arg);
void lc_revoke_timer_arm(struct rmp_lifecycle *lc);

/* lifecycle.c */
void lc_on_orphans(evutil_socket_t fd, short what, void *arg);

/* lifecycle_fence.c */
int lc_fence_begin(struct rmp_lifecycle *lc, struct rmp_holder *h,
		   struct rmp_lease *l, const struct rmp_key *k,
		   uint64_t *fence);
void lc_fence_check(struct rmp_lifecycle *lc, struct rmp_lease *l);
void lc_fence_lease_ends(struct rmp_lifecycle *lc, struct rmp_lease *l);
void lc_fence_holder_gone(struct rmp_lifecycle *lc,
			  const struct rmp_holder *h);
int lc_fence_status(const struct rmp_lifecycle *lc,
		    const struct rmp_lease *l);
void lc_on_fence(evutil_socket_t fd, short what, void *arg);
void lc_fences_free(struct rmp_lifecycle *lc);

/* lifecycle_lookup.c: below every other lifecycle file */
struct rmp_key *lc_key_of(const struct rmp_lease *l,
			  const struct rmp_holder *h);
bool lc_recently_expired(const struct rmp_lifecycle *lc, uint64_t id,
			 bool secret_known, uint64_t secret);
void lc_remember_expired(struct rmp_lifecycle *lc,
			 const struct rmp_lease *l);

/* lifecycle_expiry.c */
int lc_journal_put(struct rmp_lifecycle *lc, struct rmp_lease *l);
void lc_on_expiry(int fd, short what, void *arg);
uint64_t lc_renewal_ms(const struct rmp_lifecycle *lc,
			   const struct rmp_lease *l);
/* l is auto-renew and a holder may still get time: the tick renews it */
bool lc_renews_itself(const struct rmp_lease *l);
void lc_schedule_expiry(struct rmp_lifecycle *lc);
void lc_set_deadline(struct rmp_lifecycle *lc, struct rmp_lease *l,
			 uint64_t deadline_ms);

#endif /* RMP_LIFECYCLE_INT_H */

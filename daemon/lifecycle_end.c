/* SPDX-License-Identifier: MIT */
/* lifecycle_end.c -- a lease's way out: its keys revoked, its extent
 * zeroed and reused, or quarantined. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <event2/event.h>

#include "journal.h"
#include "lifecycle_int.h"
#include "log.h"
#include "pool.h"
#include "tenant.h"
#include "util.h"
#include "zero.h"

static void finish_revoke(struct rmp_lifecycle *lc, struct rmp_lease *l);

/* --------------------------------------------------------------- keys */

/* lc_revoke_timer_arm -- the revoke timer fires when the first revocation
 * the key module awaits is overdue (or never, with none). */
void lc_revoke_timer_arm(struct rmp_lifecycle *lc)
{
	uint64_t now = rmp_now_ms(), at;

	if (!rmp_keys_revoke_due(&lc->keys, &at)) {
		event_del(lc->revoke_ev);
		return;
	}
	lc_arm_timer(lc->revoke_ev, &lc->revoke_at_ms, now, at > now ? at - now : 0);
}

/*
 * lc_on_key_settled -- the key module's one word back (rmp_keys_settled_fn):
 * k is proven dead, or could not be. Account it to its lease, and let an
 * ending lease move on once all its keys are settled.
 */
void lc_on_key_settled(void *ctx, struct rmp_key *k)
{
	struct rmp_lifecycle *lc = ctx;
	struct rmp_lease *l = k->lease;

	if (k->state == RMP_KEY_UNPROVEN) {
		log_err("lease %016" PRIx64 ": key %#x of %s could not be "
			"proven dead: %s", l->id, k->rkey, k->holder->label,
			k->why);
		l->tainted = true;
	}
	TAILQ_REMOVE(&l->revoking, k, lease_link);
	l->keys_unsettled--;
	rmp_key_release(k);
	if (l->state == RMP_LEASE_GRANTED)
		lc_fence_check(lc, l);
	else if (l->state == RMP_LEASE_REVOKING && l->keys_unsettled == 0)
		finish_revoke(lc, l);
}

/* revoke_key -- have the key module revoke k (lc_on_key_settled follows). */
static void revoke_key(struct rmp_lifecycle *lc, struct rmp_key *k)
{
	rmp_keys_revoke(&lc->keys, k);
	lc_revoke_timer_arm(lc);
}

void lc_on_revoke_timeout(int fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;

	(void)fd;
	(void)what;
	rmp_keys_revoke_overdue(&lc->keys, rmp_now_ms());
	lc_revoke_timer_arm(lc);
}

/* ------------------------------------------------------------- ending */

void lc_on_zeroed(void *ctx, void *arg)
{
	struct rmp_lifecycle *lc = ctx;
	struct rmp_lease *l = arg;
	int ret;

	lc->zeroing_bytes -= l->ext.length;
	*lc_returning(lc, l) -= l->ext.length;
	lc->nending--;
	rmp_tenant_settled(l->tenant, l->ext.length);
	ret = rmp_pool_release(l->pool, &l->ext);
	if (ret)
		log_err("lease %016" PRIx64 ": returning extent %" PRIu64
			"+%" PRIu64 ": %s", l->id, l->ext.offset, l->ext.length,
			strerror(-ret));
	log_debug("lease %016" PRIx64 ": %" PRIu64 " bytes zeroed and free",
		  l->id, l->ext.length);
	free(l);
}

/* quarantine -- never reuse l's extent: some key may still reach it. */
static void quarantine(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	lc_set_state(l, RMP_LEASE_QUARANTINED);
	*lc_returning(lc, l) -= l->ext.length; /* never */
	TAILQ_INSERT_TAIL(&lc->quarantined, l, state_link);
	lc->nending--;
	lc->quarantined_bytes += l->ext.length;
	lc->nquarantined++;
	log_err("lease %016" PRIx64 ": extent %" PRIu64 "+%" PRIu64
		" quarantined: a key to it could not be proven dead; it is "
		"never reused (%" PRIu64 " bytes in %" PRIu64 " extents "
		"quarantined)", l->id, l->ext.offset, l->ext.length,
		lc->quarantined_bytes, lc->nquarantined);
}

/* zero_extent -- l's grace is over: zero its extent, then free it. */
static void zero_extent(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	/* No client ever sees another lease's old bytes. */
	if (l->ext.length > ZERO_INLINE_MAX && lc->zeroer &&
	    rmp_zeroer_submit(lc->zeroer, l->pool->base + l->ext.offset,
			      l->ext.length, l) == 0)
		return;
	memset(l->pool->base + l->ext.offset, 0, l->ext.length);
	lc_on_zeroed(lc, l);
}

/* lc_on_settle -- zero the extents whose grace is over (the list is in
 * order of zero_at_ms: every lease gets the same grace). */
void lc_on_settle(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;
	uint64_t now = rmp_now_ms();
	struct rmp_lease *l;

	(void)fd;
	(void)what;
	while ((l = TAILQ_FIRST(&lc->settling)) && l->zero_at_ms <= now) {
		TAILQ_REMOVE(&lc->settling, l, state_link);
		zero_extent(lc, l);
	}
	if (l)
		lc_arm_timer(lc->settle_ev, &lc->settle_at_ms, now,
			  l->zero_at_ms - now);
}

/* finish_revoke -- every key of l is settled: zero it after its grace,
 * or quarantine it. */
static void finish_revoke(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	/* The coarse clock may be up to its lag behind: the grace counts
	 * that too, so it lasts ZERO_GRACE_MS at least (and no system call
	 * is made on a FREE's path for a precise now). */
	uint64_t now = rmp_now_ms(), grace = ZERO_GRACE_MS + rmp_coarse_lag_ms();

	TAILQ_REMOVE(&lc->ending, l, state_link);
	lc->nrevoking--;
	lc->revoking_bytes -= l->ext.length;
	if (l->tainted) {
		quarantine(lc, l);
		return;
	}
	lc_set_state(l, RMP_LEASE_ZEROING);
	lc->zeroing_bytes += l->ext.length;
	l->zero_at_ms = now + grace;
	TAILQ_INSERT_TAIL(&lc->settling, l, state_link);
	lc_arm_timer(lc->settle_ev, &lc->settle_at_ms, now, grace);
}

/* lc_drop_key -- k leaves its lease and holder, and is revoked, by's
 * doing. */
void lc_drop_key(struct rmp_lifecycle *lc, struct rmp_key *k,
		 const struct rmp_holder *by)
{
	struct rmp_lease *l = k->lease;
	struct rmp_holder *h = k->holder;

	if (by != LC_BY_NOBODY && by != h)
		h->revoked_by_others++;
	TAILQ_REMOVE(&l->keys, k, lease_link);
	l->nkeys--;
	TAILQ_REMOVE(&h->keys, k, holder_link);
	h->nkeys--;
	lc->nkeys--;
	/* Until it settles (lc_on_key_settled, maybe at once). */
	k->revoke_seq = ++l->revokes;
	TAILQ_INSERT_TAIL(&l->revoking, k, lease_link);
	revoke_key(lc, k);
}

/* lc_end_lease -- take l out of use, by's doing: revoke every key, then
 * finish. */
void lc_end_lease(struct rmp_lifecycle *lc, struct rmp_lease *l,
		  const char *why, const struct rmp_holder *by)
{
	struct rmp_key *k;

	log_debug("lease %016" PRIx64 " (%" PRIu64 " bytes, %s) ends: %s",
		  l->id, l->ext.length, l->owner, why);
	rmp_lease_table_del(lc->table, l);
	/* From now on a restart does not bring it back. */
	if (l->pool->journal)
		rmp_journal_drop(l->pool->journal, &l->jslot);
	rmp_tenant_end(l->tenant, l->ext.length);
	lc->leased_bytes -= l->ext.length;
	/* An orphan is on the orphans' list by its state_link. */
	if (l->orphan_until_ms) {
		TAILQ_REMOVE(&lc->orphans, l, state_link);
		l->orphan_until_ms = 0;
	}
	lc_set_state(l, RMP_LEASE_REVOKING);
	/* Takeovers of it waiting for their fence hear of the end now. */
	lc_fence_lease_ends(lc, l);
	TAILQ_INSERT_TAIL(&lc->ending, l, state_link);
	lc->nending++;
	lc->nrevoking++;
	lc->revoking_bytes += l->ext.length;
	*lc_returning(lc, l) += l->ext.length;
	/* Revoke first: the extent is zeroed and reused only once no key
	 * reaches it. Keys dropped earlier may be settling already; the
	 * last key to settle finishes the lease (and may free it). Hold
	 * the count up while dropping so that no settle finishes it
	 * half-way. */
	l->keys_unsettled++;
	while ((k = TAILQ_FIRST(&l->keys)))
		lc_drop_key(lc, k, by);
	l->keys_unsettled--;
	if (l->keys_unsettled == 0)
		finish_revoke(lc, l);
}

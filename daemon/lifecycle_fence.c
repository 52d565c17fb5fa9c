/* SPDX-License-Identifier: MIT */
/* lifecycle_fence.c -- an exclusive ATTACH's fence: its answer waits until
 * every key of the lease revoked before it is settled. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "lifecycle_int.h"
#include "log.h"
#include "util.h"

/* waits -- does a key of l revoked up to upto still wait to settle? The
 * list is in order of revocation: its first is the oldest. */
static bool waits(const struct rmp_lease *l, uint64_t upto)
{
	const struct rmp_key *k = TAILQ_FIRST(&l->revoking);

	return k && k->revoke_seq <= upto;
}

/*
 * lc_fence_status -- the outcome of a fence on granted lease l whose
 * keys are all settled: 0, or -EIO when a key of l could not be proven
 * dead (tainted: it may work still, whatever was revoked since). For a
 * lease that ended: what a new ATTACH would hear, -EKEYEXPIRED (expired
 * or revoked by the operator) or -ENOENT (freed).
 */
int lc_fence_status(const struct rmp_lifecycle *lc, const struct rmp_lease *l)
{
	if (l->state != RMP_LEASE_GRANTED)
		return lc_recently_expired(lc, l->id, true, l->secret) ?
		       -EKEYEXPIRED : -ENOENT;
	if (l->tainted)
		return -EIO;
	return 0;
}

/* decide -- f's outcome is known: off the waiting list, onto the due
 * one; the loop hands it over (never from within a call into us). */
static void decide(struct rmp_lifecycle *lc, struct lc_fence *f)
{
	struct rmp_lease *l = f->l;
	const struct rmp_key *k;

	f->done.status = lc_fence_status(lc, l);
	if (f->done.status == 0) {
		/* The taker's key as it is now: the time left moved, and so
		 * may the holders. (Gone if a later takeover took it: the
		 * description of the ATTACH stands, its key is dead.) */
		k = lc_key_of(l, f->h);
		if (k)
			rmp_lifecycle_describe(lc, l, k, &f->done.d);
	} else {
		memset(&f->done.d, 0, sizeof(f->done.d));
	}
	log_debug("%s: fence %" PRIu64 " of lease %016" PRIx64 " decided: %s",
		  f->h->label, f->done.fence, l->id,
		  f->done.status ? strerror(-f->done.status) : "holds");
	f->l = NULL;
	TAILQ_REMOVE(&lc->fences, f, link);
	TAILQ_INSERT_TAIL(&lc->fences_due, f, link);
	lc_arm_timer(lc->fence_ev, &lc->fence_at_ms, rmp_now_ms(), 0);
}

int lc_fence_begin(struct rmp_lifecycle *lc, struct rmp_holder *h,
		   struct rmp_lease *l, const struct rmp_key *k,
		   uint64_t *fence)
{
	struct lc_fence *f;

	*fence = 0;
	if (l->tainted || !waits(l, l->revokes))
		return lc_fence_status(lc, l);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->h = h;
	f->l = l;
	f->upto = l->revokes;
	f->done.fence = ++lc->next_fence;
	rmp_lifecycle_describe(lc, l, k, &f->done.d);
	TAILQ_INSERT_TAIL(&lc->fences, f, link);
	log_debug("%s: fence %" PRIu64 " of lease %016" PRIx64 ": waiting "
		  "for %u key(s)", h->label, f->done.fence, l->id,
		  l->keys_unsettled - l->nkeys);
	*fence = f->done.fence;
	return 0;
}

/* lc_fence_check -- a key of granted lease l settled: decide the fences
 * of l that wait for nothing more. */
void lc_fence_check(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	struct lc_fence *f, *next;

	for (f = TAILQ_FIRST(&lc->fences); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (f->l == l && !waits(l, f->upto))
			decide(lc, f);
	}
}

/* lc_fence_lease_ends -- l ends (its state already says so): its fences
 * are decided now, whatever they wait for; their taker's key goes too. */
void lc_fence_lease_ends(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	struct lc_fence *f, *next;

	for (f = TAILQ_FIRST(&lc->fences); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (f->l == l)
			decide(lc, f);
	}
}

/* drop -- free every fence of list whose taker is h (any when NULL). */
static void drop(struct lc_fence_list *list, const struct rmp_holder *h)
{
	struct lc_fence *f, *next;

	for (f = TAILQ_FIRST(list); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (h && f->h != h)
			continue;
		TAILQ_REMOVE(list, f, link);
		free(f);
	}
}

/* lc_fence_holder_gone -- h is detached: no answer goes to it. */
void lc_fence_holder_gone(struct rmp_lifecycle *lc,
			  const struct rmp_holder *h)
{
	drop(&lc->fences, h);
	drop(&lc->fences_due, h);
}

/* lc_on_fence -- hand every decided fence to the upcall, oldest first.
 * The upcall may close connections, and so detach holders (dropping
 * their fences from the list): take each off before the call. */
void lc_on_fence(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;
	struct lc_fence *f;

	(void)fd;
	(void)what;
	while ((f = TAILQ_FIRST(&lc->fences_due))) {
		TAILQ_REMOVE(&lc->fences_due, f, link);
		if (lc->fence_fn)
			lc->fence_fn(lc->fence_ctx, f->h, &f->done);
		free(f);
	}
}

void lc_fences_free(struct rmp_lifecycle *lc)
{
	drop(&lc->fences, NULL);
	drop(&lc->fences_due, NULL);
}

void rmp_lifecycle_on_fence(struct rmp_lifecycle *lc, rmp_fence_done_fn *fn,
			    void *ctx)
{
	lc->fence_fn = fn;
	lc->fence_ctx = ctx;
}

/* SPDX-License-Identifier: MIT */
/* keys.c -- remote keys of leases: memory windows, regions or the pool key. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "lease.h"
#include "log.h"
#include "pool.h"
#include "util.h"

/* to_ibv_access -- lease access bits to verbs remote access flags. */
static unsigned to_ibv_access(uint32_t acc)
{
	unsigned f = 0;

	if (acc & RMP_ACC_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (acc & RMP_ACC_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (acc & RMP_ACC_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

const char *rmp_key_state_name(enum rmp_key_state s)
{
	static const char *const names[RMP_KEY_STATES] = {
		[RMP_KEY_LIVE] = "live",
		[RMP_KEY_INVALIDATING] = "invalidating",
		[RMP_KEY_DEAD] = "dead",
		[RMP_KEY_UNPROVEN] = "unproven",
	};

	return (unsigned)s < RMP_KEY_STATES ? names[s] : "?";
}

/* set_state -- every change of a key's state goes through here. */
static void set_state(struct rmp_key *k, enum rmp_key_state s)
{
	k->state = s;
}

uint64_t rmp_lease_remote_addr(const struct rmp_lease *l)
{
	return l->pool->iova + l->ext.offset;
}

/* pool_mr -- the MR of l's chunk on the device of h's QP. */
static struct ibv_mr *pool_mr(const struct rmp_lease *l,
			      const struct rmp_holder *h)
{
	return rmp_pool_chunk_of(l->pool, l->ext.offset)->mr[h->dev];
}

void rmp_holder_hold(struct rmp_holder *h)
{
	h->holding = true;
}

/*
 * posted -- the device took wr. A window's key is tracked by us, not by
 * the provider, which names the window by the key it had when the bind
 * was posted (Soft-RoCE refuses the bind otherwise): it changes now.
 */
static void posted(struct ibv_send_wr *wr)
{
	if (wr->opcode == IBV_WR_BIND_MW)
		wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
}

int rmp_holder_post(struct rmp_holder *h, struct ibv_send_wr *tail,
		    struct ibv_send_wr **bad)
{
	struct ibv_send_wr *first = NULL, **link = &first;
	int ret;

	/* Binds, the tail, then invalidations (why: keys.h). */
	for (unsigned i = 0; i < h->nheld; i++) {
		if (h->held[i].opcode != IBV_WR_LOCAL_INV) {
			*link = &h->held[i];
			link = &h->held[i].next;
		}
	}
	*link = tail;
	if (tail)
		link = &tail->next;
	for (unsigned i = 0; i < h->nheld; i++) {
		if (h->held[i].opcode == IBV_WR_LOCAL_INV) {
			*link = &h->held[i];
			link = &h->held[i].next;
		}
	}
	*link = NULL;
	h->holding = false;
	h->nheld = 0;
	*bad = NULL;
	if (!first)
		return 0;
	ret = ibv_post_send(h->qp, first, bad);
	for (struct ibv_send_wr *w = first; w && w != *bad; w = w->next)
		posted(w);
	return ret ? -ret : 0;
}

/*
 * post_key_wr -- post wr for k on its holder's QP, counting it; while the
 * holder holds, keep a copy for rmp_holder_post (bind and LOCAL_INV carry
 * no scatter list, so the copy is all of it).
 */
static int post_key_wr(struct rmp_key *k, struct ibv_send_wr *wr,
		       enum rmp_wr_tag tag)
{
	struct rmp_holder *h = k->holder;
	struct ibv_send_wr *bad;
	int ret;

	if (!h->alive)
		return -ENOTCONN;
	if (h->key_wrs >= h->key_wrs_max)
		return -EAGAIN;
	wr->wr_id = rmp_wr_id(k, tag);
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->next = NULL;
	if (h->holding) {
		/* One request makes two at most (an ATTACH's invalidate of
		 * the holder's old key and its bind): full cannot happen. */
		if (h->nheld == RMP_HOLDER_HELD)
			return -EAGAIN;
		h->held[h->nheld++] = *wr;
	} else {
		ret = ibv_post_send(h->qp, wr, &bad);
		if (ret)
			return -ret;
		posted(wr);
	}
	h->key_wrs++;
	k->wrs++;
	return 0;
}

/*
 * Windows are reused within their holder: a LOCAL_INV that completed
 * successfully proves the window unbound (its rkey dead), and the next
 * bind gives it a new key tag. The tag is 8 bits, so after 256 binds of
 * one window an old rkey's value comes back; it only ever names a window
 * of this holder's PD, bound on this holder's QP to a lease this holder
 * holds at that moment, with that grant's rights. Nothing of another
 * holder's becomes reachable.
 */
static struct ibv_mw *window_get(struct rmp_holder *h)
{
	if (h->nspare_mw)
		return h->spare_mw[--h->nspare_mw];
	return ibv_alloc_mw(h->pd, IBV_MW_TYPE_2);
}

/* window_free -- deallocate an unbound window of h (nothing reaches it). */
static void window_free(struct rmp_holder *h, struct ibv_mw *mw)
{
	if (ibv_dealloc_mw(mw))
		log_err("%s: ibv_dealloc_mw of an unbound window: %s",
			h->label, strerror(errno));
}

/* window_put -- keep an unbound window for h's next grant, or free it. */
static void window_put(struct rmp_holder *h, struct ibv_mw *mw)
{
	if (h->alive && h->nspare_mw < RMP_HOLDER_SPARE_MW)
		h->spare_mw[h->nspare_mw++] = mw;
	else
		window_free(h, mw);
}

void rmp_holder_drop_windows(struct rmp_holder *h)
{
	while (h->nspare_mw)
		window_free(h, h->spare_mw[--h->nspare_mw]);
}

/* grant_window -- bind a type-2 window (a spare one if any) on h's QP. */
static int grant_window(const struct rmp_keys *ks, struct rmp_key *k)
{
	struct rmp_lease *l = k->lease;
	struct ibv_send_wr wr = { 0 };
	int ret;

	k->mw = window_get(k->holder);
	if (!k->mw)
		return errno ? -errno : -ENOMEM;
	/* A fresh key tag on every bind: the last rkey is dead for good. */
	k->rkey = ibv_inc_rkey(k->mw->rkey);
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = k->mw;
	wr.bind_mw.rkey = k->rkey;
	wr.bind_mw.bind_info.mr = pool_mr(l, k->holder);
	wr.bind_mw.bind_info.addr = rmp_lease_remote_addr(l);
	wr.bind_mw.bind_info.length = l->ext.length;
	wr.bind_mw.bind_info.mw_access_flags = to_ibv_access(k->access);
	ret = post_key_wr(k, &wr, RMP_WR_BIND);
	if (ret) {
		/* Never bound: nothing can reach it. */
		window_put(k->holder, k->mw);
		k->mw = NULL;
		return ret;
	}
	return 0;
}

/*
 * grant_region -- register the lease's bytes as an MR of their own in the
 * holder's PD: the rkey works from QPs of that PD only.
 */
static int grant_region(const struct rmp_keys *ks, struct rmp_key *k)
{
	struct rmp_lease *l = k->lease;

	k->mr = ibv_reg_mr_iova(k->holder->pd, l->pool->base + l->ext.offset,
				l->ext.length, rmp_lease_remote_addr(l),
				IBV_ACCESS_LOCAL_WRITE |
					(int)to_ibv_access(k->access));
	if (!k->mr)
		return errno ? -errno : -ENOMEM;
	k->rkey = k->mr->rkey;
	return 0;
}

int rmp_key_grant(const struct rmp_keys *ks, struct rmp_holder *h,
		  struct rmp_lease *l, uint32_t access, struct rmp_key **out)
{
	struct rmp_key *k;
	int ret = 0;

	if (!h->alive)
		return -ENOTCONN;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->lease = l;
	k->holder = h;
	k->access = access;
	set_state(k, RMP_KEY_LIVE);
	switch (ks->mode) {
	case RMP_KEYS_WINDOW:
		ret = grant_window(ks, k);
		break;
	case RMP_KEYS_REGION:
		ret = grant_region(ks, k);
		break;
	case RMP_KEYS_POOL:
		k->rkey = pool_mr(l, h)->rkey;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret) {
		free(k);
		return ret;
	}
	*out = k;
	return 0;
}

/* revoking -- k's revocation is under way: it names its holder until
 * it settles. */
static void revoking(struct rmp_key *k)
{
	if (k->in_holder_revoking)
		return;
	k->in_holder_revoking = true;
	TAILQ_INSERT_TAIL(&k->holder->revoking, k, holder_revoke_link);
}

/* settle -- record the outcome of a verbs call that should prove k dead. */
static unsigned settle(struct rmp_key *k, int failed, const char *why)
{
	set_state(k, failed ? RMP_KEY_UNPROVEN : RMP_KEY_DEAD);
	k->why = failed ? why : NULL;
	if (k->inv_waiting) {
		k->inv_waiting = false;
		k->holder->invs_waiting--;
	}
	if (k->in_holder_revoking) {
		k->in_holder_revoking = false;
		TAILQ_REMOVE(&k->holder->revoking, k, holder_revoke_link);
	}
	return RMP_KEY_SETTLED;
}

void rmp_key_give_up(struct rmp_key *k, const char *why)
{
	settle(k, 1, why);
}

/* release -- deallocate the window / deregister the region now. */
static unsigned release(struct rmp_key *k)
{
	/* Deallocating a window or deregistering a region invalidates its
	 * rkey before the call returns; a failure proves nothing. */
	if (k->mw) {
		if (ibv_dealloc_mw(k->mw)) {
			log_err("%s: ibv_dealloc_mw: %s", k->holder->label,
				strerror(errno));
			return settle(k, 1, "ibv_dealloc_mw failed");
		}
		k->mw = NULL;
	}
	if (k->mr) {
		if (ibv_dereg_mr(k->mr)) {
			log_err("%s: ibv_dereg_mr: %s", k->holder->label,
				strerror(errno));
			return settle(k, 1, "ibv_dereg_mr failed");
		}
		k->mr = NULL;
	}
	return settle(k, 0, NULL);
}

unsigned rmp_key_revoke(const struct rmp_keys *ks, struct rmp_key *k)
{
	struct ibv_send_wr wr = { 0 };
	int ret;

	if (k->state != RMP_KEY_LIVE)
		return k->state == RMP_KEY_INVALIDATING ? 0 : RMP_KEY_SETTLED;
	if (ks->mode == RMP_KEYS_POOL)
		return settle(k, 0, NULL); /* the pool key cannot be revoked */
	if (ks->mode == RMP_KEYS_REGION)
		return release(k);
	/* Until it settles (every path below that returns 0). */
	revoking(k);
	if (k->inv_waiting) {
		k->inv_waiting = false;
		k->holder->invs_waiting--;
	}
	/* A window on a live QP is invalidated through that QP, in order
	 * after everything posted there before. */
	if (k->holder->alive) {
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = k->rkey;
		ret = post_key_wr(k, &wr, RMP_WR_INV);
		if (ret == 0) {
			set_state(k, RMP_KEY_INVALIDATING);
			return 0;
		}
		if (ret == -EAGAIN) {
			/* Posted once completions make room (many keys of
			 * one holder ending in one go); the revoke timeout
			 * still bounds the wait. */
			k->inv_waiting = true;
			k->holder->invs_waiting++;
			return 0;
		}
	}
	/* A dead QP runs nothing, so its window is unusable already; it is
	 * deallocated once no request naming it is due. Otherwise the
	 * caller's revoke timeout kills the holder. */
	k->revoke_wanted = true;
	if (!k->holder->alive && k->wrs == 0)
		return release(k);
	return 0;
}

unsigned rmp_key_on_wc(const struct rmp_keys *ks, struct rmp_key *k,
		       enum rmp_wr_tag tag, const struct ibv_wc *wc)
{
	struct rmp_holder *h = k->holder;
	unsigned out = 0;

	(void)ks;
	k->wrs--;
	h->key_wrs--;
	if (h->invs_waiting && h->alive && wc->status == IBV_WC_SUCCESS)
		out |= RMP_KEY_HOLDER_ROOM;
	if (wc->status != IBV_WC_SUCCESS) {
		/* Any failed request moves the QP to the error state. */
		if (wc->status != IBV_WC_WR_FLUSH_ERR) {
			log_warn("%s: %s failed: %s", h->label,
				 tag == RMP_WR_BIND ? "window bind" :
				 "window invalidate",
				 ibv_wc_status_str(wc->status));
			out |= RMP_KEY_HOLDER_BROKEN;
		}
		h->alive = false;
	}
	if (tag == RMP_WR_INV) {
		if (wc->status == IBV_WC_SUCCESS && k->mw) {
			/* Invalidated: the window is unbound, reuse it. */
			window_put(h, k->mw);
			k->mw = NULL;
			return out | settle(k, 0, NULL);
		}
		/* Flushed: its QP is dead. Failed: e.g. the window was
		 * invalidated already (a client's SEND with invalidate, which
		 * the connection is closed for). Either way the QP runs
		 * nothing more, and deallocating the window proves it dead;
		 * only if that fails too is the extent quarantined. */
		return out | release(k);
	}
	/* A bind completed; a revoke may have waited for it. */
	if (k->revoke_wanted && k->state == RMP_KEY_LIVE && k->wrs == 0 &&
	    !h->alive)
		out |= release(k);
	return out;
}

bool rmp_key_idle(const struct rmp_key *k)
{
	return k->wrs == 0;
}

void rmp_holder_init(struct rmp_holder *h, struct ibv_qp *qp,
		     struct ibv_pd *pd, unsigned dev, unsigned key_wrs_max)
{
	h->qp = qp;
	h->pd = pd;
	h->dev = dev;
	h->alive = true;
	h->key_wrs = 0;
	h->key_wrs_max = key_wrs_max;
	h->invs_waiting = 0;
	TAILQ_INIT(&h->keys);
	h->nkeys = 0;
	TAILQ_INIT(&h->revoking);
	h->nspare_mw = 0;
}

bool rmp_holder_idle(const struct rmp_holder *h)
{
	return h->key_wrs == 0 && TAILQ_EMPTY(&h->revoking);
}

struct rmp_key *rmp_holder_first_revoking(const struct rmp_holder *h)
{
	return TAILQ_FIRST(&h->revoking);
}

struct rmp_key *rmp_holder_next_revoking(const struct rmp_key *k)
{
	return TAILQ_NEXT(k, holder_revoke_link);
}

void rmp_holder_abandon(struct rmp_holder *h)
{
	struct rmp_key *k;

	while ((k = TAILQ_FIRST(&h->revoking))) {
		TAILQ_REMOVE(&h->revoking, k, holder_revoke_link);
		k->in_holder_revoking = false;
	}
	h->key_wrs = 0;
	h->invs_waiting = 0;
}

void rmp_key_free(struct rmp_key *k)
{
	free(k);
}

void rmp_holder_kill(struct rmp_holder *h)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (h->qp && ibv_modify_qp(h->qp, &attr, IBV_QP_STATE))
		log_err("%s: moving the queue pair to the error state: %s",
			h->label, strerror(errno));
	h->alive = false;
}

/* ------------------------------------------------------- revocations */

void rmp_keys_init(struct rmp_keys *ks, enum rmp_keys_mode mode,
		   const uint64_t *revoke_timeout_ms,
		   rmp_keys_settled_fn *settled, void *ctx)
{
	ks->mode = mode;
	ks->revoke_timeout_ms = revoke_timeout_ms;
	TAILQ_INIT(&ks->revoking);
	ks->settled = settled;
	ks->settled_ctx = ctx;
}

/* await -- k's revocation is in flight: it has revoke_timeout from now_ms
 * (round 1; round 2 once its holder was killed). */
static void await(struct rmp_keys *ks, struct rmp_key *k, uint64_t now_ms)
{
	if (k->revoke_round)
		TAILQ_REMOVE(&ks->revoking, k, revoke_link);
	k->revoke_round++;
	k->revoke_deadline_ms = now_ms + *ks->revoke_timeout_ms;
	TAILQ_INSERT_TAIL(&ks->revoking, k, revoke_link);
}

/* report_settled -- k is DEAD or UNPROVEN now: no longer awaited, and
 * its owner hears of it (once: callers check the state did change). */
static void report_settled(struct rmp_keys *ks, struct rmp_key *k)
{
	if (k->revoke_round) {
		TAILQ_REMOVE(&ks->revoking, k, revoke_link);
		k->revoke_round = 0;
	}
	ks->settled(ks->settled_ctx, k);
}

void rmp_keys_revoke(struct rmp_keys *ks, struct rmp_key *k)
{
	if (rmp_key_revoke(ks, k) & RMP_KEY_SETTLED)
		report_settled(ks, k);
	else if (!k->revoke_round)
		await(ks, k, rmp_now_ms());
}

/* fail_holder -- kill h's QP and tell its owner. */
static void fail_holder(struct rmp_holder *h, const char *why)
{
	rmp_holder_kill(h);
	if (h->fail)
		h->fail(h, why);
}

/* post_waiting_invs -- h has room for key work requests again: post the
 * LOCAL_INVs that waited for it, oldest revocation first, while it lasts. */
static void post_waiting_invs(struct rmp_keys *ks, struct rmp_holder *h)
{
	struct rmp_key *k, *next;

	for (k = rmp_holder_first_revoking(h); k && h->invs_waiting &&
	     h->key_wrs < h->key_wrs_max; k = next) {
		next = rmp_holder_next_revoking(k);
		if (k->inv_waiting && (rmp_key_revoke(ks, k) & RMP_KEY_SETTLED))
			report_settled(ks, k);
	}
}

void rmp_keys_on_wc(struct rmp_keys *ks, struct rmp_key *k,
		    enum rmp_wr_tag tag, const struct ibv_wc *wc)
{
	struct rmp_holder *h = k->holder;
	bool was_settled = k->state == RMP_KEY_DEAD ||
			   k->state == RMP_KEY_UNPROVEN;
	unsigned out = rmp_key_on_wc(ks, k, tag, wc);

	if (!k->lease) {
		/* Released: settled before, only its completions were due. */
		if (rmp_key_idle(k))
			rmp_key_free(k);
	} else if ((out & RMP_KEY_SETTLED) && !was_settled) {
		report_settled(ks, k);
	}
	if (out & RMP_KEY_HOLDER_BROKEN)
		fail_holder(h, "a key operation on its queue pair failed");
	else if (out & RMP_KEY_HOLDER_ROOM)
		post_waiting_invs(ks, h);
}

void rmp_keys_holder_dead(struct rmp_keys *ks, struct rmp_holder *h)
{
	unsigned parked = h->invs_waiting;
	struct rmp_key *k, *next;

	for (k = rmp_holder_first_revoking(h); k; k = next) {
		next = rmp_holder_next_revoking(k);
		if (rmp_key_revoke(ks, k) & RMP_KEY_SETTLED)
			report_settled(ks, k);
	}
	if (parked)
		log_info("%s: %u key invalidation(s) waiting for room settled "
			 "with the connection", h->label, parked);
}

bool rmp_keys_revoke_due(const struct rmp_keys *ks, uint64_t *at_ms)
{
	const struct rmp_key *k = TAILQ_FIRST(&ks->revoking);

	if (!k)
		return false;
	*at_ms = k->revoke_deadline_ms;
	return true;
}

void rmp_keys_revoke_overdue(struct rmp_keys *ks, uint64_t now_ms)
{
	struct rmp_key *k;

	/* Round 1 over: kill the holder (nothing runs on a QP in error,
	 * and every request on it completes with a flush). Round 2 over:
	 * even that settled nothing, give up on proof. */
	while ((k = TAILQ_FIRST(&ks->revoking)) &&
	       k->revoke_deadline_ms <= now_ms) {
		if (k->revoke_round == 1) {
			struct rmp_holder *h = k->holder;

			log_warn("%s: revoking a key of lease %016" PRIx64
				 " took more than %" PRIu64 " ms: failing its "
				 "connection", h->label, k->lease->id,
				 *ks->revoke_timeout_ms);
			await(ks, k, now_ms);
			rmp_holder_kill(h);
			/* Its QP is dead now: a key with nothing due
			 * settles at once (and may be freed). */
			if (k->state == RMP_KEY_LIVE)
				rmp_keys_revoke(ks, k);
			if (h->fail)
				h->fail(h, "a key revocation timed out");
			continue;
		}
		rmp_key_give_up(k, "no completion even after its queue pair "
				"was killed");
		report_settled(ks, k);
	}
}

void rmp_key_release(struct rmp_key *k)
{
	if (rmp_key_idle(k))
		rmp_key_free(k);
	else
		k->lease = NULL; /* rmp_keys_on_wc frees it */
}

void rmp_keys_abandon(struct rmp_keys *ks)
{
	struct rmp_key *k;

	while ((k = TAILQ_FIRST(&ks->revoking))) {
		TAILQ_REMOVE(&ks->revoking, k, revoke_link);
		k->revoke_round = 0;
		rmp_key_free(k);
	}
}

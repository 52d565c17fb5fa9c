/* SPDX-License-Identifier: MIT */
/* lifecycle.c -- the one owner of a lease's life: grant to reuse. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <event2/event.h>

#include "lifecycle.h"
#include "log.h"
#include "pool.h"
#include "util.h"
#include "zero.h"

/* Extents up to this size are zeroed at once, in the loop (a few µs). */
#define ZERO_INLINE_MAX (256u << 10)
/* Ids and secrets of recently expired leases, for "expired" answers. */
#define EXPIRED_RING 1024

TAILQ_HEAD(rmp_key_list, rmp_key);

struct rmp_lifecycle {
	struct event_base *base;
	const struct rmp_config *cfg;
	struct rmp_pool *pool;
	struct rmp_keys keys;
	struct rmp_lease_table *table;
	struct rmp_zeroer *zeroer;
	struct event *expiry_ev, *revoke_ev;
	struct rmp_key_list revoking;      /* keys awaited, by deadline */
	struct rmp_lease_list ending;      /* REVOKING leases */
	struct rmp_lease_list quarantined; /* QUARANTINED leases */
	uint64_t nending, nrevoking, zeroing_bytes, quarantined_bytes, nquarantined;
	bool draining;
	struct {
		uint64_t id, secret;
	} expired[EXPIRED_RING];
	uint32_t expired_next;
};

static const char *state_name(enum rmp_lease_state s)
{
	switch (s) {
	case RMP_LEASE_GRANTED:
		return "granted";
	case RMP_LEASE_REVOKING:
		return "revoking";
	case RMP_LEASE_ZEROING:
		return "zeroing";
	case RMP_LEASE_QUARANTINED:
		return "quarantined";
	}
	return "?";
}

static void finish_revoke(struct rmp_lifecycle *lc, struct rmp_lease *l);

/*
 * set_state -- the only place a lease changes state; what each state
 * means is in lease.h.
 */
static void set_state(struct rmp_lease *l, enum rmp_lease_state s)
{
	log_debug("lease %016" PRIx64 ": %s -> %s", l->id, state_name(l->state),
		  state_name(s));
	l->state = s;
}

/* ------------------------------------------------------------ holders */

void rmp_holder_init(struct rmp_holder *h, struct ibv_qp *qp,
		     struct ibv_pd *pd, unsigned key_wrs_max)
{
	h->qp = qp;
	h->pd = pd;
	h->alive = true;
	h->key_wrs = 0;
	h->key_wrs_max = key_wrs_max;
	TAILQ_INIT(&h->leases);
	h->bytes = h->nleases = 0;
}

static void holder_add(struct rmp_holder *h, struct rmp_lease *l)
{
	l->holder = h;
	TAILQ_INSERT_TAIL(&h->leases, l, holder_link);
	h->bytes += l->length;
	h->nleases++;
}

static void holder_del(struct rmp_lease *l)
{
	struct rmp_holder *h = l->holder;

	TAILQ_REMOVE(&h->leases, l, holder_link);
	h->bytes -= l->length;
	h->nleases--;
	l->holder = NULL;
}

/* quota_check -- may h take one more lease of length bytes? */
static int quota_check(const struct rmp_lifecycle *lc,
		       const struct rmp_holder *h, uint64_t length)
{
	uint64_t qb = lc->cfg->quota.bytes_per_client;
	uint64_t ql = lc->cfg->quota.leases_per_client;

	if (ql && h->nleases + 1 > ql)
		return -EDQUOT;
	if (qb && h->bytes + length > qb)
		return -EDQUOT;
	return 0;
}

/* --------------------------------------------------------------- keys */

static void revoke_timer_arm(struct rmp_lifecycle *lc)
{
	struct rmp_key *k = TAILQ_FIRST(&lc->revoking);
	uint64_t now = rmp_now_ms(), wait;
	struct timeval tv;

	if (!k) {
		event_del(lc->revoke_ev);
		return;
	}
	wait = k->revoke_deadline_ms > now ? k->revoke_deadline_ms - now : 0;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(lc->revoke_ev, &tv);
}

/* await_key -- k's revocation is in flight: give it revoke_timeout. */
static void await_key(struct rmp_lifecycle *lc, struct rmp_key *k)
{
	if (k->revoke_round)
		TAILQ_REMOVE(&lc->revoking, k, revoke_link);
	k->revoke_round++;
	k->revoke_deadline_ms = rmp_now_ms() +
				lc->cfg->server.revoke_timeout_ms;
	TAILQ_INSERT_TAIL(&lc->revoking, k, revoke_link);
	revoke_timer_arm(lc);
}

/* put_key -- free k, or leave it to its last completion. */
static void put_key(struct rmp_key *k)
{
	if (rmp_key_idle(k))
		rmp_key_free(k);
	else
		k->lease = NULL; /* orphan: rmp_lifecycle_on_key_wc frees it */
}

/*
 * key_settled -- k is proven dead, or could not be: account it to its
 * lease, and let an ending lease move on once all its keys are settled.
 */
static void key_settled(struct rmp_lifecycle *lc, struct rmp_key *k)
{
	struct rmp_lease *l = k->lease;

	if (k->revoke_round) {
		TAILQ_REMOVE(&lc->revoking, k, revoke_link);
		k->revoke_round = 0;
		revoke_timer_arm(lc);
	}
	if (k->state == RMP_KEY_UNPROVEN) {
		log_err("lease %016" PRIx64 ": key %#x of %s could not be "
			"proven dead: %s", l->id, k->rkey, k->holder->label,
			k->why);
		l->tainted = true;
	}
	if (l->key == k)
		l->key = NULL;
	l->keys_unsettled--;
	put_key(k);
	if (l->state == RMP_LEASE_REVOKING && l->keys_unsettled == 0)
		finish_revoke(lc, l);
}

/* revoke_key -- start revoking k; settles it now when it can. */
static void revoke_key(struct rmp_lifecycle *lc, struct rmp_key *k)
{
	if (rmp_key_revoke(&lc->keys, k) & RMP_KEY_SETTLED)
		key_settled(lc, k);
	else if (!k->revoke_round)
		await_key(lc, k);
}

/* fail_holder -- kill h's QP and tell its owner. */
static void fail_holder(struct rmp_holder *h, const char *why)
{
	rmp_holder_kill(h);
	if (h->fail)
		h->fail(h, why);
}

/*
 * on_revoke_timeout -- keys whose revocation is late: first kill their
 * holder (nothing runs on a QP in error, and every request on it
 * completes with a flush), then, if even that settles nothing, give up
 * on proof: quarantine.
 */
static void on_revoke_timeout(int fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;
	struct rmp_key *k;

	(void)fd;
	(void)what;
	while ((k = TAILQ_FIRST(&lc->revoking)) &&
	       k->revoke_deadline_ms <= rmp_now_ms()) {
		if (k->revoke_round == 1) {
			struct rmp_holder *h = k->holder;

			log_warn("%s: revoking a key of lease %016" PRIx64
				 " took more than %" PRIu64 " ms: failing its "
				 "connection", h->label, k->lease->id,
				 lc->cfg->server.revoke_timeout_ms);
			await_key(lc, k);
			rmp_holder_kill(h);
			/* Its QP is dead now: a key with nothing due
			 * settles at once (and may be freed). */
			if (k->state == RMP_KEY_LIVE)
				revoke_key(lc, k);
			if (h->fail)
				h->fail(h, "a key revocation timed out");
			continue;
		}
		k->state = RMP_KEY_UNPROVEN;
		k->why = "no completion even after its queue pair was killed";
		key_settled(lc, k);
	}
	revoke_timer_arm(lc);
}

void rmp_lifecycle_on_key_wc(struct rmp_lifecycle *lc, struct rmp_key *k,
			     enum rmp_wr_tag tag, const struct ibv_wc *wc)
{
	struct rmp_holder *h = k->holder;
	bool was_settled = k->state == RMP_KEY_DEAD ||
			   k->state == RMP_KEY_UNPROVEN;
	unsigned out = rmp_key_on_wc(&lc->keys, k, tag, wc);

	if (!k->lease) {
		/* Orphan: settled before, only its completions were due. */
		if (rmp_key_idle(k))
			rmp_key_free(k);
	} else if ((out & RMP_KEY_SETTLED) && !was_settled) {
		key_settled(lc, k);
	}
	if (out & RMP_KEY_HOLDER_BROKEN)
		fail_holder(h, "a key operation on its queue pair failed");
}

/* ------------------------------------------------------------- ending */

static void on_zeroed(void *ctx, void *arg)
{
	struct rmp_lifecycle *lc = ctx;
	struct rmp_lease *l = arg;
	int ret;

	lc->zeroing_bytes -= l->length;
	lc->nending--;
	ret = rmp_pool_release(lc->pool, l->offset);
	if (ret)
		log_err("lease %016" PRIx64 ": returning extent %" PRIu64
			"+%" PRIu64 ": %s", l->id, l->offset, l->length,
			strerror(-ret));
	log_debug("lease %016" PRIx64 ": %" PRIu64 " bytes zeroed and free",
		  l->id, l->length);
	free(l);
}

/* quarantine -- never reuse l's extent: some key may still reach it. */
static void quarantine(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	set_state(l, RMP_LEASE_QUARANTINED);
	TAILQ_INSERT_TAIL(&lc->quarantined, l, state_link);
	lc->nending--;
	lc->quarantined_bytes += l->length;
	lc->nquarantined++;
	log_err("lease %016" PRIx64 ": extent %" PRIu64 "+%" PRIu64
		" quarantined: a key to it could not be proven dead; it is "
		"never reused (%" PRIu64 " bytes in %" PRIu64 " extents "
		"quarantined)", l->id, l->offset, l->length,
		lc->quarantined_bytes, lc->nquarantined);
}

/* finish_revoke -- every key of l is settled: zero it, or quarantine. */
static void finish_revoke(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	TAILQ_REMOVE(&lc->ending, l, state_link);
	lc->nrevoking--;
	if (l->tainted) {
		quarantine(lc, l);
		return;
	}
	set_state(l, RMP_LEASE_ZEROING);
	lc->zeroing_bytes += l->length;
	/* No client ever sees another lease's old bytes. */
	if (l->length > ZERO_INLINE_MAX && lc->zeroer &&
	    rmp_zeroer_submit(lc->zeroer, lc->pool->base + l->offset,
			      l->length, l) == 0)
		return;
	memset(lc->pool->base + l->offset, 0, l->length);
	on_zeroed(lc, l);
}

/* end_lease -- take l out of use: revoke every key, then finish. */
static void end_lease(struct rmp_lifecycle *lc, struct rmp_lease *l,
		      const char *why)
{
	log_debug("lease %016" PRIx64 " (%" PRIu64 " bytes, %s) ends: %s",
		  l->id, l->length, l->owner, why);
	rmp_lease_table_del(lc->table, l);
	if (l->holder)
		holder_del(l);
	set_state(l, RMP_LEASE_REVOKING);
	TAILQ_INSERT_TAIL(&lc->ending, l, state_link);
	lc->nending++;
	lc->nrevoking++;
	/* Revoke first: the extent is zeroed and reused only once no key
	 * reaches it. Keys of earlier holders may be settling already; the
	 * last key to settle finishes the lease (and may free it). */
	if (l->key)
		revoke_key(lc, l->key);
	else if (l->keys_unsettled == 0)
		finish_revoke(lc, l);
}

/* ------------------------------------------------------------- expiry */

static void schedule_expiry(struct rmp_lifecycle *lc)
{
	struct rmp_lease *first = rmp_lease_table_first(lc->table);
	uint64_t tick = lc->cfg->lease.expiry_tick_ms, now, wait;
	struct timeval tv;

	if (!first) {
		event_del(lc->expiry_ev);
		return;
	}
	now = rmp_now_ms();
	wait = first->deadline_ms > now ? first->deadline_ms - now : 0;
	/* Round up to the tick: leases expiring close together go in one
	 * wake-up, and a lease is never revoked before its deadline. */
	wait = (wait + tick - 1) / tick * tick;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(lc->expiry_ev, &tv);
}

static void on_expiry(int fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;
	uint64_t now = rmp_now_ms(), n = 0;
	struct rmp_lease *l;

	(void)fd;
	(void)what;
	while ((l = rmp_lease_table_first(lc->table)) &&
	       l->deadline_ms <= now) {
		/* Auto-renew: alive as long as its holder is. */
		if ((l->flags & RMP_LEASE_F_AUTO_RENEW) && l->holder &&
		    l->holder->alive) {
			rmp_lease_table_set_deadline(lc->table, l,
						     now + l->ttl_ms);
			continue;
		}
		lc->expired[lc->expired_next].id = l->id;
		lc->expired[lc->expired_next].secret = l->secret;
		lc->expired_next = (lc->expired_next + 1) % EXPIRED_RING;
		end_lease(lc, l, "expired");
		n++;
	}
	if (n)
		log_info("%" PRIu64 " lease(s) expired and revoked", n);
	schedule_expiry(lc);
}

/* recently_expired -- was id (with secret, if known) among them? */
static bool recently_expired(const struct rmp_lifecycle *lc, uint64_t id,
			     bool secret_known, uint64_t secret)
{
	/* Linear, but only on the rare miss path of a late request. */
	for (uint32_t i = 0; i < EXPIRED_RING; i++)
		if (lc->expired[i].id == id && id != 0 &&
		    (!secret_known || lc->expired[i].secret == secret))
			return true;
	return false;
}

/* ----------------------------------------------------------- requests */

/* ttl_ms -- the lifetime asked for (0 = default), within the bounds. */
static int ttl_ms(const struct rmp_lifecycle *lc, uint32_t ttl_s,
		  uint64_t *out)
{
	const struct rmp_config *cfg = lc->cfg;
	uint64_t ms = ttl_s ? (uint64_t)ttl_s * 1000 :
		      cfg->lease.ttl_default_ms;

	if (ms < cfg->lease.ttl_min_ms || ms > cfg->lease.ttl_max_ms)
		return -EINVAL;
	*out = ms;
	return 0;
}

/* new_ids -- random id (unique in the table) and secret. */
static int new_ids(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	int ret;

	do {
		ret = rmp_random64(&l->id);
		if (ret)
			return ret;
	} while (l->id == 0 || rmp_lease_table_find(lc->table, l->id));
	return rmp_random64(&l->secret);
}

/* give_key -- a fresh key for h on l; l becomes h's. */
static int give_key(struct rmp_lifecycle *lc, struct rmp_holder *h,
		    struct rmp_lease *l)
{
	struct rmp_key *k;
	int ret = rmp_key_grant(&lc->keys, h, l, &k);

	if (ret)
		return ret;
	l->key = k;
	l->keys_unsettled++;
	holder_add(h, l);
	return 0;
}

int rmp_lifecycle_grant(struct rmp_lifecycle *lc, struct rmp_holder *h,
			const struct rmp_alloc_req *r, struct rmp_lease **out)
{
	const struct rmp_config *cfg = lc->cfg;
	uint64_t align = r->alignment ? r->alignment : cfg->lease.alignment;
	uint64_t max = cfg->lease.max_lease ? cfg->lease.max_lease :
		       lc->pool->size;
	struct rmp_lease *l;
	uint64_t ttl;
	int ret;

	if (lc->draining)
		return -ESHUTDOWN;
	if (r->length == 0 || (align & (align - 1)) || r->access == 0 ||
	    (r->access & ~RMP_ACC_ALL) || (r->flags & ~RMP_LEASE_F_ALL))
		return -EINVAL;
	if (r->length > max)
		return -EFBIG;
	ret = ttl_ms(lc, r->ttl_s, &ttl);
	if (ret)
		return ret;
	ret = quota_check(lc, h, r->length);
	if (ret)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	ret = rmp_pool_get(lc->pool, r->length, RMP_MAX(align, 64),
			   &l->offset, &l->length);
	if (ret)
		goto err_free;
	/* Rounding may push a lease over the byte quota. */
	ret = quota_check(lc, h, l->length);
	if (ret)
		goto err_release;
	l->access = r->access;
	l->flags = r->flags;
	l->ttl_ms = ttl;
	l->deadline_ms = rmp_now_ms() + ttl;
	l->state = RMP_LEASE_GRANTED;
	rmp_strlcpy(l->owner, h->name, sizeof(l->owner));
	ret = new_ids(lc, l);
	if (ret)
		goto err_release;
	ret = rmp_lease_table_add(lc->table, l);
	if (ret)
		goto err_release;
	ret = give_key(lc, h, l);
	if (ret)
		goto err_unindex;
	schedule_expiry(lc);
	log_debug("%s: lease %016" PRIx64 " %" PRIu64 " bytes at %" PRIu64
		  " rkey %#x ttl %" PRIu64 " ms", h->label, l->id, l->length,
		  l->offset, l->key->rkey, ttl);
	*out = l;
	return 0;

err_unindex:
	rmp_lease_table_del(lc->table, l);
err_release:
	/* Never reachable by any key: no zeroing needed beyond the pool's
	 * own invariant that free extents are zero. */
	rmp_pool_release(lc->pool, l->offset);
err_free:
	free(l);
	return ret;
}

/* held_lease -- the lease id if it exists and h holds it. */
static int held_lease(struct rmp_lifecycle *lc, struct rmp_holder *h,
		      uint64_t id, struct rmp_lease **out)
{
	struct rmp_lease *l = rmp_lease_table_find(lc->table, id);

	if (!l)
		return recently_expired(lc, id, false, 0) ? -EKEYEXPIRED :
		       -ENOENT;
	if (l->holder != h)
		return -EPERM;
	*out = l;
	return 0;
}

int rmp_lifecycle_renew(struct rmp_lifecycle *lc, struct rmp_holder *h,
			uint64_t id, uint32_t ttl_s, uint64_t *ttl_out)
{
	struct rmp_lease *l;
	uint64_t ttl;
	int ret;

	ret = held_lease(lc, h, id, &l);
	if (ret)
		return ret;
	ret = ttl_ms(lc, ttl_s, &ttl);
	if (ret)
		return ret;
	l->ttl_ms = ttl;
	rmp_lease_table_set_deadline(lc->table, l, rmp_now_ms() + ttl);
	schedule_expiry(lc);
	*ttl_out = ttl;
	return 0;
}

int rmp_lifecycle_free_lease(struct rmp_lifecycle *lc, struct rmp_holder *h,
			     uint64_t id)
{
	struct rmp_lease *l;
	int ret = held_lease(lc, h, id, &l);

	if (ret)
		return ret;
	end_lease(lc, l, "freed by its holder");
	schedule_expiry(lc);
	return 0;
}

int rmp_lifecycle_attach(struct rmp_lifecycle *lc, struct rmp_holder *h,
			 uint64_t id, uint64_t secret, struct rmp_lease **out)
{
	struct rmp_lease *l = rmp_lease_table_find(lc->table, id);
	int ret;

	/* A wrong secret looks exactly like a missing lease. */
	if (!l)
		return recently_expired(lc, id, true, secret) ?
		       -EKEYEXPIRED : -ENOENT;
	if (l->secret != secret)
		return -ENOENT;
	if (l->deadline_ms <= rmp_now_ms())
		return -EKEYEXPIRED;
	if (l->holder == h) {
		*out = l;
		return 0;
	}
	ret = quota_check(lc, h, l->length);
	if (ret)
		return ret;
	/* Takeover: the previous holder's key is revoked (it settles on
	 * its own), then h gets a fresh one. */
	if (l->holder)
		holder_del(l);
	if (l->key) {
		struct rmp_key *old = l->key;

		l->key = NULL;
		revoke_key(lc, old);
	}
	ret = give_key(lc, h, l);
	if (ret)
		return ret;
	rmp_strlcpy(l->owner, h->name, sizeof(l->owner));
	log_debug("%s: attached lease %016" PRIx64, h->label, l->id);
	*out = l;
	return 0;
}

void rmp_lifecycle_describe(const struct rmp_lifecycle *lc,
			    const struct rmp_lease *l, struct rmp_lease_desc *d)
{
	uint64_t now = rmp_now_ms();

	memset(d, 0, sizeof(*d));
	d->id = l->id;
	d->secret = l->secret;
	d->addr = rmp_keys_remote_addr(&lc->keys, l->offset);
	d->length = l->length;
	d->ttl_ms = l->deadline_ms > now ? l->deadline_ms - now : 0;
	d->rkey = l->key ? l->key->rkey : 0;
	d->access = l->access;
	d->flags = l->flags;
}

void rmp_lifecycle_detach(struct rmp_lifecycle *lc, struct rmp_holder *h)
{
	struct rmp_lease *l;

	while ((l = TAILQ_FIRST(&h->leases))) {
		if (l->flags & RMP_LEASE_F_EPHEMERAL) {
			end_lease(lc, l, "its connection closed");
			continue;
		}
		holder_del(l);
		/* A window is bound to h's QP; a region key was handed to
		 * h's client: neither may outlive the connection. ATTACH
		 * grants a fresh one. */
		if (l->key) {
			struct rmp_key *k = l->key;

			l->key = NULL;
			revoke_key(lc, k);
		}
		/* An auto-renew lease gets one more ttl from the loss of its
		 * holder: time for a restarted client to attach. */
		if (l->flags & RMP_LEASE_F_AUTO_RENEW)
			rmp_lease_table_set_deadline(lc->table, l,
						     rmp_now_ms() + l->ttl_ms);
	}
	schedule_expiry(lc);
}

/* -------------------------------------------------------------- whole */

void rmp_lifecycle_set_draining(struct rmp_lifecycle *lc, bool on)
{
	lc->draining = on;
}

bool rmp_lifecycle_draining(const struct rmp_lifecycle *lc)
{
	return lc->draining;
}

void rmp_lifecycle_end_all(struct rmp_lifecycle *lc, const char *why)
{
	struct rmp_lease *l;
	uint64_t n = 0;

	while ((l = rmp_lease_table_first(lc->table))) {
		end_lease(lc, l, why);
		n++;
	}
	if (n)
		log_info("revoked %" PRIu64 " lease(s): %s", n, why);
	schedule_expiry(lc);
}

void rmp_lifecycle_stats(const struct rmp_lifecycle *lc,
			 struct rmp_lifecycle_stats *st)
{
	st->leases = rmp_lease_table_count(lc->table);
	st->ending = lc->nending;
	st->revoking = lc->nrevoking;
	st->zeroing_bytes = lc->zeroing_bytes;
	st->quarantined_bytes = lc->quarantined_bytes;
	st->quarantined_leases = lc->nquarantined;
}

struct rmp_lifecycle *rmp_lifecycle_new(const struct rmp_lifecycle_params *p)
{
	struct rmp_lifecycle *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return NULL;
	lc->base = p->base;
	lc->cfg = p->cfg;
	lc->pool = p->pool;
	lc->keys.mode = p->keys_mode;
	lc->keys.pool = p->pool;
	TAILQ_INIT(&lc->revoking);
	TAILQ_INIT(&lc->ending);
	TAILQ_INIT(&lc->quarantined);
	lc->table = rmp_lease_table_new();
	lc->expiry_ev = evtimer_new(p->base, on_expiry, lc);
	lc->revoke_ev = evtimer_new(p->base, on_revoke_timeout, lc);
	lc->zeroer = rmp_zeroer_new(p->base, on_zeroed, lc);
	if (!lc->table || !lc->expiry_ev || !lc->revoke_ev || !lc->zeroer) {
		rmp_lifecycle_free(lc);
		return NULL;
	}
	return lc;
}

void rmp_lifecycle_free(struct rmp_lifecycle *lc)
{
	struct rmp_lease *l;
	struct rmp_key *k;

	if (!lc)
		return;
	/* Finishes the zeroing in flight: those extents go back. */
	rmp_zeroer_free(lc->zeroer);
	/* Whatever still awaits a completion is abandoned with the device. */
	while ((k = TAILQ_FIRST(&lc->revoking))) {
		TAILQ_REMOVE(&lc->revoking, k, revoke_link);
		if (k->lease && k->lease->key == k)
			k->lease->key = NULL;
		rmp_key_free(k);
	}
	while ((l = TAILQ_FIRST(&lc->ending))) {
		TAILQ_REMOVE(&lc->ending, l, state_link);
		free(l);
	}
	while ((l = TAILQ_FIRST(&lc->quarantined))) {
		TAILQ_REMOVE(&lc->quarantined, l, state_link);
		free(l);
	}
	while ((l = rmp_lease_table_first(lc->table))) {
		rmp_lease_table_del(lc->table, l);
		rmp_key_free(l->key);
		free(l);
	}
	rmp_lease_table_free(lc->table);
	if (lc->expiry_ev)
		event_free(lc->expiry_ev);
	if (lc->revoke_ev)
		event_free(lc->revoke_ev);
	free(lc);
}

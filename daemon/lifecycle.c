/* SPDX-License-Identifier: MIT */
/* lifecycle.c -- the one owner of a lease's life: grant to reuse. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <event2/event.h>

#include "journal.h"
#include "lifecycle.h"
#include "log.h"
#include "pool.h"
#include "tenant.h"
#include "util.h"
#include "zero.h"

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

struct rmp_lifecycle {
	struct event_base *base;
	const struct rmp_config *cfg;
	struct rmp_pool *pool;
	struct rmp_keys keys;
	struct rmp_lease_table *table;
	struct rmp_journal *journal; /* NULL: leases die with the process */
	struct rmp_tenants *tenants;
	struct rmp_zeroer *zeroer;
	struct event *expiry_ev, *revoke_ev, *settle_ev;
	uint64_t expiry_at_ms;  /* when expiry_ev fires, if pending */
	uint64_t revoke_at_ms;  /* when revoke_ev fires, if pending */
	uint64_t settle_at_ms;  /* when settle_ev fires, if pending */
	struct rmp_lease_list ending;      /* REVOKING leases */
	struct rmp_lease_list settling;    /* ZEROING leases in their grace */
	struct rmp_lease_list quarantined; /* QUARANTINED leases */
	uint64_t nending, nrevoking, zeroing_bytes, quarantined_bytes, nquarantined;
	uint64_t nkeys; /* live keys of all leases */
	uint64_t leased_bytes, revoking_bytes;
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

static void finish_revoke(struct rmp_lifecycle *lc, struct rmp_lease *l);

/*
 * set_state -- the only place a lease changes state; what each state
 * means is in lease.h.
 */
static void set_state(struct rmp_lease *l, enum rmp_lease_state s)
{
	log_debug("lease %016" PRIx64 ": %s -> %s", l->id, rmp_lease_state_name(l->state),
		  rmp_lease_state_name(s));
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

static const char *audit_name(const struct rmp_holder *h)
{
	return h ? h->name : "-";
}

static const char *audit_peer(const struct rmp_holder *h)
{
	return h ? h->peer : "-";
}

/*
 * arm_timer -- have ev fire wait ms after now, unless it is armed to fire
 * no later than that already (*at_ms: when it fires, while pending):
 * re-arming on every grant or revoke costs the control path, and a timer
 * that fires early finds nothing due and arms again.
 */
static void arm_timer(struct event *ev, uint64_t *at_ms, uint64_t now,
		      uint64_t wait)
{
	struct timeval tv;

	if (event_pending(ev, EV_TIMEOUT, NULL) && *at_ms <= now + wait)
		return;
	*at_ms = now + wait;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(ev, &tv);
}

/* --------------------------------------------------------------- keys */

/* revoke_timer_arm -- the revoke timer fires when the first revocation
 * the key module awaits is overdue (or never, with none). */
static void revoke_timer_arm(struct rmp_lifecycle *lc)
{
	uint64_t now = rmp_now_ms(), at;

	if (!rmp_keys_revoke_due(&lc->keys, &at)) {
		event_del(lc->revoke_ev);
		return;
	}
	arm_timer(lc->revoke_ev, &lc->revoke_at_ms, now, at > now ? at - now : 0);
}

/*
 * on_key_settled -- the key module's one word back (rmp_keys_settled_fn):
 * k is proven dead, or could not be. Account it to its lease, and let an
 * ending lease move on once all its keys are settled.
 */
static void on_key_settled(void *ctx, struct rmp_key *k)
{
	struct rmp_lifecycle *lc = ctx;
	struct rmp_lease *l = k->lease;

	if (k->state == RMP_KEY_UNPROVEN) {
		log_err("lease %016" PRIx64 ": key %#x of %s could not be "
			"proven dead: %s", l->id, k->rkey, k->holder->label,
			k->why);
		l->tainted = true;
	}
	l->keys_unsettled--;
	rmp_key_release(k);
	if (l->state == RMP_LEASE_REVOKING && l->keys_unsettled == 0)
		finish_revoke(lc, l);
}

/* revoke_key -- have the key module revoke k (on_key_settled follows). */
static void revoke_key(struct rmp_lifecycle *lc, struct rmp_key *k)
{
	rmp_keys_revoke(&lc->keys, k);
	revoke_timer_arm(lc);
}

static void on_revoke_timeout(int fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;

	(void)fd;
	(void)what;
	rmp_keys_revoke_overdue(&lc->keys, rmp_now_ms());
	revoke_timer_arm(lc);
}

void rmp_lifecycle_on_key_wc(struct rmp_lifecycle *lc, struct rmp_key *k,
			     enum rmp_wr_tag tag, const struct ibv_wc *wc)
{
	rmp_keys_on_wc(&lc->keys, k, tag, wc);
	revoke_timer_arm(lc);
}

/* ------------------------------------------------------------- ending */

static void on_zeroed(void *ctx, void *arg)
{
	struct rmp_lifecycle *lc = ctx;
	struct rmp_lease *l = arg;
	int ret;

	lc->zeroing_bytes -= l->ext.length;
	lc->nending--;
	rmp_tenant_settled(l->tenant, l->ext.length);
	ret = rmp_pool_release(lc->pool, &l->ext);
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
	set_state(l, RMP_LEASE_QUARANTINED);
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
	    rmp_zeroer_submit(lc->zeroer, lc->pool->base + l->ext.offset,
			      l->ext.length, l) == 0)
		return;
	memset(lc->pool->base + l->ext.offset, 0, l->ext.length);
	on_zeroed(lc, l);
}

/* on_settle -- zero the extents whose grace is over (the list is in
 * order of zero_at_ms: every lease gets the same grace). */
static void on_settle(evutil_socket_t fd, short what, void *arg)
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
		arm_timer(lc->settle_ev, &lc->settle_at_ms, now,
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
	set_state(l, RMP_LEASE_ZEROING);
	lc->zeroing_bytes += l->ext.length;
	l->zero_at_ms = now + grace;
	TAILQ_INSERT_TAIL(&lc->settling, l, state_link);
	arm_timer(lc->settle_ev, &lc->settle_at_ms, now, grace);
}

/* drop_key -- k leaves its lease and holder, and is revoked. */
static void drop_key(struct rmp_lifecycle *lc, struct rmp_key *k)
{
	struct rmp_lease *l = k->lease;
	struct rmp_holder *h = k->holder;

	TAILQ_REMOVE(&l->keys, k, lease_link);
	l->nkeys--;
	TAILQ_REMOVE(&h->keys, k, holder_link);
	h->nkeys--;
	lc->nkeys--;
	revoke_key(lc, k);
}

/* end_lease -- take l out of use: revoke every key, then finish. */
static void end_lease(struct rmp_lifecycle *lc, struct rmp_lease *l,
		      const char *why)
{
	struct rmp_key *k;

	log_debug("lease %016" PRIx64 " (%" PRIu64 " bytes, %s) ends: %s",
		  l->id, l->ext.length, l->owner, why);
	rmp_lease_table_del(lc->table, l);
	/* From now on a restart does not bring it back. */
	if (lc->journal)
		rmp_journal_drop(lc->journal, &l->jslot);
	rmp_tenant_end(l->tenant, l->ext.length);
	lc->leased_bytes -= l->ext.length;
	set_state(l, RMP_LEASE_REVOKING);
	TAILQ_INSERT_TAIL(&lc->ending, l, state_link);
	lc->nending++;
	lc->nrevoking++;
	lc->revoking_bytes += l->ext.length;
	/* Revoke first: the extent is zeroed and reused only once no key
	 * reaches it. Keys dropped earlier may be settling already; the
	 * last key to settle finishes the lease (and may free it). Hold
	 * the count up while dropping so that no settle finishes it
	 * half-way. */
	l->keys_unsettled++;
	while ((k = TAILQ_FIRST(&l->keys)))
		drop_key(lc, k);
	l->keys_unsettled--;
	if (l->keys_unsettled == 0)
		finish_revoke(lc, l);
}

/* ------------------------------------------------------------ journal */

/*
 * journal_put -- record l as it is now, so it outlives the process.
 * Ephemeral leases are not kept: they end with their connection, and a
 * restart ends every connection. -ENOSPC when the journal is full.
 */
static int journal_put(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	struct rmp_journal_lease r;

	if (!lc->journal || (l->flags & RMP_LEASE_F_EPHEMERAL))
		return 0;
	memset(&r, 0, sizeof(r));
	r.id = l->id;
	r.secret = l->secret;
	r.offset = l->ext.offset;
	r.length = l->ext.length;
	r.deadline_ms = l->deadline_ms;
	r.ttl_ms = l->ttl_ms;
	r.access = l->access;
	r.flags = l->flags;
	rmp_strlcpy(r.tenant, l->tenant->name, sizeof(r.tenant));
	rmp_strlcpy(r.owner, l->owner, sizeof(r.owner));
	return rmp_journal_put(lc->journal, &r, &l->jslot);
}

/* set_deadline -- a new deadline for l, in the table and the journal. */
static void set_deadline(struct rmp_lifecycle *lc, struct rmp_lease *l,
			 uint64_t deadline_ms)
{
	rmp_lease_table_set_deadline(lc->table, l, deadline_ms);
	/* A rewrite of l's own record: it cannot run out of room. */
	journal_put(lc, l);
}

/* ------------------------------------------------------------- expiry */

static void schedule_expiry(struct rmp_lifecycle *lc)
{
	struct rmp_lease *first = rmp_lease_table_first(lc->table);
	uint64_t tick = lc->cfg->lease.expiry_tick_ms, now, wait;

	if (!first) {
		event_del(lc->expiry_ev);
		return;
	}
	now = rmp_now_ms();
	wait = first->deadline_ms > now ? first->deadline_ms - now : 0;
	/* Round up to the tick: leases expiring close together go in one
	 * wake-up, and a lease is never revoked before its deadline. Not
	 * what the coarse clock lags: the timer runs on the precise clock,
	 * so a wake-up right at a deadline may find it a few ms ahead, and
	 * waiting a whole tick more for those would make a lease late by a
	 * tick. */
	if (wait > rmp_coarse_lag_ms())
		wait = (wait + tick - 1) / tick * tick;
	arm_timer(lc->expiry_ev, &lc->expiry_at_ms, now, wait);
}

/* remember_expired -- later requests for l get -EKEYEXPIRED. */
static void remember_expired(struct rmp_lifecycle *lc,
			     const struct rmp_lease *l)
{
	lc->expired[lc->expired_next].id = l->id;
	lc->expired[lc->expired_next].secret = l->secret;
	lc->expired_next = (lc->expired_next + 1) % EXPIRED_RING;
}

bool rmp_holder_current(const struct rmp_holder *h)
{
	return h->tenant && rmp_tenant_current(h->tenant, h->tenant_epoch);
}

/*
 * renewal_ms -- the time an automatic renewal grants l: its ttl, but no
 * more than ttl_max says now (a reload may have lowered it).
 */
static uint64_t renewal_ms(const struct rmp_lifecycle *lc,
			   const struct rmp_lease *l)
{
	return RMP_MIN(l->ttl_ms, lc->cfg->lease.ttl_max_ms);
}

/*
 * renews_itself -- is l an auto-renew lease held by a connection that may
 * still get time? A key whose proof a reload voided keeps l alive only to
 * its deadline.
 */
static bool renews_itself(const struct rmp_lease *l)
{
	const struct rmp_key *k;

	if (!(l->flags & RMP_LEASE_F_AUTO_RENEW))
		return false;
	TAILQ_FOREACH(k, &l->keys, lease_link)
		if (rmp_holder_current(k->holder))
			return true;
	return false;
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
		/* Auto-renew: alive as long as a holder is. */
		if (renews_itself(l)) {
			set_deadline(lc, l, now + renewal_ms(lc, l));
			continue;
		}
		remember_expired(lc, l);
		lc->n.expiries++;
		audit(NULL, l->tenant, "expire", l->id, "bytes=%" PRIu64,
		      l->ext.length);
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

/*
 * give_key -- a fresh key for h on l with access, beside l's others.
 * -EDQUOT (detail RMP_DETAIL_KEYS) at the keys-per-lease limit.
 */
static int give_key(struct rmp_lifecycle *lc, struct rmp_holder *h,
		    struct rmp_lease *l, uint32_t access, struct rmp_key **out,
		    unsigned *detail)
{
	struct rmp_key *k;
	int ret;

	if (l->nkeys >= lc->cfg->lease.keys_per_lease) {
		*detail = RMP_DETAIL_KEYS;
		return -EDQUOT;
	}
	ret = rmp_key_grant(&lc->keys, h, l, access, &k);
	if (ret)
		return ret;
	TAILQ_INSERT_TAIL(&l->keys, k, lease_link);
	l->nkeys++;
	TAILQ_INSERT_TAIL(&h->keys, k, holder_link);
	h->nkeys++;
	lc->nkeys++;
	l->keys_unsettled++;
	*out = k;
	return 0;
}

int rmp_lifecycle_grant(struct rmp_lifecycle *lc, struct rmp_holder *h,
			const struct rmp_alloc_req *r, struct rmp_lease **out,
			struct rmp_key **key, unsigned *detail)
{
	const struct rmp_config *cfg = lc->cfg;
	uint64_t align = r->alignment ? r->alignment : cfg->lease.alignment;
	uint64_t max = cfg->lease.max_lease ? cfg->lease.max_lease :
		       lc->pool->size;
	struct rmp_lease *l;
	uint64_t ttl;
	int ret;

	*detail = RMP_DETAIL_NONE;
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
	/* max_leases bounds the table (heap, windows), journal or not. */
	if (rmp_lease_table_count(lc->table) >= cfg->pool.max_leases) {
		*detail = RMP_DETAIL_SERVER_LEASES;
		lc->n.refusals++;
		audit(h, h->tenant, "refuse", 0, "bytes=%" PRIu64 " limit=%s",
		      r->length, "server-leases");
		return -ENOSPC;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	TAILQ_INIT(&l->keys);
	ret = rmp_pool_get(lc->pool, r->length, RMP_MAX(align, 64),
			   &l->ext);
	if (ret)
		goto err_free;
	/* Charged as granted: rounding counts. */
	ret = rmp_tenant_charge(h->tenant, l->ext.length, detail);
	if (ret) {
		lc->n.refusals++;
		audit(h, h->tenant, "refuse", 0, "bytes=%" PRIu64 " limit=%s",
		      r->length, *detail == RMP_DETAIL_BYTES ? "bytes" :
		      "leases");
		goto err_release;
	}
	l->tenant = h->tenant;
	l->access = r->access;
	l->flags = r->flags;
	l->ttl_ms = ttl;
	l->created_ms = rmp_now_ms();
	l->deadline_ms = l->created_ms + ttl;
	l->state = RMP_LEASE_GRANTED;
	l->owner_holder = h;
	rmp_strlcpy(l->owner, h->name, sizeof(l->owner));
	ret = new_ids(lc, l);
	if (ret)
		goto err_uncharge;
	ret = rmp_lease_table_add(lc->table, l);
	if (ret)
		goto err_uncharge;
	ret = journal_put(lc, l);
	if (ret) {
		log_warn("%s: lease journal full ([pool] max_leases = %u): "
			 "ALLOC refused", h->label, lc->cfg->pool.max_leases);
		*detail = RMP_DETAIL_SERVER_LEASES;
		goto err_unindex;
	}
	ret = give_key(lc, h, l, l->access, key, detail);
	if (ret)
		goto err_unindex;
	schedule_expiry(lc);
	lc->n.grants++;
	lc->leased_bytes += l->ext.length;
	audit(h, l->tenant, "grant", l->id, "bytes=%" PRIu64 " ttl_ms=%"
	      PRIu64 " access=%#x%s", l->ext.length, ttl, l->access,
	      (l->flags & RMP_LEASE_F_EPHEMERAL) ? " ephemeral" :
	      (l->flags & RMP_LEASE_F_AUTO_RENEW) ? " auto-renew" : "");
	*out = l;
	return 0;

err_unindex:
	if (lc->journal)
		rmp_journal_drop(lc->journal, &l->jslot);
	rmp_lease_table_del(lc->table, l);
err_uncharge:
	rmp_tenant_uncharge(h->tenant, l->ext.length);
err_release:
	/* Never reachable by any key: no zeroing needed beyond the pool's
	 * own invariant that free extents are zero. */
	rmp_pool_release(lc->pool, &l->ext);
err_free:
	free(l);
	return ret;
}

/*
 * tenant_lease -- lease id, if the secret matches and it is h's tenant's.
 * A wrong secret looks exactly like a missing lease; another tenant's
 * lease gives -EPERM (detail RMP_DETAIL_TENANT): a token alone is not
 * enough.
 */
static int tenant_lease(struct rmp_lifecycle *lc, struct rmp_holder *h,
			uint64_t id, uint64_t secret, struct rmp_lease **out,
			unsigned *detail)
{
	struct rmp_lease *l = rmp_lease_table_find(lc->table, id);

	*detail = RMP_DETAIL_NONE;
	if (!l || l->secret != secret)
		return !l && recently_expired(lc, id, true, secret) ?
		       -EKEYEXPIRED : -ENOENT;
	if (l->tenant != h->tenant) {
		*detail = RMP_DETAIL_TENANT;
		audit(h, h->tenant, "deny", id, "owner=%s", l->tenant->name);
		return -EPERM;
	}
	if (l->deadline_ms <= rmp_now_ms())
		return -EKEYEXPIRED;
	*out = l;
	return 0;
}

int rmp_lifecycle_renew(struct rmp_lifecycle *lc, struct rmp_holder *h,
			uint64_t id, uint64_t secret, uint32_t ttl_s,
			uint64_t *ttl_out, unsigned *detail)
{
	struct rmp_lease *l;
	uint64_t ttl;
	int ret;

	ret = tenant_lease(lc, h, id, secret, &l, detail);
	if (ret)
		return ret;
	ret = ttl_ms(lc, ttl_s, &ttl);
	if (ret)
		return ret;
	l->ttl_ms = ttl;
	set_deadline(lc, l, rmp_now_ms() + ttl);
	schedule_expiry(lc);
	lc->n.renewals++;
	log_debug("%s: renewed lease %016" PRIx64 " for %" PRIu64 " ms",
		  h->label, id, ttl);
	*ttl_out = ttl;
	return 0;
}

int rmp_lifecycle_free_lease(struct rmp_lifecycle *lc, struct rmp_holder *h,
			     uint64_t id, uint64_t secret, unsigned *detail)
{
	struct rmp_lease *l;
	int ret = tenant_lease(lc, h, id, secret, &l, detail);

	if (ret)
		return ret;
	lc->n.frees++;
	audit(h, l->tenant, "free", l->id, "bytes=%" PRIu64 " holders=%u",
	      l->ext.length, l->nkeys);
	end_lease(lc, l, "freed");
	schedule_expiry(lc);
	return 0;
}

/* key_of -- h's live key on l, or NULL. */
static struct rmp_key *key_of(const struct rmp_lease *l,
			      const struct rmp_holder *h)
{
	struct rmp_key *k;

	TAILQ_FOREACH(k, &l->keys, lease_link)
		if (k->holder == h)
			return k;
	return NULL;
}

/*
 * owner_lost_key -- an ATTACH by h dropped keys of l (h's own, or on a
 * takeover everyone else's) and then could not grant h its new one. The
 * owner is only ever found through its keys (rmp_lifecycle_detach): one
 * with no key left would never end an ephemeral lease and would dangle
 * once freed. So an ephemeral lease whose owner lost its key ends now, as
 * its connection's close would end it, and any other lease forgets it.
 */
static void owner_lost_key(struct rmp_lifecycle *lc, struct rmp_lease *l,
			   struct rmp_holder *h)
{
	if (!l->owner_holder || key_of(l, l->owner_holder))
		return;
	if (l->flags & RMP_LEASE_F_EPHEMERAL) {
		audit(h, l->tenant, "end", l->id, "why=%s",
		      "ephemeral-owner-lost-its-key");
		end_lease(lc, l, "its owner lost its key");
		return;
	}
	l->owner_holder = NULL;
}

int rmp_lifecycle_attach(struct rmp_lifecycle *lc, struct rmp_holder *h,
			 const struct rmp_attach_req *r, struct rmp_lease **out,
			 struct rmp_key **key, unsigned *detail)
{
	bool exclusive = r->flags & RMP_ATTACH_F_EXCLUSIVE;
	struct rmp_key *k, *next, *mine;
	struct rmp_lease *l;
	uint32_t access;
	unsigned others = 0;
	int ret;

	if (r->flags & ~RMP_ATTACH_F_ALL || r->access & ~RMP_ACC_ALL)
		return -EINVAL;
	ret = tenant_lease(lc, h, r->id, r->secret, &l, detail);
	if (ret)
		return ret;
	access = r->access ? r->access : l->access;
	if (access & ~l->access)
		return -EACCES;
	/* Takeover: every other key is revoked (each settles on its own)
	 * before the new one is granted. */
	if (exclusive) {
		for (k = TAILQ_FIRST(&l->keys); k; k = next) {
			next = TAILQ_NEXT(k, lease_link);
			if (k->holder != h) {
				drop_key(lc, k);
				others++;
			}
		}
	}
	mine = key_of(l, h);
	if (mine && mine->access == access) {
		k = mine;
	} else {
		/* A holder has one key per lease: a new access replaces it. */
		if (mine)
			drop_key(lc, mine);
		ret = give_key(lc, h, l, access, &k, detail);
		if (ret) {
			owner_lost_key(lc, l, h);
			return ret;
		}
	}
	if (exclusive) {
		l->owner_holder = h;
		lc->n.takeovers++;
		audit(h, l->tenant, "takeover", l->id, "revoked=%u access=%#x",
		      others, access);
	} else {
		lc->n.attaches++;
		audit(h, l->tenant, "attach", l->id, "holders=%u access=%#x",
		      l->nkeys, access);
	}
	*out = l;
	*key = k;
	return 0;
}

uint64_t rmp_lifecycle_lease_addr(const struct rmp_lifecycle *lc,
				  const struct rmp_lease *l)
{
	return rmp_keys_remote_addr(&lc->keys, l->ext.offset);
}

void rmp_lifecycle_describe(const struct rmp_lifecycle *lc,
			    const struct rmp_lease *l, const struct rmp_key *k,
			    struct rmp_lease_desc *d)
{
	uint64_t now = rmp_now_ms();

	memset(d, 0, sizeof(*d));
	d->id = l->id;
	d->secret = l->secret;
	d->addr = rmp_lifecycle_lease_addr(lc, l);
	d->length = l->ext.length;
	d->ttl_ms = l->deadline_ms > now ? l->deadline_ms - now : 0;
	d->rkey = k->rkey;
	d->access = k->access;
	d->flags = l->flags;
	d->holders = l->nkeys;
}

void rmp_lifecycle_detach(struct rmp_lifecycle *lc, struct rmp_holder *h)
{
	struct rmp_lease *l;
	struct rmp_key *k;

	/* A window is bound to h's QP; a region key was handed to h's
	 * client: no key may outlive its connection. ATTACH grants a fresh
	 * one. */
	while ((k = TAILQ_FIRST(&h->keys))) {
		l = k->lease;
		drop_key(lc, k);
		if (l->owner_holder == h) {
			l->owner_holder = NULL;
			if (l->flags & RMP_LEASE_F_EPHEMERAL) {
				audit(h, l->tenant, "end", l->id, "why=%s",
				      "ephemeral-connection-closed");
				end_lease(lc, l, "its connection closed");
				continue;
			}
		}
		/* An auto-renew lease gets one more ttl from the loss of its
		 * last holder: time for a restarted client to attach (none
		 * once its tenant is removed: nobody may attach). */
		if ((l->flags & RMP_LEASE_F_AUTO_RENEW) && l->nkeys == 0 &&
		    l->tenant->usable)
			set_deadline(lc, l, rmp_now_ms() + renewal_ms(lc, l));
	}
	rmp_keys_holder_dead(&lc->keys, h);
	revoke_timer_arm(lc);
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
	st->keys = lc->nkeys;
	st->leased_bytes = lc->leased_bytes;
	st->revoking_bytes = lc->revoking_bytes;
	st->grants = lc->n.grants;
	st->renewals = lc->n.renewals;
	st->frees = lc->n.frees;
	st->expiries = lc->n.expiries;
	st->revocations = lc->n.revocations;
	st->takeovers = lc->n.takeovers;
	st->attaches = lc->n.attaches;
	st->refusals = lc->n.refusals;
}

/* ---------------------------------------------------------- operators */

const struct rmp_lease *rmp_lifecycle_find(const struct rmp_lifecycle *lc,
					   uint64_t id)
{
	return rmp_lease_table_find(lc->table, id);
}

struct foreach_ctx {
	void (*fn)(const struct rmp_lease *l, void *arg);
	void *arg;
};

static void foreach_one(struct rmp_lease *l, void *arg)
{
	struct foreach_ctx *f = arg;

	f->fn(l, f->arg);
}

void rmp_lifecycle_foreach(const struct rmp_lifecycle *lc,
			   void (*fn)(const struct rmp_lease *l, void *arg),
			   void *arg)
{
	struct foreach_ctx f = { fn, arg };

	rmp_lease_table_foreach(lc->table, foreach_one, &f);
}

int rmp_lifecycle_revoke(struct rmp_lifecycle *lc, uint64_t id,
			 const char *who)
{
	struct rmp_lease *l = rmp_lease_table_find(lc->table, id);

	if (!l)
		return -ENOENT;
	remember_expired(lc, l);
	lc->n.revocations++;
	audit(NULL, l->tenant, "revoke", l->id, "bytes=%" PRIu64
	      " holders=%u by=\"%s\"", l->ext.length, l->nkeys, who);
	end_lease(lc, l, "revoked by the operator");
	schedule_expiry(lc);
	return 0;
}

int rmp_lifecycle_extend(struct rmp_lifecycle *lc, uint64_t id,
			 uint64_t ttl, const char *who)
{
	struct rmp_lease *l = rmp_lease_table_find(lc->table, id);

	if (!l)
		return -ENOENT;
	if (ttl == 0 || ttl > lc->cfg->lease.ttl_max_ms)
		return -EINVAL;
	l->ttl_ms = ttl;
	set_deadline(lc, l, rmp_now_ms() + ttl);
	schedule_expiry(lc);
	audit(NULL, l->tenant, "extend", l->id, "ttl_ms=%" PRIu64
	      " by=\"%s\"", ttl, who);
	return 0;
}

void rmp_lifecycle_config_changed(struct rmp_lifecycle *lc)
{
	schedule_expiry(lc);
}

bool rmp_lifecycle_persistent(const struct rmp_lifecycle *lc)
{
	return lc->journal != NULL;
}

struct recovery {
	struct rmp_lifecycle *lc;
	uint64_t now, zeroed_to, zeroed, bytes, n, no_tenant, refused;
	bool adopted;
};

/* zero_to -- zero the pool from where the last recovered lease ended up
 * to end: nothing there is a live lease's. */
static void zero_to(struct recovery *rc, uint64_t end)
{
	if (rc->adopted && end > rc->zeroed_to) {
		memset(rc->lc->pool->base + rc->zeroed_to, 0,
		       end - rc->zeroed_to);
		rc->zeroed += end - rc->zeroed_to;
	}
	if (end > rc->zeroed_to)
		rc->zeroed_to = end;
}

/* adopt -- one live record from the journal (in offset order). */
static void adopt(const struct rmp_journal_lease *r, uint32_t slot,
		  void *arg)
{
	struct recovery *rc = arg;
	struct rmp_lifecycle *lc = rc->lc;
	struct rmp_tenant *t;
	struct rmp_lease *l;
	uint32_t s = slot;
	unsigned why;

	/* Its tenant as configured now, even one without its key file
	 * yet: the lease lives to its deadline, as after a reload. */
	t = rmp_tenants_owner(lc->tenants, r->tenant, &why);
	l = calloc(1, sizeof(*l));
	if (!t || !l) {
		rc->no_tenant += !t;
		log_warn("lease %016" PRIx64 " of tenant %s not recovered: %s",
			 r->id, r->tenant, t ? "out of memory" :
			 why == RMP_REJ_ANONYMOUS ? "anonymous access is off "
			 "([anonymous] enabled = no)" :
			 "the tenant is not configured any more");
		goto drop;
	}
	TAILQ_INIT(&l->keys);
	l->ext.offset = r->offset;
	l->ext.length = r->length;
	if (rmp_pool_take(lc->pool, &l->ext) ||
	    rmp_lease_table_find(lc->table, r->id)) {
		rc->refused++;
		log_warn("lease %016" PRIx64 " not recovered: its extent %"
			 PRIu64 "+%" PRIu64 " or its id is taken", r->id,
			 r->offset, r->length);
		goto drop;
	}
	l->id = r->id;
	l->secret = r->secret;
	l->access = r->access;
	l->flags = r->flags;
	/* Within today's bounds (the journal checked it is not 0). */
	l->ttl_ms = RMP_MAX(RMP_MIN(r->ttl_ms, lc->cfg->lease.ttl_max_ms),
			    lc->cfg->lease.ttl_min_ms);
	l->tenant = t;
	l->state = RMP_LEASE_GRANTED;
	l->created_ms = rc->now;
	l->jslot = slot;
	rmp_strlcpy(l->owner, r->owner, sizeof(l->owner));
	/* Its connection is gone: an auto-renewed lease lives one more ttl
	 * from now, time for its holder to attach again. */
	l->deadline_ms = (l->flags & RMP_LEASE_F_AUTO_RENEW) ?
			 rc->now + renewal_ms(lc, l) : r->deadline_ms;
	if (rmp_lease_table_add(lc->table, l)) {
		rmp_pool_release(lc->pool, &l->ext);
		goto drop;
	}
	journal_put(lc, l);
	rmp_tenant_adopt(t, l->ext.length);
	lc->leased_bytes += l->ext.length;
	zero_to(rc, l->ext.offset);
	rc->zeroed_to = RMP_MAX(rc->zeroed_to, l->ext.offset + l->ext.length);
	rc->bytes += l->ext.length;
	rc->n++;
	return;
drop:
	free(l);
	rmp_journal_drop(lc->journal, &s);
}

int rmp_lifecycle_recover(struct rmp_lifecycle *lc, bool found,
			  bool adopted)
{
	struct recovery rc = { .lc = lc, .now = rmp_now_ms(),
			       .adopted = adopted };
	struct rmp_journal_stats st = { 0 };
	uint64_t start = rmp_now_ns();
	int ret;

	if (lc->journal && found) {
		ret = rmp_journal_recover(lc->journal, rc.now, adopt, &rc);
		/*
		 * Nothing was read: the records and their bytes are as the
		 * last run left them. Going on would zero the bytes but keep
		 * the records, with no free one for new grants; an ephemeral
		 * lease (not journaled) could then get the bytes of one, and
		 * the next start adopt that record over its data.
		 */
		if (ret) {
			log_err("lease journal: %s recovering its leases "
				"(it needs %zu MiB for [pool] max_leases = %"
				PRIu32 "): not starting, so that they and their "
				"bytes stay for a start that has the memory; to "
				"start without them, remove the state file "
				"(with fdstore: systemctl stop)", strerror(-ret),
				(rmp_journal_recover_bytes(lc->journal) +
				 (1u << 20) - 1) >> 20,
				lc->cfg->pool.max_leases);
			return ret;
		}
		rmp_journal_stats(lc->journal, &st);
	}
	/* Whatever no recovered lease covers was an earlier process's. */
	zero_to(&rc, lc->pool->size);
	schedule_expiry(lc);
	if (!adopted)
		return 0;
	log_notice("recovered %" PRIu64 " lease(s), %" PRIu64 " bytes, from "
		   "the journal; not recovered: %u expired, %u damaged, %u "
		   "invalid, %u overlapping, %" PRIu64 " of unknown tenants, %"
		   PRIu64 " refused; %" PRIu64 " MiB zeroed; %" PRIu64 " ms",
		   rc.n, rc.bytes, st.expired, st.damaged, st.invalid,
		   st.overlapped, rc.no_tenant, rc.refused, rc.zeroed >> 20,
		   (rmp_now_ns() - start) / 1000000u);
	return 0;
}

struct rmp_lifecycle *rmp_lifecycle_new(const struct rmp_lifecycle_params *p)
{
	struct rmp_lifecycle *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return NULL;
	lc->base = p->base;
	lc->cfg = p->cfg;
	lc->pool = p->pool;
	rmp_keys_init(&lc->keys, p->keys_mode, p->pool,
		      &p->cfg->server.revoke_timeout_ms, on_key_settled, lc);
	lc->journal = p->journal;
	lc->tenants = p->tenants;
	TAILQ_INIT(&lc->ending);
	TAILQ_INIT(&lc->settling);
	TAILQ_INIT(&lc->quarantined);
	lc->table = rmp_lease_table_new();
	lc->expiry_ev = evtimer_new(p->base, on_expiry, lc);
	lc->revoke_ev = evtimer_new(p->base, on_revoke_timeout, lc);
	lc->settle_ev = evtimer_new(p->base, on_settle, lc);
	lc->zeroer = rmp_zeroer_new(p->base, on_zeroed, lc);
	if (!lc->table || !lc->expiry_ev || !lc->revoke_ev || !lc->settle_ev ||
	    !lc->zeroer) {
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
	rmp_keys_abandon(&lc->keys);
	while ((l = TAILQ_FIRST(&lc->ending))) {
		TAILQ_REMOVE(&lc->ending, l, state_link);
		free(l);
	}
	/* Extents in their grace stay as they are: the next start zeroes
	 * every byte no recovered lease holds. */
	while ((l = TAILQ_FIRST(&lc->settling))) {
		TAILQ_REMOVE(&lc->settling, l, state_link);
		free(l);
	}
	while ((l = TAILQ_FIRST(&lc->quarantined))) {
		TAILQ_REMOVE(&lc->quarantined, l, state_link);
		free(l);
	}
	while ((l = rmp_lease_table_first(lc->table))) {
		rmp_lease_table_del(lc->table, l);
		while ((k = TAILQ_FIRST(&l->keys))) {
			TAILQ_REMOVE(&l->keys, k, lease_link);
			rmp_key_free(k);
		}
		free(l);
	}
	rmp_lease_table_free(lc->table);
	if (lc->expiry_ev)
		event_free(lc->expiry_ev);
	if (lc->revoke_ev)
		event_free(lc->revoke_ev);
	if (lc->settle_ev)
		event_free(lc->settle_ev);
	free(lc);
}

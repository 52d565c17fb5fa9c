/* SPDX-License-Identifier: MIT */
/* lifecycle.c -- the one owner of a lease's life, grant to reuse: the
 * requests, the operators' calls, the whole (lifecycle_int.h names the
 * module's other files). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <event2/event.h>

#include "journal.h"
#include "lifecycle.h"
#include "lifecycle_int.h"
#include "log.h"
#include "pool.h"
#include "tenant.h"
#include "util.h"
#include "zero.h"

/* What a revocation by rmpoolctl is by (LC_BY_OPERATOR): no holder. */
const struct rmp_holder lc_by_operator;

void rmp_lifecycle_on_key_wc(struct rmp_lifecycle *lc, struct rmp_key *k,
			     enum rmp_wr_tag tag, const struct ibv_wc *wc)
{
	rmp_keys_on_wc(&lc->keys, k, tag, wc);
	lc_revoke_timer_arm(lc);
}

bool rmp_holder_current(const struct rmp_holder *h)
{
	return lc_holder_current(h);
}

/* ----------------------------------------------------------- requests */

/* request_ttl_ms -- the lifetime asked for (0 = default), within the
 * bounds. */
static int request_ttl_ms(const struct rmp_lifecycle *lc, uint32_t ttl_s,
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

/*
 * place -- l's extent: in the pool of h's device, or when that has no
 * room and the request allows it (RMP_LEASE_F_SPILL), in the first other
 * pool that has. 0 or rmp_pool_get's error (-ENOSPC: nowhere).
 */
static int place(struct rmp_lifecycle *lc, const struct rmp_holder *h,
		 const struct rmp_alloc_req *r, uint64_t align,
		 struct rmp_lease *l)
{
	unsigned home = h->dev < lc->npools ? h->dev : 0;
	int ret;

	l->pool = lc->pools[home];
	ret = rmp_pool_get(l->pool, r->length, align, &l->ext);
	if (ret != -ENOSPC || !(r->flags & RMP_LEASE_F_SPILL))
		return ret;
	for (unsigned i = 0; i < lc->npools; i++) {
		if (i == home)
			continue;
		l->pool = lc->pools[i];
		ret = rmp_pool_get(l->pool, r->length, align, &l->ext);
		if (ret != -ENOSPC) {
			if (ret == 0)
				l->flags |= RMP_LEASE_F_SPILLED;
			return ret;
		}
	}
	return ret;
}

/* room_returning -- no pool r may use has room for it now, but one
 * would with the bytes of the leases ending (being revoked or zeroed):
 * the client asks again shortly instead of taking the pool for full. */
static bool room_returning(const struct rmp_lifecycle *lc,
			   const struct rmp_holder *h,
			   const struct rmp_alloc_req *r)
{
	unsigned home = h->dev < lc->npools ? h->dev : 0;
	struct rmp_pool_stats st;

	for (unsigned i = 0; i < lc->npools; i++) {
		if ((i != home && !(r->flags & RMP_LEASE_F_SPILL)) ||
		    !lc->returning_bytes[i])
			continue;
		rmp_pool_stats(lc->pools[i], &st);
		if (st.free_bytes + lc->returning_bytes[i] >= r->length)
			return true;
	}
	return false;
}

/* no_room -- the refusal of r, which no pool it may use has room for:
 * -ENOSPC, with RMP_DETAIL_RETURNING when leases ending would make the
 * room; or -EDQUOT when the tenant could not take it either (that is
 * the answer, not a wait). */
static int no_room(struct rmp_lifecycle *lc, struct rmp_holder *h,
		   const struct rmp_alloc_req *r, unsigned *detail)
{
	if (!room_returning(lc, h, r) ||
	    rmp_tenant_charge(h->tenant, r->length, detail))
		return *detail ? -EDQUOT : -ENOSPC;
	rmp_tenant_uncharge(h->tenant, r->length);
	*detail = RMP_DETAIL_RETURNING;
	return -ENOSPC;
}

/* largest_pool -- the size of the largest pool: no lease can be larger. */
static uint64_t largest_pool(const struct rmp_lifecycle *lc)
{
	uint64_t max = 0;

	for (unsigned i = 0; i < lc->npools; i++)
		max = RMP_MAX(max, lc->pools[i]->size);
	return max;
}

int rmp_lifecycle_grant(struct rmp_lifecycle *lc, struct rmp_holder *h,
			const struct rmp_alloc_req *r, struct rmp_lease **out,
			struct rmp_key **key, unsigned *detail)
{
	const struct rmp_config *cfg = lc->cfg;
	uint64_t align = r->alignment ? r->alignment : cfg->lease.alignment;
	uint64_t max = cfg->lease.max_lease ? cfg->lease.max_lease :
		       largest_pool(lc);
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
	ret = request_ttl_ms(lc, r->ttl_s, &ttl);
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
	TAILQ_INIT(&l->revoking);
	l->flags = r->flags & ~RMP_LEASE_F_SPILL;
	ret = place(lc, h, r, RMP_MAX(align, 64), l);
	if (ret == -ENOSPC)
		ret = no_room(lc, h, r, detail);
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
	ret = lc_journal_put(lc, l);
	if (ret) {
		log_warn("%s: lease journal full ([pool] max_leases = %u): "
			 "ALLOC refused", h->label, lc->cfg->pool.max_leases);
		*detail = RMP_DETAIL_SERVER_LEASES;
		goto err_unindex;
	}
	ret = give_key(lc, h, l, l->access, key, detail);
	if (ret)
		goto err_unindex;
	lc_schedule_expiry(lc);
	lc->n.grants++;
	lc->leased_bytes += l->ext.length;
	audit(h, l->tenant, "grant", l->id, "bytes=%" PRIu64 " ttl_ms=%"
	      PRIu64 " access=%#x%s", l->ext.length, ttl, l->access,
	      (l->flags & RMP_LEASE_F_EPHEMERAL) ? " ephemeral" :
	      (l->flags & RMP_LEASE_F_AUTO_RENEW) ? " auto-renew" : "");
	*out = l;
	return 0;

err_unindex:
	if (l->pool->journal)
		rmp_journal_drop(l->pool->journal, &l->jslot);
	rmp_lease_table_del(lc->table, l);
err_uncharge:
	rmp_tenant_uncharge(h->tenant, l->ext.length);
err_release:
	/* Never reachable by any key: no zeroing needed beyond the pool's
	 * own invariant that free extents are zero. */
	rmp_pool_release(l->pool, &l->ext);
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
		return !l && lc_recently_expired(lc, id, true, secret) ?
		       -EKEYEXPIRED : -ENOENT;
	if (l->tenant != h->tenant) {
		*detail = RMP_DETAIL_TENANT;
		audit(h, h->tenant, "deny", id, "owner=%s", l->tenant->name);
		return -EPERM;
	}
	/* Past its deadline but one the next tick renews is alive. */
	if (l->deadline_ms <= rmp_now_ms() && !lc_renews_itself(l))
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
	ret = request_ttl_ms(lc, ttl_s, &ttl);
	if (ret)
		return ret;
	l->ttl_ms = ttl;
	lc_set_deadline(lc, l, rmp_now_ms() + ttl);
	lc_schedule_expiry(lc);
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
	lc_end_lease(lc, l, "freed", h);
	lc_schedule_expiry(lc);
	return 0;
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
	if (!l->owner_holder || lc_key_of(l, l->owner_holder))
		return;
	if (l->flags & RMP_LEASE_F_EPHEMERAL) {
		audit(h, l->tenant, "end", l->id, "why=%s",
		      "ephemeral-owner-lost-its-key");
		lc_end_lease(lc, l, "its owner lost its key", h);
		return;
	}
	l->owner_holder = NULL;
}

/* ------------------------------------------------------------ orphans */

/* orphan_timer_arm -- the orphan timer fires when the first orphan's
 * grace is over (or never, with none). */
static void orphan_timer_arm(struct rmp_lifecycle *lc)
{
	struct rmp_lease *l = TAILQ_FIRST(&lc->orphans);
	uint64_t now = rmp_now_ms();

	if (!l) {
		event_del(lc->orphan_ev);
		return;
	}
	lc_arm_timer(lc->orphan_ev, &lc->orphan_at_ms, now,
		     l->orphan_until_ms > now ? l->orphan_until_ms - now : 0);
}

/* orphan -- ephemeral l lost its owner h through no fault of h's: it
 * waits EPHEMERAL_GRACE_MS for an ATTACH of its tenant (adopt). */
static void orphan(struct rmp_lifecycle *lc, struct rmp_lease *l,
		   const struct rmp_holder *h)
{
	l->orphan_until_ms = rmp_now_ms() + EPHEMERAL_GRACE_MS;
	TAILQ_INSERT_TAIL(&lc->orphans, l, state_link);
	audit(h, l->tenant, "orphan", l->id, "grace_ms=%u",
	      EPHEMERAL_GRACE_MS);
	orphan_timer_arm(lc);
}

/* adopt -- h attached orphan l: l ends with h's connection from now on. */
static void adopt(struct rmp_lifecycle *lc, struct rmp_lease *l,
		  struct rmp_holder *h)
{
	TAILQ_REMOVE(&lc->orphans, l, state_link);
	l->orphan_until_ms = 0;
	l->owner_holder = h;
	audit(h, l->tenant, "adopt", l->id, "owner=%s", h->name);
	orphan_timer_arm(lc);
}

/* lc_on_orphans -- end the orphans whose grace is over: nobody came. */
void lc_on_orphans(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;
	uint64_t now = rmp_now_ms();
	struct rmp_lease *l;

	(void)fd;
	(void)what;
	while ((l = TAILQ_FIRST(&lc->orphans)) && l->orphan_until_ms <= now) {
		audit(NULL, l->tenant, "end", l->id, "why=%s",
		      "ephemeral-not-adopted");
		lc_end_lease(lc, l, "its connection failed and nobody "
			     "attached it in time", LC_BY_NOBODY);
	}
	orphan_timer_arm(lc);
	lc_schedule_expiry(lc);
}

int rmp_lifecycle_attach(struct rmp_lifecycle *lc, struct rmp_holder *h,
			 const struct rmp_attach_req *r, struct rmp_lease **out,
			 struct rmp_key **key, unsigned *detail,
			 uint64_t *fence)
{
	bool exclusive = r->flags & RMP_ATTACH_F_EXCLUSIVE;
	struct rmp_key *k, *next, *mine;
	struct rmp_lease *l;
	uint32_t access;
	unsigned others = 0;
	int ret;

	*fence = 0;
	if (r->flags & ~RMP_ATTACH_F_ALL || r->access & ~RMP_ACC_ALL)
		return -EINVAL;
	ret = tenant_lease(lc, h, r->id, r->secret, &l, detail);
	if (ret)
		return ret;
	access = r->access ? r->access : l->access;
	if (access & ~l->access)
		return -EACCES;
	/* A member of a cluster lease attached by a record older than one
	 * its group was attached by (rolled back, or a repair's fence got
	 * here first): refused before any key moves, so that a stale holder
	 * cannot fence anybody. A newer epoch is kept (in the journal too). */
	if (r->epoch > INT64_MAX) /* a record's epochs end there */
		return -EINVAL;
	if (r->epoch && r->epoch < l->group_epoch) {
		*detail = RMP_DETAIL_EPOCH;
		return -ESTALE;
	}
	/* A takeover of a lease whose key could not be proven dead can
	 * promise nothing: refused before any key moves (lc_fence_begin
	 * would answer -EIO after the takeover's work). */
	if (exclusive && l->tainted)
		return -EIO;
	if (r->epoch > l->group_epoch) {
		l->group_epoch = r->epoch;
		lc_journal_put(lc, l);
	}
	/* Takeover: every other key is revoked (each settles on its own)
	 * before the new one is granted. */
	if (exclusive) {
		for (k = TAILQ_FIRST(&l->keys); k; k = next) {
			next = TAILQ_NEXT(k, lease_link);
			if (k->holder != h) {
				lc_drop_key(lc, k, h);
				others++;
			}
		}
	}
	mine = lc_key_of(l, h);
	if (mine && mine->access == access) {
		k = mine;
	} else {
		/* A holder has one key per lease: a new access replaces it. */
		if (mine)
			lc_drop_key(lc, mine, h);
		ret = give_key(lc, h, l, access, &k, detail);
		if (ret) {
			owner_lost_key(lc, l, h);
			return ret;
		}
	}
	/* An orphan's tenant came back for it. */
	if (l->orphan_until_ms)
		adopt(lc, l, h);
	if (exclusive) {
		l->owner_holder = h;
		lc->n.takeovers++;
		audit(h, l->tenant, "takeover", l->id, "revoked=%u access=%#x",
		      others, access);
		/* Answered once no key revoked before reaches the bytes. */
		ret = lc_fence_begin(lc, h, l, k, fence);
		if (ret)
			return ret;
	} else {
		lc->n.attaches++;
		audit(h, l->tenant, "attach", l->id, "holders=%u access=%#x",
		      l->nkeys, access);
	}
	*out = l;
	*key = k;
	return 0;
}

void rmp_lifecycle_detach(struct rmp_lifecycle *lc, struct rmp_holder *h,
			  bool grace)
{
	struct rmp_lease *l;
	struct rmp_key *k;

	/* Nobody to answer any more. */
	lc_fence_holder_gone(lc, h);
	/* A window is bound to h's QP; a region key was handed to h's
	 * client: no key may outlive its connection. ATTACH grants a fresh
	 * one. */
	while ((k = TAILQ_FIRST(&h->keys))) {
		l = k->lease;
		lc_drop_key(lc, k, h);
		if (l->owner_holder == h) {
			l->owner_holder = NULL;
			if ((l->flags & RMP_LEASE_F_EPHEMERAL) && grace) {
				orphan(lc, l, h);
			} else if (l->flags & RMP_LEASE_F_EPHEMERAL) {
				audit(h, l->tenant, "end", l->id, "why=%s",
				      "ephemeral-connection-closed");
				lc_end_lease(lc, l, "its connection closed", h);
				continue;
			}
		}
		/* An auto-renew lease gets one more ttl from the loss of its
		 * last holder: time for a restarted client to attach (none
		 * once its tenant is removed: nobody may attach). */
		if ((l->flags & RMP_LEASE_F_AUTO_RENEW) && l->nkeys == 0 &&
		    l->tenant->usable)
			lc_set_deadline(lc, l, rmp_now_ms() + lc_renewal_ms(lc, l));
	}
	rmp_keys_holder_dead(&lc->keys, h);
	lc_revoke_timer_arm(lc);
	lc_schedule_expiry(lc);
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
		lc_end_lease(lc, l, why, LC_BY_NOBODY);
		n++;
	}
	if (n)
		log_info("revoked %" PRIu64 " lease(s): %s", n, why);
	lc_schedule_expiry(lc);
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
	lc_remember_expired(lc, l);
	lc->n.revocations++;
	audit(NULL, l->tenant, "revoke", l->id, "bytes=%" PRIu64
	      " holders=%u by=\"%s\"", l->ext.length, l->nkeys, who);
	lc_end_lease(lc, l, "revoked by the operator", LC_BY_OPERATOR);
	lc_schedule_expiry(lc);
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
	lc_set_deadline(lc, l, rmp_now_ms() + ttl);
	lc_schedule_expiry(lc);
	audit(NULL, l->tenant, "extend", l->id, "ttl_ms=%" PRIu64
	      " by=\"%s\"", ttl, who);
	return 0;
}

/* Leases of one pool, counted by rmp_lifecycle_pool_stats. */
struct pool_count {
	const struct rmp_pool *pool;
	uint64_t leases, bytes;
};

static void count_in_pool(struct rmp_lease *l, void *arg)
{
	struct pool_count *pc = arg;

	if (l->pool == pc->pool) {
		pc->leases++;
		pc->bytes += l->ext.length;
	}
}

void rmp_lifecycle_pool_stats(const struct rmp_lifecycle *lc,
			      const struct rmp_pool *pool, uint64_t *leases,
			      uint64_t *bytes)
{
	struct pool_count pc = { .pool = pool };

	rmp_lease_table_foreach(lc->table, count_in_pool, &pc);
	*leases = pc.leases;
	*bytes = pc.bytes;
}

void rmp_lifecycle_config_changed(struct rmp_lifecycle *lc)
{
	lc_schedule_expiry(lc);
}

bool rmp_lifecycle_persistent(const struct rmp_lifecycle *lc)
{
	return lc->persistent;
}

struct rmp_lifecycle *rmp_lifecycle_new(const struct rmp_lifecycle_params *p)
{
	struct rmp_lifecycle *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return NULL;
	lc->base = p->base;
	lc->cfg = p->cfg;
	if (p->npools == 0 || p->npools > RMP_DEVICES_MAX) {
		free(lc);
		return NULL;
	}
	lc->npools = p->npools;
	for (unsigned i = 0; i < p->npools; i++)
		lc->pools[i] = p->pools[i];
	lc->persistent = p->pools[0]->journal != NULL;
	rmp_keys_init(&lc->keys, p->keys_mode,
		      &p->cfg->server.revoke_timeout_ms, lc_on_key_settled, lc);
	lc->tenants = p->tenants;
	TAILQ_INIT(&lc->ending);
	TAILQ_INIT(&lc->settling);
	TAILQ_INIT(&lc->quarantined);
	TAILQ_INIT(&lc->fences);
	TAILQ_INIT(&lc->fences_due);
	TAILQ_INIT(&lc->orphans);
	lc->table = rmp_lease_table_new();
	lc->expiry_ev = evtimer_new(p->base, lc_on_expiry, lc);
	lc->revoke_ev = evtimer_new(p->base, lc_on_revoke_timeout, lc);
	lc->settle_ev = evtimer_new(p->base, lc_on_settle, lc);
	lc->fence_ev = evtimer_new(p->base, lc_on_fence, lc);
	lc->orphan_ev = evtimer_new(p->base, lc_on_orphans, lc);
	lc->zeroer = rmp_zeroer_new(p->base, lc_on_zeroed, lc);
	if (!lc->table || !lc->expiry_ev || !lc->revoke_ev || !lc->settle_ev ||
	    !lc->fence_ev || !lc->orphan_ev || !lc->zeroer) {
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
	lc_fences_free(lc);
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
	if (lc->fence_ev)
		event_free(lc->fence_ev);
	if (lc->orphan_ev)
		event_free(lc->orphan_ev);
	free(lc);
}

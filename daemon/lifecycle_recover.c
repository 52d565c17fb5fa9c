/* SPDX-License-Identifier: MIT */
/* lifecycle_recover.c -- a restart: the journal's leases adopted, the
 * rest of the pool zeroed. */
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

/* The recovery of one pool's journal. */
struct recovery {
	struct rmp_lifecycle *lc;
	struct rmp_pool *pool;
	uint64_t now, zeroed_to, zeroed, bytes, n, no_tenant, refused;
	bool adopted;
};

/* zero_to -- zero the pool from where the last recovered lease ended up
 * to end: nothing there is a live lease's. */
static void zero_to(struct recovery *rc, uint64_t end)
{
	if (rc->adopted && end > rc->zeroed_to) {
		memset(rc->pool->base + rc->zeroed_to, 0,
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
	TAILQ_INIT(&l->revoking);
	l->pool = rc->pool;
	l->ext.offset = r->offset;
	l->ext.length = r->length;
	/* The id first: a record refused for it must not keep its extent
	 * taken (no lease would ever give it back). */
	if (rmp_lease_table_find(lc->table, r->id) ||
	    rmp_pool_take(rc->pool, &l->ext)) {
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
	l->group_epoch = r->group_epoch;
	/* Its connection is gone: an auto-renewed lease lives one more ttl
	 * from now, time for its holder to attach again. */
	l->deadline_ms = (l->flags & RMP_LEASE_F_AUTO_RENEW) ?
			 rc->now + lc_renewal_ms(lc, l) : r->deadline_ms;
	/* No grant or renew sets a deadline past ttl_max from its time: one
	 * further out is damage that checks out, or crafted. */
	if (l->deadline_ms - rc->now > lc->cfg->lease.ttl_max_ms) {
		log_warn("lease %016" PRIx64 ": journal deadline beyond "
			 "[lease] ttl_max (%" PRIu64 " s away): cut to %" PRIu64
			 " s", r->id, (l->deadline_ms - rc->now) / 1000,
			 lc->cfg->lease.ttl_max_ms / 1000);
		l->deadline_ms = rc->now + lc->cfg->lease.ttl_max_ms;
	}
	if (rmp_lease_table_add(lc->table, l)) {
		rmp_pool_release(rc->pool, &l->ext);
		goto drop;
	}
	lc_journal_put(lc, l);
	rmp_tenant_adopt(t, l->ext.length);
	lc->leased_bytes += l->ext.length;
	zero_to(rc, l->ext.offset);
	rc->zeroed_to = RMP_MAX(rc->zeroed_to, l->ext.offset + l->ext.length);
	rc->bytes += l->ext.length;
	rc->n++;
	return;
drop:
	free(l);
	rmp_journal_drop(rc->pool->journal, &s);
}

/* recover_pool -- rmp_lifecycle_recover for one pool. */
static int recover_pool(struct rmp_lifecycle *lc, struct rmp_pool *pool)
{
	struct recovery rc = { .lc = lc, .pool = pool, .now = rmp_now_ms(),
			       .adopted = pool->adopted };
	struct rmp_journal_stats st = { 0 };
	uint64_t start = rmp_now_ns();
	int ret;

	if (pool->journal && pool->journal_found) {
		ret = rmp_journal_recover(pool->journal, rc.now, adopt, &rc);
		/*
		 * Nothing was read: the records and their bytes are as the
		 * last run left them. Going on would zero the bytes but keep
		 * the records, with no free one for new grants; an ephemeral
		 * lease (not journaled) could then get the bytes of one, and
		 * the next start adopt that record over its data.
		 */
		if (ret) {
			log_err("lease journal of %s's pool: %s recovering its "
				"leases (it needs %zu MiB for [pool] max_leases "
				"= %" PRIu32 "): not starting, so that they and "
				"their bytes stay for a start that has the "
				"memory; to start without them, remove the "
				"state file (with fdstore: systemctl stop)",
				pool->device, strerror(-ret),
				(rmp_journal_recover_bytes(pool->journal) +
				 (1u << 20) - 1) >> 20,
				lc->cfg->pool.max_leases);
			return ret;
		}
		rmp_journal_stats(pool->journal, &st);
	}
	/* Whatever no recovered lease covers was an earlier process's. */
	zero_to(&rc, pool->size);
	if (!pool->adopted)
		return 0;
	log_notice("%s's pool: recovered %" PRIu64 " lease(s), %" PRIu64
		   " bytes, from the journal; not recovered: %u expired, %u "
		   "damaged, %u invalid, %u overlapping, %" PRIu64 " of unknown "
		   "tenants, %" PRIu64 " refused; %" PRIu64 " MiB zeroed; %"
		   PRIu64 " ms", pool->device, rc.n, rc.bytes, st.expired,
		   st.damaged, st.invalid, st.overlapped, rc.no_tenant,
		   rc.refused, rc.zeroed >> 20,
		   (rmp_now_ns() - start) / 1000000u);
	return 0;
}

int rmp_lifecycle_recover(struct rmp_lifecycle *lc)
{
	int ret;

	/*
	 * A failure leaves the pools before it recovered: the start stops
	 * and the daemon frees them (their journals keep their records).
	 */
	for (unsigned i = 0; i < lc->npools; i++) {
		ret = recover_pool(lc, lc->pools[i]);
		if (ret)
			return ret;
	}
	lc_schedule_expiry(lc);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* lifecycle_expiry.c -- deadlines, expiry, and the journal records that
 * keep them. */
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

/* ------------------------------------------------------------ journal */

/*
 * lc_journal_put -- record l as it is now, so it outlives the process.
 * Ephemeral leases are not kept: they end with their connection, and a
 * restart ends every connection. -ENOSPC when the journal is full.
 */
int lc_journal_put(struct rmp_lifecycle *lc, struct rmp_lease *l)
{
	struct rmp_journal_lease r;

	(void)lc;
	if (!l->pool->journal || (l->flags & RMP_LEASE_F_EPHEMERAL))
		return 0;
	memset(&r, 0, sizeof(r));
	r.id = l->id;
	r.secret = l->secret;
	r.offset = l->ext.offset;
	r.length = l->ext.length;
	r.deadline_ms = l->deadline_ms;
	r.ttl_ms = l->ttl_ms;
	r.access = l->access;
	/* Not SPILLED: an older rmpoold (a downgrade) would drop the record
	 * as invalid; where the lease is follows from the file it is in. */
	r.flags = l->flags & ~RMP_LEASE_F_SPILLED;
	rmp_strlcpy(r.tenant, l->tenant->name, sizeof(r.tenant));
	rmp_strlcpy(r.owner, l->owner, sizeof(r.owner));
	r.group_epoch = l->group_epoch;
	return rmp_journal_put(l->pool->journal, &r, &l->jslot);
}

/* lc_set_deadline -- a new deadline for l, in the table and the journal. */
void lc_set_deadline(struct rmp_lifecycle *lc, struct rmp_lease *l,
			 uint64_t deadline_ms)
{
	rmp_lease_table_set_deadline(lc->table, l, deadline_ms);
	/* A rewrite of l's own record: it cannot run out of room. */
	lc_journal_put(lc, l);
}

/* ------------------------------------------------------------- expiry */

void lc_schedule_expiry(struct rmp_lifecycle *lc)
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
	lc_arm_timer(lc->expiry_ev, &lc->expiry_at_ms, now, wait);
}

/*
 * lc_renewal_ms -- the time an automatic renewal grants l: its ttl, but no
 * more than ttl_max says now (a reload may have lowered it).
 */
uint64_t lc_renewal_ms(const struct rmp_lifecycle *lc,
			   const struct rmp_lease *l)
{
	return RMP_MIN(l->ttl_ms, lc->cfg->lease.ttl_max_ms);
}

/*
 * lc_renews_itself -- is l an auto-renew lease held by a connection that may
 * still get time? A key whose proof a reload voided keeps l alive only to
 * its deadline.
 */
bool lc_renews_itself(const struct rmp_lease *l)
{
	const struct rmp_key *k;

	if (!(l->flags & RMP_LEASE_F_AUTO_RENEW))
		return false;
	TAILQ_FOREACH(k, &l->keys, lease_link)
		if (lc_holder_current(k->holder))
			return true;
	return false;
}

void lc_on_expiry(int fd, short what, void *arg)
{
	struct rmp_lifecycle *lc = arg;
	uint64_t now = rmp_now_ms(), n = 0;
	struct rmp_lease *l;

	(void)fd;
	(void)what;
	while ((l = rmp_lease_table_first(lc->table)) &&
	       l->deadline_ms <= now) {
		/* Auto-renew: alive as long as a holder is. */
		if (lc_renews_itself(l)) {
			lc_set_deadline(lc, l, now + lc_renewal_ms(lc, l));
			continue;
		}
		lc_remember_expired(lc, l);
		lc->n.expiries++;
		audit(NULL, l->tenant, "expire", l->id, "bytes=%" PRIu64,
		      l->ext.length);
		lc_end_lease(lc, l, "expired", LC_BY_NOBODY);
		n++;
	}
	if (n)
		log_info("%" PRIu64 " lease(s) expired and revoked", n);
	lc_schedule_expiry(lc);
}


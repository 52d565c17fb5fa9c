/* SPDX-License-Identifier: MIT */
/* lifecycle_lookup.c -- what the other lifecycle files look up and none
 * of them owns: a holder's key on a lease, the description an ATTACH or
 * ALLOC answers with, and the ring of leases that ended recently (a late
 * request hears -EKEYEXPIRED, not -ENOENT). It calls no other lifecycle
 * file: the fence, the end and the expiry of a lease all stand on it. */
#include <string.h>

#include "lifecycle_int.h"
#include "util.h"

/* lc_key_of -- h's live key on l, or NULL. */
struct rmp_key *lc_key_of(const struct rmp_lease *l,
			  const struct rmp_holder *h)
{
	struct rmp_key *k;

	TAILQ_FOREACH(k, &l->keys, lease_link)
		if (k->holder == h)
			return k;
	return NULL;
}

void rmp_lifecycle_describe(const struct rmp_lifecycle *lc,
			    const struct rmp_lease *l, const struct rmp_key *k,
			    struct rmp_lease_desc *d)
{
	uint64_t now = rmp_now_ms();

	memset(d, 0, sizeof(*d));
	d->id = l->id;
	d->secret = l->secret;
	d->addr = rmp_lease_remote_addr(l);
	d->length = l->ext.length;
	d->ttl_ms = l->deadline_ms > now ? l->deadline_ms - now : 0;
	d->rkey = k->rkey;
	d->access = k->access;
	/* Not SPILLED: an ATTACH may come from a client older than the
	 * flag, which refuses flags it does not know (request.c puts it in
	 * the reply to the ALLOC that asked for SPILL). */
	d->flags = l->flags & ~RMP_LEASE_F_SPILLED;
	d->holders = l->nkeys;
	d->epoch = l->group_epoch;
}

/* lc_remember_expired -- later requests for l get -EKEYEXPIRED. */
void lc_remember_expired(struct rmp_lifecycle *lc,
			 const struct rmp_lease *l)
{
	lc->expired[lc->expired_next].id = l->id;
	lc->expired[lc->expired_next].secret = l->secret;
	lc->expired_next = (lc->expired_next + 1) % EXPIRED_RING;
}

/* lc_recently_expired -- was id (with secret, if known) among them? */
bool lc_recently_expired(const struct rmp_lifecycle *lc, uint64_t id,
			 bool secret_known, uint64_t secret)
{
	/* Linear, but only on the rare miss path of a late request. */
	for (uint32_t i = 0; i < EXPIRED_RING; i++)
		if (lc->expired[i].id == id && id != 0 &&
		    (!secret_known || lc->expired[i].secret == secret))
			return true;
	return false;
}

/* SPDX-License-Identifier: MIT */
/* guard.c -- failures per peer block (and tenant), and their cool-down. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "proto.h"
#include "util.h"

#define WINDOW_MS 60000u

/* One subject: a block, or a tenant name from a block. */
struct peer {
	char ip[RMP_PEER_BLOCK_LEN]; /* the block; "" = free slot */
	bool per_tenant;     /* tenant below, else the whole block */
	char tenant[RMP_TENANT_NAME_MAX + 1];
	uint64_t window_ms;  /* start of the counting window */
	unsigned count;      /* errors in the window */
	uint64_t until_ms;   /* refused until then */
	uint64_t seen_ms;
	uint64_t proven_ms;  /* a tenant name: its key proven then (0: no) */
	/* Log lines about the block (rmp_guard_may_log): each kind's count
	 * in the window ([1]: audit lines), and those not logged. */
	uint64_t log_window_ms;
	unsigned logged[2], suppressed;
};

struct rmp_guard {
	unsigned n;
	struct peer peers[];
};

struct rmp_guard *rmp_guard_new(unsigned slots)
{
	struct rmp_guard *g;

	if (slots == 0)
		slots = 1;
	g = calloc(1, sizeof(*g) + (size_t)slots * sizeof(g->peers[0]));
	if (g)
		g->n = slots;
	return g;
}

void rmp_guard_free(struct rmp_guard *g)
{
	free(g);
}

void rmp_peer_block(const char *ip, char *out, size_t len)
{
	static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct in6_addr a6;
	struct in_addr a4;
	char text[INET6_ADDRSTRLEN];

	if (inet_pton(AF_INET, ip, &a4) == 1) {
		inet_ntop(AF_INET, &a4, out, (socklen_t)len);
		return;
	}
	if (inet_pton(AF_INET6, ip, &a6) != 1) {
		rmp_strlcpy(out, ip, len);
		return;
	}
	if (!memcmp(a6.s6_addr, v4_mapped, sizeof(v4_mapped))) {
		memcpy(&a4, a6.s6_addr + 12, 4);
		inet_ntop(AF_INET, &a4, out, (socklen_t)len);
		return;
	}
	memset(a6.s6_addr + 8, 0, 8);
	inet_ntop(AF_INET6, &a6, text, sizeof(text));
	snprintf(out, len, "%s/64", text);
}

/* is -- p is the subject block/tenant (tenant NULL: the block). */
static bool is(const struct peer *p, const char *block, const char *tenant)
{
	return p->ip[0] && !strcmp(p->ip, block) &&
	       p->per_tenant == (tenant != NULL) &&
	       (!tenant || !strcmp(p->tenant, tenant));
}

static const struct peer *find(const struct rmp_guard *g, const char *block,
			       const char *tenant)
{
	for (unsigned i = 0; i < g->n; i++)
		if (is(&g->peers[i], block, tenant))
			return &g->peers[i];
	return NULL;
}

/* proven -- p is a tenant name that proved its key lately. */
static bool proven(const struct peer *p, uint64_t now_ms)
{
	return p->proven_ms && now_ms - p->proven_ms < RMP_GUARD_PROVEN_MS;
}

/* one_name -- p counts the failures of one tenant name (not those of a
 * whole block, or of any name from it). */
static bool one_name(const struct peer *p)
{
	return p->per_tenant && strcmp(p->tenant, RMP_GUARD_ANY_NAME);
}

/* evict_before -- whether a new subject should take slot a rather than
 * slot b: a free slot first, then those not cooling down (a guesser must
 * not end its own cool-down by bringing new subjects), among them one
 * tenant name's before a block's or any name's (whose counts hold the
 * failures of many names) -- but one that proved its key lately after
 * all: a guesser's new names must not push it out -- then the least
 * recently seen, or the cool-down that ends first. */
static bool evict_before(const struct peer *a, const struct peer *b,
			 uint64_t now_ms)
{
	bool a_cool = a->until_ms > now_ms, b_cool = b->until_ms > now_ms;
	bool a_kept = proven(a, now_ms), b_kept = proven(b, now_ms);

	if (!a->ip[0] || !b->ip[0])
		return !a->ip[0] && b->ip[0];
	if (a_cool != b_cool)
		return !a_cool;
	if (a_kept != b_kept)
		return !a_kept;
	if (one_name(a) != one_name(b))
		return one_name(a);
	return a_cool ? a->until_ms < b->until_ms : a->seen_ms < b->seen_ms;
}

/* slot_for -- the subject's slot, or the one it takes over. */
static struct peer *slot_for(struct rmp_guard *g, const char *block,
			     const char *tenant, uint64_t now_ms)
{
	struct peer *p = (struct peer *)find(g, block, tenant);
	struct peer *old = &g->peers[0];

	if (p)
		return p;
	for (unsigned i = 1; i < g->n; i++)
		if (evict_before(&g->peers[i], old, now_ms))
			old = &g->peers[i];
	memset(old, 0, sizeof(*old));
	rmp_strlcpy(old->ip, block, sizeof(old->ip));
	old->per_tenant = tenant != NULL;
	if (tenant)
		rmp_strlcpy(old->tenant, tenant, sizeof(old->tenant));
	return old;
}

/* seen -- the subject (ip's block, tenant) was seen at now_ms: its slot. */
static struct peer *seen(struct rmp_guard *g, const char *ip,
			 const char *tenant, uint64_t now_ms)
{
	char block[RMP_PEER_BLOCK_LEN];
	struct peer *p;

	rmp_peer_block(ip, block, sizeof(block));
	p = slot_for(g, block, tenant, now_ms);
	p->seen_ms = now_ms;
	return p;
}

unsigned rmp_guard_note(struct rmp_guard *g, const char *ip,
			const char *tenant, uint64_t now_ms,
			unsigned max_per_minute, uint64_t cooldown_ms,
			bool *cooldown_started)
{
	struct peer *p = seen(g, ip, tenant, now_ms);

	*cooldown_started = false;
	if (p->count == 0 || now_ms - p->window_ms >= WINDOW_MS) {
		p->window_ms = now_ms;
		p->count = 0;
	}
	p->count++;
	if (max_per_minute && p->count > max_per_minute &&
	    p->until_ms <= now_ms) {
		p->until_ms = now_ms + cooldown_ms;
		*cooldown_started = true;
	}
	return p->count;
}

/* left -- ms left of p's cool-down at now_ms (p NULL: none). */
static uint64_t left(const struct peer *p, uint64_t now_ms)
{
	return p && p->until_ms > now_ms ? p->until_ms - now_ms : 0;
}

void rmp_guard_proven(struct rmp_guard *g, const char *ip,
		      const char *tenant, uint64_t now_ms)
{
	if (tenant && tenant[0])
		seen(g, ip, tenant, now_ms)->proven_ms = now_ms ? now_ms : 1;
}

uint64_t rmp_guard_refusing(const struct rmp_guard *g, const char *ip,
			    const char *tenant, uint64_t now_ms)
{
	const struct peer *named = NULL;
	char block[RMP_PEER_BLOCK_LEN];
	uint64_t block_ms, any_ms, tenant_ms;

	rmp_peer_block(ip, block, sizeof(block));
	if (tenant)
		named = find(g, block, tenant);
	block_ms = left(find(g, block, NULL), now_ms);
	any_ms = named && proven(named, now_ms) ? 0 :
		 left(find(g, block, RMP_GUARD_ANY_NAME), now_ms);
	tenant_ms = left(named, now_ms);
	return RMP_MAX(RMP_MAX(block_ms, any_ms), tenant_ms);
}

bool rmp_guard_may_log(struct rmp_guard *g, const char *ip, uint64_t now_ms,
		       bool audit, unsigned *suppressed)
{
	struct peer *p = seen(g, ip, NULL, now_ms);

	*suppressed = 0;
	if (!p->log_window_ms ||
	    now_ms - p->log_window_ms >= RMP_GUARD_LOG_WINDOW_MS) {
		*suppressed = p->suppressed;
		p->log_window_ms = now_ms ? now_ms : 1;
		p->logged[0] = p->logged[1] = 0;
		p->suppressed = 0;
	}
	if (p->logged[audit] < RMP_GUARD_LOG_BURST) {
		p->logged[audit]++;
		return true;
	}
	p->suppressed++;
	return false;
}

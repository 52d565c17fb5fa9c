/* SPDX-License-Identifier: MIT */
/* guard.c -- remote access errors per peer address, and their cool-down. */
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "util.h"

#define WINDOW_MS 60000u
#define IP_LEN 64

struct peer {
	char ip[IP_LEN];     /* "" = free slot */
	uint64_t window_ms;  /* start of the counting window */
	unsigned count;      /* errors in the window */
	uint64_t until_ms;   /* refused until then */
	uint64_t seen_ms;
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

static const struct peer *find(const struct rmp_guard *g, const char *ip)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->peers[i].ip[0] && !strcmp(g->peers[i].ip, ip))
			return &g->peers[i];
	return NULL;
}

/* slot_for -- ip's slot, or a free / least recently seen one for it. */
static struct peer *slot_for(struct rmp_guard *g, const char *ip)
{
	struct peer *p = (struct peer *)find(g, ip), *old = &g->peers[0];

	if (p)
		return p;
	for (unsigned i = 0; i < g->n; i++) {
		p = &g->peers[i];
		if (!p->ip[0]) {
			old = p;
			break;
		}
		if (p->seen_ms < old->seen_ms)
			old = p;
	}
	memset(old, 0, sizeof(*old));
	rmp_strlcpy(old->ip, ip, sizeof(old->ip));
	return old;
}

unsigned rmp_guard_note(struct rmp_guard *g, const char *ip, uint64_t now_ms,
			unsigned max_per_minute, uint64_t cooldown_ms,
			bool *cooldown_started)
{
	struct peer *p = slot_for(g, ip);

	*cooldown_started = false;
	p->seen_ms = now_ms;
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

uint64_t rmp_guard_refusing(const struct rmp_guard *g, const char *ip,
			    uint64_t now_ms)
{
	const struct peer *p = find(g, ip);

	return p && p->until_ms > now_ms ? p->until_ms - now_ms : 0;
}

/* SPDX-License-Identifier: MIT */
/* group.c -- a mirrored or striped lease's member states (group.h). */
#include <errno.h>
#include <stddef.h>

#include "fault.h"
#include "group.h"

/*
 * member_set -- the one transition of a member's state. A new handle in
 * the slot (replaced) may start LIVE or LOST from any state; otherwise
 * only: LIVE -> SUSPECT, STALE, LOST; SUSPECT -> STALE, LOST, MISSED;
 * LOST -> STALE, MISSED; MISSED -> STALE. A STALE member leaves only by
 * a new handle (a repair's, or its own caught up): its bytes are old; a
 * MISSED one also by its mark.
 */
static void member_set(struct rmpc_group *g, unsigned i,
		       enum rmpc_member_state to, bool replaced)
{
	enum rmpc_member_state from = g->state[i];
	bool ok;

	if (replaced) {
		g->state[i] = to;
		return;
	}
	switch (from) {
	case RMPC_MEMBER_LIVE: /* not MISSED: a live member had the write */
		ok = to == RMPC_MEMBER_SUSPECT || to == RMPC_MEMBER_STALE ||
		     to == RMPC_MEMBER_LOST;
		break;
	case RMPC_MEMBER_SUSPECT:
		ok = to == RMPC_MEMBER_STALE || to == RMPC_MEMBER_LOST ||
		     to == RMPC_MEMBER_MISSED;
		break;
	case RMPC_MEMBER_LOST:
		ok = to == RMPC_MEMBER_STALE || to == RMPC_MEMBER_MISSED;
		break;
	case RMPC_MEMBER_MISSED:
		ok = to == RMPC_MEMBER_STALE;
		break;
	default: /* STALE */
		ok = false;
		break;
	}
	if (ok)
		g->state[i] = to;
}

void rmpc_member_failed(struct rmpc_group *g, unsigned i, int err,
			uint64_t now)
{
	enum rmpc_fault f = rmpc_fault_of(err);

	if (f != RMPC_FAULT_TRANSIENT && f != RMPC_FAULT_REVOKED) {
		member_set(g, i, RMPC_MEMBER_LOST, false);
		return;
	}
	if (g->state[i] != RMPC_MEMBER_LIVE)
		return; /* a suspect's tries are counted by rmpc_group_retry */
	member_set(g, i, RMPC_MEMBER_SUSPECT, false);
	g->suspect_ms[i] = now;
	rmpc_backoff_reset(&g->retry[i]);
	rmpc_backoff_fail(&g->retry[i], RMPC_MEMBER_RETRY_FIRST_MS,
			  RMPC_MEMBER_RETRY_MAX_MS, now);
}

bool rmpc_group_retry(struct rmpc_group *g, uint64_t now)
{
	bool due = false;

	for (unsigned i = 0; i < g->n; i++) {
		if ((g->state[i] != RMPC_MEMBER_SUSPECT &&
		     g->state[i] != RMPC_MEMBER_STALE) ||
		    !rmpc_backoff_due(&g->retry[i], now))
			continue;
		due = true;
		rmpc_backoff_fail(&g->retry[i], RMPC_MEMBER_RETRY_FIRST_MS,
				  RMPC_MEMBER_RETRY_MAX_MS, now);
	}
	return due;
}

void rmpc_group_tried(struct rmpc_group *g, uint64_t now)
{
	for (unsigned i = 0; i < g->n; i++) {
		if (g->state[i] == RMPC_MEMBER_STALE)
			rmpc_backoff_hold(&g->retry[i], now);
		if (g->state[i] != RMPC_MEMBER_SUSPECT)
			continue;
		if (g->member_timeout_ms &&
		    now - g->suspect_ms[i] >= g->member_timeout_ms)
			member_set(g, i, RMPC_MEMBER_LOST, false);
		else /* the next wait from the end of this try */
			rmpc_backoff_hold(&g->retry[i], now);
	}
}

void rmpc_member_lost(struct rmpc_group *g, unsigned i)
{
	member_set(g, i, RMPC_MEMBER_LOST, false);
}

void rmpc_member_stale(struct rmpc_group *g, unsigned i, uint64_t now)
{
	if (g->state[i] == RMPC_MEMBER_STALE)
		return; /* its catch-up's tries go on as they were */
	member_set(g, i, RMPC_MEMBER_STALE, false);
	rmpc_backoff_reset(&g->retry[i]);
	rmpc_backoff_fail(&g->retry[i], RMPC_MEMBER_RETRY_FIRST_MS,
			  RMPC_MEMBER_RETRY_MAX_MS, now);
}

void rmpc_member_missed(struct rmpc_group *g, unsigned i)
{
	member_set(g, i, RMPC_MEMBER_MISSED, false);
}

bool rmpc_member_owes(const struct rmpc_group *g, unsigned i)
{
	return g->state[i] == RMPC_MEMBER_MISSED;
}

struct rmp_lease *rmpc_member_swap(struct rmpc_group *g, unsigned i,
				   struct rmp_lease *m)
{
	struct rmp_lease *old = g->m[i];

	g->m[i] = m;
	member_set(g, i, m ? RMPC_MEMBER_LIVE : RMPC_MEMBER_LOST, true);
	rmpc_backoff_reset(&g->retry[i]);
	return old;
}

bool rmpc_member_live(const struct rmpc_group *g, unsigned i)
{
	return g->state[i] == RMPC_MEMBER_LIVE && g->m[i];
}

bool rmpc_member_away(const struct rmpc_group *g, unsigned i)
{
	return g->state[i] == RMPC_MEMBER_SUSPECT ||
	       g->state[i] == RMPC_MEMBER_LOST;
}

void rmpc_tally_add(struct rmpc_group *g, struct rmpc_tally *t, unsigned i,
		    int err, uint64_t now)
{
	unsigned s = i / g->replicas;

	if (err)
		rmpc_member_failed(g, i, err, now);
	t->first[s] = t->first[s] ? t->first[s] : err;
	t->ok[s] += !err;
}

int rmpc_tally_error(const struct rmpc_group *g, const struct rmpc_tally *t,
		     int none)
{
	if (g->ec_k) { /* one replica's stripes: k of them do */
		unsigned ok = 0, suspect = 0;
		int first = 0;

		for (unsigned s = 0; s < g->stripes; s++) {
			ok += t->ok[s];
			suspect += g->state[s] == RMPC_MEMBER_SUSPECT;
			first = first ? first : t->first[s];
		}
		if (ok >= g->ec_k)
			return 0;
		return first ? first : suspect ? -EHOSTUNREACH : none;
	}
	for (unsigned s = 0; s < g->stripes; s++)
		if (!t->ok[s])
			return t->first[s] ? t->first[s] :
			       rmpc_group_waits(g, s) ? -EHOSTUNREACH : none;
	return 0;
}

bool rmpc_group_waits(const struct rmpc_group *g, unsigned s)
{
	bool suspect = false;

	for (unsigned j = s * g->replicas; j < (s + 1) * g->replicas; j++)
		suspect = suspect || g->state[j] == RMPC_MEMBER_SUSPECT;
	return suspect && !rmpc_group_live(g, s);
}

unsigned rmpc_group_live(const struct rmpc_group *g, unsigned s)
{
	unsigned n = 0;

	for (unsigned j = s * g->replicas; j < (s + 1) * g->replicas; j++)
		n += rmpc_member_live(g, j);
	return n;
}

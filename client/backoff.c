/* SPDX-License-Identifier: MIT */
/* backoff.c -- the wait before trying again what failed (backoff.h). */
#include "backoff.h"

unsigned rmpc_backoff_fail(struct rmpc_backoff *b, unsigned first_ms,
			   unsigned max_ms, uint64_t now)
{
	unsigned next = b->ms ? 2 * b->ms : first_ms;

	if (next > max_ms || next < b->ms) /* the bound, or an overflow */
		next = max_ms;
	b->ms = next;
	b->at_ms = now + next;
	return next;
}

void rmpc_backoff_hold(struct rmpc_backoff *b, uint64_t now)
{
	b->at_ms = now + b->ms;
}

bool rmpc_backoff_due(const struct rmpc_backoff *b, uint64_t now)
{
	return now >= b->at_ms;
}

void rmpc_backoff_reset(struct rmpc_backoff *b)
{
	b->ms = 0;
	b->at_ms = 0;
}

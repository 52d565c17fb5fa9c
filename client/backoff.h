/* SPDX-License-Identifier: MIT */
/*
 * backoff.h -- the wait before trying again what failed: the first
 * failure waits first_ms, each next one twice the last, up to max_ms; a
 * success starts over. One rule for a client's reconnects, a rail's, a
 * cluster node's connects and a group member's return (pure: the caller
 * passes the time).
 */
#ifndef RMPC_BACKOFF_H
#define RMPC_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

struct rmpc_backoff {
	unsigned ms;    /* the last wait; 0: no failure since the last reset */
	uint64_t at_ms; /* not tried again before this */
};

/* rmpc_backoff_fail -- a failure at now: the next try waits first_ms,
 * or twice the last wait (at most max_ms). Returns the wait. */
unsigned rmpc_backoff_fail(struct rmpc_backoff *b, unsigned first_ms,
			   unsigned max_ms, uint64_t now);

/* rmpc_backoff_hold -- not tried at now (its way is known down): the
 * same wait again, from now. */
void rmpc_backoff_hold(struct rmpc_backoff *b, uint64_t now);

/* rmpc_backoff_due -- may it be tried at now? */
bool rmpc_backoff_due(const struct rmpc_backoff *b, uint64_t now);

/* rmpc_backoff_reset -- it worked: the next failure waits first_ms, and
 * a try is due at once. */
void rmpc_backoff_reset(struct rmpc_backoff *b);

#endif /* RMPC_BACKOFF_H */

/* SPDX-License-Identifier: MIT */
/* guard.h -- remote access errors per peer address, and their cool-down. */
#ifndef RMP_GUARD_H
#define RMP_GUARD_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A client that guesses rkeys causes remote access errors. The guard
 * counts them per peer IP address over one-minute windows; more than
 * max_per_minute starts a cool-down during which the listener refuses
 * that address. Guessing an 8-bit key tag then takes hours, not seconds,
 * and every error is in the log. Pure bookkeeping: no I/O.
 */
struct rmp_guard;

/* Remembers at most `slots` addresses (least recently seen evicted). */
struct rmp_guard *rmp_guard_new(unsigned slots);
void rmp_guard_free(struct rmp_guard *g);

/*
 * rmp_guard_note -- one access error from ip at now_ms. Returns the count
 * in the current window; sets *cooldown_started when this error started a
 * cool-down of cooldown_ms (max_per_minute 0: never).
 */
unsigned rmp_guard_note(struct rmp_guard *g, const char *ip, uint64_t now_ms,
			unsigned max_per_minute, uint64_t cooldown_ms,
			bool *cooldown_started);

/* rmp_guard_refusing -- ms left of ip's cool-down at now_ms (0: none). */
uint64_t rmp_guard_refusing(const struct rmp_guard *g, const char *ip,
			    uint64_t now_ms);

#endif /* RMP_GUARD_H */

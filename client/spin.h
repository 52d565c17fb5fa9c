/* SPDX-License-Identifier: MIT */
/* spin.h -- how long a waiting call polls before it sleeps. */
#ifndef RMPC_SPIN_H
#define RMPC_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* The least a wait polls (unless spin_max_us is smaller). */
#define RMPC_SPIN_MIN_NS 20000u

/*
 * Spinning pays when the wait ends while the CPU still polls: then no
 * interrupt, no wake-up and no system call lie on the path. So a kind of
 * wait polls about twice as long as its recent average, at least
 * RMPC_SPIN_MIN_NS; if that average is beyond max_ns / 2, spinning would
 * mostly burn CPU before sleeping anyway, so only the minimum is spent
 * (also for waits whose length says nothing: minimum_only). The average
 * includes waits that ended asleep, so after a slow spell the budget grows
 * to cover the waits again, and it shrinks as they get shorter.
 * max_ns = 0 never spins.
 */
uint64_t rmpc_spin_budget_ns(uint64_t avg_ns, uint64_t max_ns,
			     bool minimum_only);

/*
 * rmpc_spin_avg_ns -- the average after a wait that took took_ns: about
 * the last 8 waits, each counted as at most max_ns. One stall (a
 * preempted CPU, a large transfer between small ones) would otherwise
 * lift the average past max_ns / 2 for dozens of waits, and each of them
 * would sleep. avg_ns 0 means no wait yet.
 */
uint64_t rmpc_spin_avg_ns(uint64_t avg_ns, uint64_t took_ns, uint64_t max_ns);

#endif /* RMPC_SPIN_H */

/* SPDX-License-Identifier: MIT */
/* test_spin.c -- unit tests for the spin budget of a waiting call. */
#include "check.h"
#include "spin.h"

#define US 1000u
#define MAX (1000u * US) /* the default spin_max_us */

/* About twice the recent average, at least the minimum; past half the
 * maximum, only the minimum; 0 never spins. */
static void test_budget(void)
{
	CHECK_EQ(rmpc_spin_budget_ns(70 * US, MAX, false), 140 * US);
	CHECK_EQ(rmpc_spin_budget_ns(1 * US, MAX, false), RMPC_SPIN_MIN_NS);
	CHECK_EQ(rmpc_spin_budget_ns(500 * US, MAX, false), MAX);
	CHECK_EQ(rmpc_spin_budget_ns(501 * US, MAX, false), RMPC_SPIN_MIN_NS);
	CHECK_EQ(rmpc_spin_budget_ns(70 * US, MAX, true), RMPC_SPIN_MIN_NS);
	CHECK_EQ(rmpc_spin_budget_ns(70 * US, 5 * US, true), 5 * US);
	CHECK_EQ(rmpc_spin_budget_ns(70 * US, 0, false), 0);
}

/* The average follows the waits: the first sets it, then 1/8 a wait. */
static void test_average(void)
{
	uint64_t avg = rmpc_spin_avg_ns(0, 80 * US, MAX);

	CHECK_EQ(avg, 80 * US);
	avg = rmpc_spin_avg_ns(avg, 160 * US, MAX);
	CHECK_EQ(avg, 90 * US);
	/* Waits that get longer for good take the budget to the minimum. */
	for (int i = 0; i < 40; i++)
		avg = rmpc_spin_avg_ns(avg, 5000 * US, MAX);
	CHECK_EQ(rmpc_spin_budget_ns(avg, MAX, false), RMPC_SPIN_MIN_NS);
}

/* One stall among short waits: the very next wait still spins about
 * twice the short ones, not the minimum (which would make each of the
 * next ~30 waits sleep, as an unbounded average did). */
static void test_one_stall(void)
{
	uint64_t avg = 0;
	int spun = 0;

	for (int i = 0; i < 50; i++)
		avg = rmpc_spin_avg_ns(avg, 70 * US, MAX);
	avg = rmpc_spin_avg_ns(avg, 40000 * US, MAX);
	CHECK(rmpc_spin_budget_ns(avg, MAX, false) > 140 * US);
	for (int i = 0; i < 30; i++) {
		spun += rmpc_spin_budget_ns(avg, MAX, false) >= 140 * US;
		avg = rmpc_spin_avg_ns(avg, 70 * US, MAX);
	}
	CHECK_EQ(spun, 30);
}

int main(void)
{
	test_budget();
	test_average();
	test_one_stall();
	return check_done();
}

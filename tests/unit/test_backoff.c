/* SPDX-License-Identifier: MIT */
/* test_backoff.c -- unit tests for the wait before trying again
 * (client/backoff.c): doubling from the first step to the bound, no
 * overflow, a hold that does not double, a reset. */
#include <stdint.h>

#include "backoff.h"
#include "check.h"

static void test_doubling(void)
{
	struct rmpc_backoff b = { 0 };

	CHECK(rmpc_backoff_due(&b, 0));
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 5000), 100);
	CHECK_EQ(b.at_ms, 5100);
	CHECK(!rmpc_backoff_due(&b, 5099));
	CHECK(rmpc_backoff_due(&b, 5100));
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 6000), 200);
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 6000), 400);
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 6000), 800);
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 6000), 1000);
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 6000), 1000);
	CHECK_EQ(b.at_ms, 7000);
	/* a first step above the bound: the bound */
	rmpc_backoff_reset(&b);
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 50, 0), 50);
	/* no overflow near the top */
	b.ms = UINT32_MAX / 2 + 1;
	CHECK_EQ(rmpc_backoff_fail(&b, 100, UINT32_MAX, 0), UINT32_MAX);
}

static void test_hold_reset(void)
{
	struct rmpc_backoff b = { 0 };

	rmpc_backoff_fail(&b, 100, 1000, 0);
	rmpc_backoff_fail(&b, 100, 1000, 0);
	rmpc_backoff_hold(&b, 1000);
	CHECK_EQ(b.ms, 200);
	CHECK_EQ(b.at_ms, 1200);
	rmpc_backoff_reset(&b);
	CHECK(rmpc_backoff_due(&b, 0));
	CHECK_EQ(rmpc_backoff_fail(&b, 100, 1000, 0), 100);
}

int main(void)
{
	test_doubling();
	test_hold_reset();
	return check_done();
}

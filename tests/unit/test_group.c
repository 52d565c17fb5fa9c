/* SPDX-License-Identifier: MIT */
/* test_group.c -- unit tests for a mirrored or striped lease's member
 * states (client/group.c): every transition allowed, every one refused
 * (a stale member's old bytes never live again but by a new handle), a
 * new handle in a slot, and the tallies the data calls use. */
#include <errno.h>

#include "check.h"
#include "group.h"

/* Stand-ins for member handles: group.c never looks into them. */
static int handle[RMPC_MEMBERS_MAX];
#define H(i) ((struct rmp_lease *)&handle[i])

/* group -- 2 stripes x 2 replicas, every member LIVE. */
static struct rmpc_group group(void)
{
	struct rmpc_group g = { .stripes = 2, .replicas = 2, .n = 4 };

	for (unsigned i = 0; i < g.n; i++)
		g.m[i] = H(i);
	return g;
}

static void test_failed(void)
{
	struct rmpc_group g = group();

	/* the way failed: suspect; it did not: lost */
	rmpc_member_failed(&g, 0, -ETIMEDOUT);
	CHECK_EQ(g.state[0], RMPC_MEMBER_SUSPECT);
	rmpc_member_failed(&g, 1, -EKEYREVOKED);
	CHECK_EQ(g.state[1], RMPC_MEMBER_SUSPECT);
	rmpc_member_failed(&g, 2, -EKEYEXPIRED);
	CHECK_EQ(g.state[2], RMPC_MEMBER_LOST);
	rmpc_member_failed(&g, 3, -ENOSPC);
	CHECK_EQ(g.state[3], RMPC_MEMBER_LOST);
	/* suspect, then gone: lost; lost, then a timeout: still lost */
	rmpc_member_failed(&g, 0, -ENOENT);
	CHECK_EQ(g.state[0], RMPC_MEMBER_LOST);
	rmpc_member_failed(&g, 2, -EIO);
	CHECK_EQ(g.state[2], RMPC_MEMBER_LOST);
	rmpc_member_lost(&g, 1);
	CHECK_EQ(g.state[1], RMPC_MEMBER_LOST);
}

static void test_stale(void)
{
	struct rmpc_group g = group();

	rmpc_member_stale(&g, 0); /* live -> stale */
	rmpc_member_failed(&g, 1, -EIO);
	rmpc_member_stale(&g, 1); /* suspect -> stale */
	rmpc_member_lost(&g, 2);
	rmpc_member_stale(&g, 2); /* lost -> stale */
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(g.state[i], RMPC_MEMBER_STALE);
	/* nothing but a new handle takes it out */
	rmpc_member_failed(&g, 0, -EIO);
	rmpc_member_failed(&g, 0, -ENOENT);
	rmpc_member_lost(&g, 0);
	CHECK_EQ(g.state[0], RMPC_MEMBER_STALE);
	CHECK(!rmpc_member_live(&g, 0) && !rmpc_member_away(&g, 0));
}

static void test_swap(void)
{
	struct rmpc_group g = group();
	int other;

	rmpc_member_stale(&g, 0);
	CHECK(rmpc_member_swap(&g, 0, (struct rmp_lease *)&other) == H(0));
	CHECK_EQ(g.state[0], RMPC_MEMBER_LIVE);
	CHECK(g.m[0] == (struct rmp_lease *)&other);
	/* no handle: lost, and a failure keeps it so */
	CHECK(rmpc_member_swap(&g, 1, NULL) == H(1));
	CHECK_EQ(g.state[1], RMPC_MEMBER_LOST);
	CHECK(!rmpc_member_live(&g, 1));
	/* a suspect member attached anew: live again */
	rmpc_member_failed(&g, 2, -ECONNRESET);
	CHECK(rmpc_member_swap(&g, 2, H(2)) == H(2));
	CHECK_EQ(g.state[2], RMPC_MEMBER_LIVE);
}

static void test_tallies(void)
{
	struct rmpc_group g = group();

	CHECK_EQ(rmpc_group_live(&g, 0), 2);
	CHECK_EQ(rmpc_group_live(&g, 1), 2);
	rmpc_member_failed(&g, 1, -ETIMEDOUT);
	rmpc_member_stale(&g, 2);
	rmpc_member_lost(&g, 3);
	CHECK_EQ(rmpc_group_live(&g, 0), 1);
	CHECK_EQ(rmpc_group_live(&g, 1), 0);
	/* away: a write without it leaves it lacking what the record does
	 * not know of yet (a stale one the record knows of) */
	CHECK(!rmpc_member_away(&g, 0));
	CHECK(rmpc_member_away(&g, 1));
	CHECK(!rmpc_member_away(&g, 2));
	CHECK(rmpc_member_away(&g, 3));
	/* a LIVE slot without a handle is not live */
	g.m[0] = NULL;
	CHECK(!rmpc_member_live(&g, 0));
}

int main(void)
{
	test_failed();
	test_stale();
	test_swap();
	test_tallies();
	return check_done();
}

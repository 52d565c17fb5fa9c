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
#define NOW UINT64_C(1000000)
#define H(i) ((struct rmp_lease *)&handle[i])

/* group -- 2 stripes x 2 replicas, every member LIVE. */
static struct rmpc_group group(void)
{
	struct rmpc_group g = { .stripes = 2, .replicas = 2, .n = 4,
				.member_timeout_ms = RMPC_MEMBER_TIMEOUT_MS };

	for (unsigned i = 0; i < g.n; i++)
		g.m[i] = H(i);
	return g;
}

static void test_failed(void)
{
	struct rmpc_group g = group();

	/* the way failed: suspect; it did not: lost */
	rmpc_member_failed(&g, 0, -ETIMEDOUT, NOW);
	CHECK_EQ(g.state[0], RMPC_MEMBER_SUSPECT);
	rmpc_member_failed(&g, 1, -EKEYREVOKED, NOW);
	CHECK_EQ(g.state[1], RMPC_MEMBER_SUSPECT);
	rmpc_member_failed(&g, 2, -EKEYEXPIRED, NOW);
	CHECK_EQ(g.state[2], RMPC_MEMBER_LOST);
	rmpc_member_failed(&g, 3, -ENOSPC, NOW);
	CHECK_EQ(g.state[3], RMPC_MEMBER_LOST);
	/* suspect, then gone: lost; lost, then a timeout: still lost */
	rmpc_member_failed(&g, 0, -ENOENT, NOW);
	CHECK_EQ(g.state[0], RMPC_MEMBER_LOST);
	rmpc_member_failed(&g, 2, -EIO, NOW);
	CHECK_EQ(g.state[2], RMPC_MEMBER_LOST);
	rmpc_member_lost(&g, 1);
	CHECK_EQ(g.state[1], RMPC_MEMBER_LOST);
}

static void test_stale(void)
{
	struct rmpc_group g = group();

	rmpc_member_stale(&g, 0, NOW); /* live -> stale */
	rmpc_member_failed(&g, 1, -EIO, NOW);
	rmpc_member_stale(&g, 1, NOW); /* suspect -> stale */
	rmpc_member_lost(&g, 2);
	rmpc_member_stale(&g, 2, NOW); /* lost -> stale */
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(g.state[i], RMPC_MEMBER_STALE);
	/* nothing but a new handle takes it out */
	rmpc_member_failed(&g, 0, -EIO, NOW);
	rmpc_member_failed(&g, 0, -ENOENT, NOW);
	rmpc_member_lost(&g, 0);
	CHECK_EQ(g.state[0], RMPC_MEMBER_STALE);
	CHECK(!rmpc_member_live(&g, 0) && !rmpc_member_away(&g, 0));
}

/* A member a write went on without, whose mark could not be made: only
 * the mark (STALE) or a new handle takes it out; it is owed a mark and
 * never tried again. */
static void test_missed(void)
{
	struct rmpc_group g = group();

	rmpc_member_missed(&g, 0); /* live: it had the write */
	CHECK_EQ(g.state[0], RMPC_MEMBER_LIVE);
	rmpc_member_failed(&g, 0, -EIO, NOW);
	rmpc_member_missed(&g, 0);
	rmpc_member_lost(&g, 1);
	rmpc_member_missed(&g, 1);
	CHECK_EQ(g.state[0], RMPC_MEMBER_MISSED);
	CHECK_EQ(g.state[1], RMPC_MEMBER_MISSED);
	CHECK(rmpc_member_owes(&g, 0) && !rmpc_member_away(&g, 0));
	rmpc_member_failed(&g, 0, -ENOENT, NOW);
	rmpc_member_lost(&g, 0);
	CHECK_EQ(g.state[0], RMPC_MEMBER_MISSED);
	CHECK(!rmpc_group_retry(&g, NOW + RMPC_MEMBER_TIMEOUT_MS));
	rmpc_group_tried(&g, NOW + RMPC_MEMBER_TIMEOUT_MS);
	CHECK_EQ(g.state[0], RMPC_MEMBER_MISSED);
	rmpc_member_stale(&g, 0, NOW);
	CHECK_EQ(g.state[0], RMPC_MEMBER_STALE);
	CHECK(!rmpc_member_owes(&g, 0));
	rmpc_member_missed(&g, 0); /* stale stays stale */
	CHECK_EQ(g.state[0], RMPC_MEMBER_STALE);
	(void)rmpc_member_swap(&g, 1, H(1));
	CHECK_EQ(g.state[1], RMPC_MEMBER_LIVE);
}

static void test_swap(void)
{
	struct rmpc_group g = group();
	int other;

	rmpc_member_stale(&g, 0, NOW);
	CHECK(rmpc_member_swap(&g, 0, (struct rmp_lease *)&other) == H(0));
	CHECK_EQ(g.state[0], RMPC_MEMBER_LIVE);
	CHECK(g.m[0] == (struct rmp_lease *)&other);
	/* no handle: lost, and a failure keeps it so */
	CHECK(rmpc_member_swap(&g, 1, NULL) == H(1));
	CHECK_EQ(g.state[1], RMPC_MEMBER_LOST);
	CHECK(!rmpc_member_live(&g, 1));
	/* a suspect member attached anew: live again */
	rmpc_member_failed(&g, 2, -ECONNRESET, NOW);
	CHECK(rmpc_member_swap(&g, 2, H(2)) == H(2));
	CHECK_EQ(g.state[2], RMPC_MEMBER_LIVE);
}

static void test_tallies(void)
{
	struct rmpc_group g = group();

	CHECK_EQ(rmpc_group_live(&g, 0), 2);
	CHECK_EQ(rmpc_group_live(&g, 1), 2);
	rmpc_member_failed(&g, 1, -ETIMEDOUT, NOW);
	rmpc_member_stale(&g, 2, NOW);
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

/* A suspect member is tried again after a doubling wait (counted from
 * the end of a try), and lost when a try past member_timeout_ms fails;
 * a new handle starts the waits over. */
static void test_retry(void)
{
	struct rmpc_group g = group();
	uint64_t t = NOW, first = RMPC_MEMBER_RETRY_FIRST_MS;

	CHECK(!rmpc_group_retry(&g, t)); /* nobody suspect */
	rmpc_member_failed(&g, 1, -ENOTCONN, t);
	CHECK(!rmpc_group_retry(&g, t + first - 1));
	CHECK(rmpc_group_retry(&g, t + first));
	/* put off: twice as long from that try */
	CHECK(!rmpc_group_retry(&g, t + first + 2 * first - 1));
	CHECK(rmpc_group_retry(&g, t + 3 * first));
	/* another failure of the way while suspect: the waits go on, the
	 * time it is suspect is counted from the first */
	rmpc_member_failed(&g, 1, -ETIMEDOUT, t + 3 * first);
	CHECK_EQ(g.suspect_ms[1], t);
	/* the waits stop growing at the bound */
	for (uint64_t at = t + 3 * first; at < t + 20000; at += 100)
		(void)rmpc_group_retry(&g, at);
	CHECK_EQ(g.retry[1].ms, RMPC_MEMBER_RETRY_MAX_MS);
	CHECK_EQ(g.state[1], RMPC_MEMBER_SUSPECT);
	/* a try that ended at t + 20 s: the next one a whole wait after */
	rmpc_group_tried(&g, t + 20000);
	CHECK_EQ(g.state[1], RMPC_MEMBER_SUSPECT);
	CHECK(!rmpc_group_retry(&g, t + 20000 + RMPC_MEMBER_RETRY_MAX_MS - 1));
	CHECK(rmpc_group_retry(&g, t + 20000 + RMPC_MEMBER_RETRY_MAX_MS));
	/* past the bound but not tried since: an idle handle loses nobody */
	CHECK(rmpc_group_retry(&g, t + 10 * RMPC_MEMBER_TIMEOUT_MS));
	CHECK_EQ(g.state[1], RMPC_MEMBER_SUSPECT);
	/* tried past the bound and still suspect: lost, not due any more */
	rmpc_group_tried(&g, t + RMPC_MEMBER_TIMEOUT_MS);
	CHECK_EQ(g.state[1], RMPC_MEMBER_LOST);
	CHECK(!rmpc_group_retry(&g, t + 20 * RMPC_MEMBER_TIMEOUT_MS));
	/* a new handle: live, its waits start over */
	rmpc_member_swap(&g, 1, H(1));
	CHECK_EQ(g.retry[1].ms, 0);
	rmpc_member_failed(&g, 1, -EIO, t + 40000);
	CHECK(!rmpc_group_retry(&g, t + 40000 + first - 1));
	CHECK(rmpc_group_retry(&g, t + 40000 + first));
	/* gone while suspect: lost at once */
	rmpc_member_failed(&g, 1, -EKEYEXPIRED, t + 40001);
	CHECK_EQ(g.state[1], RMPC_MEMBER_LOST);
	/* no bound: suspect for as long as it takes */
	g = group();
	g.member_timeout_ms = 0;
	rmpc_member_failed(&g, 0, -EIO, t);
	rmpc_group_tried(&g, t + 10 * RMPC_MEMBER_TIMEOUT_MS);
	CHECK_EQ(g.state[0], RMPC_MEMBER_SUSPECT);
}

/* A stale member's catch-up in place is tried after the same doubling
 * waits (not at once: its node may still be out of reach), never times
 * it out, and ends with a new handle (LIVE). */
static void test_stale_catch_up(void)
{
	struct rmpc_group g = group();
	uint64_t t = NOW, first = RMPC_MEMBER_RETRY_FIRST_MS;

	rmpc_member_failed(&g, 1, -ETIMEDOUT, t);
	rmpc_member_stale(&g, 1, t + 100); /* a write went on without it */
	CHECK_EQ(g.state[1], RMPC_MEMBER_STALE);
	CHECK(!rmpc_group_retry(&g, t + 100 + first - 1));
	CHECK(rmpc_group_retry(&g, t + 100 + first));
	/* marked again by another write: the waits go on as they were */
	rmpc_member_stale(&g, 1, t + 100 + first);
	CHECK_EQ(g.retry[1].ms, 2 * first);
	/* a try that did not catch it up: stale still, never lost, the next
	 * wait from the try's end */
	rmpc_group_tried(&g, t + 10 * RMPC_MEMBER_TIMEOUT_MS);
	CHECK_EQ(g.state[1], RMPC_MEMBER_STALE);
	CHECK(!rmpc_group_retry(&g, t + 10 * RMPC_MEMBER_TIMEOUT_MS +
				       2 * first - 1));
	CHECK(rmpc_group_retry(&g, t + 10 * RMPC_MEMBER_TIMEOUT_MS +
				      2 * first));
	/* caught up: attached anew, live, no try due */
	rmpc_member_swap(&g, 1, g.m[0]);
	CHECK_EQ(g.state[1], RMPC_MEMBER_LIVE);
	CHECK(!rmpc_group_retry(&g, t + 100 * RMPC_MEMBER_TIMEOUT_MS));
}

int main(void)
{
	test_failed();
	test_stale();
	test_missed();
	test_swap();
	test_tallies();
	test_retry();
	test_stale_catch_up();
	return check_done();
}

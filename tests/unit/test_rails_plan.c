/* SPDX-License-Identifier: MIT */
/*
 * test_rails_plan.c -- how a call is cut and dealt over a node's rails
 * (client/rails_plan.c, pure, included by the test): pieces cut at
 * multiples of the piece size, dealt in turn to the live rails, at most
 * per_rail a round, covering the call exactly once; the pieces of a rail
 * that failed dealt again, to the rails still live, each byte once; no
 * live rail deals nothing; the one rail of a small call: the rail on the
 * buffer's NUMA node, else round-robin over the live ones; the piece
 * size a rail's limits allow.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../../client/rails_plan.c"
#include "check.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

static struct rmpc_rail_piece out[RMPC_RAILS_MAX][RMPC_RAIL_ROUND_MAX];
static unsigned count[RMPC_RAILS_MAX];
static uint8_t seen[8 * MIB / KIB]; /* per KiB of a call: times dealt */

/* mark -- the pieces dealt this round, counted per KiB; false when a
 * piece spans a multiple of the piece size or is empty. */
static bool mark(const struct rmpc_rail_plan *p, uint64_t off,
		 unsigned nrails, uint64_t *bytes)
{
	for (unsigned r = 0; r < nrails; r++)
		for (unsigned i = 0; i < count[r]; i++) {
			const struct rmpc_rail_piece *q = &out[r][i];

			if (!q->len || q->off / p->piece !=
					       (q->off + q->len - 1) / p->piece)
				return false;
			for (uint64_t k = q->off; k < q->off + q->len;
			     k += KIB)
				seen[(k - off) / KIB]++;
			bytes[r] += q->len;
		}
	return true;
}

/* A call of 5 MiB + 3 KiB from an unaligned offset over 2 rails: pieces
 * within 256 KiB boundaries, alternating, each byte once, bytes split
 * evenly (to a piece). */
static void test_split(void)
{
	const uint64_t off = 3 * KIB, len = 5 * MIB + 3 * KIB;
	bool live[2] = { true, true };
	uint64_t bytes[2] = { 0 };
	struct rmpc_rail_plan p;
	unsigned rounds = 0, n, bad = 0;

	memset(seen, 0, sizeof(seen));
	rmpc_rail_plan_init(&p, off, len, 256 * KIB, 0);
	while ((n = rmpc_rail_plan_deal(&p, live, 2, 4, out, count))) {
		CHECK(mark(&p, off, 2, bytes));
		CHECK(count[0] <= 4 && count[1] <= 4);
		if (rounds == 0) {
			/* the first piece ends at the first boundary */
			CHECK_EQ(out[0][0].off, off);
			CHECK_EQ(out[0][0].len, 256 * KIB - off);
			CHECK_EQ(out[1][0].off, 256 * KIB);
			CHECK_EQ(out[0][1].off, 512 * KIB);
		}
		rounds++;
	}
	for (uint64_t k = 0; k < len / KIB; k++)
		bad += seen[k] != 1;
	CHECK_EQ(bad, 0);
	CHECK(rmpc_rail_plan_done(&p));
	CHECK_EQ(bytes[0] + bytes[1], len);
	CHECK(bytes[0] >= 2 * MIB && bytes[1] >= 2 * MIB);
	CHECK_EQ(rounds, 3); /* 21 pieces, 8 a round */
}

/* Rail 1 of 3 fails with its round's pieces: they go to rails 0 and 2,
 * rail 1 gets nothing more, every byte is dealt once more for them and
 * once for the rest. */
static void test_failover(void)
{
	const uint64_t off = 0, len = 8 * MIB;
	bool live[3] = { true, true, true };
	uint64_t bytes[3] = { 0 };
	struct rmpc_rail_plan p;
	unsigned n, bad = 0, round = 0;

	memset(seen, 0, sizeof(seen));
	rmpc_rail_plan_init(&p, off, len, 256 * KIB, 1);
	while ((n = rmpc_rail_plan_deal(&p, live, 3, 2, out, count))) {
		CHECK(mark(&p, off, 3, bytes));
		if (round++ == 1) {
			/* rail 1 fails: its pieces were not moved */
			CHECK_EQ(count[1], 2);
			for (unsigned i = 0; i < count[1]; i++)
				for (uint64_t k = out[1][i].off;
				     k < out[1][i].off + out[1][i].len;
				     k += KIB)
					seen[k / KIB]--;
			bytes[1] -= out[1][0].len + out[1][1].len;
			CHECK_EQ(rmpc_rail_plan_redo(&p, out[1], count[1]), 0);
			live[1] = false;
		} else if (round > 2) {
			CHECK_EQ(count[1], 0);
		}
	}
	for (uint64_t k = 0; k < len / KIB; k++)
		bad += seen[k] != 1;
	CHECK_EQ(bad, 0);
	CHECK_EQ(bytes[0] + bytes[1] + bytes[2], len);
	CHECK_EQ(bytes[1], 512 * KIB); /* its first round only: 2 pieces */
	/* every rail down: nothing is dealt, the bytes stay to do */
	rmpc_rail_plan_init(&p, 0, MIB, 256 * KIB, 0);
	live[0] = live[2] = false;
	CHECK_EQ(rmpc_rail_plan_deal(&p, live, 3, 2, out, count), 0);
	CHECK(!rmpc_rail_plan_done(&p));
	/* a redo beyond the room is refused */
	p.nredo = RMPC_RAIL_REDO_MAX;
	CHECK_EQ(rmpc_rail_plan_redo(&p, out[0], 1), -1);
}

/* The one rail of a small call; the piece size. */
static void test_pick(void)
{
	bool live[3] = { true, true, true };
	int node[3] = { 1, 0, -1 };
	unsigned turn = 0;

	CHECK_EQ(rmpc_rail_pick(live, node, 3, 0, &turn), 1);
	CHECK_EQ(rmpc_rail_pick(live, node, 3, 1, &turn), 0);
	CHECK_EQ(turn, 0); /* a NUMA choice leaves the turn */
	/* unknown node: round-robin */
	CHECK_EQ(rmpc_rail_pick(live, node, 3, -1, &turn), 0);
	CHECK_EQ(rmpc_rail_pick(live, node, 3, -1, &turn), 1);
	CHECK_EQ(rmpc_rail_pick(live, node, 3, -1, &turn), 2);
	CHECK_EQ(rmpc_rail_pick(live, node, 3, -1, &turn), 0);
	/* no rail on the buffer's node: round-robin too */
	CHECK_EQ(rmpc_rail_pick(live, node, 3, 5, &turn), 1);
	/* the rail of its node down: another one */
	live[1] = false;
	CHECK_EQ(rmpc_rail_pick(live, node, 3, 0, &turn), 2);
	CHECK_EQ(rmpc_rail_pick(live, node, 3, 0, &turn), 0);
	live[0] = live[2] = false;
	CHECK_EQ(rmpc_rail_pick(live, node, 3, 0, &turn), -1);

	CHECK_EQ(rmpc_rail_piece_size(256 * KIB, 4 * MIB), 256 * KIB);
	CHECK_EQ(rmpc_rail_piece_size(256 * KIB, 100 * KIB), 64 * KIB);
	CHECK_EQ(rmpc_rail_piece_size(256 * KIB, 1), 1);
}

int main(void)
{
	test_split();
	test_failover();
	test_pick();
	return check_done();
}

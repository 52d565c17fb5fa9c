/* SPDX-License-Identifier: MIT */
/*
 * test_client_rails.c -- the data path of a client with several rails
 * (client/io_rails.c over rails.c and rails_plan.c) on fake rails: the
 * calls below it (rmpc_rw, which moves legs; a lease's handle on a rail;
 * an atomic on one connection) are the test's, over one fake remote
 * memory all rails reach at the same address, each rail able to fail
 * (its connection: -EIO, as rxe's QP does when its link goes down) or to
 * refuse the key (-EKEYEXPIRED, the lease's). Checked: a large WRITE and
 * READ cut in pieces within rail_stripe boundaries, every rail's pieces
 * in one rmpc_rw (posted before any is waited for), bytes right and
 * counted per rail; a rail that fails: its pieces done on the other, no
 * error, the rail down and counted, nothing more sent to it; every rail
 * down: the call fails; a remote access error: returned, no rail down;
 * small calls round-robin, or on the rail of the buffer's NUMA node; a
 * down rail tried again after its backoff and used again; an atomic not
 * repeated on another rail once it was in flight.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan.h"
#include "check.h"
#include "error.h"
#include "io_int.h"
#include "lease.h"
#include "rails.h"
#include "rmpool.h"
#include "state.h"
#include "stripe.h"
#include "util.h"

#define KIB 1024u
#define STRIPE (64 * KIB)
#define LEN (1024 * KIB)
#define NR 2

static uint8_t remote[LEN], src[LEN], dst[LEN];
static struct rmp_client clients[NR];
static struct rmpc_rail_set set;
static struct rmp_lease lease, handles[NR];
static struct rmp_lease lease_b, handles_b[NR]; /* at remote + LEN / 2 */

/* The fake rails. */
static bool broken[NR];  /* the rail's connection fails its legs */
static bool keyerr[NR];  /* the rail's key is refused */
static bool partial;     /* a failing WRITE leg lands half its bytes */
static unsigned rw_calls, multi_rail_calls, legs_on[NR], bad_legs;
static unsigned both_leases_calls; /* rmpc_rw calls with both leases' */
static unsigned revives, atomics_on[NR];
static int atomic_err;

/* ---- what io_rails.c calls below it, faked ---- */

int rmpc_lease_args(struct rmp_lease *l, uint64_t off, uint64_t len,
		    uint32_t need)
{
	(void)need;
	return len > l->length || off > l->length - len ? -ERANGE : 0;
}

static unsigned rail_of(const struct rmp_client *c)
{
	return (unsigned)(c - clients);
}

int rmpc_lease_on_rail(struct rmp_lease *l, struct rmp_client *rc,
		       unsigned i, struct rmp_lease **out)
{
	if (rail_of(rc) != i)
		abort();
	/* a lease at another address (test_legs' second): its own */
	*out = l->addr ? &handles_b[i] : &handles[i];
	return 0;
}

int rmpc_check_conn(struct rmp_client *c)
{
	return broken[rail_of(c)] ? -ENOTCONN : 0;
}

int rmpc_rw(struct rmpc_leg *legs, unsigned n, bool write)
{
	bool on[NR] = { false }, lease_on[2] = { false };
	unsigned rails = 0;
	int first = 0;

	rw_calls++;
	for (unsigned i = 0; i < n; i++) {
		struct rmpc_leg *g = &legs[i];
		unsigned r = rail_of(g->l->c);
		uint64_t len = g->len;

		legs_on[r]++;
		rails += !on[r];
		on[r] = true;
		lease_on[g->l->addr != 0] = true;
		/* a piece never spans a multiple of the stripe (big calls) */
		if (len > STRIPE || (g->off / STRIPE != (g->off + len - 1) /
								STRIPE &&
				     len >= 2 * STRIPE))
			bad_legs++;
		g->err = keyerr[r] ? -EKEYEXPIRED : broken[r] ? -EIO : 0;
		if (g->err && !(partial && write && broken[r]))
			len = 0;
		else if (g->err)
			len /= 2;
		/* the leg's local bytes lie apart by its gaps */
		for (uint64_t b = 0; b < len; b++) {
			uint8_t *far = remote + g->l->addr + g->off + b;
			char *near = g->local + rmpc_stripe_at(g->off, g->unit,
							       g->gap, b);

			if (write)
				*far = (uint8_t)*near;
			else
				*near = (char)*far;
		}
		first = first ? first : g->err;
	}
	multi_rail_calls += rails > 1;
	both_leases_calls += lease_on[0] && lease_on[1];
	return first;
}

int rmpc_atomic_one(struct rmp_lease *l, uint64_t off,
		    enum ibv_wr_opcode opcode, uint64_t compare_add,
		    uint64_t swap, uint64_t *old)
{
	(void)off;
	(void)opcode;
	(void)compare_add;
	(void)swap;
	atomics_on[rail_of(l->c)]++;
	if (old)
		*old = 0;
	return atomic_err;
}

static int fake_revive(struct rmp_client *c, unsigned i)
{
	(void)c;
	revives++;
	if (broken[i])
		return -ENOTCONN;
	set.r[i].down = false;
	return 0;
}

/* ---- the world ---- */

static void world(void)
{
	memset(&set, 0, sizeof(set));
	memset(clients, 0, sizeof(clients));
	memset(broken, 0, sizeof(broken));
	memset(keyerr, 0, sizeof(keyerr));
	memset(legs_on, 0, sizeof(legs_on));
	memset(atomics_on, 0, sizeof(atomics_on));
	partial = false;
	rw_calls = multi_rail_calls = bad_legs = revives = 0;
	atomic_err = 0;
	set.n = NR;
	for (unsigned i = 0; i < NR; i++) {
		clients[i].opts.rail_stripe = STRIPE;
		set.r[i].c = &clients[i];
		set.r[i].node = -1;
		handles[i] = (struct rmp_lease){ .c = &clients[i],
						 .length = LEN };
		handles_b[i] = (struct rmp_lease){ .c = &clients[i],
						   .addr = LEN / 2,
						   .length = LEN / 2 };
	}
	lease_b = (struct rmp_lease){ .c = &clients[0], .addr = LEN / 2,
				      .length = LEN / 2 };
	both_leases_calls = 0;
	clients[0].rails = &set;
	clients[0].revive_rail = fake_revive;
	lease = (struct rmp_lease){ .c = &clients[0], .length = LEN };
	for (size_t i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 31 + (i >> 9));
	memset(remote, 0, sizeof(remote));
	memset(dst, 0, sizeof(dst));
}

/* A large WRITE and READ over both rails. */
static void test_split(void)
{
	world();
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)src, LEN, true), 0);
	CHECK(!memcmp(remote, src, LEN));
	CHECK_EQ(set.r[0].bytes_written, LEN / 2);
	CHECK_EQ(set.r[1].bytes_written, LEN / 2);
	CHECK_EQ(multi_rail_calls, rw_calls); /* both rails in every round */
	CHECK_EQ(bad_legs, 0);
	CHECK_EQ(legs_on[0], LEN / STRIPE / 2);
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, LEN, false), 0);
	CHECK(!memcmp(dst, src, LEN));
	CHECK_EQ(set.r[0].bytes_read + set.r[1].bytes_read, LEN);
	CHECK(set.r[1].bytes_read >= LEN / 2 - STRIPE);
	/* an unaligned call: pieces cut at the lease's multiples */
	memset(remote, 0, sizeof(remote));
	CHECK_EQ(rmpc_rails_rw(&lease, 1000, (char *)src + 1000, LEN - 3000, true), 0);
	CHECK(!memcmp(remote + 1000, src + 1000, LEN - 3000));
	CHECK_EQ(remote[999], 0);
	CHECK_EQ(bad_legs, 0);
	/* out of the lease: the caller's error, nothing sent */
	rw_calls = 0;
	CHECK_EQ(rmpc_rails_rw(&lease, 8, (char *)src, LEN, true), -ERANGE);
	CHECK_EQ(rw_calls, 0);
}

/* Rail 1 fails while the call is on it (half of a piece written): its
 * pieces go to rail 0, the call succeeds, the bytes are right. */
static void test_failover(void)
{
	struct rmp_rail_info info[NR] = { { .size = sizeof(info[0]) },
					  { .size = sizeof(info[1]) } };

	world();
	broken[1] = true;
	partial = true;
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)src, LEN, true), 0);
	CHECK(!memcmp(remote, src, LEN));
	CHECK(set.r[1].down);
	CHECK_EQ(set.r[1].failovers, 1);
	CHECK_EQ(set.r[1].bytes_written, 0);
	CHECK_EQ(set.r[0].bytes_written, LEN);
	/* reads too; rail 1 is not tried again before its backoff */
	legs_on[1] = 0;
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, LEN, false), 0);
	CHECK(!memcmp(dst, src, LEN));
	CHECK_EQ(legs_on[1], 0);
	CHECK_EQ(revives, 0);
	rmpc_rail_info(&set.r[1], &info[1]);
	CHECK_EQ(info[1].up, 0);
	CHECK_EQ(info[1].failovers, 1);
	/* after the backoff it is tried again and, back, used again */
	broken[1] = false;
	rmpc_backoff_reset(&set.r[1].backoff);
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, LEN, false), 0);
	CHECK_EQ(revives, 1);
	CHECK(!set.r[1].down);
	CHECK_EQ(set.r[1].bytes_read, LEN / 2);
}

/* Every rail down: the call fails. A refused key: the lease's error,
 * returned, no rail down. */
static void test_errors(void)
{
	world();
	broken[0] = broken[1] = true;
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)src, LEN, true), -EIO);
	CHECK(set.r[0].down && set.r[1].down);
	CHECK_HAS(clients[0].errbuf, "every rail");
	/* and later calls, while none may be tried again */
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, 100, false), -ENOTCONN);

	world();
	keyerr[1] = true;
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)src, LEN, true), -EKEYEXPIRED);
	CHECK(!set.r[0].down && !set.r[1].down);
	CHECK_EQ(set.r[1].failovers, 0);
}

/* Small calls: in turn, or on the rail of the buffer's node. */
static void test_small(void)
{
	int node;

	world();
	for (unsigned i = 0; i < 4; i++) {
		memset(legs_on, 0, sizeof(legs_on));
		CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, 4 * KIB, false), 0);
		CHECK_EQ(legs_on[i % 2], 1);
		CHECK_EQ(legs_on[(i + 1) % 2], 0);
	}
	/* 2 x rail_stripe - 1 is still small: one rail */
	memset(legs_on, 0, sizeof(legs_on));
	CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)src, 2 * STRIPE - 1, true), 0);
	CHECK(!legs_on[0] != !legs_on[1]);
	node = rmpc_buf_node(dst);
	if (node < 0) {
		printf("# no NUMA node for the buffer here: not checked\n");
	} else {
		set.r[0].node = node + 1;
		set.r[1].node = node;
		memset(legs_on, 0, sizeof(legs_on));
		for (unsigned i = 0; i < 3; i++)
			CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, 4 * KIB, false), 0);
		CHECK_EQ(legs_on[1], 3);
		/* its rail down: another one */
		broken[1] = true;
		CHECK_EQ(rmpc_rails_rw(&lease, 0, (char *)dst, 4 * KIB, false), 0);
		CHECK_EQ(legs_on[0], 1);
	}
}

/* An atomic: on one rail; not repeated once it was posted. */
static void test_atomic(void)
{
	uint64_t old;

	world();
	atomic_err = -EIO;
	CHECK_EQ(rmpc_rails_atomic(&lease, 0, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, &old), -EIO);
	CHECK(set.r[0].down); /* turn 0 first */
	CHECK_EQ(atomics_on[0] + atomics_on[1], 1);
	atomic_err = 0;
	CHECK_EQ(rmpc_rails_atomic(&lease, 0, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, &old), 0);
	CHECK_EQ(atomics_on[1], 1);
	/* a rail found failed before posting: the next one */
	world();
	broken[0] = true;
	CHECK_EQ(rmpc_rails_atomic(&lease, 0, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, &old), 0);
	CHECK_EQ(atomics_on[1], 1);
	CHECK_EQ(atomics_on[0], 0);
}

/*
 * A striped lease's call (rmpc_rails_legs): its two stripes' legs, each
 * a member on the node's rails, the caller's bytes a unit of each in
 * turn. Both legs' pieces move in the same rounds over both rails; rail
 * 1 failing halfway moves its pieces to rail 0; the bytes land where
 * the layout puts them and read back whole.
 */
static void test_legs(void)
{
	const uint64_t unit = 16 * KIB, half = LEN / 2;
	struct rmpc_rail_plan plans[2];
	struct rmpc_leg legs[2];

	world();
	for (unsigned k = 0; k < 2; k++)
		legs[k] = (struct rmpc_leg){
			.l = k ? &lease_b : &lease, .off = 0, .len = half,
			.local = (char *)src + k * unit, .unit = unit,
			.gap = unit,
		};
	CHECK_EQ(rmpc_rails_legs(legs, 2, true, plans), 0);
	CHECK_EQ(legs[0].err, 0);
	CHECK_EQ(legs[1].err, 0);
	for (uint64_t b = 0; b < half; b++) {
		uint64_t at = b / unit * 2 * unit + b % unit;

		if (remote[b] != src[at] || remote[half + b] != src[at + unit]) {
			CHECK(!"a striped byte is where the layout puts it");
			break;
		}
	}
	CHECK_EQ(both_leases_calls, rw_calls);
	CHECK_EQ(multi_rail_calls, rw_calls);
	CHECK_EQ(set.r[0].bytes_written + set.r[1].bytes_written, LEN);
	CHECK(set.r[1].bytes_written >= half - 2 * STRIPE);
	CHECK_EQ(bad_legs, 0);

	/* rail 1 fails mid-call: its pieces go to rail 0, no leg fails */
	broken[1] = true;
	partial = true;
	for (unsigned k = 0; k < 2; k++)
		legs[k].local = (char *)dst + k * unit;
	CHECK_EQ(rmpc_rails_legs(legs, 2, false, plans), 0);
	CHECK(!memcmp(dst, src, LEN));
	CHECK(set.r[1].down);
	CHECK_EQ(set.r[1].failovers, 1);

	/* a leg outside its lease: that leg's error, the other's bytes go */
	world();
	legs[0].local = (char *)src;
	legs[1].local = (char *)src + unit;
	legs[1].len = half + 1;
	CHECK_EQ(rmpc_rails_legs(legs, 2, true, plans), -ERANGE);
	CHECK_EQ(legs[0].err, 0);
	CHECK_EQ(legs[1].err, -ERANGE);
	CHECK_EQ(remote[unit - 1], src[unit - 1]);
	CHECK_EQ(remote[half], 0);
}

/* Legs after_prev go whole on the rail the leg before them took: a
 * small leg, a large one (alone it would be cut over both rails) and a
 * small one, on one rail, call after call (the turn moves on). */
static void test_after_prev(void)
{
	struct rmpc_rail_plan plans[3];
	struct rmpc_leg legs[3];

	world();
	for (unsigned i = 0; i < 4; i++) {
		legs[0] = (struct rmpc_leg){ .l = &lease, .off = 0, .len = 8,
					     .local = (char *)dst };
		legs[1] = (struct rmpc_leg){ .l = &lease, .off = 4 * KIB,
					     .len = 4 * STRIPE,
					     .local = (char *)dst + 4 * KIB,
					     .after_prev = true };
		legs[2] = legs[0];
		legs[2].local = (char *)dst + 8;
		legs[2].after_prev = true;
		memset(legs_on, 0, sizeof(legs_on));
		CHECK_EQ(rmpc_rails_legs(legs, 3, false, plans), 0);
		CHECK_EQ(legs_on[0] + legs_on[1], 3);
		CHECK(!legs_on[0] != !legs_on[1]);
	}
}

int main(void)
{
	test_split();
	test_failover();
	test_errors();
	test_small();
	test_atomic();
	test_legs();
	test_after_prev();
	return check_done();
}

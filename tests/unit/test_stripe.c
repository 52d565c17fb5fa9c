/* SPDX-License-Identifier: MIT */
/*
 * test_stripe.c -- unit tests of a striped lease's arithmetic
 * (client/stripe.c, pure, included by the test): a call cut into one
 * part per stripe, checked byte by byte against the layout (unit u in
 * stripe u % stripes, at (u / stripes) * unit there) over many offsets,
 * lengths, units and stripe counts; the edge cases by name (no bytes,
 * at the very end, a part over many units, a last partial unit, one
 * stripe as the identity, 16 stripes); each member's size; and where a
 * part's bytes lie locally.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../../client/stripe.c"
#include "check.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

/* say -- print the first few findings only (a broken split breaks
 * thousands of cases). */
#define say(...) (said++ < 5 ? printf(__VA_ARGS__) : 0)
static unsigned said;

/* layout_ok -- the parts p[0..n) of [off, off+len) cover it exactly as
 * the layout says: every byte x of the call is in the part of its
 * stripe, at the offset of the layout, and rmpc_stripe_at finds it
 * where it is in the caller's buffer; parts are in the order of their
 * first bytes, of distinct stripes, their lengths sum to len. Prints
 * the first byte that is wrong. */
static bool layout_ok(unsigned k, uint64_t unit, uint64_t off, uint64_t len,
		      const struct rmpc_stripe_piece *p, unsigned n)
{
	uint64_t sum = 0, gap = (k - 1) * unit;

	for (unsigned i = 0; i < n; i++) {
		sum += p[i].len;
		if (i && p[i].local <= p[i - 1].local)
			return say("# part %u out of order\n", i), false;
		for (unsigned j = 0; j < i; j++)
			if (p[j].stripe == p[i].stripe)
				return say("# stripe %u twice\n",
					      p[i].stripe), false;
	}
	if (sum != len || n > k)
		return say("# %u parts of %llu bytes, want %llu\n", n,
			      (unsigned long long)sum,
			      (unsigned long long)len), false;
	for (uint64_t x = off; x < off + len; x++) {
		uint64_t u = x / unit, so = u / k * unit + x % unit;
		unsigned i;

		for (i = 0; i < n && p[i].stripe != u % k; i++)
			;
		if (i == n || so < p[i].off || so >= p[i].off + p[i].len ||
		    p[i].local + rmpc_stripe_at(p[i].off, unit, gap,
						so - p[i].off) != x - off) {
			say("# k %u unit %llu off %llu len %llu: byte %llu "
			       "misplaced\n", k, (unsigned long long)unit,
			       (unsigned long long)off, (unsigned long long)len,
			       (unsigned long long)x);
			return false;
		}
	}
	return true;
}

/* Every small case against the layout: 1..5 and 16 stripes, units of
 * 1, 2, 4 and 8 bytes, offsets and lengths over several rounds. */
static void test_split_exhaustive(void)
{
	static const unsigned ks[] = { 1, 2, 3, 4, 5, 16 };
	struct rmpc_stripe_piece p[16];
	unsigned bad = 0, cases = 0;

	for (unsigned a = 0; a < sizeof(ks) / sizeof(ks[0]); a++)
		for (uint64_t unit = 1; unit <= 8; unit *= 2)
			for (uint64_t off = 0; off < 70; off++)
				for (uint64_t len = 0; len < 150; len++) {
					unsigned n = rmpc_stripe_split(
						ks[a], unit, off, len, p);

					cases++;
					if (len && !layout_ok(ks[a], unit, off,
							      len, p, n))
						bad++;
				}
	CHECK_EQ(bad, 0);
	CHECK(cases > 100000);
}

/* No bytes: one part of none, in the stripe of off (also at the very
 * end of a lease whose last stripe unit is full). */
static void test_split_empty(void)
{
	struct rmpc_stripe_piece p[16];

	CHECK_EQ(rmpc_stripe_split(3, 4 * KIB, 0, 0, p), 1);
	CHECK_EQ(p[0].stripe, 0);
	CHECK_EQ(p[0].off, 0);
	CHECK_EQ(p[0].len, 0);
	/* 48 KiB in 3 stripes of 4 KiB units: off 48 KiB is unit 12 */
	CHECK_EQ(rmpc_stripe_split(3, 4 * KIB, 48 * KIB, 0, p), 1);
	CHECK_EQ(p[0].stripe, 0);
	CHECK_EQ(p[0].off, 16 * KIB);
	CHECK(p[0].off <= rmpc_stripe_size(3, 4 * KIB, 48 * KIB, 0));
	CHECK_EQ(rmpc_stripe_split(3, 4 * KIB, 5 * KIB + 7, 0, p), 1);
	CHECK_EQ(p[0].stripe, 1);
	CHECK_EQ(p[0].off, KIB + 7);
}

/* One stripe: the call itself, whatever the unit. */
static void test_split_identity(void)
{
	struct rmpc_stripe_piece p[1];

	CHECK_EQ(rmpc_stripe_split(1, MIB, 12345, 7 * MIB + 3, p), 1);
	CHECK_EQ(p[0].stripe, 0);
	CHECK_EQ(p[0].off, 12345);
	CHECK_EQ(p[0].len, 7 * MIB + 3);
	CHECK_EQ(p[0].local, 0);
	CHECK_EQ(rmpc_stripe_at(12345, MIB, 0, 5 * MIB), 5 * MIB);
	CHECK_EQ(rmpc_stripe_contig(12345, MIB, 0, 0, 7 * MIB), 7 * MIB);
}

/* A call of many units: the 48 MiB lease of the VM test in 3 stripes of
 * 1 MiB, read from 1.5 MiB on for 40 MiB; 16 stripes of 4 KiB. */
static void test_split_many_units(void)
{
	struct rmpc_stripe_piece p[16];
	uint64_t h = MIB / 2;

	CHECK_EQ(rmpc_stripe_split(3, MIB, MIB + h, 40 * MIB, p), 3);
	/* units 1 (from its middle) .. 41 (to its middle) */
	CHECK_EQ(p[0].stripe, 1);
	CHECK_EQ(p[0].off, h);
	CHECK_EQ(p[0].local, 0);
	CHECK_EQ(p[0].len, 13 * MIB + h); /* units 1 (half), 4, .., 40 */
	CHECK_EQ(p[1].len, 13 * MIB + h); /* units 2, .., 41 (half) */
	CHECK_EQ(p[2].len, 13 * MIB);     /* units 3, .., 39 */
	CHECK_EQ(p[1].stripe, 2);
	CHECK_EQ(p[1].off, 0);
	CHECK_EQ(p[1].local, h);
	CHECK_EQ(p[2].stripe, 0);
	CHECK_EQ(p[2].off, MIB);
	CHECK_EQ(p[2].local, h + MIB);
	CHECK_EQ(p[0].len + p[1].len + p[2].len, 40 * MIB);
	CHECK(layout_ok(3, MIB, MIB + h, 40 * MIB / 64, p,
			rmpc_stripe_split(3, MIB, MIB + h, 40 * MIB / 64, p)));

	CHECK_EQ(rmpc_stripe_split(16, 4 * KIB, 100, 100 * 4 * KIB, p), 16);
	CHECK_EQ(p[15].stripe, 15);
	CHECK(layout_ok(16, 4 * KIB, 100, 100 * 4 * KIB, p, 16));
	/* fewer units than stripes: only the stripes touched */
	CHECK_EQ(rmpc_stripe_split(16, 4 * KIB, 4 * KIB - 1, 2, p), 2);
	CHECK_EQ(p[0].stripe, 0);
	CHECK_EQ(p[1].stripe, 1);
	CHECK_EQ(p[1].off, 0);
	CHECK_EQ(p[1].len, 1);
}

/* Each member's size: the end of its stripe's part of the lease, the
 * last unit partial where the lease ends in it; they sum to the lease. */
static void test_size(void)
{
	uint64_t sum = 0;

	/* 48 MiB in 3 stripes of 1 MiB: 16 MiB each */
	for (unsigned s = 0; s < 3; s++)
		CHECK_EQ(rmpc_stripe_size(3, MIB, 48 * MIB, s), 16 * MIB);
	/* 10.5 units in 4 stripes: 3, 3, 2.5 (unit 10 is half), 2 units */
	CHECK_EQ(rmpc_stripe_size(4, 4 * KIB, 42 * KIB, 0), 12 * KIB);
	CHECK_EQ(rmpc_stripe_size(4, 4 * KIB, 42 * KIB, 1), 12 * KIB);
	CHECK_EQ(rmpc_stripe_size(4, 4 * KIB, 42 * KIB, 2), 10 * KIB);
	CHECK_EQ(rmpc_stripe_size(4, 4 * KIB, 42 * KIB, 3), 8 * KIB);
	/* a lease smaller than the stripes: the later ones hold nothing */
	CHECK_EQ(rmpc_stripe_size(16, MIB, 100, 0), 100);
	CHECK_EQ(rmpc_stripe_size(16, MIB, 100, 1), 0);
	CHECK_EQ(rmpc_stripe_size(1, MIB, 5 * MIB + 1, 0), 5 * MIB + 1);
	for (unsigned s = 0; s < 7; s++)
		sum += rmpc_stripe_size(7, 64, 100003, s);
	CHECK_EQ(sum, 100003);
}

/* Each member's size is where its part of the whole lease ends. */
static void test_size_is_split_end(void)
{
	static const unsigned ks[] = { 1, 3, 16 };
	struct rmpc_stripe_piece p[16];
	unsigned bad = 0;

	for (unsigned a = 0; a < 3; a++)
		for (uint64_t unit = 1; unit <= 4; unit *= 4)
			for (uint64_t length = 1; length < 200; length++) {
				uint64_t end[16] = { 0 };
				unsigned n = rmpc_stripe_split(ks[a], unit, 0,
							       length, p);

				for (unsigned i = 0; i < n; i++)
					end[p[i].stripe] = p[i].off + p[i].len;
				for (unsigned s = 0; s < ks[a]; s++)
					bad += end[s] != rmpc_stripe_size(
						ks[a], unit, length, s);
			}
	CHECK_EQ(bad, 0);
}

/* Where a part's bytes lie locally: a unit, then the gap; runs end at
 * units. */
static void test_local(void)
{
	/* a run from offset 4 KiB + 100 of units of 4 KiB, gap 8 KiB */
	CHECK_EQ(rmpc_stripe_at(4196, 4096, 8192, 0), 0);
	CHECK_EQ(rmpc_stripe_at(4196, 4096, 8192, 3995), 3995);
	CHECK_EQ(rmpc_stripe_at(4196, 4096, 8192, 3996), 3996 + 8192);
	CHECK_EQ(rmpc_stripe_at(4196, 4096, 8192, 3996 + 4096),
		 3996 + 4096 + 2 * 8192);
	CHECK_EQ(rmpc_stripe_contig(4196, 4096, 8192, 0, 100000), 3996);
	CHECK_EQ(rmpc_stripe_contig(4196, 4096, 8192, 0, 10), 10);
	CHECK_EQ(rmpc_stripe_contig(4196, 4096, 8192, 3996, 100000), 4096);
	CHECK_EQ(rmpc_stripe_contig(4196, 4096, 8192, 3997, 1), 1);
}

int main(void)
{
	test_split_exhaustive();
	test_split_empty();
	test_split_identity();
	test_split_many_units();
	test_size();
	test_size_is_split_end();
	test_local();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* test_alloc.c -- unit tests of the TLSF pool extent allocator. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"

#define KiB (1024ull)
#define MiB (1024ull * KiB)
#define GRAIN ((uint64_t)RMP_ALLOC_GRAIN)

/* xorshift64*: small, fast and reproducible across libcs. */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint64_t rng_range(uint64_t lo, uint64_t hi)
{
	return lo + rng() % (hi - lo + 1);
}

static uint64_t round_grain(uint64_t len)
{
	return (len + GRAIN - 1) / GRAIN * GRAIN;
}

static struct rmp_alloc_stats stats(const struct rmp_alloc *a)
{
	struct rmp_alloc_stats st;

	rmp_alloc_stats(a, &st);
	return st;
}

/* Whether the pool is one free extent again: stats and a full-size get. */
static bool is_one_free_extent(struct rmp_alloc *a)
{
	struct rmp_alloc_stats st = stats(a);
	struct rmp_extent e = { .offset = 1 };

	if (st.free_bytes != st.size || st.extents ||
	    st.largest_free != st.size)
		return false;
	if (rmp_alloc_get(a, st.size, 0, &e) || e.offset ||
	    e.length != st.size)
		return false;
	return rmp_alloc_put(a, &e) == 0;
}

/* e moved by delta bytes: no longer the extent the allocator gave. */
static struct rmp_extent moved(struct rmp_extent e, uint64_t delta)
{
	e.offset += delta;
	return e;
}

static void test_new(void)
{
	struct rmp_alloc *a;
	struct rmp_alloc_stats st;

	CHECK(rmp_alloc_new(0) == NULL);
	CHECK(rmp_alloc_new(100) == NULL);
	CHECK(rmp_alloc_new(GRAIN + 1) == NULL);
	rmp_alloc_free(NULL);

	a = rmp_alloc_new(GRAIN);
	CHECK(a != NULL);
	CHECK_EQ(rmp_alloc_check(a), 0);
	rmp_alloc_free(a);

	a = rmp_alloc_new(64 * MiB);
	CHECK(a != NULL);
	CHECK_EQ(rmp_alloc_check(a), 0);
	st = stats(a);
	CHECK_EQ(st.size, 64 * MiB);
	CHECK_EQ(st.free_bytes, 64 * MiB);
	CHECK_EQ(st.largest_free, 64 * MiB);
	CHECK_EQ(st.extents, 0);
	rmp_alloc_free(a);
}

static void test_args_and_rounding(void)
{
	struct rmp_alloc *a = rmp_alloc_new(1 * MiB);
	struct rmp_extent e, es[8];
	static const struct {
		uint64_t in, out;
	} r[] = {
		{ 1, 64 }, { 63, 64 }, { 64, 64 }, { 65, 128 },
		{ 1000, 1024 }, { 4096, 4096 }, { 4097, 4160 },
	};
	size_t i;

	CHECK_EQ(rmp_alloc_get(a, 0, 0, &e), -EINVAL);
	CHECK_EQ(rmp_alloc_get(a, 64, 192, &e), -EINVAL);
	CHECK_EQ(rmp_alloc_get(a, 64, 4097, &e), -EINVAL);
	CHECK_EQ(rmp_alloc_get(NULL, 64, 0, &e), -EINVAL);
	CHECK_EQ(rmp_alloc_get(a, 64, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_alloc_get(a, UINT64_MAX, 0, &e), -ENOSPC);
	CHECK_EQ(rmp_alloc_get(a, 1 * MiB + 1, 0, &e), -ENOSPC);

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		es[i].length = 0;
		CHECK_EQ(rmp_alloc_get(a, r[i].in, 0, &es[i]), 0);
		CHECK_EQ(es[i].length, r[i].out);
		CHECK_EQ(es[i].offset % GRAIN, 0);
	}
	/* Any align <= GRAIN, even not a power of two, means GRAIN. */
	CHECK_EQ(rmp_alloc_get(a, 10, 3, &es[i]), 0);
	CHECK_EQ(es[i].length, 64);
	CHECK_EQ(stats(a).extents, i + 1);
	CHECK_EQ(rmp_alloc_check(a), 0);
	for (i++; i-- > 0;)
		CHECK_EQ(rmp_alloc_put(a, &es[i]), 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK(is_one_free_extent(a));
	rmp_alloc_free(a);
}

static void test_bad_put(void)
{
	struct rmp_alloc *a = rmp_alloc_new(1 * MiB);
	struct rmp_alloc_stats before, after;
	struct rmp_extent e1, e2, bad, zero = { 0, GRAIN, 0 };

	/* Descriptor 0 describes the one free block: not an extent. */
	CHECK_EQ(rmp_alloc_put(a, &zero), -ENOENT);
	CHECK_EQ(rmp_alloc_put(a, NULL), -EINVAL);
	CHECK_EQ(rmp_alloc_get(a, 4096, 0, &e1), 0);
	CHECK_EQ(rmp_alloc_get(a, 4096, 0, &e2), 0);
	before = stats(a);
	bad = moved(e1, 64);                            /* inside */
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad = moved(e1, 1);                             /* unaligned */
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad = moved(e2, 4096);                          /* free block */
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad = moved(e1, 1 * MiB);                       /* past the end */
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad = e1;                                       /* e2's offset */
	bad.offset = e2.offset;
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad = e1;                                       /* wrong length */
	bad.length += GRAIN;
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad = e1;                                       /* no such id */
	bad.id = UINT32_MAX;
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	bad.id = e1.id + 1000;                          /* a spare one */
	CHECK_EQ(rmp_alloc_put(a, &bad), -ENOENT);
	after = stats(a);
	CHECK(memcmp(&before, &after, sizeof(before)) == 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK_EQ(rmp_alloc_put(a, &e1), 0);
	CHECK_EQ(rmp_alloc_put(a, &e1), -ENOENT);       /* double put */
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK_EQ(rmp_alloc_put(a, &e2), 0);
	CHECK(is_one_free_extent(a));
	rmp_alloc_free(a);
}

static void test_exhaustion(void)
{
	struct rmp_alloc *a = rmp_alloc_new(1 * MiB);
	struct rmp_extent e, whole, es[256];
	int i, bad = 0;

	CHECK_EQ(rmp_alloc_get(a, 1 * MiB, 0, &e), 0);
	CHECK_EQ(e.offset, 0);
	CHECK_EQ(e.length, 1 * MiB);
	CHECK_EQ(stats(a).free_bytes, 0);
	CHECK_EQ(stats(a).largest_free, 0);
	whole = e;
	CHECK_EQ(rmp_alloc_get(a, 1, 0, &e), -ENOSPC);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK_EQ(rmp_alloc_put(a, &whole), 0);

	for (i = 0; i < 256; i++)
		bad += rmp_alloc_get(a, 4096, 0, &es[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(stats(a).extents, 256);
	CHECK_EQ(rmp_alloc_get(a, 64, 0, &e), -ENOSPC);
	CHECK_EQ(rmp_alloc_check(a), 0);

	/* Free every other page: 512 KiB free, but no 8 KiB hole. */
	for (i = 0; i < 256; i += 2)
		bad += rmp_alloc_put(a, &es[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(stats(a).free_bytes, 512 * KiB);
	CHECK_EQ(stats(a).largest_free, 4096);
	CHECK_EQ(rmp_alloc_get(a, 4097, 0, &e), -ENOSPC);
	CHECK_EQ(rmp_alloc_get(a, 4096, 8192, &e), 0);
	CHECK_EQ(e.offset % 8192, 0);
	CHECK_EQ(rmp_alloc_put(a, &e), 0);
	CHECK_EQ(rmp_alloc_check(a), 0);

	/* Free the rest in reverse: everything must merge back. */
	for (i = 255; i >= 0; i -= 2)
		bad += rmp_alloc_put(a, &es[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK(is_one_free_extent(a));
	rmp_alloc_free(a);
}

static void test_alignment(void)
{
	struct rmp_alloc *a = rmp_alloc_new(256 * MiB);
	struct rmp_extent e, es[64], first;
	uint64_t align;
	unsigned int n = 0, bad = 0;
	int round;

	/* Knock every later block off any large alignment. */
	CHECK_EQ(rmp_alloc_get(a, 64, 0, &first), 0);
	for (round = 0; round < 2; round++) {
		for (align = 64; align <= 2 * MiB; align *= 2) {
			uint64_t want = round ? align + 64 : 100;

			if (rmp_alloc_get(a, want, align, &e)) {
				bad++;
				continue;
			}
			es[n++] = e;
			bad += e.offset % align != 0;
			bad += e.length != round_grain(want);
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(n, 32);
	CHECK_EQ(rmp_alloc_check(a), 0);
	while (n)
		bad += rmp_alloc_put(a, &es[--n]) != 0;
	CHECK_EQ(rmp_alloc_put(a, &first), 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK(is_one_free_extent(a));
	rmp_alloc_free(a);

	/* An alignment above the pool size can only be met at offset 0. */
	a = rmp_alloc_new(1 * MiB);
	CHECK_EQ(rmp_alloc_get(a, 4096, 1ull << 30, &e), 0);
	CHECK_EQ(e.offset, 0);
	CHECK_EQ(rmp_alloc_get(a, 64, 1ull << 63, &first), -ENOSPC);
	CHECK_EQ(rmp_alloc_put(a, &e), 0);
	CHECK_EQ(rmp_alloc_get(a, 64, 1ull << 63, &e), 0);
	CHECK_EQ(e.offset, 0);
	CHECK_EQ(rmp_alloc_put(a, &e), 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	rmp_alloc_free(a);
}

/* largest_free is a real free extent and within 33/32 of the largest. */
static void test_largest_free(void)
{
	struct rmp_alloc *a = rmp_alloc_new(64 * MiB);
	struct rmp_extent e, o[4];
	struct rmp_alloc_stats st;

	/* Holes of 1008, 1020 and 1012 grains: all in one class. */
	CHECK_EQ(rmp_alloc_get(a, 1008 * GRAIN, 0, &o[0]), 0);
	CHECK_EQ(rmp_alloc_get(a, 64, 0, &e), 0);
	CHECK_EQ(rmp_alloc_get(a, 1020 * GRAIN, 0, &o[1]), 0);
	CHECK_EQ(rmp_alloc_get(a, 64, 0, &e), 0);
	CHECK_EQ(rmp_alloc_get(a, 1012 * GRAIN, 0, &o[2]), 0);
	CHECK_EQ(rmp_alloc_get(a, 64, 0, &e), 0);
	CHECK_EQ(rmp_alloc_get(a, stats(a).free_bytes, 0, &o[3]), 0);
	CHECK_EQ(stats(a).free_bytes, 0);
	CHECK_EQ(stats(a).largest_free, 0);
	CHECK_EQ(rmp_alloc_put(a, &o[0]), 0);
	CHECK_EQ(rmp_alloc_put(a, &o[1]), 0);
	CHECK_EQ(rmp_alloc_put(a, &o[2]), 0);
	st = stats(a);
	CHECK_EQ(st.free_bytes, 3040 * GRAIN);
	CHECK(st.largest_free >= 1008 * GRAIN);
	CHECK(st.largest_free <= 1020 * GRAIN);
	CHECK(1020 * GRAIN * 32 < st.largest_free * 33);
	/*
	 * A get of largest_free must succeed although it is not a class
	 * start: the rounded search finds nothing, the class head is used.
	 */
	CHECK_EQ(rmp_alloc_get(a, st.largest_free, 0, &e), 0);
	CHECK_EQ(e.length, st.largest_free);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK_EQ(rmp_alloc_put(a, &e), 0);
	CHECK_EQ(rmp_alloc_put(a, &o[3]), 0);
	CHECK_EQ(stats(a).largest_free, stats(a).size - o[3].offset);
	CHECK_EQ(rmp_alloc_check(a), 0);
	rmp_alloc_free(a);
}

/*
 * Randomised run against a shadow model: owner[] has one byte per grain
 * (set while allocated), live[] the extents handed out. Every get must
 * land on grains the model holds free; stats must match the model.
 */
#define RPOOL (16 * MiB)
#define RGRAINS (RPOOL / GRAIN)
#define RMAX_LIVE 4096
#define ROPS 200000

static uint8_t owner[RGRAINS];
static struct rmp_extent live[RMAX_LIVE];

/* The largest run of free grains in the model, in bytes. */
static uint64_t model_largest(void)
{
	uint64_t best = 0, run = 0, i;

	for (i = 0; i < RGRAINS; i++) {
		run = owner[i] ? 0 : run + 1;
		if (run > best)
			best = run;
	}
	return best * GRAIN;
}

static bool model_range_free(uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = off / GRAIN; i < (off + len) / GRAIN; i++)
		if (owner[i])
			return false;
	return true;
}

static uint64_t random_length(int small_phase)
{
	uint64_t r = rng() % 100;

	if (small_phase || r < 60)
		return rng_range(1, 4096);
	if (r < 90)
		return rng_range(4097, 64 * KiB);
	return rng_range(64 * KiB + 1, 1 * MiB);
}

static uint64_t random_align(void)
{
	if (rng() % 100 < 70)
		return rng() % 2 ? 0 : rng() % 65;
	return 1ull << rng_range(6, 21); /* 64 B .. 2 MiB */
}

static void test_random(void)
{
	struct rmp_alloc *a = rmp_alloc_new(RPOOL);
	unsigned int n = 0, i, k, op;
	unsigned int overlap = 0, misaligned = 0, badlen = 0, badret = 0;
	unsigned int bad_check = 0, bad_stats = 0, bad_largest = 0;
	unsigned int bad_enospc = 0, gets = 0, enospc = 0, bad_put = 0;
	uint64_t used = 0, peak = 0;
	struct rmp_alloc_stats st;

	memset(owner, 0, sizeof(owner));
	for (op = 0; op < ROPS; op++) {
		int small = (op / 20000) % 2 == 0;
		uint64_t r = rng() % 100;
		struct rmp_extent e;

		if (n == 0 || (n < RMAX_LIVE && r < 55)) {
			uint64_t want = random_length(small);
			uint64_t align = random_align();
			uint64_t al = align <= GRAIN ? GRAIN : align;
			int ret = rmp_alloc_get(a, want, align, &e);

			gets++;
			if (ret == -ENOSPC) {
				/*
				 * TLSF may miss a fit, but never a free run
				 * of the class after need = len + padding.
				 */
				uint64_t need = round_grain(want) + al - GRAIN;

				if (enospc++ < 2000 &&
				    model_largest() >= need + need / 32 + GRAIN)
					bad_enospc++;
				continue;
			}
			if (ret) {
				badret++;
				continue;
			}
			misaligned += e.offset % al != 0;
			badlen += e.length != round_grain(want);
			if (e.offset + e.length > RPOOL ||
			    !model_range_free(e.offset, e.length)) {
				overlap++;
				continue;
			}
			memset(&owner[e.offset / GRAIN], 1, e.length / GRAIN);
			live[n++] = e;
			used += e.length;
		} else if (r < 98) {
			k = (unsigned int)(rng() % n);
			bad_put += rmp_alloc_put(a, &live[k]) != 0;
			memset(&owner[live[k].offset / GRAIN], 0,
			       live[k].length / GRAIN);
			used -= live[k].length;
			live[k] = live[--n];
		} else {
			/* Not an extent start: inside one, or a free spot. */
			k = (unsigned int)(rng() % n);
			e = moved(live[k], live[k].length > GRAIN ? GRAIN : 1);
			bad_put += rmp_alloc_put(a, &e) != -ENOENT;
		}
		if (used > peak)
			peak = used;

		if (op % 1000 == 0) {
			bad_check += rmp_alloc_check(a) != 0;
			st = stats(a);
			bad_stats += st.free_bytes != RPOOL - used ||
				     st.extents != n || st.size != RPOOL;
		}
		if (op % 5000 == 0) {
			uint64_t big = model_largest();

			st = stats(a);
			bad_largest += st.largest_free > big ||
				       st.largest_free * 33 <= big * 32;
			if (st.largest_free) {
				if (rmp_alloc_get(a, st.largest_free, 0,
						  &e) ||
				    rmp_alloc_put(a, &e))
					bad_largest++;
			}
		}
	}
	CHECK_EQ(overlap, 0);
	CHECK_EQ(misaligned, 0);
	CHECK_EQ(badlen, 0);
	CHECK_EQ(badret, 0);
	CHECK_EQ(bad_put, 0);
	CHECK_EQ(bad_check, 0);
	CHECK_EQ(bad_stats, 0);
	CHECK_EQ(bad_largest, 0);
	CHECK_EQ(bad_enospc, 0);
	/* The run must have both filled the pool and hit exhaustion. */
	CHECK(enospc > 0 && enospc < gets);
	CHECK(peak > RPOOL / 2);
	printf("# random: %u gets, %u -ENOSPC, peak %llu KiB in use\n", gets,
	       enospc, (unsigned long long)(peak / KiB));

	/* Free what is left in random order: all must coalesce. */
	while (n) {
		k = (unsigned int)(rng() % n);
		bad_put += rmp_alloc_put(a, &live[k]) != 0;
		live[k] = live[--n];
		if (n % 64 == 0)
			bad_check += rmp_alloc_check(a) != 0;
	}
	CHECK_EQ(bad_put, 0);
	CHECK_EQ(bad_check, 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK(is_one_free_extent(a));
	for (i = 0; i < RGRAINS; i++)
		owner[i] = 0;
	rmp_alloc_free(a);
}

/* Many small extents: descriptor slabs must grow and stay consistent. */
static void test_many(void)
{
	enum { N = 50000 };
	struct rmp_alloc *a = rmp_alloc_new(N * GRAIN * 2);
	static struct rmp_extent es[N];
	unsigned int i, bad = 0;

	for (i = 0; i < N; i++)
		bad += rmp_alloc_get(a, 1 + i % 128, 0, &es[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(stats(a).extents, N);
	CHECK_EQ(rmp_alloc_check(a), 0);
	for (i = 0; i < N; i += 2)
		bad += rmp_alloc_put(a, &es[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	for (i = 1; i < N; i += 2)
		bad += rmp_alloc_put(a, &es[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	CHECK(is_one_free_extent(a));
	rmp_alloc_free(a);
}

/*
 * test_take -- exact ranges back after a restart: in increasing order and
 * not, next to each other and apart; overlaps and bad ranges refused;
 * what was taken is put back like any extent.
 */
static void test_take(void)
{
	struct rmp_alloc *a = rmp_alloc_new(1 * MiB);
	struct rmp_extent e[6], x;
	static const uint64_t at[][2] = {
		{ 0, 4 * KiB }, { 4 * KiB, 64 }, { 64 * KiB, 128 * KiB },
		{ 900 * KiB, 124 * KiB }, { 512 * KiB, 4 * KiB },
		{ 8 * KiB, 8 * KiB },
	};

	CHECK(a != NULL);
	for (unsigned i = 0; i < 6; i++) {
		CHECK_EQ(rmp_alloc_take(a, at[i][0], at[i][1], &e[i]), 0);
		CHECK_EQ(e[i].offset, at[i][0]);
		CHECK_EQ(e[i].length, at[i][1]);
		CHECK_EQ(rmp_alloc_check(a), 0);
	}
	CHECK_EQ(stats(a).extents, 6);
	CHECK_EQ(stats(a).free_bytes, 1 * MiB - (4 * KiB + 64 + 128 * KiB +
		 124 * KiB + 4 * KiB + 8 * KiB));
	/* Overlapping a taken range, at its start, middle or end: busy. */
	CHECK_EQ(rmp_alloc_take(a, 0, 64, &x), -EBUSY);
	CHECK_EQ(rmp_alloc_take(a, 100 * KiB, 4 * KiB, &x), -EBUSY);
	CHECK_EQ(rmp_alloc_take(a, 60 * KiB, 8 * KiB, &x), -EBUSY);
	CHECK_EQ(rmp_alloc_take(a, 1020 * KiB, 8 * KiB, &x), -EINVAL);
	CHECK_EQ(rmp_alloc_take(a, 32 * KiB, 0, &x), -EINVAL);
	CHECK_EQ(rmp_alloc_take(a, 32 * KiB + 1, 64, &x), -EINVAL);
	CHECK_EQ(rmp_alloc_take(a, UINT64_MAX - 63, 64, &x), -EINVAL);
	CHECK_EQ(rmp_alloc_check(a), 0);
	/* get never hands out a taken byte. */
	for (unsigned n = 0; rmp_alloc_get(a, 4 * KiB, 0, &x) == 0; n++)
		for (unsigned i = 0; i < 6; i++)
			CHECK(x.offset + x.length <= e[i].offset ||
			      x.offset >= e[i].offset + e[i].length);
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(rmp_alloc_put(a, &e[i]), 0);
	CHECK_EQ(rmp_alloc_check(a), 0);
	rmp_alloc_free(a);
}

int main(void)
{
	test_new();
	test_args_and_rounding();
	test_bad_put();
	test_exhaustion();
	test_alignment();
	test_largest_free();
	test_random();
	test_many();
	test_take();
	return check_done();
}

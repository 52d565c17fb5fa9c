/* SPDX-License-Identifier: MIT */
/* bench_alloc.c -- ns per extent get+put pair as live extents grow. */

/*
 * For each population the allocator (1 TiB virtual pool: only metadata is
 * touched) is filled with that many live extents of random length, 64 B
 * to 256 KiB, 1 in 8 aligned to 4 KiB..2 MiB. Then two loops are timed:
 *   churn: put a random live extent, get a new random one in its place
 *          (steady state, merges and splits all over the pool);
 *   lifo:  get an extent and put it straight back (the hot path).
 * If the cost does not depend on the number of live extents, the numbers
 * stay flat; what growth remains in churn comes from cache misses on a
 * larger working set (descriptors, hash buckets), not from the algorithm.
 *
 * Usage: bench_alloc [live ...]   (default: 1000 100000 1000000)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "alloc.h"

#define POOL (1ull << 40)
#ifndef OPS
#define OPS 2000000u
#endif

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Mostly small lengths, log-uniform between 64 B and 256 KiB. */
static uint64_t rand_len(void)
{
	unsigned int shift = 6 + (unsigned int)(rng() % 12);

	return (1ull << shift) + rng() % (1ull << shift);
}

static uint64_t rand_align(void)
{
	if (rng() % 8)
		return 0;
	return 1ull << (12 + rng() % 10);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int run(size_t live)
{
	struct rmp_alloc *a = rmp_alloc_new(POOL);
	uint64_t *offs = malloc(live * sizeof(*offs)), len, off;
	double t0, churn, lifo;
	size_t i;
	unsigned int n;

	if (!a || !offs) {
		fprintf(stderr, "bench_alloc: out of memory\n");
		return 1;
	}
	for (i = 0; i < live; i++) {
		if (rmp_alloc_get(a, rand_len(), rand_align(), &offs[i],
				  &len)) {
			fprintf(stderr, "bench_alloc: fill failed\n");
			return 1;
		}
	}

	t0 = now_ns();
	for (n = 0; n < OPS; n++) {
		i = (size_t)(rng() % live);
		if (rmp_alloc_put(a, offs[i]) ||
		    rmp_alloc_get(a, rand_len(), rand_align(), &offs[i],
				  &len)) {
			fprintf(stderr, "bench_alloc: churn failed\n");
			return 1;
		}
	}
	churn = (now_ns() - t0) / OPS;

	t0 = now_ns();
	for (n = 0; n < OPS; n++) {
		if (rmp_alloc_get(a, 4096 + (n & 63) * 64, 0, &off, &len) ||
		    rmp_alloc_put(a, off)) {
			fprintf(stderr, "bench_alloc: lifo failed\n");
			return 1;
		}
	}
	lifo = (now_ns() - t0) / OPS;

	if (rmp_alloc_check(a)) {
		fprintf(stderr, "bench_alloc: inconsistent allocator\n");
		return 1;
	}
	printf("%9zu live  churn %6.1f ns/pair  lifo %6.1f ns/pair\n", live,
	       churn, lifo);
	rmp_alloc_free(a);
	free(offs);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1000, 100000, 1000000 };
	size_t i, live;

	printf("rmp_alloc get+put, 1 TiB pool, %u pairs per loop\n", OPS);
	if (argc < 2) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (run(sizes[i]))
				return 1;
		return 0;
	}
	for (i = 1; i < (size_t)argc; i++) {
		live = strtoul(argv[i], NULL, 0);
		if (!live || run(live))
			return 1;
	}
	return 0;
}

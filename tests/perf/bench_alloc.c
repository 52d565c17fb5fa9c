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
 * larger working set (descriptors, class lists), not from the algorithm.
 * After the churn loop, fragmentation is printed as the largest free
 * extent (a lower bound, see rmp_alloc_stats) over all free bytes: 1.0
 * means one hole, small means the free space is scattered. A 1 TiB pool
 * with 10^6 extents of ~25 KiB is nearly all free, so the churn loop is
 * also run in a pool only 2x the live bytes ("tight"), where holes are
 * what every request must fit into.
 *
 * Usage: bench_alloc [live ...]   (default: 1000 100000 1000000)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * Fill a pool of pool_size with `live` random extents, then time OPS
 * churn pairs. A get that finds no room (only in a tight pool) puts back
 * another random extent and retries: counted in *retries, not an error.
 */
static int churn(uint64_t pool_size, size_t live, double *ns,
		 unsigned long *retries, struct rmp_alloc **out)
{
	struct rmp_alloc *a = rmp_alloc_new(pool_size);
	struct rmp_extent *es = calloc(live, sizeof(*es));
	size_t i, n = 0;
	unsigned int k;
	double t0;
	int ret;

	if (!a || !es) {
		fprintf(stderr, "bench_alloc: out of memory\n");
		return 1;
	}
	for (n = 0; n < live; n++) {
		if (rmp_alloc_get(a, rand_len(), rand_align(), &es[n])) {
			fprintf(stderr, "bench_alloc: fill failed\n");
			return 1;
		}
	}
	*retries = 0;
	t0 = now_ns();
	for (k = 0; k < OPS; k++) {
		i = (size_t)(rng() % live);
		ret = rmp_alloc_put(a, &es[i]);
		if (ret)
			goto broken;
		while ((ret = rmp_alloc_get(a, rand_len(), rand_align(),
					    &es[i])) == -ENOSPC) {
			size_t j = (size_t)(rng() % live);

			if (j == i)
				continue;
			/* A 64 B extent always fits where es[j] was. */
			if ((ret = rmp_alloc_put(a, &es[j])) ||
			    (ret = rmp_alloc_get(a, 64, 0, &es[j])))
				goto broken;
			++*retries;
		}
		if (ret)
			goto broken;
	}
	*ns = (now_ns() - t0) / OPS;
	free(es);
	*out = a;
	return 0;
broken:
	fprintf(stderr, "bench_alloc: churn failed: %s\n", strerror(-ret));
	return 1;
}

static int run(size_t live)
{
	struct rmp_alloc *a, *tight;
	struct rmp_alloc_stats st;
	struct rmp_extent e;
	double churn_ns, tight_ns, lifo;
	unsigned long retries, tight_retries;
	uint64_t tight_size;
	unsigned int n;
	double t0;

	if (churn(POOL, live, &churn_ns, &retries, &a))
		return 1;
	t0 = now_ns();
	for (n = 0; n < OPS; n++) {
		if (rmp_alloc_get(a, 4096 + (n & 63) * 64, 0, &e) ||
		    rmp_alloc_put(a, &e)) {
			fprintf(stderr, "bench_alloc: lifo failed\n");
			return 1;
		}
	}
	lifo = (now_ns() - t0) / OPS;
	if (rmp_alloc_check(a)) {
		fprintf(stderr, "bench_alloc: inconsistent allocator\n");
		return 1;
	}
	rmp_alloc_free(a);

	/* Mean extent ~24 KiB plus alignment: twice the live bytes. */
	tight_size = ((uint64_t)live * 56 * 1024 + (1ull << 21)) &
		     ~((uint64_t)RMP_ALLOC_GRAIN - 1);
	if (churn(tight_size, live, &tight_ns, &tight_retries, &tight))
		return 1;
	if (rmp_alloc_check(tight)) {
		fprintf(stderr, "bench_alloc: inconsistent allocator\n");
		return 1;
	}
	rmp_alloc_stats(tight, &st);
	rmp_alloc_free(tight);

	printf("%9zu live  churn %6.1f ns/pair (%5.2f M pairs/s)  lifo %5.1f "
	       "ns/pair\n", live, churn_ns, 1e3 / churn_ns, lifo);
	printf("%9s tight pool (%" PRIu64 " MiB): churn %6.1f ns/pair, %lu "
	       "puts to make room; then %" PRIu64 " MiB free, largest free "
	       "extent %" PRIu64 " KiB (%.2g of free)\n", "",
	       tight_size >> 20, tight_ns, tight_retries, st.free_bytes >> 20,
	       st.largest_free >> 10,
	       st.free_bytes ? (double)st.largest_free / st.free_bytes : 1.0);
	(void)retries;
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

/* SPDX-License-Identifier: MIT */
/* bench_startup.c -- what rmpoold's start costs: map, fault, lock, register. */

/*
 * Usage: bench_startup [--device NAME] [--node N] [--max-mr-size MIB]
 *                      [--fault-threads N] [SIZE_MIB ...]  (default: 64 256)
 *
 * For each pool size, on 2 MiB hugepages and then on 4 KiB pages, it
 * times the two steps rmpoold takes before it serves: rmp_pool_map (mmap,
 * bind to the NUMA node, fault every page in, mlock) and
 * rmp_pool_register (ibv_reg_mr, one MR per max_mr_size chunk: the
 * device's own limit unless --max-mr-size sets a smaller one), on the
 * first RDMA device or NAME, and prints each as milliseconds and MiB/s:
 *
 *   startup size=256MiB pages=2M faulters=2 map+fault+lock=..ms (..MiB/s)
 *           register=..ms (..MiB/s) mrs=1
 *
 * Each row is run with one faulting thread and with as many as rmpoold
 * uses (one per CPU it may run on, pools of 128 MiB and more), so the
 * gain of faulting in parallel shows in the same run; --fault-threads N
 * runs N only.
 * 4 KiB pages are had the way rmpoold falls back to them (hugepages =
 * preferred with no hugepage counters found): the sysfs root is pointed
 * at nothing. A step that fails ends the run with exit status 1; a
 * missing hugepage reservation prints the pool's message and skips that
 * row ("pages=2M skipped: ...").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "pool.h"

#define MiB ((uint64_t)1024 * 1024)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++) {
		if (name && strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		break;
	}
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* one -- map and register size bytes on huge (2 MiB) or 4 KiB pages. */
static int one(struct ibv_pd *pd, uint64_t size, int node, bool huge,
	       uint64_t max_mr, unsigned faulters)
{
	struct rmp_pool_params p = {
		.size = size,
		.hugepage_size = 2 * MiB,
		.hugepages_required = huge,
		.node = node,
		.lock = true,
		.sysroot = huge ? "" : "/nonexistent",
		.fault_threads = faulters,
	};
	struct rmp_pool *pool = NULL;
	char err[512];
	double t0, t1, t2, mib = (double)size / MiB;
	int ret;

	t0 = now_ms();
	ret = rmp_pool_map(&pool, &p, err, sizeof(err));
	t1 = now_ms();
	if (ret) {
		if (huge) {
			printf("startup size=%.0fMiB pages=2M faulters=%s skipped: "
			       "%s\n", mib, faulters == 1 ? "1" : "auto", err);
			return 0;
		}
		fprintf(stderr, "bench_startup: map: %s\n", err);
		return 1;
	}
	if (!huge && pool->page_size) {
		fprintf(stderr, "bench_startup: wanted 4 KiB pages, got %" PRIu64
			" kB ones\n", pool->page_size >> 10);
		rmp_pool_free(pool);
		return 1;
	}
	ret = rmp_pool_register(pool, pd, max_mr, IBV_ACCESS_LOCAL_WRITE);
	t2 = now_ms();
	if (ret) {
		fprintf(stderr, "bench_startup: register %.0f MiB: %s\n", mib,
			strerror(-ret));
		rmp_pool_free(pool);
		return 1;
	}
	printf("startup size=%.0fMiB pages=%s faulters=%s map+fault+lock="
	       "%.1fms (%.0fMiB/s) register=%.1fms (%.0fMiB/s) mrs=%u\n", mib,
	       huge ? "2M" : "4K", faulters == 1 ? "1" : "auto", t1 - t0,
	       mib / ((t1 - t0) / 1e3), t2 - t1, mib / ((t2 - t1) / 1e3),
	       pool->nchunks);
	fflush(stdout);
	rmp_pool_free(pool);
	return 0;
}

/* rows -- size on both page kinds, with 1 and with auto faulters. */
static int rows(struct ibv_pd *pd, uint64_t size, int node, uint64_t max_mr,
		int faulters)
{
	int bad = 0;

	for (int huge = 1; huge >= 0; huge--) {
		if (faulters < 0) {
			bad |= one(pd, size, node, huge, max_mr, 1);
			bad |= one(pd, size, node, huge, max_mr, 0);
		} else {
			bad |= one(pd, size, node, huge, max_mr,
				   (unsigned)faulters);
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	static const uint64_t sizes[] = { 64, 256 };
	const char *dev = NULL;
	uint64_t max_mr = 0;
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int node = 0, i = 1, bad = 0;
	int faulters = -1; /* -1: both 1 and auto (0) */

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "--device"))
			dev = argv[++i];
		else if (!strcmp(argv[i], "--node"))
			node = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max-mr-size"))
			max_mr = strtoull(argv[++i], NULL, 0) * MiB;
		else if (!strcmp(argv[i], "--fault-threads"))
			faulters = atoi(argv[++i]);
		else
			goto usage;
	}
	ctx = open_device(dev);
	if (!ctx) {
		fprintf(stderr, "bench_startup: no RDMA device %s\n",
			dev ? dev : "found");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_device(ctx, &da)) {
		fprintf(stderr, "bench_startup: cannot use %s\n",
			ibv_get_device_name(ctx->device));
		return 1;
	}
	if (!max_mr)
		max_mr = da.max_mr_size;
	printf("bench_startup: device %s, max_mr_size %" PRIu64 " MiB, NUMA "
	       "node %d\n", ibv_get_device_name(ctx->device), max_mr / MiB,
	       node);
	if (i == argc) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			bad |= rows(pd, sizes[k] * MiB, node, max_mr, faulters);
	}
	for (; i < argc; i++) {
		uint64_t mib = strtoull(argv[i], NULL, 0);

		if (!mib)
			goto usage;
		bad |= rows(pd, mib * MiB, node, max_mr, faulters);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return bad;
usage:
	fprintf(stderr, "usage: bench_startup [--device NAME] [--node N] "
		"[--max-mr-size MIB] [--fault-threads N] [SIZE_MIB ...]\n");
	return 2;
}

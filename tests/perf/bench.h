/* SPDX-License-Identifier: MIT */
/* bench.h -- rmpool-bench's run description (struct bench), shared by its argument parsing (bench_args.c) and its runs (rmpool_bench.c). */
#ifndef RMP_BENCH_H
#define RMP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_cluster.h"
#include "rmpool.h"
#include "token.h"

#define MAX_DEPTH 65536u
#define MAX_SIZES 32u
#define MAX_THREADS 64u

enum mode { READ_LAT, WRITE_LAT, FAA_LAT, CAS_LAT, ALLOC_LAT, ATTACH_LAT,
	    READ_BW, WRITE_BW };
/* The modes' names, as given on the command line, indexed by mode. */
extern const char *const mode_names[];

struct bench {
	enum mode mode;
	char host[256];
	uint16_t port;
	size_t size;
	uint64_t iters;
	unsigned depth;
	uint64_t warmup;
	bool busy_poll;
	long spin_max_us;       /* -1: the library's default */
	size_t sizes[MAX_SIZES]; /* --size list; size is the one running */
	unsigned nsizes;
	bool json;
	bool progress;
	unsigned threads;       /* bandwidth modes: connections at once */
	unsigned rails;         /* --rails N: bandwidth modes move each
				 * window (depth x size) with one synchronous
				 * call over the first N addresses of -s; the
				 * library cuts it in size-byte pieces */
	size_t rail_stripe;     /* --rail-stripe N: the connections' rail
				 * pieces (0: the library's default) */
	uint64_t progress_at;   /* next progress line, ns */

	struct rmp_client *c;
	struct rmp_lease *l;
	struct rmp_client *c2;  /* attach-lat: the attaching connection */
	char token[RMP_TOKEN_MAXLEN];
	unsigned attaches;
	struct rmp_buf *b;
	struct bench_cluster cluster; /* -C: leases placed on a cluster */
	struct rmp_buf *replica_b[BENCH_MEMBERS_MAX]; /* -C: the buffer
				 * registered with each further replica's
				 * connection too (zero copy to each) */
	unsigned replica_nb;
	struct rmp_client *member_c[BENCH_MEMBERS_MAX]; /* -C: each
				 * member's node, in the lease's order */
	unsigned member_nc;
	uint64_t leased;        /* -C: the tenant's bytes on those nodes
				 * with the lease (rmp_stat) */
	char *mem;
	size_t mem_len;
	uint64_t lease_len;
};

/* parse_args -- fill bp from the command line; a usage error exits 2. */
void parse_args(struct bench *bp, int argc, char **argv);

#endif

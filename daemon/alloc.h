/* SPDX-License-Identifier: MIT */
/* alloc.h -- extent allocator for the pool, metadata kept outside the pool. */
#ifndef RMP_ALLOC_H
#define RMP_ALLOC_H

#include <stdint.h>

/*
 * Hands out [offset, offset + length) extents of a pool of `size` bytes.
 * All bookkeeping lives in ordinary heap memory, never inside the pool:
 * clients write the pool with RDMA and must not be able to corrupt it.
 * Lengths are rounded up to RMP_ALLOC_GRAIN. Every call costs O(1) in the
 * number of live extents (see alloc.c for the structure).
 */
#define RMP_ALLOC_GRAIN 64u

struct rmp_alloc;

struct rmp_alloc_stats {
	uint64_t size;          /* bytes managed */
	uint64_t free_bytes;
	/*
	 * Length of a real free extent from the highest non-empty size
	 * class, so a get of it (default alignment) succeeds. A lower bound:
	 * the largest free extent is less than largest_free * 33 / 32, and
	 * equal to it when below 32 grains or alone in its class.
	 */
	uint64_t largest_free;
	uint64_t extents;       /* allocated extents */
};

/*
 * An allocated extent: [offset, offset + length) and the id of the
 * allocator's descriptor for it, which rmp_alloc_put takes back so that
 * freeing needs no lookup by offset (one cache miss fewer per free).
 */
struct rmp_extent {
	uint64_t offset;
	uint64_t length;        /* rounded up to RMP_ALLOC_GRAIN */
	uint32_t id;
};

/* size must be a multiple of RMP_ALLOC_GRAIN. NULL on ENOMEM/EINVAL. */
struct rmp_alloc *rmp_alloc_new(uint64_t size);
void rmp_alloc_free(struct rmp_alloc *a); /* accepts NULL */

/*
 * rmp_alloc_get -- reserve length bytes aligned to `align` (a power of two,
 * 0 or anything <= GRAIN means GRAIN). On success fills *ext and returns
 * 0. Errors: -EINVAL (length 0, bad align), -ENOSPC (no free extent large
 * enough), -ENOMEM (metadata).
 */
int rmp_alloc_get(struct rmp_alloc *a, uint64_t length, uint64_t align,
		  struct rmp_extent *ext);

/*
 * rmp_alloc_put -- return an extent exactly as rmp_alloc_get filled it in.
 * Returns 0, or -ENOENT when ext is not a live extent (id, offset and
 * length must all match: a bug in the caller; the allocator stays
 * consistent). An extent freed and then handed out again with the same
 * offset and length may get the same id: telling such a put twice apart
 * is the caller's job (the lease state machine's, in the daemon).
 */
int rmp_alloc_put(struct rmp_alloc *a, const struct rmp_extent *ext);

/*
 * rmp_alloc_take -- reserve exactly [offset, offset + length), as a lease
 * recovered after a restart needs its old bytes back. Both multiples of
 * the grain. Fills *ext as rmp_alloc_get does. Errors: -EINVAL (unaligned,
 * empty or out of range), -EBUSY (some of it is not free), -ENOMEM.
 * Constant time when called in increasing offset order (recovery sorts
 * first); a backward walk over the blocks otherwise.
 */
int rmp_alloc_take(struct rmp_alloc *a, uint64_t offset, uint64_t length,
		   struct rmp_extent *ext);

void rmp_alloc_stats(const struct rmp_alloc *a, struct rmp_alloc_stats *st);

/* Full consistency check for tests: 0 or -EFAULT with no side effect. */
int rmp_alloc_check(const struct rmp_alloc *a);

#endif /* RMP_ALLOC_H */

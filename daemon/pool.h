/* SPDX-License-Identifier: MIT */
/* pool.h -- the pinned, NUMA-local, once-registered memory pool. */
#ifndef RMP_POOL_H
#define RMP_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"

struct ibv_pd;
struct ibv_mr;
struct rmp_journal;

/* Most RDMA devices one rmpoold serves: each pool is registered on each. */
#define RMP_DEVICES_MAX 8

struct rmp_pool_params {
	uint64_t size;          /* bytes; a multiple of hugepage_size */
	uint64_t hugepage_size; /* 2 MiB or 1 GiB */
	bool hugepages_required; /* else fall back to normal pages */
	int node;               /* NUMA node to bind to, >= 0 */
	bool lock;              /* mlock the pool */
	const char *sysroot;    /* "" for the real /sys (tests: a fixture) */
	unsigned fault_threads; /* threads faulting the pool in; 0 = one per
				 * CPU we may run on (at most 16) */
	/* A file that holds the pool and, after it, state_bytes more (the
	 * lease journal), so both outlive the process; NULL = anonymous
	 * memory. On hugetlbfs for hugepages, tmpfs for normal pages. With
	 * has_state_fd: the name of state_fd, for messages. */
	const char *state_file;
	uint64_t state_bytes;
	/* Or a file already open (a memfd from systemd's fd store): used
	 * instead of state_file when has_state_fd; the pool owns it then. */
	bool has_state_fd;
	int state_fd;
};

/*
 * The pool is split into chunks of at most every device's max_mr_size;
 * each chunk is one MR on each device (mr[d] on device d, all at the same
 * iova) and has its own allocator, so a lease never straddles two MRs (a
 * memory window binds inside one MR).
 */
struct rmp_pool_chunk {
	uint64_t offset; /* of the chunk in the pool */
	uint64_t size;
	struct ibv_mr *mr[RMP_DEVICES_MAX];
	struct rmp_alloc *alloc;
};

struct rmp_pool {
	uint8_t *base;
	uint64_t size;
	/* What clients see as the pool's address (its MRs are registered
	 * at it): random per start, so that no lease tells a client where
	 * the pool lies in rmpoold's address space. Same offset within
	 * 1 GiB as base, so a NIC can use the largest pages for both. */
	uint64_t iova;
	uint64_t page_size;  /* hugepage size, or 0 for normal pages */
	int node;
	uint32_t nchunks;
	uint64_t chunk_span; /* every chunk but the last has this size */
	struct rmp_pool_chunk *chunks;
	/* With a state file: its fd (locked), the state_bytes after the
	 * pool, and whether the file was there already with this size
	 * (its bytes are an earlier process's: the caller decides what of
	 * them to keep and must zero the rest). */
	int state_fd;
	uint8_t *state;
	uint64_t state_len;
	bool adopted;
	/* Its leases' journal, in state (NULL without a state file); opened
	 * and closed by the server, written by the lease lifecycle. */
	struct rmp_journal *journal;
	bool journal_found;  /* it held leases of an earlier run */
	unsigned index;      /* of the device it belongs to (its ALLOCs) */
	char device[64];     /* that device's name, for messages */
};

/*
 * rmp_pool_map -- map the pool on hugepages bound to p->node, fault it in
 * and lock it. With hugepages required and too few free on the node,
 * fails with -ENOMEM and an operator message in err naming the page count,
 * size, node and the sysfs file to raise. With hugepages preferred, falls
 * back to normal pages and puts the warning in err (return 0; err[0] !=
 * 0). Other errors: -errno of mmap/mbind/mlock, message in err.
 */
int rmp_pool_map(struct rmp_pool **out, const struct rmp_pool_params *p,
		 char *err, size_t errlen);

/*
 * rmp_pool_take -- reserve exactly ext->length bytes at ext->offset (a
 * lease recovered after a restart), filling in ext->id. Errors as
 * rmp_alloc_take (-EBUSY: not free; -EINVAL: crosses a chunk boundary).
 */
int rmp_pool_take(struct rmp_pool *pool, struct rmp_extent *ext);

/*
 * rmp_pool_chunk -- cut the pool into chunks of at most max_mr_size (the
 * smallest of the devices it will be registered on; 0 = no limit) and
 * create their allocators. Once, before rmp_pool_register. 0 or -errno.
 */
int rmp_pool_chunk(struct rmp_pool *pool, uint64_t max_mr_size);

/*
 * rmp_pool_register -- register every chunk with pd, the PD of device
 * dev (< RMP_DEVICES_MAX), with the given IBV_ACCESS_* flags: once per
 * device, each in its own thread if the caller likes (it touches only
 * the chunks' mr[dev]). 0 or -errno.
 *
 * The caller picks the rights: an MR with remote rights in a PD that
 * client QPs use is a key to every lease (its rkey is 8 random bits on a
 * small index), so only `pool` key mode grants them.
 */
int rmp_pool_register(struct rmp_pool *pool, struct ibv_pd *pd,
		      unsigned dev, unsigned access);

/* rmp_pool_free -- deregister, unmap, free. Accepts NULL and half-built. */
void rmp_pool_free(struct rmp_pool *pool);

/*
 * rmp_pool_get -- reserve length bytes (aligned) from the first chunk
 * that has room. Fills *ext with the pool offset, the rounded length and
 * the allocator's id. Errors as rmp_alloc_get (-ENOSPC when no chunk has
 * room).
 */
int rmp_pool_get(struct rmp_pool *pool, uint64_t length, uint64_t align,
		 struct rmp_extent *ext);
/*
 * rmp_pool_release -- return an extent, as rmp_pool_get filled it in, to
 * its allocator. The caller has zeroed it (free extents are always zero:
 * a fresh mapping is). 0 or -ENOENT.
 */
int rmp_pool_release(struct rmp_pool *pool, const struct rmp_extent *ext);
/* The chunk that holds pool offset off. */
struct rmp_pool_chunk *rmp_pool_chunk_of(struct rmp_pool *pool, uint64_t off);

struct rmp_pool_stats {
	uint64_t size, free_bytes, largest_free, extents;
};
void rmp_pool_stats(const struct rmp_pool *pool, struct rmp_pool_stats *st);

#endif /* RMP_POOL_H */

/* SPDX-License-Identifier: MIT */
/* pool.c -- map, bind, fault in, lock and register the memory pool. */
#include <errno.h>
#include <inttypes.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "alloc.h"
#include "topology.h"
#include "pool.h"
#include "util.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#define HUGETLBFS_MAGIC 0x958458f6


/* log2_u64 -- log2 of a power of two. */
static int log2_u64(uint64_t v)
{
	return 63 - __builtin_clzll(v);
}

/*
 * check_hugepages -- are there enough free hugepages on the node? Returns
 * 0 when there are, -ENOMEM with the operator's message otherwise, or
 * -errno when the counters cannot be read (treated the same by callers).
 */
static int check_hugepages(const struct rmp_pool_params *p, char *err,
			   size_t errlen)
{
	uint64_t need = p->size / p->hugepage_size, have = 0;
	char path[512];
	int ret;

	ret = rmp_hugepages_free(p->sysroot, p->node, p->hugepage_size, &have,
				 path, sizeof(path));
	if (ret < 0) {
		snprintf(err, errlen, "cannot read free %" PRIu64 " kB "
			 "hugepages of NUMA node %d: %s", p->hugepage_size >> 10,
			 p->node, strerror(-ret));
		return ret;
	}
	if (have >= need)
		return 0;
	snprintf(err, errlen, "pool needs %" PRIu64 " hugepages of %" PRIu64
		 " kB on NUMA node %d, %" PRIu64 " free: raise %s (e.g. echo %"
		 PRIu64 " > %s)", need, p->hugepage_size >> 10, p->node, have,
		 path, need, path);
	return -ENOMEM;
}

/*
 * Faulting the pool in is most of the start-up cost (the kernel zeroes
 * every page; bench_startup measures it), and page faults of different
 * CPUs run in parallel, so large pools are touched by several threads,
 * each a slice. Placement does not depend on the touching CPU: the
 * mbind policy puts every page on the node.
 */
#define FAULT_THREADS_MAX 16u
#define FAULT_SLICE_MIN (64ull << 20) /* smaller pools: one thread */

struct touch_slice {
	uint8_t *base;
	uint64_t len, step;
	pthread_t thread;
};

static void *touch(void *arg)
{
	struct touch_slice *t = arg;

	for (uint64_t off = 0; off < t->len; off += t->step)
		((volatile uint8_t *)t->base)[off] = 0;
	return NULL;
}

/* keep_touch -- fault in, keeping what the bytes hold (an adopted file). */
static void *keep_touch(void *arg)
{
	struct touch_slice *t = arg;
	volatile uint8_t *b = t->base;

	for (uint64_t off = 0; off < t->len; off += t->step)
		b[off] = b[off];
	return NULL;
}

static unsigned fault_threads(const struct rmp_pool *pool,
			      const struct rmp_pool_params *p)
{
	unsigned n = p->fault_threads;
	cpu_set_t cpus;

	if (!n) {
		n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ?
			    (unsigned)CPU_COUNT(&cpus) : 1;
	}
	n = RMP_MIN(n, FAULT_THREADS_MAX);
	n = (unsigned)RMP_MIN((uint64_t)n, pool->size / FAULT_SLICE_MIN);
	return n ? n : 1;
}

/* touch_all -- fault every page in, with up to n threads. */
static void touch_all(struct rmp_pool *pool, uint64_t step, unsigned n)
{
	void *(*fn)(void *) = pool->adopted ? keep_touch : touch;
	struct touch_slice t[FAULT_THREADS_MAX];
	uint64_t slice = (pool->size / n + step - 1) / step * step, off = 0;
	bool started[FAULT_THREADS_MAX] = { false };
	unsigned k = 0;

	for (; k < n && off < pool->size; k++) {
		t[k].base = pool->base + off;
		t[k].len = RMP_MIN(slice, pool->size - off);
		t[k].step = step;
		off += t[k].len;
	}
	/* Slice 0 is ours; a slice whose thread cannot start is ours too. */
	for (unsigned i = 1; i < k; i++)
		started[i] = !pthread_create(&t[i].thread, NULL, fn, &t[i]);
	fn(&t[0]);
	for (unsigned i = 1; i < k; i++) {
		if (started[i])
			pthread_join(t[i].thread, NULL);
		else
			fn(&t[i]);
	}
}

/* bind_and_touch -- bind to the node, fault every page in, lock. */
static int bind_and_touch(struct rmp_pool *pool, const struct rmp_pool_params *p,
			  char *err, size_t errlen)
{
	unsigned long mask[16] = { 0 };
	uint64_t step = pool->page_size ? pool->page_size :
		(uint64_t)sysconf(_SC_PAGESIZE);

	if (p->node < 0 || p->node >= (int)(sizeof(mask) * 8)) {
		snprintf(err, errlen, "NUMA node %d out of range", p->node);
		return -EINVAL;
	}
	mask[p->node / 64] |= 1ul << (p->node % 64);
	/* Adopted pages are where the last process put them: only check
	 * placement of new ones. */
	if (mbind(pool->base, pool->size, MPOL_BIND, mask, sizeof(mask) * 8,
		  pool->adopted ? 0 : MPOL_MF_STRICT)) {
		int e = errno;

		snprintf(err, errlen, "mbind to NUMA node %d: %s", p->node,
			 strerror(e));
		return -e;
	}
	/* First touch after the bind places every page on the node. */
	touch_all(pool, step, fault_threads(pool, p));
	if (p->lock && mlock(pool->base, pool->size)) {
		int e = errno;

		snprintf(err, errlen, "mlock %" PRIu64 " bytes: %s (raise "
			 "LimitMEMLOCK / ulimit -l)", pool->size, strerror(e));
		return -e;
	}
	return 0;
}

/*
 * map_state_file -- map p->state_file (created, or adopted when it has
 * the right size) as the pool plus its state bytes. hugetlbfs gives the
 * pool hugepages; any other file system normal pages (refused when
 * hugepages are required). The file holds every lease's bytes and
 * secret: one that is not ours alone (a link, another owner, mode bits
 * for others, another name) is refused, not adopted. A state_fd (a
 * memfd) has no name anyone could have put there first.
 */
static int map_state_file(struct rmp_pool *pool,
			  const struct rmp_pool_params *p, char *err,
			  size_t errlen)
{
	const char *path = p->state_file;
	struct statfs fs;
	struct stat st;
	uint64_t page, total;
	int fd, ret;

	if (p->has_state_fd) {
		fd = p->state_fd;
	} else {
		char why[512];

		fd = rmp_open_private(path, why, sizeof(why));
		if (fd < 0) {
			snprintf(err, errlen, "state file %s", why);
			return fd;
		}
	}
	pool->state_fd = fd; /* ours from here on: closed at free */
	if (fstatfs(fd, &fs) || fstat(fd, &st))
		goto err_errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		snprintf(err, errlen, "state file %s: %s", path,
			 ret == -EWOULDBLOCK ? "in use by another rmpoold" :
			 strerror(-ret));
		return ret;
	}
	if ((uint32_t)fs.f_type == HUGETLBFS_MAGIC) {
		/* The mount's page size is the file's. */
		if ((uint64_t)fs.f_bsize != p->hugepage_size) {
			ret = -EINVAL;
			snprintf(err, errlen, "state file %s: its hugetlbfs "
				 "mount has %ld kB pages, the pool wants %"
				 PRIu64 " kB", path, (long)fs.f_bsize >> 10,
				 p->hugepage_size >> 10);
			return -EINVAL;
		}
		pool->page_size = p->hugepage_size;
	} else if (p->hugepages_required) {
		snprintf(err, errlen, "state file %s is not on hugetlbfs, and "
			 "the pool must be on hugepages: put state_dir on a "
			 "hugetlbfs mount (e.g. /dev/hugepages/rmpoold)", path);
		return -EINVAL;
	} else {
		pool->page_size = 0;
	}
	page = pool->page_size ? pool->page_size : 4096;
	pool->state_len = (p->state_bytes + page - 1) / page * page;
	total = p->size + pool->state_len;
	pool->adopted = (uint64_t)st.st_size == total;
	if (!pool->adopted) {
		/* Another size (or new): nothing in it is worth keeping. */
		if (st.st_size && ftruncate(fd, 0) == 0)
			snprintf(err, errlen, "state file %s had %lld bytes, "
				 "not %" PRIu64 ": its contents are dropped",
				 path, (long long)st.st_size, total);
		if (pool->page_size) {
			ret = check_hugepages(p, err, errlen);
			if (ret < 0)
				return ret;
		}
		if (ftruncate(fd, (off_t)total))
			goto err_errno;
	}
	pool->base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			  0);
	if (pool->base == MAP_FAILED) {
		ret = -errno;
		pool->base = NULL;
		snprintf(err, errlen, "mmap of state file %s (%" PRIu64
			 " bytes): %s", path, total, strerror(-ret));
		return ret;
	}
	pool->state = pool->base + p->size;
	return 0;
err_errno:
	ret = -errno;
	snprintf(err, errlen, "state file %s: %s", path, strerror(-ret));
	return ret;
}

/* choose_iova -- a random address in [2^60, 2^61) with base's offset
 * within 1 GiB (see struct rmp_pool). */
static int choose_iova(struct rmp_pool *pool)
{
	const uint64_t gib = UINT64_C(1) << 30;
	uint64_t r;
	int ret;

	ret = rmp_random64(&r);
	if (ret)
		return ret;
	pool->iova = (((r >> 34) | gib) << 30) |
		     ((uint64_t)(uintptr_t)pool->base & (gib - 1));
	return 0;
}

int rmp_pool_map(struct rmp_pool **out, const struct rmp_pool_params *p,
		 char *err, size_t errlen)
{
	struct rmp_pool *pool;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	int ret;

	err[0] = '\0';
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->size = p->size;
	pool->node = p->node;
	pool->page_size = p->hugepage_size;
	pool->state_fd = -1;
	if (p->state_file || p->has_state_fd) {
		ret = map_state_file(pool, p, err, errlen);
		if (ret < 0)
			goto err_free;
		goto mapped;
	}

	ret = check_hugepages(p, err, errlen);
	if (ret == 0) {
		flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			(log2_u64(p->hugepage_size) << MAP_HUGE_SHIFT);
		pool->base = mmap(NULL, p->size, PROT_READ | PROT_WRITE, flags,
				  -1, 0);
		if (pool->base == MAP_FAILED) {
			ret = -errno;
			pool->base = NULL;
			snprintf(err, errlen, "mmap of %" PRIu64 " bytes on %"
				 PRIu64 " kB hugepages: %s", p->size,
				 p->hugepage_size >> 10, strerror(-ret));
		}
	}
	if (ret < 0) {
		if (p->hugepages_required)
			goto err_free;
		/* hugepages = preferred: say why, then use normal pages. */
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, "; falling back to normal pages");
		pool->page_size = 0;
		pool->base = mmap(NULL, p->size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pool->base == MAP_FAILED) {
			ret = -errno;
			pool->base = NULL;
			snprintf(err, errlen, "mmap of %" PRIu64 " bytes: %s",
				 p->size, strerror(-ret));
			goto err_free;
		}
	}
mapped:
	/* Tenants' bytes, and the journal after them in a state file (every
	 * lease's secret), stay out of core dumps (rmpoold also turns its
	 * dumps off: main.c); nothing is lost if the kernel says no. */
	(void)madvise(pool->base, pool->size + pool->state_len,
		      MADV_DONTDUMP);
	ret = choose_iova(pool);
	if (ret < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(-ret));
		goto err_free;
	}
	ret = bind_and_touch(pool, p, err, errlen);
	if (ret < 0)
		goto err_free;
	*out = pool;
	return 0;

err_free:
	rmp_pool_free(pool);
	return ret;
}

int rmp_pool_chunk(struct rmp_pool *pool, uint64_t max_mr_size)
{
	uint64_t span = pool->size;
	uint32_t i;

	/* Chunks stay multiples of the page size so MRs start on pages. */
	if (max_mr_size && max_mr_size < span) {
		uint64_t page = pool->page_size ? pool->page_size : 4096;

		span = max_mr_size / page * page;
		if (span == 0)
			return -EINVAL;
	}
	pool->chunk_span = span;
	pool->nchunks = (uint32_t)((pool->size + span - 1) / span);
	pool->chunks = calloc(pool->nchunks, sizeof(*pool->chunks));
	if (!pool->chunks)
		return -ENOMEM;
	for (i = 0; i < pool->nchunks; i++) {
		struct rmp_pool_chunk *c = &pool->chunks[i];

		c->offset = (uint64_t)i * span;
		c->size = RMP_MIN(span, pool->size - c->offset);
		c->alloc = rmp_alloc_new(c->size);
		if (!c->alloc)
			return -ENOMEM;
	}
	return 0;
}

int rmp_pool_register(struct rmp_pool *pool, struct ibv_pd *pd,
		      unsigned dev, unsigned access)
{
	if (dev >= RMP_DEVICES_MAX || !pool->chunks)
		return -EINVAL;
	for (uint32_t i = 0; i < pool->nchunks; i++) {
		struct rmp_pool_chunk *c = &pool->chunks[i];

		c->mr[dev] = ibv_reg_mr_iova(pd, pool->base + c->offset,
					     c->size, pool->iova + c->offset,
					     (int)access);
		if (!c->mr[dev])
			return errno ? -errno : -EIO;
	}
	return 0;
}

void rmp_pool_free(struct rmp_pool *pool)
{
	if (!pool)
		return;
	for (uint32_t i = 0; pool->chunks && i < pool->nchunks; i++) {
		for (unsigned d = 0; d < RMP_DEVICES_MAX; d++)
			if (pool->chunks[i].mr[d])
				ibv_dereg_mr(pool->chunks[i].mr[d]);
		rmp_alloc_free(pool->chunks[i].alloc);
	}
	free(pool->chunks);
	if (pool->base)
		munmap(pool->base, pool->size + pool->state_len);
	/* The file stays: the next rmpoold adopts it. */
	if (pool->state_fd >= 0)
		close(pool->state_fd);
	free(pool);
}

int rmp_pool_take(struct rmp_pool *pool, struct rmp_extent *ext)
{
	struct rmp_pool_chunk *c = rmp_pool_chunk_of(pool, ext->offset);
	struct rmp_extent in_chunk;
	int ret;

	if (!c || ext->length > c->size - (ext->offset - c->offset))
		return -EINVAL;
	ret = rmp_alloc_take(c->alloc, ext->offset - c->offset, ext->length,
			     &in_chunk);
	if (ret == 0)
		ext->id = in_chunk.id;
	return ret;
}

int rmp_pool_get(struct rmp_pool *pool, uint64_t length, uint64_t align,
		 struct rmp_extent *ext)
{
	int ret = -ENOSPC;

	for (uint32_t i = 0; i < pool->nchunks; i++) {
		struct rmp_pool_chunk *c = &pool->chunks[i];

		ret = rmp_alloc_get(c->alloc, length, align, ext);
		if (ret == 0) {
			ext->offset += c->offset;
			return 0;
		}
		if (ret != -ENOSPC)
			return ret;
	}
	return ret;
}

struct rmp_pool_chunk *rmp_pool_chunk_of(struct rmp_pool *pool, uint64_t off)
{
	uint64_t i = off / pool->chunk_span;

	return i < pool->nchunks ? &pool->chunks[i] : NULL;
}

int rmp_pool_release(struct rmp_pool *pool, const struct rmp_extent *ext)
{
	struct rmp_pool_chunk *c = rmp_pool_chunk_of(pool, ext->offset);
	struct rmp_extent in_chunk = *ext;

	if (!c)
		return -ENOENT;
	in_chunk.offset -= c->offset;
	return rmp_alloc_put(c->alloc, &in_chunk);
}

void rmp_pool_stats(const struct rmp_pool *pool, struct rmp_pool_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < pool->nchunks; i++) {
		struct rmp_alloc_stats as;

		rmp_alloc_stats(pool->chunks[i].alloc, &as);
		st->size += as.size;
		st->free_bytes += as.free_bytes;
		st->extents += as.extents;
		st->largest_free = RMP_MAX(st->largest_free, as.largest_free);
	}
}

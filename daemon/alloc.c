/* SPDX-License-Identifier: MIT */
/* alloc.c -- TLSF extent allocator whose block descriptors live on the heap. */

/*
 * Structure
 *
 * The pool is cut into physically contiguous blocks, each described by a
 * heap-allocated struct blk (offset, size, free flag, its place in the
 * list of physical neighbours, and one list link). Nothing is ever stored
 * in the pool itself: clients write it through RDMA, so in-band headers
 * could be forged. The lists are <sys/queue.h> ones: a TAILQ in offset
 * order for the neighbours, a LIST per size class (O(1) removal of any
 * member, as merging needs), SLISTs for hash chains and spares.
 *
 * Free blocks are kept in TLSF (two-level segregated fit) lists. With the
 * size u counted in grains, the first level is floor(log2(u)) and the
 * second level splits that range [2^k, 2^(k+1)) into SL_COUNT (32) equal
 * classes; sizes below 32 grains share first-level slot 0, one exact size
 * per class. A bitmap of non-empty first levels and, per first level, a
 * bitmap of non-empty classes locate the first class that can hold a
 * request with two find-first-set operations, so get and put are O(1)
 * whatever the number of free or live extents.
 *
 * rmp_alloc_put receives only an offset. Allocated blocks are therefore
 * indexed by a chained hash table keyed by offset (Fibonacci hashing of
 * offset / GRAIN), with the chain threaded through the descriptor's list
 * link, which an allocated block does not otherwise use (a free block is
 * on its class list, a spare descriptor on the spare list). The table doubles
 * when it holds more entries than buckets, so lookups are O(1) expected
 * and insertions O(1) amortised. If doubling fails for lack of memory the
 * old table stays in use with longer chains: still correct.
 *
 * On put the block is merged with a free physical predecessor and/or
 * successor, so two free blocks are never adjacent and freeing everything
 * leaves one block covering the pool.
 *
 * Why not something else:
 *  - A buddy allocator is also O(1)-ish but rounds every extent up to a
 *    power of two, wasting up to half of each lease (a 65 KiB lease
 *    would take 128 KiB of pinned memory), and only merges buddies.
 *  - A free list sorted by offset or a balanced tree keyed by size gives
 *    exact best fit but costs O(n) or O(log n) per operation, growing
 *    with the number of extents.
 *  TLSF splits blocks exactly, so an extent wastes less than a grain,
 *  and choosing within classes 1/32 wide keeps it close to best fit.
 *
 * Searching rounds the request up to the next class start, so that any
 * block on the list found is large enough and the head can be taken
 * without scanning. Alignment: blocks start on a GRAIN boundary, so a
 * block of length + align - GRAIN bytes always contains an aligned
 * extent of length bytes; the space before it is split off as its own
 * free block. Before paying that worst case, the block an unaligned
 * request would get is tried, as it is often suitably aligned already.
 * Last, since the rounded search skips the request's own class, the
 * head of that class is tried too (one block, so still O(1)). A request
 * can thus fail with -ENOSPC while some unsearched free block would have
 * held it: that is the price of never scanning lists.
 */
#include "alloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/queue.h>

#define GRAIN ((uint64_t)RMP_ALLOC_GRAIN)
#define GRAIN_SHIFT 6
_Static_assert((1u << GRAIN_SHIFT) == RMP_ALLOC_GRAIN, "GRAIN_SHIFT");

#define SL_LOG2 5
#define SL_COUNT (1u << SL_LOG2)
/*
 * A pool below 2^64 bytes holds below 2^58 grains, so floor(log2(u)) is
 * at most 57 and the first-level index (log2 - SL_LOG2 + 1) at most 53.
 */
#define FL_COUNT (64 - GRAIN_SHIFT - SL_LOG2 + 1)
_Static_assert(FL_COUNT < 64, "first-level bitmap is 64 bits");

/* Descriptors kept for reuse so that get/put rarely call malloc. */
#define SPARE_MAX 64

#define HASH_MIN_BITS 6
#define HASH_MUL 0x9e3779b97f4a7c15ull

struct blk {
	uint64_t off;
	uint64_t size;
	/* Physical neighbours: the block just below and just above. */
	TAILQ_ENTRY(blk) phys;
	/* The one list b is on, by what b is: */
	union {
		LIST_ENTRY(blk) cls;    /* free: its TLSF class */
		SLIST_ENTRY(blk) hash;  /* allocated: its hash chain */
		SLIST_ENTRY(blk) spare; /* spare descriptor */
	} link;
	bool free;
};

LIST_HEAD(blk_list, blk);
SLIST_HEAD(blk_slist, blk);
TAILQ_HEAD(blk_phys, blk);

struct rmp_alloc {
	uint64_t size;
	uint64_t free_bytes;
	uint64_t extents;      /* allocated blocks, == hash entries */
	uint64_t nblocks;      /* all blocks, free and allocated */
	/* Every block by offset; the first, at 0, is never merged away. */
	struct blk_phys phys;

	uint64_t fl_map;               /* bit fl: some sl_map[fl] bit set */
	uint32_t sl_map[FL_COUNT];     /* bit sl: heads[fl][sl] non-empty */
	struct blk_list heads[FL_COUNT][SL_COUNT];

	struct blk_slist *hash; /* 1 << hash_bits buckets */
	unsigned int hash_bits;

	struct blk_slist spare;
	unsigned int nspare;
};

static unsigned int log2_u64(uint64_t v)
{
	return 63u - (unsigned int)__builtin_clzll(v);
}

/* Class of a free block of u grains (u >= 1). */
static void mapping(uint64_t u, unsigned int *fl, unsigned int *sl)
{
	unsigned int f;

	if (u < SL_COUNT) {
		*fl = 0;
		*sl = (unsigned int)u;
		return;
	}
	f = log2_u64(u);
	*fl = f - SL_LOG2 + 1;
	*sl = (unsigned int)(u >> (f - SL_LOG2)) - SL_COUNT;
}

/*
 * phys_prev -- the block just below b, or NULL for the first. Not
 * TAILQ_PREV(): that reads the predecessor's predecessor too (one more
 * cache line per put); b's back link points into its predecessor, so
 * that is found from it alone.
 */
static struct blk *phys_prev(const struct rmp_alloc *a, struct blk *b)
{
	if (b == TAILQ_FIRST(&a->phys))
		return NULL;
	return (struct blk *)((char *)b->phys.tqe_prev -
			      offsetof(struct blk, phys.tqe_next));
}

static void list_insert(struct rmp_alloc *a, struct blk *b)
{
	unsigned int fl, sl;

	mapping(b->size >> GRAIN_SHIFT, &fl, &sl);
	LIST_INSERT_HEAD(&a->heads[fl][sl], b, link.cls);
	a->sl_map[fl] |= 1u << sl;
	a->fl_map |= 1ull << fl;
}

static void list_remove(struct rmp_alloc *a, struct blk *b)
{
	bool last = !LIST_NEXT(b, link.cls);
	unsigned int fl, sl;

	LIST_REMOVE(b, link.cls);
	/* Only the last block of a list can leave it empty. */
	if (!last)
		return;
	mapping(b->size >> GRAIN_SHIFT, &fl, &sl);
	if (LIST_EMPTY(&a->heads[fl][sl])) {
		a->sl_map[fl] &= ~(1u << sl);
		if (!a->sl_map[fl])
			a->fl_map &= ~(1ull << fl);
	}
}

/* First non-empty list at class (fl, sl) or above, or NULL. */
static struct blk *find_from(const struct rmp_alloc *a, unsigned int fl,
			     unsigned int sl)
{
	uint32_t sl_bits;
	uint64_t fl_bits;

	if (fl >= FL_COUNT)
		return NULL;
	sl_bits = a->sl_map[fl] & (~0u << sl);
	if (!sl_bits) {
		if (fl + 1 >= FL_COUNT)
			return NULL;
		fl_bits = a->fl_map & (~0ull << (fl + 1));
		if (!fl_bits)
			return NULL;
		fl = (unsigned int)__builtin_ctzll(fl_bits);
		sl_bits = a->sl_map[fl];
	}
	sl = (unsigned int)__builtin_ctz(sl_bits);
	return LIST_FIRST(&a->heads[fl][sl]);
}

/*
 * A free block of at least `need` bytes, or NULL: `need` is rounded up to
 * the start of the next class so that every block of the list found is
 * large enough and its head can be taken as is.
 */
static struct blk *find_fit(const struct rmp_alloc *a, uint64_t need)
{
	uint64_t u = need >> GRAIN_SHIFT;
	unsigned int fl, sl;

	if (u >= SL_COUNT)
		u += (1ull << (log2_u64(u) - SL_LOG2)) - 1;
	mapping(u, &fl, &sl);
	return find_from(a, fl, sl);
}

/* Head of the class that a block of `len` bytes would be filed in. */
static struct blk *class_head(const struct rmp_alloc *a, uint64_t len)
{
	unsigned int fl, sl;

	mapping(len >> GRAIN_SHIFT, &fl, &sl);
	return LIST_FIRST(&a->heads[fl][sl]);
}

/* Whether b holds len bytes at an align boundary; *pad = bytes skipped. */
static bool fits(const struct blk *b, uint64_t len, uint64_t align,
		 uint64_t *pad)
{
	uint64_t p = (0 - b->off) & (align - 1);

	if (p > b->size || b->size - p < len)
		return false;
	*pad = p;
	return true;
}

static struct blk *pick(const struct rmp_alloc *a, uint64_t len,
			uint64_t align, uint64_t *pad)
{
	struct blk *b;

	/* The block an unaligned request gets; it may be aligned already. */
	b = find_fit(a, len);
	if (b && fits(b, len, align, pad))
		return b;
	/* Any block of len + align - GRAIN bytes holds an aligned extent. */
	if (align > GRAIN && align - GRAIN <= a->size - len) {
		b = find_fit(a, len + align - GRAIN);
		if (b && fits(b, len, align, pad))
			return b;
	}
	/* The rounded searches skip len's own class; try its first block. */
	b = class_head(a, len);
	if (b && fits(b, len, align, pad))
		return b;
	return NULL;
}

static size_t hash_slot(uint64_t off, unsigned int bits)
{
	return (size_t)(((off >> GRAIN_SHIFT) * HASH_MUL) >> (64 - bits));
}

static struct blk *hash_find(const struct rmp_alloc *a, uint64_t off)
{
	struct blk *b;

	SLIST_FOREACH(b, &a->hash[hash_slot(off, a->hash_bits)], link.hash)
		if (b->off == off)
			break;
	return b;
}

/* Double the bucket array; on ENOMEM keep the current one (still valid). */
static void hash_grow(struct rmp_alloc *a)
{
	unsigned int bits = a->hash_bits + 1;
	size_t n = (size_t)1 << a->hash_bits, i;
	struct blk_slist *nh;
	struct blk *b;

	if (bits >= 8 * sizeof(size_t) - 4)
		return;
	nh = calloc((size_t)1 << bits, sizeof(*nh)); /* all SLIST_INIT */
	if (!nh)
		return;
	for (i = 0; i < n; i++) {
		while ((b = SLIST_FIRST(&a->hash[i]))) {
			SLIST_REMOVE_HEAD(&a->hash[i], link.hash);
			SLIST_INSERT_HEAD(&nh[hash_slot(b->off, bits)], b,
					  link.hash);
		}
	}
	free(a->hash);
	a->hash = nh;
	a->hash_bits = bits;
}

/* Index allocated block b; a->extents must already count it. */
static void hash_insert(struct rmp_alloc *a, struct blk *b)
{
	if (a->extents > ((uint64_t)1 << a->hash_bits))
		hash_grow(a);
	SLIST_INSERT_HEAD(&a->hash[hash_slot(b->off, a->hash_bits)], b,
			  link.hash);
}

/*
 * Singly linked, so that neither insert nor remove writes to another
 * block's descriptor (a cold cache line); SLIST_REMOVE walks the chain
 * again, but hash_find just brought it into the cache.
 */
static struct blk *hash_remove(struct rmp_alloc *a, uint64_t off)
{
	struct blk *b = hash_find(a, off);

	if (b)
		SLIST_REMOVE(&a->hash[hash_slot(off, a->hash_bits)], b, blk,
			     link.hash);
	return b;
}

/* Make sure two descriptors are at hand, so a split cannot fail midway. */
static int spare_reserve(struct rmp_alloc *a)
{
	while (a->nspare < 2) {
		struct blk *b = malloc(sizeof(*b));

		if (!b)
			return -ENOMEM;
		SLIST_INSERT_HEAD(&a->spare, b, link.spare);
		a->nspare++;
	}
	return 0;
}

static struct blk *spare_get(struct rmp_alloc *a)
{
	struct blk *b = SLIST_FIRST(&a->spare);

	SLIST_REMOVE_HEAD(&a->spare, link.spare);
	a->nspare--;
	return b;
}

static void spare_put(struct rmp_alloc *a, struct blk *b)
{
	if (a->nspare >= SPARE_MAX) {
		free(b);
		return;
	}
	SLIST_INSERT_HEAD(&a->spare, b, link.spare);
	a->nspare++;
}

/* Split [b->off + at, end of b) off b into free block n, placed after b. */
static void split_after(struct rmp_alloc *a, struct blk *b, uint64_t at,
			struct blk *n)
{
	n->off = b->off + at;
	n->size = b->size - at;
	n->free = true;
	TAILQ_INSERT_AFTER(&a->phys, b, n, phys);
	b->size = at;
	a->nblocks++;
}

/* Drop b from the physical chain (it has been merged into a neighbour). */
static void unlink_phys(struct rmp_alloc *a, struct blk *b)
{
	TAILQ_REMOVE(&a->phys, b, phys);
	a->nblocks--;
	spare_put(a, b);
}

struct rmp_alloc *rmp_alloc_new(uint64_t size)
{
	struct rmp_alloc *a;
	struct blk *b;

	if (!size || size % GRAIN) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->hash_bits = HASH_MIN_BITS;
	a->hash = calloc((size_t)1 << a->hash_bits, sizeof(*a->hash));
	b = calloc(1, sizeof(*b));
	if (!a->hash || !b) {
		free(b);
		free(a->hash);
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	b->off = 0;
	b->size = size;
	b->free = true;
	a->size = size;
	a->free_bytes = size;
	a->nblocks = 1;
	TAILQ_INIT(&a->phys);
	TAILQ_INSERT_HEAD(&a->phys, b, phys);
	list_insert(a, b); /* calloc left every other list empty */
	return a;
}

void rmp_alloc_free(struct rmp_alloc *a)
{
	struct blk *b, *next;

	if (!a)
		return;
	for (b = TAILQ_FIRST(&a->phys); b; b = next) {
		next = TAILQ_NEXT(b, phys);
		free(b);
	}
	for (b = SLIST_FIRST(&a->spare); b; b = next) {
		next = SLIST_NEXT(b, link.spare);
		free(b);
	}
	free(a->hash);
	free(a);
}

int rmp_alloc_get(struct rmp_alloc *a, uint64_t length, uint64_t align,
		  uint64_t *offset, uint64_t *rounded)
{
	struct blk *b;
	uint64_t len, pad;

	if (!a || !offset || !rounded || !length)
		return -EINVAL;
	if (align <= GRAIN)
		align = GRAIN;
	else if (align & (align - 1))
		return -EINVAL;
	/* Checked before rounding so that rounding cannot overflow. */
	if (length > a->free_bytes)
		return -ENOSPC;
	len = (length + GRAIN - 1) & ~(GRAIN - 1);
	if (len > a->free_bytes)
		return -ENOSPC;
	b = pick(a, len, align, &pad);
	if (!b)
		return -ENOSPC;
	if (spare_reserve(a))
		return -ENOMEM;

	list_remove(a, b);
	if (pad) {
		/* The front remainder stays b, free; the extent is new. */
		split_after(a, b, pad, spare_get(a));
		list_insert(a, b);
		b = TAILQ_NEXT(b, phys);
	}
	if (b->size > len) {
		split_after(a, b, len, spare_get(a));
		list_insert(a, TAILQ_NEXT(b, phys));
	}
	b->free = false;
	a->free_bytes -= len;
	a->extents++;
	hash_insert(a, b);
	*offset = b->off;
	*rounded = len;
	return 0;
}

int rmp_alloc_put(struct rmp_alloc *a, uint64_t offset)
{
	struct blk *b, *n, *p;

	if (!a)
		return -EINVAL;
	b = hash_remove(a, offset);
	if (!b)
		return -ENOENT;
	a->free_bytes += b->size;
	a->extents--;
	b->free = true;

	/* Merge into b the free block above, and b into the free one below. */
	n = TAILQ_NEXT(b, phys);
	if (n && n->free) {
		list_remove(a, n);
		b->size += n->size;
		unlink_phys(a, n);
	}
	p = phys_prev(a, b);
	if (p && p->free) {
		list_remove(a, p);
		p->size += b->size;
		unlink_phys(a, b);
		b = p;
	}
	list_insert(a, b);
	return 0;
}

/*
 * largest_free is the size of the first block of the highest non-empty
 * class. Finding the true maximum would mean scanning that list, which is
 * not bounded: all blocks on it are >= the class start, so up to
 * free_bytes / class start of them, millions in a fragmented large pool.
 * Instead: a class [lo, lo + w) has w = 1 grain below 32 grains (exact)
 * and w = lo / 32 at most above, so the true largest free extent L obeys
 * largest_free <= L < largest_free * 33 / 32, and a get of largest_free
 * bytes (default alignment) succeeds.
 */
void rmp_alloc_stats(const struct rmp_alloc *a, struct rmp_alloc_stats *st)
{
	unsigned int fl, sl;

	st->size = a->size;
	st->free_bytes = a->free_bytes;
	st->extents = a->extents;
	st->largest_free = 0;
	if (a->fl_map) {
		fl = log2_u64(a->fl_map);
		sl = 31u - (unsigned int)__builtin_clz(a->sl_map[fl]);
		st->largest_free = LIST_FIRST(&a->heads[fl][sl])->size;
	}
}

/*
 * The back links of <sys/queue.h> entries point at the field that points
 * to the entry: the predecessor's next field, or the head's first.
 */
#define PHYS_BACK(a, prev) ((prev) ? &(prev)->phys.tqe_next : \
			    &(a)->phys.tqh_first)
#define LIST_BACK(head, prev) ((prev) ? &(prev)->link.cls.le_next : \
			       &(head)->lh_first)

/* Whether b is linked into the physical chain from both sides. */
static bool phys_linked(const struct rmp_alloc *a, const struct blk *b)
{
	const struct blk *n = TAILQ_NEXT(b, phys);

	if (*b->phys.tqe_prev != b)
		return false;
	if (n ? n->phys.tqe_prev != &b->phys.tqe_next :
		a->phys.tqh_last != &b->phys.tqe_next)
		return false;
	return true;
}

/*
 * Walks every hash bucket, the physical chain, every free list and the
 * spare list. The hash must resolve every allocated block's offset to
 * that block and hold nothing else. The free lists are matched against
 * the free blocks of the chain by count and by the sum and xor of their
 * offsets; members are also checked to be free, filed in the right class
 * and linked into the chain. Every walk is bounded by a counter so a
 * cycle cannot hang it.
 */
int rmp_alloc_check(const struct rmp_alloc *a)
{
	uint64_t expect = 0, nfree = 0, nalloc = 0, freeb = 0;
	uint64_t fsum = 0, fxor = 0, lsum = 0, lxor = 0, n = 0;
	const struct blk *b, *prev;
	unsigned int fl, sl, bfl, bsl;
	size_t i;

	if (!a || !TAILQ_FIRST(&a->phys) || TAILQ_FIRST(&a->phys)->off ||
	    !a->hash)
		return -EFAULT;

	/* Buckets first: it bounds the chains that hash_find walks below. */
	for (i = 0; i < (size_t)1 << a->hash_bits; i++) {
		SLIST_FOREACH(b, &a->hash[i], link.hash) {
			if (++n > a->extents || b->free ||
			    hash_slot(b->off, a->hash_bits) != i ||
			    !phys_linked(a, b))
				return -EFAULT;
		}
	}
	if (n != a->extents)
		return -EFAULT;

	n = 0;
	prev = NULL;
	TAILQ_FOREACH(b, &a->phys, phys) {
		if (++n > a->nblocks)
			return -EFAULT;
		if (b->off != expect || !b->size || b->size % GRAIN ||
		    b->size > a->size - b->off ||
		    b->phys.tqe_prev != PHYS_BACK(a, prev))
			return -EFAULT;
		expect += b->size;
		if (b->free) {
			if (prev && prev->free)
				return -EFAULT;
			nfree++;
			freeb += b->size;
			fsum += b->off;
			fxor ^= b->off;
		} else {
			nalloc++;
			if (hash_find(a, b->off) != b)
				return -EFAULT;
		}
		prev = b;
	}
	if (expect != a->size || n != a->nblocks || freeb != a->free_bytes ||
	    nalloc != a->extents || !phys_linked(a, prev))
		return -EFAULT;

	n = 0;
	if (a->fl_map >> FL_COUNT)
		return -EFAULT;
	for (fl = 0; fl < FL_COUNT; fl++) {
		if (!!a->sl_map[fl] != !!(a->fl_map & (1ull << fl)))
			return -EFAULT;
		for (sl = 0; sl < SL_COUNT; sl++) {
			const struct blk_list *h = &a->heads[fl][sl];

			if (LIST_EMPTY(h) == !!(a->sl_map[fl] & (1u << sl)))
				return -EFAULT;
			prev = NULL;
			LIST_FOREACH(b, h, link.cls) {
				if (++n > nfree || !b->free ||
				    b->link.cls.le_prev != LIST_BACK(h, prev) ||
				    !phys_linked(a, b))
					return -EFAULT;
				mapping(b->size >> GRAIN_SHIFT, &bfl, &bsl);
				if (bfl != fl || bsl != sl)
					return -EFAULT;
				lsum += b->off;
				lxor ^= b->off;
				prev = b;
			}
		}
	}
	if (n != nfree || lsum != fsum || lxor != fxor)
		return -EFAULT;

	n = 0;
	SLIST_FOREACH(b, &a->spare, link.spare)
		if (++n > a->nspare)
			return -EFAULT;
	if (n != a->nspare || n > SPARE_MAX)
		return -EFAULT;
	return 0;
}

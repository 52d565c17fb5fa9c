/* SPDX-License-Identifier: MIT */
/* alloc.c -- TLSF extent allocator whose block descriptors live on the heap. */

/*
 * Structure
 *
 * The pool is cut into physically contiguous blocks, each described by a
 * struct blk (offset, size, state, its place in the list of physical
 * neighbours, and one list link) on the heap. Nothing is ever stored in
 * the pool itself: clients write it through RDMA, so in-band headers
 * could be forged. The lists are <sys/queue.h> ones: a TAILQ in offset
 * order for the neighbours, a LIST per size class (O(1) removal of any
 * member, as merging needs), an SLIST of spare descriptors.
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
 * Descriptors are carved from slabs of SLAB_LEN that never move, and a
 * descriptor's id is its index over all slabs. rmp_alloc_get hands the id
 * out with the extent and rmp_alloc_put takes it back, checked against
 * the descriptor's state, offset and length, so a stale or wrong extent is
 * refused, never trusted. An earlier version found the block by offset in
 * a hash table; at 10^6 live extents its bucket and chain were two cache
 * misses of the six or so a get+put pair costs (bench_alloc: 507 ns per
 * churn pair with the hash, see tests/perf/bench_alloc.c for today's).
 * Unused descriptors wait on a LIFO spare list, so the ones reused are
 * the ones most recently touched.
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

/* Descriptors per slab; ids are 32 bits, so at most 2^32 descriptors. */
#define SLAB_SHIFT 12
#define SLAB_LEN (1u << SLAB_SHIFT)
#define SLABS_MAX (1u << (32 - SLAB_SHIFT))

enum blk_state {
	BLK_SPARE = 0, /* on the spare list (a fresh slab is zeroed) */
	BLK_FREE,      /* a free block, on its class list */
	BLK_USED,      /* an allocated extent */
};

struct blk {
	uint64_t off;
	uint64_t size;
	/* Physical neighbours: the block just below and just above. */
	TAILQ_ENTRY(blk) phys;
	/* The one list b is on, by what b is (an allocated one is on none): */
	union {
		LIST_ENTRY(blk) cls;    /* free: its TLSF class */
		SLIST_ENTRY(blk) spare; /* spare descriptor */
	} link;
	uint32_t id;
	uint8_t state;          /* enum blk_state */
};

LIST_HEAD(blk_list, blk);
SLIST_HEAD(blk_slist, blk);
TAILQ_HEAD(blk_phys, blk);

struct rmp_alloc {
	uint64_t size;
	uint64_t free_bytes;
	uint64_t extents;      /* allocated blocks */
	uint64_t nblocks;      /* all blocks, free and allocated */
	/* Every block by offset; the first, at 0, is never merged away. */
	struct blk_phys phys;

	uint64_t fl_map;               /* bit fl: some sl_map[fl] bit set */
	uint32_t sl_map[FL_COUNT];     /* bit sl: heads[fl][sl] non-empty */
	struct blk_list heads[FL_COUNT][SL_COUNT];

	struct blk **slabs;    /* nslabs slabs of SLAB_LEN descriptors */
	uint32_t nslabs, slabs_cap;

	struct blk_slist spare;
	uint64_t nspare;
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

/* Descriptor `id`, or NULL when no slab holds it. */
static struct blk *blk_of(const struct rmp_alloc *a, uint32_t id)
{
	if ((id >> SLAB_SHIFT) >= a->nslabs)
		return NULL;
	return &a->slabs[id >> SLAB_SHIFT][id & (SLAB_LEN - 1)];
}

/* Add a zeroed slab and put its descriptors on the spare list. */
static int slab_add(struct rmp_alloc *a)
{
	struct blk *slab;
	uint32_t i;

	if (a->nslabs == SLABS_MAX)
		return -ENOMEM;
	if (a->nslabs == a->slabs_cap) {
		uint32_t cap = a->slabs_cap ? a->slabs_cap * 2 : 16;
		struct blk **n = realloc(a->slabs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->slabs = n;
		a->slabs_cap = cap;
	}
	slab = calloc(SLAB_LEN, sizeof(*slab));
	if (!slab)
		return -ENOMEM;
	/* Highest index pushed first, so slab[0] is handed out first. */
	for (i = SLAB_LEN; i-- > 0;) {
		slab[i].id = (a->nslabs << SLAB_SHIFT) | i;
		SLIST_INSERT_HEAD(&a->spare, &slab[i], link.spare);
	}
	a->slabs[a->nslabs++] = slab;
	a->nspare += SLAB_LEN;
	return 0;
}

/* Make sure two descriptors are at hand, so a split cannot fail midway. */
static int spare_reserve(struct rmp_alloc *a)
{
	return a->nspare >= 2 ? 0 : slab_add(a);
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
	b->state = BLK_SPARE;
	SLIST_INSERT_HEAD(&a->spare, b, link.spare);
	a->nspare++;
}

/* Split [b->off + at, end of b) off b into free block n, placed after b. */
static void split_after(struct rmp_alloc *a, struct blk *b, uint64_t at,
			struct blk *n)
{
	n->off = b->off + at;
	n->size = b->size - at;
	n->state = BLK_FREE;
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

/*
 * carve -- allocate [b->off + pad, + len) of free block b (two spare
 * descriptors at hand): what is left before and after stays free.
 */
static void carve(struct rmp_alloc *a, struct blk *b, uint64_t pad,
		  uint64_t len, struct rmp_extent *ext)
{
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
	b->state = BLK_USED;
	a->free_bytes -= len;
	a->extents++;
	ext->offset = b->off;
	ext->length = len;
	ext->id = b->id;
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
	SLIST_INIT(&a->spare);
	if (slab_add(a)) {
		rmp_alloc_free(a);
		errno = ENOMEM;
		return NULL;
	}
	b = spare_get(a);
	b->off = 0;
	b->size = size;
	b->state = BLK_FREE;
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
	if (!a)
		return;
	for (uint32_t i = 0; i < a->nslabs; i++)
		free(a->slabs[i]);
	free(a->slabs);
	free(a);
}

int rmp_alloc_get(struct rmp_alloc *a, uint64_t length, uint64_t align,
		  struct rmp_extent *ext)
{
	struct blk *b;
	uint64_t len, pad;

	if (!a || !ext || !length)
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

	carve(a, b, pad, len, ext);
	return 0;
}

int rmp_alloc_take(struct rmp_alloc *a, uint64_t offset, uint64_t length,
		   struct rmp_extent *ext)
{
	struct blk *b;

	if (!a || !ext || !length || offset % GRAIN || length % GRAIN ||
	    offset > a->size || length > a->size - offset)
		return -EINVAL;
	/* The block that starts at or below offset; in increasing order of
	 * takes it is the last one (what follows the previous take). */
	TAILQ_FOREACH_REVERSE(b, &a->phys, blk_phys, phys)
		if (b->off <= offset)
			break;
	if (!b || b->state != BLK_FREE || offset + length > b->off + b->size)
		return -EBUSY;
	if (spare_reserve(a))
		return -ENOMEM;
	carve(a, b, offset - b->off, length, ext);
	return 0;
}

int rmp_alloc_put(struct rmp_alloc *a, const struct rmp_extent *ext)
{
	struct blk *b, *n, *p;

	if (!a || !ext)
		return -EINVAL;
	b = blk_of(a, ext->id);
	if (!b || b->state != BLK_USED || b->off != ext->offset ||
	    b->size != ext->length)
		return -ENOENT;
	/* Both neighbours are needed below: fetch them at the same time. */
	n = TAILQ_NEXT(b, phys);
	p = phys_prev(a, b);
	__builtin_prefetch(n);
	__builtin_prefetch(p);
	a->free_bytes += b->size;
	a->extents--;
	b->state = BLK_FREE;

	/* Merge into b the free block above, and b into the free one below. */
	if (n && n->state == BLK_FREE) {
		list_remove(a, n);
		b->size += n->size;
		unlink_phys(a, n);
	}
	if (p && p->state == BLK_FREE) {
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
 * Walks every slab, the physical chain, every free list and the spare
 * list. Each descriptor must carry its own id and be in one of the three
 * states; the counts by state must match the chain's blocks, the extent
 * count and the spare list. The free lists are matched against the free
 * blocks of the chain by count and by the sum and xor of their offsets;
 * members are also checked to be free, filed in the right class and
 * linked into the chain. Every walk is bounded by a counter so a cycle
 * cannot hang it.
 */
int rmp_alloc_check(const struct rmp_alloc *a)
{
	uint64_t expect = 0, nfree = 0, nalloc = 0, freeb = 0;
	uint64_t fsum = 0, fxor = 0, lsum = 0, lxor = 0, n = 0;
	uint64_t by_state[3] = { 0, 0, 0 };
	const struct blk *b, *prev;
	unsigned int fl, sl, bfl, bsl;

	if (!a || !TAILQ_FIRST(&a->phys) || TAILQ_FIRST(&a->phys)->off ||
	    !a->nslabs)
		return -EFAULT;

	for (uint32_t s = 0; s < a->nslabs; s++) {
		for (uint32_t i = 0; i < SLAB_LEN; i++) {
			b = &a->slabs[s][i];
			if (b->id != ((s << SLAB_SHIFT) | i) ||
			    b->state > BLK_USED)
				return -EFAULT;
			by_state[b->state]++;
			if (b->state != BLK_SPARE && !phys_linked(a, b))
				return -EFAULT;
		}
	}
	if (by_state[BLK_USED] != a->extents ||
	    by_state[BLK_SPARE] != a->nspare ||
	    by_state[BLK_FREE] + by_state[BLK_USED] != a->nblocks)
		return -EFAULT;

	prev = NULL;
	TAILQ_FOREACH(b, &a->phys, phys) {
		if (++n > a->nblocks)
			return -EFAULT;
		if (b->off != expect || !b->size || b->size % GRAIN ||
		    b->size > a->size - b->off || b->state == BLK_SPARE ||
		    blk_of(a, b->id) != b ||
		    b->phys.tqe_prev != PHYS_BACK(a, prev))
			return -EFAULT;
		expect += b->size;
		if (b->state == BLK_FREE) {
			if (prev && prev->state == BLK_FREE)
				return -EFAULT;
			nfree++;
			freeb += b->size;
			fsum += b->off;
			fxor ^= b->off;
		} else {
			nalloc++;
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
				if (++n > nfree || b->state != BLK_FREE ||
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
		if (++n > a->nspare || b->state != BLK_SPARE)
			return -EFAULT;
	return n == a->nspare ? 0 : -EFAULT;
}

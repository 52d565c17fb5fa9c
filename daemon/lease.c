/* SPDX-License-Identifier: MIT */
/* lease.c -- lease table: chained hash by id and min-heap by deadline. */

/*
 * Lease ids are random 64-bit numbers, so their low bits already spread
 * evenly: the bucket is id & mask, an SLIST chained through
 * l->hash_link (no back link points into the bucket array, so realloc
 * may move it). The bucket array doubles once more than 3/4 of its size
 * would be in use; doubling splits bucket i into buckets i and i + old
 * size by the next id bit.
 *
 * Expiry order is a binary min-heap of lease pointers keyed by
 * deadline_ms, each lease remembering its slot in l->heap_idx, so that
 * deleting or re-timing any lease is O(log n) and the earliest one is
 * heap[0].
 *
 * Every array is grown before anything is linked, and realloc leaves the
 * old array intact on failure, so -ENOMEM leaves the table unchanged.
 */
#include "lease.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define HASH_MIN 64
#define HEAP_MIN 64
#define IDX_NONE UINT32_MAX

SLIST_HEAD(rmp_lease_chain, rmp_lease);

struct rmp_lease_table {
	struct rmp_lease_chain *buckets; /* nbuckets, a power of two */
	size_t nbuckets;
	struct rmp_lease **heap;    /* count entries, cap allocated */
	size_t cap;
	size_t count;
};

struct rmp_lease_table *rmp_lease_table_new(void)
{
	struct rmp_lease_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->buckets = calloc(HASH_MIN, sizeof(*t->buckets)); /* SLIST_INIT */
	t->heap = malloc(HEAP_MIN * sizeof(*t->heap));
	if (!t->buckets || !t->heap) {
		free(t->buckets);
		free(t->heap);
		free(t);
		return NULL;
	}
	t->nbuckets = HASH_MIN;
	t->cap = HEAP_MIN;
	return t;
}

const char *rmp_lease_state_name(enum rmp_lease_state s)
{
	static const char *const names[RMP_LEASE_STATES] = {
		[RMP_LEASE_GRANTED] = "granted",
		[RMP_LEASE_REVOKING] = "revoking",
		[RMP_LEASE_ZEROING] = "zeroing",
		[RMP_LEASE_QUARANTINED] = "quarantined",
	};

	return (unsigned)s < RMP_LEASE_STATES ? names[s] : "?";
}

void rmp_lease_table_free(struct rmp_lease_table *t)
{
	if (!t)
		return;
	free(t->buckets);
	free(t->heap);
	free(t);
}

static size_t bucket(const struct rmp_lease_table *t, uint64_t id)
{
	return (size_t)(id & (t->nbuckets - 1));
}

/* Double the bucket array and split every chain; 0 or -ENOMEM. */
static int hash_grow(struct rmp_lease_table *t)
{
	size_t old = t->nbuckets, i;
	struct rmp_lease_chain *nb;
	struct rmp_lease *l, *next;

	if (old > SIZE_MAX / 2 / sizeof(*nb))
		return -ENOMEM;
	nb = realloc(t->buckets, 2 * old * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	t->buckets = nb;
	t->nbuckets = 2 * old;
	for (i = 0; i < old; i++) {
		l = SLIST_FIRST(&nb[i]);
		SLIST_INIT(&nb[i]);
		SLIST_INIT(&nb[i + old]);
		for (; l; l = next) {
			next = SLIST_NEXT(l, hash_link);
			SLIST_INSERT_HEAD(&nb[bucket(t, l->id)], l, hash_link);
		}
	}
	return 0;
}

static int heap_grow(struct rmp_lease_table *t)
{
	struct rmp_lease **nh;

	if (t->cap > SIZE_MAX / 2 / sizeof(*nh))
		return -ENOMEM;
	nh = realloc(t->heap, 2 * t->cap * sizeof(*nh));
	if (!nh)
		return -ENOMEM;
	t->heap = nh;
	t->cap *= 2;
	return 0;
}

static void heap_set(struct rmp_lease_table *t, size_t i, struct rmp_lease *l)
{
	t->heap[i] = l;
	l->heap_idx = (uint32_t)i;
}

/* Move the lease at i towards the root while it is earlier than its parent. */
static void sift_up(struct rmp_lease_table *t, size_t i)
{
	struct rmp_lease *l = t->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (t->heap[p]->deadline_ms <= l->deadline_ms)
			break;
		heap_set(t, i, t->heap[p]);
		i = p;
	}
	heap_set(t, i, l);
}

/* Move the lease at i towards the leaves while a child is earlier. */
static void sift_down(struct rmp_lease_table *t, size_t i)
{
	struct rmp_lease *l = t->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= t->count)
			break;
		if (c + 1 < t->count &&
		    t->heap[c + 1]->deadline_ms < t->heap[c]->deadline_ms)
			c++;
		if (l->deadline_ms <= t->heap[c]->deadline_ms)
			break;
		heap_set(t, i, t->heap[c]);
		i = c;
	}
	heap_set(t, i, l);
}

/* Restore heap order around slot i after its key changed either way. */
static void heap_fix(struct rmp_lease_table *t, size_t i)
{
	uint64_t d = t->heap[i]->deadline_ms;

	if (i > 0 && t->heap[(i - 1) / 2]->deadline_ms > d)
		sift_up(t, i);
	else
		sift_down(t, i);
}

int rmp_lease_table_add(struct rmp_lease_table *t, struct rmp_lease *l)
{
	size_t b;
	int err;

	if (rmp_lease_table_find(t, l->id))
		return -EEXIST;
	/* heap_idx is 32 bits and IDX_NONE marks "not in a table". */
	if (t->count >= IDX_NONE)
		return -ENOMEM;
	if (t->count == t->cap) {
		err = heap_grow(t);
		if (err)
			return err;
	}
	/* Keep the load factor at or below 3/4. */
	if (t->count + 1 > t->nbuckets / 4 * 3) {
		err = hash_grow(t);
		if (err)
			return err;
	}

	b = bucket(t, l->id);
	SLIST_INSERT_HEAD(&t->buckets[b], l, hash_link);
	t->heap[t->count] = l;
	l->heap_idx = (uint32_t)t->count;
	t->count++;
	sift_up(t, t->count - 1);
	return 0;
}

void rmp_lease_table_del(struct rmp_lease_table *t, struct rmp_lease *l)
{
	size_t i = l->heap_idx;
	struct rmp_lease *last;

	/* Tolerate a lease that is not in this table: change nothing. */
	if (i >= t->count || t->heap[i] != l)
		return;
	/* in the heap, so in its chain: SLIST_REMOVE finds it */
	SLIST_REMOVE(&t->buckets[bucket(t, l->id)], l, rmp_lease, hash_link);

	last = t->heap[--t->count];
	if (last != l) {
		heap_set(t, i, last);
		heap_fix(t, i);
	}
	l->heap_idx = IDX_NONE;
}

struct rmp_lease *rmp_lease_table_find(const struct rmp_lease_table *t,
				       uint64_t id)
{
	struct rmp_lease *l;

	SLIST_FOREACH(l, &t->buckets[bucket(t, id)], hash_link)
		if (l->id == id)
			break;
	return l;
}

void rmp_lease_table_set_deadline(struct rmp_lease_table *t,
				  struct rmp_lease *l, uint64_t deadline_ms)
{
	size_t i = l->heap_idx;

	l->deadline_ms = deadline_ms;
	/* Not indexed here: the new deadline applies when it is added. */
	if (i >= t->count || t->heap[i] != l)
		return;
	heap_fix(t, i);
}

struct rmp_lease *rmp_lease_table_first(const struct rmp_lease_table *t)
{
	return t->count ? t->heap[0] : NULL;
}

uint64_t rmp_lease_table_count(const struct rmp_lease_table *t)
{
	return t->count;
}

/* The heap array holds every lease exactly once: iterate it. */
void rmp_lease_table_foreach(const struct rmp_lease_table *t,
			     void (*fn)(struct rmp_lease *l, void *arg),
			     void *arg)
{
	size_t i;

	for (i = 0; i < t->count; i++)
		fn(t->heap[i], arg);
}

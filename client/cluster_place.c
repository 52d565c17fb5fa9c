/* SPDX-License-Identifier: MIT */
/*
 * cluster_place.c -- which node a new lease is tried on first: a pure
 * function of the membership and the policy (tests/unit/test_place.c
 * runs it on made-up nodes).
 */
#include "cluster_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A node's rank: the fields compared, best first. */
struct rank {
	unsigned idx;
	bool later;      /* could not connect lately */
	bool preferred;  /* has the preferred label */
	uint64_t room;   /* free bytes, less what we took since */
	uint32_t lot;    /* the seed's order among equals */
	bool equal_best; /* within 1/16 of its group's most free */
};

/* room -- what n has free as far as we know. */
static uint64_t room(const struct cl_node *n, uint64_t *largest)
{
	uint64_t t = n->taken;

	*largest = n->m.largest_free > t ? n->m.largest_free - t : 0;
	return n->m.free_bytes > t ? n->m.free_bytes - t : 0;
}

/* could_fit -- a lease of length could fit n once its pool is free: no
 * pool of its devices is smaller (a lease lies in one pool). */
static bool could_fit(const struct cl_node *n, uint64_t length)
{
	uint64_t most = n->m.ndevices ? 0 : n->m.pool_bytes;

	for (unsigned d = 0; d < n->m.ndevices; d++)
		most = most > n->m.devices[d].pool_bytes ?
			       most : n->m.devices[d].pool_bytes;
	return most >= length;
}

static bool excluded(const struct cl_node *n, const struct cl_policy *p)
{
	for (unsigned i = 0; i < p->nexclude; i++)
		if (!strcmp(p->exclude[i], n->m.node))
			return true;
	return false;
}

uint32_t cl_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	return x;
}

/* lot -- a number of seed and i, the same for the same two (cl_mix32).
 * Not xorshift of seed ^ i's constant: that is linear, so lots differ
 * by a mask fixed per pair of nodes and seeds reach only some orders
 * (of three equal nodes one came first half the time). */
static uint32_t lot(uint32_t seed, unsigned i)
{
	return cl_mix32(seed + 0x9e3779b9u * (i + 1));
}

/* group_of -- which group a rank falls in, best first: the nodes we can
 * reach before those we could not lately, preferred before the rest. */
static int group_of(const struct rank *r)
{
	return (r->later ? 2 : 0) + (r->preferred ? 0 : 1);
}

static int compare(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;

	if (group_of(x) != group_of(y))
		return group_of(x) - group_of(y);
	if (x->equal_best != y->equal_best)
		return x->equal_best ? -1 : 1;
	if (x->equal_best && x->lot != y->lot)
		return x->lot < y->lot ? -1 : 1;
	if (x->room != y->room)
		return x->room > y->room ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int cl_place(const struct cl_node *nodes, unsigned n,
	     const struct cl_policy *p, unsigned *order)
{
	struct rank *r = calloc(n ? n : 1, sizeof(*r));
	uint64_t best[4] = { 0 };
	unsigned k = 0;

	if (!r)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		const struct cl_node *nd = &nodes[i];
		const char *v;
		uint64_t largest, free_now = room(nd, &largest);

		if (!nd->present || nd->m.draining || excluded(nd, p) ||
		    (largest < p->length &&
		     (!p->any_room || !could_fit(nd, p->length))))
			continue;
		v = p->prefer_label ? rmp_member_label(&nd->m, p->prefer_label)
				    : NULL;
		r[k] = (struct rank){
			.idx = i,
			.later = !rmpc_backoff_due(&nd->backoff, p->now_ms),
			.preferred = v && !strcmp(v, p->prefer_value),
			.room = free_now,
			.lot = lot(p->seed, i),
		};
		if (free_now > best[group_of(&r[k])])
			best[group_of(&r[k])] = free_now;
		k++;
	}
	for (unsigned i = 0; i < k; i++) {
		uint64_t b = best[group_of(&r[i])];

		r[i].equal_best = r[i].room >= b - b / 16;
	}
	qsort(r, k, sizeof(*r), compare);
	for (unsigned i = 0; i < k; i++)
		order[i] = r[i].idx;
	free(r);
	return (int)k;
}

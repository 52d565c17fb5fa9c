/* SPDX-License-Identifier: MIT */
/* test_lease.c -- unit tests of the lease table (id hash, deadline heap). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lease.h"

/* xorshift64*: small, fast and reproducible across libcs. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

struct tally {
	uint64_t n, id_sum, id_xor;
};

static void count_cb(struct rmp_lease *l, void *arg)
{
	struct tally *t = arg;

	t->n++;
	t->id_sum += l->id;
	t->id_xor ^= l->id;
}

static struct tally tally(const struct rmp_lease_table *t)
{
	struct tally c = { 0, 0, 0 };

	rmp_lease_table_foreach(t, count_cb, &c);
	return c;
}

/* Remove leases earliest first; 1 if deadlines came out non-decreasing. */
static int drain_sorted(struct rmp_lease_table *t, uint64_t *popped)
{
	struct rmp_lease *l;
	uint64_t last = 0;
	int sorted = 1;

	*popped = 0;
	while ((l = rmp_lease_table_first(t))) {
		if (l->deadline_ms < last)
			sorted = 0;
		last = l->deadline_ms;
		rmp_lease_table_del(t, l);
		(*popped)++;
	}
	return sorted;
}

static void test_basic(void)
{
	struct rmp_lease_table *t = rmp_lease_table_new();
	struct rmp_lease a, b, c;
	struct tally tl;

	rmp_lease_table_free(NULL);
	CHECK(t != NULL);
	CHECK_EQ(rmp_lease_table_count(t), 0);
	CHECK(rmp_lease_table_first(t) == NULL);
	CHECK(rmp_lease_table_find(t, 42) == NULL);
	CHECK_EQ(tally(t).n, 0);

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	a.id = 0x1234567890abcdefull;
	a.deadline_ms = 500;
	b.id = 7;
	b.deadline_ms = 100;
	c.id = a.id;
	c.deadline_ms = 1;

	CHECK_EQ(rmp_lease_table_add(t, &a), 0);
	CHECK(rmp_lease_table_find(t, a.id) == &a);
	CHECK(rmp_lease_table_first(t) == &a);
	CHECK_EQ(rmp_lease_table_add(t, &a), -EEXIST);
	CHECK_EQ(rmp_lease_table_add(t, &c), -EEXIST);
	CHECK_EQ(rmp_lease_table_count(t), 1);
	CHECK(rmp_lease_table_first(t) == &a);

	CHECK_EQ(rmp_lease_table_add(t, &b), 0);
	CHECK_EQ(rmp_lease_table_count(t), 2);
	CHECK(rmp_lease_table_first(t) == &b);
	CHECK(rmp_lease_table_find(t, 7) == &b);
	tl = tally(t);
	CHECK_EQ(tl.n, 2);
	CHECK(tl.id_sum == a.id + b.id);

	rmp_lease_table_set_deadline(t, &a, 50);
	CHECK_EQ(a.deadline_ms, 50);
	CHECK(rmp_lease_table_first(t) == &a);
	rmp_lease_table_set_deadline(t, &a, 1000);
	CHECK(rmp_lease_table_first(t) == &b);

	rmp_lease_table_del(t, &b);
	CHECK(rmp_lease_table_find(t, 7) == NULL);
	CHECK(rmp_lease_table_first(t) == &a);
	CHECK_EQ(rmp_lease_table_count(t), 1);
	/* A lease that is not indexed any more changes nothing. */
	rmp_lease_table_del(t, &b);
	rmp_lease_table_set_deadline(t, &b, 1);
	CHECK_EQ(rmp_lease_table_count(t), 1);
	CHECK(rmp_lease_table_first(t) == &a);

	/* c takes a's id once a is gone. */
	rmp_lease_table_del(t, &a);
	CHECK_EQ(rmp_lease_table_count(t), 0);
	CHECK(rmp_lease_table_first(t) == NULL);
	CHECK_EQ(rmp_lease_table_add(t, &c), 0);
	CHECK(rmp_lease_table_find(t, a.id) == &c);
	rmp_lease_table_del(t, &c);
	CHECK_EQ(tally(t).n, 0);
	rmp_lease_table_free(t);
}

/* Ids equal in their low 32 bits all share one chain at any size. */
static void test_collisions(void)
{
	enum { N = 2000 };
	struct rmp_lease_table *t = rmp_lease_table_new();
	struct rmp_lease *ls = calloc(N, sizeof(*ls));
	unsigned int i, bad = 0;
	uint64_t popped;

	for (i = 0; i < N; i++) {
		ls[i].id = (uint64_t)(i + 1) << 32 | 0x5a5a;
		ls[i].deadline_ms = N - i;
		bad += rmp_lease_table_add(t, &ls[i]) != 0;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_lease_table_count(t), N);
	CHECK(rmp_lease_table_first(t) == &ls[N - 1]);
	for (i = 0; i < N; i++)
		bad += rmp_lease_table_find(t, ls[i].id) != &ls[i];
	CHECK_EQ(bad, 0);
	CHECK(rmp_lease_table_find(t, 0x5a5a) == NULL);
	for (i = 1; i < N; i += 2)
		rmp_lease_table_del(t, &ls[i]);
	for (i = 0; i < N; i++)
		bad += rmp_lease_table_find(t, ls[i].id) !=
		       (i % 2 ? NULL : &ls[i]);
	CHECK_EQ(bad, 0);
	CHECK_EQ(tally(t).n, N / 2);
	CHECK(drain_sorted(t, &popped));
	CHECK_EQ(popped, N / 2);
	rmp_lease_table_free(t);
	free(ls);
}

/*
 * Random deadlines (many equal), random re-timings and deletions; the
 * earliest lease must always match a brute-force scan of the survivors,
 * and draining must give non-decreasing deadlines.
 */
static void test_heap_order(void)
{
	enum { N = 20000, OPS = 30000 };
	struct rmp_lease_table *t = rmp_lease_table_new();
	struct rmp_lease *ls = calloc(N, sizeof(*ls));
	unsigned char *in = calloc(N, 1);
	unsigned int i, op, bad = 0, bad_first = 0, n = 0;
	uint64_t popped, min;

	for (i = 0; i < N; i++) {
		ls[i].id = rng();
		ls[i].deadline_ms = rng() % 5000;
		bad += rmp_lease_table_add(t, &ls[i]) != 0;
		in[i] = 1;
		n++;
	}
	CHECK_EQ(bad, 0);
	for (op = 0; op < OPS; op++) {
		i = (unsigned int)(rng() % N);
		switch (rng() % 3) {
		case 0:
			rmp_lease_table_set_deadline(t, &ls[i], rng() % 5000);
			break;
		case 1:
			if (in[i]) {
				rmp_lease_table_del(t, &ls[i]);
				in[i] = 0;
				n--;
			}
			break;
		default:
			if (!in[i]) {
				ls[i].deadline_ms = rng() % 5000;
				bad += rmp_lease_table_add(t, &ls[i]) != 0;
				in[i] = 1;
				n++;
			}
			break;
		}
		if (op % 1000 == 0) {
			struct rmp_lease *f = rmp_lease_table_first(t);
			unsigned int j;

			min = UINT64_MAX;
			for (j = 0; j < N; j++)
				if (in[j] && ls[j].deadline_ms < min)
					min = ls[j].deadline_ms;
			bad_first += !f || f->deadline_ms != min;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(bad_first, 0);
	CHECK_EQ(rmp_lease_table_count(t), n);
	CHECK_EQ(tally(t).n, n);
	for (i = 0; i < N; i++)
		bad += rmp_lease_table_find(t, ls[i].id) !=
		       (in[i] ? &ls[i] : NULL);
	CHECK_EQ(bad, 0);
	CHECK(drain_sorted(t, &popped));
	CHECK_EQ(popped, n);
	CHECK_EQ(rmp_lease_table_count(t), 0);
	rmp_lease_table_free(t);
	free(in);
	free(ls);
}

/* 100k leases: many doublings of both arrays, then removal of all. */
static void test_growth(void)
{
	enum { N = 100000 };
	struct rmp_lease_table *t = rmp_lease_table_new();
	struct rmp_lease *ls = calloc(N, sizeof(*ls));
	uint64_t sum = 0, x = 0;
	unsigned int i, bad = 0;
	struct tally tl;

	for (i = 0; i < N; i++) {
		ls[i].id = rng();
		ls[i].deadline_ms = rng();
		sum += ls[i].id;
		x ^= ls[i].id;
		bad += rmp_lease_table_add(t, &ls[i]) != 0;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_lease_table_count(t), N);
	for (i = 0; i < N; i++)
		bad += rmp_lease_table_find(t, ls[i].id) != &ls[i];
	CHECK_EQ(bad, 0);
	for (i = 0; i < N; i++)
		bad += rmp_lease_table_add(t, &ls[i]) != -EEXIST;
	CHECK_EQ(bad, 0);
	tl = tally(t);
	CHECK_EQ(tl.n, N);
	CHECK(tl.id_sum == sum);
	CHECK(tl.id_xor == x);

	/* Remove in a scrambled order, checking the minimum now and then. */
	for (i = 0; i < N; i++) {
		unsigned int k = (unsigned int)(((uint64_t)i * 7919) % N);

		rmp_lease_table_del(t, &ls[k]);
		ls[k].heap_idx = UINT32_MAX;
		bad += rmp_lease_table_find(t, ls[k].id) != NULL;
		if (i % 1000 == 999 && i + 1 < N) {
			struct rmp_lease *f = rmp_lease_table_first(t);
			uint64_t min = UINT64_MAX;
			unsigned int j;

			for (j = 0; j < N; j++)
				if (ls[j].heap_idx != UINT32_MAX &&
				    ls[j].deadline_ms < min)
					min = ls[j].deadline_ms;
			bad += !f || f->deadline_ms != min;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_lease_table_count(t), 0);
	CHECK(rmp_lease_table_first(t) == NULL);
	CHECK_EQ(tally(t).n, 0);

	/* The emptied (still large) table must work as before. */
	for (i = 0; i < N; i += 10)
		bad += rmp_lease_table_add(t, &ls[i]) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(tally(t).n, N / 10);
	for (i = 0; i < N; i++)
		bad += rmp_lease_table_find(t, ls[i].id) !=
		       (i % 10 ? NULL : &ls[i]);
	CHECK_EQ(bad, 0);
	rmp_lease_table_free(t);
	free(ls);
}

/* One name per state, from the one table beside the enum. */
static void test_state_names(void)
{
	CHECK_STR(rmp_lease_state_name(RMP_LEASE_GRANTED), "granted");
	CHECK_STR(rmp_lease_state_name(RMP_LEASE_REVOKING), "revoking");
	CHECK_STR(rmp_lease_state_name(RMP_LEASE_ZEROING), "zeroing");
	CHECK_STR(rmp_lease_state_name(RMP_LEASE_QUARANTINED), "quarantined");
	CHECK_STR(rmp_lease_state_name((enum rmp_lease_state)RMP_LEASE_STATES),
		  "?");
}

int main(void)
{
	test_state_names();
	test_basic();
	test_collisions();
	test_heap_order();
	test_growth();
	return check_done();
}

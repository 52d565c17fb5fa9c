/* SPDX-License-Identifier: MIT */
/* test_journal.c -- the lease journal: round trip, damage, overlaps. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "proto.h"
#include "check.h"

#define POOL (64ull << 20)
#define CAP 256u

static uint64_t rng_state;

/*
 * The test links with -Wl,--wrap=malloc (meson.build): every malloc of
 * the test and of the daemon's objects comes here. fail_malloc_in > 0:
 * that many calls from now, one fails with ENOMEM.
 */
static int fail_malloc_in;
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);

void *__wrap_malloc(size_t size)
{
	if (fail_malloc_in > 0 && --fail_malloc_in == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(size);
}

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

struct seen {
	struct rmp_journal_lease l[CAP];
	uint32_t slot[CAP];
	unsigned n;
};

static void collect(const struct rmp_journal_lease *r, uint32_t slot,
		    void *arg)
{
	struct seen *s = arg;

	s->l[s->n] = *r;
	s->slot[s->n++] = slot;
}

static struct rmp_journal_lease lease(uint64_t id, uint64_t off,
				      uint64_t len, uint64_t deadline)
{
	struct rmp_journal_lease l;

	memset(&l, 0, sizeof(l));
	l.id = id;
	l.secret = id * 7919;
	l.offset = off;
	l.length = len;
	l.deadline_ms = deadline;
	l.ttl_ms = 60000;
	l.access = 7;
	snprintf(l.tenant, sizeof(l.tenant), "t%llu", (unsigned long long)id % 3);
	snprintf(l.owner, sizeof(l.owner), "client-%llu", (unsigned long long)id);
	return l;
}

/* reopen -- a new process over the same memory: open + recover. */
static struct rmp_journal *reopen(void *mem, size_t len, uint64_t now,
				  struct seen *s, bool *found)
{
	struct rmp_journal *j;
	char why[160];

	memset(s, 0, sizeof(*s));
	CHECK_EQ(rmp_journal_open(&j, mem, len, POOL, found, why, sizeof(why)), 0);
	if (*found)
		CHECK_EQ(rmp_journal_recover(j, now, collect, s), 0);
	return j;
}

static void test_round_trip(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal *j;
	struct rmp_journal_lease l[4];
	uint32_t slot[4] = { 0 };
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	CHECK(!found); /* fresh memory: formatted */
	l[0] = lease(11, 0, 4096, 1000);
	l[1] = lease(12, 4096, 64, 1000);
	l[2] = lease(13, 1 << 20, 2 << 20, 500); /* expires first */
	l[3] = lease(14, 8192, 4096, 1000);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(rmp_journal_put(j, &l[i], &slot[i]), 0);
	CHECK(l[1].seq > l[0].seq);
	l[0].deadline_ms = 2000; /* renew in place */
	l[0].group_epoch = UINT64_C(0x8000000000000003); /* an ATTACH's */
	CHECK_EQ(rmp_journal_put(j, &l[0], &slot[0]), 0);
	rmp_journal_drop(j, &slot[3]); /* ends */
	CHECK_EQ(slot[3], 0);
	rmp_journal_close(j);

	j = reopen(mem, len, 600, &s, &found);
	CHECK(found);
	CHECK_EQ(s.n, 2); /* 13 expired at 500, 14 dropped */
	CHECK_EQ(s.l[0].id, 11); /* offset order */
	CHECK_EQ(s.l[0].deadline_ms, 2000);
	CHECK_EQ(s.l[0].secret, 11 * 7919);
	CHECK(!strcmp(s.l[0].owner, "client-11"));
	CHECK(s.l[0].group_epoch == UINT64_C(0x8000000000000003));
	CHECK_EQ(s.l[1].id, 12);
	CHECK_EQ(s.l[1].group_epoch, 0);
	struct rmp_journal_stats st;
	rmp_journal_stats(j, &st);
	CHECK_EQ(st.recovered, 2);
	CHECK_EQ(st.expired, 1);
	CHECK_EQ(st.used, 2);
	/* New grants after recovery get newer sequence numbers. */
	struct rmp_journal_lease n = lease(15, 64 << 10, 4096, 5000);
	uint32_t ns = 0;
	CHECK_EQ(rmp_journal_put(j, &n, &ns), 0);
	CHECK(n.seq > s.l[0].seq && n.seq > s.l[1].seq);
	CHECK(ns != s.slot[0] && ns != s.slot[1]);
	rmp_journal_close(j);

	/* Another pool size: the old contents are not used. */
	char why[160];
	CHECK_EQ(rmp_journal_open(&j, mem, len, POOL * 2, &found, why,
				  sizeof(why)), 0);
	CHECK(!found);
	CHECK(strstr(why, "pool of") != NULL);
	rmp_journal_close(j);
	free(mem);
}

/* A grant whose bytes an older record still claims: the older one lost
 * its drop (damage), so the newer wins; a chain of three resolves. */
static void test_overlap(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal *j;
	struct rmp_journal_lease a = lease(1, 0, 1 << 20, 9000),
				 b = lease(2, 4096, 4096, 9000),
				 c = lease(3, 1 << 19, 1 << 20, 9000),
				 d = lease(4, 4 << 20, 4096, 9000);
	uint32_t sa = 0, sb = 0, sc = 0, sd = 0;
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	CHECK_EQ(rmp_journal_put(j, &a, &sa), 0);
	CHECK_EQ(rmp_journal_put(j, &b, &sb), 0); /* inside a: a is dead */
	CHECK_EQ(rmp_journal_put(j, &c, &sc), 0); /* overlaps a, not b */
	CHECK_EQ(rmp_journal_put(j, &d, &sd), 0);
	rmp_journal_close(j);
	j = reopen(mem, len, 1, &s, &found);
	CHECK_EQ(s.n, 3);
	CHECK_EQ(s.l[0].id, 2);
	CHECK_EQ(s.l[1].id, 3);
	CHECK_EQ(s.l[2].id, 4);
	struct rmp_journal_stats st;
	rmp_journal_stats(j, &st);
	CHECK_EQ(st.overlapped, 1);
	rmp_journal_close(j);
	free(mem);
}

/*
 * A dead record kills what it overlaps too. In grant order: c [70, 200),
 * a [0, 100), b [50, 60) (units of 4 KiB), all three ends lost. b is
 * newest: a is dead. c is dead as well, because a (dead or not) was
 * granted after it over some of its bytes: c's bytes belong to a's
 * holder, and a sweep that only compares with what it keeps misses it.
 */
static void test_overlap_dead_newer(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal *j;
	struct rmp_journal_lease c = lease(1, 70 << 12, 130 << 12, 9000),
				 a = lease(2, 0, 100 << 12, 9000),
				 b = lease(3, 50 << 12, 10 << 12, 9000);
	uint32_t sc = 0, sa = 0, sb = 0;
	struct rmp_journal_stats st;
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	CHECK_EQ(rmp_journal_put(j, &c, &sc), 0);
	CHECK_EQ(rmp_journal_put(j, &a, &sa), 0);
	CHECK_EQ(rmp_journal_put(j, &b, &sb), 0);
	CHECK(c.seq < a.seq && a.seq < b.seq);
	rmp_journal_close(j);
	j = reopen(mem, len, 1, &s, &found);
	CHECK(found);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.l[0].id, 3);
	rmp_journal_stats(j, &st);
	CHECK_EQ(st.recovered, 1);
	CHECK_EQ(st.overlapped, 2);
	CHECK_EQ(st.used, 1);
	rmp_journal_close(j);
	free(mem);
}

/* A newer grant that has expired since still proves the older lease it
 * overlaps had ended: the older one is not recovered either. */
static void test_overlap_expired_newer(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal *j;
	struct rmp_journal_lease a = lease(1, 0, 1 << 20, 9000),
				 b = lease(2, 4096, 4096, 500),
				 c = lease(3, 2 << 20, 4096, 9000);
	uint32_t sa = 0, sb = 0, sc = 0;
	struct rmp_journal_stats st;
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	CHECK_EQ(rmp_journal_put(j, &a, &sa), 0);
	CHECK_EQ(rmp_journal_put(j, &b, &sb), 0); /* a ended before */
	CHECK_EQ(rmp_journal_put(j, &c, &sc), 0);
	rmp_journal_close(j);
	j = reopen(mem, len, 600, &s, &found); /* b expired */
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.l[0].id, 3);
	rmp_journal_stats(j, &st);
	CHECK_EQ(st.expired, 1);
	CHECK_EQ(st.overlapped, 1);
	CHECK_EQ(st.used, 1);
	rmp_journal_close(j);
	free(mem);
}

/* Two records of one seq that overlap (a record copied to another slot:
 * never written so) cannot both be live, nor told apart: neither is. */
static void test_overlap_same_seq(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal *j;
	struct rmp_journal_lease a = lease(1, 0, 4096, 9000),
				 b = lease(2, 8192, 4096, 9000);
	uint32_t sa = 0, sb = 0;
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	CHECK_EQ(rmp_journal_put(j, &a, &sa), 0);
	CHECK_EQ(rmp_journal_put(j, &b, &sb), 0);
	rmp_journal_close(j);
	memcpy(mem + RMP_JOURNAL_HEADER + (CAP - 1) * RMP_JOURNAL_RECORD,
	       mem + RMP_JOURNAL_HEADER + (sa - 1) * RMP_JOURNAL_RECORD,
	       RMP_JOURNAL_RECORD);
	j = reopen(mem, len, 1, &s, &found);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.l[0].id, 2);
	rmp_journal_close(j);
	free(mem);
}

static bool overlap(const struct rmp_journal_lease *x,
		    const struct rmp_journal_lease *y)
{
	return x->offset < y->offset + y->length &&
	       y->offset < x->offset + x->length;
}

/*
 * test_overlap_random -- random sets of records of 1 to 16 units of
 * 4 KiB, crowded into 16 to 512 units so that few to most overlap, some
 * ended (dropped) on the way so that slots are not in grant order, some
 * expired; recovery against the rule spelled out, O(n^2): a record is
 * kept iff it has not expired and no other record granted after it,
 * expired or not, overlaps it.
 */
static void test_overlap_random(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = malloc(len);
	unsigned bad = 0, sets = 400, kept = 0, killed = 0;

	rng_state = 0x5eed5eed5eedull;
	for (unsigned set = 0; set < sets; set++) {
		struct rmp_journal_lease w[64];
		uint32_t slot[64] = { 0 };
		bool live[64] = { false }, keep[64] = { false };
		unsigned n = 1 + (unsigned)(rng() % 64), nlive = 0, nkeep = 0,
			 nexp = 0;
		uint64_t units = 16ull << rng() % 6; /* crowded to sparse */
		struct rmp_journal_stats st;
		struct rmp_journal *j;
		struct seen s;
		bool found, ok = true;

		memset(mem, 0, len);
		j = reopen(mem, len, 0, &s, &found);
		for (unsigned i = 0; i < n; i++) {
			/* One in 8 expired at recovery (now 1). */
			w[i] = lease(i + 1, (rng() % units) << 12,
				     (1 + rng() % 16) << 12,
				     rng() % 8 ? 9000 : 1);
			ok &= rmp_journal_put(j, &w[i], &slot[i]) == 0;
			live[i] = true;
			if (rng() % 4 == 0) { /* an earlier lease ends */
				unsigned k = (unsigned)(rng() % (i + 1));

				rmp_journal_drop(j, &slot[k]);
				live[k] = false;
			}
		}
		rmp_journal_close(j);
		for (unsigned i = 0; i < n; i++) {
			keep[i] = live[i] && w[i].deadline_ms > 1;
			for (unsigned k = 0; k < n && keep[i]; k++)
				if (k != i && live[k] && w[k].seq > w[i].seq &&
				    overlap(&w[i], &w[k]))
					keep[i] = false;
			nlive += live[i] && w[i].deadline_ms > 1;
			nexp += live[i] && w[i].deadline_ms <= 1;
			nkeep += keep[i];
		}
		j = reopen(mem, len, 1, &s, &found);
		ok &= found && s.n == nkeep;
		for (unsigned r = 0; ok && r < s.n; r++) {
			unsigned i = (unsigned)s.l[r].id - 1;

			ok &= i < n && keep[i] && s.l[r].seq == w[i].seq &&
			      s.slot[r] == slot[i];
			if (r) /* in offset order, disjoint */
				ok &= s.l[r - 1].offset + s.l[r - 1].length <=
				      s.l[r].offset;
		}
		rmp_journal_stats(j, &st);
		ok &= st.recovered == nkeep && st.overlapped == nlive - nkeep &&
		      st.expired == nexp && st.used == nkeep;
		if (!ok && !bad++)
			printf("# set %u (%u records, %u live): recovered %u, "
			       "want %u\n", set, n, nlive, s.n, nkeep);
		kept += nkeep;
		killed += nlive - nkeep;
		rmp_journal_close(j);
	}
	printf("# %u sets: %u kept, %u dead by overlap\n", sets, kept,
	       killed);
	CHECK_EQ(bad, 0);
	free(mem);
}

/*
 * test_damage -- for several seeds: a journal of random live leases, then
 * random bytes of the record area overwritten. Whatever recovers must be
 * a lease that was written, byte for byte, inside the pool, and no two
 * recovered leases overlap; every lease whose record was not touched
 * recovers.
 */
static void test_damage(void)
{
	size_t len = rmp_journal_bytes(CAP);

	for (uint64_t seed = 1; seed <= 8; seed++) {
		uint8_t *mem = calloc(1, len), *touched = calloc(CAP + 1, 1);
		struct rmp_journal_lease w[CAP];
		uint32_t slot[CAP] = { 0 };
		struct rmp_journal *j;
		struct seen s;
		bool found, ok = true;
		unsigned nw = 100, hits = 5 + (unsigned)(seed * 3);

		rng_state = seed * 0x9e3779b97f4a7c15ull;
		j = reopen(mem, len, 0, &s, &found);
		for (unsigned i = 0; i < nw; i++) {
			w[i] = lease(i + 1, (uint64_t)i * (256 << 10),
				     64 * (1 + rng() % 4000), 1000 + i);
			CHECK_EQ(rmp_journal_put(j, &w[i], &slot[i]), 0);
		}
		rmp_journal_close(j);
		for (unsigned h = 0; h < hits; h++) {
			size_t at = RMP_JOURNAL_HEADER +
				    rng() % (len - RMP_JOURNAL_HEADER);
			unsigned n = 1 + rng() % 16;

			for (unsigned k = 0; k < n && at + k < len; k++) {
				mem[at + k] ^= (uint8_t)(1 + rng() % 255);
				touched[1 + (at + k - RMP_JOURNAL_HEADER) /
					RMP_JOURNAL_RECORD] = 1;
			}
		}
		j = reopen(mem, len, 500, &s, &found);
		CHECK(found);
		for (unsigned r = 0; r < s.n; r++) {
			const struct rmp_journal_lease *g = &s.l[r];
			unsigned i = (unsigned)g->id - 1;

			ok &= g->id >= 1 && g->id <= nw &&
			      g->offset == w[i].offset &&
			      g->length == w[i].length &&
			      g->secret == w[i].secret && !touched[slot[i]];
			if (r)
				ok &= s.l[r - 1].offset + s.l[r - 1].length <=
				      g->offset;
		}
		unsigned intact = 0;
		for (unsigned i = 0; i < nw; i++)
			intact += !touched[slot[i]];
		CHECK_EQ(s.n, intact);
		CHECK(ok);
		struct rmp_journal_stats st;
		rmp_journal_stats(j, &st);
		printf("# seed %llu: %u hits, %u recovered, %u damaged\n",
		       (unsigned long long)seed, hits, st.recovered,
		       st.damaged);
		/* Damage may also hit empty records: those count too. */
		CHECK(st.damaged >= nw - intact);
		/* The damaged records are free again. */
		CHECK_EQ(st.used, intact);
		rmp_journal_close(j);
		free(touched);
		free(mem);
	}
}

/* A record that checks out but holds a value we never write is not
 * trusted either: a ttl of 0 (auto-renew would spin), no or unknown
 * access bits, unknown flags, an ephemeral lease. */
static void test_invalid_fields(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal_lease l[6];
	struct rmp_journal_stats st;
	struct rmp_journal *j;
	uint32_t slot[6] = { 0 };
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	for (int i = 0; i < 6; i++)
		l[i] = lease(21 + (uint64_t)i, (uint64_t)i * 4096, 4096, 1000);
	l[1].ttl_ms = 0;
	l[1].flags = RMP_LEASE_F_AUTO_RENEW;
	l[2].access = 0;
	l[3].access = RMP_ACC_ALL | 0x100;
	l[4].flags = 0x80;
	l[5].flags = RMP_LEASE_F_EPHEMERAL;
	for (int i = 0; i < 6; i++)
		CHECK_EQ(rmp_journal_put(j, &l[i], &slot[i]), 0);
	rmp_journal_close(j);

	j = reopen(mem, len, 10, &s, &found);
	CHECK(found);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.l[0].id, 21);
	rmp_journal_stats(j, &st);
	CHECK_EQ(st.invalid, 5);
	CHECK_EQ(st.used, 1);
	rmp_journal_close(j);
	free(mem);
}

/* A header that does not check out is never trusted. */
static void test_header(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len);
	struct rmp_journal *j;
	struct rmp_journal_lease a = lease(1, 0, 4096, 9000);
	uint32_t sa = 0;
	struct seen s;
	bool found;
	char why[160];

	j = reopen(mem, len, 0, &s, &found);
	CHECK_EQ(rmp_journal_put(j, &a, &sa), 0);
	rmp_journal_close(j);
	mem[20] ^= 1;
	CHECK_EQ(rmp_journal_open(&j, mem, len, POOL, &found, why,
				  sizeof(why)), 0);
	CHECK(!found);
	CHECK(strstr(why, "damaged") != NULL);
	rmp_journal_close(j);
	/* ...and it was formatted: the lease is gone for good. */
	j = reopen(mem, len, 0, &s, &found);
	CHECK(found);
	CHECK_EQ(s.n, 0);
	rmp_journal_close(j);
	/* Full: -ENOSPC. */
	j = reopen(mem, rmp_journal_bytes(2), 0, &s, &found);
	uint32_t x = 0, y = 0, z = 0;
	struct rmp_journal_lease b = lease(2, 8192, 64, 9000), c = lease(3, 1 << 20, 64, 9000);
	CHECK_EQ(rmp_journal_put(j, &a, &x), 0);
	CHECK_EQ(rmp_journal_put(j, &b, &y), 0);
	CHECK_EQ(rmp_journal_put(j, &c, &z), -ENOSPC);
	rmp_journal_drop(j, &x);
	CHECK_EQ(rmp_journal_put(j, &c, &z), 0);
	rmp_journal_close(j);
	free(mem);
}

/*
 * A recovery without the memory for its work (either allocation) changes
 * nothing: the daemon refuses to start on it, and the next start finds
 * every record and byte as they were. The journal has no free record
 * meanwhile, so nothing new can be put over a lease still in it.
 */
static void test_recover_nomem(void)
{
	size_t len = rmp_journal_bytes(CAP);
	uint8_t *mem = calloc(1, len), *copy = malloc(len);
	struct rmp_journal_lease l[3], n;
	struct rmp_journal_stats st;
	struct rmp_journal *j;
	uint32_t slot[3] = { 0 }, ns;
	struct seen s;
	bool found;

	j = reopen(mem, len, 0, &s, &found);
	l[0] = lease(21, 0, 4096, 1000);
	l[1] = lease(22, 1 << 20, 64, 1000);
	l[2] = lease(23, 2 << 20, 4096, 10); /* expired at recovery */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(rmp_journal_put(j, &l[i], &slot[i]), 0);
	rmp_journal_close(j);
	memcpy(copy, mem, len);

	for (int which = 1; which <= 2; which++) {
		memset(&s, 0, sizeof(s));
		CHECK_EQ(rmp_journal_open(&j, mem, len, POOL, &found, NULL, 0),
			 0);
		CHECK(found);
		CHECK(rmp_journal_recover_bytes(j) >= CAP * sizeof(uint32_t));
		fail_malloc_in = which;
		CHECK_EQ(rmp_journal_recover(j, 100, collect, &s), -ENOMEM);
		fail_malloc_in = 0;
		CHECK_EQ(s.n, 0);
		CHECK(!memcmp(mem, copy, len));
		ns = 0;
		n = lease(24, 4 << 20, 4096, 1000);
		CHECK_EQ(rmp_journal_put(j, &n, &ns), -ENOSPC);
		CHECK(!memcmp(mem, copy, len));
		rmp_journal_close(j);
	}

	j = reopen(mem, len, 100, &s, &found);
	CHECK(found);
	CHECK_EQ(s.n, 2);
	CHECK_EQ(s.l[0].id, 21);
	CHECK_EQ(s.l[1].id, 22);
	rmp_journal_stats(j, &st);
	CHECK_EQ(st.recovered, 2);
	CHECK_EQ(st.expired, 1);
	rmp_journal_close(j);
	free(copy);
	free(mem);
}

int main(void)
{
	test_round_trip();
	test_overlap();
	test_overlap_dead_newer();
	test_overlap_same_seq();
	test_overlap_expired_newer();
	test_overlap_random();
	test_damage();
	test_invalid_fields();
	test_header();
	test_recover_nomem();
	return check_done();
}

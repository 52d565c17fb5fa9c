/* SPDX-License-Identifier: MIT */
/* journal.c -- the leases as they must outlive the daemon process. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "journal.h"
#include "proto.h"

#define HEADER_MAGIC 0x4a504d52u /* "RMPJ" */
#define RECORD_MAGIC 0x4c504d52u /* "RMPL" */
#define VERSION 1u
#define SUM_BYTES 16u

/* In memory, little-endian hosts only (as the verbs wire formats we use). */
struct header {
	uint32_t magic, version;
	uint64_t pool_size;
	uint32_t capacity, record_size;
	char boot_id[40];
	uint8_t sum[SUM_BYTES]; /* of everything above */
};

/* Exactly one slot: the checksum covers every byte of it. */
struct record {
	uint32_t magic;
	uint32_t pad;
	struct rmp_journal_lease l;
	uint8_t spare[RMP_JOURNAL_RECORD - 8 - sizeof(struct rmp_journal_lease) -
		      SUM_BYTES]; /* zero */
	uint8_t sum[SUM_BYTES]; /* of everything above */
};

_Static_assert(sizeof(struct record) == RMP_JOURNAL_RECORD,
	       "a journal record must fill its slot exactly");
_Static_assert(sizeof(struct header) <= RMP_JOURNAL_HEADER,
	       "the journal header outgrew its page");

struct rmp_journal {
	uint8_t *mem;
	uint64_t pool_size;
	uint32_t capacity;
	uint64_t next_seq;
	/* Free record numbers (1-based), a stack. */
	uint32_t *free_slots, nfree;
	struct rmp_journal_stats st;
};

static void checksum(const void *p, size_t len, uint8_t out[SUM_BYTES])
{
	crypto_generichash(out, SUM_BYTES, p, len, NULL, 0);
}

static struct record *rec(const struct rmp_journal *j, uint32_t slot)
{
	return (struct record *)(j->mem + RMP_JOURNAL_HEADER +
				 (size_t)(slot - 1) * RMP_JOURNAL_RECORD);
}

size_t rmp_journal_bytes(uint32_t capacity)
{
	return RMP_JOURNAL_HEADER + (size_t)capacity * RMP_JOURNAL_RECORD;
}

/* boot_id -- this boot's id, or "" if the kernel does not tell. */
static void boot_id(char out[40])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;

	memset(out, 0, 40);
	if (fd >= 0) {
		n = read(fd, out, 39);
		close(fd);
	}
	if (n <= 0)
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
}

static void format(struct rmp_journal *j, const struct header *want)
{
	struct header *h = (struct header *)j->mem;

	memset(j->mem, 0, rmp_journal_bytes(j->capacity));
	*h = *want;
	checksum(h, offsetof(struct header, sum), h->sum);
}

int rmp_journal_open(struct rmp_journal **out, void *mem, size_t len,
		     uint64_t pool_size, bool *found, char *why,
		     size_t whylen)
{
	struct rmp_journal *j;
	struct header want = { 0 }, *h = mem;
	uint8_t sum[SUM_BYTES];
	uint64_t cap = len < RMP_JOURNAL_HEADER ? 0 :
		       (len - RMP_JOURNAL_HEADER) / RMP_JOURNAL_RECORD;

	*found = false;
	if (why && whylen)
		why[0] = 0;
	if (cap == 0 || cap > UINT32_MAX)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->mem = mem;
	j->pool_size = pool_size;
	j->capacity = (uint32_t)cap;
	j->next_seq = 1;
	j->free_slots = malloc(sizeof(uint32_t) * cap);
	if (!j->free_slots) {
		free(j);
		return -ENOMEM;
	}
	want.magic = HEADER_MAGIC;
	want.version = VERSION;
	want.pool_size = pool_size;
	want.capacity = j->capacity;
	want.record_size = RMP_JOURNAL_RECORD;
	boot_id(want.boot_id);

	checksum(h, offsetof(struct header, sum), sum);
	if (h->magic == 0 && h->version == 0) {
		/* empty memory: nothing to say */
	} else if (sodium_memcmp(sum, h->sum, SUM_BYTES) ||
		   h->magic != HEADER_MAGIC) {
		snprintf(why, whylen, "the journal header is damaged");
	} else if (h->version != VERSION) {
		snprintf(why, whylen, "journal version %u, not %u",
			 h->version, VERSION);
	} else if (!want.boot_id[0] ||
		   strncmp(h->boot_id, want.boot_id, sizeof(h->boot_id))) {
		snprintf(why, whylen, "it was written before a reboot");
	} else if (h->pool_size != pool_size || h->capacity != j->capacity ||
		   h->record_size != RMP_JOURNAL_RECORD) {
		snprintf(why, whylen, "it is for a pool of %llu bytes and %u "
			 "leases, not %llu and %u",
			 (unsigned long long)h->pool_size, h->capacity,
			 (unsigned long long)pool_size, j->capacity);
	} else {
		*found = true;
	}
	if (!*found) {
		format(j, &want);
		for (uint32_t i = 0; i < j->capacity; i++)
			j->free_slots[i] = j->capacity - i; /* 1 on top */
		j->nfree = j->capacity;
	}
	j->st.capacity = j->capacity;
	*out = j;
	return 0;
}

void rmp_journal_close(struct rmp_journal *j)
{
	if (!j)
		return;
	free(j->free_slots);
	free(j);
}

void rmp_journal_stats(const struct rmp_journal *j,
		       struct rmp_journal_stats *st)
{
	*st = j->st;
	st->used = j->capacity - j->nfree;
}

/* classify -- 0: r checks out, lies in the pool and is live; else why not
 * (1 damaged, 2 invalid, 3 expired). */
static int classify(const struct rmp_journal *j, const struct record *r,
		    uint64_t now_ms)
{
	uint8_t sum[SUM_BYTES];
	const struct rmp_journal_lease *l = &r->l;

	checksum(r, offsetof(struct record, sum), sum);
	if (r->magic != RECORD_MAGIC || sodium_memcmp(sum, r->sum, SUM_BYTES))
		return 1; /* damaged */
	if (!l->length || l->offset % 64 || l->length % 64 ||
	    l->offset > j->pool_size || l->length > j->pool_size - l->offset ||
	    !l->id || !l->seq || memchr(l->tenant, 0, sizeof(l->tenant)) ==
	    NULL || memchr(l->owner, 0, sizeof(l->owner)) == NULL)
		return 2; /* invalid */
	/* Every field recovery trusts (a checksum proves only that we
	 * wrote it): a ttl of 0 with auto-renew would renew on every
	 * tick; ephemeral leases are never kept. */
	if (!l->ttl_ms || !l->access || (l->access & ~RMP_ACC_ALL) ||
	    (l->flags & ~(RMP_LEASE_F_EPHEMERAL | RMP_LEASE_F_AUTO_RENEW)) ||
	    (l->flags & RMP_LEASE_F_EPHEMERAL))
		return 2; /* invalid */
	if (l->deadline_ms <= now_ms)
		return 3; /* expired */
	return 0;
}

struct cand {
	uint64_t offset, end, seq;
	uint32_t slot;
	bool expired, drop;
};

static int by_offset(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* A binary heap of candidates (indices into c), by seq: newest or oldest
 * on top. */
struct heap {
	const struct cand *c;
	uint32_t *v, n;
	bool newest;
};

static bool above(const struct heap *h, uint32_t a, uint32_t b)
{
	return h->newest ? h->c[a].seq > h->c[b].seq :
			   h->c[a].seq < h->c[b].seq;
}

static void heap_push(struct heap *h, uint32_t x)
{
	uint32_t i = h->n++;

	for (; i && above(h, x, h->v[(i - 1) / 2]); i = (i - 1) / 2)
		h->v[i] = h->v[(i - 1) / 2];
	h->v[i] = x;
}

static void heap_pop(struct heap *h)
{
	uint32_t x = h->v[--h->n], i = 0, k;

	while ((k = 2 * i + 1) < h->n) {
		if (k + 1 < h->n && above(h, h->v[k + 1], h->v[k]))
			k++;
		if (!above(h, h->v[k], x))
			break;
		h->v[i] = h->v[k];
		i = k;
	}
	h->v[i] = x;
}

/*
 * drop_overlaps -- mark dead every candidate of c[0, n) (in offset order)
 * that another one granted at the same time or later overlaps, whether
 * that one is kept or not: the allocator handed the newer grant bytes the
 * older lease covered, so the older one had ended (its zeroed record was
 * lost). Two that overlap with the same seq cannot both be live, and
 * which is cannot be told: both go. What is kept is disjoint.
 *
 * One sweep in offset order, with the candidates still open at the
 * current offset (end > offset: they overlap it) in two heaps by seq: the
 * newest open one kills the current candidate if not older than it; the
 * current one kills every open one not newer than it, the oldest first.
 * Candidates that closed are taken off a heap's top when they get there.
 * Each candidate enters and leaves each heap once: O(n log n). v has
 * room for 2n indices.
 */
static void drop_overlaps(struct cand *c, uint32_t n, uint32_t *v)
{
	struct heap newest = { c, v, 0, true }, oldest = { c, v + n, 0, false };

	for (uint32_t i = 0; i < n; i++) {
		while (newest.n && c[newest.v[0]].end <= c[i].offset)
			heap_pop(&newest);
		if (newest.n && c[newest.v[0]].seq >= c[i].seq)
			c[i].drop = true;
		while (oldest.n) {
			struct cand *o = &c[oldest.v[0]];

			if (o->end > c[i].offset && o->seq > c[i].seq)
				break;
			if (o->end > c[i].offset)
				o->drop = true;
			heap_pop(&oldest);
		}
		heap_push(&newest, i);
		heap_push(&oldest, i);
	}
}

size_t rmp_journal_recover_bytes(const struct rmp_journal *j)
{
	return (sizeof(struct cand) + 2 * sizeof(uint32_t)) *
	       (size_t)j->capacity;
}

int rmp_journal_recover(struct rmp_journal *j, uint64_t now_ms,
			void (*fn)(const struct rmp_journal_lease *r,
				   uint32_t slot, void *arg),
			void *arg)
{
	size_t cap = j->capacity ? j->capacity : 1;
	struct cand *c = malloc(sizeof(*c) * cap);
	uint32_t *heaps = malloc(sizeof(*heaps) * 2 * cap), n = 0;

	if (!c || !heaps) {
		free(c);
		free(heaps);
		return -ENOMEM;
	}
	memset(&j->st, 0, sizeof(j->st));
	j->st.capacity = j->capacity;
	j->nfree = 0;
	for (uint32_t s = j->capacity; s >= 1; s--) {
		struct record *r = rec(j, s);
		int kind;

		if (r->magic == 0 && r->l.seq == 0) {
			j->free_slots[j->nfree++] = s;
			continue;
		}
		kind = classify(j, r, now_ms);
		if (kind == 1 || kind == 2) {
			if (kind == 1)
				j->st.damaged++;
			else
				j->st.invalid++;
			memset(r, 0, RMP_JOURNAL_RECORD);
			j->free_slots[j->nfree++] = s;
			continue;
		}
		/* An expired lease is not kept, but its grant still proves
		 * the older leases it overlaps had ended. */
		c[n++] = (struct cand){ r->l.offset, r->l.offset + r->l.length,
					r->l.seq, s, kind == 3, false };
		if (r->l.seq >= j->next_seq)
			j->next_seq = r->l.seq + 1;
	}
	qsort(c, n, sizeof(*c), by_offset);
	drop_overlaps(c, n, heaps);
	for (uint32_t i = 0; i < n; i++) {
		struct record *r = rec(j, c[i].slot);

		if (c[i].expired || c[i].drop) {
			if (c[i].expired)
				j->st.expired++;
			else
				j->st.overlapped++;
			memset(r, 0, RMP_JOURNAL_RECORD);
			j->free_slots[j->nfree++] = c[i].slot;
			continue;
		}
		j->st.recovered++;
		fn(&r->l, c[i].slot, arg);
	}
	free(heaps);
	free(c);
	return 0;
}

int rmp_journal_put(struct rmp_journal *j, struct rmp_journal_lease *r,
		    uint32_t *slot)
{
	struct record tmp = { .magic = RECORD_MAGIC };

	if (!*slot) {
		if (!j->nfree)
			return -ENOSPC;
		*slot = j->free_slots[--j->nfree];
		r->seq = j->next_seq++;
	} else {
		r->seq = rec(j, *slot)->l.seq;
	}
	tmp.l = *r;
	checksum(&tmp, offsetof(struct record, sum), tmp.sum);
	/* One copy: torn only if the process dies inside it, and then the
	 * checksum says so. */
	memcpy(rec(j, *slot), &tmp, sizeof(tmp));
	return 0;
}

void rmp_journal_drop(struct rmp_journal *j, uint32_t *slot)
{
	if (!*slot)
		return;
	memset(rec(j, *slot), 0, RMP_JOURNAL_RECORD);
	j->free_slots[j->nfree++] = *slot;
	*slot = 0;
}

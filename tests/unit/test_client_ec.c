/* SPDX-License-Identifier: MIT */
/*
 * test_client_ec.c -- an erasure-coded lease's handle (lease_group.c's
 * rmpc_group_new_ec) and data path (io_ec.c through io_group.c) on fake
 * verbs, a 4+2 lease in 4 KiB chunks: bytes written in uneven calls land
 * where the layout puts them, each row's parity is the code of its data
 * and its tags one write's on every member; they read back in other
 * uneven calls, also with one and two members lost (decoded), and fail
 * with three; a row whose members hold two writes' tags is refused as
 * torn when a read must decode it; writes with a data member lost keep
 * the parity right (the row encoded anew), and read back. A repair's
 * rebuild (rmpc_ec_rebuild_rows) fills a new data and a new parity
 * member with exactly the bytes and tags the lost ones held, and mends
 * a torn row (parity anew from the data, one new tag) while every data
 * member lives; a torn row with a data member away is refused. The
 * write hole: after every RDMA WRITE of three writes (a row, a part of
 * a chunk, a part across chunks), as a writer killed there leaves the
 * members, no degraded read of the row decodes bytes that neither the
 * old nor the new row holds.
 *
 * The fake NIC is one connection: every member here is a lease of the
 * same client.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ec_fixture.h"
#include "ec_codec.h"
#include "ec_lease.h"
#include "ec_tags.h"
#include "fake_client.h"
#include "group.h"
#include "io_int.h"
#include "lease.h"
#include "rmpool.h"


static uint8_t src[LENGTH], dst[LENGTH];

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 13 + seed) ^ (i >> 11));
}

static struct rmp_lease *ec_lease(struct rmp_client *c)
{
	struct rmp_lease *m[N], *l = NULL;

	memset(fake_remote, 0, N * MEMBER); /* as a server zeroes */
	for (unsigned i = 0; i < N; i++)
		m[i] = fake_lease(c, i * MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_group_new_ec(m, K, M, CHUNK, LENGTH, NULL, &l), 0);
	return l;
}

static uint8_t *member(unsigned i)
{
	return fake_remote + i * MEMBER;
}

static uint64_t tag_of(unsigned i, unsigned r)
{
	uint64_t t;

	memcpy(&t, member(i) + TAGS + 8 * r, 8);
	return t;
}

/* layout_ok -- the members hold want as the layout says: data chunks,
 * parity the code of each row (zeros past the end), one nonzero tag per
 * row on every member. */
static bool layout_ok(const uint8_t *want)
{
	const struct rmpc_ec_code *code = rmpc_ec_code_get(K, M);
	static uint8_t row[K][CHUNK], par[M][CHUNK];
	unsigned bad = 0;

	for (unsigned r = 0; r < 3; r++) {
		uint8_t *d[K], *p[M];

		for (unsigned i = 0; i < K; i++) {
			uint64_t at = (uint64_t)r * ROW + i * CHUNK;

			memset(row[i], 0, CHUNK);
			if (at < LENGTH)
				memcpy(row[i], want + at,
				       LENGTH - at < CHUNK ? LENGTH - at : CHUNK);
			d[i] = row[i];
			bad += memcmp(member(i) + r * CHUNK, row[i], CHUNK) != 0;
		}
		for (unsigned j = 0; j < M; j++)
			p[j] = par[j];
		rmpc_ec_encode(code, CHUNK, d, p);
		for (unsigned j = 0; j < M; j++)
			bad += memcmp(member(K + j) + r * CHUNK, par[j], CHUNK) != 0;
		for (unsigned i = 0; i < N; i++)
			bad += !tag_of(i, r) || tag_of(i, r) != tag_of(0, r);
	}
	if (bad)
		printf("# %u chunks or tags not as the layout says\n", bad);
	return !bad;
}

/* write_cuts, read_cuts -- all of the lease in calls of these sizes. */
static int write_cuts(struct rmp_lease *l, const size_t *cuts)
{
	size_t at = 0;

	for (unsigned i = 0; at < LENGTH; at += cuts[i], i++) {
		size_t n = cuts[i] && at + cuts[i] <= LENGTH ? cuts[i] :
			   LENGTH - at;
		int err = rmp_write(l, at, src + at, n);

		if (err)
			return err;
		if (n != cuts[i])
			break;
	}
	return 0;
}

static int read_cuts(struct rmp_lease *l, const size_t *cuts)
{
	size_t at = 0;

	memset(dst, 0, sizeof(dst));
	for (unsigned i = 0; at < LENGTH; at += cuts[i], i++) {
		size_t n = cuts[i] && at + cuts[i] <= LENGTH ? cuts[i] :
			   LENGTH - at;
		int err = rmp_read(l, at, dst + at, n);

		if (err)
			return err;
		if (n != cuts[i])
			break;
	}
	return 0;
}

static const size_t wcuts[] = { 1, 100, CHUNK, ROW, ROW + 777, 3, 0 };
static const size_t rcuts[] = { 5000, 1, ROW - 1, CHUNK + 1, 0 };

static void test_layouts(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *m[N], *l = NULL;

	for (unsigned i = 0; i < N; i++)
		m[i] = fake_lease(c, i * MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_group_new_ec(m, 1, 2, CHUNK, LENGTH, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new_ec(m, K, 5, CHUNK, LENGTH, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new_ec(m, K, M, 1000, LENGTH, NULL, &l), -EINVAL);
	/* members too small for 4 rows */
	CHECK_EQ(rmpc_group_new_ec(m, K, M, CHUNK, 4 * ROW, NULL, &l), -EINVAL);
	CHECK(!l);
	CHECK_EQ(rmpc_group_new_ec(m, K, M, CHUNK, LENGTH, NULL, &l), 0);
	rmp_lease_close(l);
	fake_client_free(c);
}

static void test_bytes(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = ec_lease(c);
	unsigned wrs, posts;

	pattern(src, LENGTH, 3);
	CHECK_EQ(write_cuts(l, wcuts), 0);
	CHECK(layout_ok(src));
	CHECK_EQ(read_cuts(l, rcuts), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	/* written again in other cuts: the partial rows' parity by delta */
	pattern(src, LENGTH, 4);
	CHECK_EQ(write_cuts(l, rcuts), 0);
	CHECK(layout_ok(src));
	/* 100 B inside a chunk, by delta: every member's tag with the old
	 * bytes and the parity in one round (a chain a member: 6 doorbells,
	 * 9 READs), the tags pending or put (6), the piece and the parity
	 * (3), the tags finished (3): 18 doorbells, 21 WRs */
	wrs = fake_data_wrs();
	posts = fake_posts;
	src[CHUNK + 7] ^= 0x5a;
	CHECK_EQ(rmp_write(l, CHUNK, src + CHUNK, 100), 0);
	CHECK_EQ(fake_posts - posts, 18);
	CHECK_EQ(fake_data_wrs() - wrs, 21);
	CHECK(layout_ok(src));
	CHECK_EQ(rmp_read(l, LENGTH, dst, 0), 0);
	CHECK_EQ(rmp_read(l, LENGTH - 1, dst, 2), -ERANGE);
	CHECK_EQ(rmp_cas(l, 0, 0, 1, NULL), -EOPNOTSUPP);
	rmp_lease_close(l);
	fake_client_free(c);
}

static void test_degraded(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = ec_lease(c);

	struct rmp_lease_info in = { .size = sizeof(in) };
	unsigned wrs, posts;

	pattern(src, LENGTH, 5);
	CHECK_EQ(write_cuts(l, wcuts), 0);
	rmpc_member_lost(l->group, 1); /* a data member */
	/* ec_decoded counts the chunks reads decoded: one for a chunk of
	 * member 1, none for member 0's */
	CHECK_EQ(rmp_read(l, 0, dst, CHUNK), 0);
	CHECK_EQ(rmp_lease_info(l, &in), 0);
	CHECK_EQ(in.ec_decoded, 0);
	/* ... in one round: a chain to k members (the live data members,
	 * then parity), its tag of the row, its chunk, its tag again (one
	 * doorbell each); not to the fifth live one: k that agree are all
	 * a decode needs */
	wrs = fake_data_wrs();
	posts = fake_posts;
	CHECK_EQ(rmp_read(l, CHUNK, dst, CHUNK), 0);
	CHECK_EQ(fake_data_wrs() - wrs, 3 * K);
	CHECK_EQ(fake_posts - posts, K);
	CHECK(!memcmp(dst, src + CHUNK, CHUNK));
	CHECK_EQ(rmp_lease_info(l, &in), 0);
	CHECK_EQ(in.ec_decoded, 1);
	CHECK_EQ(read_cuts(l, rcuts), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	rmpc_member_lost(l->group, 5); /* and a parity member */
	CHECK_EQ(read_cuts(l, wcuts), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	/* writes go on without them: rows anew where member 1 is touched */
	pattern(src, LENGTH, 6);
	CHECK_EQ(write_cuts(l, rcuts), 0);
	CHECK_EQ(read_cuts(l, wcuts), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	/* a third: data chunks of member 0 still read, member 1's not */
	rmpc_member_lost(l->group, 4);
	CHECK_EQ(rmp_read(l, 0, dst, 100), 0);
	CHECK_EQ(rmp_read(l, CHUNK, dst, 100), -EIO);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Another process's write of row 0 begins between a degraded read's
 * first READ of member WM's tag and its READ of WM's chunk: WM's tag
 * goes pending, its chunk changes. */
#define WM 2u
static unsigned writer_fired;

static void writer_between(uint64_t off, uint32_t len)
{
	uint64_t t;

	if (writer_fired || off != WM * MEMBER || len != CHUNK)
		return; /* not WM's chunk of row 0 */
	writer_fired++;
	t = tag_of(WM, 0) | RMPC_EC_TAG_PENDING;
	memcpy(member(WM) + TAGS, &t, 8);
	memset(member(WM), 0xee, CHUNK);
}

/* The chunk WM's READ brought is not of the tag read before it: the tag
 * read again after it says so, and the row decodes from the other four
 * (member 1 lost). */
static void test_seqlock(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = ec_lease(c);

	pattern(src, LENGTH, 8);
	CHECK_EQ(write_cuts(l, wcuts), 0);
	rmpc_member_lost(l->group, 1);
	fake_before_read = writer_between;
	CHECK_EQ(rmp_read(l, CHUNK, dst, CHUNK), 0);
	fake_before_read = NULL;
	CHECK_EQ(writer_fired, 1);
	CHECK(!memcmp(dst, src + CHUNK, CHUNK));
	rmp_lease_close(l);
	fake_client_free(c);
}

static void test_torn(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = ec_lease(c);
	uint64_t other = 0x5151;
	unsigned wrs;

	pattern(src, LENGTH, 7);
	CHECK_EQ(write_cuts(l, wcuts), 0);
	/* row 0's last write reached members 0..2 only */
	for (unsigned i = 3; i < N; i++)
		memcpy(member(i) + TAGS, &other, 8);
	CHECK_EQ(rmp_read(l, CHUNK, dst, 100), 0); /* healthy: no decode */
	rmpc_member_lost(l->group, 1);
	CHECK_EQ(rmp_read(l, CHUNK, dst, 100), -EBADMSG);
	/* row 1 agrees: decoded */
	CHECK_EQ(rmp_read(l, ROW + CHUNK, dst, 100), 0);
	CHECK(!memcmp(dst, src + ROW + CHUNK, 100));
	/* row 1 again, its first parity member's tag of another write: the
	 * k read first (0, 2, 3, 4) do not agree, the five live do: decoded
	 * from 0, 2, 3 and 5 after a second round, to all five */
	memcpy(member(4) + TAGS + 8, &other, 8);
	wrs = fake_data_wrs();
	CHECK_EQ(rmp_read(l, ROW + CHUNK, dst, 100), 0);
	CHECK(!memcmp(dst, src + ROW + CHUNK, 100));
	CHECK_EQ(fake_data_wrs() - wrs, 3 * K + 3 * (N - 1));
	rmp_lease_close(l);
	fake_client_free(c);
}

static void test_rebuild(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = ec_lease(c), *from[N], *to[N] = { NULL };
	uint8_t *fresh = fake_remote + N * MEMBER;
	static uint8_t was[2][MEMBER];
	uint64_t bad = 99, mended = 0, other = 0x5151;

	pattern(src, LENGTH, 8);
	CHECK_EQ(write_cuts(l, wcuts), 0);
	memcpy(was[0], member(1), MEMBER);
	memcpy(was[1], member(5), MEMBER);
	for (unsigned i = 0; i < N; i++)
		from[i] = i == 1 || i == 5 ? NULL : l->group->m[i];
	memset(fresh, 0, 2 * MEMBER);
	to[1] = fake_lease(c, N * MEMBER, MEMBER, RMP_ACC_ALL);
	to[5] = fake_lease(c, (N + 1) * MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_ec_rebuild_rows(l->group->ec, from, to, 0, 2, &bad,
				      &mended), 0);
	CHECK_EQ(rmpc_ec_rebuild_rows(l->group->ec, from, to, 2, 1, &bad,
				      &mended), 0);
	CHECK_EQ(mended, 0);
	/* every chunk and tag as the lost members held them */
	CHECK(!memcmp(fresh, was[0], TAGS + 3 * 8));
	CHECK(!memcmp(fresh + MEMBER, was[1], TAGS + 3 * 8));
	rmp_lease_close(to[1]);
	rmp_lease_close(to[5]);

	/* row 1's last write reached members 0..2 only: torn; with every
	 * data member at hand it is mended, the other rows left alone */
	for (unsigned i = 3; i < N; i++)
		memcpy(member(i) + TAGS + 8, &other, 8);
	memcpy(member(3) + CHUNK, "new!", 4); /* member 3's chunk of row 1 */
	memcpy(src + ROW + 3 * CHUNK, "new!", 4);
	for (unsigned i = 0; i < N; i++) {
		from[i] = l->group->m[i];
		to[i] = NULL;
	}
	CHECK_EQ(rmpc_ec_rebuild_rows(l->group->ec, from, to, 0, 3, &bad,
				      &mended), 0);
	CHECK_EQ(mended, 1);
	CHECK(layout_ok(src));
	/* torn again, data member 2 away: no rebuild from two writes */
	for (unsigned i = 3; i < N; i++)
		memcpy(member(i) + TAGS + 8, &other, 8);
	from[2] = NULL;
	to[2] = fake_lease(c, N * MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_ec_rebuild_rows(l->group->ec, from, to, 0, 3, &bad,
				      &mended), -EBADMSG);
	CHECK_EQ(bad, 1);
	rmp_lease_close(to[2]);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* The write hole: the members' memory after each RDMA WRITE of a call,
 * as a writer killed there leaves it. */
#define SNAPS 96
static uint8_t snap[SNAPS][N * MEMBER];
static unsigned nsnaps;

static void take_snap(void)
{
	if (nsnaps < SNAPS)
		memcpy(snap[nsnaps++], fake_remote, N * MEMBER);
}

/* chunk_of -- chunk i of row r of a lease holding bytes. */
static const uint8_t *chunk_of(const uint8_t *bytes, unsigned r, unsigned i)
{
	static uint8_t c[CHUNK];
	uint64_t at = (uint64_t)r * ROW + i * CHUNK;

	memset(c, 0, CHUNK);
	if (at < LENGTH)
		memcpy(c, bytes + at, LENGTH - at < CHUNK ? LENGTH - at : CHUNK);
	return c;
}

/* hole_bad -- in memory state mem, with member lost gone, how many data
 * chunks of row r a degraded read decodes to bytes neither old nor nu
 * has there; *decoded counts those it decodes. */
static unsigned hole_bad(const uint8_t *mem, unsigned r, unsigned lost,
			 const uint8_t *old, const uint8_t *nu,
			 unsigned *decoded)
{
	const struct rmpc_ec_code *code = rmpc_ec_code_get(K, M);
	uint64_t tags[N];
	bool usable[N];
	unsigned have[K], want = lost;
	uint8_t *from[K], out[CHUNK], *to = out;

	if (lost >= K)
		return 0; /* a parity member: nothing to decode */
	for (unsigned i = 0; i < N; i++) {
		memcpy(&tags[i], mem + i * MEMBER + TAGS + 8 * r, 8);
		usable[i] = i != lost;
	}
	if (rmpc_ec_pick(K, N, usable, tags, have) < 0)
		return 0; /* refused: a clear error, not wrong bytes */
	for (unsigned i = 0; i < K; i++)
		from[i] = (uint8_t *)mem + have[i] * MEMBER + r * CHUNK;
	CHECK_EQ(rmpc_ec_decode(code, CHUNK, have, from, 1, &want, &to), 0);
	++*decoded;
	return memcmp(out, chunk_of(old, r, lost), CHUNK) &&
	       memcmp(out, chunk_of(nu, r, lost), CHUNK);
}

static void test_write_hole(void)
{
	static const struct { size_t off, len; } w[] = {
		{ ROW, ROW },              /* a whole row */
		{ CHUNK + 10, 100 },       /* a part of one chunk: by delta */
		{ 2 * CHUNK - 50, 5000 },  /* across chunks 1..2 */
	};
	static uint8_t old[LENGTH];
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = ec_lease(c);
	unsigned bad = 0, decoded = 0, states = 0;

	pattern(src, LENGTH, 9);
	CHECK_EQ(write_cuts(l, wcuts), 0);
	for (unsigned t = 0; t < sizeof(w) / sizeof(w[0]); t++) {
		unsigned r = (unsigned)(w[t].off / ROW);

		memcpy(old, src, LENGTH);
		pattern(src + w[t].off, w[t].len, 20 + t);
		nsnaps = 0;
		take_snap();
		fake_after_write = take_snap;
		CHECK_EQ(rmp_write(l, w[t].off, src + w[t].off, w[t].len), 0);
		fake_after_write = NULL;
		CHECK(nsnaps < SNAPS);
		for (unsigned s = 0; s < nsnaps; s++, states++)
			for (unsigned lost = 0; lost < N; lost++)
				bad += hole_bad(snap[s], r, lost, old, src,
						&decoded);
	}
	printf("# %u states of 3 writes, %u degraded decodes, %u wrong\n",
	       states, decoded, bad);
	CHECK_EQ(bad, 0);
	CHECK(decoded > 0);
	rmp_lease_close(l);
	fake_client_free(c);
}

int main(void)
{
	test_layouts();
	test_bytes();
	test_degraded();
	test_seqlock();
	test_torn();
	test_rebuild();
	test_write_hole();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * test_client_stripe.c -- a striped lease's handle (client/lease.c's
 * rmpc_group_new) and data path (client/io_group.c over io_sync.c's
 * rmpc_rw) on fake verbs: the layouts refused, what rmp_lease_info says,
 * bytes written in uneven calls landing where the layout puts them in
 * each stripe's member and read back in other uneven calls (through the
 * bounce buffer and zero copy from a registered buffer, each WR within
 * one unit), a stripe whose member failed failing the calls that touch
 * it and no others.
 *
 * The fake NIC is one connection, so every member here is a lease of
 * the same client (stripes of replicas 1 may share one): rmpc_rw's legs
 * take turns on it. Legs on different clients moving at once, and
 * mirrored stripes, are for the RDMA tests (rmp-cluster stripe).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "fake_client.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"

#define KIB 1024u
#define UNIT (4 * KIB)
#define K 3                       /* stripes */
#define MEMBER (64 * KIB)         /* each member's fake remote bytes */
#define LENGTH (7 * UNIT + 1000)  /* 7 units and a part */

static uint8_t src[LENGTH], dst[LENGTH];

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 7 + seed) ^ (i >> 12));
}

/* striped -- a lease of LENGTH bytes in K stripes of UNIT over members
 * on c at fake remote MEMBER * s (m gets them). */
static struct rmp_lease *striped(struct rmp_client *c, struct rmp_lease **m)
{
	struct rmp_lease *l = NULL;

	for (unsigned s = 0; s < K; s++)
		m[s] = fake_lease(c, s * MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_group_new(m, K, 1, UNIT, LENGTH, NULL, &l), 0);
	return l;
}

/* remote_of -- the fake remote byte that holds byte x of the lease. */
static uint8_t remote_of(uint64_t x)
{
	uint64_t u = x / UNIT;

	return fake_remote[u % K * MEMBER + u / K * UNIT + x % UNIT];
}

/* Layouts rmpc_group_new refuses; what rmp_lease_info says. */
static void test_layouts(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *m[4], *l = NULL;
	struct rmp_lease_info info = { .size = sizeof(info) };

	for (unsigned i = 0; i < 4; i++)
		m[i] = fake_lease(c, i * MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_group_new(m, 0, 2, UNIT, 100, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new(m, 17, 1, UNIT, 100, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new(m, 4, 0, UNIT, 100, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new(m, 1, 1, UNIT, 100, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new(m, 4, 1, 3000, 100, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new(m, 4, 1, 0, 100, NULL, &l), -EINVAL);
	CHECK_EQ(rmpc_group_new(m, 4, 1, UNIT, 0, NULL, &l), -EINVAL);
	/* members too small: 4 stripes of 64 KiB hold 256 KiB, not more */
	CHECK_EQ(rmpc_group_new(m, 4, 1, UNIT, 4 * MEMBER + 1, NULL, &l),
		 -EINVAL);
	/* replicas of one stripe on the same client */
	CHECK_EQ(rmpc_group_new(m, 2, 2, UNIT, 100, NULL, &l), -EINVAL);
	CHECK(!l);
	/* stripes on the same client are fine */
	CHECK_EQ(rmpc_group_new(m, 4, 1, UNIT, 4 * MEMBER, NULL, &l), 0);
	CHECK_EQ(rmp_lease_info(l, &info), 0);
	CHECK_EQ(info.length, 4 * MEMBER);
	CHECK_EQ(info.stripes, 4);
	CHECK_EQ(info.replicas, 1);
	CHECK_EQ(info.replicas_live, 1);
	CHECK_EQ(rmp_lease_replica_token(l, 3, (char[128]){ 0 }, 128) > 0, 1);
	CHECK_EQ(rmp_lease_replica_token(l, 4, (char[128]){ 0 }, 128),
		 -ENOENT);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Uneven calls through the bounce buffer: each byte lands in its
 * stripe's member where the layout says, and reads back. */
static void test_bytes(void)
{
	static const size_t wcuts[] = { 6000, 1, UNIT, 3 * UNIT + 5, 0 };
	static const size_t rcuts[] = { 1, UNIT - 1, 2 * UNIT + 17, 9000, 0 };
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *m[K], *l = striped(c, m);
	size_t at = 0, bad = 0;

	pattern(src, sizeof(src), 3);
	memset(dst, 0, sizeof(dst));
	for (unsigned i = 0; at < LENGTH; at += wcuts[i], i++) {
		if (!wcuts[i] || at + wcuts[i] > LENGTH) {
			CHECK_EQ(rmp_write(l, at, src + at, LENGTH - at), 0);
			break;
		}
		CHECK_EQ(rmp_write(l, at, src + at, wcuts[i]), 0);
	}
	for (uint64_t x = 0; x < LENGTH; x++)
		bad += remote_of(x) != src[x];
	CHECK_EQ(bad, 0);
	at = 0;
	for (unsigned i = 0; at < LENGTH; at += rcuts[i], i++) {
		if (!rcuts[i] || at + rcuts[i] > LENGTH) {
			CHECK_EQ(rmp_read(l, at, dst + at, LENGTH - at), 0);
			break;
		}
		CHECK_EQ(rmp_read(l, at, dst + at, rcuts[i]), 0);
	}
	CHECK(!memcmp(dst, src, LENGTH));
	/* the edges: nothing at the end, past the end, a sum overflowing */
	CHECK_EQ(rmp_read(l, LENGTH, dst, 0), 0);
	CHECK_EQ(rmp_read(l, LENGTH - 1, dst, 2), -ERANGE);
	CHECK_EQ(rmp_write(l, UINT64_MAX, src, 2), -ERANGE);
	CHECK_EQ(rmp_read(l, 0, NULL, 2), -EINVAL);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* A registered buffer: zero copy, each WR's local bytes within one unit
 * of the lease (they are not contiguous locally past it). */
static void test_registered(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *m[K], *l = striped(c, m);
	static uint8_t mem[LENGTH + 64];
	struct rmp_buf *b = NULL;
	unsigned at, bad = 0, n = 0;

	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	pattern(mem + 7, LENGTH - 7, 5);
	CHECK_EQ(rmp_write(l, 7, mem + 7, LENGTH - 7), 0);
	at = fake_nwrs;
	memset(mem, 0, sizeof(mem));
	CHECK_EQ(rmp_read(l, 7, mem + 7, LENGTH - 7), 0);
	for (unsigned i = at; i < fake_nwrs; i++) {
		const struct fake_wr *w = &fake_wrs[i];
		uint64_t first = w->local - (uintptr_t)mem;

		if (w->opcode != IBV_WR_RDMA_READ)
			continue;
		n++;
		bad += w->lkey != b->mr->lkey ||
		       first / UNIT != (first + w->length - 1) / UNIT;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(n, 8); /* units 0 (from 7) .. 7 (its 1000 bytes) */
	pattern(src, LENGTH, 5);
	CHECK(!memcmp(mem + 7, src, LENGTH - 7));
	rmp_lease_close(l);
	fake_client_free(c);
}

/* A stripe whose only replica failed fails the calls that touch it
 * (nothing posted) and no others; its lease says it is degraded. */
static void test_lost_stripe(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *m[K], *l = striped(c, m);
	struct rmp_lease_info info = { .size = sizeof(info) };
	unsigned at;

	/* unit 1 is stripe 1's: its READ fails at the NIC */
	fake_fail_next = IBV_WC_REM_ACCESS_ERR;
	CHECK(rmp_read(l, UNIT, dst, 10) < 0);
	CHECK(!rmpc_member_live(l->group, 1));
	CHECK(rmpc_member_live(l->group, 0) && rmpc_member_live(l->group, 2));
	CHECK_EQ(rmp_lease_info(l, &info), 0);
	CHECK_EQ(info.replicas_live, 0);
	CHECK_EQ(info.ttl_ms, 0);
	at = fake_nwrs;
	CHECK_EQ(rmp_read(l, 0, dst, 2 * UNIT), -EIO);
	CHECK_EQ(rmp_write(l, UNIT - 1, src, 2), -EIO);
	CHECK_EQ(fake_nwrs, at);
	rmp_lease_close(l);
	fake_client_free(c);

	/* the others still work (a fresh connection: the NIC's error broke
	 * the last one) */
	c = fake_client_new();
	l = striped(c, m);
	rmpc_member_lost(l->group, 1);
	pattern(src, sizeof(src), 9);
	CHECK_EQ(rmp_write(l, 0, src, UNIT), 0);
	CHECK_EQ(rmp_write(l, 2 * UNIT, src, UNIT), 0);
	CHECK_EQ(rmp_read(l, 2 * UNIT, dst, UNIT), 0);
	CHECK(!memcmp(dst, src, UNIT));
	CHECK_EQ(rmp_flush(l), -EIO);
	CHECK_EQ(rmp_lease_renew(l, 30), -EKEYEXPIRED);
	rmp_lease_close(l);
	fake_client_free(c);
}

int main(void)
{
	test_layouts();
	test_bytes();
	test_registered();
	test_lost_stripe();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * test_client_late.c -- late binding of an erasure-coded lease's reads
 * (io_ec.c's read_late over io_sync.c's rmpc_read_first), on fake verbs
 * whose members are on six fake NICs (a queue pair and CQ each, as
 * members on six servers): a read of whole rows posts k + 1 chains, one
 * a member, and returns on the first k. A data member's chain held back
 * (a straggler): the read returns its bytes decoded from the others and
 * parity, leaves the member live and its chain in flight, and that
 * chain's late landing in the member's bounce buffer spoils no WRITE
 * staged there after it. A parity member held back: no decode. A write
 * under the read (tags moved), a source of another write or pending:
 * the rows read as before. A late chain's error is not a later call's
 * (the connection it failed is). A data member
 * lost: the usual degraded read. A registered buffer: no late binding
 * (a late READ must not land in it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ec_fixture.h"
#include "ec_lease.h"
#include "ec_tags.h"
#include "fake_client.h"
#include "group.h"
#include "io_int.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"

#define PLAIN (512 * KIB) /* a plain lease's bytes, on member 1's NIC */

static uint8_t src[LENGTH], dst[LENGTH];
static struct rmp_client *cs[N];

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 7 + seed) ^ (i >> 9));
}

/* ec_lease -- a 4+2 lease, member i on fake NIC i, written with src. */
static struct rmp_lease *ec_lease(void)
{
	struct rmp_lease *m[N], *l = NULL;

	memset(fake_remote, 0, N * MEMBER);
	for (unsigned i = 0; i < N; i++) {
		cs[i] = i ? fake_client_new_nic(i) : fake_client_new();
		m[i] = fake_lease(cs[i], i * MEMBER, MEMBER, RMP_ACC_ALL);
	}
	CHECK_EQ(rmpc_group_new_ec(m, K, M, CHUNK, LENGTH, NULL, &l), 0);
	pattern(src, LENGTH, 5);
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
	return l;
}

static void free_all(struct rmp_lease *l)
{
	rmp_lease_close(l);
	for (unsigned i = N; i-- > 0;)
		fake_client_free(cs[i]);
}

/* outstanding -- WRs on fake NIC nic not completed yet. */
static unsigned outstanding(unsigned nic)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake_nwrs; i++)
		n += fake_wrs[i].outstanding && fake_wrs[i].nic == nic;
	return n;
}

/* release -- a poll of NIC 1's CQ but the first skip_polls: what it
 * holds arrives now. */
static unsigned skip_polls;

static void release(unsigned nic)
{
	if (nic != 1 || (skip_polls && skip_polls--))
		return;
	for (unsigned i = fake_nwrs; i-- > 0;) {
		if (fake_wrs[i].outstanding && fake_wrs[i].nic == 1) {
			fake_complete(i, IBV_WC_SUCCESS);
			break;
		}
	}
}

/* Healthy: k + 1 chains of tag, chunks, tag; the data members' bytes. */
static void test_healthy(void)
{
	struct rmp_lease *l = ec_lease();
	struct rmpc_ec *ec = l->group->ec;
	unsigned posts = fake_posts, wrs = fake_data_wrs();

	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(fake_posts - posts, K + 1);
	CHECK_EQ(fake_data_wrs() - wrs, 3 * (K + 1));
	CHECK_EQ(ec->late, 0);
	/* rows and a head and a tail: those read as before */
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 100, dst, LENGTH - 100), 0);
	CHECK(!memcmp(dst, src + 100, LENGTH - 100));
	/* less than a row: the data member alone */
	posts = fake_posts;
	CHECK_EQ(rmp_read(l, ROW, dst, CHUNK), 0);
	CHECK_EQ(fake_posts - posts, 1);
	free_all(l);
}

/* A data member straggles: decoded around it, its chain left in flight,
 * and a WRITE staged in its bounce buffer after it not spoiled. */
static void test_straggler(void)
{
	struct rmp_lease *l = ec_lease();
	struct rmpc_group *g = l->group;
	static uint8_t plain[CHUNK];
	struct rmp_lease *pl = fake_lease(cs[1], PLAIN, CHUNK, RMP_ACC_ALL);

	fake_hold_nics = 1u << 1;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, ROW, dst, ROW), 0);
	CHECK(!memcmp(dst, src + ROW, ROW));
	CHECK_EQ(g->ec->late, 1);
	CHECK(rmpc_member_live(g, 1));
	CHECK_EQ(outstanding(1), 3);
	CHECK(cs[1]->late_pending);
	/* two rows, member 1 still held: both decoded */
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(g->ec->late, 3);
	/* a WRITE through member 1's bounce buffer: the late chains land
	 * first (they arrive at the next poll of NIC 1's CQ), then its bytes
	 * are put there; staged before, the late READs would overwrite them
	 * on their way out */
	fake_on_poll = release;
	pattern(plain, sizeof(plain), 9);
	CHECK_EQ(rmp_write(pl, 0, plain, sizeof(plain)), 0);
	CHECK(!memcmp(fake_remote + PLAIN, plain, sizeof(plain)));
	CHECK_EQ(outstanding(1), 0);
	CHECK(!cs[1]->late_pending);
	fake_on_poll = NULL;
	fake_hold_nics = 0;
	CHECK(rmpc_member_live(g, 1));
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	free_all(l);
}

/* A parity member straggles: nothing to decode. */
static void test_parity_late(void)
{
	struct rmp_lease *l = ec_lease();

	fake_hold_nics = 1u << K;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(l->group->ec->late, 0);
	CHECK_EQ(outstanding(K), 3);
	fake_hold_nics = 0;
	free_all(l);
}

/* A write marks row 0 pending on member 0 between its two reads of the
 * tags: no decode from it; read as before (member 1's late chain
 * waited for). */
static unsigned tag_reads;

static void mark_pending(uint64_t off, uint32_t len)
{
	uint64_t t;

	if (off != TAGS || len != 8 || ++tag_reads != 2)
		return;
	memcpy(&t, fake_remote + off, 8);
	t |= RMPC_EC_TAG_PENDING;
	memcpy(fake_remote + off, &t, 8);
}

static void test_moved(void)
{
	struct rmp_lease *l = ec_lease();
	uint64_t t;

	memcpy(&t, fake_remote + TAGS, 8);
	fake_hold_nics = 1u << 1;
	fake_on_poll = release;
	skip_polls = 1; /* late in the late-bound read, then it arrives */
	fake_before_read = mark_pending;
	tag_reads = 0;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, ROW), 0);
	CHECK(!memcmp(dst, src, ROW));
	CHECK_EQ(tag_reads, 2);
	CHECK_EQ(l->group->ec->late, 0);
	CHECK(rmpc_member_live(l->group, 1));
	fake_before_read = NULL;
	fake_on_poll = NULL;
	fake_hold_nics = 0;
	memcpy(fake_remote + TAGS, &t, 8);
	free_all(l);
}

/* set_tag -- member i's tag of row r. */
static void set_tag(unsigned i, unsigned r, uint64_t t)
{
	memcpy(fake_remote + i * MEMBER + TAGS + 8 * r, &t, 8);
}

static uint64_t tag(unsigned i, unsigned r)
{
	uint64_t t;

	memcpy(&t, fake_remote + i * MEMBER + TAGS + 8 * r, 8);
	return t;
}

/* The sources of a decode must hold one finished write of each row:
 * a member whose tag of row 1 is another write's (its bytes are the
 * same, so only the count of decodes can tell), then every member's
 * tag of row 1 pending (the same on all), each keeps the read from
 * decoding around member 1; the rows read the usual way. */
static void test_tags(void)
{
	struct rmp_lease *l = ec_lease();
	uint64_t was[N];

	fake_hold_nics = 1u << 1;
	fake_on_poll = release;
	for (unsigned i = 0; i < N; i++)
		was[i] = tag(i, 1);
	set_tag(2, 1, was[2] + 2); /* another write, finished */
	skip_polls = 1;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(l->group->ec->late, 0);
	for (unsigned i = 0; i < N; i++)
		set_tag(i, 1, was[i] | RMPC_EC_TAG_PENDING);
	skip_polls = 1;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(l->group->ec->late, 0);
	/* row 0 alone, its tags one write's: decoded around member 1 */
	skip_polls = 1;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, ROW), 0);
	CHECK(!memcmp(dst, src, ROW));
	CHECK_EQ(l->group->ec->late, 1);
	for (unsigned i = 0; i < N; i++)
		set_tag(i, 1, was[i]);
	fake_on_poll = NULL;
	fake_hold_nics = 0;
	free_all(l);
}

/* A late chain that fails (its key revoked) fails the connection; a
 * later call on it learns that from its own flushed WR, and is not
 * told the late chain's error as its own. */
static void fail_late(unsigned nic)
{
	if (nic != 1)
		return;
	for (unsigned i = 0; i < fake_nwrs; i++) {
		if (fake_wrs[i].outstanding && fake_wrs[i].nic == 1 &&
		    fake_wrs[i].opcode == IBV_WR_RDMA_READ) {
			fake_complete(i, IBV_WC_REM_ACCESS_ERR);
			break;
		}
	}
}

static void test_late_error(void)
{
	struct rmp_lease *l = ec_lease();
	struct rmp_lease *pl = fake_lease(cs[1], PLAIN, CHUNK, RMP_ACC_ALL);
	uint64_t old = 0;

	fake_hold_nics = 1u << 1;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, ROW), 0);
	CHECK(!memcmp(dst, src, ROW));
	CHECK_EQ(outstanding(1), 3);
	fake_on_poll = fail_late;
	CHECK_EQ(rmp_faa(pl, 0, 1, &old), -ENOTCONN);
	CHECK_EQ(outstanding(1), 0);
	fake_on_poll = NULL;
	fake_hold_nics = 0;
	free_all(l);
}

/* A data member lost, with no handle (its node was not reached): read
 * the usual way, decoded, from k members. */
static void test_lost(void)
{
	struct rmp_lease *l = ec_lease();
	struct rmpc_group *g = l->group;
	struct rmp_lease *m0 = g->m[0];
	unsigned posts = fake_posts;

	rmpc_member_lost(g, 0);
	g->m[0] = NULL;
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(fake_posts - posts, 3 + 2 * K); /* 3 members, 2 rows of k */
	CHECK_EQ(g->ec->late, 0);
	CHECK_EQ(g->ec->decoded, 2);
	g->m[0] = m0;
	free_all(l);
}

/* A registered buffer: read zero copy from the data members alone. */
static void test_registered(void)
{
	struct rmp_lease *l = ec_lease();
	struct rmp_buf *b[N];
	unsigned posts = fake_posts;

	for (unsigned i = 0; i < N; i++)
		CHECK_EQ(rmp_buf_reg(cs[i], dst, sizeof(dst), &b[i]), 0);
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(rmp_read(l, 0, dst, 2 * ROW), 0);
	CHECK(!memcmp(dst, src, 2 * ROW));
	CHECK_EQ(fake_posts - posts, K);
	for (unsigned i = 0; i < N; i++)
		rmp_buf_dereg(b[i]);
	free_all(l);
}

int main(void)
{
	test_healthy();
	test_straggler();
	test_parity_late();
	test_moved();
	test_tags();
	test_late_error();
	test_lost();
	test_registered();
	return check_done();
}

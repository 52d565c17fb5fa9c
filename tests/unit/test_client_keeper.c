/* SPDX-License-Identifier: MIT */
/*
 * test_client_keeper.c -- a cluster lease's keeper (client/lease.h's
 * struct rmpc_group_keeper) as io_group.c and lease.c call it, on fake
 * verbs: a write a member failed and the others took counts only once
 * the keeper marked the failed member stale in the record (then it is
 * missed), fails with the keeper's error when etcd cannot be written
 * (the write is not acknowledged, and asked about again next time), is
 * made again on the members a refresh brings when the record moved
 * (-EAGAIN when the refresh fails), a stripe with no member left
 * refreshes and writes again once, a read fails over without the keeper
 * and refreshes only when every replica failed, a member lost before a
 * write to its stripe must be marked too, a caller's error never asks
 * the keeper, renew reports to it and free and close end it, a group
 * without one marks its members missed by itself, and a call on a stripe
 * whose replicas are all suspect waits for one within its op timeout.
 *
 * The fake NIC is one connection, so every member here is a lease of
 * one client: a mirror's second replica is made on a placeholder client
 * (rmpc_group_new wants replicas on distinct clients) and swapped for
 * one on the real client at once; legs on one client take turns. A
 * member fails either with its connection gone (its handle of an
 * earlier one: -ENOTCONN, nothing posted) or with its key revoked at
 * the NIC (-EKEYREVOKED; the connection breaks, so whatever is posted
 * after it fails too, and the fixture puts it last).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ec_lease.h"
#include "ec_tags.h"
#include "fake_client.h"
#include "lease.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

#define KIB 1024u
#define UNIT (4 * KIB)
#define MEMBER (64 * KIB)         /* each member's fake remote bytes */
#define LENGTH (2 * UNIT)         /* the lease's bytes */
#define AT 100u                   /* a write's offset ... */
#define LEN 1000u                 /* ... and length (through the bounce) */

static uint8_t src[LENGTH], dst[LENGTH];

/* What the fake keeper was asked, and what it answers. */
struct keeper_log {
	unsigned renewed, ending, missed, refresh, retry, claim;
	int renewed_ret, refresh_ret, claim_ret;
	unsigned claim_fail_at;  /* that call (1: the first) answers -EBUSY */
	int missed_ret[3];       /* the answers to the first calls, then 0 */
	bool mask[RMPC_MEMBERS_MAX]; /* last asked */
	uint32_t ttl_s;
	bool freed;
	unsigned renews_seen, frees_seen; /* the server's, at the call */
	bool missed_seen;        /* member swap_at STALE when refresh ran */
	unsigned wrs_seen;       /* fake_data_wrs() when refresh ran */
	bool lost_seen;          /* member swap_at not LIVE when refresh ran */
	struct rmp_lease *swap_in; /* refresh puts it in at swap_at */
	unsigned swap_at;
	unsigned swap_after;       /* ... at this refresh (0, 1: the first) */
};
static struct keeper_log kl;

static struct keeper_log *log_of(struct rmp_lease *l)
{
	return l->group->keeper_arg;
}

static int fake_renewed(struct rmp_lease *l, uint32_t ttl_s)
{
	struct keeper_log *k = log_of(l);

	k->renewed++;
	k->ttl_s = ttl_s;
	k->renews_seen = fake_reqs[RMP_OP_RENEW];
	return k->renewed_ret;
}

static void fake_ending(struct rmp_lease *l, bool freed)
{
	struct keeper_log *k = log_of(l);

	k->ending++;
	k->freed = freed;
	k->frees_seen = fake_reqs[RMP_OP_FREE];
}

static int fake_missed(struct rmp_lease *l, const bool *missed)
{
	struct keeper_log *k = log_of(l);
	unsigned call = k->missed++;

	memcpy(k->mask, missed, sizeof(bool) * l->group->n);
	return call < 3 ? k->missed_ret[call] : 0;
}

/* asked -- the last missed() named exactly member i. */
static bool asked(struct rmp_lease *l, unsigned i)
{
	for (unsigned j = 0; j < l->group->n; j++)
		if (kl.mask[j] != (j == i))
			return false;
	return true;
}

/* fake_refresh -- the record read again: swap_in (when set and the
 * refresh succeeds) replaces member swap_at, once. */
static int fake_refresh(struct rmp_lease *l)
{
	struct keeper_log *k = log_of(l);

	k->refresh++;
	k->missed_seen = l->group->state[k->swap_at] == RMPC_MEMBER_STALE;
	k->wrs_seen = fake_data_wrs();
	k->lost_seen = !rmpc_member_live(l->group, k->swap_at);
	if (!k->refresh_ret && k->swap_in && k->refresh >= k->swap_after) {
		rmpc_group_swap(l, k->swap_at, k->swap_in);
		k->swap_in = NULL;
	}
	return k->refresh_ret;
}

/* fake_retry -- a suspect member's wait is over: counted apart, then as
 * fake_refresh (a refresh that never waits). */
static int fake_retry(struct rmp_lease *l)
{
	struct keeper_log *k = log_of(l);

	k->retry++;
	k->refresh--; /* fake_refresh counts it */
	return fake_refresh(l);
}

/* fake_claim -- a coded lease's writer claim: counted, and answered
 * claim_ret. */
static int fake_claim(struct rmp_lease *l)
{
	struct keeper_log *k = log_of(l);

	k->claim++;
	return k->claim == k->claim_fail_at ? -EBUSY : k->claim_ret;
}

static const struct rmpc_group_keeper keeper = {
	.renewed = fake_renewed, .ending = fake_ending,
	.missed = fake_missed, .refresh = fake_refresh, .retry = fake_retry,
	.claim = fake_claim,
};

/* keep -- l becomes a cluster lease kept by the fake keeper, its log
 * cleared. */
/* The clock the library reads: the real one moved forward by skew_ms
 * (rmp_now_ms is wrapped), so that a test waits out a backoff at once. */
static uint64_t skew_ms;
uint64_t __real_rmp_now_ms(void);
uint64_t __wrap_rmp_now_ms(void);
uint64_t __wrap_rmp_now_ms(void)
{
	return __real_rmp_now_ms() + skew_ms;
}

/* The keeper's bound on a suspect member (the cluster's
 * member_timeout_ms): not the default, so that a handle using the
 * default shows. */
#define KEEP_MEMBER_TIMEOUT_MS 12000u

static void keep(struct rmp_lease *l)
{
	memset(&kl, 0, sizeof(kl));
	rmpc_group_keep(l, &keeper, &kl, "rmp-cluster://fake/1",
			KEEP_MEMBER_TIMEOUT_MS);
}

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 13 + seed) ^ (i >> 8));
}

/* slot -- a member's fake remote bytes: slot k is at MEMBER * k. */
static uint8_t *slot(unsigned k)
{
	return fake_remote + (size_t)k * MEMBER;
}

/* member -- a lease handle on c over slot k. */
static struct rmp_lease *member(struct rmp_client *c, unsigned k)
{
	memset(slot(k), 0, MEMBER);
	return fake_lease(c, (uint64_t)k * MEMBER, MEMBER, RMP_ACC_ALL);
}

/* mirrored -- a lease of LENGTH bytes in 2 replicas, over slots 0 and 1
 * of c (the second made on a placeholder client, then swapped). */
static struct rmp_lease *mirrored(struct rmp_client *c)
{
	static struct rmp_client placeholder;
	struct rmp_lease *m[2], *l = NULL;

	LIST_INIT(&placeholder.leases);
	m[0] = member(c, 0);
	m[1] = fake_lease(&placeholder, MEMBER, MEMBER, RMP_ACC_ALL);
	CHECK_EQ(rmpc_group_new(m, 1, 2, UNIT, LENGTH, NULL, &l), 0);
	rmpc_group_swap(l, 1, member(c, 1));
	return l;
}

/* striped -- a lease of LENGTH bytes in 2 stripes of UNIT (one replica
 * each) over slots 0 and 1 of c: unit 0 in slot 0, unit 1 in slot 1. */
static struct rmp_lease *striped(struct rmp_client *c)
{
	struct rmp_lease *m[2], *l = NULL;

	m[0] = member(c, 0);
	m[1] = member(c, 1);
	CHECK_EQ(rmpc_group_new(m, 2, 1, UNIT, LENGTH, NULL, &l), 0);
	return l;
}

/* grid -- a lease of LENGTH bytes in 2 stripes of UNIT, 2 replicas
 * each, over slots 0..3 of c (member i in slot i; the second replicas
 * made on a placeholder client, then swapped). */
static struct rmp_lease *grid(struct rmp_client *c)
{
	static struct rmp_client placeholder;
	struct rmp_lease *m[4], *l = NULL;

	LIST_INIT(&placeholder.leases);
	for (unsigned i = 0; i < 4; i++)
		m[i] = i % 2 ? fake_lease(&placeholder, (uint64_t)i * MEMBER,
					  MEMBER, RMP_ACC_ALL) : member(c, i);
	CHECK_EQ(rmpc_group_new(m, 2, 2, UNIT, LENGTH, NULL, &l), 0);
	rmpc_group_swap(l, 1, member(c, 1));
	rmpc_group_swap(l, 3, member(c, 3));
	return l;
}

/* disconnect -- member i's connection went (its handle is of an
 * earlier one): its calls fail with -ENOTCONN before posting. */
static void disconnect(struct rmp_lease *l, unsigned i)
{
	l->group->m[i]->gen = 0;
}

/* revoke -- member i's key was revoked (a repair's fence): the NIC
 * answers a remote access error, and the connection breaks. */
static void revoke(struct rmp_lease *l, unsigned i)
{
	l->group->m[i]->rkey = fake_rkey ^ 1;
}

/* holds -- slot k has src's len bytes from off at off. */
static bool holds(unsigned k, uint64_t off, const uint8_t *s, size_t len)
{
	return !memcmp(slot(k) + off, s, len);
}

/* Rule 1: a replica fails, the other takes the write, the keeper marks
 * the failed one stale in the record: the write counts, the failed one
 * is lost and missed, no refresh. Then a write that lacks nobody new
 * asks nothing. */
static void test_write_not_moved(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);
	struct rmpc_group *g = l->group;

	keep(l);
	disconnect(l, 1);
	pattern(src, LEN, 1);
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK(g->state[1] == RMPC_MEMBER_STALE);
	CHECK_EQ(g->state[0], RMPC_MEMBER_LIVE);
	CHECK_EQ(kl.missed, 1);
	CHECK(asked(l, 1));
	CHECK_EQ(kl.refresh, 0);
	CHECK(holds(0, AT, src, LEN));
	CHECK(!holds(1, AT, src, LEN));
	/* member 1 is marked already: nothing to ask */
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK_EQ(kl.missed, 1);
	CHECK_EQ(kl.refresh, 0);
	rmp_lease_close(l);
	fake_client_free(c);

	/* the same with the key revoked at the NIC (replica 1 goes after
	 * replica 0 on the one connection) */
	c = fake_client_new();
	l = mirrored(c);
	g = l->group;
	keep(l);
	revoke(l, 1);
	pattern(src, LEN, 2);
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK(g->state[1] == RMPC_MEMBER_STALE);
	CHECK(rmpc_member_live(g, 0));
	CHECK_EQ(kl.missed, 1);
	CHECK_EQ(kl.refresh, 0);
	CHECK(holds(0, AT, src, LEN));
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Rule 2: the record moved: refresh; the members it swaps in get the
 * write made again and are not missed; a refresh that brings nothing
 * leaves the failed one missed (the write made again all the same). */
static void test_write_moved(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);
	struct rmpc_group *g = l->group;
	struct rmp_lease *fresh = member(c, 2);
	unsigned wrs;

	keep(l);
	kl.missed_ret[0] = -EAGAIN;
	kl.swap_in = fresh;
	kl.swap_at = 1;
	disconnect(l, 1);
	pattern(src, LEN, 3);
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK_EQ(kl.missed, 1);
	CHECK_EQ(kl.refresh, 1);
	CHECK(!kl.missed_seen); /* lost, not missed, when refresh looks */
	CHECK(g->m[1] == fresh);
	CHECK_EQ(g->state[1], RMPC_MEMBER_LIVE);
	CHECK(holds(0, AT, src, LEN));
	CHECK(holds(2, AT, src, LEN));
	CHECK(!holds(1, AT, src, LEN));
	rmp_lease_close(l);
	fake_client_free(c);

	/* refresh succeeds with nothing new: written again to replica 0
	 * alone, and replica 1 marked on the record as it is now */
	c = fake_client_new();
	l = mirrored(c);
	g = l->group;
	keep(l);
	kl.missed_ret[0] = -EAGAIN;
	disconnect(l, 1);
	wrs = fake_data_wrs();
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK_EQ(fake_data_wrs() - wrs, 2);
	CHECK_EQ(kl.refresh, 1);
	CHECK_EQ(kl.missed, 2);
	CHECK(g->state[1] == RMPC_MEMBER_STALE);
	CHECK(holds(0, AT, src, LEN));
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Rules 3 and 4: the record moved but cannot be read again: -EAGAIN;
 * the record cannot be written (etcd down): the write is not
 * acknowledged (the keeper's error), the failed member is lost but not
 * missed, and the next write asks again; it counts once etcd takes the
 * mark. No acknowledged write ever lacks a member the record calls
 * live. */
static void test_write_unrecorded(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);
	struct rmpc_group *g = l->group;

	keep(l);
	kl.missed_ret[0] = -EAGAIN;
	kl.refresh_ret = -ETIMEDOUT;
	disconnect(l, 1);
	pattern(src, LEN, 4);
	CHECK_EQ(rmp_write(l, AT, src, LEN), -EAGAIN);
	CHECK_EQ(kl.missed, 1);
	CHECK_EQ(kl.refresh, 1);
	CHECK_EQ(g->state[1], RMPC_MEMBER_MISSED);
	rmp_lease_close(l);
	fake_client_free(c);

	c = fake_client_new();
	l = mirrored(c);
	g = l->group;
	keep(l);
	kl.missed_ret[0] = -ECONNREFUSED;
	kl.missed_ret[1] = -ETIMEDOUT;
	disconnect(l, 1);
	CHECK_EQ(rmp_write(l, AT, src, LEN), -ECONNREFUSED);
	CHECK_EQ(kl.missed, 1);
	CHECK_EQ(kl.refresh, 0);
	/* made on member 0, not acknowledged: member 1 is not taken back
	 * (a suspect member's retry) before a mark names it */
	CHECK_EQ(g->state[1], RMPC_MEMBER_MISSED);
	CHECK(holds(0, AT, src, LEN));
	skew_ms += RMPC_MEMBER_TIMEOUT_MS;
	CHECK_EQ(rmp_read(l, 0, dst, LEN), 0);
	CHECK_EQ(kl.retry + kl.refresh, 0);
	CHECK_EQ(g->state[1], RMPC_MEMBER_MISSED);
	/* a write elsewhere in the lease names it too */
	CHECK_EQ(rmp_write(l, 0, src, 16), -ETIMEDOUT);
	CHECK_EQ(kl.missed, 2);
	CHECK(asked(l, 1));
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK_EQ(kl.missed, 3);
	CHECK(g->state[1] == RMPC_MEMBER_STALE);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Rule 5: a stripe whose every member failed: refresh; when it fails,
 * the member's error (-EIO when none was tried); when it swaps a working
 * member in, the write is made again and lands there. missed is for
 * writes that went through, never asked here. */
static void test_stripe_lost(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = striped(c);
	unsigned wrs;

	keep(l);
	kl.refresh_ret = -ENOENT;
	revoke(l, 1);
	pattern(src, LENGTH, 5);
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), -EKEYREVOKED);
	CHECK_EQ(kl.refresh, 1);
	CHECK_EQ(kl.missed, 0);
	CHECK(!rmpc_member_live(l->group, 1) && rmpc_member_live(l->group, 0));
	CHECK(holds(0, 0, src, UNIT));
	rmp_lease_close(l);
	fake_client_free(c);

	/* lost before the call: nothing posted, -EIO */
	c = fake_client_new();
	l = striped(c);
	keep(l);
	kl.refresh_ret = -ENOENT;
	rmpc_member_lost(l->group, 1);
	wrs = fake_data_wrs();
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), -EIO);
	CHECK_EQ(fake_data_wrs(), wrs);
	CHECK_EQ(kl.refresh, 1);
	rmp_lease_close(l);
	fake_client_free(c);

	/* refresh brings a working member for stripe 1 */
	c = fake_client_new();
	l = striped(c);
	keep(l);
	kl.swap_in = member(c, 2);
	kl.swap_at = 1;
	disconnect(l, 1);
	pattern(src, LENGTH, 6);
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
	CHECK_EQ(kl.refresh, 1);
	CHECK_EQ(kl.missed, 0);
	CHECK_EQ(l->group->state[1], RMPC_MEMBER_LIVE);
	CHECK(holds(0, 0, src, UNIT));
	CHECK(holds(2, 0, src + UNIT, UNIT));
	rmp_lease_close(l);
	fake_client_free(c);
}

/* read_case -- a mirror holding src in both replicas, both of them
 * disconnected when both is set (else replica 0), kept with refresh's
 * answer ret and swap_in (a member over slot 2 holding src) when swap;
 * its calls try once and do not wait for a suspect member (those waits:
 * test_wait_suspect). */
static struct rmp_lease *read_case(struct rmp_client *c, bool both, int ret,
				   bool swap)
{
	struct rmp_lease *l = mirrored(c);

	l->group->wait_ms = 0;
	pattern(src, LENGTH, 7);
	memcpy(slot(0), src, LENGTH);
	memcpy(slot(1), src, LENGTH);
	keep(l);
	kl.refresh_ret = ret;
	if (swap) {
		kl.swap_in = member(c, 2);
		kl.swap_at = 1;
		memcpy(slot(2), src, LENGTH);
	}
	disconnect(l, 0);
	if (both)
		disconnect(l, 1);
	memset(dst, 0, sizeof(dst));
	return l;
}

/* Rule 6b: a read whose replica's key the server revoked (a repair's
 * fence) reads the record again before any other replica: the one it
 * would fail over to may be one the repair replaced. Then it reads on
 * (the refresh's members, or the next replica). Without a keeper it
 * fails over at once. */
static void test_read_revoked(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);
	unsigned wrs;

	/* the fake NIC's one connection breaks at the revoked key: the
	 * refresh brings replica 1 anew (the new record's), its bytes the
	 * same */
	pattern(src, LENGTH, 12);
	memcpy(slot(0), src, LENGTH);
	keep(l);
	l->group->wait_ms = 0; /* one try (test_wait_suspect waits) */
	revoke(l, 0);
	kl.swap_in = member(c, 2);
	kl.swap_at = 1;
	memcpy(slot(2), src, LENGTH);
	kl.swap_in->gen = 0; /* attached after the break, below */
	memset(dst, 0, sizeof(dst));
	wrs = fake_data_wrs();
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), -ENOTCONN);
	CHECK_EQ(kl.refresh, 1);
	CHECK_EQ(kl.wrs_seen, wrs + 1); /* replica 0's read alone before */
	CHECK(!kl.lost_seen); /* replica 1 not tried before the refresh */
	rmp_lease_close(l);
	fake_client_free(c);

	/* without a keeper: on to replica 1 at once */
	c = fake_client_new();
	l = mirrored(c);
	memset(&kl, 0, sizeof(kl));
	revoke(l, 0);
	CHECK(rmp_read(l, 0, dst, LENGTH) < 0);
	/* replica 1 tried (the broken connection failed it) */
	CHECK(!rmpc_member_live(l->group, 1));
	CHECK_EQ(kl.refresh, 0);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Rule 6: a read fails over to the next replica without the keeper;
 * when every replica failed, refresh and read again, once. */
static void test_read(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = read_case(c, false, 0, false);

	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	CHECK(rmpc_member_away(l->group, 0));
	CHECK_EQ(kl.refresh, 0);
	CHECK_EQ(kl.missed, 0);
	rmp_lease_close(l);

	l = read_case(c, true, 0, true);
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	CHECK_EQ(kl.refresh, 1);
	rmp_lease_close(l);

	/* refresh brings nothing: tried again once, nothing left */
	l = read_case(c, true, 0, false);
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), -EIO);
	CHECK_EQ(kl.refresh, 1);
	rmp_lease_close(l);

	/* refresh fails: the replicas' error */
	l = read_case(c, true, -ETIMEDOUT, true);
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), -ENOTCONN);
	CHECK_EQ(kl.refresh, 1);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* A replica lost outside a write (a read failed on it) lacks the
 * writes made without it after: the first write that touches its stripe
 * has it marked stale (a refresh takes back a lost member not marked,
 * cluster_lease.c keep_of, which would serve stale bytes); a write to
 * another stripe asks nothing. */
static void test_missed_lost_before(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = grid(c);
	struct rmpc_group *g = l->group;

	keep(l);
	disconnect(l, 2); /* stripe 1's first replica */
	CHECK_EQ(rmp_read(l, UNIT, dst, 10), 0); /* unit 1: stripe 1 */
	CHECK(rmpc_member_away(g, 2));
	pattern(src, LENGTH, 9);
	CHECK_EQ(rmp_write(l, 0, src, UNIT), 0); /* stripe 0 alone */
	CHECK(g->state[2] != RMPC_MEMBER_STALE);
	CHECK_EQ(rmp_write(l, UNIT, src + UNIT, UNIT), 0); /* stripe 1 */
	CHECK(g->state[2] == RMPC_MEMBER_STALE);
	CHECK(g->state[0] != RMPC_MEMBER_STALE &&
	      g->state[1] != RMPC_MEMBER_STALE &&
	      g->state[3] != RMPC_MEMBER_STALE);
	CHECK(holds(3, 0, src + UNIT, UNIT));
	CHECK_EQ(kl.missed, 1);
	CHECK(asked(l, 2));
	CHECK_EQ(kl.refresh, 0);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Rule 6c: a write made on one stripe and failed on another is not
 * acknowledged, but the stripe it was made on now differs from its
 * replica that missed it: that member is MISSED (not taken back before
 * a mark names it), as when a mark failed. Its stripe's live replica
 * holds the bytes; the failed stripe's members are not marked. */
static void test_write_half_made(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = grid(c);
	struct rmpc_group *g = l->group;

	g->wait_ms = 0;
	keep(l);
	kl.refresh_ret = -ENOENT; /* no new members: the call ends */
	disconnect(l, 1); /* stripe 0's second replica */
	disconnect(l, 2); /* both of stripe 1's */
	disconnect(l, 3);
	pattern(src, LENGTH, 11);
	CHECK(rmp_write(l, 0, src, LENGTH) != 0);
	CHECK(holds(0, 0, src, UNIT));
	CHECK_EQ(g->state[1], RMPC_MEMBER_MISSED);
	CHECK(g->state[2] != RMPC_MEMBER_MISSED &&
	      g->state[3] != RMPC_MEMBER_MISSED);
	CHECK_EQ(kl.missed, 0);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* coded -- a 2+1 erasure-coded lease of len bytes (rows of two UNIT
 * chunks) over slots 0..2 of c. */
static struct rmp_lease *coded(struct rmp_client *c, uint64_t len)
{
	struct rmp_lease *m[3], *l = NULL;

	for (unsigned i = 0; i < 3; i++)
		m[i] = member(c, i);
	CHECK_EQ(rmpc_group_new_ec(m, 2, 1, UNIT, len, NULL, &l), 0);
	return l;
}

/* row_tag -- member i's tag of row r of the coded lease l. */
static uint64_t row_tag(struct rmp_lease *l, unsigned i, uint64_t r)
{
	uint64_t t;

	memcpy(&t, slot(i) + rmpc_ec_tag_off(&l->group->ec->lo, r), 8);
	return t;
}

/* The writes the NIC carried out so far, and the one after which the
 * members but 0 lose their connection (flap_at; 0: never). */
static unsigned writes_seen, flap_at;
static struct rmp_lease *flapped;

static void flap_after_write(void)
{
	if (++writes_seen != flap_at)
		return;
	disconnect(flapped, 1);
	disconnect(flapped, 2);
}

static void flap_after_member_1(void)
{
	if (++writes_seen == flap_at)
		disconnect(flapped, 1);
}

/* Rule 6d: a coded write cut by a flap is not acknowledged unless k
 * members hold it finished, and the members it missed stay SUSPECT, not
 * MISSED: each row's tags say which member holds which write
 * (ec_tags.h), so they may come back and the write be made again on
 * every member. As MISSED (never attached again before a stale mark),
 * or marked stale by a write counted done, they would leave the 2+1
 * lease one member short of its k for good. Each round of the write
 * (pending tags, bytes, finished tags) is posted whole, so the flap
 * after the NIC's 3rd write cuts it before its bytes reach members 1
 * and 2, after its 4th before their finished tags do. */
static void test_ec_write_cut(void)
{
	for (unsigned at = 3; at <= 4; at++) {
		struct rmp_client *c = fake_client_new();
		struct rmp_lease *l = coded(c, LENGTH);
		struct rmpc_group *g = l->group;

		g->wait_ms = 0;
		keep(l);
		kl.refresh_ret = -ENOENT; /* nothing new: the call ends */
		flapped = l;
		writes_seen = 0;
		flap_at = at;
		fake_after_write = flap_after_write;
		pattern(src, LENGTH, 31 + at);
		CHECK(rmp_write(l, 0, src, LENGTH) != 0);
		fake_after_write = NULL;
		CHECK(holds(0, 0, src, UNIT));
		CHECK_EQ(g->state[1], RMPC_MEMBER_SUSPECT);
		CHECK_EQ(g->state[2], RMPC_MEMBER_SUSPECT);
		CHECK_EQ(kl.missed, 0);
		/* the link is back: attached anew (as a retry does), the
		 * write made again lands on all three and reads back */
		for (unsigned i = 1; i < 3; i++)
			rmpc_group_swap(l, i, fake_lease(c, (uint64_t)i * MEMBER,
							 MEMBER, RMP_ACC_ALL));
		kl.refresh_ret = 0;
		CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
		CHECK_EQ(kl.missed, 0);
		memset(dst, 0, LENGTH);
		CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
		CHECK(!memcmp(dst, src, LENGTH));
		for (unsigned i = 0; i < 3; i++)
			CHECK(rmpc_member_live(g, i));
		rmp_lease_close(l);
		fake_client_free(c);
	}
}

/* Rule 6e: a row a coded write finished on k members without one away
 * (done, whatever becomes of the call) is a write that member lacks, as
 * a mirror's replica would: when the call then fails, cut on a later
 * row, that member is MISSED, to be marked and caught up; else a later
 * loss of another member leaves the row no k of one write, where the
 * older bytes of its other chunks were acknowledged. Two rows, member 2
 * gone from the start, member 1 cut after each of the NIC's writes in
 * turn: member 2 is MISSED exactly when a row is done without it. */
static void test_ec_write_done_rows(void)
{
	static uint8_t two[2 * LENGTH];

	for (unsigned at = 1;; at++) {
		struct rmp_client *c = fake_client_new();
		struct rmp_lease *l = coded(c, sizeof(two));
		struct rmpc_group *g = l->group;
		bool lacks = false;
		int err;

		g->wait_ms = 0;
		pattern(two, sizeof(two), 40);
		CHECK_EQ(rmp_write(l, 0, two, sizeof(two)), 0);
		keep(l);
		kl.refresh_ret = -ENOENT;
		disconnect(l, 2);
		flapped = l;
		writes_seen = 0;
		flap_at = at;
		fake_after_write = flap_after_member_1;
		pattern(two, sizeof(two), 41 + at);
		/* part of row 0, then row 1 whole */
		err = rmp_write(l, 100, two, sizeof(two) - 100);
		fake_after_write = NULL;
		for (uint64_t r = 0; r < 2; r++) {
			uint64_t t = row_tag(l, 0, r);

			lacks = lacks || (t == row_tag(l, 1, r) &&
					  !(t & RMPC_EC_TAG_PENDING) &&
					  row_tag(l, 2, r) != t);
		}
		if (err) {
			CHECK_EQ(g->state[2] == RMPC_MEMBER_MISSED, lacks);
			CHECK(g->state[1] != RMPC_MEMBER_MISSED);
		}
		rmp_lease_close(l);
		fake_client_free(c);
		if (!err) /* past the last write: no cut */
			break;
		CHECK(at < 100);
		if (at >= 100)
			break;
	}
}

/* Rule 6f: a coded lease has one writer (cluster_claim.c). Each try of
 * a write asks the keeper's claim first, and again after a refresh (a
 * repair's fence breaks claims), and a long write before each step of
 * rows; refused (-EBUSY), the write posts nothing more, marks nobody
 * and waits for nothing (not for a suspect member either: another
 * writer is no fault to wait out). Reads never ask, nor does a
 * mirrored lease's write. */
static void test_ec_claim(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = coded(c, LENGTH), *mirror;
	struct rmpc_group *g = l->group;
	uint64_t t0;
	unsigned wrs;

	g->wait_ms = 1000; /* a wait would show as a slow test */
	keep(l);
	pattern(src, LENGTH, 50);
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
	CHECK_EQ(kl.claim, 1);
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK_EQ(kl.claim, 1);
	/* refused: nothing posted, nothing marked */
	kl.claim_ret = -EBUSY;
	disconnect(l, 2); /* SUSPECT: what a write would wait on */
	wrs = fake_data_wrs();
	pattern(src, LENGTH, 51);
	t0 = rmp_now_ms();
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), -EBUSY);
	CHECK(rmp_now_ms() - t0 < 500);
	CHECK_EQ(fake_data_wrs(), wrs);
	CHECK_EQ(kl.claim, 2);
	CHECK_EQ(kl.missed, 0);
	CHECK_EQ(kl.refresh, 0);
	CHECK(g->state[2] != RMPC_MEMBER_MISSED);
	rmp_lease_close(l);
	/* a try that found too few members refreshes, and claims again
	 * before the next (the refresh may be after a fence) */
	l = coded(c, LENGTH);
	keep(l);
	disconnect(l, 1);
	disconnect(l, 2);
	kl.swap_in = member(c, 1);
	kl.swap_at = 1;
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
	CHECK_EQ(kl.refresh, 1);
	CHECK_EQ(kl.claim, 2);
	rmp_lease_close(l);
	/* a long write asks before each step of rows: refused before the
	 * second, the first row is written (on every member: nothing to
	 * mark), the second not */
	{
		static uint8_t two[2 * LENGTH], old[2 * LENGTH];

		l = coded(c, sizeof(two));
		l->group->ec->step_rows = 1;
		pattern(old, sizeof(old), 52);
		CHECK_EQ(rmp_write(l, 0, old, sizeof(old)), 0);
		keep(l);
		kl.claim_fail_at = 2;
		pattern(two, sizeof(two), 53);
		CHECK_EQ(rmp_write(l, 0, two, sizeof(two)), -EBUSY);
		CHECK_EQ(kl.claim, 2);
		CHECK_EQ(kl.missed, 0);
		memset(dst, 0, LENGTH);
		CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
		CHECK(!memcmp(dst, two, LENGTH));
		CHECK_EQ(rmp_read(l, LENGTH, dst, LENGTH), 0);
		CHECK(!memcmp(dst, old + LENGTH, LENGTH));
		for (unsigned i = 0; i < 3; i++)
			CHECK_EQ(l->group->state[i], RMPC_MEMBER_LIVE);
		rmp_lease_close(l);
	}
	/* a mirror's writes ask for no claim */
	mirror = mirrored(c);
	keep(mirror);
	kl.claim_ret = -EBUSY;
	CHECK_EQ(rmp_write(mirror, AT, src, LEN), 0);
	CHECK_EQ(kl.claim, 0);
	rmp_lease_close(mirror);
	fake_client_free(c);
}

/* Rule 7: a call outside the lease is the caller's error: the keeper is
 * never asked, even with a member failing or none left. */
static void test_caller_error(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);

	keep(l);
	kl.missed_ret[0] = -EAGAIN;
	disconnect(l, 1);
	CHECK_EQ(rmp_write(l, LENGTH - 1, src, 2), -ERANGE);
	CHECK_EQ(rmp_read(l, LENGTH - 1, dst, 2), -ERANGE);
	CHECK(rmpc_member_live(l->group, 1));
	rmpc_member_lost(l->group, 0);
	rmpc_member_lost(l->group, 1);
	CHECK_EQ(rmp_write(l, UINT64_MAX, src, 2), -ERANGE);
	CHECK_EQ(rmp_read(l, LENGTH, dst, 1), -ERANGE);
	CHECK_EQ(kl.missed, 0);
	CHECK_EQ(kl.refresh, 0);
	rmp_lease_close(l);
	fake_client_free(c);
}

/* Rule 8: renew tells the keeper after the members renewed and returns
 * its error (not when a stripe kept no member); free ends it as freed,
 * after the members' FREEs; close ends it as closed. */
static void test_renew_end(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);

	keep(l);
	kl.renewed_ret = -ECONNREFUSED;
	CHECK_EQ(rmp_lease_renew(l, 30), -ECONNREFUSED);
	CHECK_EQ(kl.renewed, 1);
	CHECK_EQ(kl.ttl_s, 30);
	CHECK_EQ(kl.renews_seen, 2);
	kl.renewed_ret = 0;
	CHECK_EQ(rmp_lease_renew(l, 40), 0);
	CHECK_EQ(kl.renewed, 2);
	CHECK_EQ(kl.ttl_s, 40);
	CHECK_EQ(kl.ending, 0);
	CHECK_EQ(rmp_lease_free(l), 0);
	CHECK_EQ(kl.ending, 1);
	CHECK(kl.freed);
	CHECK_EQ(kl.frees_seen, 2);

	l = mirrored(c);
	keep(l);
	rmpc_member_lost(l->group, 0);
	rmpc_member_lost(l->group, 1);
	CHECK_EQ(rmp_lease_renew(l, 30), -EKEYEXPIRED);
	CHECK_EQ(kl.renewed, 0);
	rmp_lease_close(l);
	CHECK_EQ(kl.ending, 1);
	CHECK(!kl.freed);
	CHECK_EQ(kl.frees_seen, 2); /* no FREE more */
	fake_client_free(c);
}

/* Rule 9: without a keeper, a write a member failed counts and the
 * member missed it; a stripe with none left fails the call as it is. */
static void test_no_keeper(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = mirrored(c);

	memset(&kl, 0, sizeof(kl));
	disconnect(l, 1);
	pattern(src, LEN, 8);
	CHECK_EQ(rmp_write(l, AT, src, LEN), 0);
	CHECK(l->group->state[1] == RMPC_MEMBER_STALE);
	CHECK(holds(0, AT, src, LEN));
	CHECK_EQ(rmp_lease_renew(l, 30), 0);
	rmp_lease_close(l);

	l = striped(c);
	disconnect(l, 1);
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), -ENOTCONN);
	CHECK_EQ(rmp_read(l, UNIT, dst, 1), -EIO);
	rmp_lease_close(l);
	CHECK_EQ(kl.missed + kl.refresh + kl.renewed + kl.ending, 0);
	fake_client_free(c);
}

/* A replica whose way failed is suspect, not gone: the reads go to the
 * other; it is tried again (a refresh) only once its wait is over, the
 * waits doubling while the refresh brings nothing, and it is live again
 * when the refresh attaches it anew. */
static void test_suspect_returns(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = read_case(c, false, -ETIMEDOUT, false);
	struct rmpc_group *g = l->group;

	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	CHECK_EQ(g->state[0], RMPC_MEMBER_SUSPECT);
	CHECK_EQ(kl.retry, 0);
	CHECK_EQ(kl.refresh, 0);
	/* not before its wait */
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK_EQ(kl.retry, 0);
	/* its wait over: tried, the refresh fails (etcd away): still
	 * suspect, the read served by the other all the same */
	skew_ms += RMPC_MEMBER_RETRY_FIRST_MS;
	memset(dst, 0, LENGTH);
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	CHECK_EQ(kl.retry, 1);
	CHECK_EQ(g->state[0], RMPC_MEMBER_SUSPECT);
	/* the next wait is twice as long */
	kl.refresh_ret = 0;
	kl.swap_in = fake_lease(c, 0, MEMBER, RMP_ACC_ALL);
	kl.swap_at = 0;
	skew_ms += RMPC_MEMBER_RETRY_FIRST_MS;
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK_EQ(kl.retry, 1);
	skew_ms += RMPC_MEMBER_RETRY_FIRST_MS;
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
	CHECK_EQ(kl.retry, 2);
	/* attached anew before the write: live, written, nobody missed */
	CHECK_EQ(g->state[0], RMPC_MEMBER_LIVE);
	CHECK_EQ(kl.missed, 0);
	/* suspect past its bound: tried once more, then lost, and not
	 * tried again */
	disconnect(l, 0);
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK_EQ(g->state[0], RMPC_MEMBER_SUSPECT);
	skew_ms += KEEP_MEMBER_TIMEOUT_MS;
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK_EQ(g->state[0], RMPC_MEMBER_LOST);
	CHECK_EQ(kl.retry, 3);
	skew_ms += KEEP_MEMBER_TIMEOUT_MS;
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK_EQ(kl.retry, 3);
	CHECK_EQ(kl.refresh, 0); /* never the waiting refresh */
	rmp_lease_close(l);
	fake_client_free(c);
}

/* A call on a stripe whose every replica is suspect waits for one
 * within the op timeout (wait_ms), refreshing after each pause, as long
 * as the refresh says only that a way failed: it succeeds once a member
 * is back; it fails at its deadline with the first error; it does not
 * wait when the refresh says the lease is gone, nor for a lost member. */
static void test_wait_suspect(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = read_case(c, true, 0, true);
	uint64_t t0;

	/* back at the third refresh: the read waited two pauses */
	l->group->wait_ms = 5000;
	kl.swap_after = 3;
	t0 = rmp_now_ms();
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), 0);
	CHECK(!memcmp(dst, src, LENGTH));
	CHECK_EQ(kl.refresh, 3);
	CHECK(rmp_now_ms() - t0 >= 100); /* 50 ms, then 100 ms */
	CHECK(rmp_now_ms() - t0 < 5000);
	CHECK(rmpc_member_live(l->group, 1));
	rmp_lease_close(l);

	/* a write, the member back at the second refresh: made there, the
	 * other marked stale */
	l = read_case(c, true, 0, true);
	l->group->wait_ms = 5000;
	kl.swap_after = 2;
	pattern(src, LENGTH, 21);
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), 0);
	CHECK(holds(2, 0, src, LENGTH));
	CHECK_EQ(kl.missed, 1);
	CHECK(asked(l, 0));
	CHECK_EQ(l->group->state[0], RMPC_MEMBER_STALE);
	rmp_lease_close(l);

	/* never back (the refresh cannot reach etcd): the deadline */
	l = read_case(c, true, -ETIMEDOUT, false);
	l->group->wait_ms = 300;
	t0 = rmp_now_ms();
	CHECK_EQ(rmp_write(l, 0, src, LENGTH), -ENOTCONN);
	CHECK(rmp_now_ms() - t0 >= 300);
	CHECK(kl.refresh >= 3);
	CHECK_EQ(kl.missed, 0);
	rmp_lease_close(l);

	/* a renewal waits as a write does: the member back at the second
	 * refresh is renewed; never back: the first error it met (not
	 * -EKEYEXPIRED, which says the lease ended), -EHOSTUNREACH when
	 * no member was tried */
	l = read_case(c, true, 0, true);
	l->group->wait_ms = 5000;
	kl.swap_after = 2;
	CHECK_EQ(rmp_lease_renew(l, 30), 0);
	CHECK_EQ(kl.refresh, 2);
	CHECK_EQ(kl.renewed, 1);
	rmp_lease_close(l);
	l = read_case(c, true, 0, false);
	l->group->wait_ms = 200;
	CHECK_EQ(rmp_lease_renew(l, 30), -ENOTCONN);
	CHECK(kl.refresh >= 2);
	CHECK_EQ(kl.renewed, 0);
	CHECK_EQ(rmp_lease_renew(l, 30), -EHOSTUNREACH);
	rmp_lease_close(l);

	/* the record is gone: no wait */
	l = read_case(c, true, -ENOENT, false);
	l->group->wait_ms = 5000;
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), -ENOTCONN);
	CHECK_EQ(kl.refresh, 1);
	rmp_lease_close(l);

	/* lost members are not waited for */
	l = read_case(c, false, 0, false);
	l->group->wait_ms = 5000;
	rmpc_member_lost(l->group, 0);
	rmpc_member_lost(l->group, 1);
	t0 = rmp_now_ms();
	CHECK_EQ(rmp_read(l, 0, dst, LENGTH), -EIO);
	CHECK_EQ(kl.refresh, 1);
	CHECK(rmp_now_ms() - t0 < 1000);
	rmp_lease_close(l);
	fake_client_free(c);
}

int main(void)
{
	test_write_not_moved();
	test_write_moved();
	test_write_unrecorded();
	test_stripe_lost();
	test_read();
	test_read_revoked();
	test_missed_lost_before();
	test_caller_error();
	test_suspect_returns();
	test_wait_suspect();
	test_write_half_made();
	test_ec_write_cut();
	test_ec_write_done_rows();
	test_ec_claim();
	test_renew_end();
	test_no_keeper();
	return check_done();
}

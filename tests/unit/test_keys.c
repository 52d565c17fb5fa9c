/* SPDX-License-Identifier: MIT */
/*
 * test_keys.c -- the key module's state machine (daemon/keys.c) with the
 * verbs stubbed: no device can make a bind or an invalidation wait for
 * room, fail to post, or have its QP die at a chosen moment.
 *
 * The verbs keys.c calls on its hot paths are inline in verbs.h and go
 * through the context's ops: a fake context routes them here. Windows
 * only (pool mode needs nothing; region mode calls libibverbs itself).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "keys.h"
#include "lease.h"
#include "pool.h"
#include "util.h"

/* ------------------------------------------------------- fake verbs */

static struct ibv_context ctx;
static struct ibv_pd pd = { .context = &ctx };
static struct ibv_qp qp = { .context = &ctx, .qp_num = 7 };
static struct ibv_mr pool_mr = { .rkey = 0x100 };
static struct rmp_pool_chunk chunk = { .mr = { &pool_mr } };

/* What was posted, in order; a post fails while post_fail is set. */
static struct ibv_send_wr posted[256];
static unsigned nposted, posts;
static int post_fail;
static unsigned mws_alloced, mws_dealloced;

static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	(void)q;
	posts++;
	for (; wr; wr = wr->next) {
		if (post_fail) {
			*bad = wr;
			return post_fail;
		}
		posted[nposted++ % 256] = *wr;
	}
	return 0;
}

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *p, enum ibv_mw_type type)
{
	struct ibv_mw *mw = calloc(1, sizeof(*mw));

	(void)type;
	mw->context = &ctx;
	mw->pd = p;
	mw->rkey = 0x200 + (mws_alloced++ << 8);
	return mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	mws_dealloced++;
	free(mw);
	return 0;
}

/* keys.c takes a window's bind from the pool chunk of the lease. */
struct rmp_pool_chunk *rmp_pool_chunk_of(struct rmp_pool *pool, uint64_t off)
{
	(void)pool;
	(void)off;
	return &chunk;
}

static struct rmp_pool pool = { .iova = 0x10000000, .size = 1 << 20 };
static const struct rmp_keys ks = { .mode = RMP_KEYS_WINDOW };

/* complete -- the completion of posted work request i, with status. */
static unsigned complete(unsigned i, enum ibv_wc_status status)
{
	struct ibv_wc wc = { .wr_id = posted[i].wr_id, .status = status };
	enum rmp_wr_tag tag = rmp_wr_tag(posted[i].wr_id);

	return rmp_key_on_wc(&ks, rmp_wr_ptr(posted[i].wr_id), tag, &wc);
}

static void reset(struct rmp_holder *h, unsigned key_wrs_max)
{
	memset(h, 0, sizeof(*h));
	rmp_holder_init(h, &qp, &pd, 0, key_wrs_max);
	strcpy(h->label, "client #1 (test)");
	nposted = posts = 0;
	post_fail = 0;
}

static struct rmp_lease leases[16];

/* grant -- key i of h, its bind completed. */
static struct rmp_key *grant(struct rmp_holder *h, unsigned i)
{
	struct rmp_key *k = NULL;
	unsigned at = nposted;

	leases[i].pool = &pool;
	leases[i].ext.offset = (uint64_t)i * 4096;
	leases[i].ext.length = 4096;
	CHECK_EQ(rmp_key_grant(&ks, h, &leases[i], RMP_ACC_ALL, &k), 0);
	CHECK(k != NULL);
	CHECK_EQ(posted[at].opcode, IBV_WR_BIND_MW);
	CHECK_EQ(complete(at, IBV_WC_SUCCESS), 0);
	return k;
}

/* ------------------------------------------------------------ tests */

/* A window's life: bind, revoke, invalidation completes, reuse. */
static void test_window_life(void)
{
	struct rmp_holder h;
	struct rmp_key *k, *k2;
	uint32_t rkey;

	reset(&h, 4);
	k = grant(&h, 0);
	CHECK_EQ(k->state, RMP_KEY_LIVE);
	CHECK(rmp_holder_idle(&h));
	rkey = k->rkey;
	CHECK_EQ(rmp_key_revoke(&ks, k), 0);
	CHECK_EQ(k->state, RMP_KEY_INVALIDATING);
	CHECK_EQ(posted[nposted - 1].opcode, IBV_WR_LOCAL_INV);
	CHECK_EQ(posted[nposted - 1].invalidate_rkey, rkey);
	CHECK(!rmp_holder_idle(&h));
	CHECK(rmp_holder_first_revoking(&h) == k);
	CHECK_EQ(complete(nposted - 1, IBV_WC_SUCCESS), RMP_KEY_SETTLED);
	CHECK_EQ(k->state, RMP_KEY_DEAD);
	CHECK(rmp_holder_idle(&h));
	CHECK(rmp_holder_first_revoking(&h) == NULL);
	CHECK_EQ(h.nspare_mw, 1);
	rmp_key_free(k);
	/* The next grant reuses the window with a new key tag. */
	k2 = grant(&h, 1);
	CHECK_EQ(h.nspare_mw, 0);
	CHECK(k2->rkey != rkey);
	CHECK_EQ(k2->rkey >> 8, rkey >> 8);
	CHECK_EQ(rmp_key_revoke(&ks, k2), 0);
	CHECK_EQ(complete(nposted - 1, IBV_WC_SUCCESS), RMP_KEY_SETTLED);
	rmp_key_free(k2);
	rmp_holder_drop_windows(&h);
}

/*
 * More invalidations than the holder may have in flight: the rest wait
 * (parked) and count as revoking; room from a completion lets the next
 * one go; when the QP dies the parked ones settle at once (their window
 * is dead with it) and the posted ones on their flush. Only then is the
 * holder idle: the connection may be freed.
 */
static void test_parked(void)
{
	struct rmp_holder h;
	struct rmp_key *k[6], *p, *next;
	unsigned first_inv, settled = 0, out;

	reset(&h, 4);
	for (unsigned i = 0; i < 4; i++)
		k[i] = grant(&h, i);
	for (unsigned i = 4; i < 6; i++)
		k[i] = grant(&h, i);
	first_inv = nposted;
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(rmp_key_revoke(&ks, k[i]), 0);
	CHECK_EQ(nposted - first_inv, 4);
	CHECK_EQ(h.key_wrs, 4);
	CHECK_EQ(h.invs_waiting, 2);
	CHECK(k[4]->inv_waiting && k[5]->inv_waiting);
	CHECK_EQ(k[4]->state, RMP_KEY_LIVE);

	/* One completes: room, and the oldest parked one is posted. */
	out = complete(first_inv, IBV_WC_SUCCESS);
	CHECK(out & RMP_KEY_SETTLED);
	CHECK(out & RMP_KEY_HOLDER_ROOM);
	rmp_key_free(k[0]);
	for (p = rmp_holder_first_revoking(&h); p; p = next) {
		next = rmp_holder_next_revoking(p);
		if (p->inv_waiting && h.key_wrs < h.key_wrs_max)
			CHECK_EQ(rmp_key_revoke(&ks, p), 0);
	}
	CHECK_EQ(k[4]->state, RMP_KEY_INVALIDATING);
	CHECK(k[5]->inv_waiting);
	CHECK_EQ(h.invs_waiting, 1);

	/* The QP dies (what rmp_holder_kill does, without the device). */
	h.alive = false;
	CHECK(!rmp_holder_idle(&h));
	/* Settle what waits: the parked key is released now. */
	for (p = rmp_holder_first_revoking(&h); p; p = next) {
		next = rmp_holder_next_revoking(p);
		if (rmp_key_revoke(&ks, p) & RMP_KEY_SETTLED)
			settled++;
	}
	CHECK_EQ(settled, 1);
	CHECK_EQ(k[5]->state, RMP_KEY_DEAD);
	CHECK_EQ(h.invs_waiting, 0);
	CHECK(!rmp_holder_idle(&h)); /* four invalidations still due */
	/* Their flushes settle them; the windows are deallocated. */
	for (unsigned i = 1; i <= 4; i++) {
		out = complete(first_inv + i, IBV_WC_WR_FLUSH_ERR);
		CHECK(out & RMP_KEY_SETTLED);
		CHECK(!(out & RMP_KEY_HOLDER_ROOM));
	}
	CHECK(rmp_holder_idle(&h));
	CHECK(rmp_holder_first_revoking(&h) == NULL);
	for (unsigned i = 1; i < 6; i++) {
		CHECK_EQ(k[i]->state, RMP_KEY_DEAD);
		rmp_key_free(k[i]);
	}
	rmp_holder_drop_windows(&h);
}

/* A post that fails: the key waits for its holder's end (revoke
 * timeout), counted as revoking all the while. */
static void test_post_fails(void)
{
	struct rmp_holder h;
	struct rmp_key *k;

	reset(&h, 4);
	k = grant(&h, 0);
	post_fail = ENOMEM;
	CHECK_EQ(rmp_key_revoke(&ks, k), 0);
	CHECK_EQ(k->state, RMP_KEY_LIVE);
	CHECK(k->revoke_wanted);
	CHECK(!rmp_holder_idle(&h));
	h.alive = false;
	CHECK_EQ(rmp_key_revoke(&ks, k), RMP_KEY_SETTLED);
	CHECK_EQ(k->state, RMP_KEY_DEAD);
	CHECK(rmp_holder_idle(&h));
	rmp_key_free(k);
	rmp_holder_drop_windows(&h);
}

/* No completion even after the holder was killed: given up, UNPROVEN,
 * off the revoking list; the late completion still finds the key. */
static void test_give_up(void)
{
	struct rmp_holder h;
	struct rmp_key *k;

	reset(&h, 4);
	k = grant(&h, 0);
	CHECK_EQ(rmp_key_revoke(&ks, k), 0);
	h.alive = false;
	rmp_key_give_up(k, "no completion");
	CHECK_EQ(k->state, RMP_KEY_UNPROVEN);
	CHECK(rmp_holder_first_revoking(&h) == NULL);
	CHECK(!rmp_holder_idle(&h)); /* its LOCAL_INV is still due */
	complete(nposted - 1, IBV_WC_WR_FLUSH_ERR);
	CHECK(rmp_key_idle(k));
	CHECK(rmp_holder_idle(&h));
	rmp_key_free(k);
	rmp_holder_drop_windows(&h);
}

/* The stop frees a holder whatever is due: it forgets it all. */
static void test_abandon(void)
{
	struct rmp_holder h;
	struct rmp_key *k[2];

	reset(&h, 1);
	k[0] = grant(&h, 0);
	k[1] = grant(&h, 1);
	CHECK_EQ(rmp_key_revoke(&ks, k[0]), 0);
	CHECK_EQ(rmp_key_revoke(&ks, k[1]), 0); /* parked: no room */
	CHECK_EQ(h.invs_waiting, 1);
	rmp_holder_abandon(&h);
	CHECK(rmp_holder_idle(&h));
	CHECK_EQ(h.invs_waiting, 0);
	CHECK(!k[0]->in_holder_revoking && !k[1]->in_holder_revoking);
	/* (The device goes with the daemon: here, by hand.) */
	for (unsigned i = 0; i < 2; i++) {
		fake_dealloc_mw(k[i]->mw);
		rmp_key_free(k[i]);
	}
	rmp_holder_drop_windows(&h);
}

/* ------------------------------------------ revocations (rmp_keys_*) */

/* The QP's move to the error state, which rmp_holder_kill asks for. */
static unsigned qps_killed;

int ibv_modify_qp(struct ibv_qp *q, struct ibv_qp_attr *attr, int mask)
{
	(void)q;
	(void)mask;
	if (attr->qp_state == IBV_QPS_ERR)
		qps_killed++;
	return 0;
}

/* What the owner (the lifecycle) hears: each settled key, once. */
static unsigned nsettled, nfailed;
static uint64_t timeout_ms;
static struct rmp_keys rks;

static void on_settled(void *arg, struct rmp_key *k)
{
	(void)arg;
	CHECK(k->state == RMP_KEY_DEAD || k->state == RMP_KEY_UNPROVEN);
	nsettled++;
	rmp_key_release(k);
}

static void on_fail(struct rmp_holder *h, const char *why)
{
	(void)h;
	(void)why;
	nfailed++;
}

/* complete_rks -- posted work request i completes with status, through
 * the revocation layer. */
static void complete_rks(unsigned i, enum ibv_wc_status status)
{
	struct ibv_wc wc = { .wr_id = posted[i].wr_id, .status = status };

	rmp_keys_on_wc(&rks, rmp_wr_ptr(posted[i].wr_id),
		       rmp_wr_tag(posted[i].wr_id), &wc);
}

static void reset_rks(struct rmp_holder *h, unsigned key_wrs_max)
{
	reset(h, key_wrs_max);
	h->fail = on_fail;
	nsettled = nfailed = qps_killed = 0;
	rmp_keys_init(&rks, RMP_KEYS_WINDOW, &timeout_ms, on_settled, NULL);
}

/* A completion settles a revocation: the owner hears once, nothing is
 * awaited any more, and a settled key's late news changes nothing. */
static void test_revoke_settles_once(void)
{
	struct rmp_holder h;
	struct rmp_key *k;
	uint64_t at;

	timeout_ms = 1000;
	reset_rks(&h, 4);
	k = grant(&h, 0);
	rmp_keys_revoke(&rks, k);
	CHECK_EQ(nsettled, 0);
	CHECK(rmp_keys_revoke_due(&rks, &at));
	CHECK(at + 100 >= rmp_now_ms() + 1000);
	complete_rks(nposted - 1, IBV_WC_SUCCESS);
	CHECK_EQ(nsettled, 1); /* and on_settled released (freed) it */
	CHECK(!rmp_keys_revoke_due(&rks, &at));
	CHECK(rmp_holder_idle(&h));
	CHECK_EQ(nfailed, 0);
	rmp_holder_drop_windows(&h);
}

/*
 * The revoke timeout: after the first round the holder is killed and its
 * owner told (once), the key still awaited; after the second it settles
 * UNPROVEN. Its invalidation's flush, due after that, frees the released
 * key and is not heard as a second settling.
 */
static void test_revoke_timeout_rounds(void)
{
	struct rmp_holder h;
	struct rmp_key *k;
	uint64_t at;
	unsigned inv;

	timeout_ms = 1000;
	reset_rks(&h, 4);
	k = grant(&h, 0);
	rmp_keys_revoke(&rks, k);
	inv = nposted - 1;
	CHECK_EQ(k->state, RMP_KEY_INVALIDATING);
	CHECK(rmp_keys_revoke_due(&rks, &at));
	rmp_keys_revoke_overdue(&rks, at - 1); /* not yet */
	CHECK_EQ(qps_killed, 0);
	rmp_keys_revoke_overdue(&rks, at);
	CHECK_EQ(qps_killed, 1);
	CHECK_EQ(nfailed, 1);
	CHECK(!h.alive);
	CHECK_EQ(nsettled, 0);
	CHECK_EQ(k->revoke_round, 2);
	CHECK(rmp_keys_revoke_due(&rks, &at));
	rmp_keys_revoke_overdue(&rks, at);
	CHECK_EQ(nsettled, 1);
	CHECK_EQ(k->state, RMP_KEY_UNPROVEN);
	CHECK(!rmp_keys_revoke_due(&rks, &at));
	CHECK(k->lease == NULL); /* released, its LOCAL_INV still due */
	complete_rks(inv, IBV_WC_WR_FLUSH_ERR); /* frees it */
	CHECK_EQ(nsettled, 1);
	CHECK_EQ(nfailed, 1);
	CHECK(rmp_holder_idle(&h));
	rmp_holder_drop_windows(&h);
}

/* A dead holder: its parked invalidation settles at once, the posted
 * one on its flush; two settlings, and nothing left awaited that could
 * reach the holder after it is freed. */
static void test_holder_dead(void)
{
	struct rmp_holder h;
	struct rmp_key *k[2];
	uint64_t at;
	unsigned inv;

	timeout_ms = 1000;
	reset_rks(&h, 1);
	k[0] = grant(&h, 0);
	k[1] = grant(&h, 1);
	rmp_keys_revoke(&rks, k[0]);
	inv = nposted - 1;
	rmp_keys_revoke(&rks, k[1]); /* parked: no room */
	CHECK(k[1]->inv_waiting);
	h.alive = false;
	rmp_keys_holder_dead(&rks, &h);
	CHECK_EQ(nsettled, 1);
	complete_rks(inv, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(nsettled, 2);
	CHECK(!rmp_keys_revoke_due(&rks, &at));
	CHECK(rmp_holder_idle(&h));
	CHECK_EQ(nfailed, 0);
	rmp_holder_drop_windows(&h);
}

/* An invalidation that fails on a live QP: the holder is failed (killed
 * and its owner told), the key settles by deallocating its window. */
static void test_holder_broken(void)
{
	struct rmp_holder h;
	struct rmp_key *k;

	timeout_ms = 1000;
	reset_rks(&h, 4);
	k = grant(&h, 0);
	rmp_keys_revoke(&rks, k);
	complete_rks(nposted - 1, IBV_WC_MW_BIND_ERR);
	CHECK_EQ(nfailed, 1);
	CHECK_EQ(qps_killed, 1);
	CHECK_EQ(nsettled, 1);
	CHECK(rmp_holder_idle(&h));
	rmp_holder_drop_windows(&h);
}

int main(void)
{
	ctx.ops.post_send = fake_post_send;
	ctx.ops.alloc_mw = fake_alloc_mw;
	ctx.ops.dealloc_mw = fake_dealloc_mw;
	test_window_life();
	test_parked();
	test_post_fails();
	test_give_up();
	test_abandon();
	test_revoke_settles_once();
	test_revoke_timeout_rounds();
	test_holder_dead();
	test_holder_broken();
	CHECK_STR(rmp_key_state_name(RMP_KEY_INVALIDATING), "invalidating");
	/* Every window allocated was deallocated (leases' and spares'). */
	CHECK_EQ(mws_dealloced, mws_alloced);
	return check_done();
}

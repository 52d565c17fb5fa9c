/* SPDX-License-Identifier: MIT */
/*
 * test_lifecycle.c -- every state a lease can reach (daemon/lifecycle*.c)
 * and every way out of each, on the real key module, allocator, lease
 * table, tenants and journal, with the verbs, clock, zeroing thread and
 * log faked (fake_daemon.h).
 *
 * Each scenario starts a lifecycle, drives it through requests, work
 * completions it chooses and time it lets pass, and checks the lease's
 * state (and the state changes logged), the work requests posted, the
 * pool's free bytes, the tenant's accounting, the holder's fail upcall
 * and the counters. stop() then ends everything and checks that every
 * byte is back in the pool (or quarantined) and nothing is due.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "check.h"
#include "fake_daemon.h"
#include "journal.h"
#include "lifecycle.h"
#include "lifecycle_int.h"
#include "tenant.h"
#include "util.h"

#define POOL_SIZE (4u << 20)
#define GRACE (ZERO_GRACE_MS + FAKE_LAG_MS)
#define ACC_RW (RMP_ACC_READ | RMP_ACC_WRITE)
#define IBV_ALL (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_ATOMIC)

static struct rmp_config cfg;
static struct rmp_tenants *tenants;
static struct rmp_tenant *ta, *tb; /* "a": no limits; "b": 64K, 3 leases */
static struct rmp_pool *pool;
static struct event_base *base;
static struct rmp_lifecycle *lc;
static struct fake_conn conns[8];
static unsigned nconns;
static uint64_t last_fence; /* of the last attach (0: answered at once) */
/* What the fence upcall heard, in order (since start). */
static struct {
	struct rmp_holder *h;
	struct rmp_fence_done done;
} fenced[16];
static unsigned nfenced;

static void on_fenced(void *ctx, struct rmp_holder *h,
		      const struct rmp_fence_done *done)
{
	(void)ctx;
	if (nfenced < RMP_ARRAY_SIZE(fenced)) {
		fenced[nfenced].h = h;
		fenced[nfenced].done = *done;
	}
	nfenced++;
}

/* ------------------------------------------------------------ fixture */

static void make_config(void)
{
	rmp_config_defaults(&cfg);
	cfg.pool.size = POOL_SIZE;
	cfg.server.revoke_timeout_ms = 1000;
	cfg.lease.expiry_tick_ms = 100;
	fake_add_tenant(&cfg, "a", 0, 0);
	fake_add_tenant(&cfg, "b", 64 << 10, 3);
}

/* start_with -- a lifecycle in mode over a fresh pool (or mem: a restart),
 * leases kept in j (NULL: none). */
static void start_with(enum rmp_keys_mode mode, struct rmp_journal *j,
		       uint8_t *mem)
{
	struct rmp_lifecycle_params p = { 0 };
	unsigned why;

	if (!tenants) {
		tenants = rmp_tenants_new(&cfg);
		ta = rmp_tenants_find(tenants, "a", &why);
		tb = rmp_tenants_find(tenants, "b", &why);
		if (!ta || !tb)
			abort();
	}
	pool = fake_pool_new(POOL_SIZE, 1, mem);
	base = event_base_new();
	pool->journal = j;
	p.base = base;
	p.pools = &pool;
	p.npools = 1;
	p.keys_mode = mode;
	p.cfg = &cfg;
	p.tenants = tenants;
	lc = rmp_lifecycle_new(&p);
	if (!lc)
		abort();
	rmp_lifecycle_on_fence(lc, on_fenced, NULL);
	nfenced = 0;
	nconns = 0;
	/* Each scenario counts its own work requests and QP kills. */
	CHECK_EQ(fake_due(NULL), 0);
	fake_nwrs = 0;
	fake_qps_killed = 0;
	fake_log_clear();
}

static void start(enum rmp_keys_mode mode)
{
	start_with(mode, NULL, NULL);
}

/* conn -- a new connection proven as t. */
static struct fake_conn *conn(struct rmp_tenant *t, const char *name,
			      unsigned key_wrs_max)
{
	struct fake_conn *c = &conns[nconns++];

	fake_conn_init(c, t, name, key_wrs_max);
	return c;
}

static struct rmp_lifecycle_stats stats(void)
{
	struct rmp_lifecycle_stats st;

	rmp_lifecycle_stats(lc, &st);
	return st;
}

/*
 * crash -- the process goes: connections close (their keys revoked),
 * everything due completes, the lifecycle and the tenants are freed;
 * what is journaled stays, and so does the pool's memory (returned).
 */
static uint8_t *crash(void)
{
	uint8_t *mem = pool->base;

	for (unsigned i = 0; i < nconns; i++)
		fake_conn_close(lc, &conns[i]);
	fake_complete_all(lc, NULL, IBV_WC_WR_FLUSH_ERR);
	rmp_lifecycle_free(lc);
	for (unsigned i = 0; i < nconns; i++)
		fake_conn_free(&conns[i]);
	fake_pool_free(pool, true);
	event_base_free(base);
	rmp_tenants_free(tenants);
	tenants = NULL;
	return mem;
}

/*
 * stop -- end every lease, let every work request complete and every
 * grace pass, close the connections, free. Every byte must be back in
 * the pool but the quarantined ones, nothing due, every holder idle,
 * the tenants owing nothing.
 */
static void stop(void)
{
	struct rmp_lifecycle_stats st;

	rmp_lifecycle_end_all(lc, "stop");
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	for (unsigned i = 0; i < nconns; i++)
		fake_conn_close(lc, &conns[i]);
	fake_complete_all(lc, NULL, IBV_WC_WR_FLUSH_ERR);
	fake_advance(lc, GRACE);
	st = stats();
	CHECK_EQ(fake_due(NULL), 0);
	CHECK_EQ(st.leases + st.revoking + st.keys, 0);
	for (unsigned i = 0; i < nconns; i++)
		CHECK(rmp_holder_idle(&conns[i].h));
	/* Zeroing still under way finishes in rmp_lifecycle_free. */
	rmp_lifecycle_free(lc);
	CHECK_EQ(fake_pool_free_bytes(pool) + st.quarantined_bytes, POOL_SIZE);
	CHECK_EQ(ta->bytes + ta->leases + tb->bytes + tb->leases, 0);
	CHECK_EQ(ta->ending_bytes + tb->ending_bytes, st.quarantined_bytes);
	for (unsigned i = 0; i < nconns; i++)
		fake_conn_free(&conns[i]);
	fake_pool_free(pool, false);
	event_base_free(base);
	/* Quarantined bytes stay charged to their tenant for good. */
	ta->ending_bytes = tb->ending_bytes = 0;
	lc = NULL;
}

/* try_grant -- ALLOC for c; returns the status, *l and *k on success. */
static int try_grant(struct fake_conn *c, uint64_t len, uint32_t ttl_s,
		     uint32_t access, uint32_t flags, unsigned *detail,
		     struct rmp_lease **l, struct rmp_key **k)
{
	struct rmp_alloc_req r = { .length = len, .ttl_s = ttl_s,
				   .access = access, .flags = flags };
	struct rmp_lease *ll;
	struct rmp_key *kk;

	*detail = 99;
	return rmp_lifecycle_grant(lc, &c->h, &r, l ? l : &ll, k ? k : &kk,
				   detail);
}

/* grant -- a lease for c that must be granted; its bind (window mode)
 * completes. */
static struct rmp_lease *grant(struct fake_conn *c, uint64_t len,
			       uint32_t ttl_s, uint32_t flags)
{
	struct rmp_lease *l = NULL;
	struct rmp_key *k = NULL;
	unsigned detail, at = fake_nwrs;

	CHECK_EQ(try_grant(c, len, ttl_s, RMP_ACC_ALL, flags, &detail, &l,
			   &k), 0);
	CHECK_EQ(detail, RMP_DETAIL_NONE);
	if (!l)
		abort();
	if (fake_nwrs > at)
		fake_complete(lc, fake_nwrs - 1, IBV_WC_SUCCESS);
	return l;
}

static int attach(struct fake_conn *c, const struct rmp_lease *l,
		  uint32_t access, uint32_t flags, unsigned *detail,
		  struct rmp_key **k)
{
	struct rmp_attach_req r = { .id = l->id, .secret = l->secret,
				    .access = access, .flags = flags };
	struct rmp_lease *out;

	return rmp_lifecycle_attach(lc, &c->h, &r, &out, k, detail,
				    &last_fence);
}

static int free_lease(struct fake_conn *c, uint64_t id, uint64_t secret)
{
	unsigned detail;

	return rmp_lifecycle_free_lease(lc, &c->h, id, secret, &detail);
}

static int renew(struct fake_conn *c, uint64_t id, uint64_t secret,
		 uint32_t ttl_s, uint64_t *ttl_ms)
{
	unsigned detail;

	return rmp_lifecycle_renew(lc, &c->h, id, secret, ttl_s, ttl_ms,
				   &detail);
}

/* saw -- lease id changed state as change says ("granted -> revoking"),
 * once, since the log was last cleared. */
static bool saw(uint64_t id, const char *change)
{
	char text[96];

	snprintf(text, sizeof(text), "lease %016" PRIx64 ": %s", id, change);
	return fake_log_count(text) == 1;
}

static bool all_bytes(uint64_t off, uint64_t len, uint8_t v)
{
	for (uint64_t i = 0; i < len; i++)
		if (pool->base[off + i] != v)
			return false;
	return true;
}

/* ---------------------------------------------------------- scenarios */

/*
 * The whole life in window mode: granted with a bind on the holder's QP,
 * freed (a LOCAL_INV of exactly that rkey), revoked once it completes,
 * zeroed after the grace, its bytes back in the pool and zero.
 */
static void test_grant_free(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	struct rmp_key *k;
	struct rmp_lease_desc d;
	struct rmp_lifecycle_stats st;
	struct ibv_send_wr *w;
	uint64_t id, secret, off;
	unsigned detail;
	int inv;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	CHECK_EQ(try_grant(c, 4000, 10, RMP_ACC_ALL, 0, &detail, &l, &k), 0);
	CHECK_STR(rmp_lease_state_name(l->state), "granted");
	CHECK(rmp_lifecycle_find(lc, l->id) == l);
	CHECK_EQ(l->ext.length, 4032); /* rounded to the grain */
	CHECK_EQ(l->deadline_ms, fake_now + 10000);
	CHECK(l->owner_holder == &c->h);
	CHECK_STR(l->owner, "one");
	CHECK_EQ(fake_nwrs, 1);
	w = &fake_wrs[0].wr;
	CHECK(fake_wrs[0].qp == &c->qp);
	CHECK_EQ(w->opcode, IBV_WR_BIND_MW);
	CHECK_EQ(w->bind_mw.rkey, k->rkey);
	CHECK(w->bind_mw.bind_info.mr == pool->chunks[0].mr[0]);
	CHECK_EQ(w->bind_mw.bind_info.addr, pool->iova + l->ext.offset);
	CHECK_EQ(w->bind_mw.bind_info.length, 4032);
	CHECK_EQ(w->bind_mw.bind_info.mw_access_flags, IBV_ALL);
	CHECK_EQ(k->state, RMP_KEY_LIVE);
	CHECK(k->holder == &c->h && k->lease == l);
	CHECK_EQ(c->h.nkeys, 1);
	rmp_lifecycle_describe(lc, l, k, &d);
	CHECK_EQ(d.id, l->id);
	CHECK_EQ(d.secret, l->secret);
	CHECK_EQ(d.addr, pool->iova + l->ext.offset);
	CHECK_EQ(d.length, 4032);
	CHECK_EQ(d.ttl_ms, 10000);
	CHECK_EQ(d.rkey, k->rkey);
	CHECK_EQ(d.access, RMP_ACC_ALL);
	CHECK_EQ(d.holders, 1);
	st = stats();
	CHECK_EQ(st.leases, 1);
	CHECK_EQ(st.keys, 1);
	CHECK_EQ(st.leased_bytes, 4032);
	CHECK_EQ(st.grants, 1);
	CHECK_EQ(ta->bytes, 4032);
	CHECK_EQ(ta->leases, 1);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE - 4032);
	CHECK_EQ(fake_log_count("audit: grant tenant=a client=one"), 1);
	fake_complete(lc, 0, IBV_WC_SUCCESS);
	CHECK(rmp_holder_idle(&c->h));

	memset(pool->base + l->ext.offset, 0xab, l->ext.length);
	id = l->id;
	secret = l->secret;
	off = l->ext.offset;
	fake_log_clear();
	CHECK_EQ(free_lease(c, id, secret), 0);
	CHECK(saw(id, "granted -> revoking"));
	CHECK_STR(rmp_lease_state_name(l->state), "revoking");
	CHECK(rmp_lifecycle_find(lc, id) == NULL);
	inv = fake_last(&c->qp, IBV_WR_LOCAL_INV);
	CHECK_EQ(inv, 1);
	CHECK_EQ(fake_wrs[1].wr.invalidate_rkey, d.rkey);
	st = stats();
	CHECK_EQ(st.leases, 0);
	CHECK_EQ(st.ending, 1);
	CHECK_EQ(st.revoking, 1);
	CHECK_EQ(st.revoking_bytes, 4032);
	CHECK_EQ(st.leased_bytes, 0);
	CHECK_EQ(st.keys, 0);
	CHECK_EQ(st.frees, 1);
	CHECK_EQ(ta->bytes, 0);
	CHECK_EQ(ta->leases, 0);
	CHECK_EQ(ta->ending_bytes, 4032);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE - 4032);
	CHECK_EQ(c->h.nkeys, 0);
	CHECK(!rmp_holder_idle(&c->h));
	CHECK_EQ(fake_log_count("audit: free tenant=a client=one"), 1);

	fake_complete(lc, (unsigned)inv, IBV_WC_SUCCESS);
	CHECK(saw(id, "revoking -> zeroing"));
	CHECK_STR(rmp_lease_state_name(l->state), "zeroing");
	st = stats();
	CHECK_EQ(st.revoking, 0);
	CHECK_EQ(st.revoking_bytes, 0);
	CHECK_EQ(st.ending, 1);
	CHECK_EQ(st.zeroing_bytes, 4032);
	CHECK(rmp_holder_idle(&c->h));
	CHECK_EQ(c->h.nspare_mw, 1); /* invalidated: kept for reuse */
	/* Not zeroed, not reused within the grace (a READ may be copying). */
	fake_advance(lc, GRACE - 1);
	CHECK(all_bytes(off, 4032, 0xab));
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE - 4032);
	fake_advance(lc, 1);
	st = stats();
	CHECK_EQ(st.zeroing_bytes, 0);
	CHECK_EQ(st.ending, 0);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE);
	CHECK_EQ(ta->ending_bytes, 0);
	CHECK(all_bytes(off, 4032, 0));
	/* Gone for good: a freed lease is not an expired one. */
	CHECK_EQ(free_lease(c, id, secret), -ENOENT);
	stop();
}

/* An ALLOC refused leaves nothing behind: no lease, no charge, no bytes
 * taken, no work request. */
#define CHECK_NOTHING_CHANGED(t, n_leases, n_bytes, n_wrs)                   \
	do {                                                                 \
		CHECK_EQ(stats().leases, (n_leases));                        \
		CHECK_EQ((t)->leases, (n_leases));                           \
		CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE - (n_bytes)); \
		CHECK_EQ(fake_nwrs, (n_wrs));                                \
	} while (0)

static void test_grant_refused(void)
{
	struct fake_conn *c, *cb, *slow;
	unsigned detail, nwrs;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	cb = conn(tb, "bee", 8);
	rmp_lifecycle_set_draining(lc, true);
	CHECK(rmp_lifecycle_draining(lc));
	CHECK_EQ(try_grant(c, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ESHUTDOWN);
	rmp_lifecycle_set_draining(lc, false);
	CHECK_EQ(try_grant(c, 0, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -EINVAL);
	CHECK_EQ(try_grant(c, 64, 0, 0, 0, &detail, NULL, NULL), -EINVAL);
	CHECK_EQ(try_grant(c, 64, 0, 8, 0, &detail, NULL, NULL), -EINVAL);
	CHECK_EQ(try_grant(c, 64, 0, RMP_ACC_ALL, 0x10, &detail, NULL, NULL),
		 -EINVAL);
	{
		struct rmp_alloc_req r = { .length = 64, .alignment = 96,
					   .access = RMP_ACC_ALL };
		struct rmp_lease *l;
		struct rmp_key *k;

		CHECK_EQ(rmp_lifecycle_grant(lc, &c->h, &r, &l, &k, &detail),
			 -EINVAL);
	}
	CHECK_EQ(try_grant(c, POOL_SIZE + 64, 0, RMP_ACC_ALL, 0, &detail,
			   NULL, NULL), -EFBIG);
	cfg.lease.max_lease = 64 << 10;
	CHECK_EQ(try_grant(c, (64 << 10) + 1, 0, RMP_ACC_ALL, 0, &detail,
			   NULL, NULL), -EFBIG);
	cfg.lease.max_lease = 0;
	CHECK_EQ(try_grant(c, 64, 86401, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -EINVAL);
	cfg.lease.ttl_min_ms = 2000;
	CHECK_EQ(try_grant(c, 64, 1, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -EINVAL);
	cfg.lease.ttl_min_ms = 1000;
	CHECK_NOTHING_CHANGED(ta, 0, 0, 0);
	CHECK_EQ(stats().refusals, 0); /* bad requests are no refusals */

	/* The tenant's limits: bytes, then leases. */
	CHECK_EQ(try_grant(cb, (64 << 10) + 64, 0, RMP_ACC_ALL, 0, &detail,
			   NULL, NULL), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_BYTES);
	CHECK_EQ(fake_log_count("limit=bytes"), 1);
	for (unsigned i = 0; i < 3; i++)
		grant(cb, 4096, 0, 0);
	CHECK_EQ(try_grant(cb, 4096, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_LEASES);
	CHECK_EQ(fake_log_count("limit=leases"), 1);
	CHECK_EQ(tb->quota_refusals, 2);
	CHECK_EQ(stats().refusals, 2);
	CHECK_NOTHING_CHANGED(tb, 3, 3 * 4096, 3);

	/* The server's lease limit, whoever asks. */
	cfg.pool.max_leases = 3;
	CHECK_EQ(try_grant(c, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ENOSPC);
	CHECK_EQ(detail, RMP_DETAIL_SERVER_LEASES);
	CHECK_EQ(fake_log_count("limit=server-leases"), 1);
	CHECK_EQ(stats().refusals, 3);
	cfg.pool.max_leases = 65536;
	rmp_lifecycle_end_all(lc, "next");
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_advance(lc, GRACE);

	/* The pool is full. */
	grant(c, POOL_SIZE, 0, 0);
	nwrs = fake_nwrs;
	CHECK_EQ(try_grant(c, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ENOSPC);
	CHECK_EQ(detail, RMP_DETAIL_NONE);
	CHECK_NOTHING_CHANGED(ta, 1, POOL_SIZE, nwrs);
	rmp_lifecycle_end_all(lc, "next");
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_advance(lc, GRACE);
	fake_zero_run();

	/* The key cannot be had: the lease is undone. A QP that is dead
	 * already, one with its key work requests at their bound. */
	c->h.alive = false;
	CHECK_EQ(try_grant(c, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ENOTCONN);
	c->h.alive = true;
	slow = conn(ta, "slow", 1);
	CHECK_EQ(try_grant(slow, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 0);
	nwrs = fake_nwrs;
	CHECK_EQ(try_grant(slow, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -EAGAIN);
	CHECK_NOTHING_CHANGED(ta, 1, 64, nwrs);
	CHECK_EQ(stats().grants, 3 + 1 + 1);
	stop();
}

/*
 * RENEW moves the deadline and touches no key; what it refuses. A lease
 * past its deadline is expired for every request before the tick ends
 * it; after, its id and secret still say "expired", a wrong secret not.
 */
static void test_renew_and_expired(void)
{
	struct fake_conn *c, *cb;
	struct rmp_lease *l;
	struct rmp_key *k;
	uint64_t ttl = 0, id, secret, deadline;
	unsigned nwrs, detail;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	cb = conn(tb, "bee", 8);
	l = grant(c, 4096, 10, 0);
	id = l->id;
	secret = l->secret;
	nwrs = fake_nwrs;
	fake_advance(lc, 5000);
	CHECK_EQ(renew(c, id, secret, 0, &ttl), 0);
	CHECK_EQ(ttl, 60000); /* the default */
	CHECK_EQ(l->deadline_ms, fake_now + 60000);
	CHECK_EQ(renew(c, id, secret, 20, &ttl), 0);
	CHECK_EQ(ttl, 20000);
	deadline = l->deadline_ms;
	CHECK_EQ(deadline, fake_now + 20000);
	CHECK_EQ(stats().renewals, 2);
	CHECK_EQ(fake_nwrs, nwrs);
	CHECK_EQ(renew(c, id, secret, 86401, &ttl), -EINVAL);
	CHECK_EQ(renew(c, id, secret ^ 1, 0, &ttl), -ENOENT);
	CHECK_EQ(renew(c, id ^ 1, secret, 0, &ttl), -ENOENT);
	CHECK_EQ(rmp_lifecycle_renew(lc, &cb->h, id, secret, 0, &ttl, &detail),
		 -EPERM);
	CHECK_EQ(detail, RMP_DETAIL_TENANT);
	CHECK_EQ(fake_log_count("audit: deny tenant=b client=bee"), 1);
	CHECK_EQ(l->deadline_ms, deadline);
	CHECK_EQ(stats().renewals, 2);

	/* At the deadline, before the tick. */
	fake_now = deadline;
	CHECK_EQ(renew(c, id, secret, 0, &ttl), -EKEYEXPIRED);
	CHECK_EQ(free_lease(c, id, secret), -EKEYEXPIRED);
	CHECK_EQ(attach(c, l, 0, 0, &detail, &k), -EKEYEXPIRED);
	CHECK(rmp_lifecycle_find(lc, id) == l);
	CHECK_EQ(l->state, RMP_LEASE_GRANTED);
	fake_log_clear();
	fake_advance(lc, 0);
	CHECK(saw(id, "granted -> revoking"));
	CHECK(rmp_lifecycle_find(lc, id) == NULL);
	CHECK_EQ(renew(c, id, secret, 0, &ttl), -EKEYEXPIRED);
	CHECK_EQ(free_lease(c, id, secret), -EKEYEXPIRED);
	CHECK_EQ(renew(c, id, secret ^ 1, 0, &ttl), -ENOENT);
	CHECK_EQ(stats().frees, 0);
	stop();
}

/*
 * Expiry: the timer is armed for the first deadline rounded up to the
 * tick, a lease is never ended before its deadline, leases due in one
 * tick end in one wake-up, and the timer stops with the last lease.
 */
static void test_expiry(void)
{
	struct fake_conn *c;
	struct rmp_lease *l1, *l2;
	uint64_t id1, id2, ttl;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l1 = grant(c, 4096, 1, 0);
	l2 = grant(c, 4096, 1, 0);
	id1 = l1->id;
	id2 = l2->id;
	CHECK_EQ(rmp_lifecycle_extend(lc, id2, 1050, "test"), 0);
	CHECK(event_pending(lc->expiry_ev, EV_TIMEOUT, NULL));
	CHECK_EQ(lc->expiry_at_ms, fake_now + 1000);
	fake_log_clear();
	fake_advance(lc, 999);
	CHECK_EQ(stats().leases, 2);
	fake_advance(lc, 1);
	CHECK(saw(id1, "granted -> revoking"));
	CHECK_EQ(fake_log_count("audit: expire tenant=a client=- peer=-"), 1);
	CHECK_EQ(stats().expiries, 1);
	CHECK(fake_last(&c->qp, IBV_WR_LOCAL_INV) >= 0);
	/* l2 is due in 50 ms: the next wake-up is a tick away. */
	CHECK(rmp_lifecycle_find(lc, id2) == l2);
	CHECK_EQ(lc->expiry_at_ms, fake_now + 100);
	fake_advance(lc, 50);
	CHECK(rmp_lifecycle_find(lc, id2) == l2);
	CHECK_EQ(renew(c, id2, l2->secret, 0, &ttl), -EKEYEXPIRED);
	fake_advance(lc, 50);
	CHECK(saw(id2, "granted -> revoking"));
	CHECK(!event_pending(lc->expiry_ev, EV_TIMEOUT, NULL));
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);

	/* Three due together: one wake-up. */
	for (unsigned i = 0; i < 3; i++)
		grant(c, 4096, 2, 0);
	fake_log_clear();
	fake_advance(lc, 2000);
	CHECK_EQ(fake_log_count("3 lease(s) expired and revoked"), 1);
	CHECK_EQ(stats().expiries, 5);
	CHECK_EQ(stats().leases, 0);
	stop();
}

/*
 * Auto-renew: alive while a holder whose proof is current holds it; one
 * more ttl (at most ttl_max) once its last holder is gone; then it ends.
 */
static void test_auto_renew(void)
{
	struct fake_conn *c, *c2;
	struct rmp_lease *l;
	struct rmp_key *k;
	uint64_t id, ttl;
	unsigned detail;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l = grant(c, 4096, 1, RMP_LEASE_F_AUTO_RENEW);
	id = l->id;
	fake_advance(lc, 1000);
	CHECK(rmp_lifecycle_find(lc, id) == l);
	CHECK_EQ(l->deadline_ms, fake_now + 1000);
	CHECK_EQ(stats().expiries, 0);
	CHECK_EQ(fake_due(NULL), 0);
	/* At its deadline, before the tick: alive, since the tick renews
	 * it while a holder is current. An ATTACH or RENEW then must not
	 * be told the lease expired. */
	fake_now = l->deadline_ms;
	c2 = conn(ta, "late", 8);
	CHECK_EQ(attach(c2, l, RMP_ACC_READ, 0, &detail, &k), 0);
	CHECK_EQ(renew(c, id, l->secret, 1, &ttl), 0);
	CHECK_EQ(l->deadline_ms, fake_now + 1000);
	fake_conn_close(lc, c2);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_advance(lc, 0);
	CHECK(rmp_lifecycle_find(lc, id) == l);
	fake_advance(lc, 1000);
	CHECK_EQ(l->deadline_ms, fake_now + 1000);
	/* A reload lowered ttl_max: renewals follow it. */
	cfg.lease.ttl_max_ms = 700;
	fake_advance(lc, 1000);
	CHECK_EQ(l->deadline_ms, fake_now + 700);
	cfg.lease.ttl_max_ms = 86400000;
	/* A reload voided the holder's proof: it holds the lease to its
	 * deadline only. */
	c->h.tenant_epoch = 0;
	fake_log_clear();
	fake_advance(lc, 700);
	CHECK(saw(id, "granted -> revoking"));
	CHECK_EQ(stats().expiries, 1);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);

	/* The last holder goes: one more ttl from then, then the end. */
	c2 = conn(ta, "two", 8);
	l = grant(c2, 4096, 5, RMP_LEASE_F_AUTO_RENEW);
	id = l->id;
	fake_advance(lc, 2000);
	fake_conn_close(lc, c2);
	CHECK_EQ(l->nkeys, 0);
	CHECK_EQ(l->state, RMP_LEASE_GRANTED);
	CHECK_EQ(l->deadline_ms, fake_now + 5000);
	fake_advance(lc, 4999);
	CHECK(rmp_lifecycle_find(lc, id) == l);
	fake_log_clear();
	fake_advance(lc, 1);
	CHECK(saw(id, "granted -> revoking"));

	/* Not when its tenant is gone: nobody may attach. */
	c2 = conn(ta, "three", 8);
	l = grant(c2, 4096, 5, RMP_LEASE_F_AUTO_RENEW);
	fake_advance(lc, 2000);
	ta->usable = false;
	fake_conn_close(lc, c2);
	ta->usable = true;
	CHECK_EQ(l->deadline_ms, fake_now + 3000);
	stop();
}

/* ATTACH: a key per holder beside the others, the same key again, a
 * new access replacing it, and what is refused; the takeover. */
static void test_attach(void)
{
	struct fake_conn *c1, *c2, *c3, *cb;
	struct rmp_key *k, *k2, *k3;
	struct rmp_lease *l;
	struct rmp_lease_desc d;
	unsigned detail, nwrs;

	start(RMP_KEYS_WINDOW);
	c1 = conn(ta, "one", 8);
	c2 = conn(ta, "two", 8);
	c3 = conn(ta, "three", 8);
	cb = conn(tb, "bee", 8);
	{
		unsigned dt;

		CHECK_EQ(try_grant(c1, 4096, 0, ACC_RW, 0, &dt, &l, &k), 0);
		fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	}
	CHECK_EQ(attach(c2, l, 0, 0, &detail, &k2), 0);
	CHECK_EQ(k2->access, ACC_RW);
	CHECK(k2 != k && k2->holder == &c2->h);
	CHECK_EQ(fake_last(&c2->qp, IBV_WR_BIND_MW), (int)fake_nwrs - 1);
	CHECK_EQ(fake_wrs[fake_nwrs - 1].wr.bind_mw.bind_info.mw_access_flags,
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	CHECK_EQ(l->nkeys, 2);
	rmp_lifecycle_describe(lc, l, k2, &d);
	CHECK_EQ(d.holders, 2);
	CHECK_EQ(d.rkey, k2->rkey);
	CHECK_EQ(stats().attaches, 1);
	CHECK_EQ(fake_log_count("audit: attach tenant=a client=two"), 1);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	nwrs = fake_nwrs;
	CHECK_EQ(attach(c2, l, 0, 0, &detail, &k3), 0);
	CHECK(k3 == k2);
	CHECK_EQ(fake_nwrs, nwrs);
	/* Less access: the holder's key is replaced. */
	CHECK_EQ(attach(c2, l, RMP_ACC_READ, 0, &detail, &k3), 0);
	CHECK(k3 != k2);
	CHECK_EQ(k3->access, RMP_ACC_READ);
	CHECK_EQ(fake_count(nwrs, &c2->qp, IBV_WR_LOCAL_INV), 1);
	CHECK_EQ(fake_count(nwrs, &c2->qp, IBV_WR_BIND_MW), 1);
	CHECK_EQ(l->nkeys, 2);
	CHECK_EQ(c2->h.nkeys, 1);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	nwrs = fake_nwrs;
	CHECK_EQ(attach(c2, l, RMP_ACC_ATOMIC, 0, &detail, &k3), -EACCES);
	CHECK_EQ(attach(c2, l, 8, 0, &detail, &k3), -EINVAL);
	CHECK_EQ(attach(c2, l, 0, 2, &detail, &k3), -EINVAL);
	CHECK_EQ(attach(cb, l, 0, 0, &detail, &k3), -EPERM);
	CHECK_EQ(detail, RMP_DETAIL_TENANT);
	cfg.lease.keys_per_lease = 2;
	CHECK_EQ(attach(c3, l, 0, 0, &detail, &k3), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_KEYS);
	cfg.lease.keys_per_lease = 16;
	CHECK_EQ(fake_nwrs, nwrs);
	CHECK_EQ(l->nkeys, 2);

	/* Takeover: every other key revoked, c3 owns the lease now. */
	CHECK_EQ(attach(c3, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k3), 0);
	CHECK_EQ(fake_count(nwrs, &c1->qp, IBV_WR_LOCAL_INV), 1);
	CHECK_EQ(fake_count(nwrs, &c2->qp, IBV_WR_LOCAL_INV), 1);
	CHECK_EQ(fake_count(nwrs, &c3->qp, IBV_WR_BIND_MW), 1);
	CHECK_EQ(l->nkeys, 1);
	CHECK(TAILQ_FIRST(&l->keys) == k3);
	CHECK(l->owner_holder == &c3->h);
	CHECK_EQ(c1->h.nkeys + c2->h.nkeys, 0);
	CHECK_EQ(stats().takeovers, 1);
	CHECK_EQ(fake_log_count("revoked=2"), 1);
	CHECK_EQ(l->state, RMP_LEASE_GRANTED);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	CHECK_EQ(l->keys_unsettled, 1);
	nwrs = fake_nwrs;
	CHECK_EQ(attach(c3, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k2), 0);
	CHECK(k2 == k3);
	CHECK_EQ(fake_nwrs, nwrs);
	CHECK_EQ(fake_log_count("revoked=0"), 1);
	stop();
}

/*
 * An ephemeral lease ends with its owner's connection, though another
 * holder still has a key; others outlive it. An ATTACH that dropped its
 * owner's key and could not grant a new one ends an ephemeral lease too.
 */
static void test_ephemeral(void)
{
	struct fake_conn *c1, *c2, *c3;
	struct rmp_lease *l, *p;
	struct rmp_key *k;
	unsigned detail, nwrs;
	uint64_t id;

	start(RMP_KEYS_WINDOW);
	c1 = conn(ta, "one", 8);
	c2 = conn(ta, "two", 8);
	l = grant(c1, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	p = grant(c1, 4096, 0, 0);
	id = l->id;
	CHECK_EQ(attach(c2, l, 0, 0, &detail, &k), 0);
	CHECK_EQ(attach(c2, p, 0, 0, &detail, &k), 0);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	nwrs = fake_nwrs;
	fake_log_clear();
	fake_conn_close(lc, c1);
	CHECK(saw(id, "granted -> revoking"));
	CHECK_EQ(fake_log_count("why=ephemeral-connection-closed"), 1);
	/* c1's keys are dead with its QP; c2's is invalidated on c2's. */
	CHECK_EQ(fake_count(nwrs, &c1->qp, IBV_WR_LOCAL_INV), 0);
	CHECK_EQ(fake_count(nwrs, &c2->qp, IBV_WR_LOCAL_INV), 1);
	CHECK(rmp_holder_idle(&c1->h));
	CHECK_EQ(l->state, RMP_LEASE_REVOKING);
	fake_complete_all(lc, &c2->qp, IBV_WC_SUCCESS);
	CHECK(saw(id, "revoking -> zeroing"));
	/* The other lease lives on with c2's key, its owner forgotten. */
	CHECK_EQ(p->state, RMP_LEASE_GRANTED);
	CHECK_EQ(p->nkeys, 1);
	CHECK(p->owner_holder == NULL);

	/* The owner's ATTACH with a new access: its old key goes, the new
	 * one finds no room. */
	c3 = conn(ta, "three", 1);
	l = grant(c3, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	id = l->id;
	fake_log_clear();
	CHECK_EQ(attach(c3, l, RMP_ACC_READ, 0, &detail, &k), -EAGAIN);
	CHECK(saw(id, "granted -> revoking"));
	CHECK_EQ(fake_log_count("why=ephemeral-owner-lost-its-key"), 1);
	CHECK(rmp_lifecycle_find(lc, id) == NULL);
	fake_complete_all(lc, &c3->qp, IBV_WC_SUCCESS);
	CHECK(saw(id, "revoking -> zeroing"));
	/* A lease that is not ephemeral stays, keyless and ownerless. */
	p = grant(c3, 4096, 0, 0);
	CHECK_EQ(attach(c3, p, RMP_ACC_READ, 0, &detail, &k), -EAGAIN);
	CHECK_EQ(p->state, RMP_LEASE_GRANTED);
	CHECK_EQ(p->nkeys, 0);
	CHECK(p->owner_holder == NULL);
	stop();
}

/*
 * A LOCAL_INV that never completes: after revoke_timeout the holder is
 * killed and failed (once); when even that brings no completion within
 * another timeout, the key is unproven and the extent quarantined, never
 * reused. Its late flush changes nothing.
 */
static void test_quarantine(void)
{
	struct fake_conn *c, *c2;
	struct rmp_lease *l;
	struct rmp_lifecycle_stats st;
	unsigned detail;
	uint64_t id;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	c2 = conn(ta, "two", 8);
	l = grant(c, 4096, 0, 0);
	id = l->id;
	CHECK_EQ(free_lease(c, id, l->secret), 0);
	CHECK(event_pending(lc->revoke_ev, EV_TIMEOUT, NULL));
	fake_advance(lc, 999);
	CHECK_EQ(fake_qps_killed, 0);
	CHECK_EQ(c->fails, 0);
	fake_log_clear();
	fake_advance(lc, 1);
	CHECK_EQ(fake_qps_killed, 1);
	CHECK(!c->h.alive);
	CHECK_EQ(c->fails, 1);
	CHECK_STR(c->why, "a key revocation timed out");
	CHECK_EQ(l->state, RMP_LEASE_REVOKING);
	fake_advance(lc, 999);
	CHECK_EQ(l->state, RMP_LEASE_REVOKING);
	fake_advance(lc, 1);
	CHECK(saw(id, "revoking -> quarantined"));
	CHECK_STR(rmp_lease_state_name(l->state), "quarantined");
	CHECK_EQ(fake_log_count("could not be proven dead: no completion "
				 "even after its queue pair was killed"), 1);
	st = stats();
	CHECK_EQ(st.quarantined_bytes, 4096);
	CHECK_EQ(st.quarantined_leases, 1);
	CHECK_EQ(st.ending + st.revoking + st.zeroing_bytes, 0);
	CHECK_EQ(ta->ending_bytes, 4096);
	CHECK_EQ(c->fails, 1);
	CHECK(!event_pending(lc->revoke_ev, EV_TIMEOUT, NULL));
	CHECK_EQ(fake_complete_all(lc, &c->qp, IBV_WC_WR_FLUSH_ERR), 1);
	CHECK_EQ(l->state, RMP_LEASE_QUARANTINED);
	CHECK_EQ(stats().quarantined_bytes, 4096);
	CHECK(rmp_holder_idle(&c->h));
	/* Never reused: the rest of the pool, and not a byte more. */
	grant(c2, POOL_SIZE - 4096, 0, 0);
	CHECK_EQ(try_grant(c2, 64, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ENOSPC);
	stop();
}

/* The killed holder's flush comes within the second timeout: the key is
 * dead after all, the extent zeroed and reused. */
static void test_revoke_timeout_flush(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	uint64_t id;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l = grant(c, 4096, 0, 0);
	id = l->id;
	fake_log_clear();
	CHECK_EQ(free_lease(c, id, l->secret), 0);
	fake_advance(lc, 1000);
	CHECK_EQ(c->fails, 1);
	CHECK_EQ(fake_complete_all(lc, &c->qp, IBV_WC_WR_FLUSH_ERR), 1);
	CHECK(saw(id, "revoking -> zeroing"));
	fake_advance(lc, 2000);
	CHECK_EQ(c->fails, 1);
	CHECK_EQ(stats().quarantined_bytes, 0);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE);
	stop();
}

/* Region mode: a key is an MR of its own; deregistering it proves it
 * dead at once, and a deregistration that fails quarantines. */
static void test_region_mode(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail, reg = fake_mrs_reg, dereg = fake_mrs_dereg;
	uint64_t id;

	start(RMP_KEYS_REGION);
	c = conn(ta, "one", 8);
	CHECK_EQ(try_grant(c, 4096, 0, RMP_ACC_ALL, 0, &detail, &l, &k), 0);
	CHECK_EQ(fake_mrs_reg, reg + 1);
	CHECK(k->mr != NULL && k->rkey == k->mr->rkey);
	CHECK_EQ(fake_nwrs, 0);
	id = l->id;
	fake_log_clear();
	CHECK_EQ(free_lease(c, id, l->secret), 0);
	CHECK_EQ(fake_mrs_dereg, dereg + 1);
	CHECK(saw(id, "granted -> revoking"));
	CHECK(saw(id, "revoking -> zeroing"));
	l = grant(c, 4096, 0, 0);
	id = l->id;
	fake_dereg_fail = EBUSY;
	CHECK_EQ(free_lease(c, id, l->secret), 0);
	fake_dereg_fail = 0;
	CHECK(saw(id, "revoking -> quarantined"));
	CHECK_EQ(fake_log_count("ibv_dereg_mr failed"), 1);
	CHECK_EQ(stats().quarantined_bytes, 4096);
	stop();
}

/* Pool mode: everyone gets the pool's key; nothing to revoke. */
static void test_pool_mode(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail;

	start(RMP_KEYS_POOL);
	c = conn(ta, "one", 8);
	CHECK_EQ(try_grant(c, 4096, 0, RMP_ACC_READ, 0, &detail, &l, &k), 0);
	CHECK_EQ(k->rkey, pool->chunks[0].mr[0]->rkey);
	CHECK_EQ(fake_nwrs, 0);
	fake_log_clear();
	CHECK_EQ(free_lease(c, l->id, l->secret), 0);
	CHECK_EQ(l->state, RMP_LEASE_ZEROING);
	stop();
}

/*
 * A holder may have only so many key work requests in flight: ending
 * more leases at once parks the rest of the invalidations, each posted
 * as a completion makes room. When the connection dies, the parked ones
 * settle with it and the posted ones on their flush.
 */
static void test_parked(void)
{
	struct fake_conn *c;
	struct rmp_lease *l[4];
	unsigned nwrs;

	for (unsigned round = 0; round < 2; round++) {
		start(RMP_KEYS_WINDOW);
		c = conn(ta, "one", 2);
		for (unsigned i = 0; i < 4; i++)
			l[i] = grant(c, 4096, 0, 0);
		nwrs = fake_nwrs;
		fake_log_clear();
		for (unsigned i = 0; i < 4; i++)
			CHECK_EQ(free_lease(c, l[i]->id, l[i]->secret), 0);
		CHECK_EQ(fake_count(nwrs, &c->qp, IBV_WR_LOCAL_INV), 2);
		CHECK_EQ(c->h.invs_waiting, 2);
		CHECK_EQ(stats().revoking, 4);
		if (round == 0) {
			fake_complete(lc, nwrs, IBV_WC_SUCCESS);
			CHECK(saw(l[0]->id, "revoking -> zeroing"));
			CHECK_EQ(fake_count(nwrs, &c->qp, IBV_WR_LOCAL_INV), 3);
			CHECK_EQ(c->h.invs_waiting, 1);
			CHECK_EQ(fake_complete_all(lc, &c->qp, IBV_WC_SUCCESS),
				 3);
		} else {
			fake_conn_close(lc, c);
			CHECK_EQ(fake_log_count("2 key invalidation(s) waiting "
						"for room settled"), 1);
			CHECK_EQ(c->h.invs_waiting, 0);
			CHECK(saw(l[2]->id, "revoking -> zeroing"));
			CHECK(saw(l[3]->id, "revoking -> zeroing"));
			CHECK_EQ(l[0]->state, RMP_LEASE_REVOKING);
			CHECK(!rmp_holder_idle(&c->h));
			CHECK_EQ(fake_complete_all(lc, &c->qp,
						   IBV_WC_WR_FLUSH_ERR), 2);
		}
		CHECK_EQ(fake_count(nwrs, &c->qp, IBV_WR_LOCAL_INV),
			 round == 0 ? 4 : 2);
		for (unsigned i = 0; i < 4; i++)
			CHECK_EQ(l[i]->state, RMP_LEASE_ZEROING);
		CHECK(rmp_holder_idle(&c->h));
		CHECK_EQ(c->fails, 0);
		fake_advance(lc, GRACE);
		CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE);
		CHECK_EQ(stats().quarantined_bytes, 0);
		stop();
	}
}

/*
 * The connection dies while its key is being revoked: the lease waits
 * for the flush, then is zeroed (no quarantine: a flushed LOCAL_INV on a
 * dead QP proves the window dead by deallocating it). A bind still in
 * flight when it dies: the key settles on the bind's flush, and the
 * lease, not ephemeral, lives on keyless.
 */
static void test_detach_during_revoke(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail, dealloced;
	uint64_t id;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l = grant(c, 4096, 0, 0);
	id = l->id;
	fake_log_clear();
	CHECK_EQ(free_lease(c, id, l->secret), 0);
	fake_conn_close(lc, c);
	CHECK_EQ(l->state, RMP_LEASE_REVOKING);
	CHECK(!rmp_holder_idle(&c->h));
	dealloced = fake_mws_dealloced;
	CHECK_EQ(fake_complete_all(lc, &c->qp, IBV_WC_WR_FLUSH_ERR), 1);
	CHECK_EQ(fake_mws_dealloced, dealloced + 1);
	CHECK(saw(id, "revoking -> zeroing"));
	CHECK(rmp_holder_idle(&c->h));
	CHECK_EQ(c->fails, 0);

	c = conn(ta, "two", 8);
	CHECK_EQ(try_grant(c, 4096, 0, RMP_ACC_ALL, 0, &detail, &l, &k), 0);
	id = l->id;
	fake_conn_close(lc, c);
	CHECK_EQ(l->nkeys, 0);
	CHECK_EQ(l->keys_unsettled, 1);
	CHECK(!rmp_holder_idle(&c->h));
	CHECK_EQ(fake_complete_all(lc, &c->qp, IBV_WC_WR_FLUSH_ERR), 1);
	CHECK_EQ(l->keys_unsettled, 0);
	CHECK(!l->tainted);
	CHECK(rmp_holder_idle(&c->h));
	fake_log_clear();
	CHECK_EQ(rmp_lifecycle_revoke(lc, id, "admin"), 0);
	CHECK(saw(id, "revoking -> zeroing"));
	stop();
}

/* ------------------------------------------------------------- fences */

/* fence_heard -- the upcall came for fence (of c's ATTACH) exactly once,
 * as the last one, with status. */
static bool fence_heard(const struct fake_conn *c, uint64_t fence,
			int status)
{
	return nfenced > 0 && fenced[nfenced - 1].h == &c->h &&
	       fenced[nfenced - 1].done.fence == fence &&
	       fenced[nfenced - 1].done.status == status;
}

/*
 * An exclusive ATTACH in window mode is answered only once every key it
 * revoked is proven dead: the upcall comes after the last LOCAL_INV's
 * completion, from the loop (never within the completion), once. A
 * victim whose key work requests are at their bound has its LOCAL_INV
 * parked: the fence waits for it to be posted and to complete. The
 * answer describes the taker's key as it is then. A second exclusive
 * ATTACH while the first waits waits for the same keys.
 */
static void test_fence_waits(void)
{
	struct fake_conn *c1, *c2, *c3, *t;
	struct rmp_key *k, *kt;
	struct rmp_lease *l;
	unsigned detail, nwrs;
	uint64_t fence, again;
	int bind2, inv1, inv3, inv2;

	start(RMP_KEYS_WINDOW);
	c1 = conn(ta, "one", 8);
	c2 = conn(ta, "two", 1);
	c3 = conn(ta, "three", 8);
	t = conn(ta, "taker", 8);
	l = grant(c1, 4096, 0, 0);
	CHECK_EQ(attach(c3, l, 0, 0, &detail, &k), 0);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	/* c2's bind stays due: its one key work request is in flight. */
	CHECK_EQ(attach(c2, l, 0, 0, &detail, &k), 0);
	bind2 = fake_last(&c2->qp, IBV_WR_BIND_MW);
	CHECK_EQ(last_fence, 0); /* not exclusive: answered at once */
	nwrs = fake_nwrs;
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &kt), 0);
	fence = last_fence;
	CHECK(fence != 0);
	CHECK_EQ(fake_count(nwrs, &c2->qp, IBV_WR_LOCAL_INV), 0);
	CHECK_EQ(c2->h.invs_waiting, 1);
	inv1 = fake_last(&c1->qp, IBV_WR_LOCAL_INV);
	inv3 = fake_last(&c3->qp, IBV_WR_LOCAL_INV);
	CHECK(inv1 >= (int)nwrs && inv3 >= (int)nwrs);
	CHECK_EQ(l->nkeys, 1);
	CHECK_EQ(fake_log_count("revoked=3"), 1);
	/* The taker's bind completes; nothing is due to it yet. */
	fake_complete(lc, (unsigned)fake_last(&t->qp, IBV_WR_BIND_MW),
		      IBV_WC_SUCCESS);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0);
	/* Again, while it waits: the same keys are awaited. */
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	again = last_fence;
	CHECK(again != 0 && again != fence && k == kt);
	fake_complete(lc, (unsigned)inv1, IBV_WC_SUCCESS);
	fake_complete(lc, (unsigned)inv3, IBV_WC_SUCCESS);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0); /* the parked one */
	fake_complete(lc, (unsigned)bind2, IBV_WC_SUCCESS);
	inv2 = fake_last(&c2->qp, IBV_WR_LOCAL_INV);
	CHECK(inv2 > bind2);
	CHECK_EQ(c2->h.invs_waiting, 0);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0);
	fake_advance(lc, 500);
	fake_complete(lc, (unsigned)inv2, IBV_WC_SUCCESS);
	CHECK_EQ(nfenced, 0); /* not from within the completion */
	CHECK(event_pending(lc->fence_ev, EV_TIMEOUT, NULL));
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 2);
	CHECK(fenced[0].h == &t->h && fenced[0].done.fence == fence);
	CHECK(fence_heard(t, again, 0));
	CHECK_EQ(fenced[0].done.status, 0);
	CHECK_EQ(fenced[0].done.d.id, l->id);
	CHECK_EQ(fenced[0].done.d.rkey, kt->rkey);
	CHECK_EQ(fenced[0].done.d.holders, 1);
	/* The time left as of the answer, not of the ATTACH. */
	CHECK_EQ(fenced[0].done.d.ttl_ms, l->deadline_ms - fake_now);
	CHECK_EQ(l->state, RMP_LEASE_GRANTED);
	CHECK_EQ(c1->fails + c2->fails + c3->fails, 0);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 2);
	/* Nothing left to wait for: answered at once. */
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	CHECK_EQ(last_fence, 0);
	stop();
	CHECK_EQ(nfenced, 2);
}

/*
 * The taker's connection closes while its fence waits: no upcall names
 * it, ever. The lease ends while a fence waits (FREE, expiry, the
 * operator): the fence is decided at once, with what a new ATTACH would
 * hear.
 */
static void test_fence_taker_or_lease_gone(void)
{
	static const char *const ends[] = { "free", "expiry", "operator" };
	struct fake_conn *v, *t, *o;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail;
	uint64_t fence;

	start(RMP_KEYS_WINDOW);
	v = conn(ta, "victim", 8);
	t = conn(ta, "taker", 8);
	l = grant(v, 4096, 0, 0);
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	CHECK(last_fence != 0);
	fake_conn_close(lc, t);
	fake_complete_all(lc, &t->qp, IBV_WC_WR_FLUSH_ERR);
	fake_complete_all(lc, &v->qp, IBV_WC_SUCCESS);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0);
	CHECK(rmp_holder_idle(&t->h));
	stop();

	/* (The victim's invalidation must not time out first.) */
	cfg.server.revoke_timeout_ms = 60000;
	for (unsigned i = 0; i < RMP_ARRAY_SIZE(ends); i++) {
		start(RMP_KEYS_WINDOW);
		v = conn(ta, "victim", 8);
		t = conn(ta, "taker", 8);
		o = conn(ta, "other", 8);
		l = grant(v, 4096, 5, 0);
		CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k),
			 0);
		fence = last_fence;
		CHECK(fence != 0);
		if (i == 0)
			CHECK_EQ(free_lease(o, l->id, l->secret), 0);
		else if (i == 1)
			fake_advance(lc, 5000 + cfg.lease.expiry_tick_ms);
		else
			CHECK_EQ(rmp_lifecycle_revoke(lc, l->id, "admin"), 0);
		CHECK_EQ(l->state, RMP_LEASE_REVOKING);
		fake_advance(lc, 0);
		CHECK_EQ(nfenced, 1);
		CHECK(fence_heard(t, fence, i == 0 ? -ENOENT : -EKEYEXPIRED));
		CHECK_EQ(fenced[0].done.d.rkey, 0);
		/* The victim's invalidation completes later: no second word. */
		fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
		fake_advance(lc, 0);
		CHECK_EQ(nfenced, 1);
		stop();
	}
	cfg.server.revoke_timeout_ms = 1000;
}

/*
 * The victim's connection dies while the fence waits: a parked
 * invalidation settles with it (the fence is decided at the close), a
 * posted one on its flush. No fence waits past revoke_timeout for a
 * victim that does nothing: its QP is killed then and the flush proves
 * its window dead. If even that brings no completion, the key is
 * unproven: the taker hears -EIO, and so does every later exclusive
 * ATTACH of that lease, at once.
 */
static void test_fence_victim_dies(void)
{
	struct fake_conn *v, *t, *w;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail, nkeys, nwrs;
	uint64_t fence;

	/* Parked (another lease's bind takes its one key work request),
	 * then its connection closes: settled at the close. */
	start(RMP_KEYS_WINDOW);
	v = conn(ta, "victim", 1);
	t = conn(ta, "taker", 8);
	l = grant(t, 4096, 0, 0);
	CHECK_EQ(attach(v, l, 0, 0, &detail, &k), 0);
	fake_complete_all(lc, &v->qp, IBV_WC_SUCCESS);
	CHECK_EQ(try_grant(v, 4096, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 0); /* its bind stays due */
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	fence = last_fence;
	CHECK(fence != 0);
	CHECK_EQ(v->h.invs_waiting, 1);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0);
	fake_conn_close(lc, v);
	fake_advance(lc, 0);
	CHECK(fence_heard(t, fence, 0));
	fake_complete_all(lc, &v->qp, IBV_WC_WR_FLUSH_ERR);
	CHECK(rmp_holder_idle(&v->h));
	stop();

	/* Posted, then its connection closes: decided on the flush. */
	start(RMP_KEYS_WINDOW);
	v = conn(ta, "victim", 8);
	t = conn(ta, "taker", 8);
	l = grant(v, 4096, 0, 0);
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	fence = last_fence;
	fake_conn_close(lc, v);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0);
	CHECK_EQ(fake_complete_all(lc, &v->qp, IBV_WC_WR_FLUSH_ERR), 1);
	fake_advance(lc, 0);
	CHECK(fence_heard(t, fence, 0));
	stop();

	/* A victim that does nothing: the revoke timeout kills it. */
	start(RMP_KEYS_WINDOW);
	v = conn(ta, "victim", 8);
	t = conn(ta, "taker", 8);
	w = conn(ta, "later", 8);
	l = grant(v, 4096, 0, 0);
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	fence = last_fence;
	fake_advance(lc, 999);
	CHECK_EQ(nfenced, 0);
	fake_advance(lc, 1);
	CHECK_EQ(v->fails, 1);
	CHECK_STR(v->why, "a key revocation timed out");
	CHECK_EQ(nfenced, 0);
	CHECK_EQ(fake_complete_all(lc, &v->qp, IBV_WC_WR_FLUSH_ERR), 1);
	fake_advance(lc, 0);
	CHECK(fence_heard(t, fence, 0));
	fake_conn_close(lc, v);
	stop();

	/* Not even a flush: unproven, -EIO, and the lease cannot be fenced
	 * any more. */
	start(RMP_KEYS_WINDOW);
	v = conn(ta, "victim", 8);
	t = conn(ta, "taker", 8);
	w = conn(ta, "later", 8);
	l = grant(v, 4096, 0, 0);
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	fence = last_fence;
	fake_advance(lc, 1000);
	CHECK_EQ(v->fails, 1);
	fake_advance(lc, 999);
	CHECK_EQ(nfenced, 0);
	fake_advance(lc, 1);
	CHECK(l->tainted);
	CHECK(fence_heard(t, fence, -EIO));
	CHECK_EQ(fenced[0].done.d.rkey, 0);
	/* refused before any key moves: no revocation, no bind, and the
	 * keys held stay where they are */
	nkeys = l->nkeys;
	nwrs = fake_nwrs;
	CHECK_EQ(attach(w, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), -EIO);
	CHECK_EQ(last_fence, 0);
	CHECK_EQ(fake_nwrs, nwrs);
	CHECK_EQ(l->nkeys, nkeys);
	CHECK(lc_key_of(l, &t->h) != NULL);
	CHECK_EQ(l->state, RMP_LEASE_GRANTED);
	fake_conn_close(lc, v);
	fake_complete_all(lc, &v->qp, IBV_WC_WR_FLUSH_ERR);
	stop();
}

/*
 * Region mode: a key is dead once deregistered, which the revocation
 * does at once: no fence waits, the answer is immediate. A
 * deregistration that fails makes the takeover fail with -EIO at once.
 */
static void test_fence_region(void)
{
	struct fake_conn *v, *t;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail;

	start(RMP_KEYS_REGION);
	v = conn(ta, "victim", 8);
	t = conn(ta, "taker", 8);
	l = grant(v, 4096, 0, 0);
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	CHECK_EQ(last_fence, 0);
	CHECK_EQ(l->keys_unsettled, 1);
	l = grant(v, 4096, 0, 0);
	fake_dereg_fail = EBUSY;
	CHECK_EQ(attach(t, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), -EIO);
	fake_dereg_fail = 0;
	CHECK_EQ(last_fence, 0);
	fake_advance(lc, 0);
	CHECK_EQ(nfenced, 0);
	stop();
}

/* ----------------------------------------------------- revoked by others */

/*
 * A holder counts the keys revoked by another's doing: a takeover,
 * another holder's FREE, the operator, the close of an ephemeral lease's
 * owner. Not its own requests (its FREE, an ATTACH with other access),
 * not a deadline, not its own close.
 */
static void test_revoked_by_others(void)
{
	struct fake_conn *a, *b;
	struct rmp_lease *l;
	struct rmp_key *k;
	unsigned detail;
	uint64_t id;

	start(RMP_KEYS_REGION); /* keys settle at once: no fences to wait */
	a = conn(ta, "a", 8);
	b = conn(ta, "b", 8);
	/* a's own: its FREE, its new access, the deadline. */
	l = grant(a, 4096, 0, 0);
	CHECK_EQ(attach(a, l, RMP_ACC_READ, 0, &detail, &k), 0);
	CHECK_EQ(free_lease(a, l->id, l->secret), 0);
	l = grant(a, 4096, 1, 0);
	id = l->id;
	fake_advance(lc, 1000 + cfg.lease.expiry_tick_ms);
	CHECK(rmp_lifecycle_find(lc, id) == NULL); /* expired */
	CHECK_EQ(a->h.revoked_by_others, 0);
	/* b's doing: a takeover, a FREE. */
	l = grant(a, 4096, 0, 0);
	CHECK_EQ(attach(b, l, 0, RMP_ATTACH_F_EXCLUSIVE, &detail, &k), 0);
	CHECK_EQ(a->h.revoked_by_others, 1);
	CHECK_EQ(attach(a, l, 0, 0, &detail, &k), 0);
	CHECK_EQ(free_lease(b, l->id, l->secret), 0);
	CHECK_EQ(a->h.revoked_by_others, 2);
	CHECK_EQ(b->h.revoked_by_others, 0);
	/* The operator's. */
	l = grant(a, 4096, 0, 0);
	CHECK_EQ(rmp_lifecycle_revoke(lc, l->id, "admin"), 0);
	CHECK_EQ(a->h.revoked_by_others, 3);
	/* The owner of an ephemeral lease closes: b's key goes with it. */
	l = grant(a, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	CHECK_EQ(attach(b, l, 0, 0, &detail, &k), 0);
	fake_conn_close(lc, a);
	CHECK_EQ(b->h.revoked_by_others, 1);
	CHECK_EQ(a->h.revoked_by_others, 3);
	stop();
}

/*
 * An ephemeral lease whose owner's connection failed on a revoked key
 * (rmp_lifecycle_detach with grace) does not end: it waits
 * EPHEMERAL_GRACE_MS for an ATTACH of its tenant, which adopts it (it
 * ends with the adopter's connection from then on); nobody comes: it
 * ends then. Its other leases live on as always; a FREE while it waits
 * ends it once. Without the grace it ends at once, as before.
 */
static void test_ephemeral_grace(void)
{
	struct fake_conn *a, *a2, *a3, *o;
	struct rmp_lease *e, *p, *f;
	struct rmp_key *k;
	unsigned detail;
	uint64_t id;

	start(RMP_KEYS_WINDOW);
	a = conn(ta, "app", 8);
	o = conn(ta, "other", 8);
	e = grant(a, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	p = grant(a, 4096, 0, 0);
	f = grant(a, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	fake_log_clear();
	fake_conn_lost(lc, a);
	fake_complete_all(lc, &a->qp, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(e->state, RMP_LEASE_GRANTED);
	CHECK_EQ(f->state, RMP_LEASE_GRANTED);
	CHECK_EQ(p->state, RMP_LEASE_GRANTED);
	CHECK(e->owner_holder == NULL && e->orphan_until_ms != 0);
	CHECK_EQ(fake_log_count("audit: orphan tenant=a client=app"), 2);
	CHECK_EQ(fake_log_count("why=ephemeral"), 0);
	/* The client comes back on a new connection: adopted. */
	a2 = conn(ta, "app", 8);
	fake_advance(lc, EPHEMERAL_GRACE_MS - 1);
	CHECK_EQ(attach(a2, e, 0, 0, &detail, &k), 0);
	CHECK(e->owner_holder == &a2->h);
	CHECK_EQ(e->orphan_until_ms, 0);
	CHECK_EQ(fake_log_count("audit: adopt tenant=a client=app"), 1);
	/* f: freed while it waits (once); then nothing fires for it. */
	id = f->id;
	CHECK_EQ(free_lease(o, f->id, f->secret), 0);
	CHECK_EQ(f->state, RMP_LEASE_ZEROING); /* no key left to revoke */
	fake_advance(lc, 1);
	CHECK(rmp_lifecycle_find(lc, id) == NULL);
	CHECK_EQ(fake_log_count("why=ephemeral-not-adopted"), 0);
	CHECK_EQ(e->state, RMP_LEASE_GRANTED);
	/* The adopter's connection closes (not on a revoked key): e ends. */
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_conn_close(lc, a2);
	CHECK_EQ(e->state, RMP_LEASE_ZEROING);
	CHECK_EQ(fake_log_count("why=ephemeral-connection-closed"), 1);

	/* Nobody comes: it ends at the end of the grace. */
	a3 = conn(ta, "app", 8);
	e = grant(a3, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	id = e->id;
	fake_conn_lost(lc, a3);
	fake_complete_all(lc, &a3->qp, IBV_WC_WR_FLUSH_ERR);
	fake_advance(lc, EPHEMERAL_GRACE_MS - 1);
	CHECK(rmp_lifecycle_find(lc, id) == e);
	fake_advance(lc, 1);
	CHECK(rmp_lifecycle_find(lc, id) == NULL);
	CHECK_EQ(fake_log_count("why=ephemeral-not-adopted"), 1);
	CHECK_EQ(p->state, RMP_LEASE_GRANTED);
	CHECK(!event_pending(lc->orphan_ev, EV_TIMEOUT, NULL));
	stop();
}

/* The operator's calls: revoke (later requests hear "expired"), extend,
 * find, foreach, end_all. */
static void count_lease(const struct rmp_lease *l, void *arg)
{
	(void)l;
	++*(unsigned *)arg;
}

static void test_operator(void)
{
	struct fake_conn *c;
	struct rmp_lease *l, *l2;
	uint64_t ttl;
	unsigned n = 0;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l = grant(c, 4096, 0, 0);
	l2 = grant(c, 4096, 0, 0);
	grant(c, 4096, 0, 0);
	CHECK(!rmp_lifecycle_persistent(lc));
	rmp_lifecycle_foreach(lc, count_lease, &n);
	CHECK_EQ(n, 3);
	CHECK(rmp_lifecycle_find(lc, l->id) == l);
	CHECK_EQ(rmp_lifecycle_extend(lc, l->id ^ 1, 5000, "admin"), -ENOENT);
	CHECK_EQ(rmp_lifecycle_extend(lc, l->id, 0, "admin"), -EINVAL);
	CHECK_EQ(rmp_lifecycle_extend(lc, l->id, 86400001, "admin"), -EINVAL);
	CHECK_EQ(rmp_lifecycle_extend(lc, l->id, 5000, "admin"), 0);
	CHECK_EQ(l->deadline_ms, fake_now + 5000);
	CHECK_EQ(l->ttl_ms, 5000);
	CHECK_EQ(fake_log_count("audit: extend tenant=a"), 1);
	CHECK_EQ(rmp_lifecycle_revoke(lc, l->id ^ 1, "admin"), -ENOENT);
	fake_log_clear();
	CHECK_EQ(rmp_lifecycle_revoke(lc, l->id, "admin"), 0);
	CHECK(saw(l->id, "granted -> revoking"));
	CHECK_EQ(fake_log_count("by=\"admin\""), 1);
	CHECK_EQ(stats().revocations, 1);
	CHECK_EQ(renew(c, l->id, l->secret, 0, &ttl), -EKEYEXPIRED);
	CHECK_EQ(rmp_lifecycle_revoke(lc, l->id, "admin"), -ENOENT);
	fake_log_clear();
	rmp_lifecycle_end_all(lc, "shutdown");
	CHECK_EQ(fake_log_count("revoked 2 lease(s): shutdown"), 1);
	CHECK_EQ(l2->state, RMP_LEASE_REVOKING);
	CHECK_EQ(stats().leases, 0);
	CHECK(!event_pending(lc->expiry_ev, EV_TIMEOUT, NULL));
	stop();
}

/*
 * A lease never goes back: once ending, every request and operator call
 * for it is refused and nothing about it changes; a quarantined one
 * stays so.
 */
static void test_no_way_back(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	struct rmp_key *k;
	uint64_t ttl, id, secret;
	unsigned detail, nwrs;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l = grant(c, 4096, 0, 0);
	id = l->id;
	secret = l->secret;
	CHECK_EQ(free_lease(c, id, secret), 0);
	nwrs = fake_nwrs;
	CHECK_EQ(free_lease(c, id, secret), -ENOENT);
	CHECK_EQ(renew(c, id, secret, 0, &ttl), -ENOENT);
	CHECK_EQ(attach(c, l, 0, 0, &detail, &k), -ENOENT);
	CHECK_EQ(rmp_lifecycle_revoke(lc, id, "admin"), -ENOENT);
	CHECK_EQ(rmp_lifecycle_extend(lc, id, 5000, "admin"), -ENOENT);
	CHECK_EQ(l->state, RMP_LEASE_REVOKING);
	CHECK_EQ(fake_nwrs, nwrs);
	CHECK_EQ(stats().frees, 1);
	CHECK_EQ(stats().ending, 1);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	CHECK_EQ(l->state, RMP_LEASE_ZEROING);
	CHECK_EQ(attach(c, l, 0, 0, &detail, &k), -ENOENT);
	CHECK_EQ(c->h.nkeys, 0);
	stop();
}

/* Extents over ZERO_INLINE_MAX are zeroed off the loop: the lease stays
 * ZEROING, its bytes out of the pool, until the zeroer reports; when it
 * cannot take the job, the loop zeroes at once. */
static void test_large_zeroing(void)
{
	struct fake_conn *c;
	struct rmp_lease *l;
	uint64_t off;

	start(RMP_KEYS_WINDOW);
	c = conn(ta, "one", 8);
	l = grant(c, 1 << 20, 0, 0);
	off = l->ext.offset;
	memset(pool->base + off, 0x5a, 1 << 20);
	CHECK_EQ(free_lease(c, l->id, l->secret), 0);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_advance(lc, GRACE);
	CHECK_EQ(fake_zero_jobs, 1);
	CHECK_EQ(l->state, RMP_LEASE_ZEROING);
	CHECK_EQ(stats().zeroing_bytes, 1 << 20);
	CHECK_EQ(ta->ending_bytes, 1 << 20);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE - (1 << 20));
	fake_zero_run();
	CHECK_EQ(stats().zeroing_bytes, 0);
	CHECK_EQ(ta->ending_bytes, 0);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE);
	CHECK(all_bytes(off, 1 << 20, 0));

	fake_zero_fail = ENOMEM;
	l = grant(c, 1 << 20, 0, 0);
	CHECK_EQ(free_lease(c, l->id, l->secret), 0);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_advance(lc, GRACE);
	fake_zero_fail = 0;
	CHECK_EQ(fake_zero_jobs, 0);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE);
	/* A job still running at the stop is finished by it (stop()). */
	l = grant(c, 1 << 20, 0, 0);
	CHECK_EQ(free_lease(c, l->id, l->secret), 0);
	fake_complete_all(lc, NULL, IBV_WC_SUCCESS);
	fake_advance(lc, GRACE);
	CHECK_EQ(fake_zero_jobs, 1);
	stop();
}

/* A full journal refuses the ALLOC as the server's lease limit does;
 * an ephemeral lease, which is not journaled, is still granted. */
static void test_journal_full(void)
{
	size_t len = rmp_journal_bytes(2);
	void *mem = calloc(1, len);
	struct rmp_journal *j;
	struct fake_conn *c;
	struct rmp_lease *l;
	unsigned detail;
	bool found;

	CHECK_EQ(rmp_journal_open(&j, mem, len, POOL_SIZE, &found, NULL, 0),
		 0);
	start_with(RMP_KEYS_WINDOW, j, NULL);
	CHECK(rmp_lifecycle_persistent(lc));
	c = conn(ta, "one", 8);
	l = grant(c, 4096, 0, 0);
	grant(c, 4096, 0, 0);
	CHECK_EQ(try_grant(c, 4096, 0, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ENOSPC);
	CHECK_EQ(detail, RMP_DETAIL_SERVER_LEASES);
	CHECK_EQ(fake_log_count("lease journal full"), 1);
	CHECK_NOTHING_CHANGED(ta, 2, 2 * 4096, 2);
	grant(c, 4096, 0, RMP_LEASE_F_EPHEMERAL);
	CHECK_EQ(free_lease(c, l->id, l->secret), 0);
	grant(c, 4096, 0, 0);
	stop();
	rmp_journal_close(j);
	free(mem);
}

/* The journal record of a live lease, written by hand. */
static void put_record(struct rmp_journal *j, uint64_t id, uint64_t off,
		       const char *tenant)
{
	struct rmp_journal_lease r = {
		.id = id, .secret = 42, .offset = off, .length = 4096,
		.deadline_ms = fake_now + 60000, .ttl_ms = 60000,
		.access = RMP_ACC_ALL,
	};
	uint32_t slot = 0;

	snprintf(r.tenant, sizeof(r.tenant), "%s", tenant);
	snprintf(r.owner, sizeof(r.owner), "by-hand");
	CHECK_EQ(rmp_journal_put(j, &r, &slot), 0);
	memset(pool->base + off, 0x77, 4096);
}

/*
 * A restart: the journal's live leases come back with their ids,
 * secrets, extents and bytes, charged to their tenant, keyless until a
 * holder attaches; an auto-renew one gets one more ttl. Expired,
 * ephemeral and freed leases, a record of a tenant no longer configured
 * and one whose id is taken do not come back, and every byte no
 * recovered lease holds is zeroed and free.
 */
static void test_recover(void)
{
	size_t len = rmp_journal_bytes(16);
	void *jmem = calloc(1, len);
	struct rmp_journal *j;
	struct fake_conn *c;
	struct rmp_lease *l[5], *r;
	struct {
		uint64_t id, secret, offset, length, deadline;
	} was[5]; /* what the lease was before the restart */
	struct rmp_journal_stats js;
	struct rmp_key *k;
	unsigned detail;
	uint8_t *mem;
	bool found;

	CHECK_EQ(rmp_journal_open(&j, jmem, len, POOL_SIZE, &found, NULL, 0),
		 0);
	CHECK(!found);
	start_with(RMP_KEYS_WINDOW, j, NULL);
	c = conn(ta, "one", 8);
	l[0] = grant(c, 8192, 60, 0);
	l[1] = grant(c, 4096, 10, RMP_LEASE_F_AUTO_RENEW);
	l[2] = grant(c, 4096, 60, RMP_LEASE_F_EPHEMERAL);
	l[3] = grant(c, 4096, 1, 0);
	l[4] = grant(c, 4096, 60, 0);
	for (unsigned i = 0; i < 5; i++) {
		was[i].id = l[i]->id;
		was[i].secret = l[i]->secret;
		was[i].offset = l[i]->ext.offset;
		was[i].length = l[i]->ext.length;
		was[i].deadline = l[i]->deadline_ms;
		memset(pool->base + was[i].offset, 0xa0 + i, was[i].length);
	}
	CHECK_EQ(free_lease(c, was[4].id, was[4].secret), 0);
	memset(pool->base + POOL_SIZE - 4096, 0xee, 4096); /* stale bytes */
	put_record(j, 5, 2 << 20, "gone");
	put_record(j, was[0].id, 3 << 20, "a"); /* l[0]'s id, again */
	mem = crash();
	rmp_journal_close(j);

	fake_now += 2000; /* l[3] expired meanwhile */
	CHECK_EQ(rmp_journal_open(&j, jmem, len, POOL_SIZE, &found, NULL, 0),
		 0);
	CHECK(found);
	start_with(RMP_KEYS_WINDOW, j, mem);
	pool->journal_found = found;
	pool->adopted = true;
	CHECK_EQ(rmp_lifecycle_recover(lc), 0);
	CHECK_EQ(fake_log_count("recovered 2 lease(s), 12288 bytes"), 1);
	CHECK_EQ(fake_log_count("1 expired"), 1);
	CHECK_EQ(fake_log_count("1 of unknown tenants, 1 refused"), 1);
	r = (struct rmp_lease *)rmp_lifecycle_find(lc, was[0].id);
	CHECK(r != NULL);
	if (!r)
		abort();
	CHECK_EQ(r->secret, was[0].secret);
	CHECK_EQ(r->ext.offset, was[0].offset);
	CHECK_EQ(r->ext.length, 8192);
	CHECK_EQ(r->deadline_ms, was[0].deadline);
	CHECK_EQ(r->state, RMP_LEASE_GRANTED);
	CHECK(r->tenant == ta);
	CHECK_EQ(r->nkeys, 0);
	CHECK_STR(r->owner, "one");
	r = (struct rmp_lease *)rmp_lifecycle_find(lc, was[1].id);
	CHECK(r != NULL && r->deadline_ms == fake_now + 10000);
	for (unsigned i = 2; i < 5; i++)
		CHECK(rmp_lifecycle_find(lc, was[i].id) == NULL);
	CHECK(rmp_lifecycle_find(lc, 5) == NULL);
	CHECK_EQ(stats().leases, 2);
	CHECK_EQ(stats().leased_bytes, 12288);
	CHECK_EQ(ta->bytes, 12288);
	CHECK_EQ(ta->leases, 2);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE - 12288);
	CHECK(all_bytes(was[0].offset, 8192, 0xa0));
	CHECK(all_bytes(was[1].offset, 4096, 0xa1));
	for (unsigned i = 2; i < 5; i++)
		CHECK(all_bytes(was[i].offset, 4096, 0));
	CHECK(all_bytes(2 << 20, 4096, 0));
	CHECK(all_bytes(3 << 20, 4096, 0));
	CHECK(all_bytes(POOL_SIZE - 4096, 4096, 0));
	rmp_journal_stats(j, &js);
	CHECK_EQ(js.used, 2);

	/* Its holder attaches again by token; a FREE drops the record. */
	c = conn(ta, "one-again", 8);
	r = (struct rmp_lease *)rmp_lifecycle_find(lc, was[0].id);
	CHECK_EQ(attach(c, r, 0, 0, &detail, &k), 0);
	CHECK_EQ(r->nkeys, 1);
	CHECK_EQ(free_lease(c, was[0].id, was[0].secret), 0);
	rmp_journal_stats(j, &js);
	CHECK_EQ(js.used, 1);
	stop();
	rmp_journal_close(j);
	free(jmem);
}

/*
 * Two devices, a pool each: an ALLOC lands in the pool of the device it
 * came in on; when that one is full, in the other only if the request
 * allows it (SPILL), and then the reply says so (SPILLED). Any device's
 * holder reaches any pool's lease: its key binds to that pool's MR on the
 * holder's device, at the pool's address.
 */
static void test_two_pools(void)
{
	struct rmp_pool *p1 = fake_pool_new(POOL_SIZE, 1, NULL);
	struct rmp_lease *l0, *l1, *ls;
	struct fake_conn *c0, *c1;
	struct rmp_lease_desc d;
	struct ibv_send_wr *w;
	struct rmp_key *k;
	unsigned detail;

	start(RMP_KEYS_WINDOW);
	lc->pools[1] = p1;
	lc->npools = 2;
	p1->iova = 0x6b0000000000ull;
	c0 = conn(ta, "rail0", 8);
	c1 = conn(ta, "rail1", 8);
	c1->h.dev = 1;

	l1 = grant(c1, 4096, 10, 0);
	CHECK(l1->pool == p1);
	CHECK_EQ(l1->flags, 0);
	w = &fake_wrs[fake_nwrs - 1].wr;
	CHECK(w->bind_mw.bind_info.mr == p1->chunks[0].mr[1]);
	CHECK_EQ(w->bind_mw.bind_info.addr, p1->iova + l1->ext.offset);

	/* Device 0's pool full: no spill unless asked for. */
	l0 = grant(c0, POOL_SIZE, 10, 0);
	CHECK(l0->pool == pool);
	CHECK_EQ(try_grant(c0, 4096, 10, RMP_ACC_ALL, 0, &detail, NULL, NULL),
		 -ENOSPC);
	CHECK_EQ(try_grant(c0, 4096, 10, RMP_ACC_ALL, RMP_LEASE_F_SPILL,
			   &detail, &ls, &k), 0);
	CHECK(ls->pool == p1);
	CHECK_EQ(ls->flags, RMP_LEASE_F_SPILLED);
	/* Its key through device 0: p1's MR on device 0. */
	w = &fake_wrs[fake_nwrs - 1].wr;
	CHECK(w->bind_mw.bind_info.mr == p1->chunks[0].mr[0]);
	fake_complete(lc, fake_nwrs - 1, IBV_WC_SUCCESS);
	/* SPILLED is the ALLOC reply's alone (request.c): an ATTACH's
	 * reply may go to a client older than the flag. */
	rmp_lifecycle_describe(lc, ls, k, &d);
	CHECK_EQ(d.flags, 0);
	CHECK_EQ(d.addr, p1->iova + ls->ext.offset);
	/* Both pools full now but for what ls and l1 left: nowhere. */
	CHECK_EQ(try_grant(c0, POOL_SIZE, 10, RMP_ACC_ALL, RMP_LEASE_F_SPILL,
			   &detail, NULL, NULL), -ENOSPC);

	/* Device 1's holder attaches to device 0's lease: p0's MR on 1. */
	CHECK_EQ(attach(c1, l0, 0, 0, &detail, &k), 0);
	w = &fake_wrs[fake_nwrs - 1].wr;
	CHECK_EQ(w->opcode, IBV_WR_BIND_MW);
	CHECK(w->bind_mw.bind_info.mr == pool->chunks[0].mr[1]);
	CHECK_EQ(w->bind_mw.bind_info.addr, pool->iova + l0->ext.offset);
	fake_complete(lc, fake_nwrs - 1, IBV_WC_SUCCESS);
	CHECK_EQ(l0->nkeys, 2);

	/* A FREE revokes the keys of both devices; every extent returns to
	 * its own pool. */
	CHECK_EQ(free_lease(c1, l0->id, l0->secret), 0);
	CHECK_EQ(free_lease(c0, ls->id, ls->secret), 0);
	CHECK_EQ(free_lease(c1, l1->id, l1->secret), 0);
	stop();
	CHECK_EQ(fake_pool_free_bytes(p1), POOL_SIZE);
	fake_pool_free(p1, false);
}

/*
 * A journal record checks out by its checksum, but the checksum proves
 * only that some process wrote it: a deadline far beyond what [lease]
 * ttl_max allows (a damaged record that still checks out, or a crafted
 * one) is cut to ttl_max from the recovery, and said so; a record within
 * it keeps its deadline.
 */
static void test_recover_far_deadline(void)
{
	size_t len = rmp_journal_bytes(4);
	void *jmem = calloc(1, len);
	struct rmp_journal_lease r = {
		.id = 11, .secret = 42, .offset = 0, .length = 4096,
		.deadline_ms = fake_now + 10 * 365 * 86400000ull,
		.ttl_ms = 60000, .access = RMP_ACC_ALL,
	};
	const struct rmp_lease *l;
	struct rmp_journal *j;
	uint32_t slot = 0;
	uint64_t ttl_max = cfg.lease.ttl_max_ms, fair;
	bool found;

	CHECK_EQ(rmp_journal_open(&j, jmem, len, POOL_SIZE, &found, NULL, 0),
		 0);
	snprintf(r.tenant, sizeof(r.tenant), "a");
	snprintf(r.owner, sizeof(r.owner), "far");
	CHECK_EQ(rmp_journal_put(j, &r, &slot), 0);
	r.id = 12;
	r.offset = 8192;
	fair = r.deadline_ms = fake_now + 30000;
	slot = 0;
	CHECK_EQ(rmp_journal_put(j, &r, &slot), 0);
	rmp_journal_close(j);
	CHECK_EQ(rmp_journal_open(&j, jmem, len, POOL_SIZE, &found, NULL, 0),
		 0);
	CHECK(found);
	start_with(RMP_KEYS_WINDOW, j, NULL);
	pool->journal_found = found;
	pool->adopted = true;
	CHECK_EQ(rmp_lifecycle_recover(lc), 0);
	CHECK_EQ(fake_log_count("recovered 2 lease(s)"), 1);
	l = rmp_lifecycle_find(lc, 11);
	CHECK(l != NULL);
	if (l) {
		printf("# far deadline recovered as now + %llu ms (ttl_max "
		       "%llu ms)\n",
		       (unsigned long long)(l->deadline_ms - fake_now),
		       (unsigned long long)ttl_max);
		CHECK_EQ(l->deadline_ms, fake_now + ttl_max);
	}
	CHECK_EQ(fake_log_count("deadline beyond [lease] ttl_max"), 1);
	l = rmp_lifecycle_find(lc, 12);
	CHECK(l != NULL && l->deadline_ms == fair);
	/* It expires then, as any lease. */
	fake_advance(lc, ttl_max + cfg.lease.expiry_tick_ms);
	CHECK(rmp_lifecycle_find(lc, 11) == NULL);
	stop();
	rmp_journal_close(j);
	free(jmem);
}

/* A restart without a journal's leases zeroes the earlier process's
 * bytes, all of them. */
static void test_recover_nothing(void)
{
	uint8_t *mem = aligned_alloc(4096, POOL_SIZE);

	if (!mem)
		abort();
	memset(mem, 0x33, POOL_SIZE);
	start_with(RMP_KEYS_WINDOW, NULL, mem);
	pool->adopted = true;
	CHECK_EQ(rmp_lifecycle_recover(lc), 0);
	CHECK(all_bytes(0, POOL_SIZE, 0));
	CHECK_EQ(fake_log_count("recovered 0 lease(s)"), 1);
	stop();
}

int main(void)
{
	make_config();
	test_grant_free();
	test_grant_refused();
	test_renew_and_expired();
	test_expiry();
	test_auto_renew();
	test_attach();
	test_ephemeral();
	test_quarantine();
	test_revoke_timeout_flush();
	test_region_mode();
	test_pool_mode();
	test_two_pools();
	test_parked();
	test_detach_during_revoke();
	test_fence_waits();
	test_fence_taker_or_lease_gone();
	test_fence_victim_dies();
	test_fence_region();
	test_revoked_by_others();
	test_ephemeral_grace();
	test_operator();
	test_no_way_back();
	test_large_zeroing();
	test_journal_full();
	test_recover();
	test_recover_nothing();
	test_recover_far_deadline();
	/* Every window allocated was deallocated, every region deregistered
	 * (but the two whose deregistration failed). */
	CHECK_EQ(fake_mws_dealloced, fake_mws_alloced);
	CHECK_EQ(fake_mrs_dereg + 2, fake_mrs_reg);
	rmp_tenants_free(tenants);
	return check_done();
}

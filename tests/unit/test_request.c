/* SPDX-License-Identifier: MIT */
/*
 * test_request.c -- one control request (daemon/request.c) from its wire
 * bytes to the reply's: each opcode's success and refusals, and
 * malformed messages, on the real lifecycle, key module, pool allocators
 * and tenants, with the world below faked (fake_daemon.h).
 *
 * Requests are built with common/proto.c's encoder, as a client sends
 * them; each reply is encoded and decoded again, as conn.c sends it and
 * a client reads it, and checked on the wire form: status, detail, the
 * echoed request id and opcode, the payload's fields. Also whether the
 * message counted against the client (rmp_request_handle's verdict).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "check.h"
#include "fake_daemon.h"
#include "lifecycle.h"
#include "request.h"
#include "tenant.h"

#define POOL_SIZE (4u << 20)

static struct rmp_config cfg;
static struct rmp_tenants *tenants;
static struct rmp_tenant *ta, *tb; /* "a": no limits; "b": 64K, 3 leases */
static struct rmp_pool *pool;
static struct event_base *base;
static struct rmp_request_ctx ctx;
static struct fake_conn conns[8];
static unsigned nconns;
static uint64_t next_req_id = 0x1000;
static bool counted; /* the last message counted against the client */
static uint64_t fence; /* the last message's reply waits for it (0: no) */

/* ------------------------------------------------------------ fixture */

static void start(void)
{
	struct rmp_lifecycle_params p = { 0 };
	unsigned why;

	rmp_config_defaults(&cfg);
	cfg.pool.size = POOL_SIZE;
	fake_add_tenant(&cfg, "a", 0, 0);
	fake_add_tenant(&cfg, "b", 64 << 10, 3);
	tenants = rmp_tenants_new(&cfg);
	ta = rmp_tenants_find(tenants, "a", &why);
	tb = rmp_tenants_find(tenants, "b", &why);
	pool = fake_pool_new(POOL_SIZE, 1, NULL);
	base = event_base_new();
	if (!tenants || !ta || !tb || !base)
		abort();
	p.base = base;
	p.pools = &pool;
	p.npools = 1;
	p.keys_mode = RMP_KEYS_WINDOW;
	p.cfg = &cfg;
	p.tenants = tenants;
	ctx.lc = rmp_lifecycle_new(&p);
	if (!ctx.lc)
		abort();
	ctx.pools[0] = pool;
	ctx.npools = 1;
	ctx.tenants = tenants;
	ctx.cfg = &cfg;
	ctx.keys_mode = RMP_KEYS_WINDOW;
	nconns = 0;
	fake_nwrs = 0;
	fake_log_clear();
}

/* stop -- end everything; every byte must be back, nothing due. */
static void stop(void)
{
	rmp_lifecycle_end_all(ctx.lc, "stop");
	fake_complete_all(ctx.lc, NULL, IBV_WC_SUCCESS);
	for (unsigned i = 0; i < nconns; i++)
		fake_conn_close(ctx.lc, &conns[i]);
	fake_complete_all(ctx.lc, NULL, IBV_WC_WR_FLUSH_ERR);
	fake_advance(ctx.lc, 1000);
	CHECK_EQ(fake_due(NULL), 0);
	rmp_lifecycle_free(ctx.lc);
	CHECK_EQ(fake_pool_free_bytes(pool), POOL_SIZE);
	for (unsigned i = 0; i < nconns; i++)
		fake_conn_free(&conns[i]);
	fake_pool_free(pool, false);
	event_base_free(base);
	rmp_tenants_free(tenants);
}

static struct fake_conn *conn(struct rmp_tenant *t, const char *name)
{
	struct fake_conn *c = &conns[nconns++];

	fake_conn_init(c, t, name, 64);
	return c;
}

/*
 * wire -- rep as the client reads it: encoded as conn.c sends it (it
 * must encode), decoded again. The header must answer req_id and opcode
 * (as given) and say it is a reply.
 */
static void wire(const struct rmp_msg *rep, uint64_t req_id, unsigned opcode,
		 struct rmp_msg *out)
{
	uint8_t buf[RMP_MSG_MAX];
	int n = rmp_msg_encode(buf, sizeof(buf), rep);

	CHECK(n >= RMP_MSG_HDR_LEN);
	memset(out, 0, sizeof(*out));
	if (n < RMP_MSG_HDR_LEN)
		return;
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, out), 0);
	if (out->hdr.status)
		CHECK_EQ(n, RMP_MSG_HDR_LEN); /* an error has no payload */
	CHECK(out->hdr.flags & RMP_MSG_F_REPLY);
	CHECK_EQ(out->hdr.req_id, req_id);
	CHECK_EQ(out->hdr.opcode, opcode);
}

/* ask_raw -- c sends len bytes of buf; the reply as read (answering
 * req_id and opcode). Returns its status. */
static int ask_raw(struct fake_conn *c, const uint8_t *buf, size_t len,
		   uint64_t req_id, unsigned opcode, struct rmp_msg *out)
{
	struct rmp_msg rep;

	counted = rmp_request_handle(&ctx, &c->h, buf, len, &rep, &fence);
	wire(&rep, req_id, opcode, out);
	return out->hdr.status;
}

/* encode -- m as a client sends it, with a fresh request id. */
static int encode(struct rmp_msg *m, uint8_t *buf)
{
	int n;

	m->hdr.req_id = next_req_id++;
	n = rmp_msg_encode(buf, RMP_MSG_MAX, m);
	if (n < 0)
		abort();
	return n;
}

/* ask -- c sends m; the reply as read. Returns its status. */
static int ask(struct fake_conn *c, struct rmp_msg *m, struct rmp_msg *out)
{
	uint8_t buf[RMP_MSG_MAX];
	int n = encode(m, buf);

	return ask_raw(c, buf, (size_t)n, m->hdr.req_id, m->hdr.opcode, out);
}

static struct rmp_msg msg(unsigned opcode)
{
	struct rmp_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.opcode = (uint8_t)opcode;
	return m;
}

static int alloc(struct fake_conn *c, uint64_t len, uint32_t ttl_s,
		 uint32_t access, uint32_t flags, struct rmp_msg *out)
{
	struct rmp_msg m = msg(RMP_OP_ALLOC);

	m.u.alloc.length = len;
	m.u.alloc.ttl_s = ttl_s;
	m.u.alloc.access = access;
	m.u.alloc.flags = flags;
	return ask(c, &m, out);
}

static int renew(struct fake_conn *c, uint64_t id, uint64_t secret,
		 uint32_t ttl_s, struct rmp_msg *out)
{
	struct rmp_msg m = msg(RMP_OP_RENEW);

	m.u.renew.id = id;
	m.u.renew.secret = secret;
	m.u.renew.ttl_s = ttl_s;
	return ask(c, &m, out);
}

static int free_lease(struct fake_conn *c, uint64_t id, uint64_t secret,
		      struct rmp_msg *out)
{
	struct rmp_msg m = msg(RMP_OP_FREE);

	m.u.free.id = id;
	m.u.free.secret = secret;
	return ask(c, &m, out);
}

/* attach_epoch -- ATTACH by a cluster record of epoch (0: none). */
static int attach_epoch(struct fake_conn *c, uint64_t id, uint64_t secret,
			uint32_t access, uint32_t flags, uint64_t epoch,
			struct rmp_msg *out)
{
	struct rmp_msg m = msg(RMP_OP_ATTACH);

	m.u.attach.id = id;
	m.u.attach.secret = secret;
	m.u.attach.access = access;
	m.u.attach.flags = flags;
	m.u.attach.epoch = epoch;
	return ask(c, &m, out);
}

static int attach(struct fake_conn *c, uint64_t id, uint64_t secret,
		  uint32_t access, uint32_t flags, struct rmp_msg *out)
{
	return attach_epoch(c, id, secret, access, flags, 0, out);
}

static struct rmp_stat_rep ask_stat(struct fake_conn *c)
{
	struct rmp_msg m = msg(RMP_OP_STAT), out;

	CHECK_EQ(ask(c, &m, &out), 0);
	return out.u.stat;
}

static unsigned detail_of(const struct rmp_msg *rep)
{
	return RMP_MSG_DETAIL(rep->hdr.flags);
}

/* ----------------------------------------------------------------- AUTH */

static const uint8_t server_ep[RMP_ENDPOINT_LEN] = {
	[10] = 0xff, 0xff, 192, 0, 2, 1, 0x1d, 0x2f,
};

/* pending -- what the listener set up for a connection naming t. */
static void pending(struct rmp_auth_pending *p, struct rmp_tenant *t,
		    uint8_t nonce)
{
	memset(p, 0, sizeof(*p));
	p->tenant = t;
	snprintf(p->tenant_name, sizeof(p->tenant_name), "%s", t->name);
	memset(p->nonce, nonce, sizeof(p->nonce));
	p->version = RMP_PROTO_VERSION;
	memcpy(p->server, server_ep, sizeof(p->server));
	snprintf(p->name, sizeof(p->name), "one");
}

/* proof -- the AUTH a client with tenant key byte key_byte sends for p. */
static struct rmp_msg proof(const struct rmp_auth_pending *p, char key_byte)
{
	struct rmp_msg m = msg(RMP_OP_AUTH);
	uint8_t key[16];

	memset(key, key_byte, sizeof(key));
	memset(m.u.auth.client_nonce, 0xc1, sizeof(m.u.auth.client_nonce));
	rmp_auth_proof(RMP_AUTH_CLIENT, key, sizeof(key), p->nonce,
		       m.u.auth.client_nonce, p->version, p->tenant_name,
		       p->name, p->server, m.u.auth.proof);
	return m;
}

/* server_proof_ok -- out, the reply to the AUTH m for p, carries the
 * server's proof of a key of bytes key_byte over both nonces. */
static bool server_proof_ok(const struct rmp_auth_pending *p,
			    const struct rmp_msg *m, const struct rmp_msg *out,
			    char key_byte)
{
	uint8_t key[16], want[RMP_PROOF_LEN];

	memset(key, key_byte, sizeof(key));
	rmp_auth_proof(RMP_AUTH_SERVER, key, sizeof(key), p->nonce,
		       m->u.auth.client_nonce, p->version, p->tenant_name,
		       p->name, p->server, want);
	return !memcmp(want, out->u.auth_rep.server_proof, sizeof(want));
}

/* auth -- c's first message m for p; the reply as read; the detail. */
static unsigned auth(struct fake_conn *c, const struct rmp_auth_pending *p,
		     struct rmp_msg *m, struct rmp_msg *out)
{
	uint8_t buf[RMP_MSG_MAX];
	struct rmp_msg rep;
	int n = encode(m, buf);
	unsigned d = rmp_request_auth(&ctx, &c->h, p, buf, (size_t)n, &rep);

	wire(&rep, m->hdr.req_id, m->hdr.opcode, out);
	return d;
}

/*
 * The first message must be an AUTH proving the named tenant's key for
 * this connection's nonce: anything else is "not authenticated", a wrong
 * key or a proof of another connection is refused; the right one makes
 * the holder its tenant's. After it, another AUTH is a bad message.
 */
static void test_auth(void)
{
	struct rmp_auth_pending p;
	struct rmp_msg m, out, good;
	struct fake_conn *c, *c2;
	uint8_t junk[5] = { 1, 2, 3, 4, 5 };
	struct rmp_msg rep;

	start();
	c = conn(NULL, "one");
	pending(&p, ta, 0x11);
	m = msg(RMP_OP_STAT);
	CHECK_EQ(auth(c, &p, &m, &out), RMP_DETAIL_NOT_AUTHED);
	CHECK_EQ(out.hdr.status, -EACCES);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_NOT_AUTHED);
	CHECK_EQ(rmp_request_auth(&ctx, &c->h, &p, junk, sizeof(junk), &rep),
		 RMP_DETAIL_NOT_AUTHED);
	wire(&rep, 0, 0, &out);
	CHECK_EQ(out.hdr.status, -EACCES);
	m = msg(RMP_OP_AUTH);
	m.hdr.flags = RMP_MSG_F_REPLY; /* an AUTH reply is no proof */
	CHECK_EQ(auth(c, &p, &m, &out), RMP_DETAIL_NOT_AUTHED);
	m = proof(&p, 'b'); /* another tenant's key */
	CHECK_EQ(auth(c, &p, &m, &out), RMP_DETAIL_BAD_PROOF);
	CHECK_EQ(out.hdr.status, -EKEYREJECTED);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_BAD_PROOF);
	CHECK(c->h.tenant == NULL);

	good = proof(&p, 'a');
	CHECK_EQ(auth(c, &p, &good, &out), RMP_DETAIL_NONE);
	CHECK_EQ(out.hdr.status, 0);
	/* The server proves the same key for the client's nonce (and only
	 * that key: not the other tenant's, not for another nonce). */
	CHECK(server_proof_ok(&p, &good, &out, 'a'));
	CHECK(!server_proof_ok(&p, &good, &out, 'b'));
	m = good;
	m.u.auth.client_nonce[5] ^= 1;
	CHECK(!server_proof_ok(&p, &m, &out, 'a'));
	CHECK(c->h.tenant == ta);
	CHECK_EQ(c->h.tenant_epoch, ta->epoch);
	CHECK(rmp_holder_current(&c->h));
	/* Now an AUTH is a bad message. */
	m = proof(&p, 'a');
	CHECK_EQ(ask(c, &m, &out), -EALREADY);
	CHECK(counted);

	/* The same proof on another connection (another nonce). */
	c2 = conn(NULL, "one");
	pending(&p, ta, 0x22);
	CHECK_EQ(auth(c2, &p, &good, &out), RMP_DETAIL_REPLAYED);
	CHECK_EQ(out.hdr.status, -EKEYREJECTED);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_REPLAYED);
	CHECK(c2->h.tenant == NULL);
	stop();
}

/* --------------------------------------------------------------- ALLOC */

static void test_alloc(void)
{
	struct fake_conn *c, *cb;
	struct rmp_msg out, m;
	const struct rmp_lease *l;
	uint8_t buf[RMP_MSG_MAX];
	int n, bind;

	start();
	c = conn(ta, "one");
	cb = conn(tb, "bee");
	CHECK_EQ(alloc(c, 100, 0, RMP_ACC_ALL, RMP_LEASE_F_AUTO_RENEW, &out),
		 0);
	CHECK(!counted);
	l = rmp_lifecycle_find(ctx.lc, out.u.lease.id);
	CHECK(l != NULL);
	if (!l)
		abort();
	bind = fake_last(&c->qp, IBV_WR_BIND_MW);
	CHECK(bind >= 0);
	CHECK(out.u.lease.id != 0);
	CHECK_EQ(out.u.lease.secret, l->secret);
	CHECK_EQ(out.u.lease.addr, pool->iova + l->ext.offset);
	CHECK_EQ(out.u.lease.length, 128);
	CHECK_EQ(out.u.lease.ttl_ms, 60000);
	CHECK_EQ(out.u.lease.rkey, fake_wrs[bind].wr.bind_mw.rkey);
	CHECK_EQ(out.u.lease.access, RMP_ACC_ALL);
	CHECK_EQ(out.u.lease.flags, RMP_LEASE_F_AUTO_RENEW);
	CHECK_EQ(out.u.lease.holders, 1);
	CHECK_EQ(detail_of(&out), 0);

	/* What the lifecycle refuses, as the client reads it. */
	CHECK_EQ(alloc(c, 0, 0, RMP_ACC_ALL, 0, &out), -EINVAL);
	CHECK_EQ(alloc(c, 64, 0, 0, 0, &out), -EINVAL);
	CHECK_EQ(alloc(c, 64, 0, RMP_ACC_ALL, 8, &out), -EINVAL);
	CHECK_EQ(alloc(c, 64, 86401, RMP_ACC_ALL, 0, &out), -EINVAL);
	CHECK_EQ(alloc(c, POOL_SIZE + 1, 0, RMP_ACC_ALL, 0, &out), -EFBIG);
	m = msg(RMP_OP_ALLOC);
	m.u.alloc.length = 64;
	m.u.alloc.alignment = 3;
	m.u.alloc.access = RMP_ACC_ALL;
	CHECK_EQ(ask(c, &m, &out), -EINVAL);
	CHECK(!counted);
	CHECK_EQ(alloc(cb, (64 << 10) + 64, 0, RMP_ACC_ALL, 0, &out), -EDQUOT);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_BYTES);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(alloc(cb, 64, 0, RMP_ACC_ALL, 0, &out), 0);
	CHECK_EQ(alloc(cb, 64, 0, RMP_ACC_ALL, 0, &out), -EDQUOT);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_LEASES);
	CHECK(!counted);
	cfg.pool.max_leases = 4;
	CHECK_EQ(alloc(c, 64, 0, RMP_ACC_ALL, 0, &out), -ENOSPC);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_SERVER_LEASES);
	cfg.pool.max_leases = 65536;
	CHECK_EQ(alloc(c, POOL_SIZE, 0, RMP_ACC_ALL, 0, &out), -ENOSPC);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_NONE);
	rmp_lifecycle_set_draining(ctx.lc, true);
	CHECK_EQ(alloc(c, 64, 0, RMP_ACC_ALL, 0, &out), -ESHUTDOWN);
	rmp_lifecycle_set_draining(ctx.lc, false);
	/* A reserved field that is not zero: the decoder refuses it. */
	m = msg(RMP_OP_ALLOC);
	m.u.alloc.length = 64;
	m.u.alloc.access = RMP_ACC_ALL;
	n = encode(&m, buf);
	buf[RMP_MSG_HDR_LEN + 28] = 1;
	CHECK_EQ(ask_raw(c, buf, (size_t)n, m.hdr.req_id, RMP_OP_ALLOC, &out),
		 -EBADMSG);
	CHECK(counted);
	CHECK_EQ(ask_stat(c).leases, 4);
	stop();
}

/* An ALLOC while the only room is a freed lease's, still being revoked
 * and zeroed: -ENOSPC that says so (the client asks again), and a grant
 * once the bytes are back. */
static void test_alloc_room_returning(void)
{
	struct fake_conn *c, *cb;
	struct rmp_msg out, lease;

	start();
	c = conn(ta, "one");
	CHECK_EQ(alloc(c, POOL_SIZE, 0, RMP_ACC_ALL, 0, &lease), 0);
	CHECK_EQ(alloc(c, 4096, 0, RMP_ACC_ALL, 0, &out), -ENOSPC);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_NONE); /* nothing ending */
	CHECK_EQ(free_lease(c, lease.u.lease.id, lease.u.lease.secret, &out),
		 0);
	CHECK_EQ(alloc(c, POOL_SIZE, 0, RMP_ACC_ALL, 0, &out), -ENOSPC);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_RETURNING);
	/* a tenant that could not take it anyway hears of its quota */
	cb = conn(tb, "bee");
	CHECK_EQ(alloc(cb, 128 << 10, 0, RMP_ACC_ALL, 0, &out), -EDQUOT);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_BYTES);
	fake_complete_all(ctx.lc, NULL, IBV_WC_SUCCESS); /* keys settle */
	fake_advance(ctx.lc, 1000);                     /* the grace */
	CHECK_EQ(alloc(c, POOL_SIZE, 0, RMP_ACC_ALL, 0, &out), -ENOSPC);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_RETURNING); /* being zeroed */
	fake_zero_run();
	CHECK_EQ(alloc(c, POOL_SIZE, 0, RMP_ACC_ALL, 0, &out), 0);
	stop();
}

/* --------------------------------------------------------- RENEW, FREE */

static void test_renew_free(void)
{
	struct fake_conn *c, *cb;
	struct rmp_msg out, lease;
	uint64_t id, secret;

	start();
	c = conn(ta, "one");
	cb = conn(tb, "bee");
	CHECK_EQ(alloc(c, 4096, 10, RMP_ACC_ALL, 0, &lease), 0);
	id = lease.u.lease.id;
	secret = lease.u.lease.secret;
	CHECK_EQ(renew(c, id, secret, 30, &out), 0);
	CHECK_EQ(out.u.renew_rep.ttl_ms, 30000);
	CHECK_EQ(renew(c, id, secret, 0, &out), 0);
	CHECK_EQ(out.u.renew_rep.ttl_ms, 60000);
	CHECK_EQ(renew(c, id, secret, 86401, &out), -EINVAL);
	CHECK_EQ(renew(c, id, secret + 1, 30, &out), -ENOENT);
	CHECK(!counted);
	CHECK_EQ(renew(c, id + 1, secret, 30, &out), -ENOENT);
	/* Another tenant's lease: refused, and it counts against it. */
	CHECK_EQ(renew(cb, id, secret, 30, &out), -EPERM);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_TENANT);
	CHECK(counted);
	CHECK_EQ(free_lease(cb, id, secret, &out), -EPERM);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_TENANT);
	CHECK(counted);
	CHECK_EQ(free_lease(c, id, secret + 1, &out), -ENOENT);
	CHECK(!counted);
	CHECK_EQ(ask_stat(c).leases, 1);
	CHECK_EQ(free_lease(c, id, secret, &out), 0);
	CHECK(!counted);
	CHECK_EQ(ask_stat(c).leases, 0);
	CHECK(fake_last(&c->qp, IBV_WR_LOCAL_INV) >= 0);
	CHECK_EQ(free_lease(c, id, secret, &out), -ENOENT);

	/* Past its deadline: expired, before the tick and after it. */
	CHECK_EQ(alloc(c, 4096, 1, RMP_ACC_ALL, 0, &lease), 0);
	id = lease.u.lease.id;
	secret = lease.u.lease.secret;
	fake_now += 1000;
	CHECK_EQ(renew(c, id, secret, 0, &out), -EKEYEXPIRED);
	CHECK_EQ(free_lease(c, id, secret, &out), -EKEYEXPIRED);
	fake_advance(ctx.lc, 100);
	CHECK_EQ(ask_stat(c).leases, 0);
	CHECK_EQ(renew(c, id, secret, 0, &out), -EKEYEXPIRED);
	CHECK_EQ(attach(c, id, secret, 0, 0, &out), -EKEYEXPIRED);
	CHECK(!counted);
	stop();
}

/* -------------------------------------------------------------- ATTACH */

static void test_attach(void)
{
	struct fake_conn *c1, *c2, *c3, *cb;
	struct rmp_msg out, lease;
	uint64_t id, secret;
	int bind;

	start();
	c1 = conn(ta, "one");
	c2 = conn(ta, "two");
	c3 = conn(ta, "three");
	cb = conn(tb, "bee");
	CHECK_EQ(alloc(c1, 4096, 0, RMP_ACC_READ, 0, &lease), 0);
	id = lease.u.lease.id;
	secret = lease.u.lease.secret;
	CHECK_EQ(attach(c2, id, secret, 0, 0, &out), 0);
	bind = fake_last(&c2->qp, IBV_WR_BIND_MW);
	CHECK(bind >= 0);
	CHECK_EQ(out.u.lease.id, id);
	CHECK_EQ(out.u.lease.secret, secret);
	CHECK_EQ(out.u.lease.addr, lease.u.lease.addr);
	CHECK_EQ(out.u.lease.length, 4096);
	CHECK_EQ(out.u.lease.access, RMP_ACC_READ);
	CHECK_EQ(out.u.lease.holders, 2);
	CHECK_EQ(out.u.lease.rkey, fake_wrs[bind].wr.bind_mw.rkey);
	CHECK(out.u.lease.rkey != lease.u.lease.rkey);
	/* A read-only lease gives no more than reading. */
	CHECK_EQ(attach(c2, id, secret, RMP_ACC_WRITE, 0, &out), -EACCES);
	CHECK_EQ(attach(c2, id, secret, 0, 2, &out), -EINVAL);
	CHECK_EQ(attach(c2, id, secret + 1, 0, 0, &out), -ENOENT);
	CHECK(!counted);
	CHECK_EQ(attach(cb, id, secret, 0, 0, &out), -EPERM);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_TENANT);
	CHECK(counted);
	cfg.lease.keys_per_lease = 2;
	CHECK_EQ(attach(c3, id, secret, 0, 0, &out), -EDQUOT);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_KEYS);
	CHECK(!counted);
	cfg.lease.keys_per_lease = 16;
	CHECK_EQ(attach(c3, id, secret, 0, RMP_ATTACH_F_EXCLUSIVE, &out), 0);
	CHECK(fence != 0); /* the reply waits (test_attach_fenced) */
	CHECK_EQ(out.u.lease.holders, 1);
	CHECK(fake_last(&c1->qp, IBV_WR_LOCAL_INV) >= 0);
	CHECK(fake_last(&c2->qp, IBV_WR_LOCAL_INV) >= 0);
	CHECK_EQ(ask_stat(c1).keys, 1);
	CHECK_EQ(fence, 0);
	stop();
}

/* The fence outcomes the lifecycle's upcall gave, in order. */
static struct rmp_fence_done dones[4];
static unsigned ndones;

static void on_fenced(void *arg, struct rmp_holder *h,
		      const struct rmp_fence_done *done)
{
	(void)arg;
	(void)h;
	if (ndones < 4)
		dones[ndones] = *done;
	ndones++;
}

/* held_attach -- c's exclusive ATTACH of lease id: its reply, held back
 * (rep, not sent), and the fence it waits for. */
static uint64_t held_attach(struct fake_conn *c, uint64_t id, uint64_t secret,
			    struct rmp_msg *rep)
{
	struct rmp_msg m = msg(RMP_OP_ATTACH);
	uint8_t buf[RMP_MSG_MAX];
	int n;

	m.u.attach.id = id;
	m.u.attach.secret = secret;
	m.u.attach.flags = RMP_ATTACH_F_EXCLUSIVE;
	n = encode(&m, buf);
	counted = rmp_request_handle(&ctx, &c->h, buf, (size_t)n, rep, &fence);
	CHECK(!counted);
	CHECK_EQ(rep->hdr.req_id, m.hdr.req_id);
	return fence;
}

/*
 * An exclusive ATTACH that must wait for another holder's key: its reply
 * is held back (the fence named), and completed once the lifecycle says
 * the fence is decided: the lease as the taker's key reaches it, or an
 * error with no payload (the lease was freed meanwhile: -ENOENT).
 */
static void test_attach_fenced(void)
{
	struct fake_conn *c1, *c2;
	struct rmp_msg lease, rep, out;
	uint64_t f;
	int bind;

	start();
	rmp_lifecycle_on_fence(ctx.lc, on_fenced, NULL);
	ndones = 0;
	c1 = conn(ta, "one");
	c2 = conn(ta, "two");
	CHECK_EQ(alloc(c1, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	fake_complete_all(ctx.lc, NULL, IBV_WC_SUCCESS);
	f = held_attach(c2, lease.u.lease.id, lease.u.lease.secret, &rep);
	CHECK(f != 0);
	bind = fake_last(&c2->qp, IBV_WR_BIND_MW);
	CHECK(bind >= 0);
	fake_advance(ctx.lc, 0);
	CHECK_EQ(ndones, 0);
	fake_advance(ctx.lc, 100);
	fake_complete_all(ctx.lc, &c1->qp, IBV_WC_SUCCESS);
	fake_advance(ctx.lc, 0);
	CHECK_EQ(ndones, 1);
	CHECK_EQ(dones[0].fence, f);
	rmp_request_fenced(&rep, &dones[0]);
	wire(&rep, rep.hdr.req_id, RMP_OP_ATTACH, &out);
	CHECK_EQ(out.hdr.status, 0);
	CHECK_EQ(out.u.lease.id, lease.u.lease.id);
	CHECK_EQ(out.u.lease.secret, lease.u.lease.secret);
	CHECK_EQ(out.u.lease.rkey, fake_wrs[bind].wr.bind_mw.rkey);
	CHECK_EQ(out.u.lease.holders, 1);
	CHECK(out.u.lease.ttl_ms + 100 <= lease.u.lease.ttl_ms);

	/* Freed while the fence waits. */
	CHECK_EQ(alloc(c1, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	fake_complete_all(ctx.lc, NULL, IBV_WC_SUCCESS);
	f = held_attach(c2, lease.u.lease.id, lease.u.lease.secret, &rep);
	CHECK(f != 0);
	CHECK_EQ(free_lease(c1, lease.u.lease.id, lease.u.lease.secret, &out),
		 0);
	fake_advance(ctx.lc, 0);
	CHECK_EQ(ndones, 2);
	CHECK_EQ(dones[1].fence, f);
	rmp_request_fenced(&rep, &dones[1]);
	wire(&rep, rep.hdr.req_id, RMP_OP_ATTACH, &out);
	CHECK_EQ(out.hdr.status, -ENOENT);
	stop();
}

/* ---------------------------------------------------------------- STAT */

/*
 * A member of a cluster lease knows its group's epoch: an ATTACH under
 * an older one is refused (-ESTALE, detail EPOCH) before any key moves,
 * even an exclusive one; a newer one is kept and told in the reply; 0
 * asks nothing and is told the epoch.
 */
static void test_attach_epoch(void)
{
	struct fake_conn *c1, *c2, *c3;
	struct rmp_msg out, lease;
	const struct rmp_lease *l;
	uint64_t id, secret;
	unsigned from;

	start();
	c1 = conn(ta, "one");
	c2 = conn(ta, "two");
	c3 = conn(ta, "three");
	CHECK_EQ(alloc(c1, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	CHECK_EQ(lease.u.lease.epoch, 0);
	id = lease.u.lease.id;
	secret = lease.u.lease.secret;
	l = rmp_lifecycle_find(ctx.lc, id);
	CHECK(l != NULL);
	if (!l) {
		stop();
		return;
	}
	CHECK_EQ(attach_epoch(c2, id, secret, 0, 0, 3, &out), 0);
	CHECK_EQ(out.u.lease.epoch, 3);
	CHECK_EQ(l->group_epoch, 3);
	from = fake_nwrs;
	CHECK_EQ(attach_epoch(c3, id, secret, 0, RMP_ATTACH_F_EXCLUSIVE, 2,
			      &out), -ESTALE);
	CHECK_EQ(detail_of(&out), RMP_DETAIL_EPOCH);
	CHECK_EQ(fake_count(from, &c1->qp, IBV_WR_LOCAL_INV), 0);
	CHECK_EQ(fake_count(from, &c2->qp, IBV_WR_LOCAL_INV), 0);
	CHECK(!counted); /* a stale record is no attack */
	CHECK_EQ(l->nkeys, 2);
	CHECK_EQ(attach_epoch(c3, id, secret, 0, 0, 0, &out), 0);
	CHECK_EQ(out.u.lease.epoch, 3);
	CHECK_EQ(attach_epoch(c3, id, secret, 0, RMP_ATTACH_F_EXCLUSIVE, 4,
			      &out), 0);
	CHECK_EQ(out.u.lease.epoch, 4);
	CHECK_EQ(l->group_epoch, 4);
	CHECK(fake_count(from, &c1->qp, IBV_WR_LOCAL_INV) > 0);
	CHECK_EQ(attach_epoch(c2, id, secret, 0, 0, 3, &out), -ESTALE);
	CHECK_EQ(attach_epoch(c2, id, secret, 0, 0, 4, &out), 0);
	/* past a record's epochs (2^63 - 1): refused, nothing kept, so no
	 * ATTACH can leave a lease no record may name */
	CHECK_EQ(attach_epoch(c2, id, secret, 0, 0,
			      (uint64_t)INT64_MAX + 1, &out), -EINVAL);
	CHECK_EQ(attach_epoch(c2, id, secret, 0, 0, UINT64_MAX, &out), -EINVAL);
	CHECK_EQ(l->group_epoch, 4);
	stop();
}

static void test_stat(void)
{
	struct fake_conn *c, *cb;
	struct rmp_stat_rep st;
	struct rmp_msg out, lease;

	start();
	c = conn(ta, "one");
	cb = conn(tb, "bee");
	pool->page_size = 2 << 20;
	tb->connections = 1;
	CHECK_EQ(alloc(c, 8192, 0, RMP_ACC_ALL, 0, &out), 0);
	CHECK_EQ(alloc(cb, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	CHECK_EQ(alloc(cb, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	CHECK_EQ(free_lease(cb, lease.u.lease.id, lease.u.lease.secret, &out),
		 0);
	fake_complete_all(ctx.lc, NULL, IBV_WC_SUCCESS); /* in its grace */
	st = ask_stat(cb);
	CHECK_EQ(st.pool_bytes, POOL_SIZE);
	CHECK_EQ(st.free_bytes, POOL_SIZE - 8192 - 4096 - 4096);
	CHECK_EQ(st.largest_free > 0, 1);
	CHECK_EQ(st.leases, 2);
	CHECK_EQ(st.tenant_bytes, 4096);
	CHECK_EQ(st.tenant_leases, 1);
	CHECK_EQ(st.quota_bytes, 64 << 10);
	CHECK_EQ(st.quota_leases, 3);
	CHECK_EQ(st.tenant_connections, 1);
	CHECK_EQ(st.quota_connections, 0);
	CHECK_EQ(st.keys, 2);
	CHECK_EQ(st.hugepage_size, 2 << 20);
	CHECK_EQ(st.ttl_min_s, 1);
	CHECK_EQ(st.ttl_max_s, 86400);
	CHECK_EQ(st.ttl_default_s, 60);
	CHECK_EQ(st.numa_node, 1);
	CHECK_EQ(st.keys_mode, RMP_KEYS_WINDOW);
	CHECK_EQ(st.zeroing_bytes, 4096);
	CHECK_EQ(st.quarantined_bytes, 0);
	st = ask_stat(c);
	CHECK_EQ(st.tenant_bytes, 8192);
	CHECK_EQ(st.quota_bytes, 0);
	CHECK_EQ(st.quota_leases, 32768); /* half of max_leases */
	tb->connections = 0;
	stop();
}

/* ------------------------------------------------------ voided proofs */

/* A reload voided the connection's proof: every request is refused,
 * FREE and STAT too, and nothing changes. */
static void test_voided_proof(void)
{
	struct fake_conn *c;
	struct rmp_msg out, lease, m;
	unsigned nwrs;

	start();
	c = conn(ta, "one");
	CHECK_EQ(alloc(c, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	nwrs = fake_nwrs;
	for (unsigned how = 0; how < 2; how++) {
		if (how == 0)
			c->h.tenant_epoch = 0; /* its key changed */
		else
			ta->usable = false;    /* it was removed */
		CHECK_EQ(alloc(c, 64, 0, RMP_ACC_ALL, 0, &out), -EKEYREVOKED);
		CHECK_EQ(free_lease(c, lease.u.lease.id, lease.u.lease.secret,
				    &out), -EKEYREVOKED);
		CHECK_EQ(renew(c, lease.u.lease.id, lease.u.lease.secret, 0,
			       &out), -EKEYREVOKED);
		CHECK_EQ(attach(c, lease.u.lease.id, lease.u.lease.secret, 0,
				0, &out), -EKEYREVOKED);
		m = msg(RMP_OP_STAT);
		CHECK_EQ(ask(c, &m, &out), -EKEYREVOKED);
		CHECK(!counted);
		c->h.tenant_epoch = ta->epoch;
		ta->usable = true;
	}
	CHECK_EQ(fake_nwrs, nwrs);
	CHECK(rmp_lifecycle_find(ctx.lc, lease.u.lease.id) != NULL);
	stop();
}

/* ------------------------------------------------------------ malformed */

/* bad -- c sends buf (len bytes): refused with status, answering req_id
 * and opcode, counted against c, and nothing happened. */
#define CHECK_BAD(c, buf, len, status, req_id, opcode)                        \
	do {                                                                  \
		struct rmp_msg out_;                                          \
		unsigned nwrs_ = fake_nwrs;                                   \
		CHECK_EQ(ask_raw((c), (buf), (len), (req_id), (opcode),       \
				 &out_), (status));                           \
		CHECK(counted);                                               \
		CHECK_EQ(fake_nwrs, nwrs_);                                   \
	} while (0)

static void test_malformed(void)
{
	struct fake_conn *c;
	struct rmp_msg m;
	uint8_t buf[RMP_MSG_MAX + 8], ok[RMP_MSG_MAX];
	uint64_t id;
	int n;

	start();
	c = conn(ta, "one");
	m = msg(RMP_OP_ALLOC);
	m.u.alloc.length = 64;
	m.u.alloc.access = RMP_ACC_ALL;
	n = encode(&m, ok);
	id = m.hdr.req_id;

	CHECK_BAD(c, ok, 0, -EBADMSG, 0, 0);
	CHECK_BAD(c, ok, RMP_MSG_HDR_LEN - 1, -EBADMSG, 0, 0);
	memcpy(buf, ok, (size_t)n);
	buf[0] ^= 1; /* magic */
	CHECK_BAD(c, buf, (size_t)n, -EBADMSG, 0, 0);
	memcpy(buf, ok, (size_t)n);
	buf[4] = RMP_PROTO_VERSION - 1;
	CHECK_BAD(c, buf, (size_t)n, -EPROTONOSUPPORT, id, RMP_OP_ALLOC);
	memcpy(buf, ok, (size_t)n);
	buf[5] = RMP_OP_MAX + 1; /* opcode */
	CHECK_BAD(c, buf, (size_t)n, -EOPNOTSUPP, id, 0);
	buf[5] = 0;
	CHECK_BAD(c, buf, (size_t)n, -EOPNOTSUPP, id, 0);
	/* Lengths: one byte short, one too many (the header says so or
	 * not). */
	memcpy(buf, ok, (size_t)n);
	CHECK_BAD(c, buf, (size_t)n - 1, -EBADMSG, id, RMP_OP_ALLOC);
	buf[n] = 0;
	CHECK_BAD(c, buf, (size_t)n + 1, -EBADMSG, id, RMP_OP_ALLOC);
	buf[8] = 33; /* payload_len */
	CHECK_BAD(c, buf, (size_t)n + 1, -EBADMSG, id, RMP_OP_ALLOC);
	memcpy(buf, ok, (size_t)n);
	buf[12] = 0xff; /* a status on a request */
	CHECK_BAD(c, buf, (size_t)n, -EBADMSG, id, RMP_OP_ALLOC);
	/* A RENEW with its reserved word set. */
	m = msg(RMP_OP_RENEW);
	m.u.renew.id = 1;
	n = encode(&m, buf);
	buf[n - 1] = 1;
	CHECK_BAD(c, buf, (size_t)n, -EBADMSG, m.hdr.req_id, RMP_OP_RENEW);
	/* Replies are not requests: a FREE reply, an error reply of an
	 * opcode nobody knows. */
	m = msg(RMP_OP_FREE);
	m.hdr.flags = RMP_MSG_F_REPLY;
	n = encode(&m, buf);
	CHECK_BAD(c, buf, (size_t)n, -EBADMSG, m.hdr.req_id, RMP_OP_FREE);
	m = msg(200);
	m.hdr.flags = RMP_MSG_F_REPLY;
	m.hdr.status = -EIO;
	n = encode(&m, buf);
	CHECK_BAD(c, buf, (size_t)n, -EBADMSG, m.hdr.req_id, 0);
	CHECK_EQ(ask_stat(c).leases, 0);
	CHECK_EQ(fake_log_count("bad message"), 13);
	stop();
}

/* ---------------------------------------------------------- unanswered */

/* The reply of an ALLOC could not be sent: only it carried the secret,
 * so the lease is freed. Other replies free nothing. */
static void test_unanswered(void)
{
	struct fake_conn *c;
	struct rmp_msg out, lease, rep, m;
	uint8_t buf[RMP_MSG_MAX];
	int n;

	start();
	c = conn(ta, "one");
	CHECK_EQ(alloc(c, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	rmp_request_unanswered(&ctx, &c->h, &lease);
	CHECK_EQ(ask_stat(c).leases, 0);
	CHECK(rmp_lifecycle_find(ctx.lc, lease.u.lease.id) == NULL);
	CHECK(fake_last(&c->qp, IBV_WR_LOCAL_INV) >= 0);
	CHECK_EQ(fake_log_count("granted but the reply could not be sent"),
		 1);

	CHECK_EQ(alloc(c, 4096, 0, RMP_ACC_ALL, 0, &lease), 0);
	CHECK_EQ(renew(c, lease.u.lease.id, lease.u.lease.secret, 0, &out), 0);
	rmp_request_unanswered(&ctx, &c->h, &out);
	CHECK_EQ(alloc(c, 0, 0, RMP_ACC_ALL, 0, &out), -EINVAL);
	rmp_request_unanswered(&ctx, &c->h, &out);
	CHECK(rmp_lifecycle_find(ctx.lc, lease.u.lease.id) != NULL);
	/* An ATTACH's key goes with the connection; the lease stays. */
	m = msg(RMP_OP_ATTACH);
	m.u.attach.id = lease.u.lease.id;
	m.u.attach.secret = lease.u.lease.secret;
	n = encode(&m, buf);
	CHECK(!rmp_request_handle(&ctx, &c->h, buf, (size_t)n, &rep,
				  &fence));
	CHECK_EQ(rep.hdr.status, 0);
	rmp_request_unanswered(&ctx, &c->h, &rep);
	CHECK(rmp_lifecycle_find(ctx.lc, lease.u.lease.id) != NULL);
	stop();
}

/* ------------------------------------------------------------- latency */

static void test_latency(void)
{
	static struct rmp_latency h;

	rmp_latency_add(&h, RMP_OP_ALLOC, 0);
	rmp_latency_add(&h, RMP_OP_ALLOC, 5000);  /* 5 us: first bucket */
	rmp_latency_add(&h, RMP_OP_ALLOC, 5001);
	rmp_latency_add(&h, RMP_OP_FREE, 250000000); /* the last bound */
	rmp_latency_add(&h, RMP_OP_FREE, 250000001); /* above them all */
	rmp_latency_add(&h, 200, 1000);           /* did not decode */
	CHECK_EQ(h.count[RMP_OP_ALLOC][0], 2);
	CHECK_EQ(h.count[RMP_OP_ALLOC][1], 1);
	CHECK_EQ(h.sum_ns[RMP_OP_ALLOC], 10001);
	CHECK_EQ(h.count[RMP_OP_FREE][RMP_LATENCY_BUCKETS - 1], 1);
	CHECK_EQ(h.count[RMP_OP_FREE][RMP_LATENCY_BUCKETS], 1);
	CHECK_EQ(h.count[0][0], 1);
}

int main(void)
{
	test_auth();
	test_alloc();
	test_alloc_room_returning();
	test_renew_free();
	test_attach();
	test_attach_epoch();
	test_attach_fenced();
	test_stat();
	test_voided_proof();
	test_malformed();
	test_unanswered();
	test_latency();
	CHECK_EQ(fake_mws_dealloced, fake_mws_alloced);
	return check_done();
}

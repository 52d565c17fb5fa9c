/* SPDX-License-Identifier: MIT */
/*
 * test_client_lease.c -- lease handles and their control calls
 * (client/lease.c) against a fake server: arguments refused before any
 * request, what a reply may say, the local expiry check and the refresh
 * that may save the lease, and handles attached again after the
 * reconnect upcall (or failed, as the server says); a lease's handles
 * on a client's other rails.
 *
 * lease.c is linked with chan.c, error.c and spin.c; fake_client.c is
 * the NIC and the server (see fake_client.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chan.h"
#include "check.h"
#include "fake_client.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

/* alloc -- a lease of len bytes with the default options. */
static struct rmp_lease *alloc(struct rmp_client *c, uint64_t len)
{
	struct rmp_lease *l = NULL;

	CHECK_EQ(rmp_lease_alloc(c, len, NULL, &l), 0);
	return l;
}

/* ------------------------------------------------------ allocation */

/* Bad arguments are refused before anything is sent. */
static void test_alloc_args(void)
{
	struct rmp_client *c = fake_client_new();
	struct {
		struct rmp_alloc_opts o;
		uint8_t newer[8];
	} big;
	struct rmp_alloc_opts o;
	struct rmp_lease *l = NULL;

	CHECK_EQ(rmp_lease_alloc(NULL, 4096, NULL, &l), -EINVAL);
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, NULL), -EINVAL);
	CHECK_EQ(rmp_lease_alloc(c, 0, NULL, &l), -EINVAL);
	CHECK_HAS(c->errbuf, "invalid lease request: length 0");
	rmp_alloc_opts_init(&o);
	o.alignment = 3;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &o, &l), -EINVAL);
	rmp_alloc_opts_init(&o);
	o.access = 0;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &o, &l), -EINVAL);
	o.access = 0x80;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &o, &l), -EINVAL);
	rmp_alloc_opts_init(&o);
	o.flags = 0x80;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &o, &l), -EINVAL);
	rmp_alloc_opts_init(&o);
	o.size = 2;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &o, &l), -EINVAL);
	CHECK_HAS(c->errbuf, "rmp_alloc_opts.size is not valid");
	/* A newer caller's struct: fields we do not know must be zero. */
	memset(&big, 0, sizeof(big));
	rmp_alloc_opts_init(&big.o);
	big.o.size = sizeof(big);
	big.newer[3] = 1;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &big.o, &l), -EINVAL);
	CHECK_EQ(fake_nreqs, 0);
	CHECK(LIST_EMPTY(&c->leases));
	big.newer[3] = 0;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &big.o, &l), 0);
	CHECK_EQ(fake_nreqs, 1);
	fake_client_free(c);
}

/* The request carries the options; the handle describes the reply. */
static void test_alloc(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_alloc_opts o;
	struct rmp_lease *l = NULL, *l2 = NULL;
	char tok[RMP_TOKEN_MAXLEN];

	rmp_alloc_opts_init(&o);
	o.ttl_s = 5;
	o.alignment = 4096;
	o.access = RMP_ACCESS_READ | RMP_ACCESS_WRITE;
	o.flags = RMP_LEASE_EPHEMERAL;
	CHECK_EQ(rmp_lease_alloc(c, 8192, &o, &l), 0);
	CHECK_EQ(fake_last_req.hdr.opcode, RMP_OP_ALLOC);
	CHECK_EQ(fake_last_req.u.alloc.length, 8192);
	CHECK_EQ(fake_last_req.u.alloc.alignment, 4096);
	CHECK_EQ(fake_last_req.u.alloc.ttl_s, 5);
	CHECK_EQ(fake_last_req.u.alloc.access, RMP_ACC_READ | RMP_ACC_WRITE);
	CHECK_EQ(fake_last_req.u.alloc.flags, RMP_LEASE_F_EPHEMERAL);
	CHECK(LIST_FIRST(&c->leases) == l);
	CHECK_EQ(rmp_lease_info(l, &info), 0);
	CHECK_EQ(info.length, 8192);
	CHECK_EQ(info.remote_addr, FAKE_REMOTE_ADDR);
	CHECK_EQ(info.rkey, fake_rkey);
	CHECK_EQ(info.access, RMP_ACCESS_READ | RMP_ACCESS_WRITE);
	CHECK_EQ(info.flags, RMP_LEASE_EPHEMERAL);
	CHECK(info.ttl_ms <= 60000 && info.ttl_ms > 59000);
	CHECK_EQ(info.holders, 1);
	info.size = 8;
	CHECK_EQ(rmp_lease_info(l, &info), -EINVAL);

	/* Its token attaches it again: same id and secret. */
	CHECK(rmp_lease_token(l, tok, sizeof(tok)) > 0);
	CHECK_HAS(tok, "rmp://fake:7471/");
	CHECK_EQ(rmp_lease_attach_token(c, tok, &l2), 0);
	CHECK_EQ(fake_last_req.hdr.opcode, RMP_OP_ATTACH);
	CHECK_EQ(fake_last_req.u.attach.id, l->id);
	CHECK_EQ(fake_last_req.u.attach.secret, l->secret);
	CHECK_EQ(l2->id, l->id);
	rmpc_leases_free(c);
	CHECK(LIST_EMPTY(&c->leases));
	fake_client_free(c);
}

static uint64_t grant_length, grant_addr;
static uint32_t grant_access;

/* A grant as the test says: length, address, access. */
static bool serve_odd_grant(const struct rmp_msg *req, struct rmp_msg *rep)
{
	fake_serve_grant(req, rep);
	if (req->hdr.opcode == RMP_OP_ALLOC) {
		rep->u.lease.length = grant_length;
		rep->u.lease.addr = grant_addr;
		rep->u.lease.access = grant_access;
	}
	return true;
}

/* A grant the handle cannot take: -EPROTO, the lease freed on the server
 * (the FREE keeps the text of why), no handle. */
static void check_bad_grant(uint64_t length, uint64_t addr, uint32_t access,
			    const char *why)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = NULL;

	grant_length = length;
	grant_addr = addr;
	grant_access = access;
	fake_serve = serve_odd_grant;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), -EPROTO);
	CHECK_HAS(c->errbuf, why);
	CHECK_EQ(fake_reqs[RMP_OP_FREE], 1);
	CHECK_EQ(fake_last_req.u.free.id, 0x1001);
	CHECK(LIST_EMPTY(&c->leases));
	fake_client_free(c);
}

static void test_alloc_bad_reply(void)
{
	struct rmp_client *c;
	struct rmp_alloc_opts o;
	struct rmp_lease *l = NULL;

	check_bad_grant(100, FAKE_REMOTE_ADDR, RMP_ACC_ALL,
			"server granted 100 of 4096 bytes");
	check_bad_grant(0, FAKE_REMOTE_ADDR, RMP_ACC_ALL,
			"server sent an invalid lease description");
	check_bad_grant(4096, FAKE_REMOTE_ADDR, 0x80,
			"server sent an invalid lease description");
	check_bad_grant(4096, UINT64_MAX - 10, RMP_ACC_ALL,
			"server sent an invalid lease description");

	/* A refusal the reply does not explain is explained here. */
	c = fake_client_new();
	fake_refuse = -ENOSPC;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), -ENOSPC);
	CHECK_STR(c->errbuf, "server refused ALLOC of 4096 bytes");
	rmp_alloc_opts_init(&o);
	o.ttl_s = 9;
	CHECK_EQ(rmp_lease_alloc(c, 4096, &o, &l), -ENOSPC);
	CHECK_STR(c->errbuf, "server refused ALLOC of 4096 bytes with ttl 9 s");
	CHECK_EQ(fake_reqs[RMP_OP_FREE], 0);
	CHECK(LIST_EMPTY(&c->leases));
	fake_client_free(c);
}

static unsigned returning_left; /* ALLOCs still refused for room ending */

/* A pool whose room is being given back: -ENOSPC with
 * RMP_DETAIL_RETURNING for the next returning_left ALLOCs, then grants. */
static bool serve_returning(const struct rmp_msg *req, struct rmp_msg *rep)
{
	if (req->hdr.opcode == RMP_OP_ALLOC && returning_left) {
		returning_left--;
		rep->hdr.status = -ENOSPC;
		rep->hdr.flags = RMP_MSG_F_DETAIL(RMP_DETAIL_RETURNING);
		return true;
	}
	return fake_serve_grant(req, rep);
}

/* An ALLOC the server cannot place yet because a freed lease's bytes are
 * still being revoked and zeroed is asked again, within the op timeout;
 * a pool that is full gets one ALLOC. */
static void test_alloc_room_returning(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = NULL;

	fake_serve = serve_returning;
	returning_left = 3;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), 0);
	CHECK_EQ(fake_reqs[RMP_OP_ALLOC], 4);
	CHECK_STR(c->errbuf, ""); /* granted: no refusal left to read */
	CHECK(l != NULL);
	if (l)
		rmp_lease_close(l);
	/* never back within the op timeout (50 ms): its refusal, said */
	fake_reqs[RMP_OP_ALLOC] = 0;
	returning_left = 1000;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), -ENOSPC);
	CHECK(fake_reqs[RMP_OP_ALLOC] > 1);
	CHECK(fake_reqs[RMP_OP_ALLOC] < 20);
	CHECK_HAS(c->errbuf, "being revoked and zeroed");
	/* full, with nothing ending: one ALLOC */
	fake_reqs[RMP_OP_ALLOC] = 0;
	fake_serve = fake_serve_grant;
	fake_refuse = -ENOSPC;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), -ENOSPC);
	CHECK_EQ(fake_reqs[RMP_OP_ALLOC], 1);
	fake_client_free(c);
}

static bool serve_other_id(const struct rmp_msg *req, struct rmp_msg *rep)
{
	fake_serve_grant(req, rep);
	rep->u.lease.id++;
	return true;
}

/* ATTACH: by id, by token, with options; refusals explained. */
static void test_attach(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_attach_opts o;
	struct rmp_lease *l = NULL;
	const char *tok = "rmp://fake:7471/00000000000000aa-00000000000000bb";

	CHECK_EQ(rmp_lease_attach(c, 0x77, 0x88, &l), 0);
	CHECK_EQ(fake_last_req.u.attach.id, 0x77);
	CHECK_EQ(fake_last_req.u.attach.secret, 0x88);
	CHECK_EQ(fake_last_req.u.attach.access, 0);
	CHECK_EQ(l->id, 0x77);
	CHECK_EQ(l->gen, c->gen);

	rmp_attach_opts_init(&o);
	o.access = RMP_ACCESS_READ;
	o.flags = RMP_ATTACH_EXCLUSIVE;
	CHECK_EQ(rmp_lease_attach_with(c, tok, &o, &l), 0);
	CHECK_EQ(fake_last_req.u.attach.id, 0xaa);
	CHECK_EQ(fake_last_req.u.attach.secret, 0xbb);
	CHECK_EQ(fake_last_req.u.attach.access, RMP_ACC_READ);
	CHECK_EQ(fake_last_req.u.attach.flags, RMP_ATTACH_F_EXCLUSIVE);
	CHECK_EQ(l->access, RMP_ACC_READ);

	fake_nreqs = 0;
	CHECK_EQ(rmp_lease_attach_token(c, "rmp://fake/xyz", &l), -EINVAL);
	CHECK_HAS(c->errbuf, "malformed lease token");
	o.flags = 0x40;
	CHECK_EQ(rmp_lease_attach_with(c, tok, &o, &l), -EINVAL);
	CHECK_EQ(fake_nreqs, 0);

	fake_serve = serve_other_id;
	CHECK_EQ(rmp_lease_attach(c, 0x77, 0x88, &l), -EPROTO);
	CHECK_HAS(c->errbuf, "server attached lease 0000000000000078 instead "
		  "of 0000000000000077");
	fake_serve = fake_serve_grant;
	fake_refuse = -ENOENT;
	CHECK_EQ(rmp_lease_attach(c, 0x77, 0x88, &l), -ENOENT);
	CHECK_HAS(c->errbuf, "server refused ATTACH of lease "
		  "0000000000000077");
	fake_client_free(c);
}

/* --------------------------------------------------------- expiry */

/*
 * A lease past its deadline by the library's clock: the server is asked
 * (an ATTACH of the same access) before anything is posted. Gone, or
 * another key, or no time left: -EKEYEXPIRED, saying how long ago, and
 * the connection stays usable. Renewed elsewhere: the call goes on with
 * the new deadline. Auto-renew leases, checks without expiry and leases
 * without a ttl ask nothing.
 */
static void test_expiry(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = alloc(c, 4096);
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_pool_stat st = { .size = sizeof(st) };

	l->stamp_ms -= 61000;
	fake_refuse = -EKEYEXPIRED;
	CHECK_EQ(rmpc_lease_usable(l, true), -EKEYEXPIRED);
	CHECK_HAS(c->errbuf, "expired 1");
	CHECK_HAS(c->errbuf, " ms ago");
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 1);
	CHECK_EQ(fake_last_req.u.attach.id, l->id);
	CHECK_EQ(fake_last_req.u.attach.secret, l->secret);
	CHECK_EQ(fake_last_req.u.attach.access, l->access);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	fake_refuse = 0;
	CHECK_EQ(rmp_stat(c, &st), 0); /* the connection works */

	/* No time left, or another key: expired all the same. */
	fake_ttl_ms = 0;
	CHECK_EQ(rmpc_lease_usable(l, true), -EKEYEXPIRED);
	fake_ttl_ms = 30000;
	fake_rkey++;
	CHECK_EQ(rmpc_lease_usable(l, true), -EKEYEXPIRED);
	fake_rkey--;
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 3);

	/* Renewed by another process: the lease lives on. */
	CHECK_EQ(rmpc_lease_usable(l, true), 0);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 4);
	CHECK_EQ(l->ttl_ms, 30000);
	CHECK_EQ(rmp_lease_info(l, &info), 0);
	CHECK(info.ttl_ms > 29000);
	CHECK_EQ(rmpc_lease_usable(l, true), 0);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 4);

	/* Asked nothing: without expiry check, auto-renew, no ttl. */
	l->stamp_ms -= 31000;
	CHECK_EQ(rmpc_lease_usable(l, false), 0);
	l->flags = RMP_LEASE_F_AUTO_RENEW;
	CHECK_EQ(rmpc_lease_usable(l, true), 0);
	l->flags = 0;
	l->ttl_ms = 0;
	CHECK_EQ(rmpc_lease_usable(l, true), 0);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 4);
	fake_client_free(c);
}

/* ------------------------------------------------- renew and free */

static void test_renew_free(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = alloc(c, 4096), *l2 = alloc(c, 4096);
	char tok[RMP_TOKEN_MAXLEN];
	uint64_t ttl = 0;

	fake_ttl_ms = 5000;
	CHECK_EQ(rmp_lease_renew(l, 5), 0);
	CHECK_EQ(fake_last_req.hdr.opcode, RMP_OP_RENEW);
	CHECK_EQ(fake_last_req.u.renew.id, l->id);
	CHECK_EQ(fake_last_req.u.renew.secret, l->secret);
	CHECK_EQ(fake_last_req.u.renew.ttl_s, 5);
	CHECK_EQ(l->ttl_ms, 5000);
	CHECK_EQ(rmp_lease_renew(NULL, 5), -EINVAL);

	/* By token, without a handle. */
	CHECK(rmp_lease_token(l, tok, sizeof(tok)) > 0);
	fake_ttl_ms = 7000;
	CHECK_EQ(rmp_lease_renew_token(c, tok, 7, &ttl), 0);
	CHECK_EQ(ttl, 7000);
	CHECK_EQ(fake_last_req.u.renew.id, l->id);
	CHECK_EQ(rmp_lease_free_token(c, tok), 0);
	CHECK_EQ(fake_last_req.hdr.opcode, RMP_OP_FREE);
	CHECK_EQ(fake_last_req.u.free.secret, l->secret);
	CHECK_EQ(rmp_lease_free_token(c, "nonsense"), -EINVAL);

	fake_refuse = -EKEYEXPIRED;
	CHECK_EQ(rmp_lease_renew(l, 5), -EKEYEXPIRED);
	CHECK_STR(c->errbuf, "server refused RENEW of lease "
		  "0000000000001001 (ttl 5 s)");
	CHECK_EQ(l->ttl_ms, 5000);

	/* A free the server refuses still frees the handle. */
	fake_refuse = -EKEYREVOKED;
	CHECK_EQ(rmp_lease_free(l), -EKEYREVOKED);
	CHECK_HAS(c->errbuf, "server refused FREE of lease");
	CHECK(LIST_FIRST(&c->leases) == l2 && !LIST_NEXT(l2, link));
	CHECK_EQ(rmp_lease_free(NULL), 0);

	/* On a lost connection nothing is sent; free still frees. */
	fake_refuse = 0;
	rmpc_fail(c);
	fake_nreqs = 0;
	CHECK_EQ(rmp_lease_renew(l2, 5), -ENOTCONN);
	CHECK_EQ(rmp_lease_free(l2), -ENOTCONN);
	CHECK_EQ(fake_nreqs, 0);
	CHECK(LIST_EMPTY(&c->leases));
	fake_client_free(c);
}

/* ----------------------------------------------- reconnect upcall */

/*
 * The connection fails with reconnecting on: the next use of a handle
 * makes the connection again (the upcall, once) and attaches that lease
 * again on it, with its id, secret and access; the new key and deadline
 * replace the old. Other handles are attached again at their own next
 * use. A lease the server no longer has fails that call, and the handle
 * asks again at the next; a reconnect that fails sends nothing. Without
 * reconnecting an old handle is refused.
 */
static void test_reconnect(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *a, *b;
	uint32_t old_rkey = fake_rkey;

	c->auto_reconnect = true;
	a = alloc(c, 4096);
	b = alloc(c, 4096);
	a->access = RMP_ACC_READ;
	rmpc_fail(c);
	fake_rkey = 0x5a77;
	fake_ttl_ms = 9000;
	CHECK_EQ(rmpc_lease_usable(a, true), 0);
	CHECK_EQ(fake_reconnects, 1);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 1);
	CHECK_EQ(fake_last_req.u.attach.id, a->id);
	CHECK_EQ(fake_last_req.u.attach.secret, a->secret);
	CHECK_EQ(fake_last_req.u.attach.access, RMP_ACC_READ);
	CHECK_EQ(a->rkey, 0x5a77);
	CHECK_EQ(a->ttl_ms, 9000);
	CHECK_EQ(a->gen, c->gen);
	CHECK(b->gen != c->gen); /* not yet used */
	CHECK_EQ(b->rkey, old_rkey);

	CHECK_EQ(rmp_lease_renew(b, 3), 0);
	CHECK_EQ(fake_reconnects, 1);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 2);
	CHECK_EQ(fake_reqs[RMP_OP_RENEW], 1);
	CHECK_EQ(b->gen, c->gen);
	CHECK_EQ(b->rkey, 0x5a77);

	/* The lease ended while the connection was down. */
	rmpc_fail(c);
	fake_refuse = -ENOENT;
	CHECK_EQ(rmpc_lease_usable(a, true), -ENOENT);
	CHECK_EQ(fake_reconnects, 2);
	CHECK_HAS(c->errbuf, "server refused ATTACH of lease");
	CHECK(a->gen != c->gen);
	CHECK_EQ(rmpc_lease_usable(a, true), -ENOENT);
	CHECK_EQ(fake_reconnects, 2);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 4);
	fake_refuse = 0;

	/* The server is not back: nothing is sent. */
	rmpc_fail(c);
	fake_reconnect_err = -ENOTCONN;
	fake_nreqs = 0;
	CHECK_EQ(rmpc_lease_usable(b, true), -ENOTCONN);
	CHECK_EQ(fake_reconnects, 3);
	CHECK_EQ(fake_nreqs, 0);

	/* Reconnecting off: a handle of an earlier connection is refused. */
	fake_reconnect_err = 0;
	CHECK_EQ(fake_reconnect(c), 0);
	c->auto_reconnect = false;
	CHECK_EQ(rmpc_lease_usable(b, true), -ENOTCONN);
	CHECK_HAS(c->errbuf, "lease handle belongs to a closed connection");
	CHECK_EQ(fake_nreqs, 0);
	fake_rkey = old_rkey;
	fake_client_free(c);
}

/* ----------------------------------------------------------- rails */

/* count -- handles on c's list. */
static unsigned count(struct rmp_client *c)
{
	struct rmp_lease *x;
	unsigned n = 0;

	LIST_FOREACH(x, &c->leases, link)
		n++;
	return n;
}

/*
 * A lease's handle on another rail (rmpc_lease_on_rail): attached there
 * when first used (ATTACH by id and secret, the handle's access, not
 * exclusive), kept, attached again in place once that rail's connection
 * was made anew, none kept when refused, closed with the lease. Rail 0's
 * handle is the lease itself, attached again after its reconnect. One
 * fake connection plays every rail.
 */
static void test_rail_handles(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = alloc(c, 4096), *m = alloc(c, 4096);
	struct rmp_lease *h = NULL, *h2 = NULL;

	l->access = RMP_ACC_READ | RMP_ACC_WRITE;
	CHECK_EQ(rmpc_lease_on_rail(l, c, 0, &h), 0);
	CHECK(h == l);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 0);
	CHECK_EQ(rmpc_lease_on_rail(l, c, 1, &h), 0);
	CHECK(h != l && h == l->rail[1]);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 1);
	CHECK_EQ(fake_last_req.u.attach.id, l->id);
	CHECK_EQ(fake_last_req.u.attach.secret, l->secret);
	CHECK_EQ(fake_last_req.u.attach.access, RMP_ACC_READ | RMP_ACC_WRITE);
	CHECK_EQ(fake_last_req.u.attach.flags, 0);
	CHECK_EQ(count(c), 3);
	CHECK_EQ(rmpc_lease_on_rail(l, c, 1, &h2), 0);
	CHECK(h2 == h);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 1);
	/* that rail's connection made anew */
	CHECK_EQ(fake_reconnect(c), 0);
	CHECK_EQ(rmpc_lease_on_rail(l, c, 1, &h2), 0);
	CHECK(h2 == h);
	CHECK_EQ(h->gen, c->gen);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 2);
	CHECK_EQ(rmpc_lease_on_rail(l, c, 0, &h2), 0);
	CHECK(h2 == l);
	CHECK_EQ(l->gen, c->gen);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 3);
	/* refused there: no handle kept, the error returned */
	fake_refuse = -EDQUOT;
	CHECK_EQ(rmpc_lease_on_rail(m, c, 2, &h2), -EDQUOT);
	CHECK(!m->rail[2]);
	CHECK_EQ(count(c), 3);
	fake_refuse = 0;
	/* the rail's client goes: its handles are dropped first */
	CHECK_EQ(rmpc_lease_on_rail(m, c, 2, &h2), 0);
	CHECK_EQ(count(c), 4);
	rmpc_lease_rail_drop(c, 2);
	CHECK(!m->rail[2]);
	CHECK_EQ(count(c), 3);
	/* closed with the lease */
	rmp_lease_close(l);
	CHECK_EQ(count(c), 1);
	fake_client_free(c);
}

/* ----------------------------------------------------------- stat */

static bool serve_stat(const struct rmp_msg *req, struct rmp_msg *rep)
{
	(void)req;
	rep->u.stat.pool_bytes = 1 << 30;
	rep->u.stat.tenant_leases = 3;
	rep->u.stat.keys_mode = RMP_KEYS_REGION;
	rep->u.stat.keys = 12;
	return true;
}

static void test_stat(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_pool_stat st = { .size = 16 };

	CHECK_EQ(rmp_stat(c, &st), -EINVAL);
	st.size = sizeof(st);
	fake_serve = serve_stat;
	CHECK_EQ(rmp_stat(c, &st), 0);
	CHECK_EQ(st.pool_bytes, 1 << 30);
	CHECK_EQ(st.client_leases, 3);
	CHECK_STR(st.keys_mode, "region");
	CHECK_EQ(st.keys, 12);
	fake_serve = fake_serve_grant;
	fake_refuse = -EKEYREVOKED;
	CHECK_EQ(rmp_stat(c, &st), -EKEYREVOKED);
	CHECK_STR(c->errbuf, "server refused STAT");
	fake_client_free(c);
}

int main(void)
{
	test_alloc_args();
	test_alloc();
	test_alloc_bad_reply();
	test_alloc_room_returning();
	test_attach();
	test_expiry();
	test_renew_free();
	test_reconnect();
	test_rail_handles();
	test_stat();
	return check_done();
}

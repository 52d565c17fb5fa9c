/* SPDX-License-Identifier: MIT */
/*
 * test_lease_refresh.c -- a data call on a lease whose deadline passed by
 * the library's clock asks the server first (client/lease.c): the lease
 * lives on, is gone (-EKEYEXPIRED), or the question found no answer (its
 * own error, not -EKEYEXPIRED).
 *
 * lease.c runs on its own: the control RPC and the connection checks of
 * chan.c are stubbed here, each reply scripted.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "chan.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

/* ---------------------------------------------------- the stubbed chan */

static struct rmp_msg sent;   /* the last request */
static unsigned rpcs;         /* requests sent */
static int reply_err;         /* what rmpc_rpc returns */
static struct rmp_lease_desc reply; /* the reply's lease, when 0 */

int rmpc_rpc(struct rmp_client *c, struct rmp_msg *m)
{
	(void)c;
	sent = *m;
	rpcs++;
	if (reply_err)
		return reply_err;
	memset(&m->u, 0, sizeof(m->u));
	m->u.lease = reply;
	return 0;
}

int rmpc_check_conn(struct rmp_client *c)
{
	return c->conn == RMPC_CONN_UP ? 0 : -ENOTCONN;
}

int rmpc_conn_ready(struct rmp_client *c)
{
	return rmpc_check_conn(c);
}

/* ------------------------------------------------------------- helpers */

static struct rmp_client client;
static struct rmp_lease lease;

/*
 * A lease of a connected client, attached on this connection: its key
 * 0x1234, read and write access. expired: its ttl ran out 5 ms ago.
 */
static void setup(bool expired)
{
	memset(&client, 0, sizeof(client));
	client.conn = RMPC_CONN_UP;
	client.gen = 3;
	memset(&lease, 0, sizeof(lease));
	lease.c = &client;
	lease.gen = 3;
	lease.id = 0xabc;
	lease.secret = 0x5ec;
	lease.rkey = 0x1234;
	lease.access = RMP_ACCESS_READ | RMP_ACCESS_WRITE;
	lease.ttl_ms = 1000;
	lease.stamp_ms = rmp_now_ms() - (expired ? 1005 : 10);
	memset(&reply, 0, sizeof(reply));
	reply.id = lease.id;
	reply.rkey = lease.rkey;
	reply.ttl_ms = 60000;
	reply_err = 0;
	rpcs = 0;
}

/* ---------------------------------------------------------------- tests */

/* Within the deadline nothing is asked; past it, an ATTACH of the same
 * access on this connection, and a lease that lives on goes ahead with
 * the server's new ttl. */
static void test_lives_on(void)
{
	setup(false);
	CHECK_EQ(rmpc_lease_usable(&lease, true), 0);
	CHECK_EQ(rpcs, 0);

	setup(true);
	CHECK_EQ(rmpc_lease_usable(&lease, true), 0);
	CHECK_EQ(rpcs, 1);
	CHECK_EQ(sent.hdr.opcode, RMP_OP_ATTACH);
	CHECK_EQ(sent.u.attach.id, 0xabc);
	CHECK_EQ(sent.u.attach.secret, 0x5ec);
	CHECK_EQ(sent.u.attach.access, RMP_ACCESS_READ | RMP_ACCESS_WRITE);
	CHECK_EQ(sent.u.attach.flags, 0);
	CHECK_EQ(lease.ttl_ms, 60000);
	/* A call that does not check the deadline asks nothing. */
	setup(true);
	CHECK_EQ(rmpc_lease_usable(&lease, false), 0);
	CHECK_EQ(rpcs, 0);
}

/* The server says the lease is gone, or answers for another key or no
 * time left: -EKEYEXPIRED, and the text says so. */
static void test_gone(void)
{
	setup(true);
	reply_err = -EKEYEXPIRED;
	CHECK_EQ(rmpc_lease_usable(&lease, true), -EKEYEXPIRED);
	CHECK(strstr(rmp_client_last_error(&client), "expired") != NULL);

	setup(true);
	reply_err = -ENOENT; /* freed, or expired long ago */
	CHECK_EQ(rmpc_lease_usable(&lease, true), -EKEYEXPIRED);

	setup(true);
	reply.rkey = 0x9999; /* this connection's key was revoked */
	CHECK_EQ(rmpc_lease_usable(&lease, true), -EKEYEXPIRED);

	setup(true);
	reply.ttl_ms = 0;
	CHECK_EQ(rmpc_lease_usable(&lease, true), -EKEYEXPIRED);
}

/* The question found no answer: the lease may well live on, so the
 * caller gets what went wrong, not "expired". */
static void test_no_answer(void)
{
	static const int errs[] = { -ETIMEDOUT, -ENOTCONN, -EIO, -EPROTO,
				    -EKEYREVOKED, -EAGAIN, -ENOMEM };

	for (size_t i = 0; i < RMP_ARRAY_SIZE(errs); i++) {
		setup(true);
		reply_err = errs[i];
		CHECK_EQ(rmpc_lease_usable(&lease, true), errs[i]);
		CHECK_EQ(lease.ttl_ms, 1000); /* nothing learned */
	}
}

int main(void)
{
	test_lives_on();
	test_gone();
	test_no_answer();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * test_client_chan.c -- a connection's queues (client/chan.c) on fake
 * verbs: completions retire what they cover, errors per opcode and
 * status, flushes after a QP error, completions and replies that are not
 * the awaited one, the control RPC's replies, and the reconnect upcall.
 *
 * chan.c is linked with error.c and spin.c only; fake_client.c is the
 * NIC and the server (see fake_client.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chan.h"
#include "check.h"
#include "fake_client.h"
#include "state.h"
#include "util.h"

/* ----------------------------------------------------------- helpers */

/* post -- n data WRs of kind on one chain, the last signaled (and every
 * one in signaled_all); the async ones take ring entries first..first+n-1
 * as rmp_submit would. Returns the fake_wrs index of the first. */
static unsigned post(struct rmp_client *c, enum rmpc_sq_kind kind,
		     unsigned first, unsigned n, enum ibv_wr_opcode opcode,
		     bool signaled_all)
{
	struct ibv_send_wr wr[16];
	struct ibv_sge sge[16];
	unsigned i, at = fake_nwrs;

	memset(wr, 0, sizeof(wr));
	CHECK_EQ(rmpc_sq_reserve(c, n), 0);
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)c->bounce,
					   .length = 8, .lkey = 1 };
		wr[i].wr_id = rmpc_sq_take(c, kind, first + i, opcode);
		wr[i].opcode = opcode;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].wr.rdma.remote_addr = FAKE_REMOTE_ADDR;
		wr[i].wr.rdma.rkey = fake_rkey;
		if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].wr.atomic.remote_addr = FAKE_REMOTE_ADDR;
			wr[i].wr.atomic.rkey = fake_rkey;
		}
		if (signaled_all || i + 1 == n)
			wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		if (kind == RMPC_SQ_ASYNC)
			c->ring[first + i].state = RMPC_OP_POSTED;
	}
	CHECK_EQ(rmpc_post_send(c, wr, NULL), 0);
	return at;
}

static bool sq_passed(struct rmp_client *c, const void *arg)
{
	return c->sq_done > *(const uint64_t *)arg;
}

/* ------------------------------------------------------- completions */

/* One signaled completion retires the unsignaled WRs before it. */
static void test_chain_retires(void)
{
	struct rmp_client *c = fake_client_new();
	uint32_t room = rmpc_sq_room(c);
	unsigned at;

	fake_hold = true;
	at = post(c, RMPC_SQ_SYNC, 0, 3, IBV_WR_RDMA_READ, false);
	CHECK_EQ(rmpc_sq_room(c), room - 3);
	rmpc_poll_cq(c);
	CHECK_EQ(c->sq_done, 0); /* nothing completed yet */
	fake_complete(at + 2, IBV_WC_SUCCESS);
	rmpc_poll_cq(c);
	CHECK_EQ(c->sq_done, 3);
	CHECK_EQ(rmpc_sq_room(c), room);
	CHECK_EQ(c->sync_err, 0);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	CHECK_EQ(fake_qp_errors, 0);
	fake_client_free(c);
}

static const struct {
	enum ibv_wr_opcode opcode;
	const char *name;
} opcodes[] = {
	{ IBV_WR_RDMA_READ, "RDMA READ" },
	{ IBV_WR_RDMA_WRITE, "RDMA WRITE" },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, "RDMA compare-and-swap" },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, "RDMA fetch-and-add" },
};

static const struct {
	enum ibv_wc_status status;
	int err;
	const char *text;
} statuses[] = {
	/* Our checks passed, so the server revoked the key. */
	{ IBV_WC_REM_ACCESS_ERR, -EKEYREVOKED, " refused by the server: "
	  "remote access error (lease key revoked: another holder's "
	  "exclusive attach, a repair, an operator, or the lease ended)" },
	/* No answer from the server's host. */
	{ IBV_WC_RETRY_EXC_ERR, -ETIMEDOUT, " completed with error: "
	  "transport retry counter exceeded (vendor error 0x42)" },
	{ IBV_WC_REM_OP_ERR, -EIO, " completed with error: remote "
	  "operation error" },
	{ IBV_WC_LOC_PROT_ERR, -EIO, " completed with error: local "
	  "protection error" },
	/* The QP went to error before we knew. */
	{ IBV_WC_WR_FLUSH_ERR, -ENOTCONN, " completed with error: Work "
	  "Request Flushed Error" },
};

/* Each error status of each data opcode: its errno for the waiting call,
 * a text naming the operation, the connection failed once. */
static void test_error_per_opcode(void)
{
	struct rmp_client *c;
	unsigned o, s, at;
	char want[160];

	for (o = 0; o < RMP_ARRAY_SIZE(opcodes); o++) {
		for (s = 0; s < RMP_ARRAY_SIZE(statuses); s++) {
			c = fake_client_new();
			fake_hold = true;
			at = post(c, RMPC_SQ_SYNC, 0, 1, opcodes[o].opcode,
				  false);
			fake_complete(at, statuses[s].status);
			rmpc_poll_cq(c);
			CHECK_EQ(c->sync_err, statuses[s].err);
			CHECK(rmpc_broken(c));
			CHECK_EQ(c->sq_done, 1);
			CHECK_EQ(fake_qp_errors, 1);
			snprintf(want, sizeof(want), "%s%s", opcodes[o].name,
				 statuses[s].text);
			CHECK_HAS(c->errbuf, want);
			CHECK_EQ(rmpc_check_conn(c), -ENOTCONN);
			CHECK_HAS(c->errbuf, "connection failed earlier");
			CHECK_HAS(c->errbuf, want);
			fake_client_free(c);
		}
	}
	CHECK_STR(rmpc_wr_name(IBV_WR_SEND), "control SEND");
	CHECK_STR(rmpc_wr_name(IBV_WR_BIND_MW), "work request");
}

/*
 * Async ops: a completion marks every op it covers done; an error in the
 * middle of a chain leaves the ops before it done without error, gives
 * the failed one its errno, and the ones after it flush (-ENOTCONN).
 */
static void test_async_error_and_flush(void)
{
	struct rmp_client *c = fake_client_new();
	unsigned at, i;

	fake_hold = true;
	at = post(c, RMPC_SQ_ASYNC, 0, 3, IBV_WR_RDMA_WRITE, false);
	fake_complete(at + 2, IBV_WC_SUCCESS);
	rmpc_poll_cq(c);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(c->ring[i].state, RMPC_OP_DONE);
		CHECK_EQ(c->ring[i].status, 0);
	}
	at = post(c, RMPC_SQ_ASYNC, 3, 4, IBV_WR_RDMA_READ, false);
	fake_complete(at + 1, IBV_WC_RETRY_EXC_ERR);
	rmpc_poll_cq(c);
	CHECK_EQ(c->ring[3].status, 0);
	CHECK_EQ(c->ring[4].status, -ETIMEDOUT);
	CHECK_EQ(c->ring[5].status, -ENOTCONN);
	CHECK_EQ(c->ring[6].status, -ENOTCONN);
	for (i = 3; i < 7; i++)
		CHECK_EQ(c->ring[i].state, RMPC_OP_DONE);
	CHECK_EQ(c->sq_done, c->sq_posted);
	/* The first error's text stays: the flushes do not replace it. */
	CHECK_HAS(c->errbuf, "RDMA READ completed with error: transport "
		  "retry counter exceeded");
	CHECK_HAS(c->failbuf, "transport retry counter exceeded");
	CHECK_EQ(fake_qp_errors, 1);
	fake_client_free(c);
}

/*
 * rmpc_fail (a timeout, a disconnect): the QP goes to error once, and
 * everything outstanding, unsignaled WRs included, completes flushed.
 */
static void test_fail_flushes_outstanding(void)
{
	struct rmp_client *c = fake_client_new();
	unsigned i;

	fake_hold = true;
	post(c, RMPC_SQ_ASYNC, 0, 4, IBV_WR_RDMA_WRITE, false);
	post(c, RMPC_SQ_SYNC, 0, 2, IBV_WR_RDMA_READ, false);
	rmpc_fail(c);
	rmpc_fail(c);
	CHECK_EQ(fake_qp_errors, 1);
	rmpc_poll_cq(c);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(c->ring[i].state, RMPC_OP_DONE);
		CHECK_EQ(c->ring[i].status, -ENOTCONN);
	}
	CHECK_EQ(c->sync_err, -ENOTCONN);
	CHECK_EQ(c->sq_done, c->sq_posted);
	CHECK_EQ(rmpc_check_conn(c), -ENOTCONN);
	CHECK_HAS(c->errbuf, "connection failed earlier (connection failed)");
	fake_client_free(c);
}

/*
 * Completions that are not for what waits: one of another op does not
 * end the wait (but is recorded for its own op); one for a WR already
 * retired, or never posted, changes nothing.
 */
static void test_not_the_awaited_one(void)
{
	struct rmp_client *c = fake_client_new();
	struct ibv_wc stale = { .status = IBV_WC_REM_ACCESS_ERR };
	uint64_t last, done;
	unsigned async_at, sync_at;

	fake_hold = true;
	async_at = post(c, RMPC_SQ_ASYNC, 0, 1, IBV_WR_RDMA_READ, false);
	sync_at = post(c, RMPC_SQ_SYNC, 0, 1, IBV_WR_RDMA_WRITE, false);
	last = fake_wrs[sync_at].wr_id;
	fake_complete(async_at, IBV_WC_SUCCESS);
	CHECK_EQ(rmpc_wait(c, RMPC_WAIT_DATA, sq_passed, &last, 30),
		 -ETIMEDOUT);
	CHECK_EQ(c->ring[0].state, RMPC_OP_DONE);
	CHECK(fake_arms > 0); /* it armed the CQ before it slept */
	fake_complete(sync_at, IBV_WC_SUCCESS);
	CHECK_EQ(rmpc_wait(c, RMPC_WAIT_DATA, sq_passed, &last, 30), 0);
	CHECK_EQ(c->sync_err, 0);

	/* Stale and unknown sequence numbers, even with an error. */
	done = c->sq_done;
	stale.wr_id = fake_wrs[async_at].wr_id;
	fake_push_wc(&stale);
	stale.wr_id = c->sq_posted + 3;
	fake_push_wc(&stale);
	rmpc_poll_cq(c);
	CHECK_EQ(c->sq_done, done);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	CHECK_STR(c->errbuf, "");
	fake_client_free(c);
}

/* A post the provider refuses: -EIO and *bad the first WR not posted;
 * the connection fails, and a refusal after that says -ENOTCONN. */
static void test_post_refused(void)
{
	struct rmp_client *c = fake_client_new();
	struct ibv_send_wr wr[3], *bad = NULL;
	unsigned i;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = rmpc_sq_take(c, RMPC_SQ_SYNC, 0,
					   IBV_WR_RDMA_READ);
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	fake_hold = true;
	fake_post_error = ENOMEM;
	fake_post_fail_at = 1;
	CHECK_EQ(rmpc_post_send(c, wr, &bad), -EIO);
	CHECK(bad == &wr[1]);
	CHECK_EQ(fake_nwrs, 1);
	CHECK(rmpc_broken(c));
	CHECK_EQ(fake_qp_errors, 1);
	CHECK_HAS(c->errbuf, "ibv_post_send failed: Cannot allocate memory");
	/* Refused again: the connection had failed already; the first
	 * text stays. */
	fake_post_error = EINVAL;
	fake_post_fail_at = 0;
	CHECK_EQ(rmpc_post_send(c, &wr[2], NULL), -ENOTCONN);
	CHECK_HAS(c->errbuf, "Cannot allocate memory");
	CHECK_EQ(fake_qp_errors, 1);
	fake_client_free(c);
}

/* A full send queue: a reservation waits for completions, and fails
 * after the op timeout without failing the connection. */
static void test_sq_full(void)
{
	struct rmp_client *c = fake_client_new();
	unsigned at = 0, n;

	CHECK_EQ(rmpc_sq_reserve(c, c->sq_depth + 1), -EINVAL);
	fake_hold = true;
	while (rmpc_sq_room(c)) {
		n = RMP_MIN(rmpc_sq_room(c), 16u);
		at = post(c, RMPC_SQ_SYNC, 0, n, IBV_WR_RDMA_WRITE, false);
		at += n - 1;
	}
	CHECK_EQ(rmpc_sq_reserve(c, 1), -ETIMEDOUT);
	CHECK_HAS(c->errbuf, "send queue stayed full for 50 ms");
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	fake_complete(at, IBV_WC_SUCCESS);
	CHECK_EQ(rmpc_sq_reserve(c, 1), 0);
	CHECK_EQ(rmpc_sq_room(c), c->sq_depth);
	fake_client_free(c);
}

/* A receive that fails breaks the connection; a flushed one says
 * nothing of its own; a slot we never posted is ignored. */
static void test_recv_errors(void)
{
	struct rmp_client *c = fake_client_new();
	struct ibv_wc wc = { .wr_id = RMPC_WRID_RECV | 3,
			     .status = IBV_WC_LOC_LEN_ERR };

	fake_push_wc(&wc);
	rmpc_poll_cq(c);
	CHECK(rmpc_broken(c));
	CHECK_HAS(c->errbuf, "control receive failed: local length error");
	fake_client_free(c);

	c = fake_client_new();
	wc.wr_id = RMPC_WRID_RECV | RMPC_NRECV;
	fake_push_wc(&wc);
	rmpc_poll_cq(c);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	wc.wr_id = RMPC_WRID_RECV | 0;
	wc.status = IBV_WC_WR_FLUSH_ERR;
	fake_push_wc(&wc);
	rmpc_poll_cq(c);
	CHECK(rmpc_broken(c));
	CHECK_STR(c->errbuf, "");
	fake_client_free(c);
}

/* --------------------------------------------------------------- RPC */

static struct rmp_msg stat_req(void)
{
	struct rmp_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_STAT;
	return m;
}

/* Replies come back to their request; more requests than receive
 * buffers work (each is posted again); every credit returns. */
static void test_rpc_replies(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_msg m;
	uint64_t first = 0;
	unsigned i;
	int fails = 0;

	for (i = 0; i < 3 * RMPC_NRECV; i++) {
		m = stat_req();
		fails += rmpc_rpc(c, &m) != 0;
		if (i == 0)
			first = fake_last_req.hdr.req_id;
	}
	CHECK_EQ(fails, 0);
	CHECK_EQ(fake_last_req.hdr.req_id, first + 3 * RMPC_NRECV - 1);
	CHECK(m.hdr.flags & RMP_MSG_F_REPLY);
	CHECK_EQ(m.hdr.opcode, RMP_OP_STAT);
	CHECK_EQ(c->ctl_inflight, 0);
	for (i = 0; i < RMPC_NSEND; i++)
		CHECK(!c->send_busy[i]);
	CHECK_EQ(fake_reqs[RMP_OP_STAT], 3 * RMPC_NRECV);
	fake_client_free(c);
}

static bool serve_other_opcode(const struct rmp_msg *req, struct rmp_msg *rep)
{
	(void)req;
	rep->hdr.opcode = RMP_OP_FREE;
	return true;
}

static bool serve_detail(const struct rmp_msg *req, struct rmp_msg *rep)
{
	(void)req;
	rep->hdr.status = -EDQUOT;
	rep->hdr.flags = RMP_MSG_F_DETAIL(RMP_DETAIL_BYTES);
	return true;
}

static bool serve_bad_status(const struct rmp_msg *req, struct rmp_msg *rep)
{
	(void)req;
	rep->hdr.status = -5000;
	return true;
}

/* What a reply may say: a refusal with or without detail, another
 * opcode, a status beyond errno, a reply that does not decode. */
static void test_rpc_refusals(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_msg m;

	fake_serve = serve_detail;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -EDQUOT);
	CHECK_HAS(c->errbuf, "server refused STAT: tenant limit exceeded: "
		  "the tenant's byte limit");
	CHECK_EQ(c->rpc_detail, RMP_DETAIL_BYTES);

	c->errbuf[0] = '\0';
	fake_serve = fake_serve_grant;
	fake_refuse = -ENOENT;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ENOENT);
	CHECK_STR(c->errbuf, ""); /* the caller explains it */

	fake_serve = serve_other_opcode;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -EPROTO);
	CHECK_HAS(c->errbuf, "server answered STAT with FREE");

	fake_serve = serve_bad_status;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -EPROTO);
	CHECK_HAS(c->errbuf, "server answered STAT with status -5000");

	fake_serve = fake_serve_grant;
	fake_refuse = 0;
	fake_reply_trim = 4;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -EPROTO);
	CHECK_HAS(c->errbuf, "malformed STAT reply from the server");
	fake_reply_trim = 0;

	CHECK_EQ(c->conn, RMPC_CONN_UP); /* none of these breaks the connection */
	CHECK_EQ(c->ctl_inflight, 0);
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), 0);
	fake_client_free(c);
}

static uint64_t late_id;

/* The late reply of a request that timed out comes first, then this one's. */
static bool serve_late_first(const struct rmp_msg *req, struct rmp_msg *rep)
{
	struct rmp_msg late;

	memset(&late, 0, sizeof(late));
	late.hdr.opcode = RMP_OP_STAT;
	late.hdr.flags = RMP_MSG_F_REPLY;
	late.hdr.req_id = late_id;
	late.hdr.status = -ENOENT;
	fake_reply(&late);
	return fake_serve_grant(req, rep);
}

/* No reply: -ETIMEDOUT, the credit held. The late reply, when it comes
 * during the next request, is not taken for that one's, and gives its
 * credit back. With every credit held, a request is not even sent. */
static void test_rpc_late_reply(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_msg m;

	fake_serve = NULL;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ETIMEDOUT);
	CHECK_HAS(c->errbuf, "no reply to STAT within 50 ms");
	CHECK_EQ(c->ctl_inflight, 1);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	late_id = fake_last_req.hdr.req_id;

	fake_serve = serve_late_first;
	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_RENEW;
	fake_ttl_ms = 777;
	CHECK_EQ(rmpc_rpc(c, &m), 0);
	CHECK_EQ(m.hdr.opcode, RMP_OP_RENEW);
	CHECK_EQ(m.u.renew_rep.ttl_ms, 777);
	CHECK_EQ(c->ctl_inflight, 0);

	c->credits = 1;
	fake_serve = NULL;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ETIMEDOUT);
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ETIMEDOUT);
	CHECK_HAS(c->errbuf, "server answers no control requests (1 "
		  "outstanding)");
	CHECK_EQ(fake_reqs[RMP_OP_STAT], 2); /* the third was never sent */
	fake_client_free(c);
}

static bool serve_disconnect(const struct rmp_msg *req, struct rmp_msg *rep)
{
	(void)req;
	(void)rep;
	fake_cm_event(RDMA_CM_EVENT_DISCONNECTED);
	return false;
}

/* The server closes the connection while a request waits, or the SEND
 * itself fails: -ENOTCONN, saying why. */
static void test_rpc_connection_lost(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_msg m;

	fake_serve = serve_disconnect;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ENOTCONN);
	CHECK_EQ(c->conn, RMPC_CONN_CLOSED);
	CHECK_EQ(fake_qp_errors, 1);
	CHECK_HAS(c->errbuf, "connection failed earlier (server closed the "
		  "connection)");
	fake_client_free(c);

	c = fake_client_new();
	fake_fail_next = IBV_WC_RETRY_EXC_ERR;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ENOTCONN);
	CHECK_HAS(c->failbuf, "control SEND completed with error: transport "
		  "retry counter exceeded");
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), -ENOTCONN);
	CHECK_EQ(fake_nreqs, 0); /* nothing reached the server */
	fake_client_free(c);
}

/* ---------------------------------------------------- reconnect upcall */

/*
 * rmpc_conn_ready calls the upcall only when the connection is lost,
 * reconnecting is on, and no upcall runs already; a control request on a
 * lost connection goes out on the new one.
 */
static void test_reconnect_upcall(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_msg m;
	uint64_t gen = c->gen;

	CHECK_EQ(rmpc_conn_ready(c), 0);
	rmpc_fail(c);
	CHECK_EQ(rmpc_conn_ready(c), -ENOTCONN); /* reconnecting is off */
	CHECK_EQ(fake_reconnects, 0);

	c->auto_reconnect = true;
	c->reconnecting = true;
	CHECK_EQ(rmpc_conn_ready(c), -ENOTCONN); /* inside the upcall */
	CHECK_EQ(fake_reconnects, 0);
	c->reconnecting = false;

	fake_reconnect_err = -ENOTCONN;
	CHECK_EQ(rmpc_conn_ready(c), -ENOTCONN);
	CHECK_EQ(fake_reconnects, 1);
	CHECK_HAS(c->errbuf, "reconnecting failed");

	fake_reconnect_err = 0;
	m = stat_req();
	CHECK_EQ(rmpc_rpc(c, &m), 0);
	CHECK_EQ(fake_reconnects, 2);
	CHECK(c->gen > gen);
	CHECK_EQ(fake_reqs[RMP_OP_STAT], 1);
	CHECK_EQ(rmpc_conn_ready(c), 0);
	CHECK_EQ(fake_reconnects, 2);

	c->conn = RMPC_CONN_DOWN;
	c->auto_reconnect = false;
	CHECK_EQ(rmpc_check_conn(c), -ENOTCONN);
	CHECK_HAS(c->errbuf, "client is not connected");
	fake_client_free(c);
}

/* The connection's states (state.h): each transition of the table, and
 * those it has not (a closed connection is not made broken again, a
 * broken one not up), ignored. */
static void test_conn_states(void)
{
	struct rmp_client c = { .conn = RMPC_CONN_DOWN };

	rmpc_conn_set(&c, RMPC_CONN_UP);
	CHECK_EQ(c.conn, RMPC_CONN_UP);
	CHECK(rmpc_connected(&c) && !rmpc_broken(&c));
	rmpc_conn_set(&c, RMPC_CONN_BROKEN);
	CHECK_EQ(c.conn, RMPC_CONN_BROKEN);
	CHECK(rmpc_connected(&c) && rmpc_broken(&c));
	rmpc_conn_set(&c, RMPC_CONN_UP); /* only a reconnect: DOWN first */
	CHECK_EQ(c.conn, RMPC_CONN_BROKEN);
	rmpc_conn_set(&c, RMPC_CONN_CLOSED);
	CHECK_EQ(c.conn, RMPC_CONN_CLOSED);
	rmpc_fail(&c); /* the QP is gone with it: nothing to do */
	CHECK_EQ(c.conn, RMPC_CONN_CLOSED);
	rmpc_conn_set(&c, RMPC_CONN_BROKEN);
	CHECK_EQ(c.conn, RMPC_CONN_CLOSED);
	CHECK(rmpc_connected(&c) && rmpc_broken(&c));
	rmpc_conn_set(&c, RMPC_CONN_DOWN);
	CHECK_EQ(c.conn, RMPC_CONN_DOWN);
	CHECK(!rmpc_connected(&c) && !rmpc_broken(&c));
	/* closed by the server while up: broken too */
	rmpc_conn_set(&c, RMPC_CONN_UP);
	rmpc_conn_set(&c, RMPC_CONN_CLOSED);
	CHECK(rmpc_broken(&c));
}

int main(void)
{
	test_chain_retires();
	test_error_per_opcode();
	test_async_error_and_flush();
	test_fail_flushes_outstanding();
	test_not_the_awaited_one();
	test_post_refused();
	test_sq_full();
	test_recv_errors();
	test_rpc_replies();
	test_rpc_refusals();
	test_rpc_late_reply();
	test_rpc_connection_lost();
	test_reconnect_upcall();
	test_conn_states();
	return check_done();
}

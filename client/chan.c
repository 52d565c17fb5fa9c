/* SPDX-License-Identifier: MIT */
/* chan.c -- a connection's queues: receives, completions, the send queue, waiting, the control RPC. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "chan.h"
#include "error.h"
#include "proto.h"
#include "spin.h"
#include "state.h"
#include "util.h"

const char *rmpc_wr_name(unsigned opcode)
{
	switch (opcode) {
	case IBV_WR_RDMA_READ:
		return "RDMA READ";
	case IBV_WR_RDMA_WRITE:
		return "RDMA WRITE";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "RDMA compare-and-swap";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "RDMA fetch-and-add";
	case IBV_WR_SEND:
		return "control SEND";
	}
	return "work request";
}

/* ---- completions --------------------------------------------------- */

/* retire_op -- a SYNC or ASYNC data-path WR (seq) completed with
 * status: record it in c->sync_err or its op of the async ring. A late
 * chain's (left in flight by a late-bound read, io_sync.c) is nobody's:
 * the chain waited for now is a later one, and learns of a failure of
 * the connection from its own flushed WRs. */
static void retire_op(struct rmp_client *c, const struct rmpc_sq_slot *s,
		      uint64_t seq, int status)
{
	struct rmpc_op *op;

	if (s->kind == RMPC_SQ_SYNC) {
		if (status && !c->sync_err &&
		    (c->late_gen != c->gen || seq > c->late_last))
			c->sync_err = status;
		return;
	}
	if (s->idx >= c->ring_size)
		return;
	op = &c->ring[s->idx];
	if (op->state == RMPC_OP_POSTED) {
		op->status = status;
		op->state = RMPC_OP_DONE;
	}
}


/* wc_errno -- the API error for a completion status. */
static int wc_errno(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return -ENOTCONN;
	case IBV_WC_REM_ACCESS_ERR:
		/* Our range and rights checks passed: the server revoked the
		 * key (another holder took the lease over, a repair fenced
		 * it, an operator revoked it, it ended). */
		return -EKEYREVOKED;
	case IBV_WC_RETRY_EXC_ERR:
		/* The transport's retries ran out: no answer from the
		 * server's host (down, or the network between is). */
		return -ETIMEDOUT;
	default:
		return -EIO;
	}
}

void rmpc_conn_set(struct rmp_client *c, enum rmpc_conn_state to)
{
	enum rmpc_conn_state from = c->conn;
	bool ok;

	switch (to) {
	case RMPC_CONN_DOWN:
		ok = true;
		break;
	case RMPC_CONN_UP:
		ok = from == RMPC_CONN_DOWN;
		break;
	case RMPC_CONN_BROKEN:
		ok = from == RMPC_CONN_DOWN || from == RMPC_CONN_UP;
		break;
	default: /* CLOSED */
		ok = from != RMPC_CONN_CLOSED;
		break;
	}
	if (ok)
		c->conn = to;
}

void rmpc_fail(struct rmp_client *c)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (rmpc_broken(c))
		return;
	rmpc_conn_set(c, RMPC_CONN_BROKEN);
	snprintf(c->failbuf, sizeof(c->failbuf), "%s",
		 c->errbuf[0] ? c->errbuf : "connection failed");
	if (c->qp)
		ibv_modify_qp(c->qp, &attr, IBV_QP_STATE);
}

int rmpc_check_conn(struct rmp_client *c)
{
	if (!rmpc_connected(c)) {
		rmpc_set_error(c, "client is not connected");
		return -ENOTCONN;
	}
	if (rmpc_broken(c)) {
		rmpc_set_error(c, "connection failed earlier (%s); close and "
			       "reconnect", c->failbuf);
		return -ENOTCONN;
	}
	return 0;
}

int rmpc_conn_ready(struct rmp_client *c)
{
	int err = rmpc_check_conn(c);

	if (err && c->auto_reconnect && !c->reconnecting && c->reconnect)
		err = c->reconnect(c);
	return err;
}

int rmpc_post_recv(struct rmp_client *c, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->ctl_mem + (size_t)slot * RMP_MSG_MAX),
		.length = RMP_MSG_MAX,
		.lkey = c->ctl_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = RMPC_WRID_RECV | slot,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ibv_recv_wr *bad;

	return -ibv_post_recv(c->qp, &wr, &bad);
}

/* handle_recv -- a control message arrived: match it to the waiting call. */
static void handle_recv(struct rmp_client *c, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)(wc->wr_id & ~RMPC_WRID_RECV);
	struct rmp_msg m;
	int err;

	if (slot >= RMPC_NRECV)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		if (!rmpc_broken(c) && wc->status != IBV_WC_WR_FLUSH_ERR)
			rmpc_set_error(c, "control receive failed: %s",
				       ibv_wc_status_str(wc->status));
		rmpc_fail(c);
		return;
	}
	err = rmp_msg_decode(c->ctl_mem + (size_t)slot * RMP_MSG_MAX,
			     wc->byte_len, &m);
	if (!rmpc_broken(c) && rmpc_post_recv(c, slot)) {
		rmpc_set_error(c, "cannot re-post a control receive buffer");
		rmpc_fail(c);
	}
	/* No header, or not a reply: nothing we could match; drop it. */
	if (m.hdr.magic != RMP_MSG_MAGIC || !(m.hdr.flags & RMP_MSG_F_REPLY))
		return;
	if (c->ctl_inflight)
		c->ctl_inflight--;
	if (c->rpc_wait_id && m.hdr.req_id == c->rpc_wait_id) {
		c->rpc_rep = m;
		c->rpc_err = err;
		c->rpc_done = true;
		c->rpc_wait_id = 0;
	}
	/* else: the late reply of a request that timed out. */
}

/*
 * handle_send -- a send WR completed: retire it and every earlier
 * unsignaled WR (they completed before it, successfully, unless the
 * connection had already failed).
 */
static void handle_send(struct rmp_client *c, const struct ibv_wc *wc)
{
	uint64_t seq = wc->wr_id;
	int err = wc_errno(wc->status);
	struct rmpc_sq_slot *s;
	int st;

	if (seq < c->sq_done || seq >= c->sq_posted)
		return;
	if (err && !rmpc_broken(c)) {
		s = &c->sq[seq % c->sq_depth];
		if (err == -EKEYREVOKED)
			rmpc_set_error(c, "%s refused by the server: remote "
				       "access error (lease key revoked: "
				       "another holder's exclusive attach, a "
				       "repair, an operator, or the lease "
				       "ended)", rmpc_wr_name(s->opcode));
		else
			rmpc_set_error(c, "%s completed with error: %s "
				       "(vendor error 0x%x)",
				       rmpc_wr_name(s->opcode),
				       ibv_wc_status_str(wc->status),
				       wc->vendor_err);
	}
	while (c->sq_done <= seq) {
		s = &c->sq[c->sq_done % c->sq_depth];
		st = c->sq_done == seq ? err : (rmpc_broken(c) ? -ENOTCONN : 0);
		switch (s->kind) {
		case RMPC_SQ_CTL:
			if (s->idx < RMPC_NSEND)
				c->send_busy[s->idx] = false;
			break;
		case RMPC_SQ_SYNC:
		case RMPC_SQ_ASYNC:
			retire_op(c, s, c->sq_done, st);
			break;
		default:
			break;
		}
		s->kind = RMPC_SQ_NONE;
		c->sq_done++;
	}
	if (err)
		rmpc_fail(c);
}

void rmpc_poll_cq(struct rmp_client *c)
{
	struct ibv_wc wc[16];
	int n, i;

	if (!c->cq)
		return;
	do {
		n = ibv_poll_cq(c->cq, (int)RMP_ARRAY_SIZE(wc), wc);
		if (n < 0) {
			rmpc_set_error(c, "ibv_poll_cq failed");
			rmpc_fail(c);
			return;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & RMPC_WRID_RECV)
				handle_recv(c, &wc[i]);
			else
				handle_send(c, &wc[i]);
		}
	} while (n == (int)RMP_ARRAY_SIZE(wc));
}

void rmpc_drain_cq_events(struct rmp_client *c)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!c->comp_ch)
		return;
	/* The channel fd is non-blocking: this stops at EAGAIN. */
	while (ibv_get_cq_event(c->comp_ch, &cq, &ctx) == 0) {
		c->cq_unacked++;
		c->cq_armed = false;
	}
	if (c->cq_unacked && c->cq) {
		ibv_ack_cq_events(c->cq, c->cq_unacked);
		c->cq_unacked = 0;
	}
}

void rmpc_arm_cq(struct rmp_client *c)
{
	if (!c->cq || c->cq_armed)
		return;
	/* Marked armed even on failure: then poll() simply times out. */
	c->cq_armed = true;
	if (ibv_req_notify_cq(c->cq, 0)) {
		rmpc_set_error(c, "ibv_req_notify_cq failed");
		rmpc_fail(c);
	}
}

/* cm_events -- rdma_cm events of an established connection. */
static void cm_events(struct rmp_client *c)
{
	struct rdma_cm_event *ev;

	while (c->cm_ch && rdma_get_cm_event(c->cm_ch, &ev) == 0) {
		switch (ev->event) {
		case RDMA_CM_EVENT_REJECTED:
			/* A server that closes a connection before its own
			 * side saw it established (a reply can overtake
			 * that) rejects it: closed all the same. */
		case RDMA_CM_EVENT_DISCONNECTED:
			if (!rmpc_broken(c))
				rmpc_set_error(c, "server closed the connection");
			rmpc_fail(c);
			rmpc_conn_set(c, RMPC_CONN_CLOSED);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			if (!rmpc_broken(c))
				rmpc_set_error(c, "RDMA device removed");
			rmpc_fail(c);
			break;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

static uint64_t spin_ns(const struct rmp_client *c, enum rmpc_wait_kind kind)
{
	return rmpc_spin_budget_ns(c->wait_avg_ns[kind],
				   (uint64_t)c->opts.spin_max_us * 1000,
				   kind == RMPC_WAIT_OTHER);
}

static void wait_took(struct rmp_client *c, enum rmpc_wait_kind kind,
		      uint64_t ns)
{
	c->wait_avg_ns[kind] = rmpc_spin_avg_ns(c->wait_avg_ns[kind], ns,
					 (uint64_t)c->opts.spin_max_us * 1000);
}

/*
 * wait_on -- rmpc_wait_some's loop, for a kind of wait: the longest spin
 * of cs[] for that kind, then poll() on all their channels. out[i]: done
 * (or without queues).
 */
static int wait_on(struct rmp_client *const *cs, unsigned n,
		   enum rmpc_wait_kind kind,
		   bool (*done)(struct rmp_client *c, const void *arg),
		   const void *const *args, unsigned need, bool *out,
		   int timeout_ms)
{
	uint64_t start = rmp_now_ns(), deadline, now, spin = 0;
	struct pollfd pfd[2 * RMPC_WAIT_SOME_MAX];
	struct rmp_client *at[2 * RMPC_WAIT_SOME_MAX];
	unsigned polls = 0;
	int r, wait_ms;

	if (n > RMPC_WAIT_SOME_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		spin = RMP_MAX(spin, spin_ns(cs[i], kind));
	/* On the clock it is checked against below (coarse, no call). */
	deadline = timeout_ms < 0 ? UINT64_MAX :
				    rmp_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		unsigned got = 0, np = 0;
		bool armed = false;

		for (unsigned i = 0; i < n; i++) {
			if (!out[i]) {
				rmpc_poll_cq(cs[i]);
				out[i] = done(cs[i], args[i]) || !cs[i]->cq ||
					 !cs[i]->cm_ch;
			}
			got += out[i];
		}
		if (got >= need)
			return 0;
		/* The clock every 16 polls: without a vDSO clock (some VMs)
		 * each read is a system call. */
		if (++polls % 16 && spin)
			continue;
		if (rmp_now_ns() < start + spin)
			continue;
		for (unsigned i = 0; i < n; i++) {
			if (out[i] || cs[i]->cq_armed)
				continue;
			/* Poll once more after arming: a completion that
			 * came in between raises no event. */
			rmpc_arm_cq(cs[i]);
			armed = true;
		}
		if (armed)
			continue;
		now = rmp_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		wait_ms = deadline == UINT64_MAX ?
				  -1 :
				  (int)RMP_MIN(deadline - now, (uint64_t)INT_MAX);
		for (unsigned i = 0; i < n; i++) {
			if (out[i])
				continue;
			at[np] = at[np + 1] = cs[i];
			pfd[np++] = (struct pollfd){ .fd = cs[i]->comp_ch->fd,
						     .events = POLLIN };
			pfd[np++] = (struct pollfd){ .fd = cs[i]->cm_ch->fd,
						     .events = POLLIN };
		}
		r = poll(pfd, np, wait_ms);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (unsigned i = 0; i < np; i++) {
			if (!pfd[i].revents)
				continue;
			if (i % 2)
				cm_events(at[i]);
			else
				rmpc_drain_cq_events(at[i]);
		}
	}
}

int rmpc_wait(struct rmp_client *c, enum rmpc_wait_kind kind,
	      bool (*done)(struct rmp_client *c, const void *arg),
	      const void *arg, int timeout_ms)
{
	uint64_t start = rmp_now_ns();
	bool out = false;
	int err = wait_on(&c, 1, kind, done, &arg, 1, &out, timeout_ms);

	if (err)
		return err;
	if (!done(c, arg))
		return -ENOTCONN; /* the queues went */
	wait_took(c, kind, rmp_now_ns() - start);
	return 0;
}

int rmpc_wait_some(struct rmp_client *const *cs, unsigned n,
		   bool (*done)(struct rmp_client *c, const void *arg),
		   const void *const *args, unsigned need, bool *out,
		   int timeout_ms)
{
	return wait_on(cs, n, RMPC_WAIT_DATA, done, args, need, out,
		       timeout_ms);
}

/* ---- send queue ---------------------------------------------------- */

uint32_t rmpc_sq_room(const struct rmp_client *c)
{
	return c->sq_depth - (uint32_t)(c->sq_posted - c->sq_done);
}

static bool sq_room_ok(struct rmp_client *c, const void *arg)
{
	return rmpc_broken(c) || rmpc_sq_room(c) >= *(const uint32_t *)arg;
}

int rmpc_sq_reserve(struct rmp_client *c, uint32_t n)
{
	int err;

	if (n > c->sq_depth)
		return -EINVAL;
	if (!rmpc_broken(c) && rmpc_sq_room(c) >= n)
		return 0;
	err = rmpc_wait(c, RMPC_WAIT_OTHER, sq_room_ok, &n,
			c->opts.op_timeout_ms);
	if (err == -ETIMEDOUT)
		rmpc_set_error(c, "send queue stayed full for %d ms",
			       c->opts.op_timeout_ms);
	if (err)
		return err;
	return rmpc_check_conn(c);
}

uint64_t rmpc_sq_take(struct rmp_client *c, enum rmpc_sq_kind kind,
		      uint32_t idx, enum ibv_wr_opcode opcode)
{
	uint64_t seq = c->sq_posted++;
	struct rmpc_sq_slot *s = &c->sq[seq % c->sq_depth];

	s->kind = (uint8_t)kind;
	s->opcode = (uint8_t)opcode;
	s->idx = idx;
	return seq;
}

int rmpc_post_send(struct rmp_client *c, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad)
{
	struct ibv_send_wr *first_bad = NULL;
	bool was_broken = rmpc_broken(c);
	int err;

	err = ibv_post_send(c->qp, wr, &first_bad);
	if (bad)
		*bad = first_bad;
	if (!err)
		return 0;
	if (!was_broken)
		rmpc_set_error(c, "ibv_post_send failed: %s",
			       rmpc_errno_text(-err));
	rmpc_fail(c);
	return was_broken ? -ENOTCONN : -EIO;
}

/* ---- control RPC --------------------------------------------------- */

/* free_send_slot -- a control send buffer not on the SQ, or -1. */
static int free_send_slot(const struct rmp_client *c)
{
	unsigned i;

	for (i = 0; i < RMPC_NSEND; i++)
		if (!c->send_busy[i])
			return (int)i;
	return -1;
}

static bool ctl_ready(struct rmp_client *c, const void *arg)
{
	(void)arg;
	return rmpc_broken(c) ||
	       (c->ctl_inflight < c->credits && free_send_slot(c) >= 0);
}

static bool rpc_replied(struct rmp_client *c, const void *arg)
{
	(void)arg;
	return c->rpc_done || rmpc_broken(c);
}

int rmpc_rpc(struct rmp_client *c, struct rmp_msg *m)
{
	unsigned op = m->hdr.opcode;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int slot, len, err;
	char *buf;

	err = rmpc_conn_ready(c);
	if (err)
		return err;
	/* At most `credits` requests outstanding, late replies included. */
	err = rmpc_wait(c, RMPC_WAIT_OTHER, ctl_ready, NULL,
			c->opts.op_timeout_ms);
	if (err == -ETIMEDOUT)
		rmpc_set_error(c, "server answers no control requests (%u "
			       "outstanding)", c->ctl_inflight);
	if (err)
		return err;
	err = rmpc_sq_reserve(c, 1);
	if (err)
		return err;

	slot = free_send_slot(c);
	if (slot < 0)
		return -EAGAIN; /* not reached: ctl_ready saw a free slot */
	buf = c->ctl_mem + (size_t)(RMPC_NRECV + (unsigned)slot) * RMP_MSG_MAX;
	m->hdr.flags = 0;
	m->hdr.status = 0;
	m->hdr.req_id = ++c->next_req_id;
	len = rmp_msg_encode(buf, RMP_MSG_MAX, m);
	if (len < 0) {
		rmpc_set_error(c, "cannot encode a %s request",
			       rmp_opcode_name(op));
		return len;
	}
	sge = (struct ibv_sge){
		.addr = (uintptr_t)buf,
		.length = (uint32_t)len,
		.lkey = c->ctl_mr->lkey,
	};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rmpc_sq_take(c, RMPC_SQ_CTL, (uint32_t)slot, IBV_WR_SEND);
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	c->send_busy[slot] = true;
	err = rmpc_post_send(c, &wr, NULL);
	if (err)
		return err;
	c->ctl_inflight++;
	c->rpc_wait_id = m->hdr.req_id;
	c->rpc_done = false;
	c->rpc_err = 0;

	err = rmpc_wait(c, RMPC_WAIT_CTL, rpc_replied, NULL,
			c->opts.op_timeout_ms);
	if (!c->rpc_done) {
		/* A late reply is dropped; it still returns its credit. */
		c->rpc_wait_id = 0;
		if (rmpc_broken(c))
			return rmpc_check_conn(c);
		if (err == -ETIMEDOUT)
			rmpc_set_error(c, "no reply to %s within %d ms",
				       rmp_opcode_name(op),
				       c->opts.op_timeout_ms);
		return err ? err : -EIO;
	}
	c->rpc_done = false;
	if (c->rpc_err) {
		rmpc_set_error(c, "malformed %s reply from the server (%s)",
			       rmp_opcode_name(op), rmp_strerror(c->rpc_err));
		return -EPROTO;
	}
	if (c->rpc_rep.hdr.opcode != op) {
		rmpc_set_error(c, "server answered %s with %s",
			       rmp_opcode_name(op),
			       rmp_opcode_name(c->rpc_rep.hdr.opcode));
		return -EPROTO;
	}
	c->rpc_detail = RMP_MSG_DETAIL(c->rpc_rep.hdr.flags);
	if (c->rpc_rep.hdr.status < 0) {
		if (c->rpc_detail)
			rmpc_set_error(c, "server refused %s: %s: %s",
				       rmp_opcode_name(op),
				       rmp_strerror(c->rpc_rep.hdr.status),
				       rmp_detail_str(c->rpc_detail));
		if (c->rpc_rep.hdr.status < -4095) {
			rmpc_set_error(c, "server answered %s with status %d",
				       rmp_opcode_name(op),
				       (int)c->rpc_rep.hdr.status);
			return -EPROTO;
		}
		return c->rpc_rep.hdr.status;
	}
	*m = c->rpc_rep;
	return 0;
}

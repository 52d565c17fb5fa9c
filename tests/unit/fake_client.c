/* SPDX-License-Identifier: MIT */
/* fake_client.c -- fake verbs, NIC and server under a librmpool client (see fake_client.h). */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "chan.h"
#include "error.h"
#include "fake_client.h"
#include "lease.h"
#include "state.h"
#include "util.h"

uint8_t fake_remote[FAKE_REMOTE_LEN];
void (*fake_after_write)(void);
void (*fake_before_read)(uint64_t off, uint32_t len);
uint32_t fake_rkey = 0x5a01;
struct fake_wr fake_wrs[FAKE_WRS_MAX];
unsigned fake_nwrs;
unsigned fake_posts;
bool fake_hold;
enum ibv_wc_status fake_fail_next;
int fake_post_error;
unsigned fake_post_fail_at;
unsigned fake_qp_errors, fake_arms, fake_polls;
bool (*fake_serve)(const struct rmp_msg *req, struct rmp_msg *rep);
unsigned fake_reqs[RMP_OP_MAX + 1], fake_nreqs;
struct rmp_msg fake_last_req;
int fake_refuse, fake_reply_trim;
uint64_t fake_ttl_ms;
int fake_reconnect_err;
unsigned fake_reconnects;

static struct ibv_context ctx;
static struct ibv_pd pd = { .context = &ctx };
static struct ibv_comp_channel comp_ch = { .context = &ctx, .fd = -1 };
static struct rdma_event_channel cm_ch = { .fd = -1 };
static int cm_pipe[2] = { -1, -1 }, comp_pipe[2] = { -1, -1 };
static struct ibv_mr ctl_mr = { .context = &ctx, .lkey = 0xc1 };
static struct ibv_mr bounce_mr = { .context = &ctx, .lkey = 0xb1 };

/* A fake NIC's queue pair: its CQ, a FIFO of completions, and the
 * receive buffers posted, in order (slot wr_id, address). */
static struct nic {
	struct ibv_cq cq;
	struct ibv_qp qp;
	bool qp_in_error;
	struct ibv_wc wcs[4096];
	unsigned wc_head, wc_tail;
	struct ibv_recv_wr recvs[256];
	struct ibv_sge recv_sges[256];
	unsigned recv_head, recv_tail;
} nics[FAKE_NICS];
uint32_t fake_hold_nics;
void (*fake_on_poll)(unsigned nic);

static struct nic *nic_of_qp(const struct ibv_qp *q)
{
	return (struct nic *)((char *)q - offsetof(struct nic, qp));
}

static struct nic *nic_of_cq(const struct ibv_cq *c)
{
	return (struct nic *)((char *)c - offsetof(struct nic, cq));
}

static struct rdma_cm_event cm_ev;
static bool cm_pending;

static void push_wc(struct nic *n, const struct ibv_wc *wc)
{
	if (n->wc_tail - n->wc_head < RMP_ARRAY_SIZE(n->wcs))
		n->wcs[n->wc_tail++ % RMP_ARRAY_SIZE(n->wcs)] = *wc;
}

void fake_push_wc(const struct ibv_wc *wc)
{
	push_wc(&nics[0], wc);
}

static void push_send_wc(const struct fake_wr *w, enum ibv_wc_status st)
{
	struct nic *n = &nics[w->nic];
	struct ibv_wc wc = { .wr_id = w->wr_id, .status = st,
			     .qp_num = n->qp.qp_num,
			     .vendor_err = st ? 0x42 : 0 };

	push_wc(n, &wc);
}

unsigned fake_data_wrs(void)
{
	unsigned i, n = 0;

	for (i = 0; i < fake_nwrs; i++)
		n += fake_wrs[i].opcode != IBV_WR_SEND;
	return n;
}

/* ------------------------------------------------------ the server */

/* reply_on -- rep into the next receive posted on NIC n. */
static void reply_on(struct nic *n, const struct rmp_msg *rep)
{
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
			     .qp_num = n->qp.qp_num };
	unsigned at = n->recv_head % 256;
	int len;

	if (n->recv_head == n->recv_tail)
		return; /* no receive posted: the reply is lost */
	len = rmp_msg_encode((void *)(uintptr_t)n->recv_sges[at].addr,
			     n->recv_sges[at].length, rep);
	if (len < 0)
		abort();
	len -= fake_reply_trim;
	wc.wr_id = n->recvs[at].wr_id;
	wc.byte_len = (uint32_t)len;
	n->recv_head++;
	push_wc(n, &wc);
}

void fake_reply(const struct rmp_msg *rep)
{
	reply_on(&nics[0], rep);
}

/* serve -- a control SEND reached the server. */
static void serve(const struct fake_wr *w)
{
	struct rmp_msg req, rep;

	if (rmp_msg_decode((const void *)(uintptr_t)w->local, w->length, &req))
		abort(); /* the library sent a message that does not decode */
	fake_last_req = req;
	fake_nreqs++;
	if (req.hdr.opcode <= RMP_OP_MAX)
		fake_reqs[req.hdr.opcode]++;
	memset(&rep, 0, sizeof(rep));
	if (!fake_serve || !fake_serve(&req, &rep))
		return;
	if (!rep.hdr.opcode)
		rep.hdr.opcode = req.hdr.opcode;
	rep.hdr.flags |= RMP_MSG_F_REPLY;
	rep.hdr.req_id = req.hdr.req_id;
	reply_on(&nics[w->nic], &rep);
}

bool fake_serve_grant(const struct rmp_msg *req, struct rmp_msg *rep)
{
	struct rmp_lease_desc *d = &rep->u.lease;

	if (fake_refuse) {
		rep->hdr.status = fake_refuse;
		return true;
	}
	switch (req->hdr.opcode) {
	case RMP_OP_ALLOC:
		d->id = 0x1000 + fake_nreqs;
		d->secret = 0x5ec0000 + fake_nreqs;
		d->length = req->u.alloc.length;
		d->access = req->u.alloc.access;
		d->flags = req->u.alloc.flags;
		break;
	case RMP_OP_ATTACH:
		d->id = req->u.attach.id;
		d->secret = req->u.attach.secret;
		d->length = 4096;
		d->access = req->u.attach.access ? req->u.attach.access :
						   RMP_ACC_ALL;
		break;
	case RMP_OP_RENEW:
		rep->u.renew_rep.ttl_ms = fake_ttl_ms;
		return true;
	default:
		return true; /* FREE, STAT, AUTH: nothing to say */
	}
	d->addr = FAKE_REMOTE_ADDR;
	d->rkey = fake_rkey;
	d->ttl_ms = fake_ttl_ms;
	d->holders = 1;
	return true;
}

/* --------------------------------------------------------- the NIC */

/* execute -- carry out data WR w on the fake remote memory. */
static enum ibv_wc_status execute(const struct fake_wr *w)
{
	uint64_t off = w->remote_addr - FAKE_REMOTE_ADDR, old;
	uint32_t len = w->num_sge ? w->length : 0;
	void *local = (void *)(uintptr_t)w->local;
	uint8_t *r;

	if (len == 0 && w->opcode == IBV_WR_RDMA_READ)
		return IBV_WC_SUCCESS; /* a zero-byte READ checks no key */
	if (w->rkey != fake_rkey || w->remote_addr < FAKE_REMOTE_ADDR ||
	    off > FAKE_REMOTE_LEN || len > FAKE_REMOTE_LEN - off)
		return IBV_WC_REM_ACCESS_ERR;
	r = fake_remote + off;
	switch (w->opcode) {
	case IBV_WR_RDMA_READ:
		if (fake_before_read)
			fake_before_read(off, len);
		memcpy(local, r, len);
		return IBV_WC_SUCCESS;
	case IBV_WR_RDMA_WRITE:
		memcpy(r, local, len);
		if (fake_after_write)
			fake_after_write();
		return IBV_WC_SUCCESS;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (len != 8 || off % 8)
			return IBV_WC_REM_INV_REQ_ERR;
		memcpy(&old, r, 8);
		memcpy(local, &old, 8);
		if (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			old += w->compare_add;
		else if (old == w->compare_add)
			old = w->swap;
		memcpy(r, &old, 8);
		return IBV_WC_SUCCESS;
	default:
		return IBV_WC_REM_INV_REQ_ERR;
	}
}

/* run -- w leaves the send queue: executed (data) or delivered (SEND),
 * or flushed when the QP is in error; its completion as RC gives it. */
static void run(struct fake_wr *w)
{
	struct nic *n = &nics[w->nic];
	enum ibv_wc_status st;

	w->outstanding = false;
	if (n->qp_in_error) {
		st = IBV_WC_WR_FLUSH_ERR;
	} else if (fake_fail_next != IBV_WC_SUCCESS) {
		st = fake_fail_next;
		fake_fail_next = IBV_WC_SUCCESS;
	} else {
		st = w->opcode == IBV_WR_SEND ? IBV_WC_SUCCESS : execute(w);
	}
	if (st != IBV_WC_SUCCESS || (w->send_flags & IBV_SEND_SIGNALED))
		push_send_wc(w, st);
	if (st != IBV_WC_SUCCESS)
		n->qp_in_error = true;
	if (st == IBV_WC_SUCCESS && w->opcode == IBV_WR_SEND)
		serve(w);
}

/* flush_outstanding -- NIC n's QP is in error: what waits there
 * completes flushed. */
static void flush_outstanding(unsigned n)
{
	unsigned i;

	nics[n].qp_in_error = true;
	for (i = 0; i < fake_nwrs; i++)
		if (fake_wrs[i].outstanding && fake_wrs[i].nic == n)
			run(&fake_wrs[i]);
}

void fake_complete(unsigned i, enum ibv_wc_status status)
{
	unsigned j, n = fake_wrs[i].nic;

	for (j = 0; j < i; j++)
		if (fake_wrs[j].outstanding && fake_wrs[j].nic == n)
			run(&fake_wrs[j]);
	if (!fake_wrs[i].outstanding)
		return;
	fake_fail_next = status;
	run(&fake_wrs[i]);
	fake_fail_next = IBV_WC_SUCCESS;
	if (nics[n].qp_in_error)
		flush_outstanding(n);
}

static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	struct nic *n = nic_of_qp(q);
	unsigned k = 0;
	struct fake_wr *w;

	fake_posts++;
	for (; wr; wr = wr->next, k++) {
		if (fake_post_error && k == fake_post_fail_at) {
			int err = fake_post_error;

			fake_post_error = 0;
			*bad = wr;
			return err;
		}
		if (fake_nwrs == FAKE_WRS_MAX)
			abort();
		w = &fake_wrs[fake_nwrs++];
		memset(w, 0, sizeof(*w));
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->send_flags = wr->send_flags;
		w->num_sge = wr->num_sge;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w->remote_addr = wr->wr.atomic.remote_addr;
			w->rkey = wr->wr.atomic.rkey;
			w->compare_add = wr->wr.atomic.compare_add;
			w->swap = wr->wr.atomic.swap;
		} else {
			w->remote_addr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		if (wr->num_sge) {
			w->local = wr->sg_list[0].addr;
			w->length = wr->sg_list[0].length;
			w->lkey = wr->sg_list[0].lkey;
		}
		w->outstanding = true;
		w->polls = fake_polls;
		w->nic = (unsigned)(n - nics);
		if ((fake_hold || (fake_hold_nics >> w->nic & 1)) &&
		    wr->opcode != IBV_WR_SEND && !n->qp_in_error)
			continue;
		run(w);
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	struct nic *n = nic_of_qp(q);

	(void)bad;
	for (; wr; wr = wr->next) {
		n->recv_sges[n->recv_tail % 256] = wr->sg_list[0];
		n->recvs[n->recv_tail % 256] = *wr;
		n->recv_tail++;
	}
	return 0;
}

static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *out)
{
	struct nic *q = nic_of_cq(c);
	int k = 0;

	fake_polls++;
	if (fake_on_poll)
		fake_on_poll((unsigned)(q - nics));
	while (k < n && q->wc_head != q->wc_tail)
		out[k++] = q->wcs[q->wc_head++ % RMP_ARRAY_SIZE(q->wcs)];
	return k;
}

static int fake_req_notify_cq(struct ibv_cq *c, int solicited_only)
{
	(void)c;
	(void)solicited_only;
	fake_arms++;
	return 0;
}

/* ------------------------------- libibverbs and librdmacm, replaced */

int ibv_modify_qp(struct ibv_qp *q, struct ibv_qp_attr *attr, int mask)
{
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR) {
		fake_qp_errors++;
		flush_outstanding((unsigned)(nic_of_qp(q) - nics));
	}
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **c,
		     void **cq_ctx)
{
	(void)ch;
	(void)c;
	(void)cq_ctx;
	errno = EAGAIN; /* no event is ever raised: waits end by timeout */
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *c, unsigned int nevents)
{
	(void)c;
	(void)nevents;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *p, void *addr, size_t length,
			  int access)
{
	static uint32_t next_key = 0x100;
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)access;
	mr->context = &ctx;
	mr->pd = p;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = mr->rkey = next_key++;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *p, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	(void)iova;
	return ibv_reg_mr(p, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (mr != &ctl_mr && mr != &bounce_mr)
		free(mr);
	return 0;
}

void fake_cm_event(enum rdma_cm_event_type type)
{
	cm_ev.event = type;
	cm_pending = true;
	if (write(cm_pipe[1], "e", 1) != 1)
		abort();
}

int rdma_get_cm_event(struct rdma_event_channel *ch,
		      struct rdma_cm_event **ev)
{
	char b;

	(void)ch;
	if (!cm_pending) {
		errno = EAGAIN;
		return -1;
	}
	cm_pending = false;
	if (read(cm_pipe[0], &b, 1) != 1)
		abort();
	*ev = &cm_ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	(void)ev;
	return 0;
}

/* ------------------------------------------------------ the client */

/* nic_reset -- a new QP and CQ on NIC n: nothing posted, nothing to
 * reap (NIC 0's: nothing posted on any). */
static void nic_reset(unsigned n)
{
	struct nic *q = &nics[n];

	q->cq = (struct ibv_cq){ .context = &ctx };
	q->qp = (struct ibv_qp){ .context = &ctx, .qp_num = 11 + n };
	q->wc_head = q->wc_tail = 0;
	q->recv_head = q->recv_tail = 0;
	q->qp_in_error = false;
	if (n)
		return;
	fake_nwrs = 0;
	cm_pending = false;
}

/* fake_connect -- what rmp_client_connect leaves behind, on the fakes. */
static void fake_connect(struct rmp_client *c, unsigned nic)
{
	uint32_t i;

	nic_reset(nic);
	c->cm_ch = &cm_ch;
	c->comp_ch = &comp_ch;
	c->pd = &pd;
	c->cq = &nics[nic].cq;
	c->qp = &nics[nic].qp;
	c->ctl_mr = &ctl_mr;
	c->bounce_mr = &bounce_mr;
	c->sq_depth = c->ring_size + RMPC_NSEND + 16;
	c->sq = calloc(c->sq_depth, sizeof(*c->sq));
	c->max_inflight = c->ring_size;
	c->signal_every = 4;
	c->max_msg_sz = UINT32_C(1) << 31;
	c->max_inline = 64;
	c->atomics = true;
	c->credits = 8;
	c->conn = RMPC_CONN_UP;
	strcpy(c->host, "fake");
	c->port = 7471;
	for (i = 0; i < RMPC_NRECV; i++)
		if (rmpc_post_recv(c, i))
			abort();
	c->gen++;
}

/* fake_teardown -- what conn_teardown does to the state, on the fakes. */
static void fake_teardown(struct rmp_client *c)
{
	struct rmp_buf *b;

	LIST_FOREACH(b, &c->bufs, link) {
		ibv_dereg_mr(b->mr);
		b->mr = NULL;
	}
	free(c->sq);
	c->sq = NULL;
	memset(c->ring, 0, c->ring_size * sizeof(*c->ring));
	c->ring_head = c->ring_posted = c->ring_tail = 0;
	c->sync_err = 0;
	c->conn = RMPC_CONN_DOWN;
	c->cq_armed = false;
	c->sq_posted = c->sq_done = 0;
	c->credits = c->ctl_inflight = 0;
	memset(c->send_busy, 0, sizeof(c->send_busy));
	c->rpc_wait_id = 0;
	c->rpc_done = false;
	c->failbuf[0] = '\0';
	c->gen++;
}

int fake_reconnect(struct rmp_client *c)
{
	unsigned nic = (unsigned)(nic_of_qp(c->qp) - nics);

	fake_reconnects++;
	fake_teardown(c);
	if (fake_reconnect_err) {
		rmpc_set_error(c, "connection lost; reconnecting failed (fake)");
		return fake_reconnect_err;
	}
	rmpc_clear_error(c); /* as rmp_client_connect does first */
	fake_connect(c, nic);
	return 0;
}

struct rmp_client *fake_client_new(void)
{
	if (cm_pipe[0] < 0) {
		if (pipe(cm_pipe) || pipe(comp_pipe))
			abort();
		cm_ch.fd = cm_pipe[0];
		comp_ch.fd = comp_pipe[0];
	}
	ctx.ops.post_send = fake_post_send;
	ctx.ops.post_recv = fake_post_recv;
	ctx.ops.poll_cq = fake_poll_cq;
	ctx.ops.req_notify_cq = fake_req_notify_cq;
	fake_hold = false;
	fake_hold_nics = 0;
	fake_on_poll = NULL;
	fake_fail_next = IBV_WC_SUCCESS;
	fake_post_error = 0;
	fake_qp_errors = fake_arms = fake_polls = 0;
	fake_serve = fake_serve_grant;
	fake_refuse = 0;
	fake_reply_trim = 0;
	fake_ttl_ms = 60000;
	memset(fake_reqs, 0, sizeof(fake_reqs));
	fake_nreqs = 0;
	fake_reconnect_err = 0;
	fake_reconnects = 0;
	return fake_client_new_nic(0);
}

struct rmp_client *fake_client_new_nic(unsigned nic)
{
	struct rmp_client *c = calloc(1, sizeof(*c));

	if (nic >= FAKE_NICS)
		abort();
	LIST_INIT(&c->leases);
	LIST_INIT(&c->bufs);
	c->opts.size = sizeof(c->opts);
	c->opts.op_timeout_ms = 50;
	c->opts.connect_timeout_ms = 50;
	c->opts.spin_max_us = 0;
	c->opts.max_inflight = 64;
	c->opts.bounce_bytes = 16384;
	c->bounce_len = c->opts.bounce_bytes;
	c->bounce = calloc(1, c->bounce_len + RMPC_SCRATCH);
	c->ctl_mem = calloc(RMPC_NRECV + RMPC_NSEND, RMP_MSG_MAX);
	c->ring_size = c->opts.max_inflight;
	c->ring = calloc(c->ring_size, sizeof(*c->ring));
	c->reconnect = fake_reconnect;
	fake_connect(c, nic);
	return c;
}

void fake_client_free(struct rmp_client *c)
{
	struct rmp_lease *l;
	struct rmp_buf *b;

	while ((l = LIST_FIRST(&c->leases))) {
		LIST_REMOVE(l, link);
		free(l);
	}
	while ((b = LIST_FIRST(&c->bufs))) {
		LIST_REMOVE(b, link);
		if (b->mr)
			ibv_dereg_mr(b->mr);
		free(b);
	}
	free(c->sq);
	free(c->ring);
	free(c->bounce);
	free(c->ctl_mem);
	free(c);
}

struct rmp_lease *fake_lease(struct rmp_client *c, uint64_t off,
			     uint64_t len, uint32_t access)
{
	struct rmp_lease *l = calloc(1, sizeof(*l));

	l->c = c;
	l->gen = c->gen;
	l->id = 0xabc0 + off;
	l->secret = 0x5ec;
	l->addr = FAKE_REMOTE_ADDR + off;
	l->length = len;
	l->ttl_ms = 60000;
	l->stamp_ms = rmp_now_ms();
	l->rkey = fake_rkey;
	l->access = access;
	strcpy(l->host, c->host);
	l->port = c->port;
	LIST_INSERT_HEAD(&c->leases, l, link);
	return l;
}

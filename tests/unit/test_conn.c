/* SPDX-License-Identifier: MIT */
/*
 * test_conn.c -- the connection layer (daemon/conn.c, conn_accept.c,
 * conn_sweep.c) on stubbed verbs and librdmacm: the accept and each of
 * its set-up failures, what a connection counts against, the receive
 * path, the close and the one free once nothing of it is due, the sweep
 * and a reload's recheck of proofs.
 *
 * Real below it, nothing of it stubbed (linking each was practical):
 * request.c, lifecycle.c, lifecycle_end.c, lifecycle_expiry.c, keys.c,
 * device.c (rmp_rx_post), pool.c (a pool built by hand on malloc'ed
 * bytes: no rmp_pool_map), zero.c (its worker gets no job: leases here
 * are below ZERO_INLINE_MAX) and the core library (tenant.c with inline
 * keys and real proofs, guard.c, lease.c, alloc.c, network.c). No journal
 * (leases die with the process); lifecycle_recover.c is not called. The
 * lifecycle's event_base runs once, for a revoke timeout of 1 ms.
 *
 * Stubbed, in this file: the verbs and librdmacm calls conn*.c make. The
 * hot-path verbs are inline in verbs.h and go through the context's ops
 * (post_send, post_recv, post_srq_recv, alloc_mw, dealloc_mw): a fake
 * context routes them here. The others (ibv_alloc_pd, ibv_reg_mr,
 * ibv_create_qp, ibv_modify_qp, ibv_query_qp, ibv_destroy_qp, rdma_accept,
 * rdma_init_qp_attr, rdma_disconnect, rdma_destroy_id, ...) are defined
 * here and win at link time. Every work request posted is recorded and
 * stays due until the test completes it; a QP destroyed while any of its
 * work requests is due is counted (destroyed_due): a connection freed
 * before its time, the use after free this test is for (the ASan build
 * sees the rest).
 *
 * Time: rmp_now_ms is wrapped (-Wl,--wrap=rmp_now_ms, meson.build): the
 * sweep's deadlines (auth_timeout, keepalive, rotate_grace) are read from
 * it, and a test must move them without sleeping. common/util.c cannot be
 * left out (rmp_strlcpy & co.), so a plain definition would clash.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <event2/event.h>

#include "auth.h"
#include "check.h"
#include "conn.h"
#include "conn_int.h"
#include "lifecycle.h"
#include "pool.h"
#include "tenant.h"
#include "util.h"

/* ----------------------------------------------------------- the clock */

static uint64_t now_ms = 1000000;

uint64_t __wrap_rmp_now_ms(void);
uint64_t __wrap_rmp_now_ms(void)
{
	return now_ms;
}

/* --------------------------------------------------- fake verbs objects */

static struct ibv_context ctx;
static struct ibv_pd dev_pd = { .context = &ctx };
static struct ibv_srq srq = { .context = &ctx };
static struct ibv_cq cq = { .context = &ctx };
static struct ibv_mr pool_mr = { .lkey = 0x100, .rkey = 0x100 };

/* The set-up step that fails (STEP_NONE: none). */
enum step {
	STEP_NONE, STEP_PD, STEP_SEND_MR, STEP_QP, STEP_INIT_ATTR, STEP_INIT,
	STEP_RECV_MR, STEP_RECV_POST, STEP_RTR, STEP_RTS, STEP_ACCEPT,
	STEP_END,
};
static const char *const step_names[STEP_END] = {
	"none", "PD", "send MR", "QP", "INIT attrs", "INIT", "receive MR",
	"receive post", "RTR", "RTS", "accept",
};
static enum step fail_step;

/* What is allocated now; a destroy of what was destroyed (bad_frees). */
static int live_pds, live_mrs, live_qps, live_mws, bad_frees;

struct fake_qp {
	struct ibv_qp qp; /* first: the daemon holds &qp */
	enum ibv_qp_state state;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr[IBV_QPS_RTS + 1]; /* as last moved there */
	unsigned destroyed;
};
static struct fake_qp qps[256];
static unsigned nqps;
static bool forcing;  /* rmp_conns_force_free: due is expected */
static unsigned destroyed_due; /* QPs destroyed with work still due */

struct fake_id {
	struct rdma_cm_id id;
	unsigned destroyed, disconnects;
	bool accepted;
	struct rdma_conn_param param;
	uint8_t pdata[64];
	unsigned seq; /* nwrs when it was accepted */
};
static struct fake_id ids[256];
static unsigned nids;

/* Every work request posted, in order; due until completed. */
struct wr_rec {
	uint32_t qpn;          /* 0: the shared receive queue */
	uint64_t wr_id;
	bool recv, due;
	enum ibv_wr_opcode opcode;
	int num_sge;
	int decoded;           /* a SEND: rmp_msg_decode's answer */
	struct rmp_msg msg;    /* a SEND: the reply */
};
static struct wr_rec wrs[4096];
static unsigned nwrs;
static int post_fail;          /* ibv_post_send fails with this */

static struct wr_rec *record(uint32_t qpn, uint64_t wr_id, bool recv)
{
	struct wr_rec *r = &wrs[nwrs++];

	memset(r, 0, sizeof(*r));
	r->qpn = qpn;
	r->wr_id = wr_id;
	r->recv = recv;
	r->due = true;
	return r;
}

static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	struct wr_rec *r;

	for (; wr; wr = wr->next) {
		if (post_fail) {
			*bad = wr;
			return post_fail;
		}
		r = record(q->qp_num, wr->wr_id, false);
		r->opcode = wr->opcode;
		r->num_sge = wr->num_sge;
		if (wr->opcode == IBV_WR_SEND)
			r->decoded = rmp_msg_decode(
				(void *)(uintptr_t)wr->sg_list[0].addr,
				wr->sg_list[0].length, &r->msg);
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	/* The second receive of a connection fails (one is due then). */
	if (fail_step == STEP_RECV_POST && nwrs &&
	    wrs[nwrs - 1].recv && wrs[nwrs - 1].qpn == q->qp_num) {
		*bad = wr;
		return ENOMEM;
	}
	record(q->qp_num, wr->wr_id, true);
	return 0;
}

static int fake_post_srq_recv(struct ibv_srq *s, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	(void)s;
	(void)bad;
	record(0, wr->wr_id, true);
	return 0;
}

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *p, enum ibv_mw_type type)
{
	struct ibv_mw *mw = calloc(1, sizeof(*mw));

	(void)type;
	mw->context = &ctx;
	mw->pd = p;
	mw->rkey = 0x200 + ((unsigned)live_mws++ << 8);
	return mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	live_mws--;
	free(mw);
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct ibv_pd *pd;

	if (fail_step == STEP_PD) {
		errno = ENOMEM;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	pd->context = c;
	live_pds++;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	live_pds--;
	free(pd);
	return 0;
}

static struct ibv_mr *new_mr(struct ibv_pd *pd, void *addr, size_t len)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));
	static uint32_t next_key = 0x1000;

	mr->context = &ctx;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = mr->rkey = next_key++;
	live_mrs++;
	return mr;
}

/* (ibv_reg_mr is a macro too: the parentheses define the function.) */
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t len,
			    int access)
{
	/* The accept registers its reply slots (no access), then its own
	 * receive buffers (local write). */
	if ((fail_step == STEP_SEND_MR && access == 0) ||
	    (fail_step == STEP_RECV_MR && access == IBV_ACCESS_LOCAL_WRITE)) {
		errno = ENOMEM;
		return NULL;
	}
	return new_mr(pd, addr, len);
}

/* A region key (lease_keys = region). */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len,
				uint64_t iova, unsigned int access)
{
	(void)iova;
	(void)access;
	return new_mr(pd, addr, len);
}

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t len,
				 uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, iova, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	live_mrs--;
	free(mr);
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct fake_qp *f;

	if (fail_step == STEP_QP || nqps == RMP_ARRAY_SIZE(qps)) {
		errno = ENOMEM;
		return NULL;
	}
	f = &qps[nqps];
	memset(f, 0, sizeof(*f));
	f->qp.context = &ctx;
	f->qp.pd = pd;
	f->qp.qp_num = 100 + nqps++;
	f->qp.qp_context = a->qp_context;
	f->qp.srq = a->srq;
	f->state = IBV_QPS_RESET;
	f->init = *a;
	live_qps++;
	return &f->qp;
}

static struct fake_qp *fake_of(const struct ibv_qp *q)
{
	return &qps[q->qp_num - 100];
}

/* due -- work requests of QP qpn with no completion yet. */
static unsigned due(uint32_t qpn)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nwrs; i++)
		n += wrs[i].due && wrs[i].qpn == qpn;
	return n;
}

int ibv_destroy_qp(struct ibv_qp *q)
{
	struct fake_qp *f = fake_of(q);

	if (f->destroyed++)
		bad_frees++;
	if (due(q->qp_num) && !forcing)
		destroyed_due++;
	live_qps--;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *q, struct ibv_qp_attr *attr, int mask)
{
	struct fake_qp *f = fake_of(q);

	(void)mask;
	if ((fail_step == STEP_INIT && attr->qp_state == IBV_QPS_INIT) ||
	    (fail_step == STEP_RTR && attr->qp_state == IBV_QPS_RTR) ||
	    (fail_step == STEP_RTS && attr->qp_state == IBV_QPS_RTS))
		return EINVAL;
	if (attr->qp_state <= IBV_QPS_RTS)
		f->attr[attr->qp_state] = *attr;
	f->state = attr->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *q, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	(void)mask;
	(void)init;
	attr->qp_state = fake_of(q)->state;
	return 0;
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr,
		      int *mask)
{
	(void)id;
	if (fail_step == STEP_INIT_ATTR && attr->qp_state == IBV_QPS_INIT) {
		errno = ENODEV;
		return -1;
	}
	*mask = IBV_QP_STATE;
	attr->port_num = 1;
	attr->timeout = 0; /* rdma_cm's, when the path gives none */
	attr->retry_cnt = 7;
	attr->rnr_retry = 7;
	return 0;
}

static struct fake_id *fake_id_of(struct rdma_cm_id *id)
{
	return (struct fake_id *)id;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	struct fake_id *f = fake_id_of(id);

	if (fail_step == STEP_ACCEPT) {
		errno = ECONNREFUSED;
		return -1;
	}
	f->accepted = true;
	f->param = *p;
	memcpy(f->pdata, p->private_data, p->private_data_len);
	f->seq = nwrs;
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	fake_id_of(id)->disconnects++;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	if (fake_id_of(id)->destroyed++)
		bad_frees++;
	return 0;
}

/* ------------------------------------------------------------ fixture */

static struct rmp_config cfg;
static struct rmp_tenants *tenants;
static struct rmp_guard *guard;
static struct event_base *base;
static struct rmp_lifecycle *lc;
static struct rmp_conns set;
static struct rmp_device dev;
static uint8_t *pool_mem;
static struct rmp_pool_chunk chunk = { .size = 1 << 20,
					.mr = { &pool_mr } };
static struct rmp_pool pool = {
	.size = 1 << 20, .iova = 0x10000000, .nchunks = 1,
	.chunk_span = 1 << 20, .chunks = &chunk,
};
/* The shared receive queue's buffers (window mode). */
static struct rmp_rx_buf srq_rx[8];
static uint8_t srq_mem[8][RMP_MSG_MAX];

static const uint8_t acme_key[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
/* The server endpoint proofs name: 192.0.2.1:7471, IPv4-mapped. */
static const uint8_t srv[RMP_ENDPOINT_LEN] = {
	[10] = 0xff, 0xff, 192, 0, 2, 1, 0x1d, 0x2f,
};
static const uint8_t pdata[] = "accept data";

/* make_cfg -- tenants acme (rotate_grace 3 s) and beta (none), two
 * credits (four reply slots), room for three unproven connections, two
 * from one address. */
static void make_cfg(void)
{
	struct rmp_tenant_config *t = &cfg.tenants[0];

	rmp_config_defaults(&cfg);
	strcpy(t->name, "acme");
	memcpy(t->key, acme_key, sizeof(acme_key));
	t->key_len = sizeof(acme_key);
	t->limits.rotate_grace_ms = 3000;
	/* beta: the same key bytes (a proof names its tenant), no grace. */
	cfg.tenants[1] = *t;
	strcpy(cfg.tenants[1].name, "beta");
	cfg.tenants[1].limits.rotate_grace_ms = 0;
	cfg.ntenants = 2;
	cfg.server.credits = 2;
	cfg.server.unauthenticated_per_address = 2;
	cfg.server.max_unauthenticated = 3;
}

/* start -- a fresh set of connections over a fresh lifecycle in mode. */
static void start(enum rmp_keys_mode mode)
{
	static struct rmp_pool *const pools[] = { &pool };
	struct rmp_device *devs[] = { &dev };
	struct rmp_lifecycle_params p = {
		.pools = pools, .npools = 1, .keys_mode = mode, .cfg = &cfg,
	};

	make_cfg();
	nwrs = 0;
	fail_step = STEP_NONE;
	post_fail = 0;
	tenants = rmp_tenants_new(&cfg);
	guard = rmp_guard_new(64);
	base = event_base_new();
	chunk.alloc = rmp_alloc_new(chunk.size);
	p.base = base;
	p.tenants = tenants;
	lc = rmp_lifecycle_new(&p);
	CHECK(tenants && guard && lc);
	memset(&dev, 0, sizeof(dev));
	dev.verbs = &ctx;
	dev.pd = &dev_pd;
	dev.cq = &cq;
	dev.srq = mode == RMP_KEYS_REGION ? NULL : &srq;
	dev.attr.orig_attr.max_qp_rd_atom = 16;
	dev.recv_inv_flags = IBV_WC_WITH_INV;
	rmp_conns_init(&set, devs, pools, 1, lc, guard, tenants, &cfg, mode);
	for (unsigned i = 0; dev.srq && i < RMP_ARRAY_SIZE(srq_rx); i++) {
		srq_rx[i] = (struct rmp_rx_buf){ .dev = &dev,
						 .buf = srq_mem[i] };
		CHECK_EQ(rmp_rx_post(&srq_rx[i], &srq, NULL), 0);
	}
}

/* stop -- every connection was freed, once, with nothing of it due,
 * and nothing it had is left allocated. */
static void stop(void)
{
	CHECK_EQ(set.count, 0);
	CHECK(TAILQ_EMPTY(&set.list));
	CHECK_EQ(set.unauthenticated, 0);
	CHECK_EQ(set.counters.closed, set.counters.accepted);
	CHECK_EQ(live_qps, 0);
	CHECK_EQ(live_pds, 0);
	CHECK_EQ(live_mrs, 0);
	CHECK_EQ(live_mws, 0);
	CHECK_EQ(bad_frees, 0);
	CHECK_EQ(destroyed_due, 0);
	rmp_lifecycle_end_all(lc, "test over");
	rmp_lifecycle_free(lc);
	event_base_free(base);
	rmp_guard_free(guard);
	rmp_tenants_free(tenants);
	rmp_alloc_free(chunk.alloc);
	/* (A failed test does not fail the next ones.) */
	live_qps = live_pds = live_mrs = live_mws = 0;
	bad_frees = 0;
	destroyed_due = 0;
}

static struct rmp_tenant *tenant(const char *name)
{
	unsigned why;

	return rmp_tenants_find(tenants, name, &why);
}

/* accept_from -- a connection from ip naming tenant, as the listener
 * makes it: room first (-EBUSY: FULL), then the accept. */
static int accept_from(const char *ip, const char *tname,
		       struct rmp_conn **out)
{
	struct fake_id *f = &ids[nids++];
	struct sockaddr_in *sin = (struct sockaddr_in *)&f->id.route.addr.dst_addr;
	struct rmp_auth_pending a = { 0 };
	char peer[80];
	unsigned why;

	memset(f, 0, sizeof(*f));
	f->id.verbs = &ctx;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(4242);
	inet_pton(AF_INET, ip, &sin->sin_addr);
	a.tenant = rmp_tenants_for_connect(tenants, tname, &why);
	rmp_strlcpy(a.tenant_name, tname, sizeof(a.tenant_name));
	a.nonce[0] = (uint8_t)nids;
	a.nonce[1] = (uint8_t)(nids >> 8);
	a.version = RMP_PROTO_VERSION;
	memcpy(a.server, srv, sizeof(srv));
	strcpy(a.name, "t");
	snprintf(peer, sizeof(peer), "%s:4242", ip);
	*out = NULL;
	if (rmp_conns_preauth_room(&set, ip))
		return -EBUSY;
	return rmp_conn_accept(&set, &f->id, "t", peer, ip, &a, 200, pdata,
			       sizeof(pdata), out);
}

static struct rmp_conn *open_as(const char *ip, const char *tname)
{
	struct rmp_conn *c;

	CHECK_EQ(accept_from(ip, tname, &c), 0);
	return c;
}

static struct rmp_conn *open_from(const char *ip)
{
	return open_as(ip, "acme");
}

/* conn_of -- the open or closing connection with QP qpn, or NULL (freed). */
static struct rmp_conn *conn_of(uint32_t qpn)
{
	struct rmp_conn *c;

	TAILQ_FOREACH(c, &set.list, link)
		if (c->qp && c->qp->qp_num == qpn)
			return c;
	return NULL;
}

/* complete -- work request r completes with st. */
static void complete(struct wr_rec *r, enum ibv_wc_status st)
{
	struct ibv_wc wc = { .status = st };

	if (!r || !r->due) {
		CHECK(!"a work request was due");
		return;
	}
	wc.wr_id = r->wr_id;
	wc.qp_num = r->qpn;
	wc.opcode = r->recv ? IBV_WC_RECV : IBV_WC_SEND;
	r->due = false;
	rmp_conns_on_wc(&set, &wc);
}

/* flush -- what a QP in the error state does: every work request of it
 * still due completes flushed (those completions may post more). */
static void flush(uint32_t qpn)
{
	for (unsigned i = 0; i < nwrs; i++)
		if (wrs[i].due && wrs[i].qpn == qpn)
			complete(&wrs[i], IBV_WC_WR_FLUSH_ERR);
}

/* flush_all -- flush every QP (the shared receive queue's stay). */
static void flush_all(void)
{
	for (unsigned i = 0; i < nwrs; i++)
		if (wrs[i].due && wrs[i].qpn)
			complete(&wrs[i], IBV_WC_WR_FLUSH_ERR);
}

/* flush_but -- flush QP qpn but for keep, which stays due. */
static void flush_but(uint32_t qpn, struct wr_rec *keep)
{
	keep->due = false;
	flush(qpn);
	keep->due = true;
}

/* last -- the last work request of QP qpn with opcode op (sends). */
static struct wr_rec *last(uint32_t qpn, enum ibv_wr_opcode op)
{
	for (unsigned i = nwrs; i-- > 0;)
		if (!wrs[i].recv && wrs[i].qpn == qpn && wrs[i].opcode == op)
			return &wrs[i];
	return NULL;
}

static unsigned count_sends(uint32_t qpn, enum ibv_wr_opcode op)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nwrs; i++)
		n += !wrs[i].recv && wrs[i].qpn == qpn && wrs[i].opcode == op;
	return n;
}

/* deliver_raw -- a receive completion on c's QP with len bytes of buf,
 * taken from a receive due on its own queue or on the shared one. */
static void deliver_raw(struct rmp_conn *c, const void *buf, size_t len,
			enum ibv_wc_opcode op, unsigned flags)
{
	uint32_t qpn = c->qp->qp_num, q = c->own_pd ? qpn : 0;
	struct rmp_rx_buf *rx;
	struct ibv_wc wc = {
		.status = IBV_WC_SUCCESS, .opcode = op, .wc_flags = flags,
		.byte_len = (uint32_t)len, .qp_num = qpn,
	};

	for (unsigned i = 0; i < nwrs; i++) {
		if (!wrs[i].recv || !wrs[i].due || wrs[i].qpn != q)
			continue;
		rx = rmp_wr_ptr(wrs[i].wr_id);
		memcpy(rx->buf, buf, len);
		wrs[i].due = false;
		wc.wr_id = wrs[i].wr_id;
		rmp_conns_on_wc(&set, &wc);
		return;
	}
	CHECK(!"a receive was posted");
}

static void send_msg(struct rmp_conn *c, struct rmp_msg *m)
{
	uint8_t buf[RMP_MSG_MAX];
	int len;

	m->hdr.req_id = 7;
	len = rmp_msg_encode(buf, sizeof(buf), m);
	CHECK(len > 0);
	deliver_raw(c, buf, (size_t)len, IBV_WC_RECV, 0);
}

static void send_op(struct rmp_conn *c, unsigned op)
{
	struct rmp_msg m = { .hdr.opcode = (uint8_t)op };

	send_msg(c, &m);
}

/* send_auth -- c's AUTH with acme's proof (broken: one bit off). */
static void send_auth(struct rmp_conn *c, bool broken)
{
	struct rmp_msg m = { .hdr.opcode = RMP_OP_AUTH };

	memset(m.u.auth.client_nonce, 0x5c, sizeof(m.u.auth.client_nonce));
	rmp_auth_proof(RMP_AUTH_CLIENT, acme_key, sizeof(acme_key),
		       c->auth.nonce, m.u.auth.client_nonce, c->auth.version,
		       c->auth.tenant_name, c->auth.name, c->auth.server,
		       m.u.auth.proof);
	m.u.auth.proof[0] ^= broken;
	send_msg(c, &m);
}

/* proven_as -- a connection from ip that proved tname's key, the reply
 * to its AUTH acknowledged. */
static struct rmp_conn *proven_as(const char *ip, const char *tname)
{
	struct rmp_conn *c = open_as(ip, tname);
	uint32_t qpn = c->qp->qp_num;

	send_auth(c, false);
	CHECK_EQ(last(qpn, IBV_WR_SEND)->msg.hdr.status, 0);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(c->holder.tenant == tenant(tname));
	return c;
}

static struct rmp_conn *proven_from(const char *ip)
{
	return proven_as(ip, "acme");
}

/* alloc_lease -- c asks for 4 KiB with flags; the reply's record. */
static struct wr_rec *alloc_lease(struct rmp_conn *c, uint32_t flags)
{
	struct rmp_msg m = { .hdr.opcode = RMP_OP_ALLOC };
	uint32_t qpn = c->qp->qp_num; /* c may be freed by its answer */

	m.u.alloc.length = 4096;
	m.u.alloc.access = RMP_ACC_ALL;
	m.u.alloc.flags = flags;
	send_msg(c, &m);
	return last(qpn, IBV_WR_SEND);
}

/* free_lease -- c frees the lease its reply rep described. */
static void free_lease(struct rmp_conn *c, const struct wr_rec *rep)
{
	struct rmp_msg m = { .hdr.opcode = RMP_OP_FREE };

	m.u.free.id = rep->msg.u.lease.id;
	m.u.free.secret = rep->msg.u.lease.secret;
	send_msg(c, &m);
}

/* -------------------------------------------------------------- accept */

/* Region mode: own PD, own receive queue filled before the accept, the
 * QP through INIT, RTR, RTS with the server's retries, the accept data. */
static void test_accept_region(void)
{
	struct rmp_conn *c;
	struct fake_qp *f;
	struct fake_id *id;
	unsigned recvs = 0, credits;
	uint32_t qpn;

	start(RMP_KEYS_REGION);
	credits = cfg.server.credits;
	CHECK_EQ(accept_from("192.0.2.10", "acme", &c), 0);
	id = &ids[nids - 1];
	f = fake_of(c->qp);
	CHECK(c->own_pd && c->pd != &dev_pd);
	CHECK_EQ(live_pds, 1);
	CHECK_EQ(live_mrs, 2);
	CHECK(f->init.srq == NULL);
	CHECK(f->init.qp_context == c);
	CHECK_EQ(f->init.qp_type, IBV_QPT_RC);
	CHECK_EQ(f->init.cap.max_recv_wr, credits);
	CHECK_EQ(f->init.cap.max_send_wr, 2 * credits + KEY_WRS + 1);
	/* ... and a closed unproven one's receives, reply and probe */
	CHECK_EQ(rmp_conn_cq_entries(credits),
		 3 * credits + KEY_WRS + 1 + credits + 2);
	for (unsigned i = 0; i < nwrs; i++)
		recvs += wrs[i].recv && wrs[i].qpn == c->qp->qp_num;
	CHECK_EQ(recvs, credits);
	CHECK_EQ(c->recvs_due, credits);
	CHECK_EQ(rmp_wr_tag(wrs[0].wr_id), RMP_WR_RECV);
	CHECK(((struct rmp_rx_buf *)rmp_wr_ptr(wrs[0].wr_id))->conn == c);
	CHECK_EQ(id->seq, credits); /* posted before the accept */
	CHECK_EQ(f->state, IBV_QPS_RTS);
	CHECK_EQ(f->attr[IBV_QPS_RTR].max_dest_rd_atomic, 16);
	CHECK_EQ(f->attr[IBV_QPS_RTS].rnr_retry, 3);
	CHECK_EQ(f->attr[IBV_QPS_RTS].retry_cnt, 6);
	CHECK_EQ(f->attr[IBV_QPS_RTS].timeout, 14);
	CHECK_EQ(f->attr[IBV_QPS_RTS].max_rd_atomic, 0);
	CHECK(id->accepted);
	CHECK_EQ(id->param.private_data_len, sizeof(pdata));
	CHECK(!memcmp(id->pdata, pdata, sizeof(pdata)));
	CHECK_EQ(id->param.responder_resources, 16);
	CHECK_EQ(id->param.initiator_depth, 0);
	CHECK_EQ(id->param.rnr_retry_count, 7);
	CHECK_EQ(id->param.qp_num, c->qp->qp_num);
	CHECK_EQ(id->param.srq, 0);
	CHECK(id->id.context == c);
	CHECK_EQ(c->state, RMP_CONN_ACCEPTING);
	CHECK_STR(rmp_conn_state_name(c->state), "accepting");
	CHECK_STR(c->holder.label, "client #1 (t, 192.0.2.10:4242)");
	CHECK_EQ(set.counters.accepted, 1);
	qpn = c->qp->qp_num;
	rmp_conn_close(c, "test");
	CHECK(conn_of(qpn) == c); /* its receives are due */
	CHECK_EQ(id->destroyed, 0);
	flush(qpn); /* the last one frees it */
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(id->destroyed, 1);
	CHECK_EQ(id->disconnects, 1);
	stop();
}

/* Window mode: the server's PD, the shared receive queue. */
static void test_accept_window(void)
{
	struct rmp_conn *c;
	struct fake_id *id;

	start(RMP_KEYS_WINDOW);
	CHECK_EQ(accept_from("192.0.2.10", "acme", &c), 0);
	id = &ids[nids - 1];
	CHECK(!c->own_pd && c->pd == &dev_pd);
	CHECK(fake_of(c->qp)->init.srq == &srq);
	CHECK_EQ(c->recvs_due, 0);
	CHECK_EQ(due(c->qp->qp_num), 0);
	CHECK_EQ(live_mrs, 1);
	CHECK_EQ(id->param.srq, 1);
	rmp_conn_close(c, "test");
	CHECK_EQ(id->destroyed, 1); /* nothing was due: freed at once */
	stop();
}

/* A set-up step that fails: -errno, the id left to the caller, every
 * object of the connection released, and the connection freed once the
 * receives it had posted are flushed -- not before. */
static void accept_fails_at(enum rmp_keys_mode mode, enum step step)
{
	struct rmp_conn *c;
	struct fake_id *id;
	uint32_t qpn = 100 + nqps;
	int ret;

	start(mode);
	fail_step = step;
	ret = accept_from("192.0.2.10", "acme", &c);
	fail_step = STEP_NONE;
	id = &ids[nids - 1];
	printf("# accept fails at %s (%s mode)\n", step_names[step],
	       mode == RMP_KEYS_REGION ? "region" : "window");
	CHECK(ret < 0);
	CHECK(c == NULL);
	CHECK_EQ(id->destroyed, 0); /* the caller's to reject */
	CHECK_EQ(id->disconnects, 0);
	CHECK_EQ(set.counters.accepted, 1);
	CHECK_EQ(tenant("acme")->pending, 0);
	if (due(qpn)) {
		/* Receives posted on a QP that is in error now. */
		CHECK(step >= STEP_RECV_POST && mode == RMP_KEYS_REGION);
		CHECK_EQ(fake_of(&qps[qpn - 100].qp)->state, IBV_QPS_ERR);
		CHECK_EQ(set.count, 1);
		CHECK_EQ(conn_of(qpn)->state, RMP_CONN_CLOSING);
		CHECK_EQ(live_qps, 1);
		flush(qpn);
	}
	stop();
}

static void test_accept_failures(void)
{
	/* Window mode has no PD, receive MR or receives of its own. */
	for (enum step s = STEP_PD; s < STEP_END; s++) {
		if (s != STEP_PD && s != STEP_RECV_MR && s != STEP_RECV_POST)
			accept_fails_at(RMP_KEYS_WINDOW, s);
		accept_fails_at(RMP_KEYS_REGION, s);
	}
}

/* ------------------------------------------------------------ counting */

/* Pending at accept, proven after a good AUTH, nowhere after the close;
 * a failed proof and a refused one never count as proven. */
static void test_counting(void)
{
	struct rmp_conn *c, *c2;
	struct rmp_tenant *t;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	t = tenant("acme");
	c = open_from("192.0.2.10");
	CHECK(cn_unproven(c));
	CHECK_EQ(c->counted, RMP_CONN_COUNTS_PENDING);
	CHECK_EQ(t->pending, 1);
	CHECK_EQ(t->connections, 0);
	CHECK_EQ(set.unauthenticated, 1);
	CHECK_EQ(rmp_conns_count_peer(&set, "192.0.2.10"), 0);
	send_auth(c, false);
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED); /* the message proved it */
	CHECK(!cn_unproven(c));
	CHECK_EQ(c->counted, RMP_CONN_COUNTS_PROVEN);
	CHECK_EQ(t->pending, 0);
	CHECK_EQ(t->connections, 1);
	CHECK_EQ(set.unauthenticated, 0);
	CHECK_EQ(rmp_conns_count_peer(&set, "192.0.2.10"), 1);
	complete(last(c->qp->qp_num, IBV_WR_SEND), IBV_WC_SUCCESS);

	/* The tenant's connection limit: proven, then refused, not counted. */
	t->limits.connections = 1;
	c2 = open_from("192.0.2.10");
	qpn = c2->qp->qp_num;
	send_auth(c2, false);
	CHECK_EQ(last(qpn, IBV_WR_SEND)->msg.hdr.status, -ECONNREFUSED);
	CHECK(c2->holder.tenant == NULL);
	CHECK_EQ(t->connections, 1);
	CHECK_EQ(t->pending, 1);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(conn_of(qpn) == NULL); /* closed after its reply, and freed */
	CHECK_EQ(t->pending, 0);
	CHECK_EQ(t->connections, 1);

	/* A wrong proof: refused, counted as a failure, never proven. */
	c2 = open_from("192.0.2.11");
	qpn = c2->qp->qp_num;
	send_auth(c2, true);
	CHECK_EQ(last(qpn, IBV_WR_SEND)->msg.hdr.status, -EKEYREJECTED);
	CHECK_EQ(set.counters.auth_failures, 1);
	CHECK_EQ(t->auth_failures, 1);
	CHECK_EQ(t->connections, 1);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(t->pending, 0);

	rmp_conn_close(c, "test");
	CHECK_EQ(t->connections, 0);
	CHECK_EQ(t->pending, 0);
	CHECK_EQ(rmp_conns_count_peer(&set, "192.0.2.10"), 0);
	stop();
}

/* rmp_conns_preauth_room: the oldest unproven connection of the same
 * address goes first, else the oldest of the address that holds the
 * most; a proven one never. */
static void test_preauth_room(void)
{
	struct rmp_conn *b1, *a1, *a2, *a3, *p;
	uint32_t b1_qpn, a1_qpn, a2_qpn;

	start(RMP_KEYS_WINDOW);
	p = proven_from("192.0.2.1"); /* oldest of all, proven */
	b1 = open_from("192.0.2.2");
	a1 = open_from("192.0.2.3");
	a2 = open_from("192.0.2.3");
	b1_qpn = b1->qp->qp_num;
	a1_qpn = a1->qp->qp_num;
	CHECK_EQ(set.unauthenticated, 3);
	/* A third from .3 (per address: 2): a1 goes, not b1. */
	a3 = open_from("192.0.2.3");
	CHECK_EQ(set.counters.preauth_evicted, 1);
	CHECK(conn_of(a1_qpn) == NULL);
	CHECK(conn_of(b1_qpn) == b1);
	CHECK_EQ(set.unauthenticated, 3); /* b1, a2, a3 */
	/* One from .4: the server's slots are full (3): the oldest of the
	 * address that holds the most, a2 of .3; b1 stays. */
	a2_qpn = a2->qp->qp_num;
	open_from("192.0.2.4");
	CHECK_EQ(set.counters.preauth_evicted, 2);
	CHECK(conn_of(a2_qpn) == NULL);
	CHECK(conn_of(b1_qpn) == b1);
	CHECK(conn_of(a3->qp->qp_num) == a3);
	/* One from .2: .2 (b1 and it) and .3 (a3) tie in what they
	 * hold; of them, the one whose oldest came first: b1's. */
	open_from("192.0.2.2");
	CHECK(conn_of(b1_qpn) == NULL);
	CHECK(conn_of(a3->qp->qp_num) == a3);
	CHECK_EQ(p->state, RMP_CONN_ESTABLISHED);
	CHECK_EQ(set.unauthenticated, 3);
	CHECK_EQ(tenant("acme")->pending, 3);
	CHECK_EQ(tenant("acme")->connections, 1);
	rmp_conns_close_all(&set, "test");
	CHECK_EQ(tenant("acme")->pending, 0);
	CHECK_EQ(tenant("acme")->connections, 0);
	stop();
}

/*
 * A flood of unproven connections from one address never closes the
 * unproven connection of a client at another address (it proves its key
 * a round trip later): when the server's pre-auth slots are full, the
 * one closed is the oldest of the address that holds the most of them.
 */
static void test_preauth_room_flood(void)
{
	struct rmp_conn *b1, *a1;
	uint32_t b1_qpn, a1_qpn;

	start(RMP_KEYS_WINDOW);
	cfg.server.unauthenticated_per_address = 3;
	cfg.server.max_unauthenticated = 3;
	b1 = open_from("192.0.2.2");  /* a client, mid-handshake */
	a1 = open_from("192.0.2.3");  /* the flood */
	open_from("192.0.2.3");
	b1_qpn = b1->qp->qp_num;
	a1_qpn = a1->qp->qp_num;
	for (unsigned i = 0; i < 10; i++)
		open_from("192.0.2.3");
	CHECK(conn_of(b1_qpn) == b1);
	CHECK(conn_of(a1_qpn) == NULL);
	CHECK_EQ(set.unauthenticated, 3);
	if (conn_of(b1_qpn) == b1) { /* (else it was freed) */
		send_auth(b1, false);
		CHECK(b1->holder.tenant == tenant("acme"));
		complete(last(b1_qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	}
	rmp_conns_close_all(&set, "test");
	stop();
}

/*
 * max_clients connections open, some still to prove a tenant: a new
 * connect closes one of those (the oldest of the address that holds the
 * most), it is not refused as FULL -- connections without a key cannot
 * keep a client that has one out.
 */
static void test_full_makes_room(void)
{
	struct rmp_conn *a1, *a2;
	uint32_t a1_qpn;

	start(RMP_KEYS_WINDOW);
	cfg.server.max_clients = 4;
	proven_from("192.0.2.1");
	proven_from("192.0.2.1");
	a1 = open_from("192.0.2.3");
	a2 = open_from("192.0.2.3");
	a1_qpn = a1->qp->qp_num;
	CHECK_EQ(set.count, 4);
	/* The listener asks for room before it accepts. */
	CHECK_EQ(rmp_conns_preauth_room(&set, "192.0.2.2"), 0);
	CHECK(set.count < cfg.server.max_clients);
	CHECK(conn_of(a1_qpn) == NULL);
	CHECK(conn_of(a2->qp->qp_num) == a2);
	rmp_conns_close_all(&set, "test");
	stop();

	/* Full of proven connections: FULL, nobody closed. */
	start(RMP_KEYS_WINDOW);
	cfg.server.max_clients = 2;
	proven_from("192.0.2.1");
	proven_from("192.0.2.3");
	CHECK_EQ(rmp_conns_preauth_room(&set, "192.0.2.2"), -EBUSY);
	CHECK_EQ(set.count, 2);
	CHECK_EQ(set.counters.preauth_evicted, 0);
	rmp_conns_close_all(&set, "test");
	stop();
}

/*
 * Region mode: the unproven connection closed for a new one waits for
 * its own receives to flush, its QP still there: it no longer counts
 * against max_clients (it is a spare, whose completions the CQ has room
 * for beside each client), and up to max_clients such spares wait at
 * once; past that, FULL until one is freed.
 */
static void test_full_spares(void)
{
	struct rmp_conn *a1, *b1, *c1;
	uint32_t a1_qpn, b1_qpn, c1_qpn;

	start(RMP_KEYS_REGION);
	cfg.server.max_clients = 2;
	proven_from("192.0.2.1");
	a1 = open_from("192.0.2.3");
	a1_qpn = a1->qp->qp_num;
	b1 = open_from("192.0.2.2"); /* full: a1 gives way */
	b1_qpn = b1->qp->qp_num;
	CHECK(conn_of(a1_qpn) == a1); /* its receives are due */
	CHECK_EQ(a1->counted, RMP_CONN_COUNTS_SPARE);
	CHECK_EQ(set.spare, 1);
	CHECK_EQ(set.unauthenticated, 1);
	CHECK_EQ(set.count, 3); /* two open, one spare */
	c1 = open_from("192.0.2.4"); /* b1 gives way: two spares */
	c1_qpn = c1->qp->qp_num;
	CHECK_EQ(b1->counted, RMP_CONN_COUNTS_SPARE);
	CHECK_EQ(set.spare, 2);
	CHECK_EQ(set.count, 4);
	/* As many spares as max_clients: FULL, c1 stays. */
	CHECK_EQ(rmp_conns_preauth_room(&set, "192.0.2.5"), -EBUSY);
	CHECK(conn_of(c1_qpn) == c1 && cn_unproven(c1));
	/* A spare freed: c1 may give way again. */
	flush(a1_qpn);
	CHECK(conn_of(a1_qpn) == NULL);
	CHECK_EQ(set.spare, 1);
	CHECK_EQ(rmp_conns_preauth_room(&set, "192.0.2.5"), 0);
	CHECK_EQ(set.spare, 2);
	flush(b1_qpn);
	flush(c1_qpn);
	CHECK_EQ(set.spare, 0);
	rmp_conns_close_all(&set, "test");
	flush_all();
	stop();
}

/* -------------------------------------------------------- receive path */

/* A request before AUTH: refused, counted, the connection closed once
 * the refusal is out; what comes meanwhile is not answered. */
static void test_request_before_auth(void)
{
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = open_from("192.0.2.10");
	qpn = c->qp->qp_num;
	send_op(c, RMP_OP_STAT);
	CHECK_EQ(last(qpn, IBV_WR_SEND)->msg.hdr.status, -EACCES);
	CHECK_EQ(RMP_MSG_DETAIL(last(qpn, IBV_WR_SEND)->msg.hdr.flags),
		 RMP_DETAIL_NOT_AUTHED);
	CHECK_EQ(set.counters.auth_failures, 1);
	CHECK(c->holder.tenant == NULL);
	send_auth(c, false); /* too late */
	CHECK_EQ(count_sends(qpn, IBV_WR_SEND), 1);
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(tenant("acme")->connections, 0);
	stop();
}

/* Messages that do not decode: an error reply each, counted; the
 * MAX_BAD_MSGS-th closes the connection without one. */
static void test_bad_messages(void)
{
	static const uint8_t junk[12] = "not a msg";
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	deliver_raw(c, junk, sizeof(junk), IBV_WC_RECV, 0);
	CHECK_EQ(last(qpn, IBV_WR_SEND)->msg.hdr.status, -EBADMSG);
	CHECK_EQ(set.counters.bad_messages, 1);
	CHECK_EQ(c->bad_msgs, 1);
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	for (unsigned i = 1; i < 7; i++) {
		deliver_raw(c, junk, sizeof(junk), IBV_WC_RECV, 0);
		complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	}
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED);
	CHECK_EQ(count_sends(qpn, IBV_WR_SEND), 8); /* AUTH's and 7 */
	deliver_raw(c, junk, sizeof(junk), IBV_WC_RECV, 0);
	CHECK_EQ(count_sends(qpn, IBV_WR_SEND), 8);
	CHECK_EQ(set.counters.bad_messages, 8);
	CHECK(conn_of(qpn) == NULL);
	stop();
}

/* More requests than reply slots (twice the credits): closed, and freed
 * only once the replies it had out completed. */
static void test_beyond_credits(void)
{
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	for (unsigned i = 0; i < 2 * cfg.server.credits; i++)
		send_op(c, RMP_OP_STAT);
	CHECK_EQ(c->replies_due, 4);
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED);
	send_op(c, RMP_OP_STAT);
	CHECK_EQ(c->state, RMP_CONN_CLOSING);
	CHECK_EQ(fake_of(c->qp)->state, IBV_QPS_ERR);
	CHECK(conn_of(qpn) == c);
	CHECK_EQ(count_sends(qpn, IBV_WR_SEND), 5);
	flush(qpn);
	CHECK(conn_of(qpn) == NULL);
	stop();
}

/* A receive completion that is no plain SEND: no answer, counted as an
 * access error, closed. (Each kind trips one check alone: a device also
 * sets IBV_WC_WITH_IMM on a WRITE with immediate.) */
static void test_not_a_send(void)
{
	static const struct {
		enum ibv_wc_opcode op;
		unsigned flags;
	} kinds[] = {
		{ IBV_WC_RECV_RDMA_WITH_IMM, 0 },
		{ IBV_WC_RECV, IBV_WC_WITH_INV },
		{ IBV_WC_RECV, IBV_WC_WITH_IMM },
	};
	uint8_t buf[RMP_MSG_MAX] = { 0 };
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	for (unsigned i = 0; i < RMP_ARRAY_SIZE(kinds); i++) {
		c = proven_from("192.0.2.10");
		qpn = c->qp->qp_num;
		deliver_raw(c, buf, 0, kinds[i].op, kinds[i].flags);
		CHECK_EQ(count_sends(qpn, IBV_WR_SEND), 1); /* AUTH's only */
		CHECK_EQ(set.counters.access_errors, i + 1);
		CHECK(conn_of(qpn) == NULL);
	}
	/* Every shared receive went back up. */
	CHECK_EQ(due(0), RMP_ARRAY_SIZE(srq_rx));
	stop();
}

/* fail_proof -- a connection from ip naming tname fails its proof. */
static void fail_proof(const char *ip, const char *tname)
{
	struct rmp_conn *c = open_as(ip, tname);
	uint32_t qpn = c->qp->qp_num;

	send_auth(c, true);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(conn_of(qpn) == NULL);
}

/*
 * Failed proofs under ever new tenant names cool their whole block down
 * (past 4 x auth_failures_per_minute): a keyless peer cannot fail
 * without end. But a tenant that proved its key from that block is not
 * locked out by it: the listener does not refuse it (rmp_guard_refusing),
 * and it proves its key again. Every other name is refused alike -- a
 * tenant that exists but did not prove its key there and a name nobody
 * has get the same answer for as long, so a peer learns nothing of which
 * names exist -- and the proven tenant's own name still cools down when
 * proofs naming it fail.
 */
static void test_block_cooldown_spares_proven(void)
{
	unsigned max = 5 * 4; /* the block's: 4 x the default per name */
	struct rmp_conn *c;
	char name[16];
	uint64_t beta_ms, nobody_ms;

	start(RMP_KEYS_WINDOW);
	CHECK_EQ(cfg.server.auth_failures_per_minute, 5);
	c = proven_from("192.0.2.7");
	rmp_conn_close(c, "test");
	for (unsigned i = 0; i <= max; i++) {
		snprintf(name, sizeof(name), "rnd%u", i);
		fail_proof("192.0.2.7", name);
	}
	beta_ms = rmp_guard_refusing(guard, "192.0.2.7", "beta", now_ms);
	nobody_ms = rmp_guard_refusing(guard, "192.0.2.7", "nobody", now_ms);
	printf("# after %u failed proofs under new names: acme %llu ms, beta "
	       "%llu ms, nobody %llu ms\n", max + 1,
	       (unsigned long long)rmp_guard_refusing(guard, "192.0.2.7",
						      "acme", now_ms),
	       (unsigned long long)beta_ms, (unsigned long long)nobody_ms);
	CHECK(beta_ms > 0);
	CHECK_EQ(beta_ms, nobody_ms);
	CHECK(rmp_guard_refusing(guard, "192.0.2.7", "", now_ms) > 0);
	CHECK(rmp_guard_refusing(guard, "192.0.2.7", NULL, now_ms) > 0);
	CHECK_EQ(rmp_guard_refusing(guard, "192.0.2.7", "acme", now_ms), 0);
	c = proven_from("192.0.2.7");
	CHECK(c->holder.tenant == tenant("acme"));
	rmp_conn_close(c, "test");
	/* Its own name's failures still cool it down there. */
	for (unsigned i = 0; i <= 5; i++)
		fail_proof("192.0.2.7", "acme");
	CHECK(rmp_guard_refusing(guard, "192.0.2.7", "acme", now_ms) > 0);
	/* Elsewhere nothing changed. */
	CHECK_EQ(rmp_guard_refusing(guard, "192.0.2.8", "beta", now_ms), 0);
	stop();

	/* Access errors (rkeys guessed by a client that has a key) cool
	 * the block down for every name, the proven ones too: the
	 * exemption is from others' failed proofs only. */
	start(RMP_KEYS_WINDOW);
	rmp_conn_close(proven_from("192.0.2.9"), "test");
	for (unsigned i = 0; i <= cfg.server.access_errors_per_minute; i++) {
		uint8_t buf[RMP_MSG_MAX] = { 0 };

		c = proven_from("192.0.2.9");
		deliver_raw(c, buf, 0, IBV_WC_RECV_RDMA_WITH_IMM, 0);
	}
	CHECK_EQ(set.counters.access_errors,
		 cfg.server.access_errors_per_minute + 1);
	CHECK(rmp_guard_refusing(guard, "192.0.2.9", "acme", now_ms) > 0);
	CHECK(rmp_guard_refusing(guard, "192.0.2.9", NULL, now_ms) > 0);
	stop();
}

/* ------------------------------------------------------------- the log */

static int cap_fd = -1, cap_saved = -1;

/* capture -- the log (stderr) goes to a fresh file from now on. */
static void capture(void)
{
	char path[] = "/tmp/rmp-test-conn-log.XXXXXX";

	fflush(stderr);
	cap_fd = mkstemp(path);
	CHECK(cap_fd >= 0);
	unlink(path);
	cap_saved = dup(STDERR_FILENO);
	dup2(cap_fd, STDERR_FILENO);
}

/* captured -- what was logged since capture(); stderr as before. */
static const char *captured(void)
{
	static char buf[1 << 20];
	ssize_t n = pread(cap_fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	dup2(cap_saved, STDERR_FILENO);
	close(cap_saved);
	close(cap_fd);
	return buf;
}

static unsigned count_str(const char *s, const char *needle)
{
	unsigned n = 0;

	for (; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/*
 * Lines a peer can cause without a key -- failed proofs (their audit
 * lines too) and receives that are no request -- are rate-limited per
 * block like the other lines about it: 40 of each from one address leave
 * at most a burst, and the rest are counted and summed up in the next
 * window. The audit lines of what succeeds are complete: 20 grants of a
 * proven client at that address, all logged.
 */
static void test_peer_lines_limited(void)
{
	uint8_t buf[RMP_MSG_MAX] = { 0 };
	struct wr_rec *rep;
	struct rmp_conn *c;
	const char *log;
	char name[16];
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	capture();
	for (unsigned i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), i % 2 ? "acme" : "nobody%u", i);
		c = open_as("192.0.2.7", name);
		qpn = c->qp->qp_num;
		send_auth(c, true);
		complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
		CHECK(conn_of(qpn) == NULL);
	}
	for (unsigned i = 0; i < 40; i++) {
		c = open_from("192.0.2.7");
		qpn = c->qp->qp_num;
		deliver_raw(c, buf, 0, IBV_WC_RECV_RDMA_WITH_IMM, 0);
		CHECK(conn_of(qpn) == NULL);
	}
	c = proven_from("192.0.2.7");
	qpn = c->qp->qp_num;
	for (unsigned i = 0; i < 20; i++) {
		rep = alloc_lease(c, 0);
		CHECK_EQ(rep->msg.hdr.status, 0);
		complete(last(qpn, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
		complete(rep, IBV_WC_SUCCESS);
	}
	/* The next window's first line about the block sums the rest up. */
	now_ms += RMP_GUARD_LOG_WINDOW_MS;
	rmp_conn_close(c, "test");
	c = open_as("192.0.2.7", "nobody");
	send_auth(c, true);
	complete(last(c->qp->qp_num, IBV_WR_SEND), IBV_WC_SUCCESS);
	log = captured();
	printf("# about 192.0.2.7: %u auth-fail audit lines, %u 'not part of "
	       "the protocol', %u grants; %llu counted, not logged\n",
	       count_str(log, "audit: auth-fail"),
	       count_str(log, "not part of the protocol"),
	       count_str(log, "audit: grant"),
	       (unsigned long long)set.counters.log_suppressed);
	CHECK(count_str(log, "audit: auth-fail") <= RMP_GUARD_LOG_BURST + 1);
	CHECK(count_str(log, "not part of the protocol") <=
	      RMP_GUARD_LOG_BURST);
	CHECK_EQ(count_str(log, "audit: grant"), 20);
	CHECK(set.counters.log_suppressed >= 70);
	CHECK_EQ(count_str(log, "line(s) about 192.0.2.7 in 10 s were not "
				"logged"), 1);
	rmp_conns_close_all(&set, "test");
	stop();
}

/* Region mode: a lease's key is an MR of the connection's PD, gone with
 * the close. Own receives after it: flushed ones are not re-posted, one
 * that completed before the kill is not answered; the last frees it. */
static void test_flush_after_close(void)
{
	struct rmp_conn *c;
	uint32_t qpn;
	unsigned sends;

	start(RMP_KEYS_REGION);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	CHECK_EQ(c->recvs_due, cfg.server.credits); /* re-posted */
	complete(alloc_lease(c, 0), IBV_WC_SUCCESS);
	CHECK_EQ(count_sends(qpn, IBV_WR_BIND_MW), 0);
	CHECK_EQ(live_mrs, 3); /* replies, receives, the lease's key */
	sends = count_sends(qpn, IBV_WR_SEND);
	rmp_conn_close(c, "test");
	CHECK_EQ(live_mrs, 2);
	CHECK(conn_of(qpn) == c);
	send_op(c, RMP_OP_STAT); /* in the CQ before the kill */
	CHECK_EQ(count_sends(qpn, IBV_WR_SEND), sends);
	CHECK_EQ(c->recvs_due, cfg.server.credits - 1);
	CHECK(conn_of(qpn) == c);
	flush(qpn);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(due(qpn), 0);
	stop();
}

/* ------------------------------------------------------- close and free */

/* Each thing that is due keeps a closed connection: replies in flight,
 * a probe out, a window's bind, a window's invalidation. The free comes
 * with the last of them, once. */
static void test_free_waits(void)
{
	struct wr_rec *rep, *bind, *inv;
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	/* A reply in flight and a probe out. */
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	send_op(c, RMP_OP_STAT);
	rep = last(qpn, IBV_WR_SEND);
	cn_probe(c);
	CHECK(c->probe_out);
	rmp_conn_close(c, "test");
	rmp_conn_close(c, "again"); /* no-op */
	CHECK(conn_of(qpn) == c);
	complete(rep, IBV_WC_WR_FLUSH_ERR);
	CHECK(conn_of(qpn) == c); /* the probe is out */
	complete(last(qpn, IBV_WR_RDMA_WRITE), IBV_WC_WR_FLUSH_ERR);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(ids[nids - 1].destroyed, 1);
	CHECK_EQ(set.counters.unreachable, 0); /* a flush says nothing */

	/* An ALLOC's bind and reply, both due at the close; the lease is
	 * ephemeral: it ends with the connection. */
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	rep = alloc_lease(c, RMP_LEASE_F_EPHEMERAL);
	bind = last(qpn, IBV_WR_BIND_MW);
	CHECK(bind && bind < rep); /* the bind goes first */
	CHECK_EQ(rep->msg.hdr.status, 0);
	CHECK_EQ(tenant("acme")->leases, 1);
	rmp_conn_close(c, "test");
	CHECK_EQ(tenant("acme")->leases, 0);
	CHECK(!rmp_holder_idle(&c->holder));
	complete(rep, IBV_WC_WR_FLUSH_ERR);
	CHECK(conn_of(qpn) == c); /* the bind is due */
	complete(bind, IBV_WC_WR_FLUSH_ERR);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(live_mws, 0);

	/* A FREE's invalidation, due at the close. */
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	rep = alloc_lease(c, 0);
	complete(last(qpn, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	complete(rep, IBV_WC_SUCCESS);
	free_lease(c, rep);
	CHECK_EQ(last(qpn, IBV_WR_SEND)->msg.hdr.status, 0);
	inv = last(qpn, IBV_WR_LOCAL_INV);
	CHECK(inv && inv > last(qpn, IBV_WR_SEND)); /* after the reply */
	rmp_conn_close(c, "test");
	flush_but(qpn, inv);
	CHECK(conn_of(qpn) == c); /* the invalidation is due */
	complete(inv, IBV_WC_WR_FLUSH_ERR);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(set.counters.closed, 3);
	stop();
}

/* A key operation that fails on a live QP fails the holder: the close
 * runs inside the completion, the connection held; the free after it. */
static void test_key_failure(void)
{
	struct wr_rec *rep;
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	rep = alloc_lease(c, 0);
	complete(rep, IBV_WC_SUCCESS);
	fake_of(c->qp)->state = IBV_QPS_ERR; /* the bind failed it */
	complete(last(qpn, IBV_WR_BIND_MW), IBV_WC_MW_BIND_ERR);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(set.counters.access_errors, 0); /* ours, not the client's */
	CHECK_EQ(live_mws, 0);
	stop();
}

/* A reply that cannot be posted: the key work held back for it completes
 * as flushed, the lease it granted is freed again, the connection closed. */
static void test_reply_post_fails(void)
{
	struct rmp_conn *c;
	uint32_t qpn;
	unsigned sends;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	sends = count_sends(qpn, IBV_WR_SEND);
	post_fail = ENOMEM;
	alloc_lease(c, 0);
	post_fail = 0;
	CHECK_EQ(count_sends(qpn, IBV_WR_SEND), sends);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(tenant("acme")->leases, 0);
	CHECK_EQ(live_mws, 0);
	stop();
}

/* A reply the peer does not take (its receives ran out): closed. */
static void test_reply_not_delivered(void)
{
	struct wr_rec *first;
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	send_op(c, RMP_OP_STAT);
	first = last(qpn, IBV_WR_SEND);
	send_op(c, RMP_OP_STAT);
	fake_of(c->qp)->state = IBV_QPS_ERR;
	complete(first, IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(c->state, RMP_CONN_CLOSING);
	CHECK_EQ(set.counters.access_errors, 0);
	CHECK(conn_of(qpn) == c); /* the second reply is due */
	flush(qpn);
	CHECK(conn_of(qpn) == NULL);
	stop();
}

/* A revocation that times out: the lifecycle fails the holder from its
 * timer (cn_holder_failed, no completion holding the connection): it is
 * closed, and freed only once the invalidation flushed. */
static void test_revoke_timeout(void)
{
	struct wr_rec *rep;
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	cfg.server.revoke_timeout_ms = 1; /* the timer runs on real time */
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	rep = alloc_lease(c, 0);
	complete(last(qpn, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	complete(rep, IBV_WC_SUCCESS);
	free_lease(c, rep);
	complete(last(qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(last(qpn, IBV_WR_LOCAL_INV)->due);
	now_ms += 1;
	CHECK_EQ(event_base_loop(base, EVLOOP_ONCE), 0);
	CHECK_EQ(c->state, RMP_CONN_CLOSING);
	CHECK_EQ(fake_of(c->qp)->state, IBV_QPS_ERR);
	CHECK(conn_of(qpn) == c);
	flush(qpn);
	CHECK(conn_of(qpn) == NULL);
	stop();
}

/* ------------------------------------------------------------- fences */

/* takeover -- c's exclusive ATTACH of the lease rep describes. */
static void takeover(struct rmp_conn *c, const struct wr_rec *rep)
{
	struct rmp_msg m = { .hdr.opcode = RMP_OP_ATTACH };

	m.u.attach.id = rep->msg.u.lease.id;
	m.u.attach.secret = rep->msg.u.lease.secret;
	m.u.attach.flags = RMP_ATTACH_F_EXCLUSIVE;
	send_msg(c, &m);
}

/* run_loop -- let the lifecycle's due timers fire (the fence's is due at
 * once), as the daemon's loop would. */
static void run_loop(void)
{
	CHECK_EQ(event_base_loop(base, EVLOOP_NONBLOCK), 0);
}

/*
 * An exclusive ATTACH is answered once the victim's LOCAL_INV completed:
 * the taker's bind goes out at once, its reply only then, from the loop.
 * When the victim's connection closes instead, its flush answers it.
 * A taker that closes while it waits gets nothing and is freed; one that
 * keeps more replies waiting than its credits is closed.
 */
static void test_fence(void)
{
	struct wr_rec *lease, *inv, *rep;
	struct rmp_conn *v, *t;
	uint32_t vq, tq;

	start(RMP_KEYS_WINDOW);
	v = proven_from("192.0.2.10");
	t = proven_from("192.0.2.11");
	vq = v->qp->qp_num;
	tq = t->qp->qp_num;
	lease = alloc_lease(v, 0);
	complete(last(vq, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	complete(lease, IBV_WC_SUCCESS);
	takeover(t, lease);
	CHECK_EQ(count_sends(tq, IBV_WR_SEND), 1); /* the AUTH's only */
	CHECK_EQ(count_sends(tq, IBV_WR_BIND_MW), 1);
	CHECK_EQ(t->ndeferred, 1);
	inv = last(vq, IBV_WR_LOCAL_INV);
	CHECK(inv && inv->due);
	complete(last(tq, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	run_loop();
	CHECK_EQ(count_sends(tq, IBV_WR_SEND), 1);
	complete(inv, IBV_WC_SUCCESS);
	CHECK_EQ(count_sends(tq, IBV_WR_SEND), 1); /* from the loop only */
	run_loop();
	CHECK_EQ(count_sends(tq, IBV_WR_SEND), 2);
	rep = last(tq, IBV_WR_SEND);
	CHECK_EQ(rep->decoded, 0);
	CHECK_EQ(rep->msg.hdr.opcode, RMP_OP_ATTACH);
	CHECK_EQ(rep->msg.hdr.req_id, 7);
	CHECK_EQ(rep->msg.hdr.status, 0);
	CHECK_EQ(rep->msg.u.lease.id, lease->msg.u.lease.id);
	CHECK_EQ(rep->msg.u.lease.holders, 1);
	CHECK_EQ(t->ndeferred, 0);
	complete(rep, IBV_WC_SUCCESS);

	/* The victim (now the taker t) closes: its flush answers. */
	rmp_conn_close(v, "test");
	flush(vq);
	v = proven_from("192.0.2.12");
	takeover(v, lease);
	CHECK_EQ(v->ndeferred, 1);
	rmp_conn_close(t, "test");
	run_loop();
	CHECK_EQ(v->ndeferred, 1);
	flush(tq);
	CHECK(conn_of(tq) == NULL);
	run_loop();
	CHECK_EQ(v->ndeferred, 0);
	rep = last(v->qp->qp_num, IBV_WR_SEND);
	CHECK_EQ(rep->msg.hdr.opcode, RMP_OP_ATTACH);
	CHECK_EQ(rep->msg.hdr.status, 0);
	complete(rep, IBV_WC_SUCCESS);
	complete(last(v->qp->qp_num, IBV_WR_BIND_MW), IBV_WC_SUCCESS);

	/* A taker that closes while it waits: no reply, freed. */
	t = proven_from("192.0.2.13");
	tq = t->qp->qp_num;
	takeover(t, lease);
	inv = last(v->qp->qp_num, IBV_WR_LOCAL_INV);
	rmp_conn_close(t, "test");
	flush(tq);
	CHECK(conn_of(tq) == NULL);
	complete(inv, IBV_WC_SUCCESS);
	run_loop();
	CHECK_EQ(count_sends(tq, IBV_WR_SEND), 1);

	/* More waiting replies than credits (2): closed. */
	t = proven_from("192.0.2.14");
	tq = t->qp->qp_num;
	lease = alloc_lease(v, 0);
	complete(last(v->qp->qp_num, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	complete(lease, IBV_WC_SUCCESS);
	takeover(t, lease);
	takeover(t, lease);
	CHECK_EQ(t->ndeferred, 2);
	CHECK_EQ(t->state, RMP_CONN_ESTABLISHED);
	takeover(t, lease);
	CHECK_EQ(t->state, RMP_CONN_CLOSING);
	flush(tq);
	CHECK(conn_of(tq) == NULL);
	vq = v->qp->qp_num;
	rmp_conn_close(v, "test");
	flush(vq);
	CHECK(conn_of(vq) == NULL);
	run_loop();
	stop();
}

/* victim -- a connection from ip holding a lease (ephemeral with flags),
 * whose key another connection then takes over: the takeover's reply out,
 * the victim's key dead. Returns the victim; *lease its ALLOC's reply. */
static struct rmp_conn *victim(const char *ip, uint32_t flags,
			       struct wr_rec **lease)
{
	struct rmp_conn *v = proven_from(ip), *t = proven_from("192.0.2.99");
	uint32_t vq = v->qp->qp_num, tq = t->qp->qp_num;

	*lease = alloc_lease(v, flags);
	complete(last(vq, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	complete(*lease, IBV_WC_SUCCESS);
	takeover(t, *lease);
	complete(last(vq, IBV_WR_LOCAL_INV), IBV_WC_SUCCESS);
	complete(last(tq, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
	run_loop();
	complete(last(tq, IBV_WR_SEND), IBV_WC_SUCCESS);
	rmp_conn_close(t, "test");
	flush(tq);
	return v;
}

/*
 * A connection one of whose keys another's takeover revoked fails with
 * an access error (its QP in error, found by the sweep or by the async
 * event): counted as a revoked-key error, not as an access error, not
 * against the address: eleven of them from one address start no
 * cool-down, where eleven errors of connections that had nothing
 * revoked do (access_errors_per_minute 10), as before. The victim's
 * ephemeral lease waits for an ATTACH instead of ending with it; its
 * other lease lives on. An async "invalid request" error counts as
 * before, revoked key or not.
 */
static void test_revoked_key_errors(void)
{
	struct ibv_async_event ev = { 0 };
	struct wr_rec *lease, *eph;
	struct rmp_conn *v;
	uint32_t vq;

	start(RMP_KEYS_WINDOW);
	for (unsigned i = 0; i < 11; i++) {
		v = victim("192.0.2.10", 0, &lease);
		vq = v->qp->qp_num;
		CHECK_EQ(v->holder.revoked_by_others, 1);
		eph = alloc_lease(v, RMP_LEASE_F_EPHEMERAL);
		complete(last(vq, IBV_WR_BIND_MW), IBV_WC_SUCCESS);
		complete(eph, IBV_WC_SUCCESS);
		fake_of(v->qp)->state = IBV_QPS_ERR; /* it used the dead key */
		if (i % 2) {
			rmp_conns_sweep(&set);
		} else {
			ev.element.qp = v->qp;
			ev.event_type = IBV_EVENT_QP_ACCESS_ERR;
			rmp_conns_on_qp_event(&set, &ev);
		}
		/* (Closed, and freed at once or on the flush.) */
		CHECK(!conn_of(vq) || conn_of(vq)->state == RMP_CONN_CLOSING);
		flush(vq);
		CHECK(conn_of(vq) == NULL);
		CHECK(rmp_lifecycle_find(lc, eph->msg.u.lease.id) != NULL);
		CHECK(rmp_lifecycle_find(lc, lease->msg.u.lease.id) != NULL);
	}
	CHECK_EQ(set.counters.revoked_key_errors, 11);
	CHECK_EQ(set.counters.access_errors, 0);
	CHECK_EQ(rmp_guard_refusing(guard, "192.0.2.10", "acme", now_ms), 0);
	/* The same from connections with nothing revoked: an attack. */
	for (unsigned i = 0; i < 11; i++) {
		v = proven_from("192.0.2.20");
		vq = v->qp->qp_num;
		fake_of(v->qp)->state = IBV_QPS_ERR;
		rmp_conns_sweep(&set);
		CHECK(conn_of(vq) == NULL);
	}
	CHECK_EQ(set.counters.access_errors, 11);
	CHECK(rmp_guard_refusing(guard, "192.0.2.20", "acme", now_ms) > 0);
	/* An invalid request counts, revoked key or not. */
	v = victim("192.0.2.30", 0, &lease);
	vq = v->qp->qp_num;
	ev.element.qp = v->qp;
	ev.event_type = IBV_EVENT_QP_REQ_ERR;
	rmp_conns_on_qp_event(&set, &ev);
	CHECK_EQ(set.counters.access_errors, 12);
	CHECK_EQ(set.counters.revoked_key_errors, 11);
	flush(vq);
	CHECK(conn_of(vq) == NULL);
	stop();
}

/* ------------------------------------------------------------- sweep */

/* auth_timeout closes an unproven connection, counted; not a proven one. */
static void test_auth_timeout(void)
{
	struct rmp_conn *c, *p;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = open_from("192.0.2.10");
	qpn = c->qp->qp_num;
	p = proven_from("192.0.2.11");
	now_ms += cfg.server.auth_timeout_ms - 1;
	rmp_conns_sweep(&set);
	CHECK(conn_of(qpn) == c);
	CHECK_EQ(set.counters.auth_timeouts, 0);
	now_ms += 1;
	rmp_conns_sweep(&set);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(set.counters.auth_timeouts, 1);
	CHECK_EQ(p->state, RMP_CONN_ESTABLISHED);
	rmp_conns_sweep(&set);
	CHECK_EQ(set.counters.auth_timeouts, 1);
	rmp_conn_close(p, "test");
	stop();
}

/* A QP in error by no doing of ours is closed as an access error; with a
 * probe out the probe's completion decides, and says unreachable. */
static void test_failed_remotely(void)
{
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	fake_of(c->qp)->state = IBV_QPS_ERR;
	rmp_conns_sweep(&set);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(set.counters.access_errors, 1);

	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	cn_probe(c);
	fake_of(c->qp)->state = IBV_QPS_ERR;
	rmp_conns_sweep(&set);
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED);
	complete(last(qpn, IBV_WR_RDMA_WRITE), IBV_WC_RETRY_EXC_ERR);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(set.counters.unreachable, 1);
	CHECK_EQ(set.counters.access_errors, 1);
	stop();
}

/* A connection quiet for keepalive gets one probe (a zero-byte WRITE),
 * no second while it is out; an answer makes it heard again. */
static void test_keepalive(void)
{
	uint64_t t0 = now_ms, ka;
	struct wr_rec *probe;
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	ka = cfg.server.keepalive_ms;
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	rmp_conns_sweep(&set);
	now_ms = t0 + ka - 1;
	rmp_conns_sweep(&set);
	CHECK_EQ(count_sends(qpn, IBV_WR_RDMA_WRITE), 0);
	now_ms = t0 + ka;
	rmp_conns_sweep(&set);
	CHECK_EQ(count_sends(qpn, IBV_WR_RDMA_WRITE), 1);
	probe = last(qpn, IBV_WR_RDMA_WRITE);
	CHECK_EQ(probe->num_sge, 0);
	CHECK_EQ(rmp_wr_tag(probe->wr_id), RMP_WR_PROBE);
	CHECK(c->probe_out);
	now_ms = t0 + 2 * ka;
	rmp_conns_sweep(&set);
	CHECK_EQ(count_sends(qpn, IBV_WR_RDMA_WRITE), 1);
	complete(probe, IBV_WC_SUCCESS);
	CHECK(!c->probe_out);
	rmp_conns_sweep(&set); /* heard: quiet from now on */
	now_ms = t0 + 3 * ka - 1;
	rmp_conns_sweep(&set);
	CHECK_EQ(count_sends(qpn, IBV_WR_RDMA_WRITE), 1);
	now_ms = t0 + 3 * ka;
	rmp_conns_sweep(&set);
	CHECK_EQ(count_sends(qpn, IBV_WR_RDMA_WRITE), 2);
	CHECK_EQ(set.counters.unreachable, 0);
	rmp_conn_close(c, "test");
	CHECK(conn_of(qpn) == c);
	flush(qpn);
	CHECK(conn_of(qpn) == NULL);
	stop();
}

/* A probe that fails: the peer is unreachable; closed once, freed. */
static void test_probe_fails(void)
{
	struct rmp_conn *c;
	uint32_t qpn;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	qpn = c->qp->qp_num;
	rmp_conns_sweep(&set); /* heard: quiet from now on */
	now_ms += cfg.server.keepalive_ms;
	rmp_conns_sweep(&set);
	CHECK(c->probe_out);
	fake_of(c->qp)->state = IBV_QPS_ERR; /* the probe's failure did it */
	complete(last(qpn, IBV_WR_RDMA_WRITE), IBV_WC_RETRY_EXC_ERR);
	CHECK(conn_of(qpn) == NULL);
	CHECK_EQ(set.counters.unreachable, 1);
	CHECK_EQ(set.counters.access_errors, 0);
	CHECK_EQ(ids[nids - 1].destroyed, 1);
	stop();
}

/* A reload that voids a proof: every request refused from then on, the
 * connection closed after its tenant's rotate_grace (at once without).
 * One still to prove a tenant that no longer admits its address never
 * gets in. */
static void test_reload(void)
{
	struct rmp_conn *a, *b, *u;
	uint32_t a_qpn, b_qpn, u_qpn;
	struct rmp_config next;
	unsigned changes, max_prefix;
	uint64_t t0;

	start(RMP_KEYS_WINDOW);
	a = proven_as("192.0.2.10", "acme");
	b = proven_as("192.0.2.20", "beta");
	u = open_as("192.0.2.30", "beta");
	a_qpn = a->qp->qp_num;
	b_qpn = b->qp->qp_num;
	u_qpn = u->qp->qp_num;
	next = cfg;
	next.tenants[0].key[0] ^= 1;
	next.tenants[1].limits.nnetworks = 1;
	CHECK_EQ(rmp_network_parse("198.51.100.0/24",
				   &next.tenants[1].limits.networks[0],
				   &max_prefix), 0);
	CHECK_EQ(rmp_tenants_reload(tenants, &next, &changes), 0);
	cfg = next;
	t0 = now_ms;
	rmp_conns_recheck_proofs(&set);
	CHECK(conn_of(b_qpn) == NULL); /* beta: no grace */
	CHECK(conn_of(a_qpn) == a);
	CHECK_EQ(a->cut_at_ms, t0 + 3000);
	/* u proves beta's key from outside its networks now: refused. (It
	 * is still open: the recheck leaves it to admit_proven, as conn.h
	 * says.) */
	CHECK(conn_of(u_qpn) == u);
	send_auth(u, false);
	CHECK_EQ(last(u_qpn, IBV_WR_SEND)->msg.hdr.status, -ECONNREFUSED);
	CHECK_EQ(RMP_MSG_DETAIL(last(u_qpn, IBV_WR_SEND)->msg.hdr.flags),
		 RMP_DETAIL_NETWORK);
	complete(last(u_qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	CHECK(conn_of(u_qpn) == NULL);
	CHECK_EQ(tenant("beta")->connections, 0);
	CHECK_EQ(tenant("beta")->pending, 0);
	send_op(a, RMP_OP_STAT);
	CHECK_EQ(last(a_qpn, IBV_WR_SEND)->msg.hdr.status, -EKEYREVOKED);
	complete(last(a_qpn, IBV_WR_SEND), IBV_WC_SUCCESS);
	now_ms = t0 + 2999;
	rmp_conns_sweep(&set);
	CHECK(conn_of(a_qpn) == a);
	now_ms = t0 + 3000;
	rmp_conns_sweep(&set);
	CHECK(conn_of(a_qpn) == NULL);
	CHECK_EQ(tenant("acme")->connections, 0);
	stop();
}

/* The stop: close_all frees what has nothing due; force_free the rest. */
static void test_close_all(void)
{
	struct rmp_conn *a, *b;
	uint32_t a_qpn, b_qpn;

	start(RMP_KEYS_WINDOW);
	a = proven_from("192.0.2.10");
	b = open_from("192.0.2.11");
	a_qpn = a->qp->qp_num;
	b_qpn = b->qp->qp_num;
	send_op(a, RMP_OP_STAT); /* its reply never completes */
	rmp_conns_close_all(&set, "test");
	CHECK(conn_of(b_qpn) == NULL);
	CHECK_EQ(conn_of(a_qpn)->state, RMP_CONN_CLOSING);
	forcing = true;
	rmp_conns_force_free(&set);
	forcing = false;
	CHECK(conn_of(a_qpn) == NULL);
	last(a_qpn, IBV_WR_SEND)->due = false; /* gone with the device */
	stop();
}

/* Async events: an access error closes and counts; COMM_EST establishes;
 * a fatal QP closes without counting the client. */
static void test_qp_events(void)
{
	struct ibv_async_event ev = { 0 };
	struct rmp_conn *c;

	start(RMP_KEYS_WINDOW);
	c = proven_from("192.0.2.10");
	ev.element.qp = c->qp;
	ev.event_type = IBV_EVENT_QP_ACCESS_ERR;
	rmp_conns_on_qp_event(&set, &ev);
	CHECK_EQ(set.counters.access_errors, 1);
	CHECK_EQ(set.count, 0);
	c = open_from("192.0.2.10");
	ev.element.qp = c->qp;
	ev.event_type = IBV_EVENT_COMM_EST;
	rmp_conns_on_qp_event(&set, &ev);
	CHECK_EQ(c->state, RMP_CONN_ESTABLISHED);
	fake_of(c->qp)->state = IBV_QPS_ERR;
	ev.event_type = IBV_EVENT_QP_FATAL;
	rmp_conns_on_qp_event(&set, &ev);
	CHECK_EQ(set.count, 0);
	CHECK_EQ(set.counters.access_errors, 1);
	stop();
}

int main(void)
{
	/* A use after free may crash the test: keep the lines before it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Every log line is formatted (the sanitizers read them too). */
	rmp_log_set_level(LOG_DEBUG);
	CHECK_EQ(rmp_auth_init(), 0);
	pool_mem = aligned_alloc(4096, 1 << 20);
	memset(pool_mem, 0, 1 << 20);
	pool.base = pool_mem;
	ctx.ops.post_send = fake_post_send;
	ctx.ops.post_recv = fake_post_recv;
	ctx.ops.post_srq_recv = fake_post_srq_recv;
	ctx.ops.alloc_mw = fake_alloc_mw;
	ctx.ops.dealloc_mw = fake_dealloc_mw;
	test_accept_region();
	test_accept_window();
	test_accept_failures();
	test_counting();
	test_preauth_room();
	test_preauth_room_flood();
	test_full_makes_room();
	test_full_spares();
	test_request_before_auth();
	test_bad_messages();
	test_beyond_credits();
	test_not_a_send();
	test_peer_lines_limited();
	test_block_cooldown_spares_proven();
	test_flush_after_close();
	test_free_waits();
	test_key_failure();
	test_reply_post_fails();
	test_reply_not_delivered();
	test_revoke_timeout();
	test_fence();
	test_revoked_key_errors();
	test_auth_timeout();
	test_failed_remotely();
	test_keepalive();
	test_probe_fails();
	test_reload();
	test_close_all();
	test_qp_events();
	free(pool_mem);
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* smoke.c -- RDMA smoke test: SEND/RECV, WRITE, READ and CAS over librdmacm. */

/*
 * One binary, two roles, run as two processes by smoke.sh:
 *
 *   smoke server ADDR PORT          serve one client, verify its writes
 *   smoke client ADDR PORT [--corrupt]
 *
 * The server registers a buffer and sends (addr, rkey) in the accept
 * private data. The client SENDs a greeting, RDMA WRITEs a pattern, READs
 * it back, does an 8-byte compare-and-swap, asks the server to check its
 * own view of the buffer, and finally WRITEs with a wrong rkey, which must
 * complete with IBV_WC_REM_ACCESS_ERR. Every byte is compared. --corrupt
 * makes the client expect one wrong byte, so the test must fail: this
 * proves the suite can see a failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#define BUF_LEN 65536
#define MSG_LEN 64
#define CAS_OFF 4096 /* 8-byte aligned word inside the buffer */
#define TIMEOUT_MS 20000

struct peer {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *buf_mr, *msg_mr;
	uint8_t *buf;
	char *msg; /* [0] send, [1] recv slots of MSG_LEN each */
};

struct remote_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static const char *role = "smoke";

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* pattern -- the byte expected at offset i of the buffer. */
static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + 7);
}

/* wait_event -- next rdma_cm event, which must be `want`. */
static struct rdma_cm_event *wait_event(struct rdma_event_channel *ec,
					enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ec, &ev))
		fail("rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want)
		fail("expected %s, got %s (status %d)", rdma_event_str(want),
		     rdma_event_str(ev->event), ev->status);
	return ev;
}

/*
 * wait_wc -- poll the CQ for one completion of wr_id, with a timeout.
 * The send and the receive queue share the CQ, and nothing orders their
 * completions: the peer's reply may complete our receive before the ACK
 * of our SEND completes it. A completion of another wr_id is kept (one,
 * the most either side has outstanding besides the awaited one) for the
 * wait that wants it.
 */
static void wait_wc(struct peer *p, uint64_t wr_id, struct ibv_wc *wc)
{
	static struct ibv_wc early;
	static bool have_early;
	uint64_t deadline = now_ms() + TIMEOUT_MS;
	int n;

	if (have_early && early.wr_id == wr_id) {
		*wc = early;
		have_early = false;
		return;
	}
	for (;;) {
		n = ibv_poll_cq(p->cq, 1, wc);
		if (n < 0)
			fail("ibv_poll_cq: %d", n);
		if (n == 1 && wc->wr_id == wr_id)
			return;
		if (n == 1 && have_early)
			fail("completion for wr %" PRIu64 " while wr %" PRIu64
			     " is kept, want %" PRIu64 " (%s)", wc->wr_id,
			     early.wr_id, wr_id, ibv_wc_status_str(wc->status));
		if (n == 1) {
			early = *wc;
			have_early = true;
			continue;
		}
		if (now_ms() > deadline)
			fail("no completion for wr %" PRIu64 " in %d ms",
			     wr_id, TIMEOUT_MS);
	}
}

static void expect_ok(struct peer *p, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;

	wait_wc(p, wr_id, &wc);
	if (wc.status != IBV_WC_SUCCESS)
		fail("%s: %s", what, ibv_wc_status_str(wc.status));
}

static void post_recv(struct peer *p)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->msg + MSG_LEN),
		.length = MSG_LEN,
		.lkey = p->msg_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 100, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(p->id->qp, &wr, &bad))
		fail("ibv_post_recv: %s", strerror(errno));
}

static void send_msg(struct peer *p, const char *text)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->msg,
		.length = MSG_LEN,
		.lkey = p->msg_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 200, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	memset(p->msg, 0, MSG_LEN);
	snprintf(p->msg, MSG_LEN, "%s", text);
	if (ibv_post_send(p->id->qp, &wr, &bad))
		fail("ibv_post_send(SEND): %s", strerror(errno));
	expect_ok(p, 200, "SEND");
}

/* recv_msg -- wait for the posted receive and check its text. */
static void recv_msg(struct peer *p, const char *want)
{
	struct ibv_wc wc;

	wait_wc(p, 100, &wc);
	if (wc.status != IBV_WC_SUCCESS)
		fail("RECV: %s", ibv_wc_status_str(wc.status));
	if (wc.byte_len != MSG_LEN || strncmp(p->msg + MSG_LEN, want, MSG_LEN))
		fail("RECV: got \"%.*s\" (%u bytes), want \"%s\"", MSG_LEN,
		     p->msg + MSG_LEN, wc.byte_len, want);
}

/* setup_qp -- PD, CQ, QP and the two registered buffers on p->id. */
static void setup_qp(struct peer *p)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

	p->pd = ibv_alloc_pd(p->id->verbs);
	if (!p->pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	p->cq = ibv_create_cq(p->id->verbs, 32, NULL, NULL, 0);
	if (!p->cq)
		fail("ibv_create_cq: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = p->cq;
	if (rdma_create_qp(p->id, p->pd, &qa))
		fail("rdma_create_qp: %s", strerror(errno));
	p->buf = aligned_alloc(4096, BUF_LEN);
	p->msg = aligned_alloc(64, 2 * MSG_LEN);
	if (!p->buf || !p->msg)
		fail("out of memory");
	memset(p->buf, 0, BUF_LEN);
	p->buf_mr = ibv_reg_mr(p->pd, p->buf, BUF_LEN, acc);
	p->msg_mr = ibv_reg_mr(p->pd, p->msg, 2 * MSG_LEN,
			       IBV_ACCESS_LOCAL_WRITE);
	if (!p->buf_mr || !p->msg_mr)
		fail("ibv_reg_mr: %s", strerror(errno));
	post_recv(p);
}

static void teardown(struct peer *p)
{
	if (p->id && p->id->qp)
		rdma_destroy_qp(p->id);
	if (p->buf_mr)
		ibv_dereg_mr(p->buf_mr);
	if (p->msg_mr)
		ibv_dereg_mr(p->msg_mr);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->id)
		rdma_destroy_id(p->id);
	if (p->listen_id)
		rdma_destroy_id(p->listen_id);
	if (p->ec)
		rdma_destroy_event_channel(p->ec);
	free(p->buf);
	free(p->msg);
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port,
				     int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		fail("rdma_getaddrinfo(%s, %s): %s", addr, port,
		     strerror(errno));
	return res;
}

static int run_server(const char *addr, const char *port)
{
	struct peer p = { 0 };
	struct rdma_addrinfo *ai = resolve(addr, port, 1);
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4 };
	struct remote_buf rb;
	struct rdma_cm_event *ev;
	uint64_t word;
	size_t i;

	p.ec = rdma_create_event_channel();
	if (!p.ec || rdma_create_id(p.ec, &p.listen_id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(p.listen_id, ai->ai_src_addr) ||
	    rdma_listen(p.listen_id, 1))
		fail("bind/listen %s:%s: %s", addr, port, strerror(errno));
	rdma_freeaddrinfo(ai);
	printf("listening\n");
	fflush(stdout);

	ev = wait_event(p.ec, RDMA_CM_EVENT_CONNECT_REQUEST);
	p.id = ev->id;
	rdma_ack_cm_event(ev);
	setup_qp(&p);

	/* Lay the remote key out explicitly: both ends are little-endian
	 * here, but the smoke test should not depend on struct layout. */
	rb.addr = (uintptr_t)p.buf;
	rb.rkey = p.buf_mr->rkey;
	rb.len = BUF_LEN;
	cp.private_data = &rb;
	cp.private_data_len = sizeof(rb);
	if (rdma_accept(p.id, &cp))
		fail("rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(wait_event(p.ec, RDMA_CM_EVENT_ESTABLISHED));

	recv_msg(&p, "hello rmpool");
	post_recv(&p);
	send_msg(&p, "hello client");

	/* The client has written the pattern and swapped CAS_OFF. */
	recv_msg(&p, "check");
	for (i = 0; i < BUF_LEN; i++) {
		if (i >= CAS_OFF && i < CAS_OFF + 8)
			continue;
		if (p.buf[i] != pattern(i))
			fail("server buffer[%zu] = %#x, want %#x", i, p.buf[i],
			     pattern(i));
	}
	memcpy(&word, p.buf + CAS_OFF, 8);
	if (word != 0x1122334455667788ull)
		fail("CAS word is %#" PRIx64 ", want 0x1122334455667788",
		     word);
	send_msg(&p, "verified");

	ev = wait_event(p.ec, RDMA_CM_EVENT_DISCONNECTED);
	rdma_ack_cm_event(ev);
	teardown(&p);
	printf("server: ok\n");
	return 0;
}

/* post_rdma -- one signaled RDMA WRITE/READ of the whole buffer. */
static void post_rdma(struct peer *p, enum ibv_wr_opcode op, uint64_t raddr,
		      uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->buf,
		.length = BUF_LEN,
		.lkey = p->buf_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	struct ibv_send_wr *bad;

	if (ibv_post_send(p->id->qp, &wr, &bad))
		fail("ibv_post_send: %s", strerror(errno));
}

static int run_client(const char *addr, const char *port, int corrupt)
{
	struct peer p = { 0 };
	struct rdma_addrinfo *ai = resolve(addr, port, 0);
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4, .retry_count = 7 };
	struct rdma_cm_event *ev;
	struct remote_buf rb;
	struct ibv_wc wc;
	uint64_t old;
	size_t i;

	p.ec = rdma_create_event_channel();
	if (!p.ec || rdma_create_id(p.ec, &p.id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(p.id, NULL, ai->ai_dst_addr, 2000))
		fail("rdma_resolve_addr: %s", strerror(errno));
	rdma_freeaddrinfo(ai);
	rdma_ack_cm_event(wait_event(p.ec, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(p.id, 2000))
		fail("rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(wait_event(p.ec, RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup_qp(&p);
	if (rdma_connect(p.id, &cp))
		fail("rdma_connect: %s", strerror(errno));
	ev = wait_event(p.ec, RDMA_CM_EVENT_ESTABLISHED);
	if (ev->param.conn.private_data_len < sizeof(rb))
		fail("accept private data too short: %u",
		     ev->param.conn.private_data_len);
	memcpy(&rb, ev->param.conn.private_data, sizeof(rb));
	rdma_ack_cm_event(ev);
	if (rb.len != BUF_LEN)
		fail("server buffer is %u bytes, want %d", rb.len, BUF_LEN);

	/* SEND/RECV */
	send_msg(&p, "hello rmpool");
	recv_msg(&p, "hello client");
	post_recv(&p);

	/* RDMA WRITE the pattern, clear, READ it back, compare. */
	for (i = 0; i < BUF_LEN; i++)
		p.buf[i] = pattern(i);
	post_rdma(&p, IBV_WR_RDMA_WRITE, rb.addr, rb.rkey, 1);
	expect_ok(&p, 1, "RDMA WRITE");
	memset(p.buf, 0, BUF_LEN);
	post_rdma(&p, IBV_WR_RDMA_READ, rb.addr, rb.rkey, 2);
	expect_ok(&p, 2, "RDMA READ");
	if (corrupt)
		p.buf[BUF_LEN / 2] ^= 1;
	for (i = 0; i < BUF_LEN; i++)
		if (p.buf[i] != pattern(i))
			fail("READ back byte %zu = %#x, want %#x", i, p.buf[i],
			     pattern(i));

	/* 8-byte compare-and-swap: the old value comes back into buf[0..7]. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)p.buf, .length = 8,
				       .lkey = p.buf_mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 3, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.atomic = { .remote_addr = rb.addr + CAS_OFF,
				       .rkey = rb.rkey,
				       .swap = 0x1122334455667788ull },
		};
		struct ibv_send_wr *bad;

		for (i = 0; i < 8; i++)
			wr.wr.atomic.compare_add |=
				(uint64_t)pattern(CAS_OFF + i) << (8 * i);
		if (ibv_post_send(p.id->qp, &wr, &bad))
			fail("ibv_post_send(CAS): %s", strerror(errno));
		expect_ok(&p, 3, "ATOMIC CMP_AND_SWP");
		memcpy(&old, p.buf, 8);
		if (old != wr.wr.atomic.compare_add)
			fail("CAS returned %#" PRIx64 ", want %#" PRIx64, old,
			     (uint64_t)wr.wr.atomic.compare_add);
	}

	send_msg(&p, "check");
	recv_msg(&p, "verified");

	/* The deliberately failing access: a wrong rkey must be refused
	 * by the responder. This moves the QP to the error state, so it
	 * comes last. */
	post_rdma(&p, IBV_WR_RDMA_WRITE, rb.addr, rb.rkey ^ 0x5a5a00, 4);
	wait_wc(&p, 4, &wc);
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		fail("WRITE with a wrong rkey: %s, want %s",
		     ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));

	rdma_disconnect(p.id);
	teardown(&p);
	printf("client: ok (SEND/RECV, WRITE, READ, CAS %d bytes checked; "
	       "wrong rkey -> %s)\n", BUF_LEN,
	       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "server")) {
		role = "smoke server";
		return run_server(argv[2], argv[3]);
	}
	if (argc >= 4 && !strcmp(argv[1], "client")) {
		role = "smoke client";
		return run_client(argv[2], argv[3],
				  argc > 4 && !strcmp(argv[4], "--corrupt"));
	}
	fprintf(stderr, "usage: %s server|client ADDR PORT [--corrupt]\n",
		argv[0]);
	return 2;
}

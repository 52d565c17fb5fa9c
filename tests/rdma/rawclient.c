/* SPDX-License-Identifier: MIT */
/* rawclient.c -- rmp-raw: a raw protocol client for the RDMA tests. */

/*
 * Speaks the control protocol itself (librdmacm + verbs + the common codec),
 * without librmpool, so that tests can send what a library never would.
 *
 *   rmp-raw HOST PORT garbage          bad messages get error replies, then
 *                                      a garbage stream gets disconnected
 *   rmp-raw HOST PORT badconnect       bad connect data gets rejected
 *   rmp-raw HOST PORT oob              a READ one byte past a lease fails
 *   rmp-raw HOST PORT hold [--stat-every MS]
 *                                      ALLOC + WRITE a pattern, print
 *                                      "LEASE ADDR RKEY LENGTH ID", wait for
 *                                      a line or EOF on stdin (optionally
 *                                      sending STATs meanwhile), check the
 *                                      pattern, FREE
 *   rmp-raw HOST PORT steal ADDR RKEY LEN
 *                                      a READ (then, on a new connection, a
 *                                      WRITE) with another connection's key
 *                                      must fail with a remote access error
 *   rmp-raw HOST PORT free ID [ERRNO]  FREE of a lease id; expect ERRNO
 *                                      (a name like EPERM, or 0; default
 *                                      EPERM)
 *   rmp-raw HOST PORT stat [COUNT]     COUNT STATs on one connection
 *
 * Exit status: 0 the expectation was met, 1 it was not, 2 usage. Every
 * wait has a timeout; every resource is released (ASan builds run this).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "proto.h"

#define TIMEOUT_MS 15000
#define NRECV 32              /* receive buffers posted on the client QP */
#define SEND_MAX 512          /* send slot size: room for oversized tests */
#define MAX_SEND_WR 16
#define RECV_FLAG (1ull << 62) /* wr_id bit of receives */
#define WC_TRACK 16
#define LEASE_LEN 4096
#define HOLD_TTL_S 900        /* hold outlives slow VM test runs */
#define MAX_BAD_MSGS 8        /* service.c disconnects after this many */
#define GARBAGE_WAIT_MS 5000  /* per reply in the garbage stream */

struct rx_msg {
	uint8_t buf[RMP_MSG_MAX];
	uint32_t len;
};

struct raw {
	const char *what; /* prefix of messages: the subcommand */
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *msg_mr, *data_mr;
	uint8_t *msg;   /* NRECV receive slots, then one send slot */
	uint8_t *data;  /* local side of RDMA READ/WRITE */
	size_t data_len;
	bool connected, disconnected, qp_error;
	struct rmp_conn_rep rep;

	/* received, not yet consumed messages (FIFO) */
	struct rx_msg rx[NRECV];
	unsigned rx_head, rx_count;

	/* completions of sends and RDMA operations, by wr_id */
	struct {
		uint64_t wr_id;
		enum ibv_wc_status status;
		bool done;
	} wc[WC_TRACK];
	uint64_t next_wr_id, next_req_id;
};

static const char *prog = "rmp-raw";

/* say -- "PROG: message" on stderr. Connection messages start with the
 * connection's label, which is PROG itself but for badconnect's cases:
 * that repetition is left out. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	size_t n = strlen(prog);
	char buf[1024];
	const char *msg = buf;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!strncmp(buf, prog, n) && buf[n] == ':' && buf[n + 1] == ' ')
		msg = buf + n + 2;
	fprintf(stderr, "%s: %s\n", prog, msg);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* errname -- "-EBADMSG" style text for a status (0 -> "0"). */
static const char *errname(int st)
{
	static char buf[32];

	switch (-st) {
	case 0: return "0";
	case EPERM: return "-EPERM";
	case ENOENT: return "-ENOENT";
	case EINVAL: return "-EINVAL";
	case EAGAIN: return "-EAGAIN";
	case ENOMEM: return "-ENOMEM";
	case EBADMSG: return "-EBADMSG";
	case EOPNOTSUPP: return "-EOPNOTSUPP";
	case EPROTONOSUPPORT: return "-EPROTONOSUPPORT";
	case EKEYEXPIRED: return "-EKEYEXPIRED";
	case EDQUOT: return "-EDQUOT";
	case EFBIG: return "-EFBIG";
	case ESHUTDOWN: return "-ESHUTDOWN";
	case ETIMEDOUT: return "-ETIMEDOUT";
	case ENOTCONN: return "-ENOTCONN";
	}
	snprintf(buf, sizeof(buf), "%d", st);
	return buf;
}

/* parse_errno -- "EPERM", "-EPERM", "0" or "-1" -> 0 / negative errno. */
static bool parse_errno(const char *s, int *out)
{
	static const int known[] = { EPERM, ENOENT, EINVAL, EBADMSG,
				     EOPNOTSUPP, EPROTONOSUPPORT, EKEYEXPIRED,
				     EDQUOT, EFBIG, ESHUTDOWN };
	char *end;
	long v;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const char *n = errname(-known[i]);

		if (!strcmp(s, n) || !strcmp(s, n + 1)) {
			*out = -known[i];
			return true;
		}
	}
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v > 0 || v < -4095)
		return false;
	*out = (int)v;
	return true;
}

static void hexdump(const char *label, const uint8_t *p, size_t len)
{
	char line[3 * 64 + 1];
	size_t n = len < 64 ? len : 64;

	for (size_t i = 0; i < n; i++)
		snprintf(line + 3 * i, 4, "%02x ", p[i]);
	line[3 * n] = '\0';
	say("%s (%zu bytes): %s%s", label, len, line, len > n ? "..." : "");
}

/* ------------------------------------------------------------ events */

static void handle_cm_event(struct raw *r, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_DISCONNECTED:
		r->disconnected = true;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		say("%s: rdma_cm event %s (status %d)", r->what,
		    rdma_event_str(ev->event), ev->status);
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_CONNECT_ERROR ||
		    ev->event == RDMA_CM_EVENT_UNREACHABLE)
			r->disconnected = true;
		break;
	}
	rdma_ack_cm_event(ev);
}

static void drain_cm(struct raw *r)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(r->ec, &ev) == 0)
		handle_cm_event(r, ev);
}

static int post_recv(struct raw *r, unsigned i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->msg + (size_t)i * RMP_MSG_MAX),
		.length = RMP_MSG_MAX,
		.lkey = r->msg_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = RECV_FLAG | i, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

static void drain_cq(struct raw *r)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(r->cq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			struct ibv_wc *w = &wc[k];

			if (w->status != IBV_WC_SUCCESS)
				r->qp_error = true;
			if (w->wr_id & RECV_FLAG) {
				unsigned i = (unsigned)(w->wr_id & 0xffff);
				struct rx_msg *m;

				if (w->status != IBV_WC_SUCCESS) {
					if (w->status != IBV_WC_WR_FLUSH_ERR)
						say("%s: receive: %s", r->what,
						    ibv_wc_status_str(w->status));
					continue;
				}
				if (r->rx_count == NRECV) {
					say("%s: receive queue overflow",
					    r->what);
				} else {
					m = &r->rx[(r->rx_head + r->rx_count) %
						   NRECV];
					m->len = w->byte_len;
					memcpy(m->buf, r->msg +
					       (size_t)i * RMP_MSG_MAX,
					       w->byte_len < RMP_MSG_MAX ?
					       w->byte_len : RMP_MSG_MAX);
					r->rx_count++;
				}
				if (post_recv(r, i))
					say("%s: re-posting receive: %s",
					    r->what, strerror(errno));
				continue;
			}
			r->wc[w->wr_id % WC_TRACK].wr_id = w->wr_id;
			r->wc[w->wr_id % WC_TRACK].status = w->status;
			r->wc[w->wr_id % WC_TRACK].done = true;
		}
	}
	if (n < 0)
		say("%s: ibv_poll_cq: %d", r->what, n);
}

/*
 * pump -- wait up to timeout_ms for CQ or rdma_cm activity (and for
 * extra_fd to become readable, if >= 0), and process what came.
 * Returns 1 when extra_fd is readable, else 0.
 */
static int pump(struct raw *r, int timeout_ms, int extra_fd)
{
	struct pollfd p[3] = {
		{ .fd = r->ch->fd, .events = POLLIN },
		{ .fd = r->ec->fd, .events = POLLIN },
		{ .fd = extra_fd, .events = POLLIN },
	};
	struct ibv_cq *cq;
	void *ctx;
	int n;

	drain_cq(r);
	n = poll(p, extra_fd >= 0 ? 3 : 2, timeout_ms < 0 ? 0 : timeout_ms);
	if (n < 0 && errno != EINTR)
		say("%s: poll: %s", r->what, strerror(errno));
	if (n > 0 && (p[0].revents & POLLIN) &&
	    ibv_get_cq_event(r->ch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		/* Re-arm before draining: nothing slips in between. */
		if (ibv_req_notify_cq(cq, 0))
			say("%s: ibv_req_notify_cq: %s", r->what,
			    strerror(errno));
	}
	if (n > 0 && (p[1].revents & POLLIN))
		drain_cm(r);
	drain_cq(r);
	return n > 0 && extra_fd >= 0 &&
	       (p[2].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* wait_cm -- the next rdma_cm event (NULL on timeout, printed). */
static struct rdma_cm_event *wait_cm(struct raw *r, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	struct rdma_cm_event *ev;

	for (;;) {
		struct pollfd p = { .fd = r->ec->fd, .events = POLLIN };
		int64_t left;

		if (rdma_get_cm_event(r->ec, &ev) == 0)
			return ev;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			say("%s: rdma_get_cm_event: %s", r->what,
			    strerror(errno));
			return NULL;
		}
		left = (int64_t)deadline - (int64_t)now_ms();
		if (left <= 0) {
			say("%s: no rdma_cm event in %d ms", r->what,
			    timeout_ms);
			return NULL;
		}
		poll(&p, 1, (int)left);
	}
}

/* expect_cm -- next event must be `want`; acked here. 0 or -1. */
static int expect_cm(struct raw *r, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = wait_cm(r, TIMEOUT_MS);
	int ok;

	if (!ev)
		return -1;
	ok = ev->event == want;
	if (!ok)
		say("%s: expected %s, got %s (status %d)", r->what,
		    rdma_event_str(want), rdma_event_str(ev->event),
		    ev->status);
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------- connection */

static void raw_close(struct raw *r)
{
	if (r->id && r->connected && !r->disconnected) {
		uint64_t deadline = now_ms() + 3000;

		rdma_disconnect(r->id);
		while (!r->disconnected && now_ms() < deadline)
			pump(r, 100, -1);
	}
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->msg_mr)
		ibv_dereg_mr(r->msg_mr);
	if (r->data_mr)
		ibv_dereg_mr(r->data_mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->ch)
		ibv_destroy_comp_channel(r->ch);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ec)
		rdma_destroy_event_channel(r->ec);
	free(r->msg);
	free(r->data);
	memset(r, 0, sizeof(*r));
}

/* setup_qp -- PD, CQ with a completion channel, QP, buffers, receives. */
static int setup_qp(struct raw *r, size_t data_len)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = MAX_SEND_WR, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	size_t msg_bytes = (size_t)NRECV * RMP_MSG_MAX + SEND_MAX;

	r->pd = ibv_alloc_pd(r->id->verbs);
	if (!r->pd) {
		say("%s: ibv_alloc_pd: %s", r->what, strerror(errno));
		return -1;
	}
	r->ch = ibv_create_comp_channel(r->id->verbs);
	if (!r->ch || set_nonblock(r->ch->fd)) {
		say("%s: completion channel: %s", r->what, strerror(errno));
		return -1;
	}
	r->cq = ibv_create_cq(r->id->verbs, NRECV + MAX_SEND_WR + 8, r,
			      r->ch, 0);
	if (!r->cq || ibv_req_notify_cq(r->cq, 0)) {
		say("%s: ibv_create_cq: %s", r->what, strerror(errno));
		return -1;
	}
	qa.send_cq = qa.recv_cq = r->cq;
	if (rdma_create_qp(r->id, r->pd, &qa)) {
		say("%s: rdma_create_qp: %s", r->what, strerror(errno));
		return -1;
	}
	r->data_len = data_len < LEASE_LEN ? LEASE_LEN : data_len;
	r->msg = aligned_alloc(64, msg_bytes);
	r->data = aligned_alloc(4096, (r->data_len + 4095) / 4096 * 4096);
	if (!r->msg || !r->data) {
		say("%s: out of memory", r->what);
		return -1;
	}
	memset(r->msg, 0, msg_bytes);
	memset(r->data, 0, r->data_len);
	r->msg_mr = ibv_reg_mr(r->pd, r->msg, msg_bytes,
			       IBV_ACCESS_LOCAL_WRITE);
	r->data_mr = ibv_reg_mr(r->pd, r->data, r->data_len,
				IBV_ACCESS_LOCAL_WRITE);
	if (!r->msg_mr || !r->data_mr) {
		say("%s: ibv_reg_mr: %s", r->what, strerror(errno));
		return -1;
	}
	/* Receives go up before connecting: the server may answer at once. */
	for (unsigned i = 0; i < NRECV; i++)
		if (post_recv(r, i)) {
			say("%s: ibv_post_recv: %s", r->what, strerror(errno));
			return -1;
		}
	return 0;
}

/*
 * raw_connect -- connect to HOST:PORT with the given private data.
 * Returns 0 when established (r->rep holds the accept data), 1 when
 * rejected (*rej and *rej_ret hold the decoded reject data and the
 * decoder's result, *rej_status the event status), -1 on any other
 * outcome (printed). r must be zeroed; raw_close() it in every case.
 */
static int raw_connect(struct raw *r, const char *what, const char *host,
		       const char *port, const void *pdata, uint8_t plen,
		       size_t data_len, struct rmp_conn_rej *rej,
		       int *rej_ret, int *rej_status)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_conn_param cp = {
		.private_data = pdata, .private_data_len = plen,
		.responder_resources = 4, .initiator_depth = 4,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct rdma_addrinfo *ai;
	struct rdma_cm_event *ev;
	int ret;

	r->what = what;
	r->next_wr_id = 1;
	r->next_req_id = 0x1000;
	r->ec = rdma_create_event_channel();
	if (!r->ec || set_nonblock(r->ec->fd)) {
		say("%s: rdma_create_event_channel: %s", what,
		    strerror(errno));
		return -1;
	}
	if (rdma_create_id(r->ec, &r->id, r, RDMA_PS_TCP)) {
		say("%s: rdma_create_id: %s", what, strerror(errno));
		return -1;
	}
	if (rdma_getaddrinfo(host, port, &hints, &ai)) {
		say("%s: rdma_getaddrinfo(%s, %s): %s", what, host, port,
		    strerror(errno));
		return -1;
	}
	ret = rdma_resolve_addr(r->id, NULL, ai->ai_dst_addr, 5000);
	rdma_freeaddrinfo(ai);
	if (ret) {
		say("%s: rdma_resolve_addr: %s", what, strerror(errno));
		return -1;
	}
	if (expect_cm(r, RDMA_CM_EVENT_ADDR_RESOLVED))
		return -1;
	if (rdma_resolve_route(r->id, 5000)) {
		say("%s: rdma_resolve_route: %s", what, strerror(errno));
		return -1;
	}
	if (expect_cm(r, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return -1;
	if (setup_qp(r, data_len))
		return -1;
	if (rdma_connect(r->id, &cp)) {
		say("%s: rdma_connect: %s", what, strerror(errno));
		return -1;
	}
	ev = wait_cm(r, TIMEOUT_MS);
	if (!ev)
		return -1;
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		r->connected = true;
		ret = rmp_conn_rep_decode(ev->param.conn.private_data,
					  ev->param.conn.private_data_len,
					  &r->rep);
		if (ret) {
			say("%s: accept private data (%u bytes) does not "
			    "decode: %s", what,
			    ev->param.conn.private_data_len, strerror(-ret));
			ret = -1;
		} else if (r->rep.credits == 0) {
			say("%s: server grants 0 credits", what);
			ret = -1;
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		*rej_status = ev->status;
		*rej_ret = rmp_conn_rej_decode(ev->param.conn.private_data,
					       ev->param.conn.private_data_len,
					       rej);
		if (*rej_ret && ev->param.conn.private_data)
			hexdump("reject private data",
				ev->param.conn.private_data,
				ev->param.conn.private_data_len);
		ret = 1;
		break;
	default:
		say("%s: connect: %s (status %d)", what,
		    rdma_event_str(ev->event), ev->status);
		ret = -1;
		break;
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/* connect_ok -- a proper connect; 0 or -1 (printed). */
static int connect_ok(struct raw *r, const char *what, const char *host,
		      const char *port, size_t data_len)
{
	struct rmp_conn_req req = { .proto_min = RMP_PROTO_MIN,
				    .proto_max = RMP_PROTO_MAX };
	uint8_t pdata[RMP_CONN_REQ_LEN];
	struct rmp_conn_rej rej;
	int rej_ret = 0, rej_status = 0, ret;

	snprintf(req.name, sizeof(req.name), "rmp-raw-%s", what);
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0) {
		say("%s: cannot encode the connect data", what);
		return -1;
	}
	ret = raw_connect(r, what, host, port, pdata, sizeof(pdata), data_len,
			  &rej, &rej_ret, &rej_status);
	if (ret == 1) {
		say("%s: connection rejected: %s", what, rej_ret ?
		    "(undecodable reject data)" :
		    rmp_reject_reason_str(rej.reason));
		return -1;
	}
	return ret;
}

/* ------------------------------------------------------- operations */

/* wait_wc -- completion status of wr_id, or -1 on timeout. */
static int wait_wc(struct raw *r, uint64_t wr_id, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	unsigned slot = (unsigned)(wr_id % WC_TRACK);

	for (;;) {
		drain_cq(r);
		if (r->wc[slot].done && r->wc[slot].wr_id == wr_id) {
			r->wc[slot].done = false;
			return (int)r->wc[slot].status;
		}
		if (now_ms() >= deadline)
			return -1;
		pump(r, (int)(deadline - now_ms()), -1);
	}
}

/* send_bytes -- SEND len raw bytes; 0 when the send completed OK. */
static int send_bytes(struct raw *r, const void *buf, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->msg + (size_t)NRECV * RMP_MSG_MAX),
		.length = (uint32_t)len,
		.lkey = r->msg_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = r->next_wr_id++, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int st;

	if (len > SEND_MAX)
		return -1;
	memcpy(r->msg + (size_t)NRECV * RMP_MSG_MAX, buf, len);
	if (ibv_post_send(r->id->qp, &wr, &bad)) {
		say("%s: ibv_post_send(SEND): %s", r->what, strerror(errno));
		return -1;
	}
	st = wait_wc(r, wr.wr_id, TIMEOUT_MS);
	if (st < 0) {
		say("%s: SEND did not complete in %d ms", r->what, TIMEOUT_MS);
		return -1;
	}
	if (st != IBV_WC_SUCCESS) {
		say("%s: SEND: %s", r->what,
		    ibv_wc_status_str((enum ibv_wc_status)st));
		return -1;
	}
	return 0;
}

/* rdma_op -- one RDMA READ/WRITE of len bytes at data[0]; the WC status
 * (as int), or -1 if nothing completed in time. */
static int rdma_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
		   uint32_t rkey, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->data,
		.length = (uint32_t)len,
		.lkey = r->data_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = r->next_wr_id++, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	struct ibv_send_wr *bad;
	int st;

	if (len > r->data_len) {
		say("%s: %zu bytes do not fit the local buffer", r->what, len);
		return -1;
	}
	if (ibv_post_send(r->id->qp, &wr, &bad)) {
		say("%s: ibv_post_send(RDMA): %s", r->what, strerror(errno));
		return -1;
	}
	st = wait_wc(r, wr.wr_id, TIMEOUT_MS);
	if (st < 0)
		say("%s: RDMA %s did not complete in %d ms", r->what,
		    op == IBV_WR_RDMA_READ ? "READ" : "WRITE", TIMEOUT_MS);
	return st;
}

/*
 * parse_reply -- decode a reply. An error reply whose opcode is not one
 * we know (the answer to a message that had none) still has a valid
 * header: accept it.
 */
static int parse_reply(const struct rx_msg *x, struct rmp_msg *m)
{
	int ret = rmp_msg_decode(x->buf, x->len, m);

	if (ret == -EOPNOTSUPP && x->len == RMP_MSG_HDR_LEN &&
	    (m->hdr.flags & RMP_MSG_F_REPLY) && m->hdr.status < 0 &&
	    m->hdr.payload_len == 0)
		ret = 0;
	if (ret == 0 && !(m->hdr.flags & RMP_MSG_F_REPLY))
		ret = -EBADMSG;
	return ret;
}

/*
 * next_reply -- wait for the next message from the server.
 * 0 with *m filled; -ETIMEDOUT; -ENOTCONN when the connection went away
 * (disconnect or QP error) before a message came; -EBADMSG if it does
 * not decode (printed).
 */
static int next_reply(struct raw *r, struct rmp_msg *m, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	struct rx_msg *x;
	int ret;

	for (;;) {
		drain_cq(r);
		if (r->rx_count)
			break;
		if (r->disconnected || r->qp_error)
			return -ENOTCONN;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		pump(r, (int)(deadline - now_ms()), -1);
	}
	x = &r->rx[r->rx_head];
	r->rx_head = (r->rx_head + 1) % NRECV;
	r->rx_count--;
	ret = parse_reply(x, m);
	if (ret) {
		say("%s: server sent a message that does not decode (%s)",
		    r->what, errname(ret));
		hexdump("message", x->buf, x->len);
	}
	return ret;
}

/*
 * reply_for -- the reply with req_id (others are reported and dropped).
 * 0 with *m filled, or a negative transport error from next_reply.
 */
static int reply_for(struct raw *r, uint64_t req_id, struct rmp_msg *m,
		     int timeout_ms, int *strays)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int ret;

	for (;;) {
		int64_t left = (int64_t)deadline - (int64_t)now_ms();

		ret = next_reply(r, m, left > 0 ? (int)left : 0);
		if (ret == -EBADMSG) {
			(*strays)++;
			continue;
		}
		if (ret)
			return ret;
		if (m->hdr.req_id == req_id)
			return 0;
		say("%s: unexpected reply: %s req_id %#" PRIx64 " status %s "
		    "(waiting for req_id %#" PRIx64 ")", r->what,
		    rmp_opcode_name(m->hdr.opcode), m->hdr.req_id,
		    errname(m->hdr.status), req_id);
		(*strays)++;
	}
}

/* request -- send *req (req_id assigned here), wait for its reply.
 * 0 with *rep filled, or negative (printed). */
static int request(struct raw *r, struct rmp_msg *req, struct rmp_msg *rep)
{
	uint8_t buf[RMP_MSG_MAX];
	int len, ret, strays = 0;

	req->hdr.req_id = r->next_req_id++;
	req->hdr.flags = 0;
	req->hdr.status = 0;
	len = rmp_msg_encode(buf, sizeof(buf), req);
	if (len < 0) {
		say("%s: encode %s: %s", r->what,
		    rmp_opcode_name(req->hdr.opcode), strerror(-len));
		return len;
	}
	if (send_bytes(r, buf, (size_t)len))
		return -EIO;
	ret = reply_for(r, req->hdr.req_id, rep, TIMEOUT_MS, &strays);
	if (ret) {
		say("%s: no reply to %s: %s", r->what,
		    rmp_opcode_name(req->hdr.opcode),
		    ret == -ENOTCONN ? "connection lost" : errname(ret));
		return ret;
	}
	if (rep->hdr.opcode != req->hdr.opcode) {
		say("%s: reply to %s carries opcode %u", r->what,
		    rmp_opcode_name(req->hdr.opcode), rep->hdr.opcode);
		return -EBADMSG;
	}
	return 0;
}

/* do_alloc -- ALLOC; 0 with *d filled, or the status / error. */
static int do_alloc(struct raw *r, uint64_t length, uint32_t ttl_s,
		    uint32_t flags, struct rmp_lease_desc *d)
{
	struct rmp_msg req = { 0 }, rep;
	int ret;

	req.hdr.opcode = RMP_OP_ALLOC;
	req.u.alloc.length = length;
	req.u.alloc.ttl_s = ttl_s;
	req.u.alloc.access = RMP_ACC_ALL;
	req.u.alloc.flags = flags;
	ret = request(r, &req, &rep);
	if (ret)
		return ret;
	if (rep.hdr.status) {
		say("%s: ALLOC of %" PRIu64 " bytes: %s", r->what, length,
		    errname(rep.hdr.status));
		return rep.hdr.status;
	}
	*d = rep.u.lease;
	if (d->length < length) {
		say("%s: ALLOC gave %" PRIu64 " bytes, asked %" PRIu64,
		    r->what, d->length, length);
		return -EBADMSG;
	}
	return 0;
}

/* do_simple -- FREE id or STAT; the reply status, or a transport error
 * (*transport set). */
static int do_simple(struct raw *r, unsigned opcode, uint64_t id,
		     struct rmp_msg *rep, bool *transport)
{
	struct rmp_msg req = { 0 };
	int ret;

	req.hdr.opcode = (uint8_t)opcode;
	if (opcode == RMP_OP_FREE)
		req.u.free.id = id;
	ret = request(r, &req, rep);
	*transport = ret != 0;
	return ret ? ret : rep->hdr.status;
}

static uint8_t pattern(size_t i, uint64_t seed)
{
	return (uint8_t)(i * 131 + 7 + seed);
}

static const char *keys_mode_str(unsigned m)
{
	switch (m) {
	case RMP_KEYS_WINDOW: return "window";
	case RMP_KEYS_REGION: return "region";
	case RMP_KEYS_POOL: return "pool";
	}
	return "?";
}

/* ------------------------------------------------------------ garbage */

/* stat_header -- a valid STAT request header into buf (24 bytes). */
static void stat_header(uint8_t *buf, uint64_t req_id)
{
	struct rmp_msg m = { 0 };

	m.hdr.opcode = RMP_OP_STAT;
	m.hdr.req_id = req_id;
	if (rmp_msg_encode(buf, RMP_MSG_HDR_LEN, &m) != RMP_MSG_HDR_LEN)
		abort(); /* the codec changed under this test */
}

/*
 * bad_step -- send len bytes, expect an error reply with want_status
 * and want_req_id. Returns 0 if so, 1 if not (printed).
 */
static int bad_step(struct raw *r, const char *name, const uint8_t *buf,
		    size_t len, uint64_t want_req_id, int want_status)
{
	struct rmp_msg rep;
	int ret, strays = 0;

	if (send_bytes(r, buf, len)) {
		say("FAIL: %s: could not send it", name);
		return 1;
	}
	ret = reply_for(r, want_req_id, &rep, TIMEOUT_MS, &strays);
	if (ret) {
		say("FAIL: %s: no error reply (%s; want %s, req_id %#" PRIx64
		    ")", name, ret == -ENOTCONN ? "connection lost" :
		    ret == -ETIMEDOUT ? "nothing within the timeout" :
		    errname(ret), errname(want_status), want_req_id);
		return 1;
	}
	if (rep.hdr.status != want_status) {
		say("FAIL: %s: reply status %s, want %s", name,
		    errname(rep.hdr.status), errname(want_status));
		return 1;
	}
	say("ok: %s -> %s (req_id %#" PRIx64 ")", name, errname(want_status),
	    rep.hdr.req_id);
	return strays ? 1 : 0;
}

static int run_garbage(const char *host, const char *port)
{
	struct raw r = { 0 };
	uint8_t buf[RMP_MSG_MAX];
	struct rmp_lease_desc d;
	struct rmp_msg rep;
	bool transport;
	unsigned nbad = 0;
	int fails = 0, st;
	uint64_t id;

	if (connect_ok(&r, "garbage", host, port, 0)) {
		raw_close(&r);
		return 1;
	}
	say("connected: protocol %u, %u credits, keys %s", r.rep.version,
	    r.rep.credits, keys_mode_str(r.rep.keys_mode));

	/* 1. truncated: 10 bytes of a valid header. No header decoded, so
	 * the reply carries req_id 0. */
	stat_header(buf, 0x7101);
	fails += bad_step(&r, "truncated message (10 bytes)", buf, 10, 0,
			  -EBADMSG);
	nbad++;

	/* 2. unknown opcode 99. */
	stat_header(buf, 0x7102);
	buf[5] = 99;
	fails += bad_step(&r, "unknown opcode 99", buf, RMP_MSG_HDR_LEN,
			  0x7102, -EOPNOTSUPP);
	nbad++;

	/* 3. protocol version 3 (a STAT otherwise). */
	stat_header(buf, 0x7103);
	buf[4] = 3;
	fails += bad_step(&r, "wrong version 3", buf, RMP_MSG_HDR_LEN, 0x7103,
			  -EPROTONOSUPPORT);
	nbad++;

	/* 4. payload_len 0xffffffff in a 24-byte STAT. */
	stat_header(buf, 0x7104);
	memset(buf + 8, 0xff, 4);
	fails += bad_step(&r, "payload_len 0xffffffff", buf, RMP_MSG_HDR_LEN,
			  0x7104, -EBADMSG);
	nbad++;

	/* 5. FREE of a lease that does not exist. */
	st = do_simple(&r, RMP_OP_FREE, 0x0123456789abcdefull, &rep,
		       &transport);
	if (transport || st != -ENOENT) {
		say("FAIL: FREE of a lease that does not exist: %s, want "
		    "-ENOENT", transport ? "no reply" : errname(st));
		fails++;
	} else {
		say("ok: FREE of a lease that does not exist -> -ENOENT");
	}

	/* 6. a valid ALLOC, FREE of it, FREE again. */
	if (do_alloc(&r, LEASE_LEN, 60, RMP_LEASE_F_EPHEMERAL, &d)) {
		say("FAIL: a valid ALLOC after the bad messages failed");
		fails++;
	} else {
		id = d.id;
		say("ok: valid ALLOC -> lease %#" PRIx64 ", %" PRIu64
		    " bytes", id, d.length);
		st = do_simple(&r, RMP_OP_FREE, id, &rep, &transport);
		if (transport || st != 0) {
			say("FAIL: FREE of own lease: %s",
			    transport ? "no reply" : errname(st));
			fails++;
		}
		st = do_simple(&r, RMP_OP_FREE, id, &rep, &transport);
		if (transport || st != -ENOENT) {
			say("FAIL: second FREE of the lease: %s, want -ENOENT",
			    transport ? "no reply" : errname(st));
			fails++;
		} else {
			say("ok: FREE, then FREE again -> -ENOENT");
		}
	}

	/* 7. a valid STAT is still answered. */
	st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
	if (transport || st != 0) {
		say("FAIL: STAT after the bad messages: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		say("ok: STAT still answered (%" PRIu64 " of %" PRIu64
		    " bytes free)", rep.u.stat.free_bytes,
		    rep.u.stat.pool_bytes);
	}

	/* 8. garbage until the server hangs up: it should after
	 * MAX_BAD_MSGS bad messages in all. */
	for (;;) {
		int ret, strays = 0;

		if (r.disconnected || r.qp_error)
			break;
		if (nbad >= 2 * MAX_BAD_MSGS) {
			say("FAIL: still connected after %u bad messages",
			    nbad);
			fails++;
			break;
		}
		memset(buf, 0xa5, 40);
		if (send_bytes(&r, buf, 40)) {
			/* The server may have hung up while we sent. */
			pump(&r, 1000, -1);
			if (!r.disconnected && !r.qp_error) {
				say("FAIL: garbage SEND failed on a live "
				    "connection");
				fails++;
			}
			break;
		}
		nbad++;
		ret = reply_for(&r, 0, &rep, GARBAGE_WAIT_MS, &strays);
		if (ret == -ENOTCONN)
			break;
		if (ret == -ETIMEDOUT && nbad < MAX_BAD_MSGS) {
			/* Keep going: the disconnect is still to be seen. */
			say("FAIL: garbage message %u: no error reply in %d "
			    "ms", nbad, GARBAGE_WAIT_MS);
			fails++;
			continue;
		}
		if (ret == -ETIMEDOUT)
			continue; /* the loop head checks the limit */
		if (ret) {
			say("FAIL: garbage message %u: %s", nbad,
			    errname(ret));
			fails++;
			break;
		}
		if (rep.hdr.status != -EBADMSG) {
			say("FAIL: garbage message %u: reply status %s, want "
			    "-EBADMSG", nbad, errname(rep.hdr.status));
			fails++;
		}
	}
	if (r.disconnected || r.qp_error) {
		/* The QP may fail first; the rdma_cm event follows. */
		uint64_t deadline = now_ms() + TIMEOUT_MS;

		while (!r.disconnected && now_ms() < deadline)
			pump(&r, 200, -1);
		say("%s: server disconnected after %u bad messages%s",
		    nbad > MAX_BAD_MSGS ? "FAIL" : "ok", nbad,
		    r.disconnected ? "" :
		    " (QP error, but no DISCONNECTED event)");
		if (nbad > MAX_BAD_MSGS || !r.disconnected)
			fails++;
	}
	raw_close(&r);
	say("garbage: %s (%d failed check(s))", fails ? "FAIL" : "PASS",
	    fails);
	return fails ? 1 : 0;
}

/* --------------------------------------------------------- badconnect */

static int bad_connect(const char *host, const char *port, const char *name,
		       const void *pdata, uint8_t plen, unsigned want_reason,
		       bool check_range)
{
	struct raw r = { 0 };
	struct rmp_conn_rej rej;
	int rej_ret = 0, rej_status = 0, ret, fail = 1;

	ret = raw_connect(&r, name, host, port, pdata, plen, 0, &rej, &rej_ret,
			  &rej_status);
	if (ret == 0)
		say("FAIL: %s: the server accepted the connection", name);
	else if (ret < 0)
		say("FAIL: %s: no RDMA_CM_EVENT_REJECTED", name);
	else if (rej_ret)
		say("FAIL: %s: rejected (status %d), but the reject private "
		    "data does not decode: %s", name, rej_status,
		    strerror(-rej_ret));
	else if (rej.reason != want_reason)
		say("FAIL: %s: reject reason %u (%s), want %u (%s)", name,
		    rej.reason, rmp_reject_reason_str(rej.reason), want_reason,
		    rmp_reject_reason_str(want_reason));
	else if (check_range && (rej.proto_min != RMP_PROTO_MIN ||
				 rej.proto_max != RMP_PROTO_MAX))
		say("FAIL: %s: reject says the server speaks %u-%u, want "
		    "%u-%u", name, rej.proto_min, rej.proto_max,
		    RMP_PROTO_MIN, RMP_PROTO_MAX);
	else {
		say("ok: %s -> rejected: %s (server speaks %u-%u)", name,
		    rmp_reject_reason_str(rej.reason), rej.proto_min,
		    rej.proto_max);
		fail = 0;
	}
	raw_close(&r);
	return fail;
}

static int run_badconnect(const char *host, const char *port)
{
	struct rmp_conn_req req = { .proto_min = RMP_PROTO_MIN,
				    .proto_max = RMP_PROTO_MAX };
	uint8_t pdata[RMP_CONN_REQ_LEN];
	int fails = 0;

	snprintf(req.name, sizeof(req.name), "rmp-raw-badconnect");

	/* (a) no private data at all */
	fails += bad_connect(host, port, "no private data", NULL, 0,
			     RMP_REJ_BAD_REQUEST, false);

	/* (b) a wrong magic */
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	pdata[0] ^= 0xff;
	fails += bad_connect(host, port, "wrong magic", pdata, sizeof(pdata),
			     RMP_REJ_BAD_REQUEST, false);

	/* (c) protocol 3 only */
	req.proto_min = req.proto_max = 3;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "protocol 3-3", pdata, sizeof(pdata),
			     RMP_REJ_PROTO, true);

	say("badconnect: %s (%d failed check(s))", fails ? "FAIL" : "PASS",
	    fails);
	return fails ? 1 : 0;
}

/* ---------------------------------------------------------------- oob */

static int run_oob(const char *host, const char *port)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	int st, fail = 1;

	if (connect_ok(&r, "oob", host, port, 2 * LEASE_LEN))
		goto out;
	if (r.rep.keys_mode != RMP_KEYS_REGION)
		say("note: server uses lease_keys=%s; this check is meant "
		    "for region", keys_mode_str(r.rep.keys_mode));
	/* Ephemeral: the lease goes with this connection, whose QP the
	 * failing READ below breaks. */
	if (do_alloc(&r, LEASE_LEN, 60, RMP_LEASE_F_EPHEMERAL, &d))
		goto out;
	say("lease %#" PRIx64 ": addr %#" PRIx64 " rkey %#x length %" PRIu64,
	    d.id, d.addr, d.rkey, d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, d.length);
	if (st != IBV_WC_SUCCESS) {
		if (st >= 0)
			say("FAIL: READ of the whole lease: %s",
			    ibv_wc_status_str((enum ibv_wc_status)st));
		goto out;
	}
	say("ok: READ of the whole lease (%" PRIu64 " bytes)", d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr + d.length, d.rkey, 1);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: READ of 1 byte at addr+length -> %s",
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: READ of 1 byte at addr+length succeeded: the "
		    "lease's rkey reaches past its end");
	} else if (st >= 0) {
		say("FAIL: READ of 1 byte at addr+length: %s, want %s",
		    ibv_wc_status_str((enum ibv_wc_status)st),
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	say("oob: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* --------------------------------------------------------------- hold */

static int check_pattern(struct raw *r, const struct rmp_lease_desc *d)
{
	for (size_t i = 0; i < d->length; i++)
		if (r->data[i] != pattern(i, d->id)) {
			say("FAIL: lease byte %zu is %#x, want %#x", i,
			    r->data[i], pattern(i, d->id));
			return 1;
		}
	return 0;
}

static int run_hold(const char *host, const char *port, int stat_every_ms)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	struct rmp_msg rep;
	unsigned nstat = 0, nstat_fail = 0;
	uint64_t next_stat;
	bool transport, have_lease = false, done = false;
	int st, fails = 0, bad_bytes;

	if (connect_ok(&r, "hold", host, port, LEASE_LEN)) {
		fails++;
		goto out;
	}
	if (do_alloc(&r, LEASE_LEN, HOLD_TTL_S, 0, &d)) {
		fails++;
		goto out;
	}
	have_lease = true;
	for (size_t i = 0; i < d.length; i++)
		r.data[i] = pattern(i, d.id);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, d.addr, d.rkey, d.length);
	if (st != IBV_WC_SUCCESS) {
		if (st >= 0)
			say("FAIL: RDMA WRITE to the lease: %s",
			    ibv_wc_status_str((enum ibv_wc_status)st));
		fails++;
		goto out;
	}
	printf("LEASE %#" PRIx64 " %#" PRIx32 " %" PRIu64 " %#" PRIx64 "\n",
	       d.addr, d.rkey, d.length, d.id);
	fflush(stdout);
	say("holding lease %#" PRIx64 " (keys %s)%s", d.id,
	    keys_mode_str(r.rep.keys_mode),
	    stat_every_ms ? ", sending STATs" : "");

	/* Wait for a line or EOF on stdin; watch the connection. */
	next_stat = now_ms() + (uint64_t)stat_every_ms;
	while (!done) {
		int tmo = 1000;

		if (stat_every_ms) {
			int64_t left = (int64_t)next_stat - (int64_t)now_ms();

			tmo = left > 0 ? (int)left : 0;
		}
		if (pump(&r, tmo, STDIN_FILENO)) {
			char line[256];
			ssize_t n = read(STDIN_FILENO, line, sizeof(line));

			if (n <= 0 || memchr(line, '\n', (size_t)n))
				done = true;
		}
		if (r.disconnected || r.qp_error) {
			say("FAIL: the server dropped the holding "
			    "connection");
			fails++;
			goto out;
		}
		if (r.rx_count) {
			say("FAIL: unsolicited message from the server");
			fails++;
			r.rx_count = 0;
		}
		if (!done && stat_every_ms && now_ms() >= next_stat) {
			st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
			nstat++;
			if (transport || st) {
				nstat_fail++;
				say("FAIL: STAT #%u while holding: %s", nstat,
				    transport ? "no reply" : errname(st));
				if (transport) {
					fails++;
					goto out;
				}
			}
			next_stat = now_ms() + (uint64_t)stat_every_ms;
		}
	}
	if (nstat_fail)
		fails++;

	/* The lease must still hold exactly what was written. */
	memset(r.data, 0, d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, d.length);
	if (st != IBV_WC_SUCCESS) {
		if (st >= 0)
			say("FAIL: READ back of the held lease: %s",
			    ibv_wc_status_str((enum ibv_wc_status)st));
		fails++;
		goto out;
	}
	bad_bytes = check_pattern(&r, &d);
	fails += bad_bytes;
	st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
	if (transport || st) {
		say("FAIL: FREE of the held lease: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		have_lease = false;
	}
	say("hold: %u STAT(s) answered%s; lease bytes %s; lease %s",
	    nstat - nstat_fail, nstat_fail ? " (some FAILED)" : "",
	    bad_bytes ? "CHANGED by someone else" : "intact",
	    have_lease ? "NOT freed" : "freed");
out:
	if (have_lease)
		say("(lease %#" PRIx64 " left to expire)", d.id);
	raw_close(&r);
	say("hold: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* -------------------------------------------------------------- steal */

/*
 * steal_once -- on a connection of its own, one RDMA op with someone
 * else's addr/rkey. 0 if it completed with a remote access error.
 */
static int steal_once(const char *host, const char *port,
		      enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
		      uint64_t len)
{
	const char *name = op == IBV_WR_RDMA_READ ? "READ" : "WRITE";
	struct raw r = { 0 };
	int st, fail = 1;

	if (connect_ok(&r, "steal", host, port, len))
		goto out;
	if (op == IBV_WR_RDMA_WRITE)
		memset(r.data, 0xee, len);
	st = rdma_op(&r, op, addr, rkey, len);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: %s of %" PRIu64 " bytes at %#" PRIx64 " with rkey "
		    "%#x from another connection -> %s", name, len, addr, rkey,
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: the rkey %#x was usable from another connection "
		    "(keys %s): %s of %" PRIu64 " bytes at %#" PRIx64
		    " succeeded", rkey, keys_mode_str(r.rep.keys_mode), name,
		    len, addr);
		if (op == IBV_WR_RDMA_READ)
			hexdump("stolen bytes", r.data, len);
	} else if (st >= 0) {
		say("FAIL: %s with another connection's rkey: %s, want %s",
		    name, ibv_wc_status_str((enum ibv_wc_status)st),
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	return fail;
}

/* run_steal -- READ, then (on a fresh connection: the failed READ broke
 * the first QP) WRITE; both must be refused. A WRITE that gets through
 * also shows up in the holder's pattern check. */
static int run_steal(const char *host, const char *port, uint64_t addr,
		     uint32_t rkey, uint64_t len)
{
	int fails;

	if (len == 0 || len > (64u << 20)) {
		say("bad length %" PRIu64, len);
		return 2;
	}
	fails = steal_once(host, port, IBV_WR_RDMA_READ, addr, rkey, len);
	fails += steal_once(host, port, IBV_WR_RDMA_WRITE, addr, rkey, len);
	say("%s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* --------------------------------------------------------- free, stat */

static int run_free(const char *host, const char *port, uint64_t id,
		    int want)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "free", host, port, 0))
		goto out;
	st = do_simple(&r, RMP_OP_FREE, id, &rep, &transport);
	if (transport)
		say("FAIL: FREE %#" PRIx64 ": no reply", id);
	else if (st != want)
		say("FAIL: FREE %#" PRIx64 ": %s, want %s", id, errname(st),
		    errname(want));
	else {
		say("ok: FREE %#" PRIx64 " -> %s", id, errname(st));
		fail = 0;
	}
out:
	raw_close(&r);
	return fail;
}

static int run_stat(const char *host, const char *port, unsigned count)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "stat", host, port, 0))
		goto out;
	for (unsigned i = 0; i < count; i++) {
		st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || st) {
			say("FAIL: STAT #%u: %s", i + 1,
			    transport ? "no reply" : errname(st));
			goto out;
		}
	}
	printf("pool %" PRIu64 " free %" PRIu64 " leases %" PRIu64
	       " keys %s\n", rep.u.stat.pool_bytes, rep.u.stat.free_bytes,
	       rep.u.stat.leases, keys_mode_str(rep.u.stat.keys_mode));
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* ---------------------------------------------------------------- main */

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && end != s && !*end && s[0] != '-';
}

static int usage(void)
{
	fprintf(stderr,
		"usage: rmp-raw HOST PORT garbage|badconnect|oob\n"
		"       rmp-raw HOST PORT hold [--stat-every MS]\n"
		"       rmp-raw HOST PORT steal ADDR RKEY LEN\n"
		"       rmp-raw HOST PORT free ID [ERRNO]\n"
		"       rmp-raw HOST PORT stat [COUNT]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *host, *port, *cmd;
	uint64_t a, b, c;

	if (argc < 4)
		return usage();
	host = argv[1];
	port = argv[2];
	cmd = argv[3];
	prog = cmd;
	setvbuf(stderr, NULL, _IOLBF, 0);

	if (!strcmp(cmd, "garbage") && argc == 4)
		return run_garbage(host, port);
	if (!strcmp(cmd, "badconnect") && argc == 4)
		return run_badconnect(host, port);
	if (!strcmp(cmd, "oob") && argc == 4)
		return run_oob(host, port);
	if (!strcmp(cmd, "hold")) {
		if (argc == 4)
			return run_hold(host, port, 0);
		if (argc == 6 && !strcmp(argv[4], "--stat-every") &&
		    parse_u64(argv[5], &a) && a > 0 && a < 600000)
			return run_hold(host, port, (int)a);
		return usage();
	}
	if (!strcmp(cmd, "steal") && argc == 7) {
		if (!parse_u64(argv[4], &a) || !parse_u64(argv[5], &b) ||
		    b > UINT32_MAX || !parse_u64(argv[6], &c))
			return usage();
		return run_steal(host, port, a, (uint32_t)b, c);
	}
	if (!strcmp(cmd, "free") && (argc == 5 || argc == 6)) {
		int want = -EPERM;

		if (!parse_u64(argv[4], &a) ||
		    (argc == 6 && !parse_errno(argv[5], &want)))
			return usage();
		return run_free(host, port, a, want);
	}
	if (!strcmp(cmd, "stat") && (argc == 4 || argc == 5)) {
		if (argc == 5 && (!parse_u64(argv[4], &a) || a == 0 ||
				  a > 1000000))
			return usage();
		return run_stat(host, port, argc == 5 ? (unsigned)a : 1);
	}
	return usage();
}

/* SPDX-License-Identifier: MIT */
/* rawclient.c -- rmp-raw: a raw protocol client for the RDMA tests. */

/*
 * Speaks the control protocol itself (librdmacm + verbs + the common codec),
 * without librmpool, so that tests can send what a library never would.
 *
 *   rmp-raw HOST PORT garbage          bad messages get error replies, then
 *                                      a garbage stream gets disconnected
 *   rmp-raw HOST PORT badconnect       bad connect data gets rejected
 *   rmp-raw HOST PORT connect ok|REASON|auth:DETAIL
 *                                      a proper connect is accepted (ok) or
 *                                      rejected with REASON (draining,
 *                                      cooldown, full, ... or a number), or
 *                                      accepted and its AUTH refused with
 *                                      DETAIL (wrong-key, tenant-full,
 *                                      peer-full, network)
 *   rmp-raw HOST PORT oob              a READ one byte past a lease fails
 *   rmp-raw HOST PORT hold [--stat-every MS] [--len BYTES] [--flags F]
 *                                      ALLOC (lease flags F) + WRITE a
 *                                      pattern (the first 4 KiB only of a
 *                                      lease over 1 MiB), print "LEASE ADDR
 *                                      RKEY LENGTH ID" (and with flags its
 *                                      TOKEN line),
 *                                      wait for a line or EOF on stdin
 *                                      (optionally sending STATs
 *                                      meanwhile), check the pattern, FREE
 *   rmp-raw HOST PORT steal ADDR RKEY LEN [--expect-success]
 *                                      a READ, a WRITE, an 8-byte FAA and a
 *                                      CAS at ADDR with a key not granted
 *                                      to this connection, each on a
 *                                      connection of its own, must fail
 *                                      with a remote access error (or, with
 *                                      --expect-success, all succeed)
 *   rmp-raw HOST PORT guess ADDR RKEY N LEN
 *                                      N connections each READ LEN bytes
 *                                      at ADDR with rkey (RKEY & ~0xff) | i;
 *                                      a cool-down reject counts as
 *                                      refused; any success fails
 *   rmp-raw HOST PORT expire TTL_S     a lease's rkey stops working on its
 *                                      own connection after the deadline
 *   rmp-raw HOST PORT freerace ROUNDS  per round, on a new connection:
 *                                      ALLOC, WRITE a tagged pattern, FREE
 *                                      and READ with the old rkey until
 *                                      one fails; no READ may deliver a
 *                                      byte but this lease's own
 *   rmp-raw HOST PORT credits ROUNDS   keep exactly `credits` STATs in
 *                                      flight until ROUNDS replies came
 *   rmp-raw HOST PORT stall TTL_S      ALLOC, print the LEASE line, stop
 *                                      posting receives and send STATs so
 *                                      that the server's replies meet RNR;
 *                                      print "STALLED", wait for stdin
 *   rmp-raw HOST PORT revoked [--len BYTES]
 *                                      ALLOC + WRITE a pattern, print the
 *                                      LEASE line, wait for a line on
 *                                      stdin (the operator revokes the
 *                                      lease meanwhile): then RENEW must
 *                                      get -EKEYEXPIRED and a READ with
 *                                      its rkey a remote access error
 *   rmp-raw HOST PORT fill N LEN TTL_S [--hold]
 *                                      N ALLOCs of LEN bytes, `credits` in
 *                                      flight, all of which must succeed;
 *                                      print "FILLED N" (the leases stay;
 *                                      with --hold the connection too,
 *                                      until a line on stdin: then a STAT
 *                                      must be answered)
 *   rmp-raw HOST PORT drainprobe       ALLOC + WRITE, print "READY", wait
 *                                      for a line: then ALLOC must get
 *                                      -ESHUTDOWN while READ, WRITE and
 *                                      FREE of the lease still work
 *   rmp-raw HOST PORT alloc LEN TTL_S [--free] [--expect ERRNO]
 *                            [--token] [--report]
 *                                      ALLOC; print the LEASE line (with
 *                                      --token a "TOKEN rmp://..." line
 *                                      too), with --free WRITE, READ back
 *                                      and FREE it; or expect the ALLOC to
 *                                      fail: ERRNO; --report prints
 *                                      "ALLOC STATUS DETAIL" and exits 0
 *                                      whatever the status
 *   rmp-raw HOST PORT byid attach|renew|free TOKEN|ID SECRET [--ttl S]
 *                            [--access N] [--exclusive] [--read]
 *                            [--expect ERRNO [--detail N]]
 *                                      the request by id and secret on a
 *                                      connection of its own: succeeds
 *                                      (printing ATTACH/RENEW/FREE lines),
 *                                      or is refused with ERRNO (detail N)
 *                                      and gives no lease
 *   rmp-raw HOST PORT rowrite TOKEN|ID SECRET
 *                                      attach read-only: READ works, an
 *                                      RDMA WRITE gets a remote access
 *                                      error
 *   rmp-raw HOST PORT auth wrong-key|replay|before-auth|relay
 *                                      a refused first message: its status
 *                                      and detail, no lease, and the
 *                                      server closes the connection
 *   rmp-raw HOST PORT tstat            STAT: the tenant's figures
 *   rmp-raw HOST PORT idle             connect, print CONNECTED, hold the
 *                                      connection until stdin says
 *   rmp-raw HOST PORT free ID [ERRNO]  FREE of a lease id; expect ERRNO
 *                                      (a name like EPERM, or 0; default
 *                                      EPERM)
 *   rmp-raw HOST PORT notsend imm|inv  a receive of the server's used up
 *                                      by what is not a plain SEND: imm, an
 *                                      RDMA WRITE with immediate into the
 *                                      lease (it writes nothing into the
 *                                      receive buffer); inv, a SEND with
 *                                      invalidate of the lease's own rkey
 *                                      carrying a FREE of it. Another
 *                                      connection makes requests before
 *                                      and after. The server must answer
 *                                      nothing and close the connection;
 *                                      the other one must still be served
 *   rmp-raw HOST PORT voided GRACE_MS  ALLOC a lease, print its LEASE
 *                                      line, wait for a line on stdin (a
 *                                      reload voids our proof meanwhile):
 *                                      then every request must get
 *                                      -EKEYREVOKED and the lease's bytes
 *                                      stay readable until the server
 *                                      closes the connection, GRACE_MS
 *                                      (its rotate_grace) + 1.5 s at most
 *                                      after the line, and not before
 *                                      GRACE_MS - 1 s
 *   rmp-raw HOST PORT silent SECS      connect, never AUTH: the server
 *                                      must close it within SECS
 *   rmp-raw HOST PORT churn LEN SECS   ALLOC and FREE LEN bytes back to
 *                                      back for SECS: -EDQUOT may come,
 *                                      -ENOSPC must not
 *   rmp-raw HOST PORT stat [COUNT]     COUNT STATs on one connection
 *   rmp-raw HOST PORT statloop SECONDS STATs back to back for SECONDS,
 *                                      then their latency figures
 *
 * Exit status: 0 the expectation was met, 1 it was not, 2 usage. Every
 * wait has a timeout; every resource is released (ASan builds run this).
 */
#include <endian.h>
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

#include "auth.h"
#include "proto.h"
#include "token.h"

#define TIMEOUT_MS 15000
#define NRECV 64              /* receive buffers: >= the server's credits */
#define SEND_MAX 512          /* send slot size: room for oversized tests */
#define SEND_SLOTS (NRECV + 1) /* 0: synchronous sends; others: pipelined */
#define MAX_SEND_WR (SEND_SLOTS + 8)
#define RECV_FLAG (1ull << 62) /* wr_id bit of receives */
#define ASYNC_FLAG (1ull << 61) /* wr_id bit of pipelined sends */
#define WC_TRACK 16
#define LEASE_LEN 4096
#define HOLD_TTL_S 900        /* hold outlives slow VM test runs */
#define MAX_BAD_MSGS 8        /* service.c disconnects after this many */
#define GARBAGE_WAIT_MS 5000  /* per reply in the garbage stream */
#define BIG_LEASE (1u << 20)  /* hold: larger leases check 4 KiB only */
#define STALL_EXTRA 4         /* stall: requests whose replies meet RNR */

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
	uint8_t *msg;   /* NRECV receive slots, then SEND_SLOTS send slots */
	uint8_t *data;  /* local side of RDMA READ/WRITE */
	size_t data_len;
	bool connected, disconnected, qp_error;
	uint64_t lost_ms;  /* now_ms() when the server disconnected us */
	struct rmp_conn_rep rep;
	/* secrets of the leases this client was granted, for FREE */
	struct {
		uint64_t id, secret;
	} known[64];
	unsigned nknown;
	/* flags of the last reply request() returned (RMP_MSG_DETAIL) */
	uint16_t last_flags;
	/* the AUTH reply's status and detail when it was refused */
	int auth_status;
	unsigned auth_detail;

	/* receives posted; stall stops re-posting them */
	unsigned posted;
	bool no_repost;
	/* pipelined sends (post_request): slots in use */
	bool slot_busy[SEND_SLOTS];
	unsigned sends_busy;

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
	/* transport retries of the connection (0: 7, which Soft-RoCE takes
	 * as "for ever") */
	uint8_t retry_count;
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
	case ENOSPC: return "-ENOSPC";
	case EIO: return "-EIO";
	case ETIMEDOUT: return "-ETIMEDOUT";
	case ENOTCONN: return "-ENOTCONN";
	case EACCES: return "-EACCES";
	case EKEYREJECTED: return "-EKEYREJECTED";
	case EKEYREVOKED: return "-EKEYREVOKED";
	case EALREADY: return "-EALREADY";
	}
	snprintf(buf, sizeof(buf), "%d", st);
	return buf;
}

/* parse_errno -- "EPERM", "-EPERM", "0" or "-1" -> 0 / negative errno. */
static bool parse_errno(const char *s, int *out)
{
	static const int known[] = { EPERM, ENOENT, EINVAL, EBADMSG,
				     EOPNOTSUPP, EPROTONOSUPPORT, EKEYEXPIRED,
				     EDQUOT, EFBIG, ESHUTDOWN, ENOSPC, ENOMEM,
				     ENOTCONN, EACCES, EKEYREJECTED,
				     EALREADY };
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
		r->lost_ms = now_ms();
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		say("%s: rdma_cm event %s (status %d)", r->what,
		    rdma_event_str(ev->event), ev->status);
		/* REJECTED after ESTABLISHED: the server closed the
		 * connection before its side saw it established. */
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_REJECTED ||
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

				r->posted--;
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
				if (r->no_repost)
					continue;
				if (post_recv(r, i))
					say("%s: re-posting receive: %s",
					    r->what, strerror(errno));
				else
					r->posted++;
				continue;
			}
			if (w->wr_id & ASYNC_FLAG) {
				unsigned s = (unsigned)(w->wr_id & 0xffff);

				if (s < SEND_SLOTS && r->slot_busy[s]) {
					r->slot_busy[s] = false;
					r->sends_busy--;
				}
				if (w->status != IBV_WC_SUCCESS &&
				    w->status != IBV_WC_WR_FLUSH_ERR)
					say("%s: pipelined SEND: %s", r->what,
					    ibv_wc_status_str(w->status));
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
	size_t msg_bytes = (size_t)NRECV * RMP_MSG_MAX +
			   (size_t)SEND_SLOTS * SEND_MAX;

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
	for (unsigned i = 0; i < NRECV; i++) {
		if (post_recv(r, i)) {
			say("%s: ibv_post_recv: %s", r->what, strerror(errno));
			return -1;
		}
		r->posted++;
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
		.retry_count = r->retry_count ? r->retry_count : 7,
		.rnr_retry_count = 7,
	};
	struct rdma_addrinfo *ai, *src = NULL;
	const char *src_host = getenv("RMP_RAW_SRC");
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
	/* RMP_RAW_SRC: connect from this local address (one of several). */
	if (src_host && *src_host &&
	    rdma_getaddrinfo(src_host, NULL, &hints, &src)) {
		say("%s: rdma_getaddrinfo(RMP_RAW_SRC %s): %s", what,
		    src_host, strerror(errno));
		rdma_freeaddrinfo(ai);
		return -1;
	}
	ret = rdma_resolve_addr(r->id, src ? src->ai_dst_addr : NULL,
				ai->ai_dst_addr, 5000);
	rdma_freeaddrinfo(ai);
	if (src)
		rdma_freeaddrinfo(src);
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

static int request(struct raw *r, struct rmp_msg *req, struct rmp_msg *rep);

/* raw_tenant -- the tenant of the tests (RMPOOL_TENANT), "" = anonymous. */
static const char *raw_tenant(void)
{
	const char *t = getenv("RMPOOL_TENANT");

	return t ? t : "";
}

/*
 * raw_server -- the server endpoint a proof names: the peer address of
 * our connection, as librmpool takes it. 0, or -1 (printed).
 */
static int raw_server(struct raw *r, uint8_t out[RMP_ENDPOINT_LEN])
{
	if (rmp_auth_endpoint(rdma_get_peer_addr(r->id), out)) {
		say("%s: the server's address is not IPv4 or IPv6", r->what);
		return -1;
	}
	return 0;
}

/*
 * raw_auth -- the first message: AUTH with the proof for the accept's
 * nonce and the server we reached (the key from RMPOOL_KEY_FILE; none
 * for anonymous). 0 when the server accepted it, -1 otherwise (printed).
 */
static int raw_auth(struct raw *r, const char *name, const char *tenant)
{
	const char *file = getenv("RMPOOL_KEY_FILE");
	struct rmp_msg req = { 0 }, rep;
	uint8_t key[RMP_KEY_MAX], server[RMP_ENDPOINT_LEN];
	size_t key_len = 0;
	char err[256];

	req.hdr.opcode = RMP_OP_AUTH;
	if (tenant[0]) {
		if (raw_server(r, server))
			return -1;
		if (rmp_auth_init() || !file ||
		    rmp_key_load(file, key, &key_len, err, sizeof(err))) {
			say("%s: no usable key for tenant %s: %s", r->what,
			    tenant, file ? err : "RMPOOL_KEY_FILE is not set");
			return -1;
		}
		rmp_auth_proof(key, key_len, r->rep.nonce, r->rep.version,
			       tenant, name, server, req.u.auth.proof);
	}
	if (request(r, &req, &rep))
		return -1;
	if (rep.hdr.status) {
		r->auth_status = rep.hdr.status;
		r->auth_detail = RMP_MSG_DETAIL(rep.hdr.flags);
		say("%s: AUTH as tenant %s: %s (%s)", r->what, tenant,
		    errname(rep.hdr.status),
		    rmp_detail_str(RMP_MSG_DETAIL(rep.hdr.flags)));
		return -1;
	}
	return 0;
}

/*
 * connect_as -- a proper connect as client "rmp-raw-WHAT" of the tenant
 * RMPOOL_TENANT, then (with auth) the AUTH that proves its key. 0 when
 * established; 1 when rejected, with the reason in *reason (-1 when the
 * reject data does not decode); -1 on any other outcome (printed; an
 * AUTH refused leaves its status and detail in r).
 */
static int connect_as(struct raw *r, const char *what, const char *host,
		      const char *port, size_t data_len, int *reason,
		      bool auth)
{
	struct rmp_conn_req req = { .proto_min = RMP_PROTO_MIN,
				    .proto_max = RMP_PROTO_MAX };
	uint8_t pdata[RMP_CONN_REQ_LEN];
	struct rmp_conn_rej rej;
	int rej_ret = 0, rej_status = 0, ret;

	/* RMP_RAW_NAME: the name to send instead (may be empty). */
	if (getenv("RMP_RAW_NAME"))
		snprintf(req.name, sizeof(req.name), "%s",
			 getenv("RMP_RAW_NAME"));
	else
		snprintf(req.name, sizeof(req.name), "rmp-raw-%s", what);
	snprintf(req.tenant, sizeof(req.tenant), "%s", raw_tenant());
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0) {
		say("%s: cannot encode the connect data", what);
		return -1;
	}
	ret = raw_connect(r, what, host, port, pdata, sizeof(pdata), data_len,
			  &rej, &rej_ret, &rej_status);
	if (ret == 1)
		*reason = rej_ret ? -1 : rej.reason;
	if (ret == 0 && auth && raw_auth(r, req.name, req.tenant))
		return -1;
	return ret;
}

/* connect_named -- connect_as with the AUTH: the normal client. */
static int connect_named(struct raw *r, const char *what, const char *host,
			 const char *port, size_t data_len, int *reason)
{
	return connect_as(r, what, host, port, data_len, reason, true);
}

/* connect_ok -- a proper connect; 0 or -1 (printed). */
static int connect_ok(struct raw *r, const char *what, const char *host,
		      const char *port, size_t data_len)
{
	int reason = 0, ret;

	ret = connect_named(r, what, host, port, data_len, &reason);
	if (ret == 1) {
		say("%s: connection rejected: %s", what, reason < 0 ?
		    "(undecodable reject data)" :
		    rmp_reject_reason_str((unsigned)reason));
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

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_READ: return "READ";
	case IBV_WR_RDMA_WRITE: return "WRITE";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "FAA";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "CAS";
	default: return "?";
	}
}

/* post_wait -- post wr (signaled; wr_id assigned here) and wait for its
 * completion: the WC status (as int), or -1 if nothing completed in
 * time. */
static int post_wait(struct raw *r, struct ibv_send_wr *wr, int timeout_ms)
{
	struct ibv_send_wr *bad;
	int st;

	wr->wr_id = r->next_wr_id++;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(r->id->qp, wr, &bad)) {
		say("%s: ibv_post_send(%s): %s", r->what, op_name(wr->opcode),
		    strerror(errno));
		return -1;
	}
	st = wait_wc(r, wr->wr_id, timeout_ms);
	if (st < 0 && timeout_ms == TIMEOUT_MS)
		say("%s: RDMA %s did not complete in %d ms", r->what,
		    op_name(wr->opcode), timeout_ms);
	return st;
}

/* rdma_op_within -- one RDMA READ/WRITE of len bytes at data[0]; the WC
 * status (as int), or -1 if nothing completed in timeout_ms (printed
 * only for the default TIMEOUT_MS: a shorter wait is the caller's
 * choice). */
static int rdma_op_within(struct raw *r, enum ibv_wr_opcode op,
			  uint64_t raddr, uint32_t rkey, size_t len,
			  int timeout_ms)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->data,
		.length = (uint32_t)len,
		.lkey = r->data_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	if (len > r->data_len) {
		say("%s: %zu bytes do not fit the local buffer", r->what, len);
		return -1;
	}
	return post_wait(r, &wr, timeout_ms);
}

static int rdma_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
		   uint32_t rkey, size_t len)
{
	return rdma_op_within(r, op, raddr, rkey, len, TIMEOUT_MS);
}

/* atomic_op -- one 8-byte FAA or CAS at raddr; the old value lands in
 * data[0..7]. The WC status (as int), or -1 on timeout. */
static int atomic_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
		     uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->data,
		.length = 8,
		.lkey = r->data_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.atomic = { .remote_addr = raddr, .compare_add = compare_add,
			       .swap = swap, .rkey = rkey },
	};

	return post_wait(r, &wr, TIMEOUT_MS);
}

/* wc_str -- text for a status from rdma_op / atomic_op. */
static const char *wc_str(int st)
{
	return st < 0 ? "no completion" :
	       ibv_wc_status_str((enum ibv_wc_status)st);
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
	r->last_flags = rep->hdr.flags;
	if (rep->hdr.opcode != req->hdr.opcode) {
		say("%s: reply to %s carries opcode %u", r->what,
		    rmp_opcode_name(req->hdr.opcode), rep->hdr.opcode);
		return -EBADMSG;
	}
	return 0;
}

/* remember -- keep d's secret for a later FREE by id. */
static void remember(struct raw *r, const struct rmp_lease_desc *d)
{
	unsigned i = r->nknown % (sizeof(r->known) / sizeof(r->known[0]));

	r->known[i].id = d->id;
	r->known[i].secret = d->secret;
	r->nknown++;
}

/* secret_of -- the remembered secret of lease id, 0 if unknown. */
static uint64_t secret_of(const struct raw *r, uint64_t id)
{
	for (unsigned i = 0; i < sizeof(r->known) / sizeof(r->known[0]); i++)
		if (r->known[i].id == id)
			return r->known[i].secret;
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
	remember(r, d);
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
	if (opcode == RMP_OP_FREE) {
		req.u.free.id = id;
		req.u.free.secret = secret_of(r, id);
	}
	ret = request(r, &req, rep);
	*transport = ret != 0;
	return ret ? ret : rep->hdr.status;
}

/*
 * post_request -- SEND *req (req_id assigned here) without waiting for
 * its completion or reply: for pipelines. Takes a free send slot (waits
 * for one). 0, or -1 (printed).
 */
static int post_request(struct raw *r, struct rmp_msg *req)
{
	uint64_t deadline = now_ms() + TIMEOUT_MS;
	struct ibv_send_wr wr = { .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_sge sge;
	unsigned slot;
	uint8_t *buf;
	int len;

	for (;;) {
		for (slot = 1; slot < SEND_SLOTS && r->slot_busy[slot]; slot++)
			;
		if (slot < SEND_SLOTS)
			break;
		if (r->disconnected || r->qp_error) {
			say("%s: connection lost with every send slot busy",
			    r->what);
			return -1;
		}
		if (now_ms() >= deadline) {
			say("%s: no send completed in %d ms", r->what,
			    TIMEOUT_MS);
			return -1;
		}
		pump(r, 100, -1);
	}
	buf = r->msg + (size_t)NRECV * RMP_MSG_MAX + (size_t)slot * SEND_MAX;
	req->hdr.req_id = r->next_req_id++;
	req->hdr.flags = 0;
	req->hdr.status = 0;
	len = rmp_msg_encode(buf, SEND_MAX, req);
	if (len < 0) {
		say("%s: encode %s: %s", r->what,
		    rmp_opcode_name(req->hdr.opcode), strerror(-len));
		return -1;
	}
	sge.addr = (uintptr_t)buf;
	sge.length = (uint32_t)len;
	sge.lkey = r->msg_mr->lkey;
	wr.wr_id = ASYNC_FLAG | slot;
	wr.sg_list = &sge;
	if (ibv_post_send(r->id->qp, &wr, &bad)) {
		say("%s: ibv_post_send(SEND): %s", r->what, strerror(errno));
		return -1;
	}
	r->slot_busy[slot] = true;
	r->sends_busy++;
	return 0;
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

	/* 3. a protocol version after ours (a STAT otherwise). */
	stat_header(buf, 0x7103);
	buf[4] = RMP_PROTO_VERSION + 1;
	fails += bad_step(&r, "wrong version", buf, RMP_MSG_HDR_LEN, 0x7103,
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

	/* (c) a protocol newer than the server's only */
	req.proto_min = req.proto_max = RMP_PROTO_MAX + 1;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "a newer protocol only", pdata,
			     sizeof(pdata), RMP_REJ_PROTO, true);

	/* (d) an old client: protocol 2, its 48-byte connect data */
	req.proto_min = req.proto_max = 2;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "protocol 2 (an old client)", pdata,
			     48, RMP_REJ_PROTO, true);

	/* (e) a protocol 3 client: its proof names no server, a relay could
	 * forward it */
	req.proto_min = req.proto_max = 3;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "protocol 3 (unbound proof)", pdata,
			     sizeof(pdata), RMP_REJ_PROTO, true);

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

/* ----------------------------------------------------- lease helpers */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* pattern_len -- the bytes of a lease that carry the test pattern: all
 * of a small lease, the first 4 KiB of a big one. */
static size_t pattern_len(uint64_t length)
{
	return length > BIG_LEASE ? LEASE_LEN : (size_t)length;
}

/* check_pattern -- data[0..len) holds pattern(seed)? 0, or 1 (the first
 * wrong byte printed). */
static int check_pattern(const struct raw *r, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (r->data[i] != pattern(i, seed)) {
			say("FAIL: lease byte %zu is %#x, want %#x", i,
			    r->data[i], pattern(i, seed));
			return 1;
		}
	return 0;
}

/* write_pattern -- WRITE pattern(seed) into the lease. 0 or 1 (printed). */
static int write_pattern(struct raw *r, const struct rmp_lease_desc *d,
			 uint64_t seed)
{
	size_t n = pattern_len(d->length);
	int st;

	for (size_t i = 0; i < n; i++)
		r->data[i] = pattern(i, seed);
	st = rdma_op(r, IBV_WR_RDMA_WRITE, d->addr, d->rkey, n);
	if (st != IBV_WC_SUCCESS) {
		say("FAIL: RDMA WRITE to the lease: %s", wc_str(st));
		return 1;
	}
	return 0;
}

/* read_check -- READ the lease back and compare with pattern(seed).
 * 0 or 1 (printed). */
static int read_check(struct raw *r, const struct rmp_lease_desc *d,
		      uint64_t seed, const char *when)
{
	size_t n = pattern_len(d->length);
	int st;

	memset(r->data, 0, n);
	st = rdma_op(r, IBV_WR_RDMA_READ, d->addr, d->rkey, n);
	if (st != IBV_WC_SUCCESS) {
		say("FAIL: READ of the lease %s: %s", when, wc_str(st));
		return 1;
	}
	return check_pattern(r, n, seed);
}

static void print_lease(const struct rmp_lease_desc *d)
{
	printf("LEASE %#" PRIx64 " %#" PRIx32 " %" PRIu64 " %#" PRIx64 "\n",
	       d->addr, d->rkey, d->length, d->id);
	fflush(stdout);
}

/*
 * wait_stdin -- serve the connection until a line or EOF on stdin.
 * Returns 0, or -1 as soon as the connection is lost (when
 * fail_on_loss; else the loss is only noted, once).
 */
static int wait_stdin(struct raw *r, bool fail_on_loss)
{
	uint64_t t0 = now_ms();
	bool noted = false;

	for (;;) {
		if (pump(r, 1000, STDIN_FILENO)) {
			char line[256];
			ssize_t n = read(STDIN_FILENO, line, sizeof(line));

			if (n <= 0 || memchr(line, '\n', (size_t)n))
				return 0;
		}
		if ((r->disconnected || r->qp_error) && !noted) {
			say("%s: the connection was lost after %" PRIu64
			    " ms (%s)", r->what, now_ms() - t0,
			    r->disconnected ? "disconnected" : "QP error");
			if (fail_on_loss)
				return -1;
			noted = true;
		}
	}
}

/* --------------------------------------------------------------- hold */

static int print_token(const char *host, const char *port,
		       const struct rmp_lease_desc *d);

static int run_hold(const char *host, const char *port, int stat_every_ms,
		    uint64_t length, uint32_t flags)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	struct rmp_msg rep;
	unsigned nstat = 0, nstat_fail = 0;
	uint64_t next_stat, t_free;
	bool transport, have_lease = false, done = false;
	int st, fails = 0, bad_bytes;

	if (connect_ok(&r, "hold", host, port, pattern_len(length))) {
		fails++;
		goto out;
	}
	if (do_alloc(&r, length, HOLD_TTL_S, flags, &d)) {
		fails++;
		goto out;
	}
	have_lease = true;
	if (write_pattern(&r, &d, d.id)) {
		fails++;
		goto out;
	}
	print_lease(&d);
	if (flags && print_token(host, port, &d)) {
		fails++;
		goto out;
	}
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
	bad_bytes = read_check(&r, &d, d.id, "at the end");
	fails += bad_bytes;
	t_free = now_ms();
	st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
	if (transport || st) {
		say("FAIL: FREE of the held lease: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		have_lease = false;
		say("FREE of %" PRIu64 " bytes answered in %" PRIu64 " ms",
		    d.length, now_ms() - t_free);
	}
	say("hold: %u STAT(s) answered%s; lease bytes %s; lease %s",
	    nstat - nstat_fail, nstat_fail ? " (some FAILED)" : "",
	    bad_bytes ? "CHANGED by someone else (or unreadable)" : "intact",
	    have_lease ? "NOT freed" : "freed");
out:
	if (have_lease)
		say("(lease %#" PRIx64 " left to expire)", d.id);
	raw_close(&r);
	say("hold: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* -------------------------------------------------------------- steal */

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

/*
 * steal_once -- on a connection of its own, one operation with a key
 * that was not granted to it. 0 if it completed with a remote access
 * error (with expect_success: if it succeeded).
 */
static int steal_once(const char *host, const char *port,
		      enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
		      uint64_t len, bool expect_success)
{
	const char *name = op_name(op);
	uint64_t n = is_atomic(op) ? 8 : len;
	struct raw r = { 0 };
	uint64_t old;
	int st, fail = 1;

	if (connect_ok(&r, "steal", host, port, len))
		goto out;
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		memset(r.data, 0xee, len);
		/* fall through */
	case IBV_WR_RDMA_READ:
		st = rdma_op(&r, op, addr, rkey, len);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		st = atomic_op(&r, op, addr, rkey, 1, 0);
		break;
	default:
		st = atomic_op(&r, op, addr, rkey, 0, 0xeeeeeeeeeeeeeeeeull);
		break;
	}
	memcpy(&old, r.data, sizeof(old));
	if (expect_success) {
		if (st == IBV_WC_SUCCESS) {
			say("ok: %s of %" PRIu64 " bytes at %#" PRIx64 " with "
			    "key %#x from a connection of its own succeeded, "
			    "as expected (keys %s)", name, n, addr, rkey,
			    keys_mode_str(r.rep.keys_mode));
			if (op == IBV_WR_RDMA_READ)
				hexdump("bytes read", r.data, len);
			else if (is_atomic(op))
				say("%s: old value %#" PRIx64, name, old);
			fail = 0;
		} else {
			say("FAIL: %s with key %#x: %s, want success (the "
			    "negative control does not reach the lease)",
			    name, rkey, wc_str(st));
		}
		goto out;
	}
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: %s of %" PRIu64 " bytes at %#" PRIx64 " with key %#x "
		    "from a connection of its own -> %s", name, n, addr, rkey,
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: the key %#x was usable from a connection it was not "
		    "granted to (keys %s): %s of %" PRIu64 " bytes at %#"
		    PRIx64 " succeeded", rkey, keys_mode_str(r.rep.keys_mode),
		    name, n, addr);
		if (op == IBV_WR_RDMA_READ)
			hexdump("stolen bytes", r.data, len);
		else if (is_atomic(op))
			say("%s: old value %#" PRIx64, name, old);
	} else {
		say("FAIL: %s with key %#x: %s, want %s", name, rkey,
		    wc_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	return fail;
}

/* run_steal -- READ, WRITE, FAA, CAS, each on a fresh connection (a
 * failed operation breaks its QP). A WRITE or atomic that gets through
 * also shows up in the holder's pattern check. */
static int run_steal(const char *host, const char *port, uint64_t addr,
		     uint32_t rkey, uint64_t len, bool expect_success)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
	};
	unsigned nops = sizeof(ops) / sizeof(ops[0]);
	int fails = 0;

	if (len < 8 || len > (64u << 20) || addr % 8) {
		say("bad length %" PRIu64 " or address %#" PRIx64 " (atomics "
		    "need 8 aligned bytes)", len, addr);
		return 2;
	}
	for (unsigned i = 0; i < nops; i++)
		fails += steal_once(host, port, ops[i], addr, rkey, len,
				    expect_success);
	say("steal: %u of %u operations %s: %s", nops - (unsigned)fails, nops,
	    expect_success ? "succeeded" : "refused",
	    fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* -------------------------------------------------------------- guess */

enum guess_outcome { G_ACCESS, G_REFUSED, G_SUCCESS, G_OTHER };

static const char *guess_str(enum guess_outcome o)
{
	static const char *const s[] = { "access error", "refused",
					 "SUCCEEDED", "other outcome" };

	return s[o];
}

static void guess_run_end(unsigned first, unsigned last,
			  enum guess_outcome o)
{
	if (first == last)
		say("try %u: %s", first, guess_str(o));
	else
		say("tries %u-%u: %s", first, last, guess_str(o));
}

/* run_guess -- N connections, each READ with a guessed rkey; prints a
 * summary; 0 unless a guess worked. */
static int run_guess(const char *host, const char *port, uint64_t addr,
		     uint32_t rkey, unsigned n, uint64_t len)
{
	unsigned count[4] = { 0 }, run_start = 0;
	enum guess_outcome prev = G_OTHER;

	for (unsigned i = 0; i < n; i++) {
		uint32_t key = (rkey & ~0xffu) | (i & 0xffu);
		enum guess_outcome o = G_OTHER;
		struct raw r = { 0 };
		int reason = 0, ret, st;

		ret = connect_named(&r, "guess", host, port, len, &reason);
		if (ret == 1 && reason == RMP_REJ_COOLDOWN) {
			o = G_REFUSED;
		} else if (ret == 1) {
			say("try %u: rejected: %s", i, reason < 0 ?
			    "(undecodable reject data)" :
			    rmp_reject_reason_str((unsigned)reason));
		} else if (ret < 0) {
			say("try %u: could not connect", i);
		} else {
			st = rdma_op(&r, IBV_WR_RDMA_READ, addr, key, len);
			if (st == IBV_WC_REM_ACCESS_ERR) {
				o = G_ACCESS;
			} else if (st == IBV_WC_SUCCESS) {
				o = G_SUCCESS;
				say("FAIL: try %u: READ of %" PRIu64 " bytes "
				    "at %#" PRIx64 " with guessed rkey %#x "
				    "succeeded", i, len, addr, key);
				hexdump("bytes read", r.data, len);
			} else {
				say("try %u: READ with rkey %#x: %s", i, key,
				    wc_str(st));
			}
		}
		raw_close(&r);
		count[o]++;
		if (i > 0 && o != prev) {
			guess_run_end(run_start, i - 1, prev);
			run_start = i;
		}
		prev = o;
		if (o == G_REFUSED)
			usleep(20000);
	}
	if (n)
		guess_run_end(run_start, n - 1, prev);
	printf("guess: %u tries, %u access errors, %u refused, %u "
	       "succeeded\n", n, count[G_ACCESS], count[G_REFUSED],
	       count[G_SUCCESS]);
	if (count[G_OTHER])
		printf("guess: %u tries ended otherwise (see stderr)\n",
		       count[G_OTHER]);
	fflush(stdout);
	return count[G_SUCCESS] ? 1 : 0;
}

/* ------------------------------------------------------------- expire */

/* run_expire -- within_ms after its deadline a lease's rkey must fail on
 * the very connection it was granted to: the NIC refuses, no clock is
 * consulted on this side. */
static int run_expire(const char *host, const char *port, uint32_t ttl_s,
		      uint64_t within_ms)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	uint64_t t_alloc, t_rep, end;
	int st, fail = 1;

	if (connect_ok(&r, "expire", host, port, LEASE_LEN))
		goto out;
	t_alloc = now_ms();
	if (do_alloc(&r, LEASE_LEN, ttl_s, 0, &d))
		goto out;
	t_rep = now_ms();
	say("lease %#" PRIx64 ": addr %#" PRIx64 " rkey %#x, %" PRIu64
	    " bytes, ttl %" PRIu64 " ms (keys %s)", d.id, d.addr, d.rkey,
	    d.length, d.ttl_ms, keys_mode_str(r.rep.keys_mode));
	if (write_pattern(&r, &d, d.id) ||
	    read_check(&r, &d, d.id, "before its deadline"))
		goto out;
	say("ok: WRITE and READ back before the deadline");
	/* The later of the asked and the granted deadline, plus within_ms. */
	end = t_alloc + (uint64_t)ttl_s * 1000;
	if (t_rep + d.ttl_ms > end)
		end = t_rep + d.ttl_ms;
	end += within_ms;
	while (now_ms() < end) {
		pump(&r, (int)(end - now_ms()), -1);
		if (r.disconnected || r.qp_error) {
			say("FAIL: the connection was lost %" PRIu64 " ms "
			    "after the ALLOC, before the check (%s): the "
			    "NIC's answer cannot be seen", now_ms() - t_alloc,
			    r.disconnected ? "disconnected" : "QP error");
			goto out;
		}
		if (r.rx_count) {
			say("note: %u unsolicited message(s) from the server",
			    r.rx_count);
			r.rx_count = 0;
		}
	}
	memset(r.data, 0, d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, d.length);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: READ with the same rkey %" PRIu64 " ms after the "
		    "ALLOC -> %s", now_ms() - t_alloc,
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: the lease was still readable with its rkey %"
		    PRIu64 " ms after the ALLOC (ttl %u s)", now_ms() - t_alloc,
		    ttl_s);
		hexdump("bytes read", r.data, d.length);
	} else {
		say("FAIL: READ after the deadline: %s, want %s", wc_str(st),
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	say("expire: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* ------------------------------------------------------------ credits */

/*
 * run_credits -- keep exactly `credits` STATs in flight (a new one as
 * each reply comes) until `rounds` replies came, or for `seconds` when
 * that is not 0 (a flood: "READY" on stdout once connected; it starts on
 * a line on stdin, so that floods of several clients start together,
 * and ends with "FLOODED REPLIES MS", what the server's loop gave it).
 */
static int run_credits(const char *host, const char *port, uint64_t rounds,
		       uint32_t seconds)
{
	struct raw r = { 0 };
	uint64_t inflight[NRECV], sent = 0, got = 0, t0 = now_ms(), end = 0;
	unsigned credits = 0, ninflight = 0, k;
	struct rmp_msg req, rep;
	int ret, fail = 1;

	if (connect_ok(&r, "credits", host, port, 0))
		goto out;
	credits = r.rep.credits;
	if (credits > NRECV) {
		say("FAIL: the server grants %u credits; rmp-raw posts %u "
		    "receive buffers", credits, NRECV);
		goto out;
	}
	say("server grants %u credits: %u STATs in flight at all times",
	    credits, credits);
	if (seconds) {
		printf("READY\n");
		fflush(stdout);
		if (wait_stdin(&r, true))
			goto report;
		rounds = UINT64_MAX;
		end = now_ms() + (uint64_t)seconds * 1000;
	}
	t0 = now_ms();
	while (got < rounds && !(end && ninflight == 0 && got)) {
		while (ninflight < credits && sent < rounds &&
		       !(end && now_ms() >= end)) {
			memset(&req, 0, sizeof(req));
			req.hdr.opcode = RMP_OP_STAT;
			if (post_request(&r, &req))
				goto report;
			inflight[ninflight++] = req.hdr.req_id;
			sent++;
		}
		ret = next_reply(&r, &rep, TIMEOUT_MS);
		if (ret == -ENOTCONN) {
			say("FAIL: connection lost (%s) after %" PRIu64
			    " replies", r.disconnected ? "disconnected" :
			    "QP error", got);
			goto report;
		}
		if (ret == -ETIMEDOUT) {
			say("FAIL: no reply in %d ms after %" PRIu64
			    " replies, %u requests in flight", TIMEOUT_MS, got,
			    ninflight);
			goto report;
		}
		if (ret)
			goto report; /* printed */
		for (k = 0; k < ninflight && inflight[k] != rep.hdr.req_id; k++)
			;
		if (k == ninflight) {
			say("FAIL: a reply with req_id %#" PRIx64 ", which is "
			    "not in flight", rep.hdr.req_id);
			goto report;
		}
		inflight[k] = inflight[--ninflight];
		if (rep.hdr.opcode != RMP_OP_STAT || rep.hdr.status) {
			say("FAIL: reply %" PRIu64 ": %s %s", got + 1,
			    rmp_opcode_name(rep.hdr.opcode),
			    errname(rep.hdr.status));
			goto report;
		}
		got++;
	}
	/* Still connected a moment later? */
	pump(&r, 200, -1);
	if (r.disconnected || r.qp_error)
		say("FAIL: the connection was lost after the last reply");
	else
		fail = 0;
report:
	if (end) {
		printf("FLOODED %" PRIu64 " %" PRIu64 "\n", got, now_ms() - t0);
		fflush(stdout);
	} else {
		say("credits: %" PRIu64 " of %" PRIu64 " replies with %u "
		    "credits in %" PRIu64 " ms", got, rounds, credits,
		    now_ms() - t0);
	}
out:
	raw_close(&r);
	say("credits: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* -------------------------------------------------------------- stall */

/*
 * run_stall -- a client that stops posting receives: every receive
 * buffer is used up by replies (the last one by the ALLOC), then a few
 * more requests go out whose replies meet RNR at this end. Exits 0
 * whatever the server does about it after that.
 */
/*
 * run_notsend -- see the header. Before the fix, a WRITE with immediate
 * made the server decode whatever the shared receive buffer held (another
 * connection's last request, replayed as this one's), and a SEND with
 * invalidate got its FREE handled after the NIC had invalidated the
 * window, and the server's LOCAL_INV of it crashed Soft-RoCE's kernel (on
 * a device that reports the failure: a key not proven dead, the extent
 * quarantined for good).
 */
static int run_notsend(const char *host, const char *port, bool inv)
{
	struct raw v = { 0 }, r = { 0 };
	struct rmp_lease_desc dv, d;
	struct rmp_msg req = { 0 }, rep;
	struct ibv_sge sge = { 0 };
	struct ibv_send_wr wr = { 0 };
	uint64_t t0, end;
	bool transport;
	int st, len, fail = 1;

	if (connect_ok(&v, "notsend", host, port, LEASE_LEN) ||
	    do_alloc(&v, LEASE_LEN, HOLD_TTL_S, 0, &dv) ||
	    connect_ok(&r, "notsend", host, port, LEASE_LEN) ||
	    do_alloc(&r, LEASE_LEN, HOLD_TTL_S, 0, &d))
		goto out;
	/* The other connection's request lands in a shared receive buffer:
	 * the one a WRITE with immediate could make the server read. */
	st = do_simple(&v, RMP_OP_STAT, 0, &rep, &transport);
	if (st) {
		say("notsend: STAT before: %s", errname(st));
		goto out;
	}
	if (inv) {
		/* A FREE of its own lease that also invalidates its rkey. */
		req.hdr.opcode = RMP_OP_FREE;
		req.hdr.req_id = r.next_req_id++;
		req.u.free.id = d.id;
		req.u.free.secret = secret_of(&r, d.id);
		len = rmp_msg_encode(r.msg + (size_t)NRECV * RMP_MSG_MAX,
				     SEND_MAX, &req);
		if (len < 0)
			goto out;
		sge.addr = (uintptr_t)(r.msg + (size_t)NRECV * RMP_MSG_MAX);
		sge.length = (uint32_t)len;
		sge.lkey = r.msg_mr->lkey;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = d.rkey;
	} else {
		/* 48 bytes into its own lease: the size of an ATTACH. */
		memset(r.data, 0, 48);
		sge.addr = (uintptr_t)r.data;
		sge.length = 48;
		sge.lkey = r.data_mr->lkey;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(1);
		wr.wr.rdma.remote_addr = d.addr;
		wr.wr.rdma.rkey = d.rkey;
	}
	wr.sg_list = &sge;
	wr.num_sge = 1;
	t0 = now_ms();
	st = post_wait(&r, &wr, TIMEOUT_MS);
	say("notsend: %s -> %s", inv ? "SEND with invalidate" :
	    "WRITE with immediate", wc_str(st));
	/* The server must answer nothing and drop the connection. */
	end = now_ms() + TIMEOUT_MS;
	while (!r.disconnected && !r.rx_count && now_ms() < end)
		pump(&r, (int)(end - now_ms()), -1);
	if (r.rx_count) {
		struct rmp_msg m;

		if (parse_reply(&r.rx[r.rx_head], &m) == 0)
			say("FAIL: the server answered it: %s status %s, %s",
			    rmp_opcode_name(m.hdr.opcode),
			    errname(m.hdr.status),
			    m.hdr.status ? "refused" :
			    "a request it never sent was served");
		else
			say("FAIL: the server answered it (undecodable)");
		goto out;
	}
	if (!r.disconnected) {
		say("FAIL: the connection stayed up for %d ms", TIMEOUT_MS);
		goto out;
	}
	say("ok: no answer, disconnected after %" PRIu64 " ms",
	    now_ms() - t0);
	/* The other connection is served as before, its lease intact. */
	st = do_simple(&v, RMP_OP_STAT, 0, &rep, &transport);
	if (st) {
		say("FAIL: STAT on the other connection after it: %s",
		    errname(st));
		goto out;
	}
	st = do_simple(&v, RMP_OP_FREE, dv.id, &rep, &transport);
	if (st) {
		say("FAIL: FREE on the other connection after it: %s",
		    errname(st));
		goto out;
	}
	say("ok: the other connection is still served");
	fail = 0;
out:
	raw_close(&r);
	raw_close(&v);
	say("notsend: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/*
 * use_up_recvs -- STATs until only `keep` receive buffers are posted;
 * from then on each reply uses one up for good. 0, or -1 (printed).
 */
static int use_up_recvs(struct raw *r, unsigned keep, unsigned *nstat)
{
	struct rmp_msg rep;
	bool transport;
	int st;

	r->no_repost = true;
	for (*nstat = 0; r->posted > keep; (*nstat)++) {
		st = do_simple(r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || st) {
			say("FAIL: STAT #%u: %s", *nstat + 1,
			    transport ? "no reply" : errname(st));
			return -1;
		}
	}
	return 0;
}

/*
 * send_unanswerable -- STALL_EXTRA STATs with no receive buffer left for
 * their replies: those meet RNR, and the server's send queue stalls
 * behind them. The SENDs themselves complete (the server has receive
 * buffers); waits up to 3 s for that.
 */
static void send_unanswerable(struct raw *r, unsigned *extra)
{
	struct rmp_msg req;
	uint64_t end;

	for (*extra = 0; *extra < STALL_EXTRA; (*extra)++) {
		memset(&req, 0, sizeof(req));
		req.hdr.opcode = RMP_OP_STAT;
		if (post_request(r, &req))
			break;
	}
	end = now_ms() + 3000;
	while (r->sends_busy && !r->qp_error && now_ms() < end)
		pump(r, 100, -1);
}

/* stalled -- print STALLED, then serve nothing until stdin says so. */
static void stalled(struct raw *r, unsigned nstat, unsigned extra)
{
	say("%u STATs used up the receive buffers; %u more STATs sent (%u "
	    "not completed): their replies meet RNR", nstat, extra,
	    r->sends_busy);
	printf("STALLED\n");
	fflush(stdout);
	wait_stdin(r, false);
	say("%s: %s at the end", r->what, r->disconnected ? "disconnected" :
	    r->qp_error ? "QP in error" : "still connected");
}

static int run_stall(const char *host, const char *port, uint32_t ttl_s)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	unsigned nstat, extra;
	int ret = 1;

	if (connect_ok(&r, "stall", host, port, LEASE_LEN))
		goto out;
	/* One receive buffer left: the ALLOC's reply. */
	if (use_up_recvs(&r, 1, &nstat) ||
	    do_alloc(&r, LEASE_LEN, ttl_s, 0, &d))
		goto out;
	print_lease(&d);
	send_unanswerable(&r, &extra);
	ret = 0;
	stalled(&r, nstat, extra);
out:
	raw_close(&r);
	return ret;
}

/* --------------------------------------------------------- drainprobe */

/*
 * run_drainprobe -- connect and hold a lease; on a line on stdin (sent
 * once the server is draining): ALLOC must get -ESHUTDOWN, while READ,
 * WRITE and FREE of the lease still work.
 */
static int run_drainprobe(const char *host, const char *port)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d, d2;
	struct rmp_msg rep;
	bool transport, have_lease = false;
	int st, fails = 0;

	if (connect_ok(&r, "drainprobe", host, port, LEASE_LEN) ||
	    do_alloc(&r, LEASE_LEN, 60, 0, &d)) {
		fails++;
		goto out;
	}
	have_lease = true;
	if (write_pattern(&r, &d, d.id)) {
		fails++;
		goto out;
	}
	printf("READY %#" PRIx64 "\n", d.id);
	fflush(stdout);
	if (wait_stdin(&r, true)) {
		say("FAIL: the server dropped the connection before the "
		    "checks");
		fails++;
		goto out;
	}

	st = do_alloc(&r, LEASE_LEN, 60, 0, &d2);
	if (st == -ESHUTDOWN) {
		say("ok: ALLOC while draining -> -ESHUTDOWN");
	} else {
		say("FAIL: ALLOC while draining: %s, want -ESHUTDOWN",
		    errname(st));
		fails++;
		if (st == 0)
			do_simple(&r, RMP_OP_FREE, d2.id, &rep, &transport);
	}
	if (read_check(&r, &d, d.id, "while draining")) {
		fails++;
	} else {
		say("ok: READ of the lease while draining: bytes intact");
	}
	if (write_pattern(&r, &d, d.id + 1) ||
	    read_check(&r, &d, d.id + 1, "after a WRITE while draining")) {
		fails++;
	} else {
		say("ok: WRITE and READ back while draining");
	}
	st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
	if (transport || st) {
		say("FAIL: FREE while draining: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		have_lease = false;
		say("ok: FREE while draining");
	}
out:
	if (have_lease)
		say("(lease %#" PRIx64 " left to the server)", d.id);
	raw_close(&r);
	say("drainprobe: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* ------------------------------------------------------------ revoked */

/*
 * run_revoked -- a lease the operator revokes (rmpoolctl revoke) while
 * this connection holds it: afterwards its RENEW gets -EKEYEXPIRED and
 * its rkey fails at the NIC. Prints "RENEW STATUS" and "READ STATUS".
 */
static int run_revoked(const char *host, const char *port, uint64_t length)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	struct rmp_lease_desc d;
	size_t n = pattern_len(length);
	int st, fails = 0;

	if (connect_ok(&r, "revoked", host, port, n) ||
	    do_alloc(&r, length, HOLD_TTL_S, 0, &d) ||
	    write_pattern(&r, &d, d.id) ||
	    read_check(&r, &d, d.id, "before the revocation")) {
		fails++;
		goto out;
	}
	print_lease(&d);
	if (wait_stdin(&r, true)) {
		say("FAIL: the server dropped the connection before the "
		    "checks: a revocation must not");
		fails++;
		goto out;
	}
	req.hdr.opcode = RMP_OP_RENEW;
	req.u.renew.id = d.id;
	req.u.renew.secret = d.secret;
	st = request(&r, &req, &rep);
	if (!st)
		st = rep.hdr.status;
	printf("RENEW %s\n", errname(st));
	fflush(stdout);
	if (st != -EKEYEXPIRED) {
		say("FAIL: RENEW of the revoked lease: %s, want -EKEYEXPIRED",
		    errname(st));
		fails++;
	}
	memset(r.data, 0, n);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, n);
	printf("READ %s\n", wc_str(st));
	fflush(stdout);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: READ with the revoked rkey -> %s", wc_str(st));
	} else {
		say("FAIL: READ with the revoked rkey: %s, want %s",
		    wc_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		if (st == IBV_WC_SUCCESS)
			hexdump("bytes read", r.data, n < 64 ? n : 64);
		fails++;
	}
out:
	raw_close(&r);
	say("revoked: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* ----------------------------------------------------------- freerace */

#define FREERACE_LATE_MS 5000 /* old key still working after the reply */
#define FREERACE_READ_MS 1000 /* a READ not answered by then: cut off */

struct freerace_tally {
	uint64_t reads, late;   /* READs that succeeded; after the reply */
	uint64_t refused;       /* rounds ended by a remote access error */
	uint64_t cut;           /* ... by a READ cut off (never answered) */
};

/* freerace_content -- what the lease holds: its id in the first 8 bytes
 * (ids are never reused, so a zeroed or another lease's extent cannot
 * pass), pattern(id) after them. */
static void freerace_content(uint8_t *p, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i, id);
	memcpy(p, &id, sizeof(id));
}

/* freerace_check -- data[0..n) is own[0..n), the lease's content
 * (complete: a READ that succeeded) or, for a READ that failed, holds no
 * byte but its own and the zeroes the buffer was cleared to. 0, or 1
 * (printed). */
static int freerace_check(const struct raw *r, const uint8_t *own, size_t n,
			  bool complete)
{
	for (size_t i = 0; i < n; i++) {
		if (r->data[i] == own[i] || (!complete && !r->data[i]))
			continue;
		say("FAIL: a READ with the freed lease's rkey (%s) put byte "
		    "%zu = %#x, the lease's own is %#x: %s", complete ?
		    "completed" : "failed", i, r->data[i], own[i],
		    i < sizeof(uint64_t) ?
			    "another lease's or a zeroed extent" :
			    "not this lease's content");
		hexdump("bytes read", r->data, n < 64 ? n : 64);
		return 1;
	}
	return 0;
}

/* freerace_round -- one lease on a connection of its own: ALLOC, WRITE
 * its content, send FREE and, without waiting for the reply, READ with
 * the lease's rkey back to back until a READ fails. Every READ that
 * succeeds must see the lease's own bytes; the failing one must have
 * delivered nothing else. It fails by a remote access error, or, when
 * the invalidation cut a READ's response short, it is never answered
 * (Soft-RoCE stops sending the response and drops the retries), or its
 * retries run out. 0, or 1 (printed). */
static int freerace_round(const char *host, const char *port,
			  struct freerace_tally *t)
{
	struct raw r = { .retry_count = 6 }; /* as librmpool */
	struct rmp_msg req = { 0 };
	struct rmp_lease_desc d;
	uint64_t replied_at = 0;
	uint8_t own[LEASE_LEN];
	size_t n = LEASE_LEN;
	int st, fail = 1;

	if (connect_ok(&r, "freerace", host, port, n) ||
	    do_alloc(&r, n, 60, 0, &d))
		goto out;
	freerace_content(own, n, d.id);
	memcpy(r.data, own, n);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, d.addr, d.rkey, n);
	if (st != IBV_WC_SUCCESS) {
		say("FAIL: RDMA WRITE to the lease: %s", wc_str(st));
		goto out;
	}
	req.hdr.opcode = RMP_OP_FREE;
	req.u.free.id = d.id;
	req.u.free.secret = d.secret;
	if (post_request(&r, &req))
		goto out;
	for (;;) {
		bool replied = r.rx_count > 0;

		if (replied && !replied_at)
			replied_at = now_ms();
		memset(r.data, 0, n);
		st = rdma_op_within(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, n,
				    FREERACE_READ_MS);
		if (freerace_check(&r, own, n, st == IBV_WC_SUCCESS))
			goto out;
		if (st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_RETRY_EXC_ERR ||
		    st < 0)
			break;
		if (st != IBV_WC_SUCCESS) {
			say("FAIL: READ after the FREE (rkey %#x, FREE reply "
			    "%s): %s, want success, %s or %s", d.rkey,
			    replied ? "in" : "not in yet", wc_str(st),
			    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR),
			    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
			goto out;
		}
		t->reads++;
		t->late += replied;
		if (replied_at && now_ms() - replied_at > FREERACE_LATE_MS) {
			say("FAIL: the rkey still worked %d ms after the FREE "
			    "was answered", FREERACE_LATE_MS);
			goto out;
		}
	}
	if (st == IBV_WC_REM_ACCESS_ERR)
		t->refused++;
	else
		t->cut++;
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* run_freerace -- `rounds` freerace rounds. Two of these at once reuse
 * each other's extents, so a key that outlived its FREE would show the
 * other's bytes, or the zeroes the extent gets before reuse. */
static int run_freerace(const char *host, const char *port, uint64_t rounds)
{
	struct freerace_tally t = { 0 };

	for (uint64_t i = 0; i < rounds; i++)
		if (freerace_round(host, port, &t)) {
			say("freerace: FAIL in round %" PRIu64, i + 1);
			return 1;
		}
	say("ok: %" PRIu64 " rounds; %" PRIu64 " READs with a freed lease's "
	    "rkey saw only its own bytes (%" PRIu64 " of them after the FREE "
	    "reply); then %" PRIu64 " got %s and %" PRIu64 " were cut off "
	    "(no answer within %d ms, or %s) with no foreign byte delivered",
	    rounds, t.reads, t.late, t.refused,
	    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), t.cut, FREERACE_READ_MS,
	    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
	say("freerace: PASS");
	return 0;
}

/* --------------------------------------------------------------- fill */

/*
 * run_fill -- n leases of len bytes, as fast as credits allow: many
 * leases for the operator's listings. Then FILL_HOLD keeps the connection
 * until stdin says so (it must stay up); FILL_STALL stalls it as `stall`
 * does, so that the leases' revocations queue behind replies that meet
 * RNR (more than a connection may have in flight, with n > 64).
 * upto: a refusal ends the fill instead of failing it; "FILLED GOT
 * ERRNO DETAIL" says how many were granted and what the refusal was.
 */
/* What run_fill does once the leases are granted. */
enum fill_then { FILL_EXIT, FILL_HOLD, FILL_STALL };

static int run_fill(const char *host, const char *port, uint64_t n,
		    uint64_t len, uint32_t ttl_s, enum fill_then then,
		    bool upto)
{
	struct raw r = { 0 };
	uint64_t sent = 0, got = 0, t0;
	unsigned inflight = 0, detail = 0;
	int refused = 0;
	struct rmp_msg req, rep;
	bool transport;
	int ret, fail = 1;

	if (connect_ok(&r, "fill", host, port, 0))
		goto out;
	t0 = now_ms();
	while (refused ? inflight > 0 : got < n) {
		while (!refused && inflight < r.rep.credits &&
		       inflight < NRECV && sent < n) {
			memset(&req, 0, sizeof(req));
			req.hdr.opcode = RMP_OP_ALLOC;
			req.u.alloc.length = len;
			req.u.alloc.ttl_s = ttl_s;
			req.u.alloc.access = RMP_ACC_ALL;
			if (post_request(&r, &req))
				goto out;
			inflight++;
			sent++;
		}
		ret = next_reply(&r, &rep, TIMEOUT_MS);
		if (ret) {
			say("FAIL: no reply after %" PRIu64 " leases: %s", got,
			    errname(ret));
			goto out;
		}
		inflight--;
		if (upto && rep.hdr.opcode == RMP_OP_ALLOC && rep.hdr.status) {
			/* The first refusal ends the fill; the ALLOCs in
			 * flight are still counted. */
			if (!refused) {
				refused = rep.hdr.status;
				detail = RMP_MSG_DETAIL(rep.hdr.flags);
			}
			continue;
		}
		if (rep.hdr.opcode != RMP_OP_ALLOC || rep.hdr.status) {
			say("FAIL: ALLOC %" PRIu64 ": %s %s", got + 1,
			    rmp_opcode_name(rep.hdr.opcode),
			    errname(rep.hdr.status));
			goto out;
		}
		got++;
	}
	say("fill: %" PRIu64 " leases of %" PRIu64 " bytes in %" PRIu64
	    " ms%s%s%s%s", got, len, now_ms() - t0, refused ? ", then " : "",
	    refused ? errname(refused) : "", detail ? ": " : "",
	    rmp_detail_str(detail));
	if (upto)
		printf("FILLED %" PRIu64 " %s %u\n", got,
		       refused ? errname(refused) : "OK", detail);
	else
		printf("FILLED %" PRIu64 "\n", got);
	fflush(stdout);
	if (then == FILL_STALL) {
		unsigned nstat, extra;

		if (use_up_recvs(&r, 0, &nstat))
			goto out;
		send_unanswerable(&r, &extra);
		stalled(&r, nstat, extra);
	} else if (then == FILL_HOLD) {
		/* Keep the connection (and the keys) until told: it must
		 * stay up, whatever happens to the leases meanwhile. */
		if (wait_stdin(&r, true))
			goto out;
		ret = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || ret) {
			say("FAIL: STAT after the hold: %s",
			    transport ? "no reply" : errname(ret));
			goto out;
		}
		say("fill: the connection outlived the hold");
	}
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* -------------------------------------------------------------- alloc */

/* print_token -- "TOKEN rmp://HOST:PORT/ID-SECRET" of lease d on stdout
 * (what librmpool's rmp_lease_token gives). 0 or -1 (printed). */
static int print_token(const char *host, const char *port,
		       const struct rmp_lease_desc *d)
{
	struct rmp_token t = { .port = (uint16_t)atoi(port), .id = d->id,
			       .secret = d->secret };
	char buf[RMP_TOKEN_MAX];

	snprintf(t.host, sizeof(t.host), "%s", host);
	if (rmp_token_format(&t, buf, sizeof(buf)) < 0) {
		say("cannot format a token for host %s port %s", host, port);
		return -1;
	}
	printf("TOKEN %s\n", buf);
	fflush(stdout);
	return 0;
}

/*
 * run_alloc -- ALLOC of len bytes. With want: the ALLOC must fail with
 * want. With report: print "ALLOC STATUS DETAIL" (e.g. "ALLOC -EDQUOT 1")
 * and succeed whatever the status, as long as a reply came. With token:
 * print the lease's TOKEN line too.
 */
static int run_alloc(const char *host, const char *port, uint64_t len,
		     uint32_t ttl_s, bool free_it, int want, bool token,
		     bool report)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	struct rmp_lease_desc d;
	bool transport;
	unsigned detail;
	int st, fail = 1;

	if (connect_ok(&r, "alloc", host, port, pattern_len(len)))
		goto out;
	req.hdr.opcode = RMP_OP_ALLOC;
	req.u.alloc.length = len;
	req.u.alloc.ttl_s = ttl_s;
	req.u.alloc.access = RMP_ACC_ALL;
	/* A transport error (printed) counts as the status for --expect,
	 * e.g. -ENOTCONN when the server drops the connection. */
	st = request(&r, &req, &rep);
	if (st && report)
		goto out;
	if (st) {
		detail = 0;
		memset(&rep, 0, sizeof(rep));
	} else {
		st = rep.hdr.status;
		detail = RMP_MSG_DETAIL(rep.hdr.flags);
	}
	if (st == 0) {
		d = rep.u.lease;
		remember(&r, &d);
		if (d.length < len) {
			say("FAIL: ALLOC gave %" PRIu64 " bytes, asked %" PRIu64,
			    d.length, len);
			goto out;
		}
	} else if (rep.hdr.payload_len != 0) {
		say("FAIL: the refusal of the ALLOC (%s) carries %u payload "
		    "bytes", errname(st), rep.hdr.payload_len);
		goto out;
	}
	if (report) {
		printf("ALLOC %s %u\n", errname(st), detail);
		fflush(stdout);
		say("ALLOC of %" PRIu64 " bytes -> %s%s%s", len, errname(st),
		    detail ? ": " : "", rmp_detail_str(detail));
	} else if (want) {
		if (st == want) {
			say("ok: ALLOC of %" PRIu64 " bytes -> %s%s%s", len,
			    errname(st), detail ? ": " : "",
			    rmp_detail_str(detail));
			fail = 0;
		} else {
			say("FAIL: ALLOC of %" PRIu64 " bytes: %s, want %s",
			    len, errname(st), errname(want));
			if (st == 0)
				do_simple(&r, RMP_OP_FREE, d.id, &rep,
					  &transport);
		}
		goto out;
	} else if (st) {
		say("FAIL: ALLOC of %" PRIu64 " bytes: %s%s%s", len,
		    errname(st), detail ? ": " : "", rmp_detail_str(detail));
		goto out;
	}
	if (st == 0) {
		print_lease(&d);
		if (token && print_token(host, port, &d))
			goto out;
	}
	if (st == 0 && free_it) {
		if (write_pattern(&r, &d, d.id) ||
		    read_check(&r, &d, d.id, "after the WRITE"))
			goto out;
		st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
		if (transport || st) {
			say("FAIL: FREE: %s",
			    transport ? "no reply" : errname(st));
			goto out;
		}
		say("ok: lease %#" PRIx64 " written, read back and freed",
		    d.id);
	}
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* --------------------------------------------------------------- byid */

/* parse_lease_ref -- TOKEN (rmp://...) or ID SECRET at argv[*i]; advances
 * *i past it. false when neither. */
static bool parse_lease_ref(int argc, char **argv, int *i, uint64_t *id,
			    uint64_t *secret)
{
	struct rmp_token t;
	char *end;

	if (*i >= argc)
		return false;
	if (!strncmp(argv[*i], "rmp://", 6)) {
		if (rmp_token_parse(argv[*i], &t))
			return false;
		*id = t.id;
		*secret = t.secret;
		(*i)++;
		return true;
	}
	if (*i + 1 >= argc)
		return false;
	errno = 0;
	*id = strtoull(argv[*i], &end, 0);
	if (errno || *end || end == argv[*i])
		return false;
	*secret = strtoull(argv[*i + 1], &end, 0);
	if (errno || *end || end == argv[*i + 1])
		return false;
	*i += 2;
	return true;
}

/* refusal_ok -- an error reply: status want, detail want_detail (< 0:
 * any), and nothing else (no payload: no lease, no rkey). 0 or 1. */
static int refusal_ok(const struct rmp_msg *rep, const char *what, int want,
		      int want_detail)
{
	unsigned detail = RMP_MSG_DETAIL(rep->hdr.flags);

	if (rep->hdr.status != want) {
		say("FAIL: %s: %s%s%s, want %s", what,
		    errname(rep->hdr.status), detail ? ": " : "",
		    rmp_detail_str(detail), errname(want));
		return 1;
	}
	if (want_detail >= 0 && detail != (unsigned)want_detail) {
		say("FAIL: %s: %s with detail %u (%s), want detail %d (%s)",
		    what, errname(want), detail, rmp_detail_str(detail),
		    want_detail, rmp_detail_str((unsigned)want_detail));
		return 1;
	}
	if (rep->hdr.payload_len) {
		say("FAIL: %s: the refusal carries %u payload bytes", what,
		    rep->hdr.payload_len);
		return 1;
	}
	say("ok: %s -> %s (detail %u%s%s); no lease, no rkey given", what,
	    errname(want), detail, detail ? ": " : "", rmp_detail_str(detail));
	return 0;
}

/*
 * run_byid -- ATTACH, RENEW or FREE of a lease by id and secret from a
 * connection of its own. Success prints, for ATTACH, the LEASE line and
 * "ATTACH access=A holders=N ttl_ms=T" (with read: READ 8 bytes at
 * offset 0 and "VALUE V" as a decimal u64), for RENEW "RENEW
 * ttl_ms=T", for FREE "FREE ok". With want (non-zero) the request must
 * be refused with it (and want_detail, unless < 0) and give nothing.
 */
static int run_byid(const char *host, const char *port, const char *op,
		    uint64_t id, uint64_t secret, uint32_t ttl_s,
		    uint32_t access, uint32_t flags, int want, int want_detail,
		    bool do_read)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	char what[96];
	uint64_t v;
	int st, fail = 1;

	if (connect_ok(&r, "byid", host, port, LEASE_LEN))
		goto out;
	if (!strcmp(op, "attach")) {
		req.hdr.opcode = RMP_OP_ATTACH;
		req.u.attach.id = id;
		req.u.attach.secret = secret;
		req.u.attach.access = access;
		req.u.attach.flags = flags;
	} else if (!strcmp(op, "renew")) {
		req.hdr.opcode = RMP_OP_RENEW;
		req.u.renew.id = id;
		req.u.renew.secret = secret;
		req.u.renew.ttl_s = ttl_s;
	} else {
		req.hdr.opcode = RMP_OP_FREE;
		req.u.free.id = id;
		req.u.free.secret = secret;
	}
	snprintf(what, sizeof(what), "%s of lease %#" PRIx64 " as tenant %s",
		 rmp_opcode_name(req.hdr.opcode), id,
		 raw_tenant()[0] ? raw_tenant() : "(anonymous)");
	if (request(&r, &req, &rep))
		goto out; /* printed */
	st = rep.hdr.status;
	if (want) {
		fail = refusal_ok(&rep, what, want, want_detail);
		goto out;
	}
	if (st) {
		unsigned detail = RMP_MSG_DETAIL(rep.hdr.flags);

		say("FAIL: %s: %s%s%s", what, errname(st), detail ? ": " : "",
		    rmp_detail_str(detail));
		goto out;
	}
	switch (req.hdr.opcode) {
	case RMP_OP_ATTACH:
		if (rep.u.lease.id != id) {
			say("FAIL: %s: the reply describes lease %#" PRIx64,
			    what, rep.u.lease.id);
			goto out;
		}
		print_lease(&rep.u.lease);
		printf("ATTACH access=%#x holders=%u ttl_ms=%" PRIu64 "\n",
		       rep.u.lease.access, rep.u.lease.holders,
		       rep.u.lease.ttl_ms);
		fflush(stdout);
		if (do_read) {
			st = rdma_op(&r, IBV_WR_RDMA_READ, rep.u.lease.addr,
				     rep.u.lease.rkey, 8);
			if (st != IBV_WC_SUCCESS) {
				say("FAIL: READ of the attached lease: %s",
				    wc_str(st));
				goto out;
			}
			memcpy(&v, r.data, sizeof(v));
			printf("VALUE %" PRIu64 "\n", v);
			fflush(stdout);
		}
		break;
	case RMP_OP_RENEW:
		printf("RENEW ttl_ms=%" PRIu64 "\n", rep.u.renew_rep.ttl_ms);
		fflush(stdout);
		break;
	default:
		printf("FREE ok\n");
		fflush(stdout);
		break;
	}
	say("ok: %s", what);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* ------------------------------------------------------------ rowrite */

/*
 * run_rowrite -- ATTACH a lease read-only: the key's access must say
 * READ only; an RDMA READ with it works, an RDMA WRITE of 8 bytes at
 * offset 0 must complete with a remote access error (the NIC refuses:
 * no library check is involved).
 */
static int run_rowrite(const char *host, const char *port, uint64_t id,
		       uint64_t secret)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	struct rmp_lease_desc d;
	uint64_t v;
	int st, fail = 1;

	if (connect_ok(&r, "rowrite", host, port, LEASE_LEN))
		goto out;
	req.hdr.opcode = RMP_OP_ATTACH;
	req.u.attach.id = id;
	req.u.attach.secret = secret;
	req.u.attach.access = RMP_ACC_READ;
	if (request(&r, &req, &rep))
		goto out;
	if (rep.hdr.status) {
		say("FAIL: read-only ATTACH: %s", errname(rep.hdr.status));
		goto out;
	}
	d = rep.u.lease;
	if (d.access != RMP_ACC_READ) {
		say("FAIL: read-only ATTACH gave a key with access %#x", d.access);
		goto out;
	}
	say("read-only key %#x to lease %#" PRIx64 " (holders %u, keys %s)",
	    d.rkey, d.id, d.holders, keys_mode_str(r.rep.keys_mode));
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, 8);
	if (st != IBV_WC_SUCCESS) {
		say("FAIL: READ with the read-only key: %s", wc_str(st));
		goto out;
	}
	memcpy(&v, r.data, sizeof(v));
	say("ok: READ with the read-only key: value %" PRIu64, v);
	printf("VALUE %" PRIu64 "\n", v);
	fflush(stdout);
	memset(r.data, 0xee, 8);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, d.addr, d.rkey, 8);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: WRITE with the read-only key -> %s",
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		printf("WRITE %s\n", ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fflush(stdout);
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: an RDMA WRITE with a read-only key succeeded");
	} else {
		say("FAIL: WRITE with the read-only key: %s, want %s",
		    wc_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	say("rowrite: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* --------------------------------------------------------------- auth */

/* auth_send -- AUTH with proof; 0 with *rep, or a transport error. */
static int auth_send(struct raw *r, const uint8_t proof[RMP_PROOF_LEN],
		     struct rmp_msg *rep)
{
	struct rmp_msg req = { 0 };

	req.hdr.opcode = RMP_OP_AUTH;
	memcpy(req.u.auth.proof, proof, RMP_PROOF_LEN);
	return request(r, &req, rep);
}

/*
 * expect_closed -- after a refused first message: an ALLOC sent now gets
 * no answer (certainly no lease), and the server closes the connection
 * within 5 s. 0 or the failed checks (printed).
 */
static int expect_closed(struct raw *r)
{
	struct rmp_msg req = { 0 }, rep;
	uint64_t t0 = now_ms(), deadline = t0 + 5000;
	int fails = 0;

	req.hdr.opcode = RMP_OP_ALLOC;
	req.u.alloc.length = LEASE_LEN;
	req.u.alloc.ttl_s = 60;
	req.u.alloc.access = RMP_ACC_ALL;
	/* Not waited for: a SEND to a QP the server tore down only ends
	 * when its retries run out. */
	if (!r->disconnected && !r->qp_error && post_request(r, &req))
		say("note: the ALLOC after the refusal could not be posted "
		    "(the connection is going)");
	while (now_ms() < deadline) {
		drain_cq(r);
		while (r->rx_count) {
			struct rx_msg *x = &r->rx[r->rx_head];

			r->rx_head = (r->rx_head + 1) % NRECV;
			r->rx_count--;
			if (parse_reply(x, &rep)) {
				say("FAIL: an undecodable message after the "
				    "refusal");
			} else if (rep.hdr.status == 0) {
				say("FAIL: %s after the refusal succeeded%s",
				    rmp_opcode_name(rep.hdr.opcode),
				    rep.hdr.opcode == RMP_OP_ALLOC ?
				    ": a lease was granted" : "");
			} else {
				say("FAIL: %s after the refusal answered %s "
				    "(nothing more should be answered)",
				    rmp_opcode_name(rep.hdr.opcode),
				    errname(rep.hdr.status));
			}
			fails++;
		}
		if (r->disconnected)
			break;
		pump(r, 100, -1);
	}
	if (!r->disconnected) {
		say("FAIL: the server did not close the connection within "
		    "5 s of the refusal");
		fails++;
	} else {
		say("ok: no answer to an ALLOC after the refusal; the server "
		    "closed the connection after %" PRIu64 " ms",
		    now_ms() - t0);
	}
	return fails;
}

/* auth_key -- the env tenant's key (RMPOOL_KEY_FILE). 0 or -1. */
static int auth_key(uint8_t key[RMP_KEY_MAX], size_t *len)
{
	const char *file = getenv("RMPOOL_KEY_FILE");
	char err[256];

	if (!raw_tenant()[0] || !file) {
		say("auth: needs RMPOOL_TENANT and RMPOOL_KEY_FILE");
		return -1;
	}
	if (rmp_auth_init() || rmp_key_load(file, key, len, err, sizeof(err))) {
		say("auth: %s", err);
		return -1;
	}
	return 0;
}

/*
 * run_auth -- refused first messages; each must be refused with its
 * status and detail, give nothing, and end the connection:
 *   wrong-key    AUTH with a proof made with another key: -EKEYREJECTED,
 *                RMP_DETAIL_BAD_PROOF
 *   replay       a proof accepted on connection 1, sent again on
 *                connection 2: -EKEYREJECTED, RMP_DETAIL_REPLAYED
 *   before-auth  ALLOC as the first message: -EACCES,
 *                RMP_DETAIL_NOT_AUTHED
 *   relay        the right key and nonce, but the proof made for another
 *                server (this one's address with its last byte changed):
 *                what a relay forwards from the client it lured.
 *                -EKEYREJECTED, RMP_DETAIL_BAD_PROOF
 */
static int run_auth(const char *host, const char *port, const char *mode)
{
	struct raw r = { 0 }, r1 = { 0 };
	uint8_t key[RMP_KEY_MAX], proof[RMP_PROOF_LEN];
	uint8_t server[RMP_ENDPOINT_LEN];
	struct rmp_msg req = { 0 }, rep;
	char name[RMP_NAME_MAX + 1];
	size_t key_len = 0;
	int reason = 0, fails = 1;

	snprintf(name, sizeof(name), "rmp-raw-auth");
	if (strcmp(mode, "before-auth") && auth_key(key, &key_len))
		goto out;
	if (!strcmp(mode, "replay")) {
		/* Connection 1: the proof is accepted. */
		if (connect_as(&r1, "auth", host, port, 0, &reason, false)) {
			say("FAIL: connection 1 was not established");
			goto out;
		}
		if (raw_server(&r1, server))
			goto out;
		rmp_auth_proof(key, key_len, r1.rep.nonce, r1.rep.version,
			       raw_tenant(), name, server, proof);
		if (auth_send(&r1, proof, &rep))
			goto out;
		if (rep.hdr.status) {
			say("FAIL: connection 1: AUTH with the right key: %s",
			    errname(rep.hdr.status));
			goto out;
		}
		if (do_simple(&r1, RMP_OP_STAT, 0, &rep, &(bool){ false })) {
			say("FAIL: connection 1: STAT after AUTH failed");
			goto out;
		}
		say("ok: connection 1 authenticated and served");
	}
	if (connect_as(&r, "auth", host, port, 0, &reason, false)) {
		say("FAIL: the connection was not established");
		goto out;
	}
	if (!strcmp(mode, "wrong-key") || !strcmp(mode, "relay")) {
		/* One input of the proof wrong: the key, or the server. */
		bool relay = !strcmp(mode, "relay");

		if (raw_server(&r, server))
			goto out;
		if (relay)
			server[15] ^= 0x01; /* the last address byte */
		else
			key[0] ^= 0x5a;
		rmp_auth_proof(key, key_len, r.rep.nonce, r.rep.version,
			       raw_tenant(), name, server, proof);
		if (auth_send(&r, proof, &rep))
			goto out;
		fails = refusal_ok(&rep, relay ? "AUTH with a proof for "
				   "another server" : "AUTH with a wrong key",
				   -EKEYREJECTED, RMP_DETAIL_BAD_PROOF);
	} else if (!strcmp(mode, "replay")) {
		if (!memcmp(r.rep.nonce, r1.rep.nonce, RMP_NONCE_LEN)) {
			say("FAIL: connection 2 got the nonce of connection 1");
			goto out;
		}
		/* proof: connection 1's, still open */
		if (auth_send(&r, proof, &rep))
			goto out;
		fails = refusal_ok(&rep, "AUTH with connection 1's proof",
				   -EKEYREJECTED, RMP_DETAIL_REPLAYED);
	} else {
		req.hdr.opcode = RMP_OP_ALLOC;
		req.u.alloc.length = LEASE_LEN;
		req.u.alloc.ttl_s = 60;
		req.u.alloc.access = RMP_ACC_ALL;
		if (request(&r, &req, &rep))
			goto out;
		fails = refusal_ok(&rep, "ALLOC before AUTH", -EACCES,
				   RMP_DETAIL_NOT_AUTHED);
	}
	fails += expect_closed(&r);
out:
	rmp_wipe(key, sizeof(key));
	rmp_wipe(proof, sizeof(proof));
	raw_close(&r1);
	raw_close(&r);
	say("auth %s: %s", mode, fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* --------------------------------------------------------- tstat, idle */

/* run_tstat -- one STAT; print the tenant's figures and the totals. */
static int run_tstat(const char *host, const char *port)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "tstat", host, port, 0))
		goto out;
	st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
	if (transport || st) {
		say("FAIL: STAT: %s", transport ? "no reply" : errname(st));
		goto out;
	}
	printf("tenant_bytes %" PRIu64 " tenant_leases %" PRIu64
	       " quota_bytes %" PRIu64 " quota_leases %" PRIu64
	       " tenant_connections %" PRIu32 " quota_connections %" PRIu32
	       " leases %" PRIu64 " keys %" PRIu64 "\n",
	       rep.u.stat.tenant_bytes, rep.u.stat.tenant_leases,
	       rep.u.stat.quota_bytes, rep.u.stat.quota_leases,
	       rep.u.stat.tenant_connections, rep.u.stat.quota_connections,
	       rep.u.stat.leases, rep.u.stat.keys);
	fflush(stdout);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* refused_as -- send req; 0 when its reply status is want (printed as
 * "voided: WHAT -> STATUS"), 1 otherwise. */
static int refused_as(struct raw *r, struct rmp_msg *req, const char *what,
		      int want)
{
	struct rmp_msg rep;
	int st = request(r, req, &rep) ? -EIO : rep.hdr.status;

	say("voided: %s -> %s", what, errname(st));
	return st != want;
}

/* run_voided -- see the header: a connection whose proof a reload voided
 * is refused everything, and closed (its keys with it) after grace_ms. */
static int run_voided(const char *host, const char *port, uint64_t grace_ms)
{
	static const unsigned ops[] = { RMP_OP_ALLOC, RMP_OP_RENEW,
					RMP_OP_FREE, RMP_OP_ATTACH,
					RMP_OP_STAT };
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	struct rmp_msg req;
	uint64_t t0, cut = 0, reads = 0;
	int bad = 0, fail = 1;

	if (connect_ok(&r, "voided", host, port, LEASE_LEN) ||
	    do_alloc(&r, LEASE_LEN, HOLD_TTL_S, 0, &d) ||
	    write_pattern(&r, &d, d.id))
		goto out;
	print_lease(&d);
	/* Without a grace the reload closes it before the line comes. */
	wait_stdin(&r, false);
	t0 = now_ms();
	if (grace_ms) {
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			memset(&req, 0, sizeof(req));
			req.hdr.opcode = (uint16_t)ops[i];
			switch (ops[i]) {
			case RMP_OP_ALLOC:
				req.u.alloc.length = LEASE_LEN;
				req.u.alloc.ttl_s = 60;
				req.u.alloc.access = RMP_ACC_ALL;
				break;
			case RMP_OP_RENEW:
				req.u.renew.id = d.id;
				req.u.renew.secret = secret_of(&r, d.id);
				req.u.renew.ttl_s = 60;
				break;
			case RMP_OP_FREE:
				req.u.free.id = d.id;
				req.u.free.secret = secret_of(&r, d.id);
				break;
			case RMP_OP_ATTACH:
				req.u.attach.id = d.id;
				req.u.attach.secret = secret_of(&r, d.id);
				req.u.attach.access = RMP_ACC_READ;
				break;
			}
			bad += refused_as(&r, &req, rmp_opcode_name(ops[i]),
					  -EKEYREVOKED);
		}
	}
	/* Read until the server disconnects us (a READ under way then may
	 * not complete at all: it is given a second). */
	while (now_ms() - t0 < grace_ms + 10000) {
		pump(&r, 0, -1);
		if (r.disconnected || r.qp_error)
			break;
		memset(r.data, 0, LEASE_LEN);
		if (rdma_op_within(&r, IBV_WR_RDMA_READ, d.addr, d.rkey,
				   pattern_len(d.length), 1000) !=
		    IBV_WC_SUCCESS) {
			pump(&r, 1000, -1);
			break;
		}
		if (check_pattern(&r, pattern_len(d.length), d.id)) {
			bad++;
			break;
		}
		reads++;
		pump(&r, 100, -1);
	}
	/* Closed before the line came (no grace): 0. */
	cut = r.disconnected ? (r.lost_ms > t0 ? r.lost_ms - t0 : 0) :
	      now_ms() - t0;
	say("voided: %" PRIu64 " reads intact, then the connection was %s "
	    "%" PRIu64 " ms after the reload (rotate_grace %" PRIu64 " ms)",
	    reads, r.disconnected ? "closed" : r.qp_error ? "failed" :
	    "STILL UP", cut, grace_ms);
	if (!r.disconnected && !r.qp_error)
		bad++;
	else if (cut > grace_ms + 1500 || cut + 1000 < grace_ms)
		bad++; /* the line comes a moment after the reload */
	if (grace_ms && !reads)
		bad++;
	fail = bad != 0;
out:
	raw_close(&r);
	say("voided: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/*
 * run_silent -- connect and never send AUTH: the server must close the
 * connection (within seconds s); 0 when it did.
 */
static int run_silent(const char *host, const char *port, uint32_t secs)
{
	struct raw r = { 0 };
	uint64_t deadline;
	int reason = 0, ret, fail = 1;

	ret = connect_as(&r, "silent", host, port, 0, &reason, false);
	if (ret) {
		say("silent: %s", ret == 1 ? "rejected" : "no connection");
		goto out;
	}
	deadline = now_ms() + (uint64_t)secs * 1000;
	while (!r.disconnected && now_ms() < deadline)
		pump(&r, 200, -1);
	say("silent: %s", r.disconnected ? "closed by the server" :
	    "FAIL: still open");
	fail = !r.disconnected;
out:
	raw_close(&r);
	return fail;
}

/* run_idle -- connect, print "CONNECTED", hold the connection until a
 * line or EOF on stdin; fails if the server drops it meanwhile. */
static int run_idle(const char *host, const char *port)
{
	struct raw r = { 0 };
	int fail = 1;

	if (connect_ok(&r, "idle", host, port, 0))
		goto out;
	printf("CONNECTED\n");
	fflush(stdout);
	if (wait_stdin(&r, true))
		goto out;
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* ------------------------------------------------------------ connect */

/* A connect expectation: a reject reason (0 = served), or with this bit
 * an AUTH refused with the detail below it. */
#define WANT_AUTH 0x10000

static int run_connect(const char *host, const char *port, int want)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int reason = 0, ret, st, fail = 1;

	ret = connect_named(&r, "connect", host, port, 0, &reason);
	if (ret == 0 && want == 0) {
		st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || st)
			say("FAIL: connected, but STAT: %s",
			    transport ? "no reply" : errname(st));
		else {
			say("ok: connected and served");
			fail = 0;
		}
	} else if (ret == 0) {
		say("FAIL: connected, want %s", want & WANT_AUTH ?
		    rmp_detail_str((unsigned)want & 0xff) :
		    rmp_reject_reason_str((unsigned)want));
	} else if (ret == 1 && reason == want) {
		say("ok: rejected: %s", rmp_reject_reason_str((unsigned)want));
		fail = 0;
	} else if (ret == 1) {
		say("FAIL: rejected: %s, want %s", reason < 0 ?
		    "(undecodable reject data)" :
		    rmp_reject_reason_str((unsigned)reason), want ?
		    want & WANT_AUTH ? "an AUTH refused" :
		    rmp_reject_reason_str((unsigned)want) : "accepted");
	} else if (r.auth_status && (want & WANT_AUTH) &&
		   r.auth_detail == ((unsigned)want & 0xff)) {
		say("ok: accepted, AUTH refused: %s: %s",
		    errname(r.auth_status), rmp_detail_str(r.auth_detail));
		fail = 0;
	} else if (r.auth_status) {
		say("FAIL: AUTH refused (%s), want %s", rmp_detail_str(
		    r.auth_detail), want & WANT_AUTH ? rmp_detail_str(
		    (unsigned)want & 0xff) : want ? rmp_reject_reason_str(
		    (unsigned)want) : "served");
	} else {
		say("FAIL: the connect failed");
	}
	raw_close(&r);
	return fail;
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
	       " keys %s quarantined %" PRIu64 " zeroing %" PRIu64 "\n",
	       rep.u.stat.pool_bytes, rep.u.stat.free_bytes,
	       rep.u.stat.leases, keys_mode_str(rep.u.stat.keys_mode),
	       rep.u.stat.quarantined_bytes, rep.u.stat.zeroing_bytes);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* wall_str -- the wall clock time at CLOCK_MONOTONIC ms `mono_ms`, as
 * HH:MM:SS.mmm (to line up with `date +%T.%3N` in a test's output). */
static const char *wall_str(uint64_t mono_ms, char *buf, size_t len)
{
	struct timespec rt;
	struct tm tm;
	int64_t ms;
	time_t sec;

	clock_gettime(CLOCK_REALTIME, &rt);
	ms = (int64_t)rt.tv_sec * 1000 + rt.tv_nsec / 1000000 -
	     (int64_t)(now_ms() - mono_ms);
	sec = (time_t)(ms / 1000);
	localtime_r(&sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min,
		 tm.tm_sec, (int)(ms % 1000));
	return buf;
}

/* run_statloop -- STATs back to back on one connection for `seconds`;
 * prints n, median, p99 and max latency (µs) and the slowest ones. */
/*
 * run_churn -- ALLOC and FREE leases of len back to back for seconds: the
 * ALLOCs must succeed or get -EDQUOT (the tenant's ending bytes at their
 * bound), never -ENOSPC (freed bytes in their grace filling the pool).
 */
static int run_churn(const char *host, const char *port, uint64_t len,
		     uint32_t seconds)
{
	uint64_t end, ok = 0, dquot = 0, nospc = 0;
	struct rmp_msg req, rep;
	struct raw r = { 0 };
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "churn", host, port, 0))
		goto out;
	end = now_us() + (uint64_t)seconds * 1000000;
	while (now_us() < end) {
		req = (struct rmp_msg){ .hdr.opcode = RMP_OP_ALLOC };
		req.u.alloc.length = len;
		req.u.alloc.ttl_s = 60;
		req.u.alloc.access = RMP_ACC_ALL;
		if (request(&r, &req, &rep))
			goto out;
		st = rep.hdr.status;
		if (st == -EDQUOT) {
			dquot++;
			continue;
		}
		if (st == -ENOSPC) {
			nospc++;
			continue;
		}
		if (st) {
			say("FAIL: ALLOC: %s", errname(st));
			goto out;
		}
		remember(&r, &rep.u.lease);
		st = do_simple(&r, RMP_OP_FREE, rep.u.lease.id, &rep,
			       &transport);
		if (transport || st) {
			say("FAIL: FREE: %s", transport ? "no reply" :
			    errname(st));
			goto out;
		}
		ok++;
	}
	say("churn: %" PRIu64 " ALLOC+FREE, %" PRIu64 " -EDQUOT, %" PRIu64
	    " -ENOSPC", ok, dquot, nospc);
	fail = !ok || nospc;
out:
	raw_close(&r);
	say("churn: %s", fail ? "FAIL" : "PASS");
	return fail;
}

static int run_statloop(const char *host, const char *port, uint32_t seconds)
{
	struct { uint64_t us, at; } slow[5] = { { 0, 0 } };
	struct raw r = { 0 };
	uint64_t *lat = NULL, t0, end;
	size_t n = 0, cap = 0;
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "statloop", host, port, 0))
		goto out;
	t0 = now_us();
	end = t0 + (uint64_t)seconds * 1000000;
	while (now_us() < end) {
		uint64_t t = now_us(), dt;
		unsigned k;

		st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		dt = now_us() - t;
		if (transport || st) {
			say("FAIL: STAT #%zu: %s", n + 1,
			    transport ? "no reply" : errname(st));
			goto out;
		}
		if (n == cap) {
			uint64_t *p;

			cap = cap ? 2 * cap : 4096;
			p = realloc(lat, cap * sizeof(*lat));
			if (!p) {
				say("out of memory");
				goto out;
			}
			lat = p;
		}
		lat[n++] = dt;
		/* the five slowest, slowest first */
		for (k = 0; k < 5 && slow[k].us >= dt; k++)
			;
		if (k < 5) {
			memmove(&slow[k + 1], &slow[k],
				(4 - k) * sizeof(slow[0]));
			slow[k].us = dt;
			slow[k].at = t - t0;
		}
	}
	if (n == 0) {
		say("FAIL: no STAT in %u s", seconds);
		goto out;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	for (unsigned k = 0; k < 5 && slow[k].us; k++) {
		char wall[32];

		say("slow STAT: %" PRIu64 " us, sent %.3f s into the loop, "
		    "at %s", slow[k].us, (double)slow[k].at / 1e6,
		    wall_str((t0 + slow[k].at) / 1000, wall, sizeof(wall)));
	}
	printf("statloop: n=%zu median_us=%" PRIu64 " p99_us=%" PRIu64
	       " max_us=%" PRIu64 "\n", n, lat[n / 2], lat[n * 99 / 100],
	       lat[n - 1]);
	fflush(stdout);
	fail = 0;
out:
	free(lat);
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

/* parse_reason -- "ok" (0), a reject reason name or number, or
 * "auth:" and the name of an AUTH refusal's detail (WANT_AUTH). */
static bool parse_reason(const char *s, int *out)
{
	static const char *const details[] = {
		[RMP_DETAIL_BAD_PROOF] = "wrong-key",
		[RMP_DETAIL_TENANT_CONNECTIONS] = "tenant-full",
		[RMP_DETAIL_PEER_CONNECTIONS] = "peer-full",
		[RMP_DETAIL_NETWORK] = "network",
	};
	static const char *const names[] = {
		"ok", "bad-request", "proto", "unknown-tenant", "full",
		"draining", "internal", "cooldown", "anonymous",
		"tenant-full", "peer-full", "network",
	};
	uint64_t v;

	if (!strncmp(s, "auth:", 5)) {
		for (int i = 0; i < (int)(sizeof(details) / sizeof(details[0]));
		     i++)
			if (details[i] && !strcmp(s + 5, details[i])) {
				*out = WANT_AUTH | i;
				return true;
			}
		return false;
	}
	if (!strcmp(s, "unknown-client")) { /* its protocol 2 name */
		*out = RMP_REJ_UNKNOWN_TENANT;
		return true;
	}

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(s, names[i])) {
			*out = i;
			return true;
		}
	if (!parse_u64(s, &v) || v > 0xffff)
		return false;
	*out = (int)v;
	return true;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: rmp-raw HOST PORT garbage|badconnect|oob|drainprobe\n"
		"       rmp-raw HOST PORT connect ok|REASON|auth:DETAIL\n"
		"       rmp-raw HOST PORT hold [--stat-every MS] "
		"[--len BYTES] [--flags F]\n"
		"       rmp-raw HOST PORT revoked [--len BYTES]\n"
		"       rmp-raw HOST PORT fill N LEN TTL_S [--hold|--stall] "
		"[--upto]\n"
		"       rmp-raw HOST PORT steal ADDR RKEY LEN "
		"[--expect-success]\n"
		"       rmp-raw HOST PORT guess ADDR RKEY N LEN\n"
		"       rmp-raw HOST PORT expire TTL_S [--within MS]\n"
		"       rmp-raw HOST PORT stall TTL_S\n"
		"       rmp-raw HOST PORT freerace ROUNDS\n"
		"       rmp-raw HOST PORT credits ROUNDS\n"
		"       rmp-raw HOST PORT flood SECONDS\n"
		"       rmp-raw HOST PORT alloc LEN TTL_S [--free] "
		"[--expect ERRNO] [--token] [--report]\n"
		"       rmp-raw HOST PORT byid attach|renew|free TOKEN|ID SECRET\n"
		"               [--ttl S] [--access N] [--exclusive] [--read]\n"
		"               [--expect ERRNO [--detail N]]\n"
		"       rmp-raw HOST PORT rowrite TOKEN|ID SECRET\n"
		"       rmp-raw HOST PORT auth "
		"wrong-key|replay|before-auth|relay\n"
		"       rmp-raw HOST PORT tstat|idle\n"
		"       rmp-raw HOST PORT free ID [ERRNO]\n"
		"       rmp-raw HOST PORT stat [COUNT]\n"
		"       rmp-raw HOST PORT silent SECONDS\n"
		"       rmp-raw HOST PORT voided GRACE_MS\n"
		"       rmp-raw HOST PORT churn LEN SECONDS\n"
		"       rmp-raw HOST PORT statloop SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *host, *port, *cmd;
	uint64_t a, b, c, d;

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
	if (!strcmp(cmd, "drainprobe") && argc == 4)
		return run_drainprobe(host, port);
	if (!strcmp(cmd, "connect") && argc == 5) {
		int want;

		if (!parse_reason(argv[4], &want))
			return usage();
		return run_connect(host, port, want);
	}
	if (!strcmp(cmd, "hold")) {
		uint64_t every = 0, len = LEASE_LEN, flags = 0;

		for (int i = 4; i < argc; i += 2) {
			if (i + 1 >= argc)
				return usage();
			if (!strcmp(argv[i], "--stat-every") &&
			    parse_u64(argv[i + 1], &every) && every > 0 &&
			    every < 600000)
				continue;
			if (!strcmp(argv[i], "--len") &&
			    parse_u64(argv[i + 1], &len) && len > 0 &&
			    len <= (1ull << 40))
				continue;
			if (!strcmp(argv[i], "--flags") &&
			    parse_u64(argv[i + 1], &flags) &&
			    flags <= UINT32_MAX)
				continue;
			return usage();
		}
		return run_hold(host, port, (int)every, len, (uint32_t)flags);
	}
	if (!strcmp(cmd, "revoked") && (argc == 4 || argc == 6)) {
		uint64_t len = LEASE_LEN;

		if (argc == 6 && (strcmp(argv[4], "--len") ||
				  !parse_u64(argv[5], &len) || len == 0 ||
				  len > (1ull << 40)))
			return usage();
		return run_revoked(host, port, len);
	}
	if (!strcmp(cmd, "fill") && argc >= 7 && argc <= 9) {
		enum fill_then then = FILL_EXIT;
		bool upto = false;

		for (int i = 7; i < argc; i++) {
			if (!strcmp(argv[i], "--hold") && then == FILL_EXIT)
				then = FILL_HOLD;
			else if (!strcmp(argv[i], "--stall") &&
				 then == FILL_EXIT)
				then = FILL_STALL;
			else if (!strcmp(argv[i], "--upto"))
				upto = true;
			else
				return usage();
		}
		if (!parse_u64(argv[4], &a) || a == 0 ||
		    !parse_u64(argv[5], &b) || b == 0 ||
		    !parse_u64(argv[6], &c) || c == 0 || c > UINT32_MAX)
			return usage();
		return run_fill(host, port, a, b, (uint32_t)c, then, upto);
	}
	if (!strcmp(cmd, "steal") && (argc == 7 || argc == 8)) {
		if (!parse_u64(argv[4], &a) || !parse_u64(argv[5], &b) ||
		    b > UINT32_MAX || !parse_u64(argv[6], &c) ||
		    (argc == 8 && strcmp(argv[7], "--expect-success")))
			return usage();
		return run_steal(host, port, a, (uint32_t)b, c, argc == 8);
	}
	if (!strcmp(cmd, "guess") && argc == 8) {
		if (!parse_u64(argv[4], &a) || !parse_u64(argv[5], &b) ||
		    b > UINT32_MAX || !parse_u64(argv[6], &c) ||
		    c == 0 || c > 100000 || !parse_u64(argv[7], &d) ||
		    d == 0 || d > (64u << 20))
			return usage();
		return run_guess(host, port, a, (uint32_t)b, (unsigned)c, d);
	}
	if (!strcmp(cmd, "expire") && (argc == 5 || argc == 7)) {
		b = 1500;
		if (!parse_u64(argv[4], &a) || a == 0 || a > 86400 ||
		    (argc == 7 && (strcmp(argv[5], "--within") ||
				   !parse_u64(argv[6], &b) || b > 600000)))
			return usage();
		return run_expire(host, port, (uint32_t)a, b);
	}
	if (!strcmp(cmd, "stall") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 86400)
			return usage();
		return run_stall(host, port, (uint32_t)a);
	}
	if (!strcmp(cmd, "voided") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a > 3600000)
			return usage();
		return run_voided(host, port, a);
	}
	if (!strcmp(cmd, "notsend") && argc == 5 &&
	    (!strcmp(argv[4], "imm") || !strcmp(argv[4], "inv")))
		return run_notsend(host, port, argv[4][1] == 'n');
	if (!strcmp(cmd, "freerace") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0)
			return usage();
		return run_freerace(host, port, a);
	}
	if (!strcmp(cmd, "credits") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0)
			return usage();
		return run_credits(host, port, a, 0);
	}
	if (!strcmp(cmd, "flood") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 3600)
			return usage();
		return run_credits(host, port, 0, (uint32_t)a);
	}
	if (!strcmp(cmd, "alloc") && argc >= 6) {
		bool free_it = false, token = false, report = false;
		int want = 0;

		if (!parse_u64(argv[4], &a) || a == 0 ||
		    !parse_u64(argv[5], &b) || b > UINT32_MAX)
			return usage();
		for (int i = 6; i < argc; i++) {
			if (!strcmp(argv[i], "--free"))
				free_it = true;
			else if (!strcmp(argv[i], "--token"))
				token = true;
			else if (!strcmp(argv[i], "--report"))
				report = true;
			else if (!strcmp(argv[i], "--expect") &&
				 i + 1 < argc && parse_errno(argv[i + 1],
							    &want))
				i++;
			else
				return usage();
		}
		if (report && want)
			return usage();
		return run_alloc(host, port, a, (uint32_t)b, free_it, want,
				 token, report);
	}
	if (!strcmp(cmd, "byid") && argc >= 6) {
		const char *op = argv[4];
		uint32_t ttl = 0, access = 0, flags = 0;
		int i = 5, want = 0, want_detail = -1;
		bool do_read = false;

		if (strcmp(op, "attach") && strcmp(op, "renew") &&
		    strcmp(op, "free"))
			return usage();
		if (!parse_lease_ref(argc, argv, &i, &a, &b))
			return usage();
		for (; i < argc; i++) {
			if (!strcmp(argv[i], "--exclusive")) {
				flags |= RMP_ATTACH_F_EXCLUSIVE;
			} else if (!strcmp(argv[i], "--read")) {
				do_read = true;
			} else if (i + 1 < argc && !strcmp(argv[i], "--ttl") &&
				   parse_u64(argv[i + 1], &c) &&
				   c <= UINT32_MAX) {
				ttl = (uint32_t)c;
				i++;
			} else if (i + 1 < argc &&
				   !strcmp(argv[i], "--access") &&
				   parse_u64(argv[i + 1], &c) &&
				   c <= RMP_ACC_ALL) {
				access = (uint32_t)c;
				i++;
			} else if (i + 1 < argc &&
				   !strcmp(argv[i], "--expect") &&
				   parse_errno(argv[i + 1], &want)) {
				i++;
			} else if (i + 1 < argc &&
				   !strcmp(argv[i], "--detail") &&
				   parse_u64(argv[i + 1], &c) && c <= 255) {
				want_detail = (int)c;
				i++;
			} else {
				return usage();
			}
		}
		if (want_detail >= 0 && !want)
			return usage();
		return run_byid(host, port, op, a, b, ttl, access, flags, want,
				want_detail, do_read);
	}
	if (!strcmp(cmd, "rowrite") && (argc == 5 || argc == 6)) {
		int i = 4;

		if (!parse_lease_ref(argc, argv, &i, &a, &b) || i != argc)
			return usage();
		return run_rowrite(host, port, a, b);
	}
	if (!strcmp(cmd, "auth") && argc == 5) {
		if (strcmp(argv[4], "wrong-key") && strcmp(argv[4], "replay") &&
		    strcmp(argv[4], "before-auth") && strcmp(argv[4], "relay"))
			return usage();
		return run_auth(host, port, argv[4]);
	}
	if (!strcmp(cmd, "tstat") && argc == 4)
		return run_tstat(host, port);
	if (!strcmp(cmd, "idle") && argc == 4)
		return run_idle(host, port);
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
	if (!strcmp(cmd, "silent") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 3600)
			return usage();
		return run_silent(host, port, (uint32_t)a);
	}
	if (!strcmp(cmd, "churn") && argc == 6) {
		if (!parse_u64(argv[4], &a) || a == 0 ||
		    !parse_u64(argv[5], &b) || b == 0 || b > 3600)
			return usage();
		return run_churn(host, port, a, (uint32_t)b);
	}
	if (!strcmp(cmd, "statloop") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 3600)
			return usage();
		return run_statloop(host, port, (uint32_t)a);
	}
	return usage();
}

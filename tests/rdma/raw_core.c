/* SPDX-License-Identifier: MIT */
/* raw_core.c -- rmp-raw: connections, messages, RDMA operations. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "raw.h"

const char *prog = "rmp-raw";

/* say -- "PROG: message" on stderr. Connection messages start with the
 * connection's label, which is PROG itself but for badconnect's cases:
 * that repetition is left out. */
void say(const char *fmt, ...)
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

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* errname -- "-EBADMSG" style text for a status (0 -> "0"). */
const char *errname(int st)
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

void hexdump(const char *label, const uint8_t *p, size_t len)
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

void drain_cq(struct raw *r)
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
				if (r->no_repost) {
					r->unposted[i] = true;
					continue;
				}
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
int pump(struct raw *r, int timeout_ms, int extra_fd)
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

void raw_close(struct raw *r)
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
int raw_connect(struct raw *r, const char *what, const char *host,
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

/* raw_tenant -- the tenant of the tests (RMPOOL_TENANT), "" = anonymous. */
const char *raw_tenant(void)
{
	const char *t = getenv("RMPOOL_TENANT");

	return t ? t : "";
}

/*
 * raw_server -- the server endpoint a proof names: the peer address of
 * our connection, as librmpool takes it. 0, or -1 (printed).
 */
int raw_server(struct raw *r, uint8_t out[RMP_ENDPOINT_LEN])
{
	if (rmp_auth_endpoint(rdma_get_peer_addr(r->id), out)) {
		say("%s: the server's address is not IPv4 or IPv6", r->what);
		return -1;
	}
	return 0;
}

/*
 * raw_auth -- the first message: AUTH with a nonce of ours and the proof
 * for both nonces and the server we reached (the key from
 * RMPOOL_KEY_FILE; none for anonymous), and the server's proof in the
 * reply checked, as librmpool does. 0 when the server accepted it and
 * proved the key, -1 otherwise (printed).
 */
static int raw_auth(struct raw *r, const char *name, const char *tenant)
{
	const char *file = getenv("RMPOOL_KEY_FILE");
	struct rmp_msg req = { 0 }, rep;
	uint8_t key[RMP_KEY_MAX], server[RMP_ENDPOINT_LEN];
	uint8_t want[RMP_PROOF_LEN];
	size_t key_len = 0;
	char err[256];

	req.hdr.opcode = RMP_OP_AUTH;
	rmp_auth_init();
	rmp_auth_random(req.u.auth.client_nonce,
			sizeof(req.u.auth.client_nonce));
	if (tenant[0]) {
		if (raw_server(r, server))
			return -1;
		if (rmp_auth_init() || !file ||
		    rmp_key_load(file, key, &key_len, err, sizeof(err))) {
			say("%s: no usable key for tenant %s: %s", r->what,
			    tenant, file ? err : "RMPOOL_KEY_FILE is not set");
			return -1;
		}
		rmp_auth_proof(RMP_AUTH_CLIENT, key, key_len, r->rep.nonce,
			       req.u.auth.client_nonce, r->rep.version,
			       tenant, name, server, req.u.auth.proof);
		rmp_auth_proof(RMP_AUTH_SERVER, key, key_len, r->rep.nonce,
			       req.u.auth.client_nonce, r->rep.version,
			       tenant, name, server, want);
		rmp_wipe(key, sizeof(key));
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
	if (tenant[0] && !rmp_auth_equal(want, rep.u.auth_rep.server_proof)) {
		say("%s: the server did not prove tenant %s's key", r->what,
		    tenant);
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
int connect_as(struct raw *r, const char *what, const char *host,
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
int connect_named(struct raw *r, const char *what, const char *host,
		  const char *port, size_t data_len, int *reason)
{
	return connect_as(r, what, host, port, data_len, reason, true);
}

/* connect_ok -- a proper connect; 0 or -1 (printed). */
int connect_ok(struct raw *r, const char *what, const char *host,
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
int send_bytes(struct raw *r, const void *buf, size_t len)
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

const char *op_name(enum ibv_wr_opcode op)
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
int post_wait(struct raw *r, struct ibv_send_wr *wr, int timeout_ms)
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
int rdma_op_within(struct raw *r, enum ibv_wr_opcode op,
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

int rdma_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
	    uint32_t rkey, size_t len)
{
	return rdma_op_within(r, op, raddr, rkey, len, TIMEOUT_MS);
}

/* atomic_op -- one 8-byte FAA or CAS at raddr; the old value lands in
 * data[0..7]. The WC status (as int), or -1 on timeout. */
int atomic_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
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
const char *wc_str(int st)
{
	return st < 0 ? "no completion" :
	       ibv_wc_status_str((enum ibv_wc_status)st);
}

/*
 * parse_reply -- decode a reply. An error reply whose opcode is not one
 * we know (the answer to a message that had none) still has a valid
 * header: accept it.
 */
int parse_reply(const struct rx_msg *x, struct rmp_msg *m)
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
int next_reply(struct raw *r, struct rmp_msg *m, int timeout_ms)
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
int reply_for(struct raw *r, uint64_t req_id, struct rmp_msg *m,
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
int request(struct raw *r, struct rmp_msg *req, struct rmp_msg *rep)
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
void remember(struct raw *r, const struct rmp_lease_desc *d)
{
	unsigned i = r->nknown % (sizeof(r->known) / sizeof(r->known[0]));

	r->known[i].id = d->id;
	r->known[i].secret = d->secret;
	r->nknown++;
}

/* secret_of -- the remembered secret of lease id, 0 if unknown. */
uint64_t secret_of(const struct raw *r, uint64_t id)
{
	for (unsigned i = 0; i < sizeof(r->known) / sizeof(r->known[0]); i++)
		if (r->known[i].id == id)
			return r->known[i].secret;
	return 0;
}

/* do_alloc -- ALLOC; 0 with *d filled, or the status / error. */
int do_alloc(struct raw *r, uint64_t length, uint32_t ttl_s,
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
int do_simple(struct raw *r, unsigned opcode, uint64_t id,
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
int post_request(struct raw *r, struct rmp_msg *req)
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

uint8_t pattern(size_t i, uint64_t seed)
{
	return (uint8_t)(i * 131 + 7 + seed);
}

const char *keys_mode_str(unsigned m)
{
	switch (m) {
	case RMP_KEYS_WINDOW: return "window";
	case RMP_KEYS_REGION: return "region";
	case RMP_KEYS_POOL: return "pool";
	}
	return "?";
}

/* refusal_ok -- an error reply: status want, detail want_detail (< 0:
 * any), and nothing else (no payload: no lease, no rkey). 0 or 1. */
int refusal_ok(const struct rmp_msg *rep, const char *what, int want,
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

/* ----------------------------------------------------- lease helpers */

/* pattern_len -- the bytes of a lease that carry the test pattern: all
 * of a small lease, the first 4 KiB of a big one. */
size_t pattern_len(uint64_t length)
{
	return length > BIG_LEASE ? LEASE_LEN : (size_t)length;
}

/* check_pattern -- data[0..len) holds pattern(seed)? 0, or 1 (the first
 * wrong byte printed). */
int check_pattern(const struct raw *r, size_t len, uint64_t seed)
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
int write_pattern(struct raw *r, const struct rmp_lease_desc *d,
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
int read_check(struct raw *r, const struct rmp_lease_desc *d,
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

void print_lease(const struct rmp_lease_desc *d)
{
	printf("LEASE %#" PRIx64 " %#" PRIx32 " %" PRIu64 " %#" PRIx64 "\n",
	       d->addr, d->rkey, d->length, d->id);
	fflush(stdout);
}

/*
 * wait_stdin_line -- serve the connection until a line or EOF on stdin;
 * the line (without its newline, "" at EOF) is left in buf. Returns 0,
 * or -1 as soon as the connection is lost (when fail_on_loss; else the
 * loss is only noted, once).
 */
int wait_stdin_line(struct raw *r, bool fail_on_loss, char *buf, size_t len)
{
	uint64_t t0 = now_ms();
	bool noted = false;
	size_t have = 0;

	buf[0] = '\0';
	for (;;) {
		if (pump(r, 1000, STDIN_FILENO)) {
			ssize_t n = read(STDIN_FILENO, buf + have, len - 1 - have);
			char *nl;

			if (n <= 0)
				return 0;
			have += (size_t)n;
			buf[have] = '\0';
			nl = strchr(buf, '\n');
			if (nl || have == len - 1) {
				if (nl)
					*nl = '\0';
				return 0;
			}
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

int wait_stdin(struct raw *r, bool fail_on_loss)
{
	char line[256];

	return wait_stdin_line(r, fail_on_loss, line, sizeof(line));
}

/* -------------------------------------------------------------- stall */

/*
 * use_up_recvs -- STATs until only `keep` receive buffers are posted;
 * from then on each reply uses one up for good. 0, or -1 (printed).
 */
int use_up_recvs(struct raw *r, unsigned keep, unsigned *nstat)
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
void send_unanswerable(struct raw *r, unsigned *extra)
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

/* post_kept_recvs -- post again up to max receive buffers a stall kept
 * back (they are re-posted as usual only once no_repost is off). */
void post_kept_recvs(struct raw *r, unsigned max)
{
	for (unsigned i = 0; i < NRECV && max; i++) {
		if (!r->unposted[i])
			continue;
		if (post_recv(r, i)) {
			say("%s: re-posting receive: %s", r->what,
			    strerror(errno));
			return;
		}
		r->unposted[i] = false;
		r->posted++;
		max--;
	}
}

/* resume_recvs -- end a stall: every receive buffer posted again, and
 * re-posted from now on. */
void resume_recvs(struct raw *r)
{
	r->no_repost = false;
	post_kept_recvs(r, NRECV);
}

/* stalled -- print STALLED, then serve nothing until stdin says so. */
void stalled(struct raw *r, unsigned nstat, unsigned extra)
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

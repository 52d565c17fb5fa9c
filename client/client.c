/* SPDX-License-Identifier: MIT */
/* client.c -- rmp_client: options, connect (resolve, queue pair, handshake, proof), close, free. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "auth.h"
#include "buf.h"
#include "chan.h"
#include "park.h"
#include "client_int.h"
#include "error.h"
#include "io.h"
#include "lease.h"
#include "opts.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"
#include "token.h"
#include "util.h"

#define RMPC_RECONNECT_FIRST_MS 100u
/* Bytes of a WRITE the QP is asked to carry in the WQE (inline). */
#define RMPC_INLINE_WANT 256u
/* Send queue slots beyond the async ring: control sends, one
 * synchronous batch, and one more that a late-bound read left in flight
 * (io_sync.c's rmpc_read_first: at most one a client). */
#define RMPC_SQ_RESERVE (RMPC_NSEND + 2 * RMPC_SYNC_BATCH)

/* IB CM reject reason "consumer defined": the server called rdma_reject. */
#define IB_CM_REJ_CONSUMER_DEFINED 28
/* Local ACK timeout exponent of the client's QP: 4.096 us x 2^14 = 67 ms
 * per try (perftest's default), so a lost packet costs 67 ms, not the
 * route's ~0.3-1 s, and 7 tries (retry_count 6) bound how long an
 * unreachable server goes unnoticed on the data path: ~0.5 s. */
#define CLIENT_ACK_TIMEOUT 14

static int reconnect(struct rmp_client *c);

_Static_assert(RMP_ACCESS_READ == RMP_ACC_READ &&
		       RMP_ACCESS_WRITE == RMP_ACC_WRITE &&
		       RMP_ACCESS_ATOMIC == RMP_ACC_ATOMIC &&
		       RMP_ACCESS_ALL == RMP_ACC_ALL,
	       "API and wire access bits differ");
_Static_assert(RMP_LEASE_EPHEMERAL == RMP_LEASE_F_EPHEMERAL &&
		       RMP_LEASE_AUTO_RENEW == RMP_LEASE_F_AUTO_RENEW &&
		       RMP_LEASE_SPILL == RMP_LEASE_F_SPILL &&
		       RMP_LEASE_SPILLED == RMP_LEASE_F_SPILLED,
	       "API and wire lease flags differ");
_Static_assert(RMP_TOKEN_MAXLEN >= RMP_TOKEN_MAX, "RMP_TOKEN_MAXLEN too small");
_Static_assert(RMPC_NSEND >= RMPC_NRECV, "fewer send than receive slots");

int rmp_client_new(struct rmp_client **out, const struct rmp_client_opts *opts)
{
	struct rmp_client *c;
	int err;

	if (!out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	LIST_INIT(&c->leases);
	LIST_INIT(&c->bufs);
	c->reconnect = reconnect;
	rmp_client_opts_init(&c->opts);
	if (opts) {
		err = rmpc_opts_copy(&c->opts, sizeof(c->opts), opts,
				     opts->size);
		if (err)
			goto err_free_client;
	}
	err = rmpc_client_opts_check(c);
	if (err)
		goto err_free_client;
	err = rmpc_mem_alloc(c);
	if (err)
		goto err_free_client;
	err = rmpc_io_init(c);
	if (err)
		goto err_free_client;
	*out = c;
	return 0;

err_free_client:
	rmpc_client_release(c);
	return err;
}

/* ---- connect --------------------------------------------------------- */

/* One rdma_cm event, copied so that it can be acked at once. */
struct cm_ev {
	enum rdma_cm_event_type type;
	int status;
	uint8_t pdata[64];
	size_t pdata_len;
};

/* ms_left -- milliseconds until deadline, at least 1, as an int. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = rmp_now_ms();

	if (now >= deadline)
		return 1;
	return (int)RMP_MIN(deadline - now, (uint64_t)INT_MAX);
}

/* cm_get -- the next rdma_cm event before deadline: 0, -ETIMEDOUT, -errno. */
static int cm_get(struct rmp_client *c, uint64_t deadline, struct cm_ev *out)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd;
	uint64_t now;

	while (rdma_get_cm_event(c->cm_ch, &ev)) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		now = rmp_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		pfd = (struct pollfd){ .fd = c->cm_ch->fd, .events = POLLIN };
		if (poll(&pfd, 1, ms_left(deadline)) < 0 && errno != EINTR)
			return -errno;
	}
	out->type = ev->event;
	out->status = ev->status;
	out->pdata_len = 0;
	if ((ev->event == RDMA_CM_EVENT_ESTABLISHED ||
	     ev->event == RDMA_CM_EVENT_REJECTED) &&
	    ev->param.conn.private_data) {
		out->pdata_len = RMP_MIN((size_t)ev->param.conn.private_data_len,
					 sizeof(out->pdata));
		memcpy(out->pdata, ev->param.conn.private_data,
		       out->pdata_len);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/* status_text -- text for an rdma_cm event status (a negative errno). */
static const char *status_text(int status)
{
	return status < 0 ? rmpc_errno_text(status) : "no detail";
}

/* addr_errno -- the API error for an address/route resolution errno. */
static int addr_errno(struct rmp_client *c, int err, const char *step)
{
	switch (err) {
	case ETIMEDOUT:
		rmpc_set_error(c, "no answer to %s of %s (host down, or not on "
			       "an RDMA network?)", step, c->host);
		return -EHOSTUNREACH;
	case ENODEV:
	case EADDRNOTAVAIL:
		rmpc_set_error(c, "no RDMA device on the way to %s", c->host);
		return -ENETUNREACH;
	case ENETUNREACH:
		rmpc_set_error(c, "no route to %s", c->host);
		return -ENETUNREACH;
	case ENOMEM:
		return -ENOMEM;
	default:
		rmpc_set_error(c, "%s of %s failed: %s", step, c->host,
			       rmpc_errno_text(err));
		return -EHOSTUNREACH;
	}
}

/*
 * port_up -- 0 if the local port the route leaves by is ACTIVE, else
 * -ENETUNREACH. No connect request goes out of a port that is down: it
 * cannot be answered, and on Soft-RoCE (Linux 6.1) one sent while the
 * link is down leaves that device unable to connect until it is
 * re-created (park.h; tests/rdma/test-cluster-flap.sh takes both
 * links down). The port may still go down between this check and
 * rdma_connect.
 */
static int port_up(struct rmp_client *c)
{
	if (rmpc_port_active(c->id->verbs, c->id->port_num))
		return 0;
	rmpc_set_error(c, "%s port %u, the way to %s, is down: not connecting through it",
		       c->via_dev[0] ? c->via_dev : "the local RDMA device",
		       (unsigned)c->id->port_num, c->host);
	return -ENETUNREACH;
}

/*
 * resolve_one -- create c->id and resolve address and route to sa.
 * Returns 0, -EHOSTUNREACH, -ENETUNREACH (also: its local port is
 * down), -ENOMEM; c->id is NULL on failure. Running out of time here
 * means nobody answered ARP/ND.
 */
static int resolve_one(struct rmp_client *c, struct sockaddr *sa,
		       uint64_t deadline)
{
	struct cm_ev ev;
	int err;

	if (rdma_create_id(c->cm_ch, &c->id, c, RDMA_PS_TCP)) {
		err = errno;
		c->id = NULL;
		rmpc_set_error(c, "rdma_create_id: %s", rmpc_errno_text(err));
		return err == ENOMEM ? -ENOMEM : -ENETUNREACH;
	}
	/* A kernel without the option keeps the route's timeout: slower to
	 * recover a lost packet, nothing worse. */
	(void)rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			      &(uint8_t){ CLIENT_ACK_TIMEOUT }, sizeof(uint8_t));
	if (rdma_resolve_addr(c->id, NULL, sa, ms_left(deadline))) {
		err = addr_errno(c, errno, "address resolution");
		goto err_destroy_id;
	}
	err = cm_get(c, deadline, &ev);
	if (err)
		goto err_cm_get;
	if (ev.type != RDMA_CM_EVENT_ADDR_RESOLVED) {
		err = addr_errno(c, ev.status < 0 ? -ev.status : EHOSTUNREACH,
				 "address resolution");
		goto err_destroy_id;
	}
	if (c->id->verbs)
		snprintf(c->via_dev, sizeof(c->via_dev), "%s",
			 ibv_get_device_name(c->id->verbs->device));
	if (rdma_resolve_route(c->id, ms_left(deadline))) {
		err = addr_errno(c, errno, "route resolution");
		goto err_destroy_id;
	}
	err = cm_get(c, deadline, &ev);
	if (err)
		goto err_cm_get;
	if (ev.type != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		err = addr_errno(c, ev.status < 0 ? -ev.status : EHOSTUNREACH,
				 "route resolution");
		goto err_destroy_id;
	}
	err = port_up(c);
	if (err)
		goto err_destroy_id;
	rmpc_cm_park_sweep(); /* a port is up: ids parked there can go */
	return 0;

err_cm_get:
	err = addr_errno(c, -err, "address resolution");
err_destroy_id:
	/* no CM id in the kernel before rdma_connect: nothing to send */
	rdma_destroy_id(c->id);
	c->id = NULL;
	return err;
}

/* resolve -- look host up and resolve the first address RDMA can reach. */
static int resolve(struct rmp_client *c, uint64_t deadline)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	struct addrinfo *res, *ai;
	char port[8];
	int r, err = -EHOSTUNREACH;

	snprintf(port, sizeof(port), "%u", (unsigned)c->port);
	r = getaddrinfo(c->host, port, &hints, &res);
	if (r) {
		rmpc_set_error(c, "cannot resolve host %s: %s", c->host,
			       r == EAI_SYSTEM ? rmpc_errno_text(errno) :
						 gai_strerror(r));
		return r == EAI_MEMORY ? -ENOMEM : -EHOSTUNREACH;
	}
	for (ai = res; ai && rmp_now_ms() < deadline; ai = ai->ai_next) {
		err = resolve_one(c, ai->ai_addr, deadline);
		if (!err || err == -ENOMEM)
			break;
	}
	freeaddrinfo(res);
	return err;
}

/* clamp_rd_atom -- a device's outstanding READ/atomic limit as CM wants it. */
static uint8_t clamp_rd_atom(int v)
{
	return (uint8_t)(v < 1 ? 1 : v > 255 ? 255 : v);
}

/* size_queues -- what the device allows c: message size, atomics, read
 * depths, and the send queue's depth (c->sq_depth, c->sq allocated);
 * *dap gets the device's attributes. */
static int size_queues(struct rmp_client *c, struct ibv_device_attr *dap)
{
	struct ibv_context *ctx = c->id->verbs;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	uint32_t depth;
	int err;

	err = ibv_query_device(ctx, &da);
	if (!err)
		err = ibv_query_port(ctx, c->id->port_num, &pa);
	if (err) {
		rmpc_set_error(c, "cannot query the RDMA device: %s",
			       rmpc_errno_text(-err));
		return -err;
	}
	c->max_msg_sz = pa.max_msg_sz ? pa.max_msg_sz : UINT32_C(1) << 31;
	c->atomics = da.atomic_cap != IBV_ATOMIC_NONE;
	c->rd_atom = clamp_rd_atom(da.max_qp_rd_atom);
	c->init_rd_atom = clamp_rd_atom(da.max_qp_init_rd_atom);

	/* The async ring plus room for control sends and a sync batch. */
	depth = c->ring_size + RMPC_SQ_RESERVE;
	if (da.max_qp_wr > 0 && depth > (uint32_t)da.max_qp_wr)
		depth = (uint32_t)da.max_qp_wr;
	if (depth <= RMPC_SQ_RESERVE || (uint32_t)da.max_qp_wr < RMPC_NRECV) {
		rmpc_set_error(c, "RDMA device queues too small (%d WRs)",
			       da.max_qp_wr);
		return -ENOMEM;
	}
	c->sq_depth = depth;
	c->max_inflight = depth - RMPC_SQ_RESERVE;
	c->signal_every = RMP_MAX(1u, RMP_MIN(64u, depth / 4));
	c->sq = calloc(depth, sizeof(*c->sq));
	if (!c->sq)
		return -ENOMEM;
	*dap = da;
	return 0;
}

/* create_qp -- c's RC queue pair on its CQ, depth send WRs, small WRITEs
 * inline where the device can. */
static int create_qp(struct rmp_client *c, uint32_t depth)
{
	struct ibv_qp_init_attr qa;
	int err;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 0;
	qa.cap.max_send_wr = depth;
	qa.cap.max_recv_wr = RMPC_NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	/* Small WRITEs travel in the WQE: no DMA read of the source, no
	 * bounce copy. A device that cannot is asked again without. */
	qa.cap.max_inline_data = RMPC_INLINE_WANT;
	err = rdma_create_qp(c->id, c->pd, &qa);
	if (err) {
		qa.cap.max_inline_data = 0;
		err = rdma_create_qp(c->id, c->pd, &qa);
	}
	if (err) {
		err = errno ? -errno : -ENOMEM;
		rmpc_set_error(c, "rdma_create_qp: %s", rmpc_errno_text(err));
		return err;
	}
	/* The provider reports what it granted, which may be more. */
	c->max_inline = qa.cap.max_inline_data;
	return 0;
}

static int qp_setup(struct rmp_client *c)
{
	struct ibv_context *ctx = c->id->verbs;
	struct ibv_device_attr da;
	uint32_t depth;
	int cqe, err;

	err = size_queues(c, &da);
	if (err)
		return err;
	depth = c->sq_depth;
	c->pd = ibv_alloc_pd(ctx);
	if (!c->pd) {
		err = errno ? -errno : -ENOMEM;
		rmpc_set_error(c, "ibv_alloc_pd: %s", rmpc_errno_text(err));
		goto err_free_sq;
	}
	c->comp_ch = ibv_create_comp_channel(ctx);
	if (!c->comp_ch) {
		err = errno ? -errno : -ENOMEM;
		rmpc_set_error(c, "ibv_create_comp_channel: %s",
			       rmpc_errno_text(err));
		goto err_dealloc_pd;
	}
	err = rmp_set_nonblock(c->comp_ch->fd);
	if (err)
		goto err_destroy_comp_channel;
	/* Every WR may complete (errors flush unsignaled ones too). */
	cqe = (int)(depth + RMPC_NRECV);
	if (da.max_cqe > 0 && cqe > da.max_cqe)
		cqe = da.max_cqe;
	c->cq = ibv_create_cq(ctx, cqe, c, c->comp_ch, 0);
	if (!c->cq) {
		err = errno ? -errno : -ENOMEM;
		rmpc_set_error(c, "ibv_create_cq: %s", rmpc_errno_text(err));
		goto err_destroy_comp_channel;
	}

	err = create_qp(c, depth);
	if (err)
		goto err_destroy_cq;
	c->qp = c->id->qp;

	err = rmpc_mem_reg(c);
	if (err) {
		rmpc_set_error(c, "cannot register the library's buffers: %s",
			       rmpc_errno_text(err));
		goto err_destroy_qp;
	}
	return 0;

err_destroy_qp:
	rdma_destroy_qp(c->id);
	c->qp = NULL;
err_destroy_cq:
	ibv_destroy_cq(c->cq);
	c->cq = NULL;
err_destroy_comp_channel:
	ibv_destroy_comp_channel(c->comp_ch);
	c->comp_ch = NULL;
err_dealloc_pd:
	ibv_dealloc_pd(c->pd);
	c->pd = NULL;
err_free_sq:
	free(c->sq);
	c->sq = NULL;
	return err;
}

/* proto_range -- "protocol 3" or "protocols 1-2" into buf. */
static void proto_range(char *buf, size_t len, unsigned lo, unsigned hi)
{
	if (lo == hi)
		snprintf(buf, len, "%u", lo);
	else
		snprintf(buf, len, "%u-%u", lo, hi);
}

/* rejected -- turn a REJECTED event into an error and its text. */
static int rejected(struct rmp_client *c, const struct cm_ev *ev)
{
	char ours[16], theirs[16];
	struct rmp_conn_rej rej;

	if (ev->pdata_len &&
	    !rmp_conn_rej_decode(ev->pdata, ev->pdata_len, &rej)) {
		if (rej.reason == RMP_REJ_PROTO) {
			proto_range(ours, sizeof(ours), RMP_PROTO_MIN,
				    RMP_PROTO_MAX);
			proto_range(theirs, sizeof(theirs), rej.proto_min,
				    rej.proto_max);
			rmpc_set_error(c, "protocol %s not supported by server "
				       "(speaks %s)", ours, theirs);
			return -EPROTONOSUPPORT;
		}
		rmpc_set_error(c, "server rejected connection: %s",
			       rmp_reject_reason_str(rej.reason));
		return -ECONNREFUSED;
	}
	if (ev->status == IB_CM_REJ_CONSUMER_DEFINED)
		rmpc_set_error(c, "server at %s:%u rejected the connection "
			       "without a reason", c->host, (unsigned)c->port);
	else
		rmpc_set_error(c, "no rmpool server listening at %s:%u",
			       c->host, (unsigned)c->port);
	return -ECONNREFUSED;
}

/* accepted -- check the accept private data and take the credits. */
static int accepted(struct rmp_client *c, const struct cm_ev *ev)
{
	struct rmp_conn_rep rep;

	if (!ev->pdata_len ||
	    rmp_conn_rep_decode(ev->pdata, ev->pdata_len, &rep)) {
		rmpc_set_error(c, "%s:%u accepted without valid rmpool accept "
			       "data (not an rmpool server?)", c->host,
			       (unsigned)c->port);
		return -EPROTO;
	}
	if (rep.version < RMP_PROTO_MIN || rep.version > RMP_PROTO_MAX) {
		rmpc_set_error(c, "server chose protocol %u, which we do not "
			       "speak", rep.version);
		return -EPROTONOSUPPORT;
	}
	if (rep.credits == 0) {
		rmpc_set_error(c, "server granted no control credits");
		return -EPROTO;
	}
	if (rep.max_msg && rep.max_msg < RMP_MSG_HDR_LEN + 32) {
		rmpc_set_error(c, "server's message size limit %u is too "
			       "small", rep.max_msg);
		return -EPROTO;
	}
	c->credits = RMP_MIN(rep.credits, RMPC_NRECV);
	c->keys_mode = rep.keys_mode;
	c->version = rep.version;
	memcpy(c->nonce, rep.nonce, sizeof(c->nonce));
	return 0;
}

/*
 * authenticate -- the first message: prove the tenant's key for the
 * server's nonce, and check the server's proof of the same key for ours
 * (common/auth.h): nothing about a lease goes to a server before it
 * proved itself. The key file is read here, so its errors reach
 * rmp_client_last_error(); the key itself never goes into a message.
 */
static int authenticate(struct rmp_client *c)
{
	uint8_t key[RMP_KEY_MAX], server[RMP_ENDPOINT_LEN];
	uint8_t want[RMP_PROOF_LEN];
	size_t key_len = c->key_len;
	char why[RMPC_ERRBUF];
	struct rmp_msg m;
	int err;

	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_AUTH;
	rmp_auth_random(m.u.auth.client_nonce, sizeof(m.u.auth.client_nonce));
	if (c->tenant[0]) {
		/* The server as we reached it: a server that relays another
		 * one's nonce gets a proof naming itself, useless there. */
		err = rmp_auth_endpoint(rdma_get_peer_addr(c->id), server);
		if (err) {
			rmpc_set_error(c, "tenant %s: the server's address is "
				       "not IPv4 or IPv6", c->tenant);
			return err;
		}
		if (c->key_file[0]) {
			err = rmp_key_load(c->key_file, key, &key_len, why,
					   sizeof(why));
			if (err) {
				rmpc_set_error(c, "tenant %s: key file %s",
					       c->tenant, why);
				return err == -ENOENT ? -ENOENT : -EACCES;
			}
		} else {
			memcpy(key, c->key, key_len);
		}
		rmp_auth_proof(RMP_AUTH_CLIENT, key, key_len, c->nonce,
			       m.u.auth.client_nonce, c->version, c->tenant,
			       c->name, server, m.u.auth.proof);
		rmp_auth_proof(RMP_AUTH_SERVER, key, key_len, c->nonce,
			       m.u.auth.client_nonce, c->version, c->tenant,
			       c->name, server, want);
		rmp_wipe(key, sizeof(key));
	}
	err = rmpc_rpc(c, &m);
	if (err)
		rmp_wipe(want, sizeof(want));
	if (err == -EKEYREJECTED || err == -EACCES)
		rmpc_set_error(c, "authentication as tenant %s failed: %s",
			       c->tenant[0] ? c->tenant : "anonymous",
			       rmp_detail_str(c->rpc_detail));
	if (err)
		return err == -EACCES ? -EKEYREJECTED : err;
	if (c->tenant[0] && !rmp_auth_equal(want, m.u.auth_rep.server_proof)) {
		rmp_wipe(want, sizeof(want));
		rmpc_set_error(c, "%s:%u could not prove it holds tenant %s's "
			       "key: not a server of this tenant (nothing "
			       "was sent to it)", c->host, (unsigned)c->port,
			       c->tenant);
		return -EBADE;
	}
	rmp_wipe(want, sizeof(want));
	return 0;
}

/* handshake -- rdma_connect with our connect data, wait for the answer. */
static int handshake(struct rmp_client *c, uint64_t deadline)
{
	uint8_t pdata[RMP_CONN_REQ_LEN];
	struct rdma_conn_param cp;
	struct rmp_conn_req req;
	struct cm_ev ev;
	int n, err;

	memset(&req, 0, sizeof(req));
	req.proto_min = RMP_PROTO_MIN;
	req.proto_max = RMP_PROTO_MAX;
	strcpy(req.name, c->name);
	strcpy(req.tenant, c->tenant);
	n = rmp_conn_req_encode(pdata, sizeof(pdata), &req);
	if (n < 0)
		return n;

	memset(&cp, 0, sizeof(cp));
	cp.private_data = pdata;
	cp.private_data_len = (uint8_t)n;
	cp.responder_resources = c->rd_atom;
	cp.initiator_depth = c->init_rd_atom;
	/* Not 7: Soft-RoCE retries forever then, and a dead server would
	 * never fail an operation at the transport (tested on rxe). */
	cp.retry_count = 6;
	cp.rnr_retry_count = 7; /* 7 = retry for as long as it takes */
	if (rdma_connect(c->id, &cp)) {
		err = errno;
		rmpc_set_error(c, "rdma_connect: %s", rmpc_errno_text(-err));
		return -err;
	}
	err = cm_get(c, deadline, &ev);
	if (err == -ETIMEDOUT) {
		rmpc_set_error(c, "no answer from %s:%u within %d ms", c->host,
			       (unsigned)c->port, c->opts.connect_timeout_ms);
		return err;
	}
	if (err)
		return err;
	switch (ev.type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		rmpc_conn_set(c, RMPC_CONN_UP);
		return accepted(c, &ev);
	case RDMA_CM_EVENT_REJECTED:
		return rejected(c, &ev);
	case RDMA_CM_EVENT_UNREACHABLE:
		rmpc_set_error(c, "%s:%u unreachable: %s", c->host,
			       (unsigned)c->port, status_text(ev.status));
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		rmpc_set_error(c, "connection setup with %s:%u failed: %s",
			       c->host, (unsigned)c->port,
			       status_text(ev.status));
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rmpc_set_error(c, "RDMA device removed");
		return -ENETUNREACH;
	default:
		rmpc_set_error(c, "unexpected rdma_cm event while connecting: "
			       "%s", rdma_event_str(ev.type));
		return -EPROTO;
	}
}

/*
 * rmpc_conn_teardown -- undo connect, from any state it may have reached:
 * disconnect, destroy QP, MRs, CQ, channels, PD and cm id, drop queued
 * and in-flight async operations. Invalidates lease handles (gen).
 */
void rmpc_conn_teardown(struct rmp_client *c)
{
	unsigned i;

	/* No DREQ out of a port that is down (park.h): the id is parked
	 * below and disconnects when its port is back. */
	if (rmpc_connected(c) && c->conn != RMPC_CONN_CLOSED && c->id &&
	    rmpc_port_active(c->id->verbs, c->id->port_num))
		rdma_disconnect(c->id);
	if (c->qp) {
		rdma_destroy_qp(c->id);
		c->qp = NULL;
	}
	rmpc_mem_dereg(c);
	if (c->cq) {
		/* ibv_destroy_cq waits until every event we got is acked. */
		rmpc_drain_cq_events(c);
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
	}
	if (c->comp_ch) {
		ibv_destroy_comp_channel(c->comp_ch);
		c->comp_ch = NULL;
	}
	if (c->pd) {
		ibv_dealloc_pd(c->pd);
		c->pd = NULL;
	}
	if (c->id) {
		rmpc_cm_release(c->id);
		c->id = NULL;
	}
	if (c->cm_ch) {
		rdma_destroy_event_channel(c->cm_ch);
		c->cm_ch = NULL;
	}
	free(c->sq);
	c->sq = NULL;
	rmpc_io_reset(c);

	rmpc_conn_set(c, RMPC_CONN_DOWN);
	c->cq_armed = false;
	c->fd_wanted = false; /* a new connection has a new fd */
	c->cq_unacked = 0;
	c->sq_depth = 0;
	c->sq_posted = c->sq_done = 0;
	c->credits = c->ctl_inflight = 0;
	for (i = 0; i < RMPC_NSEND; i++)
		c->send_busy[i] = false;
	c->rpc_wait_id = 0;
	c->rpc_done = false;
	c->failbuf[0] = '\0';
	c->gen++;
}

int rmpc_connect_one(struct rmp_client *c, const char *host, uint16_t port)
{
	uint64_t deadline;
	uint32_t i;
	int err;

	if (!c || !host || !*host)
		return -EINVAL;
	rmpc_clear_error(c);
	if (c->cm_ch) {
		rmpc_set_error(c, "client is already connected; close it first");
		return -EISCONN;
	}
	if (rmp_strlcpy(c->host, host, sizeof(c->host))) {
		rmpc_set_error(c, "host name longer than %d bytes",
			       RMPC_HOST_MAX);
		return -EINVAL;
	}
	c->port = port ? port : RMP_DEFAULT_PORT;
	c->via_dev[0] = '\0';

	c->cm_ch = rdma_create_event_channel();
	if (!c->cm_ch) {
		err = errno;
		rmpc_set_error(c, "cannot open the RDMA connection manager: %s",
			       rmpc_errno_text(err));
		err = err == ENOMEM ? -ENOMEM : -ENETUNREACH;
		goto err_teardown;
	}
	err = rmp_set_nonblock(c->cm_ch->fd);
	if (err)
		goto err_teardown;
	/* The timeout bounds the network, not the device discovery (which
	 * librdmacm did above, and which can be slow on a cold start). */
	deadline = rmp_now_ms() + (uint64_t)c->opts.connect_timeout_ms;
	err = resolve(c, deadline);
	if (err)
		goto err_teardown;
	err = qp_setup(c);
	if (err)
		goto err_teardown;
	for (i = 0; i < RMPC_NRECV; i++) {
		err = rmpc_post_recv(c, i);
		if (err) {
			rmpc_set_error(c, "ibv_post_recv: %s",
				       rmpc_errno_text(err));
			goto err_teardown;
		}
	}
	err = handshake(c, deadline);
	if (err)
		goto err_teardown;
	err = authenticate(c);
	if (err)
		goto err_teardown;
	c->gen++;
	c->auto_reconnect = c->opts.reconnect_max_ms > 0;
	return 0;

err_teardown:
	rmpc_conn_teardown(c);
	return err;
}

/*
 * reconnect -- the upcall of rmpc_conn_ready(): the connection is lost;
 * connect to the same server again, at most once per backoff step. Lease
 * handles are attached again lazily, at their next use (lease.c).
 */
static int reconnect(struct rmp_client *c)
{
	char host[RMPC_HOST_MAX + 1], why[RMPC_ERRBUF];
	uint64_t now = rmp_now_ms();
	uint16_t port = c->port;
	unsigned wait;
	int err;

	if (!rmpc_backoff_due(&c->reconnect_backoff, now)) {
		rmpc_set_error(c, "connection lost; next reconnect to %s:%u in "
			       "%" PRIu64 " ms", c->host, (unsigned)port,
			       c->reconnect_backoff.at_ms - now);
		return -ENOTCONN;
	}
	strcpy(host, c->host);
	c->reconnecting = true;
	rmpc_conn_teardown(c);
	err = rmpc_connect_one(c, host, port);
	c->reconnecting = false;
	if (err == 0) {
		rmpc_backoff_reset(&c->reconnect_backoff);
		return 0;
	}
	wait = rmpc_backoff_fail(&c->reconnect_backoff,
				 RMPC_RECONNECT_FIRST_MS,
				 (unsigned)c->opts.reconnect_max_ms,
				 rmp_now_ms());
	snprintf(why, sizeof(why), "%s", c->errbuf);
	rmpc_set_error(c, "connection lost; reconnecting to %s:%u failed (%s: "
		       "%s); next try in %u ms", host, (unsigned)port,
		       rmpc_errno_text(err), why, wait);
	return -ENOTCONN;
}

void rmpc_client_release(struct rmp_client *c)
{
	rmpc_leases_free(c);
	rmpc_mem_free(c);
	rmpc_io_fini(c);
	rmp_wipe(c->key, sizeof(c->key));
	free(c);
}

int rmp_client_fd(struct rmp_client *c)
{
	if (!c)
		return -EINVAL;
	if (!c->comp_ch)
		return -ENOTCONN;
	/* From now on rmp_submit() and rmp_poll() keep the fd armed; until
	 * then a caller that polls pays no system call for it. */
	c->fd_wanted = true;
	return c->comp_ch->fd;
}

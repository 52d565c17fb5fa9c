/* SPDX-License-Identifier: MIT */
/* listener.c -- rdma_cm events: admit, accept or reject, and tear down. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <event2/event.h>

#include "log.h"
#include "server.h"
#include "util.h"

/* peer_text -- "ADDR:PORT" of the remote end of id. */
static void peer_text(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(buf, len, "%s:%u", host, port);
}

static void reject(struct rdma_cm_id *id, enum rmp_reject_reason reason,
		   const char *peer, const char *name)
{
	struct rmp_conn_rej rej = {
		.reason = (uint16_t)reason,
		.proto_min = RMP_PROTO_MIN,
		.proto_max = RMP_PROTO_MAX,
	};
	uint8_t data[RMP_CONN_REJ_LEN];

	log_notice("rejected connection from %s (%s): %s", peer,
		   name[0] ? name : "no name", rmp_reject_reason_str(reason));
	rmp_conn_rej_encode(data, sizeof(data), &rej);
	if (rdma_reject(id, data, sizeof(data)))
		log_warn("rdma_reject: %s", strerror(errno));
	rdma_destroy_id(id);
}

/* admit -- answer a connect request: accept with a QP, or reject. */
static void admit(struct rmp_server *srv, struct rdma_cm_id *id,
		  const struct rdma_conn_param *param)
{
	const struct ibv_device_attr *da = &srv->dev_attr.orig_attr;
	struct rdma_conn_param cp = { 0 };
	struct rmp_conn_req req = { 0 };
	struct rmp_conn_rep rep = { 0 };
	uint8_t data[RMP_CONN_REP_LEN];
	char peer[64];
	struct rmp_conn *c;
	int ret;

	peer_text(id, peer, sizeof(peer));
	if (id->verbs != srv->verbs) {
		/* The pool is registered with one device only. */
		reject(id, RMP_REJ_INTERNAL, peer, "");
		return;
	}
	if (rmp_conn_req_decode(param->private_data, param->private_data_len,
				&req)) {
		reject(id, RMP_REJ_BAD_REQUEST, peer, "");
		return;
	}
	if (req.proto_min > RMP_PROTO_MAX || req.proto_max < RMP_PROTO_MIN) {
		reject(id, RMP_REJ_PROTO, peer, req.name);
		return;
	}
	if (srv->draining) {
		reject(id, RMP_REJ_DRAINING, peer, req.name);
		return;
	}
	if (srv->nconns >= srv->cfg.server.max_clients) {
		reject(id, RMP_REJ_FULL, peer, req.name);
		return;
	}
	c = rmp_conn_new(srv, id, req.name[0] ? req.name : peer);
	if (!c) {
		reject(id, RMP_REJ_INTERNAL, peer, req.name);
		return;
	}
	rmp_strlcpy(c->peer, peer, sizeof(c->peer));
	ret = rmp_conn_setup_qp(c);
	if (ret) {
		log_err("client %s: cannot create its queue pair: %s", peer,
			strerror(-ret));
		goto err_reject;
	}
	rep.version = RMP_PROTO_MAX < req.proto_max ? RMP_PROTO_MAX :
		      req.proto_max;
	rep.keys_mode = (uint8_t)srv->keys_mode;
	rep.credits = srv->cfg.server.credits;
	rep.max_msg = RMP_MSG_MAX;
	rmp_conn_rep_encode(data, sizeof(data), &rep);
	cp.private_data = data;
	cp.private_data_len = sizeof(data);
	/* The client reads and does atomics against us: grant as many
	 * outstanding ones as it asks for and the device allows. */
	cp.responder_resources = (uint8_t)RMP_MIN(param->initiator_depth,
						  da->max_qp_rd_atom);
	cp.initiator_depth = 0;
	cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp)) {
		log_err("client %s: rdma_accept: %s", peer, strerror(errno));
		goto err_reject;
	}
	log_debug("client #%" PRIu64 " (%s, %s): accepted", c->serial,
		  c->name, peer);
	return;

err_reject:
	/* Undo the half-built connection, then refuse. */
	c->state = CONN_CLOSING;
	if (id->qp)
		rdma_destroy_qp(id);
	c->outstanding = 0; /* a destroyed QP completes nothing more */
	c->id = NULL; /* reject() destroys the id */
	rmp_conn_maybe_free(c);
	reject(id, RMP_REJ_INTERNAL, peer, req.name);
}

static void on_event(struct rmp_server *srv, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param param = ev->param.conn;
	uint8_t pdata[UINT8_MAX + 1]; /* private_data_len is a uint8_t */
	struct rmp_conn *c;

	/* Keep a copy of the private data: the event must be acked before
	 * an id it names can be destroyed. */
	if (param.private_data)
		memcpy(pdata, param.private_data, param.private_data_len);
	param.private_data = pdata;
	rdma_ack_cm_event(ev);

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		admit(srv, id, &param);
		return;
	}
	if (id == srv->listen_id) {
		log_err("listener: %s", rdma_event_str(type));
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			event_base_loopbreak(srv->base);
		return;
	}
	c = id->context;
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		rmp_conn_established(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rmp_conn_close(c, "peer disconnected");
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		rmp_conn_close(c, rdma_event_str(type));
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rmp_conn_close(c, "device removed");
		event_base_loopbreak(srv->base);
		break;
	default:
		log_debug("client #%" PRIu64 ": %s", c->serial,
			  rdma_event_str(type));
		break;
	}
}

void rmp_listener_on_cm_event(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;
	struct rdma_cm_event *ev;

	(void)fd;
	(void)what;
	/* The channel fd is non-blocking: drain every ready event. */
	while (rdma_get_cm_event(srv->cm_channel, &ev) == 0)
		on_event(srv, ev);
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		log_err("rdma_get_cm_event: %s", strerror(errno));
}

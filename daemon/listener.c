/* SPDX-License-Identifier: MIT */
/* listener.c -- rdma_cm events: admit, accept or reject, and tear down. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "guard.h"
#include "listener.h"
#include "log.h"
#include "tenant.h"
#include "util.h"

/* peer_text -- "ADDR:PORT" and "ADDR" of the remote end of id. */
static void peer_text(struct rdma_cm_id *id, char *peer, size_t plen,
		      char *ip, size_t iplen)
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
	snprintf(peer, plen, "%s:%u", host, port);
	rmp_strlcpy(ip, host, iplen);
}

static void reject(struct rmp_listener *ls, struct rdma_cm_id *id,
		   enum rmp_reject_reason reason, const char *peer,
		   const char *ip, const char *name, const char *tenant)
{
	struct rmp_conn_rej rej = {
		.reason = (uint16_t)reason,
		.proto_min = RMP_PROTO_MIN,
		.proto_max = RMP_PROTO_MAX,
	};
	uint8_t data[RMP_CONN_REJ_LEN];
	char who[RMP_LOG_NAME_LEN], whose[RMP_LOG_NAME_LEN];

	if ((unsigned)reason < RMP_REJ_REASONS)
		ls->rejects[reason]++;
	/* Either may be what a request that did not decode left there. */
	rmp_log_field(who, sizeof(who), name);
	rmp_log_field(whose, sizeof(whose), tenant);
	rmp_conns_log_peer(ls->conns, ip, LOG_NOTICE, "rejected connection "
			   "from %s (%s, tenant %s): %s", peer,
			   who[0] ? who : "no name", whose[0] ? whose : "none",
			   rmp_reject_reason_str(reason));
	rmp_conn_rej_encode(data, sizeof(data), &rej);
	if (rdma_reject(id, data, sizeof(data)))
		log_warn("rdma_reject: %s", strerror(errno));
	rdma_destroy_id(id);
}

/*
 * choose_tenant -- the tenant whose key a connect request must prove:
 * rmp_tenants_for_connect's (a stranger for a name no usable tenant has,
 * so that the peer learns it only as a wrong key), when this address has
 * a connection left; else the reject reason (0 = accept). Its networks
 * and connection limit are checked once its key is proven
 * (conn.c admit_proven): before, they would tell who exists.
 */
static unsigned choose_tenant(struct rmp_listener *ls,
			      const struct rmp_conn_req *req, const char *peer,
			      const char *ip, struct rmp_tenant **out)
{
	const struct rmp_config *cfg = ls->conns->cfg;
	struct rmp_tenant *t;
	unsigned why, per_ip = cfg->server.connections_per_address;
	char who[RMP_LOG_NAME_LEN];

	t = rmp_tenants_for_connect(ls->tenants, req->tenant, &why);
	if (!t) {
		rmp_log_field(who, sizeof(who), req->name);
		rmp_conns_audit_peer(ls->conns, ip, "audit: auth-fail tenant=- "
				     "client=%s peer=%s "
				     "reason=anonymous-disabled", who, peer);
		rmp_conns_note_failure(ls->conns, ip, "", peer,
				       "connect: anonymous access is disabled",
				       cfg->server.auth_failures_per_minute);
		return why;
	}
	if (per_ip && rmp_conns_count_peer(ls->conns, ip) >= per_ip)
		return RMP_REJ_PEER_FULL;
	*out = t;
	return 0;
}

/*
 * unserved -- reject id when it came in on a device that is not served
 * (a wildcard hears every device; the pools are registered with those
 * served only). True when it did.
 */
static bool unserved(struct rmp_listener *ls, struct rdma_cm_id *id,
		     const char *peer, const char *ip)
{
	if (rmp_conns_device(ls->conns, id->verbs))
		return false;
	rmp_conns_log_peer(ls->conns, ip, LOG_NOTICE, "connection from %s on "
			   "device %s, which is not served ([server] device)",
			   peer, id->verbs ?
			   ibv_get_device_name(id->verbs->device) : "?");
	reject(ls, id, RMP_REJ_INTERNAL, peer, ip, "", "");
	return true;
}

/* admit -- answer a connect request: accept with a QP, or reject. */
static void admit(struct rmp_listener *ls, struct rdma_cm_id *id,
		  const struct rdma_conn_param *param)
{
	const struct rmp_config *cfg = ls->conns->cfg;
	struct rmp_auth_pending auth = { 0 };
	struct rmp_conn_req req = { 0 };
	struct rmp_conn_rep rep = { 0 };
	uint8_t data[RMP_CONN_REP_LEN];
	char peer[80], ip[64];
	struct rmp_conn *c;
	unsigned why;
	int ret;

	peer_text(id, peer, sizeof(peer), ip, sizeof(ip));
	if (unserved(ls, id, peer, ip))
		return;
	ret = rmp_conn_req_decode(param->private_data,
				  param->private_data_len, &req);
	/* Cooling down comes first: such a peer learns nothing else. (Its
	 * block, or the tenant it names from there: ret says whether
	 * req.tenant decoded.) */
	if (rmp_guard_refusing(ls->guard, ip, ret ? NULL : req.tenant,
			       rmp_now_ms())) {
		reject(ls, id, RMP_REJ_COOLDOWN, peer, ip, req.name,
		       req.tenant);
		return;
	}
	if (ret == -EPROTONOSUPPORT) {
		reject(ls, id, RMP_REJ_PROTO, peer, ip, "", "");
		return;
	}
	if (ret) {
		reject(ls, id, RMP_REJ_BAD_REQUEST, peer, ip, "", "");
		return;
	}
	if (ls->draining) {
		reject(ls, id, RMP_REJ_DRAINING, peer, ip, req.name,
		       req.tenant);
		return;
	}
	why = choose_tenant(ls, &req, peer, ip, &auth.tenant);
	if (why) {
		reject(ls, id, why, peer, ip, req.name, req.tenant);
		return;
	}
	/* The proof names our end of this connection: the address and port
	 * the client dialed (rdma_cm takes them from its connect request,
	 * concrete even when we listen on a wildcard). */
	if (rmp_auth_endpoint(rdma_get_local_addr(id), auth.server)) {
		reject(ls, id, RMP_REJ_INTERNAL, peer, ip, req.name,
		       req.tenant);
		return;
	}
	/* On a wildcard that address comes from the client's CM header, and
	 * the kernel only checks that it routes through our device: a peer
	 * writing its own header could name a relay's address, the one the
	 * relay's victim put in its proof. It must be one of ours. (A bound
	 * listener only gets connections to its address.) */
	if (ls->wildcard && !rmp_auth_endpoint_local(auth.server)) {
		char who[RMP_LOG_NAME_LEN];

		rmp_log_field(who, sizeof(who), req.name);
		rmp_conns_audit_peer(ls->conns, ip, "audit: auth-fail "
				     "tenant=%s client=%s peer=%s "
				     "reason=foreign-address",
				     req.tenant[0] ? req.tenant : "-", who,
				     peer);
		rmp_conns_note_failure(ls->conns, ip, NULL, peer,
				       "connect: not to an address of ours",
				       cfg->server.auth_failures_per_minute);
		reject(ls, id, RMP_REJ_BAD_REQUEST, peer, ip, req.name,
		       req.tenant);
		return;
	}
	rep.version = RMP_PROTO_VERSION;
	rep.keys_mode = (uint8_t)ls->conns->keys_mode;
	rep.credits = cfg->server.credits;
	rep.max_msg = RMP_MSG_MAX;
	rmp_auth_random(rep.nonce, sizeof(rep.nonce));
	memcpy(auth.nonce, rep.nonce, sizeof(auth.nonce));
	auth.version = rep.version;
	/* The proof names the client as it named itself, "" included. */
	rmp_strlcpy(auth.name, req.name, sizeof(auth.name));
	rmp_strlcpy(auth.tenant_name, req.tenant, sizeof(auth.tenant_name));
	rmp_conn_rep_encode(data, sizeof(data), &rep);
	/* Until it proves its tenant it holds one of a few slots; one that
	 * has not proved its own gives way to it, even on a full server. */
	if (rmp_conns_preauth_room(ls->conns, ip)) {
		reject(ls, id, RMP_REJ_FULL, peer, ip, req.name, req.tenant);
		return;
	}
	if (rmp_conn_accept(ls->conns, id, req.name,
			    peer, ip, &auth, param->initiator_depth, data,
			    sizeof(data), &c))
		reject(ls, id, RMP_REJ_INTERNAL, peer, ip, req.name,
		       req.tenant);
}

/* is_listener -- id is one of ls's listening ids. */
static bool is_listener(const struct rmp_listener *ls,
			const struct rdma_cm_id *id)
{
	for (unsigned i = 0; i < ls->nids; i++)
		if (ls->ids[i] == id)
			return true;
	return false;
}

static void on_event(struct rmp_listener *ls, struct rdma_cm_event *ev)
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
		admit(ls, id, &param);
		return;
	}
	if (is_listener(ls, id)) {
		log_err("listener: %s", rdma_event_str(type));
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			ls->device_lost = true;
		return;
	}
	c = id->context;
	if (!c)
		return;
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
		ls->device_lost = true;
		break;
	default:
		log_debug("client #%" PRIu64 ": %s", c->serial,
			  rdma_event_str(type));
		break;
	}
}

void rmp_listener_dispatch(struct rmp_listener *ls)
{
	struct rdma_cm_event *ev;

	/* The channel fd is non-blocking: drain every ready event. */
	while (rdma_get_cm_event(ls->channel, &ev) == 0)
		on_event(ls, ev);
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		log_err("rdma_get_cm_event: %s", strerror(errno));
}

/* any_addr -- sa is 0.0.0.0 or ::. */
static bool any_addr(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

	if (sa->sa_family == AF_INET)
		return in->sin_addr.s_addr == htonl(INADDR_ANY);
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
}

int rmp_listener_bind(struct rmp_listener *ls, const char *addr,
		      unsigned port)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *ai;
	struct rdma_cm_id *id;
	char ports[8];
	int ret;

	if (ls->nids == RMP_LISTEN_MAX)
		return -E2BIG;
	if (!ls->channel) {
		ls->channel = rdma_create_event_channel();
		if (!ls->channel) {
			log_err("rdma_create_event_channel: %s (is rdma_ucm "
				"loaded?)", strerror(errno));
			return -errno;
		}
		ret = rmp_set_nonblock(ls->channel->fd);
		if (ret)
			return ret;
	}
	if (rdma_create_id(ls->channel, &id, ls, RDMA_PS_TCP))
		return -errno;
	ls->ids[ls->nids++] = id;
	snprintf(ports, sizeof(ports), "%u", port);
	if (rdma_getaddrinfo(addr, ports, &hints, &ai)) {
		log_err("listen address %s: cannot resolve", addr);
		return -EINVAL;
	}
	ret = rdma_bind_addr(id, ai->ai_src_addr) ? -errno : 0;
	ls->wildcard |= any_addr(ai->ai_src_addr);
	rdma_freeaddrinfo(ai);
	if (ret)
		log_err("bind %s:%s: %s", addr, ports, strerror(-ret));
	return ret;
}

int rmp_listener_listen(struct rmp_listener *ls)
{
	for (unsigned i = 0; i < ls->nids; i++) {
		if (rdma_listen(ls->ids[i], (int)ls->max_clients)) {
			log_err("rdma_listen: %s", strerror(errno));
			return -errno;
		}
	}
	return 0;
}

void rmp_listener_close(struct rmp_listener *ls)
{
	for (unsigned i = 0; i < ls->nids; i++)
		rdma_destroy_id(ls->ids[i]);
	if (ls->channel)
		rdma_destroy_event_channel(ls->channel);
	ls->nids = 0;
	ls->channel = NULL;
}

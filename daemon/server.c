/* SPDX-License-Identifier: MIT */
/* server.c -- set up device, pool, SRQ, CQ and listener; run the event loop. */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <numa.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <event2/event.h>

#include "log.h"
#include "topology.h"
#include "server.h"
#include "util.h"

/* Receive buffers shared by all clients: one per credit per client,
 * bounded by what the device allows. */
#define SRQ_MAX 4096u
#define CQ_BATCH 32
/* How long shutdown waits for flushed sends before tearing down. */
#define STOP_DRAIN_MS 2000


static int post_recv(struct rmp_server *srv, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(srv->recv_buf + (size_t)i * RMP_MSG_MAX),
		.length = RMP_MSG_MAX,
		.lkey = srv->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = ((uint64_t)i << 2) | WRID_SRQ, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return -ibv_post_srq_recv(srv->srq, &wr, &bad);
}

static void on_recv(struct rmp_server *srv, const struct ibv_wc *wc)
{
	uint32_t i = (uint32_t)(wc->wr_id >> 2);
	struct rmp_conn *c = rmp_conn_by_qp_num(srv, wc->qp_num);
	int ret;

	/* A message can overtake the ESTABLISHED event: it proves the
	 * connection is up (rdma_accept moved the QP to RTS already). */
	if (wc->status == IBV_WC_SUCCESS && c && c->state == CONN_ACCEPTING)
		rmp_conn_established(c);
	if (wc->status == IBV_WC_SUCCESS && c && c->state == CONN_ESTABLISHED)
		rmp_service_on_recv(c, srv->recv_buf + (size_t)i * RMP_MSG_MAX,
				    wc->byte_len);
	else if (wc->status != IBV_WC_SUCCESS &&
		 wc->status != IBV_WC_WR_FLUSH_ERR)
		log_warn("receive failed: %s", ibv_wc_status_str(wc->status));
	ret = post_recv(srv, i);
	if (ret)
		log_err("re-posting receive buffer %u: %s", i, strerror(-ret));
}

/* poll_cq -- handle every completion that is ready; returns how many. */
static int poll_cq(struct rmp_server *srv)
{
	struct ibv_wc wc[CQ_BATCH];
	int n, total = 0;

	while ((n = ibv_poll_cq(srv->cq, CQ_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint64_t w = wc[i].wr_id;
			void *p = (void *)(uintptr_t)(w & ~(uint64_t)WRID_TAG_MASK);

			switch (w & WRID_TAG_MASK) {
			case WRID_SRQ:
				on_recv(srv, &wc[i]);
				break;
			case WRID_CONN_RECV:
				rmp_conn_on_recv(p, &wc[i]);
				break;
			default:
				rmp_conn_on_send_done(p, &wc[i]);
				break;
			}
		}
		total += n;
	}
	if (n < 0)
		log_err("ibv_poll_cq: %d", n);
	return total;
}

static void on_cq_event(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;
	struct ibv_cq *cq;
	void *ctx;

	(void)fd;
	(void)what;
	if (ibv_get_cq_event(srv->comp_channel, &cq, &ctx))
		return; /* spurious wake-up of the non-blocking channel */
	ibv_ack_cq_events(cq, 1);
	/* Re-arm before draining so no completion slips between the two. */
	if (ibv_req_notify_cq(cq, 0))
		log_err("ibv_req_notify_cq: %s", strerror(errno));
	poll_cq(srv);
}

void rmp_server_schedule_expiry(struct rmp_server *srv)
{
	struct rmp_lease *first = rmp_lease_table_first(srv->leases);
	uint64_t tick = srv->cfg.lease.expiry_tick_ms, now, wait;
	struct timeval tv;

	if (!first) {
		event_del(srv->expiry_ev);
		return;
	}
	now = rmp_now_ms();
	wait = first->deadline_ms > now ? first->deadline_ms - now : 0;
	/* Round up to the tick: leases expiring close together go in one
	 * wake-up, and a lease is never revoked before its deadline. */
	wait = (wait + tick - 1) / tick * tick;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(srv->expiry_ev, &tv);
}

static void on_expiry(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;
	uint64_t now = rmp_now_ms(), n = 0;
	struct rmp_lease *l;

	(void)fd;
	(void)what;
	while ((l = rmp_lease_table_first(srv->leases)) &&
	       l->deadline_ms <= now) {
		/* Auto-renew: alive as long as its connection is. */
		if ((l->flags & RMP_LEASE_F_AUTO_RENEW) && l->conn &&
		    l->conn->state == CONN_ESTABLISHED) {
			rmp_lease_table_set_deadline(srv->leases, l,
						     now + l->ttl_ms);
			continue;
		}
		srv->expired[srv->expired_next].id = l->id;
		srv->expired[srv->expired_next].secret = l->secret;
		srv->expired_next = (srv->expired_next + 1) % RMP_EXPIRED_RING;
		rmp_service_end_lease(srv, l, "expired");
		n++;
	}
	if (n)
		log_info("%" PRIu64 " lease(s) expired and revoked", n);
	rmp_server_schedule_expiry(srv);
}

static void on_stop_signal(int sig, short what, void *arg)
{
	struct rmp_server *srv = arg;

	(void)what;
	log_notice("%s: stopping", strsignal(sig));
	event_base_loopbreak(srv->base);
}

static void on_sighup(int sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	log_notice("SIGHUP: configuration reload is not supported yet; "
		   "restart the service to apply changes");
}

/* bind_listener -- create the cm channel and listen on the config addr. */
static int bind_listener(struct rmp_server *srv)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *ai;
	char port[8];
	int ret;

	srv->cm_channel = rdma_create_event_channel();
	if (!srv->cm_channel) {
		log_err("rdma_create_event_channel: %s (is rdma_ucm loaded?)",
			strerror(errno));
		return -errno;
	}
	ret = rmp_set_nonblock(srv->cm_channel->fd);
	if (ret)
		return ret;
	if (rdma_create_id(srv->cm_channel, &srv->listen_id, srv,
			   RDMA_PS_TCP))
		return -errno;
	snprintf(port, sizeof(port), "%u", srv->cfg.server.port);
	if (rdma_getaddrinfo(srv->cfg.server.listen, port, &hints, &ai)) {
		log_err("listen address %s: cannot resolve",
			srv->cfg.server.listen);
		return -EINVAL;
	}
	ret = rdma_bind_addr(srv->listen_id, ai->ai_src_addr) ? -errno : 0;
	rdma_freeaddrinfo(ai);
	if (ret) {
		log_err("bind %s:%s: %s", srv->cfg.server.listen, port,
			strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * open_device -- the verbs context: the listen address's device, or the
 * configured/first device when listening on a wildcard address. Either
 * way it is librdmacm's own context for that device, the one incoming
 * connection ids carry, so PD, CQ and SRQ can serve them.
 */
static int open_device(struct rmp_server *srv)
{
	int n;

	if (srv->listen_id->verbs) {
		srv->verbs = srv->listen_id->verbs;
		return 0;
	}
	srv->devices = rdma_get_devices(&n);
	if (!srv->devices)
		return -errno;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(srv->devices[i]->device);

		if (!srv->cfg.server.device[0] ||
		    !strcmp(name, srv->cfg.server.device)) {
			srv->verbs = srv->devices[i];
			return 0;
		}
	}
	log_err("no RDMA device %s%s", srv->cfg.server.device[0] ?
		srv->cfg.server.device : "found",
		srv->cfg.server.device[0] ? "" : " (see rdma link show)");
	return -ENODEV;
}

/* netdev_of_addr -- name of the interface that holds the listen address. */
static int netdev_of_addr(const char *addr, char *name, size_t len)
{
	struct ifaddrs *ifs, *i;
	char host[NI_MAXHOST];
	int ret = -ENOENT;

	if (getifaddrs(&ifs))
		return -errno;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		if (getnameinfo(i->ifa_addr, i->ifa_addr->sa_family == AF_INET ?
				sizeof(struct sockaddr_in) :
				sizeof(struct sockaddr_in6), host, sizeof(host),
				NULL, 0, NI_NUMERICHOST))
			continue;
		if (!strcmp(host, addr)) {
			ret = rmp_strlcpy(name, i->ifa_name, len);
			break;
		}
	}
	freeifaddrs(ifs);
	return ret;
}

/* choose_node -- the NUMA node for the pool, as DESIGN.md prescribes. */
static int choose_node(struct rmp_server *srv)
{
	char how[512], netdev[IF_NAMESIZE] = "";
	int node;

	if (srv->cfg.pool.numa_node >= 0) {
		log_info("pool on NUMA node %d (from the configuration)",
			 srv->cfg.pool.numa_node);
		return srv->cfg.pool.numa_node;
	}
	netdev_of_addr(srv->cfg.server.listen, netdev, sizeof(netdev));
	node = rmp_numa_pick_node("", ibv_get_device_name(srv->verbs->device),
				  netdev, how, sizeof(how));
	log_info("pool on NUMA node %d: %s", node, how);
	return node;
}

static int setup_pool(struct rmp_server *srv, int node)
{
	struct rmp_pool_params p = {
		.size = srv->cfg.pool.size,
		.hugepage_size = srv->cfg.pool.hugepage_size,
		.hugepages_required =
			srv->cfg.pool.hugepages == RMP_HUGEPAGES_REQUIRED,
		.node = node,
		.lock = srv->cfg.pool.lock,
		.sysroot = "",
	};
	char err[512];
	uint64_t start = rmp_now_ms();
	int ret;

	ret = rmp_pool_map(&srv->pool, &p, err, sizeof(err));
	if (ret) {
		log_err("%s", err);
		return ret;
	}
	if (err[0])
		log_warn("%s", err);
	ret = rmp_pool_register(srv->pool, srv->pd,
				srv->dev_attr.orig_attr.max_mr_size);
	if (ret) {
		log_err("registering the %" PRIu64 "-byte pool: %s",
			srv->pool->size, strerror(-ret));
		return ret;
	}
	log_info("pool: %" PRIu64 " MiB on %s, NUMA node %d, %u memory "
		 "region(s), ready in %" PRIu64 " ms", srv->pool->size >> 20,
		 srv->pool->page_size == (1ull << 30) ? "1 GiB hugepages" :
		 srv->pool->page_size ? "2 MiB hugepages" : "normal pages",
		 node, srv->pool->nchunks, rmp_now_ms() - start);
	return 0;
}

static int setup_queues(struct rmp_server *srv)
{
	const struct ibv_device_attr *da = &srv->dev_attr.orig_attr;
	struct ibv_srq_init_attr sa = { 0 };
	uint32_t i, cqe;
	int ret;

	srv->srq_depth = RMP_MIN(srv->cfg.server.max_clients *
				 srv->cfg.server.credits, SRQ_MAX);
	srv->srq_depth = RMP_MIN(srv->srq_depth, (uint32_t)da->max_srq_wr);
	if (srv->keys_mode == RMP_KEYS_REGION)
		srv->srq_depth = 0;
	srv->comp_channel = ibv_create_comp_channel(srv->verbs);
	if (!srv->comp_channel)
		return -errno;
	ret = rmp_set_nonblock(srv->comp_channel->fd);
	if (ret)
		return ret;
	/* Receives (shared, or per client in region mode) plus every
	 * client's sends (replies and key ops). */
	cqe = srv->srq_depth + srv->cfg.server.max_clients *
	      (2 * srv->cfg.server.credits + 64);
	cqe = RMP_MIN(cqe, (uint32_t)da->max_cqe);
	srv->cq = ibv_create_cq(srv->verbs, (int)cqe, srv, srv->comp_channel,
				0);
	if (!srv->cq)
		return -errno;
	if (ibv_req_notify_cq(srv->cq, 0))
		return -errno;
	if (srv->keys_mode == RMP_KEYS_REGION)
		return 0; /* every connection has its own receive queue */
	sa.attr.max_wr = srv->srq_depth;
	sa.attr.max_sge = 1;
	srv->srq = ibv_create_srq(srv->pd, &sa);
	if (!srv->srq)
		return -errno;
	srv->recv_buf = aligned_alloc(64, (size_t)srv->srq_depth *
				      RMP_MSG_MAX);
	if (!srv->recv_buf)
		return -ENOMEM;
	srv->recv_mr = ibv_reg_mr(srv->pd, srv->recv_buf,
				  (size_t)srv->srq_depth * RMP_MSG_MAX,
				  IBV_ACCESS_LOCAL_WRITE);
	if (!srv->recv_mr)
		return -errno;
	for (i = 0; i < srv->srq_depth; i++) {
		ret = post_recv(srv, i);
		if (ret)
			return ret;
	}
	return 0;
}

static int setup_events(struct rmp_server *srv)
{
	srv->base = event_base_new();
	if (!srv->base)
		return -ENOMEM;
	srv->cm_ev = event_new(srv->base, srv->cm_channel->fd,
			       EV_READ | EV_PERSIST, rmp_listener_on_cm_event,
			       srv);
	srv->cq_ev = event_new(srv->base, srv->comp_channel->fd,
			       EV_READ | EV_PERSIST, on_cq_event, srv);
	srv->expiry_ev = evtimer_new(srv->base, on_expiry, srv);
	srv->sigterm_ev = evsignal_new(srv->base, SIGTERM, on_stop_signal, srv);
	srv->sigint_ev = evsignal_new(srv->base, SIGINT, on_stop_signal, srv);
	srv->sighup_ev = evsignal_new(srv->base, SIGHUP, on_sighup, srv);
	if (!srv->cm_ev || !srv->cq_ev || !srv->expiry_ev ||
	    !srv->sigterm_ev || !srv->sigint_ev || !srv->sighup_ev)
		return -ENOMEM;
	if (event_add(srv->cm_ev, NULL) || event_add(srv->cq_ev, NULL) ||
	    event_add(srv->sigterm_ev, NULL) ||
	    event_add(srv->sigint_ev, NULL) || event_add(srv->sighup_ev, NULL))
		return -EIO;
	return 0;
}

int rmp_server_start(struct rmp_server *srv)
{
	int node, ret;

	ret = bind_listener(srv);
	if (ret)
		return ret;
	ret = open_device(srv);
	if (ret)
		return ret;
	if (ibv_query_device_ex(srv->verbs, NULL, &srv->dev_attr)) {
		log_err("ibv_query_device_ex: %s", strerror(errno));
		return -errno;
	}
	srv->keys_mode = rmp_keys_resolve(srv);
	node = choose_node(srv);
	/* The event loop runs on the pool's node. */
	if (numa_available() >= 0 && numa_run_on_node(node))
		log_warn("cannot run on NUMA node %d: %s", node,
			 strerror(errno));
	srv->pd = ibv_alloc_pd(srv->verbs);
	if (!srv->pd) {
		log_err("ibv_alloc_pd: %s", strerror(errno));
		return -errno;
	}
	ret = setup_pool(srv, node);
	if (ret)
		return ret;
	ret = setup_queues(srv);
	if (ret) {
		log_err("creating the receive queue and completion queue: %s",
			strerror(-ret));
		return ret;
	}
	srv->leases = rmp_lease_table_new();
	if (!srv->leases)
		return -ENOMEM;
	ret = setup_events(srv);
	if (ret) {
		log_err("event loop setup: %s", strerror(-ret));
		return ret;
	}
	if (rdma_listen(srv->listen_id, (int)srv->cfg.server.max_clients)) {
		log_err("rdma_listen: %s", strerror(errno));
		return -errno;
	}
	log_info("listening on %s port %u, device %s, lease keys: %s, "
		 "%u clients x %u credits", srv->cfg.server.listen,
		 srv->cfg.server.port, ibv_get_device_name(srv->verbs->device),
		 rmp_keys_mode_name(srv->keys_mode),
		 srv->cfg.server.max_clients, srv->cfg.server.credits);
	return 0;
}

int rmp_server_run(struct rmp_server *srv)
{
	return event_base_dispatch(srv->base) < 0 ? -EIO : 0;
}

/* drain_sends -- give flushed sends of closing connections a moment. */
static void drain_sends(struct rmp_server *srv)
{
	uint64_t deadline = rmp_now_ms() + STOP_DRAIN_MS;

	while (srv->conns && rmp_now_ms() < deadline)
		if (poll_cq(srv) == 0) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
}

void rmp_server_stop(struct rmp_server *srv)
{
	struct rmp_conn *c, *next;
	struct rmp_lease *l;
	uint64_t n = 0;

	srv->draining = true;
	for (c = srv->conns; c; c = next) {
		next = c->next;
		rmp_conn_close(c, "server stopping");
	}
	if (srv->leases) {
		while ((l = rmp_lease_table_first(srv->leases))) {
			rmp_service_end_lease(srv, l, "server stopping");
			n++;
		}
		if (n)
			log_info("revoked and freed %" PRIu64 " lease(s)", n);
	}
	if (srv->cq)
		drain_sends(srv);
	/* Whatever is still there did not flush in time: force it. */
	for (c = srv->conns; c; c = next) {
		next = c->next;
		c->outstanding = 0;
		rmp_conn_maybe_free(c);
	}
	if (srv->cm_ev)
		event_free(srv->cm_ev);
	if (srv->cq_ev)
		event_free(srv->cq_ev);
	if (srv->expiry_ev)
		event_free(srv->expiry_ev);
	if (srv->sigterm_ev)
		event_free(srv->sigterm_ev);
	if (srv->sigint_ev)
		event_free(srv->sigint_ev);
	if (srv->sighup_ev)
		event_free(srv->sighup_ev);
	if (srv->base)
		event_base_free(srv->base);
	rmp_lease_table_free(srv->leases);
	if (srv->srq)
		ibv_destroy_srq(srv->srq);
	if (srv->recv_mr)
		ibv_dereg_mr(srv->recv_mr);
	free(srv->recv_buf);
	if (srv->cq)
		ibv_destroy_cq(srv->cq);
	if (srv->comp_channel)
		ibv_destroy_comp_channel(srv->comp_channel);
	rmp_pool_free(srv->pool);
	if (srv->pd)
		ibv_dealloc_pd(srv->pd);
	if (srv->devices)
		rdma_free_devices(srv->devices);
	if (srv->listen_id)
		rdma_destroy_id(srv->listen_id);
	if (srv->cm_channel)
		rdma_destroy_event_channel(srv->cm_channel);
}

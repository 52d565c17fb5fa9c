/* SPDX-License-Identifier: MIT */
/* server.c -- rmpoold as a whole: set-up, the event loop, drain, stop. */
#include <errno.h>
#include <inttypes.h>
#include <numa.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <event2/event.h>

#include "admin.h"
#include "cluster.h"
#include "guard.h"
#include "tenant.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "parse.h"
#include "server.h"
#include "util.h"

#define CQ_BATCH 32
/* Completions one pass handles before the loop gets a turn. */
#define CQ_BUDGET 256
/* How long a stop waits for flushed work requests before tearing down. */
#define STOP_FLUSH_MS 2000
/* How often a drain looks whether every client has gone. */
#define DRAIN_POLL_MS 100
/* Peer addresses whose access errors are remembered. */
#define GUARD_SLOTS 1024
/* How often connections are checked for a QP that failed silently. */
#define SWEEP_MS 1000
/* How long a stop waits for etcd to revoke the node's lease. */
#define CLUSTER_LEAVE_MS 1000

/*
 * poll_cq -- handle the completions that are ready, budget at most;
 * returns how many. A pass that used its whole budget may have left some:
 * the caller gives the loop a turn before the next pass (as NAPI does),
 * so timers, signals, new connections and the admin socket are served
 * however busy the clients keep the queue. Connections share a pass in
 * the order their completions came: a connection has at most `credits`
 * requests (and their replies) in the queue at once, so none can fill a
 * pass while others wait.
 */
static int poll_cq(struct rmp_server_dev *sd, int budget)
{
	struct ibv_wc wc[CQ_BATCH];
	int n = 0, total = 0;

	while (total < budget &&
	       (n = ibv_poll_cq(sd->dev->cq, RMP_MIN(CQ_BATCH, budget - total),
				wc)) > 0) {
		for (int i = 0; i < n; i++)
			rmp_conns_on_wc(&sd->srv->conns, &wc[i]);
		total += n;
	}
	if (n < 0)
		log_err("ibv_poll_cq: %d", n);
	return total;
}

/*
 * busy_poll -- after a wake-up that found work, poll on for busy_poll_us:
 * a client in a request loop sends its next request about a round trip
 * after our reply, and finding it here saves the wake-up (interrupt,
 * epoll, channel read, re-arm) that dominates a small request's cost.
 * Each completion found starts the time again, but the event loop gets
 * control back after CQ_BUDGET completions whatever comes in (a bound in
 * work, not time: a time bound would hand the loop a turn, with its
 * system calls, every few completions of a slow machine). The CQ stays
 * armed: at worst the next wake-up finds nothing. The clock is read
 * every 16 polls that found nothing (without a vDSO clock each read is a
 * system call). Returns true when it stopped with work still coming in:
 * the caller schedules the next pass.
 */
static bool busy_poll(struct rmp_server_dev *sd)
{
	uint64_t budget = (uint64_t)sd->srv->cfg.server.busy_poll_us * 1000;
	unsigned polls = 0;
	int left = CQ_BUDGET, n;
	uint64_t end;

	if (!budget)
		return false;
	end = rmp_now_ns() + budget;
	for (;;) {
		n = poll_cq(sd, left);
		if (n > 0) {
			left -= n;
			if (left == 0)
				return true;
			end = rmp_now_ns() + budget;
			continue;
		}
		if (++polls % 16)
			continue;
		if (rmp_now_ns() >= end)
			return false;
	}
}

/*
 * cq_pass -- one pass over the completion queue (and busy polling after
 * it); if work may be left, the next pass runs on the loop's next turn,
 * after whatever else is ready then (a zero timeout: libevent runs an
 * event activated from a callback in the same turn, a timer in the next).
 */
static void cq_pass(struct rmp_server_dev *sd)
{
	static const struct timeval now = { 0, 0 };
	int n = poll_cq(sd, CQ_BUDGET);

	if (n == CQ_BUDGET || (n > 0 && busy_poll(sd)))
		event_add(sd->cq_more_ev, &now);
}

static void on_cq_event(int fd, short what, void *arg)
{
	struct rmp_server_dev *sd = arg;
	struct ibv_cq *cq;
	void *ctx;

	(void)fd;
	(void)what;
	if (ibv_get_cq_event(sd->dev->channel, &cq, &ctx))
		return; /* spurious wake-up of the non-blocking channel */
	ibv_ack_cq_events(cq, 1);
	/* Re-arm before draining so no completion slips between the two. */
	if (ibv_req_notify_cq(cq, 0))
		log_err("%s: ibv_req_notify_cq: %s", sd->dev->name,
			strerror(errno));
	cq_pass(sd);
}

/* on_cq_more -- the pass a full one left for the loop's next turn. */
static void on_cq_more(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cq_pass(arg);
}

static void on_cm_event(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;

	(void)fd;
	(void)what;
	rmp_listener_dispatch(&srv->listener);
	if (srv->listener.device_lost) {
		log_err("the RDMA device went away: stopping");
		event_base_loopbreak(srv->base);
	}
}

/* on_async_event -- what a device reports beside completions. */
static void on_async_event(int fd, short what, void *arg)
{
	struct rmp_server_dev *sd = arg;
	struct rmp_server *srv = sd->srv;
	struct ibv_async_event ev;

	(void)fd;
	(void)what;
	while (ibv_get_async_event(sd->dev->verbs, &ev) == 0) {
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_PATH_MIG:
		case IBV_EVENT_PATH_MIG_ERR:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
			rmp_conns_on_qp_event(&srv->conns, &ev);
			break;
		case IBV_EVENT_DEVICE_FATAL:
			log_err("device %s: %s: stopping", sd->dev->name,
				ibv_event_type_str(ev.event_type));
			event_base_loopbreak(srv->base);
			break;
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_PORT_ACTIVE:
			log_notice("device %s port %d: %s", sd->dev->name,
				   ev.element.port_num,
				   ibv_event_type_str(ev.event_type));
			break;
		default:
			log_info("device %s: %s", sd->dev->name,
				 ibv_event_type_str(ev.event_type));
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

static void on_sweep(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;

	(void)fd;
	(void)what;
	rmp_conns_sweep(&srv->conns);
	/* Log lines that waited for a slow journal, if it has room now. */
	rmp_log_flush();
}

static void arm_drain_poll(struct rmp_server *srv)
{
	struct timeval tv = { 0, DRAIN_POLL_MS * 1000 };

	event_add(srv->drain_ev, &tv);
}

/* on_drain_poll -- stop once every client is gone or the time is up. */
static void on_drain_poll(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;

	(void)fd;
	(void)what;
	if (srv->conns.count == 0) {
		log_notice("drained: no client left");
		event_base_loopbreak(srv->base);
	} else if (rmp_now_ms() >= srv->drain_deadline_ms) {
		log_notice("drain timeout: %u client(s) still connected",
			   srv->conns.count);
		event_base_loopbreak(srv->base);
	} else {
		arm_drain_poll(srv);
	}
}

/*
 * on_stop_signal -- the first SIGTERM/SIGINT drains: no new connections
 * or leases, existing ones keep working until their clients go or
 * drain_timeout passes. A second one stops at once.
 */
static void on_stop_signal(int sig, short what, void *arg)
{
	struct rmp_server *srv = arg;

	(void)what;
	if (srv->draining) {
		log_notice("%s again: stopping now", strsignal(sig));
		event_base_loopbreak(srv->base);
		return;
	}
	srv->draining = true;
	srv->ops.stopping = true;
	/* no new leases here: the node leaves the cluster at once */
	rmp_cluster_leave(srv->cluster);
	srv->listener.draining = true;
	rmp_lifecycle_set_draining(srv->lc, true);
	rmp_notify_stopping(srv->notify);
	srv->drain_deadline_ms = rmp_now_ms() + srv->cfg.server.drain_timeout_ms;
	log_notice("%s: draining: no new connections or leases; stopping when "
		   "the %u client(s) are gone, in %" PRIu64 " ms at most",
		   strsignal(sig), srv->conns.count,
		   srv->cfg.server.drain_timeout_ms);
	on_drain_poll(-1, 0, srv);
}

/* on_sighup -- reload the configuration (systemctl reload). */
static void on_sighup(int sig, short what, void *arg)
{
	struct rmp_server *srv = arg;
	char msg[512];

	(void)sig;
	(void)what;
	rmp_notify_reloading(srv->notify);
	rmp_ops_reload(&srv->ops, "SIGHUP", msg, sizeof(msg));
	rmp_notify_ready(srv->notify);
}

static struct event *add_event(struct rmp_server *srv, int fd, short what,
			       event_callback_fn fn)
{
	struct event *ev = event_new(srv->base, fd, what, fn, srv);

	if (ev && (what & (EV_READ | EV_SIGNAL)) && event_add(ev, NULL)) {
		event_free(ev);
		return NULL;
	}
	return ev;
}

/* add_device_event -- add_event for one served device's fd. */
static struct event *add_device_event(struct rmp_server_dev *sd, int fd,
				      short what, event_callback_fn fn)
{
	struct event *ev = event_new(sd->srv->base, fd, what, fn, sd);

	if (ev && (what & EV_READ) && event_add(ev, NULL)) {
		event_free(ev);
		return NULL;
	}
	return ev;
}

/* setup_device_events -- completions and async events of each device. */
static int setup_device_events(struct rmp_server *srv)
{
	for (unsigned i = 0; i < srv->devices.n; i++) {
		struct rmp_server_dev *sd = &srv->sdev[i];
		int ret;

		sd->srv = srv;
		sd->dev = &srv->devices.dev[i];
		ret = rmp_set_nonblock(sd->dev->verbs->async_fd);
		if (ret)
			return ret;
		sd->cq_ev = add_device_event(sd, sd->dev->channel->fd,
					     EV_READ | EV_PERSIST, on_cq_event);
		sd->cq_more_ev = add_device_event(sd, -1, 0, on_cq_more);
		sd->async_ev = add_device_event(sd, sd->dev->verbs->async_fd,
						EV_READ | EV_PERSIST,
						on_async_event);
		if (!sd->cq_ev || !sd->cq_more_ev || !sd->async_ev)
			return -ENOMEM;
	}
	return 0;
}

static int setup_events(struct rmp_server *srv)
{
	const struct timeval sweep_tv = { SWEEP_MS / 1000,
					  (SWEEP_MS % 1000) * 1000 };
	int ret = setup_device_events(srv);

	if (ret)
		return ret;
	srv->cm_ev = add_event(srv, srv->listener.channel->fd,
			       EV_READ | EV_PERSIST, on_cm_event);
	srv->drain_ev = add_event(srv, -1, 0, on_drain_poll);
	srv->sweep_ev = add_event(srv, -1, EV_PERSIST, on_sweep);
	srv->sigterm_ev = add_event(srv, SIGTERM, EV_SIGNAL | EV_PERSIST,
				    on_stop_signal);
	srv->sigint_ev = add_event(srv, SIGINT, EV_SIGNAL | EV_PERSIST,
				   on_stop_signal);
	srv->sighup_ev = add_event(srv, SIGHUP, EV_SIGNAL | EV_PERSIST,
				   on_sighup);
	if (!srv->cm_ev || !srv->drain_ev || !srv->sweep_ev ||
	    !srv->sigterm_ev || !srv->sigint_ev || !srv->sighup_ev)
		return -ENOMEM;
	return event_add(srv->sweep_ev, &sweep_tv) ? -EIO : 0;
}

/* start_leases -- the event loop, the guard, the lease lifecycle (with
 * the journal's leases) and the connections. */
static int start_leases(struct rmp_server *srv)
{
	const struct rmp_config *cfg = &srv->cfg;
	struct rmp_lifecycle_params lp;
	int ret;

	srv->base = event_base_new();
	srv->guard = rmp_guard_new(GUARD_SLOTS);
	if (!srv->base || !srv->guard)
		return -ENOMEM;
	lp.base = srv->base;
	lp.pools = srv->devices.pool;
	lp.npools = srv->devices.n;
	lp.keys_mode = srv->devices.keys_mode;
	lp.cfg = cfg;
	lp.tenants = srv->tenants;
	srv->lc = rmp_lifecycle_new(&lp);
	if (!srv->lc)
		return -ENOMEM;
	if (rmp_lifecycle_persistent(srv->lc)) {
		/* Like any other start-up failure: this start stops (said
		 * why), and the state files wait for the next. */
		ret = rmp_lifecycle_recover(srv->lc);
		if (ret)
			return ret;
	}
	rmp_conns_init(&srv->conns, srv->devices.devp, srv->devices.pool,
		       srv->devices.n, srv->lc, srv->guard, srv->tenants, cfg,
		       srv->devices.keys_mode);
	srv->listener.conns = &srv->conns;
	srv->listener.guard = srv->guard;
	srv->listener.tenants = srv->tenants;
	return 0;
}

/* start_operators -- what operators and systemd reach: the ops layer,
 * notify, the loop's events, the listener, metrics, the admin socket. */
static int start_operators(struct rmp_server *srv)
{
	const struct rmp_config *cfg = &srv->cfg;
	int ret;

	srv->ops = (struct rmp_ops){
		.cfg = &srv->cfg,
		.config_path = srv->config_path,
		.verbose = srv->verbose,
		.lc = srv->lc,
		.conns = &srv->conns,
		.listener = &srv->listener,
		.tenants = srv->tenants,
		.devs = srv->devices.devp,
		.pools = srv->devices.pool,
		.ndevs = srv->devices.n,
		.keys_mode = srv->devices.keys_mode,
		.started_ms = rmp_now_ms(),
	};
	srv->notify = rmp_notify_new(srv->base, &srv->ops);
	if (!srv->notify)
		return -ENOMEM;
	ret = setup_events(srv);
	if (ret) {
		log_err("event loop setup: %s", strerror(-ret));
		return ret;
	}
	ret = rmp_listener_listen(&srv->listener);
	if (ret)
		return ret;
	if (cfg->server.metrics_listen[0]) {
		srv->metrics = rmp_metrics_new(srv->base, &srv->ops,
					       cfg->server.metrics_listen);
		if (!srv->metrics)
			return -errno;
	}
	if (cfg->server.admin_socket[0]) {
		srv->admin = rmp_admin_new(srv->base, &srv->ops,
					   cfg->server.admin_socket,
					   cfg->server.admin_group);
		if (!srv->admin)
			return -errno;
	}
	if (cfg->cluster.etcd[0]) {
		srv->cluster = rmp_cluster_new(srv->base, &srv->ops, cfg);
		if (!srv->cluster)
			return -errno;
	}
	return 0;
}

/* bind_listener -- one listening id per [server] listen address. */
static int bind_listener(struct rmp_server *srv)
{
	const struct rmp_config *cfg = &srv->cfg;
	const char *s = cfg->server.listen, *b, *e;
	char addr[RMP_CONFIG_ADDR_LEN];
	int ret = 0;

	srv->listener.max_clients = cfg->server.max_clients;
	while (!ret && rmp_list_item(&s, &b, &e)) {
		snprintf(addr, sizeof(addr), "%.*s", (int)(e - b), b);
		ret = rmp_listener_bind(&srv->listener, addr,
					cfg->server.port);
	}
	return ret;
}

/*
 * start_devices -- the devices served and their pools. The event loop
 * (and the zeroing thread it starts) runs on the pools' NUMA node when
 * they share one; the pools are bound to theirs whatever runs where.
 */
static int start_devices(struct rmp_server *srv)
{
	struct rmp_devices *ds = &srv->devices;
	int ret, node;

	ret = rmp_devices_open(ds, &srv->cfg, &srv->listener);
	if (ret)
		return ret;
	node = ds->dev[0].node;
	for (unsigned i = 1; i < ds->n; i++)
		if (ds->dev[i].node != node)
			node = -1;
	if (node >= 0 && numa_available() >= 0 && numa_run_on_node(node))
		log_warn("cannot run on NUMA node %d: %s", node,
			 strerror(errno));
	return rmp_devices_map_pools(ds, &srv->cfg);
}

/* served -- "rxe0 (node 1), rxe1 (node 0)" for the start's log line. */
static void served(const struct rmp_devices *ds, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < ds->n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s (NUMA node %d)",
				      i ? ", " : "", ds->dev[i].name,
				      ds->dev[i].node);
}

int rmp_server_start(struct rmp_server *srv)
{
	const struct rmp_config *cfg = &srv->cfg;
	char devs[RMP_DEVICES_MAX * 96];
	int ret;

	/* Key files first: a bad one stops the start before any pinning. */
	srv->tenants = rmp_tenants_new(cfg);
	if (!srv->tenants)
		return -EINVAL;
	ret = bind_listener(srv);
	if (!ret)
		ret = start_devices(srv);
	if (!ret)
		ret = start_leases(srv);
	if (!ret)
		ret = start_operators(srv);
	if (ret)
		return ret;
	served(&srv->devices, devs, sizeof(devs));
	log_info("listening on %s port %u, device(s) %s, lease keys: %s, "
		 "%u clients x %u credits", cfg->server.listen,
		 cfg->server.port, devs,
		 rmp_keys_mode_name(srv->devices.keys_mode),
		 cfg->server.max_clients, cfg->server.credits);
	rmp_notify_ready(srv->notify);
	return 0;
}

int rmp_server_run(struct rmp_server *srv)
{
	return event_base_dispatch(srv->base) < 0 ? -EIO : 0;
}

/* poll_all -- one pass over every device's completion queue. */
static int poll_all(struct rmp_server *srv)
{
	int n = 0;

	for (unsigned i = 0; i < srv->devices.n; i++)
		if (srv->sdev[i].dev)
			n += poll_cq(&srv->sdev[i], CQ_BUDGET);
	return n;
}

/* flush -- let the killed QPs' work requests complete, for a while. */
static void flush(struct rmp_server *srv)
{
	uint64_t deadline = rmp_now_ms() + STOP_FLUSH_MS;
	struct rmp_lifecycle_stats st;

	for (;;) {
		rmp_lifecycle_stats(srv->lc, &st);
		if (!srv->conns.count && !st.revoking)
			break;
		if (rmp_now_ms() >= deadline)
			break;
		if (poll_all(srv) == 0) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
}

static void wake(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/*
 * leave_cluster -- revoke the node's etcd lease (if a SIGTERM did not
 * already) and give etcd CLUSTER_LEAVE_MS to say it did: the loop runs
 * on meanwhile, as it did before the stop. Past that the key goes when
 * its ttl runs out.
 */
static void leave_cluster(struct rmp_server *srv)
{
	const struct timeval tick = { 0, 50000 };
	uint64_t end = rmp_now_ms() + CLUSTER_LEAVE_MS;
	struct event *ev;

	if (!srv->cluster)
		return;
	rmp_cluster_leave(srv->cluster);
	ev = event_new(srv->base, -1, EV_PERSIST, wake, NULL);
	if (ev && !event_add(ev, &tick))
		while (!rmp_cluster_gone(srv->cluster) && rmp_now_ms() < end)
			event_base_loop(srv->base, EVLOOP_ONCE);
	if (ev)
		event_free(ev);
	rmp_cluster_free(srv->cluster);
	srv->cluster = NULL;
}

void rmp_server_stop(struct rmp_server *srv)
{
	struct event **evs[] = { &srv->cm_ev, &srv->drain_ev, &srv->sweep_ev,
				 &srv->sigterm_ev, &srv->sigint_ev,
				 &srv->sighup_ev };

	srv->listener.draining = true;
	rmp_notify_stopping(srv->notify);
	leave_cluster(srv);
	rmp_metrics_free(srv->metrics);
	srv->metrics = NULL;
	rmp_admin_free(srv->admin);
	srv->admin = NULL;
	if (srv->lc) {
		rmp_lifecycle_set_draining(srv->lc, true);
		rmp_conns_close_all(&srv->conns, "server stopping");
		/* With a journal the leases stay for the next start (their
		 * keys die with the connections); else they end now. */
		if (rmp_lifecycle_persistent(srv->lc)) {
			struct rmp_lifecycle_stats st;

			rmp_lifecycle_stats(srv->lc, &st);
			log_info("%" PRIu64 " lease(s) of %" PRIu64 " bytes kept "
				 "for the next start", st.leases,
				 st.leased_bytes);
		} else {
			rmp_lifecycle_end_all(srv->lc, "server stopping");
		}
		flush(srv);
		/* Whatever did not flush in time is torn down anyway. */
		rmp_conns_force_free(&srv->conns);
	}
	rmp_lifecycle_free(srv->lc);
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (*evs[i])
			event_free(*evs[i]);
	for (unsigned i = 0; i < RMP_DEVICES_MAX; i++) {
		struct event *dev_evs[] = { srv->sdev[i].cq_ev,
					    srv->sdev[i].cq_more_ev,
					    srv->sdev[i].async_ev };

		for (size_t k = 0; k < 3; k++)
			if (dev_evs[k])
				event_free(dev_evs[k]);
	}
	rmp_notify_free(srv->notify);
	if (srv->base)
		event_base_free(srv->base);
	rmp_guard_free(srv->guard);
	rmp_tenants_free(srv->tenants);
	rmp_devices_close(&srv->devices);
	rmp_listener_close(&srv->listener);
}

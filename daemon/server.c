/* SPDX-License-Identifier: MIT */
/* server.c -- rmpoold as a whole: set-up, the event loop, drain, stop. */
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <numa.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <event2/event.h>

#include "admin.h"
#include "cluster.h"
#include "guard.h"
#include "journal.h"
#include "tenant.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "pool.h"
#include "server.h"
#include "topology.h"
#include "util.h"

/* Receive buffers shared by all clients: one per credit per client,
 * bounded by what the device allows. */
#define SRQ_MAX 4096u
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
static int poll_cq(struct rmp_server *srv, int budget)
{
	struct ibv_wc wc[CQ_BATCH];
	int n = 0, total = 0;

	while (total < budget &&
	       (n = ibv_poll_cq(srv->dev.cq, RMP_MIN(CQ_BATCH, budget - total),
				wc)) > 0) {
		for (int i = 0; i < n; i++)
			rmp_conns_on_wc(&srv->conns, &wc[i]);
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
static bool busy_poll(struct rmp_server *srv)
{
	uint64_t budget = (uint64_t)srv->cfg.server.busy_poll_us * 1000;
	unsigned polls = 0;
	int left = CQ_BUDGET, n;
	uint64_t end;

	if (!budget)
		return false;
	end = rmp_now_ns() + budget;
	for (;;) {
		n = poll_cq(srv, left);
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
static void cq_pass(struct rmp_server *srv)
{
	static const struct timeval now = { 0, 0 };
	int n = poll_cq(srv, CQ_BUDGET);

	if (n == CQ_BUDGET || (n > 0 && busy_poll(srv)))
		event_add(srv->cq_more_ev, &now);
}

static void on_cq_event(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;
	struct ibv_cq *cq;
	void *ctx;

	(void)fd;
	(void)what;
	if (ibv_get_cq_event(srv->dev.channel, &cq, &ctx))
		return; /* spurious wake-up of the non-blocking channel */
	ibv_ack_cq_events(cq, 1);
	/* Re-arm before draining so no completion slips between the two. */
	if (ibv_req_notify_cq(cq, 0))
		log_err("ibv_req_notify_cq: %s", strerror(errno));
	cq_pass(srv);
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

/* on_async_event -- what the device reports beside completions. */
static void on_async_event(int fd, short what, void *arg)
{
	struct rmp_server *srv = arg;
	struct ibv_async_event ev;

	(void)fd;
	(void)what;
	while (ibv_get_async_event(srv->dev.verbs, &ev) == 0) {
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
			log_err("device: %s: stopping",
				ibv_event_type_str(ev.event_type));
			event_base_loopbreak(srv->base);
			break;
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_PORT_ACTIVE:
			log_notice("device port %d: %s", ev.element.port_num,
				   ibv_event_type_str(ev.event_type));
			break;
		default:
			log_info("device: %s",
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

/*
 * open_device -- the verbs context: the listen address's device, or the
 * configured/first device when listening on a wildcard address. Either
 * way it is librdmacm's own context for that device, the one incoming
 * connection ids carry, so PD, CQ and SRQ can serve them.
 */
static int open_device(struct rmp_server *srv, struct ibv_context **out)
{
	int n;

	if (srv->listener.id->verbs) {
		*out = srv->listener.id->verbs;
		return 0;
	}
	srv->devices = rdma_get_devices(&n);
	if (!srv->devices)
		return -errno;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(srv->devices[i]->device);

		if (!srv->cfg.server.device[0] ||
		    !strcmp(name, srv->cfg.server.device)) {
			*out = srv->devices[i];
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

/* choose_node -- the NUMA node for the pool, as the design prescribes. */
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
	node = rmp_numa_pick_node("", ibv_get_device_name(srv->dev.verbs->device),
				  netdev, how, sizeof(how));
	log_info("pool on NUMA node %d: %s", node, how);
	return node;
}

/*
 * resolve_keys -- the key mode, and the rights the pool's own MRs get:
 * remote rights only in pool mode, where the pool key is what clients
 * use. In window mode the windows carry the rights, in region mode the
 * per-lease MRs (in each connection's own PD).
 */
static int resolve_keys(struct rmp_server *srv, unsigned *access)
{
	bool mw2 = rmp_device_has_mw2(&srv->dev);

	switch (srv->cfg.lease.lease_keys) {
	case RMP_LEASE_KEYS_WINDOW:
		if (!mw2) {
			log_err("lease_keys = window: device %s has no type-2 "
				"memory windows; use region",
				ibv_get_device_name(srv->dev.verbs->device));
			return -EOPNOTSUPP;
		}
		srv->keys_mode = RMP_KEYS_WINDOW;
		break;
	case RMP_LEASE_KEYS_REGION:
		srv->keys_mode = RMP_KEYS_REGION;
		break;
	case RMP_LEASE_KEYS_POOL:
		srv->keys_mode = RMP_KEYS_POOL;
		break;
	default:
		srv->keys_mode = mw2 ? RMP_KEYS_WINDOW : RMP_KEYS_REGION;
		break;
	}
	switch (srv->keys_mode) {
	case RMP_KEYS_WINDOW:
		*access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
		if (srv->dev.attr.orig_attr.vendor_id == RMP_RXE_VENDOR_ID)
			log_warn("lease_keys = window on Soft-RoCE: a client "
				 "that sends two SENDs with invalidate of its "
				 "window crashes this kernel (a NULL "
				 "dereference in rdma_rxe, Linux 6.1); with "
				 "clients you do not trust use region");
		break;
	case RMP_KEYS_REGION:
		*access = IBV_ACCESS_LOCAL_WRITE;
		break;
	default:
		*access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
		log_warn("lease_keys = pool: no isolation, every client can "
			 "reach every lease (only the client library checks "
			 "bounds, and keys cannot be revoked)");
		break;
	}
	return 0;
}

/*
 * open_journal -- the lease journal in the state file's tail. A journal
 * that cannot be used (another boot, pool size, damage) is formatted, and
 * the pool's old bytes are then all zeroed by the recovery.
 */
static int open_journal(struct rmp_server *srv, const char *path)
{
	char why[256];
	int ret;

	ret = rmp_journal_open(&srv->journal, srv->pool->state,
			       srv->pool->state_len, srv->pool->size,
			       &srv->journal_found, why, sizeof(why));
	if (ret) {
		log_err("lease journal in %s: %s", path, strerror(-ret));
		return ret;
	}
	if (srv->pool->adopted && !srv->journal_found)
		log_warn("state file %s: its leases are not recovered: %s; "
			 "its memory is zeroed", path, why[0] ? why :
			 "no journal in it");
	else if (srv->pool->adopted)
		log_info("state file %s: adopting the pool and leases of an "
			 "earlier run", path);
	else
		log_info("state file %s: new; leases outlive restarts", path);
	return 0;
}

/* The name of the pool's memfd in systemd's file descriptor store. */
#define FDSTORE_NAME "rmpool-pool"
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26 /* linux/memfd.h, as MAP_HUGE_SHIFT */
#endif

/* new_pool_memfd -- an empty memfd for the pool: on hugepages of the
 * configured size when they are asked for (or preferred and there). */
static int new_pool_memfd(const struct rmp_config *cfg)
{
	unsigned flags = MFD_CLOEXEC;
	int fd;

	fd = memfd_create(FDSTORE_NAME, flags | MFD_HUGETLB |
			  ((unsigned)__builtin_ctzll(cfg->pool.hugepage_size)
			   << MFD_HUGE_SHIFT));
	if (fd >= 0 || cfg->pool.hugepages == RMP_HUGEPAGES_REQUIRED)
		return fd;
	return memfd_create(FDSTORE_NAME, flags); /* normal pages */
}

static int setup_pool(struct rmp_server *srv, int node, unsigned access)
{
	const char *dir = srv->cfg.pool.state_dir;
	struct rmp_pool_params p = {
		.size = srv->cfg.pool.size,
		.hugepage_size = srv->cfg.pool.hugepage_size,
		.hugepages_required =
			srv->cfg.pool.hugepages == RMP_HUGEPAGES_REQUIRED,
		.node = node,
		.lock = srv->cfg.pool.lock,
		.sysroot = "",
		.state_bytes = rmp_journal_bytes(srv->cfg.pool.max_leases),
	};
	char err[512], path[RMP_CONFIG_PATH_LEN + 8];
	uint64_t start = rmp_now_ns();
	bool new_memfd = false;
	int ret;

	if (srv->cfg.pool.fdstore) {
		/* The memfd an earlier run stored, or a new one to store. */
		p.has_state_fd = true;
		p.state_fd = rmp_fdstore_take(FDSTORE_NAME);
		if (p.state_fd < 0) {
			p.state_fd = new_pool_memfd(&srv->cfg);
			if (p.state_fd < 0) {
				ret = -errno;
				log_err("memfd for the pool: %s",
					strerror(-ret));
				return ret;
			}
			new_memfd = true;
		}
		snprintf(path, sizeof(path), "memfd %s", FDSTORE_NAME);
		p.state_file = path;
	} else if (dir[0]) {
		if (mkdir(dir, 0700) && errno != EEXIST) {
			ret = -errno;
			log_err("state_dir %s: %s", dir, strerror(-ret));
			return ret;
		}
		/* One that was there may be anybody's: the state file must
		 * not be someone else's to make or replace. */
		ret = rmp_private_dir(dir, err, sizeof(err));
		if (ret) {
			log_err("state_dir %s", err);
			return ret;
		}
		snprintf(path, sizeof(path), "%s/pool", dir);
		p.state_file = path;
	}
	ret = rmp_pool_map(&srv->pool, &p, err, sizeof(err));
	if (ret) {
		log_err("%s", err);
		return ret;
	}
	if (err[0])
		log_warn("%s", err);
	if (new_memfd) {
		ret = rmp_fdstore_put(srv->pool->state_fd, FDSTORE_NAME);
		if (ret <= 0)
			log_warn("pool memfd not stored with the service manager "
				 "(%s): a restart ends every lease",
				 ret == 0 ? "not run by systemd" : strerror(-ret));
		else
			log_info("pool memfd stored with the service manager "
				 "(FDSTORE): a restart keeps the leases");
	}
	if (p.state_file) {
		ret = open_journal(srv, path);
		if (ret)
			return ret;
	}
	ret = rmp_pool_register(srv->pool, srv->dev.pd,
				srv->dev.attr.orig_attr.max_mr_size, access);
	if (ret) {
		log_err("registering the %" PRIu64 "-byte pool: %s",
			srv->pool->size, strerror(-ret));
		return ret;
	}
	log_info("pool: %" PRIu64 " MiB on %s, NUMA node %d, %u memory "
		 "region(s)%s, ready in %" PRIu64 " ms", srv->pool->size >> 20,
		 srv->pool->page_size == (1ull << 30) ? "1 GiB hugepages" :
		 srv->pool->page_size ? "2 MiB hugepages" : "normal pages",
		 node, srv->pool->nchunks,
		 srv->keys_mode == RMP_KEYS_POOL ? " with remote rights" :
		 " without remote rights", (rmp_now_ns() - start) / 1000000u);
	return 0;
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

static int setup_events(struct rmp_server *srv)
{
	const struct timeval sweep_tv = { SWEEP_MS / 1000,
					  (SWEEP_MS % 1000) * 1000 };
	int ret = rmp_set_nonblock(srv->dev.verbs->async_fd);

	if (ret)
		return ret;
	srv->cm_ev = add_event(srv, srv->listener.channel->fd,
			       EV_READ | EV_PERSIST, on_cm_event);
	srv->cq_ev = add_event(srv, srv->dev.channel->fd, EV_READ | EV_PERSIST,
			       on_cq_event);
	srv->cq_more_ev = add_event(srv, -1, 0, on_cq_more);
	srv->async_ev = add_event(srv, srv->dev.verbs->async_fd,
				  EV_READ | EV_PERSIST, on_async_event);
	srv->drain_ev = add_event(srv, -1, 0, on_drain_poll);
	srv->sweep_ev = add_event(srv, -1, EV_PERSIST, on_sweep);
	srv->sigterm_ev = add_event(srv, SIGTERM, EV_SIGNAL | EV_PERSIST,
				    on_stop_signal);
	srv->sigint_ev = add_event(srv, SIGINT, EV_SIGNAL | EV_PERSIST,
				   on_stop_signal);
	srv->sighup_ev = add_event(srv, SIGHUP, EV_SIGNAL | EV_PERSIST,
				   on_sighup);
	if (!srv->cm_ev || !srv->cq_ev || !srv->cq_more_ev || !srv->async_ev ||
	    !srv->drain_ev ||
	    !srv->sweep_ev || !srv->sigterm_ev || !srv->sigint_ev ||
	    !srv->sighup_ev)
		return -ENOMEM;
	return event_add(srv->sweep_ev, &sweep_tv) ? -EIO : 0;
}

/* start_device -- the RDMA device, its keys mode, and the pool pinned
 * on its node (the loop runs there too); *verbs: the device. */
static int start_device(struct rmp_server *srv, struct ibv_context **verbs)
{
	const struct rmp_config *cfg = &srv->cfg;
	uint32_t credits = cfg->server.credits, srq_depth;
	unsigned access;
	int node, ret;

	ret = open_device(srv, verbs);
	if (ret)
		return ret;
	srv->listener.verbs = *verbs;
	/* The shared receives, plus what each client may have due. */
	ret = rmp_device_open(&srv->dev, *verbs, SRQ_MAX +
			      cfg->server.max_clients *
			      rmp_conn_cq_entries(credits));
	if (ret == -E2BIG)
		log_err("lower [server] max_clients (%u) or credits (%u): "
			"each client may have %u completions due",
			cfg->server.max_clients, credits,
			rmp_conn_cq_entries(credits));
	if (ret)
		return ret;
	ret = resolve_keys(srv, &access);
	if (ret)
		return ret;
	node = choose_node(srv);
	/* The event loop (and the zeroing thread it starts) runs on the
	 * pool's node. */
	if (numa_available() >= 0 && numa_run_on_node(node))
		log_warn("cannot run on NUMA node %d: %s", node,
			 strerror(errno));
	ret = setup_pool(srv, node, access);
	if (ret)
		return ret;
	if (srv->keys_mode != RMP_KEYS_REGION) {
		srq_depth = RMP_MIN(cfg->server.max_clients * credits, SRQ_MAX);
		ret = rmp_device_add_srq(&srv->dev, srq_depth);
		if (ret)
			return ret;
	}
	return 0;
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
	lp.pool = srv->pool;
	lp.keys_mode = srv->keys_mode;
	lp.cfg = cfg;
	lp.journal = srv->journal;
	lp.tenants = srv->tenants;
	srv->lc = rmp_lifecycle_new(&lp);
	if (!srv->lc)
		return -ENOMEM;
	if (srv->journal) {
		/* Like any other start-up failure: this start stops (said
		 * why), and the state file waits for the next. */
		ret = rmp_lifecycle_recover(srv->lc, srv->journal_found,
					    srv->pool->adopted);
		if (ret)
			return ret;
	}
	rmp_conns_init(&srv->conns, &srv->dev, srv->lc, srv->guard,
		       srv->tenants, cfg, srv->pool, srv->keys_mode);
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
		.pool = srv->pool,
		.journal = srv->journal,
		.dev = &srv->dev,
		.keys_mode = srv->keys_mode,
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

int rmp_server_start(struct rmp_server *srv)
{
	const struct rmp_config *cfg = &srv->cfg;
	struct ibv_context *verbs = NULL;
	int ret;

	/* Key files first: a bad one stops the start before any pinning. */
	srv->tenants = rmp_tenants_new(cfg);
	if (!srv->tenants)
		return -EINVAL;
	srv->listener.max_clients = cfg->server.max_clients;
	ret = rmp_listener_bind(&srv->listener, cfg->server.listen,
				cfg->server.port);
	if (!ret)
		ret = start_device(srv, &verbs);
	if (!ret)
		ret = start_leases(srv);
	if (!ret)
		ret = start_operators(srv);
	if (ret)
		return ret;
	log_info("listening on %s port %u, device %s, lease keys: %s, "
		 "%u clients x %u credits", cfg->server.listen,
		 cfg->server.port, ibv_get_device_name(verbs->device),
		 rmp_keys_mode_name(srv->keys_mode), cfg->server.max_clients,
		 cfg->server.credits);
	rmp_notify_ready(srv->notify);
	return 0;
}

int rmp_server_run(struct rmp_server *srv)
{
	return event_base_dispatch(srv->base) < 0 ? -EIO : 0;
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
		if (poll_cq(srv, CQ_BUDGET) == 0) {
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
	struct event **evs[] = { &srv->cm_ev, &srv->cq_ev, &srv->cq_more_ev,
				 &srv->async_ev,
				 &srv->drain_ev, &srv->sweep_ev, &srv->sigterm_ev,
				 &srv->sigint_ev, &srv->sighup_ev };

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
	rmp_notify_free(srv->notify);
	if (srv->base)
		event_base_free(srv->base);
	rmp_guard_free(srv->guard);
	rmp_tenants_free(srv->tenants);
	rmp_journal_close(srv->journal);
	rmp_pool_free(srv->pool);
	rmp_device_close(&srv->dev);
	rmp_listener_close(&srv->listener);
	if (srv->devices)
		rdma_free_devices(srv->devices);
}

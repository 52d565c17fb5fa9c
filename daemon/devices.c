/* SPDX-License-Identifier: MIT */
/* devices.c -- the RDMA devices rmpoold serves, each with its own pool. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "devices.h"
#include "journal.h"
#include "log.h"
#include "notify.h"
#include "topology.h"
#include "util.h"

/* Receive buffers shared by a device's clients: one per credit per
 * client, bounded by what the device allows. */
#define SRQ_MAX 4096u
/* The pool's memfd in systemd's file descriptor store: FDSTORE_PREFIX
 * and the device's name; before several devices, device 0's was
 * FDSTORE_LEGACY (and its state file state_dir/pool). */
#define FDSTORE_PREFIX "rmpool-pool-"
#define FDSTORE_NAME_LEN (sizeof(FDSTORE_PREFIX) + RMP_CONFIG_IBDEV_LEN)
_Static_assert(RMP_CONFIG_DEVICES_MAX == RMP_DEVICES_MAX,
	       "[server] device lists what the pools can be registered on");
#define FDSTORE_LEGACY "rmpool-pool"
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26 /* linux/memfd.h, as MAP_HUGE_SHIFT */
#endif

/* netdev_of_addr -- name of the interface that holds address addr. */
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

/* has_active_port -- some port of verbs is ACTIVE. */
static bool has_active_port(struct ibv_context *verbs)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;

	if (ibv_query_device(verbs, &da))
		return false;
	for (unsigned p = 1; p <= da.phys_port_cnt; p++)
		if (!ibv_query_port(verbs, (uint8_t)p, &pa) &&
		    pa.state == IBV_PORT_ACTIVE)
			return true;
	return false;
}

/* add -- serve verbs as the next device (once: 0 when it is already). */
static int add(struct rmp_devices *ds, struct ibv_context *verbs,
	       const char *addr)
{
	for (unsigned i = 0; i < ds->n; i++)
		if (ds->dev[i].verbs == verbs)
			return 0;
	if (ds->n == RMP_DEVICES_MAX) {
		log_err("more than %u RDMA devices to serve", RMP_DEVICES_MAX);
		return -E2BIG;
	}
	ds->dev[ds->n].verbs = verbs;
	ds->dev[ds->n].index = ds->n;
	rmp_strlcpy(ds->dev[ds->n].name, ibv_get_device_name(verbs->device),
		    sizeof(ds->dev[ds->n].name));
	rmp_strlcpy(ds->addr[ds->n], addr, sizeof(ds->addr[ds->n]));
	if (addr[0])
		netdev_of_addr(addr, ds->netdev[ds->n],
			       sizeof(ds->netdev[ds->n]));
	ds->devp[ds->n] = &ds->dev[ds->n];
	ds->n++;
	return 0;
}

/* named -- the device called name in ds->list, or NULL. */
static struct ibv_context *named(const struct rmp_devices *ds, int n,
				 const char *name, size_t len)
{
	for (int i = 0; i < n; i++) {
		const char *d = ibv_get_device_name(ds->list[i]->device);

		if (strlen(d) == len && !strncmp(d, name, len))
			return ds->list[i];
	}
	return NULL;
}

/* listed -- name is one of the devices of [server] device. */
static bool listed(const char *list, const char *name)
{
	const char *s = list, *b, *e;

	while (rmp_list_item(&s, &b, &e))
		if ((size_t)(e - b) == strlen(name) &&
		    !strncmp(b, name, (size_t)(e - b)))
			return true;
	return false;
}

/* by_wildcard -- the devices of a wildcard listener: those configured,
 * else every one with an ACTIVE port. */
static int by_wildcard(struct rmp_devices *ds, const struct rmp_config *cfg)
{
	const char *s = cfg->server.device, *b, *e;
	struct ibv_context *v;
	int n, ret;

	ds->list = rdma_get_devices(&n);
	if (!ds->list)
		return -errno;
	if (cfg->server.device[0]) {
		while (rmp_list_item(&s, &b, &e)) {
			v = named(ds, n, b, (size_t)(e - b));
			if (!v) {
				log_err("no RDMA device %.*s (see rdma link "
					"show)", (int)(e - b), b);
				return -ENODEV;
			}
			ret = add(ds, v, "");
			if (ret)
				return ret;
		}
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (!has_active_port(ds->list[i])) {
			log_info("device %s: no ACTIVE port, not served",
				 ibv_get_device_name(ds->list[i]->device));
			continue;
		}
		if (ds->n == RMP_DEVICES_MAX) {
			/* A host of many ports (SR-IOV functions, say): which
			 * to serve is the operator's choice. */
			log_err("more than %u RDMA devices have an ACTIVE port: "
				"name those to serve in [server] device",
				RMP_DEVICES_MAX);
			return -E2BIG;
		}
		ret = add(ds, ds->list[i], "");
		if (ret)
			return ret;
	}
	if (ds->n == 0) {
		log_err("no RDMA device with an ACTIVE port (see rdma link "
			"show)");
		return -ENODEV;
	}
	return 0;
}

/* by_address -- the devices of the concrete listen addresses; those of
 * [server] device, when set, must be the same. */
static int by_address(struct rmp_devices *ds, const struct rmp_config *cfg,
		      const struct rmp_listener *ls)
{
	const char *s = cfg->server.listen, *b, *e;
	char addr[RMP_CONFIG_ADDR_LEN];
	int ret;

	for (unsigned i = 0; i < ls->nids; i++) {
		if (!rmp_list_item(&s, &b, &e))
			return -EINVAL;
		snprintf(addr, sizeof(addr), "%.*s", (int)(e - b), b);
		if (!ls->ids[i]->verbs) {
			log_err("listen address %s is on no RDMA device (see "
				"rdma link show)", addr);
			return -ENODEV;
		}
		ret = add(ds, ls->ids[i]->verbs, addr);
		if (ret)
			return ret;
		if (cfg->server.device[0] &&
		    !listed(cfg->server.device, ds->dev[ds->n - 1].name)) {
			log_err("listen address %s is on device %s, which "
				"[server] device = %s does not name", addr,
				ds->dev[ds->n - 1].name, cfg->server.device);
			return -EINVAL;
		}
	}
	s = cfg->server.device;
	while (rmp_list_item(&s, &b, &e)) {
		bool found = false;

		for (unsigned i = 0; i < ds->n; i++)
			found |= strlen(ds->dev[i].name) == (size_t)(e - b) &&
				 !strncmp(ds->dev[i].name, b, (size_t)(e - b));
		if (!found && e > b) {
			log_err("[server] device %.*s: no listen address is "
				"on it (listen = %s)", (int)(e - b), b,
				cfg->server.listen);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * resolve_keys -- the key mode of every device: window only when all of
 * them have type-2 memory windows.
 */
static int resolve_keys(struct rmp_devices *ds, const struct rmp_config *cfg)
{
	const struct rmp_device *no_mw2 = NULL;
	bool rxe = false;

	for (unsigned i = 0; i < ds->n; i++) {
		if (!rmp_device_has_mw2(&ds->dev[i]) && !no_mw2)
			no_mw2 = &ds->dev[i];
		rxe |= ds->dev[i].attr.orig_attr.vendor_id ==
		       RMP_RXE_VENDOR_ID;
	}
	switch (cfg->lease.lease_keys) {
	case RMP_LEASE_KEYS_WINDOW:
		if (no_mw2) {
			log_err("lease_keys = window: device %s has no type-2 "
				"memory windows; use region", no_mw2->name);
			return -EOPNOTSUPP;
		}
		ds->keys_mode = RMP_KEYS_WINDOW;
		break;
	case RMP_LEASE_KEYS_REGION:
		ds->keys_mode = RMP_KEYS_REGION;
		break;
	case RMP_LEASE_KEYS_POOL:
		ds->keys_mode = RMP_KEYS_POOL;
		break;
	default:
		ds->keys_mode = no_mw2 ? RMP_KEYS_REGION : RMP_KEYS_WINDOW;
		break;
	}
	if (ds->keys_mode == RMP_KEYS_WINDOW && rxe)
		log_warn("lease_keys = window on Soft-RoCE: a client that sends "
			 "two SENDs with invalidate of its window crashes this "
			 "kernel (a NULL dereference in rdma_rxe, Linux 6.1); "
			 "with clients you do not trust use region");
	if (ds->keys_mode == RMP_KEYS_POOL)
		log_warn("lease_keys = pool: no isolation, every client can "
			 "reach every lease (only the client library checks "
			 "bounds, and keys cannot be revoked)");
	return 0;
}

/* choose_node -- the NUMA node of device d's pool, as the design
 * prescribes. */
static int choose_node(const struct rmp_devices *ds, unsigned d,
		       const struct rmp_config *cfg)
{
	char how[512];
	int node;

	if (cfg->pool.numa_node >= 0) {
		log_info("%s: pool on NUMA node %d (from the configuration)",
			 ds->dev[d].name, cfg->pool.numa_node);
		return cfg->pool.numa_node;
	}
	node = rmp_numa_pick_node("", ds->dev[d].name, ds->netdev[d], how,
				  sizeof(how));
	log_info("%s: pool on NUMA node %d: %s", ds->dev[d].name, node, how);
	return node;
}

int rmp_devices_open(struct rmp_devices *ds, const struct rmp_config *cfg,
		     const struct rmp_listener *ls)
{
	uint32_t credits = cfg->server.credits;
	int ret;

	ret = ls->wildcard ? by_wildcard(ds, cfg) : by_address(ds, cfg, ls);
	if (ret)
		return ret;
	for (unsigned i = 0; i < ds->n; i++) {
		/* The shared receives, plus what each client may have due:
		 * any number of them may come in on one device. */
		ret = rmp_device_open(&ds->dev[i], ds->dev[i].verbs, SRQ_MAX +
				      cfg->server.max_clients *
				      rmp_conn_cq_entries(credits));
		if (ret == -E2BIG)
			log_err("lower [server] max_clients (%u) or credits "
				"(%u): each client may have %u completions due",
				cfg->server.max_clients, credits,
				rmp_conn_cq_entries(credits));
		if (ret) {
			log_err("device %s cannot be served", ds->dev[i].name);
			return ret;
		}
		ds->dev[i].node = choose_node(ds, i, cfg);
	}
	return resolve_keys(ds, cfg);
}

/* ------------------------------------------------------------ pools */

/* new_pool_memfd -- an empty memfd for a pool: on hugepages of the
 * configured size when they are asked for (or preferred and there). */
static int new_pool_memfd(const struct rmp_config *cfg, const char *name)
{
	unsigned flags = MFD_CLOEXEC;
	int fd;

	fd = memfd_create(name, flags | MFD_HUGETLB |
			  ((unsigned)__builtin_ctzll(cfg->pool.hugepage_size)
			   << MFD_HUGE_SHIFT));
	if (fd >= 0 || cfg->pool.hugepages == RMP_HUGEPAGES_REQUIRED)
		return fd;
	return memfd_create(name, flags); /* normal pages */
}

/*
 * open_journal -- the lease journal in the state file's tail. A journal
 * that cannot be used (another boot, pool size, damage) is formatted, and
 * the pool's old bytes are then all zeroed by the recovery.
 */
static int open_journal(struct rmp_pool *pool, const char *path)
{
	char why[256];
	int ret;

	ret = rmp_journal_open(&pool->journal, pool->state, pool->state_len,
			       pool->size, &pool->journal_found, why,
			       sizeof(why));
	if (ret) {
		log_err("lease journal in %s: %s", path, strerror(-ret));
		return ret;
	}
	if (pool->adopted && !pool->journal_found)
		log_warn("state file %s: its leases are not recovered: %s; "
			 "its memory is zeroed", path, why[0] ? why :
			 "no journal in it");
	else if (pool->adopted)
		log_info("state file %s: adopting the pool and leases of an "
			 "earlier run", path);
	else
		log_info("state file %s: new; leases outlive restarts", path);
	return 0;
}

/* state_dir_file -- device d's state file in the state directory (made
 * private); device 0 takes over the file of a daemon of one device. */
static int state_dir_file(const struct rmp_devices *ds, unsigned d,
			  const char *dir, char *path, size_t len)
{
	char err[512], legacy[RMP_CONFIG_PATH_LEN + 8];
	struct stat st;
	int ret;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		ret = -errno;
		log_err("state_dir %s: %s", dir, strerror(-ret));
		return ret;
	}
	/* One that was there may be anybody's: the state file must not be
	 * someone else's to make or replace. */
	ret = rmp_private_dir(dir, err, sizeof(err));
	if (ret) {
		log_err("state_dir %s", err);
		return ret;
	}
	snprintf(path, len, "%s/pool-%s", dir, ds->dev[d].name);
	snprintf(legacy, sizeof(legacy), "%s/pool", dir);
	if (d == 0 && stat(path, &st) && errno == ENOENT &&
	    !stat(legacy, &st)) {
		if (rename(legacy, path)) {
			ret = -errno;
			log_err("renaming state file %s to %s: %s", legacy,
				path, strerror(-ret));
			return ret;
		}
		log_notice("state file %s is now %s (a file per device)%s",
			   legacy, path, ds->n > 1 ? ": the first device "
			   "takes it; if the daemon before served another, its "
			   "leases stay on that device's NUMA node until they "
			   "end" : "");
	}
	return 0;
}

/*
 * take_legacy -- device 0 takes the memfd a daemon of one device stored
 * as FDSTORE_LEGACY, and stores it under name. The service manager does
 * not store an open file it holds already (systemd compares them with
 * kcmp: the name would not change, and removing the old one would drop
 * the only copy): a new open file of the same memfd goes under the new
 * name, and only once that is sent is the old name dropped. Returns the
 * fd to use (legacy's file either way).
 */
static int take_legacy(int legacy, const char *name)
{
	char path[64];
	int fresh;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", legacy);
	fresh = open(path, O_RDWR | O_CLOEXEC);
	if (fresh < 0 || rmp_fdstore_put(fresh, name) <= 0) {
		log_warn("the pool memfd of a daemon of one device is kept "
			 "under its old name %s: %s", FDSTORE_LEGACY,
			 fresh < 0 ? strerror(errno) : "not stored again");
		if (fresh >= 0)
			close(fresh);
		return legacy;
	}
	rmp_fdstore_remove(FDSTORE_LEGACY);
	close(legacy);
	log_notice("the pool memfd of a daemon of one device (%s) is now "
		   "%s", FDSTORE_LEGACY, name);
	return fresh;
}

/* fdstore_fd -- device d's pool memfd: the one an earlier run stored
 * (fd, or the legacy one for device 0), else a new one stored now. */
static int fdstore_fd(const struct rmp_devices *ds, unsigned d, int fd,
		      int legacy, const struct rmp_config *cfg)
{
	char name[FDSTORE_NAME_LEN];
	int ret;

	snprintf(name, sizeof(name), FDSTORE_PREFIX "%s", ds->dev[d].name);
	if (strchr(name, ':')) {
		/* systemd takes no ':' in a name (LISTEN_FDNAMES splits on
		 * it): the memfd would come back nameless. */
		log_err("[pool] fdstore: device %s has a ':' in its name, which "
			"the file descriptor store does not take; use state_dir",
			ds->dev[d].name);
		return -EINVAL;
	}
	if (fd < 0 && d == 0 && legacy >= 0)
		return take_legacy(legacy, name);
	if (fd >= 0)
		return fd;
	fd = new_pool_memfd(cfg, name);
	if (fd < 0) {
		ret = -errno;
		log_err("memfd for %s's pool: %s", ds->dev[d].name,
			strerror(-ret));
		return ret;
	}
	ret = rmp_fdstore_put(fd, name);
	if (ret <= 0)
		log_warn("%s's pool memfd not stored with the service manager "
			 "(%s): a restart ends its leases", ds->dev[d].name,
			 ret == 0 ? "not run by systemd" : strerror(-ret));
	else
		log_info("%s's pool memfd stored with the service manager "
			 "(FDSTORE): a restart keeps its leases",
			 ds->dev[d].name);
	return fd;
}

/* map_pool -- device d's pool, mapped on its node with its journal;
 * stored_fd: its memfd from the fd store (< 0: none). */
static int map_pool(struct rmp_devices *ds, unsigned d,
		    const struct rmp_config *cfg, int stored_fd, int legacy_fd)
{
	struct rmp_pool_params p = {
		.size = cfg->pool.size,
		.hugepage_size = cfg->pool.hugepage_size,
		.hugepages_required =
			cfg->pool.hugepages == RMP_HUGEPAGES_REQUIRED,
		.node = ds->dev[d].node,
		.lock = cfg->pool.lock,
		.sysroot = "",
		.state_bytes = rmp_journal_bytes(cfg->pool.max_leases),
	};
	char err[512], path[RMP_CONFIG_PATH_LEN + 80];
	int ret;

	if (cfg->pool.fdstore) {
		p.has_state_fd = true;
		p.state_fd = fdstore_fd(ds, d, stored_fd, legacy_fd, cfg);
		if (p.state_fd < 0)
			return p.state_fd;
		snprintf(path, sizeof(path), "memfd " FDSTORE_PREFIX "%s",
			 ds->dev[d].name);
		p.state_file = path;
	} else if (cfg->pool.state_dir[0]) {
		ret = state_dir_file(ds, d, cfg->pool.state_dir, path,
				     sizeof(path));
		if (ret)
			return ret;
		p.state_file = path;
	}
	ret = rmp_pool_map(&ds->pool[d], &p, err, sizeof(err));
	if (ret) {
		log_err("%s's pool: %s", ds->dev[d].name, err);
		return ret;
	}
	if (err[0])
		log_warn("%s's pool: %s", ds->dev[d].name, err);
	ds->pool[d]->index = d;
	rmp_strlcpy(ds->pool[d]->device, ds->dev[d].name,
		    sizeof(ds->pool[d]->device));
	return p.state_file ? open_journal(ds->pool[d], path) : 0;
}

/* One device's registrations, in a thread of its own. */
struct reg_job {
	struct rmp_devices *ds;
	unsigned d;
	unsigned access;
	int ret;
	pthread_t thread;
};

/* register_all -- every pool on device job->d. */
static void *register_all(void *arg)
{
	struct reg_job *job = arg;
	struct rmp_devices *ds = job->ds;

	for (unsigned i = 0; i < ds->n && !job->ret; i++) {
		job->ret = rmp_pool_register(ds->pool[i], ds->dev[job->d].pd,
					     job->d, job->access);
		if (job->ret)
			log_err("registering %s's %" PRIu64 "-byte pool on %s: "
				"%s", ds->dev[i].name, ds->pool[i]->size,
				ds->dev[job->d].name, strerror(-job->ret));
	}
	return NULL;
}

/*
 * register_pools -- the pools' MRs on every device, a thread per device;
 * remote rights only in pool mode, where the pool key is what clients
 * use (in window mode the windows carry the rights, in region mode the
 * per-lease MRs in each connection's own PD).
 */
static int register_pools(struct rmp_devices *ds)
{
	unsigned access = IBV_ACCESS_LOCAL_WRITE;
	struct reg_job jobs[RMP_DEVICES_MAX] = { 0 };
	bool started[RMP_DEVICES_MAX] = { false };
	uint64_t max_mr = UINT64_MAX;
	int ret = 0;

	if (ds->keys_mode == RMP_KEYS_WINDOW)
		access |= IBV_ACCESS_MW_BIND;
	else if (ds->keys_mode == RMP_KEYS_POOL)
		access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_ATOMIC;
	/* A chunk must fit in one MR on every device. */
	for (unsigned i = 0; i < ds->n; i++)
		if (ds->dev[i].attr.orig_attr.max_mr_size)
			max_mr = RMP_MIN(max_mr,
					 ds->dev[i].attr.orig_attr.max_mr_size);
	for (unsigned i = 0; i < ds->n; i++) {
		ret = rmp_pool_chunk(ds->pool[i], max_mr == UINT64_MAX ? 0 :
				     max_mr);
		if (ret)
			return ret;
	}
	for (unsigned d = 0; d < ds->n; d++) {
		jobs[d] = (struct reg_job){ .ds = ds, .d = d,
					    .access = access };
		/* Device 0's in this thread, and any that cannot start. */
		if (d > 0)
			started[d] = !pthread_create(&jobs[d].thread, NULL,
						     register_all, &jobs[d]);
	}
	register_all(&jobs[0]);
	for (unsigned d = 1; d < ds->n; d++) {
		if (started[d])
			pthread_join(jobs[d].thread, NULL);
		else
			register_all(&jobs[d]);
	}
	for (unsigned d = 0; d < ds->n && !ret; d++)
		ret = jobs[d].ret;
	return ret;
}

/* take_stored -- the memfds an earlier run stored: fds[i] device i's
 * (-1: none), *legacy the one of a daemon of one device. */
static void take_stored(const struct rmp_devices *ds, int *fds, int *legacy)
{
	char names[RMP_DEVICES_MAX + 1][FDSTORE_NAME_LEN];
	const char *np[RMP_DEVICES_MAX + 1];
	int got[RMP_DEVICES_MAX + 1];

	for (unsigned i = 0; i < ds->n; i++) {
		snprintf(names[i], sizeof(names[i]), FDSTORE_PREFIX "%s",
			 ds->dev[i].name);
		np[i] = names[i];
	}
	np[ds->n] = FDSTORE_LEGACY;
	rmp_fdstore_take(np, got, ds->n + 1);
	for (unsigned i = 0; i < ds->n; i++)
		fds[i] = got[i];
	*legacy = got[ds->n];
}

/* note_orphans -- pool files in the state directory of devices not
 * served now: kept (their leases wait for their device), said once. */
static void note_orphans(const struct rmp_devices *ds, const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		bool served = false;

		if (strncmp(e->d_name, "pool-", 5))
			continue;
		for (unsigned i = 0; i < ds->n; i++)
			served |= !strcmp(e->d_name + 5, ds->dev[i].name);
		if (!served)
			log_warn("state file %s/%s is of a device not served "
				 "now: kept, with its leases and memory, for a "
				 "start that serves it (remove it to free the "
				 "memory)", dir, e->d_name);
	}
	if (d)
		closedir(d);
}

/* log_pool -- one pool's figures, once it is ready. */
static void log_pool(const struct rmp_devices *ds, unsigned d,
		     uint64_t start_ns)
{
	const struct rmp_pool *p = ds->pool[d];

	log_info("%s's pool: %" PRIu64 " MiB on %s, NUMA node %d, %u memory "
		 "region(s) on each of %u device(s)%s, ready in %" PRIu64
		 " ms", ds->dev[d].name, p->size >> 20,
		 p->page_size == (1ull << 30) ? "1 GiB hugepages" :
		 p->page_size ? "2 MiB hugepages" : "normal pages", p->node,
		 p->nchunks, ds->n, ds->keys_mode == RMP_KEYS_POOL ?
		 " with remote rights" : " without remote rights",
		 (rmp_now_ns() - start_ns) / 1000000u);
}

int rmp_devices_map_pools(struct rmp_devices *ds,
			  const struct rmp_config *cfg)
{
	int stored[RMP_DEVICES_MAX], legacy = -1, ret = 0;
	uint64_t start = rmp_now_ns();
	unsigned d;

	for (d = 0; d < RMP_DEVICES_MAX; d++)
		stored[d] = -1;
	if (cfg->pool.fdstore)
		take_stored(ds, stored, &legacy);
	/* A memfd of a daemon of one device, beside device 0's own: stale. */
	if (legacy >= 0 && stored[0] >= 0) {
		close(legacy);
		rmp_fdstore_remove(FDSTORE_LEGACY);
		legacy = -1;
	}
	/* Each pool is faulted in by threads of its own (rmp_pool_map); a
	 * stored fd handed to map_pool is the pool's, closed with it. */
	for (d = 0; d < ds->n && !ret; d++)
		ret = map_pool(ds, d, cfg, stored[d], legacy);
	for (; d < ds->n; d++)
		if (stored[d] >= 0)
			close(stored[d]);
	if (!ret && cfg->pool.state_dir[0] && !cfg->pool.fdstore)
		note_orphans(ds, cfg->pool.state_dir);
	if (!ret && ds->n > 1)
		log_info("%u pools of %" PRIu64 " MiB: %" PRIu64 " MiB pinned in "
			 "all", ds->n, cfg->pool.size >> 20,
			 (cfg->pool.size >> 20) * ds->n);
	if (!ret)
		ret = register_pools(ds);
	for (d = 0; d < ds->n && !ret; d++) {
		log_pool(ds, d, start);
		if (ds->keys_mode != RMP_KEYS_REGION)
			ret = rmp_device_add_srq(&ds->dev[d], RMP_MIN(
				cfg->server.max_clients * cfg->server.credits,
				SRQ_MAX));
	}
	return ret;
}

void rmp_devices_close(struct rmp_devices *ds)
{
	for (unsigned i = 0; i < ds->n; i++) {
		if (ds->pool[i])
			rmp_journal_close(ds->pool[i]->journal);
		rmp_pool_free(ds->pool[i]);
		ds->pool[i] = NULL;
	}
	for (unsigned i = 0; i < ds->n; i++)
		rmp_device_close(&ds->dev[i]);
	ds->n = 0;
	if (ds->list)
		rdma_free_devices(ds->list);
	ds->list = NULL;
}

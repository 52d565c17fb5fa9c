/* SPDX-License-Identifier: MIT */
/* ops.h -- what an operator may see and do: status, leases, clients, reload. */
#ifndef RMP_OPS_H
#define RMP_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "conn.h"
#include "lifecycle.h"
#include "listener.h"

struct rmp_device;
struct rmp_pool;
struct rmp_tenants;

/*
 * The cluster membership as daemon/cluster.c last published it: written
 * by cluster.c alone (its one owner, in struct rmp_ops below), read here
 * for the status and the metrics. Times are rmp_now_ms(), 0 for never.
 */
struct rmp_cluster_status {
	bool enabled;                 /* [cluster] etcd is set */
	bool registered;              /* the node's key is ours in etcd */
	const char *state;            /* "registering", "registered", ...
				       * (static; NULL when not enabled) */
	char node[RMP_CONFIG_NAME_LEN];
	char error[200];              /* the last etcd error; "" none */
	uint64_t error_ms;            /* when it came */
	uint64_t keepalive_ms;        /* the last keep-alive etcd answered */
	uint64_t registered_ms;       /* since when the key is ours */
	uint64_t errors;              /* etcd requests that failed */
	uint64_t outages;             /* times etcd stopped answering */
};

/*
 * The operator's view of a running daemon, shared by the admin socket
 * (rmpoolctl), the metrics endpoint, SIGHUP and the systemd status line.
 * Everything runs in the event loop: no locking. Every action is logged
 * with who asked (e.g. "rmpoolctl uid 0").
 */
struct rmp_ops {
	struct rmp_config *cfg;        /* the live configuration */
	const char *config_path;       /* re-read by a reload */
	bool verbose;                  /* -v: log level stays debug */
	struct rmp_lifecycle *lc;
	struct rmp_conns *conns;
	struct rmp_listener *listener;
	struct rmp_tenants *tenants;
	/* The devices served and their pools (pools[i] device i's, with
	 * its journal, NULL when leases die with the process). */
	struct rmp_device *const *devs;
	struct rmp_pool *const *pools;
	unsigned ndevs;
	enum rmp_keys_mode keys_mode;
	uint64_t started_ms;           /* rmp_now_ms() at start */
	bool drained;                  /* operator's drain: no new leases */
	bool stopping;                 /* SIGTERM/SIGINT: draining to stop */
	uint64_t reloads, reload_failures;
	struct rmp_cluster_status cluster; /* cluster.c's to write */
};

/* One device served and its pool, in rmp_status. */
struct rmp_device_status {
	char name[64];
	char addr[64];                 /* the listen address on it; "" for
					* a wildcard */
	unsigned port;                 /* the RDMA port used (1 unless the
					* listener knows better) */
	int numa_node;                 /* its pool's */
	uint64_t pool_bytes, free_bytes, largest_free;
	uint64_t hugepage_size;        /* 0 = normal pages */
	uint32_t clients;              /* connections that came in on it */
	uint64_t leases, leased_bytes; /* granted leases in its pool */
	uint32_t journal_records, journal_capacity, recovered;
};

/* rmp_status -- the daemon at a glance (rmpoolctl status, STATUS=).
 * The figures of the pools are sums over the devices (largest_free the
 * largest); device and numa_node are the first device's. */
struct rmp_status {
	const char *version;
	uint64_t uptime_ms;
	char device[64];
	char listen[RMP_CONFIG_LIST_LEN];
	uint16_t port;
	int numa_node;
	unsigned ndevices;
	struct rmp_device_status devices[RMP_DEVICES_MAX];
	uint64_t pool_bytes, free_bytes, largest_free;
	uint64_t quarantined_bytes, quarantined_leases;
	uint64_t zeroing_bytes;        /* ended, being zeroed */
	uint64_t hugepage_size;        /* 0 = normal pages */
	const char *keys_mode;         /* "window", "region" or "pool" */
	uint32_t clients;
	uint64_t leases, leased_bytes, keys;
	uint64_t max_leases;           /* [pool] max_leases: leases at once */
	bool draining;                 /* no new leases (either reason) */
	bool stopping;
	/* Hot restart: leases in the journal now, its room, and how many
	 * the last start took back. All 0 without [pool] state_dir. */
	bool persistent;
	uint32_t journal_records, journal_capacity, recovered;
	struct rmp_cluster_status cluster; /* a copy of rmp_ops's */
};

void rmp_ops_status(const struct rmp_ops *o, struct rmp_status *st);

/*
 * Views (ops_view.c): what an operator sees of clients, leases and
 * tenants, names resolved, times in rmp_now_ms(). The admin socket and
 * the metrics render these and walk nothing else. A view's strings stay
 * valid until the event loop runs again.
 */

/* What an operator sees of one connection (rmpoolctl clients). */
struct rmp_client_view {
	uint64_t serial;              /* "client #N" */
	const char *name, *peer;
	const char *tenant;           /* proven, else the one named, else "" */
	bool authenticated;
	const char *state;            /* rmp_conn_state_name() */
	uint64_t accepted_ms;
	uint64_t leases, bytes;       /* of the leases it holds a key to */
	uint64_t requests, errors;
};

/* rmp_ops_next_client -- the connection after prev (NULL: the first), NULL
 * after the last; with v, its view. */
const struct rmp_conn *rmp_ops_next_client(const struct rmp_ops *o,
					   const struct rmp_conn *prev,
					   struct rmp_client_view *v);
void rmp_ops_client_view(const struct rmp_conn *c, struct rmp_client_view *v);

/* What an operator sees of one lease (rmpoolctl leases, show). */
struct rmp_lease_view {
	const struct rmp_lease *lease; /* for rmp_ops_next_holder */
	uint64_t id;
	const char *tenant;           /* "" when none */
	const char *owner;            /* the client name that allocated it */
	uint64_t offset, bytes, addr; /* addr: as clients address it */
	const char *device;           /* the device whose pool holds it */
	int numa_node;                /* that pool's */
	bool spilled;                 /* not the pool its ALLOC came to */
	uint32_t access;              /* RMP_ACC_* */
	uint32_t keys;
	const char *keys_mode, *state;
	uint64_t ttl_ms, deadline_ms, created_ms;
	bool auto_renew, ephemeral;
};

/* One key of a lease and the connection that holds it. */
struct rmp_holder_view {
	uint64_t client;              /* its serial; 0: gone */
	const char *name, *peer;
	uint32_t access;
	const char *key_state;        /* rmp_key_state_name() */
	bool owner;                   /* the one that allocated the lease */
};

/* rmp_ops_lease_view -- granted lease id's view: 0, or -ENOENT. */
int rmp_ops_lease_view(const struct rmp_ops *o, uint64_t id,
		       struct rmp_lease_view *v);
/* rmp_ops_next_holder -- the key of lv's lease after prev (NULL: the
 * first) and its holder's view; NULL after the last. */
const struct rmp_key *rmp_ops_next_holder(const struct rmp_ops *o,
					  const struct rmp_lease_view *lv,
					  const struct rmp_key *prev,
					  struct rmp_holder_view *hv);

/* Which leases `rmpoolctl leases` lists; NULL or false: any. */
struct rmp_lease_query {
	const char *tenant;
	const char *client;  /* "#N" or "N" (a client's number) or its name:
			      * the client that allocated it or holds a key */
	bool expiring;
	uint64_t before_ms;  /* with expiring: deadline at or before this */
};

/*
 * rmp_ops_find_leases -- the ids of the granted leases q keeps, sorted,
 * in *ids (malloc'ed, the caller frees; never NULL on success). 0,
 * -ENOENT (q names a client number nobody has) or -ENOMEM.
 */
int rmp_ops_find_leases(const struct rmp_ops *o,
			const struct rmp_lease_query *q, uint64_t **ids,
			size_t *n);

/* What the metrics show of one tenant (anonymous included). */
struct rmp_tenant_view {
	const char *name;
	uint64_t bytes, leases, connections;
	uint64_t auth_failures, quota_refusals;
	uint64_t limit_bytes, limit_leases, limit_connections; /* 0: none */
};

/* rmp_ops_next_tenant -- the tenant after prev (NULL: the first), NULL
 * after the last, in config order then anonymous; with v, its view. */
const struct rmp_tenant *rmp_ops_next_tenant(const struct rmp_ops *o,
					     const struct rmp_tenant *prev,
					     struct rmp_tenant_view *v);

/* The daemon's counters at one moment, for the metrics. */
struct rmp_ops_counters {
	struct rmp_lifecycle_stats leases;
	struct {
		const char *state;           /* rmp_lease_state_name() */
		uint64_t leases, bytes;
	} by_state[RMP_LEASE_STATES];
	struct rmp_conn_counters conns;
	struct {
		const char *reason;          /* rmp_reject_reason_name() */
		uint64_t count;
	} rejects[RMP_REJ_REASONS];          /* [0] is no reason: unused */
	const struct rmp_latency *latency;   /* requests, by operation */
};

void rmp_ops_counters(const struct rmp_ops *o, struct rmp_ops_counters *c);

/* rmp_ops_port_of -- the RDMA port dev is served on (1 when no
 * listener is bound to an address of it). */
unsigned rmp_ops_port_of(const struct rmp_ops *o,
			 const struct rmp_device *dev);
/* rmp_ops_addr_of -- the listen address on dev, numeric, into buf; ""
 * when none is bound to it (a wildcard). */
void rmp_ops_addr_of(const struct rmp_ops *o, const struct rmp_device *dev,
		     char *buf, size_t len);


/*
 * rmp_ops_revoke -- end lease id now, as expiry does: every key is
 * revoked at once, then the extent is zeroed and reused. Its holders
 * get -EKEYEXPIRED from then on. 0 or -ENOENT.
 */
int rmp_ops_revoke(struct rmp_ops *o, uint64_t id, const char *who);
/*
 * rmp_ops_extend -- lease id's deadline becomes now + ttl_ms (also its
 * ttl for auto-renew). 0, -ENOENT, or -EINVAL (ttl_ms 0 or above
 * [lease] ttl_max).
 */
int rmp_ops_extend(struct rmp_ops *o, uint64_t id, uint64_t ttl_ms,
		   const char *who);

/*
 * rmp_ops_find_client -- the connection called "#N" or "N" (its serial)
 * or by its client name. NULL with *err = -ENOENT (none) or -EEXIST (the
 * name is not unique: use the serial).
 */
struct rmp_conn *rmp_ops_find_client(const struct rmp_ops *o,
				     const char *which, int *err);
/* rmp_ops_disconnect -- close it; its leases follow the lease rules. */
void rmp_ops_disconnect(struct rmp_ops *o, struct rmp_conn *c,
			const char *who);

/*
 * rmp_ops_drain -- on: no new leases (ALLOC fails with -ESHUTDOWN);
 * connections and existing leases keep working. Off: leases again.
 * 0, or -EBUSY to undrain while the daemon is stopping.
 */
int rmp_ops_drain(struct rmp_ops *o, bool on, const char *who);

/*
 * rmp_ops_reload -- read config_path again and apply what can change
 * live: TTL bounds, alignment, max_lease, keys_per_lease, expiry tick,
 * log level, the timeouts and per-address limits, tenants (limits,
 * keys, networks; added and removed) and [anonymous]. Each change is
 * logged; each changed key that needs a restart (pool, device, listen
 * address and port, max_clients, credits, lease_keys, admin socket,
 * metrics address) is named in the log and keeps its running value.
 * A file that does not load, or a tenant key that cannot be read,
 * changes nothing: -EINVAL (or -errno) with "FILE:LINE: ..." in err.
 * On success err says what happened in one line ("3 changes, 1 needs a
 * restart").
 */
int rmp_ops_reload(struct rmp_ops *o, const char *who, char *err,
		   size_t errlen);

#endif /* RMP_OPS_H */

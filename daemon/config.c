/* SPDX-License-Identifier: MIT */
/*
 * config.c -- rmpoold configuration: the table of keys (where each lives,
 * its syntax and bounds), the defaults and access to a key's field.
 * Parsing a value is config_value.c, reading a file config_load.c, the
 * rules between keys config_check.c, the dump config_dump.c.
 */
#include "config.h"
#include "config_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#define MS_PER_S RMP_MS_PER_S
#define MS_PER_H RMP_MS_PER_H
#define MS_PER_D RMP_MS_PER_D

/* The wire carries ttls as 32-bit seconds (common/proto.h). */
#define TTL_MAX_MS (UINT64_C(0xffffffff) * MS_PER_S)

/* Log levels are syslog priorities, as sd-journal and syslog(3) take. */
static const struct name_val log_levels[] = {
	{ "error", LOG_ERR },
	{ "warning", LOG_WARNING },
	{ "notice", LOG_NOTICE },
	{ "info", LOG_INFO },
	{ "debug", LOG_DEBUG },
	{ NULL, 0 },
};

static const struct name_val hugepages_modes[] = {
	{ "required", RMP_HUGEPAGES_REQUIRED },
	{ "preferred", RMP_HUGEPAGES_PREFERRED },
	{ NULL, 0 },
};

static const struct name_val lease_keys_modes[] = {
	{ "auto", RMP_LEASE_KEYS_AUTO },
	{ RMP_KEYS_WINDOW_NAME, RMP_LEASE_KEYS_WINDOW },
	{ RMP_KEYS_REGION_NAME, RMP_LEASE_KEYS_REGION },
	{ RMP_KEYS_POOL_NAME, RMP_LEASE_KEYS_POOL },
	{ NULL, 0 },
};

#define KEY(sec, nm, sy, st, field, mn, mx, fl, nv)                      \
	{ sec, nm, sec "." nm, sy, st, offsetof(struct rmp_config, field), \
	  sizeof(((struct rmp_config *)0)->field), mn, mx, fl, nv }

/* A key of a [tenant.NAME] section: field of struct rmp_tenant_config. */
#define TKEY(nm, sy, st, fld, mn, mx, fl)                                 \
	{ "tenant", nm, "tenant.NAME." nm, sy, st,                        \
	  offsetof(struct rmp_tenant_config, fld),                        \
	  sizeof(((struct rmp_tenant_config *)0)->fld), mn, mx, fl, NULL }

#define SIZE_MAX_I ((int64_t)RMP_CONFIG_SIZE_MAX)

/* Most connections at once: one QP each, as server.max_clients. */
#define CONNECTIONS_MAX 65536

/*
 * Every key, in the order of conf/rmpoold.conf and of the dump. Numeric
 * ranges are what the daemon can work with, not site policy.
 */
static const struct key keys[] = {
	KEY("server", "listen", SY_ADDRS, ST_STR, server.listen,
	    0, 0, 0, NULL),
	KEY("server", "port", SY_UINT, ST_U16, server.port,
	    1, 65535, 0, NULL),
	KEY("server", "device", SY_IBDEVS, ST_STR, server.device,
	    0, 0, 0, NULL),
	/* one QP and its receive credits per client */
	KEY("server", "max_clients", SY_UINT, ST_U32, server.max_clients,
	    1, CONNECTIONS_MAX, 0, NULL),
	KEY("server", "max_unauthenticated", SY_UINT, ST_U32,
	    server.max_unauthenticated, 1, CONNECTIONS_MAX, 0, NULL),
	KEY("server", "unauthenticated_per_address", SY_UINT, ST_U32,
	    server.unauthenticated_per_address, 1, CONNECTIONS_MAX, 0, NULL),
	KEY("server", "credits", SY_UINT, ST_U32, server.credits,
	    1, 1024, 0, NULL),
	KEY("server", "admin_socket", SY_PATH, ST_STR, server.admin_socket,
	    0, 0, KF_EMPTY_OFF, NULL),
	KEY("server", "admin_group", SY_GROUP, ST_STR, server.admin_group,
	    0, 0, 0, NULL),
	KEY("server", "metrics_listen", SY_HOSTPORT, ST_STR,
	    server.metrics_listen, 0, 0, 0, NULL),
	KEY("server", "log_level", SY_NAMES, ST_INT, server.log_level,
	    0, 0, 0, log_levels),
	KEY("server", "revoke_timeout", SY_DURATION, ST_U64,
	    server.revoke_timeout_ms, 10, (int64_t)MS_PER_H, 0, NULL),
	KEY("server", "drain_timeout", SY_DURATION, ST_U64,
	    server.drain_timeout_ms, 0, (int64_t)MS_PER_H, 0, NULL),
	KEY("server", "access_errors_per_minute", SY_UINT, ST_U32,
	    server.access_errors_per_minute, 0, 1000000, 0, NULL),
	KEY("server", "access_cooldown", SY_DURATION, ST_U64,
	    server.access_cooldown_ms, 1000, (int64_t)MS_PER_D, 0, NULL),
	KEY("server", "connections_per_address", SY_UINT, ST_U32,
	    server.connections_per_address, 0, CONNECTIONS_MAX, 0, NULL),
	/* under 100ms a proof cannot make it over a loaded network */
	KEY("server", "auth_timeout", SY_DURATION, ST_U64,
	    server.auth_timeout_ms, 100, (int64_t)MS_PER_H, 0, NULL),
	KEY("server", "auth_failures_per_minute", SY_UINT, ST_U32,
	    server.auth_failures_per_minute, 0, 1000000, 0, NULL),
	/* above 1ms the event loop's timers would lag behind */
	KEY("server", "busy_poll_us", SY_UINT, ST_U32, server.busy_poll_us,
	    0, 1000, 0, NULL),
	/* the sweep that sends probes runs once a second */
	KEY("server", "keepalive", SY_DURATION, ST_U64, server.keepalive_ms,
	    1000, (int64_t)MS_PER_H, 0, NULL),
	KEY("pool", "size", SY_SIZE, ST_U64, pool.size,
	    1, SIZE_MAX_I, 0, NULL),
	KEY("pool", "hugepage_size", SY_SIZE, ST_U64, pool.hugepage_size,
	    0, SIZE_MAX_I, KF_HUGEPAGE, NULL),
	KEY("pool", "hugepages", SY_NAMES, ST_HUGEPAGES, pool.hugepages,
	    0, 0, 0, hugepages_modes),
	KEY("pool", "numa_node", SY_NODE, ST_INT, pool.numa_node,
	    0, INT_MAX, 0, NULL),
	KEY("pool", "lock", SY_BOOL, ST_BOOL, pool.lock,
	    0, 0, 0, NULL),
	KEY("pool", "state_dir", SY_PATH, ST_STR, pool.state_dir,
	    0, 0, KF_EMPTY_OFF, NULL),
	KEY("pool", "fdstore", SY_BOOL, ST_BOOL, pool.fdstore,
	    0, 0, 0, NULL),
	KEY("pool", "max_leases", SY_UINT, ST_U32, pool.max_leases,
	    16, 16u << 20, 0, NULL),
	KEY("lease", "lease_keys", SY_NAMES, ST_LEASE_KEYS, lease.lease_keys,
	    0, 0, 0, lease_keys_modes),
	KEY("lease", "ttl_default", SY_DURATION, ST_U64, lease.ttl_default_ms,
	    1, (int64_t)TTL_MAX_MS, 0, NULL),
	KEY("lease", "ttl_min", SY_DURATION, ST_U64, lease.ttl_min_ms,
	    1, (int64_t)TTL_MAX_MS, 0, NULL),
	KEY("lease", "ttl_max", SY_DURATION, ST_U64, lease.ttl_max_ms,
	    1, (int64_t)TTL_MAX_MS, 0, NULL),
	/* a tick is how late a revocation may be: more than 1h is a typo */
	KEY("lease", "expiry_tick", SY_DURATION, ST_U64, lease.expiry_tick_ms,
	    1, (int64_t)MS_PER_H, 0, NULL),
	KEY("lease", "alignment", SY_SIZE, ST_U64, lease.alignment,
	    64, SIZE_MAX_I, KF_POW2, NULL),
	KEY("lease", "max_lease", SY_SIZE, ST_U64, lease.max_lease,
	    0, SIZE_MAX_I, 0, NULL),
	KEY("lease", "keys_per_lease", SY_UINT, ST_U32, lease.keys_per_lease,
	    1, 1024, 0, NULL),
	KEY("anonymous", "enabled", SY_BOOL, ST_BOOL, anonymous.enabled,
	    0, 0, 0, NULL),
	KEY("anonymous", "bytes", SY_SIZE, ST_U64, anonymous.limits.bytes,
	    0, SIZE_MAX_I, 0, NULL),
	KEY("anonymous", "leases", SY_UINT, ST_U64, anonymous.limits.leases,
	    0, UINT32_MAX, 0, NULL),
	KEY("anonymous", "connections", SY_UINT, ST_U32,
	    anonymous.limits.connections, 0, CONNECTIONS_MAX, 0, NULL),
	KEY("anonymous", "networks", SY_NETWORKS, ST_NETWORKS,
	    anonymous.limits, 0, 0, 0, NULL),
	KEY("anonymous", "rotate_grace", SY_DURATION, ST_U64,
	    anonymous.limits.rotate_grace_ms, 0, (int64_t)MS_PER_H, 0, NULL),
	KEY("cluster", "etcd", SY_ETCD, ST_STR, cluster.etcd,
	    0, 0, 0, NULL),
	KEY("cluster", "prefix", SY_PREFIX, ST_STR, cluster.prefix,
	    0, 0, 0, NULL),
	KEY("cluster", "node", SY_NODENAME, ST_STR, cluster.node,
	    0, 0, 0, NULL),
	KEY("cluster", "labels", SY_LABELS, ST_STR, cluster.labels,
	    0, 0, 0, NULL),
	/* keep-alives go at ttl/3: under 1s they would crowd etcd */
	KEY("cluster", "ttl", SY_DURATION, ST_U64, cluster.ttl_ms,
	    MS_PER_S, 60 * MS_PER_S, 0, NULL),
	KEY("cluster", "ca_file", SY_PATH, ST_STR, cluster.ca_file,
	    0, 0, KF_EMPTY_OFF, NULL),
	KEY("cluster", "cert_file", SY_PATH, ST_STR, cluster.cert_file,
	    0, 0, KF_EMPTY_OFF, NULL),
	KEY("cluster", "key_file", SY_PATH, ST_STR, cluster.key_file,
	    0, 0, KF_EMPTY_OFF, NULL),
	KEY("cluster", "credentials_file", SY_PATH, ST_STR,
	    cluster.credentials_file, 0, 0, KF_EMPTY_OFF, NULL),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))
const struct key *const cfg_keys = keys;
const size_t cfg_nkeys = NKEYS;

/*
 * The keys of each [tenant.NAME], in dump order; qname is a pattern; the
 * real one is made with the tenant's name. The limits match [anonymous].
 */
static const struct key tenant_keys[] = {
	TKEY("key", SY_KEY, ST_KEY, key, 0, 0, 0),
	TKEY("key_file", SY_PATH, ST_STR, key_file, 0, 0, KF_OMIT_EMPTY),
	TKEY("bytes", SY_SIZE, ST_U64, limits.bytes, 0, SIZE_MAX_I, 0),
	TKEY("leases", SY_UINT, ST_U64, limits.leases, 0, UINT32_MAX, 0),
	TKEY("connections", SY_UINT, ST_U32, limits.connections, 0,
	     CONNECTIONS_MAX, 0),
	TKEY("networks", SY_NETWORKS, ST_NETWORKS, limits, 0, 0, 0),
	TKEY("rotate_grace", SY_DURATION, ST_U64, limits.rotate_grace_ms, 0,
	     (int64_t)MS_PER_H, 0),
};

#define NTKEYS (sizeof(tenant_keys) / sizeof(tenant_keys[0]))
const struct key *const cfg_tenant_keys = tenant_keys;
const size_t cfg_ntenant_keys = NTKEYS;

/* struct parse (config_load.c) sizes its "seen" arrays by these. */
_Static_assert(NKEYS <= CFG_KEYS_MAX, "raise CFG_KEYS_MAX");
_Static_assert(NTKEYS <= CFG_TENANT_KEYS_MAX, "raise CFG_TENANT_KEYS_MAX");

void rmp_config_defaults(struct rmp_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->server.listen, "0.0.0.0");
	c->server.port = 7471;
	c->server.max_clients = 64;
	c->server.max_unauthenticated = 32;
	c->server.unauthenticated_per_address = 16;
	c->server.credits = 16;
	strcpy(c->server.admin_socket, "/run/rmpool/admin.sock");
	strcpy(c->server.metrics_listen, "127.0.0.1:9471");
	c->server.log_level = LOG_INFO;
	c->server.revoke_timeout_ms = MS_PER_S;
	c->server.drain_timeout_ms = 10 * MS_PER_S;
	c->server.access_errors_per_minute = 10;
	c->server.access_cooldown_ms = 60 * MS_PER_S;
	c->server.connections_per_address = 16;
	c->server.auth_timeout_ms = 2 * MS_PER_S;
	c->server.auth_failures_per_minute = 5;
	c->server.busy_poll_us = 50;
	c->server.keepalive_ms = 10 * MS_PER_S;

	c->pool.size = CFG_GIB;
	c->pool.hugepage_size = 2 * CFG_MIB;
	c->pool.hugepages = RMP_HUGEPAGES_REQUIRED;
	c->pool.numa_node = -1;
	c->pool.lock = true;
	c->pool.max_leases = 65536;

	c->lease.lease_keys = RMP_LEASE_KEYS_AUTO;
	c->lease.ttl_default_ms = 60 * MS_PER_S;
	c->lease.ttl_min_ms = MS_PER_S;
	c->lease.ttl_max_ms = MS_PER_D;
	c->lease.expiry_tick_ms = 100;
	c->lease.alignment = 64;
	c->lease.max_lease = 0;
	c->lease.keys_per_lease = 16;

	c->anonymous.enabled = false; /* and no limits, no networks */

	/* no etcd: no cluster; node "" is the host name */
	strcpy(c->cluster.prefix, "/rmpool/");
	c->cluster.ttl_ms = 10 * MS_PER_S;
	c->ntenants = 0;
}

/*
 * field -- address of k's value in base: a struct rmp_config for keys[],
 * a struct rmp_tenant_config for tenant_keys[].
 */
void *cfg_field(const struct key *k, void *base)
{
	return (char *)base + k->off;
}

/* cfield -- cfg_field() for a const base. */
const void *cfg_cfield(const struct key *k, const void *base)
{
	return (const char *)base + k->off;
}

/* get_num -- the numeric value of a non-string key. */
int64_t cfg_get_num(const struct key *k, const void *base)
{
	const void *p = cfg_cfield(k, base);

	switch (k->store) {
	case ST_U16:
		return *(const uint16_t *)p;
	case ST_U32:
		return *(const uint32_t *)p;
	case ST_U64:
		return (int64_t)*(const uint64_t *)p;
	case ST_INT:
		return *(const int *)p;
	case ST_BOOL:
		return *(const bool *)p;
	case ST_HUGEPAGES:
		return *(const enum rmp_hugepages_mode *)p;
	case ST_LEASE_KEYS:
		return *(const enum rmp_lease_keys *)p;
	case ST_STR:
	case ST_KEY:
	case ST_NETWORKS:
		break;
	}
	return 0;
}

/* set_num -- store v (already range-checked) into a non-string key. */
void cfg_set_num(const struct key *k, void *base, int64_t v)
{
	void *p = cfg_field(k, base);

	switch (k->store) {
	case ST_U16:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case ST_U32:
		*(uint32_t *)p = (uint32_t)v;
		break;
	case ST_U64:
		*(uint64_t *)p = (uint64_t)v;
		break;
	case ST_INT:
		*(int *)p = (int)v;
		break;
	case ST_BOOL:
		*(bool *)p = v != 0;
		break;
	case ST_HUGEPAGES:
		*(enum rmp_hugepages_mode *)p = (enum rmp_hugepages_mode)v;
		break;
	case ST_LEASE_KEYS:
		*(enum rmp_lease_keys *)p = (enum rmp_lease_keys)v;
		break;
	case ST_STR:
	case ST_KEY:
	case ST_NETWORKS:
		break;
	}
}

/*
 * quote -- v in double quotes for a message, control and non-ASCII bytes
 * escaped (values end up in logs and terminals), cut after 48 bytes.
 */
const char *cfg_quote(const char *v, char *buf, size_t buflen)
{
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; v[i] && o + 8 < buflen; i++) {
		unsigned char ch = (unsigned char)v[i];

		if (i == 48) {
			o += (size_t)snprintf(buf + o, buflen - o, "...");
			break;
		}
		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
			o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x",
					      ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* format_num -- v of key k as it would be written in the file. */
const char *cfg_format_num(const struct key *k, int64_t v, char *buf,
			      size_t buflen)
{
	if (k->syntax == SY_SIZE)
		return rmp_format_size((uint64_t)v, buf, buflen);
	if (k->syntax == SY_DURATION)
		return rmp_format_duration_ms((uint64_t)v, buf, buflen);
	snprintf(buf, buflen, "%" PRId64, v);
	return buf;
}

/* nnetworks -- l's network count, never beyond its array. */
unsigned int cfg_nnetworks(const struct rmp_tenant_limits *l)
{
	return l->nnetworks < RMP_NETWORKS_MAX ? l->nnetworks :
						 RMP_NETWORKS_MAX;
}

/* find_tenant -- index of the tenant called name in c, or -1. */
int cfg_find_tenant(const struct rmp_config *c, const char *name)
{
	unsigned int i;

	for (i = 0; i < c->ntenants && i < RMP_TENANTS_MAX; i++)
		if (!strcmp(c->tenants[i].name, name))
			return (int)i;
	return -1;
}

/* set_err -- write a message into err when there is room for one. */
void cfg_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

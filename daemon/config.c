/* SPDX-License-Identifier: MIT */
/* config.c -- rmpoold configuration: defaults, INI parsing, checks, dump. */
#include "config.h"
#include "config_int.h"

#include <ctype.h>
#include <netinet/in.h> /* INET6_ADDRSTRLEN */
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

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
	KEY("server", "listen", SY_ADDR, ST_STR, server.listen,
	    0, 0, 0, NULL),
	KEY("server", "port", SY_UINT, ST_U16, server.port,
	    1, 65535, 0, NULL),
	KEY("server", "device", SY_IBDEV, ST_STR, server.device,
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


/* The sections besides [tenant.NAME]. */
static const char *const sections[] = { "server", "pool", "lease",
					"anonymous" };

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

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

	c->pool.size = GIB;
	c->pool.hugepage_size = 2 * MIB;
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
static void set_num(const struct key *k, void *base, int64_t v)
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
static const char *quote(const char *v, char *buf, size_t buflen)
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

#define QUOTE_LEN 256

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

/*
 * valid_ibdev -- an RDMA device name as drivers make them (mlx5_0, rxe0,
 * rocep1s0f0, bnxt_re0): letters, digits, "_.:-"; not "." or "..". The
 * name goes into sysfs paths, and ';' or '#' would not survive the dump.
 */
static bool valid_ibdev(const char *s)
{
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.:-", *s))
			return false;
	return true;
}

/* valid_path -- absolute, no control characters. */
static bool valid_path(const char *s)
{
	if (*s != '/')
		return false;
	for (; *s; s++)
		if (iscntrl((unsigned char)*s))
			return false;
	return true;
}

/* valid_group -- the portable user/group name set, no leading '-'. */
static bool valid_group(const char *s)
{
	if (*s == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

/* nnetworks -- l's network count, never beyond its array. */
unsigned int cfg_nnetworks(const struct rmp_tenant_limits *l)
{
	return l->nnetworks < RMP_NETWORKS_MAX ? l->nnetworks :
						 RMP_NETWORKS_MAX;
}

/* parse_network -- one ADDR[/PREFIX] of a networks list into n
 * (rmp_network_parse). On failure writes "qname: why" into msg and
 * returns -EINVAL. */
static int parse_network(const char *s, struct rmp_network *n,
			 const char *qname, char *msg, size_t msglen)
{
	char q[QUOTE_LEN];
	unsigned max;

	switch (rmp_network_parse(s, n, &max)) {
	case 0:
		return 0;
	case -ERANGE:
		snprintf(msg, msglen, "%s: %s: prefix is out of range (0..%u)",
			 qname, quote(s, q, sizeof(q)), max);
		break;
	case -EDOM:
		/* s parsed as an address: only [0-9a-fA-F.:/] */
		snprintf(msg, msglen, "%s: host bits set in %s", qname, s);
		break;
	default:
		snprintf(msg, msglen,
			 "%s: %s is not ADDR/PREFIX (e.g. 10.0.0.0/8, fd00::/8, "
			 "192.0.2.7)", qname, quote(s, q, sizeof(q)));
		break;
	}
	return -EINVAL;
}

/*
 * parse_networks -- a comma-separated list of networks (or "" for none)
 * into l. On failure writes "qname: why" into msg, returns -EINVAL and
 * leaves l untouched.
 */
static int parse_networks(const char *value, struct rmp_tenant_limits *l,
			  const char *qname, char *msg, size_t msglen)
{
	struct rmp_network nets[RMP_NETWORKS_MAX];
	char item[INET6_ADDRSTRLEN + 8], t[RMP_NETWORK_TEXT_LEN];
	const char *s = value, *b, *e, *comma;
	unsigned int n = 0, i;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s) {
		l->nnetworks = 0;
		return 0;
	}
	for (;;) {
		comma = strchr(s, ',');
		e = comma ? comma : s + strlen(s);
		for (b = s; b < e && isspace((unsigned char)*b); b++)
			;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (b == e) {
			snprintf(msg, msglen, "%s: empty entry in the list",
				 qname);
			return -EINVAL;
		}
		if (n == RMP_NETWORKS_MAX) {
			snprintf(msg, msglen, "%s: more than %d networks",
				 qname, RMP_NETWORKS_MAX);
			return -EINVAL;
		}
		/* cut what is too long for a network: it fails as one */
		snprintf(item, sizeof(item), "%.*s", (int)(e - b), b);
		if (parse_network(item, &nets[n], qname, msg, msglen))
			return -EINVAL;
		for (i = 0; i < n; i++) {
			if (rmp_network_eq(&nets[i], &nets[n])) {
				rmp_network_format(&nets[n], false, t, sizeof(t));
				snprintf(msg, msglen, "%s: %s given twice",
					 qname, t);
				return -EINVAL;
			}
		}
		n++;
		if (!comma)
			break;
		s = comma + 1;
	}
	memcpy(l->networks, nets, n * sizeof(nets[0]));
	l->nnetworks = n;
	return 0;
}

/*
 * A syntax's parser: value (q: its quoted form, for messages; never for a
 * key) into k's field of base. On failure writes "qname: why" into msg
 * and returns -EINVAL. Numbers go on to store_number, which checks the
 * key's range and rules.
 */
typedef int parse_fn(const struct key *k, void *base, const char *qname,
		     const char *value, const char *q, char *msg,
		     size_t msglen);

/* store_number -- u, once it meets k's range and rules, into base. */
static int store_number(const struct key *k, void *base, const char *qname,
			const char *q, uint64_t u, char *msg, size_t msglen)
{
	char lo[32], hi[32];

	if (k->flags & KF_HUGEPAGE) {
		if (u != 2 * MIB && u != GIB) {
			snprintf(msg, msglen,
				 "%s: %s is not a supported hugepage size (2M or 1G)",
				 qname, q);
			return -EINVAL;
		}
	}
	if (u > (uint64_t)k->max || (int64_t)u < k->min) {
		snprintf(msg, msglen, "%s: %s is out of range (%s..%s)",
			 qname, q, cfg_format_num(k, k->min, lo, sizeof(lo)),
			 cfg_format_num(k, k->max, hi, sizeof(hi)));
		return -EINVAL;
	}
	if ((k->flags & KF_POW2) && (u & (u - 1))) {
		snprintf(msg, msglen, "%s: %s is not a power of two",
			 qname, q);
		return -EINVAL;
	}
	set_num(k, base, (int64_t)u);
	return 0;
}

static int parse_key(const struct key *k, void *base, const char *qname,
		     const char *value, const char *q, char *msg,
		     size_t msglen)
{
	struct rmp_tenant_config *t = base;

	(void)k;
	(void)q; /* a key is never echoed */
	if (rmp_key_parse(value, t->key, &t->key_len)) {
		snprintf(msg, msglen,
			 "%s: not a key (expected %d to %d hex digits)",
			 qname, 2 * RMP_KEY_MIN, 2 * RMP_KEY_MAX);
		return -EINVAL;
	}
	return 0;
}

static int parse_network_list(const struct key *k, void *base,
			      const char *qname, const char *value,
			      const char *q, char *msg, size_t msglen)
{
	(void)q;
	return parse_networks(value, cfg_field(k, base), qname, msg, msglen);
}

/* text_ok -- value is text of k's syntax; *what: why not. */
static bool text_ok(const struct key *k, const char *value, const char **what)
{
	switch (k->syntax) {
	case SY_ADDR:
		*what = "is not a numeric IPv4 or IPv6 address";
		return !rmp_parse_addr(value, NULL);
	case SY_IBDEV:
		*what = "is not an RDMA device name";
		return valid_ibdev(value);
	case SY_PATH:
		*what = k->flags & KF_EMPTY_OFF ?
				"is not an absolute path (or empty)" :
				"is not an absolute path";
		return ((k->flags & KF_EMPTY_OFF) && !*value) ||
		       valid_path(value);
	case SY_GROUP:
		*what = "is not a group name";
		return valid_group(value);
	case SY_HOSTPORT:
		*what = "is not ADDR:PORT or [V6ADDR]:PORT (or empty)";
		return !*value || !rmp_parse_hostport(value, NULL, 0, NULL);
	default:
		*what = "has no parser (bug)";
		return false;
	}
}

static int parse_text(const struct key *k, void *base, const char *qname,
		      const char *value, const char *q, char *msg,
		      size_t msglen)
{
	const char *what = NULL;

	if (strlen(value) >= k->len) {
		snprintf(msg, msglen,
			 "%s: value is too long (at most %zu characters)",
			 qname, k->len - 1);
		return -EINVAL;
	}
	if (!text_ok(k, value, &what)) {
		snprintf(msg, msglen, "%s: %s %s", qname, q, what);
		return -EINVAL;
	}
	strcpy((char *)cfg_field(k, base), value);
	return 0;
}

static int parse_name(const struct key *k, void *base, const char *qname,
		      const char *value, const char *q, char *msg,
		      size_t msglen)
{
	size_t i, o;

	for (i = 0; k->names[i].name; i++) {
		if (!strcmp(value, k->names[i].name)) {
			set_num(k, base, k->names[i].val);
			return 0;
		}
	}
	o = (size_t)snprintf(msg, msglen, "%s: %s is not one of ", qname, q);
	for (i = 0; k->names[i].name && o < msglen; i++)
		o += (size_t)snprintf(msg + o, msglen - o, "%s%s",
				      i ? ", " : "", k->names[i].name);
	return -EINVAL;
}

static int parse_bool_value(const struct key *k, void *base,
			    const char *qname, const char *value,
			    const char *q, char *msg, size_t msglen)
{
	bool b;

	if (rmp_parse_bool(value, &b)) {
		snprintf(msg, msglen,
			 "%s: %s is not a boolean (use yes or no)", qname, q);
		return -EINVAL;
	}
	set_num(k, base, b);
	return 0;
}

static int parse_node(const struct key *k, void *base, const char *qname,
		      const char *value, const char *q, char *msg,
		      size_t msglen)
{
	uint64_t u = 0;

	if (!strcmp(value, "auto")) {
		set_num(k, base, -1);
		return 0;
	}
	if (rmp_parse_u64(value, &u)) {
		snprintf(msg, msglen,
			 "%s: %s is not a NUMA node (use auto or a number >= 0)",
			 qname, q);
		return -EINVAL;
	}
	return store_number(k, base, qname, q, u, msg, msglen);
}

/*
 * parse_number -- SY_UINT, SY_SIZE, SY_DURATION: the grammar's reader,
 * and what a value that is none is called. A value too large for the
 * reader is out of range, not malformed.
 */
static int parse_number(const struct key *k, void *base, const char *qname,
			const char *value, const char *q, char *msg,
			size_t msglen)
{
	uint64_t u = 0;
	const char *what;
	int ret;

	switch (k->syntax) {
	case SY_UINT:
		ret = rmp_parse_u64(value, &u);
		what = "is not a number";
		break;
	case SY_SIZE:
		ret = rmp_parse_size(value, &u);
		what = "is not a size (use e.g. 512M, 4G)";
		break;
	default: /* SY_DURATION */
		ret = rmp_parse_duration_ms(value, &u);
		what = "is not a duration (use e.g. 500ms, 30s, 5m, 1h, 1d)";
		break;
	}
	if (ret == -EINVAL) {
		snprintf(msg, msglen, "%s: %s %s", qname, q, what);
		return -EINVAL;
	}
	if (ret)
		u = UINT64_MAX; /* overflow: reported as out of range */
	return store_number(k, base, qname, q, u, msg, msglen);
}

/* Each syntax's parser (a key's store follows from its syntax). */
static parse_fn *const parsers[] = {
	[SY_ADDR] = parse_text,
	[SY_IBDEV] = parse_text,
	[SY_PATH] = parse_text,
	[SY_GROUP] = parse_text,
	[SY_HOSTPORT] = parse_text,
	[SY_UINT] = parse_number,
	[SY_SIZE] = parse_number,
	[SY_DURATION] = parse_number,
	[SY_BOOL] = parse_bool_value,
	[SY_NAMES] = parse_name,
	[SY_NODE] = parse_node,
	[SY_KEY] = parse_key,
	[SY_NETWORKS] = parse_network_list,
};

/*
 * parse_value -- check and store value for key k into base (see cfg_field()).
 * On failure writes "qname: why" into msg and returns -EINVAL. A key's
 * text never gets into msg.
 */
static int parse_value(const struct key *k, void *base, const char *qname,
		       const char *value, char *msg, size_t msglen)
{
	char q[QUOTE_LEN] = "";

	if ((size_t)k->syntax >= sizeof(parsers) / sizeof(parsers[0]) ||
	    !parsers[k->syntax]) {
		snprintf(msg, msglen, "%s: has no parser (bug)", qname);
		return -EINVAL;
	}
	if (k->syntax != SY_KEY)
		quote(value, q, sizeof(q));
	return parsers[k->syntax](k, base, qname, value, q, msg, msglen);
}

/* State of one load: the configuration being built and the text source. */
struct parse {
	struct rmp_config cfg;
	const char *name;        /* FILE in messages */
	char *err;
	size_t errlen;
	unsigned int line;       /* line the reader returned last */
	unsigned int err_line;   /* line of the first error, 0 = none */
	unsigned int seen[NKEYS]; /* line that set each key, 0 = not yet */
	/* the same for each tenant's keys, and the line of its section */
	unsigned int tseen[RMP_TENANTS_MAX][NTKEYS];
	unsigned int tline[RMP_TENANTS_MAX];
	FILE *file;              /* source: a file ... */
	const char *text;        /* ... or a string */
	int read_errno;
};

/* fail -- record "FILE:LINE: ..." unless an earlier error is recorded. */
static void fail(struct parse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	int o;

	if (p->err_line)
		return;
	p->err_line = p->line;
	if (!p->err || !p->errlen)
		return;
	o = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->line);
	if (o < 0 || (size_t)o >= p->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(p->err + o, p->errlen - (size_t)o, fmt, ap);
	va_end(ap);
}

/* next_char -- the next byte of the source, or EOF at its end/on error. */
static int next_char(struct parse *p)
{
	int ch;

	if (p->text)
		return *p->text ? (unsigned char)*p->text++ : EOF;
	ch = getc(p->file);
	if (ch == EOF && ferror(p->file))
		p->read_errno = errno ? errno : EIO;
	return ch;
}

/* known_section -- s is one of the sections besides [tenant.NAME]. */
static bool known_section(const char *s)
{
	size_t i;

	for (i = 0; i < NSECTIONS; i++)
		if (!strcmp(s, sections[i]))
			return true;
	return false;
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

/*
 * add_tenant -- the [tenant.NAME] header of a new tenant: check the name,
 * that it is new and that there is room. 0 or -EINVAL (error recorded).
 */
static int add_tenant(struct parse *p, const char *name)
{
	struct rmp_tenant_config *t;
	char q[QUOTE_LEN];
	int i;

	if (!rmp_tenant_name_ok(name)) {
		fail(p, "tenant name %s is not valid (1 to %d of A-Z, a-z, "
		     "0-9, '_', '.' and '-')", quote(name, q, sizeof(q)),
		     RMP_TENANT_MAX);
		return -EINVAL;
	}
	if (!strcmp(name, "anonymous")) {
		fail(p, "tenant name \"anonymous\" is reserved (anonymous "
		     "clients are set up in [anonymous])");
		return -EINVAL;
	}
	i = cfg_find_tenant(&p->cfg, name);
	if (i >= 0) {
		fail(p, "tenant.%s: duplicate tenant (first defined on line "
		     "%u)", name, p->tline[i]);
		return -EINVAL;
	}
	if (p->cfg.ntenants >= RMP_TENANTS_MAX) {
		fail(p, "tenant.%s: too many tenants (at most %d)", name,
		     RMP_TENANTS_MAX);
		return -EINVAL;
	}
	t = &p->cfg.tenants[p->cfg.ntenants];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	p->tline[p->cfg.ntenants++] = p->line;
	return 0;
}

/*
 * check_section -- validate a "[name]" line in buf and rewrite it as
 * exactly "[name]\n" so inih sees the trimmed name; a [tenant.NAME]
 * header adds the tenant. 0 or -EINVAL (with the error recorded).
 */
static int check_section(struct parse *p, char *buf)
{
	char q[QUOTE_LEN];
	char *name = buf + 1, *rb = strchr(buf, ']'), *e, *rest;

	if (!rb) {
		fail(p, "section header lacks ']'");
		return -EINVAL;
	}
	for (rest = rb + 1; isspace((unsigned char)*rest); rest++)
		;
	if (*rest && *rest != ';' && *rest != '#') {
		fail(p, "unexpected text after ']'");
		return -EINVAL;
	}
	*rb = '\0';
	while (isspace((unsigned char)*name))
		name++;
	for (e = rb; e > name && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	if (!strcmp(name, "quota")) {
		fail(p, "section [quota] was replaced by per-tenant limits: "
		     "bytes and leases in [tenant.NAME] and [anonymous]");
		return -EINVAL;
	}
	if (!strcmp(name, "tenant")) {
		fail(p, "section [tenant] needs a name: [tenant.NAME]");
		return -EINVAL;
	}
	if (!strncmp(name, TENANT_PFX, TENANT_PFX_LEN)) {
		if (add_tenant(p, name + TENANT_PFX_LEN))
			return -EINVAL;
	} else if (!known_section(name)) {
		fail(p, "unknown section %s (expected server, pool, lease, "
		     "anonymous or tenant.NAME)", quote(name, q, sizeof(q)));
		return -EINVAL;
	}
	memmove(buf + 1, name, (size_t)(e - name));
	buf[1 + (e - name)] = ']';
	buf[2 + (e - name)] = '\n';
	buf[3 + (e - name)] = '\0';
	return 0;
}

/*
 * reader -- the ini_reader: one physical line per call, so inih's line
 * numbers are ours. It rejects over-long lines and NUL bytes rather than
 * letting inih split or cut them, drops a UTF-8 BOM and leading
 * whitespace (no continuation lines), checks section headers (inih never
 * reports an empty unknown section) and stops at the first error.
 */
static char *reader(char *buf, int num, void *stream)
{
	struct parse *p = stream;
	size_t n = 0, skip = 0, cap;
	bool too_long = false, nul = false;
	int ch;

	if (p->err_line || p->read_errno || num < 4)
		return NULL;
	cap = (size_t)num - 2; /* room for '\n' and NUL */
	ch = next_char(p);
	if (ch == EOF)
		return NULL;
	p->line++;
	for (; ch != EOF && ch != '\n'; ch = next_char(p)) {
		if (ch == '\0')
			nul = true;
		else if (n < cap)
			buf[n++] = (char)ch;
		else
			too_long = true;
	}
	if (p->read_errno)
		return NULL;
	buf[n] = '\0';
	if (nul) {
		fail(p, "line contains a NUL byte");
		return NULL;
	}
	if (too_long) {
		fail(p, "line is too long (at most %zu characters)", cap);
		return NULL;
	}
	if (p->line == 1 && !strncmp(buf, "\xef\xbb\xbf", 3))
		skip = 3;
	while (isspace((unsigned char)buf[skip]))
		skip++;
	n -= skip;
	memmove(buf, buf + skip, n + 1);
	if (buf[0] == '[' && check_section(p, buf))
		return NULL;
	if (buf[0] != '[') {
		buf[n] = '\n';
		buf[n + 1] = '\0';
	}
	return buf;
}

/* handler -- the ini_handler: one "key = value" in a known section. */
static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct parse *p = user;
	char msg[512], q[QUOTE_LEN], qname[64];
	const struct key *tab = keys;
	struct rmp_tenant_config *t = NULL;
	unsigned int *seen = p->seen;
	void *base = &p->cfg;
	size_t i, n = NKEYS;
	int ti;

	if (p->err_line)
		return 0;
	if (!*section) {
		fail(p, "key %s is outside of any section",
		     quote(name, q, sizeof(q)));
		return 0;
	}
	if (!strncmp(section, TENANT_PFX, TENANT_PFX_LEN)) {
		/* check_section() added it */
		ti = cfg_find_tenant(&p->cfg, section + TENANT_PFX_LEN);
		if (ti < 0) {
			fail(p, "[%s]: no such tenant (bug)", section);
			return 0;
		}
		t = &p->cfg.tenants[ti];
		tab = tenant_keys;
		n = NTKEYS;
		seen = p->tseen[ti];
		base = t;
	}
	for (i = 0; i < n; i++)
		if ((t || !strcmp(section, tab[i].section)) &&
		    !strcmp(name, tab[i].name))
			break;
	if (t)
		snprintf(qname, sizeof(qname), "tenant.%s.%s", t->name,
			 i < n ? tab[i].name : "");
	else
		snprintf(qname, sizeof(qname), "%s",
			 i < n ? tab[i].qname : "");
	if (i == n) {
		fail(p, "unknown key %s in section [%s]",
		     quote(name, q, sizeof(q)), section);
		return 0;
	}
	if (seen[i]) {
		fail(p, "%s: duplicate key (first set on line %u)", qname,
		     seen[i]);
		return 0;
	}
	if (parse_value(&tab[i], base, qname, value, msg, sizeof(msg))) {
		fail(p, "%s", msg);
		return 0;
	}
	if (t && t->key_len && t->key_file[0]) {
		fail(p, "tenant.%s: give key or key_file (not both)", t->name);
		return 0;
	}
	seen[i] = p->line;
	return 1;
}

/* set_err -- write a message into err when there is room for one. */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* parse_all -- run inih over p's source into p->cfg, then the checks. */
static int parse_all(struct parse *p)
{
	unsigned int i;
	char ebuf[128];
	int ret;

	rmp_config_defaults(&p->cfg);
	ret = ini_parse_stream(reader, p, handler, p);
	if (p->read_errno) {
		set_err(p->err, p->errlen, "%s: read error: %s", p->name,
			strerror_r(p->read_errno, ebuf, sizeof(ebuf)));
		return -p->read_errno;
	}
	if (ret < 0) {
		/* inih could not allocate its line buffer */
		set_err(p->err, p->errlen, "%s: out of memory", p->name);
		return -ENOMEM;
	}
	if (ret > 0 && (!p->err_line || (unsigned int)ret < p->err_line)) {
		set_err(p->err, p->errlen,
			"%s:%d: expected \"key = value\", \"[section]\" or a comment",
			p->name, ret);
		return -EINVAL;
	}
	if (p->err_line)
		return -EINVAL;
	/* before rmp_config_check(), to say the line */
	for (i = 0; i < p->cfg.ntenants; i++) {
		const struct rmp_tenant_config *t = &p->cfg.tenants[i];

		if (!t->key_len && !t->key_file[0]) {
			p->line = p->tline[i];
			fail(p, "tenant.%s: give key or key_file (not both)",
			     t->name);
			return -EINVAL;
		}
	}
	return rmp_config_check(&p->cfg, p->name, p->err, p->errlen);
}

/*
 * load -- parse p's source and publish p->cfg into c on success. Wipes
 * p->cfg, which may hold keys, either way.
 */
static int load(struct rmp_config *c, struct parse *p)
{
	int ret = parse_all(p);

	if (!ret) {
		*c = p->cfg;
		set_err(p->err, p->errlen, "%s", "");
	}
	rmp_wipe(&p->cfg, sizeof(p->cfg));
	return ret;
}

int rmp_config_load_string(struct rmp_config *c, const char *text,
			   const char *name, char *err, size_t errlen)
{
	struct parse p;

	memset(&p, 0, sizeof(p));
	p.name = name ? name : "<string>";
	p.err = err;
	p.errlen = errlen;
	p.text = text ? text : "";
	return load(c, &p);
}

/*
 * check_inline_keys -- a file that holds a tenant's key inline (key =)
 * must be as closed as a key file: nobody but its owner and group may
 * read it. -EACCES otherwise (a key others may have read is spent).
 */
static int check_inline_keys(const struct rmp_config *c, FILE *f,
			     const char *path, char *err, size_t errlen)
{
	struct stat st;

	for (unsigned i = 0; i < c->ntenants; i++) {
		if (!c->tenants[i].key_len)
			continue;
		if (fstat(fileno(f), &st))
			return -errno;
		if (!(st.st_mode & S_IRWXO))
			return 0;
		set_err(err, errlen, "%s: tenant.%s.key is inline, but others "
			"may read the file (mode %03o): chmod o-rwx it, "
			"and make a new key, or use key_file", path,
			c->tenants[i].name, (unsigned)(st.st_mode & 0777));
		return -EACCES;
	}
	return 0;
}

int rmp_config_load_file(struct rmp_config *c, const char *path, char *err,
			 size_t errlen)
{
	struct parse p;
	char ebuf[128];
	int ret;

	memset(&p, 0, sizeof(p));
	p.name = path;
	p.err = err;
	p.errlen = errlen;
	p.file = fopen(path, "re");
	if (!p.file) {
		ret = -errno;
		set_err(err, errlen, "%s: cannot open: %s", path,
			strerror_r(-ret, ebuf, sizeof(ebuf)));
		return ret;
	}
	ret = load(c, &p);
	if (ret == 0)
		ret = check_inline_keys(c, p.file, path, err, errlen);
	fclose(p.file);
	return ret;
}

/*
 * check_limits -- l's networks: at most RMP_NETWORKS_MAX, each one the
 * parser could have made. who is "anonymous" or "tenant.NAME".
 */
static int check_limits(const struct rmp_tenant_limits *l, const char *who,
			const char *pre, const char *sep, char *err,
			size_t errlen)
{
	unsigned int i;

	if (l->nnetworks > RMP_NETWORKS_MAX) {
		set_err(err, errlen, "%s%s%s.networks: more than %d networks",
			pre, sep, who, RMP_NETWORKS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < l->nnetworks; i++) {
		if (!rmp_network_valid(&l->networks[i])) {
			set_err(err, errlen,
				"%s%s%s.networks: entry %u is not a network",
				pre, sep, who, i + 1);
			return -EINVAL;
		}
	}
	return 0;
}

/* check_tenants -- the tenant rules of rmp_config_check(). */
static int check_tenants(const struct rmp_config *c, const char *pre,
			 const char *sep, char *err, size_t errlen)
{
	char who[sizeof(TENANT_PFX) + RMP_TENANT_MAX], q[QUOTE_LEN];
	unsigned int i;
	int j;

	if (c->ntenants > RMP_TENANTS_MAX) {
		set_err(err, errlen, "%s%stoo many tenants (%u, at most %d)",
			pre, sep, c->ntenants, RMP_TENANTS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < c->ntenants; i++) {
		const struct rmp_tenant_config *t = &c->tenants[i];

		if (!memchr(t->name, '\0', sizeof(t->name)) ||
		    !rmp_tenant_name_ok(t->name) ||
		    !strcmp(t->name, "anonymous")) {
			set_err(err, errlen,
				"%s%stenant name %s is not valid", pre, sep,
				memchr(t->name, '\0', sizeof(t->name)) ?
				quote(t->name, q, sizeof(q)) : "(unterminated)");
			return -EINVAL;
		}
		snprintf(who, sizeof(who), TENANT_PFX "%s", t->name);
		j = cfg_find_tenant(c, t->name);
		if (j >= 0 && (unsigned int)j < i) {
			set_err(err, errlen, "%s%s%s: duplicate tenant", pre,
				sep, who);
			return -EINVAL;
		}
		if (!memchr(t->key_file, '\0', sizeof(t->key_file)) ||
		    !t->key_len == !t->key_file[0]) {
			set_err(err, errlen,
				"%s%s%s: give key or key_file (not both)", pre,
				sep, who);
			return -EINVAL;
		}
		if (t->key_len && (t->key_len < RMP_KEY_MIN ||
				   t->key_len > RMP_KEY_MAX)) {
			set_err(err, errlen,
				"%s%s%s.key: not a key (expected %d to %d hex "
				"digits)", pre, sep, who, 2 * RMP_KEY_MIN,
				2 * RMP_KEY_MAX);
			return -EINVAL;
		}
		if (t->key_file[0] && !valid_path(t->key_file)) {
			set_err(err, errlen,
				"%s%s%s.key_file: not an absolute path", pre,
				sep, who);
			return -EINVAL;
		}
		if (check_limits(&t->limits, who, pre, sep, err, errlen))
			return -EINVAL;
	}
	return 0;
}

int rmp_config_check(const struct rmp_config *c, const char *name, char *err,
		     size_t errlen)
{
	const char *pre = name ? name : "", *sep = name ? ": " : "";
	char a[32], b[32];

	if (c->pool.hugepage_size != 2 * MIB && c->pool.hugepage_size != GIB) {
		set_err(err, errlen, "%s%spool.hugepage_size must be 2M or 1G",
			pre, sep);
		return -EINVAL;
	}
	if (!c->pool.size) {
		set_err(err, errlen, "%s%spool.size must not be 0", pre, sep);
		return -EINVAL;
	}
	if (c->pool.size % c->pool.hugepage_size) {
		set_err(err, errlen,
			"%s%spool.size (%s) is not a multiple of pool.hugepage_size (%s)",
			pre, sep, rmp_format_size(c->pool.size, a, sizeof(a)),
			rmp_format_size(c->pool.hugepage_size, b, sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.ttl_default_ms < c->lease.ttl_min_ms) {
		set_err(err, errlen,
			"%s%slease.ttl_default (%s) is less than lease.ttl_min (%s)",
			pre, sep,
			rmp_format_duration_ms(c->lease.ttl_default_ms, a,
					       sizeof(a)),
			rmp_format_duration_ms(c->lease.ttl_min_ms, b,
					       sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.ttl_default_ms > c->lease.ttl_max_ms) {
		set_err(err, errlen,
			"%s%slease.ttl_default (%s) is more than lease.ttl_max (%s)",
			pre, sep,
			rmp_format_duration_ms(c->lease.ttl_default_ms, a,
					       sizeof(a)),
			rmp_format_duration_ms(c->lease.ttl_max_ms, b,
					       sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.max_lease > c->pool.size) {
		set_err(err, errlen,
			"%s%slease.max_lease (%s) is larger than pool.size (%s)",
			pre, sep,
			rmp_format_size(c->lease.max_lease, a, sizeof(a)),
			rmp_format_size(c->pool.size, b, sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.alignment > c->pool.size) {
		set_err(err, errlen,
			"%s%slease.alignment (%s) is larger than pool.size (%s)",
			pre, sep,
			rmp_format_size(c->lease.alignment, a, sizeof(a)),
			rmp_format_size(c->pool.size, b, sizeof(b)));
		return -EINVAL;
	}
	if (c->pool.fdstore && c->pool.state_dir[0]) {
		set_err(err, errlen, "%s%spool.fdstore and pool.state_dir: "
			"choose one place for the pool's state", pre, sep);
		return -EINVAL;
	}
	if (check_limits(&c->anonymous.limits, "anonymous", pre, sep, err,
			 errlen))
		return -EINVAL;
	return check_tenants(c, pre, sep, err, errlen);
}

/* SPDX-License-Identifier: MIT */
/* config.h -- rmpoold configuration: defaults, INI parsing, checks, dump. */
#ifndef RMP_CONFIG_H
#define RMP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "auth.h"  /* RMP_KEY_MAX, RMP_TENANT_MAX */
#include "network.h"
#include "proto.h" /* enum rmp_keys_mode */
#include "member_names.h" /* the [cluster] grammar: endpoints, labels, node names */
#include "parse.h" /* the value grammar; rmp_parse_size() & co. */

/*
 * The daemon reads one INI file (default RMP_CONFIG_PATH) with the sections
 * [server], [pool], [lease], [anonymous], [cluster] and one [tenant.NAME]
 * per tenant;
 * conf/rmpoold.conf lists every key with its default. Sections may come
 * in any order; [server], [pool], [lease] and [anonymous] may be opened
 * again (their keys still count once), a tenant's section may not. The
 * rules, held by rmp_config_load_file() and rmp_config_load_string():
 *
 *  - an unknown section or key, a value that does not parse or is out of
 *    range, a key given twice, a line longer than inih's line buffer and a
 *    line that is not "key = value", "[section]" or a comment all fail the
 *    load with "FILE:LINE: message"; so do a tenant name that is not
 *    1..RMP_TENANT_MAX bytes of [A-Za-z0-9_.-] (or is "anonymous", the
 *    name the daemon gives anonymous clients), the same tenant twice,
 *    more than RMP_TENANTS_MAX tenants, a tenant with both or neither of
 *    key and key_file, and the retired section [quota];
 *  - checks that involve several keys run after the whole file was read
 *    and fail with "FILE: message";
 *  - comments start with '#' or ';' at the start of a line, or with ';'
 *    after whitespace within a line; leading whitespace is ignored, so
 *    there are no multi-line (continuation) values;
 *  - numbers, sizes (4K, 512M: powers of 1024), durations (500ms, 30s;
 *    a bare number being seconds), booleans (yes/no, ...) and host:port
 *    follow the grammar of common/parse.h, the same as on the command
 *    line; the dump prints them with rmp_format_size() and
 *    rmp_format_duration_ms();
 *  - a tenant key is hex (rmp_key_parse()); no message ever holds its
 *    text. A key_file is only a path here: the daemon reads it later;
 *  - networks is a comma-separated list of at most RMP_NETWORKS_MAX
 *    ADDR/PREFIX (numeric IPv4 or IPv6, prefix 0..32 or 0..128; a bare
 *    address is /32 or /128), host bits zero, none twice; empty = any
 *    peer. An IPv4-mapped network (::ffff:a.b.c.d/96..128) is stored, and
 *    printed, as the IPv4 network it maps.
 *
 * Strings live in fixed arrays; a value that does not fit is an error,
 * never silently truncated.
 */

/* The build sets it to SYSCONFDIR/rmpool/rmpoold.conf, where meson
 * install puts the file (daemon/meson.build). */
#ifndef RMP_CONFIG_PATH
#define RMP_CONFIG_PATH "/etc/rmpool/rmpoold.conf"
#endif

/* Buffer sizes of the string keys, terminating NUL included. */
#define RMP_CONFIG_ADDR_LEN 64   /* IPv6 text + "%" + interface name */
#define RMP_CONFIG_IBDEV_LEN 64  /* IB_DEVICE_NAME_MAX */
#define RMP_CONFIG_PATH_LEN 108  /* sizeof(sockaddr_un.sun_path) */
#define RMP_CONFIG_GROUP_LEN 64
/* [cluster]: the etcd endpoint list and the labels (a line holds at
 * most 198 characters anyway), a node name, the key prefix. */
#define RMP_CONFIG_LIST_LEN 200
#define RMP_CONFIG_NAME_LEN 64

/* Most [tenant.NAME] sections; most networks in one networks list. */
#define RMP_TENANTS_MAX 64
#define RMP_NETWORKS_MAX 8
/* Most listen addresses; most RDMA devices served (RMP_DEVICES_MAX). */
#define RMP_CONFIG_LISTEN_MAX 8
#define RMP_CONFIG_DEVICES_MAX 8

/* Largest value any size key accepts: keeps sums of sizes far from 2^64. */
#define RMP_CONFIG_SIZE_MAX (UINT64_C(1) << 56)

/* [pool] hugepages: what to do when the node lacks free hugepages. */
enum rmp_hugepages_mode {
	RMP_HUGEPAGES_REQUIRED = 0, /* exit with a message saying what to set */
	RMP_HUGEPAGES_PREFERRED,    /* warn and use normal pages */
};

/*
 * [lease] lease_keys: how leases get their own rkey (docs/using.md "Lease
 * lifetime and keys"). The non-auto values are enum rmp_keys_mode's, so
 * the daemon reports the resolved mode as is.
 */
enum rmp_lease_keys {
	RMP_LEASE_KEYS_AUTO = 0, /* window if the device has type-2 MWs */
	RMP_LEASE_KEYS_WINDOW = RMP_KEYS_WINDOW,
	RMP_LEASE_KEYS_REGION = RMP_KEYS_REGION,
	RMP_LEASE_KEYS_POOL = RMP_KEYS_POOL,
};

/* Limits of one tenant (or of anonymous clients); 0 = unlimited. */
struct rmp_tenant_limits {
	uint64_t bytes;        /* leased bytes, all connections, alive or not */
	uint64_t leases;
	uint32_t connections;  /* connections at once */
	/* How long a connection whose proof a reload voided keeps its
	 * keys before it is closed; 0: closed at the reload. */
	uint64_t rotate_grace_ms;
	unsigned nnetworks;    /* 0 = any peer address */
	struct rmp_network networks[RMP_NETWORKS_MAX];
};

/* One [tenant.NAME] section. */
struct rmp_tenant_config {
	char name[RMP_TENANT_MAX + 1];
	uint8_t key[RMP_KEY_MAX];   /* inline key; key_len 0 = key_file */
	size_t key_len;
	char key_file[RMP_CONFIG_PATH_LEN]; /* "" when the key is inline */
	struct rmp_tenant_limits limits;
};

/*
 * The effective configuration; one member struct per INI section, and
 * the tenants in the order of the file. It holds inline tenant keys:
 * wipe it (rmp_wipe) before freeing memory that held one.
 */
struct rmp_config {
	struct {
		/* Numeric IPv4/IPv6 addresses of the rdma_cm listener,
		 * comma-separated (rmp_list_item); a wildcard comes alone. */
		char listen[RMP_CONFIG_LIST_LEN];
		uint16_t port;                 /* 1..65535 */
		/* RDMA device names, comma-separated; "" = the devices of
		 * the listen addresses (a wildcard: every ACTIVE one). */
		char device[RMP_CONFIG_LIST_LEN];
		uint32_t max_clients;          /* >= 1 */
		/* Connections still to prove a tenant: at once, and from one
		 * address (IPv6: one /64). */
		uint32_t max_unauthenticated, unauthenticated_per_address;
		uint32_t credits;              /* requests in flight/client */
		char admin_socket[RMP_CONFIG_PATH_LEN]; /* absolute path */
		char admin_group[RMP_CONFIG_GROUP_LEN]; /* "" = root only */
		/* "ADDR:PORT" or "[V6ADDR]:PORT"; "" = no metrics. */
		char metrics_listen[RMP_CONFIG_ADDR_LEN];
		int log_level;                 /* syslog priority LOG_ERR.. */
		/* A key revocation slower than this fails its connection. */
		uint64_t revoke_timeout_ms;
		/* SIGTERM: serve existing connections this long at most. */
		uint64_t drain_timeout_ms;
		/* More remote access errors than this from one address
		 * within a minute start a cool-down; 0 = never. */
		uint32_t access_errors_per_minute;
		uint64_t access_cooldown_ms;   /* refused this long */
		uint32_t connections_per_address; /* 0 = unlimited; default 16 */
		uint64_t auth_timeout_ms;         /* default 5s, >= 100ms */
		uint32_t auth_failures_per_minute;/* default 5; 0 = never cool down */
		/* Poll the CQ this long after work before sleeping; 0 = never. */
		uint32_t busy_poll_us;            /* default 50, <= 1000 */
		/* A connection quiet this long is probed; no answer: closed. */
		uint64_t keepalive_ms;            /* default 10s, 1s..1h */
	} server;
	struct {
		uint64_t size;                 /* bytes, > 0 */
		uint64_t hugepage_size;        /* bytes: 2 MiB or 1 GiB */
		enum rmp_hugepages_mode hugepages;
		int numa_node;                 /* -1 = auto */
		bool lock;                     /* mlock the pool */
		/* Where the pool and its lease journal live as a file that
		 * outlives the process (hot restart); "" = anonymous memory,
		 * a restart loses every lease. */
		char state_dir[RMP_CONFIG_PATH_LEN];
		/* Or keep that file as a memfd in systemd's fd store. */
		bool fdstore;
		uint32_t max_leases;           /* leases at once; 65536 */
	} pool;
	struct {
		enum rmp_lease_keys lease_keys;
		uint64_t ttl_default_ms;
		uint64_t ttl_min_ms;
		uint64_t ttl_max_ms;
		uint64_t expiry_tick_ms;
		uint64_t alignment;            /* power of two >= 64 */
		uint64_t max_lease;            /* bytes, 0 = pool size */
		uint32_t keys_per_lease;       /* >= 1, default 16 */
	} lease;
	struct {
		bool enabled;                     /* default false */
		struct rmp_tenant_limits limits;
	} anonymous;
	/* Membership in an etcd cluster (daemon/cluster.c); etcd "" = none. */
	struct {
		/* "http[s]://HOST:PORT[, ...]": rmp_cluster_endpoints() */
		char etcd[RMP_CONFIG_LIST_LEN];
		char prefix[RMP_CONFIG_NAME_LEN];   /* "/.../", default /rmpool/ */
		char node[RMP_CONFIG_NAME_LEN];     /* "" = the host name */
		char labels[RMP_CONFIG_LIST_LEN];   /* "k=v k=v": rmp_cluster_labels() */
		uint64_t ttl_ms;                    /* etcd lease: 1s..1min */
		/* TLS to https endpoints (only when every endpoint is
		 * https): the CAs to trust ("" = the system's), a client
		 * certificate and its key ("" = none) */
		char ca_file[RMP_CONFIG_PATH_LEN];
		char cert_file[RMP_CONFIG_PATH_LEN];
		char key_file[RMP_CONFIG_PATH_LEN];
		/* "USER:PASSWORD" for etcd, a file kept like a key file
		 * (only when every endpoint is https) */
		char credentials_file[RMP_CONFIG_PATH_LEN];
	} cluster;
	unsigned ntenants;
	struct rmp_tenant_config tenants[RMP_TENANTS_MAX];
};


/*
 * rmp_config_defaults -- fill c with the built-in defaults (the values
 * conf/rmpoold.conf documents). Never fails.
 */
void rmp_config_defaults(struct rmp_config *c);

/*
 * rmp_config_load_file -- read the INI file at path over the defaults.
 * @c:      receives the configuration; written only on success
 * @path:   file to read; also the FILE of the messages
 * @err:    receives a one-line message on failure, "" on success (may
 *          be NULL)
 * @errlen: size of err; the message is truncated to fit
 *
 * Returns 0 on success. -EINVAL when the text is not a valid configuration
 * (err says "FILE:LINE: ..." or "FILE: ..."), -errno when the file cannot
 * be opened or read (err says "FILE: cannot open: ..." / "read error").
 * On failure *c is left untouched.
 */
int rmp_config_load_file(struct rmp_config *c, const char *path, char *err,
			 size_t errlen);

/*
 * rmp_config_load_string -- parse NUL-terminated INI text over the
 * defaults, with the rules of rmp_config_load_file().
 * @c:      receives the configuration; written only on success
 * @text:   the INI text
 * @name:   FILE to use in messages; NULL means "<string>"
 * @err:    receives a one-line message on failure, "" on success (may
 *          be NULL)
 * @errlen: size of err
 *
 * Returns 0 or -EINVAL; on failure *c is left untouched.
 */
int rmp_config_load_string(struct rmp_config *c, const char *text,
			   const char *name, char *err, size_t errlen);

/*
 * rmp_config_check -- the checks that involve several keys: hugepage_size
 * is 2M or 1G, size > 0 and a multiple of it, ttl_min <= ttl_default <=
 * ttl_max, max_lease and alignment <= size; and what the parser holds for
 * tenants and networks: at most RMP_TENANTS_MAX tenants with valid,
 * distinct names, each with exactly one of key (RMP_KEY_MIN..RMP_KEY_MAX
 * bytes) and key_file (an absolute path), at most RMP_NETWORKS_MAX valid
 * networks per list; in [cluster], TLS files only with an https
 * endpoint, cert_file and key_file together. The
 * load functions run it; it is public for code that builds a
 * configuration by hand.
 * @c:      configuration to check
 * @name:   FILE to put before the message; NULL for none
 * @err:    receives "FILE: message" on failure (may be NULL)
 * @errlen: size of err
 *
 * Returns 0 or -EINVAL.
 */
int rmp_config_check(const struct rmp_config *c, const char *name, char *err,
		     size_t errlen);

/*
 * rmp_config_dump -- print c as an INI file that parses back to the same
 * configuration: every section and key in conf/rmpoold.conf order (then
 * [anonymous] and each [tenant.NAME] in c's order, a tenant with the one
 * of key and key_file it has), sizes and durations with the largest exact
 * suffix, networks in canonical CIDR form (for `--check-config`). A
 * networks line that would get long is printed compactly instead
 * ("networks=a,b", host networks as bare addresses) so that it is never
 * longer than the line it was read from.
 * @c:            configuration to print
 * @f:            stream to write to
 * @show_secrets: print inline tenant keys as hex. When false, each is
 *                the comment "# key = (inline, N bytes, not shown)", and
 *                a dump of a configuration with inline keys then does NOT
 *                parse back (that tenant has neither key nor key_file).
 *
 * Returns 0, or -EIO when the stream reports an error.
 */
int rmp_config_dump(const struct rmp_config *c, FILE *f, bool show_secrets);

/*
 * rmp_config_diff -- find the first key whose value differs between a
 * and b (in dump order), e.g. to tell what a reload would change.
 * Tenants are matched by name, whatever their order: a tenant in only
 * one of them gives "tenant.NAME", a difference in one of its keys
 * "tenant.NAME.KEY" (inline keys compare by their bytes).
 * Returns NULL when all keys are equal, else "section.key" in static
 * (thread-local) storage, valid until the thread's next call.
 */
const char *rmp_config_diff(const struct rmp_config *a,
			    const struct rmp_config *b);

#endif /* RMP_CONFIG_H */

/* SPDX-License-Identifier: MIT */
/*
 * config_int.h -- what the files of the config share, and no one else:
 * config.c (the key table), config_value.c (a value into its field),
 * config_load.c (a file), config_check.c (the rules between keys) and
 * config_dump.c (the dump and the diff a reload reports).
 */
#ifndef RMP_CONFIG_INT_H
#define RMP_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* (config.c and config_dump.c include config.h first.) */
struct rmp_config;
struct rmp_tenant_config;
struct rmp_tenant_limits;

/* How a value is written in the file. */
enum key_syntax {
	SY_ADDRS,    /* numeric IP addresses, comma-separated */
	SY_IBDEVS,   /* RDMA device names, comma-separated, or empty */
	SY_PATH,     /* absolute path */
	SY_GROUP,    /* group name or empty */
	SY_HOSTPORT, /* ADDR:PORT, [V6]:PORT or empty */
	SY_UINT,     /* rmp_parse_u64() */
	SY_SIZE,     /* rmp_parse_size() */
	SY_DURATION, /* rmp_parse_duration_ms() */
	SY_BOOL,     /* rmp_parse_bool(); dumped as yes or no */
	SY_NAMES,    /* one of key.names */
	SY_NODE,     /* auto or rmp_parse_u64() */
	SY_KEY,      /* tenant key: rmp_key_parse() hex, never echoed */
	SY_NETWORKS, /* ADDR[/PREFIX], comma separated, or empty */
	SY_ETCD,     /* http://HOST:PORT, comma separated, or empty */
	SY_PREFIX,   /* an etcd key prefix: /.../ */
	SY_NODENAME, /* rmp_cluster_node_ok() or empty */
	SY_LABELS,   /* NAME=VALUE, blank separated, or empty */
};

/* Where the value is stored in struct rmp_config. */
enum key_store {
	ST_STR,
	ST_U16,
	ST_U32,
	ST_U64,
	ST_INT,
	ST_BOOL,
	ST_HUGEPAGES,
	ST_LEASE_KEYS,
	ST_KEY,      /* key and key_len of a struct rmp_tenant_config */
	ST_NETWORKS, /* nnetworks and networks of a rmp_tenant_limits */
};

/* Extra rules for numeric keys. */
#define KF_POW2 0x1u     /* a power of two */
#define KF_HUGEPAGE 0x2u /* 2M or 1G */
#define KF_OMIT_EMPTY 0x4u /* the dump leaves the key out when "" */
#define KF_EMPTY_OFF 0x8u  /* "" is valid: the feature is off */

struct name_val {
	const char *name;
	int val;
};

/* One configuration key: where it lives, how it is written, its bounds. */
struct key {
	const char *section;
	const char *name;
	const char *qname; /* "section.name", for messages */
	enum key_syntax syntax;
	enum key_store store;
	size_t off;        /* offset in struct rmp_config (keys[]) or in
			    * struct rmp_tenant_config (tenant_keys[]) */
	size_t len;        /* ST_STR: buffer size */
	int64_t min, max;  /* numeric range, in stored units */
	unsigned int flags;
	const struct name_val *names; /* SY_NAMES */
};

/* Room for a quoted value in a message (cfg_quote). */
#define CFG_QUOTE_LEN 256
/* At least the number of keys of each table (config.c checks). */
#define CFG_KEYS_MAX 64
#define CFG_TENANT_KEYS_MAX 16

#define CFG_MIB (UINT64_C(1) << 20)
#define CFG_GIB (UINT64_C(1) << 30)

/* "[tenant.NAME]": the section prefix of a tenant. */
#define TENANT_PFX "tenant."
#define TENANT_PFX_LEN (sizeof(TENANT_PFX) - 1)

/* Every key of the file's sections, in the order of conf/rmpoold.conf
 * and of the dump; the keys of a [tenant.NAME] section. */
extern const struct key *const cfg_keys;
extern const size_t cfg_nkeys;
extern const struct key *const cfg_tenant_keys;
extern const size_t cfg_ntenant_keys;

const void *cfg_cfield(const struct key *k, const void *base);
unsigned int cfg_nnetworks(const struct rmp_tenant_limits *l);
int64_t cfg_get_num(const struct key *k, const void *base);
const char *cfg_format_num(const struct key *k, int64_t v, char *buf,
			      size_t buflen);
int cfg_find_tenant(const struct rmp_config *c, const char *name);
void *cfg_field(const struct key *k, void *base);
/* store v (already range-checked) into a non-string key */
void cfg_set_num(const struct key *k, void *base, int64_t v);
/* v in double quotes for a message, odd bytes escaped, cut after 48 */
const char *cfg_quote(const char *v, char *buf, size_t buflen);
/* write a message into err when there is room for one */
void cfg_set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* config_value.c: check and store value for key k into base (see
 * cfg_field()); on failure "qname: why" in msg and -EINVAL. A key's
 * text never gets into msg. */
int cfg_parse_value(const struct key *k, void *base, const char *qname,
		    const char *value, char *msg, size_t msglen);
/* an absolute path, no control characters */
bool cfg_valid_path(const char *s);
/* cfg_check_leases -- l's own lease limit is at most [pool] max_leases;
 * else "PREwho.leases (N) is more than pool.max_leases (M)" and -EINVAL
 * (config_check.c). */
int cfg_check_leases(const struct rmp_config *c,
		     const struct rmp_tenant_limits *l, const char *who,
		     const char *pre, const char *sep, char *err,
		     size_t errlen);

#endif /* RMP_CONFIG_INT_H */

/* SPDX-License-Identifier: MIT */
/* config.h -- rmpoold configuration: defaults, INI parsing, checks, dump. */
#ifndef RMP_CONFIG_H
#define RMP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The daemon reads one INI file (default RMP_CONFIG_PATH) with the sections
 * [server], [pool], [lease] and [quota]; conf/rmpoold.conf lists every key
 * with its default. The rules, held by rmp_config_load_file() and
 * rmp_config_load_string():
 *
 *  - an unknown section or key, a value that does not parse or is out of
 *    range, a key given twice, a line longer than inih's line buffer and a
 *    line that is not "key = value", "[section]" or a comment all fail the
 *    load with "FILE:LINE: message";
 *  - checks that involve several keys run after the whole file was read
 *    and fail with "FILE: message";
 *  - comments start with '#' or ';' at the start of a line, or with ';'
 *    after whitespace within a line; leading whitespace is ignored, so
 *    there are no multi-line (continuation) values;
 *  - sizes are decimal with an optional suffix K, M, G or T (powers of
 *    1024, either case); durations are decimal with an optional suffix ms,
 *    s, m, h or d, a bare number being seconds; booleans are yes/no,
 *    true/false, on/off or 1/0.
 *
 * Strings live in fixed arrays; a value that does not fit is an error,
 * never silently truncated.
 */

#define RMP_CONFIG_PATH "/etc/rmpool/rmpoold.conf"

/* Buffer sizes of the string keys, terminating NUL included. */
#define RMP_CONFIG_ADDR_LEN 64   /* IPv6 text + "%" + interface name */
#define RMP_CONFIG_IBDEV_LEN 64  /* IB_DEVICE_NAME_MAX */
#define RMP_CONFIG_PATH_LEN 108  /* sizeof(sockaddr_un.sun_path) */
#define RMP_CONFIG_GROUP_LEN 64

/* Largest value any size key accepts: keeps sums of sizes far from 2^64. */
#define RMP_CONFIG_SIZE_MAX (UINT64_C(1) << 56)

/* [pool] hugepages: what to do when the node lacks free hugepages. */
enum rmp_hugepages_mode {
	RMP_HUGEPAGES_REQUIRED = 0, /* exit with a message saying what to set */
	RMP_HUGEPAGES_PREFERRED,    /* warn and use normal pages */
};

/*
 * [lease] lease_keys: how leases get their own rkey (DESIGN.md "rkey
 * isolation"). The non-auto values equal enum rmp_keys_mode of
 * common/proto.h so the daemon can report the resolved mode as is.
 */
enum rmp_lease_keys {
	RMP_LEASE_KEYS_AUTO = 0, /* window if the device has type-2 MWs */
	RMP_LEASE_KEYS_WINDOW = 1,
	RMP_LEASE_KEYS_REGION = 2,
	RMP_LEASE_KEYS_POOL = 3,
};

/* The effective configuration; one member struct per INI section. */
struct rmp_config {
	struct {
		/* Numeric IPv4/IPv6 address of the rdma_cm listener. */
		char listen[RMP_CONFIG_ADDR_LEN];
		uint16_t port;                 /* 1..65535 */
		/* RDMA device name; "" = the device of the listen address. */
		char device[RMP_CONFIG_IBDEV_LEN];
		uint32_t max_clients;          /* >= 1 */
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
	} server;
	struct {
		uint64_t size;                 /* bytes, > 0 */
		uint64_t hugepage_size;        /* bytes: 2 MiB or 1 GiB */
		enum rmp_hugepages_mode hugepages;
		int numa_node;                 /* -1 = auto */
		bool lock;                     /* mlock the pool */
	} pool;
	struct {
		enum rmp_lease_keys lease_keys;
		uint64_t ttl_default_ms;
		uint64_t ttl_min_ms;
		uint64_t ttl_max_ms;
		uint64_t expiry_tick_ms;
		uint64_t alignment;            /* power of two >= 64 */
		uint64_t max_lease;            /* bytes, 0 = pool size */
	} lease;
	struct {
		uint64_t bytes_per_client;     /* 0 = unlimited */
		uint64_t leases_per_client;    /* 0 = unlimited */
	} quota;
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
 * ttl_max, max_lease and alignment <= size. The load functions run it; it
 * is public for code that builds a configuration by hand.
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
 * configuration: every section and key in conf/rmpoold.conf order, sizes
 * and durations with the largest exact suffix (for `--check-config`).
 * @c: configuration to print
 * @f: stream to write to
 *
 * Returns 0, or -EIO when the stream reports an error.
 */
int rmp_config_dump(const struct rmp_config *c, FILE *f);

/*
 * rmp_config_diff -- find the first key whose value differs between a
 * and b (in dump order), e.g. to tell what a reload would change.
 * Returns NULL when all keys are equal, else a static "section.key"
 * string.
 */
const char *rmp_config_diff(const struct rmp_config *a,
			    const struct rmp_config *b);

/*
 * rmp_parse_size -- parse a byte count: decimal digits and an optional
 * suffix K, M, G or T (either case, powers of 1024), nothing else (no
 * sign, spaces or fraction).
 * @s:   text to parse
 * @out: receives the byte count; untouched on failure
 *
 * Returns 0, -EINVAL (empty, not a number, unknown suffix, trailing
 * characters) or -ERANGE (does not fit in 64 bits).
 */
int rmp_parse_size(const char *s, uint64_t *out);

/*
 * rmp_parse_duration_ms -- parse a duration: decimal digits and an
 * optional suffix ms, s, m, h or d (lower case); a bare number means
 * seconds.
 * @s:   text to parse
 * @out: receives milliseconds; untouched on failure
 *
 * Returns 0, -EINVAL (empty, not a number, unknown suffix, trailing
 * characters) or -ERANGE (does not fit in 64 bits of milliseconds).
 */
int rmp_parse_duration_ms(const char *s, uint64_t *out);

/*
 * rmp_parse_hostport -- split "ADDR:PORT" or "[V6ADDR]:PORT" with a
 * numeric address and a port in 1..65535 (the metrics_listen syntax).
 * @s:       text to parse
 * @host:    receives the address without brackets; may be NULL
 * @hostlen: size of host
 * @port:    receives the port; may be NULL
 *
 * Returns 0, -EINVAL (bad syntax, address or port) or -ENOSPC (host too
 * small). Outputs are untouched on failure.
 */
int rmp_parse_hostport(const char *s, char *host, size_t hostlen,
		       uint16_t *port);

/*
 * rmp_format_size -- print bytes with the largest suffix that divides it
 * exactly ("1G", "3M", "1536K", "100"); the output parses back with
 * rmp_parse_size().
 * @bytes:  value
 * @buf:    output buffer; 24 bytes always suffice
 * @buflen: size of buf
 *
 * Returns buf.
 */
char *rmp_format_size(uint64_t bytes, char *buf, size_t buflen);

/*
 * rmp_format_duration_ms -- print milliseconds with the largest unit that
 * divides it exactly ("1d", "90s", "1500ms"); the output parses back with
 * rmp_parse_duration_ms().
 * @ms:     value
 * @buf:    output buffer; 24 bytes always suffice
 * @buflen: size of buf
 *
 * Returns buf.
 */
char *rmp_format_duration_ms(uint64_t ms, char *buf, size_t buflen);

#endif /* RMP_CONFIG_H */

/* SPDX-License-Identifier: MIT */
/*
 * config_value.c -- one value of the file into its key's field: a parser
 * per syntax (numbers with their ranges, names, paths, device and group
 * names, networks, tenant keys), each failure said as "qname: why".
 */
#include "config.h"
#include "config_int.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h> /* INET6_ADDRSTRLEN */
#include <string.h>

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

/* item_text -- list entry [b, e) as a string in buf, or false when it
 * does not fit (then it is too long to be valid anyway). */
static bool item_text(const char *b, const char *e, char *buf, size_t len)
{
	if ((size_t)(e - b) >= len)
		return false;
	memcpy(buf, b, (size_t)(e - b));
	buf[e - b] = '\0';
	return true;
}

/*
 * addrs_ok -- [server] listen: 1..RMP_CONFIG_LISTEN_MAX numeric addresses,
 * comma-separated, none twice; a wildcard only alone. Why not in why.
 */
static bool addrs_ok(const char *value, char *why, size_t whylen)
{
	char seen[RMP_CONFIG_LISTEN_MAX][RMP_CONFIG_ADDR_LEN];
	const char *s = value, *b, *e;
	unsigned n = 0;
	bool wild = false;

	while (rmp_list_item(&s, &b, &e)) {
		char a[RMP_CONFIG_ADDR_LEN];

		if (!item_text(b, e, a, sizeof(a)) || rmp_parse_addr(a, NULL)) {
			snprintf(why, whylen, "\"%.*s\" is not a numeric IPv4 "
				 "or IPv6 address", (int)RMP_MIN(e - b, 64), b);
			return false;
		}
		if (n == RMP_CONFIG_LISTEN_MAX) {
			snprintf(why, whylen, "more than %u addresses",
				 RMP_CONFIG_LISTEN_MAX);
			return false;
		}
		for (unsigned i = 0; i < n; i++) {
			if (!strcmp(seen[i], a)) {
				snprintf(why, whylen, "%s is listed twice", a);
				return false;
			}
		}
		wild |= rmp_addr_wildcard(a);
		strcpy(seen[n++], a);
	}
	if (wild && n > 1) {
		snprintf(why, whylen, "a wildcard address (0.0.0.0, ::) listens "
			 "on every address: list it alone");
		return false;
	}
	return true;
}

/*
 * ibdevs_ok -- [server] device: empty, or 1..RMP_CONFIG_DEVICES_MAX RDMA
 * device names, comma-separated, none twice. Why not in why.
 */
static bool ibdevs_ok(const char *value, char *why, size_t whylen)
{
	char seen[RMP_CONFIG_DEVICES_MAX][RMP_CONFIG_IBDEV_LEN];
	const char *s = value, *b, *e;
	unsigned n = 0;

	if (!*value)
		return true;
	while (rmp_list_item(&s, &b, &e)) {
		char d[RMP_CONFIG_IBDEV_LEN];

		if (b == e || !item_text(b, e, d, sizeof(d)) ||
		    !valid_ibdev(d)) {
			snprintf(why, whylen, "\"%.*s\" is not an RDMA device "
				 "name", (int)RMP_MIN(e - b, 64), b);
			return false;
		}
		if (n == RMP_CONFIG_DEVICES_MAX) {
			snprintf(why, whylen, "more than %u devices",
				 RMP_CONFIG_DEVICES_MAX);
			return false;
		}
		for (unsigned i = 0; i < n; i++) {
			if (!strcmp(seen[i], d)) {
				snprintf(why, whylen, "%s is listed twice", d);
				return false;
			}
		}
		strcpy(seen[n++], d);
	}
	return true;
}

/* valid_path -- absolute, no control characters. */
bool cfg_valid_path(const char *s)
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

/* parse_network -- one ADDR[/PREFIX] of a networks list into n
 * (rmp_network_parse). On failure writes "qname: why" into msg and
 * returns -EINVAL. */
static int parse_network(const char *s, struct rmp_network *n,
			 const char *qname, char *msg, size_t msglen)
{
	char q[CFG_QUOTE_LEN];
	unsigned max;

	switch (rmp_network_parse(s, n, &max)) {
	case 0:
		return 0;
	case -ERANGE:
		snprintf(msg, msglen, "%s: %s: prefix is out of range (0..%u)",
			 qname, cfg_quote(s, q, sizeof(q)), max);
		break;
	case -EDOM:
		/* s parsed as an address: only [0-9a-fA-F.:/] */
		snprintf(msg, msglen, "%s: host bits set in %s", qname, s);
		break;
	default:
		snprintf(msg, msglen,
			 "%s: %s is not ADDR/PREFIX (e.g. 10.0.0.0/8, fd00::/8, "
			 "192.0.2.7)", qname, cfg_quote(s, q, sizeof(q)));
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
	const char *s = value, *b, *e;
	unsigned int n = 0, i;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s) {
		l->nnetworks = 0;
		return 0;
	}
	while (rmp_list_item(&s, &b, &e)) {
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
		if (u != 2 * CFG_MIB && u != CFG_GIB) {
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
	cfg_set_num(k, base, (int64_t)u);
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

/* prefix_ok -- an etcd key prefix: "/", then [A-Za-z0-9_.-/], ending
 * in "/" (the node's key is PREFIX "nodes/" NODE). */
static bool prefix_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || s[0] != '/' || s[n - 1] != '/')
		return false;
	for (; *s; s++)
		if (!isascii((unsigned char)*s) ||
		    (!isalnum((unsigned char)*s) && !strchr("_.-/", *s)))
			return false;
	return true;
}

/* cluster_text_ok -- the [cluster] syntaxes of text_ok(). */
static bool cluster_text_ok(const struct key *k, const char *value,
			    const char **what, char *why, size_t whylen)
{
	struct rmp_cluster_endpoint eps[RMP_CLUSTER_ENDPOINTS_MAX];
	struct rmp_cluster_label labels[RMP_CLUSTER_LABELS_MAX];
	unsigned n;

	*what = why;
	switch (k->syntax) {
	case SY_ETCD:
		return !rmp_cluster_endpoints(value, eps, &n, why, whylen);
	case SY_LABELS:
		return !rmp_cluster_labels(value, labels, &n, why, whylen);
	case SY_PREFIX:
		*what = "is not an etcd key prefix (\"/\", then A-Z, a-z, "
			"0-9, '_', '.', '-', '/', ending in \"/\")";
		return prefix_ok(value);
	case SY_NODENAME:
		*what = "is not a node name (1 to 63 of A-Z, a-z, 0-9, '_', "
			"'.', '-', starting with a letter or digit; empty: "
			"the host name)";
		return !*value || rmp_cluster_node_ok(value);
	default:
		*what = "has no parser (bug)";
		return false;
	}
}

/* text_ok -- value is text of k's syntax; *what: why not (in why, for
 * a message made here; it then names no value of its own). */
static bool text_ok(const struct key *k, const char *value, const char **what,
		    char *why, size_t whylen)
{
	switch (k->syntax) {
	case SY_ADDRS:
		*what = why;
		return addrs_ok(value, why, whylen);
	case SY_IBDEVS:
		*what = why;
		return ibdevs_ok(value, why, whylen);
	case SY_PATH:
		*what = k->flags & KF_EMPTY_OFF ?
				"is not an absolute path (or empty)" :
				"is not an absolute path";
		return ((k->flags & KF_EMPTY_OFF) && !*value) ||
		       cfg_valid_path(value);
	case SY_GROUP:
		*what = "is not a group name";
		return valid_group(value);
	case SY_HOSTPORT:
		*what = "is not ADDR:PORT or [V6ADDR]:PORT (or empty)";
		return !*value || !rmp_parse_hostport(value, NULL, 0, NULL);
	default:
		return cluster_text_ok(k, value, what, why, whylen);
	}
}

static int parse_text(const struct key *k, void *base, const char *qname,
		      const char *value, const char *q, char *msg,
		      size_t msglen)
{
	const char *what = NULL;
	char why[256] = "";

	if (strlen(value) >= k->len) {
		snprintf(msg, msglen,
			 "%s: value is too long (at most %zu characters)",
			 qname, k->len - 1);
		return -EINVAL;
	}
	if (!text_ok(k, value, &what, why, sizeof(why))) {
		if (what == why)
			snprintf(msg, msglen, "%s: %s", qname, why);
		else
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
			cfg_set_num(k, base, k->names[i].val);
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
	cfg_set_num(k, base, b);
	return 0;
}

static int parse_node(const struct key *k, void *base, const char *qname,
		      const char *value, const char *q, char *msg,
		      size_t msglen)
{
	uint64_t u = 0;

	if (!strcmp(value, "auto")) {
		cfg_set_num(k, base, -1);
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
	[SY_ADDRS] = parse_text,
	[SY_IBDEVS] = parse_text,
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
	[SY_ETCD] = parse_text,
	[SY_PREFIX] = parse_text,
	[SY_NODENAME] = parse_text,
	[SY_LABELS] = parse_text,
};

/*
 * parse_value -- check and store value for key k into base (see cfg_field()).
 * On failure writes "qname: why" into msg and returns -EINVAL. A key's
 * text never gets into msg.
 */
int cfg_parse_value(const struct key *k, void *base, const char *qname,
		       const char *value, char *msg, size_t msglen)
{
	char q[CFG_QUOTE_LEN] = "";

	if ((size_t)k->syntax >= sizeof(parsers) / sizeof(parsers[0]) ||
	    !parsers[k->syntax]) {
		snprintf(msg, msglen, "%s: has no parser (bug)", qname);
		return -EINVAL;
	}
	if (k->syntax != SY_KEY)
		cfg_quote(value, q, sizeof(q));
	return parsers[k->syntax](k, base, qname, value, q, msg, msglen);
}

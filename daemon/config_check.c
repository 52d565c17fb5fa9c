/* SPDX-License-Identifier: MIT */
/*
 * config_check.c -- the rules between keys that no single value can
 * break alone (sizes that must divide, ttls in order, one place for the
 * pool's state) and the tenants' own rules; run on every load and on a
 * configuration built by hand (rmp_config_check).
 */
#include "config.h"
#include "config_int.h"

#include <errno.h>
#include <string.h>

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
		cfg_set_err(err, errlen, "%s%s%s.networks: more than %d networks",
			pre, sep, who, RMP_NETWORKS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < l->nnetworks; i++) {
		if (!rmp_network_valid(&l->networks[i])) {
			cfg_set_err(err, errlen,
				"%s%s%s.networks: entry %u is not a network",
				pre, sep, who, i + 1);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * cfg_check_leases -- l's own lease limit is at most [pool]
 * max_leases (0, a share of it, always is): a larger one could never be
 * reached. who is "anonymous" or "tenant.NAME".
 */
int cfg_check_leases(const struct rmp_config *c,
		     const struct rmp_tenant_limits *l, const char *who,
		     const char *pre, const char *sep, char *err,
		     size_t errlen)
{
	if (l->leases <= c->pool.max_leases)
		return 0;
	cfg_set_err(err, errlen, "%s%s%s.leases (%llu) is more than "
		    "pool.max_leases (%u)", pre, sep, who,
		    (unsigned long long)l->leases, (unsigned)c->pool.max_leases);
	return -EINVAL;
}

/* check_tenants -- the tenant rules of rmp_config_check(). */
static int check_tenants(const struct rmp_config *c, const char *pre,
			 const char *sep, char *err, size_t errlen)
{
	char who[sizeof(TENANT_PFX) + RMP_TENANT_MAX], q[CFG_QUOTE_LEN];
	unsigned int i;
	int j;

	if (c->ntenants > RMP_TENANTS_MAX) {
		cfg_set_err(err, errlen, "%s%stoo many tenants (%u, at most %d)",
			pre, sep, c->ntenants, RMP_TENANTS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < c->ntenants; i++) {
		const struct rmp_tenant_config *t = &c->tenants[i];

		if (!memchr(t->name, '\0', sizeof(t->name)) ||
		    !rmp_tenant_name_ok(t->name) ||
		    !strcmp(t->name, "anonymous")) {
			cfg_set_err(err, errlen,
				"%s%stenant name %s is not valid", pre, sep,
				memchr(t->name, '\0', sizeof(t->name)) ?
				cfg_quote(t->name, q, sizeof(q)) : "(unterminated)");
			return -EINVAL;
		}
		snprintf(who, sizeof(who), TENANT_PFX "%s", t->name);
		j = cfg_find_tenant(c, t->name);
		if (j >= 0 && (unsigned int)j < i) {
			cfg_set_err(err, errlen, "%s%s%s: duplicate tenant", pre,
				sep, who);
			return -EINVAL;
		}
		if (!memchr(t->key_file, '\0', sizeof(t->key_file)) ||
		    !t->key_len == !t->key_file[0]) {
			cfg_set_err(err, errlen,
				"%s%s%s: give key or key_file (not both)", pre,
				sep, who);
			return -EINVAL;
		}
		if (t->key_len && (t->key_len < RMP_KEY_MIN ||
				   t->key_len > RMP_KEY_MAX)) {
			cfg_set_err(err, errlen,
				"%s%s%s.key: not a key (expected %d to %d hex "
				"digits)", pre, sep, who, 2 * RMP_KEY_MIN,
				2 * RMP_KEY_MAX);
			return -EINVAL;
		}
		if (t->key_file[0] && !cfg_valid_path(t->key_file)) {
			cfg_set_err(err, errlen,
				"%s%s%s.key_file: not an absolute path", pre,
				sep, who);
			return -EINVAL;
		}
		if (check_limits(&t->limits, who, pre, sep, err, errlen) ||
		    cfg_check_leases(c, &t->limits, who, pre, sep, err,
				     errlen))
			return -EINVAL;
	}
	return 0;
}

/*
 * check_cluster -- TLS files are for https endpoints: given with none,
 * they would be ignored and the operator would believe the traffic
 * protected. Credentials and TLS files want every endpoint https: with
 * one plain endpoint in the list, whoever blocks the https ones makes
 * the client send the password (or the traffic) in clear. A client
 * certificate needs its key, and the other way.
 */
static int check_cluster(const struct rmp_config *c, const char *pre,
			 const char *sep, char *err, size_t errlen)
{
	struct rmp_cluster_endpoint eps[RMP_CLUSTER_ENDPOINTS_MAX];
	const char *set = c->cluster.ca_file[0] ? "ca_file" :
			  c->cluster.cert_file[0] ? "cert_file" :
			  c->cluster.key_file[0] ? "key_file" : NULL;
	bool cred = c->cluster.credentials_file[0] != '\0';
	const struct rmp_cluster_endpoint *plain = NULL;
	char why[256];
	bool tls = false;
	unsigned n = 0;

	if (!memchr(c->cluster.etcd, '\0', sizeof(c->cluster.etcd)) ||
	    rmp_cluster_endpoints(c->cluster.etcd, eps, &n, why, sizeof(why))) {
		cfg_set_err(err, errlen, "%s%scluster.etcd: not a list of "
			    "endpoints", pre, sep);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		tls |= eps[i].tls;
		if (!eps[i].tls && !plain)
			plain = &eps[i];
	}
	if (set && !tls) {
		cfg_set_err(err, errlen, "%s%scluster.%s: no etcd endpoint is "
			    "https://, so TLS would not be used", pre, sep, set);
		return -EINVAL;
	}
	if ((cred || set) && plain) {
		bool v6 = strchr(plain->host, ':') != NULL;

		cfg_set_err(err, errlen, "%s%scluster.%s: etcd endpoint %s%s%s:"
			    "%u is not https://; with %s every endpoint must "
			    "be, or the %s can cross the network in clear", pre,
			    sep, cred ? "credentials_file" : set, v6 ? "[" : "",
			    plain->host, v6 ? "]" : "", plain->port,
			    cred ? "credentials" : "TLS files",
			    cred ? "password" : "traffic");
		return -EINVAL;
	}
	if (!c->cluster.cert_file[0] != !c->cluster.key_file[0]) {
		cfg_set_err(err, errlen, "%s%scluster.%s: a client certificate "
			    "needs its key: give cert_file and key_file "
			    "together", pre, sep,
			    c->cluster.cert_file[0] ? "cert_file" : "key_file");
		return -EINVAL;
	}
	return 0;
}

int rmp_config_check(const struct rmp_config *c, const char *name, char *err,
		     size_t errlen)
{
	const char *pre = name ? name : "", *sep = name ? ": " : "";
	char a[32], b[32];

	if (c->pool.hugepage_size != 2 * CFG_MIB && c->pool.hugepage_size != CFG_GIB) {
		cfg_set_err(err, errlen, "%s%spool.hugepage_size must be 2M or 1G",
			pre, sep);
		return -EINVAL;
	}
	if (!c->pool.size) {
		cfg_set_err(err, errlen, "%s%spool.size must not be 0", pre, sep);
		return -EINVAL;
	}
	if (c->pool.size % c->pool.hugepage_size) {
		cfg_set_err(err, errlen,
			"%s%spool.size (%s) is not a multiple of pool.hugepage_size (%s)",
			pre, sep, rmp_format_size(c->pool.size, a, sizeof(a)),
			rmp_format_size(c->pool.hugepage_size, b, sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.ttl_default_ms < c->lease.ttl_min_ms) {
		cfg_set_err(err, errlen,
			"%s%slease.ttl_default (%s) is less than lease.ttl_min (%s)",
			pre, sep,
			rmp_format_duration_ms(c->lease.ttl_default_ms, a,
					       sizeof(a)),
			rmp_format_duration_ms(c->lease.ttl_min_ms, b,
					       sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.ttl_default_ms > c->lease.ttl_max_ms) {
		cfg_set_err(err, errlen,
			"%s%slease.ttl_default (%s) is more than lease.ttl_max (%s)",
			pre, sep,
			rmp_format_duration_ms(c->lease.ttl_default_ms, a,
					       sizeof(a)),
			rmp_format_duration_ms(c->lease.ttl_max_ms, b,
					       sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.max_lease > c->pool.size) {
		cfg_set_err(err, errlen,
			"%s%slease.max_lease (%s) is larger than pool.size (%s)",
			pre, sep,
			rmp_format_size(c->lease.max_lease, a, sizeof(a)),
			rmp_format_size(c->pool.size, b, sizeof(b)));
		return -EINVAL;
	}
	if (c->lease.alignment > c->pool.size) {
		cfg_set_err(err, errlen,
			"%s%slease.alignment (%s) is larger than pool.size (%s)",
			pre, sep,
			rmp_format_size(c->lease.alignment, a, sizeof(a)),
			rmp_format_size(c->pool.size, b, sizeof(b)));
		return -EINVAL;
	}
	if (c->pool.fdstore && c->pool.state_dir[0]) {
		cfg_set_err(err, errlen, "%s%spool.fdstore and pool.state_dir: "
			"choose one place for the pool's state", pre, sep);
		return -EINVAL;
	}
	if (check_limits(&c->anonymous.limits, "anonymous", pre, sep, err,
			 errlen) ||
	    cfg_check_leases(c, &c->anonymous.limits, "anonymous", pre, sep,
			     err, errlen))
		return -EINVAL;
	if (check_cluster(c, pre, sep, err, errlen))
		return -EINVAL;
	return check_tenants(c, pre, sep, err, errlen);
}

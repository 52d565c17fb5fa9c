/* SPDX-License-Identifier: MIT */
/*
 * etcd_open.c -- an etcd client from its settings as people write them
 * (the daemon's [cluster] keys, the library's etcd:// URL and options):
 * the endpoint list read by the [cluster] grammar, the credentials file.
 */
#include "etcd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "member_names.h"
#include "auth.h" /* rmp_wipe */
#include "util.h"

struct rmp_etcd *rmp_etcd_open(struct event_base *base,
			       const struct rmp_etcd_settings *s, char *err,
			       size_t errlen)
{
	struct rmp_cluster_endpoint eps[RMP_CLUSTER_ENDPOINTS_MAX];
	struct rmp_etcd_endpoint e[RMP_ETCD_ENDPOINTS_MAX];
	struct rmp_etcd_params p = {
		.base = base, .endpoints = e, .timeout_ms = s->timeout_ms,
		.ca_file = s->ca_file, .cert_file = s->cert_file,
		.key_file = s->key_file,
	};
	char why[256], user[128], password[256];
	struct rmp_etcd *etcd;
	int bad;

	_Static_assert(RMP_CLUSTER_ENDPOINTS_MAX <= RMP_ETCD_ENDPOINTS_MAX,
		       "every endpoint of the grammar fits the client");
	/* a list refused leaves nendpoints 0: say why, not "none" */
	bad = rmp_cluster_endpoints(s->endpoints, eps, &p.nendpoints, why,
				    sizeof(why));
	if (bad || !p.nendpoints) {
		snprintf(err, errlen, "etcd endpoints: %s",
			 bad ? why : "none given");
		errno = EINVAL;
		return NULL;
	}
	for (unsigned i = 0; i < p.nendpoints; i++) {
		_Static_assert(sizeof(e[i].host) == sizeof(eps[i].host),
			       "one host length");
		memcpy(e[i].host, eps[i].host, sizeof(e[i].host));
		e[i].port = eps[i].port;
		e[i].tls = eps[i].tls;
	}
	if (s->credentials_file && s->credentials_file[0]) {
		int ret = rmp_cluster_credentials(s->credentials_file, user,
						  sizeof(user), password,
						  sizeof(password), why,
						  sizeof(why));

		if (ret) {
			snprintf(err, errlen, "etcd credentials: %s", why);
			errno = -ret;
			return NULL;
		}
		p.user = user;
		p.password = password;
	}
	etcd = rmp_etcd_new(&p, why, sizeof(why));
	if (!etcd)
		snprintf(err, errlen, "etcd client: %s", why);
	rmp_wipe(password, sizeof(password));
	rmp_wipe(user, sizeof(user));
	return etcd;
}

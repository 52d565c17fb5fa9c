/* SPDX-License-Identifier: MIT */
/*
 * cluster_record.c -- what a node says of itself in etcd: its name, the
 * addresses clients reach it at, its labels (fixed at start), and the
 * record that puts them together with the pool's figures of the moment.
 */
#include "cluster_int.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "member.h"
#include "ops.h"
#include "parse.h"
#include "util.h"

/* host_addresses -- the host's addresses of family (AF_UNSPEC: both),
 * loopback left out: who listens on a wildcard is reached at those. */
static void host_addresses(struct cl_identity *id, int family)
{
	struct ifaddrs *ifs, *i;

	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i && id->naddrs < CL_ADDRS_MAX; i = i->ifa_next) {
		int f = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;

		if ((f != AF_INET && f != AF_INET6) ||
		    (family != AF_UNSPEC && f != family) ||
		    (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
			continue;
		if (getnameinfo(i->ifa_addr, f == AF_INET ?
				sizeof(struct sockaddr_in) :
				sizeof(struct sockaddr_in6),
				id->addrs[id->naddrs], INET6_ADDRSTRLEN, NULL,
				0, NI_NUMERICHOST))
			continue;
		id->naddrs++;
	}
	freeifaddrs(ifs);
}

int cl_identity_init(struct cl_identity *id, const struct rmp_config *cfg,
		     char *err, size_t errlen)
{
	const char *listen = cfg->server.listen;
	char why[256], host[256] = "";

	memset(id, 0, sizeof(*id));
	if (cfg->cluster.node[0]) {
		snprintf(id->node, sizeof(id->node), "%s", cfg->cluster.node);
	} else {
		if (gethostname(host, sizeof(host) - 1) ||
		    !rmp_cluster_node_ok(host)) {
			snprintf(err, errlen, "[cluster] node is not set and "
				 "the host name \"%.64s\" is not a node name: "
				 "set node", host);
			return -EINVAL;
		}
		snprintf(id->node, sizeof(id->node), "%s", host);
	}
	if (rmp_cluster_labels(cfg->cluster.labels, id->labels, &id->nlabels,
			       why, sizeof(why))) {
		snprintf(err, errlen, "cluster.labels: %s", why);
		return -EINVAL;
	}
	if (rmp_addr_wildcard(listen)) {
		host_addresses(id, strchr(listen, ':') ? AF_UNSPEC : AF_INET);
	} else {
		/* Every listen address (a wildcard comes alone); one too long
		 * for the record (a scoped IPv6 one) would make it refused. */
		const char *s = listen, *b, *e;

		while (id->naddrs < RMP_MEMBER_ADDRS_MAX &&
		       rmp_list_item(&s, &b, &e))
			if ((size_t)(e - b) < sizeof(id->addrs[0]))
				snprintf(id->addrs[id->naddrs++],
					 sizeof(id->addrs[0]), "%.*s",
					 (int)(e - b), b);
		if (!id->naddrs) {
			snprintf(err, errlen, "no listen address fits in the "
				 "node's record");
			return -EINVAL;
		}
	}
	return 0;
}

char *cl_record(const struct cl_identity *id, const struct rmp_ops *ops,
		int64_t registered, uint64_t *free_bytes)
{
	struct rmp_member m = { .numa_node = -1 };
	struct rmp_status st;

	rmp_ops_status(ops, &st);
	rmp_strlcpy(m.node, id->node, sizeof(m.node));
	for (unsigned i = 0; i < id->naddrs; i++)
		rmp_strlcpy(m.addrs[i], id->addrs[i], sizeof(m.addrs[i]));
	m.naddrs = id->naddrs;
	memcpy(m.labels, id->labels, sizeof(m.labels));
	m.nlabels = id->nlabels;
	m.port = st.port;
	rmp_strlcpy(m.device, st.device, sizeof(m.device));
	m.numa_node = st.numa_node;
	rmp_strlcpy(m.keys_mode, st.keys_mode, sizeof(m.keys_mode));
	m.pool_bytes = st.pool_bytes;
	m.free_bytes = st.free_bytes;
	m.largest_free = st.largest_free;
	for (unsigned i = 0; i < st.ndevices && i < RMP_MEMBER_DEVICES_MAX; i++) {
		const struct rmp_device_status *d = &st.devices[i];
		struct rmp_member_device *md = &m.devices[i];

		rmp_strlcpy(md->name, d->name, sizeof(md->name));
		md->numa_node = d->numa_node;
		/* (a scoped IPv6 address too long for the record: none) */
		if (strlen(d->addr) < sizeof(md->addr))
			strcpy(md->addr, d->addr);
		md->pool_bytes = d->pool_bytes;
		md->free_bytes = d->free_bytes;
		md->largest_free = d->largest_free;
		m.ndevices++;
	}
	m.draining = st.draining;
	rmp_strlcpy(m.version, st.version, sizeof(m.version));
	m.registered = registered;
	m.updated = (int64_t)time(NULL);
	*free_bytes = st.free_bytes;
	return rmp_member_encode(&m);
}

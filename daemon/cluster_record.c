/* SPDX-License-Identifier: MIT */
/*
 * cluster_record.c -- what a node says of itself in etcd: its name, the
 * addresses clients reach it at, its labels (fixed at start), and the
 * record that puts them together with the pool's figures of the moment.
 */
#include "cluster_int.h"

#include <errno.h>
#include <ifaddrs.h>
#include <json-c/json.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
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
	if (!strcmp(listen, "0.0.0.0") || !strcmp(listen, "::")) {
		host_addresses(id, listen[0] == ':' ? AF_UNSPEC : AF_INET);
	} else {
		rmp_strlcpy(id->addrs[0], listen, sizeof(id->addrs[0]));
		id->naddrs = 1;
	}
	return 0;
}

static void put_u64(json_object *o, const char *name, uint64_t v)
{
	json_object_object_add(o, name, json_object_new_int64((int64_t)v));
}

static void put_str(json_object *o, const char *name, const char *v)
{
	json_object_object_add(o, name, json_object_new_string(v ? v : ""));
}

char *cl_record(const struct cl_identity *id, const struct rmp_ops *ops,
		int64_t registered, uint64_t *free_bytes)
{
	json_object *o = json_object_new_object(), *a, *l;
	struct rmp_status st;
	char *text = NULL;

	if (!o)
		return NULL;
	rmp_ops_status(ops, &st);
	put_str(o, "node", id->node);
	a = json_object_new_array();
	for (unsigned i = 0; a && i < id->naddrs; i++)
		json_object_array_add(a, json_object_new_string(id->addrs[i]));
	json_object_object_add(o, "addresses", a);
	put_u64(o, "port", st.port);
	put_str(o, "device", st.device);
	json_object_object_add(o, "numa_node", json_object_new_int(st.numa_node));
	put_str(o, "keys_mode", st.keys_mode);
	put_u64(o, "pool_bytes", st.pool_bytes);
	put_u64(o, "free_bytes", st.free_bytes);
	put_u64(o, "largest_free", st.largest_free);
	put_str(o, "version", st.version);
	l = json_object_new_object();
	for (unsigned i = 0; l && i < id->nlabels; i++)
		put_str(l, id->labels[i].name, id->labels[i].value);
	json_object_object_add(o, "labels", l);
	json_object_object_add(o, "registered", json_object_new_int64(registered));
	json_object_object_add(o, "updated",
			       json_object_new_int64((int64_t)time(NULL)));
	if (a && l) {
		const char *s = json_object_to_json_string_ext(o,
						JSON_C_TO_STRING_PLAIN);

		text = s ? strdup(s) : NULL;
	}
	json_object_put(o);
	*free_bytes = st.free_bytes;
	return text;
}

int cl_credentials(const char *path, char *user, size_t ulen, char *password,
		   size_t plen, char *err, size_t errlen)
{
	char buf[512], *colon, *end;
	int ret = rmp_secret_read(path, buf, sizeof(buf), err, errlen);

	if (ret)
		return ret;
	end = buf + strcspn(buf, "\r\n");
	ret = -EINVAL;
	if (end[strspn(end, "\r\n")]) {
		snprintf(err, errlen, "%s: more than one line", path);
	} else if (*end = '\0', !(colon = strchr(buf, ':')) || colon == buf ||
		   (size_t)(colon - buf) >= ulen || strlen(colon + 1) >= plen) {
		snprintf(err, errlen, "%s: not USER:PASSWORD on one line", path);
	} else {
		*colon = '\0';
		snprintf(user, ulen, "%s", buf);
		snprintf(password, plen, "%s", colon + 1);
		ret = 0;
	}
	rmp_wipe(buf, sizeof(buf));
	return ret;
}

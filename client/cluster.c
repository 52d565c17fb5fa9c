/* SPDX-License-Identifier: MIT */
/*
 * cluster.c -- the cluster calls of the public API but placing: options,
 * open and close, the node list, a token's lease attached through the
 * cluster's connection.
 */
#include "cluster_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "group.h" /* RMPC_MEMBER_TIMEOUT_MS */
#include "opts.h"
#include "token.h"
#include "util.h"


void rmp_cluster_opts_init(struct rmp_cluster_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->etcd_timeout_ms = 2000;
	opts->member_timeout_ms = RMPC_MEMBER_TIMEOUT_MS;
}

const char *rmp_cluster_last_error(const struct rmp_cluster *cl)
{
	return cl ? cl->err : "";
}

/* copy_client_opts -- the caller's client options into cl, strings
 * copied; checked by making (and freeing) a client with them. */
static int copy_client_opts(struct rmp_cluster *cl,
			    const struct rmp_client_opts *o)
{
	struct rmp_client_opts *c = &cl->copts;
	struct rmp_client *probe;
	int ret;

	rmp_client_opts_init(c);
	if (o && rmpc_opts_copy(c, sizeof(*c), o, o->size)) {
		cl_say(cl, "client options: a size this library does not know");
		return -EINVAL;
	}
	if ((c->name && rmp_strlcpy(cl->name, c->name, sizeof(cl->name))) ||
	    (c->tenant && rmp_strlcpy(cl->tenant, c->tenant,
				      sizeof(cl->tenant))) ||
	    (c->key_file && rmp_strlcpy(cl->key_file, c->key_file,
					sizeof(cl->key_file))) ||
	    (c->key && (c->key_len > sizeof(cl->key) || !c->key_len))) {
		cl_say(cl, "client options: a name, tenant, key or key file too "
		    "long");
		return -EINVAL;
	}
	if (c->key)
		memcpy(cl->key, c->key, c->key_len);
	c->name = c->name ? cl->name : NULL;
	c->tenant = c->tenant ? cl->tenant : NULL;
	c->key_file = c->key_file ? cl->key_file : NULL;
	c->key = c->key ? cl->key : NULL;
	c->credential = NULL;
	c->credential_len = 0;
	ret = rmp_client_new(&probe, c);
	if (ret == -ENOMEM)
		return -ENOMEM;
	if (ret) {
		cl_say(cl, "client options: %s", rmp_strerror(ret));
		return -EINVAL;
	}
	rmp_client_free(probe);
	return 0;
}

int rmp_cluster_open(struct rmp_cluster **out, const char *url,
		     const struct rmp_cluster_opts *opts)
{
	struct rmp_cluster_opts o;
	struct rmp_cluster *cl;
	int ret;

	if (!out || !url)
		return -EINVAL;
	rmp_cluster_opts_init(&o);
	if (opts && rmpc_opts_copy(&o, sizeof(o), opts, opts->size))
		return -EINVAL;
	if (o.etcd_timeout_ms <= 0 || o.member_timeout_ms < 0 ||
	    (o.prefix && (o.prefix[0] != '/' ||
	    o.prefix[strlen(o.prefix) - 1] != '/' ||
	    strlen(o.prefix) >= CL_PREFIX_MAX)))
		return -EINVAL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	LIST_INIT(&cl->groups);
	randombytes_buf(&cl->seed_base, sizeof(cl->seed_base));
	snprintf(cl->prefix, sizeof(cl->prefix), "%s",
		 o.prefix ? o.prefix : "/rmpool/");
	cl->member_timeout_ms = (uint32_t)o.member_timeout_ms;
	cl->catch_up = cl_lease_catch_up;
	ret = copy_client_opts(cl, o.client);
	if (!ret && !cl->tenant[0] && !o.allow_anonymous) {
		cl_say(cl, "an anonymous client cannot tell this cluster's "
		       "servers from any other, and anybody who may write its "
		       "etcd prefix can rewrite its lease records: name a "
		       "tenant (or allow anonymous access, for a closed lab)");
		ret = -EINVAL;
	}
	if (!ret)
		ret = cl_members_open(cl, url, &o);
	if (ret) {
		/* the caller gets no handle to ask: say it here, once */
		fprintf(stderr, "librmpool: cluster %s: %s\n", url, cl->err);
		rmp_cluster_close(cl);
		return ret;
	}
	*out = cl;
	return 0;
}

void rmp_cluster_close(struct rmp_cluster *cl)
{

	if (!cl)
		return;
	/* the mirrored handles first: their replicas are the clients' */
	while (!LIST_EMPTY(&cl->groups))
		rmp_lease_close(LIST_FIRST(&cl->groups));
	cl_conns_free(cl);
	cl_members_close(cl);
	rmp_wipe(cl->key, sizeof(cl->key));
	free(cl);
}

/* fill_info -- what rmp_cluster_nodes says of n. */
static void fill_info(struct rmp_cluster *cl, const struct cl_node *n,
		      struct rmp_node_info *i)
{
	size_t used = 0;

	memset(i, 0, sizeof(*i));
	i->size = sizeof(*i);
	snprintf(i->node, sizeof(i->node), "%s", n->m.node);
	snprintf(i->addr, sizeof(i->addr), "%s", n->m.addrs[0]);
	i->port = n->m.port;
	snprintf(i->device, sizeof(i->device), "%s", n->m.device);
	i->numa_node = n->m.numa_node;
	i->pool_bytes = n->m.pool_bytes;
	i->free_bytes = n->m.free_bytes;
	i->largest_free = n->m.largest_free;
	i->draining = n->m.draining;
	snprintf(i->version, sizeof(i->version), "%s", n->m.version);
	for (unsigned l = 0; l < n->m.nlabels; l++) {
		used += (size_t)snprintf(i->labels + used,
					 sizeof(i->labels) - used, "%s%s=%s",
					 l ? " " : "", n->m.labels[l].name,
					 n->m.labels[l].value);
		used = RMP_MIN(used, sizeof(i->labels) - 1);
	}
	for (unsigned a = 0; a < n->m.naddrs && !i->connected; a++)
		for (struct cl_conn *k = cl->conns; k; k = k->next)
			if (k->up && k->port == n->m.port &&
			    cl_conn_first(k, n->m.addrs[a]))
				i->connected = 1;
	i->proven = n->proven;
	snprintf(i->why, sizeof(i->why), "%s", n->why);
}

static int by_name(const void *a, const void *b)
{
	const struct cl_node *const *x = a, *const *y = b;

	return strcmp((*x)->m.node, (*y)->m.node);
}

int rmp_cluster_nodes(struct rmp_cluster *cl, struct rmp_node_info *out,
		      unsigned max)
{
	const struct cl_node **list;
	unsigned n = 0;
	int ret;

	size_t stride;

	if (!cl || (!out && max))
		return -EINVAL;
	stride = max ? out[0].size : 0;
	/* the caller's structs may be of an older version, smaller: they
	 * are stride bytes apart, and get what fits */
	for (unsigned i = 0; i < max; i++) {
		const struct rmp_node_info *o =
			(const void *)((const char *)out + i * stride);

		if (o->size < RMP_NODE_INFO_SIZE_0_6 || o->size != stride) {
			cl_say(cl, "rmp_node_info size too small, or not the "
			       "same in each");
			return -EINVAL;
		}
	}
	ret = cl_members_current(cl);
	if (ret)
		return ret;
	list = malloc((cl->nnodes ? cl->nnodes : 1) * sizeof(*list));
	if (!list) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].present)
			list[n++] = &cl->nodes[i];
	qsort(list, n, sizeof(*list), by_name);
	for (unsigned i = 0; i < n && i < max; i++) {
		struct rmp_node_info full;

		fill_info(cl, list[i], &full);
		full.size = stride;
		memcpy((char *)out + i * stride, &full,
		       RMP_MIN(stride, sizeof(full)));
	}
	free(list);
	return (int)n;
}

int rmp_cluster_check(struct rmp_cluster *cl, const char *node)
{
	struct cl_node *n;
	int ret;

	if (!cl || !node)
		return -EINVAL;
	ret = cl_members_current(cl);
	if (ret)
		return ret;
	n = cl_node_find(cl, node);
	if (!n || !n->present) {
		cl_say(cl, "no node %s in the membership", node);
		return -ENOENT;
	}
	return cl_node_conn(cl, n, &ret) ? 0 : ret;
}

int rmp_cluster_attach(struct rmp_cluster *cl, const char *token,
		       const struct rmp_attach_opts *opts,
		       struct rmp_lease **out)
{
	struct cl_conn *k;
	int ret;

	if (!cl || !token || !out)
		return -EINVAL;
	if (rmp_ctoken_is(token))
		return cl_lease_attach(cl, token, opts, false, out);
	k = cl_token_conn(cl, token, &ret);
	if (!k)
		return ret;
	ret = cl_conn_attach(cl, k, token, opts, 0, out);
	return ret;
}

struct rmp_client *rmp_cluster_client(struct rmp_cluster *cl,
				      const char *token)
{
	struct cl_conn *k;
	int ret;

	if (!cl || !token)
		return NULL;
	k = cl_token_conn(cl, token, &ret);
	return k ? k->c : NULL;
}

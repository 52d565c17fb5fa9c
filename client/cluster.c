/* SPDX-License-Identifier: MIT */
/*
 * cluster.c -- the cluster calls of the public API: open and close,
 * the node list, placing a lease (the order from cluster_place.c, each
 * node tried in turn), and the connections to nodes, one per server
 * address, opened on demand and kept for the cluster's life (the lease
 * handles made through them live as long).
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

#include "opts.h"
#include "token.h"
#include "util.h"

/* Most node names opts->exclude takes. */
#define EXCLUDE_MAX 64
/* Backoff of a node we could not connect to: first, longest. */
#define RETRY_FIRST_MS 1000u
#define RETRY_MAX_MS 30000u

/* One connection of the cluster: to a server address and port. */
struct cl_conn {
	struct cl_conn *next;
	char host[RMP_TOKEN_HOST_MAX + 1];
	uint16_t port;
	struct rmp_client *c;
	bool up;   /* connected, and no call said otherwise since */
};

/* say -- why the call fails, for rmp_cluster_last_error(). */
static void say(struct rmp_cluster *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct rmp_cluster *cl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	va_end(ap);
}

void rmp_cluster_opts_init(struct rmp_cluster_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->etcd_timeout_ms = 2000;
}

void rmp_cluster_alloc_opts_init(struct rmp_cluster_alloc_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->access = RMP_ACCESS_ALL;
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
		say(cl, "client options: a size this library does not know");
		return -EINVAL;
	}
	if ((c->name && rmp_strlcpy(cl->name, c->name, sizeof(cl->name))) ||
	    (c->tenant && rmp_strlcpy(cl->tenant, c->tenant,
				      sizeof(cl->tenant))) ||
	    (c->key_file && rmp_strlcpy(cl->key_file, c->key_file,
					sizeof(cl->key_file))) ||
	    (c->key && (c->key_len > sizeof(cl->key) || !c->key_len))) {
		say(cl, "client options: a name, tenant, key or key file too "
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
		say(cl, "client options: %s", rmp_strerror(ret));
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
	if (o.etcd_timeout_ms <= 0 || (o.prefix && (o.prefix[0] != '/' ||
	    o.prefix[strlen(o.prefix) - 1] != '/' ||
	    strlen(o.prefix) >= CL_PREFIX_MAX)))
		return -EINVAL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	snprintf(cl->prefix, sizeof(cl->prefix), "%s",
		 o.prefix ? o.prefix : "/rmpool/");
	ret = copy_client_opts(cl, o.client);
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
	struct cl_conn *k;

	if (!cl)
		return;
	while ((k = cl->conns)) {
		cl->conns = k->next;
		rmp_client_free(k->c);
		free(k);
	}
	cl_members_close(cl);
	rmp_wipe(cl->key, sizeof(cl->key));
	free(cl);
}

/* conn_find -- the connection to host:port, made (not connected) if new;
 * NULL when out of memory or the options are refused. */
static struct cl_conn *conn_find(struct rmp_cluster *cl, const char *host,
				 uint16_t port)
{
	struct cl_conn *k;

	for (k = cl->conns; k; k = k->next)
		if (k->port == port && !strcmp(k->host, host))
			return k;
	k = calloc(1, sizeof(*k));
	if (!k || rmp_strlcpy(k->host, host, sizeof(k->host)) ||
	    rmp_client_new(&k->c, &cl->copts)) {
		free(k);
		return NULL;
	}
	k->port = port;
	k->next = cl->conns;
	cl->conns = k;
	return k;
}

/* conn_up -- k connected: at once when it is, else a (new) connect.
 * 0 or the error of rmp_client_connect, said in cl->err. */
static int conn_up(struct rmp_cluster *cl, struct cl_conn *k)
{
	int ret;

	if (k->up)
		return 0;
	rmp_client_close(k->c);
	ret = rmp_client_connect(k->c, k->host, k->port);
	if (ret) {
		say(cl, "%s port %u: %s (%s)", k->host, k->port,
		    rmp_strerror(ret), rmp_client_last_error(k->c));
		return ret;
	}
	k->up = true;
	return 0;
}

/* lost -- err from a call on k says its connection is gone. */
static bool lost(int err)
{
	return err == -ENOTCONN || err == -EIO || err == -ETIMEDOUT ||
	       err == -EKEYREVOKED;
}

/* node_conn -- a working connection to node n: each address of its
 * record in turn. NULL with why in cl->err; then n is tried last for a
 * while. */
static struct cl_conn *node_conn(struct rmp_cluster *cl, struct cl_node *n)
{
	for (unsigned i = 0; i < n->m.naddrs; i++) {
		struct cl_conn *k = conn_find(cl, n->m.addrs[i], n->m.port);

		if (!k) {
			say(cl, "out of memory");
			return NULL;
		}
		if (!conn_up(cl, k)) {
			n->backoff_ms = 0;
			return k;
		}
	}
	n->backoff_ms = n->backoff_ms ? RMP_MIN(2 * n->backoff_ms,
						 RETRY_MAX_MS) : RETRY_FIRST_MS;
	n->retry_at_ms = rmp_now_ms() + n->backoff_ms;
	return NULL;
}

/* skip -- a node refusing with err is skipped for the next one. */
static bool skip(int err)
{
	return err != -EKEYREJECTED && err != -EINVAL && err != -ENOMEM &&
	       err != -EAFNOSUPPORT;
}

/* split_names -- the names of list (commas or blanks between) into
 * names, copied into buf. -EINVAL when more than EXCLUDE_MAX. */
static int split_names(const char *list, char *buf, size_t cap,
		       const char **names, unsigned *n)
{
	char *s, *save = NULL;

	*n = 0;
	if (!list)
		return 0;
	if (rmp_strlcpy(buf, list, cap))
		return -EINVAL;
	for (s = strtok_r(buf, ", \t", &save); s;
	     s = strtok_r(NULL, ", \t", &save)) {
		if (*n == EXCLUDE_MAX)
			return -EINVAL;
		names[(*n)++] = s;
	}
	return 0;
}

/* try_nodes -- ask the nodes of order[0..k) in turn for the lease. */
static int try_nodes(struct rmp_cluster *cl, const unsigned *order,
		     unsigned k, uint64_t length,
		     const struct rmp_alloc_opts *ao, struct rmp_lease **out)
{
	char said[CL_ERRBUF] = "";
	size_t used = 0;
	int first = 0;

	for (unsigned i = 0; i < k; i++) {
		struct cl_node *n = &cl->nodes[order[i]];
		struct cl_conn *k2 = node_conn(cl, n);
		int ret = k2 ? rmp_lease_alloc(k2->c, length, ao, out) :
			       -ECONNREFUSED;

		if (k2 && lost(ret)) {
			/* a connection that broke since its last use: once
			 * more on a new one */
			k2->up = false;
			ret = conn_up(cl, k2);
			ret = ret ? ret : rmp_lease_alloc(k2->c, length, ao,
							  out);
		}
		if (!ret) {
			n->taken += length;
			return 0;
		}
		if (k2 && lost(ret))
			k2->up = false;
		used += (size_t)snprintf(said + used, sizeof(said) - used,
					 "%s%s: %s", used ? "; " : "",
					 n->m.node, k2 ?
					 rmp_strerror(ret) : cl->err);
		used = RMP_MIN(used, sizeof(said) - 1);
		first = first ? first : ret;
		if (!skip(ret))
			break;
	}
	say(cl, "no node granted %" PRIu64 " bytes: %s", length, said);
	return first;
}

int rmp_cluster_alloc(struct rmp_cluster *cl, uint64_t length,
		      const struct rmp_cluster_alloc_opts *opts,
		      struct rmp_lease **out)
{
	struct rmp_cluster_alloc_opts o;
	struct rmp_alloc_opts ao;
	const char *exclude[EXCLUDE_MAX];
	char prefer[2 * RMP_CLUSTER_LABEL_LEN], names[1024], *eq;
	struct cl_policy p = { .length = length, .exclude = exclude };
	unsigned *order;
	int k, ret;

	if (!cl || !out || !length)
		return -EINVAL;
	rmp_cluster_alloc_opts_init(&o);
	if (opts && rmpc_opts_copy(&o, sizeof(o), opts, opts->size)) {
		say(cl, "options of a size this library does not know");
		return -EINVAL;
	}
	if (o.prefer) {
		if (rmp_strlcpy(prefer, o.prefer, sizeof(prefer)) ||
		    !(eq = strchr(prefer, '=')) || eq == prefer || !eq[1]) {
			say(cl, "prefer: not LABEL=VALUE");
			return -EINVAL;
		}
		*eq = '\0';
		p.prefer_label = prefer;
		p.prefer_value = eq + 1;
	}
	if (split_names(o.exclude, names, sizeof(names), exclude,
			&p.nexclude)) {
		say(cl, "exclude: more than %d names or longer than %zu bytes",
		    EXCLUDE_MAX, sizeof(names) - 1);
		return -EINVAL;
	}
	rmp_alloc_opts_init(&ao);
	ao.alignment = o.alignment;
	ao.ttl_s = o.ttl_s;
	ao.access = o.access;
	ao.flags = o.flags;
	ret = cl_members_current(cl);
	if (ret)
		return ret;
	order = malloc((cl->nnodes ? cl->nnodes : 1) * sizeof(*order));
	if (!order) {
		say(cl, "out of memory");
		return -ENOMEM;
	}
	p.now_ms = rmp_now_ms();
	randombytes_buf(&p.seed, sizeof(p.seed));
	k = cl_place(cl->nodes, cl->nnodes, &p, order);
	if (k < 0) {
		say(cl, "out of memory");
		ret = -ENOMEM;
	} else if (!k) {
		say(cl, "no node registered can take %" PRIu64 " bytes (%u "
		    "known; full, draining, excluded, or without that much in "
		    "one extent)", length, cl->nnodes);
		ret = -ENOSPC;
	} else {
		ret = try_nodes(cl, order, (unsigned)k, length, &ao, out);
	}
	free(order);
	return ret;
}

/* fill_info -- what rmp_cluster_nodes says of n. */
static void fill_info(struct rmp_cluster *cl, const struct cl_node *n,
		      struct rmp_node_info *i)
{
	size_t size = i->size, used = 0;

	memset(i, 0, sizeof(*i));
	i->size = size;
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
			    !strcmp(k->host, n->m.addrs[a]))
				i->connected = 1;
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

	if (!cl || (!out && max))
		return -EINVAL;
	for (unsigned i = 0; i < max; i++) {
		if (out[i].size < sizeof(*out)) {
			say(cl, "rmp_node_info size too small");
			return -EINVAL;
		}
	}
	ret = cl_members_current(cl);
	if (ret)
		return ret;
	list = malloc((cl->nnodes ? cl->nnodes : 1) * sizeof(*list));
	if (!list) {
		say(cl, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].present)
			list[n++] = &cl->nodes[i];
	qsort(list, n, sizeof(*list), by_name);
	for (unsigned i = 0; i < n && i < max; i++)
		fill_info(cl, list[i], &out[i]);
	free(list);
	return (int)n;
}

/* token_conn -- the working connection to the server of token. */
static struct cl_conn *token_conn(struct rmp_cluster *cl, const char *token,
				  int *err)
{
	struct rmp_token t;
	struct cl_conn *k;

	if (rmp_token_parse(token, &t)) {
		say(cl, "not a lease token");
		*err = -EINVAL;
		return NULL;
	}
	k = conn_find(cl, t.host, t.port);
	if (!k) {
		say(cl, "out of memory");
		*err = -ENOMEM;
		return NULL;
	}
	*err = conn_up(cl, k);
	return *err ? NULL : k;
}

int rmp_cluster_attach(struct rmp_cluster *cl, const char *token,
		       const struct rmp_attach_opts *opts,
		       struct rmp_lease **out)
{
	struct cl_conn *k;
	int ret;

	if (!cl || !token || !out)
		return -EINVAL;
	k = token_conn(cl, token, &ret);
	if (!k)
		return ret;
	ret = rmp_lease_attach_with(k->c, token, opts, out);
	if (lost(ret))
		k->up = false;
	if (ret)
		say(cl, "%s", rmp_client_last_error(k->c));
	return ret;
}

struct rmp_client *rmp_cluster_client(struct rmp_cluster *cl,
				      const char *token)
{
	struct cl_conn *k;
	int ret;

	if (!cl || !token)
		return NULL;
	k = token_conn(cl, token, &ret);
	return k ? k->c : NULL;
}

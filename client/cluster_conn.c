/* SPDX-License-Identifier: MIT */
/*
 * cluster_conn.c -- the cluster's connections: one per server address
 * and port, made on demand with the cluster's client options and kept
 * for the cluster's life (the lease handles made through them live as
 * long); a node's, tried address by address, with a backoff for nodes
 * that cannot be reached; a token's.
 */
#include "cluster_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "token.h"
#include "util.h"

/* Backoff of a node we could not connect to: first, longest. */
#define RETRY_FIRST_MS 1000u
#define RETRY_MAX_MS 30000u

void cl_say(struct rmp_cluster *cl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	va_end(ap);
}

struct cl_conn *cl_conn_find(struct rmp_cluster *cl, const char *host,
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

int cl_conn_up(struct rmp_cluster *cl, struct cl_conn *k)
{
	int ret;

	if (k->up)
		return 0;
	rmp_client_close(k->c);
	ret = rmp_client_connect(k->c, k->host, k->port);
	if (ret) {
		cl_say(cl, "%s port %u: %s (%s)", k->host, k->port,
		    rmp_strerror(ret), rmp_client_last_error(k->c));
		return ret;
	}
	k->up = true;
	return 0;
}

/* rails_list -- "A1,A2,..": the listen addresses of the node's devices
 * (its rails, at most RMP_RAILS_MAX, in the record's order) when it
 * lists two or more that are concrete, else false. */
static bool rails_list(const struct rmp_member *m, char *out, size_t len)
{
	size_t used = 0;
	unsigned n = 0;

	for (unsigned d = 0; d < m->ndevices && n < RMP_RAILS_MAX; d++) {
		const char *a = m->devices[d].addr;
		int w;

		if (!a[0] || strchr(a, ':')) /* a wildcard; IPv6 takes no list */
			continue;
		w = snprintf(out + used, len - used, "%s%s", n ? "," : "", a);
		if (w < 0 || (size_t)w >= len - used)
			return false;
		used += (size_t)w;
		n++;
	}
	return n >= 2;
}

/* node_rails -- the node's rails, when its record lists several devices
 * with their addresses: one connection over all (rmp_client_connect of
 * the list). NULL when it has none, or they cannot be had (*err). */
static struct cl_conn *node_rails(struct rmp_cluster *cl, struct cl_node *n,
				  int *err)
{
	char list[RMP_TOKEN_HOST_MAX + 1];
	struct cl_conn *k;

	if (!rails_list(&n->m, list, sizeof(list)))
		return NULL;
	k = cl_conn_find(cl, list, n->m.port);
	if (!k) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = cl_conn_up(cl, k);
	return *err ? NULL : k;
}

/* list_first -- the first address of list ("A1,A2,.." or one) is addr. */
static bool list_first(const char *list, const char *addr)
{
	size_t n = strcspn(list, ",");

	return strlen(addr) == n && !strncmp(list, addr, n);
}

/* cl_conn_first -- the first address of k's host (a rail list's rail 0)
 * is addr. */
bool cl_conn_first(const struct cl_conn *k, const char *addr)
{
	return list_first(k->host, addr);
}

/* node_said -- n's last connect gave err: proven, or why not (for
 * rmp_cluster_nodes; a server that cannot prove the tenant's key is
 * said so in the cluster's error too). */
static void node_said(struct rmp_cluster *cl, struct cl_node *n, int err)
{
	n->proven = err ? -1 : 1;
	n->why[0] = '\0';
	if (err == -EBADE) {
		snprintf(n->why, sizeof(n->why), "it did not prove tenant %s's "
			 "key: not a server of this tenant, skipped",
			 cl->tenant);
		cl_say(cl, "node %s: %s", n->m.node, n->why);
	} else if (err) {
		snprintf(n->why, sizeof(n->why), "%.*s", (int)sizeof(n->why) - 1,
			 cl->err);
	}
}

void cl_node_unreachable(struct cl_node *n, uint64_t now)
{
	rmpc_backoff_fail(&n->backoff, RETRY_FIRST_MS, RETRY_MAX_MS, now);
}

struct cl_conn *cl_node_conn(struct rmp_cluster *cl, struct cl_node *n,
			     int *err)
{
	struct cl_conn *rails = node_rails(cl, n, err);

	if (rails) {
		rmpc_backoff_reset(&n->backoff);
		node_said(cl, n, 0);
		return rails;
	}
	/* No rails (or they failed): address by address, as before. */
	*err = -ENOENT; /* no address (a record has one at least) */
	for (unsigned i = 0; i < n->m.naddrs; i++) {
		struct cl_conn *k = cl_conn_find(cl, n->m.addrs[i], n->m.port);

		if (!k) {
			cl_say(cl, "out of memory");
			*err = -ENOMEM;
			return NULL;
		}
		*err = cl_conn_up(cl, k);
		if (!*err) {
			rmpc_backoff_reset(&n->backoff);
			node_said(cl, n, 0);
			return k;
		}
	}
	node_said(cl, n, *err);
	cl_node_unreachable(n, rmp_now_ms());
	return NULL;
}

struct cl_conn *cl_token_conn(struct rmp_cluster *cl, const char *token,
				  int *err)
{
	struct rmp_token t;
	struct cl_conn *k;

	if (rmp_token_parse(token, &t)) {
		cl_say(cl, "not a lease token");
		*err = -EINVAL;
		return NULL;
	}
	/* A node's rails connection whose rail 0 the token names is the
	 * lease's own: its buffers and handles are there; one that broke
	 * is connected again (a member coming back keeps its rails), and
	 * only when that fails is the token's address used alone. */
	for (k = cl->conns; k; k = k->next)
		if (k->port == t.port && strchr(k->host, ',') &&
		    cl_conn_first(k, t.host) && !cl_conn_up(cl, k)) {
			*err = 0;
			return k;
		}
	k = cl_conn_find(cl, t.host, t.port);
	if (!k) {
		cl_say(cl, "out of memory");
		*err = -ENOMEM;
		return NULL;
	}
	*err = cl_conn_up(cl, k);
	return *err ? NULL : k;
}

struct cl_conn *cl_member_conn(struct rmp_cluster *cl, struct cl_node *n,
			       const struct rmp_token *t, const char *token,
			       int *err)
{
	char list[RMP_TOKEN_HOST_MAX + 1];

	if (n && rails_list(&n->m, list, sizeof(list)) &&
	    list_first(list, t->host)) {
		struct cl_conn *k = node_rails(cl, n, err);

		if (k)
			return k;
	}
	return cl_token_conn(cl, token, err);
}

int cl_conn_attach(struct rmp_cluster *cl, struct cl_conn *k,
		   const char *token, const struct rmp_attach_opts *opts,
		   uint64_t epoch, struct rmp_lease **out)
{
	int ret = rmpc_lease_attach_epoch(k->c, token, opts, epoch, out);

	if (rmpc_fault_reconnects(ret)) {
		/* broken since its last use (a key of ours revoked breaks
		 * the queue pair): once more on a new connection */
		k->up = false;
		ret = cl_conn_up(cl, k);
		if (!ret)
			ret = rmpc_lease_attach_epoch(k->c, token, opts, epoch,
						      out);
		if (rmpc_fault_reconnects(ret))
			k->up = false;
	}
	if (ret)
		cl_say(cl, "%s port %u: %s (%s)", k->host, k->port,
		       rmp_strerror(ret), rmp_client_last_error(k->c));
	return ret;
}

void cl_conns_free(struct rmp_cluster *cl)
{
	struct cl_conn *k;

	while ((k = cl->conns)) {
		cl->conns = k->next;
		rmp_client_free(k->c);
		free(k);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * cluster_members.c -- the membership: every PREFIX/nodes/NODE record in
 * etcd, read once and kept current by a watch, so that placing a lease
 * costs no etcd round trip. The etcd client runs on an event loop of its
 * own that only our calls turn: a watch's news wait in the socket until
 * the next call takes them in (cl_members_current), which is before any
 * choice is made. When the watch breaks (etcd gone, compacted), the next
 * call reads the records again and watches from there; until that works
 * nothing is placed (a node whose key is gone must never be chosen).
 */
#include "cluster_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "etcd.h"
#include "util.h"

/* Most turns of the loop one call gives the watch's news. */
#define PUMP_TURNS_MAX 64

/* One request's answer, waited for by sync_members. */
struct reply_wait {
	struct rmp_cluster *cl;
	bool done;
	int err;
};

/* node_name -- the NODE of key PREFIX/nodes/NODE, or NULL. */
static const char *node_name(const struct rmp_cluster *cl, const char *key)
{
	size_t n = strlen(cl->prefix);

	if (strncmp(key, cl->prefix, n) || strncmp(key + n, "nodes/", 6))
		return NULL;
	return key + n + 6;
}

/* node_slot -- the node of that name, added (not present) if new; NULL
 * when the table is full or out of memory. */
static struct cl_node *node_slot(struct rmp_cluster *cl, const char *name)
{
	struct cl_node *n = cl_node_find(cl, name), *t;

	if (n || cl->nnodes == CL_NODES_MAX)
		return n;
	t = realloc(cl->nodes, (cl->nnodes + 1) * sizeof(*t));
	if (!t)
		return NULL;
	cl->nodes = t;
	n = &t[cl->nnodes++];
	memset(n, 0, sizeof(*n));
	rmp_strlcpy(n->m.node, name, sizeof(n->m.node));
	return n;
}

/* apply -- one key-value pair read or watched: the node's record is
 * now kv's (or gone). A record that does not decode, or names another
 * node than its key, counts as no record: that node is not chosen. */
static void apply(struct rmp_cluster *cl, const struct rmp_etcd_kv *kv)
{
	const char *name = node_name(cl, kv->key);
	struct rmp_member m;
	struct cl_node *n;
	char why[200];

	if (!name || !rmp_cluster_node_ok(name))
		return;
	n = kv->deleted ? cl_node_find(cl, name) : node_slot(cl, name);
	if (!n)
		return;
	if (kv->deleted || rmp_member_decode(kv->value, kv->value_len, &m,
					     why, sizeof(why)) ||
	    strcmp(m.node, name)) {
		n->present = false;
		return;
	}
	n->m = m;
	n->present = true;
	n->taken = 0; /* the record counts what we took, or soon will */
}

static void on_reply(const struct rmp_etcd_reply *r, void *arg)
{
	struct reply_wait *w = arg;
	struct rmp_cluster *cl = w->cl;

	w->done = true;
	w->err = r->err;
	if (r->err) {
		snprintf(cl->etcd_err, sizeof(cl->etcd_err), "%s", r->error);
		return;
	}
	/* a full read: whatever is not in it is gone */
	for (unsigned i = 0; i < cl->nnodes; i++)
		cl->nodes[i].present = false;
	for (unsigned i = 0; i < r->nkvs; i++)
		apply(cl, &r->kvs[i]);
	cl->revision = r->revision;
}

static void on_watch(const struct rmp_etcd_reply *r, void *arg)
{
	struct rmp_cluster *cl = arg;

	cl->watch_msgs++;
	if (r->err) { /* the watch is over and freed */
		cl->watch = NULL;
		cl->synced = false;
		cl->watch_err = r->err;
		snprintf(cl->etcd_err, sizeof(cl->etcd_err), "%s", r->error);
		return;
	}
	if (r->created) /* etcd has it: news reach us from now on */
		cl->synced = true;
	for (unsigned i = 0; i < r->nkvs; i++) {
		apply(cl, &r->kvs[i]);
		if (r->kvs[i].mod_revision > cl->revision)
			cl->revision = r->kvs[i].mod_revision;
	}
}

/* a watch's own ends (-ESTALE, ...) never reach a caller */
int cl_etcd_errno(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -ECONNREFUSED:
		return -ECONNREFUSED;
	case -ETIMEDOUT:
		return -ETIMEDOUT;
	case -EACCES:
		return -EACCES;
	case -EPROTO:
		return -EPROTO;
	case -ENOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* sync -- read every record, then watch from the revision read. */
static int sync_members(struct rmp_cluster *cl)
{
	struct reply_wait w = { .cl = cl };
	char prefix[CL_PREFIX_MAX + 8];
	int ret;

	rmp_etcd_watch_cancel(cl->watch);
	cl->watch = NULL;
	snprintf(prefix, sizeof(prefix), "%snodes/", cl->prefix);
	ret = rmp_etcd_range(cl->etcd, prefix, true, on_reply, &w);
	/* the etcd client always answers, in time (its timeouts) */
	while (!ret && !w.done)
		event_base_loop(cl->base, EVLOOP_ONCE);
	ret = cl_etcd_errno(ret ? ret : w.err);
	if (!ret) {
		cl->watch = rmp_etcd_watch(cl->etcd, prefix, cl->revision + 1,
					   on_watch, cl);
		ret = cl->watch ? 0 : -ENOMEM;
	}
	/* the loop turns only within our calls: until etcd says the watch
	 * is created (in its timeouts, as any request), no news would come
	 * before the next call but one */
	while (!ret && cl->watch && !cl->synced)
		event_base_loop(cl->base, EVLOOP_ONCE);
	if (!ret && !cl->synced)
		ret = cl_etcd_errno(cl->watch_err);
	if (ret) {
		snprintf(cl->err, sizeof(cl->err), "the membership cannot be "
			 "read from etcd: %s", ret == -ENOMEM ? "out of memory"
			 : cl->etcd_err);
		return ret;
	}
	return 0;
}

int cl_members_current(struct rmp_cluster *cl)
{
	uint64_t seen;
	unsigned turns = 0;

	/* what arrived since the last call, without waiting: a turn of the
	 * loop reads what one read gives (16 KiB, some twenty records), so
	 * turn it again while it brings news */
	do {
		seen = cl->watch_msgs;
		event_base_loop(cl->base, EVLOOP_NONBLOCK);
	} while (cl->watch_msgs != seen && ++turns < PUMP_TURNS_MAX);
	return cl->synced ? 0 : sync_members(cl);
}

struct cl_node *cl_node_find(struct rmp_cluster *cl, const char *name)
{
	for (unsigned i = 0; i < cl->nnodes; i++)
		if (!strcmp(cl->nodes[i].m.node, name))
			return &cl->nodes[i];
	return NULL;
}

/* given -- a file name is given. */
static bool given(const char *path)
{
	return path && path[0];
}

/* secrets_safe -- no credentials or TLS files with an endpoint of url
 * that is not https://: a password must not go to the endpoint an
 * attacker makes the others fail over to (as the daemon's config says).
 * A malformed url passes: rmp_etcd_open says what is wrong with it. */
static bool secrets_safe(struct rmp_cluster *cl, const char *url,
			 const struct rmp_cluster_opts *o)
{
	struct rmp_cluster_endpoint eps[RMP_CLUSTER_ENDPOINTS_MAX];
	unsigned n = 0;
	char why[256];

	if (!given(o->credentials_file) && !given(o->ca_file) &&
	    !given(o->cert_file) && !given(o->key_file))
		return true;
	if (rmp_cluster_endpoints(url, eps, &n, why, sizeof(why)))
		return true;
	for (unsigned i = 0; i < n; i++) {
		if (!eps[i].tls) {
			snprintf(cl->err, sizeof(cl->err), "etcd endpoints: "
				 "%s:%u is not https://, and credentials or "
				 "TLS files are given: every endpoint must be "
				 "https://", eps[i].host, eps[i].port);
			return false;
		}
	}
	return true;
}

int cl_members_open(struct rmp_cluster *cl, const char *url,
		    const struct rmp_cluster_opts *opts)
{
	struct rmp_etcd_settings s = {
		.endpoints = url,
		.timeout_ms = (uint64_t)opts->etcd_timeout_ms,
		.ca_file = opts->ca_file, .cert_file = opts->cert_file,
		.key_file = opts->key_file,
		.credentials_file = opts->credentials_file,
	};
	struct event_config *ec;

	if (!secrets_safe(cl, url, opts))
		return -EINVAL;
	ec = event_config_new();
	/* no signals, no threads: a loop of our own, turned by our calls */
	if (ec)
		event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
	cl->base = ec ? event_base_new_with_config(ec) : NULL;
	if (ec)
		event_config_free(ec);
	if (!cl->base) {
		snprintf(cl->err, sizeof(cl->err), "cannot make an event loop");
		return -ENOMEM;
	}
	cl->etcd = rmp_etcd_open(cl->base, &s, cl->err, sizeof(cl->err));
	if (!cl->etcd)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	return sync_members(cl);
}

void cl_members_close(struct rmp_cluster *cl)
{
	rmp_etcd_watch_cancel(cl->watch);
	cl->watch = NULL;
	rmp_etcd_free(cl->etcd);
	cl->etcd = NULL;
	if (cl->base)
		event_base_free(cl->base);
	cl->base = NULL;
	free(cl->nodes);
	cl->nodes = NULL;
	cl->nnodes = 0;
}

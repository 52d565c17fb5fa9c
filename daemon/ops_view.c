/* SPDX-License-Identifier: MIT */
/*
 * ops_view.c -- what an operator sees: clients, leases with their holders,
 * tenants and the daemon's counters, as plain views for the admin socket
 * and the metrics to render. Only this file walks the connection list,
 * the lease table and the tenants for them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "device.h"
#include "keys.h"
#include "lease.h"
#include "ops.h"
#include "parse.h"
#include "tenant.h"
#include "util.h"

/* ------------------------------------------------------------ clients */

void rmp_ops_client_view(const struct rmp_conn *c, struct rmp_client_view *v)
{
	const struct rmp_tenant *t = c->holder.tenant;
	const struct rmp_key *k;

	memset(v, 0, sizeof(*v));
	v->serial = c->serial;
	v->name = c->name;
	v->peer = c->peer;
	/* Until it has proved its key, the tenant it named. */
	v->tenant = t ? t->name : c->auth.tenant ? c->auth.tenant->name : "";
	v->authenticated = t != NULL;
	v->state = rmp_conn_state_name(c->state);
	v->accepted_ms = c->accepted_ms;
	TAILQ_FOREACH(k, &c->holder.keys, holder_link) {
		v->leases++;
		v->bytes += k->lease->ext.length;
	}
	v->requests = c->requests;
	v->errors = c->errors;
}

const struct rmp_conn *rmp_ops_next_client(const struct rmp_ops *o,
					   const struct rmp_conn *prev,
					   struct rmp_client_view *v)
{
	const struct rmp_conn *c = prev ? TAILQ_NEXT(prev, link) :
					  TAILQ_FIRST(&o->conns->list);

	if (c && v)
		rmp_ops_client_view(c, v);
	return c;
}

/* conn_by_serial -- client #n, closing ones included, or NULL. */
static const struct rmp_conn *conn_by_serial(const struct rmp_ops *o,
					     uint64_t n)
{
	const struct rmp_conn *c;

	TAILQ_FOREACH(c, &o->conns->list, link)
		if (c->serial == n)
			return c;
	return NULL;
}

/* conn_of -- the connection whose holder h is, or NULL. */
static const struct rmp_conn *conn_of(const struct rmp_ops *o,
				      const struct rmp_holder *h)
{
	const struct rmp_conn *c;

	TAILQ_FOREACH(c, &o->conns->list, link)
		if (&c->holder == h)
			return c;
	return NULL;
}

/* ------------------------------------------------------------- leases */

static void lease_view(const struct rmp_ops *o, const struct rmp_lease *l,
		       struct rmp_lease_view *v)
{
	memset(v, 0, sizeof(*v));
	v->lease = l;
	v->id = l->id;
	v->tenant = l->tenant ? l->tenant->name : "";
	v->owner = l->owner;
	v->offset = l->ext.offset;
	v->bytes = l->ext.length;
	v->addr = rmp_lease_remote_addr(l);
	v->device = l->pool->device;
	v->numa_node = l->pool->node;
	v->spilled = l->flags & RMP_LEASE_F_SPILLED;
	v->access = l->access;
	v->keys = l->nkeys;
	v->keys_mode = rmp_keys_mode_name(o->keys_mode);
	v->state = rmp_lease_state_name(l->state);
	v->ttl_ms = l->ttl_ms;
	v->deadline_ms = l->deadline_ms;
	v->created_ms = l->created_ms;
	v->auto_renew = l->flags & RMP_LEASE_F_AUTO_RENEW;
	v->ephemeral = l->flags & RMP_LEASE_F_EPHEMERAL;
}

int rmp_ops_lease_view(const struct rmp_ops *o, uint64_t id,
		       struct rmp_lease_view *v)
{
	const struct rmp_lease *l = rmp_lifecycle_find(o->lc, id);

	if (!l)
		return -ENOENT;
	lease_view(o, l, v);
	return 0;
}

const struct rmp_key *rmp_ops_next_holder(const struct rmp_ops *o,
					  const struct rmp_lease_view *lv,
					  const struct rmp_key *prev,
					  struct rmp_holder_view *hv)
{
	const struct rmp_key *k = prev ? TAILQ_NEXT(prev, lease_link) :
					 TAILQ_FIRST(&lv->lease->keys);
	const struct rmp_conn *c;

	if (!k)
		return NULL;
	c = conn_of(o, k->holder);
	hv->client = c ? c->serial : 0;
	hv->name = k->holder->name;
	hv->peer = k->holder->peer;
	hv->access = k->access;
	hv->key_state = rmp_key_state_name(k->state);
	hv->owner = k->holder == lv->lease->owner_holder;
	return k;
}

/* What rmp_ops_find_leases keeps, and what it found so far. */
struct lease_filter {
	const struct rmp_lease_query *q;
	const struct rmp_holder *holder; /* client by number; NULL: any */
	bool by_number;
	uint64_t *ids;
	size_t n, cap;
	bool nomem;
};

static bool lease_matches(const struct lease_filter *f,
			  const struct rmp_lease *l)
{
	const struct rmp_lease_query *q = f->q;
	const struct rmp_key *k;
	bool hit;

	if (q->tenant && (!l->tenant || strcmp(l->tenant->name, q->tenant)))
		return false;
	if (q->expiring && l->deadline_ms > q->before_ms)
		return false;
	if (f->by_number) {
		hit = false;
		TAILQ_FOREACH(k, &l->keys, lease_link)
			hit |= k->holder == f->holder;
		return hit;
	}
	if (q->client) {
		/* The client that allocated it, or one that holds a key. */
		hit = !strcmp(l->owner, q->client);
		TAILQ_FOREACH(k, &l->keys, lease_link)
			hit |= k->holder->name && !strcmp(k->holder->name,
							  q->client);
		return hit;
	}
	return true;
}

/* collect_one -- rmp_lifecycle_foreach's visitor: keep l's id if it
 * matches. */
static void collect_one(const struct rmp_lease *l, void *arg)
{
	struct lease_filter *f = arg;

	if (f->nomem || !lease_matches(f, l))
		return;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		uint64_t *ids = realloc(f->ids, cap * sizeof(*ids));

		if (!ids) {
			f->nomem = true;
			return;
		}
		f->ids = ids;
		f->cap = cap;
	}
	f->ids[f->n++] = l->id;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int rmp_ops_find_leases(const struct rmp_ops *o,
			const struct rmp_lease_query *q, uint64_t **ids,
			size_t *n)
{
	struct lease_filter f = { .q = q };
	const struct rmp_conn *c;
	uint64_t serial;

	*ids = NULL;
	*n = 0;
	/* "#7" or "7": a client's number, else its name */
	if (q->client && !rmp_parse_dec(q->client[0] == '#' ? q->client + 1 :
					q->client, &serial)) {
		c = conn_by_serial(o, serial);
		if (!c)
			return -ENOENT;
		f.by_number = true;
		f.holder = &c->holder;
	}
	rmp_lifecycle_foreach(o->lc, collect_one, &f);
	if (!f.nomem && !f.ids)
		f.ids = malloc(sizeof(*f.ids)); /* an empty list is a list */
	if (f.nomem || !f.ids) {
		free(f.ids);
		return -ENOMEM;
	}
	if (f.n) /* qsort(NULL, 0, ...) is undefined */
		qsort(f.ids, f.n, sizeof(*f.ids), cmp_u64);
	*ids = f.ids;
	*n = f.n;
	return 0;
}

/* ------------------------------------------------------------ tenants */

const struct rmp_tenant *rmp_ops_next_tenant(const struct rmp_ops *o,
					     const struct rmp_tenant *prev,
					     struct rmp_tenant_view *v)
{
	const struct rmp_tenant *t = rmp_tenants_next(o->tenants, prev);

	if (!t || !v)
		return t;
	memset(v, 0, sizeof(*v));
	v->name = t->name;
	v->bytes = t->bytes;
	v->leases = t->leases;
	v->connections = t->connections;
	v->auth_failures = t->auth_failures;
	v->quota_refusals = t->quota_refusals;
	v->limit_bytes = t->limits.bytes;
	v->limit_leases = t->max_leases;
	v->limit_connections = t->limits.connections;
	return t;
}

/* ----------------------------------------------------------- counters */

/* set_state -- one state's line of c->by_state. */
static void set_state(struct rmp_ops_counters *c, enum rmp_lease_state s,
		      uint64_t leases, uint64_t bytes)
{
	c->by_state[s].state = rmp_lease_state_name(s);
	c->by_state[s].leases = leases;
	c->by_state[s].bytes = bytes;
}

void rmp_ops_counters(const struct rmp_ops *o, struct rmp_ops_counters *c)
{
	const struct rmp_lifecycle_stats *ls = &c->leases;

	memset(c, 0, sizeof(*c));
	rmp_lifecycle_stats(o->lc, &c->leases);
	set_state(c, RMP_LEASE_GRANTED, ls->leases, ls->leased_bytes);
	set_state(c, RMP_LEASE_REVOKING, ls->revoking, ls->revoking_bytes);
	/* ending: revoking or zeroing */
	set_state(c, RMP_LEASE_ZEROING, ls->ending - ls->revoking,
		  ls->zeroing_bytes);
	set_state(c, RMP_LEASE_QUARANTINED, ls->quarantined_leases,
		  ls->quarantined_bytes);
	for (unsigned r = 0; r < RMP_REJ_REASONS; r++) {
		c->rejects[r].reason = rmp_reject_reason_name(r);
		c->rejects[r].count = o->listener->rejects[r];
	}
	c->conns = o->conns->counters;
	c->latency = &o->conns->latency;
}

/* SPDX-License-Identifier: MIT */
/* ops.c -- what an operator may do: status, revoke, extend, disconnect,
 * drain, reload. What an operator sees of each thing is ops_view.c. */
#include <errno.h>
#include <netdb.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"
#include "ops.h"
#include "parse.h"
#include "pool.h"
#include "journal.h"
#include "tenant.h"
#include "util.h"

void rmp_ops_addr_of(const struct rmp_ops *o, const struct rmp_device *dev,
		     char *buf, size_t len)
{
	const struct rmp_listener *ls = o->listener;

	buf[0] = '\0';
	for (unsigned i = 0; i < ls->nids; i++) {
		struct sockaddr *sa = rdma_get_local_addr(ls->ids[i]);

		if (ls->ids[i]->verbs != dev->verbs || !sa)
			continue;
		if (getnameinfo(sa, sa->sa_family == AF_INET6 ?
				sizeof(struct sockaddr_in6) :
				sizeof(struct sockaddr_in), buf, (socklen_t)len,
				NULL, 0, NI_NUMERICHOST))
			buf[0] = '\0';
		return;
	}
}

unsigned rmp_ops_port_of(const struct rmp_ops *o,
			 const struct rmp_device *dev)
{
	const struct rmp_listener *ls = o->listener;

	/* A listening id knows its port once bound to an address of the
	 * device; a wildcard one has none: port 1. */
	for (unsigned i = 0; i < ls->nids; i++)
		if (ls->ids[i]->verbs == dev->verbs && ls->ids[i]->port_num)
			return ls->ids[i]->port_num;
	return 1;
}

/* device_status -- device i and its pool, into st->devices[i] and the
 * sums. */
static void device_status(const struct rmp_ops *o, unsigned i,
			  struct rmp_status *st)
{
	struct rmp_device_status *ds = &st->devices[i];
	const struct rmp_pool *pool = o->pools[i];
	const struct rmp_conn *c;
	struct rmp_pool_stats ps;

	rmp_pool_stats(pool, &ps);
	rmp_strlcpy(ds->name, o->devs[i]->name, sizeof(ds->name));
	rmp_ops_addr_of(o, o->devs[i], ds->addr, sizeof(ds->addr));
	ds->port = rmp_ops_port_of(o, o->devs[i]);
	ds->numa_node = pool->node;
	ds->pool_bytes = ps.size;
	ds->free_bytes = ps.free_bytes;
	ds->largest_free = ps.largest_free;
	ds->hugepage_size = pool->page_size;
	TAILQ_FOREACH(c, &o->conns->list, link)
		ds->clients += c->dev == o->devs[i];
	rmp_lifecycle_pool_stats(o->lc, pool, &ds->leases, &ds->leased_bytes);
	if (pool->journal) {
		struct rmp_journal_stats js;

		rmp_journal_stats(pool->journal, &js);
		ds->journal_records = js.used;
		ds->journal_capacity = js.capacity;
		ds->recovered = js.recovered;
		st->persistent = true;
	}
	st->pool_bytes += ps.size;
	st->free_bytes += ps.free_bytes;
	st->largest_free = RMP_MAX(st->largest_free, ps.largest_free);
	st->journal_records += ds->journal_records;
	/* Each journal has room for max_leases, the server's bound. */
	st->journal_capacity = RMP_MAX(st->journal_capacity,
				       ds->journal_capacity);
	st->recovered += ds->recovered;
}

void rmp_ops_status(const struct rmp_ops *o, struct rmp_status *st)
{
	struct rmp_lifecycle_stats ls;

	memset(st, 0, sizeof(*st));
	rmp_lifecycle_stats(o->lc, &ls);
	st->version = RMP_VERSION;
	st->uptime_ms = rmp_now_ms() - o->started_ms;
	rmp_strlcpy(st->device, o->devs[0]->name, sizeof(st->device));
	rmp_strlcpy(st->listen, o->cfg->server.listen, sizeof(st->listen));
	st->port = o->cfg->server.port;
	st->numa_node = o->pools[0]->node;
	st->ndevices = o->ndevs;
	for (unsigned i = 0; i < o->ndevs; i++)
		device_status(o, i, st);
	st->quarantined_bytes = ls.quarantined_bytes;
	st->quarantined_leases = ls.quarantined_leases;
	st->zeroing_bytes = ls.zeroing_bytes;
	st->hugepage_size = o->pools[0]->page_size;
	st->keys_mode = rmp_keys_mode_name(o->keys_mode);
	st->clients = o->conns->count;
	st->leases = ls.leases;
	st->leased_bytes = ls.leased_bytes;
	st->keys = ls.keys;
	st->max_leases = o->cfg->pool.max_leases;
	st->draining = rmp_lifecycle_draining(o->lc);
	st->stopping = o->stopping;
	st->cluster = o->cluster;
}

int rmp_ops_revoke(struct rmp_ops *o, uint64_t id, const char *who)
{
	return rmp_lifecycle_revoke(o->lc, id, who);
}

int rmp_ops_extend(struct rmp_ops *o, uint64_t id, uint64_t ttl_ms,
		   const char *who)
{
	return rmp_lifecycle_extend(o->lc, id, ttl_ms, who);
}

struct rmp_conn *rmp_ops_find_client(const struct rmp_ops *o,
				     const char *which, int *err)
{
	struct rmp_conn *c, *found = NULL;
	uint64_t serial;

	*err = -ENOENT;
	if (!rmp_parse_dec(which[0] == '#' ? which + 1 : which, &serial)) {
		TAILQ_FOREACH(c, &o->conns->list, link)
			if (c->serial == serial &&
			    c->state != RMP_CONN_CLOSING)
				return c;
		return NULL;
	}
	TAILQ_FOREACH(c, &o->conns->list, link) {
		if (c->state == RMP_CONN_CLOSING || strcmp(c->name, which))
			continue;
		if (found) {
			*err = -EEXIST;
			return NULL;
		}
		found = c;
	}
	return found;
}

void rmp_ops_disconnect(struct rmp_ops *o, struct rmp_conn *c,
			const char *who)
{
	char why[128];

	(void)o;
	snprintf(why, sizeof(why), "disconnected by %s", who);
	log_notice("audit: disconnect tenant=%s client=%s peer=%s by=\"%s\"",
		   c->holder.tenant ? c->holder.tenant->name : "-", c->name,
		   c->peer, who);
	rmp_conn_close(c, why);
}

int rmp_ops_drain(struct rmp_ops *o, bool on, const char *who)
{
	if (!on && o->stopping)
		return -EBUSY;
	o->drained = on;
	rmp_lifecycle_set_draining(o->lc, on);
	log_notice("%s by %s: %s", on ? "drain" : "undrain", who,
		   on ? "no new leases; existing ones keep working" :
		   "new leases are granted again");
	return 0;
}

/* ------------------------------------------------------------- reload */

/*
 * The keys a reload cannot apply: they shape what was set up at start
 * (the listener, the device, the pool, the queues, the sockets). A
 * reload names each one that changed and keeps its running value.
 */
#define KEEP(name, member, is_str)                                        \
	{ name, offsetof(struct rmp_config, member),                      \
	  sizeof(((struct rmp_config *)0)->member), is_str }
static const struct restart_key {
	const char *name;
	size_t off, len;
	bool is_str;
} restart_keys[] = {
	KEEP("server.listen", server.listen, true),
	KEEP("server.port", server.port, false),
	KEEP("server.device", server.device, true),
	KEEP("server.max_clients", server.max_clients, false),
	KEEP("server.credits", server.credits, false),
	KEEP("server.admin_socket", server.admin_socket, true),
	KEEP("server.admin_group", server.admin_group, true),
	KEEP("server.metrics_listen", server.metrics_listen, true),
	KEEP("pool.size", pool.size, false),
	KEEP("pool.hugepage_size", pool.hugepage_size, false),
	KEEP("pool.hugepages", pool.hugepages, false),
	KEEP("pool.numa_node", pool.numa_node, false),
	KEEP("pool.lock", pool.lock, false),
	KEEP("pool.state_dir", pool.state_dir, true),
	KEEP("pool.fdstore", pool.fdstore, false),
	KEEP("pool.max_leases", pool.max_leases, false),
	KEEP("lease.lease_keys", lease.lease_keys, false),
	/* the membership is set up once: a new one needs a restart */
	KEEP("cluster.etcd", cluster.etcd, true),
	KEEP("cluster.prefix", cluster.prefix, true),
	KEEP("cluster.node", cluster.node, true),
	KEEP("cluster.labels", cluster.labels, true),
	KEEP("cluster.ttl", cluster.ttl_ms, false),
	KEEP("cluster.ca_file", cluster.ca_file, true),
	KEEP("cluster.cert_file", cluster.cert_file, true),
	KEEP("cluster.key_file", cluster.key_file, true),
	KEEP("cluster.credentials_file", cluster.credentials_file, true),
};

static bool key_differs(const struct restart_key *k,
			const struct rmp_config *a, const struct rmp_config *b)
{
	const char *pa = (const char *)a + k->off;
	const char *pb = (const char *)b + k->off;

	return k->is_str ? strcmp(pa, pb) != 0 : memcmp(pa, pb, k->len) != 0;
}

/* A configuration printed as "section.key = value" lines, for diffs. */
struct dump {
	char *text;
	size_t len;
};

/* dump -- c as INI text (no secrets); false when out of memory. */
static bool dump_config(const struct rmp_config *c, struct dump *d)
{
	FILE *f = open_memstream(&d->text, &d->len);

	if (!f)
		return false;
	if (rmp_config_dump(c, f, false)) {
		fclose(f);
		free(d->text);
		return false;
	}
	return fclose(f) == 0;
}

/*
 * value_of -- the value of "section.key" in an INI dump, copied into
 * buf (the sections of one struct; tenants are not looked up here).
 */
static bool value_of(const struct dump *d, const char *name, char *buf,
		     size_t len)
{
	const char *dot = strchr(name, '.'), *p = d->text, *eol;
	size_t slen = (size_t)(dot - name), klen = strlen(dot + 1);
	bool in = false;

	for (; p && *p; p = eol ? eol + 1 : NULL) {
		eol = strchr(p, '\n');
		if (*p == '[') {
			in = !strncmp(p + 1, name, slen) && p[1 + slen] == ']';
			continue;
		}
		if (in && !strncmp(p, dot + 1, klen) &&
		    !strncmp(p + klen, " =", 2)) {
			p += klen + 2;
			p += *p == ' ';
			snprintf(buf, len, "%.*s", (int)(eol ? eol - p :
							   (long)strlen(p)), p);
			return true;
		}
	}
	return false;
}

/*
 * log_live_changes -- "reload: lease.ttl_max: 1h -> 2h" for each key of
 * [server], [pool] and [lease] that changed (tenants log their own).
 * Returns how many.
 */
static unsigned log_live_changes(const struct dump *old, const struct dump *new)
{
	const char *p = new->text, *eol, *eq;
	char section[32] = "", name[96], was[256], now[256];
	unsigned n = 0;

	for (; p && *p; p = eol ? eol + 1 : NULL) {
		eol = strchr(p, '\n');
		if (*p == '[') {
			snprintf(section, sizeof(section), "%.*s",
				 (int)strcspn(p + 1, "]\n"), p + 1);
			continue;
		}
		if (strcmp(section, "server") && strcmp(section, "pool") &&
		    strcmp(section, "lease"))
			continue;
		eq = strstr(p, " =");
		if (*p == '#' || !eq || (eol && eq > eol))
			continue;
		snprintf(name, sizeof(name), "%s.%.*s", section,
			 (int)(eq - p), p);
		if (!value_of(new, name, now, sizeof(now)) ||
		    !value_of(old, name, was, sizeof(was)) || !strcmp(was, now))
			continue;
		log_notice("reload: %s: %s -> %s", name, was[0] ? was : "\"\"",
			   now[0] ? now : "\"\"");
		n++;
	}
	return n;
}

int rmp_ops_reload(struct rmp_ops *o, const char *who, char *err,
		   size_t errlen)
{
	struct dump old = { 0 }, new = { 0 };
	struct rmp_config *next = malloc(sizeof(*next));
	unsigned live = 0, kept = 0, tenants = 0;
	char msg[512];
	int ret = -ENOMEM;

	log_notice("reload of %s asked by %s", o->config_path, who);
	if (!next)
		goto fail;
	rmp_config_defaults(next);
	ret = rmp_config_load_file(next, o->config_path, msg, sizeof(msg));
	if (ret) {
		snprintf(err, errlen, "%s", msg);
		goto fail;
	}
	for (size_t i = 0; i < sizeof(restart_keys) / sizeof(restart_keys[0]);
	     i++) {
		const struct restart_key *k = &restart_keys[i];

		if (!key_differs(k, o->cfg, next))
			continue;
		log_warn("reload: %s changed: it needs a restart to apply; "
			 "keeping the running value until then", k->name);
		memcpy((char *)next + k->off, (char *)o->cfg + k->off, k->len);
		kept++;
	}
	ret = -ENOMEM;
	if (!dump_config(o->cfg, &old) || !dump_config(next, &new)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* Tenants first: their key files are the last thing that can fail. */
	ret = rmp_tenants_reload(o->tenants, next, &tenants);
	if (ret) {
		snprintf(err, errlen, "%s: a tenant key could not be read (see "
			 "the log): nothing changed", o->config_path);
		goto fail;
	}
	live = log_live_changes(&old, &new);
	*o->cfg = *next;
	rmp_conns_recheck_proofs(o->conns);
	if (!o->verbose)
		rmp_log_set_level(o->cfg->server.log_level);
	rmp_lifecycle_config_changed(o->lc);
	o->reloads++;
	snprintf(err, errlen, "%u change(s) applied, %u tenant(s) changed, %u "
		 "change(s) need a restart", live, tenants, kept);
	log_notice("reload done: %s", err);
	ret = 0;
	goto out;
fail:
	o->reload_failures++;
	log_err("reload failed, nothing changed: %s", err);
out:
	free(old.text);
	free(new.text);
	if (next) {
		rmp_wipe(next, sizeof(*next));
		free(next);
	}
	return ret;
}

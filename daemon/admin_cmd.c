/* SPDX-License-Identifier: MIT */
/* admin_cmd.c -- the admin commands: status, leases, show, revoke,
 * extend, clients, disconnect, drain, undrain, reload. */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <json-c/json.h>

#include "admin_int.h"
#include "conn.h"
#include "keys.h"
#include "lease.h"
#include "lifecycle.h"
#include "log.h"
#include "ops.h"
#include "parse.h"
#include "tenant.h"
#include "util.h"

/* ----------------------------------------------------- request fields */

/*
 * get_field -- field k of req: 1 and *v when present, 0 when absent and
 * optional, -EINVAL (error replied) when absent and required.
 */
static int get_field(struct admin_conn *c, json_object *req, const char *cmd,
		     const char *k, bool required, json_object **v)
{
	if (json_object_object_get_ex(req, k, v))
		return 1;
	if (!required)
		return 0;
	adm_reply_error(c, EINVAL, "%s needs \"%s\"", cmd, k);
	return -EINVAL;
}

/*
 * get_str -- field k of req, a string: 0 and *out (NULL when absent and
 * optional), or -EINVAL with the error replied.
 */
static int get_str(struct admin_conn *c, json_object *req, const char *cmd,
		   const char *k, bool required, const char **out)
{
	json_object *v;
	int ret;

	*out = NULL;
	ret = get_field(c, req, cmd, k, required, &v);
	if (ret <= 0)
		return ret;
	if (!json_object_is_type(v, json_type_string)) {
		adm_reply_error(c, EINVAL, "\"%s\" must be a string", k);
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	return 0;
}

/* get_u64 -- field k, a non-negative integer; *present says if given. */
static int get_u64(struct admin_conn *c, json_object *req, const char *cmd,
		   const char *k, bool required, uint64_t *out, bool *present)
{
	json_object *v;
	int ret;

	*present = false;
	ret = get_field(c, req, cmd, k, required, &v);
	if (ret <= 0)
		return ret;
	if (!json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0) {
		adm_reply_error(c, EINVAL, "\"%s\" must be a non-negative integer "
			    "(milliseconds)", k);
		return -EINVAL;
	}
	*out = json_object_get_uint64(v);
	*present = true;
	return 0;
}

/* get_id -- field "id": a lease id, 1 to 16 hex digits in a string. */
static int get_id(struct admin_conn *c, json_object *req, const char *cmd,
		  uint64_t *id)
{
	const char *s;
	size_t n;

	if (get_str(c, req, cmd, "id", true, &s))
		return -EINVAL;
	n = strlen(s);
	if (n == 0 || n > 16 || rmp_parse_hex_fixed(s, (unsigned int)n, id)) {
		adm_reply_error(c, EINVAL, "\"id\" must be a lease id: 16 hex "
			    "digits, as rmpoolctl leases shows it");
		return -EINVAL;
	}
	return 0;
}

static void reply_no_lease(struct admin_conn *c, uint64_t id)
{
	adm_reply_error(c, ENOENT, "no such lease %016" PRIx64 " (it has ended, "
		    "or never was: see rmpoolctl leases)", id);
}

/* ----------------------------------------------------------- commands */

void adm_cmd_status(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	struct rmp_status st;
	json_object *j = adm_ok_reply();

	(void)req;
	rmp_ops_status(o, &st);
	adm_put_text(j, "version", st.version);
	adm_put_u64(j, "uptime_ms", st.uptime_ms);
	adm_put_i64(j, "started", adm_unix_s(o->started_ms));
	adm_put_text(j, "device", st.device);
	adm_put_text(j, "listen", st.listen);
	adm_put_u64(j, "port", st.port);
	adm_put_i64(j, "numa_node", st.numa_node);
	adm_put_u64(j, "pool_bytes", st.pool_bytes);
	adm_put_u64(j, "free_bytes", st.free_bytes);
	adm_put_u64(j, "largest_free", st.largest_free);
	adm_put_u64(j, "quarantined_bytes", st.quarantined_bytes);
	adm_put_u64(j, "quarantined_leases", st.quarantined_leases);
	adm_put_u64(j, "zeroing_bytes", st.zeroing_bytes);
	adm_put_u64(j, "hugepage_size", st.hugepage_size);
	adm_put_text(j, "keys_mode", st.keys_mode);
	adm_put_u64(j, "clients", st.clients);
	adm_put_u64(j, "leases", st.leases);
	adm_put_u64(j, "max_leases", st.max_leases);
	adm_put_u64(j, "leased_bytes", st.leased_bytes);
	adm_put_u64(j, "keys", st.keys);
	adm_put_bool(j, "draining", st.draining);
	adm_put_bool(j, "drained", o->drained);
	adm_put_bool(j, "stopping", st.stopping);
	adm_put_bool(j, "persistent", st.persistent);
	adm_put_u64(j, "journal_records", st.journal_records);
	adm_put_u64(j, "journal_capacity", st.journal_capacity);
	adm_put_u64(j, "recovered_leases", st.recovered);
	adm_send_obj(c, j);
}

/* What `leases` keeps. */
struct lease_filter {
	const struct rmp_ops *o;
	const char *tenant;             /* NULL: any */
	const char *name;               /* client name; NULL: any */
	const struct rmp_holder *holder; /* client by number; NULL: any */
	bool by_number;
	bool expiring;
	uint64_t before_ms;             /* deadline at or before this */
	uint64_t *ids;
	size_t n, cap;
	bool nomem;
};

static bool lease_matches(const struct lease_filter *f,
			  const struct rmp_lease *l)
{
	const struct rmp_key *k;
	bool hit;

	if (f->tenant && (!l->tenant || strcmp(l->tenant->name, f->tenant)))
		return false;
	if (f->expiring && l->deadline_ms > f->before_ms)
		return false;
	if (f->by_number) {
		hit = false;
		TAILQ_FOREACH(k, &l->keys, lease_link)
			hit |= k->holder == f->holder;
		return hit;
	}
	if (f->name) {
		/* The client that allocated it, or one that holds a key. */
		hit = !strcmp(l->owner, f->name);
		TAILQ_FOREACH(k, &l->keys, lease_link)
			hit |= k->holder->name && !strcmp(k->holder->name,
							  f->name);
		return hit;
	}
	return true;
}

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

/* parse_number -- "#7" or "7": a client's number. */
static bool parse_number(const char *s, uint64_t *out)
{
	return !rmp_parse_dec(*s == '#' ? s + 1 : s, out);
}

/*
 * adm_stream_leases -- send the lines of a leases reply while the peer keeps
 * up: leases that ended meanwhile are left out; the last line counts
 * the ones sent. Called again from the write callback.
 */
void adm_stream_leases(struct admin_conn *c)
{
	const struct rmp_ops *o = c->a->ops;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	json_object *j;

	while (c->ids && c->next < c->nids && !c->closing &&
	       evbuffer_get_length(out) < OUT_HIGH) {
		const struct rmp_lease *l =
			rmp_lifecycle_find(o->lc, c->ids[c->next++]);

		if (!l)
			continue;
		j = json_object_new_object();
		adm_put(j, "lease", adm_lease_json(o, l, false));
		if (adm_send_obj(c, j))
			return;
		c->sent++;
	}
	if (!c->ids || c->next < c->nids || c->closing)
		return;
	free(c->ids);
	c->ids = NULL;
	j = adm_ok_reply();
	adm_put(j, "end", json_object_new_string("leases"));
	adm_put_u64(j, "count", c->sent);
	adm_send_obj(c, j);
}

void adm_cmd_leases(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	struct lease_filter f = { .o = o };
	const char *client;
	uint64_t within, n;
	json_object *j;

	if (get_str(c, req, "leases", "tenant", false, &f.tenant) ||
	    get_str(c, req, "leases", "client", false, &client) ||
	    get_u64(c, req, "leases", "expiring_within_ms", false, &within,
		    &f.expiring))
		return;
	if (f.expiring)
		f.before_ms = rmp_now_ms() + RMP_MIN(within, UINT64_MAX / 4);
	if (client && parse_number(client, &n)) {
		const struct rmp_conn *cn;

		TAILQ_FOREACH(cn, &o->conns->list, link)
			if (cn->serial == n)
				break;
		if (!cn) {
			adm_reply_error(c, ENOENT, "no client #%" PRIu64
				    " (see rmpoolctl clients)", n);
			return;
		}
		f.by_number = true;
		f.holder = &cn->holder;
	} else {
		f.name = client;
	}
	rmp_lifecycle_foreach(o->lc, collect_one, &f);
	if (f.nomem) {
		free(f.ids);
		adm_reply_error(c, ENOMEM, "out of memory listing the leases");
		return;
	}
	if (f.n) /* qsort(NULL, 0, ...) is undefined */
		qsort(f.ids, f.n, sizeof(*f.ids), cmp_u64);
	j = adm_ok_reply();
	adm_put(j, "stream", json_object_new_string("leases"));
	adm_put_u64(j, "total", f.n);
	if (adm_send_obj(c, j)) {
		free(f.ids);
		return;
	}
	/* An empty result still goes through the stream's end. */
	c->ids = f.ids ? f.ids : malloc(sizeof(*c->ids));
	c->nids = f.n;
	c->next = 0;
	c->sent = 0;
	if (!c->ids) {
		/* The stream has begun: no error line can follow it. */
		log_err("admin: %s: out of memory listing the leases: closing",
			c->who);
		c->closing = true;
		return;
	}
	adm_stream_leases(c);
}

void adm_cmd_show(struct admin_conn *c, json_object *req)
{
	const struct rmp_ops *o = c->a->ops;
	const struct rmp_lease *l;
	json_object *j;
	uint64_t id;

	if (get_id(c, req, "show", &id))
		return;
	l = rmp_lifecycle_find(o->lc, id);
	if (!l) {
		reply_no_lease(c, id);
		return;
	}
	j = adm_ok_reply();
	adm_put(j, "lease", adm_lease_json(o, l, true));
	adm_send_obj(c, j);
}

void adm_cmd_revoke(struct admin_conn *c, json_object *req)
{
	json_object *j;
	uint64_t id;

	if (get_id(c, req, "revoke", &id))
		return;
	if (rmp_ops_revoke(c->a->ops, id, c->who)) {
		reply_no_lease(c, id);
		return;
	}
	j = adm_ok_reply();
	adm_put_id(j, "id", id);
	adm_send_obj(c, j);
}

void adm_cmd_extend(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	const struct rmp_lease *l;
	uint64_t id, ttl;
	json_object *j;
	bool present;
	int ret;

	if (get_id(c, req, "extend", &id) ||
	    get_u64(c, req, "extend", "ttl_ms", true, &ttl, &present))
		return;
	ret = rmp_ops_extend(o, id, ttl, c->who);
	if (ret == -ENOENT) {
		reply_no_lease(c, id);
		return;
	}
	if (ret) {
		adm_reply_error(c, -ret, "ttl_ms %" PRIu64 " is out of range: "
			    "1 .. %" PRIu64 " ([lease] ttl_max)", ttl,
			    o->cfg->lease.ttl_max_ms);
		return;
	}
	l = rmp_lifecycle_find(o->lc, id);
	j = adm_ok_reply();
	if (l)
		adm_put(j, "lease", adm_lease_json(o, l, false));
	adm_send_obj(c, j);
}

void adm_cmd_clients(struct admin_conn *c, json_object *req)
{
	const struct rmp_ops *o = c->a->ops;
	json_object *j = adm_ok_reply(), *arr = json_object_new_array();
	const struct rmp_conn *cn;

	(void)req;
	TAILQ_FOREACH(cn, &o->conns->list, link) {
		json_object *x = adm_client_json(cn);

		if (arr)
			json_object_array_add(arr, x);
		else
			json_object_put(x);
	}
	adm_put(j, "clients", arr);
	adm_send_obj(c, j);
}

void adm_cmd_disconnect(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	const char *which;
	struct rmp_conn *cn;
	json_object *j;
	int err = 0;

	if (get_str(c, req, "disconnect", "client", true, &which))
		return;
	cn = rmp_ops_find_client(o, which, &err);
	if (!cn && err == -EEXIST) {
		adm_reply_error(c, EEXIST, "more than one client is called %s: "
			    "name it by number, #N (see rmpoolctl clients)",
			    which);
		return;
	}
	if (!cn) {
		adm_reply_error(c, ENOENT, "no client %s (see rmpoolctl clients)",
			    which);
		return;
	}
	/* Described before: it may be gone after. */
	j = adm_ok_reply();
	adm_put(j, "client", adm_client_json(cn));
	rmp_ops_disconnect(o, cn, c->who);
	adm_send_obj(c, j);
}

static void drain(struct admin_conn *c, bool on)
{
	json_object *j;

	if (rmp_ops_drain(c->a->ops, on, c->who)) {
		adm_reply_error(c, EBUSY, "the daemon is stopping: it cannot "
			    "take new leases again");
		return;
	}
	j = adm_ok_reply();
	adm_put_bool(j, "drained", on);
	adm_send_obj(c, j);
}

void adm_cmd_drain(struct admin_conn *c, json_object *req)
{
	(void)req;
	drain(c, true);
}

void adm_cmd_undrain(struct admin_conn *c, json_object *req)
{
	(void)req;
	drain(c, false);
}

void adm_cmd_reload(struct admin_conn *c, json_object *req)
{
	char msg[512] = "";
	json_object *j;
	int ret;

	(void)req;
	ret = rmp_ops_reload(c->a->ops, c->who, msg, sizeof(msg));
	if (ret) {
		adm_reply_error(c, -ret, "reload failed, nothing changed: %s",
			    msg[0] ? msg : strerror(-ret));
		return;
	}
	j = adm_ok_reply();
	adm_put_text(j, "message", msg);
	adm_send_obj(c, j);
}

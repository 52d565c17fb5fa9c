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
#include "log.h"
#include "ops.h"
#include "parse.h"
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

/* cluster_json -- the membership in etcd ({"state":"off"} without
 * [cluster] etcd); times as Unix seconds, 0 for never. */
static json_object *cluster_json(const struct rmp_cluster_status *cs)
{
	json_object *j = json_object_new_object();

	adm_put_text(j, "state", cs->enabled ? cs->state : "off");
	if (!cs->enabled)
		return j;
	adm_put_text(j, "node", cs->node);
	adm_put_bool(j, "registered", cs->registered);
	adm_put_i64(j, "registered_since", cs->registered && cs->registered_ms ?
		    adm_unix_s(cs->registered_ms) : 0);
	adm_put_i64(j, "last_keepalive", cs->keepalive_ms ?
		    adm_unix_s(cs->keepalive_ms) : 0);
	adm_put_text(j, "last_error", cs->error);
	adm_put_i64(j, "last_error_at", cs->error_ms ?
		    adm_unix_s(cs->error_ms) : 0);
	adm_put_u64(j, "errors", cs->errors);
	adm_put_u64(j, "outages", cs->outages);
	return j;
}

/* devices_json -- each device served and its pool. */
static json_object *devices_json(const struct rmp_status *st)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; a && i < st->ndevices; i++) {
		const struct rmp_device_status *d = &st->devices[i];
		json_object *j = json_object_new_object();

		adm_put_text(j, "name", d->name);
		adm_put_text(j, "address", d->addr);
		adm_put_u64(j, "port", d->port);
		adm_put_i64(j, "numa_node", d->numa_node);
		adm_put_u64(j, "pool_bytes", d->pool_bytes);
		adm_put_u64(j, "free_bytes", d->free_bytes);
		adm_put_u64(j, "largest_free", d->largest_free);
		adm_put_u64(j, "hugepage_size", d->hugepage_size);
		adm_put_u64(j, "clients", d->clients);
		adm_put_u64(j, "leases", d->leases);
		adm_put_u64(j, "leased_bytes", d->leased_bytes);
		adm_put_u64(j, "journal_records", d->journal_records);
		adm_put_u64(j, "recovered_leases", d->recovered);
		json_object_array_add(a, j);
	}
	return a;
}

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
	adm_put(j, "devices", devices_json(&st));
	adm_put(j, "cluster", cluster_json(&st.cluster));
	adm_send_obj(c, j);
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
		struct rmp_lease_view v;

		if (rmp_ops_lease_view(o, c->ids[c->next++], &v))
			continue;
		j = json_object_new_object();
		adm_put(j, "lease", adm_lease_json(o, &v, false));
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
	struct rmp_lease_query q = { 0 };
	uint64_t within, *ids;
	json_object *j;
	size_t n;
	int ret;

	if (get_str(c, req, "leases", "tenant", false, &q.tenant) ||
	    get_str(c, req, "leases", "client", false, &q.client) ||
	    get_u64(c, req, "leases", "expiring_within_ms", false, &within,
		    &q.expiring))
		return;
	if (q.expiring)
		q.before_ms = rmp_now_ms() + RMP_MIN(within, UINT64_MAX / 4);
	ret = rmp_ops_find_leases(o, &q, &ids, &n);
	if (ret == -ENOENT) {
		adm_reply_error(c, ENOENT, "no client %s%s (see rmpoolctl "
				"clients)", q.client[0] == '#' ? "" : "#",
				q.client);
		return;
	}
	if (ret) {
		adm_reply_error(c, ENOMEM, "out of memory listing the leases");
		return;
	}
	j = adm_ok_reply();
	adm_put(j, "stream", json_object_new_string("leases"));
	adm_put_u64(j, "total", n);
	if (adm_send_obj(c, j)) {
		free(ids);
		return;
	}
	/* An empty result still goes through the stream's end. */
	c->ids = ids;
	c->nids = n;
	c->next = 0;
	c->sent = 0;
	adm_stream_leases(c);
}

void adm_cmd_show(struct admin_conn *c, json_object *req)
{
	const struct rmp_ops *o = c->a->ops;
	struct rmp_lease_view v;
	json_object *j;
	uint64_t id;

	if (get_id(c, req, "show", &id))
		return;
	if (rmp_ops_lease_view(o, id, &v)) {
		reply_no_lease(c, id);
		return;
	}
	j = adm_ok_reply();
	adm_put(j, "lease", adm_lease_json(o, &v, true));
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
	struct rmp_lease_view v;
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
	j = adm_ok_reply();
	if (!rmp_ops_lease_view(o, id, &v))
		adm_put(j, "lease", adm_lease_json(o, &v, false));
	adm_send_obj(c, j);
}

void adm_cmd_clients(struct admin_conn *c, json_object *req)
{
	const struct rmp_ops *o = c->a->ops;
	json_object *j = adm_ok_reply(), *arr = json_object_new_array();
	const struct rmp_conn *cn = NULL;
	struct rmp_client_view v;

	(void)req;
	while ((cn = rmp_ops_next_client(o, cn, &v))) {
		json_object *x = adm_client_json(&v);

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
	struct rmp_client_view v;
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
	rmp_ops_client_view(cn, &v);
	adm_put(j, "client", adm_client_json(&v));
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

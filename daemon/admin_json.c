/* SPDX-License-Identifier: MIT */
/* admin_json.c -- JSON: replies, and what operators see of leases and
 * clients. */
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

/* -------------------------------------------------------- JSON helpers */

/* adm_put -- o[k] = v; tolerates an o that failed to allocate. */
void adm_put(json_object *o, const char *k, json_object *v)
{
	if (o)
		json_object_object_add(o, k, v);
	else
		json_object_put(v);
}

/*
 * adm_put_text -- o[k] = s as a JSON string, bytes outside printable ASCII
 * shown as '?': names come from clients, and the output must stay valid
 * UTF-8 whatever they sent.
 */
void adm_put_text(json_object *o, const char *k, const char *s)
{
	char buf[256];
	size_t i;

	for (i = 0; s && s[i] && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	adm_put(o, k, json_object_new_string(buf));
}

void adm_put_u64(json_object *o, const char *k, uint64_t v)
{
	adm_put(o, k, json_object_new_uint64(v));
}

void adm_put_i64(json_object *o, const char *k, int64_t v)
{
	adm_put(o, k, json_object_new_int64(v));
}

void adm_put_bool(json_object *o, const char *k, bool v)
{
	adm_put(o, k, json_object_new_boolean(v));
}

/* adm_put_id -- a lease id as rmpool prints it: 16 hex digits. */
void adm_put_id(json_object *o, const char *k, uint64_t id)
{
	char buf[17];

	snprintf(buf, sizeof(buf), "%016" PRIx64, id);
	adm_put(o, k, json_object_new_string(buf));
}

/* put_access -- RMP_ACC_* as ["read", "write", "atomic"]. */
static void put_access(json_object *o, const char *k, uint32_t acc)
{
	json_object *arr = json_object_new_array();

	if (arr && (acc & RMP_ACC_READ))
		json_object_array_add(arr, json_object_new_string("read"));
	if (arr && (acc & RMP_ACC_WRITE))
		json_object_array_add(arr, json_object_new_string("write"));
	if (arr && (acc & RMP_ACC_ATOMIC))
		json_object_array_add(arr, json_object_new_string("atomic"));
	adm_put(o, k, arr);
}

/* ------------------------------------------------------------ replies */

/* adm_send_obj -- o as one line to the peer; takes o. 0, or -ENOMEM (then
 * the connection is closing: it would miss a reply). */
int adm_send_obj(struct admin_conn *c, json_object *o)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	const char *s = NULL;
	size_t len = 0;

	if (o)
		s = json_object_to_json_string_length(o,
			JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
			&len);
	if (!s || evbuffer_add(out, s, len) || evbuffer_add(out, "\n", 1)) {
		log_err("admin: %s: out of memory for a reply: closing",
			c->who);
		json_object_put(o);
		c->closing = true;
		return -ENOMEM;
	}
	json_object_put(o);
	return 0;
}

/* adm_ok_reply -- a new {"ok": true} to add fields to. */
json_object *adm_ok_reply(void)
{
	json_object *o = json_object_new_object();

	adm_put_bool(o, "ok", true);
	return o;
}

/* adm_reply_error -- {"ok": false, "error": "...", "errno": "EXXX"}. */
void adm_reply_error(struct admin_conn *c, int err, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	const char *name = strerrorname_np(err);
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	adm_put_bool(o, "ok", false);
	adm_put_text(o, "error", msg);
	adm_put(o, "errno", json_object_new_string(name ? name : "EIO"));
	adm_send_obj(c, o);
}

/* ------------------------------------------------------------- clocks */

static uint64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* adm_unix_s -- the wall-clock second of monotonic millisecond t. */
int64_t adm_unix_s(uint64_t t)
{
	int64_t d = (int64_t)t - (int64_t)rmp_now_ms();

	return ((int64_t)realtime_ms() + d) / 1000;
}

/* ----------------------------------------------------------- objects */

static const char *conn_state(enum rmp_conn_state s)
{
	switch (s) {
	case RMP_CONN_ACCEPTING:
		return "accepting";
	case RMP_CONN_ESTABLISHED:
		return "established";
	case RMP_CONN_CLOSING:
		return "closing";
	}
	return "?";
}

/* conn_of -- the connection whose holder h is (every holder is one). */
static const struct rmp_conn *conn_of(const struct rmp_ops *o,
				      const struct rmp_holder *h)
{
	const struct rmp_conn *c;

	TAILQ_FOREACH(c, &o->conns->list, link)
		if (&c->holder == h)
			return c;
	return NULL;
}

/* adm_lease_json -- what an operator sees of l; with detail, its holders. */
json_object *adm_lease_json(const struct rmp_ops *o,
			       const struct rmp_lease *l, bool detail)
{
	uint64_t now = rmp_now_ms(), addr = rmp_ops_lease_addr(o, l);
	json_object *j = json_object_new_object();

	adm_put_id(j, "id", l->id);
	adm_put_text(j, "tenant", l->tenant ? l->tenant->name : "");
	adm_put_text(j, "owner", l->owner);
	adm_put_u64(j, "bytes", l->ext.length);
	adm_put_u64(j, "offset", l->ext.offset);
	adm_put_u64(j, "addr", addr);
	adm_put_u64(j, "end", addr + l->ext.length);
	put_access(j, "access", l->access);
	adm_put_u64(j, "keys", l->nkeys);
	adm_put(j, "keys_mode", json_object_new_string(
		rmp_keys_mode_name(o->keys_mode)));
	adm_put(j, "state", json_object_new_string(rmp_lease_state_name(l->state)));
	adm_put_u64(j, "ttl_ms", l->ttl_ms);
	adm_put_u64(j, "ttl_left_ms", l->deadline_ms > now ?
		l->deadline_ms - now : 0);
	adm_put_i64(j, "deadline", adm_unix_s(l->deadline_ms));
	adm_put_i64(j, "created", adm_unix_s(l->created_ms));
	adm_put_u64(j, "age_ms", now > l->created_ms ? now - l->created_ms : 0);
	adm_put_bool(j, "auto_renew", l->flags & RMP_LEASE_F_AUTO_RENEW);
	adm_put_bool(j, "ephemeral", l->flags & RMP_LEASE_F_EPHEMERAL);
	if (detail) {
		json_object *arr = json_object_new_array();
		const struct rmp_key *k;

		TAILQ_FOREACH(k, &l->keys, lease_link) {
			const struct rmp_conn *c = conn_of(o, k->holder);
			json_object *h = json_object_new_object();

			adm_put_u64(h, "client", c ? c->serial : 0);
			adm_put_text(h, "name", k->holder->name);
			adm_put_text(h, "peer", k->holder->peer);
			put_access(h, "access", k->access);
			adm_put(h, "key", json_object_new_string(
				rmp_key_state_name(k->state)));
			adm_put_bool(h, "owner", k->holder == l->owner_holder);
			if (arr)
				json_object_array_add(arr, h);
			else
				json_object_put(h);
		}
		adm_put(j, "holders", arr);
	}
	return j;
}

json_object *adm_client_json(const struct rmp_conn *c)
{
	const struct rmp_tenant *t = c->holder.tenant;
	uint64_t now = rmp_now_ms(), leases, bytes;
	json_object *j = json_object_new_object();

	rmp_ops_client_usage(c, &leases, &bytes);
	adm_put_u64(j, "client", c->serial);
	adm_put_text(j, "name", c->name);
	/* Until it has proved its key, the tenant it named. */
	adm_put_text(j, "tenant", t ? t->name :
		 c->auth.tenant ? c->auth.tenant->name : "");
	adm_put_bool(j, "authenticated", t != NULL);
	adm_put_text(j, "peer", c->peer);
	adm_put(j, "state", json_object_new_string(conn_state(c->state)));
	adm_put_i64(j, "connected_since", adm_unix_s(c->accepted_ms));
	adm_put_u64(j, "connected_ms", now > c->accepted_ms ?
		now - c->accepted_ms : 0);
	adm_put_u64(j, "leases", leases);
	adm_put_u64(j, "bytes", bytes);
	adm_put_u64(j, "requests", c->requests);
	adm_put_u64(j, "errors", c->errors);
	return j;
}

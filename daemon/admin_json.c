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
#include "log.h"
#include "ops.h"
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

/* adm_lease_json -- what an operator sees of v's lease; with detail, its
 * holders. */
json_object *adm_lease_json(const struct rmp_ops *o,
			    const struct rmp_lease_view *v, bool detail)
{
	uint64_t now = rmp_now_ms();
	json_object *j = json_object_new_object();

	adm_put_id(j, "id", v->id);
	adm_put_text(j, "tenant", v->tenant);
	adm_put_text(j, "owner", v->owner);
	adm_put_u64(j, "bytes", v->bytes);
	adm_put_u64(j, "offset", v->offset);
	adm_put_text(j, "device", v->device);
	adm_put_i64(j, "numa_node", v->numa_node);
	adm_put_bool(j, "spilled", v->spilled);
	adm_put_u64(j, "addr", v->addr);
	adm_put_u64(j, "end", v->addr + v->bytes);
	put_access(j, "access", v->access);
	adm_put_u64(j, "keys", v->keys);
	adm_put(j, "keys_mode", json_object_new_string(v->keys_mode));
	adm_put(j, "state", json_object_new_string(v->state));
	adm_put_u64(j, "ttl_ms", v->ttl_ms);
	adm_put_u64(j, "ttl_left_ms", v->deadline_ms > now ?
		v->deadline_ms - now : 0);
	adm_put_i64(j, "deadline", adm_unix_s(v->deadline_ms));
	adm_put_i64(j, "created", adm_unix_s(v->created_ms));
	adm_put_u64(j, "age_ms", now > v->created_ms ? now - v->created_ms : 0);
	adm_put_bool(j, "auto_renew", v->auto_renew);
	adm_put_bool(j, "ephemeral", v->ephemeral);
	if (detail) {
		json_object *arr = json_object_new_array();
		const struct rmp_key *k = NULL;
		struct rmp_holder_view hv;

		while ((k = rmp_ops_next_holder(o, v, k, &hv))) {
			json_object *h = json_object_new_object();

			adm_put_u64(h, "client", hv.client);
			adm_put_text(h, "name", hv.name);
			adm_put_text(h, "peer", hv.peer);
			put_access(h, "access", hv.access);
			adm_put(h, "key", json_object_new_string(hv.key_state));
			adm_put_bool(h, "owner", hv.owner);
			if (arr)
				json_object_array_add(arr, h);
			else
				json_object_put(h);
		}
		adm_put(j, "holders", arr);
	}
	return j;
}

json_object *adm_client_json(const struct rmp_client_view *v)
{
	uint64_t now = rmp_now_ms();
	json_object *j = json_object_new_object();

	adm_put_u64(j, "client", v->serial);
	adm_put_text(j, "name", v->name);
	adm_put_text(j, "tenant", v->tenant);
	adm_put_bool(j, "authenticated", v->authenticated);
	adm_put_text(j, "peer", v->peer);
	adm_put(j, "state", json_object_new_string(v->state));
	adm_put_i64(j, "connected_since", adm_unix_s(v->accepted_ms));
	adm_put_u64(j, "connected_ms", now > v->accepted_ms ?
		now - v->accepted_ms : 0);
	adm_put_u64(j, "leases", v->leases);
	adm_put_u64(j, "bytes", v->bytes);
	adm_put_u64(j, "requests", v->requests);
	adm_put_u64(j, "errors", v->errors);
	return j;
}

/* SPDX-License-Identifier: MIT */
/*
 * etcd_reply.c -- what etcd's JSON gateway answers, read into a struct
 * rmp_etcd_reply: numbers that come as strings, keys and values in
 * base64, errors in two shapes (a unary call's {"error": "...", "code":
 * N} and a stream's {"error": {"grpc_code": N, "message": "..."}}).
 * Nothing of the body is trusted: it is fuzzed (tests/fuzz/fuzz_etcd.c).
 */
#include "etcd_reply.h"

#include <errno.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* gRPC codes etcd answers with (google.golang.org/grpc/codes). */
#define GRPC_INVALID_ARGUMENT 3
#define GRPC_NOT_FOUND 5
#define GRPC_PERMISSION_DENIED 7
#define GRPC_UNAVAILABLE 14
#define GRPC_UNAUTHENTICATED 16

static const char *const op_names[RMP_ETCD_OPS] = {
	[RMP_ETCD_PUT] = "put",
	[RMP_ETCD_RANGE] = "range",
	[RMP_ETCD_TXN] = "txn",
	[RMP_ETCD_DELETE] = "deleterange",
	[RMP_ETCD_GRANT] = "lease grant",
	[RMP_ETCD_KEEPALIVE] = "lease keepalive",
	[RMP_ETCD_REVOKE] = "lease revoke",
	[RMP_ETCD_AUTH] = "authenticate",
	[RMP_ETCD_WATCH] = "watch",
};

const char *rmp_etcd_op_name(enum rmp_etcd_op op)
{
	return (unsigned)op < RMP_ETCD_OPS ? op_names[op] : "?";
}

void rmp_etcd_reply_clear(struct rmp_etcd_reply *r)
{
	free(r->kvs);
	free(r->mem);
	memset(r, 0, sizeof(*r));
}

/* get_i64 -- o's member name as a 64-bit integer (a string of digits, as
 * the gateway writes them, or a JSON number); absent is 0. false when it
 * is there but no such number. */
static bool get_i64(json_object *o, const char *name, int64_t *out)
{
	json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, name, &v) || !v)
		return true;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (!json_object_is_type(v, json_type_string))
		return false;
	return !rmp_parse_i64(json_object_get_string(v), out);
}

/* get_obj -- o's member name if it is an object, else NULL. */
static json_object *get_obj(json_object *o, const char *name)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, name, &v) &&
	    json_object_is_type(v, json_type_object))
		return v;
	return NULL;
}

/* fail -- r says err, with a message. */
static int fail(struct rmp_etcd_reply *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct rmp_etcd_reply *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

/* err_of_code -- the errno a gRPC code of etcd's stands for. */
static int err_of_code(int code, int status)
{
	switch (code) {
	case GRPC_NOT_FOUND:
		return -ENOENT;
	case GRPC_PERMISSION_DENIED:
	case GRPC_UNAUTHENTICATED:
		return -EACCES;
	case GRPC_UNAVAILABLE:
		return -ECONNREFUSED;
	case GRPC_INVALID_ARGUMENT:
		return status == 401 ? -EACCES : -EIO;
	default:
		return status == 401 || status == 403 ? -EACCES :
		       status == 503 ? -ECONNREFUSED : -EIO;
	}
}

/* read_error -- the error o holds, if any, into r: true when one. A
 * printable copy of the message only: it goes to the log. */
static bool read_error(json_object *o, int status, struct rmp_etcd_reply *r)
{
	json_object *e, *m = NULL;
	int64_t code = 0;
	char text[160];
	size_t i;

	if (!json_object_object_get_ex(o, "error", &e) || !e)
		return false;
	if (json_object_is_type(e, json_type_object)) {
		if (!get_i64(e, "grpc_code", &code))
			code = 0;
		json_object_object_get_ex(e, "message", &m);
	} else {
		if (!get_i64(o, "code", &code))
			code = 0;
		if (!json_object_object_get_ex(o, "message", &m))
			m = e;
	}
	snprintf(text, sizeof(text), "%s", m && json_object_is_type(m,
		 json_type_string) ? json_object_get_string(m) : "(no message)");
	for (i = 0; text[i]; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			text[i] = '?';
	r->code = code > 0 && code < 100 ? (int)code : 0;
	fail(r, err_of_code(r->code, status), "etcd: %s", text);
	return true;
}

/* unbase64 -- the base64 text s (or "" when absent) decoded into the
 * reply's memory at *used; *out points at it, NUL-terminated. */
static bool unbase64(json_object *kv, const char *name, char *mem,
		     size_t cap, size_t *used, const char **out, size_t *len)
{
	json_object *v;
	const char *s = "";
	size_t n = 0;

	if (json_object_object_get_ex(kv, name, &v) && v) {
		if (!json_object_is_type(v, json_type_string))
			return false;
		s = json_object_get_string(v);
	}
	if (sodium_base642bin((unsigned char *)mem + *used, cap - *used - 1,
			      s, strlen(s), NULL, &n, NULL,
			      sodium_base64_VARIANT_ORIGINAL))
		return false;
	mem[*used + n] = '\0';
	*out = mem + *used;
	*len = n;
	*used += n + 1;
	return true;
}

/* read_kv -- one key-value object kv into k, its bytes into r->mem. */
static bool read_kv(json_object *kv, size_t cap, size_t *used,
		    struct rmp_etcd_reply *r, struct rmp_etcd_kv *k)
{
	return kv && json_object_is_type(kv, json_type_object) &&
	       unbase64(kv, "key", r->mem, cap, used, &k->key, &k->key_len) &&
	       unbase64(kv, "value", r->mem, cap, used, &k->value,
			&k->value_len) &&
	       get_i64(kv, "create_revision", &k->create_revision) &&
	       get_i64(kv, "mod_revision", &k->mod_revision) &&
	       get_i64(kv, "version", &k->version) &&
	       get_i64(kv, "lease", &k->lease);
}

/* read_event -- one watch event ev ({"type": "DELETE"?, "kv": {...}})
 * into k. */
static bool read_event(json_object *ev, size_t cap, size_t *used,
		       struct rmp_etcd_reply *r, struct rmp_etcd_kv *k)
{
	json_object *t;

	if (!ev || !json_object_is_type(ev, json_type_object))
		return false;
	/* PUT is the enum's zero: the gateway leaves it out */
	if (json_object_object_get_ex(ev, "type", &t) && t) {
		if (!json_object_is_type(t, json_type_string))
			return false;
		if (!strcmp(json_object_get_string(t), "DELETE"))
			k->deleted = true;
		else if (strcmp(json_object_get_string(t), "PUT"))
			return false;
	}
	return read_kv(get_obj(ev, "kv"), cap, used, r, k);
}

/* read_kvs -- the array name of o ("kvs" of a range, "events" of a
 * watch) into r (at most RMP_ETCD_KVS_MAX). */
static int read_kvs(json_object *o, const char *name, size_t body_len,
		    struct rmp_etcd_reply *r)
{
	bool events = !strcmp(name, "events");
	json_object *kvs;
	size_t n, used = 0, cap;

	if (!json_object_object_get_ex(o, name, &kvs) || !kvs)
		return 0;
	if (!json_object_is_type(kvs, json_type_array))
		return fail(r, -EPROTO, "etcd: %s is not an array", name);
	n = json_object_array_length(kvs);
	if (n > RMP_ETCD_KVS_MAX)
		n = RMP_ETCD_KVS_MAX;
	if (!n)
		return 0;
	/* decoded bytes are fewer than the body's, plus two NULs each */
	cap = body_len + 2 * n + 1;
	r->mem = malloc(cap);
	r->kvs = calloc(n, sizeof(*r->kvs));
	if (!r->mem || !r->kvs)
		return fail(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *kv = json_object_array_get_idx(kvs, i);
		struct rmp_etcd_kv *k = &r->kvs[i];

		if (events ? !read_event(kv, cap, &used, r, k) :
			     !read_kv(kv, cap, &used, r, k))
			return fail(r, -EPROTO, "etcd: a key-value pair that "
				    "does not decode");
		r->nkvs++;
	}
	return 0;
}

/* read_watch -- a watch message: created, canceled, its events. */
static int read_watch(json_object *o, size_t len, struct rmp_etcd_reply *r)
{
	json_object *v;

	if (json_object_object_get_ex(o, "created", &v) && v)
		r->created = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "canceled", &v) && v)
		r->canceled = json_object_get_boolean(v);
	if (!get_i64(o, "compact_revision", &r->compact_revision))
		return fail(r, -EPROTO, "etcd: compact_revision is not a "
			    "number");
	if (r->canceled) {
		char why[121] = "";

		/* a printable copy only: it goes to the log */
		if (json_object_object_get_ex(o, "cancel_reason", &v) && v &&
		    json_object_is_type(v, json_type_string))
			snprintf(why, sizeof(why), "%s", json_object_get_string(v));
		for (size_t i = 0; why[i]; i++)
			if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
				why[i] = '?';
		return fail(r, r->compact_revision > 0 ? -ESTALE : -EIO,
			    "etcd: the watch was canceled%s%s",
			    why[0] ? ": " : "", why);
	}
	return read_kvs(o, "events", len, r);
}

/* read_txn -- succeeded, and the kvs of a range among its responses. */
static int read_txn(json_object *o, size_t len, struct rmp_etcd_reply *r)
{
	json_object *v, *resps;

	if (json_object_object_get_ex(o, "succeeded", &v) && v) {
		if (!json_object_is_type(v, json_type_boolean))
			return fail(r, -EPROTO, "etcd: succeeded is not a "
				    "boolean");
		r->succeeded = json_object_get_boolean(v);
	}
	if (!json_object_object_get_ex(o, "responses", &resps) || !resps)
		return 0;
	if (!json_object_is_type(resps, json_type_array))
		return fail(r, -EPROTO, "etcd: responses is not an array");
	for (size_t i = 0; i < json_object_array_length(resps); i++) {
		json_object *range = get_obj(json_object_array_get_idx(resps, i),
					     "response_range");

		if (range)
			return read_kvs(range, "kvs", len, r);
	}
	return 0;
}

/* read_op -- the fields of op from a 200 answer's object o. */
static int read_op(enum rmp_etcd_op op, json_object *o, size_t len,
		   struct rmp_etcd_reply *r)
{
	json_object *v;

	if (!get_i64(get_obj(o, "header"), "revision", &r->revision))
		return fail(r, -EPROTO, "etcd: header.revision is not a number");
	switch (op) {
	case RMP_ETCD_RANGE:
		if (!get_i64(o, "count", &r->count))
			return fail(r, -EPROTO, "etcd: count is not a number");
		return read_kvs(o, "kvs", len, r);
	case RMP_ETCD_WATCH:
		return read_watch(o, len, r);
	case RMP_ETCD_TXN:
		return read_txn(o, len, r);
	case RMP_ETCD_DELETE:
		if (!get_i64(o, "deleted", &r->deleted))
			return fail(r, -EPROTO, "etcd: deleted is not a number");
		return 0;
	case RMP_ETCD_GRANT:
	case RMP_ETCD_KEEPALIVE:
		if (!get_i64(o, "ID", &r->id) || !get_i64(o, "TTL", &r->ttl))
			return fail(r, -EPROTO, "etcd: ID or TTL is not a "
				    "number");
		/* no lease is 0: a key put under 0 would never expire */
		if (r->id <= 0)
			return fail(r, -EPROTO, "etcd: lease ID %lld is no "
				    "lease", (long long)r->id);
		if (r->ttl <= 0)
			return fail(r, -ENOENT, "etcd: lease %lld is gone (its "
				    "TTL ran out)", (long long)r->id);
		return 0;
	case RMP_ETCD_AUTH:
		if (!json_object_object_get_ex(o, "token", &v) || !v ||
		    !json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) >= (int)sizeof(r->token))
			return fail(r, -EPROTO, "etcd: no usable token");
		memcpy(r->token, json_object_get_string(v),
		       (size_t)json_object_get_string_len(v) + 1);
		return 0;
	default:
		return 0;
	}
}

int rmp_etcd_parse(enum rmp_etcd_op op, int status, const char *body,
		   size_t len, struct rmp_etcd_reply *r)
{
	json_tokener *tok;
	json_object *o, *res;
	int ret;

	memset(r, 0, sizeof(*r));
	r->op = op;
	r->status = status;
	if (len > RMP_ETCD_BODY_MAX || len > INT32_MAX)
		return fail(r, -EPROTO, "etcd: answer too long");
	tok = json_tokener_new();
	if (!tok)
		return fail(r, -ENOMEM, "out of memory");
	o = json_tokener_parse_ex(tok, body, (int)len);
	/* a stream's answer may hold more objects after the first */
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		if (status != 200)
			return fail(r, status == 503 ? -ECONNREFUSED : -EIO,
				    "HTTP status %d", status);
		return fail(r, -EPROTO, "etcd: the answer is not a JSON "
			    "object");
	}
	/* a stream's messages come wrapped: {"result": {...}} */
	res = get_obj(o, "result");
	if (read_error(o, status, r) || (res && read_error(res, status, r))) {
		/* a wrong password is "invalid argument" to etcd */
		if (op == RMP_ETCD_AUTH && r->err == -EIO)
			r->err = -EACCES;
		ret = r->err;
	} else if (status != 200) {
		ret = fail(r, err_of_code(0, status), "HTTP status %d", status);
	} else {
		ret = read_op(op, res ? res : o, len, r);
	}
	json_object_put(o);
	return ret;
}

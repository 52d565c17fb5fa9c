/* SPDX-License-Identifier: MIT */
/*
 * member.c -- a node's record in etcd, written by its daemon and read by
 * the library: one encoder and one decoder, so the two never disagree.
 * The decoder takes etcd's bytes as untrusted input (fuzz_etcd runs it).
 */
#include "member.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "parse.h"
#include "util.h"

/* Longest record read (a full one is about 2 KiB). */
#define RECORD_MAX 16384

static void put_u64(json_object *o, const char *name, uint64_t v)
{
	json_object_object_add(o, name, json_object_new_int64((int64_t)v));
}

static void put_str(json_object *o, const char *name, const char *v)
{
	json_object_object_add(o, name, json_object_new_string(v));
}

/* devices_json -- m's devices as a JSON array (NULL: no memory). */
static json_object *devices_json(const struct rmp_member *m)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; a && i < m->ndevices; i++) {
		const struct rmp_member_device *d = &m->devices[i];
		json_object *o = json_object_new_object();

		if (!o || json_object_array_add(a, o)) {
			json_object_put(o);
			json_object_put(a);
			return NULL;
		}
		put_str(o, "name", d->name);
		json_object_object_add(o, "numa_node",
				       json_object_new_int(d->numa_node));
		put_str(o, "address", d->addr);
		put_u64(o, "pool_bytes", d->pool_bytes);
		put_u64(o, "free_bytes", d->free_bytes);
		put_u64(o, "largest_free", d->largest_free);
	}
	return a;
}

char *rmp_member_encode(const struct rmp_member *m)
{
	json_object *o = json_object_new_object(), *a, *l, *d;
	char *text = NULL;

	if (!o)
		return NULL;
	put_str(o, "node", m->node);
	a = json_object_new_array();
	for (unsigned i = 0; a && i < m->naddrs; i++)
		json_object_array_add(a, json_object_new_string(m->addrs[i]));
	json_object_object_add(o, "addresses", a);
	put_u64(o, "port", m->port);
	put_str(o, "device", m->device);
	json_object_object_add(o, "numa_node", json_object_new_int(m->numa_node));
	put_str(o, "keys_mode", m->keys_mode);
	put_u64(o, "pool_bytes", m->pool_bytes);
	put_u64(o, "free_bytes", m->free_bytes);
	put_u64(o, "largest_free", m->largest_free);
	d = devices_json(m);
	json_object_object_add(o, "devices", d);
	json_object_object_add(o, "draining",
			       json_object_new_boolean(m->draining));
	put_str(o, "version", m->version);
	l = json_object_new_object();
	for (unsigned i = 0; l && i < m->nlabels; i++)
		put_str(l, m->labels[i].name, m->labels[i].value);
	json_object_object_add(o, "labels", l);
	json_object_object_add(o, "registered",
			       json_object_new_int64(m->registered));
	json_object_object_add(o, "updated", json_object_new_int64(m->updated));
	if (a && l && d) {
		const char *s = json_object_to_json_string_ext(o,
						JSON_C_TO_STRING_PLAIN);

		text = s ? strdup(s) : NULL;
	}
	json_object_put(o);
	return text;
}

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* get_u64 -- o's field name as a number 0..max (absent: false). */
static bool get_u64(json_object *o, const char *name, uint64_t max,
		    uint64_t *out)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, name, &v) || !v ||
	    !json_object_is_type(v, json_type_int))
		return false;
	errno = 0;
	n = json_object_get_int64(v);
	if (errno || n < 0 || (uint64_t)n > max)
		return false;
	*out = (uint64_t)n;
	return true;
}

/* get_str -- o's field name as text of fewer than cap bytes, no control
 * characters (absent: ""; wrong type or too long: false). */
static bool get_str(json_object *o, const char *name, char *out, size_t cap)
{
	json_object *v;
	const char *s;
	size_t n;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, name, &v) || !v)
		return true;
	if (!json_object_is_type(v, json_type_string))
		return false;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	memcpy(out, s, n + 1);
	return true;
}

/* read_addresses -- the "addresses" array: 1.. numeric addresses. */
static int read_addresses(json_object *o, struct rmp_member *m, char *err,
			  size_t errlen)
{
	json_object *a;
	size_t n;

	if (!json_object_object_get_ex(o, "addresses", &a) || !a ||
	    !json_object_is_type(a, json_type_array) ||
	    !(n = json_object_array_length(a)) || n > RMP_MEMBER_ADDRS_MAX)
		return bad(err, errlen, "addresses: not a list of 1 to %d",
			   RMP_MEMBER_ADDRS_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(a, i);
		const char *s = v && json_object_is_type(v, json_type_string) ?
				json_object_get_string(v) : NULL;
		int family;

		if (!s || strlen(s) >= RMP_MEMBER_ADDR_LEN ||
		    rmp_parse_addr(s, &family))
			return bad(err, errlen, "addresses: entry %zu is not "
				   "a numeric address", i);
		memcpy(m->addrs[m->naddrs++], s, strlen(s) + 1);
	}
	return 0;
}

/* read_device -- one entry of "devices" into d. */
static int read_device(json_object *v, struct rmp_member_device *d,
		       size_t i, char *err, size_t errlen)
{
	uint64_t numa = 0;
	int family;

	if (!v || !json_object_is_type(v, json_type_object) ||
	    !get_str(v, "name", d->name, sizeof(d->name)) || !d->name[0] ||
	    !get_str(v, "address", d->addr, sizeof(d->addr)) ||
	    (d->addr[0] && rmp_parse_addr(d->addr, &family)))
		return bad(err, errlen, "devices: entry %zu has no name, or "
			   "an address that is not numeric", i);
	if (!get_u64(v, "pool_bytes", INT64_MAX, &d->pool_bytes) ||
	    !get_u64(v, "free_bytes", d->pool_bytes, &d->free_bytes) ||
	    !get_u64(v, "largest_free", d->free_bytes, &d->largest_free))
		return bad(err, errlen, "devices: entry %zu: not figures with "
			   "largest <= free <= pool", i);
	d->numa_node = get_u64(v, "numa_node", 4096, &numa) ? (int)numa : -1;
	return 0;
}

/* read_devices -- the "devices" array, if any: up to
 * RMP_MEMBER_DEVICES_MAX devices. */
static int read_devices(json_object *o, struct rmp_member *m, char *err,
			size_t errlen)
{
	json_object *a;
	size_t n;
	int ret;

	if (!json_object_object_get_ex(o, "devices", &a) || !a)
		return 0; /* an older daemon's record */
	if (!json_object_is_type(a, json_type_array) ||
	    (n = json_object_array_length(a)) > RMP_MEMBER_DEVICES_MAX)
		return bad(err, errlen, "devices: not a list of at most %d",
			   RMP_MEMBER_DEVICES_MAX);
	for (size_t i = 0; i < n; i++) {
		ret = read_device(json_object_array_get_idx(a, i),
				  &m->devices[i], i, err, errlen);
		if (ret)
			return ret;
		m->ndevices++;
	}
	return 0;
}

/* read_labels -- the "labels" object: NAME: VALUE pairs by the grammar. */
static int read_labels(json_object *o, struct rmp_member *m, char *err,
		       size_t errlen)
{
	json_object *l;
	/* each "NAME=VALUE " at most 2 * (LABEL_LEN - 1) + 2 bytes */
	char list[RMP_CLUSTER_LABELS_MAX * 2 * RMP_CLUSTER_LABEL_LEN + 1];
	char why[160];
	size_t used = 0;

	if (!json_object_object_get_ex(o, "labels", &l) || !l)
		return 0;
	if (!json_object_is_type(l, json_type_object) ||
	    json_object_object_length(l) > RMP_CLUSTER_LABELS_MAX)
		return bad(err, errlen, "labels: not an object of at most %d",
			   RMP_CLUSTER_LABELS_MAX);
	/* as "NAME=VALUE ..." text: the one grammar decides */
	list[0] = '\0';
	json_object_object_foreach(l, name, v) {
		const char *s = json_object_is_type(v, json_type_string) ?
				json_object_get_string(v) : NULL;
		int w;

		if (!s || strchr(name, ' ') || strchr(s, ' ') ||
		    strlen(name) >= RMP_CLUSTER_LABEL_LEN ||
		    strlen(s) >= RMP_CLUSTER_LABEL_LEN)
			return bad(err, errlen, "labels: a label that is not "
				   "NAME: VALUE");
		w = snprintf(list + used, sizeof(list) - used, "%s=%s ",
			     name, s);
		used += (size_t)w;
	}
	if (rmp_cluster_labels(list, m->labels, &m->nlabels, why, sizeof(why)))
		return bad(err, errlen, "labels: %s", why);
	return 0;
}

/* read_fields -- every field of the record object o into m. */
static int read_fields(json_object *o, struct rmp_member *m, char *err,
		       size_t errlen)
{
	uint64_t port = 0, numa = 0, t;
	json_object *v;
	int ret;

	if (!get_str(o, "node", m->node, sizeof(m->node)) ||
	    !rmp_cluster_node_ok(m->node))
		return bad(err, errlen, "node: not a node name");
	ret = read_addresses(o, m, err, errlen);
	if (ret)
		return ret;
	if (!get_u64(o, "port", UINT16_MAX, &port) || !port)
		return bad(err, errlen, "port: not 1..65535");
	m->port = (uint16_t)port;
	if (!get_u64(o, "pool_bytes", INT64_MAX, &m->pool_bytes) ||
	    !get_u64(o, "free_bytes", m->pool_bytes, &m->free_bytes) ||
	    !get_u64(o, "largest_free", m->free_bytes, &m->largest_free))
		return bad(err, errlen, "pool_bytes, free_bytes, largest_free: "
			   "not figures with largest <= free <= pool");
	if (!get_str(o, "device", m->device, sizeof(m->device)) ||
	    !get_str(o, "keys_mode", m->keys_mode, sizeof(m->keys_mode)) ||
	    !get_str(o, "version", m->version, sizeof(m->version)))
		return bad(err, errlen, "device, keys_mode, version: not short "
			   "text");
	m->numa_node = get_u64(o, "numa_node", 4096, &numa) ? (int)numa : -1;
	if (json_object_object_get_ex(o, "draining", &v) && v) {
		if (!json_object_is_type(v, json_type_boolean))
			return bad(err, errlen, "draining: not true or false");
		m->draining = json_object_get_boolean(v);
	}
	if (get_u64(o, "registered", INT64_MAX, &t))
		m->registered = (int64_t)t;
	if (get_u64(o, "updated", INT64_MAX, &t))
		m->updated = (int64_t)t;
	ret = read_devices(o, m, err, errlen);
	if (ret)
		return ret;
	return read_labels(o, m, err, errlen);
}

int rmp_member_decode(const char *text, size_t len, struct rmp_member *m,
		      char *err, size_t errlen)
{
	json_tokener *tok;
	json_object *o;
	size_t end;
	int ret;

	memset(m, 0, sizeof(*m));
	if (len > RECORD_MAX)
		return bad(err, errlen, "longer than %d bytes", RECORD_MAX);
	tok = json_tokener_new();
	if (!tok)
		return bad(err, errlen, "out of memory");
	o = json_tokener_parse_ex(tok, text, (int)len);
	/* the whole text (blanks after it aside), not an object and more */
	end = json_tokener_get_parse_end(tok);
	while (end < len && text[end] && strchr(" \t\r\n", text[end]))
		end++;
	if (o && end != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return bad(err, errlen, "not a JSON object");
	}
	ret = read_fields(o, m, err, errlen);
	json_object_put(o);
	if (ret)
		memset(m, 0, sizeof(*m));
	return ret;
}

const char *rmp_member_label(const struct rmp_member *m, const char *name)
{
	for (unsigned i = 0; i < m->nlabels; i++)
		if (!strcmp(m->labels[i].name, name))
			return m->labels[i].value;
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * lease_record.c -- a cluster lease's record as JSON text: one encoder
 * and one decoder with one set of rules (record_ok), so what one library
 * writes another reads. The decoder takes its text as untrusted input
 * (fuzz_token runs it): anyone holding the cluster token can write it.
 */
#include "lease_record.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The record's fields, in the order the encoder writes them. */
static const char *const fields[] = {
	"length", "stripe_unit", "stripes", "replicas", "epoch",
	"repair_until_ms", "spread", "members", "stale", "ec_data",
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static void say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static bool power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* same_server -- do a and b name one server? Host names compare without
 * case, as DNS does; other spellings of one address are not seen here. */
static bool same_server(const struct rmp_token *a, const struct rmp_token *b)
{
	return a->port == b->port && !strcasecmp(a->host, b->host);
}

/* members_ok -- each member a token that formats; the replicas of a
 * stripe on distinct servers; no lease (server and ID) listed twice, as
 * two stripes on the same remote bytes would overwrite each other. */
static bool members_ok(const struct rmp_lease_record *r, char *why,
		       size_t why_len)
{
	unsigned n = r->stripes * r->replicas;
	char text[RMP_TOKEN_MAX];

	for (unsigned i = 0; i < n; i++) {
		const struct rmp_token *a = &r->member[i];

		if (rmp_token_format(a, text, sizeof(text)) < 0) {
			say(why, why_len, "members: entry %u is not a token", i);
			return false;
		}
		for (unsigned k = 0; k < i; k++) {
			const struct rmp_token *b = &r->member[k];

			if (same_server(a, b) && a->id == b->id) {
				say(why, why_len, "members: entries %u and %u "
				    "are one lease", k, i);
				return false;
			}
			if (same_server(a, b) && r->ec_data) {
				say(why, why_len, "members: %u and %u of an "
				    "erasure-coded lease on one server", k, i);
				return false;
			}
			if (same_server(a, b) &&
			    k / r->replicas == i / r->replicas) {
				say(why, why_len, "members: replicas %u and %u "
				    "of stripe %u on one server", k % r->replicas,
				    i % r->replicas, i / r->replicas);
				return false;
			}
		}
	}
	return true;
}

/* stale_ok -- no member past the list is stale, and each stripe keeps
 * one member that is not (an erasure-coded lease: k members). */
static bool stale_ok(const struct rmp_lease_record *r, char *why,
		     size_t why_len)
{
	unsigned n = r->stripes * r->replicas;

	for (unsigned i = n; i < RMP_LREC_MEMBERS_MAX; i++) {
		if (r->stale[i]) {
			say(why, why_len, "stale: %u is past the members", i);
			return false;
		}
	}
	if (r->ec_data) { /* any k of the members give the bytes */
		unsigned stale = 0;

		for (unsigned i = 0; i < n; i++)
			stale += r->stale[i];
		if (stale > n - r->ec_data) {
			say(why, why_len, "stale: %u members of an "
			    "erasure-coded lease with %u parity", stale,
			    n - r->ec_data);
			return false;
		}
		return true;
	}
	for (unsigned s = 0; s < r->stripes; s++) {
		unsigned live = 0;

		for (unsigned j = 0; j < r->replicas; j++)
			live += !r->stale[s * r->replicas + j];
		if (!live) {
			say(why, why_len, "stale: every member of stripe %u",
			    s);
			return false;
		}
	}
	return true;
}

/* counts_ok -- stripes and replicas in range, 2 members or more. */
static bool counts_ok(uint64_t stripes, uint64_t replicas, char *why,
		      size_t why_len)
{
	if (stripes < 1 || stripes > RMP_LREC_STRIPES_MAX ||
	    replicas < 1 || replicas > RMP_LREC_REPLICAS_MAX ||
	    stripes * replicas < 2) {
		say(why, why_len, "stripes, replicas: not 1..%d and 1..%d with "
		    "2 members or more", RMP_LREC_STRIPES_MAX,
		    RMP_LREC_REPLICAS_MAX);
		return false;
	}
	return true;
}

bool rmp_lrec_spread_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n < RMP_LREC_SPREAD_LEN &&
	       ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789_.-") == n;
}

/* ec_ok -- an erasure-coded lease's k, m and chunk in range. */
static bool ec_ok(const struct rmp_lease_record *r, char *why,
		  size_t why_len)
{
	unsigned k = r->ec_data, m = r->stripes - k;

	if (!k)
		return true;
	if (k < RMP_LREC_EC_K_MIN || k > RMP_LREC_EC_K_MAX ||
	    r->stripes < k + RMP_LREC_EC_M_MIN || m > RMP_LREC_EC_M_MAX ||
	    r->replicas != 1 || r->stripe_unit > RMP_LREC_EC_CHUNK_MAX) {
		say(why, why_len, "ec_data: not k %d..%d data members of "
		    "k + %d..%d, one replica, a chunk of 1 MiB at most",
		    RMP_LREC_EC_K_MIN, RMP_LREC_EC_K_MAX, RMP_LREC_EC_M_MIN,
		    RMP_LREC_EC_M_MAX);
		return false;
	}
	return true;
}

/* record_ok -- r keeps every rule of lease_record.h (why says which
 * not). */
static bool record_ok(const struct rmp_lease_record *r, char *why,
		      size_t why_len)
{
	if (!counts_ok(r->stripes, r->replicas, why, why_len) ||
	    !ec_ok(r, why, why_len))
		return false;
	if (r->length < 1 || r->length > RMP_LREC_LENGTH_MAX) {
		say(why, why_len, "length: not 1..2^50");
		return false;
	}
	if (!power_of_two(r->stripe_unit) ||
	    r->stripe_unit < RMP_LREC_UNIT_MIN ||
	    r->stripe_unit > RMP_LREC_UNIT_MAX) {
		say(why, why_len, "stripe_unit: not a power of two 4096..1 GiB");
		return false;
	}
	if (r->epoch < 1 || r->epoch > INT64_MAX ||
	    r->repair_until_ms > INT64_MAX) {
		say(why, why_len, "epoch, repair_until_ms: not 1..2^63-1 and "
		    "0..2^63-1");
		return false;
	}
	if (memchr(r->spread, '\0', sizeof(r->spread)) == NULL ||
	    (r->spread[0] && !rmp_lrec_spread_ok(r->spread))) {
		say(why, why_len, "spread: not a label name");
		return false;
	}
	return members_ok(r, why, why_len) && stale_ok(r, why, why_len);
}

/* A text being written into a caller's buffer; overflowed once it did
 * not fit (the rest is then only counted). */
struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->cap ? o->buf + o->len : NULL,
		      o->len < o->cap ? o->cap - o->len : 0, fmt, ap);
	va_end(ap);
	o->len += n > 0 ? (size_t)n : 0;
}

/*
 * The text is written by hand, not through json-c: no allocation that
 * could fail, and every byte comes from an alphabet JSON takes as is
 * (digits, and tokens rmp_token_format wrote: [A-Za-z0-9.:%_/[]-]).
 */
int rmp_lrec_encode(const struct rmp_lease_record *r, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };
	unsigned n = r->stripes * r->replicas;
	char text[RMP_TOKEN_MAX];

	if (!record_ok(r, NULL, 0))
		return -EINVAL;
	put(&o, "{\"%s\":%" PRIu64 ",\"%s\":%" PRIu64 ",\"%s\":%u,\"%s\":%u,"
	    "\"%s\":%" PRIu64 ",\"%s\":%" PRIu64 ",\"%s\":\"%s\","
	    "\"%s\":[", fields[0], r->length, fields[1], r->stripe_unit,
	    fields[2], r->stripes, fields[3], r->replicas, fields[4],
	    r->epoch, fields[5], r->repair_until_ms, fields[6], r->spread,
	    fields[7]);
	for (unsigned i = 0; i < n; i++) {
		rmp_token_format(&r->member[i], text, sizeof(text));
		put(&o, "%s\"%s\"", i ? "," : "", text);
	}
	put(&o, "],\"%s\":[", fields[8]);
	for (unsigned i = 0, k = 0; i < n; i++)
		if (r->stale[i])
			put(&o, "%s%u", k++ ? "," : "", i);
	put(&o, "]");
	if (r->ec_data) /* only then: older readers refuse the field */
		put(&o, ",\"%s\":%u", fields[9], r->ec_data);
	put(&o, "}");
	if (o.len >= cap || o.len > RMP_LREC_PLAIN_MAX) {
		if (cap)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return (int)o.len;
}

/* get_u64 -- o's field name as a JSON integer 0..INT64_MAX. */
static bool get_u64(json_object *o, const char *name, uint64_t *out)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, name, &v) || !v ||
	    !json_object_is_type(v, json_type_int))
		return false;
	n = json_object_get_int64(v);
	/* beyond INT64_MAX json-c keeps a uint64 and clamps the int64 */
	if (n < 0 || json_object_get_uint64(v) != (uint64_t)n)
		return false;
	*out = (uint64_t)n;
	return true;
}

/* read_members -- the "members" array: r->stripes * r->replicas token
 * texts, each spelt as rmp_token_format spells it. */
static bool read_members(json_object *o, struct rmp_lease_record *r,
			 char *why, size_t why_len)
{
	unsigned want = r->stripes * r->replicas;
	char text[RMP_TOKEN_MAX];
	json_object *a;

	if (!json_object_object_get_ex(o, "members", &a) || !a ||
	    !json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) != want) {
		say(why, why_len, "members: not a list of stripes * replicas "
		    "(%u)", want);
		return false;
	}
	for (unsigned i = 0; i < want; i++) {
		json_object *v = json_object_array_get_idx(a, i);
		const char *s = v && json_object_is_type(v, json_type_string) ?
				json_object_get_string(v) : NULL;

		if (!s || strlen(s) != (size_t)json_object_get_string_len(v) ||
		    rmp_token_parse(s, &r->member[i]) ||
		    rmp_token_format(&r->member[i], text, sizeof(text)) < 0 ||
		    strcmp(text, s)) {
			say(why, why_len, "members: entry %u is not a token "
			    "as written", i);
			return false;
		}
	}
	return true;
}

/* read_stale -- the "stale" array: member indexes, increasing. */
static bool read_stale(json_object *o, struct rmp_lease_record *r,
		       char *why, size_t why_len)
{
	unsigned n = r->stripes * r->replicas;
	json_object *a;
	size_t len;
	int64_t last = -1;

	if (!json_object_object_get_ex(o, "stale", &a) || !a ||
	    !json_object_is_type(a, json_type_array) ||
	    (len = json_object_array_length(a)) > n) {
		say(why, why_len, "stale: not a list of member indexes");
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		json_object *v = json_object_array_get_idx(a, i);
		int64_t k;

		if (!v || !json_object_is_type(v, json_type_int) ||
		    (k = json_object_get_int64(v)) <= last || k >= (int64_t)n) {
			say(why, why_len, "stale: not increasing member "
			    "indexes 0..%u", n - 1);
			return false;
		}
		r->stale[k] = true;
		last = k;
	}
	return true;
}

/* get_spread -- o's "spread": "" or a label name (no NUL inside). */
static bool get_spread(json_object *o, struct rmp_lease_record *r)
{
	json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, "spread", &v) || !v ||
	    !json_object_is_type(v, json_type_string))
		return false;
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v) ||
	    (*s && !rmp_lrec_spread_ok(s)))
		return false;
	memcpy(r->spread, s, strlen(s) + 1);
	return true;
}

/* known_fields -- o has no field but those of the record. */
static bool known_fields(json_object *o, char *why, size_t why_len)
{
	json_object_object_foreach(o, name, v) {
		size_t i = 0;

		(void)v;
		while (i < NFIELDS && strcmp(name, fields[i]))
			i++;
		if (i == NFIELDS) {
			/* named when short and plain: why goes to logs */
			size_t n = strlen(name);

			if (n <= 32 && strspn(name, "abcdefghijklmnopqrstuvwxyz"
					      "0123456789_") == n)
				say(why, why_len, "%s: a field this library "
				    "does not know", name);
			else
				say(why, why_len, "a field this library does "
				    "not know");
			return false;
		}
	}
	return true;
}

/* read_fields -- the record object o into r, every rule checked. */
static bool read_fields(json_object *o, struct rmp_lease_record *r,
			char *why, size_t why_len)
{
	uint64_t stripes, replicas;

	if (!known_fields(o, why, why_len))
		return false;
	/* the counts first: members are read as many as they say */
	if (!get_u64(o, "stripes", &stripes))
		stripes = 0;
	if (!get_u64(o, "replicas", &replicas))
		replicas = 0;
	if (!counts_ok(stripes, replicas, why, why_len))
		return false;
	r->stripes = (unsigned)stripes;
	r->replicas = (unsigned)replicas;
	if (json_object_object_get_ex(o, "ec_data", NULL)) {
		uint64_t k;

		/* 0 is not a k: an absent field says "not erasure coded" */
		if (!get_u64(o, "ec_data", &k) || !k ||
		    k > RMP_LREC_EC_K_MAX) {
			say(why, why_len, "ec_data: not an integer %d..%d",
			    RMP_LREC_EC_K_MIN, RMP_LREC_EC_K_MAX);
			return false;
		}
		r->ec_data = (unsigned)k;
	}
	if (!get_u64(o, "length", &r->length) ||
	    !get_u64(o, "stripe_unit", &r->stripe_unit) ||
	    !get_u64(o, "epoch", &r->epoch) ||
	    !get_u64(o, "repair_until_ms", &r->repair_until_ms)) {
		say(why, why_len, "length, stripe_unit, epoch, "
		    "repair_until_ms: not each an integer 0..2^63-1");
		return false;
	}
	if (!read_members(o, r, why, why_len))
		return false;
	if (!get_spread(o, r)) {
		say(why, why_len, "spread: not a label name or \"\"");
		return false;
	}
	if (!read_stale(o, r, why, why_len))
		return false;
	return record_ok(r, why, why_len);
}

/* parse_object -- the whole of buf as one JSON object (blanks after it
 * aside), or NULL. */
static json_object *parse_object(const char *buf, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;
	size_t end;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, buf, (int)len);
	end = json_tokener_get_parse_end(tok);
	while (end < len && buf[end] && strchr(" \t\r\n", buf[end]))
		end++;
	json_tokener_free(tok);
	if (o && (end != len || !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

int rmp_lrec_decode(const char *buf, size_t len, struct rmp_lease_record *r,
		    char *why, size_t why_len)
{
	json_object *o;
	bool ok;

	memset(r, 0, sizeof(*r));
	if (len > RMP_LREC_PLAIN_MAX) {
		say(why, why_len, "longer than %d bytes", RMP_LREC_PLAIN_MAX);
		return -EPROTO;
	}
	o = parse_object(buf, len);
	if (!o) {
		say(why, why_len, "not a JSON object");
		return -EPROTO;
	}
	ok = read_fields(o, r, why, why_len);
	json_object_put(o);
	if (!ok) {
		memset(r, 0, sizeof(*r));
		return -EPROTO;
	}
	return 0;
}

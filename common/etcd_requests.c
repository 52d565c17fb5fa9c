/* SPDX-License-Identifier: MIT */
/*
 * etcd_requests.c -- the requests of etcd.h as etcd's JSON gateway wants
 * them (keys and values in base64, numbers as decimal strings), handed
 * to etcd.c's queue.
 */
#include "etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Longest key a request takes (etcd's own limit is far larger). */
#define KEY_MAX 512

/* submit -- queue a request: 0 or -ENOMEM. */
static int submit(struct rmp_etcd *e, enum rmp_etcd_op op, const char *path,
		  char *body, rmp_etcd_cb *cb, void *arg)
{
	return rmp_etcd_queue(e, op, path, body, cb, arg) ? 0 : -ENOMEM;
}

/* b64 -- len bytes of p in base64 (malloc'ed), or NULL. */
static char *b64(const void *p, size_t len)
{
	size_t n = sodium_base64_ENCODED_LEN(len,
					     sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(n);

	if (s)
		sodium_bin2base64(s, n, p, len, sodium_base64_VARIANT_ORIGINAL);
	return s;
}

/* json -- a request body from fmt (malloc'ed), or NULL. */
static char *json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *json(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* key_b64 -- a key for a request; -EINVAL when too long. */
static int key_b64(const char *key, char **out)
{
	if (strlen(key) > KEY_MAX)
		return -EINVAL;
	*out = b64(key, strlen(key));
	return *out ? 0 : -ENOMEM;
}

int rmp_etcd_put(struct rmp_etcd *e, const char *key, const void *value,
		 size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg)
{
	char *k, *v;
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	v = b64(value, len);
	ret = v ? submit(e, RMP_ETCD_PUT, "/v3/kv/put",
			 json("{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\""
			      "%" PRId64 "\"}", k, v, lease), cb, arg) : -ENOMEM;
	free(k);
	free(v);
	return ret;
}

/* prefix_end_b64 -- range_end of every key starting with key: the key
 * with its last byte below 0xff plus one, what follows it cut, base64
 * (malloc'ed); "\0" (every key from key on) when all are 0xff. NULL when
 * out of memory. */
static char *prefix_end_b64(const char *key)
{
	size_t n = strlen(key);
	unsigned char *end = n ? (unsigned char *)strdup(key) : NULL;
	char *b = NULL;

	if (end) {
		while (n && end[n - 1] == 0xff)
			n--;
		if (n)
			end[n - 1]++;
		b = n ? b64(end, n) : b64("", 1);
	}
	free(end);
	return b;
}

int rmp_etcd_range(struct rmp_etcd *e, const char *key, bool prefix,
		   rmp_etcd_cb *cb, void *arg)
{
	char *k, *kend = NULL;
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	if (prefix && key[0])
		kend = prefix_end_b64(key);
	ret = !prefix || !key[0] || kend ?
		submit(e, RMP_ETCD_RANGE, "/v3/kv/range",
		       kend ? json("{\"key\":\"%s\",\"range_end\":\"%s\","
				   "\"limit\":\"%d\"}", k, kend,
				   RMP_ETCD_KVS_MAX) :
		       json("{\"key\":\"%s\"}", k), cb, arg) : -ENOMEM;
	free(k);
	free(kend);
	return ret;
}

/* txn_put -- put key if the compare cmp (its JSON fields) holds, else
 * read it. */
static int txn_put(struct rmp_etcd *e, const char *key, const void *value,
		   size_t len, int64_t lease, const char *cmp, rmp_etcd_cb *cb,
		   void *arg)
{
	char *k, *v;
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	v = b64(value, len);
	ret = v ? submit(e, RMP_ETCD_TXN, "/v3/kv/txn",
			 json("{\"compare\":[{\"key\":\"%s\",\"result\":"
			      "\"EQUAL\",%s}],\"success\":[{\"request_put\":{"
			      "\"key\":\"%s\",\"value\":\"%s\",\"lease\":\""
			      "%" PRId64 "\"}}],\"failure\":[{\"request_range"
			      "\":{\"key\":\"%s\"}}]}", k, cmp, k, v, lease,
			      k), cb, arg) : -ENOMEM;
	free(k);
	free(v);
	return ret;
}

int rmp_etcd_check_owned(struct rmp_etcd *e, const char *key, int64_t lease,
			 rmp_etcd_cb *cb, void *arg)
{
	char *k;
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	/* nothing written when it holds: no revision, no watch event */
	ret = submit(e, RMP_ETCD_TXN, "/v3/kv/txn",
		     json("{\"compare\":[{\"key\":\"%s\",\"result\":\"EQUAL\","
			  "\"target\":\"LEASE\",\"lease\":\"%" PRId64 "\"}],"
			  "\"success\":[],\"failure\":[{\"request_range\":{"
			  "\"key\":\"%s\"}}]}", k, lease, k), cb, arg);
	free(k);
	return ret;
}

int rmp_etcd_create(struct rmp_etcd *e, const char *key, const void *value,
		    size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg)
{
	return txn_put(e, key, value, len, lease, "\"target\":\"CREATE\","
		       "\"create_revision\":\"0\"", cb, arg);
}

int rmp_etcd_put_owned(struct rmp_etcd *e, const char *key, const void *value,
		       size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg)
{
	char cmp[96];

	snprintf(cmp, sizeof(cmp), "\"target\":\"LEASE\",\"lease\":\""
		 "%" PRId64 "\"", lease);
	return txn_put(e, key, value, len, lease, cmp, cb, arg);
}

int rmp_etcd_put_if(struct rmp_etcd *e, const char *key, const void *value,
		    size_t len, int64_t lease, int64_t mod_revision,
		    rmp_etcd_cb *cb, void *arg)
{
	char cmp[96];

	snprintf(cmp, sizeof(cmp), "\"target\":\"MOD\",\"mod_revision\":"
		 "\"%" PRId64 "\"", mod_revision);
	return txn_put(e, key, value, len, lease, cmp, cb, arg);
}

int rmp_etcd_delete(struct rmp_etcd *e, const char *key, rmp_etcd_cb *cb,
		    void *arg)
{
	char *k;
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	ret = submit(e, RMP_ETCD_DELETE, "/v3/kv/deleterange",
		     json("{\"key\":\"%s\"}", k), cb, arg);
	free(k);
	return ret;
}

int rmp_etcd_grant(struct rmp_etcd *e, int64_t ttl_s, rmp_etcd_cb *cb,
		   void *arg)
{
	return submit(e, RMP_ETCD_GRANT, "/v3/lease/grant",
		      json("{\"TTL\":\"%" PRId64 "\"}", ttl_s), cb, arg);
}

int rmp_etcd_keepalive(struct rmp_etcd *e, int64_t id, rmp_etcd_cb *cb,
		       void *arg)
{
	return submit(e, RMP_ETCD_KEEPALIVE, "/v3/lease/keepalive",
		      json("{\"ID\":\"%" PRId64 "\"}", id), cb, arg);
}

int rmp_etcd_revoke(struct rmp_etcd *e, int64_t id, rmp_etcd_cb *cb,
		    void *arg)
{
	return submit(e, RMP_ETCD_REVOKE, "/v3/lease/revoke",
		      json("{\"ID\":\"%" PRId64 "\"}", id), cb, arg);
}

struct rmp_etcd_request *rmp_etcd_watch(struct rmp_etcd *e, const char *prefix,
					int64_t start, rmp_etcd_cb *cb,
					void *arg)
{
	struct rmp_etcd_request *rq = NULL;
	char *k, *kend;
	int ret = prefix[0] ? key_b64(prefix, &k) : -EINVAL;

	if (ret) {
		errno = -ret;
		return NULL;
	}
	kend = prefix_end_b64(prefix);
	if (kend)
		rq = rmp_etcd_queue(e, RMP_ETCD_WATCH, "/v3/watch",
			   json("{\"create_request\":{\"key\":\"%s\","
				"\"range_end\":\"%s\",\"start_revision\":\""
				"%" PRId64 "\"}}", k, kend, start), cb, arg);
	free(k);
	free(kend);
	if (!rq)
		errno = ENOMEM;
	return rq;
}


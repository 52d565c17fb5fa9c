/* SPDX-License-Identifier: MIT */
/* etcd.h -- an asynchronous client of etcd's v3 JSON gateway. */
#ifndef RMP_ETCD_H
#define RMP_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct rmp_etcd;

/*
 * Requests go as HTTP/1.1 POSTs of JSON to /v3/... on one of the
 * endpoints, over libevent's evhttp from the caller's event loop: no call
 * here blocks, every answer comes to a callback later (never from within
 * the call that made the request). Keys and values travel base64 (etcd's
 * gateway wants bytes so); 64-bit numbers as decimal strings.
 *
 * Each attempt has its own connection and its own timeout. An endpoint
 * that cannot be reached, does not answer in time or answers that etcd
 * is unavailable (HTTP 503, gRPC code 14) is left for the next one, from
 * where the last request succeeded; a request fails only once every
 * endpoint failed it. With a user, the client asks for a token
 * (/v3/auth/authenticate) before its first request and again when etcd
 * says the token is no longer valid (etcd v3 takes no HTTP Basic auth).
 */

#define RMP_ETCD_ENDPOINTS_MAX 8
#define RMP_ETCD_HOST_LEN 254
/* Key-value pairs one reply keeps (a range reads no more than this). */
#define RMP_ETCD_KVS_MAX 16
/* Longest reply body taken; a longer one is an error. */
#define RMP_ETCD_BODY_MAX (1u << 20)

struct rmp_etcd_endpoint {
	char host[RMP_ETCD_HOST_LEN]; /* name, IPv4, or IPv6 unbracketed */
	uint16_t port;
};

struct rmp_etcd_params {
	struct event_base *base;
	const struct rmp_etcd_endpoint *endpoints; /* copied */
	unsigned nendpoints;                       /* 1..RMP_ETCD_ENDPOINTS_MAX */
	uint64_t timeout_ms;   /* one attempt at one endpoint, connect included */
	const char *user, *password; /* NULL: etcd without authentication */
};

/* What a request asked for (and so what its reply holds). */
enum rmp_etcd_op {
	RMP_ETCD_PUT,
	RMP_ETCD_RANGE,
	RMP_ETCD_TXN,
	RMP_ETCD_DELETE,
	RMP_ETCD_GRANT,
	RMP_ETCD_KEEPALIVE,
	RMP_ETCD_REVOKE,
	RMP_ETCD_AUTH,
	RMP_ETCD_OPS,
};

/* One key-value pair of a reply: the bytes base64 decoded, each followed
 * by a NUL that its length does not count. */
struct rmp_etcd_kv {
	const char *key, *value;
	size_t key_len, value_len;
	int64_t create_revision, mod_revision, version, lease;
};

/*
 * A reply, valid during the callback only. err is 0, or:
 *   -ETIMEDOUT     the last endpoint tried did not answer in time
 *   -ECONNREFUSED  no endpoint could be reached (or all were unavailable)
 *   -EPROTO        an answer that is not what etcd says (not JSON, ...)
 *   -EACCES        etcd refused the credentials or the permission
 *   -ENOENT        no such lease (grant, keepalive: its TTL ran out)
 *   -EIO           another etcd error (error says which)
 *   -ECANCELED     never: a request of a freed client gets no callback
 */
struct rmp_etcd_reply {
	enum rmp_etcd_op op;
	int err;
	int status;               /* HTTP status; 0 when none came */
	int code;                 /* etcd's gRPC code of an error, else 0 */
	char error[200];          /* what went wrong, for a log line */
	char endpoint[RMP_ETCD_HOST_LEN + 8]; /* HOST:PORT tried last */
	int64_t revision;         /* header.revision */
	int64_t id, ttl;          /* grant, keepalive: lease ID and its TTL */
	int64_t count, deleted;   /* range: count; delete: deleted */
	bool succeeded;           /* txn: the compare held */
	char token[256];          /* auth */
	unsigned nkvs;            /* range; txn: its range response's */
	struct rmp_etcd_kv kvs[RMP_ETCD_KVS_MAX];
	char *mem;                /* the kvs' bytes (rmp_etcd_reply_clear) */
};

typedef void rmp_etcd_cb(const struct rmp_etcd_reply *r, void *arg);

/*
 * rmp_etcd_new -- a client of params' endpoints (names resolved with
 * evdns, asynchronously). NULL with errno (ENOMEM, EINVAL).
 * rmp_etcd_free -- forget every request in flight (their callbacks are
 * never called) and free the client; may be called from a callback.
 * Accepts NULL.
 */
struct rmp_etcd *rmp_etcd_new(const struct rmp_etcd_params *params);
void rmp_etcd_free(struct rmp_etcd *e);

/*
 * The requests. Each returns 0 (cb gets the reply later) or -ENOMEM /
 * -EINVAL (key too long; no callback then). Keys are text; values bytes.
 *   put       key = value, under lease (0: none)
 *   range     key, or every key starting with it (prefix)
 *   create    txn: if key does not exist (create_revision 0) put it under
 *             lease: succeeded; else succeeded false and kvs[0] is the
 *             key as it is
 *   put_owned txn: if key is under lease, put it: succeeded; else
 *             succeeded false and kvs[0] the key as it is (if any)
 *   delete    key
 *   grant     a lease of ttl_s seconds: id and ttl
 *   keepalive lease id once: ttl (-ENOENT when the lease is gone)
 *   revoke    lease id and the keys under it
 */
int rmp_etcd_put(struct rmp_etcd *e, const char *key, const void *value,
		 size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg);
int rmp_etcd_range(struct rmp_etcd *e, const char *key, bool prefix,
		   rmp_etcd_cb *cb, void *arg);
int rmp_etcd_create(struct rmp_etcd *e, const char *key, const void *value,
		    size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg);
int rmp_etcd_put_owned(struct rmp_etcd *e, const char *key, const void *value,
		       size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg);
int rmp_etcd_delete(struct rmp_etcd *e, const char *key, rmp_etcd_cb *cb,
		    void *arg);
int rmp_etcd_grant(struct rmp_etcd *e, int64_t ttl_s, rmp_etcd_cb *cb,
		   void *arg);
int rmp_etcd_keepalive(struct rmp_etcd *e, int64_t id, rmp_etcd_cb *cb,
		       void *arg);
int rmp_etcd_revoke(struct rmp_etcd *e, int64_t id, rmp_etcd_cb *cb,
		    void *arg);

/*
 * rmp_etcd_parse (etcd_reply.c) -- the body of an answer with HTTP
 * status to a request op, into r (which it clears first, keeping
 * nothing of it). A 200 answer fills the fields of op; another status,
 * or a body that holds an error, sets err, code and error. Any bytes
 * give a reply or -EPROTO: the body is never trusted. Returns r->err.
 * rmp_etcd_reply_clear -- free what a parse allocated; r is reusable.
 */
int rmp_etcd_parse(enum rmp_etcd_op op, int status, const char *body,
		   size_t len, struct rmp_etcd_reply *r);
void rmp_etcd_reply_clear(struct rmp_etcd_reply *r);
/* rmp_etcd_op_name -- "put", "range", ... for messages. */
const char *rmp_etcd_op_name(enum rmp_etcd_op op);

#endif /* RMP_ETCD_H */

/* SPDX-License-Identifier: MIT */
/* etcd.h -- an asynchronous client of etcd's v3 JSON gateway. */
#ifndef RMP_ETCD_H
#define RMP_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcd_reply.h" /* what a request's callback gets */

struct event_base;
struct rmp_etcd;
struct rmp_etcd_request;

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
 * endpoint failed it. An https endpoint gets TLS 1.2 or later, its
 * certificate checked against the CAs and the endpoint's host name or
 * address. With a user, the client asks for a token
 * (/v3/auth/authenticate) before its first request and again when etcd
 * says the token is no longer valid (etcd v3 takes no HTTP Basic auth).
 */

#define RMP_ETCD_ENDPOINTS_MAX 8

struct rmp_etcd_endpoint {
	char host[RMP_ETCD_HOST_LEN]; /* name, IPv4, or IPv6 unbracketed */
	uint16_t port;
	bool tls;                     /* https: TLS, the server verified */
};

struct rmp_etcd_params {
	struct event_base *base;
	const struct rmp_etcd_endpoint *endpoints; /* copied */
	unsigned nendpoints;                       /* 1..RMP_ETCD_ENDPOINTS_MAX */
	uint64_t timeout_ms;   /* one attempt at one endpoint, connect included */
	const char *user, *password; /* NULL: etcd without authentication */
	/* For https endpoints (NULL or "": none): the CAs that sign etcd's
	 * certificate (none: the system's), a client certificate (PEM,
	 * its chain after it) and its key, read as a secret file is
	 * (rmp_secret_read: mode 600, or root's and the group's, 640). */
	const char *ca_file, *cert_file, *key_file;
};

typedef void rmp_etcd_cb(const struct rmp_etcd_reply *r, void *arg);

/*
 * rmp_etcd_new -- a client of params' endpoints (names resolved with
 * evdns, asynchronously). NULL with errno (ENOMEM, EINVAL, or the
 * error of a TLS file) and why in err.
 * rmp_etcd_free -- forget every request in flight (their callbacks are
 * never called) and free the client; may be called from a callback.
 * Accepts NULL.
 */
struct rmp_etcd *rmp_etcd_new(const struct rmp_etcd_params *params,
			      char *err, size_t errlen);
void rmp_etcd_free(struct rmp_etcd *e);

/* The settings as people write them (rmp_etcd_open). */
struct rmp_etcd_settings {
	const char *endpoints;   /* "http://H:P, https://H:P, etcd://H:P,
				  * ...": rmp_cluster_endpoints() */
	uint64_t timeout_ms;     /* one attempt at one endpoint */
	const char *ca_file, *cert_file, *key_file; /* as in params */
	const char *credentials_file; /* "USER:PASSWORD"; NULL or "": none */
};

/*
 * rmp_etcd_open (etcd_open.c) -- rmp_etcd_new from settings. NULL with
 * errno and why in err ("etcd endpoints: ...", "etcd credentials: ...",
 * "etcd client: ...").
 */
struct rmp_etcd *rmp_etcd_open(struct event_base *base,
			       const struct rmp_etcd_settings *s, char *err,
			       size_t errlen);

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
 *   check_owned  the same without the put: nothing is written (no new
 *             revision, no event to watchers) when the key is ours
 *   put_if    txn: if key's mod_revision is mod_revision (nobody wrote it
 *             since it was read), put it under lease: succeeded; else
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
int rmp_etcd_check_owned(struct rmp_etcd *e, const char *key, int64_t lease,
			 rmp_etcd_cb *cb, void *arg);
int rmp_etcd_put_if(struct rmp_etcd *e, const char *key, const void *value,
		    size_t len, int64_t lease, int64_t mod_revision,
		    rmp_etcd_cb *cb, void *arg);
int rmp_etcd_delete(struct rmp_etcd *e, const char *key, rmp_etcd_cb *cb,
		    void *arg);
int rmp_etcd_grant(struct rmp_etcd *e, int64_t ttl_s, rmp_etcd_cb *cb,
		   void *arg);
int rmp_etcd_keepalive(struct rmp_etcd *e, int64_t id, rmp_etcd_cb *cb,
		       void *arg);
int rmp_etcd_revoke(struct rmp_etcd *e, int64_t id, rmp_etcd_cb *cb,
		    void *arg);

/*
 * rmp_etcd_watch -- watch every key starting with prefix, from revision
 * start on (0: from now). cb gets each message of etcd's stream as a
 * reply of op RMP_ETCD_WATCH: first one with created set, then the
 * events (kvs, deleted set for a DELETE), in revision order; and last a
 * reply with err set, after which the watch is over and freed:
 * -ECONNRESET when the stream ended or its connection broke, -ESTALE
 * when start is compacted, -ECANCELED never (a canceled watch gets no
 * last call), else what any request can get. Until it is created it
 * fails over between endpoints like any request; after that it never
 * times out (an idle hour aside: -ECONNRESET), so etcd's death shows
 * only when the connection breaks. NULL with errno (EINVAL: prefix ""
 * or too long; ENOMEM).
 * rmp_etcd_watch_cancel -- end w without a last call; may be called
 * from its own callback. Accepts NULL.
 */
struct rmp_etcd_request *rmp_etcd_watch(struct rmp_etcd *e, const char *prefix,
					int64_t start, rmp_etcd_cb *cb,
					void *arg);
void rmp_etcd_watch_cancel(struct rmp_etcd_request *w);

/*
 * rmp_etcd_queue (for etcd_requests.c, which builds the requests above)
 * -- a request of op to path with body (malloc'ed JSON, taken over;
 * NULL: out of memory), started on the loop's next turn: its handle, or
 * NULL when out of memory.
 */
struct rmp_etcd_request *rmp_etcd_queue(struct rmp_etcd *e,
					enum rmp_etcd_op op, const char *path,
					char *body, rmp_etcd_cb *cb, void *arg);

#endif /* RMP_ETCD_H */

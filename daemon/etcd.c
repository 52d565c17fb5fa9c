/* SPDX-License-Identifier: MIT */
/*
 * etcd.c -- requests to etcd's v3 JSON gateway over evhttp: the body of
 * each request, one connection per attempt with its own timeout, the
 * move to the next endpoint, the auth token. What comes back is read by
 * etcd_reply.c.
 */
#include "etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>

#include "etcd_tls.h"
#include "parse.h"
#include "util.h"

/* Longest key a request takes (etcd's own limit is far larger). */
#define KEY_MAX 512

/* One request, from its first attempt to its callback. */
struct request {
	TAILQ_ENTRY(request) link;
	struct rmp_etcd *e;
	enum rmp_etcd_op op;
	const char *path;          /* "/v3/kv/put", ... */
	char *body;                /* the JSON sent, the same to each endpoint */
	rmp_etcd_cb *cb;
	void *arg;
	unsigned ep, tries;        /* endpoint of this attempt; attempts made */
	bool authed;               /* asked for a new token once already */
	struct request *waiting;   /* an auth request: the one it serves */
	bool started;              /* its first attempt was made */
	struct evhttp_connection *conn; /* of the attempt in flight */
	enum evhttp_request_error why; /* what evhttp said of a failure */
	bool failed;               /* evhttp called the error callback */
};

struct rmp_etcd {
	struct event_base *base;
	struct evdns_base *dns;    /* NULL when every host is numeric */
	SSL_CTX *tls;              /* NULL when no endpoint is https */
	struct rmp_etcd_endpoint eps[RMP_ETCD_ENDPOINTS_MAX];
	unsigned neps, current;    /* where the next request starts */
	struct timeval timeout;
	char *user, *password;
	char token[256];           /* "" until authenticated */
	TAILQ_HEAD(, request) live;
	/* connections done with, freed on the loop's next turn: evhttp
	 * still uses one when its request's callback returns */
	struct evhttp_connection *dead[64];
	unsigned ndead;
	struct event *reap_ev;
	/* new requests start on the loop's next turn, so that no callback
	 * runs within the call that made its request */
	struct event *kick_ev;
	unsigned depth;            /* callbacks running now */
	bool freeing;              /* rmp_etcd_free() from a callback */
};

static void start_attempt(struct request *rq);
static void free_client(struct rmp_etcd *e);
static void fail_request(struct request *rq, int err, const char *text);

/* reap -- free the connections done with; free the client when
 * rmp_etcd_free() was called from a callback. */
static void reap(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_etcd *e = arg;

	(void)fd;
	(void)what;
	while (e->ndead)
		evhttp_connection_free(e->dead[--e->ndead]);
	if (e->freeing)
		free_client(e);
}

/* retire -- rq's connection will be freed on the loop's next turn. */
static void retire(struct request *rq)
{
	struct rmp_etcd *e = rq->e;
	static const struct timeval now = { 0, 0 };

	if (!rq->conn)
		return;
	if (e->ndead == sizeof(e->dead) / sizeof(e->dead[0]))
		evhttp_connection_free(e->dead[--e->ndead]); /* the oldest
							  * is long done */
	e->dead[e->ndead++] = rq->conn;
	rq->conn = NULL;
	event_add(e->reap_ev, &now);
}

static void free_request(struct request *rq)
{
	if (rq->body) {
		sodium_memzero(rq->body, strlen(rq->body));
		free(rq->body);
	}
	free(rq);
}

/* auth_done -- the token request rq is done: the request it serves,
 * rq->waiting, goes on with the token, or fails with rq. */
static void auth_done(struct request *rq, struct rmp_etcd_reply *r)
{
	struct request *w = rq->waiting;
	struct rmp_etcd *e = rq->e;

	TAILQ_REMOVE(&e->live, rq, link);
	retire(rq);
	free_request(rq);
	if (r->err) {
		fail_request(w, r->err, r->error);
		return;
	}
	snprintf(e->token, sizeof(e->token), "%s", r->token);
	start_attempt(w);
}

/* deliver -- rq is done: its callback gets r, then rq is freed. */
static void deliver(struct request *rq, struct rmp_etcd_reply *r)
{
	struct rmp_etcd *e = rq->e;

	if (rq->waiting) {
		auth_done(rq, r);
		return;
	}
	TAILQ_REMOVE(&e->live, rq, link);
	retire(rq);
	snprintf(r->endpoint, sizeof(r->endpoint), "%s:%u",
		 e->eps[rq->ep].host, e->eps[rq->ep].port);
	e->depth++;
	if (rq->cb)
		rq->cb(r, rq->arg);
	e->depth--;
	free_request(rq);
}

/* fail_request -- rq ends with err, said as text. */
static void fail_request(struct request *rq, int err, const char *text)
{
	struct rmp_etcd_reply r;

	memset(&r, 0, sizeof(r));
	r.op = rq->op;
	r.err = err;
	snprintf(r.error, sizeof(r.error), "%s", text);
	deliver(rq, &r);
}

/* next_endpoint -- after a failed attempt: the next endpoint, or the
 * end of the request when each one had its try. */
static void next_endpoint(struct request *rq, int err, const char *text)
{
	struct rmp_etcd *e = rq->e;
	char msg[200];

	retire(rq);
	if (++rq->tries >= e->neps) {
		snprintf(msg, sizeof(msg), "%s%s", text, e->neps > 1 ?
			 " (and every other endpoint failed too)" : "");
		fail_request(rq, err, msg);
		return;
	}
	rq->ep = (rq->ep + 1) % e->neps;
	start_attempt(rq);
}

static void on_error(enum evhttp_request_error why, void *arg)
{
	struct request *rq = arg;

	rq->failed = true;
	rq->why = why;
}

/* transport_error -- rq's attempt got no answer. */
static void transport_error(struct request *rq)
{
	struct rmp_etcd_endpoint *ep = &rq->e->eps[rq->ep];
	char text[RMP_ETCD_HOST_LEN + 300], tls[200] = "";
	bool timeout = rq->failed && rq->why == EVREQ_HTTP_TIMEOUT;

	if (ep->tls && rq->conn)
		rmp_etcd_tls_error(evhttp_connection_get_bufferevent(rq->conn),
				   tls, sizeof(tls));
	snprintf(text, sizeof(text), "%s:%u: %s", ep->host, ep->port,
		 tls[0] ? tls : timeout ? "no answer in time" :
		 "cannot connect, or the connection broke");
	next_endpoint(rq, timeout ? -ETIMEDOUT : -ECONNREFUSED, text);
}

static void on_answer(struct evhttp_request *req, void *arg)
{
	struct request *rq = arg;
	struct rmp_etcd *e = rq->e;
	struct rmp_etcd_reply r;
	struct evbuffer *in;
	int status = req ? evhttp_request_get_response_code(req) : 0;
	const char *body;
	size_t len;

	if (!status) {
		transport_error(rq);
		return;
	}
	in = evhttp_request_get_input_buffer(req);
	len = evbuffer_get_length(in);
	body = len ? (const char *)evbuffer_pullup(in, -1) : NULL;
	rmp_etcd_parse(rq->op, status, body ? body : "", body ? len : 0, &r);
	if (r.err == -ECONNREFUSED) { /* etcd unavailable there */
		snprintf(r.endpoint, sizeof(r.endpoint), "%s:%u: %s",
			 e->eps[rq->ep].host, e->eps[rq->ep].port, r.error);
		next_endpoint(rq, -ECONNREFUSED, r.endpoint);
	} else if (r.code == 16 && !rq->waiting && e->user && !rq->authed) {
		/* the token expired: a new one, then this again */
		rq->authed = true;
		e->token[0] = '\0';
		retire(rq);
		start_attempt(rq);
	} else {
		if (!r.err)
			e->current = rq->ep;
		deliver(rq, &r);
	}
	rmp_etcd_reply_clear(&r);
}

/* new_request -- a request of op to path with body (taken over). */
static struct request *new_request(struct rmp_etcd *e, enum rmp_etcd_op op,
				   const char *path, char *body,
				   rmp_etcd_cb *cb, void *arg)
{
	struct request *rq = calloc(1, sizeof(*rq));

	if (!rq || !body) {
		free(rq);
		free(body);
		return NULL;
	}
	*rq = (struct request){ .e = e, .op = op, .path = path, .body = body,
				.cb = cb, .arg = arg, .ep = e->current };
	TAILQ_INSERT_TAIL(&e->live, rq, link);
	return rq;
}

/* auth_first -- rq waits for a token: an auth request goes first. */
static bool auth_first(struct request *rq)
{
	struct rmp_etcd *e = rq->e;
	struct request *a;
	char *body;
	size_t n;

	n = strlen(e->user) + strlen(e->password) + 64;
	body = malloc(n);
	if (body)
		snprintf(body, n, "{\"name\":\"%s\",\"password\":\"%s\"}",
			 e->user, e->password);
	a = new_request(e, RMP_ETCD_AUTH, "/v3/auth/authenticate", body,
			NULL, NULL);
	if (!a)
		return false;
	a->waiting = rq;
	a->ep = rq->ep;
	a->started = true;
	start_attempt(a);
	return true;
}

/* send_attempt -- rq's POST to its endpoint; false when it could not
 * even be made (no memory). */
static bool send_attempt(struct request *rq)
{
	struct rmp_etcd *e = rq->e;
	struct rmp_etcd_endpoint *ep = &e->eps[rq->ep];
	struct evhttp_request *req;
	struct evkeyvalq *h;
	char host[RMP_ETCD_HOST_LEN + 8];

	rq->failed = false;
	if (ep->tls) {
		struct bufferevent *bev = rmp_etcd_tls_bev(e->base, e->tls,
							   ep->host);

		rq->conn = bev ? evhttp_connection_base_bufferevent_new(
				e->base, e->dns, bev, ep->host, ep->port) : NULL;
		if (bev && !rq->conn)
			bufferevent_free(bev);
	} else {
		rq->conn = evhttp_connection_base_new(e->base, e->dns, ep->host,
						      ep->port);
	}
	if (!rq->conn)
		return false;
	evhttp_connection_set_timeout_tv(rq->conn, &e->timeout);
	evhttp_connection_set_retries(rq->conn, 0);
	evhttp_connection_set_max_body_size(rq->conn, RMP_ETCD_BODY_MAX);
	req = evhttp_request_new(on_answer, rq);
	if (!req)
		return false;
	evhttp_request_set_error_cb(req, on_error);
	h = evhttp_request_get_output_headers(req);
	snprintf(host, sizeof(host), strchr(ep->host, ':') ? "[%s]:%u" :
		 "%s:%u", ep->host, ep->port);
	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Connection", "close");
	if (rq->op != RMP_ETCD_AUTH && e->token[0])
		evhttp_add_header(h, "Authorization", e->token);
	evbuffer_add(evhttp_request_get_output_buffer(req), rq->body,
		     strlen(rq->body));
	/* on failure evhttp has freed req */
	return evhttp_make_request(rq->conn, req, EVHTTP_REQ_POST,
				   rq->path) == 0;
}

static void start_attempt(struct request *rq)
{
	struct rmp_etcd *e = rq->e;

	if (e->user && !e->token[0] && rq->op != RMP_ETCD_AUTH) {
		if (!auth_first(rq))
			fail_request(rq, -ENOMEM, "out of memory");
		return;
	}
	if (!send_attempt(rq))
		next_endpoint(rq, -ENOMEM, "cannot make an HTTP request "
			      "(out of memory?)");
}

/* kick -- the first attempt of each new request. */
static void kick(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_etcd *e = arg;
	struct request *rq;
	bool again = true;

	(void)fd;
	(void)what;
	/* an attempt may end a request (and so change the list) */
	while (again) {
		again = false;
		TAILQ_FOREACH(rq, &e->live, link) {
			if (rq->started)
				continue;
			rq->started = again = true;
			start_attempt(rq);
			break;
		}
	}
}

/* submit -- queue a request for the loop's next turn. */
static int submit(struct rmp_etcd *e, enum rmp_etcd_op op, const char *path,
		  char *body, rmp_etcd_cb *cb, void *arg)
{
	static const struct timeval now = { 0, 0 };
	struct request *rq = new_request(e, op, path, body, cb, arg);

	if (!rq)
		return -ENOMEM;
	event_add(e->kick_ev, &now);
	return 0;
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

int rmp_etcd_range(struct rmp_etcd *e, const char *key, bool prefix,
		   rmp_etcd_cb *cb, void *arg)
{
	char *k, *end = NULL, *kend = NULL;
	size_t n = strlen(key);
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	if (prefix && n) {
		/* range_end: the key with its last byte plus one */
		end = strdup(key);
		if (end) {
			end[n - 1]++;
			kend = b64(end, n);
		}
	}
	ret = !prefix || kend ?
		submit(e, RMP_ETCD_RANGE, "/v3/kv/range",
		       kend ? json("{\"key\":\"%s\",\"range_end\":\"%s\","
				   "\"limit\":\"%d\"}", k, kend,
				   RMP_ETCD_KVS_MAX) :
		       json("{\"key\":\"%s\"}", k), cb, arg) : -ENOMEM;
	free(k);
	free(end);
	free(kend);
	return ret;
}

/* txn_put -- the two txns: put key if cmp holds, else read it. */
static int txn_put(struct rmp_etcd *e, const char *key, const void *value,
		   size_t len, int64_t lease, bool owned, rmp_etcd_cb *cb,
		   void *arg)
{
	char *k, *v, cmp[96];
	int ret = key_b64(key, &k);

	if (ret)
		return ret;
	if (owned)
		snprintf(cmp, sizeof(cmp), "\"target\":\"LEASE\",\"lease\":\""
			 "%" PRId64 "\"", lease);
	else
		snprintf(cmp, sizeof(cmp), "\"target\":\"CREATE\","
			 "\"create_revision\":\"0\"");
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

int rmp_etcd_create(struct rmp_etcd *e, const char *key, const void *value,
		    size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg)
{
	return txn_put(e, key, value, len, lease, false, cb, arg);
}

int rmp_etcd_put_owned(struct rmp_etcd *e, const char *key, const void *value,
		       size_t len, int64_t lease, rmp_etcd_cb *cb, void *arg)
{
	return txn_put(e, key, value, len, lease, true, cb, arg);
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

/* json_safe -- s may go into a JSON string as it is. */
static bool json_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\')
			return false;
	return true;
}

/* check_params -- what rmp_etcd_new takes. */
static bool check_params(const struct rmp_etcd_params *p, char *err,
			 size_t errlen)
{
	if (!p->nendpoints || p->nendpoints > RMP_ETCD_ENDPOINTS_MAX ||
	    !p->timeout_ms) {
		snprintf(err, errlen, "1 to %d endpoints and a timeout, please",
			 RMP_ETCD_ENDPOINTS_MAX);
		return false;
	}
	if (p->user && (!p->password || !json_safe(p->user) ||
			!json_safe(p->password))) {
		snprintf(err, errlen, "a user and password without '\"', "
			 "'\\' or control characters, please");
		return false;
	}
	return true;
}

struct rmp_etcd *rmp_etcd_new(const struct rmp_etcd_params *p, char *err,
			      size_t errlen)
{
	struct rmp_etcd *e;
	bool names = false, tls = false;
	int family;

	if (!check_params(p, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	TAILQ_INIT(&e->live);
	e->base = p->base;
	e->neps = p->nendpoints;
	memcpy(e->eps, p->endpoints, p->nendpoints * sizeof(e->eps[0]));
	for (unsigned i = 0; i < e->neps; i++) {
		names |= rmp_parse_addr(e->eps[i].host, &family) != 0;
		tls |= e->eps[i].tls;
	}
	e->timeout.tv_sec = (time_t)(p->timeout_ms / 1000);
	e->timeout.tv_usec = (suseconds_t)(p->timeout_ms % 1000) * 1000;
	e->reap_ev = event_new(e->base, -1, 0, reap, e);
	e->kick_ev = event_new(e->base, -1, 0, kick, e);
	if (names)
		e->dns = evdns_base_new(e->base,
					EVDNS_BASE_INITIALIZE_NAMESERVERS |
					EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	/* a look-up is not under the attempt's timeout: bound it (2 s) */
	if (e->dns && (evdns_base_set_option(e->dns, "timeout:", "1") ||
		       evdns_base_set_option(e->dns, "attempts:", "2"))) {
		snprintf(err, errlen, "cannot set up DNS look-ups");
		free_client(e);
		errno = ENOMEM;
		return NULL;
	}
	if (p->user) {
		e->user = strdup(p->user);
		e->password = strdup(p->password);
	}
	snprintf(err, errlen, "out of memory");
	if (tls) {
		e->tls = rmp_etcd_tls_ctx(p->ca_file, p->cert_file, p->key_file,
					  err, errlen);
		if (!e->tls) {
			free_client(e);
			errno = EINVAL;
			return NULL;
		}
	}
	if (!e->reap_ev || !e->kick_ev || (names && !e->dns) ||
	    (p->user && (!e->user || !e->password))) {
		free_client(e);
		errno = ENOMEM;
		return NULL;
	}
	err[0] = '\0';
	return e;
}

static void free_client(struct rmp_etcd *e)
{
	struct request *rq;

	while ((rq = TAILQ_FIRST(&e->live))) {
		TAILQ_REMOVE(&e->live, rq, link);
		if (rq->conn)
			evhttp_connection_free(rq->conn);
		free_request(rq);
	}
	while (e->ndead)
		evhttp_connection_free(e->dead[--e->ndead]);
	if (e->reap_ev)
		event_free(e->reap_ev);
	if (e->kick_ev)
		event_free(e->kick_ev);
	if (e->dns)
		evdns_base_free(e->dns, 0);
	SSL_CTX_free(e->tls);
	if (e->password) {
		sodium_memzero(e->password, strlen(e->password));
		free(e->password);
	}
	free(e->user);
	sodium_memzero(e->token, sizeof(e->token));
	free(e);
}

void rmp_etcd_free(struct rmp_etcd *e)
{
	if (!e)
		return;
	if (e->depth) {
		/* within a callback: evhttp still uses the connection of
		 * the request being answered; free on the loop's next turn */
		static const struct timeval now = { 0, 0 };
		struct request *rq;

		e->freeing = true;
		TAILQ_FOREACH(rq, &e->live, link)
			rq->cb = NULL;
		event_add(e->reap_ev, &now);
		return;
	}
	free_client(e);
}

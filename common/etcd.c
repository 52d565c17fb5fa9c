/* SPDX-License-Identifier: MIT */
/*
 * etcd.c -- requests to etcd's v3 JSON gateway over evhttp: one
 * connection per attempt with its own deadline, the move to the next
 * endpoint, the auth token, a watch's stream. The requests' bodies are
 * etcd_requests.c's; what comes back is read by etcd_reply.c.
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

/* What an answer's headers may take; its body but a range's (etcd's
 * are some hundred bytes, a node record one KiB). */
#define HEADERS_MAX 16384
#define BODY_SMALL_MAX 65536

/* One request, from its first attempt to its callback. */
struct rmp_etcd_request {
	TAILQ_ENTRY(rmp_etcd_request) link;
	struct rmp_etcd *e;
	enum rmp_etcd_op op;
	const char *path;          /* "/v3/kv/put", ... */
	char *body;                /* the JSON sent, the same to each endpoint */
	rmp_etcd_cb *cb;
	void *arg;
	unsigned ep, tries;        /* endpoint of this attempt; attempts made */
	bool authed;               /* asked for a new token once already */
	struct rmp_etcd_request *waiting;   /* an auth request: the one it serves */
	bool started;              /* its first attempt was made */
	struct evhttp_connection *conn; /* of the attempt in flight */
	enum evhttp_request_error why; /* what evhttp said of a failure */
	bool failed;               /* evhttp called the error callback */
	/* The attempt's deadline: evhttp's own timeout is one of silence,
	 * which a byte now and then defers for good. */
	struct event *deadline;
	/* Its HTTP request while in flight (evhttp frees it after calling
	 * back). A watch's: the bytes of a message not complete yet,
	 * whether etcd created it, and whether its callback runs now and
	 * was asked to stop meanwhile (rmp_etcd_watch_cancel from within). */
	struct evhttp_request *http;
	struct evbuffer *pending;
	bool created, in_cb, cancel;
};

struct rmp_etcd {
	struct event_base *base;
	struct evdns_base *dns;    /* NULL when every host is numeric */
	SSL_CTX *tls;              /* NULL when no endpoint is https */
	struct rmp_etcd_endpoint eps[RMP_ETCD_ENDPOINTS_MAX];
	unsigned neps, current;    /* where the next request starts */
	struct timeval timeout;
	char *user, *password;
	char token[RMP_ETCD_TOKEN_MAX]; /* "" until authenticated */
	TAILQ_HEAD(, rmp_etcd_request) live;
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

static void start_attempt(struct rmp_etcd_request *rq);
static void free_client(struct rmp_etcd *e);
static void fail_request(struct rmp_etcd_request *rq, int err, const char *text);
static void watch_chunk(struct evhttp_request *req, void *arg);
static void watch_answer(struct rmp_etcd_request *rq,
			 struct evhttp_request *req, int status);

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
static void retire(struct rmp_etcd_request *rq)
{
	struct rmp_etcd *e = rq->e;
	static const struct timeval now = { 0, 0 };

	if (rq->deadline)
		evtimer_del(rq->deadline);
	if (!rq->conn)
		return;
	if (e->ndead == RMP_ARRAY_SIZE(e->dead)) {
		/* the oldest is long done */
		evhttp_connection_free(e->dead[0]);
		memmove(e->dead, e->dead + 1, --e->ndead * sizeof(e->dead[0]));
	}
	e->dead[e->ndead++] = rq->conn;
	rq->conn = NULL;
	event_add(e->reap_ev, &now);
}

static void free_request(struct rmp_etcd_request *rq)
{
	if (rq->deadline)
		event_free(rq->deadline);
	if (rq->pending)
		evbuffer_free(rq->pending);
	if (rq->body) {
		sodium_memzero(rq->body, strlen(rq->body));
		free(rq->body);
	}
	free(rq);
}

/* auth_done -- the token request rq is done: the request it serves,
 * rq->waiting, goes on with the token, or fails with rq. */
static void auth_done(struct rmp_etcd_request *rq, struct rmp_etcd_reply *r)
{
	struct rmp_etcd_request *w = rq->waiting;
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
static void deliver(struct rmp_etcd_request *rq, struct rmp_etcd_reply *r)
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
static void fail_request(struct rmp_etcd_request *rq, int err, const char *text)
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
static void next_endpoint(struct rmp_etcd_request *rq, int err, const char *text)
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
	struct rmp_etcd_request *rq = arg;

	rq->failed = true;
	rq->why = why;
}

/* transport_error -- rq's attempt got no answer. */
static void transport_error(struct rmp_etcd_request *rq)
{
	struct rmp_etcd_endpoint *ep = &rq->e->eps[rq->ep];
	char text[RMP_ETCD_HOST_LEN + 300], tls[200] = "";
	bool timeout = rq->failed && rq->why == EVREQ_HTTP_TIMEOUT;
	bool too_long = rq->failed && rq->why == EVREQ_HTTP_DATA_TOO_LONG;

	if (ep->tls && rq->conn)
		rmp_etcd_tls_error(evhttp_connection_get_bufferevent(rq->conn),
				   tls, sizeof(tls));
	snprintf(text, sizeof(text), "%s:%u: %s", ep->host, ep->port,
		 tls[0] ? tls : timeout ? "no answer in time" :
		 too_long ? "an answer too long (headers or body)" :
		 "cannot connect, or the connection broke");
	next_endpoint(rq, timeout ? -ETIMEDOUT : too_long ? -EPROTO :
		      -ECONNREFUSED, text);
}

/* auth_stale -- r says our token is no good any more: expired or
 * invalid (gRPC 16), or issued before a change of users or roles (3,
 * "revision of auth store is old"; etcd's own client asks anew too). */
static bool auth_stale(const struct rmp_etcd_reply *r)
{
	return r->code == 16 ||
	       (r->code == 3 && (strstr(r->error, "auth store is old") ||
				 strstr(r->error, "user name is empty")));
}

/* attempt_late -- rq's attempt is over its time: cancel it (evhttp
 * calls the error callback, not the answer's) and try the next. */
static void attempt_late(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_etcd_request *rq = arg;
	struct rmp_etcd_endpoint *ep = &rq->e->eps[rq->ep];
	struct evhttp_request *h = rq->http;
	char text[RMP_ETCD_HOST_LEN + 64];

	(void)fd;
	(void)what;
	rq->http = NULL;
	if (h)
		evhttp_cancel_request(h);
	snprintf(text, sizeof(text), "%s:%u: no answer in time", ep->host,
		 ep->port);
	next_endpoint(rq, -ETIMEDOUT, text);
}

static void on_answer(struct evhttp_request *req, void *arg)
{
	struct rmp_etcd_request *rq = arg;
	struct rmp_etcd *e = rq->e;
	struct rmp_etcd_reply r;
	struct evbuffer *in;
	int status = req ? evhttp_request_get_response_code(req) : 0;
	const char *body;
	size_t len;

	rq->http = NULL; /* evhttp frees it when this returns */
	if (rq->op == RMP_ETCD_WATCH) {
		watch_answer(rq, req, status);
		return;
	}
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
	} else if (auth_stale(&r) && !rq->waiting && e->user && !rq->authed) {
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
static struct rmp_etcd_request *new_request(struct rmp_etcd *e, enum rmp_etcd_op op,
				   const char *path, char *body,
				   rmp_etcd_cb *cb, void *arg)
{
	struct rmp_etcd_request *rq = calloc(1, sizeof(*rq));

	if (!rq || !body) {
		free(rq);
		free(body);
		return NULL;
	}
	*rq = (struct rmp_etcd_request){ .e = e, .op = op, .path = path, .body = body,
				.cb = cb, .arg = arg, .ep = e->current };
	TAILQ_INSERT_TAIL(&e->live, rq, link);
	return rq;
}

/* auth_first -- rq waits for a token: an auth request goes first. */
static bool auth_first(struct rmp_etcd_request *rq)
{
	struct rmp_etcd *e = rq->e;
	struct rmp_etcd_request *a;
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
static bool send_attempt(struct rmp_etcd_request *rq)
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
	/* what an answer may cost: its headers, and its body (a watch's
	 * is endless: watch_chunk bounds each message) */
	evhttp_connection_set_max_headers_size(rq->conn, HEADERS_MAX);
	evhttp_connection_set_max_body_size(rq->conn,
		rq->op == RMP_ETCD_WATCH ? EV_SIZE_MAX :
		rq->op == RMP_ETCD_RANGE ? RMP_ETCD_BODY_MAX : BODY_SMALL_MAX);
	req = evhttp_request_new(on_answer, rq);
	if (!req)
		return false;
	evhttp_request_set_error_cb(req, on_error);
	if (rq->op == RMP_ETCD_WATCH) {
		if (!rq->pending)
			rq->pending = evbuffer_new();
		if (!rq->pending) {
			evhttp_request_free(req);
			return false;
		}
		evbuffer_drain(rq->pending, evbuffer_get_length(rq->pending));
		evhttp_request_set_chunked_cb(req, watch_chunk);
	}
	h = evhttp_request_get_output_headers(req);
	snprintf(host, sizeof(host), strchr(ep->host, ':') ? "[%s]:%u" :
		 "%s:%u", ep->host, ep->port);
	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Connection", "close");
	if (rq->op != RMP_ETCD_AUTH && e->token[0])
		evhttp_add_header(h, "Authorization", e->token);
	if (!rq->deadline)
		rq->deadline = evtimer_new(e->base, attempt_late, rq);
	if (!rq->deadline) {
		evhttp_request_free(req);
		return false;
	}
	/* the auth body is the secret: evhttp refers to it, no copy */
	if (rq->op == RMP_ETCD_AUTH)
		evbuffer_add_reference(evhttp_request_get_output_buffer(req),
				       rq->body, strlen(rq->body), NULL, NULL);
	else
		evbuffer_add(evhttp_request_get_output_buffer(req), rq->body,
			     strlen(rq->body));
	/* on failure evhttp has freed req */
	if (evhttp_make_request(rq->conn, req, EVHTTP_REQ_POST, rq->path))
		return false;
	rq->http = req;
	evtimer_add(rq->deadline, &e->timeout);
	return true;
}

static void start_attempt(struct rmp_etcd_request *rq)
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
	struct rmp_etcd_request *rq;
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

struct rmp_etcd_request *rmp_etcd_queue(struct rmp_etcd *e,
					enum rmp_etcd_op op, const char *path,
					char *body, rmp_etcd_cb *cb, void *arg)
{
	static const struct timeval now = { 0, 0 };
	struct rmp_etcd_request *rq = new_request(e, op, path, body, cb, arg);

	if (rq)
		event_add(e->kick_ev, &now);
	return rq;
}


/*
 * Watches. etcd's gateway answers a watch with a stream: a chunked 200
 * answer of JSON messages, one per line, for as long as the watch
 * lives. evhttp hands over each chunk (watch_chunk); a message may span
 * chunks, so bytes wait in rq->pending until their newline.
 */

/* An idle watch is dropped after this long (its owner watches again). */
#define WATCH_IDLE_S 3600

/* watch_stop -- cancel rq's HTTP request in flight. evhttp calls the
 * error callback (rq must live through it), not the answer's; from
 * within watch_chunk it defers freeing the request itself. */
static void watch_stop(struct rmp_etcd_request *rq)
{
	struct evhttp_request *h = rq->http;

	rq->http = NULL;
	if (h)
		evhttp_cancel_request(h);
}

/* watch_end -- rq is over: its callback gets err, last; rq is freed. */
static void watch_end(struct rmp_etcd_request *rq, int err, const char *text)
{
	watch_stop(rq);
	fail_request(rq, err, text);
}

/* watch_message -- one message of rq's stream (line, len bytes) to its
 * callback. false when rq is gone or must not be touched any more. */
static bool watch_message(struct rmp_etcd_request *rq, const char *line,
			  size_t len)
{
	static const struct timeval idle = { WATCH_IDLE_S, 0 };
	struct rmp_etcd *e = rq->e;
	struct rmp_etcd_reply r;

	if (rmp_etcd_parse(RMP_ETCD_WATCH, 200, line, len, &r)) {
		char text[sizeof(r.error)];
		int err = r.err;

		snprintf(text, sizeof(text), "%s", r.error);
		rmp_etcd_reply_clear(&r);
		watch_end(rq, err, text);
		return false;
	}
	if (r.created && !rq->created) {
		rq->created = true;
		e->current = rq->ep;
		evtimer_del(rq->deadline); /* a watch lives on */
		/* from now on the stream may stay quiet for long */
		evhttp_connection_set_timeout_tv(rq->conn, &idle);
	}
	snprintf(r.endpoint, sizeof(r.endpoint), "%s:%u", e->eps[rq->ep].host,
		 e->eps[rq->ep].port);
	rq->in_cb = true;
	e->depth++;
	if (rq->cb)
		rq->cb(&r, rq->arg);
	e->depth--;
	rq->in_cb = false;
	rmp_etcd_reply_clear(&r);
	if (e->freeing)
		return false;
	if (rq->cancel) {
		rq->cb = NULL;
		watch_end(rq, -ECANCELED, "canceled");
		return false;
	}
	return true;
}

static void watch_chunk(struct evhttp_request *req, void *arg)
{
	struct rmp_etcd_request *rq = arg;
	struct evbuffer_ptr nl;

	if (evbuffer_add_buffer(rq->pending, evhttp_request_get_input_buffer(req))) {
		watch_end(rq, -ENOMEM, "out of memory");
		return;
	}
	/* an error answer is one body: watch_answer reads it whole, and
	 * it is bounded as any answer's body is */
	if (evhttp_request_get_response_code(req) != 200) {
		if (evbuffer_get_length(rq->pending) > RMP_ETCD_BODY_MAX)
			watch_end(rq, -EPROTO, "etcd: an error answer too "
				  "long");
		return;
	}
	for (;;) {
		size_t n;
		const char *line;

		nl = evbuffer_search(rq->pending, "\n", 1, NULL);
		if (nl.pos < 0)
			break;
		n = (size_t)nl.pos;
		line = (const char *)evbuffer_pullup(rq->pending,
						     (ev_ssize_t)n + 1);
		if (!line) {
			watch_end(rq, -ENOMEM, "out of memory");
			return;
		}
		if (!watch_message(rq, line, n))
			return;
		evbuffer_drain(rq->pending, n + 1);
	}
	if (evbuffer_get_length(rq->pending) > RMP_ETCD_BODY_MAX)
		watch_end(rq, -EPROTO, "etcd: a watch message too long");
}

/* watch_answer -- evhttp is done with rq's request: the stream ended,
 * never began (an error answer), or the connection failed. */
static void watch_answer(struct rmp_etcd_request *rq,
			 struct evhttp_request *req, int status)
{
	struct rmp_etcd_endpoint *ep = &rq->e->eps[rq->ep];
	struct rmp_etcd_reply r;
	char text[200];
	const char *body;
	size_t len;

	rq->http = NULL; /* evhttp frees it when this returns */
	if (!status && !rq->created) {
		transport_error(rq); /* the next endpoint, as any request */
		return;
	}
	if (status == 200 || !status) {
		snprintf(text, sizeof(text), "%.150s:%u: the watch's stream %s",
			 ep->host, ep->port, status ? "ended" : "broke");
		fail_request(rq, -ECONNRESET, text);
		return;
	}
	evbuffer_add_buffer(rq->pending, evhttp_request_get_input_buffer(req));
	len = evbuffer_get_length(rq->pending);
	body = len ? (const char *)evbuffer_pullup(rq->pending, -1) : "";
	rmp_etcd_parse(RMP_ETCD_WATCH, status, body ? body : "", body ? len : 0,
		       &r);
	if (!r.err)
		r.err = -EPROTO;
	deliver(rq, &r);
	rmp_etcd_reply_clear(&r);
}

void rmp_etcd_watch_cancel(struct rmp_etcd_request *rq)
{
	struct rmp_etcd_request *other;

	if (!rq)
		return;
	if (rq->in_cb) {   /* watch_message ends it when the callback returns */
		rq->cancel = true;
		return;
	}
	rq->cb = NULL;
	/* a token request made for it goes on alone */
	TAILQ_FOREACH(other, &rq->e->live, link)
		if (other->waiting == rq)
			other->waiting = NULL;
	watch_stop(rq);
	fail_request(rq, -ECANCELED, "canceled");
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
	struct rmp_etcd_request *rq;

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
		struct rmp_etcd_request *rq;

		e->freeing = true;
		TAILQ_FOREACH(rq, &e->live, link)
			rq->cb = NULL;
		event_add(e->reap_ev, &now);
		return;
	}
	free_client(e);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_etcd.c -- common/etcd.c against a real etcd: each request's round
 * trip (put, range, txn, deleterange, lease grant, keepalive, revoke),
 * the move to the next endpoint when one is dead or silent, the timeout
 * that never blocks the loop (a timer keeps firing meanwhile), callbacks
 * never within the call, a client freed with requests in flight, TLS
 * (etcd's certificate checked, a client certificate), etcd's
 * authentication (a token from a user and password), and watches
 * (created first, then the prefix's events in order, no timeout however
 * long idle, canceled from outside or from their own callback, freed
 * with the client, ended by a compacted revision or etcd's death).
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <event2/event.h>

#include "../../common/etcd.h"
#include "../unit/check.h"
#include "etcd_fixture.h"

static struct event_base *base;
static struct etcd_fixture fx;

/* The last reply a callback got, copied out of it. */
struct got {
	bool done, in_call;   /* in_call: it came within the request's call */
	int calls;
	int err, code;
	int64_t id, ttl, count, deleted, revision;
	bool succeeded;
	unsigned nkvs;
	char value[256], key[256], error[200], endpoint[300];
	int64_t lease, mod_revision;
};

static bool calling; /* set while a request's call runs */

static void on_reply(const struct rmp_etcd_reply *r, void *arg)
{
	struct got *g = arg;

	g->done = true;
	g->in_call = calling;
	g->calls++;
	g->err = r->err;
	g->code = r->code;
	g->id = r->id;
	g->ttl = r->ttl;
	g->count = r->count;
	g->deleted = r->deleted;
	g->revision = r->revision;
	g->succeeded = r->succeeded;
	g->nkvs = r->nkvs;
	snprintf(g->error, sizeof(g->error), "%s", r->error);
	snprintf(g->endpoint, sizeof(g->endpoint), "%s", r->endpoint);
	g->value[0] = g->key[0] = '\0';
	g->lease = 0;
	if (r->nkvs) {
		snprintf(g->value, sizeof(g->value), "%.*s",
			 (int)r->kvs[0].value_len, r->kvs[0].value);
		snprintf(g->key, sizeof(g->key), "%.*s",
			 (int)r->kvs[0].key_len, r->kvs[0].key);
		g->lease = r->kvs[0].lease;
		g->mod_revision = r->kvs[0].mod_revision;
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nothing(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* run_until -- run the loop until *done or ms pass. */
static void run_until(const bool *done, uint64_t ms)
{
	struct timeval tv = { 0, 10000 };
	struct event *wake = event_new(base, -1, EV_PERSIST, nothing, NULL);
	uint64_t end = now_ms() + ms;

	event_add(wake, &tv);
	while (!*done && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(wake);
}

/* A ticker that notes the longest gap between its ticks. */
struct ticker {
	struct event *ev;
	uint64_t last, max_gap;
	unsigned ticks;
};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct ticker *t = arg;
	uint64_t now = now_ms();

	(void)fd;
	(void)what;
	if (t->last && now - t->last > t->max_gap)
		t->max_gap = now - t->last;
	t->last = now;
	t->ticks++;
}

static struct rmp_etcd *client(const uint16_t *ports, unsigned n,
			       uint64_t timeout_ms, const char *user,
			       const char *password)
{
	struct rmp_etcd_endpoint eps[RMP_ETCD_ENDPOINTS_MAX] = { 0 };
	struct rmp_etcd_params p = { .base = base, .endpoints = eps,
				     .nendpoints = n,
				     .timeout_ms = timeout_ms, .user = user,
				     .password = password };
	char err[256];

	for (unsigned i = 0; i < n; i++) {
		snprintf(eps[i].host, sizeof(eps[i].host), "127.0.0.1");
		eps[i].port = ports[i];
	}
	return rmp_etcd_new(&p, err, sizeof(err));
}

/* The request ret made is answered; g holds the reply. */
#define WAIT(g, ret)                                                    \
	do {                                                            \
		calling = false;                                        \
		CHECK_EQ(ret, 0);                                       \
		run_until(&(g)->done, 10000);                           \
		CHECK((g)->done);                                       \
	} while (0)
#define ASK(g, call)                                                    \
	do {                                                            \
		int ret_;                                               \
		memset((g), 0, sizeof(*(g)));                           \
		calling = true;                                         \
		ret_ = (call);                                          \
		WAIT(g, ret_);                                          \
		CHECK(!(g)->in_call);                                   \
	} while (0)

static void test_kv(struct rmp_etcd *e)
{
	struct got g;
	char *out;

	ASK(&g, rmp_etcd_put(e, "/t/a", "v1", 2, 0, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK(g.revision > 0);
	ASK(&g, rmp_etcd_put(e, "/t/b", "v\0two", 5, 0, on_reply, &g));
	CHECK_EQ(g.err, 0);
	ASK(&g, rmp_etcd_range(e, "/t/a", false, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_EQ(g.nkvs, 1);
	CHECK_STR(g.key, "/t/a");
	CHECK_STR(g.value, "v1");
	ASK(&g, rmp_etcd_range(e, "/t/", true, on_reply, &g));
	CHECK_EQ(g.count, 2);
	CHECK_EQ(g.nkvs, 2);
	ASK(&g, rmp_etcd_range(e, "/t/none", false, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_EQ(g.nkvs, 0);
	/* etcdctl sees what we put */
	out = fixture_etcdctl(&fx, "get /t/a --print-value-only");
	CHECK_STR(out, "v1\n");
	free(out);
	ASK(&g, rmp_etcd_delete(e, "/t/a", on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_EQ(g.deleted, 1);
	ASK(&g, rmp_etcd_range(e, "/t/a", false, on_reply, &g));
	CHECK_EQ(g.nkvs, 0);
}

static void test_lease_and_txn(struct rmp_etcd *e)
{
	struct got g;
	int64_t id, other, mod;
	char *out;

	ASK(&g, rmp_etcd_grant(e, 5, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK(g.id > 0);
	CHECK_EQ(g.ttl, 5);
	id = g.id;
	ASK(&g, rmp_etcd_grant(e, 5, on_reply, &g));
	other = g.id;
	ASK(&g, rmp_etcd_keepalive(e, id, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_EQ(g.id, id);
	CHECK_EQ(g.ttl, 5);

	/* create: only when absent; the loser reads the holder's value */
	ASK(&g, rmp_etcd_create(e, "/t/node", "first", 5, id, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK(g.succeeded);
	ASK(&g, rmp_etcd_create(e, "/t/node", "second", 6, other, on_reply,
				&g));
	CHECK_EQ(g.err, 0);
	CHECK(!g.succeeded);
	CHECK_EQ(g.nkvs, 1);
	CHECK_STR(g.value, "first");
	CHECK_EQ(g.lease, id);
	/* put_owned: only under its own lease */
	ASK(&g, rmp_etcd_put_owned(e, "/t/node", "third", 5, other, on_reply,
				   &g));
	CHECK(!g.succeeded);
	CHECK_STR(g.value, "first");
	ASK(&g, rmp_etcd_put_owned(e, "/t/node", "fourth", 6, id, on_reply,
				   &g));
	CHECK(g.succeeded);
	out = fixture_etcdctl(&fx, "get /t/node --print-value-only");
	CHECK_STR(out, "fourth\n");
	free(out);
	/* put_if: only when nobody wrote the key since its mod_revision */
	ASK(&g, rmp_etcd_range(e, "/t/node", false, on_reply, &g));
	mod = g.mod_revision;
	CHECK(mod > 0);
	ASK(&g, rmp_etcd_put_if(e, "/t/node", "fifth", 5, id, mod - 1,
				on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK(!g.succeeded);
	CHECK_STR(g.value, "fourth");
	CHECK_EQ(g.mod_revision, mod);
	ASK(&g, rmp_etcd_put_if(e, "/t/node", "sixth", 5, id, mod, on_reply,
				&g));
	CHECK(g.succeeded);
	ASK(&g, rmp_etcd_put_if(e, "/t/node", "seventh", 7, id, mod, on_reply,
				&g));
	CHECK(!g.succeeded);
	CHECK_STR(g.value, "sixth");

	/* revoke: the key goes with the lease */
	ASK(&g, rmp_etcd_revoke(e, id, on_reply, &g));
	CHECK_EQ(g.err, 0);
	ASK(&g, rmp_etcd_range(e, "/t/node", false, on_reply, &g));
	CHECK_EQ(g.nkvs, 0);
	ASK(&g, rmp_etcd_keepalive(e, id, on_reply, &g));
	CHECK_EQ(g.err, -ENOENT);
	ASK(&g, rmp_etcd_revoke(e, id, on_reply, &g));
	CHECK_EQ(g.err, -ENOENT);
	CHECK_HAS(g.error, "lease not found");
	ASK(&g, rmp_etcd_revoke(e, other, on_reply, &g));
	CHECK_EQ(g.err, 0);
}

static void test_failover(void)
{
	uint16_t dead = fixture_free_port(), silent, ports[3];
	struct ticker t = { 0 };
	struct timeval tick = { 0, 20000 };
	struct rmp_etcd *e;
	char want[64];
	uint64_t start, took;
	struct got g;
	int lfd = fixture_silent_listener(&silent);

	snprintf(want, sizeof(want), "127.0.0.1:%u", fx.client_port);
	/* a dead endpoint: the next one answers, and stays the first */
	ports[0] = dead;
	ports[1] = fx.client_port;
	e = client(ports, 2, 1000, NULL, NULL);
	CHECK(e != NULL);
	ASK(&g, rmp_etcd_put(e, "/t/f", "x", 1, 0, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_STR(g.endpoint, want);
	ASK(&g, rmp_etcd_range(e, "/t/f", false, on_reply, &g));
	CHECK_STR(g.value, "x");
	rmp_etcd_free(e);

	/* only dead ones: refused, saying so */
	ports[1] = fixture_free_port();
	e = client(ports, 2, 1000, NULL, NULL);
	ASK(&g, rmp_etcd_range(e, "/t/f", false, on_reply, &g));
	CHECK_EQ(g.err, -ECONNREFUSED);
	CHECK_HAS(g.error, "every other endpoint failed too");
	rmp_etcd_free(e);

	/* a silent one: a timeout, while a timer keeps its 20 ms pace */
	t.ev = event_new(base, -1, EV_PERSIST, on_tick, &t);
	event_add(t.ev, &tick);
	ports[0] = silent;
	e = client(ports, 1, 600, NULL, NULL);
	start = now_ms();
	ASK(&g, rmp_etcd_range(e, "/t/f", false, on_reply, &g));
	took = now_ms() - start;
	CHECK_EQ(g.err, -ETIMEDOUT);
	CHECK_HAS(g.error, "no answer in time");
	printf("# timed out after %" PRIu64 " ms; %u ticks, longest gap "
	       "%" PRIu64 " ms\n", took, t.ticks, t.max_gap);
	CHECK(took >= 550 && took < 3000);
	CHECK(t.ticks >= 20);
	CHECK(t.max_gap < 200);
	rmp_etcd_free(e);
	/* silent, then etcd: the answer comes from etcd after the timeout */
	ports[1] = fx.client_port;
	e = client(ports, 2, 600, NULL, NULL);
	ASK(&g, rmp_etcd_range(e, "/t/f", false, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_STR(g.value, "x");
	CHECK_STR(g.endpoint, want);
	rmp_etcd_free(e);
	event_free(t.ev);
	close(lfd);
}

/* What a watch's callback got, message by message. */
struct wlog {
	unsigned calls;          /* callbacks */
	bool first_created;      /* the first one said created, no events */
	bool created;
	unsigned nev;            /* events, as "PUT key=value" / "DEL key" */
	char ev[32][96];
	int err;                 /* of the last call (the watch is over) */
	unsigned errs;           /* calls with err set: at most one */
	unsigned after_err;      /* calls after that one: never */
	char error[200];
	bool in_call;            /* a call came within rmp_etcd_watch */
	/* cancel (or free the client) from within call number stop_at */
	unsigned stop_at;
	struct rmp_etcd_request *self;
	struct rmp_etcd **free_client;
};

static void on_watch(const struct rmp_etcd_reply *r, void *arg)
{
	struct wlog *l = arg;

	l->calls++;
	l->in_call |= calling;
	if (l->errs)
		l->after_err++;
	if (l->calls == 1)
		l->first_created = r->created && !r->err && !r->nkvs;
	l->created |= r->created;
	CHECK_EQ(r->op, RMP_ETCD_WATCH);
	if (r->err) {
		l->err = r->err;
		l->errs++;
		snprintf(l->error, sizeof(l->error), "%s", r->error);
	}
	for (unsigned i = 0; i < r->nkvs && l->nev < 32; i++) {
		const struct rmp_etcd_kv *k = &r->kvs[i];

		if (k->deleted)
			snprintf(l->ev[l->nev++], sizeof(l->ev[0]), "DEL %.*s",
				 (int)k->key_len, k->key);
		else
			snprintf(l->ev[l->nev++], sizeof(l->ev[0]),
				 "PUT %.*s=%.*s", (int)k->key_len, k->key,
				 (int)k->value_len, k->value);
	}
	if (l->stop_at && l->calls == l->stop_at) {
		if (l->free_client) {
			rmp_etcd_free(*l->free_client);
			*l->free_client = NULL;
		} else {
			rmp_etcd_watch_cancel(l->self);
			rmp_etcd_watch_cancel(l->self); /* twice: harmless */
		}
	}
}

/* wait_watch -- run the loop until l has nev events and is created, or
 * has ended, or ms pass. */
static void wait_watch(struct wlog *l, unsigned nev, uint64_t ms)
{
	struct timeval tv = { 0, 10000 };
	struct event *wake = event_new(base, -1, EV_PERSIST, nothing, NULL);
	uint64_t end = now_ms() + ms;

	event_add(wake, &tv);
	while (!(l->created && l->nev >= nev) && !l->errs && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(wake);
}

/* start_watch -- a watch of prefix from start into l (cleared). */
static struct rmp_etcd_request *start_watch(struct rmp_etcd *e,
					    const char *prefix, int64_t start,
					    struct wlog *l)
{
	struct rmp_etcd_request *w;

	memset(l, 0, sizeof(*l));
	calling = true;
	w = rmp_etcd_watch(e, prefix, start, on_watch, l);
	calling = false;
	l->self = w;
	return w;
}

static void put(struct rmp_etcd *e, const char *key, const char *value)
{
	struct got g;

	ASK(&g, rmp_etcd_put(e, key, value, strlen(value), 0, on_reply, &g));
	CHECK_EQ(g.err, 0);
}

/* test_watch -- a watch's stream: created first, then the events under
 * its prefix in order (a delete flagged), nothing from elsewhere, and
 * no timeout once created however long it idles (the client's timeout
 * is 300 ms). Canceled from outside, it gets no more calls. */
static void test_watch(void)
{
	uint16_t port = fx.client_port;
	struct rmp_etcd *e = client(&port, 1, 300, NULL, NULL);
	struct rmp_etcd_request *w;
	struct wlog l;
	struct got g;
	bool never = false;
	uint64_t t0;

	w = start_watch(e, "/w/", 0, &l);
	CHECK(w != NULL);
	wait_watch(&l, 0, 5000);
	CHECK(l.created);
	CHECK(l.first_created);
	CHECK_EQ(l.calls, 1);
	CHECK(!l.in_call);
	put(e, "/w/a", "1");
	put(e, "/x/out", "no");
	put(e, "/w", "no");        /* the prefix's own parent: not under it */
	put(e, "/w0", "no");
	ASK(&g, rmp_etcd_delete(e, "/w/a", on_reply, &g));
	CHECK_EQ(g.deleted, 1);
	put(e, "/w/b/deep", "2");
	wait_watch(&l, 3, 5000);
	CHECK_EQ(l.nev, 3);
	CHECK_STR(l.ev[0], "PUT /w/a=1");
	CHECK_STR(l.ev[1], "DEL /w/a");
	CHECK_STR(l.ev[2], "PUT /w/b/deep=2");
	CHECK_EQ(l.errs, 0);

	/* idle for more than three times the client's timeout: still there */
	t0 = now_ms();
	run_until(&never, 1000);
	CHECK(now_ms() - t0 >= 1000);
	CHECK_EQ(l.errs, 0);
	if (l.errs)
		printf("# idle watch ended: %s\n", l.error);
	put(e, "/w/c", "3");
	wait_watch(&l, 4, 3000);
	CHECK_EQ(l.nev, 4);
	CHECK_STR(l.ev[3], "PUT /w/c=3");
	CHECK_EQ(l.errs, 0);

	/* canceled from outside: no more calls, not even a last one */
	l.calls = 0;
	rmp_etcd_watch_cancel(w);
	put(e, "/w/d", "4");
	run_until(&never, 300);
	CHECK_EQ(l.calls, 0);
	CHECK_EQ(l.nev, 4);
	/* canceled before its first attempt was even made */
	w = start_watch(e, "/w/", 0, &l);
	rmp_etcd_watch_cancel(w);
	run_until(&never, 200);
	CHECK_EQ(l.calls, 0);
	rmp_etcd_watch_cancel(NULL);
	/* bad prefixes */
	errno = 0;
	CHECK(rmp_etcd_watch(e, "", 0, on_watch, &l) == NULL);
	CHECK_EQ(errno, EINVAL);
	rmp_etcd_free(e);
}

/* test_watch_cancel_within -- a watch canceled from its own callback,
 * at creation and at an event: no call after it, while other events
 * still come (the second put), and other watches go on. */
static void test_watch_cancel_within(void)
{
	uint16_t port = fx.client_port;
	struct rmp_etcd *e = client(&port, 1, 300, NULL, NULL);
	struct wlog a, b, other;
	bool never = false;

	/* canceled when told it is created */
	start_watch(e, "/wc/", 0, &a);
	a.stop_at = 1;
	/* canceled at its first event */
	start_watch(e, "/wc/", 0, &b);
	b.stop_at = 2;
	start_watch(e, "/wc/", 0, &other);
	wait_watch(&a, 0, 5000);
	wait_watch(&b, 0, 5000);
	wait_watch(&other, 0, 5000);
	CHECK(a.created && b.created && other.created);
	put(e, "/wc/1", "x");
	put(e, "/wc/2", "y");
	wait_watch(&other, 2, 5000);
	run_until(&never, 200);
	CHECK_EQ(a.calls, 1);
	CHECK_EQ(a.nev, 0);
	CHECK_EQ(b.calls, 2);
	CHECK_EQ(b.nev, 1);
	CHECK_STR(b.ev[0], "PUT /wc/1=x");
	CHECK_EQ(other.nev, 2);
	CHECK_EQ(a.errs + b.errs + other.errs, 0);
	rmp_etcd_watch_cancel(other.self);
	run_until(&never, 100);
	rmp_etcd_free(e);
}

/* test_watch_free -- the client freed with watches live (one created,
 * one not yet started), and from within a watch's callback: no call
 * after it; ASan finds nothing left. */
static void test_watch_free(void)
{
	uint16_t port = fx.client_port;
	struct rmp_etcd *e = client(&port, 1, 300, NULL, NULL);
	struct wlog a, b;
	bool never = false;

	start_watch(e, "/wf/", 0, &a);
	wait_watch(&a, 0, 5000);
	CHECK(a.created);
	start_watch(e, "/wf/", 0, &b);
	rmp_etcd_free(e);
	run_until(&never, 200);
	CHECK_EQ(a.calls, 1);
	CHECK_EQ(b.calls, 0);

	e = client(&port, 1, 300, NULL, NULL);
	start_watch(e, "/wf/", 0, &a);
	a.stop_at = 2;
	a.free_client = &e;
	wait_watch(&a, 0, 5000);
	CHECK(a.created);
	{
		/* the put on a client of its own: e goes in the callback */
		struct rmp_etcd *e2 = client(&port, 1, 300, NULL, NULL);

		put(e2, "/wf/1", "x");
		wait_watch(&a, 1, 5000);
		run_until(&never, 200);
		rmp_etcd_free(e2);
	}
	CHECK(e == NULL);
	CHECK_EQ(a.calls, 2);
	CHECK_EQ(a.errs, 0);
}

/* test_watch_compacted -- a watch from a compacted revision ends with
 * -ESTALE, once. */
static void test_watch_compacted(void)
{
	uint16_t port = fx.client_port;
	struct rmp_etcd *e = client(&port, 1, 300, NULL, NULL);
	struct wlog l;
	struct got g;
	char cmd[64], *out;

	put(e, "/wz/a", "1");
	ASK(&g, rmp_etcd_put(e, "/wz/a", "2", 1, 0, on_reply, &g));
	snprintf(cmd, sizeof(cmd), "compact %lld", (long long)g.revision);
	out = fixture_etcdctl(&fx, cmd);
	CHECK(out != NULL);
	free(out);
	start_watch(e, "/wz/", g.revision - 1, &l);
	wait_watch(&l, 99, 5000);
	CHECK_EQ(l.errs, 1);
	CHECK_EQ(l.err, -ESTALE);
	CHECK_EQ(l.nev, 0);
	printf("# compacted: %u calls, %s\n", l.calls, l.error);
	/* from the compacted revision itself: fine, its event first */
	start_watch(e, "/wz/", g.revision, &l);
	wait_watch(&l, 1, 5000);
	CHECK_EQ(l.errs, 0);
	CHECK_EQ(l.nev, 1);
	CHECK_STR(l.ev[0], "PUT /wz/a=2");
	rmp_etcd_watch_cancel(l.self);
	rmp_etcd_free(e);
}

/* test_watch_killed -- etcd killed under a created watch: one last call
 * with -ECONNRESET, none after; etcd started again. */
static void test_watch_killed(void)
{
	uint16_t port = fx.client_port;
	struct rmp_etcd *e = client(&port, 1, 300, NULL, NULL);
	struct wlog l;
	bool never = false;

	start_watch(e, "/wk/", 0, &l);
	wait_watch(&l, 0, 5000);
	CHECK(l.created);
	fixture_kill(&fx);
	wait_watch(&l, 99, 3000);
	run_until(&never, 200);
	CHECK_EQ(l.errs, 1);
	CHECK_EQ(l.err, -ECONNRESET);
	CHECK_EQ(l.after_err, 0);
	CHECK_HAS(l.error, "the watch's stream");
	printf("# killed: %s\n", l.error);
	/* a watch made while etcd is down fails as any request does */
	start_watch(e, "/wk/", 0, &l);
	wait_watch(&l, 0, 3000);
	CHECK_EQ(l.err, -ECONNREFUSED);
	CHECK_EQ(l.calls, 1);
	rmp_etcd_free(e);
	CHECK(fixture_start(&fx));
}

/* free_in_callback -- a callback that frees its client. */
static void free_in_callback(const struct rmp_etcd_reply *r, void *arg)
{
	struct rmp_etcd **e = arg;

	(void)r;
	rmp_etcd_free(*e);
	*e = NULL;
}

static void test_free(void)
{
	uint16_t port = fx.client_port, silent;
	int lfd = fixture_silent_listener(&silent);
	struct rmp_etcd *e = client(&silent, 1, 1000, NULL, NULL), *e2;
	struct got g = { 0 }, g2 = { 0 };
	bool never = false;

	/* freed with two requests in flight (to an endpoint that never
	 * answers): neither callback comes, not even later */
	CHECK_EQ(rmp_etcd_range(e, "/t/f", false, on_reply, &g), 0);
	CHECK_EQ(rmp_etcd_grant(e, 5, on_reply, &g2), 0);
	run_until(&never, 100);
	rmp_etcd_free(e);
	run_until(&never, 1500);
	CHECK(!g.done && !g2.done);
	/* freed from a callback, with another request in flight */
	e2 = client(&port, 1, 1000, NULL, NULL);
	CHECK_EQ(rmp_etcd_range(e2, "/t/f", false, free_in_callback, &e2), 0);
	CHECK_EQ(rmp_etcd_range(e2, "/t/f", false, on_reply, &g), 0);
	run_until(&never, 500);
	CHECK(e2 == NULL);
	close(lfd);
}

static void test_auth(void)
{
	uint16_t port = fx.client_port;
	struct rmp_etcd *e;
	struct got g;
	char *out;

	CHECK((out = fixture_etcdctl(&fx, "user add root:rootpw")) != NULL);
	free(out);
	CHECK((out = fixture_etcdctl(&fx, "user grant-role root root")) != NULL);
	free(out);
	CHECK((out = fixture_etcdctl(&fx, "role add rmp")) != NULL);
	free(out);
	CHECK((out = fixture_etcdctl(&fx, "role grant-permission rmp "
				     "--prefix=true readwrite /t/")) != NULL);
	free(out);
	CHECK((out = fixture_etcdctl(&fx, "user add rmp:pw")) != NULL);
	free(out);
	CHECK((out = fixture_etcdctl(&fx, "user grant-role rmp rmp")) != NULL);
	free(out);
	CHECK((out = fixture_etcdctl(&fx, "auth enable")) != NULL);
	free(out);

	e = client(&port, 1, 1000, "rmp", "pw");
	ASK(&g, rmp_etcd_put(e, "/t/auth", "yes", 3, 0, on_reply, &g));
	CHECK_EQ(g.err, 0);
	ASK(&g, rmp_etcd_grant(e, 5, on_reply, &g));
	CHECK_EQ(g.err, 0);
	ASK(&g, rmp_etcd_put(e, "/elsewhere", "no", 2, 0, on_reply, &g));
	CHECK_EQ(g.err, -EACCES);
	CHECK_HAS(g.error, "permission denied");
	rmp_etcd_free(e);
	e = client(&port, 1, 1000, "rmp", "wrong");
	ASK(&g, rmp_etcd_put(e, "/t/auth", "no", 2, 0, on_reply, &g));
	CHECK_EQ(g.err, -EACCES);
	CHECK_HAS(g.error, "authentication failed");
	rmp_etcd_free(e);
	e = client(&port, 1, 1000, NULL, NULL);
	ASK(&g, rmp_etcd_put(e, "/t/auth", "no", 2, 0, on_reply, &g));
	CHECK(g.err != 0);
	rmp_etcd_free(e);
	/* no endpoint answers the token request: the request fails too */
	port = fixture_free_port();
	e = client(&port, 1, 1000, "rmp", "pw");
	ASK(&g, rmp_etcd_put(e, "/t/auth", "no", 2, 0, on_reply, &g));
	CHECK_EQ(g.err, -ECONNREFUSED);
	CHECK_HAS(g.error, "cannot connect");
	rmp_etcd_free(e);
}

/* tls_client -- a client of host:port over https with ca, and the
 * fixture's client certificate when cert; err gets why not. */
static struct rmp_etcd *tls_client(const struct etcd_fixture *t,
				   const char *host, const char *ca,
				   bool cert, char *err, size_t errlen)
{
	struct rmp_etcd_endpoint ep = { .port = t->client_port, .tls = true };
	char certf[96], keyf[96];
	struct rmp_etcd_params p = { .base = base, .endpoints = &ep,
				     .nendpoints = 1, .timeout_ms = 2000,
				     .ca_file = ca };

	snprintf(ep.host, sizeof(ep.host), "%s", host);
	snprintf(certf, sizeof(certf), "%s/client.pem", t->dir);
	snprintf(keyf, sizeof(keyf), "%s/client.key", t->dir);
	if (cert) {
		p.cert_file = certf;
		p.key_file = keyf;
	}
	return rmp_etcd_new(&p, err, errlen);
}

/* test_tls -- https: etcd's certificate checked against the CA and the
 * endpoint's address or name, a client certificate whose key is kept
 * like a key file; the wrong CA or no client certificate fail, saying
 * why. */
static void test_tls(void)
{
	struct etcd_fixture t = { .tls = true };
	char ca[96], other[96], keyf[96], err[256];
	struct rmp_etcd *e;
	struct got g;

	if (!fixture_start(&t)) {
		CHECK(!"etcd with TLS did not start");
		fixture_stop(&t);
		return;
	}
	snprintf(ca, sizeof(ca), "%s/ca.pem", t.dir);
	snprintf(other, sizeof(other), "%s/other.pem", t.dir);
	snprintf(keyf, sizeof(keyf), "%s/client.key", t.dir);
	/* by address, then by name (the certificate has both) */
	e = tls_client(&t, "127.0.0.1", ca, true, err, sizeof(err));
	CHECK(e != NULL);
	ASK(&g, rmp_etcd_put(e, "/tls/a", "secret", 6, 0, on_reply, &g));
	CHECK_EQ(g.err, 0);
	rmp_etcd_free(e);
	e = tls_client(&t, "localhost", ca, true, err, sizeof(err));
	ASK(&g, rmp_etcd_range(e, "/tls/a", false, on_reply, &g));
	CHECK_EQ(g.err, 0);
	CHECK_STR(g.value, "secret");
	rmp_etcd_free(e);
	/* a CA that did not sign etcd's certificate */
	e = tls_client(&t, "127.0.0.1", other, true, err, sizeof(err));
	ASK(&g, rmp_etcd_range(e, "/tls/a", false, on_reply, &g));
	CHECK_EQ(g.err, -ECONNREFUSED);
	CHECK_HAS(g.error, "certificate");
	printf("# wrong CA: %s\n", g.error);
	rmp_etcd_free(e);
	/* no client certificate: etcd wants one */
	e = tls_client(&t, "127.0.0.1", ca, false, err, sizeof(err));
	ASK(&g, rmp_etcd_range(e, "/tls/a", false, on_reply, &g));
	CHECK(g.err != 0);
	printf("# no client certificate: %s\n", g.error);
	rmp_etcd_free(e);
	/* a key others may read is refused before any connection */
	chmod(keyf, 0644);
	e = tls_client(&t, "127.0.0.1", ca, true, err, sizeof(err));
	CHECK(e == NULL);
	CHECK_HAS(err, "readable or writable by others");
	rmp_etcd_free(e);
	fixture_stop(&t);
}

int main(void)
{
	struct rmp_etcd *e;
	uint16_t port;

	fixture_skip_without_etcd();
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (!base || !fixture_start(&fx)) {
		printf("Bail out! etcd did not start\n");
		fixture_stop(&fx);
		return 1;
	}
	port = fx.client_port;
	e = client(&port, 1, 2000, NULL, NULL);
	CHECK(e != NULL);
	if (e) {
		test_kv(e);
		test_lease_and_txn(e);
		rmp_etcd_free(e);
	}
	test_watch();
	test_watch_cancel_within();
	test_watch_free();
	test_watch_compacted();
	test_watch_killed();
	test_failover();
	test_free();
	test_tls();
	test_auth();
	fixture_stop(&fx);
	event_base_free(base);
	return check_done();
}

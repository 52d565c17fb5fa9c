/* SPDX-License-Identifier: MIT */
/*
 * test_etcd_auth.c -- common/etcd.c with etcd's JWT tokens (signed with an
 * RSA key, as production etcds are set up: 444-byte tokens), and a token
 * that a change of users makes stale ("revision of auth store is old"):
 * the client asks for a new one and the request goes through.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>

#include "../../common/etcd.h"
#include "../unit/check.h"
#include "etcd_fixture.h"

static struct event_base *base;

struct got {
	bool done;
	int err;
	char error[200];
};

static void on_reply(const struct rmp_etcd_reply *r, void *arg)
{
	struct got *g = arg;

	g->done = true;
	g->err = r->err;
	snprintf(g->error, sizeof(g->error), "%s", r->error);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void run_until(const bool *done, uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	while (!*done && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* put -- key = value by e: the reply's err (after at most 10 s). */
static int put(struct rmp_etcd *e, const char *key, struct got *g)
{
	memset(g, 0, sizeof(*g));
	if (rmp_etcd_put(e, key, "v", 1, 0, on_reply, g))
		return -ENOMEM;
	run_until(&g->done, 10000);
	return g->done ? g->err : -ETIMEDOUT;
}

static bool ctl(struct etcd_fixture *f, const char *args)
{
	char *out = fixture_etcdctl(f, args);

	free(out);
	return out != NULL;
}

int main(void)
{
	char keys[64], token[512];
	struct etcd_fixture fx = { 0 };
	struct rmp_etcd_endpoint ep = { 0 };
	struct rmp_etcd_params p = { .endpoints = &ep, .nendpoints = 1,
				     .timeout_ms = 2000, .user = "rmp",
				     .password = "pw" };
	struct rmp_etcd *e;
	struct got g;
	char err[256], cmd[600];

	fixture_skip_without_etcd();
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	snprintf(keys, sizeof(keys), "/tmp/rmp-jwt-XXXXXX");
	if (!base || !mkdtemp(keys)) {
		printf("Bail out! no event base or directory\n");
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "cd %s && openssl genrsa -out priv.pem 2048 "
		 "2>/dev/null && openssl rsa -in priv.pem -pubout -out pub.pem "
		 "2>/dev/null", keys);
	CHECK_EQ(system(cmd), 0);
	snprintf(token, sizeof(token), "jwt,pub-key=%s/pub.pem,priv-key=%s/"
		 "priv.pem,sign-method=RS256,ttl=10m", keys, keys);
	fx.auth_token = token;
	if (!fixture_start(&fx)) {
		printf("Bail out! etcd with JWT tokens did not start\n");
		fixture_stop(&fx);
		return 1;
	}
	CHECK(ctl(&fx, "user add root:rootpw"));
	CHECK(ctl(&fx, "user grant-role root root"));
	CHECK(ctl(&fx, "role add rmp"));
	CHECK(ctl(&fx, "role grant-permission rmp --prefix=true readwrite /t/"));
	CHECK(ctl(&fx, "user add rmp:pw"));
	CHECK(ctl(&fx, "user grant-role rmp rmp"));
	CHECK(ctl(&fx, "auth enable"));

	p.base = base;
	snprintf(ep.host, sizeof(ep.host), "127.0.0.1");
	ep.port = fx.client_port;
	e = rmp_etcd_new(&p, err, sizeof(err));
	CHECK(e != NULL);
	/* a JWT of an RSA key: some 450 bytes */
	CHECK_EQ(put(e, "/t/a", &g), 0);
	printf("# put with a JWT: %d %s\n", g.err, g.error);
	/* a change of users makes the token stale at etcd */
	CHECK(ctl(&fx, "--user root:rootpw user add other:pw2"));
	CHECK_EQ(put(e, "/t/b", &g), 0);
	printf("# put after a change of users: %d %s\n", g.err, g.error);
	CHECK_EQ(put(e, "/elsewhere", &g), -EACCES);
	rmp_etcd_free(e);
	fixture_stop(&fx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", keys);
	if (system(cmd))
		printf("# could not remove %s\n", keys);
	event_base_free(base);
	return check_done();
}

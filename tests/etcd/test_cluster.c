/* SPDX-License-Identifier: MIT */
/*
 * test_cluster.c -- daemon/cluster.c in a libevent loop against a real
 * etcd, its figures stubbed (rmp_ops_status): it registers with every
 * field of the node record, keeps the key past 3 x ttl, rewrites it when
 * free bytes move by more than 5 % of the pool and at most once a second,
 * a second daemon with the same name waits and gets the key only once
 * the first left, a killed etcd leaves the loop running with the state
 * saying so and one log line per outage, and the node registers again
 * within its ttl once etcd is back; with etcd's authentication on, a
 * credentials file (checked like a key file) gets it in, and so does
 * TLS to an https endpoint.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>

#include "../../daemon/cluster.h"
#include "../unit/check.h"
#include "cluster_harness.h"

#define TTL_MS 1000

/* A ticker: the loop's pace while etcd is away. */
static uint64_t tick_last, tick_gap;
static unsigned ticks;

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	uint64_t now = now_ms();

	(void)fd;
	(void)what;
	(void)arg;
	if (tick_last && now - tick_last > tick_gap)
		tick_gap = now - tick_last;
	tick_last = now;
	ticks++;
}

static void config(struct rmp_config *c)
{
	harness_config(c, TTL_MS);
}

/* test_register -- the record has every field, as the figures say. */
static void test_register(struct rmp_ops *ops, struct rmp_cluster **cl)
{
	struct rmp_config c;
	json_object *rec, *a, *l;
	int64_t now = (int64_t)time(NULL);

	config(&c);
	*cl = rmp_cluster_new(base, ops, &c);
	CHECK(*cl != NULL);
	CHECK(ops->cluster.enabled);
	CHECK(run_until(&ops->cluster.registered, 5000));
	CHECK_STR(ops->cluster.state, "registered");
	CHECK_STR(ops->cluster.node, "n1");
	CHECK(ops->cluster.keepalive_ms > 0);
	rec = record(NULL);
	CHECK(rec != NULL);
	CHECK_STR(get_str(rec, "node"), "n1");
	CHECK(json_object_object_get_ex(rec, "addresses", &a) &&
	      json_object_array_length(a) == 1);
	CHECK_STR(json_object_get_string(json_object_array_get_idx(a, 0)),
		  "192.0.2.1");
	CHECK_EQ(get_int(rec, "port"), 7471);
	CHECK_STR(get_str(rec, "device"), "rxe0");
	CHECK_EQ(get_int(rec, "numa_node"), 1);
	CHECK_STR(get_str(rec, "keys_mode"), "window");
	CHECK_EQ(get_int(rec, "pool_bytes"), (int64_t)GIB);
	CHECK_EQ(get_int(rec, "free_bytes"), (int64_t)(GIB / 2));
	CHECK_EQ(get_int(rec, "largest_free"), (int64_t)(GIB / 4));
	CHECK_STR(get_str(rec, "version"), RMP_VERSION);
	CHECK(json_object_object_get_ex(rec, "labels", &l));
	CHECK_STR(get_str(l, "rack"), "r1");
	CHECK_STR(get_str(l, "zone"), "z1");
	CHECK(get_int(rec, "registered") >= now - 2 &&
	      get_int(rec, "registered") <= now + 2);
	CHECK(get_int(rec, "updated") >= get_int(rec, "registered"));
	json_object_put(rec);
}

/* test_keepalive -- the key outlives 3 x ttl, kept alive. */
static void test_keepalive(struct rmp_ops *ops)
{
	json_object *rec;

	run_until(NULL, 3 * TTL_MS + 500);
	rec = record(NULL);
	CHECK(rec != NULL);
	json_object_put(rec);
	CHECK(ops->cluster.registered);
	CHECK(now_ms() - ops->cluster.keepalive_ms <= TTL_MS);
	CHECK_STR(ops->cluster.error, "");
}

/* test_refresh -- 4 % moves nothing; 6 % rewrites within a second or
 * so; moving on and on rewrites once a second at most. A node of its
 * own with ttl 10 s: the value is also rewritten once a ttl, which at
 * ttl 1 s would be every second. */
static void test_refresh(void)
{
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;
	json_object *rec;
	int64_t v0 = 0, v1 = 0, v2 = 0;

	harness_config(&c, 10000);
	cl = rmp_cluster_new(base, &ops, &c);
	CHECK(cl != NULL);
	CHECK(run_until(&ops.cluster.registered, 5000));
	json_object_put(record(&v0));
	fig.free_bytes = GIB / 2 - GIB / 25;
	run_until(NULL, 1500);
	rec = record(&v1);
	CHECK_EQ(get_int(rec, "free_bytes"), (int64_t)(GIB / 2));
	CHECK_EQ(v1, v0);
	json_object_put(rec);
	fig.free_bytes = GIB / 2 - 3 * GIB / 50;
	run_until(NULL, 1500);
	rec = record(&v1);
	CHECK_EQ(get_int(rec, "free_bytes"), (int64_t)(GIB / 2 - 3 * GIB / 50));
	CHECK_EQ(v1, v0 + 1);
	json_object_put(rec);
	/* 1 % less every 100 ms for 3 s: a rewrite a second, not 30 */
	for (int i = 0; i < 30; i++) {
		fig.free_bytes = GIB / 2 - (uint64_t)(i + 7) * GIB / 100;
		run_until(NULL, 100);
	}
	json_object_put(record(&v2));
	printf("# %" PRId64 " rewrites in 3 s of moving free bytes\n", v2 - v1);
	CHECK(v2 - v1 >= 2 && v2 - v1 <= 4);
	fig.free_bytes = GIB / 2;
	rmp_cluster_leave(cl);
	while (cl && !rmp_cluster_gone(cl))
		event_base_loop(base, EVLOOP_ONCE);
	rmp_cluster_free(cl);
}

/* test_taken -- a second daemon named n1 waits (one log line), and gets
 * the key once the first left (which revokes its lease at once). */
static void test_taken(struct rmp_ops *ops, struct rmp_cluster **cl,
		       struct rmp_ops *ops2, struct rmp_cluster **cl2)
{
	struct rmp_config c;
	uint64_t start;
	json_object *rec;

	config(&c);
	log_reset();
	*cl2 = rmp_cluster_new(base, ops2, &c);
	CHECK(*cl2 != NULL);
	run_until(NULL, 2500);
	CHECK(!ops2->cluster.registered);
	CHECK_STR(ops2->cluster.state, "name-taken");
	CHECK_EQ(log_count("node name n1 is taken"), 1);
	CHECK(ops->cluster.registered);
	start = now_ms();
	rmp_cluster_leave(*cl);
	while (!rmp_cluster_gone(*cl) && now_ms() - start < 2000)
		event_base_loop(base, EVLOOP_ONCE);
	CHECK(rmp_cluster_gone(*cl));
	CHECK_EQ(log_count("cluster: left (lease"), 1);
	rmp_cluster_free(*cl);
	*cl = NULL;
	CHECK(run_until(&ops2->cluster.registered, 2500));
	printf("# the second daemon registered %" PRIu64 " ms after the first "
	       "left\n", now_ms() - start);
	rec = record(NULL);
	CHECK(rec != NULL);
	json_object_put(rec);
}

/* test_outage -- etcd killed: the loop runs on, the state says so, one
 * log line; etcd back: registered again within ttl. */
static void test_outage(struct rmp_ops *ops2, int round)
{
	struct timeval tv = { 0, 20000 };
	struct event *t = event_new(base, -1, EV_PERSIST, on_tick, NULL);
	uint64_t back;

	log_reset();
	ticks = 0;
	tick_last = tick_gap = 0;
	event_add(t, &tv);
	fixture_kill(&fx);
	run_until(NULL, 3000);
	CHECK(!ops2->cluster.registered);
	CHECK_STR(ops2->cluster.state, "etcd-unreachable");
	CHECK(ops2->cluster.error[0] != '\0');
	printf("# round %d: error \"%s\"; %u ticks, longest gap %" PRIu64
	       " ms\n", round, ops2->cluster.error, ticks, tick_gap);
	CHECK(ticks >= 100);
	CHECK(tick_gap < 300);
	CHECK_EQ(log_count("cluster: etcd:"), 1);
	CHECK_EQ(ops2->cluster.outages, (uint64_t)round);
	CHECK(fixture_start(&fx));
	back = now_ms();
	CHECK(run_until(&ops2->cluster.registered, 5000));
	printf("# registered again %" PRIu64 " ms after etcd answered\n",
	       now_ms() - back);
	CHECK(now_ms() - back <= TTL_MS + 500);
	CHECK_EQ(log_count("cluster: etcd answers again"), 1);
	json_object_put(record(NULL));
	event_free(t);
}

/* test_lease_revoked -- someone revokes the node's lease: the next
 * keep-alive finds it gone, and the node registers again under a new
 * one within its ttl. */
static void test_lease_revoked(struct rmp_ops *ops2)
{
	int64_t lease = key_lease(NULL), again;
	uint64_t start;
	char cmd[64];

	CHECK(lease != 0);
	snprintf(cmd, sizeof(cmd), "lease revoke %" PRIx64, (uint64_t)lease);
	free(fixture_etcdctl(&fx, cmd));
	start = now_ms();
	while (!log_count("is gone (it ran out)") && now_ms() - start < 3000)
		event_base_loop(base, EVLOOP_ONCE);
	run_until(&ops2->cluster.registered, 3000);
	CHECK(ops2->cluster.registered);
	printf("# registered again %" PRIu64 " ms after its lease was "
	       "revoked\n", now_ms() - start);
	CHECK(now_ms() - start <= TTL_MS);
	CHECK_EQ(log_count("is gone (it ran out): registering again"), 1);
	again = key_lease(NULL);
	CHECK(again != 0 && again != lease);
}

/* test_credentials -- an etcd with authentication: a credentials file
 * kept like a key file and holding USER:PASSWORD registers the node
 * (named after the host, as none is set); one others may read, or one
 * that is not USER:PASSWORD, stops the start with the reason. */
static void test_credentials(void)
{
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;
	char host[256] = "";
	static const char *const setup[] = {
		"user add root:rootpw", "user grant-role root root",
		"role add rmp",
		"role grant-permission rmp --prefix=true readwrite /rmpool/",
		"user add rmp:pw", "user grant-role rmp rmp", "auth enable",
	};

	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
		char *out = fixture_etcdctl(&fx, setup[i]);

		CHECK(out != NULL);
		free(out);
	}
	config(&c);
	c.cluster.node[0] = '\0';
	snprintf(c.cluster.credentials_file, sizeof(c.cluster.credentials_file),
		 "%s/cred", fx.dir);
	CHECK(write_file(c.cluster.credentials_file, "rmp:pw\n", 0644));
	log_reset();
	CHECK(rmp_cluster_new(base, &ops, &c) == NULL);
	CHECK_EQ(log_count("readable or writable by others"), 1);
	CHECK(write_file(c.cluster.credentials_file, "rmp-pw\n", 0600));
	CHECK(rmp_cluster_new(base, &ops, &c) == NULL);
	CHECK_EQ(log_count("not USER:PASSWORD"), 1);
	CHECK(write_file(c.cluster.credentials_file, "rmp:pw\n", 0600));
	cl = rmp_cluster_new(base, &ops, &c);
	CHECK(cl != NULL);
	CHECK(run_until(&ops.cluster.registered, 5000));
	gethostname(host, sizeof(host) - 1);
	if (rmp_cluster_node_ok(host))
		CHECK_STR(ops.cluster.node, host);
	rmp_cluster_leave(cl);
	while (cl && !rmp_cluster_gone(cl))
		event_base_loop(base, EVLOOP_ONCE);
	CHECK_EQ(log_count("cluster: left (lease"), 1);
	rmp_cluster_free(cl);
}

/* test_tls -- [cluster] etcd = https://...: ca_file, cert_file and
 * key_file reach the client, and the node registers over TLS. */
static void test_tls(void)
{
	struct etcd_fixture t = { .tls = true };
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;

	if (!fixture_start(&t)) {
		CHECK(!"etcd with TLS did not start");
		fixture_stop(&t);
		return;
	}
	config(&c);
	snprintf(c.cluster.etcd, sizeof(c.cluster.etcd), "%s", t.url);
	snprintf(c.cluster.ca_file, sizeof(c.cluster.ca_file), "%s/ca.pem",
		 t.dir);
	snprintf(c.cluster.cert_file, sizeof(c.cluster.cert_file),
		 "%s/client.pem", t.dir);
	snprintf(c.cluster.key_file, sizeof(c.cluster.key_file),
		 "%s/client.key", t.dir);
	cl = rmp_cluster_new(base, &ops, &c);
	CHECK(cl != NULL);
	CHECK(run_until(&ops.cluster.registered, 5000));
	CHECK_STR(ops.cluster.error, "");
	rmp_cluster_leave(cl);
	while (cl && !rmp_cluster_gone(cl))
		event_base_loop(base, EVLOOP_ONCE);
	rmp_cluster_free(cl);
	fixture_stop(&t);
}

int main(void)
{
	struct rmp_ops ops = { 0 }, ops2 = { 0 };
	struct rmp_cluster *cl = NULL, *cl2 = NULL;
	json_object *rec;

	if (!harness_start())
		return 1;
	test_register(&ops, &cl);
	test_keepalive(&ops);
	test_taken(&ops, &cl, &ops2, &cl2);
	test_outage(&ops2, 1);
	test_outage(&ops2, 2);
	log_reset();
	test_lease_revoked(&ops2);
	/* leaving removes the key at once */
	rmp_cluster_leave(cl2);
	while (!rmp_cluster_gone(cl2))
		event_base_loop(base, EVLOOP_ONCE);
	rec = record(NULL);
	CHECK(rec == NULL);
	CHECK_STR(ops2.cluster.state, "left");
	rmp_cluster_free(cl2);
	test_refresh();
	test_credentials();
	test_tls();
	harness_end();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * test_cluster_faults.c -- daemon/cluster.c where etcd answers but not
 * as hoped, against a real etcd: a second daemon whose name is taken
 * waits quietly and says "name-taken" all along; a node whose key was
 * deleted writes it again within its ttl; one whose key someone else
 * wrote says the name is taken (once) and takes it back when it is
 * free; a partition shorter than the ttl keeps the lease (retries close
 * enough); a keep-alive that hangs longer than the ttl stops the node
 * saying "registered"; an etcd user who may read but not write the
 * prefix is one outage, one log line, with a backoff that grows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>

#include "../../common/util.h"
#include "../../daemon/cluster.h"
#include "../unit/check.h"
#include "cluster_harness.h"

/* node_start -- a daemon of c in the loop, registered within 5 s. */
static struct rmp_cluster *node_start(struct rmp_ops *ops,
				      const struct rmp_config *c)
{
	struct rmp_cluster *cl = rmp_cluster_new(base, ops, c);

	CHECK(cl != NULL);
	CHECK(cl && run_until(&ops->cluster.registered, 5000));
	return cl;
}

/* node_stop -- it leaves (lease revoked) and is freed. */
static void node_stop(struct rmp_cluster *cl)
{
	uint64_t end = now_ms() + 3000;

	rmp_cluster_leave(cl);
	while (cl && !rmp_cluster_gone(cl) && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	rmp_cluster_free(cl);
}

/* next_keepalive -- run until the node's next keep-alive was answered. */
static bool next_keepalive(struct rmp_ops *ops, uint64_t ms)
{
	uint64_t ka = ops->cluster.keepalive_ms, end = now_ms() + ms;

	while (ops->cluster.keepalive_ms == ka && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	return ops->cluster.keepalive_ms != ka;
}

/* test_taken_quiet -- while n1 is registered a second n1 waits: it says
 * "name-taken" at every turn of the loop (never "registering" between
 * two tries) and logs the wait once, not two transitions a second. */
static void test_taken_quiet(void)
{
	struct rmp_ops ops = { 0 }, ops2 = { 0 };
	struct rmp_cluster *cl, *cl2;
	struct rmp_config c;
	unsigned turns = 0, other = 0, lines;
	uint64_t end;

	harness_config(&c, 2000);
	cl = node_start(&ops, &c);
	log_reset();
	cl2 = rmp_cluster_new(base, &ops2, &c);
	CHECK(cl2 != NULL);
	end = now_ms() + 5000;
	while (strcmp(ops2.cluster.state, "name-taken") && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	CHECK_STR(ops2.cluster.state, "name-taken");
	lines = log_count("cluster:");
	end = now_ms() + 4000;
	while (now_ms() < end) {
		event_base_loop(base, EVLOOP_ONCE);
		turns++;
		other += strcmp(ops2.cluster.state, "name-taken") != 0;
	}
	printf("# 4 s taken: %u of %u turns not \"name-taken\", %u log lines "
	       "(info or above)\n", other, turns,
	       log_count("cluster:") - lines);
	CHECK_EQ(other, 0);
	CHECK_EQ(log_count("cluster:") - lines, 0);
	CHECK_EQ(log_count("node name n1 is taken"), 1);
	CHECK(!ops2.cluster.registered);
	CHECK(ops.cluster.registered);
	node_stop(cl2);
	node_stop(cl);
}

/* test_key_deleted -- a registered node's key is looked at each ttl
 * without being written (its version stays); after `etcdctl del` the
 * node writes it again under the same lease within its ttl (+ a tick),
 * and says so once. */
static void test_key_deleted(void)
{
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;
	int64_t lease, version0 = 0, version1 = 0;
	uint64_t start, end;
	bool exists = false;

	harness_config(&c, 2000);
	cl = node_start(&ops, &c);
	lease = key_lease(NULL);
	CHECK(lease != 0);
	/* the key is looked at each ttl, but not written: watchers (every
	 * library client) get no event while nothing moved */
	json_object_put(record(&version0));
	run_until(NULL, 2 * 2000 + 500);
	json_object_put(record(&version1));
	printf("# the record's version over two ttl of quiet: %lld, %lld\n",
	       (long long)version0, (long long)version1);
	CHECK(version0 > 0);
	CHECK_EQ(version1, version0);
	log_reset();
	free(fixture_etcdctl(&fx, "del " KEY));
	CHECK(key_lease(&exists) == 0 && !exists);
	start = now_ms();
	end = start + 2000 + 1500;
	while (!exists && now_ms() < end) {
		run_until(NULL, 100);
		key_lease(&exists);
	}
	printf("# the deleted key is back after %" PRIu64 " ms\n",
	       now_ms() - start);
	CHECK(exists);
	CHECK_EQ(key_lease(NULL), lease);
	CHECK(ops.cluster.registered);
	CHECK_STR(ops.cluster.state, "registered");
	CHECK_EQ(log_count("was removed"), 1);
	node_stop(cl);
}

/* test_impostor -- someone writes the key of a registered node without
 * its lease: the node says "name-taken" within its ttl (+ a tick), logs
 * it once, leaves that value alone, and registers again once the key
 * is deleted. */
static void test_impostor(void)
{
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;
	char *out;
	uint64_t start;

	harness_config(&c, 2000);
	cl = node_start(&ops, &c);
	log_reset();
	free(fixture_etcdctl(&fx, "put " KEY " impostor"));
	start = now_ms();
	while (ops.cluster.registered && now_ms() - start < 3500)
		event_base_loop(base, EVLOOP_ONCE);
	printf("# the key written by another seen after %" PRIu64 " ms\n",
	       now_ms() - start);
	CHECK(!ops.cluster.registered);
	run_until(NULL, 2000);
	CHECK_STR(ops.cluster.state, "name-taken");
	CHECK_EQ(log_count("node name n1 is taken"), 1);
	out = fixture_etcdctl(&fx, "get --print-value-only " KEY);
	CHECK_STR(out, "impostor\n");
	free(out);
	free(fixture_etcdctl(&fx, "del " KEY));
	CHECK(run_until(&ops.cluster.registered, 2500));
	CHECK(key_lease(NULL) != 0);
	node_stop(cl);
}

/* test_partition -- the node cannot reach etcd (a relay killed) from
 * just after a keep-alive until ttl 10 s is 80 % gone, while etcd runs
 * on: the retries come often enough that the first one after the relay
 * is back keeps the lease, which never runs out: the key stays under
 * the same lease all along. */
static void test_partition(void)
{
	struct etcd_proxy p = { 0 };
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;
	int64_t lease;
	uint64_t t0;

	CHECK(proxy_start(&p, &fx));
	harness_config(&c, 10000);
	snprintf(c.cluster.etcd, sizeof(c.cluster.etcd), "%s", p.url);
	cl = node_start(&ops, &c);
	lease = key_lease(NULL);
	CHECK(next_keepalive(&ops, 5000));
	t0 = now_ms();
	proxy_kill(&p);
	log_reset();
	run_until(NULL, 8000 - (now_ms() - t0));
	CHECK(!ops.cluster.registered);
	CHECK(proxy_start(&p, &fx));
	CHECK(run_until(&ops.cluster.registered, 5000));
	printf("# registered again %" PRIu64 " ms after the last keep-alive "
	       "before the partition, %" PRIu64 " failed requests\n",
	       now_ms() - t0, ops.cluster.errors);
	CHECK_EQ(key_lease(NULL), lease);
	CHECK_EQ(log_count_all("ran out during the outage"), 0);
	CHECK_EQ(log_count_all("is gone"), 0);
	node_stop(cl);
	proxy_kill(&p);
}

/* test_hung_keepalive -- etcd stopped (SIGSTOP) behind seven more
 * endpoints that take connections and never answer: a keep-alive then
 * takes 8 attempt timeouts (6 s at ttl 3 s), yet the node does not say
 * "registered" for more than ttl + a tick after its last keep-alive.
 * Once etcd runs again the node registers again. */
static void test_hung_keepalive(void)
{
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;
	int silent[7];
	uint64_t end, lie = 0;
	size_t len;

	harness_config(&c, 3000);
	for (int i = 0; i < 7; i++) {
		uint16_t port = 0;

		silent[i] = fixture_silent_listener(&port);
		CHECK(silent[i] >= 0);
		len = strlen(c.cluster.etcd);
		snprintf(c.cluster.etcd + len, sizeof(c.cluster.etcd) - len,
			 ",http://127.0.0.1:%u", port);
	}
	cl = node_start(&ops, &c);
	CHECK(next_keepalive(&ops, 3000));
	fixture_pause(&fx);
	end = now_ms() + 7000;
	while (now_ms() < end) {
		event_base_loop(base, EVLOOP_ONCE);
		if (ops.cluster.registered)
			lie = RMP_MAX(lie, rmp_now_ms() -
					   ops.cluster.keepalive_ms);
	}
	printf("# said \"registered\" up to %" PRIu64 " ms after the last "
	       "keep-alive (ttl 3000 ms)\n", lie);
	CHECK(lie <= 3000 + 1000 + 300); /* ttl, a tick, slack */
	CHECK(!ops.cluster.registered);
	CHECK_HAS(ops.cluster.error, "more than the ttl");
	fixture_resume(&fx);
	CHECK(run_until(&ops.cluster.registered, 15000));
	node_stop(cl);
	for (int i = 0; i < 7; i++)
		close(silent[i]);
}

/* test_read_only -- an etcd user who may read the prefix but not write
 * it: the node never registers; that is one outage (one warning, no
 * "answers again" in between), and the retries back off (0.5 s, 1 s,
 * 2 s, 4 s at ttl 10 s: 5 failures in 8 s, not one every turn). Last:
 * it leaves etcd's authentication on. */
static void test_read_only(void)
{
	static const char *const setup[] = {
		"user add root:rootpw", "user grant-role root root",
		"role add ro",
		"role grant-permission ro --prefix=true read /rmpool/",
		"user add ro:pw", "user grant-role ro ro", "auth enable",
	};
	struct rmp_ops ops = { 0 };
	struct rmp_cluster *cl;
	struct rmp_config c;

	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
		char *out = fixture_etcdctl(&fx, setup[i]);

		CHECK(out != NULL);
		free(out);
	}
	harness_config(&c, 10000);
	snprintf(c.cluster.credentials_file, sizeof(c.cluster.credentials_file),
		 "%s/cred-ro", fx.dir);
	CHECK(write_file(c.cluster.credentials_file, "ro:pw\n", 0600));
	log_reset();
	cl = rmp_cluster_new(base, &ops, &c);
	CHECK(cl != NULL);
	run_until(NULL, 8000);
	printf("# read-only user, 8 s: %" PRIu64 " failed requests, %" PRIu64
	       " outages, last error \"%s\"\n", ops.cluster.errors,
	       ops.cluster.outages, ops.cluster.error);
	CHECK(!ops.cluster.registered);
	CHECK_EQ(ops.cluster.outages, 1);
	CHECK_EQ(log_count("cluster: etcd:"), 1);
	CHECK_EQ(log_count("answers again"), 0);
	CHECK(ops.cluster.errors >= 3 && ops.cluster.errors <= 6);
	CHECK_HAS(ops.cluster.error, "permission denied");
	node_stop(cl);
}

/* wanted -- RMP_TEST_ONLY unset, or naming this test (to run one). */
static bool wanted(const char *name)
{
	const char *only = getenv("RMP_TEST_ONLY");

	return !only || strstr(only, name);
}

int main(void)
{
	if (!harness_start())
		return 1;
	if (wanted("taken_quiet"))
		test_taken_quiet();
	if (wanted("key_deleted"))
		test_key_deleted();
	if (wanted("impostor"))
		test_impostor();
	if (wanted("partition"))
		test_partition();
	if (wanted("hung_keepalive"))
		test_hung_keepalive();
	if (wanted("read_only"))
		test_read_only();
	harness_end();
	return check_done();
}

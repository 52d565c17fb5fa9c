/* SPDX-License-Identifier: MIT */
/*
 * test_cluster_faults.c -- daemon/cluster.c where etcd answers but not
 * as hoped, against a real etcd: a second daemon whose name is taken
 * waits quietly and says "name-taken" all along.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>

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
	harness_end();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* cluster.h -- this node's membership in the cluster, kept in etcd. */
#ifndef RMP_CLUSTER_H
#define RMP_CLUSTER_H

#include <stdbool.h>

struct event_base;
struct rmp_config;
struct rmp_ops;
struct rmp_cluster;

/*
 * With [cluster] etcd set, the daemon holds the key PREFIX "nodes/" NODE
 * in etcd under an etcd lease of [cluster] ttl, its value a JSON object
 * (see docs/design-notes.md "The node record"): addresses, port,
 * device, NUMA node, key mode, pool, free and largest free bytes,
 * version, labels, and the times of the registration and of the value.
 *
 * Everything runs from the event loop, through common/etcd.c: nothing
 * blocks. The key is created only where nobody holds it (another daemon
 * with this node name, or this node's previous run whose lease has not
 * run out): the daemon then logs once and tries again every second. The
 * lease is kept alive every ttl/3; the value is rewritten when the free
 * bytes moved by more than 5 % of the pool (looked at once a second) and
 * at least once a ttl, only while the key is under the lease: a key
 * deleted is created again, one held by another (or by no lease) is a
 * taken name. When etcd fails the daemon keeps serving, logs once per
 * outage (over when registered again), waits (500 ms, doubling, at most
 * ttl/2; at most min(1 s, ttl/6) while a failed keep-alive's lease may
 * still be alive) and tries again: the lease it had if etcd kept it (a
 * restarted etcd does), else a new one. Registered with the last
 * keep-alive more than a ttl ago counts as an etcd failure. Its figures
 * come from rmp_ops_status(); what it does is published in
 * ops->cluster.
 */

/*
 * rmp_cluster_new -- start the membership of cfg's [cluster] (etcd must
 * be set): node name (the host name when not set), credentials file,
 * endpoints. NULL with errno and a logged reason when one of them is
 * not usable (the start then fails, like a bad key file).
 */
struct rmp_cluster *rmp_cluster_new(struct event_base *base,
				    struct rmp_ops *ops,
				    const struct rmp_config *cfg);
/*
 * rmp_cluster_leave -- stop registering and revoke the etcd lease, so
 * the node leaves the cluster at once (SIGTERM, stop). Asynchronous:
 * rmp_cluster_gone says when it is done (or given up: the key then goes
 * when its ttl runs out).
 */
void rmp_cluster_leave(struct rmp_cluster *cl);
bool rmp_cluster_gone(const struct rmp_cluster *cl);
/* Free it, requests in flight forgotten. Accepts NULL. */
void rmp_cluster_free(struct rmp_cluster *cl);

#endif /* RMP_CLUSTER_H */

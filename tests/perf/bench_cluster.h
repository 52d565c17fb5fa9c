/* SPDX-License-Identifier: MIT */
/* bench_cluster.h -- rmpool-bench on a cluster (-C URL): its leases placed by rmp_cluster_alloc, and etcd's count of the reads made of it (to show that none is on the timed path). */
#ifndef RMP_BENCH_CLUSTER_H
#define RMP_BENCH_CLUSTER_H

#include <stdint.h>

#include "rmpool.h"

#define BENCH_REPLICAS_MAX 3u
#define BENCH_STRIPES_MAX 4u
#define BENCH_EC_N_MAX 16u /* k + m of an erasure-coded lease: 12 + 4 */
#define BENCH_MEMBERS_MAX BENCH_EC_N_MAX /* >= replicas x stripes, 12 */

/*
 * What rmp_cluster_alloc is asked for. A lease kind the library gains
 * (striped leases: stripes, stripe_unit) is a field here, an option in
 * bench_args.c, a filling in bench_cluster_alloc and a part of
 * bench_cluster_suffix.
 */
struct bench_cluster {
	const char *url;     /* -C: the etcd endpoints; NULL: no cluster */
	unsigned replicas;   /* --replicas: 1, or 2..3 (a mirrored lease) */
	unsigned stripes;    /* --stripes: 1, or 2..4 (a striped lease) */
	const char *prefer;  /* --prefer LABEL=VALUE: those nodes first */
	unsigned ec_k, ec_m; /* --ec K+M: an erasure-coded lease (else 0) */
	int lose;            /* --lose I: member I freed on its node before
			      * the run (a degraded lease); -1: none */
	bool copy;           /* --copy: the buffer not registered: the
			      * library copies through its bounce buffers
			      * (and late binds an EC lease's row reads) */
	struct rmp_cluster *cl;
};

/* bench_cluster_open -- rmp_cluster_open(bc->url) with each node's
 * connection made with co; an error exits 1. */
void bench_cluster_open(struct bench_cluster *bc,
			const struct rmp_client_opts *co);

/* bench_cluster_alloc -- a lease of length bytes with flags, placed as
 * bc says; an error exits 1. */
void bench_cluster_alloc(struct bench_cluster *bc, uint64_t length,
			 uint32_t flags, struct rmp_lease **out);

/* bench_cluster_clients -- the cluster's connection to each replica of l
 * (one for a lease of one server), in the lease's order, into out (max
 * of them); how many. An error exits 1. */
unsigned bench_cluster_clients(struct bench_cluster *bc, struct rmp_lease *l,
			       struct rmp_client **out, unsigned max);

/* bench_cluster_members -- how many members a lease placed as bc says
 * has (replicas x stripes, or k + m). */
unsigned bench_cluster_members(const struct bench_cluster *bc);

/* bench_cluster_leased -- the bytes this tenant holds on the nodes of
 * the n connections cs (rmp_stat's client_bytes, each node once); an
 * error exits 1. */
uint64_t bench_cluster_leased(struct bench_cluster *bc,
			      struct rmp_client *const *cs, unsigned n);

/* bench_cluster_lose -- free member i of l on its node, through its own
 * token (as if the node had lost it): the lease's next call there finds
 * it gone. An error exits 1. */
void bench_cluster_lose(struct bench_cluster *bc, struct rmp_lease *l,
			unsigned i);

/* bench_cluster_suffix -- what a result's name gets: "-r2" (replicas),
 * "-s2" (stripes) after it when striped, "-ec4+2" for an erasure-coded
 * lease; "-lost" when a member was lost (--lose); "-copy" with
 * --copy. */
void bench_cluster_suffix(const struct bench_cluster *bc, char *buf,
			  size_t len);

/*
 * bench_etcd_reads -- reads of the membership etcd has been asked for so
 * far, by anyone: the Range calls and Watch streams its /metrics counts
 * (grpc_server_started_total; the daemons make neither, only the
 * library's rmp_cluster does), read from the first endpoint of bc->url.
 * -1 when that cannot be read (an https endpoint, no answer).
 */
long long bench_etcd_reads(const struct bench_cluster *bc);

/* bench_cluster_close -- rmp_cluster_close; bc may hold no cluster. */
void bench_cluster_close(struct bench_cluster *bc);

#endif

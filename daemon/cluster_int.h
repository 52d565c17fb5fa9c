/* SPDX-License-Identifier: MIT */
/*
 * cluster_int.h -- what cluster.c (the membership's state machine) takes
 * from cluster_record.c (what the node says of itself), and no one else.
 */
#ifndef RMP_CLUSTER_INT_H
#define RMP_CLUSTER_INT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "member.h" /* RMP_MEMBER_ADDRS_MAX, RMP_MEMBER_ADDR_LEN */

struct rmp_ops;

/* Addresses a node record lists at most. */
#define CL_ADDRS_MAX RMP_MEMBER_ADDRS_MAX

/* What the node says of itself besides the pool's figures: fixed at
 * start. */
struct cl_identity {
	char node[RMP_CLUSTER_NODE_LEN];
	char addrs[CL_ADDRS_MAX][RMP_MEMBER_ADDR_LEN];
	unsigned naddrs;
	struct rmp_cluster_label labels[RMP_CLUSTER_LABELS_MAX];
	unsigned nlabels;
};

/*
 * cl_identity_init -- from [cluster]: the node name (the host name when
 * none is set), the labels, the addresses clients reach (the listen
 * address; for a wildcard one, the host's addresses of that family but
 * loopback). 0, or -EINVAL with why in err.
 */
int cl_identity_init(struct cl_identity *id, const struct rmp_config *cfg,
		     char *err, size_t errlen);

/*
 * cl_record -- the node record: a JSON object of id and the daemon's
 * figures now (rmp_ops_status), registered and updated as Unix seconds.
 * Malloc'ed text (*free_bytes: the free bytes it says), or NULL.
 */
char *cl_record(const struct cl_identity *id, const struct rmp_ops *ops,
		int64_t registered, uint64_t *free_bytes);

#endif /* RMP_CLUSTER_INT_H */

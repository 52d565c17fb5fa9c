/* SPDX-License-Identifier: MIT */
/*
 * member.h -- the record a node keeps under PREFIX/nodes/NODE in etcd
 * (member.c): the daemon writes it, the library reads it. Its names and
 * labels are written as member_names.h says.
 */
#ifndef RMP_MEMBER_H
#define RMP_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member_names.h"

/* Addresses a node record lists at most; the text of one. */
#define RMP_MEMBER_ADDRS_MAX 16
/* RDMA devices a node record lists at most (rmpoold serves up to 8). */
#define RMP_MEMBER_DEVICES_MAX 8
#define RMP_MEMBER_ADDR_LEN 46 /* INET6_ADDRSTRLEN */
#define RMP_MEMBER_WORD_LEN 64 /* device, keys mode, version */

/* One RDMA device a node serves, and its pool. */
struct rmp_member_device {
	char name[RMP_MEMBER_WORD_LEN];
	int numa_node;                   /* its pool's; -1: not known */
	char addr[RMP_MEMBER_ADDR_LEN];  /* its listen address; "": a
					  * wildcard (any of addrs on it) */
	uint64_t pool_bytes, free_bytes, largest_free;
};

/*
 * What a node says of itself in etcd. The record is a JSON object with
 * these names; a reader ignores names it does not know (a newer daemon's),
 * so fields are only ever added.
 */
struct rmp_member {
	char node[RMP_CLUSTER_NODE_LEN];
	char addrs[RMP_MEMBER_ADDRS_MAX][RMP_MEMBER_ADDR_LEN]; /* numeric */
	unsigned naddrs;                 /* 1.. */
	uint16_t port;
	char device[RMP_MEMBER_WORD_LEN]; /* devices[0]'s, for older readers */
	int numa_node;                   /* -1: not known */
	/* Every device served with its pool (none from an older daemon);
	 * pool_bytes and free_bytes below are their sums, largest_free the
	 * largest. */
	struct rmp_member_device devices[RMP_MEMBER_DEVICES_MAX];
	unsigned ndevices;
	char keys_mode[RMP_MEMBER_WORD_LEN];
	uint64_t pool_bytes, free_bytes, largest_free;
	bool draining;                   /* takes no new leases */
	char version[RMP_MEMBER_WORD_LEN];
	struct rmp_cluster_label labels[RMP_CLUSTER_LABELS_MAX];
	unsigned nlabels;
	int64_t registered, updated;     /* Unix seconds */
};

/* rmp_member_encode -- m as its record (malloc'ed JSON text), or NULL. */
char *rmp_member_encode(const struct rmp_member *m);

/*
 * rmp_member_decode -- the record text (len bytes, from etcd: not
 * trusted) into m. Every field is checked as the writer makes it (names
 * by the grammar above, addresses numeric, figures that agree: free <=
 * pool, largest free <= free). 0, or -EINVAL with why in err.
 */
int rmp_member_decode(const char *text, size_t len, struct rmp_member *m,
		      char *err, size_t errlen);

/* rmp_member_label -- the value of m's label name, or NULL. */
const char *rmp_member_label(const struct rmp_member *m, const char *name);

#endif /* RMP_MEMBER_H */

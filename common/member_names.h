/* SPDX-License-Identifier: MIT */
/*
 * member_names.h -- the cluster's shared vocabulary (member_names.c): how
 * an etcd endpoint, a label and a node name are written, in the daemon's
 * [cluster] section and the library's etcd:// URLs, and etcd's
 * credentials file.
 */
#ifndef RMP_MEMBER_NAMES_H
#define RMP_MEMBER_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most etcd endpoints and most labels of [cluster]. */
#define RMP_CLUSTER_ENDPOINTS_MAX 8
#define RMP_CLUSTER_LABELS_MAX 16
/* A host name of an endpoint, a label's name or value, a node name
 * (buffer sizes, NUL included). */
#define RMP_CLUSTER_HOST_LEN 254
#define RMP_CLUSTER_LABEL_LEN 64
#define RMP_CLUSTER_NODE_LEN 64
/* Longest endpoint list or label list taken. */
#define RMP_CLUSTER_LIST_LEN 200

/* One etcd endpoint: http[s]://HOST:PORT. */
struct rmp_cluster_endpoint {
	char host[RMP_CLUSTER_HOST_LEN]; /* a name, IPv4, or IPv6 unbracketed */
	uint16_t port;
	bool tls;                        /* https */
};

/* One label of a node: NAME=VALUE. */
struct rmp_cluster_label {
	char name[RMP_CLUSTER_LABEL_LEN], value[RMP_CLUSTER_LABEL_LEN];
};

/*
 * rmp_cluster_endpoints -- split an etcd endpoint list ("http://HOST:PORT",
 * "https://HOST:PORT" or "etcd://HOST:PORT", which is http, separated by
 * commas, blanks around them ignored) into eps (room for
 * RMP_CLUSTER_ENDPOINTS_MAX). An entry without a scheme takes the one
 * before it ("etcd://h1:2379,h2:2379"). HOST is a numeric IPv4 address,
 * an IPv6 address in brackets or a DNS name; PORT 1..65535; no path. 0
 * with *n set (0 for ""), or -EINVAL with why ("... is not
 * http://HOST:PORT ...") in why.
 */
int rmp_cluster_endpoints(const char *list, struct rmp_cluster_endpoint *eps,
			  unsigned *n, char *why, size_t whylen);

/*
 * rmp_cluster_labels -- split labels ("NAME=VALUE" separated by blanks)
 * into out (room for RMP_CLUSTER_LABELS_MAX): NAME 1..63 of [A-Za-z0-9_.-]
 * starting with a letter, VALUE 1..63 of [A-Za-z0-9_.-], no NAME twice.
 * 0 with *n set, or -EINVAL with why in why.
 */
int rmp_cluster_labels(const char *list, struct rmp_cluster_label *out,
		       unsigned *n, char *why, size_t whylen);

/* rmp_cluster_node_ok -- s is a node name: 1..63 of [A-Za-z0-9_.-],
 * starting with a letter or digit (a host name is one). */
bool rmp_cluster_node_ok(const char *s);

/*
 * rmp_cluster_credentials -- etcd's "USER:PASSWORD" from the file at path,
 * kept like a key file (rmp_secret_read). 0, or -errno with why in err.
 * Wipe both after use.
 */
int rmp_cluster_credentials(const char *path, char *user, size_t ulen,
			    char *password, size_t plen, char *err,
			    size_t errlen);

#endif /* RMP_MEMBER_NAMES_H */

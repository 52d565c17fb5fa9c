/* SPDX-License-Identifier: MIT */
/* etcd_int.h -- what etcd_requests.c (the bodies) takes from etcd.c (the
 * machinery), and no one else. */
#ifndef RMP_ETCD_INT_H
#define RMP_ETCD_INT_H

#include "etcd.h"

/*
 * rmp_etcd_queue -- a request of op to path with body (malloc'ed JSON,
 * taken over; NULL: out of memory), started on the loop's next turn: its
 * handle, or NULL when out of memory.
 */
struct rmp_etcd_request *rmp_etcd_queue(struct rmp_etcd *e,
					enum rmp_etcd_op op, const char *path,
					char *body, rmp_etcd_cb *cb, void *arg);

#endif /* RMP_ETCD_INT_H */

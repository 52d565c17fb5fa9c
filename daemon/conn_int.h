/* SPDX-License-Identifier: MIT */
/*
 * conn_int.h -- what the files of a connection share, and no one else.
 * Calls go one way: conn_accept.c (a new connection and its queue pair)
 * and conn_sweep.c (many connections at once) call conn.c (one
 * connection: receive, reply, close), never the other way.
 */
#ifndef RMP_CONN_INT_H
#define RMP_CONN_INT_H

#include <stdbool.h>

/* (The files of the connection include conn.h first: enum
 * rmp_conn_counted is there.) */
struct rmp_conn;
struct rmp_holder;
struct rmp_rx_buf;

/* Key operations (bind / invalidate) one QP may have in flight. */
#define KEY_WRS 64u

/* Free c once it is closing and nothing of it is due. */
void cn_maybe_free(struct rmp_conn *c);
/* c's QP is in the error state and not by our doing. */
bool cn_qp_failed_remotely(struct rmp_conn *c);
/* c is open and still to prove its tenant (holds a pre-auth slot). */
bool cn_unproven(const struct rmp_conn *c);
/* Post a liveness probe on c (a zero-byte RDMA WRITE). */
void cn_probe(struct rmp_conn *c);
/* c counts against `to` from now on (pending, proven or nowhere). */
void cn_count_as(struct rmp_conn *c, enum rmp_conn_counted to);
/* h->fail of every connection's holder: the lifecycle gave up on its QP
 * (an upcall: keys.h says why it is a pointer). */
void cn_holder_failed(struct rmp_holder *h, const char *why);
/* The lifecycle's fence upcall (lifecycle.h): answer the exclusive
 * ATTACH that waited for it. */
struct rmp_fence_done;
void cn_fence_done(void *ctx, struct rmp_holder *h,
		   const struct rmp_fence_done *done);
/* Post rx on c's own receive queue (region mode). */
int cn_post_own_recv(struct rmp_conn *c, struct rmp_rx_buf *rx);

#endif /* RMP_CONN_INT_H */

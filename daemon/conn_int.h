/* SPDX-License-Identifier: MIT */
/*
 * conn_int.h -- what the files of the connections share, and no one
 * else: conn.c (accepting, the QP, receive and reply paths, close,
 * sweeps) and conn_admit.c (who gets in: slots, counting, failures, the
 * proof).
 */
#ifndef RMP_CONN_INT_H
#define RMP_CONN_INT_H

#include "conn.h"

/* Key operations (bind / invalidate) one QP may have in flight. */
#define KEY_WRS 64u
/* A client that sends this many bad messages is disconnected. */
#define MAX_BAD_MSGS 8
/* The server's own RNR retry count: finite, whatever the client asks
 * (7 would mean "forever", and a revoke queued behind a reply would wait
 * as long as the client does not post receives). */
#define SERVER_RNR_RETRY 3
/* Local ACK timeout exponent used when the path gives none (4.096 µs x
 * 2^14 = 67 ms per try), and the largest accepted (~1 s). */
#define SERVER_ACK_TIMEOUT 14
#define SERVER_ACK_TIMEOUT_MAX 18
/* Transport retries of a send the peer does not acknowledge. Never 7:
 * Soft-RoCE takes 7 to mean "forever" (as rnr_retry does), and then a
 * dead client's host would never fail a probe (tested on rxe). */
#define SERVER_RETRY_CNT 6

#define conn_of_holder(h) \
	((struct rmp_conn *)((char *)(h) - offsetof(struct rmp_conn, holder)))

/* conn.c */
void conn_maybe_free(struct rmp_conn *c);

/* conn_admit.c */
void conn_count_as(struct rmp_conn *c, enum rmp_conn_counted to);
void conn_authenticate(struct rmp_conn *c, const uint8_t *buf, size_t len,
		       struct rmp_msg *rep);
bool conn_unproven(const struct rmp_conn *c);

#endif /* RMP_CONN_INT_H */

/* SPDX-License-Identifier: MIT */
/* chan.h -- a connection's queues: receives, completions, the send queue, waiting, the control RPC. */
#ifndef RMPC_CHAN_H
#define RMPC_CHAN_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "proto.h"
#include "state.h"

/*
 * Queue pair layout. One CQ (send and receive) driven by one completion
 * channel, whose fd is rmp_client_fd().
 *
 * Receive side: RMPC_NRECV buffers of RMP_MSG_MAX bytes, posted before
 * rdma_connect and re-posted after each reply. We never have more control
 * requests outstanding than min(server credits, RMPC_NRECV).
 *
 * Send side: every WR takes the next slot of c->sq (a ring as deep as the
 * SQ); its wr_id is its sequence number. Unsignaled WRs are retired when a
 * later signaled WR completes (an RC send queue completes in order), so
 * sq_posted - sq_done is exactly what the SQ holds and never exceeds
 * sq_depth. Receive wr_ids carry RMPC_WRID_RECV.
 */
#define RMPC_WRID_RECV (UINT64_C(1) << 63)

enum rmpc_sq_kind {
	RMPC_SQ_NONE = 0,
	RMPC_SQ_CTL,   /* control SEND; idx = send slot */
	RMPC_SQ_SYNC,  /* a WR of a synchronous data call */
	RMPC_SQ_ASYNC, /* idx = position in the async ring */
};

struct rmpc_sq_slot {
	uint8_t kind;   /* enum rmpc_sq_kind */
	uint8_t opcode; /* enum ibv_wr_opcode, for error texts */
	uint32_t idx;
};

enum rmpc_op_state {
	RMPC_OP_FREE = 0,
	RMPC_OP_QUEUED, /* rmp_post_*, not yet submitted */
	RMPC_OP_POSTED, /* on the send queue */
	RMPC_OP_DONE,   /* completed; waits for rmp_poll */
};

/* One asynchronous operation of io.c's ring: the WR is built in place at
 * rmp_post_*; its completion (here) moves it from POSTED to DONE. */
struct rmpc_op {
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint64_t user_data;
	int status;
	uint8_t state; /* enum rmpc_op_state */
};

/* rmpc_post_recv -- (re)post receive buffer slot. 0 or -errno. */
int rmpc_post_recv(struct rmp_client *c, uint32_t slot);

/* rmpc_check_conn -- 0 when c can post work, else -ENOTCONN (with text). */
int rmpc_check_conn(struct rmp_client *c);
/* rmpc_conn_ready -- rmpc_check_conn, and when the connection is lost and
 * reconnecting is on, one reconnect try (as its backoff allows) through
 * c->reconnect, client.c's upcall (state.h says why it is one). */
int rmpc_conn_ready(struct rmp_client *c);

/*
 * rmpc_conn_set -- c's connection is in state to now (state.h: the
 * transitions). A transition the table does not have is ignored (a
 * CLOSED connection is not made BROKEN again).
 */
void rmpc_conn_set(struct rmp_client *c, enum rmpc_conn_state to);

/* rmpc_connected -- ESTABLISHED was seen and the teardown not yet done
 * (the QP may be in error). */
static inline bool rmpc_connected(const struct rmp_client *c)
{
	return c->conn != RMPC_CONN_DOWN;
}

/* rmpc_broken -- the QP is in error: every call gives -ENOTCONN. */
static inline bool rmpc_broken(const struct rmp_client *c)
{
	return c->conn == RMPC_CONN_BROKEN || c->conn == RMPC_CONN_CLOSED;
}

/*
 * rmpc_fail -- the connection is unusable: move the QP to the error state
 * so that everything outstanding completes (flushed), and make later calls
 * fail with -ENOTCONN. Idempotent.
 */
void rmpc_fail(struct rmp_client *c);

/* rmpc_poll_cq -- reap every completion that is ready; never waits. */
void rmpc_poll_cq(struct rmp_client *c);

/* rmpc_drain_cq_events -- consume and ack completion channel events. */
void rmpc_drain_cq_events(struct rmp_client *c);

/* rmpc_arm_cq -- request a completion event unless one is pending. */
void rmpc_arm_cq(struct rmp_client *c);

/*
 * rmpc_wait -- reap completions until done(c, arg) holds. Polls the CQ
 * for a while that adapts to how long waits of this kind took lately
 * (see spin_ns in chan.c), then sleeps in poll() on the completion
 * channel and the rdma_cm channel. timeout_ms < 0 waits forever. Returns
 * 0, -ETIMEDOUT, or -errno of poll.
 */
int rmpc_wait(struct rmp_client *c, enum rmpc_wait_kind kind,
	      bool (*done)(struct rmp_client *c, const void *arg),
	      const void *arg, int timeout_ms);

/*
 * rmpc_wait_some -- rmpc_wait over several clients cs[0 .. n) (n <=
 * RMPC_WAIT_SOME_MAX, distinct): reap their completions until
 * done(cs[i], args[i]) holds for need of them, out[i] set for each that
 * did (or lost its queues: the caller finds why). It polls every CQ
 * while the longest spin of theirs lasts, then sleeps in poll() on all
 * their channels. 0, -ETIMEDOUT, or -errno of poll.
 */
#define RMPC_WAIT_SOME_MAX 16u
int rmpc_wait_some(struct rmp_client *const *cs, unsigned n,
		   bool (*done)(struct rmp_client *c, const void *arg),
		   const void *const *args, unsigned need, bool *out,
		   int timeout_ms);

/* rmpc_sq_room -- free send queue slots. */
uint32_t rmpc_sq_room(const struct rmp_client *c);

/* rmpc_sq_reserve -- wait (op timeout) until n SQ slots are free. */
int rmpc_sq_reserve(struct rmp_client *c, uint32_t n);

/* rmpc_sq_take -- claim the next SQ slot; returns the wr_id to post. */
uint64_t rmpc_sq_take(struct rmp_client *c, enum rmpc_sq_kind kind,
		      uint32_t idx, enum ibv_wr_opcode opcode);

/*
 * rmpc_post_send -- ibv_post_send the chain wr. On failure the connection
 * fails (rmpc_fail, so that what was posted flushes), *bad (if bad is not
 * NULL) is the first WR not posted, and -EIO (-ENOTCONN when it had
 * already failed) is returned.
 */
int rmpc_post_send(struct rmp_client *c, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad);

/*
 * rmpc_rpc -- send the control request m (opcode and payload filled in)
 * and wait for its reply (op timeout), which replaces *m. Returns 0, the
 * server's negative errno status, -EPROTO (malformed or mismatched reply),
 * -ETIMEDOUT, -ENOTCONN.
 */
int rmpc_rpc(struct rmp_client *c, struct rmp_msg *m);

/* rmpc_wr_name -- "RDMA READ", ... for texts. */
const char *rmpc_wr_name(unsigned opcode);

#endif /* RMPC_CHAN_H */

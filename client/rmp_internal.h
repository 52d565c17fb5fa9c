/* SPDX-License-Identifier: MIT */
/* rmp_internal.h -- librmpool's private types and the contracts between its modules. */
#ifndef RMP_INTERNAL_H
#define RMP_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "auth.h"
#include "proto.h"
#include "rmpool.h"
#include "token.h"

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
#define RMPC_NRECV 16u
#define RMPC_NSEND 16u
#define RMPC_SYNC_BATCH 16u  /* WRs one synchronous call posts at a time */
#define RMPC_SQ_RESERVE (RMPC_NSEND + RMPC_SYNC_BATCH) /* beyond async */
#define RMPC_SCRATCH 64u     /* registered bytes for atomics and flush */
#define RMPC_WRID_RECV (UINT64_C(1) << 63)
#define RMPC_ERRBUF 256u
#define RMPC_HOST_MAX RMP_TOKEN_HOST_MAX
/* Adaptive spinning before a wait sleeps (spin.h). */
#define RMPC_DEF_SPIN_MAX_US 1000u
#define RMPC_MAX_SPIN_MAX_US 1000000u
#define RMPC_MAX_RECONNECT_MS 60000u
#define RMPC_RECONNECT_FIRST_MS 100u
/* Bytes of a WRITE the QP is asked to carry in the WQE (inline). */
#define RMPC_INLINE_WANT 256u

/* Defaults of struct rmp_client_opts. */
#define RMPC_DEF_CONNECT_TIMEOUT_MS 5000
#define RMPC_DEF_OP_TIMEOUT_MS 10000
#define RMPC_DEF_BOUNCE_BYTES (4u << 20)
#define RMPC_DEF_MAX_INFLIGHT 128u
#define RMPC_MIN_BOUNCE_BYTES 4096u
#define RMPC_MAX_BOUNCE_BYTES (1u << 30)
#define RMPC_MAX_INFLIGHT 65536u
#define RMPC_OPTS_SIZE_MAX 4096u /* largest option struct size accepted */

/* What a wait waits for: each kind learns its own typical time. */
enum rmpc_wait_kind {
	RMPC_WAIT_DATA,  /* a synchronous data call's completion */
	RMPC_WAIT_CTL,   /* a control request's reply */
	RMPC_WAIT_OTHER, /* room in the SQ, rmp_poll: the minimum spin */
	RMPC_WAIT_KINDS,
};

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

/* One asynchronous operation: the WR is built in place at rmp_post_*. */
struct rmpc_op {
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint64_t user_data;
	int status;
	uint8_t state; /* enum rmpc_op_state */
};

struct rmp_buf {
	struct rmp_client *c;
	LIST_ENTRY(rmp_buf) link; /* in c->bufs */
	char *addr;
	size_t len;
	struct ibv_mr *mr; /* NULL once the connection it was made on closed */
};

struct rmp_lease {
	struct rmp_client *c;
	LIST_ENTRY(rmp_lease) link; /* in c->leases */
	uint64_t gen;      /* c->gen of the connection that made the handle */
	uint64_t id, secret;
	uint64_t addr, length;
	uint64_t ttl_ms;   /* as reported by the server ... */
	uint64_t stamp_ms; /* ... at this local time (rmp_now_ms) */
	uint32_t rkey, access, flags;
	uint32_t holders;  /* as last reported */
	char host[RMPC_HOST_MAX + 1]; /* server, for the token */
	uint16_t port;
};

struct rmp_client {
	struct rmp_client_opts opts; /* validated copy; strings point below */
	char name[RMP_NAME_MAX + 1];
	char tenant[RMP_TENANT_MAX + 1]; /* "" = anonymous */
	uint8_t key[RMP_KEY_MAX];        /* inline key, key_len bytes */
	size_t key_len;
	char key_file[4096];             /* or read from here at connect */
	uint8_t nonce[RMP_NONCE_LEN];    /* from the accept data */
	uint8_t version;                 /* chosen by the server */
	char errbuf[RMPC_ERRBUF];
	char failbuf[RMPC_ERRBUF]; /* why the connection failed (rmpc_fail) */
	/* Moving average of how long each kind of wait took, in ns. */
	uint64_t wait_avg_ns[RMPC_WAIT_KINDS];

	/* Connection; everything here is NULL/0 while not connected. */
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	bool connected;    /* ESTABLISHED seen, not closed yet */
	bool broken;       /* QP in error: every call gives -ENOTCONN */
	bool disconnected; /* DISCONNECTED event seen */
	bool cq_armed;     /* notification requested, event not consumed */
	bool fd_wanted;    /* rmp_client_fd() was asked: keep the fd armed */
	unsigned cq_unacked;
	uint64_t gen;      /* bumped at every connect and close */
	char host[RMPC_HOST_MAX + 1];
	uint16_t port;
	uint32_t max_msg_sz; /* port's largest message */
	uint32_t max_inline; /* WRITEs up to this many bytes go inline */
	bool atomics;        /* device supports RDMA atomics */
	uint8_t rd_atom;      /* device max_qp_rd_atom, 1..255 */
	uint8_t init_rd_atom; /* device max_qp_init_rd_atom, 1..255 */
	uint8_t keys_mode;   /* enum rmp_keys_mode from the accept data */

	/* Send queue accounting (see the top of this file). */
	struct rmpc_sq_slot *sq;
	uint32_t sq_depth;
	uint64_t sq_posted, sq_done;
	unsigned signal_every; /* async: signal every Nth WR and the last */

	/* Control channel. ctl_mem: RMPC_NRECV receive, then RMPC_NSEND send
	 * buffers, RMP_MSG_MAX bytes each, registered as ctl_mr. */
	char *ctl_mem;
	struct ibv_mr *ctl_mr;
	unsigned credits;      /* requests we may have outstanding */
	unsigned ctl_inflight; /* requests sent, reply not yet received */
	bool send_busy[RMPC_NSEND];
	uint64_t next_req_id;
	uint64_t rpc_wait_id; /* req_id of the request we wait for, or 0 */
	bool rpc_done;
	int rpc_err;          /* decode error of the awaited reply */
	unsigned rpc_detail;  /* RMP_DETAIL_* of the last reply */
	struct rmp_msg rpc_rep;

	/* Bounce buffer (+ RMPC_SCRATCH bytes), registered as bounce_mr. */
	char *bounce;
	size_t bounce_len;
	struct ibv_mr *bounce_mr;

	int sync_err; /* first error of the synchronous WRs in flight */

	/* Async ring: monotonic counters, entry i at ring[i % ring_size].
	 * head..posted: on the SQ or done; posted..tail: queued. */
	struct rmpc_op *ring;
	unsigned ring_size;   /* opts.max_inflight */
	unsigned max_inflight; /* effective limit, <= ring_size */
	uint64_t ring_head, ring_posted, ring_tail;

	LIST_HEAD(, rmp_lease) leases; /* open handles */
	LIST_HEAD(, rmp_buf) bufs;     /* registered buffers */

	/* Reconnecting (opts.reconnect_max_ms). The upcall is client.c's:
	 * the layers below that find the connection lost call up through
	 * it, so no file includes one above it. */
	int (*reconnect)(struct rmp_client *c);
	bool auto_reconnect;   /* connected once, not closed by the caller */
	bool reconnecting;     /* inside the upcall: no second one */
	unsigned backoff_ms;
	uint64_t reconnect_at_ms;
};

/* --- error.c ----------------------------------------------------------- */

/* rmpc_set_error -- set the text rmp_client_last_error() returns. */
void rmpc_set_error(struct rmp_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* rmpc_clear_error -- forget the last error text (start of a call). */
void rmpc_clear_error(struct rmp_client *c);
/* rmpc_errno_text -- the C library's text for an errno (either sign),
 * for details about a failed system or verbs call. */
const char *rmpc_errno_text(int err);

/*
 * rmpc_opts_copy -- copy caller options of src_size bytes into dst
 * (dst_size bytes, already holding the defaults). A larger src is accepted
 * only when the bytes we do not know are zero. -EINVAL otherwise.
 */
static inline int rmpc_opts_copy(void *dst, size_t dst_size,
				 const void *src, size_t src_size)
{
	const unsigned char *extra = (const unsigned char *)src + dst_size;
	size_t i;

	/* A size beyond any plausible struct is an uninitialised field. */
	if (src_size < sizeof(size_t) || src_size > RMPC_OPTS_SIZE_MAX)
		return -EINVAL;
	/* A newer caller may pass fields we do not know: only as zeroes. */
	for (i = 0; src_size > dst_size && i < src_size - dst_size; i++)
		if (extra[i])
			return -EINVAL;
	memcpy(dst, src, dst_size < src_size ? dst_size : src_size);
	*(size_t *)dst = dst_size;
	return 0;
}

/* --- chan.c ------------------------------------------------------------ */

/* rmpc_post_recv -- (re)post receive buffer slot. 0 or -errno. */
int rmpc_post_recv(struct rmp_client *c, uint32_t slot);

/* rmpc_check_conn -- 0 when c can post work, else -ENOTCONN (with text). */
int rmpc_check_conn(struct rmp_client *c);
/* rmpc_conn_ready -- rmpc_check_conn, and when the connection is lost and
 * reconnecting is on, one reconnect try (as its backoff allows). */
int rmpc_conn_ready(struct rmp_client *c);

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

/* --- io.c -------------------------------------------------------------- */

/* rmpc_io_init / rmpc_io_fini -- the async ring (rmp_client_new/free). */
int rmpc_io_init(struct rmp_client *c);
void rmpc_io_fini(struct rmp_client *c);
/* rmpc_io_reset -- drop every queued, posted and unreaped op (close). */
void rmpc_io_reset(struct rmp_client *c);

/* --- buf.c ------------------------------------------------------------- */

/* rmpc_mem_alloc / rmpc_mem_free -- internal buffers (new/free); free
 * also frees every rmp_buf handle of c. */
int rmpc_mem_alloc(struct rmp_client *c);
void rmpc_mem_free(struct rmp_client *c);
/* rmpc_mem_reg -- register the internal buffers with c->pd (connect).
 * Returns 0 or -errno. */
int rmpc_mem_reg(struct rmp_client *c);
/* rmpc_mem_dereg -- deregister internal and user buffers (close); user
 * buffer handles stay allocated but unusable. Accepts half-built state. */
void rmpc_mem_dereg(struct rmp_client *c);
/* rmpc_buf_lookup -- the MR of a registered buffer holding [p, p+len). */
struct ibv_mr *rmpc_buf_lookup(struct rmp_client *c, const void *p,
			       size_t len);

/* --- lease.c ----------------------------------------------------------- */

/*
 * rmpc_lease_usable -- l was made on the current connection, which works
 * (-ENOTCONN), and, with check_expiry, its deadline as last reported by
 * the server has not passed (-EKEYEXPIRED: posting would only make the
 * NIC answer a remote access error and break the connection).
 */
int rmpc_lease_usable(struct rmp_lease *l, bool check_expiry);

/* rmpc_leases_free -- free every lease handle of c (rmp_client_free). */
void rmpc_leases_free(struct rmp_client *c);

#endif /* RMP_INTERNAL_H */

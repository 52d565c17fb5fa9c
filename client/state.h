/* SPDX-License-Identifier: MIT */
/*
 * state.h -- one client's state, struct rmp_client: every module of
 * librmpool reads and writes its own part of it (the comments name whose
 * each part is). The types its pointers lead to belong to those modules
 * (chan.h, buf.h, lease.h); this file sits below them all.
 */
#ifndef RMPC_STATE_H
#define RMPC_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "auth.h"
#include "backoff.h"
#include "proto.h"
#include "rmpool.h" /* struct rmp_client_opts */
#include "token.h"

/* Control channel slots (chan.h describes the queue pair's layout). */
#define RMPC_NRECV 16u
#define RMPC_NSEND 16u
#define RMPC_ERRBUF 256u
#define RMPC_HOST_MAX RMP_TOKEN_HOST_MAX

/* What a wait waits for: each kind learns its own typical time (chan.c). */
enum rmpc_wait_kind {
	RMPC_WAIT_DATA,  /* a synchronous data call's completion */
	RMPC_WAIT_CTL,   /* a control request's reply */
	RMPC_WAIT_OTHER, /* room in the SQ, rmp_poll: the minimum spin */
	RMPC_WAIT_KINDS,
};

struct rdma_event_channel;
struct rdma_cm_id;
struct ibv_pd;
struct ibv_comp_channel;
struct ibv_cq;
struct ibv_qp;
struct ibv_mr;
struct rmpc_sq_slot; /* chan.h */
struct rmpc_op;      /* chan.h */
struct rmpc_rail_set; /* rails.h */

/*
 * A client's connection (chan.c's rmpc_conn_set is its one transition):
 *   DOWN    not connected: before ESTABLISHED, after the teardown
 *   UP      established; the QP works
 *   BROKEN  the QP is in error (a completion error, a flush, an event):
 *           every call gives -ENOTCONN until a reconnect
 *   CLOSED  the server closed it (DISCONNECTED, REJECTED): broken, and
 *           nothing is left to disconnect
 * DOWN -> UP; DOWN, UP -> BROKEN; DOWN, UP, BROKEN -> CLOSED; any ->
 * DOWN (the teardown).
 */
enum rmpc_conn_state {
	RMPC_CONN_DOWN = 0,
	RMPC_CONN_UP,
	RMPC_CONN_BROKEN,
	RMPC_CONN_CLOSED,
};

struct rmp_client {
	/* client.c: options and identity, set at rmp_client_new. */
	struct rmp_client_opts opts; /* validated copy; strings point below */
	char name[RMP_NAME_MAX + 1];
	char tenant[RMP_TENANT_MAX + 1]; /* "" = anonymous */
	uint8_t key[RMP_KEY_MAX];        /* inline key, key_len bytes */
	size_t key_len;
	char key_file[4096];             /* or read from here at connect */
	uint8_t nonce[RMP_NONCE_LEN];    /* from the accept data */
	uint8_t version;                 /* chosen by the server */
	/* error.c; chan.c keeps why the connection failed (rmpc_fail). */
	char errbuf[RMPC_ERRBUF];
	char failbuf[RMPC_ERRBUF];
	/* chan.c: moving average of how long each kind of wait took, ns. */
	uint64_t wait_avg_ns[RMPC_WAIT_KINDS];

	/* client.c: the connection; everything here is NULL/0 while not
	 * connected. conn is changed by rmpc_conn_set (chan.c) only;
	 * chan.c sets cq_armed. */
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	enum rmpc_conn_state conn;
	bool cq_armed;     /* notification requested, event not consumed */
	bool fd_wanted;    /* rmp_client_fd() was asked: keep the fd armed */
	unsigned cq_unacked;
	uint64_t gen;      /* bumped at every connect and close */
	char host[RMPC_HOST_MAX + 1];
	uint16_t port;
	char via_dev[64];  /* the local RDMA device the last connect's
			    * address resolution chose; "" none (yet) */
	uint32_t max_msg_sz; /* port's largest message */
	uint32_t max_inline; /* WRITEs up to this many bytes go inline */
	bool atomics;        /* device supports RDMA atomics */
	uint8_t rd_atom;      /* device max_qp_rd_atom, 1..255 */
	uint8_t init_rd_atom; /* device max_qp_init_rd_atom, 1..255 */
	uint8_t keys_mode;   /* enum rmp_keys_mode from the accept data */

	/* chan.c: send queue accounting (see chan.h). */
	struct rmpc_sq_slot *sq;
	uint32_t sq_depth;
	uint64_t sq_posted, sq_done;
	unsigned signal_every; /* async: signal every Nth WR and the last */

	/* chan.c: control channel. ctl_mem (buf.c): RMPC_NRECV receive, then
	 * RMPC_NSEND send buffers, RMP_MSG_MAX bytes each, registered as
	 * ctl_mr. */
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

	/* buf.c: bounce buffer (+ RMPC_SCRATCH bytes), registered as
	 * bounce_mr. */
	char *bounce;
	size_t bounce_len;
	struct ibv_mr *bounce_mr;

	/* io.c (chan.c records completions): first error of the
	 * synchronous WRs in flight. */
	int sync_err;
	/* io_sync.c: a late-bound read's chain left in flight
	 * (rmpc_read_first) lands in the bounce buffer: it is taken again
	 * only once wr_id late_last of connection late_gen completed
	 * (late_pending: not waited for yet). chan.c records no error of
	 * a synchronous WR up to late_last in sync_err. */
	bool late_pending;
	uint64_t late_last, late_gen;

	/* io.c: async ring: monotonic counters, entry i at
	 * ring[i % ring_size]. head..posted: on the SQ or done;
	 * posted..tail: queued. */
	struct rmpc_op *ring;
	unsigned ring_size;   /* opts.max_inflight */
	unsigned max_inflight; /* effective limit, <= ring_size */
	uint64_t ring_head, ring_posted, ring_tail;

	LIST_HEAD(, rmp_lease) leases; /* lease.c: open handles */
	LIST_HEAD(, rmp_buf) bufs;     /* buf.c: registered buffers */

	/* Reconnecting (opts.reconnect_max_ms). The upcall is client.c's:
	 * the layers below that find the connection lost call up through
	 * it (rmpc_conn_ready), so no file includes one above it. */
	int (*reconnect)(struct rmp_client *c);
	bool auto_reconnect;   /* connected once, not closed by the caller */
	bool reconnecting;     /* inside the upcall: no second one */
	struct rmpc_backoff reconnect_backoff;

	/* client_rails.c: the node's other rails (rails.h); NULL with one
	 * address, so a client of one costs nothing more. The data path
	 * (io_rails.c, below client.c) tries a down rail again through
	 * this upcall of client_rails.c, as it reconnects through
	 * c->reconnect: 0 when rail i is up again, else -errno. */
	struct rmpc_rail_set *rails;
	int (*revive_rail)(struct rmp_client *c, unsigned i);
};

#endif /* RMPC_STATE_H */

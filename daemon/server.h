/* SPDX-License-Identifier: MIT */
/* server.h -- the daemon's objects: server, connections, and their contracts. */
#ifndef RMP_SERVER_H
#define RMP_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "config.h"
#include "lease.h"
#include "pool.h"
#include "proto.h"

struct event_base;

#define RMP_EXPIRED_RING 1024
struct event;

/*
 * A send slot is what a signaled work request on a client's QP carries in
 * wr_id: the connection, what the request was, and for key operations the
 * lease it acts on. Slots live in the connection; each in use holds the
 * connection alive (conn->outstanding).
 */
enum rmp_slot_kind {
	SLOT_FREE = 0,
	SLOT_REPLY,     /* a SEND of a reply from slot's buffer */
	SLOT_BIND,      /* IBV_WR_BIND_MW of slot->lease */
	SLOT_INV,       /* IBV_WR_LOCAL_INV revoking slot->lease */
};

struct rmp_send_slot {
	struct rmp_conn *conn;
	enum rmp_slot_kind kind;
	struct rmp_lease *lease;
	uint8_t *buf; /* RMP_MSG_MAX bytes inside conn->send_mr */
};

/*
 * wr_id of a work request completing on the shared CQ; the low two bits
 * say what it is (slots are pointer-aligned, so the bits are free):
 *   WRID_SEND       a struct rmp_send_slot *
 *   WRID_SRQ        (index of the shared receive buffer << 2) | 1
 *   WRID_CONN_RECV  a struct rmp_recv_slot * | 2 (region mode)
 */
#define WRID_TAG_MASK 3u
#define WRID_SEND 0u
#define WRID_SRQ 1u
#define WRID_CONN_RECV 2u

/* A receive buffer of a connection with its own receive queue. */
struct rmp_recv_slot {
	struct rmp_conn *conn;
	uint8_t *buf; /* RMP_MSG_MAX bytes inside conn->recv_mr */
};

enum rmp_conn_state {
	CONN_ACCEPTING,   /* accepted, waiting for ESTABLISHED */
	CONN_ESTABLISHED,
	CONN_CLOSING,     /* disconnected; waiting for flushed sends */
};

struct rmp_conn {
	struct rmp_server *srv;
	struct rdma_cm_id *id;
	uint64_t serial;          /* for operators: "client #7" */
	char name[RMP_NAME_MAX + 1];
	char peer[64];            /* peer address text */
	enum rmp_conn_state state;

	/* Leases granted to this connection (list through conn_next). */
	struct rmp_lease *leases;
	uint64_t bytes, nleases;  /* quota accounting: leases it owns */

	unsigned bad_msgs;        /* garbage counter; too many: disconnect */
	unsigned outstanding;     /* posted WRs whose completion is due */

	/*
	 * Protection domain of the QP and of everything it touches. The
	 * server's own in window and pool modes; in region mode each
	 * connection has its own, so a lease's MR works from its QP only.
	 * A QP outside the server's PD cannot use the shared SRQ (its
	 * buffers are checked against the QP's PD), so such a connection
	 * has its own receive queue of `credits` buffers.
	 */
	struct ibv_pd *pd;
	bool own_pd;
	struct rmp_recv_slot *recv_slots;
	uint8_t *recv_buf;
	struct ibv_mr *recv_mr;

	unsigned nslots;
	struct rmp_send_slot *slots;
	uint8_t *send_buf;
	struct ibv_mr *send_mr;

	struct rmp_conn *next, *prev;
};

struct rmp_server {
	struct rmp_config cfg;
	struct event_base *base;

	/* RDMA */
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *listen_id;
	struct ibv_context *verbs;
	struct ibv_context **devices; /* rdma_get_devices(), wildcard listen */
	struct ibv_device_attr_ex dev_attr;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_channel;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint32_t srq_depth;
	uint8_t *recv_buf;
	struct ibv_mr *recv_mr;
	enum rmp_keys_mode keys_mode;

	struct rmp_pool *pool;
	struct rmp_lease_table *leases;

	/* Recently expired leases, so that a late ATTACH/RENEW is told
	 * "expired" rather than "no such lease". A ring: oldest overwritten. */
	struct {
		uint64_t id, secret;
	} expired[RMP_EXPIRED_RING];
	uint32_t expired_next;

	struct rmp_conn *conns;
	uint32_t nconns;
	uint64_t next_serial;
	bool draining;

	struct event *cm_ev, *cq_ev, *expiry_ev, *sigterm_ev, *sigint_ev,
		*sighup_ev;
};

/* server.c */
/*
 * rmp_server_start -- open the device of the listen address, map and
 * register the pool, set up SRQ/CQ/listener and the event loop.
 * On failure logs what went wrong and returns -errno.
 */
int rmp_server_start(struct rmp_server *srv);
/* Run the event loop until SIGTERM/SIGINT. 0 or -errno. */
int rmp_server_run(struct rmp_server *srv);
/* Revoke everything, disconnect everyone, free all. Accepts half-built. */
void rmp_server_stop(struct rmp_server *srv);
/* Re-arm the expiry timer for the earliest deadline. */
void rmp_server_schedule_expiry(struct rmp_server *srv);

/* listener.c */
void rmp_listener_on_cm_event(int fd, short what, void *arg);

/* conn.c */
/* New connection object for id (QP not yet created). NULL on ENOMEM. */
struct rmp_conn *rmp_conn_new(struct rmp_server *srv, struct rdma_cm_id *id,
			      const char *name);
/* Create the QP on the shared SRQ/CQ and the send slots. 0 or -errno. */
int rmp_conn_setup_qp(struct rmp_conn *c);
/*
 * rmp_conn_established -- the connection is up: from the ESTABLISHED
 * event or from its first message, whichever the event loop sees first
 * (the client may send as soon as it has its own ESTABLISHED event).
 */
void rmp_conn_established(struct rmp_conn *c);
/*
 * rmp_conn_close -- the connection is gone (or must go): disconnect,
 * free ephemeral leases, detach the others, and free c once no send is
 * outstanding. Safe to call more than once.
 */
void rmp_conn_close(struct rmp_conn *c, const char *why);
/* Free c if it is closing and nothing is outstanding. */
void rmp_conn_maybe_free(struct rmp_conn *c);
struct rmp_conn *rmp_conn_by_qp_num(struct rmp_server *srv, uint32_t qpn);
struct rmp_send_slot *rmp_conn_get_slot(struct rmp_conn *c,
					enum rmp_slot_kind kind);
void rmp_conn_put_slot(struct rmp_send_slot *s);
/*
 * rmp_conn_send_reply -- encode m (a reply) into a free slot and post it.
 * -EAGAIN when the client has more requests outstanding than credits.
 */
int rmp_conn_send_reply(struct rmp_conn *c, struct rmp_msg *m);
/* Send completion for a slot (any kind). */
void rmp_conn_on_send_done(struct rmp_send_slot *s, const struct ibv_wc *wc);
/* Receive completion on a connection's own receive queue. */
void rmp_conn_on_recv(struct rmp_recv_slot *s, const struct ibv_wc *wc);

/* service.c */
/* Handle one received message of len bytes from c. */
void rmp_service_on_recv(struct rmp_conn *c, const uint8_t *buf, size_t len);
/*
 * rmp_service_end_lease -- remove l from the table and its connection,
 * revoke its key, then (once revoked) zero and free its extent. why is
 * logged at debug level.
 */
void rmp_service_end_lease(struct rmp_server *srv, struct rmp_lease *l,
			   const char *why);
/*
 * rmp_service_expired -- was id (with secret, unless secret_known is
 * false) among the recently expired leases?
 */
bool rmp_service_expired(const struct rmp_server *srv, uint64_t id,
			 bool secret_known, uint64_t secret);
/* Called when a revoke finished: zero, return the extent, free l. */
void rmp_service_release_extent(struct rmp_server *srv, struct rmp_lease *l);

/* keys.c */
/* Pick the mode from the config and the device capabilities. */
enum rmp_keys_mode rmp_keys_resolve(const struct rmp_server *srv);
/*
 * rmp_keys_grant -- give l a remote key usable by connection c only (as
 * far as the mode allows) and set l->rkey. In window mode the bind is
 * posted on c's QP ahead of the reply. 0 or -errno.
 */
int rmp_keys_grant(struct rmp_server *srv, struct rmp_conn *c,
		   struct rmp_lease *l);
/*
 * rmp_keys_revoke -- make l's rkey stop working; c is the connection it
 * was granted to, or NULL. Returns 1 when the revoke
 * is in flight (a LOCAL_INV; rmp_service_release_extent runs on its
 * completion), 0 when it is done already.
 */
int rmp_keys_revoke(struct rmp_server *srv, struct rmp_conn *c,
		    struct rmp_lease *l);
/* rmp_keys_drop -- the QP is gone: release key objects synchronously. */
void rmp_keys_drop(struct rmp_server *srv, struct rmp_lease *l);
/* Remote address of byte 0 of l as clients see it. */
uint64_t rmp_keys_remote_addr(const struct rmp_server *srv,
			      const struct rmp_lease *l);

#endif /* RMP_SERVER_H */

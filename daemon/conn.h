/* SPDX-License-Identifier: MIT */
/* conn.h -- client connections: QP, receive and reply paths, close. */
#ifndef RMP_CONN_H
#define RMP_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "config.h"
#include "device.h"
#include "guard.h"
#include "keys.h"
#include "log.h"
#include "proto.h"
#include "request.h"

struct rmp_guard;
struct rmp_lifecycle;
struct rmp_tenants;

enum rmp_conn_state {
	RMP_CONN_ACCEPTING,   /* accepted, waiting for ESTABLISHED */
	RMP_CONN_ESTABLISHED,
	RMP_CONN_CLOSING,     /* QP killed; waiting for its completions */
};

/* "accepting", "established", "closing". */
const char *rmp_conn_state_name(enum rmp_conn_state s);

/* A reply held back until the fence of its exclusive ATTACH is decided
 * (rmp_request_handle's *fence). */
struct rmp_deferred {
	TAILQ_ENTRY(rmp_deferred) link;
	uint64_t fence;
	uint64_t start_ns;        /* the request's arrival, for latency */
	struct rmp_msg rep;
};
TAILQ_HEAD(rmp_deferred_list, rmp_deferred);

struct rmp_reply_slot {
	struct rmp_conn *conn;
	uint8_t *buf;         /* RMP_MSG_MAX bytes in conn->send_mr */
	bool busy;
};

struct rmp_conn {
	struct rmp_conns *set;
	struct rmp_device *dev;   /* the device it came in on */
	struct rdma_cm_id *id;
	/* Ours, not id->qp: the server sets its own retry counts and
	 * timeouts, whatever the client asks for. */
	struct ibv_qp *qp;
	/* The QP's PD: the server's in window and pool modes; in region
	 * mode each connection has its own, so a lease's MR works from its
	 * QP only (and then it has its own receive queue: a QP cannot take
	 * buffers from an SRQ of another PD). */
	struct ibv_pd *pd;
	bool own_pd;
	struct rmp_holder holder; /* the keys granted through this QP */
	uint64_t serial;          /* for operators: "client #7" */
	/* Its name for logs and lease owners: the one it sent, escaped
	 * (rmp_log_field), or "ADDR:PORT" when it sent none. */
	char name[RMP_LOG_NAME_LEN];
	char peer[80];            /* "ADDR:PORT" */
	char peer_ip[64];         /* "ADDR" */
	char peer_block[RMP_PEER_BLOCK_LEN]; /* counted in: rmp_peer_block */
	enum rmp_conn_state state;
	unsigned bad_msgs;        /* garbage counter; too many: close */
	/* Until its AUTH proves the tenant (holder.tenant set), a
	 * connection may send nothing else. */
	struct rmp_auth_pending auth;
	/* What it counts against now (conn.c count_as). */
	enum rmp_conn_counted {
		RMP_CONN_COUNTS_NOWHERE, /* closed (or not accepted yet) */
		RMP_CONN_COUNTS_PENDING, /* the tenant's pending, and the
					  * server's unauthenticated slots */
		RMP_CONN_COUNTS_PROVEN,  /* the tenant's connections */
		RMP_CONN_COUNTS_SPARE,   /* closed before it proved a tenant,
					  * completions still due: beside
					  * max_clients (rmp_conn_cq_entries) */
	} counted;
	uint64_t accepted_ms;
	uint64_t requests, errors; /* answered; error replies + access errors */
	const char *close_after_reply; /* why, once the reply is sent */
	bool local_failure;       /* its QP failed by our doing */
	/* A reload voided its proof: closed at this time (0: it is not). */
	uint64_t cut_at_ms;
	bool access_error_noted;
	/* Its QP failed on a key the server revoked for someone else: no
	 * fault of its client's (its ephemeral leases get a grace). */
	bool revoked_key_error;
	unsigned hold;            /* > 0: in use on the stack, keep it */
	/* Liveness: completions that prove the peer alive (requests in,
	 * replies acknowledged, probes answered), their count at the last
	 * sweep and since when it has not moved; a probe in flight. */
	uint64_t heard, heard_at_sweep, quiet_since_ms;
	bool probe_out;

	unsigned nreply, replies_due;
	struct rmp_reply_slot *replies;
	/* Replies waiting for their fence: at most `credits` (a client
	 * counts them among its requests in flight). */
	struct rmp_deferred_list deferred;
	unsigned ndeferred;
	uint8_t *send_mem;
	struct ibv_mr *send_mr;

	unsigned nrecv, recvs_due; /* own receive queue (region mode) */
	struct rmp_rx_buf *rx;
	uint8_t *recv_mem;
	struct ibv_mr *recv_mr;

	TAILQ_ENTRY(rmp_conn) link;
};

TAILQ_HEAD(rmp_conn_list, rmp_conn);

/* What happened to connections since start, for metrics. */
struct rmp_conn_counters {
	uint64_t accepted, closed, auth_failures, access_errors,
		 bad_messages, unreachable;
	uint64_t log_suppressed;  /* rmp_conns_log_peer */
	uint64_t preauth_evicted; /* rmp_conns_preauth_room */
	uint64_t auth_timeouts;   /* closed by auth_timeout */
	/* Remote access errors of connections that had a key revoked by
	 * another's doing (rmp_holder.revoked_by_others): not counted in
	 * access_errors nor against the address. */
	uint64_t revoked_key_errors;
};

/* All connections, and what they need from the layers below. */
struct rmp_conns {
	struct rmp_device *devs[RMP_DEVICES_MAX]; /* the devices served */
	unsigned ndevs;
	struct rmp_lifecycle *lc;
	struct rmp_guard *guard;
	const struct rmp_config *cfg;
	struct rmp_request_ctx req;
	enum rmp_keys_mode keys_mode;
	struct rmp_conn_list list;
	uint32_t count;
	uint32_t unauthenticated; /* open, still to prove a tenant */
	uint32_t spare;           /* of count: RMP_CONN_COUNTS_SPARE */
	uint64_t next_serial;
	struct rmp_conn_counters counters; /* since start, for metrics */
	struct rmp_latency latency;
};

/* rmp_conns_init -- no connection yet; devs[i] (ndevs of them) are the
 * devices served and pools[i] device i's pool. */
void rmp_conns_init(struct rmp_conns *s, struct rmp_device *const *devs,
		    struct rmp_pool *const *pools, unsigned ndevs,
		    struct rmp_lifecycle *lc, struct rmp_guard *guard,
		    struct rmp_tenants *tenants, const struct rmp_config *cfg,
		    enum rmp_keys_mode keys_mode);

/* rmp_conns_device -- the served device whose verbs context this is, or
 * NULL (a connection there cannot be served). */
struct rmp_device *rmp_conns_device(const struct rmp_conns *s,
				    const struct ibv_context *verbs);

/* rmp_conns_count_peer -- open connections from ip's block
 * (rmp_peer_block) that proved their tenant. */
unsigned rmp_conns_count_peer(const struct rmp_conns *s, const char *ip);

/*
 * rmp_conns_preauth_room -- make room for one more connection from ip,
 * which has still to prove its tenant, closing one that has not proved
 * its own yet: when ip's block holds unauthenticated_per_address of
 * them, its oldest; else when the server holds max_unauthenticated of
 * them, or max_clients connections are open, the oldest of the block
 * that holds the most (ip's counting one more; of blocks that hold as
 * many, the one whose oldest came first). Connections that never
 * authenticate so cannot keep a client that does (within a round trip)
 * out, and a flood from one block closes its own first. A connection
 * closed unproven stops counting against max_clients at once
 * (RMP_CONN_COUNTS_SPARE): the new one takes its place while its
 * completions flush, up to max_clients such spares. 0, or -EBUSY (FULL)
 * when max_clients connections stay open (none of them was still to
 * prove a tenant, or max_clients spares wait already), or more spares
 * wait than that.
 */
int rmp_conns_preauth_room(struct rmp_conns *s, const char *ip);

/*
 * rmp_conns_log_peer -- a log line about a peer (a refused connect, an
 * access or authentication error, a receive that is no request), at most
 * RMP_GUARD_LOG_BURST per block of addresses in each
 * RMP_GUARD_LOG_WINDOW_MS, then a line that says how many were not
 * logged: a flood from one peer cannot fill the log.
 * rmp_conns_audit_peer -- the same at notice for an audit line of a
 * failure a peer can cause without a key (auth-fail), in a budget of its
 * own: the other lines of a flood cannot crowd out its first audit
 * lines. Neither is for the audit lines of what succeeds (a grant, a
 * free), which are always logged.
 */
void rmp_conns_log_peer(struct rmp_conns *s, const char *ip, int level,
			const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rmp_conns_audit_peer(struct rmp_conns *s, const char *ip,
			  const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * rmp_conns_note_failure -- one failure from ip: count it with the guard
 * against what failed -- ip's block (tenant NULL: access errors, bad
 * connect requests) or the tenant name from that block (failed proofs;
 * "" = anonymous) -- log it (what), and log when it starts a cool-down.
 */
void rmp_conns_note_failure(struct rmp_conns *s, const char *ip,
			    const char *tenant, const char *label,
			    const char *what, unsigned max_per_minute);

/*
 * rmp_conn_cq_entries -- completions one connection with credits may have
 * due at once: its send queue (replies, key operations, a liveness probe)
 * and its own receives (region mode); and those of one connection closed
 * before it proved a tenant, whose place it may have taken while they
 * flush (its receives, its one reply, a probe: rmp_conns_preauth_room
 * lets no more than max_clients of those wait). The device's CQ needs
 * this much per client.
 */
uint32_t rmp_conn_cq_entries(uint32_t credits);

/*
 * rmp_conn_accept -- a connection for id (name: what the client named
 * itself, maybe ""), on the served device id came in on (-ENODEV: none;
 * nothing was set up then): its QP (to RTS with the server's own timeouts),
 * buffers, receives, then rdma_accept with the accept data. It must
 * prove auth->tenant's key with its first message, and counts against
 * the tenant's connections (and connections_per_address) only once it
 * has. On failure returns -errno with c closing (the caller rejects id);
 * id is then no longer the connection's.
 */
int rmp_conn_accept(struct rmp_conns *s, struct rdma_cm_id *id,
		    const char *name, const char *peer, const char *peer_ip,
		    const struct rmp_auth_pending *auth,
		    uint8_t initiator_depth, const void *pdata, uint8_t plen,
		    struct rmp_conn **out);

/*
 * rmp_conn_established -- the connection is up: from the ESTABLISHED
 * event or from its first message, whichever the loop sees first.
 */
void rmp_conn_established(struct rmp_conn *c);
/*
 * rmp_conn_close -- the connection is gone or must go: kill its QP,
 * detach its leases, disconnect, and free c once every completion due
 * has come. Safe to call more than once.
 */
void rmp_conn_close(struct rmp_conn *c, const char *why);

/* A completion from the device's CQ (any tag). */
void rmp_conns_on_wc(struct rmp_conns *s, const struct ibv_wc *wc);
/* An async event of the device that names a QP. */
void rmp_conns_on_qp_event(struct rmp_conns *s,
			   const struct ibv_async_event *ev);
/*
 * rmp_conns_sweep -- close connections whose QP failed on the server side
 * (a refused rkey, bounds or rights): rxe reports that with no event, and
 * a client that never disconnects would otherwise keep its slot and its
 * access errors uncounted. Also closes connections that have not
 * authenticated within auth_timeout, and probes connections quiet for
 * keepalive (a failed probe closes the connection: its peer is gone).
 */
void rmp_conns_sweep(struct rmp_conns *s);
void rmp_conns_close_all(struct rmp_conns *s, const char *why);
/*
 * rmp_conns_recheck_proofs -- after a reload: a connection whose proof it
 * voided (its tenant removed, its key changed, anonymous access turned
 * off, its address no longer in the tenant's networks) is refused every
 * request from now on and closed, its keys with it, once its tenant's
 * rotate_grace is over (at once by default; rmp_conns_sweep closes the
 * later ones). Each is logged. One still to prove its tenant is left
 * alone: its AUTH is checked against the new configuration
 * (admit_proven refuses an address no longer admitted).
 */
void rmp_conns_recheck_proofs(struct rmp_conns *s);
/* Free what is left, completions due or not (last step of a stop). */
void rmp_conns_force_free(struct rmp_conns *s);

#endif /* RMP_CONN_H */

/* SPDX-License-Identifier: MIT */
/* raw.h -- rmp-raw: what its files share. */
#ifndef RMP_RAW_H
#define RMP_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "auth.h"
#include "proto.h"

#define TIMEOUT_MS 15000
#define NRECV 64              /* receive buffers: >= the server's credits */
#define SEND_MAX 512          /* send slot size: room for oversized tests */
#define SEND_SLOTS (NRECV + 1) /* 0: synchronous sends; others: pipelined */
#define MAX_SEND_WR (SEND_SLOTS + 8)
#define RECV_FLAG (1ull << 62) /* wr_id bit of receives */
#define ASYNC_FLAG (1ull << 61) /* wr_id bit of pipelined sends */
#define WC_TRACK 16
#define LEASE_LEN 4096
#define HOLD_TTL_S 900        /* hold outlives slow VM test runs */
#define MAX_BAD_MSGS 8        /* service.c disconnects after this many */
#define GARBAGE_WAIT_MS 5000  /* per reply in the garbage stream */
#define BIG_LEASE (1u << 20)  /* hold: larger leases check 4 KiB only */
#define STALL_EXTRA 4         /* stall: requests whose replies meet RNR */

struct rx_msg {
	uint8_t buf[RMP_MSG_MAX];
	uint32_t len;
};

struct raw {
	const char *what; /* prefix of messages: the subcommand */
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *msg_mr, *data_mr;
	uint8_t *msg;   /* NRECV receive slots, then SEND_SLOTS send slots */
	uint8_t *data;  /* local side of RDMA READ/WRITE */
	size_t data_len;
	bool connected, disconnected, qp_error;
	uint64_t lost_ms;  /* now_ms() when the server disconnected us */
	struct rmp_conn_rep rep;
	/* secrets of the leases this client was granted, for FREE */
	struct {
		uint64_t id, secret;
	} known[64];
	unsigned nknown;
	/* flags of the last reply request() returned (RMP_MSG_DETAIL) */
	uint16_t last_flags;
	/* the AUTH reply's status and detail when it was refused */
	int auth_status;
	unsigned auth_detail;

	/* receives posted; stall stops re-posting them (those it kept
	 * back: unposted, for resume_recvs) */
	unsigned posted;
	bool no_repost;
	bool unposted[NRECV];
	/* pipelined sends (post_request): slots in use */
	bool slot_busy[SEND_SLOTS];
	unsigned sends_busy;

	/* received, not yet consumed messages (FIFO) */
	struct rx_msg rx[NRECV];
	unsigned rx_head, rx_count;

	/* completions of sends and RDMA operations, by wr_id */
	struct {
		uint64_t wr_id;
		enum ibv_wc_status status;
		bool done;
	} wc[WC_TRACK];
	uint64_t next_wr_id, next_req_id;
	/* transport retries of the connection (0: 7, which Soft-RoCE takes
	 * as "for ever") */
	uint8_t retry_count;
};

/* What run_fill does once the leases are granted. */
enum fill_then { FILL_EXIT, FILL_HOLD, FILL_STALL };

/* A connect expectation: a reject reason (0 = served), or with this bit
 * an AUTH refused with the detail below it. */
#define WANT_AUTH 0x10000

/* prog -- the label of messages: the subcommand (main sets it). */
extern const char *prog;

/* raw_core.c: output, time */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ms(void);
const char *errname(int st);
void hexdump(const char *label, const uint8_t *p, size_t len);

/* raw_core.c: events */
void drain_cq(struct raw *r);
int pump(struct raw *r, int timeout_ms, int extra_fd);

/* raw_core.c: connection */
void raw_close(struct raw *r);
int raw_connect(struct raw *r, const char *what, const char *host,
		const char *port, const void *pdata, uint8_t plen,
		size_t data_len, struct rmp_conn_rej *rej,
		int *rej_ret, int *rej_status);
const char *raw_tenant(void);
int raw_server(struct raw *r, uint8_t out[RMP_ENDPOINT_LEN]);
int connect_as(struct raw *r, const char *what, const char *host,
	       const char *port, size_t data_len, int *reason,
	       bool auth);
int connect_named(struct raw *r, const char *what, const char *host,
		  const char *port, size_t data_len, int *reason);
int connect_ok(struct raw *r, const char *what, const char *host,
	       const char *port, size_t data_len);

/* raw_core.c: operations */
int send_bytes(struct raw *r, const void *buf, size_t len);
const char *op_name(enum ibv_wr_opcode op);
int post_wait(struct raw *r, struct ibv_send_wr *wr, int timeout_ms);
int rdma_op_within(struct raw *r, enum ibv_wr_opcode op,
		   uint64_t raddr, uint32_t rkey, size_t len,
		   int timeout_ms);
int rdma_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
	    uint32_t rkey, size_t len);
int atomic_op(struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
	      uint32_t rkey, uint64_t compare_add, uint64_t swap);
const char *wc_str(int st);
int parse_reply(const struct rx_msg *x, struct rmp_msg *m);
int next_reply(struct raw *r, struct rmp_msg *m, int timeout_ms);
int reply_for(struct raw *r, uint64_t req_id, struct rmp_msg *m,
	      int timeout_ms, int *strays);
int request(struct raw *r, struct rmp_msg *req, struct rmp_msg *rep);
void remember(struct raw *r, const struct rmp_lease_desc *d);
uint64_t secret_of(const struct raw *r, uint64_t id);
int do_alloc(struct raw *r, uint64_t length, uint32_t ttl_s,
	     uint32_t flags, struct rmp_lease_desc *d);
int do_simple(struct raw *r, unsigned opcode, uint64_t id,
	      struct rmp_msg *rep, bool *transport);
int post_request(struct raw *r, struct rmp_msg *req);
uint8_t pattern(size_t i, uint64_t seed);
const char *keys_mode_str(unsigned m);
int refusal_ok(const struct rmp_msg *rep, const char *what, int want,
	       int want_detail);

/* raw_core.c: lease helpers */
size_t pattern_len(uint64_t length);
int check_pattern(const struct raw *r, size_t len, uint64_t seed);
int write_pattern(struct raw *r, const struct rmp_lease_desc *d,
		  uint64_t seed);
int read_check(struct raw *r, const struct rmp_lease_desc *d,
	       uint64_t seed, const char *when);
void print_lease(const struct rmp_lease_desc *d);
/* wait_stdin: serve r until a line on stdin; _line keeps the line */
int wait_stdin(struct raw *r, bool fail_on_loss);
int wait_stdin_line(struct raw *r, bool fail_on_loss, char *buf, size_t len);

/* raw_core.c: stall */
int use_up_recvs(struct raw *r, unsigned keep, unsigned *nstat);
void send_unanswerable(struct raw *r, unsigned *extra);
void stalled(struct raw *r, unsigned nstat, unsigned extra);
void post_kept_recvs(struct raw *r, unsigned max);
void resume_recvs(struct raw *r);

/* raw_connect.c: connecting and authenticating */
int run_garbage(const char *host, const char *port);
int run_badconnect(const char *host, const char *port);
int run_drainprobe(const char *host, const char *port);
int run_auth(const char *host, const char *port, const char *mode);
int run_silent(const char *host, const char *port, uint32_t secs);
int run_silentflood(const char *host, const char *port, unsigned n,
		    uint32_t secs);
int run_idle(const char *host, const char *port, unsigned n);
int run_connect(const char *host, const char *port, int want);

/* raw_leases.c: lease requests */
int run_hold(const char *host, const char *port, int stat_every_ms,
	     uint64_t length, uint32_t flags);
int run_expire(const char *host, const char *port, uint32_t ttl_s,
	       uint64_t within_ms);
int run_revoked(const char *host, const char *port, uint64_t length);
int run_fill(const char *host, const char *port, uint64_t n,
	     uint64_t len, uint32_t ttl_s, enum fill_then then,
	     bool upto);
int run_alloc(const char *host, const char *port, uint64_t len,
	      uint32_t ttl_s, bool free_it, int want, bool token,
	      bool report);
int run_byid(const char *host, const char *port, const char *op,
	     uint64_t id, uint64_t secret, uint32_t ttl_s,
	     uint32_t access, uint32_t flags, int want, int want_detail,
	     bool do_read);
int run_rowrite(const char *host, const char *port, uint64_t id,
		uint64_t secret);
int run_tstat(const char *host, const char *port);
int run_voided(const char *host, const char *port, uint64_t grace_ms);
int run_free(const char *host, const char *port, uint64_t id,
	     int want);
int run_stat(const char *host, const char *port, unsigned count);

/* raw_fence.c: the fence of an exclusive ATTACH */
int run_scribble(const char *host, const char *port, bool stall);
int run_takeover(const char *host, const char *port, uint64_t id,
		 uint64_t secret, uint64_t gap_ms);

/* raw_attacks.c: attacks */
int run_oob(const char *host, const char *port);
int run_steal(const char *host, const char *port, uint64_t addr,
	      uint32_t rkey, uint64_t len, bool expect_success);
int run_guess(const char *host, const char *port, uint64_t addr,
	      uint32_t rkey, unsigned n, uint64_t len);
int run_stall(const char *host, const char *port, uint32_t ttl_s);
int run_notsend(const char *host, const char *port, bool inv);
int run_freerace(const char *host, const char *port, uint64_t rounds);

/* raw_flood.c: floods and load */
int run_credits(const char *host, const char *port, uint64_t rounds,
		uint32_t seconds);
int run_churn(const char *host, const char *port, uint64_t len,
	      uint32_t seconds);
int run_statloop(const char *host, const char *port, uint32_t seconds);

#endif /* RMP_RAW_H */

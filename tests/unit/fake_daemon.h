/* SPDX-License-Identifier: MIT */
/*
 * fake_daemon.h -- the world below the lease lifecycle, faked for
 * test_lifecycle and test_request: the verbs, the clock, the zeroing
 * thread, the pool's memory and the log.
 *
 * - Verbs: a fake ibv_context routes the inline hot paths (post_send,
 *   alloc_mw, dealloc_mw) here, as in test_keys.c; ibv_modify_qp,
 *   ibv_reg_mr_iova2 and ibv_dereg_mr are defined here and win over
 *   libibverbs at link time. Posted work requests are recorded; the test
 *   completes them when it chooses (fake_complete, fake_flush).
 * - Clock: the tests link with -Wl,--wrap=rmp_now_ms and
 *   --wrap=rmp_coarse_lag_ms (meson.build), so every deadline the
 *   lifecycle and the key module compute is in fake_now. Its timers are
 *   real libevent events that are never dispatched: fake_advance moves
 *   the clock and fires each one, in order, when it falls due, as the
 *   loop would.
 * - Zeroing: rmp_zeroer_* are defined here instead of daemon/zero.c,
 *   whose worker thread reports through an eventfd in the event loop:
 *   here a job waits until fake_zero_run, so the test sees the ZEROING
 *   state with its bytes counted and decides when it ends.
 * - Pool: heap memory with real allocators (pool.c's rmp_pool_get and
 *   friends over them), no mmap, no device.
 * - Log: -Wl,--wrap=rmp_log records every line (debug too), so a test
 *   can ask whether a state change or an audit line was written.
 *   RMP_TEST_LOG=1 prints them as TAP comments.
 */
#ifndef RMP_FAKE_DAEMON_H
#define RMP_FAKE_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "keys.h"
#include "pool.h"

struct rmp_config;
struct rmp_lifecycle;
struct rmp_tenant;

/* -------------------------------------------------------------- clock */

#define FAKE_LAG_MS 4 /* what rmp_coarse_lag_ms says */
/* fake_add_tenant -- a [tenant.NAME] in cfg whose key is 16 bytes of
 * NAME's first letter, with these limits (0: none). */
void fake_add_tenant(struct rmp_config *cfg, const char *name,
		     uint64_t bytes, uint64_t leases);

extern uint64_t fake_now; /* what rmp_now_ms says */

/* fake_advance -- let ms pass, firing lc's timers as they fall due. */
void fake_advance(struct rmp_lifecycle *lc, uint64_t ms);

/* -------------------------------------------------------------- verbs */

/* One key work request as posted, on which QP, and whether it completed. */
struct fake_wr {
	struct ibv_qp *qp;
	struct ibv_send_wr wr;
	bool done;
};
#define FAKE_WRS_MAX 1024
extern struct fake_wr fake_wrs[FAKE_WRS_MAX];
extern unsigned fake_nwrs;
extern int fake_post_fail;     /* errno ibv_post_send returns; 0: posts */
extern int fake_dereg_fail;    /* errno ibv_dereg_mr fails with; 0: works */
extern unsigned fake_mws_alloced, fake_mws_dealloced, fake_mrs_reg,
		fake_mrs_dereg, fake_qps_killed;

/*
 * A client connection as the lifecycle sees it: a holder on a QP and PD
 * of its own. fails counts the holder's fail calls (why: the last one).
 */
struct fake_conn {
	struct rmp_holder h; /* first: h->fail finds its fake_conn */
	struct ibv_qp qp;
	struct ibv_pd pd;
	unsigned fails;
	char why[128];
	char name[32];
};

/* fake_conn_init -- c, proven as tenant t, name, key_wrs_max in flight. */
void fake_conn_init(struct fake_conn *c, struct rmp_tenant *t,
		    const char *name, unsigned key_wrs_max);
/* fake_conn_close -- what conn.c does when a connection goes: kill the
 * QP, detach the holder. What was posted on it is still due: the test
 * flushes it (fake_complete_all with IBV_WC_WR_FLUSH_ERR) when it likes. */
void fake_conn_close(struct rmp_lifecycle *lc, struct fake_conn *c);
/* fake_conn_lost -- fake_conn_close of a connection that failed on a key
 * the server revoked for someone else (conn.c's innocent access error):
 * its ephemeral leases get their grace. */
void fake_conn_lost(struct rmp_lifecycle *lc, struct fake_conn *c);
/* fake_conn_free -- c is idle (checked by the caller): drop its spare
 * windows. */
void fake_conn_free(struct fake_conn *c);

/* fake_last -- index of the last work request of opcode op posted on qp
 * (any QP when NULL), or -1. */
int fake_last(const struct ibv_qp *qp, enum ibv_wr_opcode op);
/* fake_count -- work requests of opcode op posted on qp (any when NULL)
 * from index from on. */
unsigned fake_count(unsigned from, const struct ibv_qp *qp,
		    enum ibv_wr_opcode op);
/* fake_complete -- work request i completes with status (through the
 * lifecycle, as conn.c hands key completions on). */
void fake_complete(struct rmp_lifecycle *lc, unsigned i,
		   enum ibv_wc_status status);
/* fake_complete_all -- every due one on qp (all QPs when NULL) completes
 * with status, oldest first, including those posted meanwhile. Returns
 * how many. */
unsigned fake_complete_all(struct rmp_lifecycle *lc, const struct ibv_qp *qp,
			   enum ibv_wc_status status);
/* fake_due -- work requests posted and not completed, on qp (all: NULL). */
unsigned fake_due(const struct ibv_qp *qp);

/* ------------------------------------------------------------ zeroing */

extern unsigned fake_zero_jobs;  /* submitted, not yet run */
extern int fake_zero_fail;       /* rmp_zeroer_submit fails with it */
/* fake_zero_run -- zero and report every submitted job. */
void fake_zero_run(void);

/* --------------------------------------------------------------- pool */

/*
 * fake_pool_new -- a pool of size bytes in nchunks chunks (each its own
 * allocator and fake MR), over mem when not NULL (a restart: an earlier
 * process's bytes) or fresh zeroed memory.
 */
struct rmp_pool *fake_pool_new(uint64_t size, uint32_t nchunks, uint8_t *mem);
/* fake_pool_free -- the allocators and the struct; the memory too unless
 * keep_mem. */
void fake_pool_free(struct rmp_pool *p, bool keep_mem);
uint64_t fake_pool_free_bytes(const struct rmp_pool *p);

/* ---------------------------------------------------------------- log */

void fake_log_clear(void);
/* fake_log_count -- lines logged since the last clear containing text. */
unsigned fake_log_count(const char *text);

#endif /* RMP_FAKE_DAEMON_H */

/* SPDX-License-Identifier: MIT */
/* fake_daemon.c -- the world below the lease lifecycle, faked (see
 * fake_daemon.h for what and why). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "fake_daemon.h"
#include "lifecycle.h"
#include "lifecycle_int.h"
#include "zero.h"

/* -------------------------------------------------------------- clock */

uint64_t fake_now = 1000000;

/* Every object that calls rmp_now_ms / rmp_coarse_lag_ms is linked with
 * --wrap: its calls land here. */
uint64_t __wrap_rmp_now_ms(void);
uint64_t __wrap_rmp_coarse_lag_ms(void);

uint64_t __wrap_rmp_now_ms(void)
{
	return fake_now;
}

uint64_t __wrap_rmp_coarse_lag_ms(void)
{
	return FAKE_LAG_MS;
}

/* A timer of the lifecycle: its event, when it fires, its handler. */
struct fake_timer {
	struct event *ev;
	uint64_t at;
	void (*fn)(evutil_socket_t fd, short what, void *arg);
};

/* next_timer -- the pending timer of lc that fires first, by end. */
static bool next_timer(struct rmp_lifecycle *lc, uint64_t end,
		       struct fake_timer *out)
{
	struct fake_timer t[5] = {
		{ lc->expiry_ev, lc->expiry_at_ms, lc_on_expiry },
		{ lc->revoke_ev, lc->revoke_at_ms, lc_on_revoke_timeout },
		{ lc->settle_ev, lc->settle_at_ms, lc_on_settle },
		{ lc->fence_ev, lc->fence_at_ms, lc_on_fence },
		{ lc->orphan_ev, lc->orphan_at_ms, lc_on_orphans },
	};
	bool found = false;

	for (unsigned i = 0; i < 5; i++) {
		if (!event_pending(t[i].ev, EV_TIMEOUT, NULL) || t[i].at > end)
			continue;
		if (!found || t[i].at < out->at)
			*out = t[i];
		found = true;
	}
	return found;
}

void fake_advance(struct rmp_lifecycle *lc, uint64_t ms)
{
	uint64_t end = fake_now + ms;
	struct fake_timer t = { 0 };

	/* A timer fires once: off its event, then its handler (which may
	 * arm it again), as libevent runs a one-shot timeout. */
	while (next_timer(lc, end, &t)) {
		if (t.at > fake_now)
			fake_now = t.at;
		event_del(t.ev);
		t.fn(-1, EV_TIMEOUT, lc);
	}
	fake_now = end;
}

/* -------------------------------------------------------------- verbs */

struct fake_wr fake_wrs[FAKE_WRS_MAX];
unsigned fake_nwrs;
int fake_post_fail, fake_dereg_fail;
unsigned fake_mws_alloced, fake_mws_dealloced, fake_mrs_reg, fake_mrs_dereg,
	 fake_qps_killed;
static struct ibv_context fake_ctx;
static uint32_t fake_qpn;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (fake_post_fail || fake_nwrs == FAKE_WRS_MAX) {
			*bad = wr;
			return fake_post_fail ? fake_post_fail : ENOMEM;
		}
		fake_wrs[fake_nwrs].qp = qp;
		fake_wrs[fake_nwrs].wr = *wr;
		fake_wrs[fake_nwrs].wr.next = NULL;
		fake_wrs[fake_nwrs++].done = false;
	}
	return 0;
}

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = calloc(1, sizeof(*mw));

	if (!mw)
		return NULL;
	mw->context = &fake_ctx;
	mw->pd = pd;
	mw->type = type;
	mw->rkey = 0x20000 + (fake_mws_alloced++ << 8);
	return mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	fake_mws_dealloced++;
	free(mw);
	return 0;
}

/* The QP's move to the error state (rmp_holder_kill). */
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR)
		fake_qps_killed++;
	return 0;
}

/* Region mode's keys (keys.c asks with access bits that are not a
 * constant, so verbs.h sends it to the iova2 entry). */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)iova;
	(void)access;
	if (!mr)
		return NULL;
	mr->context = &fake_ctx;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->rkey = 0x40000 + (fake_mrs_reg++ << 8);
	return mr;
}

/* A failed deregistration keeps its MR (as the daemon keeps an UNPROVEN
 * key's object): it is parked here, freed at exit. */
static struct ibv_mr *stuck_mrs[64];
static unsigned nstuck_mrs;

static void free_stuck_mrs(void)
{
	while (nstuck_mrs)
		free(stuck_mrs[--nstuck_mrs]);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (fake_dereg_fail) {
		if (!nstuck_mrs)
			atexit(free_stuck_mrs);
		if (nstuck_mrs < 64)
			stuck_mrs[nstuck_mrs++] = mr;
		errno = fake_dereg_fail;
		return fake_dereg_fail;
	}
	fake_mrs_dereg++;
	free(mr);
	return 0;
}

static void on_fail(struct rmp_holder *h, const char *why)
{
	struct fake_conn *c = (struct fake_conn *)h;

	c->fails++;
	snprintf(c->why, sizeof(c->why), "%s", why);
}

void fake_conn_init(struct fake_conn *c, struct rmp_tenant *t,
		    const char *name, unsigned key_wrs_max)
{
	memset(c, 0, sizeof(*c));
	fake_ctx.ops.post_send = fake_post_send;
	fake_ctx.ops.alloc_mw = fake_alloc_mw;
	fake_ctx.ops.dealloc_mw = fake_dealloc_mw;
	c->pd.context = &fake_ctx;
	c->qp.context = &fake_ctx;
	c->qp.pd = &c->pd;
	c->qp.qp_num = ++fake_qpn;
	rmp_holder_init(&c->h, &c->qp, &c->pd, 0, key_wrs_max);
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->h.label, sizeof(c->h.label), "client #%u (%s)",
		 c->qp.qp_num, name);
	c->h.name = c->name;
	c->h.peer = "192.0.2.9:4242";
	c->h.tenant = t;
	c->h.tenant_epoch = t ? t->epoch : 0;
	c->h.fail = on_fail;
}

void fake_conn_close(struct rmp_lifecycle *lc, struct fake_conn *c)
{
	rmp_holder_kill(&c->h);
	rmp_lifecycle_detach(lc, &c->h, false);
	c->h.tenant = NULL; /* as conn.c: no longer its tenant's */
}

void fake_conn_lost(struct rmp_lifecycle *lc, struct fake_conn *c)
{
	rmp_holder_kill(&c->h);
	rmp_lifecycle_detach(lc, &c->h, true);
	c->h.tenant = NULL;
}

void fake_conn_free(struct fake_conn *c)
{
	rmp_holder_drop_windows(&c->h);
}

int fake_last(const struct ibv_qp *qp, enum ibv_wr_opcode op)
{
	for (unsigned i = fake_nwrs; i-- > 0;)
		if ((!qp || fake_wrs[i].qp == qp) && fake_wrs[i].wr.opcode == op)
			return (int)i;
	return -1;
}

unsigned fake_count(unsigned from, const struct ibv_qp *qp,
		    enum ibv_wr_opcode op)
{
	unsigned n = 0;

	for (unsigned i = from; i < fake_nwrs; i++)
		n += (!qp || fake_wrs[i].qp == qp) &&
		     fake_wrs[i].wr.opcode == op;
	return n;
}

void fake_complete(struct rmp_lifecycle *lc, unsigned i,
		   enum ibv_wc_status status)
{
	struct fake_wr *w = &fake_wrs[i];
	struct ibv_wc wc = { .wr_id = w->wr.wr_id, .status = status };

	if (i >= fake_nwrs || w->done) {
		fprintf(stderr, "fake_complete: work request %u is not due\n",
			i);
		abort();
	}
	w->done = true;
	rmp_lifecycle_on_key_wc(lc, rmp_wr_ptr(wc.wr_id),
				rmp_wr_tag(wc.wr_id), &wc);
}

unsigned fake_complete_all(struct rmp_lifecycle *lc, const struct ibv_qp *qp,
			   enum ibv_wc_status status)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake_nwrs; i++) {
		if (fake_wrs[i].done || (qp && fake_wrs[i].qp != qp))
			continue;
		fake_complete(lc, i, status);
		n++;
	}
	return n;
}

unsigned fake_due(const struct ibv_qp *qp)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake_nwrs; i++)
		n += !fake_wrs[i].done && (!qp || fake_wrs[i].qp == qp);
	return n;
}

/* ------------------------------------------------------------ zeroing */

#define ZERO_JOBS_MAX 64

struct rmp_zeroer {
	rmp_zero_done_fn done;
	void *ctx;
	struct {
		void *addr, *arg;
		size_t len;
	} job[ZERO_JOBS_MAX];
};

unsigned fake_zero_jobs;
int fake_zero_fail;
static struct rmp_zeroer *zeroer; /* one lifecycle at a time */

struct rmp_zeroer *rmp_zeroer_new(struct event_base *base,
				  rmp_zero_done_fn done, void *ctx)
{
	(void)base;
	if (zeroer) {
		fprintf(stderr, "fake zeroer: one at a time\n");
		abort();
	}
	zeroer = calloc(1, sizeof(*zeroer));
	if (!zeroer)
		return NULL;
	zeroer->done = done;
	zeroer->ctx = ctx;
	fake_zero_jobs = 0;
	return zeroer;
}

int rmp_zeroer_submit(struct rmp_zeroer *z, void *addr, size_t len,
		      void *arg)
{
	if (fake_zero_fail)
		return -fake_zero_fail;
	if (fake_zero_jobs == ZERO_JOBS_MAX)
		return -ENOMEM;
	z->job[fake_zero_jobs].addr = addr;
	z->job[fake_zero_jobs].len = len;
	z->job[fake_zero_jobs++].arg = arg;
	return 0;
}

void fake_zero_run(void)
{
	/* In order; a done call may submit no job (it frees a lease). */
	for (unsigned i = 0; i < fake_zero_jobs; i++) {
		memset(zeroer->job[i].addr, 0, zeroer->job[i].len);
		zeroer->done(zeroer->ctx, zeroer->job[i].arg);
	}
	fake_zero_jobs = 0;
}

void rmp_zeroer_free(struct rmp_zeroer *z)
{
	if (!z)
		return;
	fake_zero_run(); /* as zero.c: finish and report every job */
	free(z);
	zeroer = NULL;
}

/* --------------------------------------------------------------- pool */

struct rmp_pool *fake_pool_new(uint64_t size, uint32_t nchunks, uint8_t *mem)
{
	struct rmp_pool *p = calloc(1, sizeof(*p));

	if (!p)
		abort();
	p->size = size;
	p->base = mem;
	if (!p->base) {
		p->base = aligned_alloc(4096, size);
		if (!p->base)
			abort();
		memset(p->base, 0, size);
	}
	/* Not the process address: clients never learn it (pool.h). */
	p->iova = 0x7e5a00000000ull;
	p->node = 1;
	p->state_fd = -1;
	p->nchunks = nchunks;
	p->chunk_span = size / nchunks;
	p->chunks = calloc(nchunks, sizeof(*p->chunks));
	if (!p->chunks)
		abort();
	for (uint32_t i = 0; i < nchunks; i++) {
		struct rmp_pool_chunk *c = &p->chunks[i];

		c->offset = i * p->chunk_span;
		c->size = p->chunk_span;
		/* Registered on two devices: MRs of their own. */
		c->mr[0] = calloc(1, sizeof(*c->mr[0]));
		c->mr[1] = calloc(1, sizeof(*c->mr[1]));
		c->alloc = rmp_alloc_new(c->size);
		if (!c->mr[0] || !c->mr[1] || !c->alloc)
			abort();
		c->mr[0]->rkey = 0x300 + i;
		c->mr[1]->rkey = 0x400 + i;
	}
	return p;
}

void fake_pool_free(struct rmp_pool *p, bool keep_mem)
{
	for (uint32_t i = 0; i < p->nchunks; i++) {
		rmp_alloc_free(p->chunks[i].alloc);
		free(p->chunks[i].mr[0]);
		free(p->chunks[i].mr[1]);
	}
	free(p->chunks);
	if (!keep_mem)
		free(p->base);
	free(p);
}

uint64_t fake_pool_free_bytes(const struct rmp_pool *p)
{
	struct rmp_pool_stats st;

	rmp_pool_stats(p, &st);
	return st.free_bytes;
}

/* ---------------------------------------------------------------- log */

#define LOG_LINES 512
#define LOG_LEN 320

static char log_line[LOG_LINES][LOG_LEN];
static unsigned log_n;

void __wrap_rmp_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void __wrap_rmp_log(int level, const char *fmt, ...)
{
	char *line = log_line[log_n++ % LOG_LINES];
	static int verbose = -1;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, LOG_LEN, fmt, ap);
	va_end(ap);
	if (verbose < 0)
		verbose = getenv("RMP_TEST_LOG") != NULL;
	if (verbose)
		printf("# log<%d>: %s\n", level, line);
}

void fake_log_clear(void)
{
	log_n = 0;
}

unsigned fake_log_count(const char *text)
{
	unsigned n = 0, lines = log_n < LOG_LINES ? log_n : LOG_LINES;

	for (unsigned i = 0; i < lines; i++)
		n += strstr(log_line[i], text) != NULL;
	return n;
}

void fake_add_tenant(struct rmp_config *cfg, const char *name,
		     uint64_t bytes, uint64_t leases)
{
	struct rmp_tenant_config *t = &cfg->tenants[cfg->ntenants++];

	snprintf(t->name, sizeof(t->name), "%s", name);
	memset(t->key, name[0], 16);
	t->key_len = 16;
	t->limits.bytes = bytes;
	t->limits.leases = leases;
}

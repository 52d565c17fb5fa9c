/* SPDX-License-Identifier: MIT */
/* failshim.c -- an LD_PRELOAD shim that makes chosen verbs calls fail. */

/*
 * The RDMA tests preload it into rmpoold to see what the daemon does when
 * it cannot prove a lease's key dead:
 *
 *   RMP_SHIM_FAIL_DEALLOC_MW=1   ibv_dealloc_mw returns EIO and leaves the
 *                                memory window as it is. ibv_dealloc_mw is
 *                                a static inline calling the context's
 *                                ops.dealloc_mw, so ibv_open_device (which
 *                                librdmacm uses too) is interposed and the
 *                                op replaced in every context it returns.
 *   RMP_SHIM_FAIL_DEREG_LEN=N    ibv_dereg_mr of an MR of exactly N bytes
 *                                returns EIO and leaves the MR registered.
 *   RMP_SHIM_FAIL_BIND=1         ibv_post_send of a chain holding an
 *                                IBV_WR_BIND_MW returns ENOMEM, posting
 *                                nothing (ops.post_send, as above).
 *   RMP_SHIM_FAIL_BIND=complete  such a chain is posted with the bind's
 *                                length past its MR: the bind completes
 *                                in error (and its QP goes to error).
 *   RMP_SHIM_FAIL_ALLOC_MW=PATH  while the file PATH exists, ibv_alloc_mw
 *                                fails with ENOMEM (ops.alloc_mw): a
 *                                test turns it on right before the grant
 *                                that must fail.
 *
 * And into a client, to kill it at a chosen point of its writes:
 *
 *   RMP_SHIM_KILL_AFTER_WRITES=N  the process SIGKILLs itself before it
 *                                posts a chain that would take its RDMA
 *                                WRITEs past N (ops.post_send): a writer
 *                                dead in the middle of a call, at the
 *                                same WR on every run, whatever the
 *                                machine's speed.
 *
 * Each kind of fault is reported once on stderr, as "failshim: ...".
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

typedef struct ibv_context *(*open_device_fn)(struct ibv_device *);
typedef int (*dereg_mr_fn)(struct ibv_mr *);

/* The verbs symbols are versioned; the current version first. */
#define VERBS_VERSION "IBVERBS_1.1"

static bool fail_dealloc_mw, fail_bind, break_bind;
static const char *fail_alloc_mw_while;
static struct ibv_mw *(*real_alloc_mw)(struct ibv_pd *, enum ibv_mw_type);
static uint64_t fail_dereg_len;
static unsigned long kill_after_writes, writes_posted;
static int said_dealloc_mw, said_dereg_mr, said_bind, said_alloc_mw;
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *,
			     struct ibv_send_wr **);

/* next_sym -- the next definition of name (of VERBS_VERSION if any). */
static void *next_sym(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, VERBS_VERSION);

	if (!p)
		p = dlsym(RTLD_NEXT, name);
	if (!p) {
		fprintf(stderr, "failshim: %s not found: %s\n", name,
			dlerror());
		abort();
	}
	return p;
}

static void say_once(int *said, const char *what)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "failshim: %s\n", what);
}

__attribute__((constructor)) static void failshim_init(void)
{
	const char *s = getenv("RMP_SHIM_FAIL_DEALLOC_MW");

	fail_dealloc_mw = s && *s && strcmp(s, "0");
	s = getenv("RMP_SHIM_FAIL_DEREG_LEN");
	if (s && *s)
		fail_dereg_len = strtoull(s, NULL, 0);
	s = getenv("RMP_SHIM_FAIL_BIND");
	break_bind = s && !strcmp(s, "complete");
	fail_bind = s && *s && strcmp(s, "0") && !break_bind;
	s = getenv("RMP_SHIM_FAIL_ALLOC_MW");
	fail_alloc_mw_while = s && *s ? s : NULL;
	s = getenv("RMP_SHIM_KILL_AFTER_WRITES");
	if (s && *s)
		kill_after_writes = strtoul(s, NULL, 0);
	fprintf(stderr, "failshim: loaded (dealloc_mw %s, dereg_mr of %llu "
		"bytes %s, window binds %s)\n",
		fail_dealloc_mw ? "fails" : "works",
		(unsigned long long)fail_dereg_len,
		fail_dereg_len ? "fails" : "works",
		fail_bind ? "fail" : break_bind ? "complete in error" :
		"work");
}

/* failing_dealloc_mw -- the window stays allocated and bound. */
static int failing_dealloc_mw(struct ibv_mw *mw)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "ibv_dealloc_mw(rkey %#x) -> EIO (window "
		 "left as it is; reported once)", mw ? mw->rkey : 0);
	say_once(&said_dealloc_mw, msg);
	errno = EIO;
	return EIO;
}

/* gated_alloc_mw -- no window while the gate file exists. */
static struct ibv_mw *gated_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	if (access(fail_alloc_mw_while, F_OK) == 0) {
		say_once(&said_alloc_mw, "ibv_alloc_mw -> ENOMEM (while the "
			 "gate file exists; reported once)");
		errno = ENOMEM;
		return NULL;
	}
	return real_alloc_mw(pd, type);
}

/* failing_post_send -- a chain with a window bind is refused whole. */
static int failing_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad)
{
	for (struct ibv_send_wr *w = wr; w; w = w->next) {
		if (w->opcode != IBV_WR_BIND_MW)
			continue;
		if (break_bind) {
			say_once(&said_bind, "ibv_post_send(IBV_WR_BIND_MW): "
				 "length set past the MR (reported once)");
			w->bind_mw.bind_info.length = UINT64_MAX / 2;
			continue;
		}
		say_once(&said_bind, "ibv_post_send(IBV_WR_BIND_MW) "
			 "-> ENOMEM (nothing posted; reported once)");
		*bad = wr;
		return ENOMEM;
	}
	return real_post_send(qp, wr, bad);
}

/* killing_post_send -- the process dies before its WRITEs pass the
 * count: what it posted before stays, nothing of this chain goes. */
static int killing_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad)
{
	unsigned long n = 0;

	for (struct ibv_send_wr *w = wr; w; w = w->next)
		n += w->opcode == IBV_WR_RDMA_WRITE;
	if (n && __atomic_add_fetch(&writes_posted, n, __ATOMIC_RELAXED) >
			 kill_after_writes) {
		fprintf(stderr, "failshim: killed before RDMA WRITE %lu "
			"(RMP_SHIM_KILL_AFTER_WRITES=%lu)\n",
			kill_after_writes + 1, kill_after_writes);
		raise(SIGKILL);
	}
	return real_post_send(qp, wr, bad);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	static open_device_fn real;
	struct ibv_context *ctx;

	if (!real) {
		void *p = next_sym("ibv_open_device");

		memcpy(&real, &p, sizeof(real));
	}
	ctx = real(device);
	if (ctx && fail_dealloc_mw)
		ctx->ops.dealloc_mw = failing_dealloc_mw;
	if (ctx && fail_alloc_mw_while) {
		real_alloc_mw = ctx->ops.alloc_mw;
		ctx->ops.alloc_mw = gated_alloc_mw;
	}
	if (ctx && (fail_bind || break_bind)) {
		real_post_send = ctx->ops.post_send;
		ctx->ops.post_send = failing_post_send;
	} else if (ctx && kill_after_writes) {
		real_post_send = ctx->ops.post_send;
		ctx->ops.post_send = killing_post_send;
	}
	return ctx;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	static dereg_mr_fn real;

	if (!real) {
		void *p = next_sym("ibv_dereg_mr");

		memcpy(&real, &p, sizeof(real));
	}
	if (mr && fail_dereg_len && mr->length == fail_dereg_len) {
		char msg[128];

		snprintf(msg, sizeof(msg), "ibv_dereg_mr(%zu bytes, rkey %#x) "
			 "-> EIO (MR left registered; reported once)",
			 mr->length, mr->rkey);
		say_once(&said_dereg_mr, msg);
		errno = EIO;
		return EIO;
	}
	return real(mr);
}

/* SPDX-License-Identifier: MIT */
/* zero.h -- zeroing of freed extents on a worker thread, off the event loop. */
#ifndef RMP_ZERO_H
#define RMP_ZERO_H

#include <stddef.h>

struct event_base;
struct rmp_zeroer;

/* Called in the event loop once the bytes of a submitted job are zero. */
typedef void (*rmp_zero_done_fn)(void *ctx, void *arg);

/*
 * rmp_zeroer_new -- start the worker (a SCHED_IDLE thread on the calling
 * thread's CPUs, so it yields to the event loop at once). done(ctx, arg)
 * runs in base's loop. NULL on failure (logged).
 */
struct rmp_zeroer *rmp_zeroer_new(struct event_base *base,
				  rmp_zero_done_fn done, void *ctx);

/*
 * rmp_zeroer_submit -- zero [addr, addr + len) and then report arg. Never
 * blocks on the zeroing itself. 0 or -ENOMEM.
 */
int rmp_zeroer_submit(struct rmp_zeroer *z, void *addr, size_t len,
		      void *arg);

/*
 * rmp_zeroer_free -- finish every submitted job (reporting each), stop the
 * worker, free. Accepts NULL.
 */
void rmp_zeroer_free(struct rmp_zeroer *z);

#endif /* RMP_ZERO_H */

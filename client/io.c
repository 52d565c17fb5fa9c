/* SPDX-License-Identifier: MIT */
/* io.c -- the data path: synchronous and asynchronous RDMA READ, WRITE and atomics on a lease. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "buf.h"
#include "chan.h"
#include "error.h"
#include "io.h"
#include "io_int.h"
#include "lease.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

int rmpc_io_init(struct rmp_client *c)
{
	c->ring_size = c->opts.max_inflight;
	c->ring = calloc(c->ring_size, sizeof(*c->ring));
	return c->ring ? 0 : -ENOMEM;
}

void rmpc_io_fini(struct rmp_client *c)
{
	free(c->ring);
	c->ring = NULL;
}

void rmpc_io_reset(struct rmp_client *c)
{
	if (c->ring)
		memset(c->ring, 0, c->ring_size * sizeof(*c->ring));
	c->ring_head = c->ring_posted = c->ring_tail = 0;
	c->max_inflight = 0;
	c->sync_err = 0;
}

int rmp_read(struct rmp_lease *l, uint64_t off, void *dst, size_t len)
{
	struct rmpc_leg leg;

	if (!l)
		return -EINVAL;
	if (l->group)
		return rmpc_group_read(l, off, dst, len);
	if (l->c->rails)
		return rmpc_rails_rw(l, off, dst, len, false);
	leg = (struct rmpc_leg){ .l = l, .off = off, .len = len, .local = dst };
	return rmpc_rw(&leg, 1, false);
}

int rmp_write(struct rmp_lease *l, uint64_t off, const void *src, size_t len)
{
	/* The data is only read from src; the cast serves both directions. */
	char *local = (char *)(uintptr_t)src;
	struct rmpc_leg leg;

	if (!l)
		return -EINVAL;
	if (l->group)
		return rmpc_group_write(l, off, local, len);
	if (l->c->rails)
		return rmpc_rails_rw(l, off, local, len, true);
	leg = (struct rmpc_leg){ .l = l, .off = off, .len = len,
				 .local = local };
	return rmpc_rw(&leg, 1, true);
}

/* sync_atomic -- one RDMA atomic on l (through one of its client's
 * rails when it has several). */
static int sync_atomic(struct rmp_lease *l, uint64_t off,
		       enum ibv_wr_opcode opcode, uint64_t compare_add,
		       uint64_t swap, uint64_t *old)
{
	if (!l)
		return -EINVAL;
	if (l->group)
		return -EOPNOTSUPP; /* not atomic over replicas */
	if (l->c->rails)
		return rmpc_rails_atomic(l, off, opcode, compare_add, swap,
					 old);
	return rmpc_atomic_one(l, off, opcode, compare_add, swap, old);
}

int rmp_cas(struct rmp_lease *l, uint64_t off, uint64_t expected,
	    uint64_t desired, uint64_t *old)
{
	return sync_atomic(l, off, IBV_WR_ATOMIC_CMP_AND_SWP, expected,
			   desired, old);
}

int rmp_faa(struct rmp_lease *l, uint64_t off, uint64_t add, uint64_t *old)
{
	return sync_atomic(l, off, IBV_WR_ATOMIC_FETCH_AND_ADD, add, 0, old);
}

int rmp_flush(struct rmp_lease *l)
{
	if (!l)
		return -EINVAL;
	if (l->group)
		return rmpc_group_flush(l);
	return rmpc_flush_one(l);
}

/* ---- asynchronous ---------------------------------------------------- */

/* async_queue -- check and queue one operation in the ring. */
static int async_queue(struct rmp_lease *l, uint64_t off, struct rmp_buf *b,
		       size_t boff, size_t len, enum ibv_wr_opcode opcode,
		       uint64_t compare_add, uint64_t swap, uint64_t user_data)
{
	bool atomic = opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		      opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	uint32_t need = atomic ? RMP_ACC_ATOMIC :
			opcode == IBV_WR_RDMA_WRITE ? RMP_ACC_WRITE :
						      RMP_ACC_READ;
	struct rmp_client *c;
	struct rmpc_op *op;
	int err;

	if (!l || !b)
		return -EINVAL;
	if (l->group)
		return -EOPNOTSUPP; /* synchronous calls only, for now */
	c = l->c;
	rmpc_clear_error(c);
	if (b->c != c) {
		rmpc_set_error(c, "buffer belongs to another client");
		return -EINVAL;
	}
	err = rmpc_lease_args(l, off, len, need);
	if (!err && atomic)
		err = rmpc_atomic_args(l, off);
	if (err)
		return err;
	if (boff > b->len || len > b->len - boff) {
		rmpc_set_error(c, "buffer offset %zu + length %zu outside the "
			       "buffer (%zu bytes)", boff, len, b->len);
		return -EINVAL;
	}
	err = rmpc_lease_usable(l, true);
	if (err)
		return err;
	if (!b->mr) {
		rmpc_set_error(c, "buffer was registered on a closed "
			       "connection; register it again");
		return -ENOTCONN;
	}
	if (len > c->max_msg_sz) {
		rmpc_set_error(c, "%zu bytes exceed the device's message size "
			       "limit (%u)", len, c->max_msg_sz);
		return -EMSGSIZE;
	}
	if (c->ring_tail - c->ring_head >= c->max_inflight) {
		rmpc_set_error(c, "%u operations queued or in flight; reap "
			       "completions with rmp_poll", c->max_inflight);
		return -EAGAIN;
	}

	op = &c->ring[c->ring_tail % c->ring_size];
	memset(op, 0, sizeof(*op));
	op->sge.addr = (uintptr_t)(b->addr + boff);
	op->sge.length = (uint32_t)len;
	op->sge.lkey = b->mr->lkey;
	op->wr.opcode = opcode;
	op->wr.sg_list = &op->sge;
	op->wr.num_sge = len ? 1 : 0;
	/* Copied into the WQE at rmp_submit: the buffer is read then. */
	if (opcode == IBV_WR_RDMA_WRITE && len && len <= c->max_inline)
		op->wr.send_flags = IBV_SEND_INLINE;
	if (atomic) {
		op->wr.wr.atomic.remote_addr = l->addr + off;
		op->wr.wr.atomic.compare_add = compare_add;
		op->wr.wr.atomic.swap = swap;
		op->wr.wr.atomic.rkey = l->rkey;
	} else {
		op->wr.wr.rdma.remote_addr = l->addr + off;
		op->wr.wr.rdma.rkey = l->rkey;
	}
	op->user_data = user_data;
	op->state = RMPC_OP_QUEUED;
	c->ring_tail++;
	return 0;
}

int rmp_post_read(struct rmp_lease *l, uint64_t off, struct rmp_buf *b,
		  size_t boff, size_t len, uint64_t user_data)
{
	return async_queue(l, off, b, boff, len, IBV_WR_RDMA_READ, 0, 0,
			   user_data);
}

int rmp_post_write(struct rmp_lease *l, uint64_t off, struct rmp_buf *b,
		   size_t boff, size_t len, uint64_t user_data)
{
	return async_queue(l, off, b, boff, len, IBV_WR_RDMA_WRITE, 0, 0,
			   user_data);
}

int rmp_post_cas(struct rmp_lease *l, uint64_t off, uint64_t expected,
		 uint64_t desired, struct rmp_buf *b, size_t boff,
		 uint64_t user_data)
{
	return async_queue(l, off, b, boff, 8, IBV_WR_ATOMIC_CMP_AND_SWP,
			   expected, desired, user_data);
}

int rmp_post_faa(struct rmp_lease *l, uint64_t off, uint64_t add,
		 struct rmp_buf *b, size_t boff, uint64_t user_data)
{
	return async_queue(l, off, b, boff, 8, IBV_WR_ATOMIC_FETCH_AND_ADD,
			   add, 0, user_data);
}

/* fail_from -- ops from ring position i up to the tail complete with err. */
static void fail_from(struct rmp_client *c, uint64_t i, int err)
{
	struct rmpc_op *op;

	for (; i < c->ring_tail; i++) {
		op = &c->ring[i % c->ring_size];
		op->status = err;
		op->state = RMPC_OP_DONE;
	}
	c->ring_posted = c->ring_tail;
}

/*
 * submit_failed -- the chain of n ops from ring position start was
 * posted only up to bad (NULL: all of it), and the QP is in error now.
 * What was not posted never completes: it completes here with err. What
 * was posted flushes, unless the NIC ran it already: a signaled WR then
 * reported itself and the ones before it, but unsignaled ones after the
 * last signaled one leave no completion at all, and would hold up
 * rmp_poll for good: they complete here with -ENOTCONN, as a flush says
 * (a flush that still comes finds them done).
 */
static void submit_failed(struct rmp_client *c, uint64_t start, unsigned n,
			  const struct ibv_send_wr *bad, int err)
{
	uint64_t i, quiet = start; /* first op no signaled WR reports */
	struct rmpc_op *op;

	for (i = start; i < start + n; i++) {
		op = &c->ring[i % c->ring_size];
		if (&op->wr == bad)
			break;
		if (op->wr.send_flags & IBV_SEND_SIGNALED)
			quiet = i + 1;
	}
	for (; quiet < i; quiet++) {
		op = &c->ring[quiet % c->ring_size];
		if (op->state == RMPC_OP_POSTED) {
			op->status = -ENOTCONN;
			op->state = RMPC_OP_DONE;
		}
	}
	if (i < start + n)
		fail_from(c, i, err);
}

int rmp_submit(struct rmp_client *c)
{
	struct ibv_send_wr *first = NULL, *bad = NULL;
	struct rmpc_op *op, *prev = NULL;
	uint64_t start;
	unsigned n, k;
	uint32_t idx;
	int err;

	if (!c)
		return -EINVAL;
	rmpc_clear_error(c);
	start = c->ring_posted;
	n = (unsigned)(c->ring_tail - start);
	if (n == 0)
		return 0;
	err = rmpc_check_conn(c);
	if (!err)
		err = rmpc_sq_reserve(c, n);
	if (err) {
		/* Every queued operation still gets its completion. */
		fail_from(c, start, err);
		return err;
	}

	/* One chain, one doorbell; signal every Nth WR and the last, so
	 * that SQ slots free up while a long batch is still running. */
	for (k = 0; k < n; k++) {
		idx = (uint32_t)((start + k) % c->ring_size);
		op = &c->ring[idx];
		op->wr.wr_id = rmpc_sq_take(c, RMPC_SQ_ASYNC, idx,
					    op->wr.opcode);
		op->wr.send_flags &= IBV_SEND_INLINE;
		if ((k + 1) % c->signal_every == 0 || k + 1 == n)
			op->wr.send_flags |= IBV_SEND_SIGNALED;
		op->wr.next = NULL;
		op->state = RMPC_OP_POSTED;
		if (prev)
			prev->wr.next = &op->wr;
		else
			first = &op->wr;
		prev = op;
	}
	c->ring_posted = c->ring_tail;
	err = rmpc_post_send(c, first, &bad);
	if (err) {
		submit_failed(c, start, n, bad, err);
		return err;
	}
	/* Make rmp_client_fd() readable when the batch completes (only for
	 * a caller that waits on it: arming is a system call on some
	 * devices, Soft-RoCE among them). */
	if (c->fd_wanted)
		rmpc_arm_cq(c);
	return (int)n;
}

/* harvest -- hand out finished ops in submission order. */
static int harvest(struct rmp_client *c, struct rmp_completion *out, int max)
{
	struct rmpc_op *op;
	int n = 0;

	while (n < max && c->ring_head < c->ring_posted) {
		op = &c->ring[c->ring_head % c->ring_size];
		if (op->state != RMPC_OP_DONE)
			break;
		out[n].user_data = op->user_data;
		out[n].status = op->status;
		op->state = RMPC_OP_FREE;
		c->ring_head++;
		n++;
	}
	return n;
}

static bool head_done(struct rmp_client *c, const void *arg)
{
	(void)arg;
	return c->ring_head == c->ring_posted ||
	       c->ring[c->ring_head % c->ring_size].state == RMPC_OP_DONE;
}

int rmp_poll(struct rmp_client *c, struct rmp_completion *out, int max,
	     int timeout_ms)
{
	int n, err;

	if (!c || !out || max <= 0)
		return -EINVAL;
	rmpc_clear_error(c);
	if (!rmpc_connected(c)) {
		rmpc_set_error(c, "client is not connected");
		return -ENOTCONN;
	}
	/* The caller may come from a readable rmp_client_fd(): consume the
	 * event so that the fd can be armed again. Only an armed CQ can
	 * have raised one, so a caller that polls makes no read(). */
	if (c->cq_armed)
		rmpc_drain_cq_events(c);
	rmpc_poll_cq(c);
	n = harvest(c, out, max);
	if (n == 0 && c->ring_head < c->ring_posted && timeout_ms != 0) {
		err = rmpc_wait(c, RMPC_WAIT_OTHER, head_done, NULL,
				timeout_ms);
		if (err && err != -ETIMEDOUT)
			return err;
		n = harvest(c, out, max);
	}
	if (c->fd_wanted && c->ring_head < c->ring_posted && !c->cq_armed) {
		/* Operations remain: the fd must signal their completion.
		 * Poll once more after arming, nothing may slip through. */
		rmpc_arm_cq(c);
		rmpc_poll_cq(c);
		n += harvest(c, out + n, max - n);
	}
	return n;
}

/* SPDX-License-Identifier: MIT */
/*
 * io_sync.c -- the synchronous data path under rmp_read, rmp_write, the
 * atomics and a mirrored lease's writes: a lease's arguments checked,
 * WR chains posted and waited for, READs and WRITEs split into batches,
 * several leases (each on its own connection) moved in lockstep.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "buf.h"
#include "chan.h"
#include "error.h"
#include "io_int.h"
#include "lease.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

/* access_name -- "read", "write" or "atomic" for one right. */
static const char *access_name(uint32_t need)
{
	return need == RMP_ACC_READ ? "read" :
	       need == RMP_ACC_WRITE ? "write" : "atomic";
}

int rmpc_lease_args(struct rmp_lease *l, uint64_t off, uint64_t len,
		      uint32_t need)
{
	struct rmp_client *c = l->c;

	if (len > l->length || off > l->length - len) {
		rmpc_set_error(c, "offset %" PRIu64 " + length %" PRIu64
			       " outside the lease (%" PRIu64 " bytes)",
			       off, len, l->length);
		return -ERANGE;
	}
	if ((l->access & need) != need) {
		rmpc_set_error(c, "lease grants no %s access",
			       access_name(need));
		return -EACCES;
	}
	return 0;
}

int rmpc_atomic_args(struct rmp_lease *l, uint64_t off)
{
	if (off % 8 || (l->addr + off) % 8) {
		rmpc_set_error(l->c, "atomic offset %" PRIu64 " is not 8-byte "
			       "aligned", off);
		return -EINVAL;
	}
	if (l->c->connected && !l->c->atomics) {
		rmpc_set_error(l->c, "the RDMA device has no atomics");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* ---- synchronous ----------------------------------------------------- */

static bool sq_passed(struct rmp_client *c, const void *arg)
{
	return c->sq_done > *(const uint64_t *)arg;
}

/*
 * post_chain -- post wr[0..n-1] as one chain, only the last signaled; *last
 * is its wr_id. The connection fails if the post does.
 */
static int post_chain(struct rmp_client *c, struct ibv_send_wr *wr,
		      unsigned n, uint64_t *last)
{
	unsigned i;
	int err;

	err = rmpc_sq_reserve(c, n);
	if (err)
		return err;
	c->sync_err = 0;
	for (i = 0; i < n; i++) {
		wr[i].wr_id = rmpc_sq_take(c, RMPC_SQ_SYNC, 0, wr[i].opcode);
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		if (i + 1 == n)
			wr[i].send_flags |= IBV_SEND_SIGNALED;
	}
	*last = wr[n - 1].wr_id;
	return rmpc_post_send(c, wr, NULL);
}

/*
 * wait_chain -- wait until the chain ending in last completed: 0 or its
 * first error. On a timeout the connection fails: the NIC must stop
 * using our memory.
 */
static int wait_chain(struct rmp_client *c, uint64_t last,
		      enum ibv_wr_opcode opcode)
{
	int err = rmpc_wait(c, RMPC_WAIT_DATA, sq_passed, &last,
			    c->opts.op_timeout_ms);

	if (err) {
		if (err == -ETIMEDOUT)
			rmpc_set_error(c, "%s: no completion within %d ms",
				       rmpc_wr_name(opcode),
				       c->opts.op_timeout_ms);
		rmpc_fail(c);
		return err;
	}
	return c->sync_err;
}

int rmpc_sync_post(struct rmp_client *c, struct ibv_send_wr *wr, unsigned n)
{
	uint64_t last;
	int err = post_chain(c, wr, n, &last);

	return err ? err : wait_chain(c, last, wr[n - 1].opcode);
}

/* One lease's part of a synchronous READ or WRITE (rmpc_rw). */
struct leg {
	struct rmp_lease *l;
	struct rmp_client *c;
	struct ibv_mr *mr;  /* local memory registered with c, or NULL */
	bool in_wqe;        /* WRITE inline: no memory needed */
	size_t chunk;       /* bytes one WR carries */
	uint64_t last;      /* the posted chain's last wr_id */
	bool posted;
	int rw_err;         /* the first error: it takes no further part */
};

/* leg_start -- check leg's lease for [off, off+len) and pick its way to
 * the local memory: 0, or the error that keeps it out. */
static int leg_start(struct leg *g, uint64_t off, char *local, size_t len,
		     bool write)
{
	struct rmp_client *c = g->c;
	int err;

	rmpc_clear_error(c);
	err = rmpc_lease_args(g->l, off, len, write ? RMP_ACC_WRITE :
							RMP_ACC_READ);
	if (!err)
		err = rmpc_lease_usable(g->l, true);
	if (err)
		return err;
	/* Inline: the data is copied into the WQE at post, from anywhere:
	 * no registered memory, no bounce copy. */
	g->in_wqe = write && len <= c->max_inline;
	g->mr = g->in_wqe ? NULL : rmpc_buf_lookup(c, local, len);
	g->chunk = c->max_msg_sz;
	if (!g->mr && !g->in_wqe)
		g->chunk = RMP_MIN(g->chunk, c->bounce_len);
	return 0;
}

/* leg_post -- post leg's WRs for bytes [done, done+batch) of the call. */
static int leg_post(struct leg *g, uint64_t off, char *local, size_t done,
		     size_t batch, bool write)
{
	struct ibv_send_wr wr[RMPC_SYNC_BATCH];
	struct ibv_sge sge[RMPC_SYNC_BATCH];
	struct rmp_client *c = g->c;
	size_t pos, piece;
	uint32_t lkey;
	unsigned n;
	char *base;

	if (g->mr || g->in_wqe) {
		base = local + done;
		lkey = g->mr ? g->mr->lkey : 0;
	} else {
		base = c->bounce;
		lkey = c->bounce_mr->lkey;
		if (write)
			memcpy(c->bounce, local + done, batch);
	}
	memset(wr, 0, sizeof(wr));
	for (n = 0, pos = 0; pos < batch; n++, pos += piece) {
		piece = RMP_MIN(g->chunk, batch - pos);
		sge[n].addr = (uintptr_t)(base + pos);
		sge[n].length = (uint32_t)piece;
		sge[n].lkey = lkey;
		wr[n].opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr[n].send_flags = g->in_wqe ? IBV_SEND_INLINE : 0;
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = 1;
		wr[n].wr.rdma.remote_addr = g->l->addr + off + done + pos;
		wr[n].wr.rdma.rkey = g->l->rkey;
	}
	return post_chain(c, wr, n, &g->last);
}

/* batch_of -- the bytes of the next batch: what every live leg can move
 * at once (its chunks, its bounce buffer). */
static size_t batch_of(const struct leg *legs, unsigned n, size_t left)
{
	size_t batch = left;

	for (unsigned i = 0; i < n; i++) {
		if (legs[i].rw_err)
			continue;
		batch = RMP_MIN(batch, legs[i].chunk * RMPC_SYNC_BATCH);
		if (!legs[i].mr && !legs[i].in_wqe)
			batch = RMP_MIN(batch, legs[i].c->bounce_len);
	}
	return batch;
}

int rmpc_rw(struct rmp_lease *const *ls, int *errs, unsigned n, uint64_t off,
	    char *local, size_t len, bool write)
{
	struct leg legs[RMPC_LEGS_MAX];
	size_t done, batch;
	unsigned live = 0;
	int first = 0;

	if (!n || n > RMPC_LEGS_MAX || (!local && len))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		legs[i] = (struct leg){ .l = ls[i], .c = ls[i]->c };
		legs[i].rw_err = leg_start(&legs[i], off, local, len, write);
		live += !legs[i].rw_err;
	}
	/* Each batch is posted on every leg before any is waited for: the
	 * legs' NICs move it at once. */
	for (done = 0; live && done < len; done += batch) {
		batch = batch_of(legs, n, len - done);
		for (unsigned i = 0; i < n; i++) {
			if (legs[i].rw_err)
				continue;
			legs[i].rw_err = leg_post(&legs[i], off, local, done,
					       batch, write);
			legs[i].posted = !legs[i].rw_err;
		}
		live = 0;
		for (unsigned i = 0; i < n; i++) {
			struct leg *g = &legs[i];

			if (!g->posted)
				continue;
			g->posted = false;
			g->rw_err = wait_chain(g->c, g->last, write ?
					    IBV_WR_RDMA_WRITE :
					    IBV_WR_RDMA_READ);
			if (!g->rw_err && !g->mr && !write)
				memcpy(local + done, g->c->bounce, batch);
			live += !g->rw_err;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		const struct leg *g = &legs[i];

		errs[i] = g->rw_err;
		if (!first)
			first = g->rw_err;
	}
	return first;
}

int rmpc_flush_one(struct rmp_lease *l)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rmp_client *c;
	int err;

	c = l->c;
	rmpc_clear_error(c);
	err = rmpc_lease_usable(l, true);
	if (err)
		return err;

	/*
	 * A READ is executed by the responder after every earlier WRITE on
	 * this QP, and its response comes back only then. Without the read
	 * right a zero-byte READ does the same (its rkey is not checked).
	 */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = l->addr;
	wr.wr.rdma.rkey = l->rkey;
	if (l->access & RMP_ACC_READ) {
		sge.addr = (uintptr_t)(c->bounce + c->bounce_len);
		sge.length = 1;
		sge.lkey = c->bounce_mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	return rmpc_sync_post(c, &wr, 1);
}

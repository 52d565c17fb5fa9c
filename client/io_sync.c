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
#include "stripe.h"
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
	if (rmpc_connected(l->c) && !l->c->atomics) {
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

/*
 * bounce_settle -- c's bounce buffer free of a late-bound read's chain
 * left in flight (rmpc_read_first): its response may still land there,
 * over bytes copied in for a WRITE, so it is waited for first (on RC
 * it completed before anything posted after it: usually already). A
 * chain of an earlier connection is gone with its queue pair.
 */
static int bounce_settle(struct rmp_client *c)
{
	int err;

	if (!c->late_pending)
		return 0;
	c->late_pending = false;
	if (c->late_gen != c->gen || c->sq_done > c->late_last)
		return 0;
	/* its own error is not ours: a failed chain failed the
	 * connection, and our post says so */
	err = rmpc_wait(c, RMPC_WAIT_DATA, sq_passed, &c->late_last,
			c->opts.op_timeout_ms);
	if (err == -ETIMEDOUT)
		rmpc_set_error(c, "a late RDMA read: no completion within "
			       "%d ms", c->opts.op_timeout_ms);
	if (err)
		rmpc_fail(c);
	return err;
}

int rmpc_sync_post(struct rmp_client *c, struct ibv_send_wr *wr, unsigned n)
{
	uint64_t last;
	int err = post_chain(c, wr, n, &last);

	return err ? err : wait_chain(c, last, wr[n - 1].opcode);
}

/* How one leg of rmpc_rw gets on. */
struct leg_state {
	struct rmp_client *c;
	struct ibv_mr *mr;  /* local memory registered with c, or NULL */
	bool in_wqe;        /* WRITE inline: no memory needed */
	size_t chunk;       /* bytes one WR carries */
	uint64_t done;      /* bytes moved */
	uint64_t batch;     /* bytes of the chain in flight */
	uint64_t bpos;      /* where they are in the bounce buffer */
	uint64_t last;      /* the posted chain's last wr_id */
	bool posted;
};

/* local_at -- where byte off + r of leg g is locally. */
static char *local_at(const struct rmpc_leg *g, uint64_t r)
{
	return g->local + rmpc_stripe_at(g->off, g->unit, g->gap, r);
}

/* leg_start -- check leg g's lease and pick its way to the local
 * memory: 0, or the error that keeps it out. */
static int leg_start(const struct rmpc_leg *g, struct leg_state *st,
		     bool write)
{
	struct rmp_client *c = st->c;
	int err;

	rmpc_clear_error(c);
	err = rmpc_lease_args(g->l, g->off, g->len, write ? RMP_ACC_WRITE :
								RMP_ACC_READ);
	if (!err)
		err = rmpc_lease_usable(g->l, true);
	if (err)
		return err;
	/* Inline: the data is copied into the WQE at post, from anywhere:
	 * no registered memory, no bounce copy. */
	st->in_wqe = write && g->len <= c->max_inline;
	st->mr = st->in_wqe || !g->len ? NULL :
		 rmpc_buf_lookup(c, g->local,
				 (size_t)rmpc_stripe_at(g->off, g->unit,
							g->gap, g->len - 1) + 1);
	st->chunk = c->max_msg_sz;
	if (st->mr || st->in_wqe || !g->len)
		return 0;
	st->chunk = RMP_MIN(st->chunk, c->bounce_len);
	return bounce_settle(c);
}

/* bounce_copy -- n bytes of leg g from its byte off + r on between the
 * bounce buffer (contiguous) and local (cut at units when g has gaps). */
static void bounce_copy(const struct rmpc_leg *g, uint64_t r, char *bounce,
			uint64_t n, bool to_local)
{
	for (uint64_t pos = 0, piece; pos < n; pos += piece) {
		piece = rmpc_stripe_contig(g->off, g->unit, g->gap, r + pos,
					   n - pos);
		if (to_local)
			memcpy(local_at(g, r + pos), bounce + pos, piece);
		else
			memcpy(bounce + pos, local_at(g, r + pos), piece);
	}
}

/* bounced -- leg st moves its bytes through its client's bounce buffer. */
static bool bounced(const struct leg_state *st)
{
	return !st->mr && !st->in_wqe;
}

/* A chain being built: the WRs of one or more legs of one client. */
struct chain {
	struct ibv_send_wr wr[RMPC_SYNC_BATCH];
	struct ibv_sge sge[RMPC_SYNC_BATCH];
	unsigned n;
};

/* leg_fill -- add leg g's next batch to ch: as many WRs as ch has room
 * for from byte off + st->done on. Zero copy, each WR's local bytes are
 * contiguous (cut at g's units); through the bounce buffer they are
 * there, from *used on (the legs before it in the chain hold the bytes
 * before), as much as is left of it. */
static void leg_fill(const struct rmpc_leg *g, struct leg_state *st,
		     bool write, struct chain *ch, uint64_t *used)
{
	struct rmp_client *c = st->c;
	bool direct = !bounced(st);
	uint64_t left = g->len - st->done, pos, piece;
	uint32_t lkey = st->mr ? st->mr->lkey :
			direct ? 0 : c->bounce_mr->lkey;
	char *bounce = c->bounce + *used;

	if (!direct) {
		left = RMP_MIN(left, c->bounce_len - *used);
		st->bpos = *used;
		if (write)
			bounce_copy(g, st->done, bounce, left, false);
	}
	for (pos = 0; pos < left && ch->n < RMPC_SYNC_BATCH; pos += piece) {
		struct ibv_send_wr *wr = &ch->wr[ch->n];
		struct ibv_sge *sge = &ch->sge[ch->n++];

		piece = RMP_MIN(st->chunk, left - pos);
		if (direct)
			piece = rmpc_stripe_contig(g->off, g->unit, g->gap,
						   st->done + pos, piece);
		sge->addr = (uintptr_t)(direct ? local_at(g, st->done + pos) :
					bounce + pos);
		sge->length = (uint32_t)piece;
		sge->lkey = lkey;
		memset(wr, 0, sizeof(*wr));
		wr->opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr->send_flags = st->in_wqe ? IBV_SEND_INLINE : 0;
		wr->sg_list = sge;
		wr->num_sge = 1;
		wr->wr.rdma.remote_addr = g->l->addr + g->off + st->done + pos;
		wr->wr.rdma.rkey = g->l->rkey;
	}
	st->batch = pos;
	if (!direct)
		*used += pos;
}

/* ready -- leg i has bytes left and no error. */
static bool ready(const struct rmpc_leg *legs, const struct leg_state *st,
		  unsigned i)
{
	return !legs[i].err && st[i].done < legs[i].len;
}

/* client_busy -- leg i needs its client's bounce buffer, and a leg
 * before i that posted on that client this round holds it (i did not fit
 * in that chain: it waits for the next round). */
static bool client_busy(const struct leg_state *st, unsigned i)
{
	if (!bounced(&st[i]))
		return false;
	for (unsigned j = 0; j < i; j++)
		if (st[j].posted && st[j].c == st[i].c && bounced(&st[j]))
			return true;
	return false;
}

/*
 * post_round -- every leg with bytes left whose client is free this
 * round posts its next batch; how many did. The legs of one lease go
 * in one chain, up to RMPC_SYNC_BATCH WRs: a rail's pieces, or a
 * member's chunk and tag of an erasure-coded row, are in flight at once
 * for one doorbell (the legs of a chain share its result: other leases,
 * even on the same client, get chains of their own). Legs through the
 * bounce buffer share it, each its own part; one that finds it full
 * waits for the next round.
 */
static unsigned post_round(struct rmpc_leg *legs, struct leg_state *st,
			   unsigned n, bool write)
{
	bool in[RMPC_LEGS_MAX];
	unsigned posted = 0;
	struct chain ch;
	uint64_t last;
	int err;

	for (unsigned i = 0; i < n; i++) {
		uint64_t used = 0;

		if (!ready(legs, st, i) || st[i].posted || client_busy(st, i))
			continue;
		memset(in, 0, n * sizeof(in[0]));
		ch.n = 0;
		leg_fill(&legs[i], &st[i], write, &ch, &used);
		in[i] = true;
		for (unsigned j = i + 1; j < n && ch.n < RMPC_SYNC_BATCH; j++) {
			if (legs[j].l != legs[i].l || st[j].c != st[i].c ||
			    st[j].posted ||
			    !ready(legs, st, j) ||
			    (bounced(&st[j]) && (used == st[j].c->bounce_len ||
						 client_busy(st, j))))
				continue;
			leg_fill(&legs[j], &st[j], write, &ch, &used);
			in[j] = true;
		}
		err = post_chain(st[i].c, ch.wr, ch.n, &last);
		for (unsigned j = i; j < n; j++) {
			if (!in[j])
				continue;
			legs[j].err = err;
			st[j].posted = !err;
			st[j].last = last;
			posted += !err;
		}
	}
	return posted;
}

/* wait_round -- wait for each chain this round posted, once: the legs
 * of one chain (same client, same last WR) share its result, so a
 * device that stopped answering costs one op_timeout_ms, not one per
 * leg. A READ through the bounce buffer is copied out. */
static void wait_round(struct rmpc_leg *legs, struct leg_state *st,
		       unsigned n, bool write)
{
	bool waited[RMPC_LEGS_MAX] = { false };

	for (unsigned i = 0; i < n; i++) {
		struct leg_state *g = &st[i];
		unsigned j;

		if (!g->posted)
			continue;
		g->posted = false;
		for (j = 0; j < i; j++)
			if (waited[j] && st[j].c == g->c &&
			    st[j].last == g->last)
				break;
		legs[i].err = j < i ? legs[j].err :
			      wait_chain(g->c, g->last, write ?
					 IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ);
		waited[i] = true;
		if (!legs[i].err && !g->mr && !write)
			bounce_copy(&legs[i], g->done, g->c->bounce + g->bpos,
				    g->batch, true);
		g->done += g->batch;
	}
}

int rmpc_rw(struct rmpc_leg *legs, unsigned n, bool write)
{
	struct leg_state st[RMPC_LEGS_MAX];
	int first = 0;

	if (!n || n > RMPC_LEGS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (legs[i].local || !legs[i].len)
			continue;
		for (unsigned j = 0; j < n; j++)
			legs[j].err = -EINVAL;
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		st[i] = (struct leg_state){ .c = legs[i].l->c };
		legs[i].err = leg_start(&legs[i], &st[i], write);
	}
	/* Each round is posted on every leg before any is waited for: the
	 * legs' NICs move it at once. */
	while (post_round(legs, st, n, write))
		wait_round(legs, st, n, write);
	for (unsigned i = 0; i < n; i++)
		first = first ? first : legs[i].err;
	return first;
}

/* One lease's chain of a late-bound read (rmpc_read_first). */
struct first_chain {
	struct rmp_client *c;
	unsigned from, to;  /* its legs */
	unsigned wrs;       /* WRs it takes */
	uint64_t last;      /* its last wr_id */
	bool posted, done;
	int err;
};

/* first_chains -- legs cut into one chain per lease (its legs are
 * consecutive), each on a client of its own, each checked and fitting
 * one chain and its client's bounce buffer: 0, -E2BIG when they do not,
 * or a lease's error (nothing posted). */
static int first_chains(struct rmpc_leg *legs, unsigned n,
			struct first_chain *ch, unsigned *nch)
{
	unsigned m = 0;

	for (unsigned i = 0; i < n; i++) {
		struct rmp_client *c = legs[i].l->c;
		int err;

		if (!m || legs[i].l != legs[ch[m - 1].from].l) {
			if (m == RMPC_WAIT_SOME_MAX)
				return -E2BIG;
			for (unsigned j = 0; j < m; j++)
				if (ch[j].c == c)
					return -E2BIG;
			ch[m++] = (struct first_chain){ .c = c, .from = i };
			rmpc_clear_error(c);
		}
		ch[m - 1].to = i + 1;
		/* a lost connection is the usual path's to make again (or
		 * to leave for another rail), not every late-bound read's */
		err = rmpc_check_conn(c);
		if (!err)
			err = rmpc_lease_args(legs[i].l, legs[i].off,
					      legs[i].len, RMP_ACC_READ);
		if (!err)
			err = rmpc_lease_usable(legs[i].l, true);
		if (err)
			return err;
	}
	for (unsigned j = 0; j < m; j++) {
		uint64_t bytes = 0;

		for (unsigned i = ch[j].from; i < ch[j].to; i++) {
			bytes += legs[i].len;
			ch[j].wrs += (unsigned)((legs[i].len +
						 ch[j].c->max_msg_sz - 1) /
						ch[j].c->max_msg_sz);
		}
		if (!ch[j].wrs || ch[j].wrs > RMPC_SYNC_BATCH ||
		    bytes > ch[j].c->bounce_len)
			return -E2BIG;
	}
	*nch = m;
	return 0;
}

/* late_busy -- c's last late chain still in flight (polled once). */
static bool late_busy(struct rmp_client *c)
{
	if (!c->late_pending || c->late_gen != c->gen)
		return false;
	rmpc_poll_cq(c);
	return c->sq_done <= c->late_last;
}

/* first_post -- chain ch of legs posted, its bytes to land in its
 * client's bounce buffer (bpos[i]: where leg i's start). */
static int first_post(const struct rmpc_leg *legs, struct first_chain *ch,
		      uint64_t *bpos)
{
	struct rmp_client *c = ch->c;
	struct ibv_send_wr wr[RMPC_SYNC_BATCH];
	struct ibv_sge sge[RMPC_SYNC_BATCH];
	uint64_t used = 0;
	unsigned n = 0;
	int err = bounce_settle(c);

	if (err)
		return err;
	for (unsigned i = ch->from; i < ch->to; i++) {
		const struct rmpc_leg *g = &legs[i];

		bpos[i] = used;
		for (uint64_t pos = 0, piece; pos < g->len; pos += piece) {
			piece = RMP_MIN(c->max_msg_sz, g->len - pos);
			sge[n] = (struct ibv_sge){
				.addr = (uintptr_t)(c->bounce + used),
				.length = (uint32_t)piece,
				.lkey = c->bounce_mr->lkey };
			memset(&wr[n], 0, sizeof(wr[n]));
			wr[n].opcode = IBV_WR_RDMA_READ;
			wr[n].sg_list = &sge[n];
			wr[n].num_sge = 1;
			wr[n].wr.rdma.remote_addr = g->l->addr + g->off + pos;
			wr[n++].wr.rdma.rkey = g->l->rkey;
			used += piece;
		}
	}
	return post_chain(c, wr, n, &ch->last);
}

/* first_wait -- wait for the posted chains until need of them moved
 * their bytes (or that can no longer be): how many did. A chain that
 * did not complete within its op timeout while still needed fails its
 * connection, as wait_chain does. */
static unsigned first_wait(struct first_chain *ch, unsigned nch,
			   unsigned need)
{
	unsigned ok = 0;
	int timeout = 0;
	uint64_t deadline;

	for (unsigned j = 0; j < nch; j++) {
		ok += ch[j].done && !ch[j].err;
		timeout = RMP_MAX(timeout, ch[j].c->opts.op_timeout_ms);
	}
	deadline = rmp_now_ms() + (uint64_t)timeout;
	for (;;) {
		uint64_t now = rmp_now_ms();
		struct rmp_client *cs[RMPC_WAIT_SOME_MAX];
		const void *args[RMPC_WAIT_SOME_MAX];
		bool out[RMPC_WAIT_SOME_MAX] = { false };
		unsigned at[RMPC_WAIT_SOME_MAX], np = 0;
		int err;

		for (unsigned j = 0; j < nch; j++) {
			if (!ch[j].posted || ch[j].done)
				continue;
			at[np] = j;
			cs[np] = ch[j].c;
			args[np++] = &ch[j].last;
		}
		if (ok >= need || ok + np < need)
			return ok;
		err = rmpc_wait_some(cs, np, sq_passed, args, need - ok, out,
				     now < deadline ? (int)(deadline - now) : 0);
		for (unsigned i = 0; i < np; i++) {
			struct first_chain *f = &ch[at[i]];

			if (!out[i] && !err)
				continue;
			f->done = true;
			f->err = !out[i] ? err :
				 f->c->cq && f->c->cm_ch ? f->c->sync_err :
							   -ENOTCONN;
			if (!out[i]) {
				rmpc_set_error(f->c, "RDMA read: no completion "
					       "within %d ms", timeout);
				rmpc_fail(f->c);
			}
			ok += !f->err;
		}
	}
}

int rmpc_read_first(struct rmpc_leg *legs, unsigned n, unsigned need)
{
	struct first_chain ch[RMPC_WAIT_SOME_MAX];
	uint64_t bpos[RMPC_LEGS_MAX];
	unsigned nch = 0, ok, busy = 0;
	int err, first = 0;

	if (!n || n > RMPC_LEGS_MAX)
		return -EINVAL;
	err = first_chains(legs, n, ch, &nch);
	if (err)
		return err;
	/* a client whose last late chain is still in flight is late
	 * again, without waiting for it: a member that straggles keeps
	 * out of the reads until it caught up */
	for (unsigned j = 0; j < nch; j++)
		busy += late_busy(ch[j].c);
	if (nch - busy < need)
		return -E2BIG; /* nothing posted */
	for (unsigned j = 0; j < nch; j++) {
		ch[j].err = late_busy(ch[j].c) ? -EINPROGRESS :
			    first_post(legs, &ch[j], bpos);
		ch[j].posted = !ch[j].err;
		ch[j].done = !ch[j].posted;
	}
	ok = first_wait(ch, nch, need);
	for (unsigned j = 0; j < nch; j++) {
		struct first_chain *f = &ch[j];

		if (f->posted && !f->done) {
			/* late: its bytes never reach local */
			f->c->late_pending = true;
			f->c->late_last = f->last;
			f->c->late_gen = f->c->gen;
			f->err = -EINPROGRESS;
		}
		for (unsigned i = f->from; i < f->to; i++) {
			legs[i].err = f->err;
			if (!f->err)
				bounce_copy(&legs[i], 0, f->c->bounce + bpos[i],
					    legs[i].len, true);
		}
		if (f->err != -EINPROGRESS)
			first = first ? first : f->err;
	}
	return ok >= need ? 0 : first ? first : -EIO;
}

int rmpc_atomic_one(struct rmp_lease *l, uint64_t off,
		    enum ibv_wr_opcode opcode, uint64_t compare_add,
		    uint64_t swap, uint64_t *old)
{
	struct rmp_client *c = l->c;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int err;

	rmpc_clear_error(c);
	err = rmpc_lease_args(l, off, 8, RMP_ACC_ATOMIC);
	if (!err)
		err = rmpc_atomic_args(l, off);
	if (!err)
		err = rmpc_lease_usable(l, true);
	if (err)
		return err;

	sge.addr = (uintptr_t)(c->bounce + c->bounce_len);
	sge.length = 8;
	sge.lkey = c->bounce_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = opcode;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = l->addr + off;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	wr.wr.atomic.rkey = l->rkey;
	err = rmpc_sync_post(c, &wr, 1);
	if (!err && old)
		memcpy(old, c->bounce + c->bounce_len, sizeof(*old));
	return err;
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

/* SPDX-License-Identifier: MIT */
/*
 * io_int.h -- what io.c (the public data calls), io_group.c (a
 * mirrored or striped lease's) and io_rails.c (a client's with several
 * rails) take from io_sync.c (the synchronous machinery); io.c calls
 * io_group.c and io_rails.c, all three call io_sync.c, never the other
 * way.
 */
#ifndef RMPC_IO_INT_H
#define RMPC_IO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rmp_client;
struct rmp_lease;
struct ibv_send_wr;

#include <infiniband/verbs.h> /* enum ibv_wr_opcode */

#define RMPC_SYNC_BATCH 16u  /* WRs one synchronous call posts at a time */

/* Most legs one rmpc_rw moves at once (a striped, mirrored lease's
 * members: RMPC_STRIPES_MAX * RMPC_REPLICAS_MAX). */
#define RMPC_LEGS_MAX 48u

/*
 * rmpc_lease_args -- [off, off+len) inside l (-ERANGE, also when the sum
 * overflows) and the right need (RMP_ACC_*) granted (-EACCES).
 * rmpc_atomic_args -- an 8-byte aligned target (-EINVAL), a device with
 * atomics (-EOPNOTSUPP).
 */
int rmpc_lease_args(struct rmp_lease *l, uint64_t off, uint64_t len,
		    uint32_t need);
int rmpc_atomic_args(struct rmp_lease *l, uint64_t off);

/*
 * rmpc_sync_post -- post wr[0..n-1] on c as one chain, only the last
 * signaled, and wait until it completed: 0 or the chain's first error.
 */
int rmpc_sync_post(struct rmp_client *c, struct ibv_send_wr *wr, unsigned n);

/*
 * One lease's part of a synchronous READ or WRITE (rmpc_rw): len bytes
 * at offset off of l, from or to local. Locally they may lie apart: with
 * gap > 0, gap bytes (another stripe's) follow each unit of l's bytes
 * (l's offsets cut at multiples of unit; see stripe.h); gap 0: local is
 * contiguous (unit unused).
 */
struct rmpc_leg {
	struct rmp_lease *l;
	uint64_t off, len;
	char *local;        /* where byte off goes or comes from */
	uint64_t unit, gap;
	bool after_prev;    /* on the rail the leg before it (of the same
			     * lease) took, whole: on one queue pair, it
			     * moves after that leg (io_ec.c's seqlock) */
	int err;            /* out: the leg's result */
};

/*
 * rmpc_rw -- READ (write false) or WRITE each leg of legs[0..n) (n <=
 * RMPC_LEGS_MAX): zero copy when a leg's local bytes lie in a buffer
 * registered with its lease's client, else through that client's bounce
 * buffer; split into rounds, in each of which every leg with bytes left
 * posts its next batch before any is waited for, so that legs on
 * different clients move at once (legs that share a client's bounce
 * buffer take turns: one a round; zero-copy legs of a client go
 * together). legs[i].err gets leg i's
 * result (a leg that fails drops out; the rest go on). Returns the first
 * error of them, or 0; -EINVAL for a leg with bytes and no local memory
 * (nothing posted then). Two READ legs of the same local bytes fill them
 * each in turn: callers read one.
 */
int rmpc_rw(struct rmpc_leg *legs, unsigned n, bool write);

/*
 * rmpc_read_first -- a late-bound READ of legs[0 .. n): the legs of one
 * lease (consecutive) go in one chain, each lease on a client of its
 * own, every byte through its client's bounce buffer; it returns once
 * the chains of need leases moved their bytes, copied to their legs'
 * local (err 0). A chain still in flight then is left to complete (its
 * legs' err -EINPROGRESS): its bytes never reach local, and its client's
 * bounce buffer is taken again only after it completed. A chain that
 * failed (its legs' err) fails its connection. 0 once need did; -E2BIG
 * when the legs do not fit (a chain of more than RMPC_SYNC_BATCH WRs or
 * its client's bounce buffer, two leases on one client, more than
 * RMPC_WAIT_SOME_MAX leases, fewer than need clients free of a late
 * chain) or a lease's error, nothing posted then; else the first
 * chain's error (-EIO if none).
 */
int rmpc_read_first(struct rmpc_leg *legs, unsigned n, unsigned need);

/*
 * rmpc_flush_one -- rmp_flush of a lease of one server: a READ behind
 * every earlier WRITE of its queue pair, waited for.
 */
int rmpc_flush_one(struct rmp_lease *l);

/*
 * io_group.c: the data calls on a mirrored or striped lease (l->group
 * set). A call is cut into one part per stripe it touches (-ERANGE
 * outside the lease), the parts moved at once (rmpc_rw); per stripe:
 * rmpc_group_read -- from the first replica still live, then the next
 * when one fails (that one leaves LIVE: group.h): an error only when
 * none is left, or for the arguments (-ERANGE, -EACCES, -EINVAL).
 * rmpc_group_write -- to every live replica at once; done when all of
 * them have it, or the record says the others are stale. A replica that
 * fails leaves LIVE; an error only when none is left or for the
 * arguments. Both wait for a stripe's suspect replica (rmpc_group_wait).
 * rmpc_group_flush -- rmp_flush on each live member; an error when a
 * stripe has none left.
 */
int rmpc_group_read(struct rmp_lease *l, uint64_t off, char *dst,
		    size_t len);
int rmpc_group_write(struct rmp_lease *l, uint64_t off, char *src,
		     size_t len);
int rmpc_group_flush(struct rmp_lease *l);

/* rmpc_atomic_one -- rmp_cas / rmp_faa (opcode) on l's own connection:
 * one RDMA atomic, waited for; the old value into *old (may be NULL). */
int rmpc_atomic_one(struct rmp_lease *l, uint64_t off,
		    enum ibv_wr_opcode opcode, uint64_t compare_add,
		    uint64_t swap, uint64_t *old);

/*
 * io_rails.c: the data calls of a client with several rails (rails.h),
 * and of a group's members over their clients' rails.
 * rmpc_rails_rw -- rmp_read / rmp_write (write): of at least twice
 * opts.rail_stripe bytes cut in pieces over the rails that are up, else
 * on one rail (the buffer's NUMA node, else in turn); the pieces of a
 * rail that fails done again on the others. An error only when every
 * rail is down, or the lease's or the arguments'.
 * rmpc_rails_atomic -- one atomic on one rail (chosen alike); moved to
 * another only when its rail failed before it was posted.
 */
int rmpc_rails_rw(struct rmp_lease *l, uint64_t off, char *local,
		  size_t len, bool write);
/*
 * rmpc_rails_legs -- rmpc_rw of legs[0..n) (n <= RMPC_LEGS_MAX; a
 * mirrored or striped lease's members), each leg whose lease's client
 * has rails dealt over them as rmpc_rails_rw deals a call (its units
 * and gaps kept), all legs' pieces moving at once in each round; the
 * other legs go whole. plans: n of them, the call's scratch (a group
 * keeps its own: no allocation per call). legs[i].err: 0, or the leg's
 * error: every rail of its client down (the last rail failure), or the
 * lease's or the arguments'. Returns the first of them.
 */
/*
 * One try of a data call on an erasure-coded lease (io_ec.c), for
 * io_group.c's retries: rmpc_ec_read_once (fenced as io_group.c's
 * read_once) and rmpc_ec_write_once (*made: the bits of the members
 * that lack a row it wrote to k members, not what it cut short).
 */
int rmpc_ec_read_once(struct rmp_lease *l, uint64_t off, char *dst,
		      size_t len, bool fenced);
int rmpc_ec_write_once(struct rmp_lease *l, uint64_t off, const char *src,
		       size_t len, uint32_t *made);

/*
 * rmpc_ec_rebuild_rows -- rows [r0, r0 + n) of an erasure-coded lease (ec:
 * its layout, code and tags), for a repair: the members that dst names
 * (dst[i]: the handle to write member i by; NULL: not rebuilt) get each
 * row's chunks decoded from k members of src (src[i]: the handle to read
 * member i by; NULL: none) that hold one write of it, and that write's
 * tag. A row whose members at hand do not all hold one write (a writer
 * died within it) while every data member is in src is mended (a scrub):
 * its parity encoded anew from its data, written to every parity member
 * at hand, and a new tag on all (++*mended). A step's tags, sources and
 * new chunks move in one leg per member each. 0; -EBADMSG (*bad_row: a
 * row no k sources share a write of, a data member away), -EAGAIN (the
 * same, with a write of it marked pending: a holder's, cut short by the
 * fence, which it makes again once the repair is undone) or -EIO (fewer
 * than k sources); a member's error; -ENOMEM.
 */
struct rmpc_ec;
int rmpc_ec_rebuild_rows(struct rmpc_ec *ec, struct rmp_lease *const *src,
			 struct rmp_lease *const *dst, uint64_t r0, uint64_t n,
			 uint64_t *bad_row, uint64_t *mended);

struct rmpc_rail_plan;
int rmpc_rails_legs(struct rmpc_leg *legs, unsigned n, bool write,
		    struct rmpc_rail_plan *plans);
/*
 * rmpc_rails_pick -- the handle of l a call of len bytes on local goes
 * whole by: l itself when its client has no rails, else l's handle on
 * the rail a small call takes (attached there when first used); NULL
 * when the call is one the rails would cut over several (len of twice
 * opts.rail_stripe or more), or no rail can take it now: the caller
 * goes by rmpc_rails_legs then.
 */
struct rmp_lease *rmpc_rails_pick(struct rmp_lease *l, const void *local,
				  uint64_t len);
int rmpc_rails_atomic(struct rmp_lease *l, uint64_t off,
		      enum ibv_wr_opcode opcode, uint64_t compare_add,
		      uint64_t swap, uint64_t *old);

#endif /* RMPC_IO_INT_H */

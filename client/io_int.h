/* SPDX-License-Identifier: MIT */
/*
 * io_int.h -- what io.c (the public data calls) and io_group.c (a
 * mirrored lease's) take from io_sync.c (the synchronous machinery);
 * io.c calls io_group.c, both call io_sync.c, never the other way.
 */
#ifndef RMPC_IO_INT_H
#define RMPC_IO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rmp_client;
struct rmp_lease;
struct ibv_send_wr;

#define RMPC_SYNC_BATCH 16u  /* WRs one synchronous call posts at a time */

/* Most leases one rmpc_rw moves at once (a mirrored lease's replicas). */
#define RMPC_LEGS_MAX 4u

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
 * rmpc_rw -- READ (write false) or WRITE len bytes at offset off of each
 * lease ls[0..n) (n <= RMPC_LEGS_MAX, each on its own client), from or
 * to local: zero copy when local lies in a buffer registered with that
 * client, else through its bounce buffer; split into batches, each
 * posted on every lease before any is waited for. errs[i] gets lease
 * i's result (a lease that fails drops out; the rest go on). Returns
 * the first error of errs, or 0. A READ of n > 1 leases fills local
 * with each in turn: callers read one.
 */
int rmpc_rw(struct rmp_lease *const *ls, int *errs, unsigned n, uint64_t off,
	    char *local, size_t len, bool write);

/*
 * rmpc_flush_one -- rmp_flush of a lease of one server: a READ behind
 * every earlier WRITE of its queue pair, waited for.
 */
int rmpc_flush_one(struct rmp_lease *l);

/*
 * io_group.c: the data calls on a mirrored lease (l->group set).
 * rmpc_group_read -- from the first replica still live, then the next
 * when one fails (that one is lost from then on): an error only when
 * none is left, or for the arguments (-ERANGE, -EACCES, -EINVAL).
 * rmpc_group_write -- to every live replica at once (rmpc_rw); done when
 * all of them have it. A replica that fails is lost; an error only when
 * none is left or for the arguments.
 * rmpc_group_flush -- rmp_flush on each live replica.
 */
int rmpc_group_read(struct rmp_lease *l, uint64_t off, char *dst,
		    size_t len);
int rmpc_group_write(struct rmp_lease *l, uint64_t off, char *src,
		     size_t len);
int rmpc_group_flush(struct rmp_lease *l);

#endif /* RMPC_IO_INT_H */

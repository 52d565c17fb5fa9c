/* SPDX-License-Identifier: MIT */
/* io.h -- the data path's ring of asynchronous operations, made and dropped with the client and its connection. */
#ifndef RMPC_IO_H
#define RMPC_IO_H

#include "io_int.h" /* RMPC_SYNC_BATCH: the SQ room a sync call takes */

struct rmp_client;

/* rmpc_io_init / rmpc_io_fini -- the async ring (rmp_client_new/free). */
int rmpc_io_init(struct rmp_client *c);
void rmpc_io_fini(struct rmp_client *c);
/* rmpc_io_reset -- drop every queued, posted and unreaped op (close). */
void rmpc_io_reset(struct rmp_client *c);

#endif /* RMPC_IO_H */

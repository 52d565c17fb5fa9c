/* SPDX-License-Identifier: MIT */
/*
 * park.h -- rdma_cm ids whose port is down, kept until it is up.
 *
 * Destroying a connected (or connecting) cm id sends a CM message (DREQ,
 * REJ) out of its port. While that port is down the message cannot be
 * delivered, and on Soft-RoCE (Linux 6.1) sending one leaves the device
 * unable to make any connection until it is re-created: a link flap
 * would cost the rail for good. So an id on a port that is down is not
 * destroyed but parked (its QP already gone, moved to an event channel
 * nobody reads), and destroyed by the first sweep that finds its port
 * active again; the server then sees the disconnect as it would have.
 * On a real NIC parking only delays the DREQ, which could not have
 * arrived anyway. An id whose device is being removed is destroyed at
 * the next sweep (it would hold the device). A process that exits while
 * the port is down still sends the DREQs: the kernel destroys its ids.
 * Process-wide, thread-safe.
 */
#ifndef RMPC_PARK_H
#define RMPC_PARK_H

#include <rdma/rdma_cma.h>
#include <stdbool.h>

/* rmpc_port_active -- is port_num of ctx ACTIVE? True when it cannot be
 * told (a query that fails, no device yet). */
bool rmpc_port_active(struct ibv_context *ctx, uint8_t port_num);

/* rmpc_cm_release -- destroy id (its QP destroyed first), or park it if
 * its port is down; NULL is ignored. Sweeps the parked ids too. */
void rmpc_cm_release(struct rdma_cm_id *id);

/* rmpc_cm_park_sweep -- destroy the parked ids whose port is active. */
void rmpc_cm_park_sweep(void);

#endif /* RMPC_PARK_H */

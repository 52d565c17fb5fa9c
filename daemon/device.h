/* SPDX-License-Identifier: MIT */
/* device.h -- an RDMA device served: PD, CQ, SRQ, work ids. */
#ifndef RMP_DEVICE_H
#define RMP_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/*
 * Every work request the daemon posts completes on its device's CQ; its
 * wr_id is a pointer to the object that asked for it, tagged in the low
 * bits (the objects are malloc'ed, so at least 8-aligned):
 *   RMP_WR_REPLY  struct rmp_reply_slot *   a SEND of a reply (conn.c)
 *   RMP_WR_RECV   struct rmp_rx_buf *       a receive buffer
 *   RMP_WR_BIND   struct rmp_key *          IBV_WR_BIND_MW of a key (keys.c)
 *   RMP_WR_INV    struct rmp_key *          IBV_WR_LOCAL_INV of a key
 *   RMP_WR_PROBE  struct rmp_conn *         zero-length WRITE: is it alive?
 */
enum rmp_wr_tag {
	RMP_WR_REPLY = 0,
	RMP_WR_RECV = 1,
	RMP_WR_BIND = 2,
	RMP_WR_INV = 3,
	RMP_WR_PROBE = 4,
};
#define RMP_WR_TAG_MASK UINT64_C(7)

static inline uint64_t rmp_wr_id(const void *p, enum rmp_wr_tag tag)
{
	return (uint64_t)(uintptr_t)p | (uint64_t)tag;
}

static inline void *rmp_wr_ptr(uint64_t wr_id)
{
	return (void *)(uintptr_t)(wr_id & ~RMP_WR_TAG_MASK);
}

static inline enum rmp_wr_tag rmp_wr_tag(uint64_t wr_id)
{
	return (enum rmp_wr_tag)(wr_id & RMP_WR_TAG_MASK);
}

/*
 * A receive buffer of RMP_MSG_MAX bytes. `conn` is NULL for the shared
 * receive queue's buffers (the connection is found by the completion's
 * qp_num) and the owning connection for a connection's own receive queue.
 */
struct rmp_conn;
struct rmp_device;
struct rmp_rx_buf {
	struct rmp_conn *conn;
	struct rmp_device *dev; /* the device it is posted on */
	uint8_t *buf;
	uint32_t lkey;
};

/* The vendor id Soft-RoCE (rdma_rxe) reports. */
#define RMP_RXE_VENDOR_ID 0xffffffu

struct rmp_device {
	struct ibv_context *verbs;       /* librdmacm's, not ours to close */
	unsigned index;                  /* in the served devices: pool MRs */
	char name[64];                   /* ibv_get_device_name() */
	int node;                        /* its NUMA node (that of its pool) */
	struct ibv_device_attr_ex attr;
	struct ibv_pd *pd;               /* the pool's PD */
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	/* The shared receive queue (NULL in region key mode). */
	struct ibv_srq *srq;
	uint32_t srq_depth;
	struct rmp_rx_buf *srq_bufs;
	uint8_t *srq_mem;
	struct ibv_mr *srq_mr;
	/* The wc_flags bits by which this device says a receive came with a
	 * SEND with invalidate (see rmp_device_open). */
	unsigned recv_inv_flags;
};

/*
 * rmp_device_open -- query verbs, allocate the PD and the CQ (cqe entries;
 * -E2BIG when the device allows fewer) on a non-blocking completion
 * channel. Logs what fails; 0 or -errno. Half-built state is released by
 * rmp_device_close.
 */
int rmp_device_open(struct rmp_device *d, struct ibv_context *verbs,
		    uint32_t cqe);
/* rmp_device_add_srq -- the shared receive queue, srq_depth buffers
 * (capped by the device) posted. 0 or -errno (logged). */
int rmp_device_add_srq(struct rmp_device *d, uint32_t srq_depth);
void rmp_device_close(struct rmp_device *d);

/* rmp_rx_post -- (re)post rx on srq, or on qp's own receive queue when
 * srq is NULL. 0 or -errno. */
int rmp_rx_post(struct rmp_rx_buf *rx, struct ibv_srq *srq,
		struct ibv_qp *qp);

/* Does the device offer type-2 memory windows? */
bool rmp_device_has_mw2(const struct rmp_device *d);

#endif /* RMP_DEVICE_H */

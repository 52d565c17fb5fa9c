/* SPDX-License-Identifier: MIT */
/* device.c -- an RDMA device served: PD, CQ, SRQ. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"
#include "proto.h"
#include "util.h"

int rmp_device_open(struct rmp_device *d, struct ibv_context *verbs,
		    uint32_t cqe)
{
	int ret;

	d->verbs = verbs;
	if (ibv_query_device_ex(verbs, NULL, &d->attr)) {
		log_err("ibv_query_device_ex: %s", strerror(errno));
		return -errno;
	}
	/* Soft-RoCE hands completions to user space in the kernel's layout,
	 * where a SEND with invalidate sets 1 << 2 (IB_WC_WITH_INVALIDATE;
	 * libibverbs, which copies the flags as they are, calls that bit
	 * IBV_WC_IP_CSUM_OK). Seen on rxe: flags 0x5 and the rkey in
	 * invalidated_rkey. Other devices set IBV_WC_WITH_INV, and may set
	 * the checksum bit on any RoCE v2 receive. */
	d->recv_inv_flags = IBV_WC_WITH_INV;
	if (d->attr.orig_attr.vendor_id == RMP_RXE_VENDOR_ID)
		d->recv_inv_flags |= 1u << 2;
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		log_err("ibv_alloc_pd: %s", strerror(errno));
		return -errno;
	}
	d->channel = ibv_create_comp_channel(verbs);
	if (!d->channel)
		return -errno;
	ret = rmp_set_nonblock(d->channel->fd);
	if (ret)
		return ret;
	/* A smaller CQ than the clients may fill overruns, and an overrun
	 * stops every client: refuse instead. */
	if (cqe > (uint32_t)d->attr.orig_attr.max_cqe) {
		log_err("the completion queue needs %u entries, the device "
			"allows %d", cqe, d->attr.orig_attr.max_cqe);
		return -E2BIG;
	}
	d->cq = ibv_create_cq(verbs, (int)cqe, d, d->channel, 0);
	if (!d->cq || ibv_req_notify_cq(d->cq, 0)) {
		log_err("creating a completion queue of %u entries: %s", cqe,
			strerror(errno));
		return -errno;
	}
	return 0;
}

int rmp_device_add_srq(struct rmp_device *d, uint32_t srq_depth)
{
	struct ibv_srq_init_attr sa = { 0 };
	size_t bytes;
	int ret;

	srq_depth = RMP_MIN(srq_depth, (uint32_t)d->attr.orig_attr.max_srq_wr);
	sa.attr.max_wr = srq_depth;
	sa.attr.max_sge = 1;
	d->srq = ibv_create_srq(d->pd, &sa);
	if (!d->srq) {
		log_err("creating a shared receive queue of %u: %s", srq_depth,
			strerror(errno));
		return -errno;
	}
	d->srq_depth = srq_depth;
	bytes = (size_t)srq_depth * RMP_MSG_MAX;
	d->srq_bufs = calloc(srq_depth, sizeof(*d->srq_bufs));
	d->srq_mem = aligned_alloc(64, bytes);
	if (!d->srq_bufs || !d->srq_mem)
		return -ENOMEM;
	d->srq_mr = ibv_reg_mr(d->pd, d->srq_mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!d->srq_mr)
		return -errno;
	for (uint32_t i = 0; i < srq_depth; i++) {
		d->srq_bufs[i].dev = d;
		d->srq_bufs[i].buf = d->srq_mem + (size_t)i * RMP_MSG_MAX;
		d->srq_bufs[i].lkey = d->srq_mr->lkey;
		ret = rmp_rx_post(&d->srq_bufs[i], d->srq, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

int rmp_rx_post(struct rmp_rx_buf *rx, struct ibv_srq *srq,
		struct ibv_qp *qp)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rx->buf,
		.length = RMP_MSG_MAX,
		.lkey = rx->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = rmp_wr_id(rx, RMP_WR_RECV),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return srq ? -ibv_post_srq_recv(srq, &wr, &bad) :
		     -ibv_post_recv(qp, &wr, &bad);
}

bool rmp_device_has_mw2(const struct rmp_device *d)
{
	uint64_t caps = d->attr.orig_attr.device_cap_flags;

	return caps & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
		       IBV_DEVICE_MEM_WINDOW_TYPE_2B);
}

void rmp_device_close(struct rmp_device *d)
{
	if (d->srq)
		ibv_destroy_srq(d->srq);
	if (d->srq_mr)
		ibv_dereg_mr(d->srq_mr);
	free(d->srq_mem);
	free(d->srq_bufs);
	if (d->cq)
		ibv_destroy_cq(d->cq);
	if (d->channel)
		ibv_destroy_comp_channel(d->channel);
	if (d->pd && ibv_dealloc_pd(d->pd))
		log_err("ibv_dealloc_pd: %s (resources of quarantined leases "
			"are still held)", strerror(errno));
	memset(d, 0, sizeof(*d));
}

/* SPDX-License-Identifier: MIT */
/* keys.c -- per-lease remote keys: memory windows, regions, or the pool key. */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "server.h"

#define LEASE_MR_ACCESS_BASE IBV_ACCESS_LOCAL_WRITE

/* to_ibv_access -- lease access bits to verbs remote access flags. */
static unsigned to_ibv_access(uint32_t acc)
{
	unsigned f = 0;

	if (acc & RMP_ACC_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (acc & RMP_ACC_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (acc & RMP_ACC_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

enum rmp_keys_mode rmp_keys_resolve(const struct rmp_server *srv)
{
	bool has_mw2 = srv->dev_attr.orig_attr.device_cap_flags &
		       IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	has_mw2 |= !!(srv->dev_attr.orig_attr.device_cap_flags &
		      IBV_DEVICE_MEM_WINDOW_TYPE_2A);
	switch (srv->cfg.lease.lease_keys) {
	case RMP_LEASE_KEYS_WINDOW:
		return RMP_KEYS_WINDOW;
	case RMP_LEASE_KEYS_REGION:
		return RMP_KEYS_REGION;
	case RMP_LEASE_KEYS_POOL:
		return RMP_KEYS_POOL;
	case RMP_LEASE_KEYS_AUTO:
	default:
		return has_mw2 ? RMP_KEYS_WINDOW : RMP_KEYS_REGION;
	}
}

uint64_t rmp_keys_remote_addr(const struct rmp_server *srv,
			      const struct rmp_lease *l)
{
	return (uint64_t)(uintptr_t)(srv->pool->base + l->offset);
}

/* grant_window -- allocate a type-2 MW and bind it on c's QP. */
static int grant_window(struct rmp_server *srv, struct rmp_conn *c,
			struct rmp_lease *l)
{
	struct rmp_pool_chunk *chunk = rmp_pool_chunk_of(srv->pool, l->offset);
	struct ibv_send_wr wr = { 0 }, *bad;
	struct rmp_send_slot *s;
	int ret;

	if (!l->mw) {
		l->mw = ibv_alloc_mw(srv->pd, IBV_MW_TYPE_2);
		if (!l->mw)
			return errno ? -errno : -ENOMEM;
	}
	s = rmp_conn_get_slot(c, SLOT_BIND);
	if (!s)
		return -EAGAIN;
	s->lease = l;
	/* A fresh key tag on every bind: an old rkey never comes back. */
	l->rkey = ibv_inc_rkey(l->mw->rkey);
	wr.wr_id = (uintptr_t)s;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = l->mw;
	wr.bind_mw.rkey = l->rkey;
	wr.bind_mw.bind_info.mr = chunk->mr;
	wr.bind_mw.bind_info.addr = rmp_keys_remote_addr(srv, l);
	wr.bind_mw.bind_info.length = l->length;
	wr.bind_mw.bind_info.mw_access_flags = to_ibv_access(l->access);
	ret = ibv_post_send(c->id->qp, &wr, &bad);
	if (ret) {
		rmp_conn_put_slot(s);
		return -ret;
	}
	return 0;
}

/*
 * grant_region -- register the lease's bytes as an MR of their own, in
 * the connection's own PD: the rkey works from that QP only.
 */
static int grant_region(struct rmp_server *srv, struct rmp_conn *c,
			struct rmp_lease *l)
{
	l->mr = ibv_reg_mr(c->pd, srv->pool->base + l->offset, l->length,
			   LEASE_MR_ACCESS_BASE | to_ibv_access(l->access));
	if (!l->mr)
		return errno ? -errno : -ENOMEM;
	l->rkey = l->mr->rkey;
	return 0;
}

int rmp_keys_grant(struct rmp_server *srv, struct rmp_conn *c,
		   struct rmp_lease *l)
{
	switch (srv->keys_mode) {
	case RMP_KEYS_WINDOW:
		return grant_window(srv, c, l);
	case RMP_KEYS_REGION:
		return grant_region(srv, c, l);
	case RMP_KEYS_POOL:
		l->rkey = rmp_pool_chunk_of(srv->pool, l->offset)->mr->rkey;
		return 0;
	}
	return -EINVAL;
}

void rmp_keys_drop(struct rmp_server *srv, struct rmp_lease *l)
{
	/* Deallocating a window or deregistering a region invalidates its
	 * rkey before the call returns. */
	if (l->mw) {
		if (ibv_dealloc_mw(l->mw))
			log_err("lease %016llx: ibv_dealloc_mw: %s",
				(unsigned long long)l->id, strerror(errno));
		l->mw = NULL;
	}
	if (l->mr) {
		if (ibv_dereg_mr(l->mr))
			log_err("lease %016llx: ibv_dereg_mr: %s",
				(unsigned long long)l->id, strerror(errno));
		l->mr = NULL;
	}
	(void)srv;
}

int rmp_keys_revoke(struct rmp_server *srv, struct rmp_conn *c,
		    struct rmp_lease *l)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	struct rmp_send_slot *s;

	/* A window bound on a live QP is invalidated through that QP, in
	 * order after everything already posted there. */
	if (srv->keys_mode == RMP_KEYS_WINDOW && l->mw && c &&
	    c->state == CONN_ESTABLISHED) {
		s = rmp_conn_get_slot(c, SLOT_INV);
		if (s) {
			s->lease = l;
			wr.wr_id = (uintptr_t)s;
			wr.opcode = IBV_WR_LOCAL_INV;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.invalidate_rkey = l->rkey;
			if (!ibv_post_send(c->id->qp, &wr, &bad))
				return 1;
			rmp_conn_put_slot(s);
		}
	}
	rmp_keys_drop(srv, l);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* conn.c -- one client connection: its QP, send slots and lease list. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"
#include "util.h"

/* Each connection may have this many key operations (bind/invalidate)
 * in flight on top of one reply per credit. */
#define KEY_SLOTS 64u

struct rmp_conn *rmp_conn_new(struct rmp_server *srv, struct rdma_cm_id *id,
			      const char *name)
{
	struct rmp_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = srv;
	c->id = id;
	c->serial = ++srv->next_serial;
	c->state = CONN_ACCEPTING;
	rmp_strlcpy(c->name, name, sizeof(c->name));
	id->context = c;
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	return c;
}

static int post_conn_recv(struct rmp_conn *c, struct rmp_recv_slot *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf,
		.length = RMP_MSG_MAX,
		.lkey = c->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)s | WRID_CONN_RECV,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(c->id->qp, &wr, &bad);

	if (ret == 0)
		c->outstanding++;
	return -ret;
}

/* setup_own_recv -- a receive queue of `credits` buffers for c alone. */
static int setup_own_recv(struct rmp_conn *c, uint32_t credits)
{
	size_t bytes = (size_t)credits * RMP_MSG_MAX;
	int ret;

	c->recv_slots = calloc(credits, sizeof(*c->recv_slots));
	c->recv_buf = aligned_alloc(64, bytes);
	if (!c->recv_slots || !c->recv_buf)
		return -ENOMEM;
	c->recv_mr = ibv_reg_mr(c->pd, c->recv_buf, bytes,
				IBV_ACCESS_LOCAL_WRITE);
	if (!c->recv_mr)
		return errno ? -errno : -ENOMEM;
	for (uint32_t i = 0; i < credits; i++) {
		c->recv_slots[i].conn = c;
		c->recv_slots[i].buf = c->recv_buf + (size_t)i * RMP_MSG_MAX;
		ret = post_conn_recv(c, &c->recv_slots[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int rmp_conn_setup_qp(struct rmp_conn *c)
{
	struct rmp_server *srv = c->srv;
	uint32_t credits = srv->cfg.server.credits;
	struct ibv_qp_init_attr qa = {
		.send_cq = srv->cq,
		.recv_cq = srv->cq,
		.srq = srv->srq,
		.cap = {
			.max_send_wr = credits + KEY_SLOTS,
			.max_send_sge = 1,
			.max_inline_data = 0,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	size_t bytes;

	c->own_pd = srv->keys_mode == RMP_KEYS_REGION;
	c->pd = c->own_pd ? ibv_alloc_pd(srv->verbs) : srv->pd;
	if (!c->pd)
		return errno ? -errno : -ENOMEM;
	if (c->own_pd) {
		qa.srq = NULL;
		qa.cap.max_recv_wr = credits;
		qa.cap.max_recv_sge = 1;
	}
	c->nslots = credits + KEY_SLOTS;
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	bytes = (size_t)credits * RMP_MSG_MAX;
	c->send_buf = aligned_alloc(64, bytes);
	if (!c->slots || !c->send_buf)
		return -ENOMEM;
	c->send_mr = ibv_reg_mr(c->pd, c->send_buf, bytes, 0);
	if (!c->send_mr)
		return errno ? -errno : -ENOMEM;
	/* Reply slots own a buffer each; key slots need none. */
	for (uint32_t i = 0; i < c->nslots; i++) {
		c->slots[i].conn = c;
		if (i < credits)
			c->slots[i].buf = c->send_buf + (size_t)i * RMP_MSG_MAX;
	}
	if (rdma_create_qp(c->id, c->pd, &qa))
		return errno ? -errno : -EIO;
	/* Receives go up before the accept: the client may send at once. */
	return c->own_pd ? setup_own_recv(c, credits) : 0;
}

void rmp_conn_on_recv(struct rmp_recv_slot *s, const struct ibv_wc *wc)
{
	struct rmp_conn *c = s->conn;

	/* The buffer still counts as outstanding while it is handled, so
	 * c cannot be freed under us even if the handler closes it. */
	if (wc->status == IBV_WC_SUCCESS) {
		rmp_conn_established(c);
		if (c->state == CONN_ESTABLISHED)
			rmp_service_on_recv(c, s->buf, wc->byte_len);
	} else if (wc->status != IBV_WC_WR_FLUSH_ERR) {
		log_warn("client #%" PRIu64 " (%s): receive failed: %s",
			 c->serial, c->name, ibv_wc_status_str(wc->status));
	}
	c->outstanding--;
	if (wc->status == IBV_WC_SUCCESS && c->state == CONN_ESTABLISHED &&
	    post_conn_recv(c, s) == 0)
		return;
	rmp_conn_maybe_free(c);
}

void rmp_conn_established(struct rmp_conn *c)
{
	if (c->state != CONN_ACCEPTING)
		return;
	c->state = CONN_ESTABLISHED;
	log_info("client #%" PRIu64 " (%s, %s) connected", c->serial, c->name,
		 c->peer);
}

struct rmp_conn *rmp_conn_by_qp_num(struct rmp_server *srv, uint32_t qpn)
{
	/* Linear in the number of clients (max_clients, 64 by default);
	 * one compare per client per request is far below the cost of the
	 * request itself. */
	for (struct rmp_conn *c = srv->conns; c; c = c->next)
		if (c->id && c->id->qp && c->id->qp->qp_num == qpn)
			return c;
	return NULL;
}

struct rmp_send_slot *rmp_conn_get_slot(struct rmp_conn *c,
					enum rmp_slot_kind kind)
{
	uint32_t credits = c->srv->cfg.server.credits;
	uint32_t lo = kind == SLOT_REPLY ? 0 : credits;
	uint32_t hi = kind == SLOT_REPLY ? credits : c->nslots;

	for (uint32_t i = lo; i < hi; i++) {
		if (c->slots[i].kind == SLOT_FREE) {
			c->slots[i].kind = kind;
			c->slots[i].lease = NULL;
			c->outstanding++;
			return &c->slots[i];
		}
	}
	return NULL;
}

void rmp_conn_put_slot(struct rmp_send_slot *s)
{
	s->kind = SLOT_FREE;
	s->lease = NULL;
	s->conn->outstanding--;
}

int rmp_conn_send_reply(struct rmp_conn *c, struct rmp_msg *m)
{
	struct rmp_send_slot *s;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	int len, ret;

	if (c->state != CONN_ESTABLISHED)
		return -ENOTCONN;
	s = rmp_conn_get_slot(c, SLOT_REPLY);
	if (!s)
		return -EAGAIN;
	m->hdr.flags |= RMP_MSG_F_REPLY;
	len = rmp_msg_encode(s->buf, RMP_MSG_MAX, m);
	if (len < 0) {
		rmp_conn_put_slot(s);
		return len;
	}
	sge.addr = (uintptr_t)s->buf;
	sge.length = (uint32_t)len;
	sge.lkey = c->send_mr->lkey;
	wr.wr_id = (uintptr_t)s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(c->id->qp, &wr, &bad);
	if (ret) {
		rmp_conn_put_slot(s);
		return -ret;
	}
	return 0;
}

void rmp_conn_on_send_done(struct rmp_send_slot *s, const struct ibv_wc *wc)
{
	struct rmp_conn *c = s->conn;
	struct rmp_server *srv = c->srv;
	struct rmp_lease *l = s->lease;
	enum rmp_slot_kind kind = s->kind;

	rmp_conn_put_slot(s);
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		log_warn("client #%" PRIu64 " (%s): %s failed: %s", c->serial,
			 c->name, kind == SLOT_BIND ? "window bind" :
			 kind == SLOT_INV ? "window invalidate" : "reply",
			 ibv_wc_status_str(wc->status));
	switch (kind) {
	case SLOT_INV:
		/* Invalidated, or flushed because the QP died: either way
		 * deallocating the window now finishes the revoke. */
		rmp_keys_drop(srv, l);
		rmp_service_release_extent(srv, l);
		break;
	case SLOT_BIND:
		if (wc->status != IBV_WC_SUCCESS && c->state == CONN_ESTABLISHED)
			rmp_conn_close(c, "window bind failed");
		break;
	default:
		break;
	}
	rmp_conn_maybe_free(c);
}

/* detach_leases -- the connection is going: its leases lose their key. */
static void detach_leases(struct rmp_conn *c)
{
	struct rmp_server *srv = c->srv;
	struct rmp_lease *l, *next;

	for (l = c->leases; l; l = next) {
		next = l->conn_next;
		if (l->flags & RMP_LEASE_F_EPHEMERAL) {
			rmp_service_end_lease(srv, l, "its connection closed");
			continue;
		}
		/* A window is bound to this QP; a region key was handed to
		 * this client: neither may outlive the connection. ATTACH
		 * grants a fresh one. */
		if (srv->keys_mode != RMP_KEYS_POOL)
			rmp_keys_drop(srv, l);
		/* An auto-renew lease gets one more ttl from the loss of its
		 * connection: time for a restarted client to attach. */
		if (l->flags & RMP_LEASE_F_AUTO_RENEW)
			rmp_lease_table_set_deadline(srv->leases, l,
						     rmp_now_ms() + l->ttl_ms);
		l->conn = NULL;
		l->conn_next = l->conn_prev = NULL;
	}
	c->leases = NULL;
	c->bytes = c->nleases = 0;
	rmp_server_schedule_expiry(srv);
}

void rmp_conn_close(struct rmp_conn *c, const char *why)
{
	if (c->state == CONN_CLOSING)
		return;
	log_info("client #%" PRIu64 " (%s, %s) disconnected: %s", c->serial,
		 c->name, c->peer, why);
	/* CLOSING before detaching: revokes then take the synchronous
	 * path instead of posting on a dying QP. */
	c->state = CONN_CLOSING;
	detach_leases(c);
	rdma_disconnect(c->id);
	rmp_conn_maybe_free(c);
}

void rmp_conn_maybe_free(struct rmp_conn *c)
{
	struct rmp_server *srv = c->srv;

	if (c->state != CONN_CLOSING || c->outstanding)
		return;
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->send_mr)
		ibv_dereg_mr(c->send_mr);
	if (c->recv_mr)
		ibv_dereg_mr(c->recv_mr);
	/* Every lease MR in it was dropped when the leases were detached. */
	if (c->own_pd && c->pd && ibv_dealloc_pd(c->pd))
		log_err("client #%" PRIu64 ": ibv_dealloc_pd: %s", c->serial,
			strerror(errno));
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	free(c->slots);
	free(c->send_buf);
	free(c->recv_slots);
	free(c->recv_buf);
	free(c);
}

/* SPDX-License-Identifier: MIT */
/*
 * conn_accept.c -- a new connection: the room it needs (an unproven one
 * closed for it), its record, its protection domain, reply slots and
 * (region mode) own receive queue, its queue pair moved through INIT,
 * RTR and RTS with the server's own retry counts and timeouts, and the
 * accept that answers the client.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "conn_int.h"
#include "log.h"
#include "network.h"
#include "util.h"

/* The server's own RNR retry count: finite, whatever the client asks
 * (7 would mean "forever", and a revoke queued behind a reply would wait
 * as long as the client does not post receives). */
#define SERVER_RNR_RETRY 3
/* Local ACK timeout exponent used when the path gives none (4.096 µs x
 * 2^14 = 67 ms per try), and the largest accepted (~1 s). */
#define SERVER_ACK_TIMEOUT 14
#define SERVER_ACK_TIMEOUT_MAX 18
/* Transport retries of a send the peer does not acknowledge. Never 7:
 * Soft-RoCE takes 7 to mean "forever" (as rnr_retry does), and then a
 * dead client's host would never fail a probe (tested on rxe). */
#define SERVER_RETRY_CNT 6

/* modify_qp -- move c's QP to state (INIT, RTR or RTS) with the
 * attributes rdma_cm computed, but the server's own retry counts and
 * timeouts in RTS. */
static int modify_qp(struct rmp_conn *c, enum ibv_qp_state state,
		     uint8_t resp_res)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask, ret;

	if (rdma_init_qp_attr(c->id, &attr, &mask))
		return errno ? -errno : -EIO;
	if (state == IBV_QPS_RTR)
		attr.max_dest_rd_atomic = resp_res;
	if (state == IBV_QPS_RTS) {
		attr.max_rd_atomic = 0; /* the server reads nothing */
		attr.rnr_retry = SERVER_RNR_RETRY;
		attr.retry_cnt = SERVER_RETRY_CNT;
		if (attr.timeout == 0 || attr.timeout > SERVER_ACK_TIMEOUT_MAX)
			attr.timeout = SERVER_ACK_TIMEOUT;
		mask |= IBV_QP_RNR_RETRY | IBV_QP_RETRY_CNT | IBV_QP_TIMEOUT |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	ret = ibv_modify_qp(c->qp, &attr, mask);
	if (ret == 0 && state == IBV_QPS_RTS)
		log_debug("%s: ACK timeout 4.096 us x 2^%u, %u retries",
			  c->holder.label, (unsigned)attr.timeout,
			  (unsigned)attr.retry_cnt);
	/* What rdma_cm handed us, for whoever reads why a connect failed. */
	if (ret)
		log_err("%s: moving its queue pair to %s: %s (port %u, pkey "
			"index %u, GID index %u, mask %#x)", c->holder.label,
			state == IBV_QPS_INIT ? "INIT" :
			state == IBV_QPS_RTR ? "RTR" : "RTS", strerror(ret),
			(unsigned)attr.port_num, (unsigned)attr.pkey_index,
			(unsigned)attr.ah_attr.grh.sgid_index, (unsigned)mask);
	return -ret;
}

/* send_wrs -- a QP's send queue: replies (two slots per credit), key
 * operations and one liveness probe. */
static uint32_t send_wrs(uint32_t credits)
{
	return 2 * credits + KEY_WRS + 1;
}

uint32_t rmp_conn_cq_entries(uint32_t credits)
{
	return send_wrs(credits) + credits + (credits + 2);
}

/* setup -- PD, QP, reply slots and (region mode) the own receive queue. */
static int setup(struct rmp_conn *c, uint8_t resp_res)
{
	struct rmp_conns *s = c->set;
	uint32_t credits = s->cfg->server.credits;
	struct ibv_qp_init_attr qa = {
		.qp_context = c,
		.send_cq = c->dev->cq,
		.recv_cq = c->dev->cq,
		.srq = c->dev->srq,
		.cap = {
			.max_send_wr = send_wrs(credits),
			.max_send_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
	};
	size_t bytes;
	int ret;

	c->own_pd = s->keys_mode == RMP_KEYS_REGION;
	c->pd = c->own_pd ? ibv_alloc_pd(c->dev->verbs) : c->dev->pd;
	if (!c->pd)
		return errno ? -errno : -ENOMEM;
	if (c->own_pd) {
		qa.srq = NULL;
		qa.cap.max_recv_wr = credits;
		qa.cap.max_recv_sge = 1;
	}
	/*
	 * A reply slot frees when the server's SEND completes, which can
	 * be seen after the client's next request: twice the credits keep
	 * a client that has exactly `credits` requests in flight served.
	 */
	c->nreply = 2 * credits;
	c->replies = calloc(c->nreply, sizeof(*c->replies));
	bytes = (size_t)c->nreply * RMP_MSG_MAX;
	c->send_mem = aligned_alloc(64, bytes);
	if (!c->replies || !c->send_mem)
		return -ENOMEM;
	c->send_mr = ibv_reg_mr(c->pd, c->send_mem, bytes, 0);
	if (!c->send_mr)
		return errno ? -errno : -ENOMEM;
	for (unsigned i = 0; i < c->nreply; i++) {
		c->replies[i].conn = c;
		c->replies[i].buf = c->send_mem + (size_t)i * RMP_MSG_MAX;
	}
	c->qp = ibv_create_qp(c->pd, &qa);
	if (!c->qp)
		return errno ? -errno : -EIO;
	rmp_holder_init(&c->holder, c->qp, c->pd, c->dev->index, KEY_WRS);
	c->holder.fail = cn_holder_failed;
	ret = modify_qp(c, IBV_QPS_INIT, 0);
	if (ret)
		return ret;
	if (c->own_pd) {
		c->nrecv = credits;
		bytes = (size_t)credits * RMP_MSG_MAX;
		c->rx = calloc(credits, sizeof(*c->rx));
		c->recv_mem = aligned_alloc(64, bytes);
		if (!c->rx || !c->recv_mem)
			return -ENOMEM;
		c->recv_mr = ibv_reg_mr(c->pd, c->recv_mem, bytes,
					IBV_ACCESS_LOCAL_WRITE);
		if (!c->recv_mr)
			return errno ? -errno : -ENOMEM;
		/* Receives go up before the accept: the client may send
		 * as soon as it is connected. */
		for (uint32_t i = 0; i < credits; i++) {
			c->rx[i].conn = c;
			c->rx[i].dev = c->dev;
			c->rx[i].buf = c->recv_mem + (size_t)i * RMP_MSG_MAX;
			c->rx[i].lkey = c->recv_mr->lkey;
			ret = cn_post_own_recv(c, &c->rx[i]);
			if (ret)
				return ret;
		}
	}
	ret = modify_qp(c, IBV_QPS_RTR, resp_res);
	if (ret)
		return ret;
	return modify_qp(c, IBV_QPS_RTS, 0);
}

/* An unproven connection and its place in the list (arrival order). */
struct unproven {
	struct rmp_conn *c;
	unsigned order;
};

static int by_block(const void *a, const void *b)
{
	const struct unproven *x = a, *y = b;
	int d = strcmp(x->c->peer_block, y->c->peer_block);

	return d ? d : (x->order > y->order) - (x->order < y->order);
}

/*
 * crowded_oldest -- the oldest unproven connection of the block that
 * holds the most of them, `block` counting one more (the newcomer's); of
 * blocks that hold as many, the one whose oldest came first. NULL: none.
 * Without the memory to sort them, the oldest of all.
 */
static struct rmp_conn *crowded_oldest(struct rmp_conns *s,
				       const char *block)
{
	unsigned n = 0, i, j, k, best_n = 0, best_order = 0;
	struct rmp_conn *c, *best = NULL;
	struct unproven *u;

	u = s->unauthenticated ? malloc(s->unauthenticated * sizeof(*u)) :
				 NULL;
	TAILQ_FOREACH(c, &s->list, link) {
		if (!cn_unproven(c))
			continue;
		if (!u)
			return c;
		if (n < s->unauthenticated) {
			u[n] = (struct unproven){ c, n };
			n++;
		}
	}
	if (!u)
		return NULL;
	qsort(u, n, sizeof(*u), by_block);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(u[j].c->peer_block,
						 u[i].c->peer_block); j++)
			;
		k = j - i + !strcmp(u[i].c->peer_block, block);
		if (!best || k > best_n ||
		    (k == best_n && u[i].order < best_order)) {
			best = u[i].c;
			best_n = k;
			best_order = u[i].order;
		}
	}
	free(u);
	return best;
}

int rmp_conns_preauth_room(struct rmp_conns *s, const char *ip)
{
	const struct rmp_config *cfg = s->cfg;
	uint32_t max = cfg->server.max_clients;
	struct rmp_conn *c, *oldest_here = NULL;
	char block[RMP_PEER_BLOCK_LEN];
	unsigned here = 0;

	rmp_peer_block(ip, block, sizeof(block));
	/* The list is in order of arrival: the first found is the oldest. */
	TAILQ_FOREACH(c, &s->list, link)
		if (cn_unproven(c) && !strcmp(c->peer_block, block) &&
		    !here++)
			oldest_here = c;
	if (here >= cfg->server.unauthenticated_per_address)
		c = oldest_here;
	else if (s->unauthenticated >= cfg->server.max_unauthenticated ||
		 (s->count - s->spare >= max && s->spare < max))
		c = crowded_oldest(s, block);
	else
		c = NULL;
	if (c) {
		s->counters.preauth_evicted++;
		c->hold++;
		rmp_conn_close(c, "not authenticated yet: its slot went to a "
			       "newer connection");
		c->hold--;
		cn_maybe_free(c);
	}
	/* A spare's QP waits for its completions beside max_clients open
	 * ones; room for as many spares (rmp_conn_cq_entries). */
	return s->count - s->spare >= max || s->spare > max ? -EBUSY : 0;
}

struct rmp_device *rmp_conns_device(const struct rmp_conns *s,
				    const struct ibv_context *verbs)
{
	for (unsigned i = 0; i < s->ndevs; i++)
		if (s->devs[i]->verbs == verbs)
			return s->devs[i];
	return NULL;
}

int rmp_conn_accept(struct rmp_conns *s, struct rdma_cm_id *id,
		    const char *name, const char *peer, const char *peer_ip,
		    const struct rmp_auth_pending *auth,
		    uint8_t initiator_depth, const void *pdata, uint8_t plen,
		    struct rmp_conn **out)
{
	struct rmp_device *dev = rmp_conns_device(s, id->verbs);
	const struct ibv_device_attr *da;
	struct rdma_conn_param cp = { 0 };
	struct rmp_conn *c;
	uint8_t resp_res;
	int ret;

	if (!dev)
		return -ENODEV;
	da = &dev->attr.orig_attr;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->set = s;
	c->dev = dev;
	c->id = id;
	c->serial = ++s->next_serial;
	c->state = RMP_CONN_ACCEPTING;
	if (name[0])
		rmp_log_field(c->name, sizeof(c->name), name);
	else
		rmp_strlcpy(c->name, peer, sizeof(c->name));
	rmp_strlcpy(c->peer, peer, sizeof(c->peer));
	rmp_strlcpy(c->peer_ip, peer_ip, sizeof(c->peer_ip));
	rmp_peer_block(peer_ip, c->peer_block, sizeof(c->peer_block));
	snprintf(c->holder.label, sizeof(c->holder.label),
		 "client #%" PRIu64 " (%s, %s)", c->serial, c->name, peer);
	TAILQ_INIT(&c->holder.keys);
	TAILQ_INIT(&c->deferred);
	c->holder.name = c->name;
	c->holder.peer = c->peer;
	c->auth = *auth;
	/* Counted as the tenant's once it proves it (authenticate). */
	cn_count_as(c, RMP_CONN_COUNTS_PENDING);
	c->accepted_ms = rmp_now_ms();
	TAILQ_INSERT_TAIL(&s->list, c, link);
	s->count++;
	s->counters.accepted++;
	id->context = c;
	/* The client reads and does atomics against us: grant as many
	 * outstanding ones as it asks for and the device allows. */
	resp_res = (uint8_t)RMP_MIN(initiator_depth, da->max_qp_rd_atom);
	ret = setup(c, resp_res);
	if (ret) {
		log_err("%s: cannot set up its queue pair: %s",
			c->holder.label, strerror(-ret));
		goto err;
	}
	cp.private_data = pdata;
	cp.private_data_len = plen;
	cp.responder_resources = resp_res;
	cp.initiator_depth = 0;
	cp.rnr_retry_count = 7; /* the client's retries towards us */
	cp.qp_num = c->qp->qp_num;
	cp.srq = c->own_pd ? 0 : 1;
	if (rdma_accept(id, &cp)) {
		ret = errno ? -errno : -EIO;
		log_err("%s: rdma_accept: %s", c->holder.label,
			strerror(-ret));
		goto err;
	}
	log_debug("%s: accepted", c->holder.label);
	*out = c;
	return 0;
err:
	/* The caller rejects and destroys id. */
	c->id = NULL;
	c->local_failure = true;
	rmp_conn_close(c, "set-up failed");
	return ret;
}

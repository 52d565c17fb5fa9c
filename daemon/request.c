/* SPDX-License-Identifier: MIT */
/* request.c -- one control request: decode, act through the lifecycle, reply. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "keys.h"
#include "lifecycle.h"
#include "log.h"
#include "pool.h"
#include "request.h"
#include "tenant.h"
#include "util.h"

static void do_stat(const struct rmp_request_ctx *ctx,
		    const struct rmp_holder *h, struct rmp_stat_rep *st)
{
	const struct rmp_config *cfg = ctx->cfg;
	/* The pool of the connection's device: where its ALLOCs go. */
	const struct rmp_pool *pool = ctx->pools[h->dev < ctx->npools ?
						  h->dev : 0];
	struct rmp_lifecycle_stats ls;
	struct rmp_pool_stats ps;

	rmp_pool_stats(pool, &ps);
	rmp_lifecycle_stats(ctx->lc, &ls);
	memset(st, 0, sizeof(*st));
	st->pool_bytes = ps.size;
	st->free_bytes = ps.free_bytes;
	st->largest_free = ps.largest_free;
	st->leases = ls.leases;
	st->tenant_bytes = h->tenant->bytes;
	st->tenant_leases = h->tenant->leases;
	st->quota_bytes = h->tenant->limits.bytes;
	st->quota_leases = h->tenant->max_leases;
	st->tenant_connections = h->tenant->connections;
	st->quota_connections = h->tenant->limits.connections;
	st->keys = ls.keys;
	st->hugepage_size = pool->page_size;
	st->ttl_min_s = (uint32_t)(cfg->lease.ttl_min_ms / 1000);
	st->ttl_max_s = (uint32_t)RMP_MIN(cfg->lease.ttl_max_ms / 1000,
					  UINT32_MAX);
	st->ttl_default_s = (uint32_t)(cfg->lease.ttl_default_ms / 1000);
	st->numa_node = pool->node;
	st->keys_mode = ctx->keys_mode;
	st->quarantined_bytes = ls.quarantined_bytes;
	st->zeroing_bytes = ls.zeroing_bytes;
}

/* dispatch -- act on a decoded request; the reply status. *fence: see
 * rmp_request_handle. */
static int dispatch(const struct rmp_request_ctx *ctx, struct rmp_holder *h,
		    const struct rmp_msg *req, struct rmp_msg *rep,
		    unsigned *detail, uint64_t *fence)
{
	struct rmp_lease *l;
	struct rmp_key *k;
	int ret;

	/* A reload voided the connection's proof (removed its tenant,
	 * changed or took its key, turned anonymous access off, or no longer
	 * admits its address): nothing is accepted from it any more, and it
	 * is closed, its keys with it, once its tenant's rotate_grace is
	 * over (rmp_conns_recheck_proofs). */
	if (!rmp_holder_current(h))
		return -EKEYREVOKED;
	switch (req->hdr.opcode) {
	case RMP_OP_ALLOC:
		ret = rmp_lifecycle_grant(ctx->lc, h, &req->u.alloc, &l, &k,
					  detail);
		if (ret == 0) {
			rmp_lifecycle_describe(ctx->lc, l, k, &rep->u.lease);
			/* It asked for SPILL: it knows the answer's flag. */
			rep->u.lease.flags |= l->flags & RMP_LEASE_F_SPILLED;
		}
		return ret;
	case RMP_OP_RENEW:
		return rmp_lifecycle_renew(ctx->lc, h, req->u.renew.id,
					   req->u.renew.secret,
					   req->u.renew.ttl_s,
					   &rep->u.renew_rep.ttl_ms, detail);
	case RMP_OP_FREE:
		return rmp_lifecycle_free_lease(ctx->lc, h, req->u.free.id,
						req->u.free.secret, detail);
	case RMP_OP_ATTACH:
		ret = rmp_lifecycle_attach(ctx->lc, h, &req->u.attach, &l, &k,
					   detail, fence);
		if (ret == 0)
			rmp_lifecycle_describe(ctx->lc, l, k, &rep->u.lease);
		return ret;
	case RMP_OP_STAT:
		do_stat(ctx, h, &rep->u.stat);
		return 0;
	case RMP_OP_AUTH:
		return -EALREADY; /* authenticated already */
	}
	return -EOPNOTSUPP; /* the decoder already refuses these */
}

/* reply_header -- the reply's header for a request header. */
static void reply_header(const struct rmp_msg *req, struct rmp_msg *rep)
{
	memset(rep, 0, sizeof(*rep));
	/* A header that decoded up to the version carries a req_id and an
	 * opcode to answer with; anything shorter gets req_id 0. */
	rep->hdr.req_id = req->hdr.req_id;
	rep->hdr.opcode = req->hdr.opcode;
	if (rep->hdr.opcode == 0 || rep->hdr.opcode > RMP_OP_MAX)
		rep->hdr.opcode = 0;
	rep->hdr.flags = RMP_MSG_F_REPLY;
}

unsigned rmp_request_auth(const struct rmp_request_ctx *ctx,
			  struct rmp_holder *h,
			  const struct rmp_auth_pending *p,
			  const uint8_t *buf, size_t len, struct rmp_msg *rep)
{
	unsigned detail = RMP_DETAIL_NOT_AUTHED;
	struct rmp_msg req;
	int ret;

	ret = rmp_msg_decode(buf, len, &req);
	reply_header(&req, rep);
	if (ret == 0 && req.hdr.opcode == RMP_OP_AUTH &&
	    !(req.hdr.flags & RMP_MSG_F_REPLY))
		detail = rmp_tenants_check_proof(ctx->tenants, p->tenant,
						 p->nonce,
						 req.u.auth.client_nonce,
						 p->version, p->name,
						 p->server, req.u.auth.proof,
						 rep->u.auth_rep.server_proof);
	if (detail == RMP_DETAIL_NONE) {
		h->tenant = p->tenant;
		h->tenant_epoch = p->tenant->epoch;
		return detail;
	}
	rep->hdr.status = detail == RMP_DETAIL_NOT_AUTHED ? -EACCES :
			  -EKEYREJECTED;
	rep->hdr.flags |= RMP_MSG_F_DETAIL(detail);
	return detail;
}

/* Microseconds: a SEND/RECV round trip is ~10 µs on hardware; the
 * zeroing of a large extent or a slow key bind lands in the upper ones. */
const uint32_t rmp_latency_bounds_us[RMP_LATENCY_BUCKETS] = {
	5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10000, 50000, 250000,
};

void rmp_latency_add(struct rmp_latency *h, unsigned op, uint64_t ns)
{
	unsigned b = 0;

	if (op > RMP_OP_MAX)
		op = 0;
	while (b < RMP_LATENCY_BUCKETS &&
	       ns > (uint64_t)rmp_latency_bounds_us[b] * 1000)
		b++;
	h->count[op][b]++;
	h->sum_ns[op] += ns;
}

bool rmp_request_handle(const struct rmp_request_ctx *ctx,
			struct rmp_holder *h, const uint8_t *buf, size_t len,
			struct rmp_msg *rep, uint64_t *fence)
{
	unsigned detail = RMP_DETAIL_NONE;
	struct rmp_msg req;
	int ret;

	*fence = 0;
	ret = rmp_msg_decode(buf, len, &req);
	if (ret == 0 && (req.hdr.flags & RMP_MSG_F_REPLY))
		ret = -EBADMSG;
	reply_header(&req, rep);
	if (ret) {
		rep->hdr.status = ret;
		log_notice("%s: bad message (%s)", h->label, strerror(-ret));
		return true;
	}
	ret = dispatch(ctx, h, &req, rep, &detail, fence);
	if (ret && ret != -ENOENT && ret != -EKEYEXPIRED)
		log_debug("%s: %s: %s%s%s", h->label,
			  rmp_opcode_name(req.hdr.opcode), strerror(-ret),
			  detail ? ": " : "", rmp_detail_str(detail));
	rep->hdr.status = ret;
	if (ret)
		rep->hdr.flags |= RMP_MSG_F_DETAIL(detail);
	/* Reaching for another tenant's lease counts as a bad message. */
	return ret == -EPERM || ret == -EALREADY;
}

void rmp_request_fenced(struct rmp_msg *rep,
			const struct rmp_fence_done *done)
{
	rep->hdr.status = done->status;
	memset(&rep->u, 0, sizeof(rep->u));
	if (done->status == 0)
		rep->u.lease = done->d;
}

void rmp_request_unanswered(const struct rmp_request_ctx *ctx,
			    struct rmp_holder *h, const struct rmp_msg *rep)
{
	unsigned detail = RMP_DETAIL_NONE;

	if (rep->hdr.opcode != RMP_OP_ALLOC || rep->hdr.status != 0)
		return;
	log_notice("%s: lease %016" PRIx64 " granted but the reply could not "
		   "be sent: freed", h->label, rep->u.lease.id);
	rmp_lifecycle_free_lease(ctx->lc, h, rep->u.lease.id,
				 rep->u.lease.secret, &detail);
}

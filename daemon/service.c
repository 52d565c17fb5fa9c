/* SPDX-License-Identifier: MIT */
/* service.c -- the control requests: ALLOC, RENEW, FREE, ATTACH, STAT. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"
#include "util.h"

/* A client that sends this many bad messages is disconnected. */
#define MAX_BAD_MSGS 8

/* ttl_ms -- validated TTL for a request (0 = default). -EINVAL if out of
 * the configured bounds. */
static int ttl_ms(const struct rmp_server *srv, uint32_t ttl_s, uint64_t *out)
{
	uint64_t ms = ttl_s ? (uint64_t)ttl_s * 1000 :
		      srv->cfg.lease.ttl_default_ms;

	if (ms < srv->cfg.lease.ttl_min_ms || ms > srv->cfg.lease.ttl_max_ms)
		return -EINVAL;
	*out = ms;
	return 0;
}

static void conn_add_lease(struct rmp_conn *c, struct rmp_lease *l)
{
	l->conn = c;
	l->conn_prev = NULL;
	l->conn_next = c->leases;
	if (c->leases)
		c->leases->conn_prev = l;
	c->leases = l;
	c->bytes += l->length;
	c->nleases++;
}

static void conn_del_lease(struct rmp_conn *c, struct rmp_lease *l)
{
	if (l->conn_prev)
		l->conn_prev->conn_next = l->conn_next;
	else
		c->leases = l->conn_next;
	if (l->conn_next)
		l->conn_next->conn_prev = l->conn_prev;
	l->conn_next = l->conn_prev = NULL;
	l->conn = NULL;
	c->bytes -= l->length;
	c->nleases--;
}

/* quota_check -- may c take one more lease of length bytes? */
static int quota_check(const struct rmp_server *srv, const struct rmp_conn *c,
		       uint64_t length)
{
	uint64_t qb = srv->cfg.quota.bytes_per_client;
	uint64_t ql = srv->cfg.quota.leases_per_client;

	if (ql && c->nleases + 1 > ql)
		return -EDQUOT;
	if (qb && c->bytes + length > qb)
		return -EDQUOT;
	return 0;
}

static void describe(const struct rmp_server *srv, const struct rmp_lease *l,
		     struct rmp_lease_desc *d)
{
	uint64_t now = rmp_now_ms();

	memset(d, 0, sizeof(*d));
	d->id = l->id;
	d->secret = l->secret;
	d->addr = rmp_keys_remote_addr(srv, l);
	d->length = l->length;
	d->ttl_ms = l->deadline_ms > now ? l->deadline_ms - now : 0;
	d->rkey = l->rkey;
	d->access = l->access;
	d->flags = l->flags;
}

void rmp_service_release_extent(struct rmp_server *srv, struct rmp_lease *l)
{
	int ret = rmp_pool_put(srv->pool, l->offset, l->length);

	if (ret)
		log_err("lease %016" PRIx64 ": returning extent %" PRIu64
			"+%" PRIu64 ": %s", l->id, l->offset, l->length,
			strerror(-ret));
	free(l);
}

void rmp_service_end_lease(struct rmp_server *srv, struct rmp_lease *l,
			   const char *why)
{
	log_debug("lease %016" PRIx64 " (%" PRIu64 " bytes, %s) ends: %s",
		  l->id, l->length, l->owner, why);
	struct rmp_conn *c = l->conn;

	rmp_lease_table_del(srv->leases, l);
	if (c)
		conn_del_lease(c, l);
	/* Revoke first: the extent is zeroed and reused only once the old
	 * rkey can no longer reach it. */
	if (rmp_keys_revoke(srv, c, l) == 0)
		rmp_service_release_extent(srv, l);
	/* else the LOCAL_INV completion releases it */
}

bool rmp_service_expired(const struct rmp_server *srv, uint64_t id,
			 bool secret_known, uint64_t secret)
{
	/* Linear, but only on the rare miss path of a late request. */
	for (uint32_t i = 0; i < RMP_EXPIRED_RING; i++)
		if (srv->expired[i].id == id && id != 0 &&
		    (!secret_known || srv->expired[i].secret == secret))
			return true;
	return false;
}

/* new_lease_ids -- random id (unique in the table) and secret. */
static int new_lease_ids(struct rmp_server *srv, struct rmp_lease *l)
{
	int ret;

	do {
		ret = rmp_random64(&l->id);
		if (ret)
			return ret;
	} while (l->id == 0 || rmp_lease_table_find(srv->leases, l->id));
	return rmp_random64(&l->secret);
}

static int do_alloc(struct rmp_conn *c, const struct rmp_alloc_req *r,
		    struct rmp_msg *rep)
{
	struct rmp_server *srv = c->srv;
	uint64_t align = r->alignment ? r->alignment : srv->cfg.lease.alignment;
	uint64_t max = srv->cfg.lease.max_lease ? srv->cfg.lease.max_lease :
		       srv->pool->size;
	uint64_t ttl;
	struct rmp_lease *l;
	int ret;

	if (srv->draining)
		return -ESHUTDOWN;
	if (r->length == 0 || (align & (align - 1)) || r->access == 0 ||
	    (r->access & ~RMP_ACC_ALL) || (r->flags & ~RMP_LEASE_F_ALL))
		return -EINVAL;
	if (r->length > max)
		return -EFBIG;
	ret = ttl_ms(srv, r->ttl_s, &ttl);
	if (ret)
		return ret;
	ret = quota_check(srv, c, r->length);
	if (ret)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	ret = rmp_pool_get(srv->pool, r->length, RMP_MAX(align, 64),
			   &l->offset, &l->length);
	if (ret)
		goto err_free;
	/* Rounding may push a lease over the byte quota. */
	ret = quota_check(srv, c, l->length);
	if (ret)
		goto err_put;
	l->access = r->access;
	l->flags = r->flags;
	l->ttl_ms = ttl;
	l->deadline_ms = rmp_now_ms() + ttl;
	rmp_strlcpy(l->owner, c->name, sizeof(l->owner));
	ret = new_lease_ids(srv, l);
	if (ret)
		goto err_put;
	ret = rmp_keys_grant(srv, c, l);
	if (ret)
		goto err_put;
	ret = rmp_lease_table_add(srv->leases, l);
	if (ret)
		goto err_drop;
	conn_add_lease(c, l);
	rmp_server_schedule_expiry(srv);
	rep->hdr.status = 0;
	describe(srv, l, &rep->u.lease);
	log_debug("client #%" PRIu64 " (%s): lease %016" PRIx64 " %" PRIu64
		  " bytes at %" PRIu64 " rkey %#x ttl %" PRIu64 " ms",
		  c->serial, c->name, l->id, l->length, l->offset, l->rkey,
		  ttl);
	return 0;

err_drop:
	rmp_keys_drop(srv, l);
err_put:
	rmp_pool_put(srv->pool, l->offset, l->length);
err_free:
	free(l);
	return ret;
}

/* owned_lease -- the lease id if it exists and c owns it. */
static int owned_lease(struct rmp_conn *c, uint64_t id, struct rmp_lease **out)
{
	struct rmp_lease *l = rmp_lease_table_find(c->srv->leases, id);

	if (!l)
		return rmp_service_expired(c->srv, id, false, 0) ?
		       -EKEYEXPIRED : -ENOENT;
	if (l->conn != c)
		return -EPERM;
	*out = l;
	return 0;
}

static int do_renew(struct rmp_conn *c, const struct rmp_renew_req *r,
		    struct rmp_msg *rep)
{
	struct rmp_server *srv = c->srv;
	struct rmp_lease *l;
	uint64_t ttl;
	int ret;

	ret = owned_lease(c, r->id, &l);
	if (ret)
		return ret;
	ret = ttl_ms(srv, r->ttl_s, &ttl);
	if (ret)
		return ret;
	l->ttl_ms = ttl;
	rmp_lease_table_set_deadline(srv->leases, l, rmp_now_ms() + ttl);
	rmp_server_schedule_expiry(srv);
	rep->u.renew_rep.ttl_ms = ttl;
	return 0;
}

static int do_free(struct rmp_conn *c, const struct rmp_free_req *r)
{
	struct rmp_lease *l;
	int ret = owned_lease(c, r->id, &l);

	if (ret)
		return ret;
	rmp_service_end_lease(c->srv, l, "freed by its owner");
	rmp_server_schedule_expiry(c->srv);
	return 0;
}

static int do_attach(struct rmp_conn *c, const struct rmp_attach_req *r,
		     struct rmp_msg *rep)
{
	struct rmp_server *srv = c->srv;
	struct rmp_lease *l = rmp_lease_table_find(srv->leases, r->id);
	int ret;

	/* A wrong secret looks exactly like a missing lease. */
	if (!l)
		return rmp_service_expired(srv, r->id, true, r->secret) ?
		       -EKEYEXPIRED : -ENOENT;
	if (l->secret != r->secret)
		return -ENOENT;
	if (l->deadline_ms <= rmp_now_ms())
		return -EKEYEXPIRED;
	if (l->conn == c) {
		describe(srv, l, &rep->u.lease);
		return 0;
	}
	ret = quota_check(srv, c, l->length);
	if (ret)
		return ret;
	/* Take it over from a previous connection, if one still has it:
	 * the old holder's key stops working. */
	if (l->conn) {
		struct rmp_conn *old = l->conn;

		conn_del_lease(old, l);
		if (srv->keys_mode != RMP_KEYS_POOL)
			rmp_keys_drop(srv, l);
	}
	ret = rmp_keys_grant(srv, c, l);
	if (ret)
		return ret;
	conn_add_lease(c, l);
	rmp_strlcpy(l->owner, c->name, sizeof(l->owner));
	describe(srv, l, &rep->u.lease);
	log_debug("client #%" PRIu64 " (%s): attached lease %016" PRIx64,
		  c->serial, c->name, l->id);
	return 0;
}

static void do_stat(struct rmp_conn *c, struct rmp_stat_rep *st)
{
	struct rmp_server *srv = c->srv;
	struct rmp_pool_stats ps;

	rmp_pool_stats(srv->pool, &ps);
	memset(st, 0, sizeof(*st));
	st->pool_bytes = ps.size;
	st->free_bytes = ps.free_bytes;
	st->largest_free = ps.largest_free;
	st->leases = rmp_lease_table_count(srv->leases);
	st->client_bytes = c->bytes;
	st->client_leases = c->nleases;
	st->quota_bytes = srv->cfg.quota.bytes_per_client;
	st->quota_leases = srv->cfg.quota.leases_per_client;
	st->hugepage_size = srv->pool->page_size;
	st->ttl_min_s = (uint32_t)(srv->cfg.lease.ttl_min_ms / 1000);
	st->ttl_max_s = (uint32_t)RMP_MIN(srv->cfg.lease.ttl_max_ms / 1000,
					  UINT32_MAX);
	st->ttl_default_s = (uint32_t)(srv->cfg.lease.ttl_default_ms / 1000);
	st->numa_node = srv->pool->node;
	st->keys_mode = srv->keys_mode;
}

/* bad_message -- count garbage; reply when the header allows it. */
static void bad_message(struct rmp_conn *c, struct rmp_msg *m, int err)
{
	c->bad_msgs++;
	log_notice("client #%" PRIu64 " (%s): bad message (%s), %u so far",
		   c->serial, c->name, strerror(-err), c->bad_msgs);
	if (c->bad_msgs >= MAX_BAD_MSGS) {
		rmp_conn_close(c, "too many bad messages");
		return;
	}
	/* A header that decoded up to the version carries a req_id and an
	 * opcode to answer with; anything shorter gets req_id 0. */
	m->hdr.flags = RMP_MSG_F_REPLY;
	m->hdr.status = err;
	if (m->hdr.opcode == 0 || m->hdr.opcode > RMP_OP_MAX)
		m->hdr.opcode = 0;
	err = rmp_conn_send_reply(c, m);
	if (err == -EAGAIN)
		rmp_conn_close(c, "requests beyond its credits");
	else if (err && err != -ENOTCONN)
		log_warn("client #%" PRIu64 " (%s): error reply: %s", c->serial,
			 c->name, strerror(-err));
}

void rmp_service_on_recv(struct rmp_conn *c, const uint8_t *buf, size_t len)
{
	struct rmp_msg req, rep;
	int ret;

	ret = rmp_msg_decode(buf, len, &req);
	if (ret == 0 && (req.hdr.flags & RMP_MSG_F_REPLY))
		ret = -EBADMSG;
	if (ret) {
		bad_message(c, &req, ret);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	rep.hdr.opcode = req.hdr.opcode;
	rep.hdr.req_id = req.hdr.req_id;
	switch (req.hdr.opcode) {
	case RMP_OP_ALLOC:
		ret = do_alloc(c, &req.u.alloc, &rep);
		break;
	case RMP_OP_RENEW:
		ret = do_renew(c, &req.u.renew, &rep);
		break;
	case RMP_OP_FREE:
		ret = do_free(c, &req.u.free);
		break;
	case RMP_OP_ATTACH:
		ret = do_attach(c, &req.u.attach, &rep);
		break;
	case RMP_OP_STAT:
		do_stat(c, &rep.u.stat);
		ret = 0;
		break;
	default:
		ret = -EOPNOTSUPP; /* the decoder already refuses these */
		break;
	}
	if (ret && ret != -ENOENT && ret != -EKEYEXPIRED)
		log_debug("client #%" PRIu64 " (%s): %s: %s", c->serial,
			  c->name, rmp_opcode_name(req.hdr.opcode),
			  strerror(-ret));
	if (ret == -EPERM)
		c->bad_msgs++; /* reaching for another client's lease */
	rep.hdr.status = ret;
	ret = rmp_conn_send_reply(c, &rep);
	if (ret == -EAGAIN)
		rmp_conn_close(c, "requests beyond its credits");
	else if (ret && ret != -ENOTCONN)
		log_warn("client #%" PRIu64 " (%s): reply: %s", c->serial,
			 c->name, strerror(-ret));
}

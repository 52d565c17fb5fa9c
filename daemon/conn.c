/* SPDX-License-Identifier: MIT */
/* conn.c -- client connections: QP, receive and reply paths, close. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "conn.h"
#include "conn_int.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "network.h"
#include "tenant.h"
#include "util.h"

/* A client that sends this many bad messages is disconnected. */
#define MAX_BAD_MSGS 8
#define conn_of_holder(h) \
	((struct rmp_conn *)((char *)(h) - offsetof(struct rmp_conn, holder)))

const char *rmp_conn_state_name(enum rmp_conn_state s)
{
	static const char *const names[] = {
		[RMP_CONN_ACCEPTING] = "accepting",
		[RMP_CONN_ESTABLISHED] = "established",
		[RMP_CONN_CLOSING] = "closing",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void rmp_conns_init(struct rmp_conns *s, struct rmp_device *const *devs,
		    struct rmp_pool *const *pools, unsigned ndevs,
		    struct rmp_lifecycle *lc, struct rmp_guard *guard,
		    struct rmp_tenants *tenants, const struct rmp_config *cfg,
		    enum rmp_keys_mode keys_mode)
{
	memset(s, 0, sizeof(*s));
	s->ndevs = RMP_MIN(ndevs, RMP_DEVICES_MAX);
	for (unsigned i = 0; i < s->ndevs; i++) {
		s->devs[i] = devs[i];
		s->req.pools[i] = pools[i];
	}
	s->req.npools = s->ndevs;
	s->lc = lc;
	s->guard = guard;
	s->cfg = cfg;
	s->keys_mode = keys_mode;
	s->req.lc = lc;
	s->req.tenants = tenants;
	s->req.cfg = cfg;
	s->req.keys_mode = keys_mode;
	TAILQ_INIT(&s->list);
	rmp_lifecycle_on_fence(lc, cn_fence_done, s);
}

/* drop_deferred -- c answers nothing more: forget its held replies. */
static void drop_deferred(struct rmp_conn *c)
{
	struct rmp_deferred *d;

	while ((d = TAILQ_FIRST(&c->deferred))) {
		TAILQ_REMOVE(&c->deferred, d, link);
		free(d);
	}
	c->ndeferred = 0;
}

/* maybe_free -- free c once it is closing and nothing of it is due. */
void cn_maybe_free(struct rmp_conn *c)
{
	struct rmp_conns *s = c->set;

	if (c->state != RMP_CONN_CLOSING || c->hold || c->replies_due ||
	    c->recvs_due || !rmp_holder_idle(&c->holder) || c->probe_out)
		return;
	drop_deferred(c);
	rmp_holder_drop_windows(&c->holder);
	if (c->qp && ibv_destroy_qp(c->qp))
		log_err("%s: ibv_destroy_qp: %s", c->holder.label,
			strerror(errno));
	if (c->send_mr)
		ibv_dereg_mr(c->send_mr);
	if (c->recv_mr)
		ibv_dereg_mr(c->recv_mr);
	/* Every lease MR in it was deregistered when its key settled. */
	if (c->own_pd && c->pd && ibv_dealloc_pd(c->pd))
		log_err("%s: ibv_dealloc_pd: %s", c->holder.label,
			strerror(errno));
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->counted == RMP_CONN_COUNTS_SPARE)
		cn_count_as(c, RMP_CONN_COUNTS_NOWHERE);
	TAILQ_REMOVE(&s->list, c, link);
	s->count--;
	s->counters.closed++;
	free(c->replies);
	free(c->send_mem);
	free(c->rx);
	free(c->recv_mem);
	free(c);
}

/* log_peer -- rmp_conns_log_peer, and audit lines of a failure (their
 * own budget: rmp_guard_may_log). */
static void log_peer(struct rmp_conns *s, const char *ip, int level,
		     bool audit, const char *fmt, va_list ap)
{
	char block[RMP_PEER_BLOCK_LEN], line[512];
	unsigned suppressed;

	if (level > rmp_log_level())
		return;
	if (!rmp_guard_may_log(s->guard, ip, rmp_now_ms(), audit,
			       &suppressed)) {
		s->counters.log_suppressed++;
		return;
	}
	if (suppressed) {
		rmp_peer_block(ip, block, sizeof(block));
		rmp_log(LOG_WARNING, "%u more line(s) about %s in %u s were "
			"not logged (at most %u per %u s, audit lines apart)",
			suppressed, block, RMP_GUARD_LOG_WINDOW_MS / 1000,
			RMP_GUARD_LOG_BURST, RMP_GUARD_LOG_WINDOW_MS / 1000);
	}
	vsnprintf(line, sizeof(line), fmt, ap);
	rmp_log(level, "%s", line);
}

void rmp_conns_log_peer(struct rmp_conns *s, const char *ip, int level,
			const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_peer(s, ip, level, false, fmt, ap);
	va_end(ap);
}

void rmp_conns_audit_peer(struct rmp_conns *s, const char *ip,
			  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_peer(s, ip, LOG_NOTICE, true, fmt, ap);
	va_end(ap);
}

/*
 * count_as -- c counts against `to` from now on: the one place where a
 * tenant's pending and connections and the server's unauthenticated
 * slots and spares change. Accept counts it pending, a proof that holds
 * proven (admit_proven), the close nowhere, or spare when it was still
 * pending (until its free).
 */
void cn_count_as(struct rmp_conn *c, enum rmp_conn_counted to)
{
	struct rmp_tenant *t = c->auth.tenant;

	switch (c->counted) {
	case RMP_CONN_COUNTS_PENDING:
		t->pending--;
		c->set->unauthenticated--;
		break;
	case RMP_CONN_COUNTS_PROVEN:
		t->connections--;
		break;
	case RMP_CONN_COUNTS_SPARE:
		c->set->spare--;
		break;
	case RMP_CONN_COUNTS_NOWHERE:
		break;
	}
	switch (to) {
	case RMP_CONN_COUNTS_PENDING:
		t->pending++;
		c->set->unauthenticated++;
		break;
	case RMP_CONN_COUNTS_PROVEN:
		t->connections++;
		break;
	case RMP_CONN_COUNTS_SPARE:
		c->set->spare++;
		break;
	case RMP_CONN_COUNTS_NOWHERE:
		break;
	}
	c->counted = to;
}

unsigned rmp_conns_count_peer(const struct rmp_conns *s, const char *ip)
{
	char block[RMP_PEER_BLOCK_LEN];
	const struct rmp_conn *c;
	unsigned n = 0;

	rmp_peer_block(ip, block, sizeof(block));
	/* Linear in the clients (max_clients): only on a connect. */
	TAILQ_FOREACH(c, &s->list, link)
		if (c->state != RMP_CONN_CLOSING && c->holder.tenant &&
		    !strcmp(c->peer_block, block))
			n++;
	return n;
}

/* unproven -- c is open and still to prove its tenant: it holds a
 * pre-auth slot (count_as keeps that). */
bool cn_unproven(const struct rmp_conn *c)
{
	return c->counted == RMP_CONN_COUNTS_PENDING;
}

/* A block's failed proofs, whatever tenant names they named, cool the
 * whole block down past this many times auth_failures_per_minute: a
 * peer cannot fail without end by naming a new tenant each time. (A
 * name that proved its key there lately is spared: rmp_guard_proven.) */
#define BLOCK_AUTH_FAILURES_FACTOR 4u

void rmp_conns_note_failure(struct rmp_conns *s, const char *ip,
			    const char *tenant, const char *label,
			    const char *what, unsigned max_per_minute)
{
	const struct rmp_config *cfg = s->cfg;
	uint64_t now = rmp_now_ms(), cool = cfg->server.access_cooldown_ms;
	char block[RMP_PEER_BLOCK_LEN], subject[RMP_PEER_BLOCK_LEN + 48];
	bool cooldown, block_cooldown = false;
	unsigned n;

	rmp_peer_block(ip, block, sizeof(block));
	if (tenant)
		snprintf(subject, sizeof(subject), "tenant %s from %s",
			 tenant[0] ? tenant : "anonymous", block);
	else
		rmp_strlcpy(subject, block, sizeof(subject));
	n = rmp_guard_note(s->guard, ip, tenant, now, max_per_minute, cool,
			   &cooldown);
	if (tenant)
		rmp_guard_note(s->guard, ip, RMP_GUARD_ANY_NAME, now,
			       max_per_minute * BLOCK_AUTH_FAILURES_FACTOR,
			       cool, &block_cooldown);
	rmp_conns_log_peer(s, ip, LOG_WARNING, "%s: %s (%u errors of %s "
			   "within a minute)", label, what, n, subject);
	if (cooldown && tenant)
		log_warn("refusing connections from %s that name tenant %s for "
			 "%" PRIu64 " s: more than %u failed authentications "
			 "within a minute", block,
			 tenant[0] ? tenant : "anonymous", cool / 1000,
			 max_per_minute);
	else if (cooldown)
		log_warn("refusing connections from %s for %" PRIu64 " s: "
			 "more than %u access or connect errors within a "
			 "minute", block, cool / 1000, max_per_minute);
	if (block_cooldown)
		log_warn("refusing connections from %s for %" PRIu64 " s: "
			 "more than %u failed authentications within a minute, "
			 "whatever tenants they named (but for tenants that "
			 "proved their key from there within the hour)", block,
			 cool / 1000,
			 max_per_minute * BLOCK_AUTH_FAILURES_FACTOR);
}

/* note_access_error -- c broke the rules of remote access: count it. */
static void note_access_error(struct rmp_conn *c, const char *what)
{
	char msg[160];

	if (c->access_error_noted)
		return;
	c->access_error_noted = true;
	c->errors++;
	c->set->counters.access_errors++;
	snprintf(msg, sizeof(msg), "access error: %s", what);
	rmp_conns_note_failure(c->set, c->peer_ip, NULL, c->holder.label, msg,
			       c->set->cfg->server.access_errors_per_minute);
}

/*
 * note_remote_error -- the responder refused an access of c's (its QP is
 * in the error state; the device does not say which key). When a key of
 * c was revoked by another's doing (a takeover, a repair's fence, another
 * holder's FREE, an operator's revoke), that key is what its client most
 * likely used: the server's own doing, not an attack. Counted apart and
 * logged at info; not against the address (the guard's cool-down), and
 * c's ephemeral leases get their grace at the close. A client that wants
 * unguarded guesses must get a key revoked for each: a takeover by a
 * second connection of its tenant per guess, each in the audit log.
 */
static void note_remote_error(struct rmp_conn *c, const char *what)
{
	if (!c->holder.revoked_by_others) {
		note_access_error(c, what);
		return;
	}
	if (c->access_error_noted)
		return;
	c->access_error_noted = true;
	c->revoked_key_error = true;
	c->set->counters.revoked_key_errors++;
	rmp_conns_log_peer(c->set, c->peer_ip, LOG_INFO, "%s: access error "
			   "(%s) after %u key(s) of it were revoked by others: "
			   "not counted against %s", c->holder.label, what,
			   c->holder.revoked_by_others, c->peer_block);
}

/*
 * qp_failed_remotely -- is c's QP in the error state although nothing
 * of ours failed it? Then a request of the client was refused by the
 * responder (an rkey, bounds or rights violation): that is how rxe
 * reports it, without an async event.
 */
bool cn_qp_failed_remotely(struct rmp_conn *c)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (!c->qp || c->local_failure)
		return false;
	if (ibv_query_qp(c->qp, &attr, IBV_QP_STATE, &init))
		return false;
	return attr.qp_state == IBV_QPS_ERR;
}

void rmp_conn_close(struct rmp_conn *c, const char *why)
{
	bool unproven = cn_unproven(c);

	if (c->state == RMP_CONN_CLOSING)
		return;
	if (cn_qp_failed_remotely(c))
		note_remote_error(c, "its queue pair had failed on the server "
				  "side (a request it sent was refused)");
	/* One that never proved a tenant may be one of a flood: its lines
	 * go through the peer's rate limit. */
	if (unproven)
		rmp_conns_log_peer(c->set, c->peer_ip, LOG_INFO,
				   "%s disconnected: %s", c->holder.label, why);
	else
		log_info("%s disconnected: %s", c->holder.label, why);
	c->state = RMP_CONN_CLOSING;
	/* One that never proved a tenant leaves max_clients at once: a new
	 * one may take its place while its completions flush. */
	cn_count_as(c, unproven ? RMP_CONN_COUNTS_SPARE :
			RMP_CONN_COUNTS_NOWHERE);
	c->local_failure = true;
	c->hold++;
	/* Nothing runs on the QP from here on; what is posted flushes. */
	rmp_holder_kill(&c->holder);
	rmp_lifecycle_detach(c->set->lc, &c->holder, c->revoked_key_error);
	drop_deferred(c); /* no fence names c any more */
	/* It no longer counts as the tenant's: a reload may free a removed
	 * tenant from now on, while c waits for its completions. */
	c->holder.tenant = NULL;
	c->auth.tenant = NULL;
	if (c->id && rdma_disconnect(c->id) && errno != EINVAL)
		log_debug("%s: rdma_disconnect: %s", c->holder.label,
			  strerror(errno));
	c->hold--;
	cn_maybe_free(c);
}

/* cn_holder_failed -- the lifecycle gave up on c's QP. */
void cn_holder_failed(struct rmp_holder *h, const char *why)
{
	struct rmp_conn *c = conn_of_holder(h);

	c->local_failure = true;
	rmp_conn_close(c, why);
}

void rmp_conn_established(struct rmp_conn *c)
{
	if (c->state != RMP_CONN_ACCEPTING)
		return;
	c->state = RMP_CONN_ESTABLISHED;
	c->quiet_since_ms = rmp_now_ms();
	/* Any connect may be one of a flood's: a client is told at info
	 * once it proves a tenant (admit_proven). */
	log_debug("%s connected", c->holder.label);
}

/* ------------------------------------------------------------ replies */

/*
 * post_behind_keys -- post wr (may be NULL) behind the key work requests
 * c's holder held back while c answered a request, in one ibv_post_send:
 * one doorbell. A held request the device did not take completes as
 * flushed, through the path of real completions, so its key is settled.
 */
static int post_behind_keys(struct rmp_conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad, *next;
	struct ibv_wc wc;
	int ret;

	ret = rmp_holder_post(&c->holder, wr, &bad);
	if (!ret)
		return 0;
	for (; bad; bad = next) {
		next = bad->next;
		if (bad == wr)
			continue; /* the reply: the caller's */
		wc = (struct ibv_wc){ .wr_id = bad->wr_id,
				      .status = IBV_WC_WR_FLUSH_ERR,
				      .qp_num = c->qp->qp_num };
		rmp_conns_on_wc(c->set, &wc);
	}
	return ret;
}

/*
 * send_reply -- encode m into a free slot and post it behind the key work
 * requests of the request it answers. -EAGAIN: no free slot.
 */
static int send_reply(struct rmp_conn *c, const struct rmp_msg *m)
{
	struct rmp_reply_slot *s = NULL;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 };
	int len = -ENOTCONN, ret;

	if (c->state == RMP_CONN_ESTABLISHED) {
		for (unsigned i = 0; i < c->nreply && !s; i++)
			if (!c->replies[i].busy)
				s = &c->replies[i];
		len = s ? rmp_msg_encode(s->buf, RMP_MSG_MAX, m) : -EAGAIN;
	}
	if (len < 0) {
		/* No reply: the held key requests go on their own. */
		ret = post_behind_keys(c, NULL);
		return ret ? ret : len;
	}
	sge.addr = (uintptr_t)s->buf;
	sge.length = (uint32_t)len;
	sge.lkey = c->send_mr->lkey;
	wr.wr_id = rmp_wr_id(s, RMP_WR_REPLY);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = post_behind_keys(c, &wr);
	if (ret)
		return ret;
	s->busy = true;
	c->replies_due++;
	return 0;
}

static void on_reply_done(struct rmp_reply_slot *s, const struct ibv_wc *wc)
{
	struct rmp_conn *c = s->conn;

	s->busy = false;
	c->replies_due--;
	if (wc->status == IBV_WC_SUCCESS)
		c->heard++; /* the peer acknowledged it */
	/* Held: the closes below must not free c under us. */
	c->hold++;
	if (c->close_after_reply && c->state != RMP_CONN_CLOSING) {
		c->local_failure = true;
		rmp_conn_close(c, c->close_after_reply);
	}
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR) {
		/* e.g. RNR retries exhausted: it stopped posting receives. */
		c->local_failure = true;
		log_warn("%s: reply not delivered: %s", c->holder.label,
			 ibv_wc_status_str(wc->status));
		rmp_conn_close(c, "a reply could not be delivered");
	}
	c->hold--;
	cn_maybe_free(c);
}

/* ----------------------------------------------------------- liveness */

/*
 * probe -- a zero-length RDMA WRITE to c's peer. Its NIC acknowledges it
 * without the client's CPU and without checking an rkey (none is needed
 * for zero bytes, IBA C9-88); if the peer's host is gone, the QP's retries
 * run out and the completion says so.
 */
void cn_probe(struct rmp_conn *c)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	wr.wr_id = rmp_wr_id(c, RMP_WR_PROBE);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret) {
		log_warn("%s: posting a liveness probe: %s", c->holder.label,
			 strerror(ret));
		return;
	}
	c->probe_out = true;
	log_debug("%s: quiet for %" PRIu64 " ms, probed", c->holder.label,
		  rmp_now_ms() - c->quiet_since_ms);
}

static void on_probe_done(struct rmp_conn *c, const struct ibv_wc *wc)
{
	c->probe_out = false;
	c->hold++;
	if (wc->status == IBV_WC_SUCCESS) {
		c->heard++;
	} else if (wc->status != IBV_WC_WR_FLUSH_ERR) {
		/* Our probe failed the QP, not a request of the client. */
		c->local_failure = true;
		c->set->counters.unreachable++;
		log_notice("%s: no answer to a liveness probe (%s): its host "
			   "is down or cannot be reached", c->holder.label,
			   ibv_wc_status_str(wc->status));
		rmp_conn_close(c, "peer unreachable");
	}
	c->hold--;
	cn_maybe_free(c);
}

/* ------------------------------------------------------------ receive */

int cn_post_own_recv(struct rmp_conn *c, struct rmp_rx_buf *rx)
{
	int ret = rmp_rx_post(rx, NULL, c->qp);

	if (ret == 0)
		c->recvs_due++;
	return ret;
}

/* conn_by_qp_num -- the connection of QP number qpn on device dev (QP
 * numbers are per device). */
static struct rmp_conn *conn_by_qp_num(struct rmp_conns *s,
				       const struct rmp_device *dev,
				       uint32_t qpn)
{
	struct rmp_conn *c;

	/* Linear in the clients (max_clients, 64 by default): one compare
	 * each, far below the cost of the request itself. */
	TAILQ_FOREACH(c, &s->list, link)
		if (c->qp && c->qp->qp_num == qpn && c->dev == dev)
			return c;
	return NULL;
}

/*
 * admit_proven -- c proved its tenant: from now on it counts as the
 * tenant's and its address's, unless the tenant's networks do not admit
 * its address or that goes beyond their limits (others proved theirs
 * since c was admitted): then the AUTH is answered -ECONNREFUSED, saying
 * which, and c closed; it never counted. These come after the proof so
 * that only a holder of the key learns them.
 */
static void admit_proven(struct rmp_conn *c, struct rmp_msg *rep)
{
	struct rmp_tenant *t = c->auth.tenant;
	unsigned per_ip = c->set->cfg->server.connections_per_address;
	unsigned detail = RMP_DETAIL_NONE;

	/* (c counts among its address's already: its proof holds.) */
	if (!rmp_networks_allow(t->limits.networks, t->limits.nnetworks,
				rdma_get_peer_addr(c->id)))
		detail = RMP_DETAIL_NETWORK;
	else if (!rmp_tenant_may_connect(t))
		detail = RMP_DETAIL_TENANT_CONNECTIONS;
	else if (per_ip && rmp_conns_count_peer(c->set, c->peer_ip) > per_ip)
		detail = RMP_DETAIL_PEER_CONNECTIONS;
	if (detail) {
		c->holder.tenant = NULL; /* still unproven: never counted */
		rep->hdr.status = -ECONNREFUSED;
		rep->hdr.flags |= RMP_MSG_F_DETAIL(detail);
		rmp_conns_log_peer(c->set, c->peer_ip, LOG_NOTICE,
				   "%s: refused after it authenticated as "
				   "tenant %s: %s", c->holder.label, t->name,
				   rmp_detail_str(detail));
		c->close_after_reply = rmp_detail_str(detail);
		return;
	}
	cn_count_as(c, RMP_CONN_COUNTS_PROVEN);
	/* A block cool-down from others' failures spares it from now on. */
	if (!t->anonymous)
		rmp_guard_proven(c->set->guard, c->peer_ip,
				 c->auth.tenant_name, rmp_now_ms());
	log_info("%s authenticated as tenant %s", c->holder.label, t->name);
}

/*
 * authenticate -- c's first message must prove its tenant's key. On
 * failure the reply says why, the failure is logged and counted against
 * the peer address, and c is closed once the reply is out.
 */
static void authenticate(struct rmp_conn *c, const uint8_t *buf, size_t len,
			 struct rmp_msg *rep)
{
	const char *tenant = c->auth.tenant_name;
	unsigned detail;
	char what[160];

	detail = rmp_request_auth(&c->set->req, &c->holder, &c->auth, buf, len,
				  rep);
	if (detail == RMP_DETAIL_NONE) {
		admit_proven(c, rep);
		return;
	}
	c->auth.tenant->auth_failures++;
	c->set->counters.auth_failures++;
	/* The peer was told "wrong key" for an unknown name too; the log
	 * says which. A failure needs no key: its lines go through the
	 * block's rate limit. */
	rmp_conns_audit_peer(c->set, c->peer_ip, "audit: auth-fail tenant=%s "
			     "client=%s peer=%s reason=%s",
			     tenant[0] ? tenant : "-", c->name, c->peer,
			     detail == RMP_DETAIL_NOT_AUTHED ?
			     "request-before-auth" :
			     c->auth.tenant->stranger ? "unknown-tenant" :
			     detail == RMP_DETAIL_REPLAYED ? "replayed-proof" :
			     "wrong-key");
	snprintf(what, sizeof(what), "authentication as tenant %s failed: %s",
		 tenant[0] ? tenant : "anonymous",
		 c->auth.tenant->stranger && detail != RMP_DETAIL_NOT_AUTHED ?
		 "no such tenant (the client was told: wrong key)" :
		 rmp_detail_str(detail));
	rmp_conns_note_failure(c->set, c->peer_ip, tenant, c->holder.label,
			       what,
			       c->set->cfg->server.auth_failures_per_minute);
	c->close_after_reply = "authentication failed";
}

/* sent -- the reply rep to a request that came at start went out (ret
 * 0) or not: count it, and close c when it could not be posted. */
static void sent(struct rmp_conn *c, const struct rmp_msg *rep, int ret,
		 uint64_t start)
{
	if (ret)
		rmp_request_unanswered(&c->set->req, &c->holder, rep);
	rmp_latency_add(&c->set->latency, rep->hdr.opcode,
			rmp_now_ns() - start);
	if (ret && c->close_after_reply) {
		rmp_conn_close(c, c->close_after_reply);
		return;
	}
	if (ret == -EAGAIN) {
		rmp_conn_close(c, "requests beyond its credits");
	} else if (ret && ret != -ENOTCONN) {
		log_warn("%s: reply: %s", c->holder.label, strerror(-ret));
		rmp_conn_close(c, "a reply could not be posted");
	}
}

/*
 * defer -- keep rep, the reply to an exclusive ATTACH, until its fence is
 * decided (cn_fence_done); the key work of the request (the taker's
 * bind) goes out now.
 */
static void defer(struct rmp_conn *c, const struct rmp_msg *rep,
		  uint64_t fence, uint64_t start)
{
	struct rmp_deferred *d = NULL;
	int ret;

	if (c->ndeferred < c->set->cfg->server.credits)
		d = malloc(sizeof(*d));
	ret = post_behind_keys(c, NULL);
	if (!d || ret) {
		free(d);
		rmp_conn_close(c, ret ? "its key work could not be posted" :
			       "requests beyond its credits");
		return;
	}
	d->fence = fence;
	d->start_ns = start;
	d->rep = *rep;
	TAILQ_INSERT_TAIL(&c->deferred, d, link);
	c->ndeferred++;
}

/*
 * cn_fence_done -- the lifecycle's fence upcall (lifecycle.h says why it
 * is one): the exclusive ATTACH of h's connection that waited for fence
 * done->fence is answered now.
 */
void cn_fence_done(void *ctx, struct rmp_holder *h,
		   const struct rmp_fence_done *done)
{
	struct rmp_conn *c = conn_of_holder(h);
	struct rmp_deferred *d;

	(void)ctx;
	TAILQ_FOREACH(d, &c->deferred, link)
		if (d->fence == done->fence)
			break;
	if (!d) {
		log_err("%s: no reply waits for fence %" PRIu64,
			c->holder.label, done->fence);
		return;
	}
	TAILQ_REMOVE(&c->deferred, d, link);
	c->ndeferred--;
	rmp_request_fenced(&d->rep, done);
	if (d->rep.hdr.status)
		c->errors++;
	c->hold++;
	sent(c, &d->rep, send_reply(c, &d->rep), d->start_ns);
	free(d);
	c->hold--;
	cn_maybe_free(c);
}

/* handle_message -- answer one request of c. */
static void handle_message(struct rmp_conn *c, const uint8_t *buf, size_t len)
{
	uint64_t start = rmp_now_ns(), fence = 0;
	struct rmp_msg rep;
	bool bad;

	if (c->close_after_reply)
		return; /* going: nothing more is answered */
	c->requests++;
	/* The key work requests of this request go out with its reply. */
	rmp_holder_hold(&c->holder);
	if (!c->holder.tenant) {
		authenticate(c, buf, len, &rep);
	} else {
		bad = rmp_request_handle(&c->set->req, &c->holder, buf, len,
					 &rep, &fence);
		if (bad)
			c->set->counters.bad_messages++;
		if (bad && ++c->bad_msgs >= MAX_BAD_MSGS) {
			c->errors++;
			post_behind_keys(c, NULL);
			rmp_conn_close(c, "too many bad messages");
			return;
		}
	}
	if (fence) {
		defer(c, &rep, fence, start);
		return;
	}
	if (rep.hdr.status)
		c->errors++;
	sent(c, &rep, send_reply(c, &rep), start);
}

/*
 * not_a_request -- why a successful receive completion carries no request
 * of c's, or NULL. A client can use up a receive of ours without a plain
 * SEND: an RDMA WRITE with immediate writes nothing into the buffer, which
 * on the shared queue still holds another connection's last request, and
 * a SEND with invalidate makes our NIC invalidate a window of its own
 * behind the lease table's back. Neither is part of the protocol.
 */
static const char *not_a_request(const struct rmp_device *dev,
				 const struct ibv_wc *wc)
{
	if (wc->opcode != IBV_WC_RECV)
		return "it sent an RDMA WRITE with immediate data";
	if (wc->wc_flags & dev->recv_inv_flags)
		return "it sent a SEND with invalidate";
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		return "it sent a SEND with immediate data";
	return NULL;
}

/* on_recv -- one receive completion, shared queue or own: the one path. */
static void on_recv(struct rmp_conns *s, struct rmp_rx_buf *rx,
		    const struct ibv_wc *wc)
{
	struct rmp_conn *c = rx->conn ? rx->conn :
			     conn_by_qp_num(s, rx->dev, wc->qp_num);
	const char *bad = NULL;
	int ret;

	if (c)
		c->hold++;
	if (wc->status == IBV_WC_SUCCESS)
		bad = not_a_request(rx->dev, wc);
	if (bad && c) {
		rmp_conns_log_peer(s, c->peer_ip, LOG_WARNING, "%s: %s (not "
				   "part of the protocol)", c->holder.label,
				   bad);
		note_access_error(c, bad + strlen("it "));
		rmp_conn_close(c, "it broke the protocol");
	} else if (bad) {
		rmp_conns_log_peer(s, "unknown client", LOG_WARNING, "unknown "
				   "client: %s (not part of the protocol)",
				   bad);
	} else if (wc->status == IBV_WC_SUCCESS && c) {
		/* A message can overtake the ESTABLISHED event: it proves
		 * the connection is up (the QP is in RTS already). */
		rmp_conn_established(c);
		c->heard++;
		/* Its log lines (the audit) go out after the reply. */
		rmp_log_hold();
		if (c->state == RMP_CONN_ESTABLISHED)
			handle_message(c, rx->buf, wc->byte_len);
		rmp_log_release();
	} else if (wc->status != IBV_WC_SUCCESS &&
		   wc->status != IBV_WC_WR_FLUSH_ERR) {
		log_warn("%s: receive failed: %s", c ? c->holder.label :
			 "unknown client", ibv_wc_status_str(wc->status));
	}
	/* A request's bytes (a lease's secret among them) do not outlive it,
	 * and no later receive can find them. */
	rmp_wipe(rx->buf, RMP_MSG_MAX);
	if (!rx->conn) {
		ret = rmp_rx_post(rx, rx->dev->srq, NULL);
		if (ret)
			log_err("re-posting a shared receive buffer: %s",
				strerror(-ret));
	} else {
		c->recvs_due--;
		if (c->state != RMP_CONN_CLOSING &&
		    wc->status == IBV_WC_SUCCESS && cn_post_own_recv(c, rx))
			rmp_conn_close(c, "cannot re-post a receive buffer");
	}
	if (c) {
		c->hold--;
		cn_maybe_free(c);
	}
}

void rmp_conns_on_wc(struct rmp_conns *s, const struct ibv_wc *wc)
{
	enum rmp_wr_tag tag = rmp_wr_tag(wc->wr_id);
	void *p = rmp_wr_ptr(wc->wr_id);
	struct rmp_conn *c;

	switch (tag) {
	case RMP_WR_REPLY:
		on_reply_done(p, wc);
		break;
	case RMP_WR_RECV:
		on_recv(s, p, wc);
		break;
	case RMP_WR_PROBE:
		on_probe_done(p, wc);
		break;
	case RMP_WR_BIND:
	case RMP_WR_INV:
		/* The key may be freed by the lifecycle; its holder (c)
		 * stays until its last key completion is counted. */
		c = conn_of_holder(((struct rmp_key *)p)->holder);
		c->hold++;
		rmp_lifecycle_on_key_wc(s->lc, p, tag, wc);
		c->hold--;
		cn_maybe_free(c);
		break;
	}
}

void rmp_conns_on_qp_event(struct rmp_conns *s,
			   const struct ibv_async_event *ev)
{
	struct rmp_conn *c = ev->element.qp ? ev->element.qp->qp_context :
			     NULL;
	const char *what = ibv_event_type_str(ev->event_type);

	(void)s;
	if (!c)
		return;
	switch (ev->event_type) {
	case IBV_EVENT_QP_ACCESS_ERR:
		note_remote_error(c, what);
		rmp_conn_close(c, what);
		break;
	case IBV_EVENT_QP_REQ_ERR:
		note_access_error(c, what);
		rmp_conn_close(c, what);
		break;
	case IBV_EVENT_QP_FATAL:
		c->local_failure = true;
		rmp_conn_close(c, what);
		break;
	case IBV_EVENT_COMM_EST:
		rmp_conn_established(c);
		break;
	default:
		log_debug("%s: %s", c->holder.label, what);
		break;
	}
}

/* ---------------------------------------------------------- accepting */


/* SPDX-License-Identifier: MIT */
/*
 * conn_sweep.c -- what happens to many connections at once: the
 * once-a-second sweep (failed queue pairs, authentication overdue, proofs
 * a reload voided, liveness probes), a reload's recheck of every proof,
 * and closing or freeing them all at the end.
 */
#include <inttypes.h>
#include <stdbool.h>

#include "conn.h"
#include "conn_int.h"
#include "lifecycle.h"
#include "log.h"
#include "network.h"
#include "tenant.h"
#include "util.h"

/* close_where -- close every connection for which pred holds; each is
 * held while it is closed, so the walk survives frees. */
static void close_where(struct rmp_conns *s, bool (*pred)(struct rmp_conn *c),
			const char *why)
{
	struct rmp_conn *c, *next;

	for (c = TAILQ_FIRST(&s->list); c; c = next) {
		c->hold++;
		if (!pred || pred(c))
			rmp_conn_close(c, why);
		next = TAILQ_NEXT(c, link);
		c->hold--;
		cn_maybe_free(c);
	}
}

/* void_reason -- why a reload voided c's proof, or NULL if it did not. */
static const char *void_reason(struct rmp_conn *c)
{
	const struct rmp_tenant *t = c->holder.tenant;

	if (!t)
		return NULL; /* still to prove one: admit_proven checks */
	if (!rmp_holder_current(&c->holder))
		return t->anonymous ? "anonymous access was turned off" :
		       !t->configured ? "its tenant was removed" :
		       "its tenant's key changed";
	if (!rmp_networks_allow(t->limits.networks, t->limits.nnetworks,
				rdma_get_peer_addr(c->id)))
		return "its tenant no longer admits its address";
	return NULL;
}

/* cut_due -- c's proof was voided and its grace is over. */
static bool cut_due(struct rmp_conn *c)
{
	return c->state != RMP_CONN_CLOSING && c->cut_at_ms &&
	       c->cut_at_ms <= rmp_now_ms();
}

/* With a probe in flight an error state may be the probe's own failure
 * (an unreachable peer, not a refused request): its completion decides. */
static bool failed_silently(struct rmp_conn *c)
{
	return c->state == RMP_CONN_ESTABLISHED && !c->probe_out &&
	       cn_qp_failed_remotely(c);
}

static bool auth_overdue(struct rmp_conn *c)
{
	return cn_unproven(c) && rmp_now_ms() - c->accepted_ms >=
			      c->set->cfg->server.auth_timeout_ms;
}

/* keep_alive -- probe each connection that has been quiet for keepalive
 * and has no probe out: a live peer's NIC answers. */
static void keep_alive(struct rmp_conns *s)
{
	uint64_t now = rmp_now_ms(), quiet = s->cfg->server.keepalive_ms;
	struct rmp_conn *c;

	TAILQ_FOREACH(c, &s->list, link) {
		if (c->state != RMP_CONN_ESTABLISHED)
			continue;
		if (c->heard != c->heard_at_sweep) {
			c->heard_at_sweep = c->heard;
			c->quiet_since_ms = now;
		} else if (!c->probe_out && now - c->quiet_since_ms >= quiet) {
			cn_probe(c);
		}
	}
}

void rmp_conns_sweep(struct rmp_conns *s)
{
	struct rmp_conn *c;

	close_where(s, failed_silently, "its queue pair failed");
	/* Silence cools nothing down: it cannot keep anybody out (a newer
	 * connection takes the oldest silent one's slot,
	 * rmp_conns_preauth_room), and refusing its address would lock out
	 * the neighbours there that prove their keys. */
	TAILQ_FOREACH(c, &s->list, link)
		if (auth_overdue(c))
			s->counters.auth_timeouts++;
	close_where(s, auth_overdue, "no authentication in time");
	close_where(s, cut_due, "a reload voided its proof of its tenant");
	keep_alive(s);
}

void rmp_conns_recheck_proofs(struct rmp_conns *s)
{
	struct rmp_holder *h;
	struct rmp_conn *c;
	const char *why;
	uint64_t grace;

	TAILQ_FOREACH(c, &s->list, link) {
		h = &c->holder;
		if (c->state == RMP_CONN_CLOSING || c->cut_at_ms ||
		    !(why = void_reason(c)))
			continue;
		/* No request is accepted from now on (rmp_request_handle);
		 * its keys go with the connection. */
		h->tenant_epoch = 0;
		grace = h->tenant->limits.rotate_grace_ms;
		c->cut_at_ms = rmp_now_ms() + grace;
		if (!c->cut_at_ms)
			c->cut_at_ms = 1;
		if (grace)
			log_notice("reload: %s: %s: every request refused; "
				   "closed, its keys with it, in %" PRIu64
				   " ms (rotate_grace)", h->label, why, grace);
		else
			log_notice("reload: %s: %s", h->label, why);
	}
	close_where(s, cut_due, "a reload voided its proof of its tenant");
}

void rmp_conns_close_all(struct rmp_conns *s, const char *why)
{
	close_where(s, NULL, why);
}

void rmp_conns_force_free(struct rmp_conns *s)
{
	struct rmp_conn *c;

	while ((c = TAILQ_FIRST(&s->list))) {
		c->state = RMP_CONN_CLOSING;
		c->hold = c->replies_due = c->recvs_due = 0;
		c->probe_out = false;
		rmp_holder_abandon(&c->holder);
		cn_maybe_free(c);
	}
}

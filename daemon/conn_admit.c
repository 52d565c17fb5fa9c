/* SPDX-License-Identifier: MIT */
/* conn_admit.c -- who gets in: the pre-auth slots, what a
 * connection counts against, failures and their cool-down, the proof. */
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

/* A block's failed proofs, whatever tenant names they named, cool the
 * whole block down past this many times auth_failures_per_minute: a
 * peer cannot fail without end by naming a new tenant each time. */
#define BLOCK_AUTH_FAILURES_FACTOR 4u

/*
 * conn_count_as -- c counts against `to` from now on: the one place where a
 * tenant's pending and connections and the server's unauthenticated
 * slots change. Accept counts it pending, a proof that holds proven
 * (admit_proven), the close nowhere.
 */
void conn_count_as(struct rmp_conn *c, enum rmp_conn_counted to)
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

/* conn_unproven -- c is open and still to prove its tenant. */
bool conn_unproven(const struct rmp_conn *c)
{
	return c->state != RMP_CONN_CLOSING && !c->holder.tenant;
}

void rmp_conns_preauth_room(struct rmp_conns *s, const char *ip)
{
	const struct rmp_config *cfg = s->cfg;
	struct rmp_conn *c, *oldest = NULL, *oldest_here = NULL;
	char block[RMP_PEER_BLOCK_LEN];
	unsigned here = 0;

	rmp_peer_block(ip, block, sizeof(block));
	/* The list is in order of arrival: the first found is the oldest. */
	TAILQ_FOREACH(c, &s->list, link) {
		if (!conn_unproven(c))
			continue;
		if (!oldest)
			oldest = c;
		if (!strcmp(c->peer_block, block) && !here++)
			oldest_here = c;
	}
	if (here >= cfg->server.unauthenticated_per_address)
		c = oldest_here;
	else if (s->unauthenticated >= cfg->server.max_unauthenticated)
		c = oldest;
	else
		return;
	s->counters.preauth_evicted++;
	c->hold++;
	rmp_conn_close(c, "not authenticated yet: its slot went to a newer "
		       "connection");
	c->hold--;
	conn_maybe_free(c);
}

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
		rmp_guard_note(s->guard, ip, NULL, now,
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
			 "whatever tenants they named", block, cool / 1000,
			 max_per_minute * BLOCK_AUTH_FAILURES_FACTOR);
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
		c->holder.tenant = NULL; /* still conn_unproven: never counted */
		rep->hdr.status = -ECONNREFUSED;
		rep->hdr.flags |= RMP_MSG_F_DETAIL(detail);
		rmp_conns_log_peer(c->set, c->peer_ip, LOG_NOTICE,
				   "%s: refused after it authenticated as "
				   "tenant %s: %s", c->holder.label, t->name,
				   rmp_detail_str(detail));
		c->close_after_reply = rmp_detail_str(detail);
		return;
	}
	conn_count_as(c, RMP_CONN_COUNTS_PROVEN);
	log_info("%s authenticated as tenant %s", c->holder.label, t->name);
}

/*
 * conn_authenticate -- c's first message must prove its tenant's key. On
 * failure the reply says why, the failure is logged and counted against
 * the peer address, and c is closed once the reply is out.
 */
void conn_authenticate(struct rmp_conn *c, const uint8_t *buf, size_t len,
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
	 * says which. */
	log_notice("audit: auth-fail tenant=%s client=%s peer=%s reason=%s",
		   tenant[0] ? tenant : "-", c->name, c->peer,
		   detail == RMP_DETAIL_NOT_AUTHED ? "request-before-auth" :
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

/* SPDX-License-Identifier: MIT */
/* lease.c -- lease handles and the control calls on them: alloc, attach, renew, free, stat. */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backoff.h"
#include "chan.h"
#include "ec_lease.h"
#include "error.h"
#include "fault.h"
#include "lease.h"
#include "opts.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"
#include "stripe.h"
#include "token.h"
#include "util.h"

/* The first published sizes of the caller-sized output structs: callers
 * built against 0.1 pass those. */
#define LEASE_INFO_V1_SIZE offsetof(struct rmp_lease_info, holders)
#define POOL_STAT_V1_SIZE offsetof(struct rmp_pool_stat, quarantined_bytes)

void rmp_attach_opts_init(struct rmp_attach_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

void rmp_alloc_opts_init(struct rmp_alloc_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->access = RMP_ACCESS_ALL;
}

static void lease_link(struct rmp_lease *l)
{
	LIST_INSERT_HEAD(&l->c->leases, l, link);
}

static void lease_unlink(struct rmp_lease *l)
{
	if (l->c || l->link.le_prev)
		LIST_REMOVE(l, link);
}

/* ---- mirrored leases ------------------------------------------------- */

/* live_members -- how many members of g are live; *ttl: the least time
 * left of them; *holders: the fewest holders of one (0: none live);
 * per[s]: the live replicas of stripe s. */
static unsigned live_members(const struct rmpc_group *g, uint64_t *ttl,
			     uint32_t *holders, unsigned *per)
{
	uint64_t now = rmp_now_ms();
	unsigned live = 0;

	*ttl = UINT64_MAX;
	*holders = UINT32_MAX;
	for (unsigned i = 0; i < g->n; i++) {
		const struct rmp_lease *m = g->m[i];
		uint64_t age;

		if (!rmpc_member_live(g, i))
			continue;
		age = now - m->stamp_ms;
		per[i / g->replicas]++;
		live++;
		*ttl = RMP_MIN(*ttl, m->ttl_ms > age ? m->ttl_ms - age : 0);
		*holders = RMP_MIN(*holders, m->holders);
	}
	if (!live)
		*holders = 0;
	return live;
}

/* group_info -- rmp_lease_info's replicas_live, ttl_ms and holders of a
 * mirrored or striped lease: the fewest live replicas of a stripe (the
 * time left 0 when a stripe has none). An erasure-coded lease's members
 * are one replica's stripes, yet count as one whole: readable while k
 * are live. */
static void group_info(const struct rmpc_group *g, struct rmp_lease_info *i)
{
	unsigned per[RMPC_STRIPES_MAX] = { 0 };
	unsigned live = live_members(g, &i->ttl_ms, &i->holders, per);

	i->replicas = g->replicas;
	i->stripes = g->stripes;
	i->replicas_live = g->replicas;
	for (unsigned s = 0; s < g->stripes; s++)
		i->replicas_live = RMP_MIN(i->replicas_live, per[s]);
	if (g->ec) {
		i->ec_data = g->ec->lo.k;
		i->ec_parity = g->ec->lo.m;
		i->ec_chunk = g->ec->lo.chunk;
		i->ec_live = live;
		i->ec_decoded = g->ec->decoded;
		i->replicas_live = live >= g->ec->lo.k;
	}
	if (!i->replicas_live)
		i->ttl_ms = 0;
}

/* group_end -- free (or with release false, close) every replica and
 * the handle: the first error of a free, 0 when every one went. */
static int group_end(struct rmp_lease *l, bool release)
{
	struct rmpc_group *g = l->group;
	int first = 0;

	for (unsigned i = 0; i < g->n; i++) {
		int err = 0;

		if (release && rmpc_member_live(g, i))
			err = rmp_lease_free(g->m[i]);
		else
			rmp_lease_close(g->m[i]);
		first = first ? first : err;
	}
	if (g->keeper)
		g->keeper->ending(l, release);
	lease_unlink(l);
	rmpc_ec_free(g->ec);
	free(g->plans);
	free(g->at);
	free(g);
	free(l);
	return first;
}

/*
 * refresh -- the deadline we know has passed, but another process may
 * have renewed the lease (by token): ask the server with an ATTACH of the
 * same access on this connection, which hands back this connection's key
 * unchanged and the time left. 0 when the lease lives on (l updated),
 * -EKEYEXPIRED when it is gone (or this connection's key is), else the
 * error of the question: a lost connection, no reply, a voided proof say
 * nothing about the lease. Posting blindly instead would fail the whole
 * connection at the NIC.
 */
static int refresh(struct rmp_lease *l)
{
	struct rmp_msg m;
	int err;

	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_ATTACH;
	m.u.attach.id = l->id;
	m.u.attach.secret = l->secret;
	m.u.attach.access = l->access;
	m.u.attach.epoch = l->epoch;
	err = rmpc_rpc(l->c, &m);
	if (err == -ENOENT) /* freed, or expired long enough ago */
		return -EKEYEXPIRED;
	if (err)
		return err;
	if (m.u.lease.id != l->id || m.u.lease.rkey != l->rkey ||
	    m.u.lease.ttl_ms == 0)
		return -EKEYEXPIRED;
	l->ttl_ms = m.u.lease.ttl_ms;
	l->stamp_ms = rmp_now_ms();
	l->holders = m.u.lease.holders;
	return 0;
}

static int attach_into(struct rmp_lease *l, uint64_t id, uint64_t secret,
		       uint32_t access, uint32_t flags);

int rmpc_lease_usable(struct rmp_lease *l, bool check_expiry)
{
	struct rmp_client *c = l->c;
	uint64_t age;
	int err;

	if (c->auto_reconnect) {
		/* A lost connection is made again, and a handle of an
		 * earlier one attached again, before the call goes on. */
		err = rmpc_conn_ready(c);
		if (!err && l->gen != c->gen)
			err = attach_into(l, l->id, l->secret, l->access, 0);
		if (err)
			return err;
	}
	if (l->gen != c->gen) {
		rmpc_set_error(c, "lease handle belongs to a closed connection; "
			       "attach the lease again");
		return -ENOTCONN;
	}
	err = rmpc_check_conn(c);
	if (err)
		return err;
	/* The server renews auto-renew leases: no local deadline, and no
	 * clock read (a system call where there is no vDSO clock). */
	if (!check_expiry || !l->ttl_ms ||
	    (l->flags & RMP_LEASE_F_AUTO_RENEW))
		return 0;
	age = rmp_now_ms() - l->stamp_ms;
	if (age < l->ttl_ms)
		return 0;
	err = refresh(l);
	if (err == -EKEYEXPIRED)
		rmpc_set_error(c, "lease %016" PRIx64 " expired %" PRIu64
			       " ms ago", l->id, age - l->ttl_ms);
	return err;
}

/* lease_set -- take a lease description from an ALLOC/ATTACH reply. */
static int lease_set(struct rmp_lease *l, const struct rmp_lease_desc *d)
{
	struct rmp_client *c = l->c;

	if (d->length == 0 || (d->access & ~RMP_ACC_ALL) ||
	    (d->flags & ~RMP_LEASE_F_REPLY_ALL) || d->addr + d->length < d->addr) {
		rmpc_set_error(c, "server sent an invalid lease description");
		return -EPROTO;
	}
	l->gen = c->gen;
	l->id = d->id;
	l->secret = d->secret;
	l->addr = d->addr;
	l->length = d->length;
	l->ttl_ms = d->ttl_ms;
	l->stamp_ms = rmp_now_ms();
	l->rkey = d->rkey;
	l->access = d->access;
	l->flags = d->flags;
	l->holders = d->holders;
	l->server_epoch = d->epoch;
	strcpy(l->host, c->host);
	l->port = c->port;
	return 0;
}

/* free_on_server -- best effort FREE of a lease we cannot hand out. */
static void free_on_server(struct rmp_client *c, uint64_t id, uint64_t secret)
{
	char keep[RMPC_ERRBUF];
	struct rmp_msg m;

	memcpy(keep, c->errbuf, sizeof(keep));
	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_FREE;
	m.u.free.id = id;
	m.u.free.secret = secret;
	rmpc_rpc(c, &m);
	memcpy(c->errbuf, keep, sizeof(keep));
}

/* Waits between ALLOCs the server says its ending leases will make room
 * for: their keys are revoked and their bytes zeroed within tens of ms
 * after a FREE, unless a holder's connection is slow to settle. */
#define RETURNING_FIRST_MS 2
#define RETURNING_MAX_MS 100

/*
 * alloc_rpc -- ALLOC length bytes with o; the reply in *m. A server with
 * no room now but enough in leases still ending (freed a moment ago:
 * RMP_DETAIL_RETURNING) is asked again, after waits that double, for up
 * to the op timeout: a pool that is being given back is not full.
 */
static int alloc_rpc(struct rmp_client *c, uint64_t length,
		     const struct rmp_alloc_opts *o, struct rmp_msg *m)
{
	uint64_t start = rmp_now_ms(), now;
	struct rmpc_backoff b = { 0, 0 };
	struct timespec ts;
	unsigned wait;
	int err;

	for (;;) {
		memset(m, 0, sizeof(*m));
		m->hdr.opcode = RMP_OP_ALLOC;
		m->u.alloc.length = length;
		m->u.alloc.alignment = o->alignment;
		m->u.alloc.ttl_s = o->ttl_s;
		m->u.alloc.access = o->access;
		m->u.alloc.flags = o->flags;
		err = rmpc_rpc(c, m);
		if (!err && b.ms)
			rmpc_clear_error(c); /* no refusal to tell of now */
		if (err != -ENOSPC || c->rpc_detail != RMP_DETAIL_RETURNING)
			return err;
		now = rmp_now_ms();
		wait = rmpc_backoff_fail(&b, RETURNING_FIRST_MS,
					 RETURNING_MAX_MS, now);
		if (now + wait - start > (uint64_t)c->opts.op_timeout_ms)
			return err; /* its text says what the room waits for */
		ts.tv_sec = wait / 1000;
		ts.tv_nsec = 1000000L * (long)(wait % 1000);
		nanosleep(&ts, NULL);
	}
}

int rmp_lease_alloc(struct rmp_client *c, uint64_t length,
		    const struct rmp_alloc_opts *opts, struct rmp_lease **out)
{
	struct rmp_alloc_opts o;
	struct rmp_lease *l;
	struct rmp_msg m;
	int err;

	if (!c || !out)
		return -EINVAL;
	rmpc_clear_error(c);
	rmp_alloc_opts_init(&o);
	if (opts && rmpc_opts_copy(&o, sizeof(o), opts, opts->size)) {
		rmpc_set_error(c, "rmp_alloc_opts.size is not valid");
		return -EINVAL;
	}
	if (length == 0 || (o.alignment & (o.alignment - 1)) || !o.access ||
	    (o.access & ~RMP_ACCESS_ALL) || (o.flags & ~(RMP_LEASE_EPHEMERAL | RMP_LEASE_AUTO_RENEW |
				   RMP_LEASE_SPILL))) {
		rmpc_set_error(c, "invalid lease request: length %" PRIu64
			       ", alignment %" PRIu64 ", access 0x%x, flags "
			       "0x%x", length, o.alignment, o.access, o.flags);
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->c = c;

	err = alloc_rpc(c, length, &o, &m);
	if (err) {
		if (!c->errbuf[0] && o.ttl_s)
			rmpc_set_error(c, "server refused ALLOC of %" PRIu64
				       " bytes with ttl %" PRIu32 " s", length,
				       o.ttl_s);
		else if (!c->errbuf[0])
			rmpc_set_error(c, "server refused ALLOC of %" PRIu64
				       " bytes", length);
		goto err_free_lease;
	}
	err = lease_set(l, &m.u.lease);
	if (!err && l->length < length) {
		rmpc_set_error(c, "server granted %" PRIu64 " of %" PRIu64
			       " bytes", l->length, length);
		err = -EPROTO;
	}
	if (err) {
		free_on_server(c, m.u.lease.id, m.u.lease.secret);
		goto err_free_lease;
	}
	lease_link(l);
	*out = l;
	return 0;

err_free_lease:
	free(l);
	return err;
}

/* attach -- ATTACH id with access and flags (already checked). */
/*
 * attach_into -- ATTACH lease id on l's connection (under l's epoch) and
 * describe it in l: a new handle, or after a reconnect l's own lease
 * again (same id and secret, the access it had), in place.
 */
static int attach_into(struct rmp_lease *l, uint64_t id, uint64_t secret,
		       uint32_t access, uint32_t flags)
{
	struct rmp_client *c = l->c;
	struct rmp_msg m;
	int err;

	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_ATTACH;
	m.u.attach.id = id;
	m.u.attach.secret = secret;
	m.u.attach.access = access;
	m.u.attach.flags = flags;
	m.u.attach.epoch = l->epoch;
	err = rmpc_rpc(c, &m);
	if (err) {
		if (!c->errbuf[0])
			rmpc_set_error(c, "server refused ATTACH of lease "
				       "%016" PRIx64, id);
		return err;
	}
	if (m.u.lease.id != id) {
		rmpc_set_error(c, "server attached lease %016" PRIx64
			       " instead of %016" PRIx64, m.u.lease.id, id);
		return -EPROTO;
	}
	return lease_set(l, &m.u.lease);
}

static int attach(struct rmp_client *c, uint64_t id, uint64_t secret,
		  uint32_t access, uint32_t flags, uint64_t epoch,
		  struct rmp_lease **out)
{
	struct rmp_lease *l;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->c = c;
	l->epoch = epoch;
	err = attach_into(l, id, secret, access, flags);
	if (err) {
		free(l);
		return err;
	}
	lease_link(l);
	*out = l;
	return 0;
}

int rmp_lease_attach(struct rmp_client *c, uint64_t id, uint64_t secret,
		     struct rmp_lease **out)
{
	if (!c || !out)
		return -EINVAL;
	rmpc_clear_error(c);
	return attach(c, id, secret, 0, 0, 0, out);
}

/* parse_token -- token into *t; the text is never echoed (a secret). */
static int parse_token(struct rmp_client *c, const char *token,
		       struct rmp_token *t)
{
	if (rmp_token_parse(token, t)) {
		rmpc_set_error(c, "malformed lease token (expected "
			       "rmp://HOST:PORT/ID-SECRET)");
		return -EINVAL;
	}
	return 0;
}

int rmp_lease_attach_token(struct rmp_client *c, const char *token,
			   struct rmp_lease **out)
{
	return rmp_lease_attach_with(c, token, NULL, out);
}

int rmp_lease_attach_with(struct rmp_client *c, const char *token,
			  const struct rmp_attach_opts *opts,
			  struct rmp_lease **out)
{
	return rmpc_lease_attach_epoch(c, token, opts, 0, out);
}

void rmpc_lease_set_epoch(struct rmp_lease *l, uint64_t epoch)
{
	l->epoch = epoch;
	for (unsigned i = 1; i < RMPC_RAILS_MAX; i++)
		if (l->rail[i])
			l->rail[i]->epoch = epoch;
}

int rmpc_lease_pin_epoch(struct rmp_lease *l, uint64_t epoch)
{
	int err;

	rmpc_lease_set_epoch(l, epoch);
	err = rmpc_lease_usable(l, false);
	return err ? err : attach_into(l, l->id, l->secret, l->access, 0);
}

int rmpc_lease_attach_epoch(struct rmp_client *c, const char *token,
			    const struct rmp_attach_opts *opts, uint64_t epoch,
			    struct rmp_lease **out)
{
	struct rmp_attach_opts o;
	struct rmp_token t;
	int err;

	if (!c || !token || !out)
		return -EINVAL;
	rmpc_clear_error(c);
	rmp_attach_opts_init(&o);
	if (opts && rmpc_opts_copy(&o, sizeof(o), opts, opts->size)) {
		rmpc_set_error(c, "rmp_attach_opts.size is not valid");
		return -EINVAL;
	}
	if ((o.access & ~RMP_ACCESS_ALL) || (o.flags & ~RMP_ATTACH_EXCLUSIVE)) {
		rmpc_set_error(c, "invalid attach options: access 0x%x, flags "
			       "0x%x", o.access, o.flags);
		return -EINVAL;
	}
	err = parse_token(c, token, &t);
	if (err)
		return err;
	return attach(c, t.id, t.secret, o.access, o.flags, epoch, out);
}

/*
 * id_rpc -- RENEW (for ttl_s) or FREE, the opcode, of lease id with its
 * secret; the reply in *m. A refusal the reply does not explain is
 * explained with the lease's id.
 */
static int id_rpc(struct rmp_client *c, unsigned opcode, uint64_t id,
		  uint64_t secret, uint32_t ttl_s, struct rmp_msg *m)
{
	int err;

	memset(m, 0, sizeof(*m));
	m->hdr.opcode = (uint8_t)opcode;
	if (opcode == RMP_OP_RENEW) {
		m->u.renew.id = id;
		m->u.renew.secret = secret;
		m->u.renew.ttl_s = ttl_s;
	} else {
		m->u.free.id = id;
		m->u.free.secret = secret;
	}
	err = rmpc_rpc(c, m);
	if (err && !c->errbuf[0] && opcode == RMP_OP_RENEW)
		rmpc_set_error(c, "server refused RENEW of lease %016" PRIx64
			       " (ttl %" PRIu32 " s)", id, ttl_s);
	else if (err && !c->errbuf[0])
		rmpc_set_error(c, "server refused %s of lease %016" PRIx64,
			       rmp_opcode_name(opcode), id);
	return err;
}

/* token_rpc -- RENEW or FREE (opcode) of a token's lease in *m. */
static int token_rpc(struct rmp_client *c, const char *token,
		     unsigned opcode, uint32_t ttl_s, struct rmp_msg *m)
{
	struct rmp_token t;
	int err;

	if (!c || !token)
		return -EINVAL;
	rmpc_clear_error(c);
	err = parse_token(c, token, &t);
	if (err)
		return err;
	return id_rpc(c, opcode, t.id, t.secret, ttl_s, m);
}

int rmp_lease_renew_token(struct rmp_client *c, const char *token,
			  uint32_t ttl_s, uint64_t *ttl_ms)
{
	struct rmp_msg m;
	int err = token_rpc(c, token, RMP_OP_RENEW, ttl_s, &m);

	if (!err && ttl_ms)
		*ttl_ms = m.u.renew_rep.ttl_ms;
	return err;
}

int rmp_lease_free_token(struct rmp_client *c, const char *token)
{
	struct rmp_msg m;

	return token_rpc(c, token, RMP_OP_FREE, 0, &m);
}

int rmpc_lease_renew_one(struct rmp_lease *l, uint32_t ttl_s)
{
	struct rmp_msg m;
	int err;

	rmpc_clear_error(l->c);
	err = rmpc_lease_usable(l, false);
	if (!err)
		err = id_rpc(l->c, RMP_OP_RENEW, l->id, l->secret, ttl_s, &m);
	/* rail 0's connection failing is no reason to miss a renewal: a
	 * RENEW names the lease by id and secret, any rail carries it */
	for (unsigned r = 1; l->c->rails && r < l->c->rails->n &&
	     rmpc_fault_of(err) == RMPC_FAULT_TRANSIENT; r++) {
		struct rmp_client *rc = l->c->rails->r[r].c;

		if (l->c->rails->r[r].down)
			continue;
		rmpc_clear_error(rc);
		err = id_rpc(rc, RMP_OP_RENEW, l->id, l->secret, ttl_s, &m);
		if (err)
			rmpc_set_error(l->c, "%s", rc->errbuf);
	}
	if (err)
		return err;
	l->ttl_ms = m.u.renew_rep.ttl_ms;
	l->stamp_ms = rmp_now_ms();
	return 0;
}

int rmpc_lease_on_rail(struct rmp_lease *l, struct rmp_client *rc,
		       unsigned i, struct rmp_lease **out)
{
	struct rmp_lease *h = i ? l->rail[i] : l;
	int err;

	if (h && h->gen == rc->gen) {
		*out = h;
		return 0;
	}
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		h->c = rc;
		h->epoch = l->epoch;
	}
	err = attach_into(h, l->id, l->secret, l->access, 0);
	if (err) {
		if (h != l && h != l->rail[i])
			free(h);
		return err;
	}
	if (h != l && !l->rail[i]) {
		lease_link(h);
		l->rail[i] = h;
	}
	*out = h;
	return 0;
}

/* rails_close -- close l's handles on the other rails. */
static void rails_close(struct rmp_lease *l)
{
	for (unsigned i = 1; i < RMPC_RAILS_MAX; i++) {
		if (!l->rail[i])
			continue;
		lease_unlink(l->rail[i]);
		free(l->rail[i]);
		l->rail[i] = NULL;
	}
}

void rmpc_lease_rail_drop(struct rmp_client *c, unsigned i)
{
	struct rmp_lease *l;

	LIST_FOREACH(l, &c->leases, link) {
		if (l->group || !l->rail[i])
			continue;
		lease_unlink(l->rail[i]);
		free(l->rail[i]);
		l->rail[i] = NULL;
	}
}

int rmp_lease_free(struct rmp_lease *l)
{
	struct rmp_msg m;
	int err;

	if (!l)
		return 0;
	if (l->group)
		return group_end(l, true);
	rmpc_clear_error(l->c);
	err = rmpc_lease_usable(l, false);
	if (!err)
		err = id_rpc(l->c, RMP_OP_FREE, l->id, l->secret, 0, &m);
	rails_close(l);
	lease_unlink(l);
	free(l);
	return err;
}

void rmp_lease_close(struct rmp_lease *l)
{
	if (!l)
		return;
	if (l->group) {
		group_end(l, false);
		return;
	}
	rails_close(l);
	lease_unlink(l);
	free(l);
}

void rmpc_leases_free(struct rmp_client *c)
{
	while (!LIST_EMPTY(&c->leases))
		rmp_lease_close(LIST_FIRST(&c->leases));
}

int rmp_lease_info(const struct rmp_lease *l, struct rmp_lease_info *info)
{
	struct rmp_lease_info i;
	uint64_t age;
	size_t size;

	if (!l || !info || info->size < LEASE_INFO_V1_SIZE)
		return -EINVAL;
	size = RMP_MIN(info->size, sizeof(i));
	age = rmp_now_ms() - l->stamp_ms;
	memset(&i, 0, sizeof(i));
	i.size = size;
	i.id = l->id;
	i.length = l->length;
	i.remote_addr = l->addr;
	i.rkey = l->rkey;
	i.access = l->access;
	i.flags = l->flags;
	i.ttl_ms = l->ttl_ms > age ? l->ttl_ms - age : 0;
	i.holders = l->holders;
	i.replicas = i.replicas_live = i.stripes = 1;
	if (l->group)
		group_info(l->group, &i);
	memcpy(info, &i, size);
	return 0;
}

/* format_token -- the token of l, a lease of one server. */
static int format_token(const struct rmp_lease *l, char *buf, size_t len)
{
	struct rmp_token t;

	memset(&t, 0, sizeof(t));
	strcpy(t.host, l->host);
	t.port = l->port;
	t.id = l->id;
	t.secret = l->secret;
	return rmp_token_format(&t, buf, len);
}

int rmp_lease_token(const struct rmp_lease *l, char *buf, size_t len)
{
	if (!l || !buf)
		return -EINVAL;
	if (l->group && !l->group->token[0])
		return -EOPNOTSUPP;
	if (l->group) {
		size_t n = strlen(l->group->token);

		if (n >= len)
			return -ENOSPC;
		memcpy(buf, l->group->token, n + 1);
		return (int)n;
	}
	return format_token(l, buf, len);
}

int rmp_lease_replica_token(const struct rmp_lease *l, unsigned i, char *buf,
			    size_t len)
{
	if (!l || !buf)
		return -EINVAL;
	if (!l->group)
		return i ? -ENOENT : format_token(l, buf, len);
	if (i >= l->group->n || !l->group->m[i])
		return -ENOENT;
	return format_token(l->group->m[i], buf, len);
}

int rmp_stat(struct rmp_client *c, struct rmp_pool_stat *st)
{
	const struct rmp_stat_rep *r;
	struct rmp_pool_stat s;
	struct rmp_msg m;
	size_t size;
	int err;

	if (!c || !st || st->size < POOL_STAT_V1_SIZE)
		return -EINVAL;
	rmpc_clear_error(c);
	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_STAT;
	err = rmpc_rpc(c, &m);
	if (err) {
		if (!c->errbuf[0])
			rmpc_set_error(c, "server refused STAT");
		return err;
	}
	r = &m.u.stat;
	size = RMP_MIN(st->size, sizeof(s));
	memset(&s, 0, sizeof(s));
	s.size = size;
	s.pool_bytes = r->pool_bytes;
	s.free_bytes = r->free_bytes;
	s.largest_free = r->largest_free;
	s.leases = r->leases;
	s.client_bytes = r->tenant_bytes;
	s.client_leases = r->tenant_leases;
	s.quota_bytes = r->quota_bytes;
	s.quota_leases = r->quota_leases;
	s.hugepage_size = r->hugepage_size;
	s.ttl_min_s = r->ttl_min_s;
	s.ttl_max_s = r->ttl_max_s;
	s.ttl_default_s = r->ttl_default_s;
	s.numa_node = r->numa_node;
	s.keys_mode = rmp_keys_mode_name(r->keys_mode);
	s.quarantined_bytes = r->quarantined_bytes;
	s.zeroing_bytes = r->zeroing_bytes;
	s.tenant_connections = r->tenant_connections;
	s.quota_connections = r->quota_connections;
	s.keys = r->keys;
	memcpy(st, &s, size);
	return 0;
}

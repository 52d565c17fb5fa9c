/* SPDX-License-Identifier: MIT */
/* client_rails.c -- rmp_client_connect of one address or a node's several (a client per rail), a down rail tried again, the rails' figures; close, free. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "buf.h"
#include "chan.h"
#include "client_int.h"
#include "park.h"
#include "error.h"
#include "lease.h"
#include "rails.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

/* The smallest struct rmp_rail_info a caller may pass: up to failovers
 * (0.6's first one); why is filled when there is room for it. */
#define RMPC_RAIL_INFO_MIN (offsetof(struct rmp_rail_info, failovers) + \
			    sizeof(uint64_t))

/* rail_at -- element i of the caller's array of stride-byte structs. */
static struct rmp_rail_info *rail_at(struct rmp_rail_info *out, size_t stride,
				     unsigned i)
{
	return (struct rmp_rail_info *)(void *)((char *)out + i * stride);
}

/* split_list -- "A1,A2,..." into addr[]: how many, 2..RMPC_RAILS_MAX,
 * none empty (spaces around a comma dropped), or -EINVAL. */
static int split_list(struct rmp_client *c, const char *list,
		      char addr[][64])
{
	const char *p = list, *end;
	unsigned k = 0;
	size_t len;

	for (;;) {
		while (*p == ' ')
			p++;
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		while (len && p[len - 1] == ' ')
			len--;
		if (k == RMPC_RAILS_MAX || !len || len >= 64)
			break;
		memcpy(addr[k], p, len);
		addr[k++][len] = '\0';
		if (!end)
			return k >= 2 ? (int)k : -EINVAL;
		p = end + 1;
	}
	rmpc_set_error(c, "a list of 2 to %u addresses of one node, none "
		       "empty, each under 64 bytes, is expected",
		       RMPC_RAILS_MAX);
	return -EINVAL;
}

/* rail_client -- a client for another rail, with c's options, name and
 * tenant (its key proven the same way); it does not reconnect by
 * itself: revive_rail does. */
static int rail_client(struct rmp_client *c, struct rmp_client **out)
{
	struct rmp_client_opts o = c->opts;

	o.name = c->name;
	o.tenant = c->tenant;
	o.key = c->key_len ? c->key : NULL;
	o.key_len = c->key_len;
	o.key_file = c->key_file[0] ? c->key_file : NULL;
	o.reconnect_max_ms = 0;
	return rmp_client_new(out, &o);
}

/* rail_up -- rail i's client is connected: watch its device, register
 * the buffers with it; it is up. */
static void rail_up(struct rmp_client *c, unsigned i)
{
	struct rmpc_rail *r = &c->rails->r[i];

	rmpc_rail_watch(c->rails, i, r->c->id ? r->c->id->verbs : NULL);
	r->port_num = r->c->id ? r->c->id->port_num : 0;
	if (i)
		rmpc_bufs_on_rail(c, r->c, i);
	r->down = false;
	r->port_down = false;
	rmpc_backoff_reset(&r->backoff);
	r->why[0] = '\0';
}

/* rail_failed -- rail i's connect failed: say why, naming the local
 * device its route took (or that none reaches the address) and the
 * address, with the connect's own text (no server there, refused, no
 * answer); it is down and tried again after its backoff. */
static void rail_failed(struct rmp_client *c, unsigned i)
{
	struct rmpc_rail_set *s = c->rails;
	struct rmpc_rail *r = &s->r[i];
	const char *detail = rmp_client_last_error(r->c);

	if (r->c->via_dev[0])
		rmpc_rail_why(r, "%s: connect to %s port %u failed: %s",
			      r->c->via_dev, r->addr, (unsigned)s->port, detail);
	else
		rmpc_rail_why(r, "no local RDMA device reaches %s port %u: %s",
			      r->addr, (unsigned)s->port, detail);
	rmpc_rail_down(s, i);
}

/* port_active -- rail r's port is ACTIVE (asked of the device: its
 * events may have been read by another client of this process, or not
 * come); true when it cannot be told. */
static bool port_active(const struct rmpc_rail *r)
{
	return rmpc_port_active(r->async_ctx, r->port_num);
}

/*
 * revive_rail -- the upcall of the data path (state.h): connect down
 * rail i again if its backoff is over and its port is up; rail 0 through
 * the client's own reconnect. Lease handles are attached again when
 * next used there (rmpc_lease_on_rail).
 */
static int revive_rail(struct rmp_client *c, unsigned i)
{
	struct rmpc_rail_set *s = c->rails;
	struct rmpc_rail *r = &s->r[i];
	int err;

	if (!r->down)
		return 0;
	if (!rmpc_backoff_due(&r->backoff, rmp_now_ms()))
		return -ENOTCONN;
	/* A connect to a port that is down would only wait out its
	 * timeout, in the caller's data call. */
	if (!port_active(r)) {
		rmpc_backoff_hold(&r->backoff, rmp_now_ms());
		return -ENOTCONN;
	}
	if (i == 0) {
		err = c->reconnect ? c->reconnect(c) : -ENOTCONN;
	} else {
		rmp_client_close(r->c);
		err = rmpc_connect_one(r->c, r->addr, s->port);
	}
	if (err) {
		r->down = false; /* counted once: down again, a longer wait */
		r->failovers--;
		if (i)
			rail_failed(c, i);
		else
			rmpc_rail_down(s, i);
		return err;
	}
	rail_up(c, i);
	return 0;
}

/* rails_connect -- rail 0 to addr[0] (it must connect), then a client
 * on each other address (down from the start when it cannot). */
static int rails_connect(struct rmp_client *c, const char *list,
			 uint16_t port)
{
	char addr[RMPC_RAILS_MAX][64];
	struct rmpc_rail_set *s;
	unsigned n;
	int err;

	rmpc_clear_error(c);
	err = split_list(c, list, addr);
	if (err < 0)
		return err;
	n = (unsigned)err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = rmpc_connect_one(c, addr[0], port);
	if (err) {
		free(s);
		return err;
	}
	s->n = n;
	s->port = port ? port : RMP_DEFAULT_PORT;
	c->rails = s;
	c->revive_rail = revive_rail;
	for (unsigned i = 0; i < n; i++) {
		s->r[i].node = -1;
		memcpy(s->r[i].addr, addr[i], sizeof(s->r[i].addr));
	}
	s->r[0].c = c;
	rail_up(c, 0);
	for (unsigned i = 1; i < n; i++) {
		err = rail_client(c, &s->r[i].c);
		if (err) {
			rmp_client_close(c);
			return err;
		}
		if (rmpc_connect_one(s->r[i].c, addr[i], s->port))
			rail_failed(c, i);
		else
			rail_up(c, i);
	}
	rmpc_clear_error(c);
	return 0;
}

int rmp_client_connect(struct rmp_client *c, const char *host, uint16_t port)
{
	if (!c || !host || !strchr(host, ','))
		return rmpc_connect_one(c, host, port);
	if (c->cm_ch) {
		rmpc_set_error(c, "client is already connected; close it first");
		return -EISCONN;
	}
	return rails_connect(c, host, port);
}

/* rails_close -- close and free the other rails' clients (their lease
 * handles and buffers first). Nothing with one address. */
static void rails_close(struct rmp_client *c)
{
	struct rmpc_rail_set *s = c->rails;

	if (!s)
		return;
	for (unsigned i = 1; i < s->n; i++) {
		rmpc_lease_rail_drop(c, i);
		rmpc_bufs_rail_drop(c, i);
		rmp_client_free(s->r[i].c);
	}
	free(s);
	c->rails = NULL;
	c->revive_rail = NULL;
}

void rmp_client_close(struct rmp_client *c)
{
	if (!c)
		return;
	c->auto_reconnect = false;
	rmpc_backoff_reset(&c->reconnect_backoff);
	rails_close(c);
	rmpc_conn_teardown(c);
}

void rmp_client_free(struct rmp_client *c)
{
	if (!c)
		return;
	rails_close(c);
	rmpc_conn_teardown(c);
	rmpc_client_release(c);
}

int rmp_client_rails(struct rmp_client *c, struct rmp_rail_info *out,
		     unsigned max)
{
	struct rmpc_rail one = { .c = c, .node = -1 };
	struct rmpc_rail_set *s;
	size_t stride;
	unsigned n;

	if (!c || (max && !out))
		return -EINVAL;
	s = c->rails;
	if (!s && !rmpc_connected(c))
		return -ENOTCONN;
	n = s ? s->n : 1;
	/* The caller's array is of its own struct's size (an older one
	 * lacks why): step by out[0].size, and every element says so. */
	stride = max ? out[0].size : 0;
	for (unsigned i = 0; i < max && i < n; i++)
		if (stride < RMPC_RAIL_INFO_MIN ||
		    stride % _Alignof(struct rmp_rail_info) ||
		    rail_at(out, stride, i)->size != stride)
			return -EINVAL;
	if (!s) {
		snprintf(one.addr, sizeof(one.addr), "%.63s", c->host);
		snprintf(one.dev, sizeof(one.dev), "%.63s",
			 ibv_get_device_name(c->id->verbs->device));
		if (max)
			rmpc_rail_info(&one, out);
		return 1;
	}
	for (unsigned i = 0; i < max && i < n; i++)
		rmpc_rail_info(&s->r[i], rail_at(out, stride, i));
	return (int)n;
}

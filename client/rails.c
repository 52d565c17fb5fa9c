/* SPDX-License-Identifier: MIT */
/* rails.c -- a node's rails: which are up, their devices' events and NUMA nodes, their figures (rails.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rails.h"
#include "rmpool.h"
#include "topology.h"
#include "util.h"

#define RAIL_BACKOFF_FIRST_MS 100u
#define RAIL_BACKOFF_MAX_MS 5000u
#define RAIL_EVENTS_EVERY_MS 5u   /* async events read at most this often */
/* get_mempolicy(2) flags (numaif.h; libnuma is not linked here) */
#define RAIL_MPOL_F_NODE 1
#define RAIL_MPOL_F_ADDR 2

void rmpc_rail_why(struct rmpc_rail *r, const char *fmt, ...)
{
	char text[sizeof(r->why)]; /* apart: the arguments are r's too */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	memcpy(r->why, text, sizeof(text));
}

void rmpc_rail_down(struct rmpc_rail_set *s, unsigned i)
{
	struct rmpc_rail *r = &s->r[i];

	if (r->down)
		return;
	if (!r->why[0])
		rmpc_rail_why(r, "the connection to %s over %s failed", r->addr,
			      r->dev[0] ? r->dev : "its device");
	r->down = true;
	r->failovers++;
	rmpc_backoff_fail(&r->backoff, RAIL_BACKOFF_FIRST_MS,
			  RAIL_BACKOFF_MAX_MS, rmp_now_ms());
}

/* port_event -- what one async event says about the rails of ctx. */
static void port_event(struct rmpc_rail_set *s, struct ibv_context *ctx,
		       enum ibv_event_type type)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct rmpc_rail *r = &s->r[i];

		if (r->async_ctx != ctx)
			continue;
		if (type == IBV_EVENT_PORT_ERR) {
			rmpc_rail_why(r, "port %u of %s went down",
				      (unsigned)r->port_num, r->dev);
			r->port_down = true;
			rmpc_rail_down(s, i);
		} else if (type == IBV_EVENT_PORT_ACTIVE) {
			r->port_down = false;
		}
	}
}

void rmpc_rails_events(struct rmpc_rail_set *s)
{
	uint64_t now = rmp_now_ms();
	struct ibv_async_event ev;

	if (now - s->events_at_ms < RAIL_EVENTS_EVERY_MS)
		return;
	s->events_at_ms = now;
	for (unsigned i = 0; i < s->n; i++) {
		struct ibv_context *ctx = s->r[i].async_ctx;

		/* a device two rails share: read once, by its first */
		for (unsigned j = 0; ctx && j < i; j++)
			if (s->r[j].async_ctx == ctx)
				ctx = NULL;
		while (ctx && ibv_get_async_event(ctx, &ev) == 0) {
			port_event(s, ctx, ev.event_type);
			ibv_ack_async_event(&ev);
		}
	}
}

void rmpc_rail_watch(struct rmpc_rail_set *s, unsigned i,
		     struct ibv_context *ctx)
{
	struct rmpc_rail *r = &s->r[i];
	int node, fl;

	r->async_ctx = ctx;
	if (!ctx)
		return;
	snprintf(r->dev, sizeof(r->dev), "%s", ibv_get_device_name(ctx->device));
	node = rmp_numa_node_of_ibdev(NULL, r->dev, NULL, 0);
	r->node = node >= 0 ? node : -1;
	/* The device's event fd, shared by every user of this context:
	 * non-blocking, so reading it never waits. */
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		r->async_ctx = NULL; /* no events: failures alone tell */
}

void rmpc_rail_info(const struct rmpc_rail *r, struct rmp_rail_info *out)
{
	struct rmp_rail_info i;
	size_t size = RMP_MIN(out->size, sizeof(i));

	/* a why that does not fit whole is left out, never cut unended */
	if (size < offsetof(struct rmp_rail_info, why) + sizeof(i.why))
		size = RMP_MIN(size, offsetof(struct rmp_rail_info, why));

	memset(&i, 0, sizeof(i));
	i.size = size;
	snprintf(i.address, sizeof(i.address), "%s", r->addr);
	snprintf(i.device, sizeof(i.device), "%s", r->dev);
	i.numa_node = r->node;
	i.up = !r->down;
	i.bytes_read = r->bytes_read;
	i.bytes_written = r->bytes_written;
	i.ops = r->ops;
	i.failovers = r->failovers;
	snprintf(i.why, sizeof(i.why), "%s", r->why);
	memcpy(out, &i, size);
}

int rmpc_buf_node(const void *p)
{
	int node = -1;

	if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, p,
		    RAIL_MPOL_F_NODE | RAIL_MPOL_F_ADDR))
		return -1;
	return node;
}

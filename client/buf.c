/* SPDX-License-Identifier: MIT */
/* buf.c -- registered memory: application buffers (rmp_buf) and the library's control and bounce buffers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "buf.h"
#include "error.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"

/* ctl_mem_len -- receive slots, then send slots, RMP_MSG_MAX bytes each. */
static size_t ctl_mem_len(void)
{
	return (size_t)(RMPC_NRECV + RMPC_NSEND) * RMP_MSG_MAX;
}

int rmpc_mem_alloc(struct rmp_client *c)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t align = page > 0 ? (size_t)page : 4096;
	void *p;

	/* The scratch bytes after the bounce buffer take atomic results. */
	c->bounce_len = c->opts.bounce_bytes;
	if (posix_memalign(&p, align, c->bounce_len + RMPC_SCRATCH))
		return -ENOMEM;
	c->bounce = p;
	memset(c->bounce, 0, c->bounce_len + RMPC_SCRATCH);
	if (posix_memalign(&p, align, ctl_mem_len()))
		return -ENOMEM;
	c->ctl_mem = p;
	memset(c->ctl_mem, 0, ctl_mem_len());
	return 0;
}

void rmpc_mem_free(struct rmp_client *c)
{
	while (!LIST_EMPTY(&c->bufs))
		rmp_buf_dereg(LIST_FIRST(&c->bufs));
	free(c->bounce);
	c->bounce = NULL;
	free(c->ctl_mem);
	c->ctl_mem = NULL;
}

int rmpc_mem_reg(struct rmp_client *c)
{
	int err;

	c->ctl_mr = ibv_reg_mr(c->pd, c->ctl_mem, ctl_mem_len(),
			       IBV_ACCESS_LOCAL_WRITE);
	if (!c->ctl_mr)
		return errno ? -errno : -ENOMEM;
	c->bounce_mr = ibv_reg_mr(c->pd, c->bounce,
				  c->bounce_len + RMPC_SCRATCH,
				  IBV_ACCESS_LOCAL_WRITE);
	if (!c->bounce_mr) {
		err = errno ? -errno : -ENOMEM;
		goto err_dereg_ctl_mr;
	}
	return 0;

err_dereg_ctl_mr:
	ibv_dereg_mr(c->ctl_mr);
	c->ctl_mr = NULL;
	return err;
}

void rmpc_mem_dereg(struct rmp_client *c)
{
	struct rmp_buf *b;

	LIST_FOREACH(b, &c->bufs, link) {
		if (b->mr)
			ibv_dereg_mr(b->mr);
		b->mr = NULL;
	}
	if (c->bounce_mr)
		ibv_dereg_mr(c->bounce_mr);
	c->bounce_mr = NULL;
	if (c->ctl_mr)
		ibv_dereg_mr(c->ctl_mr);
	c->ctl_mr = NULL;
}

struct ibv_mr *rmpc_buf_lookup(struct rmp_client *c, const void *p,
			       size_t len)
{
	uintptr_t a = (uintptr_t)p, start;
	struct rmp_buf *b;

	LIST_FOREACH(b, &c->bufs, link) {
		start = (uintptr_t)b->addr;
		if (b->mr && a >= start && len <= b->len &&
		    a - start <= b->len - len)
			return b->mr;
	}
	return NULL;
}

int rmp_buf_reg(struct rmp_client *c, void *addr, size_t len,
		struct rmp_buf **out)
{
	struct rmp_buf *b;
	int err;

	if (!c || !addr || !len || !out)
		return -EINVAL;
	rmpc_clear_error(c);
	if (!c->pd) {
		rmpc_set_error(c, "buffers are registered with the device of a "
			       "connection: connect first");
		return -ENOTCONN;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->c = c;
	b->addr = addr;
	b->len = len;
	/* LOCAL_WRITE: RDMA READ data and atomic results land here. */
	b->mr = ibv_reg_mr(c->pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
	if (!b->mr) {
		err = errno ? -errno : -ENOMEM;
		rmpc_set_error(c, "ibv_reg_mr of %zu bytes failed: %s%s", len,
			       rmpc_errno_text(err),
			       err == -ENOMEM || err == -EPERM ?
				       " (locked memory limit, ulimit -l?)" : "");
		free(b);
		return err;
	}
	LIST_INSERT_HEAD(&c->bufs, b, link);
	for (unsigned i = 1; c->rails && i < c->rails->n; i++)
		if (!c->rails->r[i].down)
			rmpc_bufs_on_rail(c, c->rails->r[i].c, i);
	*out = b;
	return 0;
}

void rmpc_bufs_on_rail(struct rmp_client *c, struct rmp_client *rc,
		       unsigned i)
{
	struct rmp_buf *b, *x;

	LIST_FOREACH(b, &c->bufs, link) {
		x = b->rail[i];
		if (x && !x->mr && rc->pd)
			x->mr = ibv_reg_mr(rc->pd, x->addr, x->len,
					   IBV_ACCESS_LOCAL_WRITE);
		else if (!x && rmp_buf_reg(rc, b->addr, b->len, &b->rail[i]))
			b->rail[i] = NULL; /* that rail copies through its
					    * bounce buffer */
	}
}

void rmpc_bufs_rail_drop(struct rmp_client *c, unsigned i)
{
	struct rmp_buf *b;

	LIST_FOREACH(b, &c->bufs, link) {
		rmp_buf_dereg(b->rail[i]);
		b->rail[i] = NULL;
	}
}

void rmp_buf_dereg(struct rmp_buf *b)
{
	if (!b)
		return;
	for (unsigned i = 1; i < RMPC_RAILS_MAX; i++)
		rmp_buf_dereg(b->rail[i]);
	LIST_REMOVE(b, link);
	if (b->mr)
		ibv_dereg_mr(b->mr);
	free(b);
}

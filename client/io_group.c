/* SPDX-License-Identifier: MIT */
/*
 * io_group.c -- the data calls on a mirrored lease: reads from one
 * replica with failover to the next within the call, writes to all of
 * them at once. What a replica's failure means is decided here (lost,
 * not an error while one is left); the moving is io_sync.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "error.h"
#include "io_int.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"

/* caller_error -- err says the call itself is wrong (the same at every
 * replica), not that the replica failed. */
static bool caller_error(int err)
{
	return err == -ERANGE || err == -EACCES || err == -EINVAL;
}

/* read_once -- from the first live replica, failing over. */
static int read_once(struct rmp_lease *l, uint64_t off, char *dst,
		     size_t len)
{
	struct rmpc_group *g = l->group;
	int first = 0;

	for (unsigned i = 0; i < g->n; i++) {
		int err, one;

		if (g->lost[i])
			continue;
		err = rmpc_rw(&g->m[i], &one, 1, off, dst, len, false);
		if (!err || caller_error(err))
			return err;
		rmpc_group_lose(l, i);
		first = first ? first : err;
	}
	return first ? first : -EIO;
}

/* write_once -- to every live replica at once. */
static int write_once(struct rmp_lease *l, uint64_t off, char *src,
		      size_t len)
{
	struct rmpc_group *g = l->group;
	struct rmp_lease *live[RMPC_REPLICAS_MAX];
	unsigned idx[RMPC_REPLICAS_MAX], n = 0, ok = 0;
	int errs[RMPC_REPLICAS_MAX], first = 0;

	for (unsigned i = 0; i < g->n; i++) {
		if (g->lost[i])
			continue;
		idx[n] = i;
		live[n++] = g->m[i];
	}
	if (!n)
		return -EIO;
	rmpc_rw(live, errs, n, off, src, len, true);
	for (unsigned k = 0; k < n; k++) {
		if (caller_error(errs[k]))
			return errs[k];
		if (errs[k])
			rmpc_group_lose(l, idx[k]);
		first = first ? first : errs[k];
		ok += !errs[k];
	}
	return ok ? 0 : first;
}

/* again -- a call on l failed with err for want of a live member: when
 * l is a cluster lease, its record may name members anew (a repair
 * revoked our keys and replaced a lost replica; a connection came back):
 * true when the call may be tried once more. */
static bool again(struct rmp_lease *l, int err)
{
	const struct rmpc_group_keeper *k = l->group->keeper;

	return err && !caller_error(err) && k && !k->refresh(l);
}

int rmpc_group_read(struct rmp_lease *l, uint64_t off, char *dst, size_t len)
{
	int err = read_once(l, off, dst, len);

	return again(l, err) ? read_once(l, off, dst, len) : err;
}

int rmpc_group_write(struct rmp_lease *l, uint64_t off, char *src, size_t len)
{
	int err = write_once(l, off, src, len);

	/* a write is the same bytes again: all of it goes to the new list */
	return again(l, err) ? write_once(l, off, src, len) : err;
}

int rmpc_group_flush(struct rmp_lease *l)
{
	struct rmpc_group *g = l->group;
	int first = 0, ok = 0;

	for (unsigned i = 0; i < g->n; i++) {
		int err;

		if (g->lost[i])
			continue;
		err = rmpc_flush_one(g->m[i]);
		if (err)
			rmpc_group_lose(l, i);
		first = first ? first : err;
		ok += !err;
	}
	return ok ? 0 : first ? first : -EIO;
}

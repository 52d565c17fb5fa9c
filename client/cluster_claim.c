/* SPDX-License-Identifier: MIT */
/*
 * cluster_claim.c -- the one writer of an erasure-coded lease.
 *
 * Two processes writing one row at once can lose a write: each updates
 * the parity from the old (io_ec.c), and the one whose parity lands last
 * drops the other's delta while k members' tags still agree, so a later
 * degraded read decodes older bytes. So a coded lease has one writing
 * handle at a time, cluster-wide: before its first write a handle
 * creates PREFIX/writers/ID (a transaction that the key does not exist)
 * under an etcd lease of its own of CLAIM_TTL_S; a handle that finds
 * another's claim there is refused (-EBUSY, naming the holder).
 *
 * The claim holds, on the handle's own clock (CLOCK_BOOTTIME: it runs
 * on through a suspend), for half its ttl from the moment the request
 * that proved it was sent (not answered): a process paused or slow past
 * that looks again before it writes, and a long write looks before each
 * step of rows (io_ec.c), so the margin covers one step. A process
 * stopped for more than that margin in the middle of a step is what no
 * claim without the members' help can keep out. Looking again
 * is a keep-alive of its etcd lease and the same transaction, which
 * finds the key ours: two round trips per CLAIM_TTL_S / 2 of writing.
 * The claim goes with the handle (its etcd lease revoked), or
 * CLAIM_TTL_S after its process died.
 *
 * A repair (and so a scrub) needs no claim: its fence revokes every
 * holder's keys first. It then deletes the claim, whoever holds it
 * (cl_claim_break): a writer that died in a write leaves nothing that
 * blocks the next, and a live one, fenced, attaches anew (its record's
 * epoch moved: cl_lease_refresh) and claims again before it writes.
 *
 * What the value says (host, pid, client name) is for the error only:
 * whether a claim is ours is told by the etcd lease it is under. Anyone
 * who may write etcd can make or delete claims, as they can records: a
 * claim keeps honest writers apart, it is no lock against an attacker.
 */
#include "cluster_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd.h"
#include "util.h"

/* The claim's etcd lease: how long a dead writer blocks the next. */
#define CLAIM_TTL_S 30

/* boot_ms -- the claim's clock: it runs on while the machine sleeps
 * (CLOCK_MONOTONIC stops), as etcd's lease does on another machine. */
static uint64_t boot_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* holder -- what a claim's value says of its holder, printable. */
static void holder(const char *value, size_t len, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < cap; i++)
		out[n++] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
	out[n] = 0;
	if (!n)
		snprintf(out, cap, "an unnamed holder");
}

/* alive -- the claim's etcd lease granted, or kept alive: 0 and its ttl
 * (s) in *ttl, -ENOENT when it ended (expired), else etcd's error. */
static int alive(struct cl_lease *cx, int64_t *ttl)
{
	struct rmp_cluster *cl = cx->cl;
	struct cl_etcd_result res = { 0 };
	int64_t id = cx->claim.etcd_lease;
	int ret = id ? rmp_etcd_keepalive(cl->etcd, id, cl_etcd_on_result,
					  &res)
		     : rmp_etcd_grant(cl->etcd, CLAIM_TTL_S, cl_etcd_on_result,
				      &res);

	ret = cl_etcd_wait(cl, ret, &res);
	if (!ret && !id)
		cx->claim.etcd_lease = res.id;
	*ttl = res.ttl;
	if (!ret && res.ttl <= 0)
		ret = -ENOENT; /* etcd's answer to a lease it no longer has */
	if (ret == -ENOENT && id)
		return -ENOENT;
	return ret ? cl_etcd_said(cl, cl_etcd_errno(ret), &res,
				  "keeping the lease's writer claim") : 0;
}

/* take -- the claim's key created under our etcd lease, or found ours:
 * 0; -EBUSY when another's, with who in cl->err; else etcd's error. */
static int take(struct cl_lease *cx)
{
	struct rmp_cluster *cl = cx->cl;
	struct cl_etcd_result res = { 0 };
	char key[CL_PREFIX_MAX + 64], value[256], who[160];
	char host[64] = "";
	int n, err, ret = 0;

	cl_lease_key(cl, &cx->rec, "writers", key, sizeof(key));
	if (gethostname(host, sizeof(host) - 1))
		strcpy(host, "?");
	n = snprintf(value, sizeof(value), "%s pid %ld%s%s", host,
		     (long)getpid(), cl->name[0] ? " client " : "", cl->name);
	n = RMP_MIN(n, (int)sizeof(value) - 1); /* cut, never past it */
	err = rmp_etcd_create(cl->etcd, key, value, (size_t)n,
			      cx->claim.etcd_lease, cl_etcd_on_result, &res);
	err = cl_etcd_errno(cl_etcd_wait(cl, err, &res));
	if (err) {
		ret = cl_etcd_said(cl, err, &res,
				   "taking the lease's writer claim");
	} else if (!res.succeeded && res.lease != cx->claim.etcd_lease) {
		holder(res.value ? (const char *)res.value : "", res.value_len, who,
		       sizeof(who));
		cl_say(cl, "%s holds its writer claim (one handle writes at a "
		       "time; the claim goes when that handle closes, %d s "
		       "after its process died, or at a repair)", who,
		       CLAIM_TTL_S);
		ret = -EBUSY;
	}
	free(res.value);
	return ret;
}

int cl_claim_hold(struct cl_lease *cx)
{
	uint64_t sent = boot_ms();
	int64_t ttl = 0;
	int ret;

	if (sent < cx->claim.until_ms)
		return 0;
	ret = alive(cx, &ttl);
	if (ret == -ENOENT) { /* expired: a new etcd lease, a new claim */
		cx->claim.etcd_lease = 0;
		ret = alive(cx, &ttl);
	}
	if (!ret)
		ret = take(cx);
	if (ret == -EBUSY)
		cl_claim_release(cx); /* our etcd lease holds nothing */
	cx->claim.until_ms = ret ? 0 : sent + (uint64_t)ttl * 1000 / 2;
	if (!ret && boot_ms() >= cx->claim.until_ms) {
		/* the round trips took half the ttl: proven too late */
		cl_say(cx->cl, "keeping the lease's writer claim in etcd: "
		       "etcd answered after %" PRIu64 " ms", boot_ms() - sent);
		ret = -ETIMEDOUT;
	}
	return ret;
}

void cl_claim_doubt(struct cl_lease *cx)
{
	cx->claim.until_ms = 0;
}

void cl_claim_release(struct cl_lease *cx)
{
	struct cl_etcd_result res = { 0 };
	int ret;

	cl_claim_doubt(cx);
	if (!cx->claim.etcd_lease)
		return;
	ret = rmp_etcd_revoke(cx->cl->etcd, cx->claim.etcd_lease,
			      cl_etcd_on_result, &res);
	cl_etcd_wait(cx->cl, ret, &res);
	cx->claim.etcd_lease = 0;
}

int cl_claim_break(struct rmp_cluster *cl, const struct cl_record *rec)
{
	struct cl_etcd_result res = { 0 };
	char key[CL_PREFIX_MAX + 64];
	int ret;

	cl_lease_key(cl, rec, "writers", key, sizeof(key));
	ret = rmp_etcd_delete(cl->etcd, key, cl_etcd_on_result, &res);
	ret = cl_etcd_errno(cl_etcd_wait(cl, ret, &res));
	return ret ? cl_etcd_said(cl, ret, &res,
				  "deleting the lease's writer claim") : 0;
}

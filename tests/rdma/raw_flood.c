/* SPDX-License-Identifier: MIT */
/* raw_flood.c -- rmp-raw: floods and load. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raw.h"

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------ credits */

/*
 * run_credits -- keep exactly `credits` STATs in flight (a new one as
 * each reply comes) until `rounds` replies came, or for `seconds` when
 * that is not 0 (a flood: "READY" on stdout once connected; it starts on
 * a line on stdin, so that floods of several clients start together,
 * and ends with "FLOODED REPLIES MS", what the server's loop gave it).
 */
int run_credits(const char *host, const char *port, uint64_t rounds,
		uint32_t seconds)
{
	struct raw r = { 0 };
	uint64_t inflight[NRECV], sent = 0, got = 0, t0 = now_ms(), end = 0;
	unsigned credits = 0, ninflight = 0, k;
	struct rmp_msg req, rep;
	int ret, fail = 1;

	if (connect_ok(&r, "credits", host, port, 0))
		goto out;
	credits = r.rep.credits;
	if (credits > NRECV) {
		say("FAIL: the server grants %u credits; rmp-raw posts %u "
		    "receive buffers", credits, NRECV);
		goto out;
	}
	say("server grants %u credits: %u STATs in flight at all times",
	    credits, credits);
	if (seconds) {
		printf("READY\n");
		fflush(stdout);
		if (wait_stdin(&r, true))
			goto report;
		rounds = UINT64_MAX;
		end = now_ms() + (uint64_t)seconds * 1000;
	}
	t0 = now_ms();
	while (got < rounds && !(end && ninflight == 0 && got)) {
		while (ninflight < credits && sent < rounds &&
		       !(end && now_ms() >= end)) {
			memset(&req, 0, sizeof(req));
			req.hdr.opcode = RMP_OP_STAT;
			if (post_request(&r, &req))
				goto report;
			inflight[ninflight++] = req.hdr.req_id;
			sent++;
		}
		ret = next_reply(&r, &rep, TIMEOUT_MS);
		if (ret == -ENOTCONN) {
			say("FAIL: connection lost (%s) after %" PRIu64
			    " replies", r.disconnected ? "disconnected" :
			    "QP error", got);
			goto report;
		}
		if (ret == -ETIMEDOUT) {
			say("FAIL: no reply in %d ms after %" PRIu64
			    " replies, %u requests in flight", TIMEOUT_MS, got,
			    ninflight);
			goto report;
		}
		if (ret)
			goto report; /* printed */
		for (k = 0; k < ninflight && inflight[k] != rep.hdr.req_id; k++)
			;
		if (k == ninflight) {
			say("FAIL: a reply with req_id %#" PRIx64 ", which is "
			    "not in flight", rep.hdr.req_id);
			goto report;
		}
		inflight[k] = inflight[--ninflight];
		if (rep.hdr.opcode != RMP_OP_STAT || rep.hdr.status) {
			say("FAIL: reply %" PRIu64 ": %s %s", got + 1,
			    rmp_opcode_name(rep.hdr.opcode),
			    errname(rep.hdr.status));
			goto report;
		}
		got++;
	}
	/* Still connected a moment later? */
	pump(&r, 200, -1);
	if (r.disconnected || r.qp_error)
		say("FAIL: the connection was lost after the last reply");
	else
		fail = 0;
report:
	if (end) {
		printf("FLOODED %" PRIu64 " %" PRIu64 "\n", got, now_ms() - t0);
		fflush(stdout);
	} else {
		say("credits: %" PRIu64 " of %" PRIu64 " replies with %u "
		    "credits in %" PRIu64 " ms", got, rounds, credits,
		    now_ms() - t0);
	}
out:
	raw_close(&r);
	say("credits: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* ---------------------------------------------------- churn, statloop */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* wall_str -- the wall clock time at CLOCK_MONOTONIC ms `mono_ms`, as
 * HH:MM:SS.mmm (to line up with `date +%T.%3N` in a test's output). */
static const char *wall_str(uint64_t mono_ms, char *buf, size_t len)
{
	struct timespec rt;
	struct tm tm;
	int64_t ms;
	time_t sec;

	clock_gettime(CLOCK_REALTIME, &rt);
	ms = (int64_t)rt.tv_sec * 1000 + rt.tv_nsec / 1000000 -
	     (int64_t)(now_ms() - mono_ms);
	sec = (time_t)(ms / 1000);
	localtime_r(&sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min,
		 tm.tm_sec, (int)(ms % 1000));
	return buf;
}

/*
 * run_churn -- ALLOC and FREE leases of len back to back for seconds: the
 * ALLOCs must succeed or get -EDQUOT (the tenant's ending bytes at their
 * bound), never -ENOSPC (freed bytes in their grace filling the pool).
 */
int run_churn(const char *host, const char *port, uint64_t len,
	      uint32_t seconds)
{
	uint64_t end, ok = 0, dquot = 0, nospc = 0;
	struct rmp_msg req, rep;
	struct raw r = { 0 };
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "churn", host, port, 0))
		goto out;
	end = now_us() + (uint64_t)seconds * 1000000;
	while (now_us() < end) {
		req = (struct rmp_msg){ .hdr.opcode = RMP_OP_ALLOC };
		req.u.alloc.length = len;
		req.u.alloc.ttl_s = 60;
		req.u.alloc.access = RMP_ACC_ALL;
		if (request(&r, &req, &rep))
			goto out;
		st = rep.hdr.status;
		if (st == -EDQUOT) {
			dquot++;
			continue;
		}
		if (st == -ENOSPC) {
			nospc++;
			continue;
		}
		if (st) {
			say("FAIL: ALLOC: %s", errname(st));
			goto out;
		}
		remember(&r, &rep.u.lease);
		st = do_simple(&r, RMP_OP_FREE, rep.u.lease.id, &rep,
			       &transport);
		if (transport || st) {
			say("FAIL: FREE: %s", transport ? "no reply" :
			    errname(st));
			goto out;
		}
		ok++;
	}
	say("churn: %" PRIu64 " ALLOC+FREE, %" PRIu64 " -EDQUOT, %" PRIu64
	    " -ENOSPC", ok, dquot, nospc);
	fail = !ok || nospc;
out:
	raw_close(&r);
	say("churn: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* run_statloop -- STATs back to back on one connection for `seconds`;
 * prints n, median, p99 and max latency (µs) and the slowest ones. */
int run_statloop(const char *host, const char *port, uint32_t seconds)
{
	struct { uint64_t us, at; } slow[5] = { { 0, 0 } };
	struct raw r = { 0 };
	uint64_t *lat = NULL, t0, end;
	size_t n = 0, cap = 0;
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "statloop", host, port, 0))
		goto out;
	t0 = now_us();
	end = t0 + (uint64_t)seconds * 1000000;
	while (now_us() < end) {
		uint64_t t = now_us(), dt;
		unsigned k;

		st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		dt = now_us() - t;
		if (transport || st) {
			say("FAIL: STAT #%zu: %s", n + 1,
			    transport ? "no reply" : errname(st));
			goto out;
		}
		if (n == cap) {
			uint64_t *p;

			cap = cap ? 2 * cap : 4096;
			p = realloc(lat, cap * sizeof(*lat));
			if (!p) {
				say("out of memory");
				goto out;
			}
			lat = p;
		}
		lat[n++] = dt;
		/* the five slowest, slowest first */
		for (k = 0; k < 5 && slow[k].us >= dt; k++)
			;
		if (k < 5) {
			memmove(&slow[k + 1], &slow[k],
				(4 - k) * sizeof(slow[0]));
			slow[k].us = dt;
			slow[k].at = t - t0;
		}
	}
	if (n == 0) {
		say("FAIL: no STAT in %u s", seconds);
		goto out;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	for (unsigned k = 0; k < 5 && slow[k].us; k++) {
		char wall[32];

		say("slow STAT: %" PRIu64 " us, sent %.3f s into the loop, "
		    "at %s", slow[k].us, (double)slow[k].at / 1e6,
		    wall_str((t0 + slow[k].at) / 1000, wall, sizeof(wall)));
	}
	printf("statloop: n=%zu median_us=%" PRIu64 " p99_us=%" PRIu64
	       " max_us=%" PRIu64 "\n", n, lat[n / 2], lat[n * 99 / 100],
	       lat[n - 1]);
	fflush(stdout);
	fail = 0;
out:
	free(lat);
	raw_close(&r);
	return fail;
}

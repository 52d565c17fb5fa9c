/* SPDX-License-Identifier: MIT */
/* raw_fence.c -- rmp-raw's commands about the fence of an exclusive
 * ATTACH: a writer that keeps writing through its key, and a taker that
 * checks that nothing lands after its reply. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raw.h"
#include "token.h"

/* How long a scribbler writes at most before it gives up (ms). */
#define SCRIBBLE_MAX_MS 20000
/* A stalled scribbler's replies that meet RNR (at most its credits), and
 * how often it posts one receive buffer meanwhile: the server tries a
 * reply again after the RNR timer (655 ms: rdma_cm's min_rnr_timer 0) at
 * most 3 times (its rnr_retry), about 2.6 s in all, so a buffer every
 * second keeps its send queue stalled, never failing, a reply at a time,
 * for 16 s (a slow, sanitized, loaded VM needs seconds to start the
 * taker). */
#define STALL_REPLIES 16u
#define DRIBBLE_MS 1000

/* stdin_line -- is there a line (or EOF) on stdin now? Consumes it. */
static bool stdin_line(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char buf[256];
	ssize_t n;

	if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLIN | POLLHUP)))
		return false;
	n = read(STDIN_FILENO, buf, sizeof(buf));
	return n <= 0 || memchr(buf, '\n', (size_t)n) != NULL;
}

/* stall_replies -- use up every receive buffer, then send STATs whose
 * replies meet RNR (STALL_REPLIES, at most the credits): their number.
 * 0 on failure (printed). */
static unsigned stall_replies(struct raw *r)
{
	unsigned nstat, n = STALL_REPLIES;
	struct rmp_msg req;

	if (r->rep.credits && r->rep.credits < n)
		n = r->rep.credits;
	if (use_up_recvs(r, 0, &nstat))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		memset(&req, 0, sizeof(req));
		req.hdr.opcode = RMP_OP_STAT;
		if (post_request(r, &req))
			return 0;
	}
	say("%u STATs used up the receive buffers; %u more sent: their "
	    "replies meet RNR", nstat, n);
	return n;
}

/* fill_counter -- data[0..len) holds value n, 8 bytes at a time. */
static void fill_counter(struct raw *r, size_t len, uint64_t n)
{
	for (size_t i = 0; i + 8 <= len; i += 8)
		memcpy(r->data + i, &n, 8);
}

/*
 * run_scribble -- ALLOC a lease of LEASE_LEN bytes (ttl 120 s), print
 * its LEASE and TOKEN lines; with stall, wait for a line on stdin, then
 * use up every receive buffer and send STATs whose replies meet RNR, so
 * that the server's send queue on this connection stalls (a LOCAL_INV
 * posted there waits behind them), and print STALLED, else READY. Then
 * WRITE the lease whole, each time with the next counter value, back to
 * back, until one fails; while stalled, a receive buffer every
 * DRIBBLE_MS lets one reply through (the server's RNR retries never run
 * out). A line on stdin posts every receive buffer again ("RESUMED
 * due=N": N replies were still stalled then): the server's send queue
 * runs again. The end: "WRITES
 * N STATUS S" (S the failed WRITE's completion status); exit status 0 when
 * it was a remote access error (the key was revoked), 1 otherwise or
 * after SCRIBBLE_MAX_MS without a failure.
 */
int run_scribble(const char *host, const char *port, bool stall)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	struct rmp_token t = { .port = (uint16_t)atoi(port) };
	char tok[RMP_TOKEN_MAX];
	uint64_t n = 0, t0, dribbled;
	bool resumed = !stall;
	unsigned stalled = 0;
	int st = 0, fail = 1;

	if (connect_ok(&r, "scribble", host, port, LEASE_LEN))
		goto out;
	if (do_alloc(&r, LEASE_LEN, 120, 0, &d))
		goto out;
	print_lease(&d);
	snprintf(t.host, sizeof(t.host), "%s", host);
	t.id = d.id;
	t.secret = d.secret;
	if (rmp_token_format(&t, tok, sizeof(tok)) < 0)
		goto out;
	printf("TOKEN %s\n", tok);
	fflush(stdout);
	if (stall) {
		if (wait_stdin(&r, true))
			goto out;
		stalled = stall_replies(&r);
		if (!stalled)
			goto out;
		printf("STALLED\n");
	} else {
		printf("READY\n");
	}
	fflush(stdout);
	t0 = dribbled = now_ms();
	for (;;) {
		if (!resumed && now_ms() - dribbled >= DRIBBLE_MS) {
			post_kept_recvs(&r, 1);
			dribbled = now_ms();
		}
		if (!resumed && stdin_line()) {
			resumed = true;
			drain_cq(&r);
			printf("RESUMED due=%u\n", stalled > r.rx_count ?
			       stalled - r.rx_count : 0);
			fflush(stdout);
			say("WRITE %" PRIu64 " at %" PRIu64 " ms: posting the "
			    "receive buffers again (%u of %u replies came)", n,
			    now_ms() - t0, r.rx_count, stalled);
			resume_recvs(&r);
		}
		fill_counter(&r, LEASE_LEN, n + 1);
		st = rdma_op_within(&r, IBV_WR_RDMA_WRITE, d.addr, d.rkey,
				    LEASE_LEN, 5000);
		if (st != IBV_WC_SUCCESS)
			break;
		n++;
		if (now_ms() - t0 > SCRIBBLE_MAX_MS) {
			say("FAIL: %" PRIu64 " WRITEs in %d ms, none refused",
			    n, SCRIBBLE_MAX_MS);
			goto out;
		}
	}
	printf("WRITES %" PRIu64 " STATUS %s\n", n, wc_str(st));
	fflush(stdout);
	say("WRITE #%" PRIu64 " after %" PRIu64 " ms: %s", n + 1,
	    now_ms() - t0, wc_str(st));
	fail = st != IBV_WC_REM_ACCESS_ERR;
	if (fail)
		say("FAIL: the WRITEs ended with %s, not a remote access error",
		    wc_str(st));
out:
	raw_close(&r);
	return fail;
}

/* read_lease -- READ len bytes at addr into buf. 0 or 1 (printed). */
static int read_lease(struct raw *r, const struct rmp_lease_desc *d,
		      uint8_t *buf, size_t len, const char *which)
{
	int st = rdma_op(r, IBV_WR_RDMA_READ, d->addr, d->rkey, len);

	if (st != IBV_WC_SUCCESS) {
		say("FAIL: %s READ after the exclusive ATTACH: %s", which,
		    wc_str(st));
		return 1;
	}
	memcpy(buf, r->data, len);
	return 0;
}

/*
 * run_takeover -- connect, print READY, wait for a line on stdin; then
 * ATTACH lease id exclusively and READ its first LEASE_LEN bytes through
 * the new key twice, gap_ms apart. Prints "ATTACHED MS" (the ATTACH's
 * round trip) and "SAME" or "CHANGED AT BYTE I"; exit status 0 when the
 * two READs agree: no write through another key landed after the reply.
 */
int run_takeover(const char *host, const char *port, uint64_t id,
		 uint64_t secret, uint64_t gap_ms)
{
	static uint8_t first[LEASE_LEN], second[LEASE_LEN];
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	uint64_t t0, end;
	size_t len;
	int fail = 1;

	if (connect_ok(&r, "takeover", host, port, LEASE_LEN))
		goto out;
	printf("READY\n");
	fflush(stdout);
	if (wait_stdin(&r, true))
		goto out;
	req.hdr.opcode = RMP_OP_ATTACH;
	req.u.attach.id = id;
	req.u.attach.secret = secret;
	req.u.attach.flags = RMP_ATTACH_F_EXCLUSIVE;
	t0 = now_ms();
	if (request(&r, &req, &rep))
		goto out;
	if (rep.hdr.status) {
		say("FAIL: exclusive ATTACH: %s", errname(rep.hdr.status));
		goto out;
	}
	printf("ATTACHED %" PRIu64 "\n", now_ms() - t0);
	fflush(stdout);
	say("exclusive ATTACH answered after %" PRIu64 " ms (holders %u)",
	    now_ms() - t0, rep.u.lease.holders);
	len = rep.u.lease.length < LEASE_LEN ? rep.u.lease.length : LEASE_LEN;
	if (read_lease(&r, &rep.u.lease, first, len, "first"))
		goto out;
	for (end = now_ms() + gap_ms; now_ms() < end;)
		pump(&r, (int)(end - now_ms()), -1);
	if (read_lease(&r, &rep.u.lease, second, len, "second"))
		goto out;
	for (size_t i = 0; i < len; i++) {
		if (first[i] != second[i]) {
			uint64_t a, b;

			memcpy(&a, first + (i & ~(size_t)7), 8);
			memcpy(&b, second + (i & ~(size_t)7), 8);
			printf("CHANGED AT BYTE %zu\n", i);
			fflush(stdout);
			say("FAIL: the lease changed after the exclusive "
			    "ATTACH's reply: counter %" PRIu64 " then %" PRIu64
			    " %" PRIu64 " ms later", a, b, gap_ms);
			goto out;
		}
	}
	printf("SAME\n");
	fflush(stdout);
	say("ok: the lease did not change in the %" PRIu64 " ms after the "
	    "exclusive ATTACH's reply", gap_ms);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

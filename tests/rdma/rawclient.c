/* SPDX-License-Identifier: MIT */
/* rawclient.c -- rmp-raw: a raw protocol client for the RDMA tests. */

/*
 * Speaks the control protocol itself (librdmacm + verbs + the common codec),
 * without librmpool, so that tests can send what a library never would.
 *
 *   rmp-raw HOST PORT garbage          bad messages get error replies, then
 *                                      a garbage stream gets disconnected
 *   rmp-raw HOST PORT badconnect       bad connect data gets rejected
 *   rmp-raw HOST PORT connect ok|REASON|auth:DETAIL
 *                                      a proper connect is accepted (ok) or
 *                                      rejected with REASON (draining,
 *                                      cooldown, full, ... or a number), or
 *                                      accepted and its AUTH refused with
 *                                      DETAIL (wrong-key, tenant-full,
 *                                      peer-full, network)
 *   rmp-raw HOST PORT oob              a READ one byte past a lease fails
 *   rmp-raw HOST PORT hold [--stat-every MS] [--len BYTES] [--flags F]
 *                                      ALLOC (lease flags F) + WRITE a
 *                                      pattern (the first 4 KiB only of a
 *                                      lease over 1 MiB), print "LEASE ADDR
 *                                      RKEY LENGTH ID" (and with flags its
 *                                      TOKEN line),
 *                                      wait for a line or EOF on stdin
 *                                      (optionally sending STATs
 *                                      meanwhile), check the pattern, FREE
 *   rmp-raw HOST PORT steal ADDR RKEY LEN [--expect-success]
 *                                      a READ, a WRITE, an 8-byte FAA and a
 *                                      CAS at ADDR with a key not granted
 *                                      to this connection, each on a
 *                                      connection of its own, must fail
 *                                      with a remote access error (or, with
 *                                      --expect-success, all succeed)
 *   rmp-raw HOST PORT guess ADDR RKEY N LEN
 *                                      N connections each READ LEN bytes
 *                                      at ADDR with rkey (RKEY & ~0xff) | i;
 *                                      a cool-down reject counts as
 *                                      refused; any success fails
 *   rmp-raw HOST PORT expire TTL_S     a lease's rkey stops working on its
 *                                      own connection after the deadline
 *   rmp-raw HOST PORT freerace ROUNDS  per round, on a new connection:
 *                                      ALLOC, WRITE a tagged pattern, FREE
 *                                      and READ with the old rkey until
 *                                      one fails; no READ may deliver a
 *                                      byte but this lease's own
 *   rmp-raw HOST PORT credits ROUNDS   keep exactly `credits` STATs in
 *                                      flight until ROUNDS replies came
 *   rmp-raw HOST PORT stall TTL_S      ALLOC, print the LEASE line, stop
 *                                      posting receives and send STATs so
 *                                      that the server's replies meet RNR;
 *                                      print "STALLED", wait for stdin
 *   rmp-raw HOST PORT revoked [--len BYTES]
 *                                      ALLOC + WRITE a pattern, print the
 *                                      LEASE line, wait for a line on
 *                                      stdin (the operator revokes the
 *                                      lease meanwhile): then RENEW must
 *                                      get -EKEYEXPIRED and a READ with
 *                                      its rkey a remote access error
 *   rmp-raw HOST PORT fill N LEN TTL_S [--hold]
 *                                      N ALLOCs of LEN bytes, `credits` in
 *                                      flight, all of which must succeed;
 *                                      print "FILLED N" (the leases stay;
 *                                      with --hold the connection too,
 *                                      until a line on stdin: then a STAT
 *                                      must be answered)
 *   rmp-raw HOST PORT drainprobe       ALLOC + WRITE, print "READY", wait
 *                                      for a line: then ALLOC must get
 *                                      -ESHUTDOWN while READ, WRITE and
 *                                      FREE of the lease still work
 *   rmp-raw HOST PORT alloc LEN TTL_S [--free] [--expect ERRNO]
 *                            [--token] [--report]
 *                                      ALLOC; print the LEASE line (with
 *                                      --token a "TOKEN rmp://..." line
 *                                      too), with --free WRITE, READ back
 *                                      and FREE it; or expect the ALLOC to
 *                                      fail: ERRNO; --report prints
 *                                      "ALLOC STATUS DETAIL" and exits 0
 *                                      whatever the status
 *   rmp-raw HOST PORT byid attach|renew|free TOKEN|ID SECRET [--ttl S]
 *                            [--access N] [--exclusive] [--read]
 *                            [--expect ERRNO [--detail N]]
 *                                      the request by id and secret on a
 *                                      connection of its own: succeeds
 *                                      (printing ATTACH/RENEW/FREE lines),
 *                                      or is refused with ERRNO (detail N)
 *                                      and gives no lease
 *   rmp-raw HOST PORT scribble [--stall]
 *                                      ALLOC, print the LEASE and TOKEN
 *                                      lines, (with --stall: use up the
 *                                      receive buffers so that the
 *                                      server's send queue stalls on RNR,
 *                                      print STALLED; else READY), then
 *                                      WRITE a counter through the key
 *                                      back to back until a WRITE fails:
 *                                      "WRITES N STATUS S", which must be
 *                                      a remote access error; a line on
 *                                      stdin posts the receives again
 *   rmp-raw HOST PORT takeover TOKEN|ID SECRET GAP_MS
 *                                      connect, print READY, wait for a
 *                                      line on stdin, ATTACH exclusively
 *                                      ("ATTACHED MS"), READ the lease
 *                                      twice GAP_MS apart: "SAME" (the
 *                                      expectation) or "CHANGED AT BYTE I"
 *   rmp-raw HOST PORT rowrite TOKEN|ID SECRET
 *                                      attach read-only: READ works, an
 *                                      RDMA WRITE gets a remote access
 *                                      error
 *   rmp-raw HOST PORT auth wrong-key|replay|before-auth|relay
 *                                      a refused first message: its status
 *                                      and detail, no lease, and the
 *                                      server closes the connection
 *   rmp-raw HOST PORT tstat            STAT: the tenant's figures
 *   rmp-raw HOST PORT idle [COUNT]     connect (COUNT connections, 1 by
 *                                      default), print CONNECTED, hold
 *                                      them until stdin says
 *   rmp-raw HOST PORT free ID [ERRNO]  FREE of a lease id; expect ERRNO
 *                                      (a name like EPERM, or 0; default
 *                                      EPERM)
 *   rmp-raw HOST PORT notsend imm|inv  a receive of the server's used up
 *                                      by what is not a plain SEND: imm, an
 *                                      RDMA WRITE with immediate into the
 *                                      lease (it writes nothing into the
 *                                      receive buffer); inv, a SEND with
 *                                      invalidate of the lease's own rkey
 *                                      carrying a FREE of it. Another
 *                                      connection makes requests before
 *                                      and after. The server must answer
 *                                      nothing and close the connection;
 *                                      the other one must still be served
 *   rmp-raw HOST PORT voided GRACE_MS  ALLOC a lease, print its LEASE
 *                                      line, wait for a line on stdin (a
 *                                      reload voids our proof meanwhile):
 *                                      then every request must get
 *                                      -EKEYREVOKED and the lease's bytes
 *                                      stay readable until the server
 *                                      closes the connection, GRACE_MS
 *                                      (its rotate_grace) + 2 s at most
 *                                      after the reload was seen done,
 *                                      not before GRACE_MS after SIGHUP
 *                                      (the line may be "reload HUP_MS
 *                                      SEEN_MS", CLOCK_REALTIME ms; else
 *                                      both are now)
 *   rmp-raw HOST PORT silent SECS      connect, never AUTH: the server
 *                                      must close it within SECS (0:
 *                                      the client closes it at once)
 *   rmp-raw HOST PORT silentflood N SECS
 *                                      hold N connections that never
 *                                      AUTH, each closed one opened
 *                                      again at once (rejects retried
 *                                      10 ms later); FLOODING once all
 *                                      are open; until stdin says, or
 *                                      SECS
 *   rmp-raw HOST PORT churn LEN SECS   ALLOC and FREE LEN bytes back to
 *                                      back for SECS: -EDQUOT may come,
 *                                      -ENOSPC must not
 *   rmp-raw HOST PORT stat [COUNT]     COUNT STATs on one connection
 *   rmp-raw HOST PORT statloop SECONDS STATs back to back for SECONDS,
 *                                      then their latency figures
 *
 * Exit status: 0 the expectation was met, 1 it was not, 2 usage. Every
 * wait has a timeout; every resource is released (ASan builds run this).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw.h"
#include "token.h"

/* ---------------------------------------------------------------- main */

/* parse_errno -- "EPERM", "-EPERM", "0" or "-1" -> 0 / negative errno. */
static bool parse_errno(const char *s, int *out)
{
	static const int known[] = { EPERM, ENOENT, EINVAL, EBADMSG,
				     EOPNOTSUPP, EPROTONOSUPPORT, EKEYEXPIRED,
				     EDQUOT, EFBIG, ESHUTDOWN, ENOSPC, ENOMEM,
				     ENOTCONN, EACCES, EKEYREJECTED,
				     EALREADY };
	char *end;
	long v;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const char *n = errname(-known[i]);

		if (!strcmp(s, n) || !strcmp(s, n + 1)) {
			*out = -known[i];
			return true;
		}
	}
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v > 0 || v < -4095)
		return false;
	*out = (int)v;
	return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && end != s && !*end && s[0] != '-';
}

/* parse_lease_ref -- TOKEN (rmp://...) or ID SECRET at argv[*i]; advances
 * *i past it. false when neither. */
static bool parse_lease_ref(int argc, char **argv, int *i, uint64_t *id,
			    uint64_t *secret)
{
	struct rmp_token t;
	char *end;

	if (*i >= argc)
		return false;
	if (!strncmp(argv[*i], "rmp://", 6)) {
		if (rmp_token_parse(argv[*i], &t))
			return false;
		*id = t.id;
		*secret = t.secret;
		(*i)++;
		return true;
	}
	if (*i + 1 >= argc)
		return false;
	errno = 0;
	*id = strtoull(argv[*i], &end, 0);
	if (errno || *end || end == argv[*i])
		return false;
	*secret = strtoull(argv[*i + 1], &end, 0);
	if (errno || *end || end == argv[*i + 1])
		return false;
	*i += 2;
	return true;
}

/* parse_reason -- "ok" (0), a reject reason name or number, or
 * "auth:" and the name of an AUTH refusal's detail (WANT_AUTH). */
static bool parse_reason(const char *s, int *out)
{
	static const char *const details[] = {
		[RMP_DETAIL_BAD_PROOF] = "wrong-key",
		[RMP_DETAIL_TENANT_CONNECTIONS] = "tenant-full",
		[RMP_DETAIL_PEER_CONNECTIONS] = "peer-full",
		[RMP_DETAIL_NETWORK] = "network",
	};
	static const char *const names[] = {
		"ok", "bad-request", "proto", "unknown-tenant", "full",
		"draining", "internal", "cooldown", "anonymous",
		"tenant-full", "peer-full", "network",
	};
	uint64_t v;

	if (!strncmp(s, "auth:", 5)) {
		for (int i = 0; i < (int)(sizeof(details) / sizeof(details[0]));
		     i++)
			if (details[i] && !strcmp(s + 5, details[i])) {
				*out = WANT_AUTH | i;
				return true;
			}
		return false;
	}
	if (!strcmp(s, "unknown-client")) { /* its protocol 2 name */
		*out = RMP_REJ_UNKNOWN_TENANT;
		return true;
	}

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(s, names[i])) {
			*out = i;
			return true;
		}
	if (!parse_u64(s, &v) || v > 0xffff)
		return false;
	*out = (int)v;
	return true;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: rmp-raw HOST PORT garbage|badconnect|oob|drainprobe\n"
		"       rmp-raw HOST PORT connect ok|REASON|auth:DETAIL\n"
		"       rmp-raw HOST PORT hold [--stat-every MS] "
		"[--len BYTES] [--flags F]\n"
		"       rmp-raw HOST PORT revoked [--len BYTES]\n"
		"       rmp-raw HOST PORT fill N LEN TTL_S [--hold|--stall] "
		"[--upto]\n"
		"       rmp-raw HOST PORT steal ADDR RKEY LEN "
		"[--expect-success]\n"
		"       rmp-raw HOST PORT guess ADDR RKEY N LEN\n"
		"       rmp-raw HOST PORT expire TTL_S [--within MS]\n"
		"       rmp-raw HOST PORT stall TTL_S\n"
		"       rmp-raw HOST PORT freerace ROUNDS\n"
		"       rmp-raw HOST PORT credits ROUNDS\n"
		"       rmp-raw HOST PORT flood SECONDS\n"
		"       rmp-raw HOST PORT alloc LEN TTL_S [--free] "
		"[--expect ERRNO] [--token] [--report]\n"
		"       rmp-raw HOST PORT byid attach|renew|free TOKEN|ID SECRET\n"
		"               [--ttl S] [--access N] [--exclusive] [--read]\n"
		"               [--expect ERRNO [--detail N]]\n"
		"       rmp-raw HOST PORT rowrite TOKEN|ID SECRET\n"
		"       rmp-raw HOST PORT scribble [--stall]\n"
		"       rmp-raw HOST PORT takeover TOKEN|ID SECRET GAP_MS\n"
		"       rmp-raw HOST PORT auth "
		"wrong-key|replay|before-auth|relay\n"
		"       rmp-raw HOST PORT tstat|idle [COUNT]\n"
		"       rmp-raw HOST PORT free ID [ERRNO]\n"
		"       rmp-raw HOST PORT stat [COUNT]\n"
		"       rmp-raw HOST PORT silent SECONDS\n"
		"       rmp-raw HOST PORT silentflood N SECONDS\n"
		"       rmp-raw HOST PORT voided GRACE_MS\n"
		"       rmp-raw HOST PORT churn LEN SECONDS\n"
		"       rmp-raw HOST PORT statloop SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *host, *port, *cmd;
	uint64_t a, b, c, d;

	if (argc < 4)
		return usage();
	host = argv[1];
	port = argv[2];
	cmd = argv[3];
	prog = cmd;
	setvbuf(stderr, NULL, _IOLBF, 0);

	if (!strcmp(cmd, "garbage") && argc == 4)
		return run_garbage(host, port);
	if (!strcmp(cmd, "badconnect") && argc == 4)
		return run_badconnect(host, port);
	if (!strcmp(cmd, "oob") && argc == 4)
		return run_oob(host, port);
	if (!strcmp(cmd, "drainprobe") && argc == 4)
		return run_drainprobe(host, port);
	if (!strcmp(cmd, "connect") && argc == 5) {
		int want;

		if (!parse_reason(argv[4], &want))
			return usage();
		return run_connect(host, port, want);
	}
	if (!strcmp(cmd, "hold")) {
		uint64_t every = 0, len = LEASE_LEN, flags = 0;

		for (int i = 4; i < argc; i += 2) {
			if (i + 1 >= argc)
				return usage();
			if (!strcmp(argv[i], "--stat-every") &&
			    parse_u64(argv[i + 1], &every) && every > 0 &&
			    every < 600000)
				continue;
			if (!strcmp(argv[i], "--len") &&
			    parse_u64(argv[i + 1], &len) && len > 0 &&
			    len <= (1ull << 40))
				continue;
			if (!strcmp(argv[i], "--flags") &&
			    parse_u64(argv[i + 1], &flags) &&
			    flags <= UINT32_MAX)
				continue;
			return usage();
		}
		return run_hold(host, port, (int)every, len, (uint32_t)flags);
	}
	if (!strcmp(cmd, "revoked") && (argc == 4 || argc == 6)) {
		uint64_t len = LEASE_LEN;

		if (argc == 6 && (strcmp(argv[4], "--len") ||
				  !parse_u64(argv[5], &len) || len == 0 ||
				  len > (1ull << 40)))
			return usage();
		return run_revoked(host, port, len);
	}
	if (!strcmp(cmd, "fill") && argc >= 7 && argc <= 9) {
		enum fill_then then = FILL_EXIT;
		bool upto = false;

		for (int i = 7; i < argc; i++) {
			if (!strcmp(argv[i], "--hold") && then == FILL_EXIT)
				then = FILL_HOLD;
			else if (!strcmp(argv[i], "--stall") &&
				 then == FILL_EXIT)
				then = FILL_STALL;
			else if (!strcmp(argv[i], "--upto"))
				upto = true;
			else
				return usage();
		}
		if (!parse_u64(argv[4], &a) || a == 0 ||
		    !parse_u64(argv[5], &b) || b == 0 ||
		    !parse_u64(argv[6], &c) || c == 0 || c > UINT32_MAX)
			return usage();
		return run_fill(host, port, a, b, (uint32_t)c, then, upto);
	}
	if (!strcmp(cmd, "steal") && (argc == 7 || argc == 8)) {
		if (!parse_u64(argv[4], &a) || !parse_u64(argv[5], &b) ||
		    b > UINT32_MAX || !parse_u64(argv[6], &c) ||
		    (argc == 8 && strcmp(argv[7], "--expect-success")))
			return usage();
		return run_steal(host, port, a, (uint32_t)b, c, argc == 8);
	}
	if (!strcmp(cmd, "guess") && argc == 8) {
		if (!parse_u64(argv[4], &a) || !parse_u64(argv[5], &b) ||
		    b > UINT32_MAX || !parse_u64(argv[6], &c) ||
		    c == 0 || c > 100000 || !parse_u64(argv[7], &d) ||
		    d == 0 || d > (64u << 20))
			return usage();
		return run_guess(host, port, a, (uint32_t)b, (unsigned)c, d);
	}
	if (!strcmp(cmd, "expire") && (argc == 5 || argc == 7)) {
		b = 1500;
		if (!parse_u64(argv[4], &a) || a == 0 || a > 86400 ||
		    (argc == 7 && (strcmp(argv[5], "--within") ||
				   !parse_u64(argv[6], &b) || b > 600000)))
			return usage();
		return run_expire(host, port, (uint32_t)a, b);
	}
	if (!strcmp(cmd, "stall") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 86400)
			return usage();
		return run_stall(host, port, (uint32_t)a);
	}
	if (!strcmp(cmd, "voided") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a > 3600000)
			return usage();
		return run_voided(host, port, a);
	}
	if (!strcmp(cmd, "notsend") && argc == 5 &&
	    (!strcmp(argv[4], "imm") || !strcmp(argv[4], "inv")))
		return run_notsend(host, port, argv[4][1] == 'n');
	if (!strcmp(cmd, "freerace") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0)
			return usage();
		return run_freerace(host, port, a);
	}
	if (!strcmp(cmd, "credits") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0)
			return usage();
		return run_credits(host, port, a, 0);
	}
	if (!strcmp(cmd, "flood") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 3600)
			return usage();
		return run_credits(host, port, 0, (uint32_t)a);
	}
	if (!strcmp(cmd, "alloc") && argc >= 6) {
		bool free_it = false, token = false, report = false;
		int want = 0;

		if (!parse_u64(argv[4], &a) || a == 0 ||
		    !parse_u64(argv[5], &b) || b > UINT32_MAX)
			return usage();
		for (int i = 6; i < argc; i++) {
			if (!strcmp(argv[i], "--free"))
				free_it = true;
			else if (!strcmp(argv[i], "--token"))
				token = true;
			else if (!strcmp(argv[i], "--report"))
				report = true;
			else if (!strcmp(argv[i], "--expect") &&
				 i + 1 < argc && parse_errno(argv[i + 1],
							    &want))
				i++;
			else
				return usage();
		}
		if (report && want)
			return usage();
		return run_alloc(host, port, a, (uint32_t)b, free_it, want,
				 token, report);
	}
	if (!strcmp(cmd, "byid") && argc >= 6) {
		const char *op = argv[4];
		uint32_t ttl = 0, access = 0, flags = 0;
		int i = 5, want = 0, want_detail = -1;
		bool do_read = false;

		if (strcmp(op, "attach") && strcmp(op, "renew") &&
		    strcmp(op, "free"))
			return usage();
		if (!parse_lease_ref(argc, argv, &i, &a, &b))
			return usage();
		for (; i < argc; i++) {
			if (!strcmp(argv[i], "--exclusive")) {
				flags |= RMP_ATTACH_F_EXCLUSIVE;
			} else if (!strcmp(argv[i], "--read")) {
				do_read = true;
			} else if (i + 1 < argc && !strcmp(argv[i], "--ttl") &&
				   parse_u64(argv[i + 1], &c) &&
				   c <= UINT32_MAX) {
				ttl = (uint32_t)c;
				i++;
			} else if (i + 1 < argc &&
				   !strcmp(argv[i], "--access") &&
				   parse_u64(argv[i + 1], &c) &&
				   c <= RMP_ACC_ALL) {
				access = (uint32_t)c;
				i++;
			} else if (i + 1 < argc &&
				   !strcmp(argv[i], "--expect") &&
				   parse_errno(argv[i + 1], &want)) {
				i++;
			} else if (i + 1 < argc &&
				   !strcmp(argv[i], "--detail") &&
				   parse_u64(argv[i + 1], &c) && c <= 255) {
				want_detail = (int)c;
				i++;
			} else {
				return usage();
			}
		}
		if (want_detail >= 0 && !want)
			return usage();
		return run_byid(host, port, op, a, b, ttl, access, flags, want,
				want_detail, do_read);
	}
	if (!strcmp(cmd, "scribble") &&
	    (argc == 4 || (argc == 5 && !strcmp(argv[4], "--stall"))))
		return run_scribble(host, port, argc == 5);
	if (!strcmp(cmd, "takeover") && (argc == 6 || argc == 7)) {
		int i = 4;

		if (!parse_lease_ref(argc, argv, &i, &a, &b) || i + 1 != argc ||
		    !parse_u64(argv[i], &c) || c > 60000)
			return usage();
		return run_takeover(host, port, a, b, c);
	}
	if (!strcmp(cmd, "rowrite") && (argc == 5 || argc == 6)) {
		int i = 4;

		if (!parse_lease_ref(argc, argv, &i, &a, &b) || i != argc)
			return usage();
		return run_rowrite(host, port, a, b);
	}
	if (!strcmp(cmd, "auth") && argc == 5) {
		if (strcmp(argv[4], "wrong-key") && strcmp(argv[4], "replay") &&
		    strcmp(argv[4], "before-auth") && strcmp(argv[4], "relay"))
			return usage();
		return run_auth(host, port, argv[4]);
	}
	if (!strcmp(cmd, "tstat") && argc == 4)
		return run_tstat(host, port);
	if (!strcmp(cmd, "idle") && (argc == 4 || argc == 5)) {
		if (argc == 5 && (!parse_u64(argv[4], &a) || a == 0 ||
				  a > 64))
			return usage();
		return run_idle(host, port, argc == 5 ? (unsigned)a : 1);
	}
	if (!strcmp(cmd, "free") && (argc == 5 || argc == 6)) {
		int want = -EPERM;

		if (!parse_u64(argv[4], &a) ||
		    (argc == 6 && !parse_errno(argv[5], &want)))
			return usage();
		return run_free(host, port, a, want);
	}
	if (!strcmp(cmd, "stat") && (argc == 4 || argc == 5)) {
		if (argc == 5 && (!parse_u64(argv[4], &a) || a == 0 ||
				  a > 1000000))
			return usage();
		return run_stat(host, port, argc == 5 ? (unsigned)a : 1);
	}
	if (!strcmp(cmd, "silent") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a > 3600)
			return usage();
		return run_silent(host, port, (uint32_t)a);
	}
	if (!strcmp(cmd, "silentflood") && argc == 6) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 64 ||
		    !parse_u64(argv[5], &b) || b == 0 || b > 3600)
			return usage();
		return run_silentflood(host, port, (unsigned)a, (uint32_t)b);
	}
	if (!strcmp(cmd, "churn") && argc == 6) {
		if (!parse_u64(argv[4], &a) || a == 0 ||
		    !parse_u64(argv[5], &b) || b == 0 || b > 3600)
			return usage();
		return run_churn(host, port, a, (uint32_t)b);
	}
	if (!strcmp(cmd, "statloop") && argc == 5) {
		if (!parse_u64(argv[4], &a) || a == 0 || a > 3600)
			return usage();
		return run_statloop(host, port, (uint32_t)a);
	}
	return usage();
}

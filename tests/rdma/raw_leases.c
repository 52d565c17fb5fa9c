/* SPDX-License-Identifier: MIT */
/* raw_leases.c -- rmp-raw: lease requests and their keys. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raw.h"
#include "token.h"

/* --------------------------------------------------------------- hold */

static int print_token(const char *host, const char *port,
		       const struct rmp_lease_desc *d);

int run_hold(const char *host, const char *port, int stat_every_ms,
	     uint64_t length, uint32_t flags)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	struct rmp_msg rep;
	unsigned nstat = 0, nstat_fail = 0;
	uint64_t next_stat, t_free;
	bool transport, have_lease = false, done = false;
	int st, fails = 0, bad_bytes;

	if (connect_ok(&r, "hold", host, port, pattern_len(length))) {
		fails++;
		goto out;
	}
	if (do_alloc(&r, length, HOLD_TTL_S, flags, &d)) {
		fails++;
		goto out;
	}
	have_lease = true;
	if (write_pattern(&r, &d, d.id)) {
		fails++;
		goto out;
	}
	print_lease(&d);
	if (flags && print_token(host, port, &d)) {
		fails++;
		goto out;
	}
	say("holding lease %#" PRIx64 " (keys %s)%s", d.id,
	    keys_mode_str(r.rep.keys_mode),
	    stat_every_ms ? ", sending STATs" : "");

	/* Wait for a line or EOF on stdin; watch the connection. */
	next_stat = now_ms() + (uint64_t)stat_every_ms;
	while (!done) {
		int tmo = 1000;

		if (stat_every_ms) {
			int64_t left = (int64_t)next_stat - (int64_t)now_ms();

			tmo = left > 0 ? (int)left : 0;
		}
		if (pump(&r, tmo, STDIN_FILENO)) {
			char line[256];
			ssize_t n = read(STDIN_FILENO, line, sizeof(line));

			if (n <= 0 || memchr(line, '\n', (size_t)n))
				done = true;
		}
		if (r.disconnected || r.qp_error) {
			say("FAIL: the server dropped the holding "
			    "connection");
			fails++;
			goto out;
		}
		if (r.rx_count) {
			say("FAIL: unsolicited message from the server");
			fails++;
			r.rx_count = 0;
		}
		if (!done && stat_every_ms && now_ms() >= next_stat) {
			st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
			nstat++;
			if (transport || st) {
				nstat_fail++;
				say("FAIL: STAT #%u while holding: %s", nstat,
				    transport ? "no reply" : errname(st));
				if (transport) {
					fails++;
					goto out;
				}
			}
			next_stat = now_ms() + (uint64_t)stat_every_ms;
		}
	}
	if (nstat_fail)
		fails++;

	/* The lease must still hold exactly what was written. */
	bad_bytes = read_check(&r, &d, d.id, "at the end");
	fails += bad_bytes;
	t_free = now_ms();
	st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
	if (transport || st) {
		say("FAIL: FREE of the held lease: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		have_lease = false;
		say("FREE of %" PRIu64 " bytes answered in %" PRIu64 " ms",
		    d.length, now_ms() - t_free);
	}
	say("hold: %u STAT(s) answered%s; lease bytes %s; lease %s",
	    nstat - nstat_fail, nstat_fail ? " (some FAILED)" : "",
	    bad_bytes ? "CHANGED by someone else (or unreadable)" : "intact",
	    have_lease ? "NOT freed" : "freed");
out:
	if (have_lease)
		say("(lease %#" PRIx64 " left to expire)", d.id);
	raw_close(&r);
	say("hold: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* ------------------------------------------------------------- expire */

/* run_expire -- within_ms after its deadline a lease's rkey must fail on
 * the very connection it was granted to: the NIC refuses, no clock is
 * consulted on this side. */
int run_expire(const char *host, const char *port, uint32_t ttl_s,
	       uint64_t within_ms)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	uint64_t t_alloc, t_rep, end;
	int st, fail = 1;

	if (connect_ok(&r, "expire", host, port, LEASE_LEN))
		goto out;
	t_alloc = now_ms();
	if (do_alloc(&r, LEASE_LEN, ttl_s, 0, &d))
		goto out;
	t_rep = now_ms();
	say("lease %#" PRIx64 ": addr %#" PRIx64 " rkey %#x, %" PRIu64
	    " bytes, ttl %" PRIu64 " ms (keys %s)", d.id, d.addr, d.rkey,
	    d.length, d.ttl_ms, keys_mode_str(r.rep.keys_mode));
	if (write_pattern(&r, &d, d.id) ||
	    read_check(&r, &d, d.id, "before its deadline"))
		goto out;
	say("ok: WRITE and READ back before the deadline");
	/* The later of the asked and the granted deadline, plus within_ms. */
	end = t_alloc + (uint64_t)ttl_s * 1000;
	if (t_rep + d.ttl_ms > end)
		end = t_rep + d.ttl_ms;
	end += within_ms;
	while (now_ms() < end) {
		pump(&r, (int)(end - now_ms()), -1);
		if (r.disconnected || r.qp_error) {
			say("FAIL: the connection was lost %" PRIu64 " ms "
			    "after the ALLOC, before the check (%s): the "
			    "NIC's answer cannot be seen", now_ms() - t_alloc,
			    r.disconnected ? "disconnected" : "QP error");
			goto out;
		}
		if (r.rx_count) {
			say("note: %u unsolicited message(s) from the server",
			    r.rx_count);
			r.rx_count = 0;
		}
	}
	memset(r.data, 0, d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, d.length);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: READ with the same rkey %" PRIu64 " ms after the "
		    "ALLOC -> %s", now_ms() - t_alloc,
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: the lease was still readable with its rkey %"
		    PRIu64 " ms after the ALLOC (ttl %u s)", now_ms() - t_alloc,
		    ttl_s);
		hexdump("bytes read", r.data, d.length);
	} else {
		say("FAIL: READ after the deadline: %s, want %s", wc_str(st),
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	say("expire: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* ------------------------------------------------------------ revoked */

/*
 * run_revoked -- a lease the operator revokes (rmpoolctl revoke) while
 * this connection holds it: afterwards its RENEW gets -EKEYEXPIRED and
 * its rkey fails at the NIC. Prints "RENEW STATUS" and "READ STATUS".
 */
int run_revoked(const char *host, const char *port, uint64_t length)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	struct rmp_lease_desc d;
	size_t n = pattern_len(length);
	int st, fails = 0;

	if (connect_ok(&r, "revoked", host, port, n) ||
	    do_alloc(&r, length, HOLD_TTL_S, 0, &d) ||
	    write_pattern(&r, &d, d.id) ||
	    read_check(&r, &d, d.id, "before the revocation")) {
		fails++;
		goto out;
	}
	print_lease(&d);
	if (wait_stdin(&r, true)) {
		say("FAIL: the server dropped the connection before the "
		    "checks: a revocation must not");
		fails++;
		goto out;
	}
	req.hdr.opcode = RMP_OP_RENEW;
	req.u.renew.id = d.id;
	req.u.renew.secret = d.secret;
	st = request(&r, &req, &rep);
	if (!st)
		st = rep.hdr.status;
	printf("RENEW %s\n", errname(st));
	fflush(stdout);
	if (st != -EKEYEXPIRED) {
		say("FAIL: RENEW of the revoked lease: %s, want -EKEYEXPIRED",
		    errname(st));
		fails++;
	}
	memset(r.data, 0, n);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, n);
	printf("READ %s\n", wc_str(st));
	fflush(stdout);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: READ with the revoked rkey -> %s", wc_str(st));
	} else {
		say("FAIL: READ with the revoked rkey: %s, want %s",
		    wc_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		if (st == IBV_WC_SUCCESS)
			hexdump("bytes read", r.data, n < 64 ? n : 64);
		fails++;
	}
out:
	raw_close(&r);
	say("revoked: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* --------------------------------------------------------------- fill */

/*
 * run_fill -- n leases of len bytes, as fast as credits allow: many
 * leases for the operator's listings. Then FILL_HOLD keeps the connection
 * until stdin says so (it must stay up); FILL_STALL stalls it as `stall`
 * does, so that the leases' revocations queue behind replies that meet
 * RNR (more than a connection may have in flight, with n > 64).
 * upto: a refusal ends the fill instead of failing it; "FILLED GOT
 * ERRNO DETAIL" says how many were granted and what the refusal was.
 */
int run_fill(const char *host, const char *port, uint64_t n,
	     uint64_t len, uint32_t ttl_s, enum fill_then then,
	     bool upto)
{
	struct raw r = { 0 };
	uint64_t sent = 0, got = 0, t0;
	unsigned inflight = 0, detail = 0;
	int refused = 0;
	struct rmp_msg req, rep;
	bool transport;
	int ret, fail = 1;

	if (connect_ok(&r, "fill", host, port, 0))
		goto out;
	t0 = now_ms();
	while (refused ? inflight > 0 : got < n) {
		while (!refused && inflight < r.rep.credits &&
		       inflight < NRECV && sent < n) {
			memset(&req, 0, sizeof(req));
			req.hdr.opcode = RMP_OP_ALLOC;
			req.u.alloc.length = len;
			req.u.alloc.ttl_s = ttl_s;
			req.u.alloc.access = RMP_ACC_ALL;
			if (post_request(&r, &req))
				goto out;
			inflight++;
			sent++;
		}
		ret = next_reply(&r, &rep, TIMEOUT_MS);
		if (ret) {
			say("FAIL: no reply after %" PRIu64 " leases: %s", got,
			    errname(ret));
			goto out;
		}
		inflight--;
		if (upto && rep.hdr.opcode == RMP_OP_ALLOC && rep.hdr.status) {
			/* The first refusal ends the fill; the ALLOCs in
			 * flight are still counted. */
			if (!refused) {
				refused = rep.hdr.status;
				detail = RMP_MSG_DETAIL(rep.hdr.flags);
			}
			continue;
		}
		if (rep.hdr.opcode != RMP_OP_ALLOC || rep.hdr.status) {
			say("FAIL: ALLOC %" PRIu64 ": %s %s", got + 1,
			    rmp_opcode_name(rep.hdr.opcode),
			    errname(rep.hdr.status));
			goto out;
		}
		got++;
	}
	say("fill: %" PRIu64 " leases of %" PRIu64 " bytes in %" PRIu64
	    " ms%s%s%s%s", got, len, now_ms() - t0, refused ? ", then " : "",
	    refused ? errname(refused) : "", detail ? ": " : "",
	    rmp_detail_str(detail));
	if (upto)
		printf("FILLED %" PRIu64 " %s %u\n", got,
		       refused ? errname(refused) : "OK", detail);
	else
		printf("FILLED %" PRIu64 "\n", got);
	fflush(stdout);
	if (then == FILL_STALL) {
		unsigned nstat, extra;

		if (use_up_recvs(&r, 0, &nstat))
			goto out;
		send_unanswerable(&r, &extra);
		stalled(&r, nstat, extra);
	} else if (then == FILL_HOLD) {
		/* Keep the connection (and the keys) until told: it must
		 * stay up, whatever happens to the leases meanwhile. */
		if (wait_stdin(&r, true))
			goto out;
		ret = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || ret) {
			say("FAIL: STAT after the hold: %s",
			    transport ? "no reply" : errname(ret));
			goto out;
		}
		say("fill: the connection outlived the hold");
	}
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* -------------------------------------------------------------- alloc */

/* print_token -- "TOKEN rmp://HOST:PORT/ID-SECRET" of lease d on stdout
 * (what librmpool's rmp_lease_token gives). 0 or -1 (printed). */
static int print_token(const char *host, const char *port,
		       const struct rmp_lease_desc *d)
{
	struct rmp_token t = { .port = (uint16_t)atoi(port), .id = d->id,
			       .secret = d->secret };
	char buf[RMP_TOKEN_MAX];

	snprintf(t.host, sizeof(t.host), "%s", host);
	if (rmp_token_format(&t, buf, sizeof(buf)) < 0) {
		say("cannot format a token for host %s port %s", host, port);
		return -1;
	}
	printf("TOKEN %s\n", buf);
	fflush(stdout);
	return 0;
}

/*
 * run_alloc -- ALLOC of len bytes. With want: the ALLOC must fail with
 * want. With report: print "ALLOC STATUS DETAIL" (e.g. "ALLOC -EDQUOT 1")
 * and succeed whatever the status, as long as a reply came. With token:
 * print the lease's TOKEN line too.
 */
int run_alloc(const char *host, const char *port, uint64_t len,
	      uint32_t ttl_s, bool free_it, int want, bool token,
	      bool report)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	struct rmp_lease_desc d;
	bool transport;
	unsigned detail;
	int st, fail = 1;

	if (connect_ok(&r, "alloc", host, port, pattern_len(len)))
		goto out;
	req.hdr.opcode = RMP_OP_ALLOC;
	req.u.alloc.length = len;
	req.u.alloc.ttl_s = ttl_s;
	req.u.alloc.access = RMP_ACC_ALL;
	/* A transport error (printed) counts as the status for --expect,
	 * e.g. -ENOTCONN when the server drops the connection. */
	st = request(&r, &req, &rep);
	if (st && report)
		goto out;
	if (st) {
		detail = 0;
		memset(&rep, 0, sizeof(rep));
	} else {
		st = rep.hdr.status;
		detail = RMP_MSG_DETAIL(rep.hdr.flags);
	}
	if (st == 0) {
		d = rep.u.lease;
		remember(&r, &d);
		if (d.length < len) {
			say("FAIL: ALLOC gave %" PRIu64 " bytes, asked %" PRIu64,
			    d.length, len);
			goto out;
		}
	} else if (rep.hdr.payload_len != 0) {
		say("FAIL: the refusal of the ALLOC (%s) carries %u payload "
		    "bytes", errname(st), rep.hdr.payload_len);
		goto out;
	}
	if (report) {
		printf("ALLOC %s %u\n", errname(st), detail);
		fflush(stdout);
		say("ALLOC of %" PRIu64 " bytes -> %s%s%s", len, errname(st),
		    detail ? ": " : "", rmp_detail_str(detail));
	} else if (want) {
		if (st == want) {
			say("ok: ALLOC of %" PRIu64 " bytes -> %s%s%s", len,
			    errname(st), detail ? ": " : "",
			    rmp_detail_str(detail));
			fail = 0;
		} else {
			say("FAIL: ALLOC of %" PRIu64 " bytes: %s, want %s",
			    len, errname(st), errname(want));
			if (st == 0)
				do_simple(&r, RMP_OP_FREE, d.id, &rep,
					  &transport);
		}
		goto out;
	} else if (st) {
		say("FAIL: ALLOC of %" PRIu64 " bytes: %s%s%s", len,
		    errname(st), detail ? ": " : "", rmp_detail_str(detail));
		goto out;
	}
	if (st == 0) {
		print_lease(&d);
		if (token && print_token(host, port, &d))
			goto out;
	}
	if (st == 0 && free_it) {
		if (write_pattern(&r, &d, d.id) ||
		    read_check(&r, &d, d.id, "after the WRITE"))
			goto out;
		st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
		if (transport || st) {
			say("FAIL: FREE: %s",
			    transport ? "no reply" : errname(st));
			goto out;
		}
		say("ok: lease %#" PRIx64 " written, read back and freed",
		    d.id);
	}
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* --------------------------------------------------------------- byid */

/*
 * run_byid -- ATTACH, RENEW or FREE of a lease by id and secret from a
 * connection of its own. Success prints, for ATTACH, the LEASE line and
 * "ATTACH access=A holders=N ttl_ms=T" (with read: READ 8 bytes at
 * offset 0 and "VALUE V" as a decimal u64), for RENEW "RENEW
 * ttl_ms=T", for FREE "FREE ok". With want (non-zero) the request must
 * be refused with it (and want_detail, unless < 0) and give nothing.
 */
int run_byid(const char *host, const char *port, const char *op,
	     uint64_t id, uint64_t secret, uint32_t ttl_s,
	     uint32_t access, uint32_t flags, int want, int want_detail,
	     bool do_read)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	char what[96];
	uint64_t v;
	int st, fail = 1;

	if (connect_ok(&r, "byid", host, port, LEASE_LEN))
		goto out;
	if (!strcmp(op, "attach")) {
		req.hdr.opcode = RMP_OP_ATTACH;
		req.u.attach.id = id;
		req.u.attach.secret = secret;
		req.u.attach.access = access;
		req.u.attach.flags = flags;
	} else if (!strcmp(op, "renew")) {
		req.hdr.opcode = RMP_OP_RENEW;
		req.u.renew.id = id;
		req.u.renew.secret = secret;
		req.u.renew.ttl_s = ttl_s;
	} else {
		req.hdr.opcode = RMP_OP_FREE;
		req.u.free.id = id;
		req.u.free.secret = secret;
	}
	snprintf(what, sizeof(what), "%s of lease %#" PRIx64 " as tenant %s",
		 rmp_opcode_name(req.hdr.opcode), id,
		 raw_tenant()[0] ? raw_tenant() : "(anonymous)");
	if (request(&r, &req, &rep))
		goto out; /* printed */
	st = rep.hdr.status;
	if (want) {
		fail = refusal_ok(&rep, what, want, want_detail);
		goto out;
	}
	if (st) {
		unsigned detail = RMP_MSG_DETAIL(rep.hdr.flags);

		say("FAIL: %s: %s%s%s", what, errname(st), detail ? ": " : "",
		    rmp_detail_str(detail));
		goto out;
	}
	switch (req.hdr.opcode) {
	case RMP_OP_ATTACH:
		if (rep.u.lease.id != id) {
			say("FAIL: %s: the reply describes lease %#" PRIx64,
			    what, rep.u.lease.id);
			goto out;
		}
		print_lease(&rep.u.lease);
		printf("ATTACH access=%#x holders=%u ttl_ms=%" PRIu64 "\n",
		       rep.u.lease.access, rep.u.lease.holders,
		       rep.u.lease.ttl_ms);
		fflush(stdout);
		if (do_read) {
			st = rdma_op(&r, IBV_WR_RDMA_READ, rep.u.lease.addr,
				     rep.u.lease.rkey, 8);
			if (st != IBV_WC_SUCCESS) {
				say("FAIL: READ of the attached lease: %s",
				    wc_str(st));
				goto out;
			}
			memcpy(&v, r.data, sizeof(v));
			printf("VALUE %" PRIu64 "\n", v);
			fflush(stdout);
		}
		break;
	case RMP_OP_RENEW:
		printf("RENEW ttl_ms=%" PRIu64 "\n", rep.u.renew_rep.ttl_ms);
		fflush(stdout);
		break;
	default:
		printf("FREE ok\n");
		fflush(stdout);
		break;
	}
	say("ok: %s", what);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* ------------------------------------------------------------ rowrite */

/*
 * run_rowrite -- ATTACH a lease read-only: the key's access must say
 * READ only; an RDMA READ with it works, an RDMA WRITE of 8 bytes at
 * offset 0 must complete with a remote access error (the NIC refuses:
 * no library check is involved).
 */
int run_rowrite(const char *host, const char *port, uint64_t id,
		uint64_t secret)
{
	struct raw r = { 0 };
	struct rmp_msg req = { 0 }, rep;
	struct rmp_lease_desc d;
	uint64_t v;
	int st, fail = 1;

	if (connect_ok(&r, "rowrite", host, port, LEASE_LEN))
		goto out;
	req.hdr.opcode = RMP_OP_ATTACH;
	req.u.attach.id = id;
	req.u.attach.secret = secret;
	req.u.attach.access = RMP_ACC_READ;
	if (request(&r, &req, &rep))
		goto out;
	if (rep.hdr.status) {
		say("FAIL: read-only ATTACH: %s", errname(rep.hdr.status));
		goto out;
	}
	d = rep.u.lease;
	if (d.access != RMP_ACC_READ) {
		say("FAIL: read-only ATTACH gave a key with access %#x", d.access);
		goto out;
	}
	say("read-only key %#x to lease %#" PRIx64 " (holders %u, keys %s)",
	    d.rkey, d.id, d.holders, keys_mode_str(r.rep.keys_mode));
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, 8);
	if (st != IBV_WC_SUCCESS) {
		say("FAIL: READ with the read-only key: %s", wc_str(st));
		goto out;
	}
	memcpy(&v, r.data, sizeof(v));
	say("ok: READ with the read-only key: value %" PRIu64, v);
	printf("VALUE %" PRIu64 "\n", v);
	fflush(stdout);
	memset(r.data, 0xee, 8);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, d.addr, d.rkey, 8);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: WRITE with the read-only key -> %s",
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		printf("WRITE %s\n", ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fflush(stdout);
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: an RDMA WRITE with a read-only key succeeded");
	} else {
		say("FAIL: WRITE with the read-only key: %s, want %s",
		    wc_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	say("rowrite: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* ------------------------------------------------------ tstat, voided */

/* run_tstat -- one STAT; print the tenant's figures and the totals. */
int run_tstat(const char *host, const char *port)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "tstat", host, port, 0))
		goto out;
	st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
	if (transport || st) {
		say("FAIL: STAT: %s", transport ? "no reply" : errname(st));
		goto out;
	}
	printf("tenant_bytes %" PRIu64 " tenant_leases %" PRIu64
	       " quota_bytes %" PRIu64 " quota_leases %" PRIu64
	       " tenant_connections %" PRIu32 " quota_connections %" PRIu32
	       " leases %" PRIu64 " keys %" PRIu64 "\n",
	       rep.u.stat.tenant_bytes, rep.u.stat.tenant_leases,
	       rep.u.stat.quota_bytes, rep.u.stat.quota_leases,
	       rep.u.stat.tenant_connections, rep.u.stat.quota_connections,
	       rep.u.stat.leases, rep.u.stat.keys);
	fflush(stdout);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* refused_as -- send req; 0 when its reply status is want (printed as
 * "voided: WHAT -> STATUS"), 1 otherwise. */
static int refused_as(struct raw *r, struct rmp_msg *req, const char *what,
		      int want)
{
	struct rmp_msg rep;
	int st = request(r, req, &rep) ? -EIO : rep.hdr.status;

	say("voided: %s -> %s", what, errname(st));
	return st != want;
}

/* mono_of -- the CLOCK_MONOTONIC ms of a CLOCK_REALTIME ms (a moment
 * the script took with date); now when it is in the future. */
static uint64_t mono_of(unsigned long long real_ms)
{
	struct timespec ts;
	uint64_t now = now_ms(), real_now;

	clock_gettime(CLOCK_REALTIME, &ts);
	real_now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (real_ms > real_now || real_now - real_ms > now)
		return now;
	return now - (real_now - real_ms);
}

/* run_voided -- see the header: a connection whose proof a reload voided
 * is refused everything, and closed (its keys with it) after grace_ms. */
int run_voided(const char *host, const char *port, uint64_t grace_ms)
{
	static const unsigned ops[] = { RMP_OP_ALLOC, RMP_OP_RENEW,
					RMP_OP_FREE, RMP_OP_ATTACH,
					RMP_OP_STAT };
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	struct rmp_msg req;
	uint64_t t0, hup, cut = 0, reads = 0;
	unsigned long long hup_real, seen_real;
	int bad = 0, fail = 1;
	char line[64];

	if (connect_ok(&r, "voided", host, port, LEASE_LEN) ||
	    do_alloc(&r, LEASE_LEN, HOLD_TTL_S, 0, &d) ||
	    write_pattern(&r, &d, d.id))
		goto out;
	print_lease(&d);
	/* Without a grace the reload closes it before the line comes. The
	 * line may say when SIGHUP was sent and when the reload was seen
	 * done (CLOCK_REALTIME ms): the grace runs from the reload, which
	 * is between the two, not from when the line arrives. */
	wait_stdin_line(&r, false, line, sizeof(line));
	t0 = hup = now_ms();
	if (sscanf(line, "reload %llu %llu", &hup_real, &seen_real) == 2) {
		hup = mono_of(hup_real);
		t0 = mono_of(seen_real);
	}
	if (grace_ms) {
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			memset(&req, 0, sizeof(req));
			req.hdr.opcode = (uint16_t)ops[i];
			switch (ops[i]) {
			case RMP_OP_ALLOC:
				req.u.alloc.length = LEASE_LEN;
				req.u.alloc.ttl_s = 60;
				req.u.alloc.access = RMP_ACC_ALL;
				break;
			case RMP_OP_RENEW:
				req.u.renew.id = d.id;
				req.u.renew.secret = secret_of(&r, d.id);
				req.u.renew.ttl_s = 60;
				break;
			case RMP_OP_FREE:
				req.u.free.id = d.id;
				req.u.free.secret = secret_of(&r, d.id);
				break;
			case RMP_OP_ATTACH:
				req.u.attach.id = d.id;
				req.u.attach.secret = secret_of(&r, d.id);
				req.u.attach.access = RMP_ACC_READ;
				break;
			}
			bad += refused_as(&r, &req, rmp_opcode_name(ops[i]),
					  -EKEYREVOKED);
		}
	}
	/* Read until the server disconnects us (a READ under way then may
	 * not complete at all: it is given a second). */
	while (now_ms() - t0 < grace_ms + 10000) {
		pump(&r, 0, -1);
		if (r.disconnected || r.qp_error)
			break;
		memset(r.data, 0, LEASE_LEN);
		if (rdma_op_within(&r, IBV_WR_RDMA_READ, d.addr, d.rkey,
				   pattern_len(d.length), 1000) !=
		    IBV_WC_SUCCESS) {
			pump(&r, 1000, -1);
			break;
		}
		if (check_pattern(&r, pattern_len(d.length), d.id)) {
			bad++;
			break;
		}
		reads++;
		pump(&r, 100, -1);
	}
	/* Closed before the line came (no grace): 0. */
	cut = r.disconnected ? (r.lost_ms > t0 ? r.lost_ms - t0 : 0) :
	      now_ms() - t0;
	say("voided: %" PRIu64 " reads intact, then the connection was %s "
	    "%" PRIu64 " ms after the reload was seen done (%" PRId64
	    " ms after SIGHUP; rotate_grace %" PRIu64 " ms)",
	    reads, r.disconnected ? "closed" : r.qp_error ? "failed" :
	    "STILL UP", cut, r.disconnected ?
	    (int64_t)r.lost_ms - (int64_t)hup : -1, grace_ms);
	if (!r.disconnected && !r.qp_error)
		bad++;
	/* never before the grace from SIGHUP (the reload is after it; 50 ms
	 * for the daemon's coarse clock); at most the grace from when the
	 * reload was seen done, + the sweep that closes (every second) + 1 s
	 * for the close to be seen, under emulation beside other tests */
	else if (cut > grace_ms + 2000 ||
		 (r.disconnected && r.lost_ms + 50 < hup + grace_ms))
		bad++;
	if (grace_ms && !reads)
		bad++;
	fail = bad != 0;
out:
	raw_close(&r);
	say("voided: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* --------------------------------------------------------- free, stat */

int run_free(const char *host, const char *port, uint64_t id,
	     int want)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "free", host, port, 0))
		goto out;
	st = do_simple(&r, RMP_OP_FREE, id, &rep, &transport);
	if (transport)
		say("FAIL: FREE %#" PRIx64 ": no reply", id);
	else if (st != want)
		say("FAIL: FREE %#" PRIx64 ": %s, want %s", id, errname(st),
		    errname(want));
	else {
		say("ok: FREE %#" PRIx64 " -> %s", id, errname(st));
		fail = 0;
	}
out:
	raw_close(&r);
	return fail;
}

int run_stat(const char *host, const char *port, unsigned count)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int st, fail = 1;

	if (connect_ok(&r, "stat", host, port, 0))
		goto out;
	for (unsigned i = 0; i < count; i++) {
		st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || st) {
			say("FAIL: STAT #%u: %s", i + 1,
			    transport ? "no reply" : errname(st));
			goto out;
		}
	}
	printf("pool %" PRIu64 " free %" PRIu64 " leases %" PRIu64
	       " keys %s quarantined %" PRIu64 " zeroing %" PRIu64 "\n",
	       rep.u.stat.pool_bytes, rep.u.stat.free_bytes,
	       rep.u.stat.leases, keys_mode_str(rep.u.stat.keys_mode),
	       rep.u.stat.quarantined_bytes, rep.u.stat.zeroing_bytes);
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

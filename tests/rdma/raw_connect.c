/* SPDX-License-Identifier: MIT */
/* raw_connect.c -- rmp-raw: connecting and authenticating. */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "raw.h"

/* ------------------------------------------------------------ garbage */

/* stat_header -- a valid STAT request header into buf (24 bytes). */
static void stat_header(uint8_t *buf, uint64_t req_id)
{
	struct rmp_msg m = { 0 };

	m.hdr.opcode = RMP_OP_STAT;
	m.hdr.req_id = req_id;
	if (rmp_msg_encode(buf, RMP_MSG_HDR_LEN, &m) != RMP_MSG_HDR_LEN)
		abort(); /* the codec changed under this test */
}

/*
 * bad_step -- send len bytes, expect an error reply with want_status
 * and want_req_id. Returns 0 if so, 1 if not (printed).
 */
static int bad_step(struct raw *r, const char *name, const uint8_t *buf,
		    size_t len, uint64_t want_req_id, int want_status)
{
	struct rmp_msg rep;
	int ret, strays = 0;

	if (send_bytes(r, buf, len)) {
		say("FAIL: %s: could not send it", name);
		return 1;
	}
	ret = reply_for(r, want_req_id, &rep, TIMEOUT_MS, &strays);
	if (ret) {
		say("FAIL: %s: no error reply (%s; want %s, req_id %#" PRIx64
		    ")", name, ret == -ENOTCONN ? "connection lost" :
		    ret == -ETIMEDOUT ? "nothing within the timeout" :
		    errname(ret), errname(want_status), want_req_id);
		return 1;
	}
	if (rep.hdr.status != want_status) {
		say("FAIL: %s: reply status %s, want %s", name,
		    errname(rep.hdr.status), errname(want_status));
		return 1;
	}
	say("ok: %s -> %s (req_id %#" PRIx64 ")", name, errname(want_status),
	    rep.hdr.req_id);
	return strays ? 1 : 0;
}

int run_garbage(const char *host, const char *port)
{
	struct raw r = { 0 };
	uint8_t buf[RMP_MSG_MAX];
	struct rmp_lease_desc d;
	struct rmp_msg rep;
	bool transport;
	unsigned nbad = 0;
	int fails = 0, st;
	uint64_t id;

	if (connect_ok(&r, "garbage", host, port, 0)) {
		raw_close(&r);
		return 1;
	}
	say("connected: protocol %u, %u credits, keys %s", r.rep.version,
	    r.rep.credits, keys_mode_str(r.rep.keys_mode));

	/* 1. truncated: 10 bytes of a valid header. No header decoded, so
	 * the reply carries req_id 0. */
	stat_header(buf, 0x7101);
	fails += bad_step(&r, "truncated message (10 bytes)", buf, 10, 0,
			  -EBADMSG);
	nbad++;

	/* 2. unknown opcode 99. */
	stat_header(buf, 0x7102);
	buf[5] = 99;
	fails += bad_step(&r, "unknown opcode 99", buf, RMP_MSG_HDR_LEN,
			  0x7102, -EOPNOTSUPP);
	nbad++;

	/* 3. a protocol version after ours (a STAT otherwise). */
	stat_header(buf, 0x7103);
	buf[4] = RMP_PROTO_VERSION + 1;
	fails += bad_step(&r, "wrong version", buf, RMP_MSG_HDR_LEN, 0x7103,
			  -EPROTONOSUPPORT);
	nbad++;

	/* 4. payload_len 0xffffffff in a 24-byte STAT. */
	stat_header(buf, 0x7104);
	memset(buf + 8, 0xff, 4);
	fails += bad_step(&r, "payload_len 0xffffffff", buf, RMP_MSG_HDR_LEN,
			  0x7104, -EBADMSG);
	nbad++;

	/* 5. FREE of a lease that does not exist. */
	st = do_simple(&r, RMP_OP_FREE, 0x0123456789abcdefull, &rep,
		       &transport);
	if (transport || st != -ENOENT) {
		say("FAIL: FREE of a lease that does not exist: %s, want "
		    "-ENOENT", transport ? "no reply" : errname(st));
		fails++;
	} else {
		say("ok: FREE of a lease that does not exist -> -ENOENT");
	}

	/* 6. a valid ALLOC, FREE of it, FREE again. */
	if (do_alloc(&r, LEASE_LEN, 60, RMP_LEASE_F_EPHEMERAL, &d)) {
		say("FAIL: a valid ALLOC after the bad messages failed");
		fails++;
	} else {
		id = d.id;
		say("ok: valid ALLOC -> lease %#" PRIx64 ", %" PRIu64
		    " bytes", id, d.length);
		st = do_simple(&r, RMP_OP_FREE, id, &rep, &transport);
		if (transport || st != 0) {
			say("FAIL: FREE of own lease: %s",
			    transport ? "no reply" : errname(st));
			fails++;
		}
		st = do_simple(&r, RMP_OP_FREE, id, &rep, &transport);
		if (transport || st != -ENOENT) {
			say("FAIL: second FREE of the lease: %s, want -ENOENT",
			    transport ? "no reply" : errname(st));
			fails++;
		} else {
			say("ok: FREE, then FREE again -> -ENOENT");
		}
	}

	/* 7. a valid STAT is still answered. */
	st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
	if (transport || st != 0) {
		say("FAIL: STAT after the bad messages: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		say("ok: STAT still answered (%" PRIu64 " of %" PRIu64
		    " bytes free)", rep.u.stat.free_bytes,
		    rep.u.stat.pool_bytes);
	}

	/* 8. garbage until the server hangs up: it should after
	 * MAX_BAD_MSGS bad messages in all. */
	for (;;) {
		int ret, strays = 0;

		if (r.disconnected || r.qp_error)
			break;
		if (nbad >= 2 * MAX_BAD_MSGS) {
			say("FAIL: still connected after %u bad messages",
			    nbad);
			fails++;
			break;
		}
		memset(buf, 0xa5, 40);
		if (send_bytes(&r, buf, 40)) {
			/* The server may have hung up while we sent. */
			pump(&r, 1000, -1);
			if (!r.disconnected && !r.qp_error) {
				say("FAIL: garbage SEND failed on a live "
				    "connection");
				fails++;
			}
			break;
		}
		nbad++;
		ret = reply_for(&r, 0, &rep, GARBAGE_WAIT_MS, &strays);
		if (ret == -ENOTCONN)
			break;
		if (ret == -ETIMEDOUT && nbad < MAX_BAD_MSGS) {
			/* Keep going: the disconnect is still to be seen. */
			say("FAIL: garbage message %u: no error reply in %d "
			    "ms", nbad, GARBAGE_WAIT_MS);
			fails++;
			continue;
		}
		if (ret == -ETIMEDOUT)
			continue; /* the loop head checks the limit */
		if (ret) {
			say("FAIL: garbage message %u: %s", nbad,
			    errname(ret));
			fails++;
			break;
		}
		if (rep.hdr.status != -EBADMSG) {
			say("FAIL: garbage message %u: reply status %s, want "
			    "-EBADMSG", nbad, errname(rep.hdr.status));
			fails++;
		}
	}
	if (r.disconnected || r.qp_error) {
		/* The QP may fail first; the rdma_cm event follows. */
		uint64_t deadline = now_ms() + TIMEOUT_MS;

		while (!r.disconnected && now_ms() < deadline)
			pump(&r, 200, -1);
		say("%s: server disconnected after %u bad messages%s",
		    nbad > MAX_BAD_MSGS ? "FAIL" : "ok", nbad,
		    r.disconnected ? "" :
		    " (QP error, but no DISCONNECTED event)");
		if (nbad > MAX_BAD_MSGS || !r.disconnected)
			fails++;
	}
	raw_close(&r);
	say("garbage: %s (%d failed check(s))", fails ? "FAIL" : "PASS",
	    fails);
	return fails ? 1 : 0;
}

/* --------------------------------------------------------- badconnect */

static int bad_connect(const char *host, const char *port, const char *name,
		       const void *pdata, uint8_t plen, unsigned want_reason,
		       bool check_range)
{
	struct raw r = { 0 };
	struct rmp_conn_rej rej;
	int rej_ret = 0, rej_status = 0, ret, fail = 1;

	ret = raw_connect(&r, name, host, port, pdata, plen, 0, &rej, &rej_ret,
			  &rej_status);
	if (ret == 0)
		say("FAIL: %s: the server accepted the connection", name);
	else if (ret < 0)
		say("FAIL: %s: no RDMA_CM_EVENT_REJECTED", name);
	else if (rej_ret)
		say("FAIL: %s: rejected (status %d), but the reject private "
		    "data does not decode: %s", name, rej_status,
		    strerror(-rej_ret));
	else if (rej.reason != want_reason)
		say("FAIL: %s: reject reason %u (%s), want %u (%s)", name,
		    rej.reason, rmp_reject_reason_str(rej.reason), want_reason,
		    rmp_reject_reason_str(want_reason));
	else if (check_range && (rej.proto_min != RMP_PROTO_MIN ||
				 rej.proto_max != RMP_PROTO_MAX))
		say("FAIL: %s: reject says the server speaks %u-%u, want "
		    "%u-%u", name, rej.proto_min, rej.proto_max,
		    RMP_PROTO_MIN, RMP_PROTO_MAX);
	else {
		say("ok: %s -> rejected: %s (server speaks %u-%u)", name,
		    rmp_reject_reason_str(rej.reason), rej.proto_min,
		    rej.proto_max);
		fail = 0;
	}
	raw_close(&r);
	return fail;
}

int run_badconnect(const char *host, const char *port)
{
	struct rmp_conn_req req = { .proto_min = RMP_PROTO_MIN,
				    .proto_max = RMP_PROTO_MAX };
	uint8_t pdata[RMP_CONN_REQ_LEN];
	int fails = 0;

	snprintf(req.name, sizeof(req.name), "rmp-raw-badconnect");

	/* (a) no private data at all */
	fails += bad_connect(host, port, "no private data", NULL, 0,
			     RMP_REJ_BAD_REQUEST, false);

	/* (b) a wrong magic */
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	pdata[0] ^= 0xff;
	fails += bad_connect(host, port, "wrong magic", pdata, sizeof(pdata),
			     RMP_REJ_BAD_REQUEST, false);

	/* (c) a protocol newer than the server's only */
	req.proto_min = req.proto_max = RMP_PROTO_MAX + 1;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "a newer protocol only", pdata,
			     sizeof(pdata), RMP_REJ_PROTO, true);

	/* (d) an old client: protocol 2, its 48-byte connect data */
	req.proto_min = req.proto_max = 2;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "protocol 2 (an old client)", pdata,
			     48, RMP_REJ_PROTO, true);

	/* (e) a protocol 3 client: its proof names no server, a relay could
	 * forward it */
	req.proto_min = req.proto_max = 3;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "protocol 3 (unbound proof)", pdata,
			     sizeof(pdata), RMP_REJ_PROTO, true);

	/* (f) a protocol 4 client: it would take a server that proves
	 * nothing */
	req.proto_min = req.proto_max = 4;
	if (rmp_conn_req_encode(pdata, sizeof(pdata), &req) < 0)
		return 1;
	fails += bad_connect(host, port, "protocol 4 (server unproven)",
			     pdata, sizeof(pdata), RMP_REJ_PROTO, true);

	say("badconnect: %s (%d failed check(s))", fails ? "FAIL" : "PASS",
	    fails);
	return fails ? 1 : 0;
}

/* --------------------------------------------------------- drainprobe */

/*
 * run_drainprobe -- connect and hold a lease; on a line on stdin (sent
 * once the server is draining): ALLOC must get -ESHUTDOWN, while READ,
 * WRITE and FREE of the lease still work.
 */
int run_drainprobe(const char *host, const char *port)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d, d2;
	struct rmp_msg rep;
	bool transport, have_lease = false;
	int st, fails = 0;

	if (connect_ok(&r, "drainprobe", host, port, LEASE_LEN) ||
	    do_alloc(&r, LEASE_LEN, 60, 0, &d)) {
		fails++;
		goto out;
	}
	have_lease = true;
	if (write_pattern(&r, &d, d.id)) {
		fails++;
		goto out;
	}
	printf("READY %#" PRIx64 "\n", d.id);
	fflush(stdout);
	if (wait_stdin(&r, true)) {
		say("FAIL: the server dropped the connection before the "
		    "checks");
		fails++;
		goto out;
	}

	st = do_alloc(&r, LEASE_LEN, 60, 0, &d2);
	if (st == -ESHUTDOWN) {
		say("ok: ALLOC while draining -> -ESHUTDOWN");
	} else {
		say("FAIL: ALLOC while draining: %s, want -ESHUTDOWN",
		    errname(st));
		fails++;
		if (st == 0)
			do_simple(&r, RMP_OP_FREE, d2.id, &rep, &transport);
	}
	if (read_check(&r, &d, d.id, "while draining")) {
		fails++;
	} else {
		say("ok: READ of the lease while draining: bytes intact");
	}
	if (write_pattern(&r, &d, d.id + 1) ||
	    read_check(&r, &d, d.id + 1, "after a WRITE while draining")) {
		fails++;
	} else {
		say("ok: WRITE and READ back while draining");
	}
	st = do_simple(&r, RMP_OP_FREE, d.id, &rep, &transport);
	if (transport || st) {
		say("FAIL: FREE while draining: %s",
		    transport ? "no reply" : errname(st));
		fails++;
	} else {
		have_lease = false;
		say("ok: FREE while draining");
	}
out:
	if (have_lease)
		say("(lease %#" PRIx64 " left to the server)", d.id);
	raw_close(&r);
	say("drainprobe: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* --------------------------------------------------------------- auth */

/* The client nonce of the AUTHs here: a replay sends a whole AUTH
 * again, the nonce with the proof. */
static const uint8_t auth_cnonce[RMP_NONCE_LEN] = { 0xc0, 0xff, 0xee };

/* auth_send -- AUTH with proof (and auth_cnonce); 0 with *rep, or a
 * transport error. */
static int auth_send(struct raw *r, const uint8_t proof[RMP_PROOF_LEN],
		     struct rmp_msg *rep)
{
	struct rmp_msg req = { 0 };

	req.hdr.opcode = RMP_OP_AUTH;
	memcpy(req.u.auth.proof, proof, RMP_PROOF_LEN);
	memcpy(req.u.auth.client_nonce, auth_cnonce, RMP_NONCE_LEN);
	return request(r, &req, rep);
}

/*
 * expect_closed -- after a refused first message: an ALLOC sent now gets
 * no answer (certainly no lease), and the server closes the connection
 * within 5 s. 0 or the failed checks (printed).
 */
static int expect_closed(struct raw *r)
{
	struct rmp_msg req = { 0 }, rep;
	uint64_t t0 = now_ms(), deadline = t0 + 5000;
	int fails = 0;

	req.hdr.opcode = RMP_OP_ALLOC;
	req.u.alloc.length = LEASE_LEN;
	req.u.alloc.ttl_s = 60;
	req.u.alloc.access = RMP_ACC_ALL;
	/* Not waited for: a SEND to a QP the server tore down only ends
	 * when its retries run out. */
	if (!r->disconnected && !r->qp_error && post_request(r, &req))
		say("note: the ALLOC after the refusal could not be posted "
		    "(the connection is going)");
	while (now_ms() < deadline) {
		drain_cq(r);
		while (r->rx_count) {
			struct rx_msg *x = &r->rx[r->rx_head];

			r->rx_head = (r->rx_head + 1) % NRECV;
			r->rx_count--;
			if (parse_reply(x, &rep)) {
				say("FAIL: an undecodable message after the "
				    "refusal");
			} else if (rep.hdr.status == 0) {
				say("FAIL: %s after the refusal succeeded%s",
				    rmp_opcode_name(rep.hdr.opcode),
				    rep.hdr.opcode == RMP_OP_ALLOC ?
				    ": a lease was granted" : "");
			} else {
				say("FAIL: %s after the refusal answered %s "
				    "(nothing more should be answered)",
				    rmp_opcode_name(rep.hdr.opcode),
				    errname(rep.hdr.status));
			}
			fails++;
		}
		if (r->disconnected)
			break;
		pump(r, 100, -1);
	}
	if (!r->disconnected) {
		say("FAIL: the server did not close the connection within "
		    "5 s of the refusal");
		fails++;
	} else {
		say("ok: no answer to an ALLOC after the refusal; the server "
		    "closed the connection after %" PRIu64 " ms",
		    now_ms() - t0);
	}
	return fails;
}

/* auth_key -- the env tenant's key (RMPOOL_KEY_FILE). 0 or -1. */
static int auth_key(uint8_t key[RMP_KEY_MAX], size_t *len)
{
	const char *file = getenv("RMPOOL_KEY_FILE");
	char err[256];

	if (!raw_tenant()[0] || !file) {
		say("auth: needs RMPOOL_TENANT and RMPOOL_KEY_FILE");
		return -1;
	}
	if (rmp_auth_init() || rmp_key_load(file, key, len, err, sizeof(err))) {
		say("auth: %s", err);
		return -1;
	}
	return 0;
}

/*
 * run_auth -- refused first messages; each must be refused with its
 * status and detail, give nothing, and end the connection:
 *   wrong-key    AUTH with a proof made with another key: -EKEYREJECTED,
 *                RMP_DETAIL_BAD_PROOF
 *   replay       a proof accepted on connection 1, sent again on
 *                connection 2: -EKEYREJECTED, RMP_DETAIL_REPLAYED
 *   before-auth  ALLOC as the first message: -EACCES,
 *                RMP_DETAIL_NOT_AUTHED
 *   relay        the right key and nonce, but the proof made for another
 *                server (this one's address with its last byte changed):
 *                what a relay forwards from the client it lured.
 *                -EKEYREJECTED, RMP_DETAIL_BAD_PROOF
 */
int run_auth(const char *host, const char *port, const char *mode)
{
	struct raw r = { 0 }, r1 = { 0 };
	uint8_t key[RMP_KEY_MAX], proof[RMP_PROOF_LEN];
	uint8_t server[RMP_ENDPOINT_LEN];
	struct rmp_msg req = { 0 }, rep;
	char name[RMP_NAME_MAX + 1];
	size_t key_len = 0;
	int reason = 0, fails = 1;

	snprintf(name, sizeof(name), "rmp-raw-auth");
	if (strcmp(mode, "before-auth") && auth_key(key, &key_len))
		goto out;
	if (!strcmp(mode, "replay")) {
		/* Connection 1: the proof is accepted. */
		if (connect_as(&r1, "auth", host, port, 0, &reason, false)) {
			say("FAIL: connection 1 was not established");
			goto out;
		}
		if (raw_server(&r1, server))
			goto out;
		rmp_auth_proof(RMP_AUTH_CLIENT, key, key_len, r1.rep.nonce,
			       auth_cnonce, r1.rep.version, raw_tenant(),
			       name, server, proof);
		if (auth_send(&r1, proof, &rep))
			goto out;
		if (rep.hdr.status) {
			say("FAIL: connection 1: AUTH with the right key: %s",
			    errname(rep.hdr.status));
			goto out;
		}
		if (do_simple(&r1, RMP_OP_STAT, 0, &rep, &(bool){ false })) {
			say("FAIL: connection 1: STAT after AUTH failed");
			goto out;
		}
		say("ok: connection 1 authenticated and served");
	}
	if (connect_as(&r, "auth", host, port, 0, &reason, false)) {
		say("FAIL: the connection was not established");
		goto out;
	}
	if (!strcmp(mode, "wrong-key") || !strcmp(mode, "relay")) {
		/* One input of the proof wrong: the key, or the server. */
		bool relay = !strcmp(mode, "relay");

		if (raw_server(&r, server))
			goto out;
		if (relay)
			server[15] ^= 0x01; /* the last address byte */
		else
			key[0] ^= 0x5a;
		rmp_auth_proof(RMP_AUTH_CLIENT, key, key_len, r.rep.nonce,
			       auth_cnonce, r.rep.version, raw_tenant(),
			       name, server, proof);
		if (auth_send(&r, proof, &rep))
			goto out;
		fails = refusal_ok(&rep, relay ? "AUTH with a proof for "
				   "another server" : "AUTH with a wrong key",
				   -EKEYREJECTED, RMP_DETAIL_BAD_PROOF);
	} else if (!strcmp(mode, "replay")) {
		if (!memcmp(r.rep.nonce, r1.rep.nonce, RMP_NONCE_LEN)) {
			say("FAIL: connection 2 got the nonce of connection 1");
			goto out;
		}
		/* proof: connection 1's, still open */
		if (auth_send(&r, proof, &rep))
			goto out;
		fails = refusal_ok(&rep, "AUTH with connection 1's proof",
				   -EKEYREJECTED, RMP_DETAIL_REPLAYED);
	} else {
		req.hdr.opcode = RMP_OP_ALLOC;
		req.u.alloc.length = LEASE_LEN;
		req.u.alloc.ttl_s = 60;
		req.u.alloc.access = RMP_ACC_ALL;
		if (request(&r, &req, &rep))
			goto out;
		fails = refusal_ok(&rep, "ALLOC before AUTH", -EACCES,
				   RMP_DETAIL_NOT_AUTHED);
	}
	fails += expect_closed(&r);
out:
	rmp_wipe(key, sizeof(key));
	rmp_wipe(proof, sizeof(proof));
	raw_close(&r1);
	raw_close(&r);
	say("auth %s: %s", mode, fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* ------------------------------------------------------- silent, idle */

/*
 * run_silent -- connect and never send AUTH: the server must close the
 * connection (within secs); 0 when it did. With secs 0 the client closes
 * it at once instead (a flood's connection); 0 when it was connected.
 */
int run_silent(const char *host, const char *port, uint32_t secs)
{
	struct raw r = { 0 };
	uint64_t deadline;
	int reason = 0, ret, fail = 1;

	ret = connect_as(&r, "silent", host, port, 0, &reason, false);
	if (ret) {
		say("silent: %s", ret == 1 ? "rejected" : "no connection");
		goto out;
	}
	if (secs == 0) {
		say("silent: connected, closed at once");
		fail = 0;
		goto out;
	}
	deadline = now_ms() + (uint64_t)secs * 1000;
	while (!r.disconnected && now_ms() < deadline)
		pump(&r, 200, -1);
	say("silent: %s", r.disconnected ? "closed by the server" :
	    "FAIL: still open");
	fail = !r.disconnected;
out:
	raw_close(&r);
	return fail;
}

/* stdin_says -- a line or EOF on stdin within ms. */
static bool stdin_says(int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char line[256];
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return false;
	n = read(STDIN_FILENO, line, sizeof(line));
	return n <= 0 || memchr(line, '\n', (size_t)n) != NULL;
}

/*
 * run_silentflood -- hold n connections that never AUTH, opening a new
 * one as soon as the server closes one (a flood that keeps every pre-auth
 * slot it can busy, from one process: no start-up time between
 * connects), until a line or EOF on stdin, or secs. A reject (a full
 * server, a cool-down) is retried 10 ms later. Prints FLOODING once all
 * n are open, and at the end what happened; 0 when it held any.
 */
int run_silentflood(const char *host, const char *port, unsigned n,
		    uint32_t secs)
{
	uint64_t end = now_ms() + (uint64_t)secs * 1000, opened = 0,
		 closed = 0, rejected = 0;
	struct raw *r = calloc(n, sizeof(*r));
	bool *up = calloc(n, sizeof(*up)), told = false;
	int reason, ret;
	unsigned i;

	if (!r || !up) {
		say("silentflood: out of memory");
		free(r);
		free(up);
		return 1;
	}
	while (now_ms() < end) {
		for (i = 0; i < n; i++) {
			if (up[i]) {
				pump(&r[i], 0, -1);
				if (!r[i].disconnected)
					continue;
				closed++;
				raw_close(&r[i]);
				memset(&r[i], 0, sizeof(r[i]));
				up[i] = false;
			}
			reason = 0;
			ret = connect_as(&r[i], "silent", host, port, 0,
					 &reason, false);
			if (ret == 0) {
				up[i] = true;
				opened++;
				continue;
			}
			rejected += ret == 1;
			raw_close(&r[i]);
			memset(&r[i], 0, sizeof(r[i]));
		}
		if (!told && opened >= n) {
			printf("FLOODING\n");
			fflush(stdout);
			told = true;
		}
		if (stdin_says(10))
			break;
	}
	for (i = 0; i < n; i++)
		if (up[i])
			raw_close(&r[i]);
	say("silentflood: %u connection(s) held: %" PRIu64 " opened, %"
	    PRIu64 " closed by the server, %" PRIu64 " rejected", n, opened,
	    closed, rejected);
	free(r);
	free(up);
	return opened ? 0 : 1;
}

/* run_idle -- open n proven connections, print "CONNECTED", hold them
 * until a line or EOF on stdin; fails if the server drops any of them
 * meanwhile. */
int run_idle(const char *host, const char *port, unsigned n)
{
	struct raw *r = calloc(n, sizeof(*r));
	unsigned i, opened = 0;
	int fail = 1;

	if (!r) {
		say("idle: out of memory");
		return 1;
	}
	for (; opened < n; opened++)
		if (connect_ok(&r[opened], "idle", host, port, 0))
			goto out;
	printf("CONNECTED\n");
	fflush(stdout);
	if (wait_stdin(&r[0], true))
		goto out;
	fail = 0;
	for (i = 1; i < n; i++) {
		pump(&r[i], 0, -1);
		if (r[i].disconnected || r[i].qp_error) {
			say("idle: connection %u of %u was lost", i + 1, n);
			fail = 1;
		}
	}
out:
	for (i = 0; i < opened; i++)
		raw_close(&r[i]);
	free(r);
	return fail;
}

/* ------------------------------------------------------------ connect */

int run_connect(const char *host, const char *port, int want)
{
	struct raw r = { 0 };
	struct rmp_msg rep;
	bool transport;
	int reason = 0, ret, st, fail = 1;

	ret = connect_named(&r, "connect", host, port, 0, &reason);
	if (ret == 0 && want == 0) {
		st = do_simple(&r, RMP_OP_STAT, 0, &rep, &transport);
		if (transport || st)
			say("FAIL: connected, but STAT: %s",
			    transport ? "no reply" : errname(st));
		else {
			say("ok: connected and served");
			fail = 0;
		}
	} else if (ret == 0) {
		say("FAIL: connected, want %s", want & WANT_AUTH ?
		    rmp_detail_str((unsigned)want & 0xff) :
		    rmp_reject_reason_str((unsigned)want));
	} else if (ret == 1 && reason == want) {
		say("ok: rejected: %s", rmp_reject_reason_str((unsigned)want));
		fail = 0;
	} else if (ret == 1) {
		say("FAIL: rejected: %s, want %s", reason < 0 ?
		    "(undecodable reject data)" :
		    rmp_reject_reason_str((unsigned)reason), want ?
		    want & WANT_AUTH ? "an AUTH refused" :
		    rmp_reject_reason_str((unsigned)want) : "accepted");
	} else if (r.auth_status && (want & WANT_AUTH) &&
		   r.auth_detail == ((unsigned)want & 0xff)) {
		say("ok: accepted, AUTH refused: %s: %s",
		    errname(r.auth_status), rmp_detail_str(r.auth_detail));
		fail = 0;
	} else if (r.auth_status) {
		say("FAIL: AUTH refused (%s), want %s", rmp_detail_str(
		    r.auth_detail), want & WANT_AUTH ? rmp_detail_str(
		    (unsigned)want & 0xff) : want ? rmp_reject_reason_str(
		    (unsigned)want) : "served");
	} else {
		say("FAIL: the connect failed");
	}
	raw_close(&r);
	return fail;
}

/* SPDX-License-Identifier: MIT */
/* fuzz_auth.c -- libFuzzer target: the AUTH message and the proof check. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.h"
#include "../../daemon/tenant.h"
#include "proto.h"

/*
 * The input is what a client sends as its first message. It goes the way
 * the daemon's rmp_request_auth() takes it: rmp_msg_decode(), and when it
 * is an AUTH request, rmp_tenants_check_proof() against one fixed tenant,
 * server nonce, version, client name and server endpoint
 * (192.0.2.1:7471), with the client nonce the message carries. The
 * target asserts that the check accepts exactly the right proof for that
 * client nonce (computed here with rmp_auth_proof()) and nothing else,
 * that it answers the right one with the server's proof of the key for
 * the same nonces and anything else with zeros, and that it calls a
 * wrong proof a replay only when that proof was accepted before (for
 * another client nonce: this target keeps the proofs it saw accepted).
 * The proof of the same client for another server (a relay) is refused
 * as wrong.
 *
 * Each input is tried twice: as it is, and with its first 64 bytes put
 * into a well-formed AUTH request (proof, client nonce), so that random
 * bytes reach the proof check without a seed corpus. Seeds (the right
 * proof, alone and in a message, and a wrong one) are in
 * corpus/fuzz_auth/, made with:
 *
 *   import hmac, hashlib, struct
 *   key = bytes.fromhex(KEY_HEX); nonce = bytes((i * 37 + 11) % 256
 *                                               for i in range(32))
 *   cnonce = bytes(range(0x40, 0x60))
 *   server = bytes(10) + b"\xff\xff" + bytes([192, 0, 2, 1]) + \
 *            struct.pack(">H", 7471)
 *   msg = (b"rmpool-auth-v5\0\0" + nonce + cnonce + b"\x05" +
 *          b"fuzz".ljust(24, b"\0") + b"fuzz-client".ljust(24, b"\0") +
 *          server)
 *   proof = hmac.new(key, msg, hashlib.sha256).digest()
 *   hdr = struct.pack("<IBBHIiQ", 0x31504d52, 5, 6, 0, 64, 0, 1)
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY_HEX "f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"
#define TENANT "fuzz"
#define CLIENT "fuzz-client"

static struct rmp_tenants *tenants;
static struct rmp_tenant *tenant;
static uint8_t key[RMP_KEY_MAX];
static size_t key_len;
static uint8_t nonce[RMP_NONCE_LEN], other_nonce[RMP_NONCE_LEN];
static uint8_t server[RMP_ENDPOINT_LEN], relay[RMP_ENDPOINT_LEN];

/* setup -- the tenant table, from a config text like the daemon's. */
static void setup(void)
{
	static const char text[] = "[tenant." TENANT "]\n"
				   "key = " KEY_HEX "\n"
				   "connections = 4\n";
	static struct rmp_config cfg;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(7471),
				   .sin_addr.s_addr = htonl(0xc0000201) };
	char err[256];
	unsigned why;

	if (rmp_config_load_string(&cfg, text, "fuzz_auth", err,
				   sizeof(err))) {
		fprintf(stderr, "fuzz_auth: %s\n", err);
		abort();
	}
	tenants = rmp_tenants_new(&cfg);
	if (!tenants)
		abort();
	tenant = rmp_tenants_find(tenants, TENANT, &why);
	if (!tenant || tenant->anonymous)
		abort();
	for (unsigned i = 0; i < RMP_NONCE_LEN; i++) {
		nonce[i] = (uint8_t)(i * 37 + 11);
		other_nonce[i] = (uint8_t)~nonce[i];
	}
	if (rmp_auth_endpoint((struct sockaddr *)&sin, server))
		abort();
	/* A relay at 192.0.2.2:7471 that passed our nonce on. */
	sin.sin_addr.s_addr = htonl(0xc0000202);
	if (rmp_auth_endpoint((struct sockaddr *)&sin, relay))
		abort();
	memcpy(key, cfg.tenants[0].key, cfg.tenants[0].key_len);
	key_len = cfg.tenants[0].key_len;
	rmp_wipe(&cfg, sizeof(cfg));
}

/* proof -- role's proof for the server nonce sn, the client nonce cn and
 * the server endpoint ep. */
static void proof(enum rmp_auth_role role, const uint8_t *sn,
		  const uint8_t *cn, const uint8_t *ep,
		  uint8_t out[RMP_PROOF_LEN])
{
	rmp_auth_proof(role, key, key_len, sn, cn, RMP_PROTO_VERSION, TENANT,
		       CLIENT, ep, out);
}

/* The proofs accepted last, as the daemon's replay check remembers them
 * (daemon/tenant.c: a ring of the last 1024 accepted, every acceptance
 * a new entry). */
#define SEEN_MAX 1024
static uint8_t seen[SEEN_MAX][RMP_PROOF_LEN];
static unsigned nseen;

static int was_accepted(const uint8_t p[RMP_PROOF_LEN])
{
	for (unsigned i = 0; i < nseen && i < SEEN_MAX; i++)
		if (!memcmp(seen[i], p, RMP_PROOF_LEN))
			return 1;
	return 0;
}

/* verify -- rmp_tenants_check_proof, its server proof checked: the
 * server's proof for sn and cn on success, zeros otherwise. */
static unsigned verify(const uint8_t *sn, const uint8_t *cn,
		       const uint8_t p[RMP_PROOF_LEN])
{
	static const uint8_t zeros[RMP_PROOF_LEN];
	uint8_t sp[RMP_PROOF_LEN], want[RMP_PROOF_LEN];
	unsigned d;

	memset(sp, 0x5a, sizeof(sp));
	d = rmp_tenants_check_proof(tenants, tenant, sn, cn, RMP_PROTO_VERSION,
				    CLIENT, server, p, sp);
	if (d == RMP_DETAIL_NONE) {
		proof(RMP_AUTH_SERVER, sn, cn, server, want);
		if (memcmp(sp, want, sizeof(sp)))
			abort(); /* the server proved something else */
		memcpy(seen[nseen++ % SEEN_MAX], p, RMP_PROOF_LEN);
	} else if (memcmp(sp, zeros, sizeof(sp))) {
		abort(); /* a refusal that proves something */
	}
	return d;
}

/* check -- one message through the daemon's AUTH path. */
static void check(const uint8_t *buf, size_t len)
{
	uint8_t right[RMP_PROOF_LEN], relayed[RMP_PROOF_LEN];
	const uint8_t *cn;
	struct rmp_msg m;
	unsigned d;
	int same;

	if (rmp_msg_decode(buf, len, &m))
		return;
	if (m.hdr.opcode != RMP_OP_AUTH || (m.hdr.flags & RMP_MSG_F_REPLY))
		return;
	if (m.hdr.version != RMP_PROTO_VERSION || m.hdr.status != 0 ||
	    len != RMP_MSG_HDR_LEN + RMP_AUTH_PROOF_LEN + RMP_AUTH_NONCE_LEN ||
	    memcmp(m.u.auth.proof, buf + RMP_MSG_HDR_LEN, RMP_AUTH_PROOF_LEN) ||
	    memcmp(m.u.auth.client_nonce,
		   buf + RMP_MSG_HDR_LEN + RMP_AUTH_PROOF_LEN,
		   RMP_AUTH_NONCE_LEN))
		abort(); /* the decoder let through what it must not */
	cn = m.u.auth.client_nonce;
	proof(RMP_AUTH_CLIENT, nonce, cn, server, right);
	proof(RMP_AUTH_CLIENT, nonce, cn, relay, relayed);

	d = verify(nonce, cn, m.u.auth.proof);
	same = !memcmp(m.u.auth.proof, right, RMP_PROOF_LEN);
	if (d == RMP_DETAIL_NONE && !same)
		abort(); /* a wrong proof let in */
	if (same && d != RMP_DETAIL_NONE)
		abort(); /* the right proof refused */
	if (!same && d != RMP_DETAIL_BAD_PROOF &&
	    !(d == RMP_DETAIL_REPLAYED && was_accepted(m.u.auth.proof)))
		abort(); /* a wrong proof called a replay (or worse) */

	/* The right proof works on its own connection, again and again... */
	if (verify(nonce, cn, right) != RMP_DETAIL_NONE)
		abort();
	/* ...is a replay on another one... */
	if (verify(other_nonce, cn, right) != RMP_DETAIL_REPLAYED)
		abort();
	/* ...and the received proof is no good on another connection. */
	d = verify(other_nonce, cn, m.u.auth.proof);
	if (d != (was_accepted(m.u.auth.proof) ? RMP_DETAIL_REPLAYED :
		  RMP_DETAIL_BAD_PROOF))
		abort();
	/* A proof made for a relay is wrong here, nonces and all right. */
	if (verify(nonce, cn, relayed) != RMP_DETAIL_BAD_PROOF)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[RMP_MSG_MAX];
	struct rmp_msg m;
	int n;

	if (!tenants)
		setup();

	check(data, size);

	/* The first 64 bytes as the proof and client nonce of a well-formed
	 * AUTH request. */
	if (size < RMP_AUTH_PROOF_LEN + RMP_AUTH_NONCE_LEN)
		return 0;
	memset(&m, 0, sizeof(m));
	m.hdr.opcode = RMP_OP_AUTH;
	m.hdr.req_id = 1;
	memcpy(m.u.auth.proof, data, RMP_AUTH_PROOF_LEN);
	memcpy(m.u.auth.client_nonce, data + RMP_AUTH_PROOF_LEN,
	       RMP_AUTH_NONCE_LEN);
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	if (n != RMP_MSG_HDR_LEN + RMP_AUTH_PROOF_LEN + RMP_AUTH_NONCE_LEN)
		abort();
	check(buf, (size_t)n);
	return 0;
}

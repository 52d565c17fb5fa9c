/* SPDX-License-Identifier: MIT */
/* test_auth.c -- unit tests for tenant keys and the connect-time proof. */
#include "check.h"
#include "auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A 32-byte key 00 01 .. 1f and the nonce a0 a1 .. bf. */
static const char key_hex[] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/* The server endpoint of most proofs here: 192.0.2.1:7471. */
static const uint8_t srv[RMP_ENDPOINT_LEN] = {
	[10] = 0xff, 0xff, 192, 0, 2, 1, 0x1d, 0x2f,
};

static void fill_nonce(uint8_t nonce[RMP_NONCE_LEN])
{
	for (int i = 0; i < RMP_NONCE_LEN; i++)
		nonce[i] = (uint8_t)(0xa0 + i);
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* fill_cnonce -- the client's nonce of most proofs here: c0 c1 .. df. */
static void fill_cnonce(uint8_t cnonce[RMP_NONCE_LEN])
{
	for (int i = 0; i < RMP_NONCE_LEN; i++)
		cnonce[i] = (uint8_t)(0xc0 + i);
}

/* cproof -- a client's proof with the nonces of most tests here. */
static void cproof(const uint8_t *key, size_t len, uint8_t version,
		   const char *tenant, const char *name,
		   const uint8_t server[RMP_ENDPOINT_LEN],
		   uint8_t out[RMP_PROOF_LEN])
{
	uint8_t nonce[RMP_NONCE_LEN], cnonce[RMP_NONCE_LEN];

	fill_nonce(nonce);
	fill_cnonce(cnonce);
	rmp_auth_proof(RMP_AUTH_CLIENT, key, len, nonce, cnonce, version,
		       tenant, name, server, out);
}

/*
 * Known answers pin the construction of auth.h. They were computed
 * independently of libsodium and of this code, offline, with Python's
 * hmac module:
 *
 *   import hmac, hashlib, struct
 *   def proof(label, key, snonce, cnonce, version, tenant, name, server):
 *       msg = (label + snonce + cnonce + bytes([version]) +
 *              tenant.ljust(24, b"\0") + name.ljust(24, b"\0") + server)
 *       return hmac.new(key, msg, hashlib.sha256).hexdigest()
 *   C, S = b"rmpool-auth-v5\0\0", b"rmpool-serv-v5\0\0"
 *   v4 = bytes(10) + b"\xff\xff" + bytes([192, 0, 2, 1]) + \
 *        struct.pack(">H", 7471)
 *   v6 = bytes.fromhex("20010db8000000000000000000000001") + \
 *        struct.pack(">H", 1)
 *   cn = bytes(range(0xc0, 0xe0))
 *   proof(C, bytes(range(32)), bytes(range(0xa0, 0xc0)), cn, 5, b"acme",
 *         b"client-1", v4)
 *   proof(S, bytes(range(32)), bytes(range(0xa0, 0xc0)), cn, 5, b"acme",
 *         b"client-1", v4)
 *   proof(C, bytes.fromhex("00112233445566778899aabbccddeeff"), bytes(32),
 *         bytes(32), 5, b"T" * 24, b"n" * 24, v6)
 *   proof(C, b"\xff" * 64, b"\x5a" * 32, b"\xa5" * 32, 7, b"x", b"",
 *         b"\xff" * 18)
 */
static void test_known_answers(void)
{
	static const uint8_t v6[RMP_ENDPOINT_LEN] = {
		0x20, 0x01, 0x0d, 0xb8, [15] = 1, [17] = 1,
	};
	uint8_t key[RMP_KEY_MAX], nonce[RMP_NONCE_LEN], p[RMP_PROOF_LEN];
	uint8_t cnonce[RMP_NONCE_LEN], ones[RMP_ENDPOINT_LEN];
	char h[2 * RMP_PROOF_LEN + 1], t24[25], n24[25];
	size_t len;

	CHECK_EQ(rmp_key_parse(key_hex, key, &len), 0);
	CHECK_EQ(len, 32);
	cproof(key, len, 5, "acme", "client-1", srv, p);
	hex(p, sizeof(p), h);
	CHECK_STR(h, "b7c162dac2b19bd8373130fb6cae205a"
		     "723483176c72320269dda15500dcd9d1");
	/* The server's answer: the same inputs under its own label. */
	fill_nonce(nonce);
	fill_cnonce(cnonce);
	rmp_auth_proof(RMP_AUTH_SERVER, key, len, nonce, cnonce, 5, "acme",
		       "client-1", srv, p);
	hex(p, sizeof(p), h);
	CHECK_STR(h, "b781b93896f63b16fe289064373d1f73"
		     "524d675a8ade6ce05d23ea66817f4181");

	/* The shortest key; 24-byte names fill their fields, no NUL. */
	CHECK_EQ(rmp_key_parse("00112233445566778899aabbccddeeff", key, &len),
		 0);
	CHECK_EQ(len, RMP_KEY_MIN);
	memset(nonce, 0, sizeof(nonce));
	memset(cnonce, 0, sizeof(cnonce));
	memset(t24, 'T', 24);
	t24[24] = '\0';
	memset(n24, 'n', 24);
	n24[24] = '\0';
	rmp_auth_proof(RMP_AUTH_CLIENT, key, len, nonce, cnonce, 5, t24, n24,
		       v6, p);
	hex(p, sizeof(p), h);
	CHECK_STR(h, "49ff3006474fe9b6c225af92dcb6323f"
		     "827e1a94e4acb473005bf5f1aab57743");

	/* The longest key (one HMAC block), an empty name, version 7. */
	memset(key, 0xff, RMP_KEY_MAX);
	memset(nonce, 0x5a, sizeof(nonce));
	memset(cnonce, 0xa5, sizeof(cnonce));
	memset(ones, 0xff, sizeof(ones));
	rmp_auth_proof(RMP_AUTH_CLIENT, key, RMP_KEY_MAX, nonce, cnonce, 7,
		       "x", "", ones, p);
	hex(p, sizeof(p), h);
	CHECK_STR(h, "ace2d4490d36f68aced8d6ce3e06c2f0"
		     "7bdf8369896752d323af08e8d6cf101e");
}

static void test_proof_inputs(void)
{
	uint8_t key[RMP_KEY_MAX], nonce[RMP_NONCE_LEN], cnonce[RMP_NONCE_LEN];
	uint8_t base[RMP_PROOF_LEN], p[RMP_PROOF_LEN];
	size_t len, i, differ;
	char long_name[40];

	CHECK_EQ(rmp_key_parse(key_hex, key, &len), 0);
	fill_nonce(nonce);
	fill_cnonce(cnonce);
	cproof(key, len, 3, "acme", "client-1", srv, base);

	/* Deterministic. */
	cproof(key, len, 3, "acme", "client-1", srv, p);
	CHECK(!memcmp(p, base, sizeof(p)));
	CHECK(rmp_auth_equal(p, base));

	/* Any key byte, any byte of either nonce changes it. */
	for (i = 0, differ = 0; i < len; i++) {
		key[i] ^= 0x01;
		cproof(key, len, 3, "acme", "client-1", srv, p);
		key[i] ^= 0x01;
		differ += !!memcmp(p, base, sizeof(p));
	}
	CHECK_EQ(differ, len);
	for (i = 0, differ = 0; i < 2 * RMP_NONCE_LEN; i++) {
		uint8_t *b = i < RMP_NONCE_LEN ? &nonce[i] :
			     &cnonce[i - RMP_NONCE_LEN];

		*b ^= 0x80;
		rmp_auth_proof(RMP_AUTH_CLIENT, key, len, nonce, cnonce, 3,
			       "acme", "client-1", srv, p);
		*b ^= 0x80;
		differ += !!memcmp(p, base, sizeof(p));
	}
	CHECK_EQ(differ, 2 * RMP_NONCE_LEN);
	/* The two nonces are not interchangeable. */
	rmp_auth_proof(RMP_AUTH_CLIENT, key, len, cnonce, nonce, 3, "acme",
		       "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	/* A server's proof is never a client's (no reflection). */
	rmp_auth_proof(RMP_AUTH_SERVER, key, len, nonce, cnonce, 3, "acme",
		       "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	/* A key one byte shorter (its prefix) is another key. */
	cproof(key, len - 1, 3, "acme", "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));

	/* Version, tenant, name. */
	cproof(key, len, 2, "acme", "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 4, "acme", "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 3, "acmf", "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 3, "acm", "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 3, "", "client-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 3, "acme", "client-2", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 3, "acme", "", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	/* Tenant and name are separate fields: moving bytes between them
	 * is another proof. */
	cproof(key, len, 3, "acmec", "lient-1", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));
	cproof(key, len, 3, "client-1", "acme", srv, p);
	CHECK(memcmp(p, base, sizeof(p)));

	/* Longer strings are cut at 24 bytes, as on the wire. */
	memset(long_name, 'q', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	cproof(key, len, 3, "acme", long_name, srv, base);
	long_name[24] = '\0';
	cproof(key, len, 3, "acme", long_name, srv, p);
	CHECK(!memcmp(p, base, sizeof(p)));
	long_name[23] = '\0';
	cproof(key, len, 3, "acme", long_name, srv, p);
	CHECK(memcmp(p, base, sizeof(p)));

	/* rmp_auth_equal looks at all 32 bytes. */
	memcpy(p, base, sizeof(p));
	CHECK(rmp_auth_equal(p, base));
	p[0] ^= 1;
	CHECK(!rmp_auth_equal(p, base));
	p[0] ^= 1;
	p[RMP_PROOF_LEN - 1] ^= 0x80;
	CHECK(!rmp_auth_equal(p, base));
}

/* ep4, ep6 -- the endpoint of an IPv4 / IPv6 address text and port. */
static void ep4(const char *addr, uint16_t port,
		uint8_t out[RMP_ENDPOINT_LEN])
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_port = htons(port) };

	if (inet_pton(AF_INET, addr, &in.sin_addr) != 1 ||
	    rmp_auth_endpoint((struct sockaddr *)&in, out))
		abort();
}

static void ep6(const char *addr, uint16_t port, uint32_t scope,
		uint8_t out[RMP_ENDPOINT_LEN])
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(port),
				    .sin6_flowinfo = htonl(scope),
				    .sin6_scope_id = scope };

	if (inet_pton(AF_INET6, addr, &in6.sin6_addr) != 1 ||
	    rmp_auth_endpoint((struct sockaddr *)&in6, out))
		abort();
}

/*
 * The endpoint bytes: 16 address bytes, IPv4 mapped, then the port in
 * network order; an IPv4 client and a server on :: (which sees the
 * IPv4-mapped address) agree. Other families are refused.
 */
static void test_endpoint(void)
{
	static const uint8_t want6[RMP_ENDPOINT_LEN] = {
		0x20, 0x01, 0x0d, 0xb8, [14] = 0x12, 0x34, 0x1d, 0x2f,
	};
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	uint8_t e[RMP_ENDPOINT_LEN], f[RMP_ENDPOINT_LEN];

	ep4("192.0.2.1", 7471, e);
	CHECK(!memcmp(e, srv, sizeof(e)));
	ep6("::ffff:192.0.2.1", 7471, 0, f);
	CHECK(!memcmp(f, srv, sizeof(f)));
	/* IPv4-compatible (::a.b.c.d) is another address. */
	ep6("::192.0.2.1", 7471, 0, f);
	CHECK(memcmp(f, srv, sizeof(f)));

	ep6("2001:db8::1234", 7471, 0, e);
	CHECK(!memcmp(e, want6, sizeof(e)));
	/* Scope id and flow label are local to a side: left out. */
	ep6("2001:db8::1234", 7471, 3, f);
	CHECK(!memcmp(f, e, sizeof(f)));

	memset(e, 0xaa, sizeof(e));
	CHECK_EQ(rmp_auth_endpoint((struct sockaddr *)&un, e), -EAFNOSUPPORT);
	memset(f, 0, sizeof(f));
	CHECK(!memcmp(e, f, sizeof(e)));
	CHECK_EQ(rmp_auth_endpoint(NULL, e), -EAFNOSUPPORT);
}

/*
 * A wildcard listener takes its local address from the client's CM
 * header and checks it with rmp_auth_endpoint_local: loopback is this
 * host's, in either form, whatever the port; TEST-NET-1 is not.
 */
static void test_endpoint_local(void)
{
	uint8_t e[RMP_ENDPOINT_LEN];

	ep4("127.0.0.1", 7471, e);
	CHECK(rmp_auth_endpoint_local(e));
	ep6("::ffff:127.0.0.1", 1, 0, e);
	CHECK(rmp_auth_endpoint_local(e));
	ep4("192.0.2.1", 7471, e);
	CHECK(!rmp_auth_endpoint_local(e));
	ep6("2001:db8::1", 7471, 0, e);
	CHECK(!rmp_auth_endpoint_local(e));
}

/*
 * A proof is for one server endpoint: the one a relay's victim reached
 * (the relay's) does not make the proof for the server the relay
 * forwards it to. Every endpoint byte counts.
 */
static void test_proof_endpoint(void)
{
	uint8_t key[RMP_KEY_MAX], e[RMP_ENDPOINT_LEN];
	uint8_t base[RMP_PROOF_LEN], p[RMP_PROOF_LEN];
	size_t len, i, differ;

	CHECK_EQ(rmp_key_parse(key_hex, key, &len), 0);
	cproof(key, len, 4, "acme", "client-1", srv, base);

	/* Another address, another port: another proof. */
	ep4("192.0.2.2", 7471, e);
	cproof(key, len, 4, "acme", "client-1", e, p);
	CHECK(memcmp(p, base, sizeof(p)));
	ep4("192.0.2.1", 7472, e);
	cproof(key, len, 4, "acme", "client-1", e, p);
	CHECK(memcmp(p, base, sizeof(p)));
	ep6("2001:db8::1", 7471, 0, e);
	cproof(key, len, 4, "acme", "client-1", e, p);
	CHECK(memcmp(p, base, sizeof(p)));

	/* The client's IPv4 view and a server's IPv4-mapped view of one
	 * endpoint: the same proof. */
	ep6("::ffff:192.0.2.1", 7471, 0, e);
	cproof(key, len, 4, "acme", "client-1", e, p);
	CHECK(!memcmp(p, base, sizeof(p)));

	memcpy(e, srv, sizeof(e));
	for (i = 0, differ = 0; i < RMP_ENDPOINT_LEN; i++) {
		e[i] ^= 0x01;
		cproof(key, len, 4, "acme", "client-1", e, p);
		e[i] ^= 0x01;
		differ += !!memcmp(p, base, sizeof(p));
	}
	CHECK_EQ(differ, RMP_ENDPOINT_LEN);
	rmp_wipe(key, sizeof(key));
}

static void test_key_parse(void)
{
	uint8_t key[RMP_KEY_MAX], canary[RMP_KEY_MAX + 8];
	char text[2 * RMP_KEY_MAX + 16];
	size_t len;

	len = 99;
	CHECK_EQ(rmp_key_parse(key_hex, key, &len), 0);
	CHECK_EQ(len, 32);
	CHECK_EQ(key[0], 0x00);
	CHECK_EQ(key[1], 0x01);
	CHECK_EQ(key[31], 0x1f);

	/* 32 digits (16 bytes), the least; upper case is hex too. */
	CHECK_EQ(rmp_key_parse("00112233445566778899AABBCCDDEEFF", key, &len),
		 0);
	CHECK_EQ(len, 16);
	CHECK_EQ(key[10], 0xaa);
	CHECK_EQ(key[15], 0xff);
	/* 128 digits (64 bytes), the most. */
	memset(text, 'e', 128);
	text[128] = '\0';
	memset(canary, 0x5a, sizeof(canary));
	CHECK_EQ(rmp_key_parse(text, canary, &len), 0);
	CHECK_EQ(len, 64);
	CHECK_EQ(canary[63], 0xee);
	CHECK_EQ(canary[64], 0x5a); /* nothing written past the key */
	/* Whitespace around it. */
	CHECK_EQ(rmp_key_parse(" \t00112233445566778899aabbccddeeff\n", key,
			       &len), 0);
	CHECK_EQ(len, 16);
	CHECK_EQ(key[0], 0x00);
	CHECK_EQ(key[1], 0x11);
	CHECK_EQ(rmp_key_parse("\n\n00112233445566778899aabbccddeeff\r\n  \n",
			       key, &len), 0);
	CHECK_EQ(len, 16);

	/* Refused: too short, too long, odd, not hex, inner space. */
	len = 77;
	CHECK_EQ(rmp_key_parse("00112233445566778899aabbccddee", key, &len),
		 -EINVAL); /* 30 digits */
	CHECK_EQ(len, 77);
	CHECK_EQ(rmp_key_parse("", key, &len), -EINVAL);
	CHECK_EQ(rmp_key_parse("   \n", key, &len), -EINVAL);
	memset(text, 'e', 130);
	text[130] = '\0';
	CHECK_EQ(rmp_key_parse(text, key, &len), -EINVAL); /* 65 bytes */
	CHECK_EQ(rmp_key_parse("00112233445566778899aabbccddeeff0", key, &len),
		 -EINVAL); /* 33 digits */
	CHECK_EQ(rmp_key_parse("00112233445566778899aabbccddeefg", key, &len),
		 -EINVAL);
	CHECK_EQ(rmp_key_parse("0x112233445566778899aabbccddeeff", key, &len),
		 -EINVAL);
	CHECK_EQ(rmp_key_parse("0x00112233445566778899aabbccddeeff", key,
			       &len), -EINVAL);
	CHECK_EQ(rmp_key_parse("00112233445566778899 aabbccddeeff0011", key,
			       &len), -EINVAL);
	CHECK_EQ(rmp_key_parse("00112233445566778899aabbccddeeff x", key,
			       &len), -EINVAL);
	CHECK_EQ(rmp_key_parse("00112233445566778899aabbccddeeff\n"
			       "00112233445566778899aabbccddeeff", key, &len),
		 -EINVAL);
	CHECK_EQ(rmp_key_parse("00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee",
			       key, &len), -EINVAL);
	CHECK_EQ(len, 77);
}

static char tmpdir[64];

/* write_file -- path in tmpdir holding text, with mode; 0 or -1. */
static int write_file(char *path, size_t cap, const char *text, mode_t mode)
{
	int fd;

	snprintf(path, cap, "%s/keyXXXXXX", tmpdir);
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void test_key_load(void)
{
	static const char secret_hex[] =
		"c0ffee00c0ffee00c0ffee00c0ffee00deadbeefdeadbeef";
	uint8_t key[RMP_KEY_MAX];
	char path[128], link[160], err[512];
	size_t len;
	int ret;

	/* 600: fine. */
	CHECK_EQ(write_file(path, sizeof(path), "c0ffee00c0ffee00c0ffee00"
			    "c0ffee00deadbeefdeadbeef\n", 0600), 0);
	len = 0;
	err[0] = '\0';
	CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)), 0);
	CHECK_EQ(len, 24);
	CHECK_EQ(key[0], 0xc0);
	CHECK_EQ(key[23], 0xef);
	/* 400 is fine as well. */
	CHECK_EQ(chmod(path, 0400), 0);
	CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)), 0);

	/* Group or others may read or write it: refused, with the fix,
	 * without the key. */
	static const mode_t bad_modes[] = { 0640, 0644, 0604, 0620, 0602,
					    0610, 0666 };
	for (size_t i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]);
	     i++) {
		char want[160];

		CHECK_EQ(chmod(path, bad_modes[i]), 0);
		err[0] = '\0';
		len = 99;
		ret = rmp_key_load(path, key, &len, err, sizeof(err));
		CHECK_EQ(ret, -EACCES);
		snprintf(want, sizeof(want), "chmod 600 %s", path);
		if (!check_report(strstr(err, want) != NULL,
				  "message says chmod 600 FILE", __FILE__,
				  __LINE__))
			printf("#   mode %o: \"%s\"\n", (unsigned)bad_modes[i],
			       err);
		CHECK(strstr(err, path) == err); /* "FILE: ..." */
		CHECK(!strstr(err, "c0ffee"));
		CHECK(!strstr(err, "deadbeef"));
	}
	CHECK_EQ(chmod(path, 0600), 0);

	/* A symlink to a good key file is refused (O_NOFOLLOW). */
	snprintf(link, sizeof(link), "%s.link", path);
	CHECK_EQ(symlink(path, link), 0);
	err[0] = '\0';
	ret = rmp_key_load(link, key, &len, err, sizeof(err));
	CHECK_EQ(ret, -ELOOP);
	CHECK(strstr(err, link) != NULL);
	CHECK(!strstr(err, "c0ffee"));
	unlink(link);

	/* Owned by someone else (only root can arrange that). */
	if (geteuid() == 0) {
		CHECK_EQ(chown(path, 65534, 65534), 0);
		err[0] = '\0';
		CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)),
			 -EACCES);
		CHECK(strstr(err, "owned by uid 65534") != NULL);
		CHECK(!strstr(err, "c0ffee"));
		CHECK_EQ(chown(path, 0, 0), 0);
	} else {
		CHECK(1); /* skipped: not root */
		CHECK(1);
		CHECK(1);
		CHECK(1);
		CHECK(1);
	}
	unlink(path);

	/* Missing. */
	snprintf(path, sizeof(path), "%s/missing.key", tmpdir);
	err[0] = '\0';
	CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, path) != NULL);

	/* A directory is not a key file. */
	err[0] = '\0';
	CHECK_EQ(rmp_key_load(tmpdir, key, &len, err, sizeof(err)), -EACCES);
	CHECK(strstr(err, "not a regular file") != NULL);

	/* Not a key: the message says what is expected, never what the
	 * file holds. */
	CHECK_EQ(write_file(path, sizeof(path), "password=hunter2-sekrit\n",
			    0600), 0);
	err[0] = '\0';
	ret = rmp_key_load(path, key, &len, err, sizeof(err));
	CHECK(ret < 0);
	CHECK_EQ(ret, -EINVAL);
	CHECK(strstr(err, "not a key") != NULL);
	CHECK(strstr(err, "32 to 128 hex digits") != NULL);
	CHECK(!strstr(err, "hunter2"));
	CHECK(!strstr(err, "sekrit"));
	unlink(path);
	/* A key that is one digit short: no digit of it in the message. */
	CHECK_EQ(write_file(path, sizeof(path), secret_hex + 17, 0600), 0);
	err[0] = '\0';
	CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)), -EINVAL);
	CHECK(!strstr(err, "deadbeef"));
	CHECK(!strstr(err, "0c0ffee"));
	unlink(path);
	/* Empty. */
	CHECK_EQ(write_file(path, sizeof(path), "", 0600), 0);
	CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)), -EINVAL);
	unlink(path);
	/* The longest key with a trailing newline. */
	{
		char text[2 * RMP_KEY_MAX + 2];

		memset(text, '7', 2 * RMP_KEY_MAX);
		strcpy(text + 2 * RMP_KEY_MAX, "\n");
		CHECK_EQ(write_file(path, sizeof(path), text, 0600), 0);
		CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)), 0);
		CHECK_EQ(len, RMP_KEY_MAX);
		CHECK_EQ(key[RMP_KEY_MAX - 1], 0x77);
		unlink(path);
	}
	/* A message cut to a small buffer is still NUL terminated. */
	snprintf(path, sizeof(path), "%s/missing.key", tmpdir);
	memset(err, 'x', sizeof(err));
	CHECK_EQ(rmp_key_load(path, key, &len, err, 8), -ENOENT);
	CHECK_EQ(strlen(err), 7);
}

/*
 * as_user -- rmp_key_load(path) with effective uid and gid id, then back
 * to root; the message into err. Only root can call it.
 */
static int as_user(uid_t id, const char *path, char *err, size_t errlen)
{
	uint8_t key[RMP_KEY_MAX];
	size_t len;
	int ret;

	if (setegid((gid_t)id) || seteuid(id))
		return -EPERM;
	err[0] = '\0';
	ret = rmp_key_load(path, key, &len, err, errlen);
	if (seteuid(0) || setegid(0)) {
		perror("seteuid");
		exit(EXIT_FAILURE);
	}
	return ret;
}

/*
 * A service running as its own user (rmpoold as rmpool) may also read a
 * key that root owns and only the service's group may read: root:rmpool
 * 0640, so an administrator manages it and the service cannot change it.
 * The owner of a file, root included, keeps to 0600.
 */
static void test_key_load_root_group(void)
{
	static const uid_t svc = 65534; /* nobody, and as a gid nogroup */
	char dir[96], path[128], err[512], want[256];
	size_t i;

	if (geteuid() != 0) {
		printf("# skipped: root-owned key files need root\n");
		for (i = 0; i < 19; i++)
			CHECK(1);
		return;
	}
	/* A directory the service may search. */
	snprintf(dir, sizeof(dir), "%s/svcXXXXXX", tmpdir);
	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ(chmod(tmpdir, 0711) | chmod(dir, 0711), 0);
	snprintf(path, sizeof(path), "%s/svc.key", dir);
	{
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		static const char text[] = "00112233445566778899aabbccddeeff\n";

		CHECK(fd >= 0 && write(fd, text, sizeof(text) - 1) ==
			  (ssize_t)sizeof(text) - 1 && close(fd) == 0);
	}

	/* root:svc 0640 and 0440: the service reads it. */
	CHECK_EQ(chown(path, 0, (gid_t)svc) | chmod(path, 0640), 0);
	CHECK_EQ(as_user(svc, path, err, sizeof(err)), 0);
	CHECK_EQ(chmod(path, 0440), 0);
	CHECK_EQ(as_user(svc, path, err, sizeof(err)), 0);

	/* Group-writable, or others may read: refused, with the fix. */
	static const mode_t bad[] = { 0660, 0644 };
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(chmod(path, bad[i]), 0);
		if (!check_report(as_user(svc, path, err, sizeof(err)) ==
				  -EACCES, "group-writable or world-readable "
				  "refused", __FILE__, __LINE__))
			printf("#   mode %o: \"%s\"\n", (unsigned)bad[i], err);
	}
	snprintf(want, sizeof(want), "&& chmod 640 %s", path);
	CHECK(strstr(err, want) != NULL);

	/* Root itself keeps to 0600 for a root:root 0640 file. */
	CHECK_EQ(chown(path, 0, 0) | chmod(path, 0640), 0);
	err[0] = '\0';
	{
		uint8_t key[RMP_KEY_MAX];
		size_t len;

		CHECK_EQ(rmp_key_load(path, key, &len, err, sizeof(err)),
			 -EACCES);
	}
	/* The service's own file keeps to 0600 too. */
	CHECK_EQ(chown(path, svc, (gid_t)svc), 0);
	CHECK_EQ(as_user(svc, path, err, sizeof(err)), -EACCES);

	/* Another group: the service cannot even open it, and is told
	 * who it runs as. */
	CHECK_EQ(chown(path, 0, (gid_t)(svc - 1)), 0);
	CHECK_EQ(as_user(svc, path, err, sizeof(err)), -EACCES);
	snprintf(want, sizeof(want), "runs as uid %u", (unsigned)svc);
	CHECK(strstr(err, want) != NULL);

	unlink(path);
	rmdir(dir);
	chmod(tmpdir, 0700);
}

static void test_key_format(void)
{
	uint8_t key[RMP_KEY_MAX], again[RMP_KEY_MAX];
	char text[2 * RMP_KEY_MAX + 1];
	size_t len, len2;

	CHECK_EQ(rmp_key_parse("00112233445566778899AABBCCDDEEFF", key, &len),
		 0);
	rmp_key_format(key, len, text, sizeof(text));
	CHECK_STR(text, "00112233445566778899aabbccddeeff");
	CHECK_EQ(rmp_key_parse(text, again, &len2), 0);
	CHECK_EQ(len2, len);
	CHECK(!memcmp(key, again, len));
}

static void test_tenant_name(void)
{
	char s[40];

	CHECK(rmp_tenant_name_ok("a"));
	CHECK(rmp_tenant_name_ok("acme"));
	CHECK(rmp_tenant_name_ok("A-z_0.9"));
	CHECK(rmp_tenant_name_ok("..."));
	CHECK(rmp_tenant_name_ok("-"));
	memset(s, 'x', 24);
	s[24] = '\0';
	CHECK(rmp_tenant_name_ok(s));
	s[24] = 'x';
	s[25] = '\0';
	CHECK(!rmp_tenant_name_ok(s));
	CHECK(!rmp_tenant_name_ok(""));
	CHECK(!rmp_tenant_name_ok("a b"));
	CHECK(!rmp_tenant_name_ok(" a"));
	CHECK(!rmp_tenant_name_ok("a\n"));
	CHECK(!rmp_tenant_name_ok("a/b"));
	CHECK(!rmp_tenant_name_ok("a:b"));
	CHECK(!rmp_tenant_name_ok("a@b"));
	CHECK(!rmp_tenant_name_ok("a+b"));
	CHECK(!rmp_tenant_name_ok("a\\b"));
	CHECK(!rmp_tenant_name_ok("a\"b"));
	CHECK(!rmp_tenant_name_ok("caf\xc3\xa9"));
	CHECK(!rmp_tenant_name_ok("\x7f"));
	CHECK(!rmp_tenant_name_ok("\xff"));
}

static void test_random(void)
{
	uint8_t a[32], b[32];

	CHECK_EQ(rmp_auth_init(), 0);
	CHECK_EQ(rmp_auth_init(), 0); /* idempotent */
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	rmp_auth_random(a, sizeof(a));
	rmp_auth_random(b, sizeof(b));
	CHECK(memcmp(a, b, sizeof(a)));
	rmp_wipe(a, sizeof(a));
	CHECK(!memcmp(a, (uint8_t[32]){ 0 }, sizeof(a)));
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/rmp-auth-XXXXXX",
		 t && *t && strlen(t) < 40 ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	umask(077);
	CHECK_EQ(rmp_auth_init(), 0);
	test_known_answers();
	test_proof_inputs();
	test_endpoint();
	test_endpoint_local();
	test_proof_endpoint();
	test_key_parse();
	test_key_load();
	test_key_load_root_group();
	test_key_format();
	test_tenant_name();
	test_random();
	rmdir(tmpdir);
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * test_lease_record.c -- unit tests of a cluster lease's record and token
 * (common/lease_record*.c): rmpc:// tokens through format and parse and
 * each malformed one refused; records of 1x2, 2x1 and 16x3 members
 * through encode and decode, and each rule refused on both sides; the
 * stale marks through both; the seal opened with the right token and
 * the tenant's key only (another secret, another ID, another tenant's
 * key or none, any byte flipped, any length cut off all give -EBADMSG),
 * its format pinned by deriving its key and opening it with libsodium
 * directly (and a record of the old seal, from the token alone, refused),
 * and a sealed text that is no record told apart (-EPROTO).
 */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "lease_record.h"
#include "check.h"

static const char tok_text[] = "rmpc://00112233445566778899aabbccddeeff-"
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

static void test_ctoken_round_trip(void)
{
	struct rmp_ctoken t, back, fresh;
	char buf[RMP_CTOKEN_MAX], id[RMP_CTOKEN_ID_HEX_LEN];

	CHECK_EQ(rmp_ctoken_parse(tok_text, &t), 0);
	CHECK_EQ(t.id[0], 0x00);
	CHECK_EQ(t.id[15], 0xff);
	CHECK_EQ(t.secret[0], 0x00);
	CHECK_EQ(t.secret[31], 0x1f);
	CHECK_EQ(rmp_ctoken_format(&t, buf, sizeof(buf)), RMP_CTOKEN_MAX - 1);
	CHECK_STR(buf, tok_text);
	rmp_ctoken_id_hex(&t, id);
	CHECK_STR(id, "00112233445566778899aabbccddeeff");
	CHECK(rmp_ctoken_is(tok_text));
	CHECK(!rmp_ctoken_is("rmp://h:1/0000000000000001-0000000000000002"));
	CHECK(!rmp_ctoken_is(""));
	CHECK(!rmp_ctoken_is(NULL));

	/* upper case read, lower case written; a shell's newline allowed */
	CHECK_EQ(rmp_ctoken_parse("RMPC://00112233445566778899AABBCCDDEEFF-"
		"000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D"
		"1E1F", &back), -EINVAL); /* the scheme is lower case */
	CHECK_EQ(rmp_ctoken_parse("rmpc://00112233445566778899AABBCCDDEEFF-"
		"000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D"
		"1E1F \n", &back), 0);
	CHECK(!memcmp(&t, &back, sizeof(t)));

	/* fresh ones differ, and round-trip */
	rmp_ctoken_new(&fresh);
	rmp_ctoken_new(&back);
	CHECK(memcmp(&fresh, &back, sizeof(back)));
	CHECK_EQ(rmp_ctoken_format(&fresh, buf, sizeof(buf)),
		 RMP_CTOKEN_MAX - 1);
	CHECK_EQ(rmp_ctoken_parse(buf, &back), 0);
	CHECK(!memcmp(&fresh, &back, sizeof(back)));

	/* no room: -ENOSPC and an empty buffer */
	CHECK_EQ(rmp_ctoken_format(&t, buf, RMP_CTOKEN_MAX - 1), -ENOSPC);
	CHECK_STR(buf, "");
	CHECK_EQ(rmp_ctoken_format(&t, buf, 0), -ENOSPC);
}

static void test_ctoken_bad(void)
{
	static const char *const bad[] = {
		"",
		"rmpc://",
		"rmpc:/00112233445566778899aabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		/* ID 31 and 33 digits */
		"rmpc://0112233445566778899aabbccddeeff-000102030405060708090a0"
		"b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"rmpc://000112233445566778899aabbccddeeff-000102030405060708090"
		"a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		/* SECRET 63 and 65 digits */
		"rmpc://00112233445566778899aabbccddeeff-00102030405060708090a0"
		"b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"rmpc://00112233445566778899aabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f0",
		/* a non-hex digit in each part */
		"rmpc://0011223344556677889gaabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"rmpc://00112233445566778899aabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f10111213141516171819 a1b1c1d1e1f",
		/* no '-', another separator */
		"rmpc://00112233445566778899aabbccddeeff000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"rmpc://00112233445566778899aabbccddeeff/000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		/* trailing junk, after blanks too */
		"rmpc://00112233445566778899aabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1fx",
		"rmpc://00112233445566778899aabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f\nx",
		/* blanks before */
		" rmpc://00112233445566778899aabbccddeeff-000102030405060708090a"
		"0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		/* an ordinary lease token */
		"rmp://10.0.0.1:7471/0011223344556677-8899aabbccddeeff",
	};
	struct rmp_ctoken t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&t, 0xa5, sizeof(t));
		if (rmp_ctoken_parse(bad[i], &t) != -EINVAL)
			printf("# accepted: \"%s\"\n", bad[i]);
		CHECK_EQ(rmp_ctoken_parse(bad[i], &t), -EINVAL);
		/* written only on success */
		CHECK(t.id[0] == 0xa5 && t.secret[31] == 0xa5);
	}
	CHECK_EQ(rmp_ctoken_parse(NULL, &t), -EINVAL);
}

/* make -- a valid record of stripes x replicas members, each on a
 * server of its own. */
static void make(struct rmp_lease_record *r, unsigned stripes,
		 unsigned replicas)
{
	memset(r, 0, sizeof(*r));
	r->length = (UINT64_C(1) << 32) + 17;
	r->stripe_unit = 1 << 20;
	r->stripes = stripes;
	r->replicas = replicas;
	r->epoch = 3;
	r->repair_until_ms = 1700000000123;
	snprintf(r->spread, sizeof(r->spread), "rack");
	for (unsigned i = 0; i < stripes * replicas; i++) {
		struct rmp_token *m = &r->member[i];

		snprintf(m->host, sizeof(m->host), "node%u.rack-%u", i, i % 3);
		m->port = (uint16_t)(7471 + i % 2);
		m->id = 0x1000 + i;
		m->secret = UINT64_C(0xfedcba9876543210) ^ i;
	}
	if (replicas > 1) /* an IPv6 replica, written in brackets */
		strcpy(r->member[1].host, "fe80::1%eth0");
}

static bool same_token(const struct rmp_token *a, const struct rmp_token *b)
{
	return !strcmp(a->host, b->host) && a->port == b->port &&
	       a->id == b->id && a->secret == b->secret;
}

/* same -- a and b hold the same record, field by field. */
static void same(const struct rmp_lease_record *a,
		 const struct rmp_lease_record *b)
{
	bool members = true;

	CHECK_EQ(a->length, b->length);
	CHECK_EQ(a->stripe_unit, b->stripe_unit);
	CHECK_EQ(a->stripes, b->stripes);
	CHECK_EQ(a->replicas, b->replicas);
	CHECK_EQ(a->epoch, b->epoch);
	CHECK_EQ(a->repair_until_ms, b->repair_until_ms);
	CHECK_EQ(a->ec_data, b->ec_data);
	for (unsigned i = 0; i < a->stripes * a->replicas; i++)
		members = members && same_token(&a->member[i], &b->member[i]) &&
			  a->stale[i] == b->stale[i];
	CHECK(members);
}

static void round_trip(unsigned stripes, unsigned replicas)
{
	struct rmp_lease_record r, back;
	char text[RMP_LREC_PLAIN_MAX + 1], again[RMP_LREC_PLAIN_MAX + 1];
	char why[200] = "";
	int n;

	printf("# round trip %ux%u\n", stripes, replicas);
	make(&r, stripes, replicas);
	n = rmp_lrec_encode(&r, text, sizeof(text));
	CHECK(n > 0 && (size_t)n == strlen(text));
	CHECK_EQ(rmp_lrec_decode(text, (size_t)n, &back, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	same(&r, &back);
	/* one spelling: the decoded record encodes to the same text */
	CHECK_EQ(rmp_lrec_encode(&back, again, sizeof(again)), n);
	CHECK_STR(again, text);
}

static void test_record_round_trip(void)
{
	static const char want[] = "{\"length\":4294967313,\"stripe_unit\":"
		"1048576,\"stripes\":1,\"replicas\":2,\"epoch\":3,"
		"\"repair_until_ms\":1700000000123,\"spread\":\"rack\","
		"\"members\":["
		"\"rmp://node0.rack-0:7471/0000000000001000-fedcba9876543210\","
		"\"rmp://[fe80::1%eth0]:7472/0000000000001001-fedcba9876543211\"],"
		"\"stale\":[]}";
	static const char spaced[] = " {\n \"members\" : [\n"
		"\"rmp://node0.rack-0:7471/0000000000001000-fedcba9876543210\","
		"\"rmp://[fe80::1%eth0]:7472/0000000000001001-fedcba9876543211\"],"
		"\"repair_until_ms\":1700000000123, \"epoch\":3,\"replicas\":2,"
		"\"spread\" : \"rack\","
		"\"stripes\":1,\"stripe_unit\":1048576,\"length\":4294967313,"
		"\"stale\" : [ ] }\n";
	struct rmp_lease_record r, back;
	char text[sizeof(want)];
	char why[200];

	round_trip(1, 2);
	round_trip(2, 1);
	round_trip(16, 3);

	/* stale marks: written as increasing indexes, read back */
	make(&r, 2, 3);
	r.stale[1] = r.stale[3] = r.stale[5] = true;
	{
		char t2[RMP_LREC_PLAIN_MAX + 1];
		int n = rmp_lrec_encode(&r, t2, sizeof(t2));

		CHECK(n > 0);
		CHECK_HAS(t2, "\"stale\":[1,3,5]}");
		CHECK_EQ(rmp_lrec_decode(t2, (size_t)n, &back, why,
					 sizeof(why)), 0);
		same(&r, &back);
	}

	/* the text itself, to the byte; and exactly its room needed */
	make(&r, 1, 2);
	CHECK_EQ(rmp_lrec_encode(&r, text, sizeof(text)),
		 (int)sizeof(want) - 1);
	CHECK_STR(text, want);
	CHECK_EQ(rmp_lrec_encode(&r, text, sizeof(text) - 1), -ENOSPC);
	CHECK_STR(text, "");
	CHECK_EQ(rmp_lrec_encode(&r, text, 0), -ENOSPC);

	/* any order of fields, blanks between and after */
	CHECK_EQ(rmp_lrec_decode(spaced, strlen(spaced), &back, why,
				 sizeof(why)), 0);
	same(&r, &back);
	/* not NUL terminated: only len bytes are read */
	memcpy(text, want, sizeof(want) - 1);
	text[sizeof(want) - 1] = '}';
	CHECK_EQ(rmp_lrec_decode(text, sizeof(want) - 1, &back, why,
				 sizeof(why)), 0);
}

/* The longest record: 48 members with 255-byte host names. */
static void test_record_longest(void)
{
	static struct rmp_lease_record r, back;
	static char text[RMP_LREC_PLAIN_MAX + 1];
	static uint8_t sealed[RMP_LREC_SEALED_MAX];
	struct rmp_ctoken t;
	char why[200];
	int n;

	make(&r, RMP_LREC_STRIPES_MAX, RMP_LREC_REPLICAS_MAX);
	for (unsigned i = 0; i < RMP_LREC_MEMBERS_MAX; i++) {
		memset(r.member[i].host, 'h', RMP_TOKEN_HOST_MAX);
		r.member[i].host[RMP_TOKEN_HOST_MAX] = '\0';
		r.member[i].port = (uint16_t)(60000 + i);
		r.member[i].id = UINT64_MAX - i;
	}
	r.length = RMP_LREC_LENGTH_MAX;
	r.epoch = INT64_MAX;
	r.repair_until_ms = INT64_MAX;
	/* every member marked stale but the one each stripe must keep */
	for (unsigned i = 0; i < RMP_LREC_MEMBERS_MAX; i++)
		r.stale[i] = i % RMP_LREC_REPLICAS_MAX != 0;
	n = rmp_lrec_encode(&r, text, sizeof(text));
	printf("# longest record: %d bytes\n", n);
	CHECK(n > 14000 && n <= RMP_LREC_PLAIN_MAX);
	CHECK_EQ(rmp_lrec_decode(text, (size_t)n, &back, why, sizeof(why)), 0);
	same(&r, &back);
	rmp_ctoken_new(&t);
	{
		uint8_t k[RMP_LREC_KEY_LEN];

		rmp_lrec_key(&t, "acme", NULL, 0, k);
		CHECK_EQ(rmp_lrec_seal_record(&t, k, &r, sealed,
					      sizeof(sealed)),
			 RMP_LREC_NONCE_LEN + n + RMP_LREC_TAG_LEN);
	}
}

/* refused -- r is refused by the encoder (-EINVAL) and, written as the
 * encoder would, by the decoder (-EPROTO) with a why that has part. */
static void refused(const struct rmp_lease_record *r, const char *part)
{
	struct rmp_lease_record back;
	char text[RMP_LREC_PLAIN_MAX + 1], why[200] = "";
	char member[RMP_TOKEN_MAX];
	size_t used = 0;
	unsigned n = r->stripes * r->replicas;

	printf("# refused: %s\n", part);
	CHECK_EQ(rmp_lrec_encode(r, text, sizeof(text)), -EINVAL);
	/* by hand, as rmp_lrec_encode would write it */
	used += (size_t)snprintf(text, sizeof(text), "{\"length\":%" PRIu64
		",\"stripe_unit\":%" PRIu64 ",\"stripes\":%u,\"replicas\":%u,"
		"\"epoch\":%" PRIu64 ",\"repair_until_ms\":%" PRIu64
		",\"spread\":\"%s\",\"members\":[", r->length, r->stripe_unit,
		r->stripes, r->replicas, r->epoch, r->repair_until_ms,
		r->spread);
	for (unsigned i = 0; i < n && i < RMP_LREC_MEMBERS_MAX; i++) {
		if (rmp_token_format(&r->member[i], member, sizeof(member)) < 0)
			strcpy(member, "not a token");
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "%s\"%s\"", i ? "," : "", member);
	}
	used += (size_t)snprintf(text + used, sizeof(text) - used,
				 "],\"stale\":[");
	for (unsigned i = 0, k = 0; i < n && i < RMP_LREC_MEMBERS_MAX; i++)
		if (r->stale[i])
			used += (size_t)snprintf(text + used,
						 sizeof(text) - used, "%s%u",
						 k++ ? "," : "", i);
	if (r->ec_data)
		snprintf(text + used, sizeof(text) - used, "],\"ec_data\":%u}",
			 r->ec_data);
	else
		snprintf(text + used, sizeof(text) - used, "]}");
	CHECK_EQ(rmp_lrec_decode(text, strlen(text), &back, why, sizeof(why)),
		 -EPROTO);
	CHECK_HAS(why, part);
	CHECK_EQ(back.stripes, 0); /* zeroed */
}

static void test_record_rules(void)
{
	static char text[RMP_LREC_PLAIN_MAX + 1];
	struct rmp_lease_record r;

	make(&r, 0, 2);
	refused(&r, "stripes, replicas");
	make(&r, RMP_LREC_STRIPES_MAX + 1, 1);
	refused(&r, "stripes, replicas");
	make(&r, 2, 0);
	refused(&r, "stripes, replicas");
	make(&r, 1, RMP_LREC_REPLICAS_MAX + 1);
	refused(&r, "stripes, replicas");
	make(&r, 1, 1);
	refused(&r, "stripes, replicas");

	make(&r, 1, 2);
	r.length = 0;
	refused(&r, "length");
	r.length = RMP_LREC_LENGTH_MAX + 1;
	refused(&r, "length");
	make(&r, 2, 2);
	r.stripe_unit = 0;
	refused(&r, "stripe_unit");
	r.stripe_unit = 2048;
	refused(&r, "stripe_unit");
	r.stripe_unit = 3 * 4096;
	refused(&r, "stripe_unit");
	r.stripe_unit = RMP_LREC_UNIT_MAX << 1;
	refused(&r, "stripe_unit");
	make(&r, 2, 1);
	r.epoch = 0;
	refused(&r, "epoch");
	make(&r, 2, 1);
	snprintf(r.spread, sizeof(r.spread), "9rack");
	refused(&r, "spread");
	/* every member of a stripe stale: its bytes would be nowhere */
	make(&r, 2, 2);
	r.stale[2] = r.stale[3] = true;
	refused(&r, "stale: every member of stripe 1");
	make(&r, 2, 1);
	r.stale[1] = true;
	refused(&r, "stale: every member of stripe 1");
	/* a mark past the members */
	make(&r, 1, 2);
	r.stale[2] = true;
	CHECK_EQ(rmp_lrec_encode(&r, text, sizeof(text)), -EINVAL);
	memset(r.spread, 'a', sizeof(r.spread));
	CHECK_EQ(rmp_lrec_encode(&r, text, sizeof(text)), -EINVAL);

	/* a member that is no token: no host, port 0 */
	make(&r, 2, 1);
	r.member[1].host[0] = '\0';
	refused(&r, "members: entry 1");
	make(&r, 2, 1);
	r.member[0].port = 0;
	refused(&r, "members: entry 0");
	/* two replicas of stripe 1 on one server (host in another case) */
	make(&r, 3, 2);
	strcpy(r.member[3].host, "NODE2.rack-2");
	r.member[3].port = r.member[2].port;
	refused(&r, "replicas 0 and 1 of stripe 1 on one server");
	/* the same server in two stripes is fine, the same lease is not */
	make(&r, 2, 1);
	strcpy(r.member[1].host, r.member[0].host);
	r.member[1].port = r.member[0].port;
	CHECK(rmp_lrec_encode(&r, text, sizeof(text)) > 0);
	r.member[1].id = r.member[0].id;
	refused(&r, "entries 0 and 1 are one lease");
}

/* An erasure-coded lease's record: k data members of "stripes", one
 * replica, a chunk for the stripe unit; written only for such a lease,
 * refused by a reader that does not know it (as every unknown field). */
static void test_record_ec(void)
{
	static char text[RMP_LREC_PLAIN_MAX + 1], again[RMP_LREC_PLAIN_MAX + 1];
	struct rmp_lease_record r, back;
	char why[200] = "";
	int n;

	/* 4+2, 4 KiB chunks: round trip, one spelling */
	make(&r, 6, 1);
	r.ec_data = 4;
	r.stripe_unit = 4096;
	r.stale[1] = r.stale[5] = true; /* m of them: still readable */
	n = rmp_lrec_encode(&r, text, sizeof(text));
	CHECK(n > 0);
	CHECK_HAS(text, "\"stale\":[1,5],\"ec_data\":4}");
	CHECK_EQ(rmp_lrec_decode(text, (size_t)n, &back, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	same(&r, &back);
	CHECK_EQ(rmp_lrec_encode(&back, again, sizeof(again)), n);
	CHECK_STR(again, text);
	/* a mirror's record has no such field */
	make(&r, 1, 2);
	CHECK(rmp_lrec_encode(&r, text, sizeof(text)) > 0);
	CHECK(strstr(text, "ec_data") == NULL);
	/* the widest code: 12+4 */
	make(&r, 16, 1);
	r.ec_data = 12;
	CHECK(rmp_lrec_encode(&r, text, sizeof(text)) > 0);

	/* k, m, replicas, chunk out of range */
	make(&r, 6, 1);
	r.ec_data = 1;
	refused(&r, "ec_data");
	r.ec_data = 13;
	refused(&r, "ec_data");
	r.ec_data = 6; /* m 0 */
	refused(&r, "ec_data");
	make(&r, 7, 1);
	r.ec_data = 2; /* m 5 */
	refused(&r, "ec_data");
	make(&r, 3, 2);
	r.ec_data = 2; /* replicas */
	refused(&r, "ec_data");
	make(&r, 6, 1);
	r.ec_data = 4;
	r.stripe_unit = 2u << 20;
	refused(&r, "ec_data");
	/* more stale than parity: the bytes are gone */
	make(&r, 6, 1);
	r.ec_data = 4;
	r.stale[0] = r.stale[2] = r.stale[4] = true;
	refused(&r, "stale: 3 members of an erasure-coded lease with 2");
	/* two members on one server: one node's loss would take two */
	make(&r, 6, 1);
	r.ec_data = 4;
	strcpy(r.member[5].host, "NODE2.rack-2");
	r.member[5].port = r.member[2].port;
	refused(&r, "2 and 5 of an erasure-coded lease on one server");

	/* what only a decoder meets: 0, a string, a fraction */
	make(&r, 6, 1);
	r.ec_data = 4;
	n = rmp_lrec_encode(&r, text, sizeof(text));
	CHECK(n > 0);
	for (unsigned i = 0; i < 3; i++) {
		static const char *const bad[] = { "0", "\"4\"", "4.0" };
		char *at = strstr(text, "\"ec_data\":") + 10;

		snprintf(again, sizeof(again), "%.*s%s}", (int)(at - text),
			 text, bad[i]);
		CHECK_EQ(rmp_lrec_decode(again, strlen(again), &back, why,
					 sizeof(why)), -EPROTO);
		CHECK_HAS(why, "ec_data");
	}
}

/* decode_refuses -- text is refused with a why that has part. */
static void decode_refuses(const char *text, size_t len, const char *part)
{
	struct rmp_lease_record back;
	char why[200] = "";

	printf("# refused: %s\n", part);
	CHECK_EQ(rmp_lrec_decode(text, len, &back, why, sizeof(why)), -EPROTO);
	CHECK_HAS(why, part);
}

#define M0 "\"rmp://a:1/0000000000000001-0000000000000002\""
#define M1 "\"rmp://b:1/0000000000000003-0000000000000004\""
#define HEAD0 "{\"length\":1,\"stripe_unit\":4096,\"stripes\":2," \
	"\"replicas\":1,\"epoch\":1,\"repair_until_ms\":0"
#define HEAD HEAD0 ",\"spread\":\"\""
#define STALE ",\"stale\":[]"
#define REFUSES(text, part) decode_refuses(text, sizeof(text) - 1, part)

/* What only a decoder meets: text no encoder writes. */
static void test_decode_refusals(void)
{
	static char big[RMP_LREC_PLAIN_MAX + 2];
	struct rmp_lease_record back;
	char why[200];

	/* the model all below change one thing of */
	CHECK_EQ(rmp_lrec_decode(HEAD ",\"members\":[" M0 "," M1 "]" STALE "}",
				 sizeof(HEAD ",\"members\":[" M0 "," M1 "]"
					STALE "}") - 1,
				 &back, why, sizeof(why)), 0);
	REFUSES("", "not a JSON object");
	REFUSES("[1]", "not a JSON object");
	REFUSES("{\"length\":1", "not a JSON object"); /* cut short */
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "]} {}", "not a JSON object");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "]}x", "not a JSON object");
	decode_refuses(HEAD ",\"members\":[" M0 "," M1 "]}\0",
		       sizeof(HEAD ",\"members\":[" M0 "," M1 "]}"),
		       "not a JSON object");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"colour\":1}",
		"colour: a field this library does not know");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"Colour\\n\":1}",
		"a field this library does not know");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":2,"
		"\"replicas\":1,\"epoch\":1,\"members\":[" M0 "," M1 "]}",
		"repair_until_ms");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"replicas\":2,"
		"\"epoch\":1,\"repair_until_ms\":0,\"members\":[" M0 "," M1
		"]}", "stripes, replicas");
	/* spread: a label name or "", always there */
	REFUSES(HEAD0 ",\"members\":[" M0 "," M1 "]}", "spread");
	REFUSES(HEAD0 ",\"spread\":\"1rack\",\"members\":[" M0 "," M1 "]}",
		"spread");
	REFUSES(HEAD0 ",\"spread\":\"ra ck\",\"members\":[" M0 "," M1 "]}",
		"spread");
	REFUSES(HEAD0 ",\"spread\":7,\"members\":[" M0 "," M1 "]}", "spread");
	REFUSES(HEAD0 ",\"spread\":\"r\\u0000k\",\"members\":[" M0 "," M1
		"]}", "spread");
	/* stale: increasing member indexes, each of a stripe kept */
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "]}", "stale: not a list");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"stale\":1}",
		"stale: not a list");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"stale\":[0,1,1]}",
		"stale: not a list"); /* more marks than members */
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":1,"
		"\"replicas\":3,\"epoch\":1,\"repair_until_ms\":0,"
		"\"spread\":\"\",\"members\":[" M0 "," M1 ","
		"\"rmp://c:1/0000000000000005-0000000000000006\"],"
		"\"stale\":[1,1]}", "stale: not increasing");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":1,"
		"\"replicas\":3,\"epoch\":1,\"repair_until_ms\":0,"
		"\"spread\":\"\",\"members\":[" M0 "," M1 ","
		"\"rmp://c:1/0000000000000005-0000000000000006\"],"
		"\"stale\":[2,1]}", "stale: not increasing");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"stale\":[2]}",
		"stale: not increasing");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"stale\":[-1]}",
		"stale: not increasing");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"stale\":[\"0\"]}",
		"stale: not increasing");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "],\"stale\":[1]}",
		"stale: every member of stripe 1");
	REFUSES(HEAD "}", "members: not a list");
	REFUSES(HEAD ",\"members\":[" M0 "]}", "members: not a list");
	REFUSES(HEAD ",\"members\":[" M0 "," M1 "," M1 "]}",
		"members: not a list");
	REFUSES(HEAD ",\"members\":" M0 "}", "members: not a list");
	/* numbers: strings, fractions, signs, beyond 2^63-1 */
	REFUSES("{\"length\":\"1\",\"stripe_unit\":4096,\"stripes\":2,"
		"\"replicas\":1,\"epoch\":1,\"repair_until_ms\":0,"
		"\"members\":[" M0 "," M1 "]}", "length");
	REFUSES("{\"length\":1.0,\"stripe_unit\":4096,\"stripes\":2,"
		"\"replicas\":1,\"epoch\":1,\"repair_until_ms\":0,"
		"\"members\":[" M0 "," M1 "]}", "length");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":2,"
		"\"replicas\":1,\"epoch\":-1,\"repair_until_ms\":0,"
		"\"members\":[" M0 "," M1 "]}", "epoch");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":2,"
		"\"replicas\":1,\"epoch\":18446744073709551615,"
		"\"repair_until_ms\":0,\"members\":[" M0 "," M1 "]}", "epoch");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":2,"
		"\"replicas\":1,\"epoch\":1,"
		"\"repair_until_ms\":9223372036854775808,"
		"\"members\":[" M0 "," M1 "]}", "repair_until_ms");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":4294967298,"
		"\"replicas\":1,\"epoch\":1,\"repair_until_ms\":0,"
		"\"members\":[" M0 "," M1 "]}", "stripes, replicas");
	REFUSES("{\"length\":1,\"stripe_unit\":4096,\"stripes\":true,"
		"\"replicas\":1,\"epoch\":1,\"repair_until_ms\":0,"
		"\"members\":[" M0 "," M1 "]}", "stripes, replicas");
	/* members: not text, another spelling, blanks, a NUL, rmpc:// */
	REFUSES(HEAD ",\"members\":[" M0 ",7]}", "entry 1 is not a token");
	REFUSES(HEAD ",\"members\":[" M0 ",null]}", "entry 1 is not a token");
	REFUSES(HEAD ",\"members\":[\"rmp://A:1/0000000000000001-00000000000000"
		"0F\"," M1 "]}", "entry 0 is not a token");
	REFUSES(HEAD ",\"members\":[\"rmp://a:1/0000000000000001-00000000000000"
		"0f\\n\"," M1 "]}", "entry 0 is not a token");
	REFUSES(HEAD ",\"members\":[\"rmp://a:1/0000000000000001-00000000000000"
		"02\\u0000\"," M1 "]}", "entry 0 is not a token");
	REFUSES(HEAD ",\"members\":[\"rmpc://00112233445566778899aabbccddeeff-"
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e"
		"1f\"," M1 "]}", "entry 0 is not a token");
	/* longer than any record */
	memset(big, ' ', sizeof(big));
	memcpy(big, HEAD ",\"members\":[" M0 "," M1 "]" STALE "}",
	       sizeof(HEAD ",\"members\":[" M0 "," M1 "]" STALE "}") - 1);
	CHECK_EQ(rmp_lrec_decode(big, RMP_LREC_PLAIN_MAX, &back, why,
				 sizeof(why)), 0);
	decode_refuses(big, RMP_LREC_PLAIN_MAX + 1, "longer than 16384 bytes");
	/* a NULL why is allowed */
	CHECK_EQ(rmp_lrec_decode("{}", 2, &back, NULL, 0), -EPROTO);
}

/* Tenant "acme"'s key 00 01 .. 1f, and another tenant's. */
static const uint8_t acme_key[32] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
};
static const uint8_t other_key[16] = { 0xee };

/* key_of -- the seal key of t for acme with its key. */
static void key_of(const struct rmp_ctoken *t, uint8_t k[RMP_LREC_KEY_LEN])
{
	rmp_lrec_key(t, "acme", acme_key, sizeof(acme_key), k);
}

/*
 * The seal's key needs the tenant's key and the token: another key,
 * another tenant name, another secret or ID, or no key (what a holder of
 * the token alone could make) is another key.
 */
static void test_seal_key(void)
{
	uint8_t k[RMP_LREC_KEY_LEN], k2[RMP_LREC_KEY_LEN];
	uint8_t anon[RMP_LREC_KEY_LEN], anon2[RMP_LREC_KEY_LEN];
	struct rmp_ctoken t, other;

	CHECK_EQ(rmp_ctoken_parse(tok_text, &t), 0);
	key_of(&t, k);
	key_of(&t, k2);
	CHECK(!memcmp(k, k2, sizeof(k))); /* deterministic */
	rmp_lrec_key(&t, "acme", other_key, sizeof(other_key), k2);
	CHECK(memcmp(k, k2, sizeof(k)));
	rmp_lrec_key(&t, "acmf", acme_key, sizeof(acme_key), k2);
	CHECK(memcmp(k, k2, sizeof(k)));
	CHECK_EQ(rmp_lrec_key(&t, "acme", acme_key, sizeof(acme_key) - 1, k2),
		 0);
	CHECK(memcmp(k, k2, sizeof(k)));
	/* a key no tenant can have: refused, not taken as no key */
	CHECK_EQ(rmp_lrec_key(&t, "acme", acme_key, RMP_KEY_MIN - 1, k2),
		 -EINVAL);
	CHECK_EQ(rmp_lrec_key(&t, "acme", acme_key, RMP_KEY_MAX + 1, k2),
		 -EINVAL);
	other = t;
	other.secret[0] ^= 1;
	key_of(&other, k2);
	CHECK(memcmp(k, k2, sizeof(k)));
	other = t;
	other.id[0] ^= 1;
	key_of(&other, k2);
	CHECK(memcmp(k, k2, sizeof(k)));
	/* anonymous: from the token alone, and so not acme's */
	rmp_lrec_key(&t, "", NULL, 0, anon);
	rmp_lrec_key(&t, "", NULL, 0, anon2);
	CHECK(!memcmp(anon, anon2, sizeof(anon)));
	CHECK(memcmp(anon, k, sizeof(k)));
	rmp_lrec_key(&t, "acme", NULL, 0, anon2);
	CHECK(memcmp(anon2, k, sizeof(k)));
}

static void test_seal(void)
{
	static const char plain[] = "{\"a\":\"the plaintext\"}";
	struct rmp_ctoken t, other;
	uint8_t sealed[RMP_LREC_NONCE_LEN + sizeof(plain) + RMP_LREC_TAG_LEN];
	uint8_t sealed2[sizeof(sealed)], copy[sizeof(sealed)];
	uint8_t k[RMP_LREC_KEY_LEN], ko[RMP_LREC_KEY_LEN];
	char out[sizeof(plain) + 8];
	const int want = RMP_LREC_NONCE_LEN + (int)sizeof(plain) - 1 +
			 RMP_LREC_TAG_LEN;
	int n, bad = 0;

	CHECK_EQ(rmp_ctoken_parse(tok_text, &t), 0);
	key_of(&t, k);
	n = rmp_lrec_seal(&t, k, plain, strlen(plain), sealed, sizeof(sealed));
	CHECK_EQ(n, want);
	CHECK(!memmem(sealed, sizeof(sealed), "plaintext", 9));
	CHECK_EQ(rmp_lrec_open(&t, k, sealed, (size_t)n, out, sizeof(out)),
		 (int)strlen(plain));
	CHECK_STR(out, plain);
	/* a fresh nonce each time */
	CHECK_EQ(rmp_lrec_seal(&t, k, plain, strlen(plain), sealed2,
			       sizeof(sealed2)), want);
	CHECK(memcmp(sealed, sealed2, (size_t)want));

	/* another secret, another ID: -EBADMSG, plain emptied */
	other = t;
	other.secret[31] ^= 1;
	key_of(&other, ko);
	memset(out, 'x', sizeof(out));
	CHECK_EQ(rmp_lrec_open(&other, ko, sealed, (size_t)n, out,
			       sizeof(out)), -EBADMSG);
	CHECK_STR(out, "");
	other = t;
	other.id[0] ^= 0x80;
	key_of(&other, ko);
	CHECK_EQ(rmp_lrec_open(&other, ko, sealed, (size_t)n, out,
			       sizeof(out)), -EBADMSG);
	/* the right token without acme's key: another tenant that was
	 * shown the token, or anybody who reads it from a log */
	rmp_lrec_key(&t, "acme", other_key, sizeof(other_key), ko);
	CHECK_EQ(rmp_lrec_open(&t, ko, sealed, (size_t)n, out, sizeof(out)),
		 -EBADMSG);
	rmp_lrec_key(&t, "", NULL, 0, ko);
	CHECK_EQ(rmp_lrec_open(&t, ko, sealed, (size_t)n, out, sizeof(out)),
		 -EBADMSG);
	/* ... nor can it seal one that acme opens */
	CHECK_EQ(rmp_lrec_seal(&t, ko, plain, strlen(plain), sealed2,
			       sizeof(sealed2)), want);
	CHECK_EQ(rmp_lrec_open(&t, k, sealed2, (size_t)want, out,
			       sizeof(out)), -EBADMSG);

	/* each byte flipped (low bit and high bit), each length cut */
	for (int i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit += 7) {
			memcpy(copy, sealed, (size_t)n);
			copy[i] ^= (uint8_t)(1 << bit);
			bad += rmp_lrec_open(&t, k, copy, (size_t)n, out,
					     sizeof(out)) != -EBADMSG;
		}
	CHECK_EQ(bad, 0);
	for (int len = 0; len < n; len++)
		bad += rmp_lrec_open(&t, k, sealed, (size_t)len, out,
				     sizeof(out)) != -EBADMSG;
	CHECK_EQ(bad, 0);
	CHECK_EQ(rmp_lrec_open(&t, k, sealed, RMP_LREC_SEALED_MAX + 1, out,
			       sizeof(out)), -EBADMSG);

	/* room: the plaintext and its NUL */
	CHECK_EQ(rmp_lrec_open(&t, k, sealed, (size_t)n, out, strlen(plain)),
		 -ENOSPC);
	CHECK_EQ(rmp_lrec_open(&t, k, sealed, (size_t)n, out,
			       strlen(plain) + 1), (int)strlen(plain));
	CHECK_EQ(rmp_lrec_seal(&t, k, plain, strlen(plain), sealed2,
			       (size_t)want - 1), -ENOSPC);
	CHECK_EQ(rmp_lrec_seal(&t, k, plain, RMP_LREC_PLAIN_MAX + 1, sealed2,
			       sizeof(sealed2)), -EINVAL);
}

/* The format, pinned: libsodium alone derives the key and opens a seal
 * with the key and associated data lease_record.h names. */
static void test_seal_format(void)
{
	struct rmp_ctoken t;
	uint8_t sealed[64], key[32], k[RMP_LREC_KEY_LEN];
	uint8_t ad[15 + RMP_CTOKEN_ID_LEN], msg[16 + 24 + 16 + 32] = { 0 };
	unsigned char out[16];
	unsigned long long len;
	int n;

	rmp_ctoken_new(&t);
	key_of(&t, k);
	n = rmp_lrec_seal(&t, k, "hello", 5, sealed, sizeof(sealed));
	CHECK_EQ(n, 24 + 5 + 16);
	memcpy(msg, "rmpool-lease-v2", 15);
	memcpy(msg + 16, "acme", 4);
	memcpy(msg + 16 + 24, t.id, 16);
	memcpy(msg + 16 + 24 + 16, t.secret, 32);
	crypto_generichash(key, sizeof(key), msg, sizeof(msg), acme_key,
			   sizeof(acme_key));
	CHECK(!memcmp(key, k, sizeof(key)));
	memcpy(ad, "rmpool-lease-v2", 15);
	memcpy(ad + 15, t.id, RMP_CTOKEN_ID_LEN);
	CHECK_EQ(crypto_aead_xchacha20poly1305_ietf_decrypt(out, &len, NULL,
		sealed + 24, (unsigned long long)n - 24, ad, sizeof(ad),
		sealed, key), 0);
	CHECK(len == 5 && !memcmp(out, "hello", 5));
	/* a record of the v1 seal (key from the secret alone) opens no
	 * more: the token alone wrote it */
	crypto_kdf_derive_from_key(key, sizeof(key), 1, "rmplease", t.secret);
	memcpy(ad, "rmpool-lease-v1", 15);
	rmp_auth_random(sealed, 24);
	crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + 24, &len,
		(const unsigned char *)"hello", 5, ad, sizeof(ad), NULL,
		sealed, key);
	CHECK_EQ(rmp_lrec_open(&t, k, sealed, 24 + (size_t)len, (char *)out,
			       sizeof(out)), -EBADMSG);
}

static void test_seal_record(void)
{
	static const char not_record[] = "{\"length\":1}";
	struct rmp_lease_record r, back;
	struct rmp_ctoken t, other;
	uint8_t sealed[RMP_LREC_SEALED_MAX];
	uint8_t k[RMP_LREC_KEY_LEN], ko[RMP_LREC_KEY_LEN];
	char why[200] = "";
	int n;

	rmp_ctoken_new(&t);
	key_of(&t, k);
	make(&r, 4, 3);
	r.stale[4] = true;
	n = rmp_lrec_seal_record(&t, k, &r, sealed, sizeof(sealed));
	CHECK(n > RMP_LREC_NONCE_LEN + RMP_LREC_TAG_LEN);
	CHECK_EQ(rmp_lrec_open_record(&t, k, sealed, (size_t)n, &back, why,
				      sizeof(why)), 0);
	same(&r, &back);
	other = t;
	other.id[15] ^= 1;
	key_of(&other, ko);
	CHECK_EQ(rmp_lrec_open_record(&other, ko, sealed, (size_t)n, &back,
				      why, sizeof(why)), -EBADMSG);
	CHECK_HAS(why, "does not open");
	CHECK_EQ(back.stripes, 0);
	rmp_lrec_key(&t, "b", other_key, sizeof(other_key), ko);
	CHECK_EQ(rmp_lrec_open_record(&t, ko, sealed, (size_t)n, &back, why,
				      sizeof(why)), -EBADMSG);
	CHECK_EQ(rmp_lrec_seal_record(&t, k, &r, sealed, 10), -ENOSPC);
	r.epoch = 0;
	CHECK_EQ(rmp_lrec_seal_record(&t, k, &r, sealed, sizeof(sealed)),
		 -EINVAL);

	/* opens, but is no record: -EPROTO and why */
	n = rmp_lrec_seal(&t, k, not_record, strlen(not_record), sealed,
			  sizeof(sealed));
	CHECK_EQ(rmp_lrec_open_record(&t, k, sealed, (size_t)n, &back, why,
				      sizeof(why)), -EPROTO);
	CHECK_HAS(why, "stripes, replicas");
}

int main(void)
{
	test_ctoken_round_trip();
	test_ctoken_bad();
	test_record_round_trip();
	test_record_longest();
	test_record_rules();
	test_record_ec();
	test_decode_refusals();
	test_seal_key();
	test_seal();
	test_seal_format();
	test_seal_record();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * fuzz_token.c -- libFuzzer target: lease token parse, format, re-parse;
 * the same for cluster tokens (rmpc://); and a cluster lease's record
 * (common/lease_record.c) decoded, encoded and decoded again.
 *
 * Every input goes through each of them (no selector byte: each parser
 * refuses the others' inputs within a few bytes, and a record's seeds,
 * corpus/fuzz_token/, hold rmp:// tokens the token parser learns from).
 * The record's plaintext is what any holder of the cluster token can
 * write: beyond "no crash, no leak, no UB", a record that decodes keeps
 * every rule of lease_record.h and has one spelling; one that does not
 * says why in printable text.
 */
#include "lease_record.h"
#include "token.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int token_eq(const struct rmp_token *a, const struct rmp_token *b)
{
	return !strcmp(a->host, b->host) && a->port == b->port &&
	       a->id == b->id && a->secret == b->secret;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Text in, token out: must format and parse back to the same token. */
static void parse_format_parse(const uint8_t *data, size_t size)
{
	struct rmp_token t, back;
	char out[RMP_TOKEN_MAX];
	char *s;
	int n, rc;

	/* The parser takes a C string: give it an exact-size copy. */
	s = malloc(size + 1);
	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	rc = rmp_token_parse(s, &t);
	free(s);
	if (rc)
		return;

	/* A parsed token always formats, within RMP_TOKEN_MAX. */
	n = rmp_token_format(&t, out, sizeof(out));
	if (n < 0 || (size_t)n >= sizeof(out) || strlen(out) != (size_t)n)
		abort();
	/* Hex case may differ from the input, so compare parsed values. */
	if (rmp_token_parse(out, &back) || !token_eq(&t, &back))
		abort();
}

/*
 * Token in, text out: bytes 0-1 port, 2-9 id, 10-17 secret, the rest the
 * host. Whatever formats must parse back to the same token.
 */
static void format_parse(const uint8_t *data, size_t size)
{
	struct rmp_token t, back;
	char out[RMP_TOKEN_MAX];
	size_t hlen;
	int n;

	if (size < 18 || size - 18 > RMP_TOKEN_HOST_MAX)
		return;
	memset(&t, 0, sizeof(t));
	t.port = (uint16_t)(data[0] | data[1] << 8);
	t.id = load64(data + 2);
	t.secret = load64(data + 10);
	hlen = size - 18;
	memcpy(t.host, data + 18, hlen);

	n = rmp_token_format(&t, out, sizeof(out));
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(out) || strlen(out) != (size_t)n)
		abort();
	if (rmp_token_parse(out, &back) || !token_eq(&t, &back))
		abort();
}

/* Cluster token text in: formats and parses back to the same token. */
static void ctoken_parse_format_parse(const uint8_t *data, size_t size)
{
	struct rmp_ctoken t, back;
	char out[RMP_CTOKEN_MAX];
	char *s;
	int rc;

	if (size > 4 * RMP_CTOKEN_MAX)
		return;
	s = malloc(size + 1);
	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	rc = rmp_ctoken_parse(s, &t);
	if (!rc && !rmp_ctoken_is(s))
		abort();
	free(s);
	if (rc)
		return;
	if (rmp_ctoken_format(&t, out, sizeof(out)) != RMP_CTOKEN_MAX - 1 ||
	    rmp_ctoken_parse(out, &back) || memcmp(&t, &back, sizeof(t)))
		abort();
}

/* why_ok -- a refusal's reason: said, printable, NUL terminated. */
static void why_ok(const char *why, size_t cap)
{
	const char *nul = memchr(why, '\0', cap);

	if (!nul || nul == why)
		abort();
	for (; why < nul; why++)
		if ((unsigned char)*why < 0x20 || *why == 0x7f)
			abort();
}

/* The record text in: refused with a reason, or it keeps the rules and
 * encodes to text that decodes to the same record and encodes again to
 * the same text. */
static void record_decode_encode(const uint8_t *data, size_t size)
{
	static struct rmp_lease_record r, back;
	static char text[RMP_LREC_PLAIN_MAX + 1], again[RMP_LREC_PLAIN_MAX + 1];
	char why[200];
	unsigned n;
	int len;

	if (rmp_lrec_decode((const char *)data, size, &r, why, sizeof(why))) {
		why_ok(why, sizeof(why));
		if (r.stripes || r.replicas || r.member[0].host[0])
			abort(); /* zeroed */
		return;
	}
	n = r.stripes * r.replicas;
	if (r.stripes < 1 || r.stripes > RMP_LREC_STRIPES_MAX ||
	    r.replicas < 1 || r.replicas > RMP_LREC_REPLICAS_MAX || n < 2 ||
	    !r.length || r.length > RMP_LREC_LENGTH_MAX || !r.epoch ||
	    r.stripe_unit < RMP_LREC_UNIT_MIN ||
	    r.stripe_unit > RMP_LREC_UNIT_MAX ||
	    (r.stripe_unit & (r.stripe_unit - 1)))
		abort();
	for (unsigned i = 0; i < n; i++)
		if (!r.member[i].host[0] || !r.member[i].port)
			abort();
	/* stale marks: within the members, one member of each stripe
	 * not marked; of an erasure-coded lease, k members not marked,
	 * every member on a server of its own */
	for (unsigned i = n; i < RMP_LREC_MEMBERS_MAX; i++)
		if (r.stale[i])
			abort();
	if (r.ec_data) {
		unsigned live = 0;

		if (r.ec_data < RMP_LREC_EC_K_MIN ||
		    r.ec_data > RMP_LREC_EC_K_MAX || r.replicas != 1 ||
		    n < r.ec_data + RMP_LREC_EC_M_MIN ||
		    n > r.ec_data + RMP_LREC_EC_M_MAX ||
		    r.stripe_unit > RMP_LREC_EC_CHUNK_MAX)
			abort();
		for (unsigned i = 0; i < n; i++) {
			live += !r.stale[i];
			for (unsigned j = 0; j < i; j++)
				if (r.member[i].port == r.member[j].port &&
				    !strcasecmp(r.member[i].host,
						r.member[j].host))
					abort();
		}
		if (live < r.ec_data)
			abort();
	}
	for (unsigned s = 0; s < r.stripes && !r.ec_data; s++) {
		unsigned live = 0;

		for (unsigned j = 0; j < r.replicas; j++)
			live += !r.stale[s * r.replicas + j];
		if (!live)
			abort();
	}
	len = rmp_lrec_encode(&r, text, sizeof(text));
	if (len <= 0 || (size_t)len > size || strlen(text) != (size_t)len)
		abort();
	if (rmp_lrec_decode(text, (size_t)len, &back, why, sizeof(why)) ||
	    rmp_lrec_encode(&back, again, sizeof(again)) != len ||
	    strcmp(text, again))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_format_parse(data, size);
	format_parse(data, size);
	ctoken_parse_format_parse(data, size);
	record_decode_encode(data, size);
	return 0;
}

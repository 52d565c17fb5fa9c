/* SPDX-License-Identifier: MIT */
/* fuzz_token.c -- libFuzzer target: lease token parse, format, re-parse. */
#include "token.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_format_parse(data, size);
	format_parse(data, size);
	return 0;
}

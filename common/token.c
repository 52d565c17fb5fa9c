/* SPDX-License-Identifier: MIT */
/* token.c -- format and parse rmp://HOST:PORT/ID-SECRET lease tokens. */
#include "token.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

#define TOKEN_SCHEME "rmp://"
#define TOKEN_HEX_DIGITS 16

/* Host bytes we accept: names, IPv4, IPv6 and a "%zone" suffix. */
static int host_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':' ||
	       c == '%' || c == '_';
}

/* The trailing whitespace a shell or a text file may add. */
static int space_char(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

int rmp_token_format(const struct rmp_token *t, char *buf, size_t cap)
{
	const char *open = "", *close = "";
	size_t n;
	int len;

	for (n = 0; n < sizeof(t->host) && t->host[n]; n++)
		if (!host_char_ok(t->host[n]))
			return -EINVAL;
	if (n == 0 || n > RMP_TOKEN_HOST_MAX || t->port == 0)
		return -EINVAL;
	/* An IPv6 address needs brackets to keep its ':' apart from PORT. */
	if (memchr(t->host, ':', n)) {
		open = "[";
		close = "]";
	}

	len = snprintf(buf, cap, TOKEN_SCHEME "%s%.*s%s:%u/%016" PRIx64
		       "-%016" PRIx64, open, (int)n, t->host, close,
		       (unsigned)t->port, t->id, t->secret);
	if (len < 0)
		return -EINVAL;
	if ((size_t)len >= cap) {
		if (cap)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return len;
}

int rmp_token_parse(const char *s, struct rmp_token *t)
{
	struct rmp_token tok;
	/* "[HOST]:PORT", and room to see that a longer one is too long */
	char hostport[RMP_TOKEN_HOST_MAX + 16];
	const char *p, *slash, *ptext;
	size_t n, scheme_len = strlen(TOKEN_SCHEME);
	uint64_t port;

	if (!s || strncmp(s, TOKEN_SCHEME, scheme_len))
		return -EINVAL;
	p = s + scheme_len;

	/* HOST:PORT ends at the first '/', which no HOST holds. */
	slash = strchr(p, '/');
	if (!slash || (size_t)(slash - p) >= sizeof(hostport))
		return -EINVAL;
	memcpy(hostport, p, (size_t)(slash - p));
	hostport[slash - p] = '\0';
	memset(&tok, 0, sizeof(tok));
	if (rmp_split_hostport(hostport, tok.host, sizeof(tok.host), &ptext) ||
	    !ptext)
		return -EINVAL;
	/* a ':' in HOST only within brackets, and brackets only around one */
	if ((hostport[0] == '[') != (strchr(tok.host, ':') != NULL))
		return -EINVAL;
	for (n = 0; tok.host[n]; n++)
		if (!host_char_ok(tok.host[n]))
			return -EINVAL;
	if (rmp_parse_dec(ptext, &port) || port < 1 || port > UINT16_MAX)
		return -EINVAL;
	tok.port = (uint16_t)port;

	/* ID-SECRET, then nothing but trailing whitespace */
	p = slash + 1;
	if (rmp_parse_hex_fixed(p, TOKEN_HEX_DIGITS, &tok.id) ||
	    p[TOKEN_HEX_DIGITS] != '-')
		return -EINVAL;
	p += TOKEN_HEX_DIGITS + 1;
	if (rmp_parse_hex_fixed(p, TOKEN_HEX_DIGITS, &tok.secret))
		return -EINVAL;
	p += TOKEN_HEX_DIGITS;
	while (space_char(*p))
		p++;
	if (*p)
		return -EINVAL;
	*t = tok;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* token.c -- format and parse rmp://HOST:PORT/ID-SECRET lease tokens. */
#include "token.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly TOKEN_HEX_DIGITS hex digits at s; returns the end or NULL. */
static const char *parse_hex64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	int i, d;

	for (i = 0; i < TOKEN_HEX_DIGITS; i++) {
		d = hex_val(s[i]);
		if (d < 0)
			return NULL;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return s + TOKEN_HEX_DIGITS;
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
	const char *p, *host;
	size_t n, scheme_len = strlen(TOKEN_SCHEME);
	unsigned long port;
	int bracket;

	if (!s || strncmp(s, TOKEN_SCHEME, scheme_len))
		return -EINVAL;
	p = s + scheme_len;

	/* HOST: "[v6]" (must hold a ':') or a name/IPv4 without ':'. */
	bracket = *p == '[';
	if (bracket)
		p++;
	host = p;
	while (*p && *p != (bracket ? ']' : ':')) {
		if (!host_char_ok(*p))
			return -EINVAL;
		if (++p - host > RMP_TOKEN_HOST_MAX)
			return -EINVAL;
	}
	n = (size_t)(p - host);
	if (n == 0)
		return -EINVAL;
	if (bracket) {
		if (*p != ']' || !memchr(host, ':', n))
			return -EINVAL;
		p++;
	}
	if (*p++ != ':')
		return -EINVAL;

	/* PORT: decimal 1..65535, digits only; stop before it can overflow. */
	if (*p < '0' || *p > '9')
		return -EINVAL;
	port = 0;
	while (*p >= '0' && *p <= '9') {
		port = port * 10 + (unsigned long)(*p++ - '0');
		if (port > UINT16_MAX)
			return -EINVAL;
	}
	if (port == 0 || *p++ != '/')
		return -EINVAL;

	p = parse_hex64(p, &tok.id);
	if (!p || *p++ != '-')
		return -EINVAL;
	p = parse_hex64(p, &tok.secret);
	if (!p)
		return -EINVAL;
	while (space_char(*p))
		p++;
	if (*p)
		return -EINVAL;

	memset(tok.host, 0, sizeof(tok.host));
	memcpy(tok.host, host, n);
	tok.port = (uint16_t)port;
	*t = tok;
	return 0;
}

/* port_value -- decimal or 0x hex, 1..65535, nothing after it. */
static int port_value(const char *s, uint16_t *out)
{
	unsigned base = 10, v = 0, d;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -EINVAL;
		v = v * base + d;
		if (v > 65535)
			return -EINVAL;
	}
	if (v == 0)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

int rmp_split_server(const char *s, char *host, size_t hostlen,
		     uint16_t *port)
{
	const char *colon = NULL, *start = s, *p;
	uint16_t v = 0;
	size_t n;

	if (*s == '[') {
		p = strchr(s, ']');
		if (!p || (p[1] && p[1] != ':'))
			return -EINVAL;
		start = s + 1;
		n = (size_t)(p - start);
		colon = p[1] ? p + 1 : NULL;
	} else {
		p = strchr(s, ':');
		if (p && !strchr(p + 1, ':'))
			colon = p; /* one ':' -> HOST:PORT; more -> IPv6 */
		n = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	if (colon && port_value(colon + 1, &v))
		return -EINVAL;
	memcpy(host, start, n);
	host[n] = '\0';
	*port = v;
	return 0;
}

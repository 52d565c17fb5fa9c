/* SPDX-License-Identifier: MIT */
/* parse.c -- parse and print numbers, sizes, durations, booleans, host:port. */
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <ctype.h>
#include <string.h>

/* Longest numeric address text: IPv6 + "%" + interface name + NUL. */
#define ADDR_TEXT_LEN (INET6_ADDRSTRLEN + IF_NAMESIZE + 1)

/* Digit value in base 10 or 16 (either case), or -1. Not locale bound. */
static int digit(char c, unsigned int base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * scan -- the NUMBER (or, with dec_only, the DEC) at the start of s. Sets
 * *end past its digits (to s when there are none), *hex to whether it
 * was hex, and *out unless it overflows. Returns 0, -EINVAL (no digits;
 * "0x" without one) or -ERANGE (2^64 or more).
 */
static int scan(const char *s, bool dec_only, uint64_t *out,
		const char **end, bool *hex)
{
	unsigned int base = 10;
	const char *p = s;
	uint64_t v = 0;
	int ret = 0, d;

	*end = s;
	*hex = false;
	if (!dec_only && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (digit(*p, base) < 0)
		return -EINVAL;
	for (; (d = digit(*p, base)) >= 0; p++) {
		if (v > (UINT64_MAX - (unsigned int)d) / base)
			ret = -ERANGE; /* keep going: find the end */
		v = v * base + (unsigned int)d;
	}
	*end = p;
	*hex = base == 16;
	if (!ret)
		*out = v;
	return ret;
}

/* mul_checked -- *v *= m, or -ERANGE when the product exceeds 64 bits. */
static int mul_checked(uint64_t *v, uint64_t m)
{
	if (m && *v > UINT64_MAX / m)
		return -ERANGE;
	*v *= m;
	return 0;
}

/* whole -- scan() of all of s: trailing characters are -EINVAL. */
static int whole(const char *s, bool dec_only, uint64_t *out)
{
	const char *end;
	uint64_t v = 0;
	bool hex;
	int ret;

	if (!s)
		return -EINVAL;
	ret = scan(s, dec_only, &v, &end, &hex);
	if (ret == -EINVAL || *end)
		return -EINVAL;
	if (ret)
		return ret;
	*out = v;
	return 0;
}

int rmp_parse_u64(const char *s, uint64_t *out)
{
	return whole(s, false, out);
}

int rmp_parse_dec(const char *s, uint64_t *out)
{
	return whole(s, true, out);
}

int rmp_parse_i64(const char *s, int64_t *out)
{
	bool neg = s && *s == '-';
	uint64_t v = 0;
	int ret;

	ret = whole(neg ? s + 1 : s, false, &v);
	if (ret)
		return ret;
	if (v > (uint64_t)INT64_MAX + neg)
		return -ERANGE;
	/* -(2^63) has no positive twin: negate in unsigned arithmetic */
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

int rmp_parse_hex_fixed(const char *s, unsigned int ndigits, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int i;
	int d;

	if (!s || ndigits < 1 || ndigits > 16)
		return -EINVAL;
	for (i = 0; i < ndigits; i++) {
		d = digit(s[i], 16); /* stops at the NUL: never reads past */
		if (d < 0)
			return -EINVAL;
		v = v << 4 | (unsigned int)d;
	}
	*out = v;
	return 0;
}

/*
 * scaled -- the quantity of s: a number, then the unit whose text equals
 * the rest of s; mult_of() gives its multiplier, or 0 when the rest is no
 * unit. A hex number takes no unit.
 */
static int scaled(const char *s, uint64_t (*mult_of)(const char *unit,
						     uint64_t arg),
		  uint64_t arg, uint64_t *out)
{
	const char *end;
	uint64_t v = 0, mult;
	bool hex;
	int ret;

	if (!s)
		return -EINVAL;
	ret = scan(s, false, &v, &end, &hex);
	if (ret == -EINVAL || (hex && *end))
		return -EINVAL;
	mult = mult_of(end, arg);
	if (!mult)
		return -EINVAL;
	if (ret)
		return ret;
	ret = mul_checked(&v, mult);
	if (ret)
		return ret;
	*out = v;
	return 0;
}

/* size_mult -- bytes per SIZE-UNIT u ("" is 1), or 0 when u is none. */
static uint64_t size_mult(const char *u, uint64_t unused)
{
	static const char letters[] = "KMGT";
	const char *l;

	(void)unused;
	if (!*u)
		return 1;
	/* *u is not NUL, so strchr() cannot match the terminator */
	l = strchr(letters, *u >= 'a' && *u <= 'z' ? *u - 'a' + 'A' : *u);
	if (!l || (strcmp(u + 1, "") && strcmp(u + 1, "iB") &&
		   strcmp(u + 1, "B")))
		return 0;
	return UINT64_C(1024) << (10 * (l - letters));
}

int rmp_parse_size(const char *s, uint64_t *out)
{
	return scaled(s, size_mult, 0, out);
}

/* time_mult -- ms per TIME-UNIT u ("" is bare_ms), or 0 when u is none. */
static uint64_t time_mult(const char *u, uint64_t bare_ms)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 },		{ "s", RMP_MS_PER_S },
		{ "m", RMP_MS_PER_M },	{ "h", RMP_MS_PER_H },
		{ "d", RMP_MS_PER_D },
	};
	size_t i;

	if (!*u)
		return bare_ms;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(u, units[i].unit))
			return units[i].ms;
	return 0;
}

int rmp_parse_duration(const char *s, uint64_t bare_ms, uint64_t *out)
{
	if (!bare_ms)
		return -EINVAL;
	return scaled(s, time_mult, bare_ms, out);
}

int rmp_parse_duration_ms(const char *s, uint64_t *out)
{
	return rmp_parse_duration(s, RMP_MS_PER_S, out);
}

int rmp_parse_bool(const char *s, bool *out)
{
	static const struct {
		const char *name;
		bool val;
	} names[] = {
		{ "yes", true }, { "no", false },  { "true", true },
		{ "false", false }, { "on", true }, { "off", false },
		{ "1", true },   { "0", false },
	};
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			*out = names[i].val;
			return 0;
		}
	}
	return -EINVAL;
}

int rmp_parse_port(const char *s, uint16_t *out)
{
	uint64_t v = 0;
	int ret;

	ret = rmp_parse_u64(s, &v);
	if (ret)
		return ret;
	if (v < 1 || v > UINT16_MAX)
		return -ERANGE;
	*out = (uint16_t)v;
	return 0;
}

bool rmp_addr_wildcard(const char *s)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1)
		return a4.s_addr == htonl(INADDR_ANY);
	return inet_pton(AF_INET6, s, &a6) == 1 &&
	       IN6_IS_ADDR_UNSPECIFIED(&a6);
}

int rmp_parse_addr(const char *s, int *family)
{
	unsigned char bin[sizeof(struct in6_addr)];
	char buf[INET6_ADDRSTRLEN];
	const char *pct;
	size_t n;

	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, bin) == 1) {
		if (family)
			*family = AF_INET;
		return 0;
	}
	pct = strchr(s, '%');
	n = pct ? (size_t)(pct - s) : strlen(s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, bin) != 1)
		return -EINVAL;
	/* a scope is an interface name: not empty, fits, no '/' */
	if (pct && (!pct[1] || strlen(pct + 1) >= IF_NAMESIZE ||
		    strchr(pct + 1, '/')))
		return -EINVAL;
	if (family)
		*family = AF_INET6;
	return 0;
}

/*
 * cut -- find HOST and PORT in s (see rmp_split_hostport()) without
 * copying: HOST is the n bytes at *h, *port as there. 0 or -EINVAL.
 */
static int cut(const char *s, const char **h, size_t *n, const char **port)
{
	const char *colon, *rb;

	if (!s)
		return -EINVAL;
	if (*s == '[') {
		rb = strchr(s, ']');
		if (!rb || (rb[1] && rb[1] != ':'))
			return -EINVAL;
		*h = s + 1;
		*n = (size_t)(rb - *h);
		colon = rb[1] ? rb + 1 : NULL;
	} else {
		/* one ':' ends HOST; with more it is all a bare IPv6 address */
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL;
		*h = s;
		*n = colon ? (size_t)(colon - s) : strlen(s);
	}
	*port = colon ? colon + 1 : NULL;
	return *n ? 0 : -EINVAL;
}

int rmp_split_hostport(const char *s, char *host, size_t hostlen,
		       const char **port)
{
	const char *h, *p;
	size_t n;

	if (cut(s, &h, &n, &p))
		return -EINVAL;
	if (n >= hostlen)
		return -ENOSPC;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = p;
	return 0;
}

int rmp_parse_hostport(const char *s, char *host, size_t hostlen,
		       uint16_t *port)
{
	char addr[ADDR_TEXT_LEN];
	const char *ptext;
	uint16_t p;
	int family;

	if (rmp_split_hostport(s, addr, sizeof(addr), &ptext) || !ptext ||
	    rmp_parse_addr(addr, &family) || rmp_parse_port(ptext, &p))
		return -EINVAL;
	/* an IPv6 address only in brackets, and brackets only around one */
	if ((*s == '[') != (family == AF_INET6))
		return -EINVAL;
	if (host && strlen(addr) >= hostlen)
		return -ENOSPC;
	if (host)
		strcpy(host, addr);
	if (port)
		*port = p;
	return 0;
}

int rmp_split_server(const char *s, char *host, size_t hostlen,
		     uint16_t *port)
{
	const char *h, *ptext;
	uint16_t p = 0;
	size_t n;

	if (cut(s, &h, &n, &ptext) || n >= hostlen ||
	    (ptext && rmp_parse_port(ptext, &p)))
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = p;
	return 0;
}

char *rmp_format_size(uint64_t bytes, char *buf, size_t buflen)
{
	static const char units[] = "TGMK";
	unsigned int i;

	if (!buflen)
		return buf;
	for (i = 0; bytes && i < sizeof(units) - 1; i++) {
		uint64_t mult = UINT64_C(1) << (10 * (4 - i));

		if (bytes % mult == 0) {
			snprintf(buf, buflen, "%" PRIu64 "%c", bytes / mult,
				 units[i]);
			return buf;
		}
	}
	snprintf(buf, buflen, "%" PRIu64, bytes);
	return buf;
}

char *rmp_format_duration_ms(uint64_t ms, char *buf, size_t buflen)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {
		{ "d", RMP_MS_PER_D }, { "h", RMP_MS_PER_H },
		{ "m", RMP_MS_PER_M }, { "s", RMP_MS_PER_S },
	};
	size_t i;

	if (!buflen)
		return buf;
	for (i = 0; ms && i < sizeof(units) / sizeof(units[0]); i++) {
		if (ms % units[i].ms == 0) {
			snprintf(buf, buflen, "%" PRIu64 "%s",
				 ms / units[i].ms, units[i].unit);
			return buf;
		}
	}
	snprintf(buf, buflen, "%" PRIu64 "ms", ms);
	return buf;
}

bool rmp_list_item(const char **s, const char **b, const char **e)
{
	const char *p = *s, *comma, *end;

	if (!p)
		return false;
	comma = strchr(p, ',');
	end = comma ? comma : p + strlen(p);
	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	*b = p;
	*e = end;
	*s = comma ? comma + 1 : NULL;
	return true;
}

/* SPDX-License-Identifier: MIT */
/* network.c -- peer networks: ADDR/PREFIX parsed, printed, matched. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "network.h"
#include "parse.h"

/* addr_bytes -- bytes of a network's address: 4 or 16. */
static unsigned int addr_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* prefix_mask -- the bits of byte i that a /prefix network fixes. */
static uint8_t prefix_mask(unsigned int i, unsigned int prefix)
{
	if (prefix >= 8 * (i + 1))
		return 0xff;
	if (prefix <= 8 * i)
		return 0;
	return (uint8_t)(0xff00u >> (prefix - 8 * i));
}

bool rmp_network_valid(const struct rmp_network *n)
{
	unsigned int i, bytes;

	if (n->family != AF_INET && n->family != AF_INET6)
		return false;
	bytes = addr_bytes(n->family);
	if (n->prefix > 8 * bytes)
		return false;
	for (i = 0; i < bytes; i++)
		if (n->addr[i] & ~prefix_mask(i, n->prefix))
			return false;
	return true;
}

bool rmp_network_eq(const struct rmp_network *a, const struct rmp_network *b)
{
	return a->family == b->family && a->prefix == b->prefix &&
	       !memcmp(a->addr, b->addr, addr_bytes(a->family));
}

/* Room for any address's text: an IPv6 address (at most 39 characters
 * in hex, with some slack) and NUL. */
#define NET_ADDR_TEXT_LEN 48

/*
 * v6_text -- the 8 groups g in hex, the zero groups zs..zs+zl-1 as "::"
 * (zl 0 = none). Returns the length.
 */
static size_t v6_text(const uint16_t g[8], int zs, int zl, char *buf,
		      size_t buflen)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < 8 && o < buflen; i++) {
		if (zl && i == zs) {
			o += (size_t)snprintf(buf + o, buflen - o, "::");
			i += zl - 1;
			continue;
		}
		o += (size_t)snprintf(buf + o, buflen - o, "%s%x",
				      i && !(zl && i == zs + zl) ? ":" : "",
				      (unsigned int)g[i]);
	}
	return o;
}

/*
 * format_v6 -- a as text. Canonical (RFC 5952, but all hex): lower case,
 * no leading zeros, the first longest run of two or more zero groups as
 * "::". Shortest: the run that makes the text shortest, even a single
 * group -- never longer than any text inet_pton() reads as a.
 */
static void format_v6(const uint8_t a[16], bool shortest, char *buf,
		      size_t buflen)
{
	char best[RMP_NETWORK_TEXT_LEN], t[RMP_NETWORK_TEXT_LEN];
	uint16_t g[8];
	int i, j, bs = 0, bl = 0;
	size_t blen;

	for (i = 0; i < 8; i++)
		g[i] = (uint16_t)(a[2 * i] << 8 | a[2 * i + 1]);
	if (!shortest) {
		for (i = 0; i < 8; i = j + 1) {
			for (j = i; j < 8 && !g[j]; j++)
				;
			if (j - i >= 2 && j - i > bl) {
				bs = i;
				bl = j - i;
			}
		}
		v6_text(g, bs, bl, buf, buflen);
		return;
	}
	blen = v6_text(g, 0, 0, best, sizeof(best));
	for (i = 0; i < 8; i = j + 1) {
		for (j = i; j < 8 && !g[j]; j++)
			;
		if (j > i && v6_text(g, i, j - i, t, sizeof(t)) < blen) {
			blen = strlen(t);
			memcpy(best, t, blen + 1);
		}
	}
	snprintf(buf, buflen, "%s", best);
}

void rmp_network_format(const struct rmp_network *n, bool shortest,
			char *buf, size_t buflen)
{
	char a[NET_ADDR_TEXT_LEN];

	if (n->family == AF_INET)
		inet_ntop(AF_INET, n->addr, a, sizeof(a));
	else
		format_v6(n->addr, shortest, a, sizeof(a));
	if (shortest && n->prefix == 8 * addr_bytes(n->family))
		snprintf(buf, buflen, "%s", a);
	else
		snprintf(buf, buflen, "%s/%u", a, (unsigned int)n->prefix);
}

int rmp_network_parse(const char *s, struct rmp_network *n,
		      unsigned *max_prefix)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0,
					    0, 0, 0, 0, 0xff, 0xff };
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t prefix = 0;
	unsigned int i, max;

	memset(n, 0, sizeof(*n));
	*max_prefix = 128;
	if (alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, n->addr) == 1) {
		n->family = AF_INET;
	} else {
		memset(n->addr, 0, sizeof(n->addr));
		if (inet_pton(AF_INET6, addr, n->addr) != 1)
			return -EINVAL;
		n->family = AF_INET6;
	}
	max = 8 * addr_bytes(n->family);
	*max_prefix = max;
	prefix = max;
	/* the prefix is plain decimal: no sign, no leading zeros */
	if (slash && (rmp_parse_dec(slash + 1, &prefix) ||
		      (slash[1] == '0' && slash[2])))
		return -EINVAL;
	if (prefix > max)
		return -ERANGE;
	n->prefix = (uint8_t)prefix;
	for (i = 0; i < max / 8; i++)
		if (n->addr[i] & ~prefix_mask(i, n->prefix))
			return -EDOM;
	if (n->family == AF_INET6 && n->prefix >= 96 &&
	    !memcmp(n->addr, mapped, sizeof(mapped))) {
		n->family = AF_INET;
		n->prefix -= 96;
		memmove(n->addr, n->addr + 12, 4);
		memset(n->addr + 4, 0, sizeof(n->addr) - 4);
	}
	return 0;
}

bool rmp_network_match(const struct rmp_network *n,
		       const struct sockaddr *sa)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0,
					    0, 0, 0, 0, 0xff, 0xff };
	uint8_t a[16];
	unsigned int i;
	int family;

	if (!n || !sa)
		return false;
	if (sa->sa_family == AF_INET) {
		family = AF_INET;
		memcpy(a, (const char *)sa + offsetof(struct sockaddr_in,
						      sin_addr), 4);
	} else if (sa->sa_family == AF_INET6) {
		family = AF_INET6;
		memcpy(a, (const char *)sa + offsetof(struct sockaddr_in6,
						      sin6_addr), 16);
		if (!memcmp(a, mapped, sizeof(mapped))) {
			family = AF_INET;
			memmove(a, a + 12, 4);
		}
	} else {
		return false;
	}
	if (family != n->family || n->prefix > 8 * addr_bytes(family))
		return false;
	for (i = 0; i < addr_bytes(family); i++)
		if ((a[i] ^ n->addr[i]) & prefix_mask(i, n->prefix))
			return false;
	return true;
}

bool rmp_networks_allow(const struct rmp_network *nets, unsigned count,
			const struct sockaddr *sa)
{
	if (!count)
		return true;
	for (unsigned i = 0; i < count; i++)
		if (rmp_network_match(&nets[i], sa))
			return true;
	return false;
}

/* SPDX-License-Identifier: MIT */
/* network.h -- peer networks: ADDR/PREFIX parsed, printed, matched. */
#ifndef RMP_NETWORK_H
#define RMP_NETWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A peer network: address/prefix. */
struct rmp_network {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t addr[16];    /* network address, host bits zero */
	uint8_t prefix;      /* 0..32 or 0..128 */
};

/*
 * rmp_network_parse -- ADDR[/PREFIX] into n: a bare address is a host
 * network; an IPv4-mapped network ::ffff:a.b.c.d/96+ becomes the IPv4
 * one. Returns 0, -EINVAL (not ADDR[/PREFIX]), -ERANGE (the prefix is
 * beyond *max_prefix, the address's bits) or -EDOM (host bits set).
 */
int rmp_network_parse(const char *s, struct rmp_network *n,
		      unsigned *max_prefix);

/* rmp_network_valid -- n is a network rmp_network_parse could make. */
bool rmp_network_valid(const struct rmp_network *n);

/* rmp_network_eq -- a and b are the same network. */
bool rmp_network_eq(const struct rmp_network *a, const struct rmp_network *b);

/*
 * rmp_network_format -- n as ADDR/PREFIX, IPv6 in canonical form (RFC
 * 5952, all hex). Shortest: host networks as bare addresses and IPv6 in
 * the shortest text inet_pton() reads (for a line that must not grow).
 * RMP_NETWORK_TEXT_LEN holds any.
 */
#define RMP_NETWORK_TEXT_LEN 56
void rmp_network_format(const struct rmp_network *n, bool shortest,
			char *buf, size_t buflen);

/*
 * rmp_network_match -- sa (AF_INET or AF_INET6) lies in n. An
 * IPv4-mapped IPv6 address ::ffff:a.b.c.d counts as the IPv4 address
 * a.b.c.d: it matches IPv4 networks, never IPv6 ones. False for NULL or
 * another family.
 */
bool rmp_network_match(const struct rmp_network *n,
		       const struct sockaddr *sa);

/*
 * rmp_networks_allow -- sa may connect under the count networks nets: no
 * networks (any address), or one of them matches (rmp_network_match()).
 */
bool rmp_networks_allow(const struct rmp_network *nets, unsigned count,
			const struct sockaddr *sa);

#endif /* RMP_NETWORK_H */

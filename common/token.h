/* SPDX-License-Identifier: MIT */
/* token.h -- printable lease tokens: server address + lease id + secret. */
#ifndef RMP_TOKEN_H
#define RMP_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "parse.h" /* rmp_split_server(), which token users need too */

/*
 * A lease token is what a user copies between processes to reach a lease:
 *
 *     rmp://HOST:PORT/ID-SECRET
 *
 * HOST is an IPv4 address, a host name, or an IPv6 address in brackets
 * ("[fe80::1]"); PORT is decimal 1..65535 (no "0x": a token has one
 * spelling but for the case of its hex digits); ID and SECRET are exactly
 * 16 lower- or upper-case hex digits each. common/parse.h parses the
 * parts. Nothing may follow SECRET except
 * trailing whitespace (a newline from a shell pipe). The secret is what
 * makes ATTACH safe: treat a token like a password.
 */
#define RMP_TOKEN_HOST_MAX 255
#define RMP_TOKEN_MAX (6 + RMP_TOKEN_HOST_MAX + 2 + 1 + 5 + 1 + 33 + 1)

struct rmp_token {
	char host[RMP_TOKEN_HOST_MAX + 1]; /* without IPv6 brackets */
	uint16_t port;
	uint64_t id;
	uint64_t secret;
};

/*
 * rmp_token_format -- write t as text into buf (NUL terminated).
 * Returns the length without the NUL, -ENOSPC when cap is too small,
 * -EINVAL for an empty host, a host with characters outside
 * [A-Za-z0-9.-:%_] or port 0.
 */
int rmp_token_format(const struct rmp_token *t, char *buf, size_t cap);

/*
 * rmp_token_parse -- parse s into *t. Returns 0 or -EINVAL; *t is only
 * written on success.
 */
int rmp_token_parse(const char *s, struct rmp_token *t);

#endif /* RMP_TOKEN_H */

/* SPDX-License-Identifier: MIT */
/* parse.h -- the one grammar of numbers, sizes, durations, booleans, host:port. */
#ifndef RMP_PARSE_H
#define RMP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What a person types for a number, in rmpoold.conf and on the command
 * line of rmpool and rmpoolctl alike (ABNF, RFC 5234):
 *
 *   DEC       = 1*DIGIT                 ; "0010" is 10
 *   HEX       = "0" ("x" / "X") 1*HEXDIG ; digits in either case
 *   NUMBER    = DEC / HEX
 *   SIZE      = DEC [SIZE-UNIT] / HEX
 *   SIZE-UNIT = ("K" / "M" / "G" / "T") ["iB" / "B"]
 *                 ; letter in either case, powers of 1024: 4k = 4KiB = 4KB
 *   DURATION  = DEC [TIME-UNIT] / HEX
 *   TIME-UNIT = "ms" / "s" / "m" / "h" / "d"   ; lower case only
 *                 ; no unit: seconds (the caller of rmp_parse_duration()
 *                 ; may choose another unit for a bare number)
 *   BOOLEAN   = "yes" / "no" / "true" / "false" / "on" / "off" / "1" / "0"
 *   PORT      = NUMBER                  ; 1..65535
 *   HOSTPORT  = ADDR ":" PORT / "[" ADDR6 "]" ":" PORT
 *
 * The value is the whole string: no sign (but see rmp_parse_i64()), no
 * blank before, after or inside, no fraction, no digit separators, no
 * unit after a hexadecimal number (in "0x1d" the d is a digit, not a
 * day). Every parser returns 0 and writes its outputs, or returns
 * -EINVAL for text that does not follow the grammar (also empty text and
 * NULL) or -ERANGE for text that does but whose value does not fit
 * (2^64 and more, or the range the function names), and then leaves its
 * outputs untouched. A syntax error wins over overflow:
 * "99999999999999999999X" is -EINVAL.
 *
 * Where a format defines its own spelling the callers use the pieces:
 * a CIDR prefix and the port of a lease token are DEC (rmp_parse_dec()),
 * a token's id and secret 16 hex digits (rmp_parse_hex_fixed()).
 */

/* Milliseconds per unit of a duration. */
#define RMP_MS_PER_S UINT64_C(1000)
#define RMP_MS_PER_M (RMP_MS_PER_S * 60)
#define RMP_MS_PER_H (RMP_MS_PER_M * 60)
#define RMP_MS_PER_D (RMP_MS_PER_H * 24)

/* Buffer size that always holds rmp_format_size/_duration_ms() output. */
#define RMP_FORMAT_LEN 24

/*
 * rmp_parse_u64 -- parse a NUMBER (decimal, or hex after "0x").
 * @s:   text to parse
 * @out: receives the value
 *
 * Returns 0, -EINVAL or -ERANGE (2^64 or more).
 */
int rmp_parse_u64(const char *s, uint64_t *out);

/*
 * rmp_parse_dec -- parse a DEC: decimal digits only, for formats that
 * allow nothing else.
 * @s:   text to parse
 * @out: receives the value
 *
 * Returns 0, -EINVAL or -ERANGE (2^64 or more).
 */
int rmp_parse_dec(const char *s, uint64_t *out);

/*
 * rmp_parse_i64 -- parse a NUMBER with an optional leading '-' (the only
 * parser that takes a sign; '+' is still an error).
 * @s:   text to parse
 * @out: receives the value
 *
 * Returns 0, -EINVAL or -ERANGE (outside INT64_MIN..INT64_MAX).
 */
int rmp_parse_i64(const char *s, int64_t *out);

/*
 * rmp_parse_hex_fixed -- read exactly ndigits hex digits (either case, no
 * "0x") at s; what follows them is the caller's business.
 * @s:       text to read
 * @ndigits: 1..16
 * @out:     receives the value
 *
 * Returns 0, or -EINVAL (a non-hex byte, the NUL included, among the
 * first ndigits, or ndigits out of range).
 */
int rmp_parse_hex_fixed(const char *s, unsigned int ndigits, uint64_t *out);

/*
 * rmp_parse_size -- parse a SIZE: a byte count.
 * @s:   text to parse
 * @out: receives bytes
 *
 * Returns 0, -EINVAL (empty, not a number, unknown unit, trailing
 * characters) or -ERANGE (does not fit in 64 bits).
 */
int rmp_parse_size(const char *s, uint64_t *out);

/*
 * rmp_parse_duration -- parse a DURATION whose bare number (no unit, or
 * hex) counts units of bare_ms milliseconds.
 * @s:       text to parse
 * @bare_ms: milliseconds per unit of a bare number (RMP_MS_PER_S for
 *           seconds, 1 for an option that has always taken milliseconds)
 * @out:     receives milliseconds
 *
 * Returns 0, -EINVAL (also for bare_ms 0) or -ERANGE (does not fit in 64
 * bits of milliseconds).
 */
int rmp_parse_duration(const char *s, uint64_t bare_ms, uint64_t *out);

/*
 * rmp_parse_duration_ms -- rmp_parse_duration() with a bare number in
 * seconds: the meaning of every duration in rmpoold.conf.
 * @s:   text to parse
 * @out: receives milliseconds
 *
 * Returns 0, -EINVAL or -ERANGE.
 */
int rmp_parse_duration_ms(const char *s, uint64_t *out);

/*
 * rmp_parse_bool -- parse a BOOLEAN.
 * @s:   text to parse
 * @out: receives the value
 *
 * Returns 0 or -EINVAL.
 */
int rmp_parse_bool(const char *s, bool *out);

/*
 * rmp_parse_port -- parse a PORT.
 * @s:   text to parse
 * @out: receives the port
 *
 * Returns 0, -EINVAL or -ERANGE (0, or above 65535).
 */
int rmp_parse_port(const char *s, uint16_t *out);

/*
 * rmp_parse_addr -- check a numeric IP address: IPv4 dotted quad, or IPv6
 * with an optional "%" and interface name (scope), as inet_pton(3) and
 * if_nametoindex(3) take them. No host names.
 * @s:      text to check
 * @family: receives AF_INET or AF_INET6; may be NULL
 *
 * Returns 0 or -EINVAL.
 */
int rmp_parse_addr(const char *s, int *family);

/*
 * rmp_addr_wildcard -- s is a wildcard address, 0.0.0.0 or :: (in any
 * spelling: ::0, 0:0::0, ...). False for anything else, names included.
 */
bool rmp_addr_wildcard(const char *s);

/*
 * rmp_split_hostport -- cut "HOST", "HOST:PORT", "[HOST]", "[HOST]:PORT"
 * or a bare IPv6 address (two or more ':' and no brackets: all HOST)
 * into its parts, checking neither. The base of the functions below.
 * @s:       text to split
 * @host:    receives HOST, without brackets, NUL terminated
 * @hostlen: size of host
 * @port:    receives the text after the ':' that ends HOST ("" for
 *           "h:"), or NULL when there is none
 *
 * Returns 0, -EINVAL (empty HOST, '[' without "]" or "]:" after it) or
 * -ENOSPC (HOST does not fit in hostlen).
 */
int rmp_split_hostport(const char *s, char *host, size_t hostlen,
		       const char **port);

/*
 * rmp_parse_hostport -- parse "ADDR:PORT" or "[V6ADDR]:PORT" with a
 * numeric address (rmp_parse_addr(); IPv6 only in brackets) and a PORT:
 * an address to listen on, such as server.metrics_listen.
 * @s:       text to parse
 * @host:    receives the address without brackets; may be NULL
 * @hostlen: size of host
 * @port:    receives the port; may be NULL
 *
 * Returns 0, -EINVAL (bad syntax, address or port) or -ENOSPC (host too
 * small). Outputs are untouched on failure.
 */
int rmp_parse_hostport(const char *s, char *host, size_t hostlen,
		       uint16_t *port);

/*
 * rmp_split_server -- parse a server address as users type it: HOST,
 * HOST:PORT, [V6ADDR]:PORT, [V6ADDR] or a bare IPv6 address; HOST may be
 * a name (it is not looked up here) and PORT is optional.
 * @s:       text to parse
 * @host:    receives HOST without brackets
 * @hostlen: size of host
 * @port:    receives the port, 0 when none was given
 *
 * Returns 0, or -EINVAL (host empty or too long for hostlen, bad port).
 * Outputs are untouched on failure.
 */
int rmp_split_server(const char *s, char *host, size_t hostlen,
		     uint16_t *port);

/*
 * rmp_format_size -- print bytes with the largest unit that divides it
 * exactly ("1G", "3M", "1536K", "100"); the output parses back with
 * rmp_parse_size().
 * @bytes:  value
 * @buf:    output buffer; RMP_FORMAT_LEN bytes always suffice
 * @buflen: size of buf
 *
 * Returns buf.
 */
char *rmp_format_size(uint64_t bytes, char *buf, size_t buflen);

/*
 * rmp_format_duration_ms -- print milliseconds with the largest unit that
 * divides it exactly ("1d", "90s", "1500ms", "0ms"); the output parses
 * back with rmp_parse_duration() whatever its bare_ms.
 * @ms:     value
 * @buf:    output buffer; RMP_FORMAT_LEN bytes always suffice
 * @buflen: size of buf
 *
 * Returns buf.
 */
char *rmp_format_duration_ms(uint64_t ms, char *buf, size_t buflen);

/*
 * rmp_list_item -- the next entry of a comma-separated list. Start with
 * *s at the list; each call puts the entry, spaces around it trimmed, in
 * [*b, *e) and moves *s past its comma (NULL after the last entry).
 * false when no entry is left. An entry may be empty (*b == *e: "a,,b",
 * "a,", and a list of spaces only: callers that take an empty list say
 * so before).
 */
bool rmp_list_item(const char **s, const char **b, const char **e);

#endif /* RMP_PARSE_H */

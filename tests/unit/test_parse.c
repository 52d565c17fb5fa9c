/* SPDX-License-Identifier: MIT */
/* test_parse.c -- unit tests of the value grammar: numbers to host:port. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "parse.h"

#define KIB UINT64_C(1024)
#define MIB (KIB << 10)
#define GIB (MIB << 10)
#define TIB (GIB << 10)

/* Sentinel the outputs hold before a call that must fail. */
#define UNTOUCHED UINT64_C(0x5a5a5a5a5a5a5a5a)

/* u64_is -- parse s with fn; it must succeed with exactly want. */
#define U64_IS(fn, s, want)                                                 \
	do {                                                                \
		uint64_t v_ = UNTOUCHED;                                    \
		CHECK_EQ(fn(s, &v_), 0);                                    \
		CHECK((v_) == (uint64_t)(want));                            \
	} while (0)

/* U64_ERR -- parse s with fn; it must fail with err, output untouched. */
#define U64_ERR(fn, s, err)                                                 \
	do {                                                                \
		uint64_t v_ = UNTOUCHED;                                    \
		CHECK_EQ(fn(s, &v_), err);                                  \
		CHECK(v_ == UNTOUCHED);                                     \
	} while (0)

static void test_u64(void)
{
	U64_IS(rmp_parse_u64, "0", 0);
	U64_IS(rmp_parse_u64, "7", 7);
	U64_IS(rmp_parse_u64, "0010", 10); /* leading zeros: still decimal */
	U64_IS(rmp_parse_u64, "18446744073709551615", UINT64_MAX);
	U64_IS(rmp_parse_u64, "0x0", 0);
	U64_IS(rmp_parse_u64, "0x1f", 31);
	U64_IS(rmp_parse_u64, "0X1F", 31);
	U64_IS(rmp_parse_u64, "0xdeadBEEF", 0xdeadbeef);
	U64_IS(rmp_parse_u64, "0xffffffffffffffff", UINT64_MAX);
	U64_IS(rmp_parse_u64, "0x0000000000000000000001", 1);

	/* 2^64 and beyond, in both bases */
	U64_ERR(rmp_parse_u64, "18446744073709551616", -ERANGE);
	U64_ERR(rmp_parse_u64, "99999999999999999999999", -ERANGE);
	U64_ERR(rmp_parse_u64, "0x10000000000000000", -ERANGE);

	U64_ERR(rmp_parse_u64, NULL, -EINVAL);
	U64_ERR(rmp_parse_u64, "", -EINVAL);
	U64_ERR(rmp_parse_u64, "-1", -EINVAL);
	U64_ERR(rmp_parse_u64, "+1", -EINVAL);
	U64_ERR(rmp_parse_u64, "-0", -EINVAL);
	U64_ERR(rmp_parse_u64, " 1", -EINVAL);
	U64_ERR(rmp_parse_u64, "1 ", -EINVAL);
	U64_ERR(rmp_parse_u64, "1\n", -EINVAL);
	U64_ERR(rmp_parse_u64, "1 000", -EINVAL);
	U64_ERR(rmp_parse_u64, "1_000", -EINVAL);
	U64_ERR(rmp_parse_u64, "1,5", -EINVAL);
	U64_ERR(rmp_parse_u64, "1.5", -EINVAL);
	U64_ERR(rmp_parse_u64, "1e3", -EINVAL);
	U64_ERR(rmp_parse_u64, "12a", -EINVAL);
	U64_ERR(rmp_parse_u64, "0x", -EINVAL);
	U64_ERR(rmp_parse_u64, "0X", -EINVAL);
	U64_ERR(rmp_parse_u64, "0xg", -EINVAL);
	U64_ERR(rmp_parse_u64, "0x-1", -EINVAL);
	U64_ERR(rmp_parse_u64, "0x 1", -EINVAL);
	U64_ERR(rmp_parse_u64, "00x1", -EINVAL);
	U64_ERR(rmp_parse_u64, "x1", -EINVAL);
	U64_ERR(rmp_parse_u64, "0b1", -EINVAL);
	U64_ERR(rmp_parse_u64, "1K", -EINVAL); /* units are for sizes */
	U64_ERR(rmp_parse_u64, "\xd9\xa3", -EINVAL); /* Arabic-Indic 3 */
	/* a syntax error wins over overflow */
	U64_ERR(rmp_parse_u64, "99999999999999999999999x", -EINVAL);
	U64_ERR(rmp_parse_u64, "0x10000000000000000g", -EINVAL);
}

static void test_dec(void)
{
	U64_IS(rmp_parse_dec, "0", 0);
	U64_IS(rmp_parse_dec, "065535", 65535);
	U64_IS(rmp_parse_dec, "18446744073709551615", UINT64_MAX);
	U64_ERR(rmp_parse_dec, "18446744073709551616", -ERANGE);
	U64_ERR(rmp_parse_dec, "0x10", -EINVAL);
	U64_ERR(rmp_parse_dec, "", -EINVAL);
	U64_ERR(rmp_parse_dec, NULL, -EINVAL);
	U64_ERR(rmp_parse_dec, "-1", -EINVAL);
	U64_ERR(rmp_parse_dec, "1 ", -EINVAL);
}

static void test_i64(void)
{
	int64_t v;

	CHECK_EQ(rmp_parse_i64("0", &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(rmp_parse_i64("-1", &v), 0);
	CHECK_EQ(v, -1);
	CHECK_EQ(rmp_parse_i64("-0x10", &v), 0);
	CHECK_EQ(v, -16);
	CHECK_EQ(rmp_parse_i64("-0", &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(rmp_parse_i64("9223372036854775807", &v), 0);
	CHECK(v == INT64_MAX);
	CHECK_EQ(rmp_parse_i64("-9223372036854775808", &v), 0);
	CHECK(v == INT64_MIN);
	CHECK_EQ(rmp_parse_i64("0x7fffffffffffffff", &v), 0);
	CHECK(v == INT64_MAX);

	v = 42;
	CHECK_EQ(rmp_parse_i64("9223372036854775808", &v), -ERANGE);
	CHECK_EQ(rmp_parse_i64("-9223372036854775809", &v), -ERANGE);
	CHECK_EQ(rmp_parse_i64("0x8000000000000000", &v), -ERANGE);
	CHECK_EQ(rmp_parse_i64("-18446744073709551616", &v), -ERANGE);
	CHECK_EQ(rmp_parse_i64(NULL, &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64("", &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64("-", &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64("--1", &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64("+1", &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64("- 1", &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64(" -1", &v), -EINVAL);
	CHECK_EQ(rmp_parse_i64("-1x", &v), -EINVAL);
	CHECK_EQ(v, 42);
}

static void test_hex_fixed(void)
{
	uint64_t v = UNTOUCHED;

	CHECK_EQ(rmp_parse_hex_fixed("0123456789abcdef", 16, &v), 0);
	CHECK(v == UINT64_C(0x0123456789abcdef));
	CHECK_EQ(rmp_parse_hex_fixed("FEDCBA9876543210-rest", 16, &v), 0);
	CHECK(v == UINT64_C(0xfedcba9876543210));
	CHECK_EQ(rmp_parse_hex_fixed("ffffffffffffffff", 16, &v), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ(rmp_parse_hex_fixed("a", 1, &v), 0);
	CHECK_EQ(v, 10);
	CHECK_EQ(rmp_parse_hex_fixed("12345", 4, &v), 0); /* reads 4 only */
	CHECK_EQ(v, 0x1234);

	v = UNTOUCHED;
	CHECK_EQ(rmp_parse_hex_fixed("0123456789abcde", 16, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed("0123456789abcdeg", 16, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed("0x23456789abcdef", 16, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed(" 123456789abcdef", 16, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed("", 1, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed(NULL, 1, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed("1", 0, &v), -EINVAL);
	CHECK_EQ(rmp_parse_hex_fixed("00000000000000000", 17, &v), -EINVAL);
	CHECK(v == UNTOUCHED);
}

static void test_size(void)
{
	U64_IS(rmp_parse_size, "0", 0);
	U64_IS(rmp_parse_size, "512", 512);
	U64_IS(rmp_parse_size, "0010", 10);
	U64_IS(rmp_parse_size, "4K", 4 * KIB);
	U64_IS(rmp_parse_size, "4k", 4 * KIB);
	U64_IS(rmp_parse_size, "4KiB", 4 * KIB);
	U64_IS(rmp_parse_size, "4kiB", 4 * KIB);
	U64_IS(rmp_parse_size, "4KB", 4 * KIB);
	U64_IS(rmp_parse_size, "4kB", 4 * KIB);
	U64_IS(rmp_parse_size, "512M", 512 * MIB);
	U64_IS(rmp_parse_size, "512m", 512 * MIB);
	U64_IS(rmp_parse_size, "2MiB", 2 * MIB);
	U64_IS(rmp_parse_size, "1g", GIB);
	U64_IS(rmp_parse_size, "1GB", GIB);
	U64_IS(rmp_parse_size, "3T", 3 * TIB);
	U64_IS(rmp_parse_size, "3t", 3 * TIB);
	U64_IS(rmp_parse_size, "3TiB", 3 * TIB);
	U64_IS(rmp_parse_size, "0K", 0);
	U64_IS(rmp_parse_size, "0x1000", 4096);
	U64_IS(rmp_parse_size, "0X1b", 27); /* B is a hex digit there */
	U64_IS(rmp_parse_size, "18446744073709551615", UINT64_MAX);
	U64_IS(rmp_parse_size, "16777215T", UINT64_C(16777215) << 40);
	U64_IS(rmp_parse_size, "17179869183G", UINT64_C(17179869183) << 30);

	/* overflow: of the number, and of the number times its unit */
	U64_ERR(rmp_parse_size, "18446744073709551616", -ERANGE);
	U64_ERR(rmp_parse_size, "16777216T", -ERANGE);
	U64_ERR(rmp_parse_size, "16777216TiB", -ERANGE);
	U64_ERR(rmp_parse_size, "17179869184G", -ERANGE);
	U64_ERR(rmp_parse_size, "18014398509481984K", -ERANGE);
	U64_ERR(rmp_parse_size, "99999999999999999999999K", -ERANGE);
	U64_ERR(rmp_parse_size, "0x10000000000000000", -ERANGE);

	U64_ERR(rmp_parse_size, "", -EINVAL);
	U64_ERR(rmp_parse_size, NULL, -EINVAL);
	U64_ERR(rmp_parse_size, "-1", -EINVAL);
	U64_ERR(rmp_parse_size, "+1", -EINVAL);
	U64_ERR(rmp_parse_size, " 1", -EINVAL);
	U64_ERR(rmp_parse_size, "1 ", -EINVAL);
	U64_ERR(rmp_parse_size, "1 G", -EINVAL);
	U64_ERR(rmp_parse_size, "1X", -EINVAL);
	U64_ERR(rmp_parse_size, "1B", -EINVAL);
	U64_ERR(rmp_parse_size, "1P", -EINVAL);
	U64_ERR(rmp_parse_size, "1KK", -EINVAL);
	U64_ERR(rmp_parse_size, "1Ki", -EINVAL);
	U64_ERR(rmp_parse_size, "1KIB", -EINVAL);
	U64_ERR(rmp_parse_size, "1kib", -EINVAL);
	U64_ERR(rmp_parse_size, "1Kb", -EINVAL); /* kilobits? no */
	U64_ERR(rmp_parse_size, "1KiBx", -EINVAL);
	U64_ERR(rmp_parse_size, "1.5G", -EINVAL);
	U64_ERR(rmp_parse_size, "G", -EINVAL);
	U64_ERR(rmp_parse_size, "KiB", -EINVAL);
	U64_ERR(rmp_parse_size, "0x", -EINVAL);
	U64_ERR(rmp_parse_size, "0x10K", -EINVAL); /* no unit after hex */
	U64_ERR(rmp_parse_size, "0x1KiB", -EINVAL);
	U64_ERR(rmp_parse_size, "99999999999999999999X", -EINVAL);
	U64_ERR(rmp_parse_size, "99999999999999999999KX", -EINVAL);
}

static void test_duration(void)
{
	uint64_t v = UNTOUCHED;

	U64_IS(rmp_parse_duration_ms, "0", 0);
	U64_IS(rmp_parse_duration_ms, "5", 5000); /* bare: seconds */
	U64_IS(rmp_parse_duration_ms, "0x3c", 60000);
	U64_IS(rmp_parse_duration_ms, "500ms", 500);
	U64_IS(rmp_parse_duration_ms, "0ms", 0);
	U64_IS(rmp_parse_duration_ms, "30s", 30000);
	U64_IS(rmp_parse_duration_ms, "5m", 300000);
	U64_IS(rmp_parse_duration_ms, "2h", 7200000);
	U64_IS(rmp_parse_duration_ms, "1d", 86400000);
	U64_IS(rmp_parse_duration_ms, "007s", 7000);
	U64_IS(rmp_parse_duration_ms, "18446744073709551615ms", UINT64_MAX);
	U64_IS(rmp_parse_duration_ms, "18446744073709551s",
	       UINT64_C(18446744073709551000));
	U64_IS(rmp_parse_duration_ms, "213503982334d",
	       UINT64_C(213503982334) * 86400000);

	U64_ERR(rmp_parse_duration_ms, "18446744073709552s", -ERANGE);
	U64_ERR(rmp_parse_duration_ms, "18446744073709552", -ERANGE);
	U64_ERR(rmp_parse_duration_ms, "18446744073709551616ms", -ERANGE);
	U64_ERR(rmp_parse_duration_ms, "213503982335d", -ERANGE);
	U64_ERR(rmp_parse_duration_ms, "0x10000000000000000", -ERANGE);
	U64_ERR(rmp_parse_duration_ms, "0x4189374bc6a7f0", -ERANGE);

	U64_ERR(rmp_parse_duration_ms, "", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, NULL, -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "-1s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "+1s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1.5s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1 s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, " 1s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1s ", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1S", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1MS", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1M", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1D", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1w", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1sec", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1us", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "1h30m", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "ms", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "0x", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "0x10s", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "0x1dm", -EINVAL);
	U64_ERR(rmp_parse_duration_ms, "99999999999999999999w", -EINVAL);

	/* another unit for a bare number; the units keep their meaning */
	CHECK_EQ(rmp_parse_duration("5000", 1, &v), 0);
	CHECK_EQ(v, 5000);
	CHECK_EQ(rmp_parse_duration("0x10", 1, &v), 0);
	CHECK_EQ(v, 16);
	CHECK_EQ(rmp_parse_duration("5s", 1, &v), 0);
	CHECK_EQ(v, 5000);
	CHECK_EQ(rmp_parse_duration("2", RMP_MS_PER_M, &v), 0);
	CHECK_EQ(v, 120000);
	CHECK_EQ(rmp_parse_duration("2ms", RMP_MS_PER_M, &v), 0);
	CHECK_EQ(v, 2);
	v = UNTOUCHED;
	CHECK_EQ(rmp_parse_duration("5", 0, &v), -EINVAL);
	CHECK_EQ(rmp_parse_duration("18446744073709551615", 2, &v), -ERANGE);
	CHECK(v == UNTOUCHED);
}

static void test_bool(void)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	static const char *const bad[] = { "", "YES", "Yes", "y", "n", "2",
					   "01", "0x1", " yes", "yes ",
					   "enable", "nope" };
	bool b;
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		b = false;
		CHECK_EQ(rmp_parse_bool(yes[i], &b), 0);
		CHECK(b);
		CHECK_EQ(rmp_parse_bool(no[i], &b), 0);
		CHECK(!b);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = true;
		CHECK_EQ(rmp_parse_bool(bad[i], &b), -EINVAL);
		CHECK(b);
	}
	CHECK_EQ(rmp_parse_bool(NULL, &b), -EINVAL);
}

static void test_port(void)
{
	uint16_t p = 7;

	CHECK_EQ(rmp_parse_port("1", &p), 0);
	CHECK_EQ(p, 1);
	CHECK_EQ(rmp_parse_port("65535", &p), 0);
	CHECK_EQ(p, 65535);
	CHECK_EQ(rmp_parse_port("0x1d2f", &p), 0);
	CHECK_EQ(p, 7471);
	CHECK_EQ(rmp_parse_port("07471", &p), 0);
	CHECK_EQ(p, 7471);

	p = 7;
	CHECK_EQ(rmp_parse_port("0", &p), -ERANGE);
	CHECK_EQ(rmp_parse_port("00000", &p), -ERANGE);
	CHECK_EQ(rmp_parse_port("65536", &p), -ERANGE);
	CHECK_EQ(rmp_parse_port("0x10000", &p), -ERANGE);
	CHECK_EQ(rmp_parse_port("18446744073709551616", &p), -ERANGE);
	CHECK_EQ(rmp_parse_port("", &p), -EINVAL);
	CHECK_EQ(rmp_parse_port("-1", &p), -EINVAL);
	CHECK_EQ(rmp_parse_port("80 ", &p), -EINVAL);
	CHECK_EQ(rmp_parse_port("http", &p), -EINVAL);
	CHECK_EQ(p, 7);
}

static void test_addr(void)
{
	int family = 0;

	CHECK_EQ(rmp_parse_addr("127.0.0.1", &family), 0);
	CHECK_EQ(family, AF_INET);
	CHECK_EQ(rmp_parse_addr("::1", &family), 0);
	CHECK_EQ(family, AF_INET6);
	CHECK_EQ(rmp_parse_addr("fe80::1%eth0", &family), 0);
	CHECK_EQ(family, AF_INET6);
	CHECK_EQ(rmp_parse_addr("::ffff:10.1.2.3", NULL), 0);
	CHECK_EQ(rmp_parse_addr("0.0.0.0", NULL), 0);

	family = 0;
	CHECK_EQ(rmp_parse_addr("localhost", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr("1.2.3.4.5", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr("1.2.3.4%eth0", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr("fe80::1%", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr("fe80::1%a/b", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr("fe80::1%0123456789abcdef", &family),
		 -EINVAL); /* an interface name has at most 15 bytes */
	CHECK_EQ(rmp_parse_addr("[::1]", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr("", &family), -EINVAL);
	CHECK_EQ(rmp_parse_addr(NULL, &family), -EINVAL);
	CHECK_EQ(family, 0);
}

static void test_split_hostport(void)
{
	char host[16] = "x";
	const char *port = "unset";

	CHECK_EQ(rmp_split_hostport("h:80", host, sizeof(host), &port), 0);
	CHECK_STR(host, "h");
	CHECK_STR(port, "80");
	CHECK_EQ(rmp_split_hostport("h", host, sizeof(host), &port), 0);
	CHECK_STR(host, "h");
	CHECK(port == NULL);
	CHECK_EQ(rmp_split_hostport("h:", host, sizeof(host), &port), 0);
	CHECK_STR(port, "");
	CHECK_EQ(rmp_split_hostport("[::1]:x", host, sizeof(host), &port), 0);
	CHECK_STR(host, "::1");
	CHECK_STR(port, "x");
	CHECK_EQ(rmp_split_hostport("[::1]", host, sizeof(host), &port), 0);
	CHECK_STR(host, "::1");
	CHECK(port == NULL);
	CHECK_EQ(rmp_split_hostport("fe80::1:80", host, sizeof(host), &port),
		 0); /* bare IPv6: the last group is no port */
	CHECK_STR(host, "fe80::1:80");
	CHECK(port == NULL);
	CHECK_EQ(rmp_split_hostport("0123456789abcde", host, sizeof(host),
				    &port), 0);

	strcpy(host, "x");
	port = "unset";
	CHECK_EQ(rmp_split_hostport("0123456789abcdef", host, sizeof(host),
				    &port), -ENOSPC);
	CHECK_EQ(rmp_split_hostport(":80", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_split_hostport("", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_hostport("[]:80", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_split_hostport("[::1", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_split_hostport("[::1]80", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_split_hostport("[::1]]:80", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_split_hostport(NULL, host, sizeof(host), &port),
		 -EINVAL);
	CHECK_STR(host, "x");
	CHECK_STR(port, "unset");
}

static void test_hostport(void)
{
	char host[64] = "x", small[4] = "x";
	uint16_t port = 1;

	CHECK_EQ(rmp_parse_hostport("127.0.0.1:9471", host, sizeof(host),
				    &port), 0);
	CHECK_STR(host, "127.0.0.1");
	CHECK_EQ(port, 9471);
	CHECK_EQ(rmp_parse_hostport("[::1]:80", host, sizeof(host), &port),
		 0);
	CHECK_STR(host, "::1");
	CHECK_EQ(port, 80);
	CHECK_EQ(rmp_parse_hostport("[fe80::1%eth0]:65535", host,
				    sizeof(host), &port), 0);
	CHECK_STR(host, "fe80::1%eth0");
	CHECK_EQ(port, 65535);
	CHECK_EQ(rmp_parse_hostport("10.0.0.1:0x50", host, sizeof(host),
				    &port), 0);
	CHECK_EQ(port, 80);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:1", NULL, 0, NULL), 0);

	CHECK_EQ(rmp_parse_hostport("::1:80", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_parse_hostport("[1.2.3.4]:80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("localhost:80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("[localhost]:80", NULL, 0, NULL),
		 -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("[::1]", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:0", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:65536", NULL, 0, NULL),
		 -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:80x", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4: 80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:-80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport(":80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport(NULL, NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("[::1]80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("[::1:80", NULL, 0, NULL), -EINVAL);
	CHECK_EQ(rmp_parse_hostport("1.2.3.4:80", small, sizeof(small),
				    &port), -ENOSPC);
	CHECK_STR(small, "x");
	CHECK_EQ(port, 80);
}

static void test_split_server(void)
{
	char host[64] = "x";
	uint16_t port = 1;

	CHECK_EQ(rmp_split_server("192.0.2.1", host, sizeof(host), &port), 0);
	CHECK_STR(host, "192.0.2.1");
	CHECK_EQ(port, 0);
	CHECK_EQ(rmp_split_server("node7:7471", host, sizeof(host), &port), 0);
	CHECK_STR(host, "node7");
	CHECK_EQ(port, 7471);
	CHECK_EQ(rmp_split_server("[fe80::1]:0x1d2f", host, sizeof(host),
				  &port), 0);
	CHECK_STR(host, "fe80::1");
	CHECK_EQ(port, 0x1d2f);
	CHECK_EQ(rmp_split_server("[fe80::1]", host, sizeof(host), &port), 0);
	CHECK_STR(host, "fe80::1");
	CHECK_EQ(port, 0);
	CHECK_EQ(rmp_split_server("fe80::1", host, sizeof(host), &port), 0);
	CHECK_STR(host, "fe80::1");
	CHECK_EQ(port, 0);
	CHECK_EQ(rmp_split_server("abc", host, 4, &port), 0);
	CHECK_STR(host, "abc");

	strcpy(host, "x");
	port = 1;
	CHECK_EQ(rmp_split_server("h:0", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server("h:65536", host, sizeof(host), &port),
		 -EINVAL);
	CHECK_EQ(rmp_split_server("h:12x", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server("h:", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server(":7471", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server("[::1", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server("", host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server(NULL, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(rmp_split_server("abcd", host, 4, &port), -EINVAL);
	CHECK_EQ(rmp_split_server("h:80", host, 0, &port), -EINVAL);
	CHECK_STR(host, "x");
	CHECK_EQ(port, 1);
}

static void test_format(void)
{
	static const char *const sizes[] = { "0", "100", "1536K", "3M",
					     "1G", "1025M", "5T", "4097",
					     "16777215T", "1023",
					     "18446744073709551615" };
	static const char *const durs[] = { "0ms", "1500ms", "90s", "1m",
					    "25h", "1d", "7d", "61s", "999ms",
					    "18446744073709551615ms" };
	static const uint64_t vals[] = { 0, 1, 63, 64, 1023, 1024, 1025,
					 999, 1000, 60000, 3600000, 86400000,
					 UINT64_C(1) << 63, UINT64_MAX,
					 UINT64_MAX - 1023, TIB * 16777215 };
	char buf[RMP_FORMAT_LEN];
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK_EQ(rmp_parse_size(sizes[i], &v), 0);
		CHECK_STR(rmp_format_size(v, buf, sizeof(buf)), sizes[i]);
	}
	for (i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		CHECK_EQ(rmp_parse_duration_ms(durs[i], &v), 0);
		CHECK_STR(rmp_format_duration_ms(v, buf, sizeof(buf)),
			  durs[i]);
	}
	/* value -> text -> the same value, whatever the bare unit */
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		v = ~vals[i];
		CHECK_EQ(rmp_parse_size(rmp_format_size(vals[i], buf,
							sizeof(buf)), &v), 0);
		CHECK(v == vals[i]);
		v = ~vals[i];
		CHECK_EQ(rmp_parse_duration_ms(rmp_format_duration_ms(vals[i],
					       buf, sizeof(buf)), &v), 0);
		CHECK(v == vals[i]);
		v = ~vals[i];
		CHECK_EQ(rmp_parse_duration(buf, 1, &v), 0);
		CHECK(v == vals[i]);
	}
	CHECK_STR(rmp_format_size(UINT64_MAX, buf, sizeof(buf)),
		  "18446744073709551615");
	CHECK_STR(rmp_format_size(2 * MIB, buf, sizeof(buf)), "2M");
	CHECK_STR(rmp_format_size(GIB + KIB, buf, sizeof(buf)), "1048577K");
	CHECK_STR(rmp_format_duration_ms(60000, buf, sizeof(buf)), "1m");
	CHECK_STR(rmp_format_duration_ms(0, buf, sizeof(buf)), "0ms");

	/* a short buffer truncates, never overruns */
	memset(buf, '#', sizeof(buf));
	rmp_format_size(5 * TIB, buf, 2);
	CHECK_STR(buf, "5");
	CHECK_EQ(buf[2], '#');
	memset(buf, '#', sizeof(buf));
	rmp_format_duration_ms(1500, buf, 3);
	CHECK_STR(buf, "15");
	CHECK_EQ(buf[3], '#');
	rmp_format_size(1, buf, 0);
	CHECK_EQ(buf[0], '1');
}

/* list -- the entries rmp_list_item finds in s, as "[a][b][]". */
static const char *list(const char *s)
{
	static char out[256];
	const char *b, *e;
	size_t o = 0;

	out[0] = '\0';
	while (rmp_list_item(&s, &b, &e))
		o += (size_t)snprintf(out + o, sizeof(out) - o, "[%.*s]",
				      (int)(e - b), b);
	return out;
}

/* Comma-separated lists: entries trimmed, empty ones kept (callers
 * refuse them), a trailing comma makes one more. */
static void test_list(void)
{
	CHECK_STR(list("a"), "[a]");
	CHECK_STR(list(" a ,b\t, c d "), "[a][b][c d]");
	CHECK_STR(list("a,,b"), "[a][][b]");
	CHECK_STR(list("a,"), "[a][]");
	CHECK_STR(list("a, "), "[a][]");
	CHECK_STR(list(","), "[][]");
	CHECK_STR(list(""), "[]");
}

int main(void)
{
	test_u64();
	test_dec();
	test_i64();
	test_hex_fixed();
	test_size();
	test_duration();
	test_bool();
	test_port();
	test_addr();
	test_split_hostport();
	test_hostport();
	test_split_server();
	test_format();
	test_list();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* test_token.c -- unit tests for lease token formatting and parsing. */
#include "check.h"
#include "token.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define ID 0x0123456789abcdefull
#define SECRET 0xfedcba9876543210ull
#define IDS "0123456789abcdef-fedcba9876543210"

static int token_eq(const struct rmp_token *a, const struct rmp_token *b)
{
	return !strcmp(a->host, b->host) && a->port == b->port &&
	       a->id == b->id && a->secret == b->secret;
}

static void token_set(struct rmp_token *t, const char *host, uint16_t port,
		      uint64_t id, uint64_t secret)
{
	memset(t, 0, sizeof(*t));
	strcpy(t->host, host);
	t->port = port;
	t->id = id;
	t->secret = secret;
}

/* s must parse to exactly (host, port, ID, SECRET). */
static void good(const char *s, const char *host, unsigned port)
{
	struct rmp_token t;

	memset(&t, 0xee, sizeof(t));
	CHECK_EQ(rmp_token_parse(s, &t), 0);
	CHECK_STR(t.host, host);
	CHECK_EQ(t.port, port);
	CHECK_EQ(t.id, ID);
	CHECK_EQ(t.secret, SECRET);
}

/* s must be rejected, and *t left alone. */
static void bad(const char *s)
{
	struct rmp_token t, before;
	int rc;

	memset(&t, 0x5a, sizeof(t));
	before = t;
	rc = rmp_token_parse(s, &t);
	CHECK_EQ(rc, -EINVAL);
	if (rc != -EINVAL)
		printf("#   input \"%s\"\n", s ? s : "(null)");
	CHECK(!memcmp(&t, &before, sizeof(t)));
}

static void test_parse_good(void)
{
	struct rmp_token t;

	good("rmp://192.168.1.10:7471/" IDS, "192.168.1.10", 7471);
	good("rmp://pool-a.example.com:1/" IDS, "pool-a.example.com", 1);
	good("rmp://node_7:65535/" IDS, "node_7", 65535);
	good("rmp://[fe80::1]:7471/" IDS, "fe80::1", 7471);
	good("rmp://[::1]:80/" IDS, "::1", 80);
	good("rmp://[fe80::1%eth0]:7471/" IDS, "fe80::1%eth0", 7471);
	good("rmp://[2001:db8::10.1.2.3]:7471/" IDS, "2001:db8::10.1.2.3",
	     7471);
	good("rmp://h:7471/0123456789ABCDEF-FEDCBA9876543210", "h", 7471);
	good("rmp://h:07471/" IDS, "h", 7471); /* PORT is DEC: zeros too */
	good("rmp://h:7471/0123456789AbCdEf-fEdCbA9876543210", "h", 7471);

	/* Trailing whitespace from a shell pipe or a file. */
	good("rmp://h:7471/" IDS "\n", "h", 7471);
	good("rmp://h:7471/" IDS "\r\n", "h", 7471);
	good("rmp://h:7471/" IDS " \t \n\v\f", "h", 7471);

	/* Extreme id and secret values. */
	CHECK_EQ(rmp_token_parse("rmp://h:1/0000000000000000-ffffffffffffffff",
				 &t), 0);
	CHECK_EQ(t.id, 0);
	CHECK(t.secret == UINT64_MAX);
}

static void test_parse_bad(void)
{
	bad(NULL);
	bad("");
	bad("rmp://");
	bad("rmp:/h:7471/" IDS);
	bad("rmp:h:7471/" IDS);
	bad("http://h:7471/" IDS);
	bad("RMP://h:7471/" IDS);
	bad(" rmp://h:7471/" IDS);
	bad("h:7471/" IDS);

	/* Missing parts. */
	bad("rmp://:7471/" IDS);
	bad("rmp://h/" IDS);
	bad("rmp://h:/" IDS);
	bad("rmp://h:7471" IDS);
	bad("rmp://h:7471/");
	bad("rmp://h:7471");
	bad("rmp://h:7471/0123456789abcdef");
	bad("rmp://h:7471/0123456789abcdef-");
	bad("rmp://h:7471/0123456789abcdeffedcba9876543210");
	bad("rmp://h:7471/-fedcba9876543210");
	bad("rmp://h:7471//" IDS);

	/* Exactly 16 hex digits each. */
	bad("rmp://h:7471/123456789abcdef-fedcba9876543210");
	bad("rmp://h:7471/00123456789abcdef-fedcba9876543210");
	bad("rmp://h:7471/0123456789abcdef-edcba9876543210");
	bad("rmp://h:7471/0123456789abcdef-fedcba98765432100");
	bad("rmp://h:7471/0123456789abcdeg-fedcba9876543210");
	bad("rmp://h:7471/0123456789abcdef-fedcba987654321G");
	bad("rmp://h:7471/0x23456789abcdef-fedcba9876543210");
	bad("rmp://h:7471/ 123456789abcdef-fedcba9876543210");
	bad("rmp://h:7471/0123456789abcdef_fedcba9876543210");

	/* Port range and spelling. */
	bad("rmp://h:0/" IDS);
	bad("rmp://h:00000/" IDS);
	bad("rmp://h:65536/" IDS);
	bad("rmp://h:99999/" IDS);
	bad("rmp://h:99999999999/" IDS);
	bad("rmp://h:18446744073709551617/" IDS);
	bad("rmp://h:+80/" IDS);
	bad("rmp://h:-1/" IDS);
	bad("rmp://h: 80/" IDS);
	bad("rmp://h:80 /" IDS);
	bad("rmp://h:0x50/" IDS);
	bad("rmp://h:8a/" IDS);

	/* Nothing but whitespace after the secret. */
	bad("rmp://h:7471/" IDS "x");
	bad("rmp://h:7471/" IDS " x");
	bad("rmp://h:7471/" IDS "\n\nrmp://h:1/" IDS);
	bad("rmp://h:7471/" IDS "/");
	bad("rmp://h:7471/" IDS "\x01");

	/* Hosts. */
	bad("rmp://fe80::1:7471/" IDS);
	bad("rmp://[fe80::1:7471/" IDS);
	bad("rmp://[fe80::1]7471/" IDS);
	bad("rmp://[]:7471/" IDS);
	bad("rmp://[host]:7471/" IDS);
	bad("rmp://fe80::1]:7471/" IDS);
	bad("rmp://[[::1]]:7471/" IDS);
	bad("rmp://user@h:7471/" IDS);
	bad("rmp://h h:7471/" IDS);
	bad("rmp://h/x:7471/" IDS);
	bad("rmp://h\xc3\xa9:7471/" IDS);
}

static void test_host_len(void)
{
	char s[RMP_TOKEN_MAX + 16], host[RMP_TOKEN_HOST_MAX + 2];
	struct rmp_token t;

	memset(host, 'a', RMP_TOKEN_HOST_MAX);
	host[RMP_TOKEN_HOST_MAX] = '\0';
	snprintf(s, sizeof(s), "rmp://%s:7471/" IDS, host);
	good(s, host, 7471);

	/* 255 bytes of IPv6 text plus brackets is the longest token. */
	memcpy(host, "::", 2);
	token_set(&t, host, 65535, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, s, RMP_TOKEN_MAX), RMP_TOKEN_MAX - 1);
	good(s, host, 65535);
	CHECK_EQ(rmp_token_format(&t, s, RMP_TOKEN_MAX - 1), -ENOSPC);

	memset(host, 'a', RMP_TOKEN_HOST_MAX + 1);
	host[RMP_TOKEN_HOST_MAX + 1] = '\0';
	snprintf(s, sizeof(s), "rmp://%s:7471/" IDS, host);
	bad(s);
	snprintf(s, sizeof(s), "rmp://[::%s]:7471/" IDS,
		 host + 2);
	bad(s);
}

static void test_format(void)
{
	char buf[RMP_TOKEN_MAX];
	struct rmp_token t, back;
	int n;

	token_set(&t, "192.168.1.10", 7471, ID, SECRET);
	n = rmp_token_format(&t, buf, sizeof(buf));
	CHECK_STR(buf, "rmp://192.168.1.10:7471/" IDS);
	CHECK_EQ(n, strlen(buf));
	CHECK_EQ(rmp_token_parse(buf, &back), 0);
	CHECK(token_eq(&t, &back));

	/* Exact fit, one short, none. */
	CHECK_EQ(rmp_token_format(&t, buf, (size_t)n + 1), n);
	memset(buf, 'x', sizeof(buf));
	CHECK_EQ(rmp_token_format(&t, buf, (size_t)n), -ENOSPC);
	CHECK_EQ(buf[0], '\0');
	CHECK_EQ(rmp_token_format(&t, buf, 0), -ENOSPC);
	CHECK_EQ(buf[0], '\0');

	token_set(&t, "fe80::1%eth0", 1, 0, 0xa);
	n = rmp_token_format(&t, buf, sizeof(buf));
	CHECK_STR(buf, "rmp://[fe80::1%eth0]:1/"
		       "0000000000000000-000000000000000a");
	CHECK_EQ(n, strlen(buf));
	CHECK_EQ(rmp_token_parse(buf, &back), 0);
	CHECK(token_eq(&t, &back));

	token_set(&t, "Pool_A.example-1.com", 65535, UINT64_MAX, UINT64_MAX);
	rmp_token_format(&t, buf, sizeof(buf));
	CHECK_STR(buf, "rmp://Pool_A.example-1.com:65535/"
		       "ffffffffffffffff-ffffffffffffffff");
	CHECK_EQ(rmp_token_parse(buf, &back), 0);
	CHECK(token_eq(&t, &back));

	/* Upper-case input comes back lower-case. */
	CHECK_EQ(rmp_token_parse("rmp://h:9/ABCDEF0123456789-0123456789ABCDEF",
				 &t), 0);
	rmp_token_format(&t, buf, sizeof(buf));
	CHECK_STR(buf, "rmp://h:9/abcdef0123456789-0123456789abcdef");

	/* Invalid tokens are not formatted. */
	token_set(&t, "", 7471, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
	token_set(&t, "h", 0, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
	token_set(&t, "a b", 7471, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
	token_set(&t, "a/b", 7471, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
	token_set(&t, "[::1]", 7471, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
	token_set(&t, "h\n", 7471, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
	/* Invalid beats too small. */
	token_set(&t, "", 7471, ID, SECRET);
	CHECK_EQ(rmp_token_format(&t, buf, 1), -EINVAL);
	/* A host without its NUL. */
	memset(t.host, 'a', sizeof(t.host));
	t.port = 7471;
	CHECK_EQ(rmp_token_format(&t, buf, sizeof(buf)), -EINVAL);
}

int main(void)
{
	test_parse_good();
	test_parse_bad();
	test_host_len();
	test_format();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* test_config.c -- unit tests of the config parser, checks and dump. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "../../daemon/config.h"
#include "check.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static char *dump(const struct rmp_config *c, bool show_secrets);

static char err[512];

/* load -- parse text named "t.conf" into c; returns the load result. */
static int load(struct rmp_config *c, const char *text)
{
	err[0] = '\0';
	return rmp_config_load_string(c, text, "t.conf", err, sizeof(err));
}

/* expect_err -- text must fail with -EINVAL and exactly message msg. */
#define EXPECT_ERR(text, msg)                                         \
	do {                                                          \
		struct rmp_config c_;                                 \
		CHECK_EQ(load(&c_, text), -EINVAL);                   \
		CHECK_STR(err, msg);                                  \
	} while (0)

/* EXPECT_BAD -- text must fail with -EINVAL, message starting with pre. */
#define EXPECT_BAD(text, pre)                                         \
	do {                                                          \
		struct rmp_config c_;                                 \
		CHECK_EQ(load(&c_, text), -EINVAL);                   \
		if (strncmp(err, pre, strlen(pre)))                   \
			printf("# message: %s\n", err);               \
		CHECK(!strncmp(err, pre, strlen(pre)));               \
	} while (0)

static void test_defaults(void)
{
	struct rmp_config c, d;

	rmp_config_defaults(&c);
	CHECK_STR(c.server.listen, "0.0.0.0");
	CHECK_EQ(c.server.port, 7471);
	CHECK_STR(c.server.device, "");
	CHECK_EQ(c.server.max_clients, 64);
	CHECK_EQ(c.server.credits, 16);
	CHECK_STR(c.server.admin_socket, "/run/rmpool/admin.sock");
	CHECK_STR(c.server.admin_group, "");
	CHECK_STR(c.server.metrics_listen, "127.0.0.1:9471");
	CHECK_EQ(c.server.log_level, LOG_INFO);
	CHECK_EQ(c.pool.size, GIB);
	CHECK_EQ(c.pool.hugepage_size, 2 * MIB);
	CHECK_EQ(c.pool.hugepages, RMP_HUGEPAGES_REQUIRED);
	CHECK_EQ(c.pool.numa_node, -1);
	CHECK(c.pool.lock);
	CHECK_EQ(c.lease.lease_keys, RMP_LEASE_KEYS_AUTO);
	CHECK_EQ(c.lease.ttl_default_ms, 60000);
	CHECK_EQ(c.lease.ttl_min_ms, 1000);
	CHECK_EQ(c.lease.ttl_max_ms, 86400000);
	CHECK_EQ(c.lease.expiry_tick_ms, 100);
	CHECK_EQ(c.lease.alignment, 64);
	CHECK_EQ(c.lease.max_lease, 0);
	CHECK_EQ(c.lease.keys_per_lease, 16);
	CHECK_EQ(c.server.connections_per_address, 16);
	CHECK_EQ(c.server.auth_timeout_ms, 2000);
	CHECK_EQ(c.server.auth_failures_per_minute, 5);
	CHECK(!c.anonymous.enabled);
	CHECK_EQ(c.anonymous.limits.bytes, 0);
	CHECK_EQ(c.anonymous.limits.leases, 0);
	CHECK_EQ(c.anonymous.limits.connections, 0);
	CHECK_EQ(c.anonymous.limits.nnetworks, 0);
	CHECK_EQ(c.ntenants, 0);
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), 0);

	/* an empty or comment-only text is the defaults */
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(load(&d, ""), 0);
	CHECK(rmp_config_diff(&c, &d) == NULL);
	CHECK_EQ(load(&d, "# nothing\n; here\n\n   \n[pool]\n"), 0);
	CHECK(rmp_config_diff(&c, &d) == NULL);
}

/*
 * The values follow common/parse.h (test_parse.c holds its cases): here
 * only that the config takes its spellings and reports its errors.
 */
static void test_value_grammar(void)
{
	struct rmp_config c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	CHECK_EQ(load(&c, "[pool]\nsize = 2GiB\nhugepage_size = 2048KB\n"
			  "numa_node = 0x1\nlock = off\n"
			  "[lease]\nttl_default = 0x3c\nttl_max = 1440m\n"
			  "alignment = 0x1000\n"
			  "[server]\nport = 0x1d2f\n"
			  "metrics_listen = 127.0.0.1:0x2503\n"
			  "[anonymous]\nenabled = on\nbytes = 1tib\n"), -EINVAL);
	/* "1tib": the unit letter is either case, "iB" is not */
	CHECK_STR(err, "t.conf:15: anonymous.bytes: \"1tib\" is not a "
		  "size (use e.g. 512M, 4G)");
	CHECK_EQ(load(&c, "[pool]\nsize = 2GiB\nhugepage_size = 2048KB\n"
			  "numa_node = 0x1\nlock = off\n"
			  "[lease]\nttl_default = 0x3c\nttl_max = 1440m\n"
			  "alignment = 0x1000\n"
			  "[server]\nport = 0x1d2f\n"
			  "metrics_listen = 127.0.0.1:0x2503\n"
			  "[anonymous]\nenabled = on\nbytes = 1TiB\n"), 0);
	CHECK_EQ(c.pool.size, 2 * GIB);
	CHECK_EQ(c.pool.hugepage_size, 2 * MIB);
	CHECK_EQ(c.pool.numa_node, 1);
	CHECK(!c.pool.lock);
	CHECK_EQ(c.lease.ttl_default_ms, 60000);
	CHECK_EQ(c.lease.ttl_max_ms, 86400000);
	CHECK_EQ(c.lease.alignment, 4096);
	CHECK_EQ(c.server.port, 7471);
	CHECK_STR(c.server.metrics_listen, "127.0.0.1:0x2503");
	CHECK(c.anonymous.enabled);
	CHECK(c.anonymous.limits.bytes == GIB * 1024);

	/* the dump prints one spelling of each */
	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ(rmp_config_dump(&c, f, false), 0);
	fclose(f);
	CHECK(strstr(buf, "\nsize = 2G\nhugepage_size = 2M\n") != NULL);
	CHECK(strstr(buf, "\nnuma_node = 1\nlock = no\n") != NULL);
	CHECK(strstr(buf, "\nttl_default = 1m\n") != NULL);
	CHECK(strstr(buf, "\nttl_max = 1d\n") != NULL);
	CHECK(strstr(buf, "\nport = 7471\n") != NULL);
	CHECK(strstr(buf, "\nenabled = yes\nbytes = 1T\n") != NULL);
	free(buf);

	/* no unit after hex, no sign, no blank inside */
	EXPECT_ERR("[pool]\nsize = 0x1G\n",
		   "t.conf:2: pool.size: \"0x1G\" is not a size "
		   "(use e.g. 512M, 4G)");
	CHECK_EQ(load(&c, "[lease]\nexpiry_tick = 0x1d\n"), 0);
	CHECK_EQ(c.lease.expiry_tick_ms, 29000); /* 29 s, not a day */
	EXPECT_ERR("[lease]\nttl_max = 0x\n",
		   "t.conf:2: lease.ttl_max: \"0x\" is not a duration "
		   "(use e.g. 500ms, 30s, 5m, 1h, 1d)");
	EXPECT_ERR("[server]\ncredits = +5\n",
		   "t.conf:2: server.credits: \"+5\" is not a number");
	EXPECT_ERR("[server]\ncredits = 0x\n",
		   "t.conf:2: server.credits: \"0x\" is not a number");
	EXPECT_ERR("[server]\ncredits = 0x10000000000000000\n",
		   "t.conf:2: server.credits: \"0x10000000000000000\" is out "
		   "of range (1..1024)");
	EXPECT_ERR("[anonymous]\nenabled = Yes\n",
		   "t.conf:2: anonymous.enabled: \"Yes\" is not a boolean "
		   "(use yes or no)");
	EXPECT_ERR("[server]\nmetrics_listen = 127.0.0.1:0x\n",
		   "t.conf:2: server.metrics_listen: \"127.0.0.1:0x\" is not "
		   "ADDR:PORT or [V6ADDR]:PORT (or empty)");
	/* a CIDR prefix stays plain decimal */
	EXPECT_BAD("[anonymous]\nnetworks = 10.0.0.0/0x8\n",
		   "t.conf:2: anonymous.networks: ");
}

static void test_all_keys(void)
{
	static const char text[] =
		"\xef\xbb\xbf# every key, not the defaults\r\n"
		"[server]\n"
		"listen = 192.0.2.1\n"
		"port = 1\n"
		"device = rxe0\n"
		"max_clients = 3\n"
		"credits = 5\n"
		"admin_socket = /tmp/a b/admin.sock\n"
		"admin_group = rmpool-admin\n"
		"metrics_listen = [::1]:9100\n"
		"log_level = debug\n"
		"connections_per_address = 0\n"
		"auth_timeout = 100ms\n"
		"auth_failures_per_minute = 0\n"
		"  [ pool ]   ; leading blanks and an inline comment\r\n"
		"\tsize = 3G ; three\n"
		"\thugepage_size = 1G\n"
		"\thugepages = preferred\n"
		"\tnuma_node = 1\n"
		"\tlock = no\n"
		"[lease]\n"
		"lease_keys = region\n"
		"ttl_default = 5m\n"
		"ttl_min = 500ms\n"
		"ttl_max = 2h\n"
		"expiry_tick = 10ms\n"
		"alignment = 4K\n"
		"max_lease = 1G\n"
		"keys_per_lease = 1\n"
		"[anonymous]\n"
		"enabled = yes\n"
		"bytes = 2G\n"
		"leases = 100\n"
		"connections = 7\n"
		"networks = 192.0.2.0/24\n";
	struct rmp_config c, d;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	strcpy(err, "stale");
	CHECK_EQ(load(&c, text), 0);
	CHECK_STR(err, "");
	CHECK_STR(c.server.listen, "192.0.2.1");
	CHECK_EQ(c.server.port, 1);
	CHECK_STR(c.server.device, "rxe0");
	CHECK_EQ(c.server.max_clients, 3);
	CHECK_EQ(c.server.credits, 5);
	CHECK_STR(c.server.admin_socket, "/tmp/a b/admin.sock");
	CHECK_STR(c.server.admin_group, "rmpool-admin");
	CHECK_STR(c.server.metrics_listen, "[::1]:9100");
	CHECK_EQ(c.server.log_level, LOG_DEBUG);
	CHECK_EQ(c.pool.size, 3 * GIB);
	CHECK_EQ(c.pool.hugepage_size, GIB);
	CHECK_EQ(c.pool.hugepages, RMP_HUGEPAGES_PREFERRED);
	CHECK_EQ(c.pool.numa_node, 1);
	CHECK(!c.pool.lock);
	CHECK_EQ(c.lease.lease_keys, RMP_LEASE_KEYS_REGION);
	CHECK_EQ(c.lease.ttl_default_ms, 300000);
	CHECK_EQ(c.lease.ttl_min_ms, 500);
	CHECK_EQ(c.lease.ttl_max_ms, 7200000);
	CHECK_EQ(c.lease.expiry_tick_ms, 10);
	CHECK_EQ(c.lease.alignment, 4096);
	CHECK_EQ(c.lease.max_lease, GIB);
	CHECK_EQ(c.lease.keys_per_lease, 1);
	CHECK_EQ(c.server.connections_per_address, 0);
	CHECK_EQ(c.server.auth_timeout_ms, 100);
	CHECK_EQ(c.server.auth_failures_per_minute, 0);
	CHECK(c.anonymous.enabled);
	CHECK_EQ(c.anonymous.limits.bytes, 2 * GIB);
	CHECK_EQ(c.anonymous.limits.leases, 100);
	CHECK_EQ(c.anonymous.limits.connections, 7);
	CHECK_EQ(c.anonymous.limits.nnetworks, 1);

	/* the dump parses back to the same configuration */
	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ(rmp_config_dump(&c, f, false), 0);
	fclose(f);
	CHECK(strstr(buf, "\n[anonymous]\nenabled = yes\nbytes = 2G\n"
			  "leases = 100\nconnections = 7\n"
			  "networks = 192.0.2.0/24\n") != NULL);
	CHECK(strstr(buf, "\n[pool]\nsize = 3G\nhugepage_size = 1G\n") !=
	      NULL);
	CHECK(strstr(buf, "\nttl_default = 5m\nttl_min = 500ms\n") != NULL);
	CHECK(strstr(buf, "\nlock = no\n") != NULL);
	CHECK_EQ(load(&d, buf), 0);
	CHECK(rmp_config_diff(&c, &d) == NULL);
	free(buf);

	/* the other spellings */
	CHECK_EQ(load(&c, "[pool]\nlock = off\nnuma_node = auto\n"
			  "[lease]\nlease_keys = window\n"
			  "[server]\nlog_level = warning\n"
			  "listen = fe80::1%eth0\nmetrics_listen =\n"), 0);
	CHECK(!c.pool.lock);
	CHECK_EQ(c.pool.numa_node, -1);
	CHECK_EQ(c.lease.lease_keys, RMP_LEASE_KEYS_WINDOW);
	CHECK_EQ(c.server.log_level, LOG_WARNING);
	CHECK_STR(c.server.listen, "fe80::1%eth0");
	CHECK_STR(c.server.metrics_listen, "");
	CHECK_EQ(load(&c, "[pool]\nlock = true\n[lease]\nlease_keys = pool\n"
			  "[server]\nlog_level = error\nlisten = ::\n"
			  "listen: x\n"), -EINVAL);
	CHECK_EQ(load(&c, "[pool]\nlock = 1\n[lease]\nlease_keys = pool\n"
			  "[server]\nlog_level = notice\nlisten = ::\n"
			  "port = 65535\n"), 0);
	CHECK(c.pool.lock);
	CHECK_EQ(c.lease.lease_keys, RMP_LEASE_KEYS_POOL);
	CHECK_EQ(c.server.log_level, LOG_NOTICE);
	CHECK_STR(c.server.listen, "::");
	CHECK_EQ(c.server.port, 65535);
	/* ':' separates like '=' (inih), and '=' may appear in a value */
	CHECK_EQ(load(&c, "[server]\nport: 1234\n"), 0);
	CHECK_EQ(c.server.port, 1234);
}

static void test_syntax_errors(void)
{
	char line[400];

	EXPECT_ERR("[pool]\nsize = 1X\n",
		   "t.conf:2: pool.size: \"1X\" is not a size "
		   "(use e.g. 512M, 4G)");
	{
		struct rmp_config c;

		CHECK_EQ(rmp_config_load_string(&c, "[pool]\nsize = 1X\n",
						"/etc/rmpool/rmpoold.conf",
						err, sizeof(err)), -EINVAL);
		CHECK_STR(err, "/etc/rmpool/rmpoold.conf:2: pool.size: "
			       "\"1X\" is not a size (use e.g. 512M, 4G)");
		CHECK_EQ(rmp_config_load_string(&c, "[x]\n", NULL, err,
						sizeof(err)), -EINVAL);
		CHECK_STR(err, "<string>:1: unknown section \"x\" "
			       "(expected server, pool, lease, anonymous, cluster or tenant.NAME)");
	}
	EXPECT_ERR("\n[pools]\nsize = 1G\n",
		   "t.conf:2: unknown section \"pools\" "
		   "(expected server, pool, lease, anonymous, cluster or tenant.NAME)");
	/* an empty unknown section is still an error */
	EXPECT_ERR("[pool]\n[extra]\n",
		   "t.conf:2: unknown section \"extra\" "
		   "(expected server, pool, lease, anonymous, cluster or tenant.NAME)");
	EXPECT_ERR("[Pool]\n", "t.conf:1: unknown section \"Pool\" "
			       "(expected server, pool, lease, anonymous, cluster or tenant.NAME)");
	EXPECT_ERR("[pool\nsize = 1G\n",
		   "t.conf:1: section header lacks ']'");
	EXPECT_ERR("[pool] size = 1G\n",
		   "t.conf:1: unexpected text after ']'");
	EXPECT_ERR("[pool]\nsize = 1G\nsizes = 2G\n",
		   "t.conf:3: unknown key \"sizes\" in section [pool]");
	EXPECT_ERR("[server]\nsize = 1G\n",
		   "t.conf:2: unknown key \"size\" in section [server]");
	EXPECT_ERR("size = 1G\n[pool]\n",
		   "t.conf:1: key \"size\" is outside of any section");
	EXPECT_ERR("[pool]\nsize = 2G\n\n[lease]\n[pool]\nsize = 4G\n",
		   "t.conf:6: pool.size: duplicate key (first set on line 2)");
	/* a duplicate is one even when both say the same */
	EXPECT_ERR("[lease]\nttl_min=1s\nttl_min=1s\n",
		   "t.conf:3: lease.ttl_min: duplicate key "
		   "(first set on line 2)");
	EXPECT_ERR("[pool]\njust words\n",
		   "t.conf:2: expected \"key = value\", \"[section]\" "
		   "or a comment");
	/* the first error by line wins, whoever found it */
	EXPECT_ERR("[pool]\nnonsense\nsize = 1X\n",
		   "t.conf:2: expected \"key = value\", \"[section]\" "
		   "or a comment");
	EXPECT_ERR("[pool]\nsize = 1X\nnonsense\n",
		   "t.conf:2: pool.size: \"1X\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[pool]\nsize = 1X\n[nope]\n",
		   "t.conf:2: pool.size: \"1X\" is not a size "
		   "(use e.g. 512M, 4G)");
	/* no continuation lines: an indented line is a line of its own */
	EXPECT_ERR("[pool]\nsize = 2G\n  size = 4G\n",
		   "t.conf:3: pool.size: duplicate key (first set on line 2)");

	/* a line longer than inih's buffer is refused, not cut */
	memset(line, 'a', sizeof(line));
	memcpy(line, "[server]\nadmin_group = ", 23);
	strcpy(line + 300, "\n");
	EXPECT_BAD(line, "t.conf:2: line is too long (at most ");
	/* a value longer than its buffer is refused, not cut */
	memset(line, 'a', sizeof(line));
	memcpy(line, "[server]\nadmin_socket = /", 25);
	strcpy(line + 25 + 107, "\n");
	EXPECT_ERR(line, "t.conf:2: server.admin_socket: value is too long "
			 "(at most 107 characters)");
	{
		struct rmp_config c;

		strcpy(line + 25 + 106, "\n");
		CHECK_EQ(load(&c, line), 0);
		CHECK_EQ(strlen(c.server.admin_socket), 107);
	}
}

static void test_bad_values(void)
{
	EXPECT_ERR("[server]\nlisten = localhost\n",
		   "t.conf:2: server.listen: \"localhost\" is not a numeric "
		   "IPv4 or IPv6 address");
	EXPECT_BAD("[server]\nlisten =\n", "t.conf:2: server.listen: \"\" ");
	EXPECT_BAD("[server]\nlisten = 1.2.3.4.5\n",
		   "t.conf:2: server.listen: ");
	EXPECT_BAD("[server]\nlisten = fe80::1%\n",
		   "t.conf:2: server.listen: ");
	EXPECT_ERR("[server]\nport = 0\n",
		   "t.conf:2: server.port: \"0\" is out of range (1..65535)");
	EXPECT_ERR("[server]\nport = 65536\n",
		   "t.conf:2: server.port: \"65536\" is out of range "
		   "(1..65535)");
	EXPECT_ERR("[server]\nport = 99999999999999999999999\n",
		   "t.conf:2: server.port: \"99999999999999999999999\" is out "
		   "of range (1..65535)");
	EXPECT_ERR("[server]\nport = -1\n",
		   "t.conf:2: server.port: \"-1\" is not a number");
	EXPECT_ERR("[server]\nport = 80 # http\n",
		   "t.conf:2: server.port: \"80 # http\" is not a number");
	EXPECT_ERR("[server]\nport =\n",
		   "t.conf:2: server.port: \"\" is not a number");
	EXPECT_ERR("[server]\ndevice = ../mlx5_0\n",
		   "t.conf:2: server.device: \"../mlx5_0\" is not an RDMA "
		   "device name");
	EXPECT_BAD("[server]\ndevice = ..\n", "t.conf:2: server.device: ");
	EXPECT_BAD("[server]\ndevice = mlx 5\n", "t.conf:2: server.device: ");
	/* Several devices and addresses, comma-separated. */
	EXPECT_ERR("[server]\ndevice = mlx5_0, ../x\n",
		   "t.conf:2: server.device: \"../x\" is not an RDMA device "
		   "name");
	EXPECT_ERR("[server]\ndevice = mlx5_0,,mlx5_1\n",
		   "t.conf:2: server.device: \"\" is not an RDMA device "
		   "name");
	EXPECT_ERR("[server]\ndevice = rxe0, rxe0\n",
		   "t.conf:2: server.device: rxe0 is listed twice");
	EXPECT_ERR("[server]\ndevice = a,b,c,d,e,f,g,h,i\n",
		   "t.conf:2: server.device: more than 8 devices");
	EXPECT_ERR("[server]\nlisten = 192.0.2.1, 0.0.0.0\n",
		   "t.conf:2: server.listen: a wildcard address (0.0.0.0, ::) "
		   "listens on every address: list it alone");
	EXPECT_ERR("[server]\nlisten = ::0, 2001:db8::1\n",
		   "t.conf:2: server.listen: a wildcard address (0.0.0.0, ::) "
		   "listens on every address: list it alone");
	EXPECT_ERR("[server]\nlisten = 192.0.2.1,192.0.2.1\n",
		   "t.conf:2: server.listen: 192.0.2.1 is listed twice");
	EXPECT_ERR("[server]\nlisten = 192.0.2.1, host\n",
		   "t.conf:2: server.listen: \"host\" is not a numeric IPv4 "
		   "or IPv6 address");
	EXPECT_ERR("[server]\nlisten = 192.0.2.1,\n",
		   "t.conf:2: server.listen: \"\" is not a numeric IPv4 or "
		   "IPv6 address");
	{
		struct rmp_config c;

		CHECK_EQ(load(&c, "[server]\nlisten = 192.0.2.1, 198.51.100.1\n"
				  "device = rxe0,rxe1\n"), 0);
		CHECK_STR(c.server.listen, "192.0.2.1, 198.51.100.1");
		CHECK_STR(c.server.device, "rxe0,rxe1");
	}
	/* found by fuzz_config: "= ;x" would dump as a comment */
	EXPECT_BAD("[server]\ndevice =;x\n", "t.conf:2: server.device: ");
	EXPECT_BAD("[server]\ndevice = a#b\n", "t.conf:2: server.device: ");
	EXPECT_ERR("[server]\nmax_clients = 0\n",
		   "t.conf:2: server.max_clients: \"0\" is out of range "
		   "(1..65536)");
	EXPECT_ERR("[server]\ncredits = 1025\n",
		   "t.conf:2: server.credits: \"1025\" is out of range "
		   "(1..1024)");
	EXPECT_ERR("[server]\nadmin_socket = run/admin.sock\n",
		   "t.conf:2: server.admin_socket: \"run/admin.sock\" is not "
		   "an absolute path (or empty)");
	EXPECT_ERR("[server]\nadmin_socket = \"/run/a\"\n",
		   "t.conf:2: server.admin_socket: \"\\x22/run/a\\x22\" is not "
		   "an absolute path (or empty)");
	{
		/* Empty turns the admin socket off, like metrics_listen. */
		struct rmp_config c;

		CHECK_EQ(load(&c, "[server]\nadmin_socket =\nmetrics_listen =\n"),
			 0);
		CHECK_STR(c.server.admin_socket, "");
		CHECK_STR(c.server.metrics_listen, "");
	}
	EXPECT_ERR("[server]\nadmin_group = wheel:x\n",
		   "t.conf:2: server.admin_group: \"wheel:x\" is not a group "
		   "name");
	EXPECT_BAD("[server]\nadmin_group = -g\n",
		   "t.conf:2: server.admin_group: ");
	EXPECT_ERR("[server]\nmetrics_listen = 9471\n",
		   "t.conf:2: server.metrics_listen: \"9471\" is not "
		   "ADDR:PORT or [V6ADDR]:PORT (or empty)");
	EXPECT_ERR("[server]\nlog_level = verbose\n",
		   "t.conf:2: server.log_level: \"verbose\" is not one of "
		   "error, warning, notice, info, debug");
	EXPECT_BAD("[server]\nlog_level = INFO\n",
		   "t.conf:2: server.log_level: ");
	EXPECT_ERR("[pool]\nsize = 0\n",
		   "t.conf:2: pool.size: \"0\" is out of range (1..65536T)");
	EXPECT_ERR("[pool]\nsize = 65537T\n",
		   "t.conf:2: pool.size: \"65537T\" is out of range "
		   "(1..65536T)");
	EXPECT_ERR("[pool]\nsize = 99999999999T\n",
		   "t.conf:2: pool.size: \"99999999999T\" is out of range "
		   "(1..65536T)");
	EXPECT_ERR("[pool]\nsize = -1G\n",
		   "t.conf:2: pool.size: \"-1G\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[pool]\nhugepage_size = 4K\n",
		   "t.conf:2: pool.hugepage_size: \"4K\" is not a supported "
		   "hugepage size (2M or 1G)");
	EXPECT_ERR("[pool]\nhugepages = maybe\n",
		   "t.conf:2: pool.hugepages: \"maybe\" is not one of "
		   "required, preferred");
	EXPECT_ERR("[pool]\nnuma_node = -1\n",
		   "t.conf:2: pool.numa_node: \"-1\" is not a NUMA node "
		   "(use auto or a number >= 0)");
	EXPECT_ERR("[pool]\nnuma_node = 2147483648\n",
		   "t.conf:2: pool.numa_node: \"2147483648\" is out of range "
		   "(0..2147483647)");
	EXPECT_ERR("[pool]\nlock = maybe\n",
		   "t.conf:2: pool.lock: \"maybe\" is not a boolean "
		   "(use yes or no)");
	EXPECT_ERR("[lease]\nlease_keys = mw\n",
		   "t.conf:2: lease.lease_keys: \"mw\" is not one of "
		   "auto, window, region, pool");
	EXPECT_ERR("[lease]\nttl_max = 1w\n",
		   "t.conf:2: lease.ttl_max: \"1w\" is not a duration "
		   "(use e.g. 500ms, 30s, 5m, 1h, 1d)");
	EXPECT_ERR("[lease]\nttl_min = 0\n",
		   "t.conf:2: lease.ttl_min: \"0\" is out of range "
		   "(1ms..4294967295s)");
	/* ttls travel as 32-bit seconds */
	EXPECT_ERR("[lease]\nttl_max = 49711d\n",
		   "t.conf:2: lease.ttl_max: \"49711d\" is out of range "
		   "(1ms..4294967295s)");
	EXPECT_ERR("[lease]\nexpiry_tick = 2h\n",
		   "t.conf:2: lease.expiry_tick: \"2h\" is out of range "
		   "(1ms..1h)");
	EXPECT_ERR("[lease]\nalignment = 32\n",
		   "t.conf:2: lease.alignment: \"32\" is out of range "
		   "(64..65536T)");
	EXPECT_ERR("[lease]\nalignment = 96\n",
		   "t.conf:2: lease.alignment: \"96\" is not a power of two");
	EXPECT_ERR("[lease]\nmax_lease = 1Q\n",
		   "t.conf:2: lease.max_lease: \"1Q\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[anonymous]\nleases = 4294967296\n",
		   "t.conf:2: anonymous.leases: \"4294967296\" is out "
		   "of range (0..4294967295)");
	EXPECT_ERR("[anonymous]\nbytes = 1 G\n",
		   "t.conf:2: anonymous.bytes: \"1 G\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[anonymous]\nconnections = 65537\n",
		   "t.conf:2: anonymous.connections: \"65537\" is out "
		   "of range (0..65536)");
	EXPECT_ERR("[anonymous]\nenabled = maybe\n",
		   "t.conf:2: anonymous.enabled: \"maybe\" is not a boolean "
		   "(use yes or no)");
	EXPECT_ERR("[server]\nauth_timeout = 99ms\n",
		   "t.conf:2: server.auth_timeout: \"99ms\" is out of range "
		   "(100ms..1h)");
	EXPECT_ERR("[server]\nconnections_per_address = -1\n",
		   "t.conf:2: server.connections_per_address: \"-1\" is not "
		   "a number");
	EXPECT_ERR("[server]\nauth_failures_per_minute = 1000001\n",
		   "t.conf:2: server.auth_failures_per_minute: \"1000001\" is "
		   "out of range (0..1000000)");
	EXPECT_ERR("[lease]\nkeys_per_lease = 0\n",
		   "t.conf:2: lease.keys_per_lease: \"0\" is out of range "
		   "(1..1024)");
	/* control bytes are escaped, long values cut */
	EXPECT_ERR("[pool]\nsize = \x1b[31m\n",
		   "t.conf:2: pool.size: \"\\x1b[31m\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[pool]\nsize = "
		   "x0123456789012345678901234567890123456789012345678901234\n",
		   "t.conf:2: pool.size: "
		   "\"x01234567890123456789012345678901234567890123456...\" "
		   "is not a size (use e.g. 512M, 4G)");
}

static void test_cross_checks(void)
{
	struct rmp_config c;

	EXPECT_ERR("[pool]\nsize = 3M\n",
		   "t.conf: pool.size (3M) is not a multiple of "
		   "pool.hugepage_size (2M)");
	EXPECT_ERR("[pool]\nsize = 3G\nhugepage_size = 1G\n[pool]\n"
		   "size = 1G\n",
		   "t.conf:5: pool.size: duplicate key (first set on line 2)");
	EXPECT_ERR("[pool]\nsize = 3M\nhugepage_size = 1G\n",
		   "t.conf: pool.size (3M) is not a multiple of "
		   "pool.hugepage_size (1G)");
	EXPECT_ERR("[lease]\nttl_min = 2m\n",
		   "t.conf: lease.ttl_default (1m) is less than "
		   "lease.ttl_min (2m)");
	EXPECT_ERR("[lease]\nttl_max = 30s\n",
		   "t.conf: lease.ttl_default (1m) is more than "
		   "lease.ttl_max (30s)");
	EXPECT_ERR("[lease]\nttl_default = 2d\n",
		   "t.conf: lease.ttl_default (2d) is more than "
		   "lease.ttl_max (1d)");
	EXPECT_ERR("[lease]\nmax_lease = 2G\n",
		   "t.conf: lease.max_lease (2G) is larger than pool.size "
		   "(1G)");
	EXPECT_ERR("[lease]\nalignment = 2G\n",
		   "t.conf: lease.alignment (2G) is larger than pool.size "
		   "(1G)");
	CHECK_EQ(load(&c, "[lease]\nttl_min = 1m\nttl_max = 1m\n"
			  "max_lease = 1G\nalignment = 1G\n"), 0);

	/* rmp_config_check on hand-built configurations */
	rmp_config_defaults(&c);
	c.pool.hugepage_size = 0;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "pool.hugepage_size must be 2M or 1G");
	rmp_config_defaults(&c);
	c.pool.size = 0;
	CHECK_EQ(rmp_config_check(&c, "x", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "x: pool.size must not be 0");
	CHECK_EQ(rmp_config_check(&c, "x", NULL, 0), -EINVAL);
}

static void test_unchanged_on_failure(void)
{
	struct rmp_config c, keep;
	char tiny[8];

	rmp_config_defaults(&c);
	c.server.port = 1;
	strcpy(c.server.device, "keep");
	keep = c;
	CHECK_EQ(load(&c, "[server]\nport = 2\ndevice = x\n[pool]\n"
			  "size = 1X\n"), -EINVAL);
	CHECK(rmp_config_diff(&c, &keep) == NULL);
	CHECK_EQ(load(&c, "[lease]\nttl_min = 2m\n"), -EINVAL);
	CHECK(rmp_config_diff(&c, &keep) == NULL);

	/* a short or absent error buffer is fine */
	CHECK_EQ(rmp_config_load_string(&c, "[x]\n", "t.conf", tiny,
					sizeof(tiny)), -EINVAL);
	CHECK_STR(tiny, "t.conf:");
	CHECK_EQ(rmp_config_load_string(&c, "[x]\n", "t.conf", NULL, 0),
		 -EINVAL);
	CHECK_EQ(rmp_config_load_string(&c, "[pool]\nsize=3M\n", "t.conf",
					tiny, 1), -EINVAL);
	CHECK_STR(tiny, "");
	CHECK(rmp_config_diff(&c, &keep) == NULL);
}

static void test_diff(void)
{
	struct rmp_config a, b;

	rmp_config_defaults(&a);
	rmp_config_defaults(&b);
	CHECK(rmp_config_diff(&a, &b) == NULL);
	b.pool.lock = false;
	CHECK_STR(rmp_config_diff(&a, &b), "pool.lock");
	b.server.admin_group[0] = 'g';
	CHECK_STR(rmp_config_diff(&a, &b), "server.admin_group");
	rmp_config_defaults(&b);
	b.anonymous.limits.leases = 9;
	CHECK_STR(rmp_config_diff(&a, &b), "anonymous.leases");
	rmp_config_defaults(&b);
	b.anonymous.enabled = true;
	CHECK_STR(rmp_config_diff(&a, &b), "anonymous.enabled");
	rmp_config_defaults(&b);
	b.lease.keys_per_lease = 2;
	CHECK_STR(rmp_config_diff(&a, &b), "lease.keys_per_lease");
	rmp_config_defaults(&b);
	b.server.auth_timeout_ms = 200;
	CHECK_STR(rmp_config_diff(&a, &b), "server.auth_timeout");
}

/* [cluster]: defaults, every key read, each bad value refused with its
 * message, the dump and the diff, and the lists split for cluster.c. */
static void test_cluster(void)
{
	struct rmp_cluster_endpoint eps[RMP_CLUSTER_ENDPOINTS_MAX];
	struct rmp_cluster_label lb[RMP_CLUSTER_LABELS_MAX];
	struct rmp_config c, d;
	char why[256], *text;
	unsigned n = 99;

	rmp_config_defaults(&c);
	CHECK_STR(c.cluster.etcd, "");
	CHECK_STR(c.cluster.prefix, "/rmpool/");
	CHECK_STR(c.cluster.node, "");
	CHECK_STR(c.cluster.labels, "");
	CHECK_EQ(c.cluster.ttl_ms, 10000);
	CHECK_STR(c.cluster.credentials_file, "");

	/* (credentials need every endpoint https) */
	CHECK_EQ(load(&c, "[cluster]\n"
			  "etcd = https://127.0.0.1:2379, https://[::1]:2380 ,"
			  "https://etcd-1.example:2379\n"
			  "prefix = /a/b-c_d.e/\nnode = n1.rack-2\n"
			  "labels = rack=r1  zone=z_1.a\nttl = 1m\n"
			  "credentials_file = /etc/rmpool/etcd.cred\n"), 0);
	if (err[0])
		printf("# %s\n", err);
	CHECK_STR(c.cluster.prefix, "/a/b-c_d.e/");
	CHECK_STR(c.cluster.node, "n1.rack-2");
	CHECK_EQ(c.cluster.ttl_ms, 60000);
	CHECK_STR(c.cluster.credentials_file, "/etc/rmpool/etcd.cred");
	CHECK_EQ(rmp_cluster_endpoints(c.cluster.etcd, eps, &n, why,
				       sizeof(why)), 0);
	CHECK_EQ(n, 3);
	CHECK_STR(eps[0].host, "127.0.0.1");
	CHECK_EQ(eps[0].port, 2379);
	CHECK_STR(eps[1].host, "::1");
	CHECK_EQ(eps[1].port, 2380);
	CHECK_STR(eps[2].host, "etcd-1.example");
	CHECK(eps[0].tls && eps[1].tls && eps[2].tls);
	CHECK_EQ(rmp_cluster_labels(c.cluster.labels, lb, &n, why,
				    sizeof(why)), 0);
	CHECK_EQ(n, 2);
	CHECK_STR(lb[0].name, "rack");
	CHECK_STR(lb[0].value, "r1");
	CHECK_STR(lb[1].name, "zone");
	CHECK_STR(lb[1].value, "z_1.a");
	CHECK_EQ(rmp_cluster_endpoints("", eps, &n, why, sizeof(why)), 0);
	CHECK_EQ(n, 0);

	/* the dump reads back the same; the diff names each key */
	text = dump(&c, false);
	CHECK(text && strstr(text, "\n[cluster]\netcd = https://127.0.0.1:2379,"
			     " https://[::1]:2380 ,https://etcd-1.example:2379\n"
			     "prefix = /a/b-c_d.e/\nnode = n1.rack-2\n"
			     "labels = rack=r1  zone=z_1.a\nttl = 1m\n"
			     "ca_file =\ncert_file =\nkey_file =\n"
			     "credentials_file = /etc/rmpool/etcd.cred\n"));
	CHECK_EQ(load(&d, text ? text : ""), 0);
	CHECK(rmp_config_diff(&c, &d) == NULL);
	free(text);
	d.cluster.ttl_ms = 2000;
	CHECK_STR(rmp_config_diff(&c, &d), "cluster.ttl");
	strcpy(d.cluster.node, "n2");
	CHECK_STR(rmp_config_diff(&c, &d), "cluster.node");
	strcpy(d.cluster.etcd, "");
	CHECK_STR(rmp_config_diff(&c, &d), "cluster.etcd");

	EXPECT_ERR("[cluster]\netcd = http://127.0.0.1\n",
		   "t.conf:2: cluster.etcd: \"http://127.0.0.1\" is not "
		   "http://HOST:PORT, https://HOST:PORT or etcd://HOST:PORT "
		   "(HOST a name, an IPv4 address or [an IPv6 address])");
	EXPECT_BAD("[cluster]\netcd = https://h\n",
		   "t.conf:2: cluster.etcd: \"https://h\" is not http://");
	EXPECT_BAD("[cluster]\netcd = ftp://h:1\n",
		   "t.conf:2: cluster.etcd: \"ftp://h:1\" is not http://");
	EXPECT_BAD("[cluster]\netcd = 127.0.0.1:2379\n",
		   "t.conf:2: cluster.etcd: \"127.0.0.1:2379\" is not http://");
	EXPECT_BAD("[cluster]\netcd = http://h:2379/v3\n",
		   "t.conf:2: cluster.etcd: \"http://h:2379/v3\" is not http://");
	EXPECT_BAD("[cluster]\netcd = http://h:0\n",
		   "t.conf:2: cluster.etcd: \"http://h:0\" is not http://");
	EXPECT_BAD("[cluster]\netcd = http://::1:2379\n",
		   "t.conf:2: cluster.etcd: \"http://::1:2379\" is not http://");
	EXPECT_BAD("[cluster]\netcd = http://-h:1\n",
		   "t.conf:2: cluster.etcd: \"http://-h:1\" is not http://");
	EXPECT_BAD("[cluster]\netcd = http://h_1:1\n",
		   "t.conf:2: cluster.etcd: \"http://h_1:1\" is not http://");
	EXPECT_ERR("[cluster]\netcd = http://a:1,,http://b:1\n",
		   "t.conf:2: cluster.etcd: empty entry in the list");
	EXPECT_ERR("[cluster]\netcd = http://a:1, \n",
		   "t.conf:2: cluster.etcd: empty entry in the list");
	EXPECT_ERR("[cluster]\netcd = http://a:1,http://a:2,http://a:3,"
		   "http://a:4,http://a:5,http://a:6,http://a:7,http://a:8,"
		   "http://a:9\n",
		   "t.conf:2: cluster.etcd: more than 8 endpoints");
	EXPECT_ERR("[cluster]\nprefix = rmpool/\n",
		   "t.conf:2: cluster.prefix: \"rmpool/\" is not an etcd key "
		   "prefix (\"/\", then A-Z, a-z, 0-9, '_', '.', '-', '/', "
		   "ending in \"/\")");
	EXPECT_BAD("[cluster]\nprefix = /rmpool\n",
		   "t.conf:2: cluster.prefix: \"/rmpool\" is not an etcd key");
	EXPECT_BAD("[cluster]\nprefix = /a b/\n",
		   "t.conf:2: cluster.prefix: \"/a b/\" is not an etcd key");
	EXPECT_ERR("[cluster]\nnode = -n1\n",
		   "t.conf:2: cluster.node: \"-n1\" is not a node name (1 to 63 "
		   "of A-Z, a-z, 0-9, '_', '.', '-', starting with a letter or "
		   "digit; empty: the host name)");
	EXPECT_BAD("[cluster]\nnode = a/b\n",
		   "t.conf:2: cluster.node: \"a/b\" is not a node name");
	EXPECT_BAD("[cluster]\nnode = "
		   "a123456789012345678901234567890123456789012345678901234567890123\n",
		   "t.conf:2: cluster.node: value is too long (at most 63");
	EXPECT_ERR("[cluster]\nlabels = rack\n",
		   "t.conf:2: cluster.labels: \"rack\" is not NAME=VALUE (each "
		   "1 to 63 of A-Z, a-z, 0-9, '_', '.', '-'; NAME starting with "
		   "a letter)");
	EXPECT_BAD("[cluster]\nlabels = rack=\n",
		   "t.conf:2: cluster.labels: \"rack=\" is not NAME=VALUE");
	EXPECT_BAD("[cluster]\nlabels = 1rack=a\n",
		   "t.conf:2: cluster.labels: \"1rack=a\" is not NAME=VALUE");
	EXPECT_BAD("[cluster]\nlabels = rack=a=b\n",
		   "t.conf:2: cluster.labels: \"rack=a=b\" is not NAME=VALUE");
	EXPECT_BAD("[cluster]\nlabels = rack=a,zone=b\n",
		   "t.conf:2: cluster.labels: \"rack=a,zone=b\" is not");
	EXPECT_ERR("[cluster]\nlabels = rack=a zone=b rack=c\n",
		   "t.conf:2: cluster.labels: label rack given twice");
	EXPECT_ERR("[cluster]\nlabels = a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 "
		   "j=1 k=1 l=1 m=1 n=1 o=1 p=1 q=1\n",
		   "t.conf:2: cluster.labels: more than 16 labels");
	EXPECT_ERR("[cluster]\nttl = 999ms\n",
		   "t.conf:2: cluster.ttl: \"999ms\" is out of range (1s..1m)");
	EXPECT_ERR("[cluster]\nttl = 61s\n",
		   "t.conf:2: cluster.ttl: \"61s\" is out of range (1s..1m)");
	EXPECT_ERR("[cluster]\ncredentials_file = etcd.cred\n",
		   "t.conf:2: cluster.credentials_file: \"etcd.cred\" is not "
		   "an absolute path (or empty)");
	EXPECT_ERR("[cluster]\nca_file = /etc/ssl/ca.pem\n",
		   "t.conf: cluster.ca_file: no etcd endpoint is https://, so "
		   "TLS would not be used");
	EXPECT_ERR("[cluster]\netcd = http://a:1\ncert_file = /c.pem\n"
		   "key_file = /k.pem\n",
		   "t.conf: cluster.cert_file: no etcd endpoint is https://, so "
		   "TLS would not be used");
	EXPECT_ERR("[cluster]\netcd = https://a:1\ncert_file = /c.pem\n",
		   "t.conf: cluster.cert_file: a client certificate needs its "
		   "key: give cert_file and key_file together");
	EXPECT_BAD("[cluster]\netcd = https://a:1\nkey_file = /k.pem\n",
		   "t.conf: cluster.key_file: a client certificate needs");
	/* https, and a mixed list; TLS files with https endpoints only
	 * (test_cluster_plain_http) */
	CHECK_EQ(load(&c, "[cluster]\netcd = https://[::1]:2379, "
			  "http://b:2\n"), 0);
	CHECK_EQ(rmp_cluster_endpoints(c.cluster.etcd, eps, &n, why,
				       sizeof(why)), 0);
	CHECK_EQ(n, 2);
	CHECK(eps[0].tls && !eps[1].tls);
	CHECK_EQ(load(&c, "[cluster]\netcd = https://[::1]:2379, "
			  "https://b:2\nca_file = /ca.pem\ncert_file = /c.pem\n"
			  "key_file = /k.pem\n"), 0);
	CHECK_EQ(rmp_cluster_endpoints(c.cluster.etcd, eps, &n, why,
				       sizeof(why)), 0);
	CHECK_EQ(n, 2);
	CHECK(eps[0].tls && eps[1].tls);
	CHECK_STR(eps[0].host, "::1");
	CHECK_STR(c.cluster.key_file, "/k.pem");
	EXPECT_ERR("[cluster]\nzone = a\n",
		   "t.conf:2: unknown key \"zone\" in section [cluster]");
	EXPECT_ERR("[cluster]\nttl = 2s\n[cluster]\nttl = 3s\n",
		   "t.conf:4: cluster.ttl: duplicate key (first set on line 2)");
}

/* test_cluster_plain_http -- credentials and TLS files need every etcd
 * endpoint https://: with one plain endpoint (http://, etcd://) in the
 * list, whoever blocks the https ones gets the password (or the
 * traffic) in clear. */
static void test_cluster_plain_http(void)
{
	struct rmp_config c;

	EXPECT_ERR("[cluster]\netcd = https://a:1, http://b:2\n"
		   "credentials_file = /etc/rmpool/etcd.cred\n",
		   "t.conf: cluster.credentials_file: etcd endpoint b:2 is not "
		   "https://; with credentials every endpoint must be, or the "
		   "password can cross the network in clear");
	EXPECT_ERR("[cluster]\netcd = http://a:1\n"
		   "credentials_file = /etc/rmpool/etcd.cred\n",
		   "t.conf: cluster.credentials_file: etcd endpoint a:1 is not "
		   "https://; with credentials every endpoint must be, or the "
		   "password can cross the network in clear");
	EXPECT_BAD("[cluster]\netcd = https://a:1, etcd://[::1]:2\n"
		   "credentials_file = /etc/rmpool/etcd.cred\n",
		   "t.conf: cluster.credentials_file: etcd endpoint [::1]:2 is "
		   "not https://");
	EXPECT_ERR("[cluster]\netcd = https://[::1]:2379, http://b:2\n"
		   "ca_file = /ca.pem\n",
		   "t.conf: cluster.ca_file: etcd endpoint b:2 is not https://; "
		   "with TLS files every endpoint must be, or the traffic can "
		   "cross the network in clear");
	EXPECT_BAD("[cluster]\netcd = http://b:2, https://a:1\n"
		   "cert_file = /c.pem\nkey_file = /k.pem\n",
		   "t.conf: cluster.cert_file: etcd endpoint b:2 is not "
		   "https://");
	/* every endpoint https: credentials and TLS files go */
	CHECK_EQ(load(&c, "[cluster]\netcd = https://a:1, https://b:2\n"
			  "credentials_file = /etc/rmpool/etcd.cred\n"
			  "ca_file = /ca.pem\n"), 0);
	CHECK_STR(c.cluster.credentials_file, "/etc/rmpool/etcd.cred");
	/* plain http without a secret stays allowed */
	CHECK_EQ(load(&c, "[cluster]\netcd = https://a:1, http://b:2\n"), 0);
}

/* A 32-byte tenant key, as hex. */
#define KEY_HEX "0123456789abcdef0123456789abcdef" \
		"fedcba9876543210fedcba9876543210"

/* dump -- c as text (free it), show_secrets as asked. */
static char *dump(const struct rmp_config *c, bool show_secrets)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	CHECK_EQ(rmp_config_dump(c, f, show_secrets), 0);
	fclose(f);
	return buf;
}

/* peer -- text as a sockaddr: IPv6 when it has a ':'. */
static const struct sockaddr *peer(struct sockaddr_storage *ss,
				   const char *text)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		CHECK_EQ(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		CHECK_EQ(inet_pton(AF_INET, text, &s4->sin_addr), 1);
	}
	return (const struct sockaddr *)ss;
}

/* allowed -- does net (one networks entry) let text in? */
static bool allowed(const char *net, const char *text)
{
	struct rmp_config c;
	struct sockaddr_storage ss;
	char conf[256];

	snprintf(conf, sizeof(conf),
		 "[tenant.t]\nkey_file = /k\nnetworks = %s\n", net);
	CHECK_EQ(load(&c, conf), 0);
	if (err[0])
		printf("# %s\n", err);
	return rmp_networks_allow(c.tenants[0].limits.networks,
				  c.tenants[0].limits.nnetworks, peer(&ss, text));
}

static void test_tenants(void)
{
	static const char text[] =
		"[tenant.alpha]\n"
		"key = " KEY_HEX "\n"
		"bytes = 4G\n"
		"leases = 10\n"
		"connections = 3\n"
		"networks = 10.0.0.0/8, fd00::/8 ,192.0.2.7,2001:DB8::1,"
		"  ::ffff:198.51.100.0/120\n"
		"[server]\n"
		"port = 7000\n"
		"[tenant.b-2.x_Y]\n"
		"key_file = /etc/rmpool/b.key ; a comment\n"
		"[anonymous]\n"
		"enabled = yes\n"
		"[tenant.c]\n"
		"key = 00112233445566778899AABBCCDDEEFF\n"
		"networks =\n"
		"[anonymous]\n"
		"leases = 5\n";
	static const uint8_t net6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
					  0, 0, 0, 0, 0, 0, 0, 1 };
	const struct rmp_tenant_config *t;
	const struct rmp_network *n;
	struct rmp_config c;
	char long_key[2 * 64 + 1];

	CHECK_EQ(load(&c, text), 0);
	if (err[0])
		printf("# %s\n", err);
	CHECK_EQ(c.server.port, 7000);
	CHECK(c.anonymous.enabled);
	CHECK_EQ(c.anonymous.limits.leases, 5);
	CHECK_EQ(c.ntenants, 3);

	t = &c.tenants[0];
	CHECK_STR(t->name, "alpha");
	CHECK_EQ(t->key_len, 32);
	CHECK(t->key[0] == 0x01 && t->key[1] == 0x23 && t->key[31] == 0x10);
	CHECK_STR(t->key_file, "");
	CHECK_EQ(t->limits.bytes, 4 * GIB);
	CHECK_EQ(t->limits.leases, 10);
	CHECK_EQ(t->limits.connections, 3);
	CHECK_EQ(t->limits.nnetworks, 5);
	n = t->limits.networks;
	CHECK(n[0].family == AF_INET && n[0].prefix == 8 && n[0].addr[0] == 10 &&
	      n[0].addr[1] == 0);
	CHECK(n[1].family == AF_INET6 && n[1].prefix == 8 &&
	      n[1].addr[0] == 0xfd && n[1].addr[1] == 0);
	CHECK(n[2].family == AF_INET && n[2].prefix == 32 &&
	      n[2].addr[0] == 192 && n[2].addr[3] == 7);
	CHECK(n[3].family == AF_INET6 && n[3].prefix == 128 &&
	      !memcmp(n[3].addr, net6, 16));
	/* an IPv4-mapped network is the IPv4 network it maps */
	CHECK(n[4].family == AF_INET && n[4].prefix == 24 &&
	      n[4].addr[0] == 198 && n[4].addr[2] == 100 &&
	      n[4].addr[3] == 0);

	t = &c.tenants[1];
	CHECK_STR(t->name, "b-2.x_Y");
	CHECK_EQ(t->key_len, 0);
	CHECK_STR(t->key_file, "/etc/rmpool/b.key");
	CHECK_EQ(t->limits.bytes, 0);
	CHECK_EQ(t->limits.nnetworks, 0);

	t = &c.tenants[2];
	CHECK_STR(t->name, "c");
	CHECK_EQ(t->key_len, 16);
	CHECK(t->key[0] == 0x00 && t->key[15] == 0xff);
	CHECK_EQ(t->limits.nnetworks, 0);

	/* keys of 16 and 64 bytes, names of 1 and 24 characters */
	memset(long_key, 'a', 128);
	long_key[128] = '\0';
	{
		char conf[400];

		snprintf(conf, sizeof(conf),
			 "[tenant.x]\nkey = %s\n"
			 "[tenant.abcdefghijklmnopqrstuvwx]\nkey_file = /k\n",
			 long_key);
		CHECK_EQ(load(&c, conf), 0);
		CHECK_EQ(c.tenants[0].key_len, 64);
		CHECK_STR(c.tenants[1].name, "abcdefghijklmnopqrstuvwx");
	}

	/* RMP_TENANTS_MAX tenants are fine, one more is not */
	{
		char *big = malloc(65 * 40), *o = big;
		unsigned int i;

		CHECK(big != NULL);
		if (!big)
			return;
		for (i = 0; i < 65; i++)
			o += sprintf(o, "[tenant.t%u]\nkey_file = /k%u\n", i, i);
		CHECK_EQ(load(&c, big), -EINVAL);
		CHECK_STR(err, "t.conf:129: tenant.t64: too many tenants "
			       "(at most 64)");
		*strstr(big, "[tenant.t64]") = '\0';
		CHECK_EQ(load(&c, big), 0);
		CHECK_EQ(c.ntenants, 64);
		CHECK_STR(c.tenants[63].name, "t63");
		free(big);
	}
}

static void test_networks(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_un sun;
	struct rmp_tenant_limits none;

	/* v4, v6, bare, mapped */
	CHECK(allowed("10.0.0.0/8", "10.1.2.3"));
	CHECK(!allowed("10.0.0.0/8", "11.0.0.1"));
	CHECK(allowed("10.0.0.0/8", "::ffff:10.1.2.3"));
	CHECK(!allowed("10.0.0.0/8", "::ffff:11.1.2.3"));
	CHECK(!allowed("10.0.0.0/8", "::a01:203")); /* not mapped */
	CHECK(allowed("fd00::/8", "fd12::1"));
	CHECK(!allowed("fd00::/8", "fe00::1"));
	CHECK(!allowed("fd00::/8", "10.1.2.3"));
	CHECK(allowed("192.0.2.7", "192.0.2.7"));
	CHECK(allowed("192.0.2.7", "::ffff:192.0.2.7"));
	CHECK(!allowed("192.0.2.7", "192.0.2.8"));
	CHECK(allowed("2001:db8::1", "2001:db8::1"));
	CHECK(!allowed("2001:db8::1", "2001:db8::2"));
	CHECK(allowed("::ffff:198.51.100.0/120", "198.51.100.77"));
	CHECK(allowed("::ffff:198.51.100.0/120", "::ffff:198.51.100.77"));
	CHECK(!allowed("::ffff:198.51.100.0/120", "198.51.101.77"));
	/* prefixes off byte boundaries, /0 */
	CHECK(allowed("10.0.0.128/25", "10.0.0.200"));
	CHECK(!allowed("10.0.0.128/25", "10.0.0.100"));
	CHECK(allowed("2001:db8:8000::/33", "2001:db8:8000::1"));
	CHECK(!allowed("2001:db8:8000::/33", "2001:db8::1"));
	CHECK(allowed("0.0.0.0/0", "203.0.113.9"));
	CHECK(allowed("0.0.0.0/0", "::ffff:203.0.113.9"));
	CHECK(!allowed("0.0.0.0/0", "2001:db8::1"));
	CHECK(allowed("::/0", "2001:db8::1"));
	CHECK(!allowed("::/0", "203.0.113.9"));
	CHECK(!allowed("::/0", "::ffff:203.0.113.9"));
	/* any of a list */
	CHECK(allowed("10.0.0.0/8, 192.0.2.0/24, fd00::/8", "192.0.2.1"));
	CHECK(allowed("10.0.0.0/8, 192.0.2.0/24, fd00::/8", "fdff::1"));
	CHECK(!allowed("10.0.0.0/8, 192.0.2.0/24, fd00::/8", "172.16.0.1"));

	/* no networks: anyone; other families match no network */
	memset(&none, 0, sizeof(none));
	CHECK(rmp_networks_allow(none.networks, none.nnetworks, peer(&ss, "203.0.113.9")));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	CHECK(rmp_networks_allow(none.networks, none.nnetworks, (const struct sockaddr *)&sun));
	none.nnetworks = 1;
	none.networks[0].family = AF_INET; /* 0.0.0.0/0 */
	CHECK(rmp_networks_allow(none.networks, none.nnetworks, peer(&ss, "203.0.113.9")));
	CHECK(!rmp_networks_allow(none.networks, none.nnetworks, (const struct sockaddr *)&sun));
	CHECK(!rmp_network_match(&none.networks[0], NULL));
}

static void test_tenant_errors(void)
{
	char conf[512];
	unsigned int i;

	/* names */
	EXPECT_ERR("[tenant.a b]\n",
		   "t.conf:1: tenant name \"a b\" is not valid (1 to 24 of "
		   "A-Z, a-z, 0-9, '_', '.' and '-')");
	EXPECT_BAD("[tenant.]\n", "t.conf:1: tenant name \"\" is not valid");
	EXPECT_BAD("[server]\n[tenant.abcdefghijklmnopqrstuvwxy]\n",
		   "t.conf:2: tenant name \"abcdefghijklmnopqrstuvwxy\" is "
		   "not valid");
	EXPECT_BAD("[tenant.a/b]\n", "t.conf:1: tenant name \"a/b\" is not");
	EXPECT_ERR("[tenant.anonymous]\nkey_file = /k\n",
		   "t.conf:1: tenant name \"anonymous\" is reserved "
		   "(anonymous clients are set up in [anonymous])");
	EXPECT_ERR("[tenant]\n",
		   "t.conf:1: section [tenant] needs a name: [tenant.NAME]");
	EXPECT_ERR("[tenants.a]\n",
		   "t.conf:1: unknown section \"tenants.a\" (expected "
		   "server, pool, lease, anonymous, cluster or tenant.NAME)");
	/* the same tenant twice, even with another section between */
	EXPECT_ERR("[tenant.a]\nkey_file = /k\n[server]\n[tenant.a]\n",
		   "t.conf:4: tenant.a: duplicate tenant (first defined on "
		   "line 1)");
	/* names are case-sensitive: A and a are two tenants */
	{
		struct rmp_config c;

		CHECK_EQ(load(&c, "[tenant.a]\nkey_file = /k\n"
				  "[tenant.A]\nkey_file = /k\n"), 0);
		CHECK_EQ(c.ntenants, 2);
	}

	/* keys: the message never holds the text */
	static const char *const bad_keys[] = {
		"deadbeefdeadbeefdeadbeefdeadbeefXX",   /* not hex */
		"deadbeefdeadbeefdeadbeefdeadbe",       /* 15 bytes */
		"deadbeefdeadbeefdeadbeefdeadbeef1",    /* odd digits */
		"deadbeef deadbeefdeadbeefdeadbeef",    /* a blank inside */
		"0xdeadbeefdeadbeefdeadbeefdeadbeef",
		"",
	};
	for (i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		struct rmp_config c;

		snprintf(conf, sizeof(conf), "[tenant.a]\nkey = %s\n",
			 bad_keys[i]);
		CHECK_EQ(load(&c, conf), -EINVAL);
		CHECK_STR(err, "t.conf:2: tenant.a.key: not a key (expected "
			       "32 to 128 hex digits)");
		CHECK(strstr(err, "deadbe") == NULL);
		CHECK(strstr(err, "adbeef") == NULL);
	}
	/* 65 bytes */
	memset(conf, 0, sizeof(conf));
	strcpy(conf, "[tenant.a]\nkey = ");
	memset(conf + strlen(conf), 'e', 130);
	strcat(conf, "\n");
	EXPECT_ERR(conf, "t.conf:2: tenant.a.key: not a key (expected 32 to "
			 "128 hex digits)");
	CHECK(strstr(err, "eeee") == NULL);

	/* key and key_file: exactly one */
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nkey = " KEY_HEX "\n",
		   "t.conf:3: tenant.a: give key or key_file (not both)");
	EXPECT_ERR("[tenant.a]\nkey = " KEY_HEX "\nbytes = 1G\n"
		   "key_file = /k\n",
		   "t.conf:4: tenant.a: give key or key_file (not both)");
	CHECK(strstr(err, "0123456789abcdef") == NULL);
	EXPECT_ERR("[server]\n\n[tenant.a]\nbytes = 1G\n[tenant.b]\n"
		   "key_file = /k\n",
		   "t.conf:3: tenant.a: give key or key_file (not both)");
	EXPECT_ERR("[tenant.a]\n",
		   "t.conf:1: tenant.a: give key or key_file (not both)");
	/* the first error by line wins over the missing key */
	EXPECT_ERR("[tenant.a]\n[pool]\nsize = 1X\n",
		   "t.conf:3: pool.size: \"1X\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[tenant.a]\nkey_file = etc/a.key\n",
		   "t.conf:2: tenant.a.key_file: \"etc/a.key\" is not an "
		   "absolute path");
	EXPECT_ERR("[tenant.a]\nkey_file =\n",
		   "t.conf:2: tenant.a.key_file: \"\" is not an absolute path");
	memset(conf, 0, sizeof(conf));
	strcpy(conf, "[tenant.a]\nkey_file = /");
	memset(conf + strlen(conf), 'k', 107);
	strcat(conf, "\n");
	EXPECT_ERR(conf, "t.conf:2: tenant.a.key_file: value is too long "
			 "(at most 107 characters)");

	/* keys of the section */
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nbytes_per_client = 1G\n",
		   "t.conf:3: unknown key \"bytes_per_client\" in section "
		   "[tenant.a]");
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nenabled = yes\n",
		   "t.conf:3: unknown key \"enabled\" in section [tenant.a]");
	EXPECT_ERR("[anonymous]\nkey = " KEY_HEX "\n",
		   "t.conf:2: unknown key \"key\" in section [anonymous]");
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nbytes = 1G\nbytes = 2G\n",
		   "t.conf:4: tenant.a.bytes: duplicate key (first set on "
		   "line 3)");
	EXPECT_ERR("[anonymous]\nbytes = 1G\n[pool]\n[anonymous]\n"
		   "bytes = 1G\n",
		   "t.conf:5: anonymous.bytes: duplicate key (first set on "
		   "line 2)");
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nbytes = lots\n",
		   "t.conf:3: tenant.a.bytes: \"lots\" is not a size "
		   "(use e.g. 512M, 4G)");
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nleases = -1\n",
		   "t.conf:3: tenant.a.leases: \"-1\" is not a number");
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nconnections = 70000\n",
		   "t.conf:3: tenant.a.connections: \"70000\" is out of range "
		   "(0..65536)");
	{
		struct rmp_config c;

		/* the same key in two tenants is no duplicate */
		CHECK_EQ(load(&c, "[tenant.a]\nkey_file = /k\nbytes = 1G\n"
				  "[tenant.b]\nkey_file = /k\nbytes = 2G\n"),
			 0);
		CHECK_EQ(c.tenants[1].limits.bytes, 2 * GIB);
	}

	/* networks */
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nnetworks = 10.0.0.1/8\n",
		   "t.conf:3: tenant.a.networks: host bits set in 10.0.0.1/8");
	EXPECT_ERR("[anonymous]\nnetworks = 192.0.2.0/24, fd00::1/8\n",
		   "t.conf:2: anonymous.networks: host bits set in fd00::1/8");
	EXPECT_ERR("[anonymous]\nnetworks = 10.0.0.128/24\n",
		   "t.conf:2: anonymous.networks: host bits set in "
		   "10.0.0.128/24");
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nnetworks = 10.0.0.0/33\n",
		   "t.conf:3: tenant.a.networks: \"10.0.0.0/33\": prefix is "
		   "out of range (0..32)");
	EXPECT_ERR("[anonymous]\nnetworks = ::/129\n",
		   "t.conf:2: anonymous.networks: \"::/129\": prefix is out "
		   "of range (0..128)");
	EXPECT_ERR("[anonymous]\nnetworks = host.example\n",
		   "t.conf:2: anonymous.networks: \"host.example\" is not "
		   "ADDR/PREFIX (e.g. 10.0.0.0/8, fd00::/8, 192.0.2.7)");
	static const char *const bad_nets[] = {
		"10.0.0.0/", "10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/8/8",
		"10.0.0.0 /8", "10.0.0/8", "010.0.0.0/8", "fe80::1%eth0",
		"[fd00::]/8", "10.0.0.0/99999999999999999999999",
		"fd00::/8 10.0.0.0/8",
		"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb/128",
	};
	for (i = 0; i < sizeof(bad_nets) / sizeof(bad_nets[0]); i++) {
		snprintf(conf, sizeof(conf), "[anonymous]\nnetworks = %s\n",
			 bad_nets[i]);
		EXPECT_BAD(conf, "t.conf:2: anonymous.networks: \"");
	}
	EXPECT_ERR("[anonymous]\nnetworks = 10.0.0.0/8,\n",
		   "t.conf:2: anonymous.networks: empty entry in the list");
	EXPECT_ERR("[anonymous]\nnetworks = , 10.0.0.0/8\n",
		   "t.conf:2: anonymous.networks: empty entry in the list");
	EXPECT_ERR("[anonymous]\nnetworks = 10.0.0.0/8,,fd00::/8\n",
		   "t.conf:2: anonymous.networks: empty entry in the list");
	EXPECT_ERR("[anonymous]\nnetworks = 10.0.0.0/8, 10.0.0.0/8\n",
		   "t.conf:2: anonymous.networks: 10.0.0.0/8 given twice");
	EXPECT_ERR("[anonymous]\nnetworks = ::ffff:10.0.0.0/104, 10.0.0.0/8\n",
		   "t.conf:2: anonymous.networks: 10.0.0.0/8 given twice");
	EXPECT_ERR("[anonymous]\nnetworks = fd00::/8, FD00:0::/8\n",
		   "t.conf:2: anonymous.networks: fd00::/8 given twice");
	/* at most RMP_NETWORKS_MAX */
	strcpy(conf, "[tenant.a]\nkey_file = /k\nnetworks = ");
	for (i = 0; i < RMP_NETWORKS_MAX; i++)
		sprintf(conf + strlen(conf), "%s10.%u.0.0/16", i ? ", " : "",
			i);
	strcat(conf, "\n");
	{
		struct rmp_config c;

		CHECK_EQ(load(&c, conf), 0);
		CHECK_EQ(c.tenants[0].limits.nnetworks, RMP_NETWORKS_MAX);
	}
	strcpy(strrchr(conf, '\n'), ", 10.99.0.0/16\n");
	EXPECT_ERR(conf, "t.conf:3: tenant.a.networks: more than 8 networks");

	/* the retired [quota] */
	EXPECT_ERR("[quota]\nbytes_per_client = 1G\n",
		   "t.conf:1: section [quota] was replaced by per-tenant "
		   "limits: bytes and leases in [tenant.NAME] and [anonymous]");
	EXPECT_ERR("[pool]\n\n  [ quota ]\n",
		   "t.conf:3: section [quota] was replaced by per-tenant "
		   "limits: bytes and leases in [tenant.NAME] and [anonymous]");
}

/* test_check_tenants -- rmp_config_check on hand-built tenants. */
static void test_check_tenants(void)
{
	struct rmp_config c, good;
	struct rmp_tenant_config *t;

	rmp_config_defaults(&good);
	good.ntenants = 2;
	strcpy(good.tenants[0].name, "a");
	strcpy(good.tenants[0].key_file, "/k");
	strcpy(good.tenants[1].name, "b");
	good.tenants[1].key_len = 16;
	CHECK_EQ(rmp_config_check(&good, "x", err, sizeof(err)), 0);

	c = good;
	t = &c.tenants[0];
	t->key_file[0] = '\0';
	CHECK_EQ(rmp_config_check(&c, "x", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "x: tenant.a: give key or key_file (not both)");
	t->key_len = 32;
	strcpy(t->key_file, "/k");
	CHECK_EQ(rmp_config_check(&c, "x", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "x: tenant.a: give key or key_file (not both)");
	t->key_file[0] = '\0';
	t->key_len = 15;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "tenant.a.key: not a key (expected 32 to 128 hex "
		       "digits)");
	t->key_len = 0;
	strcpy(t->key_file, "k");
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "tenant.a.key_file: not an absolute path");

	c = good;
	strcpy(c.tenants[1].name, "a");
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "tenant.a: duplicate tenant");
	strcpy(c.tenants[1].name, "a b");
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "tenant name \"a b\" is not valid");
	strcpy(c.tenants[1].name, "anonymous");
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	memset(c.tenants[1].name, 'z', sizeof(c.tenants[1].name));
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "tenant name (unterminated) is not valid");
	c = good;
	c.ntenants = RMP_TENANTS_MAX + 1;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "too many tenants (65, at most 64)");

	c = good;
	c.tenants[0].limits.nnetworks = RMP_NETWORKS_MAX + 1;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "tenant.a.networks: more than 8 networks");
	c = good;
	c.anonymous.limits.nnetworks = 1;
	c.anonymous.limits.networks[0].family = AF_INET;
	c.anonymous.limits.networks[0].prefix = 8;
	c.anonymous.limits.networks[0].addr[1] = 1; /* host bit */
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "anonymous.networks: entry 1 is not a network");
	c.anonymous.limits.networks[0].addr[1] = 0;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), 0);
	c.anonymous.limits.networks[0].prefix = 33;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	c.anonymous.limits.networks[0].prefix = 8;
	c.anonymous.limits.networks[0].family = AF_UNIX;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
}

/*
 * A tenant's (or the anonymous clients') own lease limit above [pool]
 * max_leases is refused, wherever the two keys are in the file: the
 * limit could never be reached, and the operator meant something else.
 * The message names the line of the tenant's leases key.
 */
static void test_tenant_leases_limit(void)
{
	struct rmp_config c;

	EXPECT_ERR("[pool]\nmax_leases = 100\n[tenant.a]\nkey_file = /k\n"
		   "leases = 101\n",
		   "t.conf:5: tenant.a.leases (101) is more than "
		   "pool.max_leases (100)");
	/* max_leases after the tenant: still the tenant's line */
	EXPECT_ERR("[tenant.a]\nkey_file = /k\nleases = 101\n[pool]\n"
		   "max_leases = 100\n",
		   "t.conf:3: tenant.a.leases (101) is more than "
		   "pool.max_leases (100)");
	/* against the default max_leases (65536) */
	EXPECT_ERR("[tenant.a]\nkey_file = /k\n[tenant.b]\nkey_file = /k\n"
		   "leases = 65537\n",
		   "t.conf:5: tenant.b.leases (65537) is more than "
		   "pool.max_leases (65536)");
	EXPECT_ERR("[anonymous]\nenabled = yes\nleases = 4294967295\n",
		   "t.conf:3: anonymous.leases (4294967295) is more than "
		   "pool.max_leases (65536)");
	/* as many as the server, or a share (0): fine */
	CHECK_EQ(load(&c, "[pool]\nmax_leases = 100\n[tenant.a]\n"
			  "key_file = /k\nleases = 100\n[tenant.b]\n"
			  "key_file = /k\nleases = 0\n[anonymous]\n"
			  "leases = 100\n"), 0);

	/* rmp_config_check on a configuration built by hand */
	rmp_config_defaults(&c);
	c.pool.max_leases = 16;
	c.ntenants = 1;
	strcpy(c.tenants[0].name, "a");
	strcpy(c.tenants[0].key_file, "/k");
	c.tenants[0].limits.leases = 16;
	CHECK_EQ(rmp_config_check(&c, "x", err, sizeof(err)), 0);
	c.tenants[0].limits.leases = 17;
	CHECK_EQ(rmp_config_check(&c, "x", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "x: tenant.a.leases (17) is more than pool.max_leases "
		       "(16)");
	c.tenants[0].limits.leases = 0;
	c.anonymous.limits.leases = 17;
	CHECK_EQ(rmp_config_check(&c, NULL, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "anonymous.leases (17) is more than pool.max_leases "
		       "(16)");
}

static void test_dump_tenants(void)
{
	static const char text[] =
		"[anonymous]\n"
		"enabled = on\n"
		"networks = 0.0.0.0/0, ::/0\n"
		"[tenant.alpha]\n"
		"key = " KEY_HEX "\n"
		"bytes = 1536K\n"
		"leases = 10\n"
		"connections = 3\n"
		"networks = 10.0.0.0/8, FD00:0:0::/8,192.0.2.7,2001:db8::1, "
		"::ffff:198.51.100.0/120, 1:0:0:2:0:0:0:3, 0:0:1:0:0:2:3:4\n"
		"[tenant.beta]\n"
		"key_file = /etc/rmpool/beta key\n"
		"[tenant.long]\n"
		"key_file = /k\n"
		/* 8 networks whose canonical text is too long for one line */
		"networks=1:2:3:4:5:6:7:8,1:2:3:4:5:6:7:9,1:2:3:4:5:6:7:a,"
		"1:2:3:4:5:6:7:b,1:2:3:4:5:6:7:c,1:2:3:4:5:6:7:d,"
		"1:0:3:4:5:6:7:e,::ffff:1.2.3.4\n";
	struct rmp_config c, d;
	char *buf;

	CHECK_EQ(load(&c, text), 0);
	if (err[0])
		printf("# %s\n", err);

	/* with the secrets: the whole configuration, parsed back */
	buf = dump(&c, true);
	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK(strstr(buf, "\n[anonymous]\nenabled = yes\nbytes = 0\n"
			  "leases = 0\nconnections = 0\n"
			  "networks = 0.0.0.0/0, ::/0\n") != NULL);
	CHECK(strstr(buf, "\n[tenant.alpha]\nkey = " KEY_HEX "\n"
			  "bytes = 1536K\nleases = 10\nconnections = 3\n"
			  "networks = 10.0.0.0/8, fd00::/8, 192.0.2.7/32, "
			  "2001:db8::1/128, 198.51.100.0/24, "
			  "1:0:0:2::3/128, ::1:0:0:2:3:4/128\n") != NULL);
	CHECK(strstr(buf, "\n[tenant.beta]\nkey_file = /etc/rmpool/beta key\n"
			  "bytes = 0\nleases = 0\nconnections = 0\n"
			  "networks =\n") != NULL);
	/* the long list comes compact, never longer than it was read */
	CHECK(strstr(buf, "\nnetworks=1:2:3:4:5:6:7:8,1:2:3:4:5:6:7:9,"
			  "1:2:3:4:5:6:7:a,1:2:3:4:5:6:7:b,1:2:3:4:5:6:7:c,"
			  "1:2:3:4:5:6:7:d,1::3:4:5:6:7:e,1.2.3.4\n") != NULL);
	/* no tenant has an empty key_file line ([cluster] has one) */
	CHECK(strstr(strstr(buf, "\n[tenant.") ? strstr(buf, "\n[tenant.") :
		     buf, "key_file =\n") == NULL);
	CHECK_EQ(load(&d, buf), 0);
	if (err[0])
		printf("# %s\n", err);
	CHECK(rmp_config_diff(&c, &d) == NULL);
	CHECK(rmp_config_diff(&d, &c) == NULL);
	free(buf);

	/* without: no key text, and it says so */
	buf = dump(&c, false);
	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK(strstr(buf, "0123456789abcdef") == NULL);
	CHECK(strstr(buf, "fedcba9876543210") == NULL);
	CHECK(strstr(buf, "\n[tenant.alpha]\n# key = (inline, 32 bytes, "
			  "not shown)\nbytes = 1536K\n") != NULL);
	CHECK(strstr(buf, "\nkey_file = /etc/rmpool/beta key\n") != NULL);
	/* ... and so it does not parse back */
	CHECK_EQ(load(&d, buf), -EINVAL);
	CHECK(strstr(err, ": tenant.alpha: give key or key_file (not both)")
	      != NULL);
	free(buf);

	/* a configuration without inline keys dumps the same both ways */
	CHECK_EQ(load(&c, "[tenant.a]\nkey_file = /k\n"), 0);
	{
		char *x = dump(&c, false), *y = dump(&c, true);

		CHECK(x && y && !strcmp(x, y));
		CHECK_EQ(load(&d, x ? x : ""), 0);
		CHECK(rmp_config_diff(&c, &d) == NULL);
		free(x);
		free(y);
	}
}

static void test_diff_tenants(void)
{
	static const char text[] =
		"[tenant.alpha]\nkey = " KEY_HEX "\nbytes = 1G\n"
		"networks = 10.0.0.0/8\n"
		"[tenant.beta]\nkey_file = /k\n";
	struct rmp_config a, b;

	CHECK_EQ(load(&a, text), 0);
	b = a;
	CHECK(rmp_config_diff(&a, &b) == NULL);
	b.tenants[0].limits.bytes = 2 * GIB;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.bytes");
	b = a;
	b.tenants[0].limits.leases = 1;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.leases");
	b = a;
	b.tenants[0].limits.connections = 1;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.connections");
	b = a;
	b.tenants[0].key[31] ^= 1;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.key");
	b = a;
	b.tenants[0].key_len = 16;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.key");
	b = a;
	strcpy(b.tenants[1].key_file, "/k2");
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.beta.key_file");
	b = a;
	b.tenants[0].limits.networks[0].prefix = 9;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.networks");
	b = a;
	b.tenants[0].limits.nnetworks = 0;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.alpha.networks");
	/* gone, added */
	b = a;
	b.ntenants = 1;
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.beta");
	CHECK_STR(rmp_config_diff(&b, &a), "tenant.beta");
	b = a;
	strcpy(b.tenants[1].name, "gamma");
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.beta");
	b.ntenants = 3;
	b.tenants[2] = a.tenants[1];
	CHECK_STR(rmp_config_diff(&a, &b), "tenant.gamma");
	/* the order of the tenants is no difference */
	b = a;
	b.tenants[0] = a.tenants[1];
	b.tenants[1] = a.tenants[0];
	CHECK(rmp_config_diff(&a, &b) == NULL);
	/* the other sections come first */
	b.anonymous.limits.bytes = 1;
	b.ntenants = 0;
	CHECK_STR(rmp_config_diff(&a, &b), "anonymous.bytes");
	b = a;
	b.anonymous.limits.nnetworks = 1;
	CHECK_STR(rmp_config_diff(&a, &b), "anonymous.networks");
}

/* write_file -- a temporary file holding len bytes of data. */
static int write_file(char *path, const char *data, size_t len)
{
	FILE *f;
	int fd;

	strcpy(path, "/tmp/rmp-test-config-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	fwrite(data, 1, len, f);
	return fclose(f);
}

static void test_files(void)
{
	static const char nul[] = "[pool]\nsize = 1G\0junk\n";
	static const char inline_key[] =
		"[tenant.a]\nkey = 00112233445566778899aabbccddeeff\n";
	static const char key_file_conf[] =
		"[tenant.a]\nkey_file = /etc/rmpool/a.key\n";
	struct rmp_config c;
	char path[64], want[256];

	CHECK_EQ(rmp_config_load_file(&c, "/nonexistent/rmpoold.conf", err,
				      sizeof(err)), -ENOENT);
	CHECK_STR(err, "/nonexistent/rmpoold.conf: cannot open: "
		       "No such file or directory");
	CHECK_EQ(rmp_config_load_file(&c, "/", err, sizeof(err)), -EISDIR);
	CHECK_STR(err, "/: read error: Is a directory");

	CHECK_EQ(write_file(path, nul, sizeof(nul) - 1), 0);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: line contains a NUL byte", path);
	CHECK_STR(err, want);
	unlink(path);

	CHECK_EQ(write_file(path, "[pool]\r\nsize = 4G\r\n", 19), 0);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), 0);
	CHECK_EQ(c.pool.size, 4 * GIB);
	unlink(path);

	/* the last line needs no newline */
	CHECK_EQ(write_file(path, "[pool]\nsize = 6G", 16), 0);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), 0);
	CHECK_EQ(c.pool.size, 6 * GIB);
	unlink(path);

	/* An inline key in a file others can read is refused, as a key
	 * file would be; closed to others, it loads. */
	CHECK_EQ(write_file(path, inline_key, sizeof(inline_key) - 1), 0);
	CHECK_EQ(chmod(path, 0644), 0);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), -EACCES);
	snprintf(want, sizeof(want), "%s: tenant.a.key is inline, but others "
		 "may read the file (mode 644): chmod o-rwx it, and make a new "
		 "key, or use key_file", path);
	CHECK_STR(err, want);
	CHECK_EQ(chmod(path, 0640), 0);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), 0);
	CHECK_EQ(c.tenants[0].key_len, 16);
	/* A key file named instead: the file's mode is the key file's
	 * business. */
	CHECK_EQ(write_file(path, key_file_conf, sizeof(key_file_conf) - 1),
		 0);
	CHECK_EQ(chmod(path, 0644), 0);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), 0);
	unlink(path);
}

/* source_root -- argv[1], else $RMP_SOURCE_ROOT, else "." */
static const char *source_root(int argc, char **argv)
{
	const char *env = getenv("RMP_SOURCE_ROOT");

	if (argc > 1)
		return argv[1];
	return env && *env ? env : ".";
}

/* key_lines -- "[section]" and "key" of each setting line, in order. */
static char *key_lines(const char *text)
{
	size_t len = strlen(text), o = 0;
	char *out = malloc(len + 1);
	const char *l, *e;

	if (!out)
		return NULL;
	for (l = text; *l; l = *e ? e + 1 : e) {
		size_t n;

		e = strchr(l, '\n');
		if (!e)
			e = l + strlen(l);
		if (*l == '[') {
			n = (size_t)(e - l);
		} else if (*l >= 'a' && *l <= 'z') {
			n = strcspn(l, " =");
		} else {
			continue;
		}
		memcpy(out + o, l, n);
		o += n;
		out[o++] = '\n';
	}
	out[o] = '\0';
	return out;
}

/*
 * test_shipped_conf -- conf/rmpoold.conf parses as it is, to the
 * defaults and its one tenant "default" (key_file set); with every "#key"
 * line uncommented it still gives the same, and it names the same keys
 * in the same order as the dump.
 */
static void test_shipped_conf(const char *root)
{
	struct rmp_config def, c;
	char path[PATH_MAX], *text = NULL, *dump = NULL, *a, *b;
	size_t len = 0, i, o;
	FILE *f;
	long n;

	/* the defaults, and the one tenant the file ships with */
	rmp_config_defaults(&def);
	def.ntenants = 1;
	strcpy(def.tenants[0].name, "default");
	strcpy(def.tenants[0].key_file, "/etc/rmpool/default.key");
	snprintf(path, sizeof(path), "%s/conf/rmpoold.conf", root);
	CHECK_EQ(rmp_config_load_file(&c, path, err, sizeof(err)), 0);
	if (err[0])
		printf("# %s (set RMP_SOURCE_ROOT or pass the source root)\n",
		       err);
	CHECK(rmp_config_diff(&def, &c) == NULL);

	f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = malloc((size_t)n + 1);
	CHECK(text && fread(text, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	if (!text)
		return;
	text[n] = '\0';
	/* drop the '#' of "#key = value" lines; prose is "# words" */
	for (i = 0, o = 0; text[i]; i++) {
		if (text[i] == '#' && (i == 0 || text[i - 1] == '\n') &&
		    text[i + 1] >= 'a' && text[i + 1] <= 'z')
			continue;
		text[o++] = text[i];
	}
	text[o] = '\0';
	err[0] = '\0';
	CHECK_EQ(rmp_config_load_string(&c, text, path, err, sizeof(err)),
		 0);
	if (err[0])
		printf("# %s\n", err);
	CHECK(rmp_config_diff(&def, &c) == NULL);

	f = open_memstream(&dump, &len);
	CHECK(f && rmp_config_dump(&def, f, false) == 0);
	if (f)
		fclose(f);
	a = key_lines(text);
	b = key_lines(dump ? dump : "");
	CHECK_STR(a, b);
	free(a);
	free(b);
	free(dump);
	free(text);
}

int main(int argc, char **argv)
{
	test_defaults();
	test_value_grammar();
	test_all_keys();
	test_syntax_errors();
	test_bad_values();
	test_cross_checks();
	test_unchanged_on_failure();
	test_diff();
	test_cluster();
	test_cluster_plain_http();
	test_tenants();
	test_networks();
	test_tenant_errors();
	test_check_tenants();
	test_tenant_leases_limit();
	test_dump_tenants();
	test_diff_tenants();
	test_files();
	test_shipped_conf(source_root(argc, argv));
	return check_done();
}

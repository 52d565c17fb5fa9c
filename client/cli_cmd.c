/* SPDX-License-Identifier: MIT */
/* cli_cmd.c -- the rmpool commands: alloc, write, read, renew, free, cas,
 * faa, stat, keygen. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "cli_int.h"
#include "parse.h"
#include "rmpool.h"
#include "token.h"

/* ---- commands -------------------------------------------------------- */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/*
 * hold_ephemeral -- keep the connection (and so the ephemeral lease)
 * until stdin ends or a signal comes; renew at half the ttl.
 */
static void hold_ephemeral(struct cli *cli, struct rmp_lease *l,
			   uint32_t ttl_s)
{
	struct sigaction sa;
	struct rmp_lease_info info;
	struct pollfd pfd;
	char sink[4096];
	uint64_t wait;
	ssize_t n;
	int r, err;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	while (!got_signal) {
		info.size = sizeof(info);
		rmp_lease_info(l, &info);
		wait = RENEW_MIN_MS > info.ttl_ms / 2 ? RENEW_MIN_MS :
							    info.ttl_ms / 2;
		pfd = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		r = poll(&pfd, 1, (int)(wait > INT_MAX ? INT_MAX : wait));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (r == 0) {
			err = rmp_lease_renew(l, ttl_s);
			if (err)
				cli_fail(cli->c, "renew", err);
			continue;
		}
		if (pfd.revents & POLLNVAL)
			break;
		n = read(STDIN_FILENO, sink, sizeof(sink));
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;
	}
	/* Gone already (expired, or freed with its token): fine. */
	err = rmp_lease_free(l);
	if (err && err != -ENOENT && err != -EPERM && err != -EKEYEXPIRED)
		cli_fail(cli->c, "free", err);
}

/* What alloc takes for a cluster (-C) only. */
struct cluster_args {
	const char *prefer, *exclude, *spread, *replicas, *stripes, *unit;
	const char *ec, *ec_chunk; /* "K+M"; a size */
};

/* cluster_alloc -- place the lease through the cluster of -C. */
static void cluster_alloc(struct cli *cli, uint64_t size,
			  const struct rmp_alloc_opts *ao,
			  const struct cluster_args *ca, struct rmp_lease **l)
{
	struct rmp_cluster_alloc_opts co;
	int err;

	cli_cluster_open(cli);
	rmp_cluster_alloc_opts_init(&co);
	co.ttl_s = ao->ttl_s;
	co.flags = ao->flags;
	co.prefer = ca->prefer;
	co.exclude = ca->exclude;
	co.spread = ca->spread;
	if (ca->replicas)
		co.replicas = (unsigned)cli_arg_count("replicas", ca->replicas,
						      1, 3);
	if (ca->stripes)
		co.stripes = (unsigned)cli_arg_count("stripes", ca->stripes,
						     1, 16);
	if (ca->unit)
		co.stripe_unit = cli_arg_size("stripe unit", ca->unit);
	if (ca->ec) {
		unsigned k, m;
		char end;

		if (sscanf(ca->ec, "%u+%u%c", &k, &m, &end) != 2)
			cli_usage_error("alloc: --ec K+M (4+2, say)");
		co.ec_data = k;
		co.ec_parity = m;
	}
	if (ca->ec_chunk)
		co.ec_chunk = cli_arg_size("ec chunk", ca->ec_chunk);
	err = rmp_cluster_alloc(cli->cl, size, &co, l);
	if (err)
		cli_die("alloc: %s (%s)", rmp_strerror(err),
			rmp_cluster_last_error(cli->cl));
}

int cmd_alloc(struct cli *cli, int argc, char **argv)
{
	const char *ttl_arg = NULL, *pos[1];
	struct cluster_args ca = { 0 };
	bool ephemeral = false, json = false, spill = false;
	const struct opt opts[] = {
		{ "--ttl", &ttl_arg, NULL },
		{ "--ephemeral", NULL, &ephemeral },
		{ "--json", NULL, &json },
		{ "--spill", NULL, &spill },
		{ "--prefer", &ca.prefer, NULL },
		{ "--exclude", &ca.exclude, NULL },
		{ "--spread", &ca.spread, NULL },
		{ "--replicas", &ca.replicas, NULL },
		{ "--stripes", &ca.stripes, NULL },
		{ "--stripe-unit", &ca.unit, NULL },
		{ "--ec", &ca.ec, NULL },
		{ "--ec-chunk", &ca.ec_chunk, NULL },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease_info info;
	struct rmp_alloc_opts ao;
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_lease *l;
	uint64_t size;
	int err;

	cli_parse_args(cli, "alloc", argc, argv, opts, pos, 1, 1);
	size = cli_arg_size("size", pos[0]);
	if (size == 0)
		cli_usage_error("alloc: size must be at least 1 byte");
	rmp_alloc_opts_init(&ao);
	if (ttl_arg)
		ao.ttl_s = cli_arg_ttl(ttl_arg);
	if (ephemeral)
		ao.flags |= RMP_LEASE_EPHEMERAL;
	if (spill)
		ao.flags |= RMP_LEASE_SPILL;

	if ((ca.prefer || ca.exclude || ca.spread || ca.replicas ||
	     ca.stripes || ca.unit || ca.ec || ca.ec_chunk) &&
	    (!cli->cluster || cli->server))
		cli_usage_error("alloc: --prefer, --exclude, --spread, "
				"--replicas, --stripes and --stripe-unit place "
				"among a cluster's nodes: give -C (and no -s)");
	if (cli->cluster && !cli->server) {
		cluster_alloc(cli, size, &ao, &ca, &l);
	} else {
		cli_connect(cli, NULL);
		err = rmp_lease_alloc(cli->c, size, &ao, &l);
		if (err)
			cli_fail(cli->c, "alloc", err);
	}
	err = rmp_lease_token(l, token, sizeof(token));
	if (err < 0)
		cli_fail(cli->c, "token", err);
	info.size = sizeof(info);
	err = rmp_lease_info(l, &info);
	if (err)
		cli_fail(cli->c, "lease info", err);

	if (json)
		printf("{\"token\":\"%s\",\"id\":\"%016" PRIx64 "\","
		       "\"length\":%" PRIu64 ",\"remote_addr\":\"0x%" PRIx64
		       "\",\"rkey\":%" PRIu32 ",\"ttl_ms\":%" PRIu64
		       ",\"ephemeral\":%s,\"spilled\":%s}\n",
		       token, info.id, info.length, info.remote_addr, info.rkey,
		       info.ttl_ms, ephemeral ? "true" : "false",
		       info.flags & RMP_LEASE_SPILLED ? "true" : "false");
	else
		printf("%s\n", token);
	if (fflush(stdout) == EOF)
		cli_fail_msg(cli->c, "alloc", -errno, "writing the token");

	if (ephemeral)
		hold_ephemeral(cli, l, ao.ttl_s);
	else
		rmp_lease_close(l); /* the lease stays until its deadline */
	return EXIT_SUCCESS;
}

/* attach -- the lease of the command's token: a cluster lease's through
 * -C, another's through its server. */
static struct rmp_lease *attach(struct cli *cli, const char *token,
				uint32_t flags, struct rmp_lease_info *info)
{
	if (cli_token_is_cluster())
		return cli_cluster_attach(cli, token, flags, info);
	return cli_attach(cli, token, flags, info);
}

/* read_full -- read up to len bytes of fd; stops early only at EOF. */
static size_t read_full(struct cli *cli, int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, buf + got, len - got);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			cli_fail_msg(cli->c, "write", -errno, "reading standard "
				 "input: %s", strerror(errno));
		}
		got += (size_t)n;
	}
	return got;
}

/* cluster_write_failed -- a cluster lease's write failed: the lease
 * closed first (an erasure-coded lease's writer claim goes with it, not
 * 30 s later), and the cluster's word on why, when it has one. */
static void cluster_write_failed(struct cli *cli, struct rmp_lease *l,
				 int err)
{
	char why[512];

	snprintf(why, sizeof(why), "%s", rmp_cluster_last_error(cli->cl));
	rmp_lease_close(l);
	if (why[0])
		cli_die("write: %s (%s)", rmp_strerror(err), why);
	cli_die("write: %s", rmp_strerror(err));
}

int cmd_write(struct cli *cli, int argc, char **argv)
{
	const char *off_arg = NULL, *file = NULL, *pos[1], *token;
	bool exclusive = false;
	const struct opt opts[] = {
		{ "--offset", &off_arg, NULL },
		{ "--token-file", &file, NULL },
		{ "--exclusive", NULL, &exclusive },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease_info info;
	struct rmp_buf *rb = NULL;
	struct rmp_lease *l;
	uint64_t off = 0, avail, written = 0;
	size_t cap, n;
	struct stat st;
	off_t cur;
	char *buf;
	int err, npos;

	npos = cli_parse_args(cli, "write", argc, argv, opts, pos, 0, 1);
	if (off_arg)
		off = cli_arg_size("offset", off_arg);
	token = cli_take_token("write", pos, npos, 0, file, NULL);
	l = attach(cli, token, exclusive ? RMP_ATTACH_EXCLUSIVE : 0, &info);
	if (off > info.length)
		cli_fail_msg(cli->c, "write", -ERANGE, "offset %" PRIu64 " beyond "
			 "the lease's %" PRIu64 " bytes", off, info.length);
	avail = info.length - off;

	/* A file says its size: refuse before writing anything. */
	if (!fstat(STDIN_FILENO, &st) && S_ISREG(st.st_mode)) {
		cur = lseek(STDIN_FILENO, 0, SEEK_CUR);
		if (cur >= 0 && st.st_size > cur &&
		    (uint64_t)(st.st_size - cur) > avail)
			cli_fail_msg(cli->c, "write", -ERANGE, "input of %" PRIu64
				 " bytes is longer than the lease (%" PRIu64
				 " bytes from offset %" PRIu64 ")",
				 (uint64_t)(st.st_size - cur), avail, off);
	}

	/* Buffer up to avail + 1 bytes (one more tells "too long"). */
	cap = avail < WRITE_BUF_MAX ? (size_t)avail + 1 : WRITE_BUF_MAX;
	buf = malloc(cap);
	if (!buf)
		cli_fail(cli->c, "write", -ENOMEM);
	if (rmp_buf_reg(cli->c, buf, cap, &rb))
		rb = NULL; /* fine: then the library copies */

	for (;;) {
		n = read_full(cli, STDIN_FILENO, buf, cap);
		if (written + n > avail)
			cli_fail_msg(cli->c, "write", -ERANGE, "input is longer than "
				 "the lease (%" PRIu64 " bytes from offset %"
				 PRIu64 ")%s", avail, off, written ?
				 "; the bytes before the excess were written" :
				 "; nothing was written");
		if (n) {
			err = rmp_write(l, off + written, buf, n);
			if (err && cli->cl) {
				rmp_buf_dereg(rb);
				free(buf);
				cluster_write_failed(cli, l, err);
			}
			if (err)
				cli_fail(cli->c, "write", err);
			written += n;
		}
		if (n < cap)
			break;
	}
	err = rmp_flush(l);
	if (err)
		cli_fail(cli->c, "flush", err);
	rmp_buf_dereg(rb);
	free(buf);
	rmp_lease_close(l);
	return EXIT_SUCCESS;
}

int cmd_read(struct cli *cli, int argc, char **argv)
{
	const char *off_arg = NULL, *len_arg = NULL, *file = NULL, *pos[1];
	const char *token;
	bool exclusive = false;
	const struct opt opts[] = {
		{ "--offset", &off_arg, NULL },
		{ "--length", &len_arg, NULL },
		{ "--token-file", &file, NULL },
		{ "--exclusive", NULL, &exclusive },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease_info info;
	struct rmp_buf *rb = NULL;
	struct rmp_lease *l;
	uint64_t off = 0, len = 0, done;
	size_t n, cap, w;
	ssize_t r;
	char *buf;
	int err, npos;

	npos = cli_parse_args(cli, "read", argc, argv, opts, pos, 0, 1);
	if (off_arg)
		off = cli_arg_size("offset", off_arg);
	if (len_arg)
		len = cli_arg_size("length", len_arg); /* checked before connecting */
	token = cli_take_token("read", pos, npos, 0, file, NULL);
	l = attach(cli, token, exclusive ? RMP_ATTACH_EXCLUSIVE : 0, &info);
	if (off > info.length)
		cli_fail_msg(cli->c, "read", -ERANGE, "offset %" PRIu64 " beyond "
			 "the lease's %" PRIu64 " bytes", off, info.length);
	if (!len_arg)
		len = info.length - off;
	if (len > info.length - off)
		cli_fail_msg(cli->c, "read", -ERANGE, "offset %" PRIu64 " + length "
			 "%" PRIu64 " beyond the lease's %" PRIu64 " bytes",
			 off, len, info.length);

	cap = len < IO_CHUNK ? (size_t)len : IO_CHUNK;
	buf = malloc(cap ? cap : 1);
	if (!buf)
		cli_fail(cli->c, "read", -ENOMEM);
	if (cap && rmp_buf_reg(cli->c, buf, cap, &rb))
		rb = NULL;
	for (done = 0; done < len; done += n) {
		n = len - done < cap ? (size_t)(len - done) : cap;
		err = rmp_read(l, off + done, buf, n);
		if (err)
			cli_fail(cli->c, "read", err);
		for (w = 0; w < n; w += (size_t)r) {
			r = write(STDOUT_FILENO, buf + w, n - w);
			if (r < 0) {
				if (errno == EINTR) {
					r = 0;
					continue;
				}
				cli_fail_msg(cli->c, "read", -errno, "writing "
					 "standard output: %s", strerror(errno));
			}
		}
	}
	rmp_buf_dereg(rb);
	free(buf);
	rmp_lease_close(l);
	return EXIT_SUCCESS;
}

/* renew and free do not cli_attach: nobody's key changes on a renew. */
int cmd_renew(struct cli *cli, int argc, char **argv)
{
	const char *ttl_arg = NULL, *file = NULL, *pos[1], *token;
	const struct opt opts[] = {
		{ "--ttl", &ttl_arg, NULL },
		{ "--token-file", &file, NULL },
		{ NULL, NULL, NULL },
	};
	uint32_t ttl = 0;
	int err, npos;

	npos = cli_parse_args(cli, "renew", argc, argv, opts, pos, 0, 1);
	if (ttl_arg)
		ttl = cli_arg_ttl(ttl_arg);
	token = cli_take_token("renew", pos, npos, 0, file, NULL);
	if (cli_token_is_cluster()) {
		cli_cluster_renew(cli, token, ttl);
		return EXIT_SUCCESS;
	}
	cli_connect_for_token(cli);
	err = rmp_lease_renew_token(cli->c, token, ttl, NULL);
	if (err)
		cli_fail(cli->c, "renew", err);
	return EXIT_SUCCESS;
}

int cmd_info(struct cli *cli, int argc, char **argv)
{
	const char *file = NULL, *pos[1], *token;
	bool json = false;
	const struct opt opts[] = {
		{ "--token-file", &file, NULL },
		{ "--json", NULL, &json },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease_info info;
	struct rmp_lease *l;
	unsigned members;
	int npos;

	npos = cli_parse_args(cli, "info", argc, argv, opts, pos, 0, 1);
	token = cli_take_token("info", pos, npos, 0, file, NULL);
	l = attach(cli, token, 0, &info);
	members = info.stripes * info.replicas;
	if (json)
		printf("{\"id\":\"%016" PRIx64 "\",\"length\":%" PRIu64
		       ",\"ttl_ms\":%" PRIu64 ",\"holders\":%" PRIu32
		       ",\"stripes\":%u,\"replicas\":%u,\"replicas_live\":%u"
		       ",\"ec_data\":%u,\"ec_parity\":%u,\"ec_chunk\":%" PRIu64
		       ",\"ec_live\":%u,\"members\":[", info.id, info.length,
		       info.ttl_ms, info.holders, info.stripes, info.replicas,
		       info.replicas_live, info.ec_data, info.ec_parity,
		       info.ec_chunk, info.ec_live);
	else
		printf("id              %016" PRIx64 "\n"
		       "length          %" PRIu64 "\n"
		       "ttl_ms          %" PRIu64 "\n"
		       "holders         %" PRIu32 "\n"
		       "stripes         %u\n"
		       "replicas        %u (%u live)\n", info.id, info.length,
		       info.ttl_ms, info.holders, info.stripes, info.replicas,
		       info.replicas_live);
	if (!json && info.ec_data)
		printf("erasure code    %u+%u, chunk %" PRIu64 " (%u of %u "
		       "members live)\n", info.ec_data, info.ec_parity,
		       info.ec_chunk, info.ec_live, members);
	for (unsigned i = 0; i < members; i++) {
		struct rmp_member_info m = { .size = sizeof(m) };

		if (rmp_lease_member_info(l, i, &m))
			break;
		if (json)
			/* a host is an address or a DNS name: no quotes in it */
			printf("%s{\"stripe\":%u,\"replica\":%u,\"state\":"
			       "\"%s\",\"host\":\"%s\",\"port\":%u,"
			       "\"rails\":%u,\"rails_up\":%u}", i ? "," : "",
			       m.stripe, m.replica,
			       rmp_member_state_name(m.state), m.host, m.port,
			       m.rails, m.rails_up);
		else
			printf("member %-8u stripe %u replica %u %s:%u %s, "
			       "rails %u of %u up\n", i, m.stripe, m.replica,
			       m.host, m.port, rmp_member_state_name(m.state),
			       m.rails_up, m.rails);
	}
	if (json)
		printf("]}\n");
	rmp_lease_close(l);
	if (fflush(stdout) == EOF)
		cli_die("info: writing the result failed");
	return EXIT_SUCCESS;
}

int cmd_free(struct cli *cli, int argc, char **argv)
{
	const char *file = NULL, *pos[1], *token;
	const struct opt opts[] = {
		{ "--token-file", &file, NULL },
		{ NULL, NULL, NULL },
	};
	int err, npos;

	npos = cli_parse_args(cli, "free", argc, argv, opts, pos, 0, 1);
	token = cli_take_token("free", pos, npos, 0, file, NULL);
	if (cli_token_is_cluster()) {
		cli_cluster_free(cli, token);
		return EXIT_SUCCESS;
	}
	cli_connect_for_token(cli);
	err = rmp_lease_free_token(cli->c, token);
	if (err)
		cli_fail(cli->c, "free", err);
	return EXIT_SUCCESS;
}

/* atomic -- `cas TOKEN OFFSET EXPECTED DESIRED` or `faa TOKEN OFFSET ADD`
 * (cmd): one 8-byte atomic on the lease, the old value printed. */
static int atomic(struct cli *cli, const char *cmd, int argc, char **argv)
{
	bool cas = !strcmp(cmd, "cas");
	int nvals = cas ? 3 : 2; /* the offset and the operands */
	uint64_t off, a, b = 0, old;
	const char *file = NULL, *pos[4], **rest, *token;
	const struct opt opts[] = {
		{ "--token-file", &file, NULL },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease *l;
	int err, npos;

	npos = cli_parse_args(cli, cmd, argc, argv, opts, pos, nvals, nvals + 1);
	token = cli_take_token(cmd, pos, npos, nvals, file, &rest);
	off = cli_arg_size("offset", rest[0]);
	a = cli_arg_value(cas ? "expected value" : "value to add", rest[1]);
	if (cas)
		b = cli_arg_value("desired value", rest[2]);
	l = attach(cli, token, 0, NULL);
	err = cas ? rmp_cas(l, off, a, b, &old) : rmp_faa(l, off, a, &old);
	if (err)
		cli_fail(cli->c, cmd, err);
	printf("%" PRIu64 "\n", old);
	rmp_lease_close(l);
	return EXIT_SUCCESS;
}

int cmd_cas(struct cli *cli, int argc, char **argv)
{
	return atomic(cli, "cas", argc, argv);
}

int cmd_faa(struct cli *cli, int argc, char **argv)
{
	return atomic(cli, "faa", argc, argv);
}

int cmd_stat(struct cli *cli, int argc, char **argv)
{
	bool json = false;
	const struct opt opts[] = {
		{ "--json", NULL, &json },
		{ NULL, NULL, NULL },
	};
	struct rmp_pool_stat s;
	int err;

	cli_parse_args(cli, "stat", argc, argv, opts, NULL, 0, 0);
	cli_connect(cli, NULL);
	s.size = sizeof(s);
	err = rmp_stat(cli->c, &s);
	if (err)
		cli_fail(cli->c, "stat", err);
	if (json) {
		printf("{\"pool_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64
		       ",\"largest_free\":%" PRIu64 ",\"leases\":%" PRIu64
		       ",\"tenant_bytes\":%" PRIu64 ",\"tenant_leases\":%"
		       PRIu64 ",\"tenant_connections\":%" PRIu32
		       ",\"quota_bytes\":%" PRIu64 ",\"quota_leases\":%"
		       PRIu64 ",\"quota_connections\":%" PRIu32
		       ",\"keys\":%" PRIu64 ",\"hugepage_size\":%" PRIu64
		       ",\"ttl_min_s\":%" PRIu32 ",\"ttl_max_s\":%" PRIu32
		       ",\"ttl_default_s\":%" PRIu32 ",\"numa_node\":%" PRId32
		       ",\"keys_mode\":\"%s\",\"quarantined_bytes\":%" PRIu64
		       ",\"zeroing_bytes\":%" PRIu64 "}\n",
		       s.pool_bytes, s.free_bytes, s.largest_free, s.leases,
		       s.client_bytes, s.client_leases, s.tenant_connections,
		       s.quota_bytes, s.quota_leases, s.quota_connections,
		       s.keys, s.hugepage_size, s.ttl_min_s, s.ttl_max_s,
		       s.ttl_default_s, s.numa_node, s.keys_mode,
		       s.quarantined_bytes, s.zeroing_bytes);
		return EXIT_SUCCESS;
	}
	printf("server          %s\n", cli->where);
	printf("tenant          %s\n", cli->tenant && *cli->tenant ?
	       cli->tenant : "(anonymous)");
	printf("pool_bytes      %" PRIu64 "\n", s.pool_bytes);
	printf("free_bytes      %" PRIu64 "\n", s.free_bytes);
	printf("largest_free    %" PRIu64 "\n", s.largest_free);
	printf("leases          %" PRIu64 "\n", s.leases);
	printf("keys            %" PRIu64 "\n", s.keys);
	printf("tenant_bytes    %" PRIu64 "\n", s.client_bytes);
	printf("tenant_leases   %" PRIu64 "\n", s.client_leases);
	if (s.quota_connections)
		printf("tenant_conns    %" PRIu32 " / %" PRIu32 "\n",
		       s.tenant_connections, s.quota_connections);
	else
		printf("tenant_conns    %" PRIu32 " / unlimited\n",
		       s.tenant_connections);
	printf("quota_bytes     %" PRIu64 "%s\n", s.quota_bytes,
	       s.quota_bytes ? "" : " (unlimited)");
	printf("quota_leases    %" PRIu64 "%s\n", s.quota_leases,
	       s.quota_leases ? "" : " (unlimited)");
	printf("hugepage_size   %" PRIu64 "%s\n", s.hugepage_size,
	       s.hugepage_size ? "" : " (normal pages)");
	printf("ttl_s           min %" PRIu32 ", max %" PRIu32
	       ", default %" PRIu32 "\n", s.ttl_min_s, s.ttl_max_s,
	       s.ttl_default_s);
	printf("numa_node       %" PRId32 "\n", s.numa_node);
	printf("keys_mode       %s\n", s.keys_mode);
	printf("quarantined     %" PRIu64 "\n", s.quarantined_bytes);
	printf("zeroing         %" PRIu64 "\n", s.zeroing_bytes);
	return EXIT_SUCCESS;
}

/* keygen -- a new random tenant key, as hex; no server involved. */
int cmd_keygen(struct cli *cli, int argc, char **argv)
{
	uint8_t key[KEYGEN_BYTES];
	char hex[2 * KEYGEN_BYTES + 2];
	size_t len = sizeof(hex) - 1, done = 0;
	ssize_t r;
	int err;

	cli_parse_args(cli, "keygen", argc, argv, NULL, NULL, 0, 0);
	err = rmp_auth_init();
	if (err)
		cli_die("keygen: cannot initialise the random generator (libsodium)");
	rmp_auth_random(key, sizeof(key));
	rmp_key_format(key, sizeof(key), hex, sizeof(hex) - 1);
	rmp_wipe(key, sizeof(key));
	hex[len - 1] = '\n';
	/* write(2), not stdio: no copy of the key left in a buffer. */
	for (err = 0; done < len && !err; done += r > 0 ? (size_t)r : 0) {
		r = write(STDOUT_FILENO, hex + done, len - done);
		if (r < 0 && errno != EINTR)
			err = errno;
		else if (r == 0)
			err = EIO;
	}
	rmp_wipe(hex, sizeof(hex));
	if (err)
		cli_die("keygen: writing the key: %s", strerror(err));
	return EXIT_SUCCESS;
}

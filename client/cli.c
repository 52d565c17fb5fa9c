/* SPDX-License-Identifier: MIT */
/* cli.c -- the rmpool command: lease, read, write, renew and free remote memory from scripts; make tenant keys. */
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
#include "parse.h"
#include "rmpool.h"
#include "token.h"

#define EXIT_USAGE 2
#define IO_CHUNK (1u << 20)       /* read: bytes per rmp_read */
#define WRITE_BUF_MAX (64u << 20) /* write: stdin buffered before writing */
#define RENEW_MIN_MS 1000u        /* alloc --ephemeral: renew at most so often */
#define KEYGEN_BYTES 32           /* keygen: key length (64 hex digits) */

static const char usage_text[] =
	"Usage: rmpool [-s HOST[:PORT]] [--tenant NAME --key-file FILE] [--name NAME]\n"
	"              [--timeout TIME] COMMAND [ARGS]\n"
	"\n"
	"Lease memory of an rmpoold server and access it with RDMA.\n"
	"\n"
	"Commands:\n"
	"  alloc SIZE [--ttl TIME] [--ephemeral] [--json]\n"
	"      lease SIZE bytes; print the lease token, or with --json an object\n"
	"      {token, id, length, remote_addr, rkey, ttl_ms, ephemeral} (id and\n"
	"      remote_addr as hex strings). A lease outlives this command until its\n"
	"      ttl runs out; an --ephemeral one is held (and renewed) only until\n"
	"      standard input reaches end of file or a signal arrives.\n"
	"  write TOKEN [--offset N] [--exclusive]\n"
	"                                  standard input -> lease, then flush; input\n"
	"                                  longer than the lease is refused\n"
	"  read TOKEN [--offset N] [--length N] [--exclusive]\n"
	"                                  lease -> standard output (default: to its end)\n"
	"  renew TOKEN [--ttl TIME]        extend the lease (0: server default)\n"
	"  free TOKEN                      give the lease back\n"
	"  cas TOKEN OFFSET EXPECTED DESIRED\n"
	"                                  compare-and-swap 8 bytes; prints the old value\n"
	"  faa TOKEN OFFSET ADD            fetch-and-add 8 bytes; prints the old value\n"
	"  stat [--json]                   pool and tenant figures\n"
	"  keygen                          print a new random tenant key (hex); store\n"
	"                                  it with chmod 600\n"
	"\n"
	"TOKEN: rmp://HOST:PORT/ID-SECRET, or - (stdin), or --token-file FILE, or\n"
	"$RMPOOL_TOKEN; treat it like a password: an argument is visible to other\n"
	"users in ps. - and --token-file read the first line (write - takes its\n"
	"data after it); $RMPOOL_TOKEN is used when no TOKEN argument is given.\n"
	"--exclusive (read, write): revoke every other holder's key first (takeover).\n"
	"renew and free do not attach the lease: a renew leaves every holder's key\n"
	"alone, a free revokes them all.\n"
	"\n"
	"Options (also accepted after COMMAND):\n"
	"  -s, --server HOST[:PORT]  server (default: the token's; port 7471)\n"
	"      --tenant NAME         authenticate as this tenant (default:\n"
	"                            $RMPOOL_TENANT; none: anonymous)\n"
	"      --key-file FILE       the tenant's key, as hex, chmod 600 (default:\n"
	"                            $RMPOOL_KEY_FILE); read by the library, never\n"
	"                            sent. A tenant needs a key file and a key file\n"
	"                            a tenant.\n"
	"      --name NAME           client name shown to operators\n"
	"      --timeout TIME        connect and operation timeout (bare number: ms)\n"
	"  -h, --help                this text\n"
	"  -V, --version             library version\n"
	"\n"
	"SIZE, OFFSET and --length take K, M, G, T suffixes (powers of 1024; KiB\n"
	"and KB mean the same). TIME takes ms, s, m, h, d suffixes; a --ttl is\n"
	"whole seconds, a bare number being seconds. Numbers may be decimal or 0x\n"
	"hexadecimal (no suffix after hex); EXPECTED, DESIRED and ADD may\n"
	"also be negative (two's complement). Exit status: 0 ok, 1 error, 2 usage.\n";

/* Global options and the connection they lead to. */
struct cli {
	const char *server; /* -s argument or NULL */
	const char *name;
	const char *tenant;   /* --tenant, else $RMPOOL_TENANT; NULL/"" = none */
	const char *key_file; /* --key-file, else $RMPOOL_KEY_FILE */
	int timeout_ms;     /* 0 = library defaults */
	struct rmp_client *c;
	char where[300];    /* "HOST:PORT" of the connection, for messages */
};

/*
 * The lease token of the command, when it was read from a file or
 * standard input, and its parsed form: secrets, wiped at exit.
 */
static char token_line[RMP_TOKEN_MAXLEN + 2];
static struct rmp_token token_parsed;

static void wipe_token(void)
{
	rmp_wipe(token_line, sizeof(token_line));
	rmp_wipe(&token_parsed, sizeof(token_parsed));
}

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void fail(struct rmp_client *c, const char *what, int err)
	__attribute__((noreturn));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("rmpool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'rmpool --help'.\n", stderr);
	exit(EXIT_USAGE);
}

/* fail -- "rmpool: WHAT: TEXT (DETAIL)" and exit 1. */
static void fail(struct rmp_client *c, const char *what, int err)
{
	const char *detail = c ? rmp_client_last_error(c) : "";

	if (*detail)
		fprintf(stderr, "rmpool: %s: %s (%s)\n", what,
			rmp_strerror(err), detail);
	else
		fprintf(stderr, "rmpool: %s: %s\n", what, rmp_strerror(err));
	rmp_client_free(c);
	exit(EXIT_FAILURE);
}

/* die -- "rmpool: MESSAGE" and exit 1, for errors outside the library. */
static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("rmpool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILURE);
}

/*
 * looks_secret -- whether s may be a secret that must not be echoed: a
 * token ("://", "rmp:"), a bare ID-SECRET or a key in hex (16 hex digits
 * in a row). Returns what to print instead, or NULL.
 */
static const char *looks_secret(const char *s)
{
	size_t run = 0;

	if (strstr(s, "://") || strstr(s, "rmp:") || strstr(s, "RMP:"))
		return "(not shown: it looks like a lease token)";
	for (; *s; s++) {
		if ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') ||
		    (*s >= 'A' && *s <= 'F'))
			run++;
		else
			run = 0;
		if (run >= 16)
			return "(not shown: it may be a secret)";
	}
	return NULL;
}

/*
 * quoted -- s as 'TEXT' for an error message; long text is cut, text
 * that may be a secret is not shown at all. The result is a static
 * buffer: one use per message.
 */
static const char *quoted(const char *s)
{
	static char buf[72];
	const char *hidden = looks_secret(s);

	if (hidden)
		return hidden;
	if (strlen(s) > sizeof(buf) - 6)
		snprintf(buf, sizeof(buf), "'%.*s...'", (int)sizeof(buf) - 7, s);
	else
		snprintf(buf, sizeof(buf), "'%s'", s);
	return buf;
}

/* quoted_option -- an option as typed, without its =VALUE. */
static const char *quoted_option(const char *a)
{
	static char buf[72];
	const char *eq = strchr(a, '=');

	if (!eq)
		return quoted(a);
	snprintf(buf, sizeof(buf), "%.*s", (int)(eq - a < 64 ? eq - a : 64), a);
	return quoted(buf);
}

/* fail_msg -- the same with our own detail text. */
static void fail_msg(struct rmp_client *c, const char *what, int err,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5), noreturn));

static void fail_msg(struct rmp_client *c, const char *what, int err,
		     const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rmpool: %s: %s (", what, rmp_strerror(err));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(")\n", stderr);
	rmp_client_free(c);
	exit(EXIT_FAILURE);
}

/* ---- number parsing (common/parse.h) ---------------------------------- */

static uint64_t arg_size(const char *what, const char *s)
{
	uint64_t v;

	if (rmp_parse_size(s, &v))
		usage_error("invalid %s %s", what, quoted(s));
	return v;
}

/* arg_value -- a 64-bit operand: unsigned, or negative (two's complement). */
static uint64_t arg_value(const char *what, const char *s)
{
	uint64_t v;
	int64_t i;

	if (*s == '-' ? rmp_parse_i64(s, &i) : rmp_parse_u64(s, &v))
		usage_error("invalid %s %s", what, quoted(s));
	return *s == '-' ? (uint64_t)i : v;
}

/* arg_ttl -- a duration in whole seconds (the wire's unit), bare = s. */
static uint32_t arg_ttl(const char *s)
{
	uint64_t ms;

	if (rmp_parse_duration_ms(s, &ms) || ms % RMP_MS_PER_S ||
	    ms / RMP_MS_PER_S > UINT32_MAX)
		usage_error("invalid ttl %s (whole seconds, e.g. 300, 90s, "
			    "5m, 1h)", quoted(s));
	return (uint32_t)(ms / RMP_MS_PER_S);
}

/* ---- argument parsing ------------------------------------------------ */

/* One option of a command: --name VALUE or --name=VALUE, or a flag. */
struct opt {
	const char *name;
	const char **value; /* NULL for a flag */
	bool *flag;
};

/*
 * parse_args -- split argv into options of opts, global options (which
 * may follow the command too) and positional arguments (at least min, at
 * most npos); returns their number. "-5" and "-" are positional, not
 * options; "--" ends the options.
 */
static bool global_option(struct cli *cli, int argc, char **argv, int *i);

static int parse_args(struct cli *cli, const char *cmd, int argc,
		      char **argv, const struct opt *opts, const char **pos,
		      int min, int npos)
{
	bool only_pos = false;
	const struct opt *o;
	const char *a, *eq;
	size_t nlen;
	int i, n = 0;

	for (i = 0; i < argc; i++) {
		a = argv[i];
		if (!only_pos && !strcmp(a, "--")) {
			only_pos = true;
			continue;
		}
		if (!only_pos && !strcmp(a, "-h"))
			a = "--help";
		if (only_pos || a[0] != '-' || !a[1] ||
		    (a[1] >= '0' && a[1] <= '9')) {
			if (n >= npos)
				usage_error("%s: unexpected argument %s", cmd,
					    quoted(a));
			pos[n++] = a;
			continue;
		}
		if (!strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			exit(EXIT_SUCCESS);
		}
		if (global_option(cli, argc, argv, &i))
			continue;
		eq = strchr(a, '=');
		nlen = eq ? (size_t)(eq - a) : strlen(a);
		for (o = opts; o && o->name; o++)
			if (strlen(o->name) == nlen && !strncmp(a, o->name, nlen))
				break;
		if (!o || !o->name)
			usage_error("%s: unknown option %s", cmd,
				    quoted_option(a));
		if (o->flag) {
			if (eq)
				usage_error("%s: option %s takes no value", cmd,
					    o->name);
			*o->flag = true;
		} else if (eq) {
			*o->value = eq + 1;
		} else if (i + 1 < argc) {
			*o->value = argv[++i];
		} else {
			usage_error("%s: option %s needs a value", cmd, o->name);
		}
	}
	if (n < min)
		usage_error("%s: missing argument%s", cmd, min - n > 1 ? "s" : "");
	return n;
}

/* split_server -- HOST, HOST:PORT, [V6]:PORT or a bare IPv6 address. */
static void split_server(const char *s, char *host, size_t hlen,
			 uint16_t *port)
{
	/* A token would pass for an IPv6 address, and be printed. */
	if (looks_secret(s) || rmp_split_server(s, host, hlen, port))
		usage_error("invalid server address %s", quoted(s));
}

/* ---- connection ------------------------------------------------------ */

/*
 * check_tenant -- a tenant needs a key file and a key file a tenant (the
 * library reads the key at connect; the CLI never sees it).
 */
static void check_tenant(const struct cli *cli)
{
	bool tenant = cli->tenant && *cli->tenant;
	bool key_file = cli->key_file && *cli->key_file;

	if (tenant && !rmp_tenant_name_ok(cli->tenant))
		usage_error("invalid tenant name %s (1 to 24 of A-Z a-z 0-9 _ . -)",
			    quoted(cli->tenant));
	if (tenant && !key_file)
		usage_error("tenant %s has no key file: give --key-file FILE or "
			    "set RMPOOL_KEY_FILE", quoted(cli->tenant));
	if (key_file && !tenant)
		usage_error("a key file needs a tenant: give --tenant NAME or "
			    "set RMPOOL_TENANT");
	/* The library names the file in its errors: not if it is a key. */
	if (key_file && looks_secret(cli->key_file) &&
	    access(cli->key_file, F_OK))
		usage_error("--key-file (or RMPOOL_KEY_FILE) takes the name of "
			    "a file holding the key, not the key itself");
}

/* cli_connect -- to -s, else to the host and port of token (if any). */
static void cli_connect(struct cli *cli, const struct rmp_token *token)
{
	struct rmp_client_opts o;
	char host[RMP_TOKEN_HOST_MAX + 1];
	uint16_t port;
	int err;

	check_tenant(cli);
	if (cli->server) {
		split_server(cli->server, host, sizeof(host), &port);
	} else if (token) {
		snprintf(host, sizeof(host), "%s", token->host);
		port = token->port;
	} else {
		usage_error("no server: give -s HOST[:PORT]");
	}
	if (!port)
		port = RMP_DEFAULT_PORT;
	snprintf(cli->where, sizeof(cli->where),
		 strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);

	rmp_client_opts_init(&o);
	o.name = cli->name;
	if (cli->timeout_ms) {
		o.connect_timeout_ms = cli->timeout_ms;
		o.op_timeout_ms = cli->timeout_ms;
	}
	if (cli->tenant && *cli->tenant) {
		o.tenant = cli->tenant;
		o.key_file = cli->key_file;
	}
	err = rmp_client_new(&cli->c, &o);
	if (err)
		fail(NULL, "client setup", err);
	/* fail() adds rmp_client_last_error(): which step failed, or why
	 * the server or the tenant's authentication refused us. */
	err = rmp_client_connect(cli->c, host, port);
	if (err) {
		char what[320];

		snprintf(what, sizeof(what), "connect to %s", cli->where);
		fail(cli->c, what, err);
	}
}

/*
 * read_token_line -- the first line of fd into token_line, without its
 * line end. Reads byte by byte so that nothing after the line is taken
 * (write - reads its data from the same standard input). Returns false
 * when the line does not fit (then it is no token).
 */
static bool read_token_line(int fd, const char *what)
{
	size_t n = 0;
	ssize_t r;
	char ch;

	for (;;) {
		r = read(fd, &ch, 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("reading the lease token from %s: %s", what,
			    strerror(errno));
		}
		if (r == 0 || ch == '\n')
			break;
		if (n + 1 >= sizeof(token_line))
			return false;
		token_line[n++] = ch;
	}
	if (n && token_line[n - 1] == '\r')
		n--;
	token_line[n] = '\0';
	return true;
}

/*
 * take_token -- the command's TOKEN, parsed into token_parsed. The
 * command has nother positional arguments besides it; n were given in
 * pos. With nother + 1 the first is the token (or "-": the first line of
 * standard input); with nother it comes from --token-file (file) or
 * $RMPOOL_TOKEN. *rest (rest may be NULL) receives the other arguments.
 * The token text is never printed: an argument is visible in ps, a
 * message in logs.
 */
static const char *take_token(const char *cmd, const char **pos, int n,
			      int nother, const char *file,
			      const char ***rest)
{
	const char *text, *from;
	char what[96];
	bool fits = true;
	int fd;

	atexit(wipe_token);
	if (n > nother) {
		if (rest)
			*rest = pos + 1;
		if (file)
			usage_error("%s: give the lease token as an argument or "
				    "with --token-file, not both", cmd);
		if (!strcmp(pos[0], "-")) {
			from = " on standard input";
			fits = read_token_line(STDIN_FILENO, "standard input");
			text = token_line;
		} else {
			from = "";
			text = pos[0];
		}
	} else {
		if (rest)
			*rest = pos;
		if (file) {
			from = " in the token file";
			fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
			if (fd < 0 && looks_secret(file))
				usage_error("%s: --token-file takes the name of a "
					    "file holding the token, not the "
					    "token itself", cmd);
			snprintf(what, sizeof(what), "token file %s",
				 quoted(file));
			if (fd < 0)
				die("%s: %s", what, strerror(errno));
			fits = read_token_line(fd, what);
			close(fd);
			text = token_line;
		} else if ((text = getenv("RMPOOL_TOKEN")) && *text) {
			from = " in $RMPOOL_TOKEN";
		} else if (!nother) {
			usage_error("%s: missing TOKEN (give it as an argument, - "
				    "for standard input, --token-file FILE, or set "
				    "RMPOOL_TOKEN)", cmd);
		} else {
			usage_error("%s: missing an argument (a TOKEN before the "
				    "%d numbers, or --token-file FILE, or "
				    "RMPOOL_TOKEN set)", cmd, nother);
		}
	}
	if (fits && !*text)
		usage_error("%s: no lease token%s (empty)", cmd, from);
	if (!fits || rmp_token_parse(text, &token_parsed))
		usage_error("malformed lease token (expected "
			    "rmp://HOST:PORT/ID-SECRET)%s", from);
	return text;
}

/*
 * attach -- connect for token (text, parsed in token_parsed) and attach
 * its lease with flags (RMP_ATTACH_*).
 */
static struct rmp_lease *attach(struct cli *cli, const char *token,
				uint32_t flags, struct rmp_lease_info *info)
{
	struct rmp_attach_opts ao;
	struct rmp_lease *l;
	int err;

	cli_connect(cli, &token_parsed);
	rmp_attach_opts_init(&ao);
	ao.flags = flags;
	err = rmp_lease_attach_with(cli->c, token, &ao, &l);
	if (err)
		fail(cli->c, "attach", err);
	if (info) {
		info->size = sizeof(*info);
		err = rmp_lease_info(l, info);
		if (err)
			fail(cli->c, "lease info", err);
	}
	return l;
}

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
				fail(cli->c, "renew", err);
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
		fail(cli->c, "free", err);
}

static int cmd_alloc(struct cli *cli, int argc, char **argv)
{
	const char *ttl_arg = NULL, *pos[1];
	bool ephemeral = false, json = false;
	const struct opt opts[] = {
		{ "--ttl", &ttl_arg, NULL },
		{ "--ephemeral", NULL, &ephemeral },
		{ "--json", NULL, &json },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease_info info;
	struct rmp_alloc_opts ao;
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_lease *l;
	uint64_t size;
	int err;

	parse_args(cli, "alloc", argc, argv, opts, pos, 1, 1);
	size = arg_size("size", pos[0]);
	if (size == 0)
		usage_error("alloc: size must be at least 1 byte");
	rmp_alloc_opts_init(&ao);
	if (ttl_arg)
		ao.ttl_s = arg_ttl(ttl_arg);
	if (ephemeral)
		ao.flags |= RMP_LEASE_EPHEMERAL;

	cli_connect(cli, NULL);
	err = rmp_lease_alloc(cli->c, size, &ao, &l);
	if (err)
		fail(cli->c, "alloc", err);
	err = rmp_lease_token(l, token, sizeof(token));
	if (err < 0)
		fail(cli->c, "token", err);
	info.size = sizeof(info);
	err = rmp_lease_info(l, &info);
	if (err)
		fail(cli->c, "lease info", err);

	if (json)
		printf("{\"token\":\"%s\",\"id\":\"%016" PRIx64 "\","
		       "\"length\":%" PRIu64 ",\"remote_addr\":\"0x%" PRIx64
		       "\",\"rkey\":%" PRIu32 ",\"ttl_ms\":%" PRIu64
		       ",\"ephemeral\":%s}\n",
		       token, info.id, info.length, info.remote_addr, info.rkey,
		       info.ttl_ms, ephemeral ? "true" : "false");
	else
		printf("%s\n", token);
	if (fflush(stdout) == EOF)
		fail_msg(cli->c, "alloc", -errno, "writing the token");

	if (ephemeral)
		hold_ephemeral(cli, l, ao.ttl_s);
	else
		rmp_lease_close(l); /* the lease stays until its deadline */
	return EXIT_SUCCESS;
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
			fail_msg(cli->c, "write", -errno, "reading standard "
				 "input: %s", strerror(errno));
		}
		got += (size_t)n;
	}
	return got;
}

static int cmd_write(struct cli *cli, int argc, char **argv)
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

	npos = parse_args(cli, "write", argc, argv, opts, pos, 0, 1);
	if (off_arg)
		off = arg_size("offset", off_arg);
	token = take_token("write", pos, npos, 0, file, NULL);
	l = attach(cli, token, exclusive ? RMP_ATTACH_EXCLUSIVE : 0, &info);
	if (off > info.length)
		fail_msg(cli->c, "write", -ERANGE, "offset %" PRIu64 " beyond "
			 "the lease's %" PRIu64 " bytes", off, info.length);
	avail = info.length - off;

	/* A file says its size: refuse before writing anything. */
	if (!fstat(STDIN_FILENO, &st) && S_ISREG(st.st_mode)) {
		cur = lseek(STDIN_FILENO, 0, SEEK_CUR);
		if (cur >= 0 && st.st_size > cur &&
		    (uint64_t)(st.st_size - cur) > avail)
			fail_msg(cli->c, "write", -ERANGE, "input of %" PRIu64
				 " bytes is longer than the lease (%" PRIu64
				 " bytes from offset %" PRIu64 ")",
				 (uint64_t)(st.st_size - cur), avail, off);
	}

	/* Buffer up to avail + 1 bytes (one more tells "too long"). */
	cap = avail < WRITE_BUF_MAX ? (size_t)avail + 1 : WRITE_BUF_MAX;
	buf = malloc(cap);
	if (!buf)
		fail(cli->c, "write", -ENOMEM);
	if (rmp_buf_reg(cli->c, buf, cap, &rb))
		rb = NULL; /* fine: then the library copies */

	for (;;) {
		n = read_full(cli, STDIN_FILENO, buf, cap);
		if (written + n > avail)
			fail_msg(cli->c, "write", -ERANGE, "input is longer than "
				 "the lease (%" PRIu64 " bytes from offset %"
				 PRIu64 ")%s", avail, off, written ?
				 "; the bytes before the excess were written" :
				 "; nothing was written");
		if (n) {
			err = rmp_write(l, off + written, buf, n);
			if (err)
				fail(cli->c, "write", err);
			written += n;
		}
		if (n < cap)
			break;
	}
	err = rmp_flush(l);
	if (err)
		fail(cli->c, "flush", err);
	rmp_buf_dereg(rb);
	free(buf);
	rmp_lease_close(l);
	return EXIT_SUCCESS;
}

static int cmd_read(struct cli *cli, int argc, char **argv)
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

	npos = parse_args(cli, "read", argc, argv, opts, pos, 0, 1);
	if (off_arg)
		off = arg_size("offset", off_arg);
	if (len_arg)
		len = arg_size("length", len_arg); /* checked before connecting */
	token = take_token("read", pos, npos, 0, file, NULL);
	l = attach(cli, token, exclusive ? RMP_ATTACH_EXCLUSIVE : 0, &info);
	if (off > info.length)
		fail_msg(cli->c, "read", -ERANGE, "offset %" PRIu64 " beyond "
			 "the lease's %" PRIu64 " bytes", off, info.length);
	if (!len_arg)
		len = info.length - off;
	if (len > info.length - off)
		fail_msg(cli->c, "read", -ERANGE, "offset %" PRIu64 " + length "
			 "%" PRIu64 " beyond the lease's %" PRIu64 " bytes",
			 off, len, info.length);

	cap = len < IO_CHUNK ? (size_t)len : IO_CHUNK;
	buf = malloc(cap ? cap : 1);
	if (!buf)
		fail(cli->c, "read", -ENOMEM);
	if (cap && rmp_buf_reg(cli->c, buf, cap, &rb))
		rb = NULL;
	for (done = 0; done < len; done += n) {
		n = len - done < cap ? (size_t)(len - done) : cap;
		err = rmp_read(l, off + done, buf, n);
		if (err)
			fail(cli->c, "read", err);
		for (w = 0; w < n; w += (size_t)r) {
			r = write(STDOUT_FILENO, buf + w, n - w);
			if (r < 0) {
				if (errno == EINTR) {
					r = 0;
					continue;
				}
				fail_msg(cli->c, "read", -errno, "writing "
					 "standard output: %s", strerror(errno));
			}
		}
	}
	rmp_buf_dereg(rb);
	free(buf);
	rmp_lease_close(l);
	return EXIT_SUCCESS;
}

/* renew and free do not attach: nobody's key changes on a renew. */
static int cmd_renew(struct cli *cli, int argc, char **argv)
{
	const char *ttl_arg = NULL, *file = NULL, *pos[1], *token;
	const struct opt opts[] = {
		{ "--ttl", &ttl_arg, NULL },
		{ "--token-file", &file, NULL },
		{ NULL, NULL, NULL },
	};
	uint32_t ttl = 0;
	int err, npos;

	npos = parse_args(cli, "renew", argc, argv, opts, pos, 0, 1);
	if (ttl_arg)
		ttl = arg_ttl(ttl_arg);
	token = take_token("renew", pos, npos, 0, file, NULL);
	cli_connect(cli, &token_parsed);
	err = rmp_lease_renew_token(cli->c, token, ttl, NULL);
	if (err)
		fail(cli->c, "renew", err);
	return EXIT_SUCCESS;
}

static int cmd_free(struct cli *cli, int argc, char **argv)
{
	const char *file = NULL, *pos[1], *token;
	const struct opt opts[] = {
		{ "--token-file", &file, NULL },
		{ NULL, NULL, NULL },
	};
	int err, npos;

	npos = parse_args(cli, "free", argc, argv, opts, pos, 0, 1);
	token = take_token("free", pos, npos, 0, file, NULL);
	cli_connect(cli, &token_parsed);
	err = rmp_lease_free_token(cli->c, token);
	if (err)
		fail(cli->c, "free", err);
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

	npos = parse_args(cli, cmd, argc, argv, opts, pos, nvals, nvals + 1);
	token = take_token(cmd, pos, npos, nvals, file, &rest);
	off = arg_size("offset", rest[0]);
	a = arg_value(cas ? "expected value" : "value to add", rest[1]);
	if (cas)
		b = arg_value("desired value", rest[2]);
	l = attach(cli, token, 0, NULL);
	err = cas ? rmp_cas(l, off, a, b, &old) : rmp_faa(l, off, a, &old);
	if (err)
		fail(cli->c, cmd, err);
	printf("%" PRIu64 "\n", old);
	rmp_lease_close(l);
	return EXIT_SUCCESS;
}

static int cmd_cas(struct cli *cli, int argc, char **argv)
{
	return atomic(cli, "cas", argc, argv);
}

static int cmd_faa(struct cli *cli, int argc, char **argv)
{
	return atomic(cli, "faa", argc, argv);
}

static int cmd_stat(struct cli *cli, int argc, char **argv)
{
	bool json = false;
	const struct opt opts[] = {
		{ "--json", NULL, &json },
		{ NULL, NULL, NULL },
	};
	struct rmp_pool_stat s;
	int err;

	parse_args(cli, "stat", argc, argv, opts, NULL, 0, 0);
	cli_connect(cli, NULL);
	s.size = sizeof(s);
	err = rmp_stat(cli->c, &s);
	if (err)
		fail(cli->c, "stat", err);
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
static int cmd_keygen(struct cli *cli, int argc, char **argv)
{
	uint8_t key[KEYGEN_BYTES];
	char hex[2 * KEYGEN_BYTES + 2];
	size_t len = sizeof(hex) - 1, done = 0;
	ssize_t r;
	int err;

	parse_args(cli, "keygen", argc, argv, NULL, NULL, 0, 0);
	err = rmp_auth_init();
	if (err)
		die("keygen: cannot initialise the random generator (libsodium)");
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
		die("keygen: writing the key: %s", strerror(err));
	return EXIT_SUCCESS;
}

struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
};

static const struct command commands[] = {
	{ "alloc", cmd_alloc }, { "write", cmd_write }, { "read", cmd_read },
	{ "renew", cmd_renew }, { "free", cmd_free },   { "cas", cmd_cas },
	{ "faa", cmd_faa },     { "stat", cmd_stat },   { "keygen", cmd_keygen },
};

/* global_opt -- "-s X", "-sX", "--server X", "--server=X"; NULL if not o. */
static const char *global_opt(int argc, char **argv, int *i, const char *sh,
			      const char *lo)
{
	const char *a = argv[*i];
	size_t n = strlen(lo);

	if (sh && !strncmp(a, sh, 2) && a[2])
		return a + 2;
	if (!strncmp(a, lo, n) && a[n] == '=')
		return a + n + 1;
	if ((sh && !strcmp(a, sh)) || !strcmp(a, lo)) {
		if (*i + 1 >= argc)
			usage_error("option %s needs a value", a);
		return argv[++*i];
	}
	return NULL;
}

/* global_option -- take argv[*i] (and its value) if it is a global option. */
static bool global_option(struct cli *cli, int argc, char **argv, int *i)
{
	const char *v;
	uint64_t ms;

	if ((v = global_opt(argc, argv, i, "-s", "--server"))) {
		cli->server = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--name"))) {
		cli->name = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--tenant"))) {
		cli->tenant = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--key-file"))) {
		cli->key_file = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--timeout"))) {
		/* a bare number has always been milliseconds here */
		if (rmp_parse_duration(v, 1, &ms) || ms == 0 || ms > INT_MAX)
			usage_error("invalid timeout %s (e.g. 500ms, 10s; a bare "
				    "number is ms)", quoted(v));
		cli->timeout_ms = (int)ms;
	} else {
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	size_t k;
	int i, rc;

	/* Defaults for --tenant and --key-file; the options override. */
	cli.tenant = getenv("RMPOOL_TENANT");
	cli.key_file = getenv("RMPOOL_KEY_FILE");
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return EXIT_SUCCESS;
		}
		if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("rmpool %s\n", rmp_version());
			return EXIT_SUCCESS;
		}
		if (!global_option(&cli, argc, argv, &i))
			usage_error("unknown option %s", quoted_option(argv[i]));
	}
	if (i >= argc)
		usage_error("no command given");
	for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (!strcmp(argv[i], commands[k].name)) {
			rc = commands[k].run(&cli, argc - i - 1, argv + i + 1);
			rmp_client_free(cli.c);
			return rc;
		}
	}
	usage_error("unknown command %s", quoted(argv[i]));
}

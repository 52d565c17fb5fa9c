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
#include "cli_int.h"
#include "parse.h"
#include "rmpool.h"
#include "token.h"

static const char usage_text[] =
	"Usage: rmpool [-s HOST[:PORT] | -C etcd://HOST:PORT[,HOST:PORT...]]\n"
	"              [--tenant NAME --key-file FILE] [--name NAME]\n"
	"              [--timeout TIME] COMMAND [ARGS]\n"
	"\n"
	"Lease memory of an rmpoold server and access it with RDMA.\n"
	"\n"
	"Commands:\n"
	"  alloc SIZE [--ttl TIME] [--ephemeral] [--spill] [--json]\n"
	"            [--prefer LABEL=VALUE] [--exclude NODE[,NODE...]]\n"
	"            [--replicas R] [--spread LABEL] [--stripes K] [--stripe-unit SIZE]\n"
	"            [--ec K+M [--ec-chunk SIZE]]\n"
	"      lease SIZE bytes; print the lease token, or with --json an object\n"
	"      {token, id, length, remote_addr, rkey, ttl_ms, ephemeral, spilled}\n"
	"      (id and remote_addr as hex strings). A lease outlives this command\n"
	"      until its ttl runs out; an --ephemeral one is held (and renewed) only\n"
	"      until standard input reaches end of file or a signal arrives. It is\n"
	"      in the pool of the server's device -s reaches; --spill lets it go to\n"
	"      another device's pool of that server when that one is full. With -C the\n"
	"      cluster places it: on a node with the label (--prefer) if one has\n"
	"      room, else the one with the most free bytes, never an excluded one.\n"
	"      --replicas 2..3 mirrors it over that many nodes (on distinct values\n"
	"      of the --spread label); --stripes 2..16 cuts it over that many\n"
	"      nodes in units of --stripe-unit (default 1M), so it may be larger\n"
	"      than any one node; --ec K+M (K 2..12, M 1..4) erasure codes it over\n"
	"      K+M nodes, any M of which may be lost, in chunks of --ec-chunk\n"
	"      (default 4K). Such a lease's token is a cluster token, rmpc://...\n"
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
	"  repair TOKEN                    (-C) new replicas for a cluster lease's\n"
	"                                  lost ones, filled from a live one\n"
	"  scrub TOKEN                     (-C) an erasure-coded lease's repair: torn\n"
	"                                  rows mended from their data members\n"
	"  info TOKEN [--json]             the lease's figures, and each member of a\n"
	"                                  cluster lease: its server, its state (live,\n"
	"                                  suspect, stale, lost, missed) and its rails\n"
	"  nodes [--json] [--check]        (-C) the cluster's nodes: address, free\n"
	"                                  and pool bytes, labels; --check connects\n"
	"                                  to each: proven, or why it is skipped\n"
	"  keygen                          print a new random tenant key (hex); store\n"
	"                                  it with chmod 600\n"
	"\n";
/* the rest (ISO C compilers need take no string literal over 4095) */
static const char usage_more[] =
	"TOKEN: rmp://HOST:PORT/ID-SECRET (rmpc://ID-SECRET of a cluster lease,\n"
	"with -C), or - (stdin), or --token-file FILE, or\n"
	"$RMPOOL_TOKEN; treat it like a password: an argument is visible to other\n"
	"users in ps. - and --token-file read the first line (write - takes its\n"
	"data after it); $RMPOOL_TOKEN is used when no TOKEN argument is given.\n"
	"--exclusive (read, write): revoke every other holder's key first (takeover).\n"
	"renew and free do not cli_attach the lease: a renew leaves every holder's key\n"
	"alone, a free revokes them all.\n"
	"\n"
	"Options (also accepted after COMMAND):\n"
	"  -s, --server HOST[:PORT]  server (default: the token's; port 7471);\n"
	"                            HOST1,HOST2[:PORT]: one node's addresses, its\n"
	"                            rails, used together (read and write over all)\n"
	"  -C, --cluster URL         a cluster's etcd, etcd://HOST:PORT[,HOST:PORT]\n"
	"                            (https:// for TLS; default: $RMPOOL_CLUSTER):\n"
	"                            alloc places the lease on one of its nodes\n"
	"      --tenant NAME         authenticate as this tenant (default:\n"
	"                            $RMPOOL_TENANT; none: anonymous)\n"
	"      --key-file FILE       the tenant's key, as hex, chmod 600 (default:\n"
	"                            $RMPOOL_KEY_FILE); read by the library, never\n"
	"                            sent. A tenant needs a key file and a key file\n"
	"                            a tenant.\n"
	"      --anonymous-cluster   let -C run with no tenant (its servers then\n"
	"                            prove nothing: any node registered in etcd\n"
	"                            gets the leases' bytes); a closed lab only\n"
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

/*
 * The lease token of the command, when it was read from a file or
 * standard input, and its parsed form: secrets, wiped at exit.
 */
static char token_line[RMP_TOKEN_MAXLEN + 2];
static struct rmp_token token_parsed;
static bool token_cluster;

static void wipe_token(void)
{
	rmp_wipe(token_line, sizeof(token_line));
	rmp_wipe(&token_parsed, sizeof(token_parsed));
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("rmpool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'rmpool --help'.\n", stderr);
	exit(EXIT_USAGE);
}

/* cli_fail -- "rmpool: WHAT: TEXT (DETAIL)" and exit 1. */
void cli_fail(struct rmp_client *c, const char *what, int err)
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

/* cli_die -- "rmpool: MESSAGE" and exit 1, for errors outside the library. */

void cli_die(const char *fmt, ...)
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

/* cli_fail_msg -- the same with our own detail text. */

void cli_fail_msg(struct rmp_client *c, const char *what, int err,
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

uint64_t cli_arg_size(const char *what, const char *s)
{
	uint64_t v;

	if (rmp_parse_size(s, &v))
		cli_usage_error("invalid %s %s", what, quoted(s));
	return v;
}

/* cli_arg_value -- a 64-bit operand: unsigned, or negative (two's complement). */
uint64_t cli_arg_value(const char *what, const char *s)
{
	uint64_t v;
	int64_t i;

	if (*s == '-' ? rmp_parse_i64(s, &i) : rmp_parse_u64(s, &v))
		cli_usage_error("invalid %s %s", what, quoted(s));
	return *s == '-' ? (uint64_t)i : v;
}

uint64_t cli_arg_count(const char *what, const char *s, uint64_t min,
		       uint64_t max)
{
	uint64_t v;

	if (rmp_parse_u64(s, &v) || v < min || v > max)
		cli_usage_error("invalid %s %s (%" PRIu64 " to %" PRIu64 ")",
				what, quoted(s), min, max);
	return v;
}

/* cli_arg_ttl -- a duration in whole seconds (the wire's unit), bare = s. */
uint32_t cli_arg_ttl(const char *s)
{
	uint64_t ms;

	if (rmp_parse_duration_ms(s, &ms) || ms % RMP_MS_PER_S ||
	    ms / RMP_MS_PER_S > UINT32_MAX)
		cli_usage_error("invalid ttl %s (whole seconds, e.g. 300, 90s, "
			    "5m, 1h)", quoted(s));
	return (uint32_t)(ms / RMP_MS_PER_S);
}

/* ---- argument parsing ------------------------------------------------ */

/*
 * cli_parse_args -- split argv into options of opts, global options (which
 * may follow the command too) and positional arguments (at least min, at
 * most npos); returns their number. "-5" and "-" are positional, not
 * options; "--" ends the options.
 */
static bool global_option(struct cli *cli, int argc, char **argv, int *i);

int cli_parse_args(struct cli *cli, const char *cmd, int argc,
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
				cli_usage_error("%s: unexpected argument %s", cmd,
					    quoted(a));
			pos[n++] = a;
			continue;
		}
		if (!strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			fputs(usage_more, stdout);
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
			cli_usage_error("%s: unknown option %s", cmd,
				    quoted_option(a));
		if (o->flag) {
			if (eq)
				cli_usage_error("%s: option %s takes no value", cmd,
					    o->name);
			*o->flag = true;
		} else if (eq) {
			*o->value = eq + 1;
		} else if (i + 1 < argc) {
			*o->value = argv[++i];
		} else {
			cli_usage_error("%s: option %s needs a value", cmd, o->name);
		}
	}
	if (n < min)
		cli_usage_error("%s: missing argument%s", cmd, min - n > 1 ? "s" : "");
	return n;
}

/* split_server -- HOST, HOST:PORT, [V6]:PORT or a bare IPv6 address. */
static void split_server(const char *s, char *host, size_t hlen,
			 uint16_t *port)
{
	/* A token would pass for an IPv6 address, and be printed. */
	if (looks_secret(s) || rmp_split_server(s, host, hlen, port))
		cli_usage_error("invalid server address %s", quoted(s));
}

/* ---- connection ------------------------------------------------------ */

/* warn_rails_down -- a rail of -s A1,A2 that did not connect is skipped
 * (the others carry its share): say which and why on stderr. */
static void warn_rails_down(struct rmp_client *c)
{
	struct rmp_rail_info ri[RMP_RAILS_MAX];
	int n;

	for (unsigned i = 0; i < RMP_RAILS_MAX; i++)
		ri[i].size = sizeof(ri[i]);
	n = rmp_client_rails(c, ri, RMP_RAILS_MAX);
	for (int i = 1; i < n && i < (int)RMP_RAILS_MAX; i++)
		if (!ri[i].up)
			fprintf(stderr, "rmpool: rail %d (%s) skipped: %s\n", i,
				ri[i].address, ri[i].why);
}

/*
 * check_tenant -- a tenant needs a key file and a key file a tenant (the
 * library reads the key at connect; the CLI never sees it).
 */
static void check_tenant(const struct cli *cli)
{
	bool tenant = cli->tenant && *cli->tenant;
	bool key_file = cli->key_file && *cli->key_file;

	if (tenant && !rmp_tenant_name_ok(cli->tenant))
		cli_usage_error("invalid tenant name %s (1 to 24 of A-Z a-z 0-9 _ . -)",
			    quoted(cli->tenant));
	if (tenant && !key_file)
		cli_usage_error("tenant %s has no key file: give --key-file FILE or "
			    "set RMPOOL_KEY_FILE", quoted(cli->tenant));
	if (key_file && !tenant)
		cli_usage_error("a key file needs a tenant: give --tenant NAME or "
			    "set RMPOOL_TENANT");
	/* The library names the file in its errors: not if it is a key. */
	if (key_file && looks_secret(cli->key_file) &&
	    access(cli->key_file, F_OK))
		cli_usage_error("--key-file (or RMPOOL_KEY_FILE) takes the name of "
			    "a file holding the key, not the key itself");
}

/* cli_client_opts -- the connection options the global options say. */
void cli_client_opts(const struct cli *cli, struct rmp_client_opts *o)
{
	check_tenant(cli);
	rmp_client_opts_init(o);
	o->name = cli->name;
	if (cli->timeout_ms) {
		o->connect_timeout_ms = cli->timeout_ms;
		o->op_timeout_ms = cli->timeout_ms;
	}
	if (cli->tenant && *cli->tenant) {
		o->tenant = cli->tenant;
		o->key_file = cli->key_file;
	}
}

/* cli_connect -- to -s, else to the host and port of token (if any). */
void cli_connect(struct cli *cli, const struct rmp_token *token)
{
	struct rmp_client_opts o;
	char host[RMP_TOKEN_HOST_MAX + 1];
	uint16_t port;
	int err;

	cli_client_opts(cli, &o);
	if (cli->server) {
		split_server(cli->server, host, sizeof(host), &port);
	} else if (token) {
		snprintf(host, sizeof(host), "%s", token->host);
		port = token->port;
	} else {
		cli_usage_error("no server: give -s HOST[:PORT] (or -C "
				"etcd://HOST:PORT for a cluster)");
	}
	if (!port)
		port = RMP_DEFAULT_PORT;
	snprintf(cli->where, sizeof(cli->where),
		 strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);

	err = rmp_client_new(&cli->c, &o);
	if (err)
		cli_fail(NULL, "client setup", err);
	/* cli_fail() adds rmp_client_last_error(): which step failed, or why
	 * the server or the tenant's authentication refused us. */
	err = rmp_client_connect(cli->c, host, port);
	if (err) {
		char what[320];

		snprintf(what, sizeof(what), "connect to %s", cli->where);
		cli_fail(cli->c, what, err);
	}
	warn_rails_down(cli->c);
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
			cli_die("reading the lease token from %s: %s", what,
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
 * cli_take_token -- the command's TOKEN, parsed into token_parsed. The
 * command has nother positional arguments besides it; n were given in
 * pos. With nother + 1 the first is the token (or "-": the first line of
 * standard input); with nother it comes from --token-file (file) or
 * $RMPOOL_TOKEN. *rest (rest may be NULL) receives the other arguments.
 * The token text is never printed: an argument is visible in ps, a
 * message in logs.
 */
const char *cli_take_token(const char *cmd, const char **pos, int n,
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
			cli_usage_error("%s: give the lease token as an argument or "
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
				cli_usage_error("%s: --token-file takes the name of a "
					    "file holding the token, not the "
					    "token itself", cmd);
			snprintf(what, sizeof(what), "token file %s",
				 quoted(file));
			if (fd < 0)
				cli_die("%s: %s", what, strerror(errno));
			fits = read_token_line(fd, what);
			close(fd);
			text = token_line;
		} else if ((text = getenv("RMPOOL_TOKEN")) && *text) {
			from = " in $RMPOOL_TOKEN";
		} else if (!nother) {
			cli_usage_error("%s: missing TOKEN (give it as an argument, - "
				    "for standard input, --token-file FILE, or set "
				    "RMPOOL_TOKEN)", cmd);
		} else {
			cli_usage_error("%s: missing an argument (a TOKEN before the "
				    "%d numbers, or --token-file FILE, or "
				    "RMPOOL_TOKEN set)", cmd, nother);
		}
	}
	if (fits && !*text)
		cli_usage_error("%s: no lease token%s (empty)", cmd, from);
	/* a cluster token is the library's to read (rmp_cluster_attach) */
	token_cluster = fits && !strncmp(text, "rmpc://", 7);
	if (token_cluster)
		return text;
	if (!fits || rmp_token_parse(text, &token_parsed))
		cli_usage_error("malformed lease token (expected "
			    "rmp://HOST:PORT/ID-SECRET, or rmpc://ID-SECRET of "
			    "a cluster lease)%s", from);
	return text;
}

bool cli_token_is_cluster(void)
{
	return token_cluster;
}

/*
 * cli_attach -- connect for token (text, parsed in token_parsed) and cli_attach
 * its lease with flags (RMP_ATTACH_*).
 */
struct rmp_lease *cli_attach(struct cli *cli, const char *token,
				uint32_t flags, struct rmp_lease_info *info)
{
	struct rmp_attach_opts ao;
	struct rmp_lease *l;
	int err;

	rmp_attach_opts_init(&ao);
	ao.flags = flags;
	cli_connect(cli, &token_parsed);
	err = rmp_lease_attach_with(cli->c, token, &ao, &l);
	if (err)
		cli_fail(cli->c, "cli_attach", err);
	if (info) {
		info->size = sizeof(*info);
		err = rmp_lease_info(l, info);
		if (err)
			cli_fail(cli->c, "lease info", err);
	}
	return l;
}

/* cli_connect_for_token -- connect to the server of the command's TOKEN
 * (cli_take_token parsed it). */
void cli_connect_for_token(struct cli *cli)
{
	cli_connect(cli, &token_parsed);
}

struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
};

static const struct command commands[] = {
	{ "alloc", cmd_alloc }, { "write", cmd_write }, { "read", cmd_read },
	{ "renew", cmd_renew }, { "free", cmd_free },   { "cas", cmd_cas },
	{ "faa", cmd_faa },     { "stat", cmd_stat },   { "keygen", cmd_keygen },
	{ "nodes", cmd_nodes }, { "repair", cmd_repair }, { "info", cmd_info },
	{ "scrub", cmd_scrub },
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
			cli_usage_error("option %s needs a value", a);
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
	} else if ((v = global_opt(argc, argv, i, "-C", "--cluster"))) {
		cli->cluster = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--name"))) {
		cli->name = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--tenant"))) {
		cli->tenant = v;
	} else if ((v = global_opt(argc, argv, i, NULL, "--key-file"))) {
		cli->key_file = v;
	} else if (!strcmp(argv[*i], "--anonymous-cluster")) {
		cli->anonymous_cluster = true;
	} else if ((v = global_opt(argc, argv, i, NULL, "--timeout"))) {
		/* a bare number has always been milliseconds here */
		if (rmp_parse_duration(v, 1, &ms) || ms == 0 || ms > INT_MAX)
			cli_usage_error("invalid timeout %s (e.g. 500ms, 10s; a bare "
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
	cli.cluster = getenv("RMPOOL_CLUSTER");
	if (cli.cluster && !*cli.cluster)
		cli.cluster = NULL;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			fputs(usage_more, stdout);
			return EXIT_SUCCESS;
		}
		if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("rmpool %s\n", rmp_version());
			return EXIT_SUCCESS;
		}
		if (!global_option(&cli, argc, argv, &i))
			cli_usage_error("unknown option %s", quoted_option(argv[i]));
	}
	if (i >= argc)
		cli_usage_error("no command given");
	for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (!strcmp(argv[i], commands[k].name)) {
			rc = commands[k].run(&cli, argc - i - 1, argv + i + 1);
			rmp_client_free(cli.c);
			rmp_cluster_close(cli.cl);
			return rc;
		}
	}
	cli_usage_error("unknown command %s", quoted(argv[i]));
}

/* SPDX-License-Identifier: MIT */
/* rmpoolctl.c -- the operator's tool: rmpoold's admin socket from a shell. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "admin.h"
#include "parse.h"

/* How long rmpoold may take to answer (a reload reads files). */
#define REPLY_TIMEOUT_S 60

static const char usage_text[] =
	"usage: rmpoolctl [-s PATH] [--json] COMMAND [ARGS]\n"
	"\n"
	"Commands:\n"
	"  status                       the daemon at a glance\n"
	"  leases [--tenant T] [--client C] [--expiring-within D]\n"
	"                               the leases, or those of tenant T, of\n"
	"                               client C (#N or a name), or ending\n"
	"                               within D (30s, 5m, ...)\n"
	"  show ID                      one lease: holders, range, deadline\n"
	"  revoke ID                    end a lease now (its keys stop at once)\n"
	"  extend ID TTL                its deadline becomes now + TTL\n"
	"  clients                      the connected clients\n"
	"  disconnect CLIENT            close a client's connection (#N or a\n"
	"                               name)\n"
	"  drain                        no new leases; existing ones keep working\n"
	"  undrain                      new leases again\n"
	"  reload                       read rmpoold.conf again\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH            the admin socket (default "
	"$RMPOOL_ADMIN_SOCKET,\n"
	"                               else " RMP_ADMIN_SOCKET_DEFAULT ")\n"
	"      --json                   JSON output: bytes, milliseconds, unix "
	"seconds\n"
	"  -h, --help                   this text\n"
	"  -V, --version                the version\n"
	"\n"
	"Lease ids are 16 hex digits as `rmpoolctl leases` shows them. Exit "
	"status:\n"
	"0 ok, 1 error, 2 usage.\n";

static const char *prog = "rmpoolctl";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));
/* die -- "rmpoolctl: message" on stderr, exit 1. */
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* usage_error -- a bad command line: say what, point at --help, exit 2. */
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see rmpoolctl --help)\n");
	exit(2);
}

/* ------------------------------------------------------- formatting */

/* human_size -- 4096 -> "4K", 1610612736 -> "1.5G". */
static const char *human_size(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, len, "%" PRIu64, b);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (v >= 99.95 || (double)(uint64_t)v == v)
		snprintf(buf, len, "%.0f%c", v, units[u]);
	else
		snprintf(buf, len, "%.1f%c", v, units[u]);
	return buf;
}

/* human_ms -- 1500 -> "1s", 90000 -> "1m30s", 600000 -> "10m",
 * 93784000 -> "1d02h". */
static const char *human_ms(uint64_t ms, char *buf, size_t len)
{
	uint64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, len, "%" PRIu64 "ms", ms);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600 && s % 60 == 0)
		snprintf(buf, len, "%" PRIu64 "m", s / 60);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60,
			 s % 60);
	else if (s < 86400 && s / 60 % 60 == 0)
		snprintf(buf, len, "%" PRIu64 "h", s / 3600);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	else if (s / 3600 % 24 == 0)
		snprintf(buf, len, "%" PRIu64 "d", s / 86400);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
			 s / 3600 % 24);
	return buf;
}

/* human_time -- unix seconds as local "2024-12-01 11:25:03". */
static const char *human_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%" PRId64, t);
	return buf;
}

/* ------------------------------------------------------ JSON fields */

static json_object *jget(json_object *o, const char *k)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v = jget(o, k);

	return v && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : "";
}

static uint64_t ju64(json_object *o, const char *k)
{
	json_object *v = jget(o, k);

	return v && json_object_is_type(v, json_type_int) ?
	       json_object_get_uint64(v) : 0;
}

static int64_t ji64(json_object *o, const char *k)
{
	json_object *v = jget(o, k);

	return v && json_object_is_type(v, json_type_int) ?
	       json_object_get_int64(v) : 0;
}

static bool jbool(json_object *o, const char *k)
{
	json_object *v = jget(o, k);

	return v && json_object_get_boolean(v);
}

/* jaccess -- ["read", "write", "atomic"] as "rwa", "r--", ... */
static const char *jaccess(json_object *o, const char *k, char buf[4])
{
	json_object *a = jget(o, k);

	memcpy(buf, "---", 4);
	for (size_t i = 0; a && json_object_is_type(a, json_type_array) &&
	     i < json_object_array_length(a); i++) {
		const char *s = json_object_get_string(
			json_object_array_get_idx(a, i));

		if (!s)
			continue;
		if (!strcmp(s, "read"))
			buf[0] = 'r';
		else if (!strcmp(s, "write"))
			buf[1] = 'w';
		else if (!strcmp(s, "atomic"))
			buf[2] = 'a';
	}
	return buf;
}

/* ---------------------------------------------------- the connection */

struct admin {
	const char *path;
	int fd;
	FILE *in;
	char *line;
	size_t cap;
};

/* why_denied -- who may use the socket, from its owner group and mode. */
static void die_denied(const char *path)
{
	struct stat st;
	struct group *gr;

	if (stat(path, &st))
		die("cannot connect to %s: %s (only root and the daemon's "
		    "admin_group may use it)", path, strerror(EACCES));
	gr = getgrgid(st.st_gid);
	if (st.st_mode & S_IRWXG)
		die("permission denied on %s: only root and members of group "
		    "%s may use it (ask to be added to %s, or run as root)",
		    path, gr ? gr->gr_name : "?", gr ? gr->gr_name : "it");
	die("permission denied on %s: only root may use it (admin_group in "
	    "rmpoold.conf can let a group in)", path);
}

static void admin_connect(struct admin *ad)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const struct timeval tv = { REPLY_TIMEOUT_S, 0 };

	if (strlen(ad->path) >= sizeof(sun.sun_path))
		usage_error("socket path too long: %s", ad->path);
	memcpy(sun.sun_path, ad->path, strlen(ad->path) + 1);
	ad->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ad->fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(ad->fd, (struct sockaddr *)&sun, sizeof(sun))) {
		if (errno == EACCES || errno == EPERM)
			die_denied(ad->path);
		die("cannot connect to %s: %s (is rmpoold running? see "
		    "admin_socket in rmpoold.conf)", ad->path, strerror(errno));
	}
	setsockopt(ad->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(ad->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	ad->in = fdopen(ad->fd, "r");
	if (!ad->in)
		die("fdopen: %s", strerror(errno));
}

/* admin_send -- req as one line. A failure is not fatal yet: rmpoold
 * may have refused us with a reply that waits to be read. */
static void admin_send(struct admin *ad, json_object *req)
{
	size_t len, done = 0;
	const char *s = json_object_to_json_string_length(req,
		JSON_C_TO_STRING_PLAIN, &len);
	char *buf;

	if (!s)
		die("out of memory");
	buf = malloc(len + 1);
	if (!buf)
		die("out of memory");
	memcpy(buf, s, len);
	buf[len++] = '\n';
	while (done < len) {
		ssize_t n = send(ad->fd, buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	free(buf);
}

/* admin_line -- the next reply line, parsed; exits on a failure. */
static json_object *admin_line(struct admin *ad, const char **raw)
{
	enum json_tokener_error jerr;
	json_object *o;
	ssize_t n;

	errno = 0;
	n = getline(&ad->line, &ad->cap, ad->in);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			die("no reply from rmpoold within %d s", REPLY_TIMEOUT_S);
		if (errno)
			die("reading the reply from %s: %s", ad->path,
			    strerror(errno));
		die("rmpoold closed the connection without a reply");
	}
	while (n > 0 && (ad->line[n - 1] == '\n' || ad->line[n - 1] == '\r'))
		ad->line[--n] = '\0';
	o = json_tokener_parse_verbose(ad->line, &jerr);
	if (!o || !json_object_is_type(o, json_type_object))
		die("a reply from rmpoold that is not a JSON object (%s): is "
		    "%s rmpoold's admin socket?", o ? "wrong type" :
		    json_tokener_error_desc(jerr), ad->path);
	if (raw)
		*raw = ad->line;
	return o;
}

/* check_ok -- a reply with "ok": false ends the program with its error. */
static void check_ok(json_object *rep)
{
	if (jbool(rep, "ok"))
		return;
	die("%s", jget(rep, "error") ? jstr(rep, "error") :
	    "rmpoold refused the request without saying why");
}

/* -------------------------------------------------------- commands */

struct cmd_args {
	bool json;
	const char *tenant, *client, *expiring;
	char **pos;  /* positional arguments after the command */
	int npos;
};

/* print_cluster -- the membership line(s) of status. */
static void print_cluster(json_object *cl)
{
	int64_t now = (int64_t)time(NULL), ka = ji64(cl, "last_keepalive");
	char a[32], b[32];

	if (!cl || !strcmp(jstr(cl, "state"), "off")) {
		printf("cluster       none (no [cluster] etcd)\n");
		return;
	}
	printf("cluster       node %s: %s%s%s%s\n", jstr(cl, "node"),
	       jstr(cl, "state"), ka ? ", last keep-alive " : "",
	       ka ? human_ms((uint64_t)(now > ka ? now - ka : 0) * 1000, a,
			     sizeof(a)) : "", ka ? " ago" : "");
	if (jstr(cl, "last_error")[0])
		printf("etcd error    %s (%s; %" PRIu64 " error(s), %" PRIu64
		       " outage(s))\n", jstr(cl, "last_error"),
		       human_time(ji64(cl, "last_error_at"), b, sizeof(b)),
		       ju64(cl, "errors"), ju64(cl, "outages"));
}

/* print_devices -- a line per device served: its pool, where it is. */
static void print_devices(json_object *devs)
{
	char a[32], b[32];
	size_t n = devs ? json_object_array_length(devs) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *d = json_object_array_get_idx(devs, i);

		printf("device        %s port %" PRIu64 ", NUMA node %" PRId64
		       ": pool %s, %s free, %" PRIu64 " lease(s), %" PRIu64
		       " client(s)\n", jstr(d, "name"), ju64(d, "port"),
		       ji64(d, "numa_node"),
		       human_size(ju64(d, "pool_bytes"), a, sizeof(a)),
		       human_size(ju64(d, "free_bytes"), b, sizeof(b)),
		       ju64(d, "leases"), ju64(d, "clients"));
	}
}

static void print_status(json_object *r)
{
	json_object *devs = jget(r, "devices");
	char a[32], b[32], c[32];

	printf("version       %s\n", jstr(r, "version"));
	printf("uptime        %s (since %s)\n",
	       human_ms(ju64(r, "uptime_ms"), a, sizeof(a)),
	       human_time(ji64(r, "started"), b, sizeof(b)));
	printf("listening on  %s port %" PRIu64 "\n", jstr(r, "listen"),
	       ju64(r, "port"));
	print_devices(devs);
	printf("pool          %s, %s free, largest free extent %s%s\n",
	       human_size(ju64(r, "pool_bytes"), a, sizeof(a)),
	       human_size(ju64(r, "free_bytes"), b, sizeof(b)),
	       human_size(ju64(r, "largest_free"), c, sizeof(c)),
	       devs && json_object_array_length(devs) > 1 ?
	       " (all devices)" : "");
	printf("quarantined   %s in %" PRIu64 " lease(s)\n",
	       human_size(ju64(r, "quarantined_bytes"), a, sizeof(a)),
	       ju64(r, "quarantined_leases"));
	printf("zeroing       %s\n",
	       human_size(ju64(r, "zeroing_bytes"), a, sizeof(a)));
	printf("hugepages     %s\n", ju64(r, "hugepage_size") ?
	       human_size(ju64(r, "hugepage_size"), a, sizeof(a)) :
	       "none (normal pages)");
	printf("key mode      %s\n", jstr(r, "keys_mode"));
	if (jbool(r, "persistent"))
		printf("restart       keeps leases: journal %" PRIu64
		       " records used, %" PRIu64 " free, %" PRIu64
		       " lease(s) recovered at start\n",
		       ju64(r, "journal_records"),
		       ju64(r, "journal_capacity") - ju64(r, "journal_records"),
		       ju64(r, "recovered_leases"));
	else
		printf("restart       ends every lease (no [pool] state_dir)\n");
	printf("clients       %" PRIu64 "\n", ju64(r, "clients"));
	printf("leases        %" PRIu64 " of %" PRIu64 " (max_leases), %s, %"
	       PRIu64 " key(s)\n", ju64(r, "leases"), ju64(r, "max_leases"),
	       human_size(ju64(r, "leased_bytes"), a, sizeof(a)),
	       ju64(r, "keys"));
	printf("state         %s\n", jbool(r, "stopping") ?
	       "stopping: draining until the clients are gone" :
	       jbool(r, "draining") ? "drained: no new leases (rmpoolctl "
	       "undrain takes them again)" : "serving");
	print_cluster(jget(r, "cluster"));
}

/* lease_flags -- "auto-renew", "ephemeral", or "-". */
static const char *lease_flags(json_object *l)
{
	bool ar = jbool(l, "auto_renew"), ep = jbool(l, "ephemeral");

	return ar && ep ? "auto-renew,ephemeral" : ar ? "auto-renew" :
	       ep ? "ephemeral" : "-";
}

static void print_lease_row(json_object *l)
{
	char sz[32], left[32];

	printf("%-16s  %-12s %-16s %7s %4" PRIu64 "  %-11s %10s  %s\n",
	       jstr(l, "id"), jstr(l, "tenant"), jstr(l, "owner"),
	       human_size(ju64(l, "bytes"), sz, sizeof(sz)), ju64(l, "keys"),
	       jstr(l, "state"), human_ms(ju64(l, "ttl_left_ms"), left,
					  sizeof(left)), lease_flags(l));
}

static void print_lease(json_object *l)
{
	char a[32], b[32], acc[4];
	json_object *hs = jget(l, "holders");
	size_t n = hs && json_object_is_type(hs, json_type_array) ?
		   json_object_array_length(hs) : 0;

	printf("lease         %s\n", jstr(l, "id"));
	printf("tenant        %s\n", jstr(l, "tenant"));
	printf("owner         %s (the client that allocated it)\n",
	       jstr(l, "owner"));
	printf("state         %s\n", jstr(l, "state"));
	printf("size          %s (%" PRIu64 " bytes)\n",
	       human_size(ju64(l, "bytes"), a, sizeof(a)), ju64(l, "bytes"));
	printf("address       %#" PRIx64 " - %#" PRIx64 " (pool offset %#"
	       PRIx64 ")\n", ju64(l, "addr"), ju64(l, "end"),
	       ju64(l, "offset"));
	printf("access        %s\n", jaccess(l, "access", acc));
	printf("key mode      %s\n", jstr(l, "keys_mode"));
	printf("deadline      %s (in %s)\n",
	       human_time(ji64(l, "deadline"), a, sizeof(a)),
	       human_ms(ju64(l, "ttl_left_ms"), b, sizeof(b)));
	printf("ttl           %s, auto-renew %s, ephemeral %s\n",
	       human_ms(ju64(l, "ttl_ms"), a, sizeof(a)),
	       jbool(l, "auto_renew") ? "yes" : "no",
	       jbool(l, "ephemeral") ? "yes" : "no");
	printf("age           %s (since %s)\n",
	       human_ms(ju64(l, "age_ms"), a, sizeof(a)),
	       human_time(ji64(l, "created"), b, sizeof(b)));
	printf("holders       %zu\n", n);
	if (!n)
		return;
	printf("  %-7s %-20s %-24s %-6s %s\n", "CLIENT", "NAME", "PEER",
	       "ACCESS", "KEY");
	for (size_t i = 0; i < n; i++) {
		json_object *h = json_object_array_get_idx(hs, i);

		snprintf(a, sizeof(a), "#%" PRIu64, ju64(h, "client"));
		printf("  %-7s %-20s %-24s %-6s %s%s\n", a, jstr(h, "name"),
		       jstr(h, "peer"), jaccess(h, "access", acc),
		       jstr(h, "key"), jbool(h, "owner") ? " (owner)" : "");
	}
}

static void print_clients(json_object *r)
{
	json_object *cs = jget(r, "clients");
	size_t n = cs && json_object_is_type(cs, json_type_array) ?
		   json_object_array_length(cs) : 0;
	char id[24], age[32], sz[32];

	if (!n) {
		printf("no clients\n");
		return;
	}
	printf("%-7s %-20s %-12s %-24s %9s %6s %7s %8s %6s\n", "CLIENT",
	       "NAME", "TENANT", "PEER", "CONNECTED", "LEASES", "BYTES",
	       "REQUESTS", "ERRORS");
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(cs, i);

		snprintf(id, sizeof(id), "#%" PRIu64, ju64(c, "client"));
		printf("%-7s %-20s %-12s %-24s %9s %6" PRIu64 " %7s %8" PRIu64
		       " %6" PRIu64 "\n", id, jstr(c, "name"),
		       jstr(c, "tenant"), jstr(c, "peer"),
		       human_ms(ju64(c, "connected_ms"), age, sizeof(age)),
		       ju64(c, "leases"),
		       human_size(ju64(c, "bytes"), sz, sizeof(sz)),
		       ju64(c, "requests"), ju64(c, "errors"));
	}
}

/*
 * run_leases -- the reply is a stream: a header line, one line per
 * lease, an end line. Each lease is printed as it comes: memory stays
 * small whatever the count.
 */
static int run_leases(struct admin *ad, const struct cmd_args *a)
{
	json_object *rep = admin_line(ad, NULL), *l;
	uint64_t count = 0;
	bool first = true;

	check_ok(rep);
	if (strcmp(jstr(rep, "stream"), "leases"))
		die("rmpoold sent no leases stream: is it the same version "
		    "as rmpoolctl?");
	json_object_put(rep);
	if (a->json)
		fputs("{\"ok\":true,\"leases\":[", stdout);
	for (;;) {
		rep = admin_line(ad, NULL);
		if (jget(rep, "end")) {
			check_ok(rep);
			count = ju64(rep, "count");
			json_object_put(rep);
			break;
		}
		l = jget(rep, "lease");
		if (!l || !json_object_is_type(l, json_type_object))
			die("a line of the leases stream is not a lease");
		if (a->json) {
			printf("%s%s", first ? "" : ",",
			       json_object_to_json_string_ext(l,
					JSON_C_TO_STRING_PLAIN |
					JSON_C_TO_STRING_NOSLASHESCAPE));
		} else {
			if (first)
				printf("%-16s  %-12s %-16s %7s %4s  %-11s "
				       "%10s  %s\n", "ID", "TENANT", "OWNER",
				       "SIZE", "KEYS", "STATE", "EXPIRES IN",
				       "FLAGS");
			print_lease_row(l);
		}
		first = false;
		json_object_put(rep);
	}
	if (a->json)
		printf("],\"count\":%" PRIu64 "}\n", count);
	else if (first)
		printf("no leases\n");
	return 0;
}

/* parse_id -- a lease id: 1 to 16 hex digits (0x allowed), as 16. */
static void parse_id(const char *s, char out[17])
{
	uint64_t id;
	size_t n;

	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		s += 2;
	n = strlen(s);
	if (n == 0 || n > 16 || rmp_parse_hex_fixed(s, (unsigned)n, &id))
		usage_error("not a lease id: %s (16 hex digits, as rmpoolctl "
			    "leases shows them)", s);
	snprintf(out, 17, "%016" PRIx64, id);
}

static uint64_t parse_ms(const char *what, const char *s)
{
	uint64_t ms;

	if (rmp_parse_duration_ms(s, &ms))
		usage_error("%s: not a duration: %s (e.g. 30s, 5m, 2h)", what,
			    s);
	return ms;
}

static const struct {
	const char *name;
	int npos;             /* positional arguments it takes */
	const char *args;     /* for messages */
} commands[] = {
	{ "status", 0, "" },      { "leases", 0, "" },
	{ "show", 1, "ID" },      { "revoke", 1, "ID" },
	{ "extend", 2, "ID TTL" }, { "clients", 0, "" },
	{ "disconnect", 1, "CLIENT" }, { "drain", 0, "" },
	{ "undrain", 0, "" },     { "reload", 0, "" },
};

/* build -- the request for cmd, its arguments checked. */
static json_object *build(const char *cmd, const struct cmd_args *a)
{
	json_object *req = json_object_new_object();
	char id[17];
	size_t i;

	if (!req)
		die("out of memory");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name))
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		usage_error("unknown command %s", cmd);
	if (a->npos != commands[i].npos)
		usage_error("%s takes %s%s", cmd, commands[i].npos ?
			    commands[i].args : "no arguments",
			    a->npos > commands[i].npos ? ", no more" : "");
	if (strcmp(cmd, "leases") && (a->tenant || a->client || a->expiring))
		usage_error("--tenant, --client and --expiring-within are "
			    "for leases only");
	json_object_object_add(req, "command", json_object_new_string(cmd));
	if (!strcmp(cmd, "leases")) {
		if (a->tenant)
			json_object_object_add(req, "tenant",
				json_object_new_string(a->tenant));
		if (a->client)
			json_object_object_add(req, "client",
				json_object_new_string(a->client));
		if (a->expiring)
			json_object_object_add(req, "expiring_within_ms",
				json_object_new_uint64(parse_ms(
					"--expiring-within", a->expiring)));
	} else if (!strcmp(cmd, "show") || !strcmp(cmd, "revoke") ||
		   !strcmp(cmd, "extend")) {
		parse_id(a->pos[0], id);
		json_object_object_add(req, "id", json_object_new_string(id));
		if (!strcmp(cmd, "extend"))
			json_object_object_add(req, "ttl_ms",
				json_object_new_uint64(parse_ms("TTL",
								a->pos[1])));
	} else if (!strcmp(cmd, "disconnect")) {
		json_object_object_add(req, "client",
				       json_object_new_string(a->pos[0]));
	}
	return req;
}

/* report -- the one-line reply of cmd, for people. */
static void report(const char *cmd, json_object *r)
{
	json_object *x;
	char a[32], b[32];

	if (!strcmp(cmd, "status")) {
		print_status(r);
	} else if (!strcmp(cmd, "show")) {
		print_lease(jget(r, "lease"));
	} else if (!strcmp(cmd, "clients")) {
		print_clients(r);
	} else if (!strcmp(cmd, "revoke")) {
		printf("lease %s revoked: its keys stop working now; its "
		       "bytes are zeroed before reuse\n", jstr(r, "id"));
	} else if (!strcmp(cmd, "extend")) {
		x = jget(r, "lease");
		printf("lease %s now ends at %s (in %s)\n", jstr(x, "id"),
		       human_time(ji64(x, "deadline"), a, sizeof(a)),
		       human_ms(ju64(x, "ttl_left_ms"), b, sizeof(b)));
	} else if (!strcmp(cmd, "disconnect")) {
		x = jget(r, "client");
		printf("client #%" PRIu64 " (%s, %s) disconnected\n",
		       ju64(x, "client"), jstr(x, "name"), jstr(x, "peer"));
	} else if (!strcmp(cmd, "drain")) {
		printf("drained: no new leases; existing leases keep working "
		       "(rmpoolctl undrain ends it)\n");
	} else if (!strcmp(cmd, "undrain")) {
		printf("taking new leases again\n");
	} else if (!strcmp(cmd, "reload")) {
		printf("reloaded: %s\n", jstr(r, "message"));
	}
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_TENANT, OPT_CLIENT, OPT_EXPIRING };
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "tenant", required_argument, NULL, OPT_TENANT },
		{ "client", required_argument, NULL, OPT_CLIENT },
		{ "expiring-within", required_argument, NULL, OPT_EXPIRING },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_args a = { 0 };
	struct admin ad = { .fd = -1 };
	const char *cmd, *raw;
	json_object *req, *rep;
	int c;

	ad.path = getenv("RMPOOL_ADMIN_SOCKET");
	if (!ad.path || !*ad.path)
		ad.path = RMP_ADMIN_SOCKET_DEFAULT;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			ad.path = optarg;
			break;
		case OPT_JSON:
			a.json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("rmpoolctl %s\n", RMP_VERSION);
			return 0;
		case OPT_TENANT:
			a.tenant = optarg;
			break;
		case OPT_CLIENT:
			a.client = optarg;
			break;
		case OPT_EXPIRING:
			a.expiring = optarg;
			break;
		case ':':
			usage_error("option %s needs a value",
				    argv[optind - 1]);
		default:
			if (optopt > 0 && optopt < 256)
				usage_error("unknown option -%c", optopt);
			usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		usage_error("no command given");
	cmd = argv[optind];
	a.pos = argv + optind + 1;
	a.npos = argc - optind - 1;
	req = build(cmd, &a);

	admin_connect(&ad);
	admin_send(&ad, req);
	json_object_put(req);
	if (!strcmp(cmd, "leases")) {
		c = run_leases(&ad, &a);
	} else {
		rep = admin_line(&ad, &raw);
		check_ok(rep);
		if (a.json)
			printf("%s\n", raw);
		else
			report(cmd, rep);
		json_object_put(rep);
		c = 0;
	}
	free(ad.line);
	fclose(ad.in);
	if (fflush(stdout) || ferror(stdout))
		die("writing the output: %s", strerror(errno));
	return c;
}

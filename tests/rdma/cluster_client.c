/* SPDX-License-Identifier: MIT */
/*
 * cluster_client.c -- rmp-cluster: librmpool's cluster calls driven the
 * way the cluster tests need, one scenario per subcommand.
 *
 *   rmp-cluster spread URL COUNT SIZE
 *       COUNT single-replica leases of SIZE through one cluster handle;
 *       prints "node NAME COUNT" for every node that got one, then frees
 *       them.
 *   rmp-cluster mirror URL SIZE LABEL
 *       a lease of two replicas on distinct values of LABEL, written with
 *       a pattern and read back; prints "replica I TOKEN" for each, then
 *       "ready", then reads 4 KiB every millisecond (checking every byte)
 *       until the second line or the end of standard input; from the
 *       first line ("killed") on it also looks every 50 ms whether
 *       replica 0's node has left the membership. Then it writes a new
 *       pattern, reads it back and prints "reads N errors E mismatches M
 *       live L of R gone_ms G" (G: from the first line to the node's
 *       leaving, -1 if it did not) and "after_killed A slowest_ms S" (A:
 *       reads from the first line on; S: the longest read of the loop,
 *       a failover's wait) before freeing the lease.
 *   rmp-cluster mirror URL SIZE LABEL repair
 *       the same, and also: prints "token TOKEN" (the cluster token)
 *       before "ready"; after the second line it prints "written" and
 *       goes on reading and writing: each turn reads 4 KiB (checked)
 *       and writes a new pattern over the next 4 KiB block, until the
 *       third line (the test repairs the lease meanwhile). Then it
 *       prints "during reads N writes W errors E mismatches M slowest_ms
 *       S" (S: the longest turn, the wait for the repair), one line
 *       "member I NODE differing D" for each member the record names
 *       now (each read through a handle of its own: D bytes differ from
 *       what was written) and "live L of R" (of the reader's handle); frees the lease and prints "record gone" when
 *       attaching the token then fails with -ENOENT.
 *   rmp-cluster stripe URL SIZE STRIPES REPLICAS [UNIT]
 *       a striped lease (UNIT default 1M) of SIZE bytes; prints "stripe
 *       I replica J node NAME" for each member, writes a pattern over it
 *       in uneven calls (1.5 units, odd sizes across unit boundaries),
 *       reads it back in other uneven calls through the bounce buffers
 *       and again into a buffer registered with every member's
 *       connection (zero copy), checks every byte, prints "ok SIZE" and
 *       frees the lease.
 *   rmp-cluster seq URL TOKEN MS
 *       attach the cluster lease of TOKEN and write sequence numbers:
 *       write N puts 4 KiB of "seq N" text in block N modulo the
 *       lease's blocks and, once rmp_write returned 0, prints "acked N"
 *       (flushed); a write that fails prints "error N TEXT" and the next
 *       number is tried. Every MS ms, until standard input has a line or
 *       ends; then it prints "last N acked A errors E" and closes the
 *       handle.
 *   rmp-cluster seqcheck URL TOKEN
 *       reads the "acked N" lines of seq on standard input and the whole
 *       lease of TOKEN (attached anew): prints "lost N" for each acked N
 *       whose block holds an older number (or none), then "checked C
 *       lost L"; exit 1 when L > 0.
 *   rmp-cluster flap URL SIZE LABEL [ec]
 *       two or three leases of SIZE, members on distinct values of
 *       LABEL: a mirrored one (2 replicas), a striped and mirrored one
 *       (2 x 2, 1 MiB units) and with "ec" an erasure-coded one (2+1,
 *       4 KiB chunks);
 *       prints "ready", then in turns writes 1 MiB of a
 *       new pattern into one block of each and reads another block of
 *       each back (checking every byte against what was written), and
 *       every fourth turn renews each (ttl 300 s), until
 *       a line "done" on standard input (the test takes a link down and
 *       up meanwhile; a line "down MS" before says when the link went
 *       down, in CLOCK_REALTIME ms; a line "settle MS" ends the loop
 *       once every member of both is live, or MS later). Then it prints
 *       "ops N errors E
 *       mismatches M slowest_ms S" (S: the longest call), "first_error
 *       TEXT" when E > 0, "after_down_ms A" after a "down" line (A: from
 *       the link down to the end of the first call begun after it),
 *       "settled_ms T" after a "settle" line (T: from it to every member
 *       live; -1: not within MS), and for each lease "lease
 *       mirror|stripe|ec moved M" (M: members the record names anew
 *       since the lease was made), "lease ... stale_seen 0|1" (1: a
 *       member was stale after some turn), "lease ... live L of R" (of
 *       ec: its members) and "lease ... whole W stripes_differing D" (W:
 *       bytes of a read of the whole lease that differ from what was
 *       written; D: stripes whose replicas, each read through a handle
 *       of its own, differ; not of ec); then frees the first two, and prints
 *       "lease ec token TOKEN" and leaves that one to the test (which
 *       checks its members against its code: rmp-eccheck code).
 *   rmp-cluster revive URL SIZE LABEL
 *       a mirrored lease of SIZE (2 replicas on distinct values of
 *       LABEL), written; prints "member J PORT" for each replica (its
 *       server's port) and "ready", then reads 1 MiB blocks back
 *       (checking every byte) until a line on standard input (the test
 *       kills and restarts a replica's daemon meanwhile), and prints
 *       what flap prints for it ("ops ...", "lease mirror live ...",
 *       "lease mirror whole ...").
 *   rmp-cluster members URL TOKEN
 *       the member tokens of TOKEN's cluster lease, one a line, in the
 *       record's order (replica j of stripe s at s * replicas + j)
 *
 * The tenant and key come from RMPOOL_TENANT and RMPOOL_KEY_FILE, as for
 * the rmpool command. Exit 0 when every call a scenario expects to work
 * did; 1 with a message otherwise (the counts of mirror are judged by
 * the test that reads them).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmpool.h"

static struct rmp_cluster *cl;

static void fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rmp-cluster: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (%s)\n", rmp_cluster_last_error(cl));
	exit(1);
}

/* pattern -- byte off of the pattern of seed. */
static uint8_t pattern(uint32_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull ^ seed;

	return (uint8_t)(x >> 29);
}

static void open_cluster(const char *url)
{
	struct rmp_cluster_opts co;
	struct rmp_client_opts o;
	const char *tenant = getenv("RMPOOL_TENANT");
	int err;

	rmp_client_opts_init(&o);
	if (tenant && *tenant) {
		o.tenant = tenant;
		o.key_file = getenv("RMPOOL_KEY_FILE");
	}
	rmp_cluster_opts_init(&co);
	co.client = &o;
	err = rmp_cluster_open(&cl, url, &co);
	if (err)
		fail("rmp_cluster_open: %s", rmp_strerror(err));
}

/* attach_token -- the cluster of url opened and the lease of token
 * attached (a failure ends the process). */
static struct rmp_lease *attach_token(const char *url, const char *token)
{
	struct rmp_lease *l;
	int err;

	open_cluster(url);
	err = rmp_cluster_attach(cl, token, NULL, &l);
	if (err)
		fail("attach: %s", rmp_strerror(err));
	return l;
}

static uint64_t number(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return v;
}

/* node_of -- the name of the node whose address and port the token of
 * l names (the host and port as the membership lists them). */
static const char *node_of(struct rmp_lease *l, unsigned replica)
{
	static struct rmp_node_info nodes[16];
	char token[RMP_TOKEN_MAXLEN], where[80];
	int n, err = rmp_lease_replica_token(l, replica, token,
					     sizeof(token));

	if (err < 0)
		fail("rmp_lease_replica_token: %s", rmp_strerror(err));
	for (int i = 0; i < 16; i++)
		nodes[i].size = sizeof(nodes[i]);
	n = rmp_cluster_nodes(cl, nodes, 16);
	if (n < 0)
		fail("rmp_cluster_nodes: %s", rmp_strerror(n));
	for (int i = 0; i < n && i < 16; i++) {
		snprintf(where, sizeof(where), "rmp://%s:%u/", nodes[i].addr,
			 nodes[i].port);
		if (!strncmp(token, where, strlen(where)))
			return nodes[i].node;
	}
	return "?";
}

static int spread(int argc, char **argv)
{
	uint64_t count, size;
	struct rmp_lease **ls;
	struct seen { char node[64]; unsigned n; } seen[16];
	unsigned nseen = 0;

	if (argc != 3)
		fail("usage: spread URL COUNT SIZE");
	open_cluster(argv[0]);
	count = number(argv[1]);
	size = number(argv[2]);
	ls = calloc(count, sizeof(*ls));
	for (uint64_t i = 0; ls && i < count; i++) {
		int err = rmp_cluster_alloc(cl, size, NULL, &ls[i]);
		const char *node;
		unsigned k;

		if (err)
			fail("alloc %" PRIu64 ": %s", i, rmp_strerror(err));
		node = node_of(ls[i], 0);
		for (k = 0; k < nseen && strcmp(seen[k].node, node); k++)
			;
		if (k == nseen && nseen < 16) {
			snprintf(seen[k].node, sizeof(seen[k].node), "%s", node);
			seen[nseen++].n = 0;
		}
		if (k < nseen)
			seen[k].n++;
	}
	for (unsigned k = 0; k < nseen; k++)
		printf("node %s %u\n", seen[k].node, seen[k].n);
	for (uint64_t i = 0; ls && i < count; i++)
		if (rmp_lease_free(ls[i]))
			fail("free %" PRIu64, i);
	free(ls);
	rmp_cluster_close(cl);
	return 0;
}

/* check -- read [off, off+len) of l and compare with seed's pattern;
 * the read's result (0 or an error), *bad the bytes that differ. */
static int check(struct rmp_lease *l, uint32_t seed, uint64_t off,
		 uint8_t *buf, size_t len, uint64_t *bad)
{
	int err = rmp_read(l, off, buf, len);

	for (size_t i = 0; !err && i < len; i++)
		*bad += buf[i] != pattern(seed, off + i);
	return err;
}

static void fill(struct rmp_lease *l, uint32_t seed, uint8_t *buf,
		 uint64_t size)
{
	int err;

	for (uint64_t i = 0; i < size; i++)
		buf[i] = pattern(seed, i);
	err = rmp_write(l, 0, buf, size);
	if (err)
		fail("write: %s", rmp_strerror(err));
}

/* absent -- node is not in the cluster's membership now. */
static bool absent(const char *node)
{
	static struct rmp_node_info nodes[16];
	int n;

	for (int i = 0; i < 16; i++)
		nodes[i].size = sizeof(nodes[i]);
	n = rmp_cluster_nodes(cl, nodes, 16);
	for (int i = 0; i < n && i < 16; i++)
		if (!strcmp(nodes[i].node, node))
			return false;
	return n >= 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What the read loop of mirror saw. */
struct loop {
	uint64_t reads, errors, bad;
	uint64_t after;       /* reads from "killed" on */
	uint64_t slowest_ms;  /* the longest read */
	const char *watched;  /* the node of replica 0 */
	int64_t gone_ms;      /* from "killed" to its leaving, or -1 */
};

/* line -- the next line of stdin is there (or its end): false at EOF. */
static bool line(void)
{
	char buf[64];

	return fgets(buf, sizeof(buf), stdin) != NULL;
}

/* until_told -- the read loop of mirror: until the second line of stdin
 * (or its end); from the first ("killed") on, the membership is looked
 * at every 50 ms until replica 0's node has left it. */
static void until_told(struct rmp_lease *l, uint64_t size, uint8_t *buf,
		       struct loop *o)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	uint64_t killed = 0, looked = 0;

	o->gone_ms = -1;
	for (uint64_t i = 0;; i++) {
		uint64_t off = (i * 4096 * 7) % (size - 4096), t0, took;

		if (poll(&p, 1, 1) > 0) {
			if (killed || !line())
				break;
			killed = looked = now_ms();
		}
		t0 = now_ms();
		o->reads++;
		o->after += killed != 0;
		if (check(l, 7, off, buf, 4096, &o->bad))
			o->errors++;
		took = now_ms() - t0;
		o->slowest_ms = took > o->slowest_ms ? took : o->slowest_ms;
		if (killed && o->gone_ms < 0 && now_ms() - looked >= 50) {
			looked = now_ms();
			if (absent(o->watched))
				o->gone_ms = (int64_t)(looked - killed);
		}
	}
}

/* What the read-and-write loop of mirror ... repair saw. */
struct during {
	uint64_t reads, writes, errors, bad;
	uint64_t slowest_ms;  /* the longest turn: a repair's wait */
};

#define RMP_MAX_U64(a, b) ((a) > (b) ? (a) : (b))

/* seed_at -- the pattern block b holds: 9, or 11 once rewritten. */
static uint32_t seed_at(const uint8_t *rewritten, uint64_t b)
{
	return rewritten[b] ? 11 : 9;
}

/* while_repaired -- read a block, rewrite the next, until a line of
 * stdin (or its end). */
static void while_repaired(struct rmp_lease *l, uint64_t size, uint8_t *buf,
			   uint8_t *rewritten, struct during *d)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	uint64_t blocks = size / 4096;

	for (uint64_t i = 0; poll(&p, 1, 1) <= 0; i++) {
		uint64_t rb = (i * 7) % blocks, wb = i % blocks, t0 = now_ms();

		d->reads++;
		if (check(l, seed_at(rewritten, rb), rb * 4096, buf, 4096,
			  &d->bad))
			d->errors++;
		for (uint64_t k = 0; k < 4096; k++)
			buf[k] = pattern(11, wb * 4096 + k);
		d->writes++;
		if (rmp_write(l, wb * 4096, buf, 4096))
			d->errors++;
		else
			rewritten[wb] = 1;
		d->slowest_ms = RMP_MAX_U64(d->slowest_ms, now_ms() - t0);
	}
	line();
}

/* verify_members -- each member the record of ctoken names now (not
 * those of the reader's handle: a repair it missed would go unseen),
 * read through a handle of its own: the bytes that differ from what was
 * written, per replica. */
static void verify_members(const char *ctoken, uint64_t size, uint8_t *buf,
			   const uint8_t *rewritten)
{
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_lease *l;
	int ret = rmp_cluster_attach(cl, ctoken, NULL, &l);

	if (ret)
		fail("attach by the cluster token: %s", rmp_strerror(ret));
	for (unsigned i = 0; rmp_lease_replica_token(l, i, token,
						     sizeof(token)) > 0; i++) {
		struct rmp_lease *m;
		uint64_t bad = 0;
		int err = rmp_cluster_attach(cl, token, NULL, &m);

		if (err)
			fail("attach member %u: %s", i, rmp_strerror(err));
		for (uint64_t b = 0; b < size / 4096; b++)
			if (check(m, seed_at(rewritten, b), b * 4096, buf, 4096,
				  &bad))
				fail("read member %u", i);
		printf("member %u %s differing %" PRIu64 "\n", i,
		       node_of(l, i), bad);
		rmp_lease_close(m);
	}
	rmp_lease_close(l);
}

/* repaired -- the rest of mirror ... repair, from the second line on. */
static void repaired(struct rmp_lease *l, const char *ctoken, uint64_t size,
		     uint8_t *buf)
{
	struct rmp_lease_info info = { .size = sizeof(info) };
	uint8_t *rewritten = calloc(size / 4096, 1);
	struct during d = { 0 };
	struct rmp_lease *again;
	int err;

	if (!rewritten)
		fail("out of memory");
	line(); /* the second, which ended the first loop */
	printf("written\n");
	fflush(stdout);
	while_repaired(l, size, buf, rewritten, &d);
	printf("during reads %" PRIu64 " writes %" PRIu64 " errors %" PRIu64
	       " mismatches %" PRIu64 " slowest_ms %" PRIu64 "\n", d.reads,
	       d.writes, d.errors, d.bad, d.slowest_ms);
	verify_members(ctoken, size, buf, rewritten);
	if (rmp_lease_info(l, &info))
		fail("rmp_lease_info");
	printf("live %u of %u\n", info.replicas_live, info.replicas);
	err = rmp_lease_free(l);
	if (err)
		fail("free: %s", rmp_strerror(err));
	err = rmp_cluster_attach(cl, ctoken, NULL, &again);
	if (err == -ENOENT)
		printf("record gone\n");
	else if (!err)
		rmp_lease_close(again);
	fflush(stdout);
	free(rewritten);
}

static int mirror(int argc, char **argv)
{
	struct rmp_cluster_alloc_opts ao;
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_lease *l;
	struct loop o = { 0 };
	uint64_t size, bad = 0;
	char token[RMP_TOKEN_MAXLEN], watched[64] = "";
	uint8_t *buf;
	int err;

	bool repair = argc == 4 && !strcmp(argv[3], "repair");
	char ctoken[RMP_TOKEN_MAXLEN];

	if (argc != 3 && !repair)
		fail("usage: mirror URL SIZE LABEL [repair]");
	open_cluster(argv[0]);
	size = number(argv[1]);
	buf = malloc(size);
	rmp_cluster_alloc_opts_init(&ao);
	ao.replicas = 2;
	ao.spread = argv[2];
	ao.ttl_s = 300;
	err = rmp_cluster_alloc(cl, size, &ao, &l);
	if (err || !buf)
		fail("mirrored alloc: %s", rmp_strerror(err));
	for (unsigned i = 0; rmp_lease_replica_token(l, i, token,
						     sizeof(token)) > 0; i++) {
		printf("replica %u %s %s\n", i, node_of(l, i), token);
		if (!i)
			snprintf(watched, sizeof(watched), "%s",
				 node_of(l, 0));
	}
	if (repair) {
		err = rmp_lease_token(l, ctoken, sizeof(ctoken));
		if (err < 0)
			fail("rmp_lease_token: %s", rmp_strerror(err));
		printf("token %s\n", ctoken);
	}
	fill(l, 7, buf, size);
	if (check(l, 7, 0, buf, size, &bad) || bad)
		fail("read back: %" PRIu64 " bytes differ", bad);
	printf("ready\n");
	fflush(stdout);
	o.watched = watched;
	until_told(l, size, buf, &o);
	/* what a write does with a replica lost: the survivors take it */
	fill(l, 9, buf, size);
	if (check(l, 9, 0, buf, size, &o.bad))
		o.errors++;
	if (rmp_lease_info(l, &info))
		fail("rmp_lease_info");
	printf("reads %" PRIu64 " errors %" PRIu64 " mismatches %" PRIu64
	       " live %u of %u gone_ms %" PRId64 "\n", o.reads, o.errors,
	       o.bad, info.replicas_live, info.replicas, o.gone_ms);
	printf("after_killed %" PRIu64 " slowest_ms %" PRIu64 "\n", o.after,
	       o.slowest_ms);
	fflush(stdout);
	if (repair) {
		repaired(l, ctoken, size, buf);
		free(buf);
		rmp_cluster_close(cl);
		return 0;
	}
	err = rmp_lease_free(l);
	if (err)
		fprintf(stderr, "rmp-cluster: free: %s\n", rmp_strerror(err));
	free(buf);
	rmp_cluster_close(cl);
	return 0;
}

/* pieces -- call f on [0, size) of l cut in the pieces of cuts[]
 * (bytes, in turn, over and over): the first error, or 0. */
static int pieces(struct rmp_lease *l, uint8_t *buf, uint64_t size,
		  const uint64_t *cuts, unsigned ncuts, bool write)
{
	for (uint64_t off = 0, n, i = 0; off < size; off += n, i++) {
		int err;

		n = cuts[i % ncuts] < size - off ? cuts[i % ncuts] : size - off;
		err = write ? rmp_write(l, off, buf + off, n) :
			      rmp_read(l, off, buf + off, n);
		if (err)
			return err;
	}
	return 0;
}

/* check_all -- buf holds seed's pattern over [0, size): exit 1 if not. */
static void check_all(const uint8_t *buf, uint64_t size, uint32_t seed,
		      const char *how)
{
	for (uint64_t i = 0; i < size; i++)
		if (buf[i] != pattern(seed, i))
			fail("%s: byte %" PRIu64 " is 0x%02x, not 0x%02x", how,
			     i, buf[i], pattern(seed, i));
}

/* register_all -- buf registered with the connection of every member of
 * l (n of them) into b: the reads after are zero copy. */
static void register_all(struct rmp_lease *l, unsigned n, uint8_t *buf,
			 uint64_t size, struct rmp_buf **b)
{
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_client *done[48];

	for (unsigned i = 0; i < n; i++) {
		struct rmp_client *c;
		int err = rmp_lease_replica_token(l, i, token, sizeof(token));

		b[i] = NULL;
		c = done[i] = err > 0 ? rmp_cluster_client(cl, token) : NULL;
		if (!c)
			fail("no connection of member %u", i);
		for (unsigned j = 0; j < i; j++)
			if (done[j] == c)
				c = NULL; /* registered already */
		if (c && (err = rmp_buf_reg(c, buf, size, &b[i])))
			fail("rmp_buf_reg: %s", rmp_strerror(err));
	}
}

static int stripe(int argc, char **argv)
{
	struct rmp_cluster_alloc_opts ao;
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_buf *b[48];
	struct rmp_lease *l;
	uint64_t size, unit, wcuts[4], rcuts[4];
	uint8_t *buf;
	unsigned n;
	int err;

	if (argc != 4 && argc != 5)
		fail("usage: stripe URL SIZE STRIPES REPLICAS [UNIT]");
	open_cluster(argv[0]);
	size = number(argv[1]);
	rmp_cluster_alloc_opts_init(&ao);
	ao.stripes = (unsigned)number(argv[2]);
	ao.replicas = (unsigned)number(argv[3]);
	ao.stripe_unit = argc == 5 ? number(argv[4]) : 0;
	ao.ttl_s = 300;
	unit = ao.stripe_unit ? ao.stripe_unit : 1 << 20;
	buf = malloc(size);
	err = rmp_cluster_alloc(cl, size, &ao, &l);
	if (err || !buf)
		fail("striped alloc: %s", rmp_strerror(err));
	if (rmp_lease_info(l, &info) || info.length != size)
		fail("rmp_lease_info: length %" PRIu64, info.length);
	n = info.stripes * info.replicas;
	for (unsigned i = 0; i < n; i++)
		printf("stripe %u replica %u node %s\n", i / info.replicas,
		       i % info.replicas, node_of(l, i));
	fflush(stdout);
	wcuts[0] = unit + unit / 2;
	wcuts[1] = 7777;
	wcuts[2] = 3 * unit + 1;
	wcuts[3] = unit / 2 + 3;
	rcuts[0] = unit - 1;
	rcuts[1] = 2 * unit + unit / 2 + 13;
	rcuts[2] = 4099;
	rcuts[3] = 5 * unit;
	for (uint64_t i = 0; i < size; i++)
		buf[i] = pattern(11, i);
	if ((err = pieces(l, buf, size, wcuts, 4, true)))
		fail("write: %s", rmp_strerror(err));
	memset(buf, 0, size);
	if ((err = pieces(l, buf, size, rcuts, 4, false)))
		fail("read: %s", rmp_strerror(err));
	check_all(buf, size, 11, "read");
	register_all(l, n, buf, size, b);
	memset(buf, 0, size);
	if ((err = pieces(l, buf, size, wcuts, 4, false)))
		fail("zero-copy read: %s", rmp_strerror(err));
	check_all(buf, size, 11, "zero-copy read");
	for (unsigned i = 0; i < n; i++)
		rmp_buf_dereg(b[i]);
	printf("ok %" PRIu64 "\n", size);
	err = rmp_lease_free(l);
	if (err)
		fail("free: %s", rmp_strerror(err));
	free(buf);
	rmp_cluster_close(cl);
	return 0;
}

/* seq_block -- 4 KiB of "seq N" lines. */
static void seq_block(char *b, uint64_t n)
{
	size_t used = 0;

	while (used < 4096) {
		int w = snprintf(b + used, 4096 - used, "seq %020" PRIu64 "\n",
				 n);

		if (w <= 0)
			break;
		used += (size_t)w;
	}
}

/* blocks_of -- the 4 KiB blocks of l. */
static uint64_t blocks_of(struct rmp_lease *l)
{
	struct rmp_lease_info info = { .size = sizeof(info) };

	if (rmp_lease_info(l, &info) || info.length < 4096)
		fail("lease info");
	return info.length / 4096;
}

static int seq(int argc, char **argv)
{
	struct pollfd in = { .fd = 0, .events = POLLIN };
	uint64_t n = 0, last = 0, acked = 0, errors = 0, blocks;
	struct rmp_lease *l;
	char b[4096 + 32];
	int err;

	if (argc != 3)
		fail("usage: seq URL TOKEN MS");
	l = attach_token(argv[0], argv[1]);
	blocks = blocks_of(l);
	printf("ready\n");
	fflush(stdout);
	while (poll(&in, 1, atoi(argv[2])) == 0) {
		seq_block(b, ++n);
		err = rmp_write(l, (n % blocks) * 4096, b, 4096);
		if (err) {
			errors++;
			printf("error %" PRIu64 " %s (%s)\n", n,
			       rmp_strerror(err), rmp_cluster_last_error(cl));
		} else {
			acked++;
			last = n;
			printf("acked %" PRIu64 "\n", n);
		}
		fflush(stdout);
	}
	printf("last %" PRIu64 " acked %" PRIu64 " errors %" PRIu64 "\n",
	       last, acked, errors);
	rmp_lease_close(l);
	rmp_cluster_close(cl);
	return 0;
}

static int seqcheck(int argc, char **argv)
{
	uint64_t blocks, *want, checked = 0, lost = 0, n, found;
	struct rmp_lease *l;
	char line[128], *mem;
	int err;

	if (argc != 2)
		fail("usage: seqcheck URL TOKEN");
	l = attach_token(argv[0], argv[1]);
	blocks = blocks_of(l);
	want = calloc(blocks, sizeof(*want));
	mem = malloc(blocks * 4096 + 1);
	if (!want || !mem)
		fail("out of memory");
	/* the newest acked number of each block */
	while (fgets(line, sizeof(line), stdin))
		if (sscanf(line, "acked %" SCNu64, &n) == 1 &&
		    n > want[n % blocks])
			want[n % blocks] = n;
	err = rmp_read(l, 0, mem, blocks * 4096);
	if (err)
		fail("read: %s", rmp_strerror(err));
	for (uint64_t b = 0; b < blocks; b++) {
		if (!want[b])
			continue;
		checked++;
		if (sscanf(mem + b * 4096, "seq %" SCNu64, &found) != 1)
			found = 0;
		if (found < want[b]) {
			lost++;
			printf("lost %" PRIu64 " (block %" PRIu64 " holds %"
			       PRIu64 ")\n", want[b], b, found);
		}
	}
	printf("checked %" PRIu64 " lost %" PRIu64 "\n", checked, lost);
	free(want);
	free(mem);
	rmp_lease_close(l);
	rmp_cluster_close(cl);
	return lost ? 1 : 0;
}

static int members(int argc, char **argv)
{
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_lease *l;

	if (argc != 2)
		fail("usage: members URL TOKEN");
	l = attach_token(argv[0], argv[1]);
	{
		struct rmp_lease_info info = { .size = sizeof(info) };

		if (rmp_lease_info(l, &info))
			fail("lease info");
		/* "-" for a member not attached (its node not registered
		 * at the moment) */
		for (unsigned i = 0; i < info.stripes * info.replicas; i++)
			printf("%s\n", rmp_lease_replica_token(l, i, token,
				sizeof(token)) >= 0 ? token : "-");
	}
	rmp_lease_close(l);
	rmp_cluster_close(cl);
	return 0;
}

/* One lease of flap, and what it should hold. */
struct flapped {
	const char *name;
	struct rmp_lease *l;
	uint8_t *want;     /* every byte as last written */
	uint64_t size;
	/* each member's token when leased: a member placed anew since has
	 * another */
	char member[4][RMP_TOKEN_MAXLEN];
	unsigned nmembers;
	bool stale_seen; /* a member was STALE after some turn */
};

#define FLAP_BLOCK (UINT64_C(1) << 20)

/* flap_alloc -- f's lease: stripes x replicas on distinct values of
 * label (stripes 0: coded 2+1), its bytes written with seed 1. */
static void flap_alloc(struct flapped *f, uint64_t size, unsigned stripes,
		       const char *label)
{
	struct rmp_cluster_alloc_opts ao;
	int err;

	rmp_cluster_alloc_opts_init(&ao);
	if (stripes) {
		ao.stripes = stripes;
		ao.replicas = 2;
		ao.stripe_unit = stripes > 1 ? FLAP_BLOCK : 0;
	} else {
		ao.ec_data = 2;
		ao.ec_parity = 1;
	}
	ao.spread = label;
	ao.ttl_s = 300;
	f->size = size;
	f->want = malloc(size);
	err = rmp_cluster_alloc(cl, size, &ao, &f->l);
	if (err || !f->want)
		fail("%s alloc: %s", f->name, rmp_strerror(err));
	for (uint64_t i = 0; i < size; i++)
		f->want[i] = pattern(1, i);
	err = rmp_write(f->l, 0, f->want, size);
	if (err)
		fail("%s write: %s", f->name, rmp_strerror(err));
	f->nmembers = stripes ? 2 * stripes : 3;
	for (unsigned i = 0; i < f->nmembers; i++)
		if (rmp_lease_replica_token(f->l, i, f->member[i],
					    sizeof(f->member[i])) <= 0)
			fail("%s: member %u's token", f->name, i);
}

/* flap_moved -- how many members of f the record names anew since the
 * lease was made (a repair's work: a catch-up in place moves none). */
static unsigned flap_moved(const struct flapped *f)
{
	char token[RMP_TOKEN_MAXLEN];
	unsigned moved = 0;

	for (unsigned i = 0; i < f->nmembers; i++)
		moved += rmp_lease_replica_token(f->l, i, token,
						 sizeof(token)) <= 0 ||
			 strcmp(token, f->member[i]) != 0;
	return moved;
}

/* flap_note_stale -- f->stale_seen once a member of f is stale (a write
 * went on without it). */
static void flap_note_stale(struct flapped *f)
{
	struct rmp_member_info mi = { .size = sizeof(mi) };

	for (unsigned i = 0; i < f->nmembers; i++)
		if (!rmp_lease_member_info(f->l, i, &mi) &&
		    mi.state == RMP_MEMBER_STALE)
			f->stale_seen = true;
}

/* flap_all_live -- every member of f is live again. */
static bool flap_all_live(const struct flapped *f)
{
	struct rmp_lease_info info = { .size = sizeof(info) };

	if (rmp_lease_info(f->l, &info))
		return false;
	return info.ec_data ? info.ec_live == info.ec_data + info.ec_parity :
			      info.replicas_live == info.replicas;
}

/* What the loop of flap saw. */
struct flap_loop {
	uint64_t ops, errors, bad, slowest_ms;
	uint64_t down_ms;       /* "down MS": the link went down (realtime) */
	int64_t after_down_ms;  /* the first call begun after it ended this
				 * long after it; -1: none yet */
	char first[200];
	/* "settle MS": the loop ends once every member is live again, or
	 * MS after the line (settled_ms: from the line to then; -1: not) */
	uint64_t settle_at, settle_until;
	int64_t settled_ms;
};

/* real_ms -- CLOCK_REALTIME in ms, the clock of the test's "down MS". */
static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* flap_more -- false once standard input says "done" (or ends); a line
 * "down MS" or "settle MS" is noted in o. Waits for nothing. */
static bool flap_more(struct flap_loop *o)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char line[64];
	unsigned long long ms;

	if (poll(&p, 1, 0) <= 0)
		return true;
	if (!fgets(line, sizeof(line), stdin))
		return false;
	if (sscanf(line, "settle %llu", &ms) == 1) {
		o->settle_at = now_ms();
		o->settle_until = o->settle_at + ms;
		o->settled_ms = -1;
		return true;
	}
	if (sscanf(line, "down %llu", &ms) != 1)
		return false;
	o->down_ms = ms;
	o->after_down_ms = -1;
	return true;
}

/* flap_call -- one write (write true) or read of block b of f, timed
 * and judged into o. */
static void flap_call(struct flapped *f, uint64_t b, uint32_t seed,
		      bool write, uint8_t *buf, struct flap_loop *o)
{
	uint64_t off = b * FLAP_BLOCK, t0 = now_ms(), took;
	uint64_t began = real_ms();
	int err;

	if (write) {
		for (uint64_t i = 0; i < FLAP_BLOCK; i++)
			buf[i] = pattern(seed, off + i);
		err = rmp_write(f->l, off, buf, FLAP_BLOCK);
		if (!err)
			memcpy(f->want + off, buf, FLAP_BLOCK);
	} else {
		err = rmp_read(f->l, off, buf, FLAP_BLOCK);
		for (uint64_t i = 0; !err && i < FLAP_BLOCK; i++)
			o->bad += buf[i] != f->want[off + i];
	}
	took = now_ms() - t0;
	if (o->down_ms && o->after_down_ms < 0 && began >= o->down_ms)
		o->after_down_ms = (int64_t)(real_ms() - o->down_ms);
	o->ops++;
	o->slowest_ms = took > o->slowest_ms ? took : o->slowest_ms;
	if (err && !o->errors++)
		snprintf(o->first, sizeof(o->first), "%s %s of block %" PRIu64
			 ": %s (%s)", f->name, write ? "write" : "read", b,
			 rmp_strerror(err), rmp_cluster_last_error(cl));
}

/* flap_renew -- a renewal of f (as an application keeps its lease),
 * timed and judged into o. */
static void flap_renew(struct flapped *f, struct flap_loop *o)
{
	uint64_t t0 = now_ms(), took;
	int err = rmp_lease_renew(f->l, 300);

	took = now_ms() - t0;
	o->ops++;
	o->slowest_ms = took > o->slowest_ms ? took : o->slowest_ms;
	if (err && !o->errors++)
		snprintf(o->first, sizeof(o->first), "%s renew: %s (%s)",
			 f->name, rmp_strerror(err), rmp_cluster_last_error(cl));
}

/* flap_verify -- f read whole, and each member through a handle of its
 * own: the replicas of each stripe must hold the same bytes. */
static void flap_verify(struct flapped *f)
{
	struct rmp_lease_info info = { .size = sizeof(info) };
	char token[RMP_TOKEN_MAXLEN];
	uint8_t *all = malloc(f->size), *first = malloc(f->size);
	uint64_t whole = 0;
	unsigned differing = 0;
	int err;

	if (!all || !first || rmp_lease_info(f->l, &info))
		fail("%s: lease info", f->name);
	if (info.ec_data)
		printf("lease %s live %u of %u\n", f->name, info.ec_live,
		       info.ec_data + info.ec_parity);
	else
		printf("lease %s live %u of %u\n", f->name,
		       info.replicas_live, info.replicas);
	err = rmp_read(f->l, 0, all, f->size);
	if (err)
		fail("%s: whole read: %s", f->name, rmp_strerror(err));
	for (uint64_t i = 0; i < f->size; i++)
		whole += all[i] != f->want[i];
	/* an erasure-coded lease's members against its code: the test's */
	for (unsigned s = 0; s < info.stripes && !info.ec_data; s++) {
		uint64_t len = 0;

		for (unsigned j = 0; j < info.replicas; j++) {
			struct rmp_lease_info mi = { .size = sizeof(mi) };
			struct rmp_lease *m;
			uint8_t *to = j ? all : first;

			if (rmp_lease_replica_token(f->l, s * info.replicas + j,
						    token, sizeof(token)) <= 0 ||
			    rmp_cluster_attach(cl, token, NULL, &m))
				fail("%s: member %u of stripe %u", f->name, j, s);
			if (rmp_lease_info(m, &mi))
				fail("%s: member info", f->name);
			len = mi.length;
			err = rmp_read(m, 0, to, len);
			if (err)
				fail("%s: member read: %s", f->name,
				     rmp_strerror(err));
			rmp_lease_close(m);
			if (j && memcmp(first, all, len)) {
				differing++;
				break;
			}
		}
	}
	if (info.ec_data)
		printf("lease %s whole %" PRIu64 "\n", f->name, whole);
	else
		printf("lease %s whole %" PRIu64 " stripes_differing %u\n",
		       f->name, whole, differing);
	free(all);
	free(first);
}

static int flap(int argc, char **argv)
{
	struct flapped f[3] = { { .name = "mirror" }, { .name = "stripe" },
				{ .name = "ec" } };
	struct flap_loop o = { 0 };
	char token[RMP_TOKEN_MAXLEN];
	uint8_t *buf = malloc(FLAP_BLOCK);
	uint64_t size, blocks;
	unsigned nf = argc == 4 && !strcmp(argv[3], "ec") ? 3 : 2;

	if (argc != 3 && nf != 3)
		fail("usage: flap URL SIZE LABEL [ec]");
	open_cluster(argv[0]);
	size = number(argv[1]);
	blocks = size / FLAP_BLOCK;
	if (!buf || blocks < 4)
		fail("flap: SIZE of 4 MiB at least");
	flap_alloc(&f[0], size, 1, argv[2]);
	flap_alloc(&f[1], size, 2, argv[2]);
	if (nf == 3)
		flap_alloc(&f[2], size, 0, argv[2]);
	/* no line kept in stdio's buffer where flap_more's poll cannot
	 * see it */
	setvbuf(stdin, NULL, _IONBF, 0);
	printf("ready\n");
	fflush(stdout);
	for (uint64_t t = 0; flap_more(&o); t++) {
		for (unsigned k = 0; k < nf; k++) {
			flap_call(&f[k], t % blocks, (uint32_t)t + 2, true,
				  buf, &o);
			flap_call(&f[k], (t * 5 + 3) % blocks, 0, false, buf,
				  &o);
			if (t % 4 == 3)
				flap_renew(&f[k], &o);
			flap_note_stale(&f[k]);
		}
		if (!o.settle_at)
			continue;
		if (flap_all_live(&f[0]) && flap_all_live(&f[1]) &&
		    (nf < 3 || flap_all_live(&f[2]))) {
			o.settled_ms = (int64_t)(now_ms() - o.settle_at);
			break;
		}
		if (now_ms() >= o.settle_until)
			break;
	}
	printf("ops %" PRIu64 " errors %" PRIu64 " mismatches %" PRIu64
	       " slowest_ms %" PRIu64 "\n", o.ops, o.errors, o.bad,
	       o.slowest_ms);
	if (o.errors)
		printf("first_error %s\n", o.first);
	if (o.down_ms)
		printf("after_down_ms %" PRId64 "\n", o.after_down_ms);
	if (o.settle_at)
		printf("settled_ms %" PRId64 "\n", o.settled_ms);
	for (unsigned k = 0; k < nf; k++) {
		printf("lease %s moved %u\n", f[k].name, flap_moved(&f[k]));
		printf("lease %s stale_seen %d\n", f[k].name, f[k].stale_seen);
		flap_verify(&f[k]);
		if (k < 2 && rmp_lease_free(f[k].l))
			fail("%s: free", f[k].name);
		free(f[k].want);
	}
	if (nf == 3) {
		if (rmp_lease_token(f[2].l, token, sizeof(token)) <= 0)
			fail("ec: token");
		printf("lease ec token %s\n", token);
		rmp_lease_close(f[2].l);
	}
	fflush(stdout);
	free(buf);
	rmp_cluster_close(cl);
	return 0;
}

static int revive(int argc, char **argv)
{
	struct flapped f = { .name = "mirror" };
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	struct flap_loop o = { 0 };
	uint8_t *buf = malloc(FLAP_BLOCK);
	char token[RMP_TOKEN_MAXLEN];
	uint64_t blocks;

	if (argc != 3)
		fail("usage: revive URL SIZE LABEL");
	open_cluster(argv[0]);
	f.size = number(argv[1]);
	blocks = f.size / FLAP_BLOCK;
	if (!buf || blocks < 1)
		fail("revive: SIZE of 1 MiB at least");
	flap_alloc(&f, f.size, 1, argv[2]);
	for (unsigned j = 0; j < 2; j++) {
		/* SCHEME://HOST:PORT/...: the port before the first '/' */
		const char *host = NULL, *slash = NULL, *colon = NULL;

		if (rmp_lease_replica_token(f.l, j, token, sizeof(token)) > 0)
			host = strstr(token, "://");
		if (host)
			slash = strchr(host + 3, '/');
		for (const char *q = host ? host + 3 : NULL; q && q < slash;
		     q++)
			colon = *q == ':' ? q : colon;
		if (!colon)
			fail("revive: member %u's token", j);
		printf("member %u %lu\n", j, strtoul(colon + 1, NULL, 10));
	}
	printf("ready\n");
	fflush(stdout);
	for (uint64_t t = 0; poll(&p, 1, 0) <= 0; t++)
		flap_call(&f, t % blocks, 0, false, buf, &o);
	printf("ops %" PRIu64 " errors %" PRIu64 " mismatches %" PRIu64
	       " slowest_ms %" PRIu64 "\n", o.ops, o.errors, o.bad,
	       o.slowest_ms);
	if (o.errors)
		printf("first_error %s\n", o.first);
	flap_verify(&f);
	if (rmp_lease_free(f.l))
		fail("mirror: free");
	fflush(stdout);
	free(f.want);
	free(buf);
	rmp_cluster_close(cl);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 2)
		fail("usage: rmp-cluster spread|mirror|stripe ARGS...");
	if (!strcmp(argv[1], "spread"))
		rc = spread(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "mirror"))
		rc = mirror(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "stripe"))
		rc = stripe(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "seq"))
		rc = seq(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "seqcheck"))
		rc = seqcheck(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "flap"))
		rc = flap(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "revive"))
		rc = revive(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "members"))
		rc = members(argc - 2, argv + 2);
	else
		fail("unknown scenario %s", argv[1]);
	return rc;
}

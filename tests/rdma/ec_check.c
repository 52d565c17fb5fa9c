/* SPDX-License-Identifier: MIT */
/*
 * ec_check.c -- rmp-eccheck: what an erasure-coded cluster lease holds.
 * The tenant from RMPOOL_TENANT and RMPOOL_KEY_FILE.
 *
 *   rmp-eccheck code URL TOKEN
 *       every member, each read through a handle of its own (its member
 *       token attached alone), against the lease's bytes read through
 *       the lease and encoded here with ISA-L (the generator the library
 *       documents: Cauchy, gf_gen_cauchy1_matrix). Prints "member I
 *       differing D" (chunk bytes that differ from the encoding) for
 *       each member and "rows R torn T" (rows whose members' tags are
 *       not all one, or one marked pending: the top bit, a write not
 *       done); exit 1 when a byte differs or a row is torn.
 *   rmp-eccheck same URL TOKEN FILE
 *       the lease read in uneven calls (1 B, 100 B, across chunk and
 *       row edges, then 1 MiB at a time) is FILE, byte for byte: prints
 *       "same N", or where it differs (exit 1).
 *   rmp-eccheck rows URL TOKEN OLD NEW
 *       each row read by itself: prints "rows R old O new N mixed X torn
 *       T wrong W": rows that read as OLD's bytes, NEW's, some of each
 *       (every byte one or the other), that failed with -EBADMSG, and
 *       that read as bytes of neither or failed otherwise; exit 1 when
 *       W > 0.
 *   rmp-eccheck reads URL TOKEN FILE FROM
 *       one handle reads the lease from byte FROM on in a loop until a
 *       line on standard input (or its end): slices of 1 B to 64 KiB at
 *       random offsets, every fourth a whole row or more, each checked
 *       against FILE, a read every PACE_MS (20) ms at most (the tests
 *       that run at once share the CPUs with it and the daemons it
 *       reads: its load is not what is tested). Prints "ready" after
 *       its first read, then "reads N errors E mismatches M slowest_ms
 *       S live L of K decoded D"
 *       (S: the longest read, a failover's wait; L: the members this
 *       handle calls live at the end; D: the chunks it decoded, its
 *       ec_decoded) and "first_error TEXT" when E > 0; exit 1 when E or
 *       M > 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <isa-l/erasure_code.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmpool.h"

#define TAG_BYTES 8
#define PACE_MS 20.0 /* reads: the shortest time from one to the next */

static struct rmp_cluster *cl;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (%s)\n", cl ? rmp_cluster_last_error(cl) : "");
	exit(2);
}

static void *xcalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		fail("out of memory");
	return p;
}

/* read_all -- len bytes of l from 0 into a new buffer. */
static uint8_t *read_all(struct rmp_lease *l, uint64_t len)
{
	uint8_t *b = xcalloc(len);
	int err = rmp_read(l, 0, b, len);

	if (err)
		fail("reading %" PRIu64 " bytes: %s", len, rmp_strerror(err));
	return b;
}

/* member -- the bytes of member i of l, its chunks and tags. */
static uint8_t *member(struct rmp_lease *l, unsigned i, uint64_t len)
{
	char tok[RMP_TOKEN_MAXLEN];
	struct rmp_lease *h;
	uint8_t *b;
	int err = rmp_lease_replica_token(l, i, tok, sizeof(tok));

	if (err < 0)
		fail("member %u's token: %s", i, rmp_strerror(err));
	err = rmp_cluster_attach(cl, tok, NULL, &h);
	if (err)
		fail("attaching member %u: %s", i, rmp_strerror(err));
	b = read_all(h, len);
	rmp_lease_close(h);
	return b;
}

/* check -- each member's chunks against the encoding of data (rows of
 * k chunks of c bytes) and its tags against member 0's: how many members
 * differ (printed each) and, in *torn, the rows whose tags are not one. */
static unsigned check(uint8_t *data, uint8_t *const *mem, unsigned k,
		      unsigned m, uint64_t c, uint64_t rows, uint64_t *torn)
{
	unsigned n = k + m, bad = 0;
	uint8_t gen[16 * 12], tbls[32 * 12 * 4], *src[12], *par[4];
	uint8_t *want = xcalloc(m * c);
	uint64_t diff[16] = { 0 };

	gf_gen_cauchy1_matrix(gen, (int)n, (int)k);
	ec_init_tables((int)k, (int)m, gen + k * k, tbls);
	for (uint64_t r = 0; r < rows; r++) {
		const uint8_t *t0 = mem[0] + rows * c + r * TAG_BYTES;

		for (unsigned i = 0; i < k; i++)
			src[i] = data + (r * k + i) * c;
		for (unsigned j = 0; j < m; j++)
			par[j] = want + j * c;
		ec_encode_data((int)c, (int)k, (int)m, tbls, src, par);
		for (unsigned i = 0; i < n; i++) {
			const uint8_t *w = i < k ? src[i] : par[i - k];

			for (uint64_t b = 0; b < c; b++)
				diff[i] += mem[i][r * c + b] != w[b];
		}
		for (unsigned i = 0; i < n; i++)
			if (memcmp(t0, mem[i] + rows * c + r * TAG_BYTES,
				   TAG_BYTES) || (t0[TAG_BYTES - 1] & 0x80)) {
				(*torn)++; /* two writes, or one not done */
				break;
			}
	}
	for (unsigned i = 0; i < n; i++) {
		printf("member %u differing %" PRIu64 "\n", i, diff[i]);
		bad += diff[i] != 0;
	}
	free(want);
	return bad;
}

/* load -- FILE's bytes, len of them. */
static uint8_t *load(const char *file, uint64_t len)
{
	uint8_t *b = xcalloc(len);
	FILE *f = fopen(file, "rb");

	if (!f || fread(b, 1, len, f) != len)
		fail("reading %s", file);
	fclose(f);
	return b;
}

static int cmd_same(struct rmp_lease *l, uint64_t len, const char *file)
{
	static const uint64_t cuts[] = { 1, 100, 3995, 4097, 12290, 20000,
					 100000 };
	uint8_t *want = load(file, len), *got = xcalloc(len);
	uint64_t at = 0;

	for (unsigned i = 0; at < len; i++) {
		uint64_t n = i < sizeof(cuts) / sizeof(cuts[0]) ? cuts[i] :
			     1u << 20;
		int err;

		n = n < len - at ? n : len - at;
		err = rmp_read(l, at, got + at, n);
		if (err)
			fail("reading %" PRIu64 " bytes at %" PRIu64 ": %s", n,
			     at, rmp_strerror(err));
		at += n;
	}
	for (at = 0; at < len && got[at] == want[at]; at++)
		;
	if (at < len)
		printf("differs at %" PRIu64 "\n", at);
	else
		printf("same %" PRIu64 "\n", len);
	free(want);
	free(got);
	return at < len;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* stdin_ready -- a line (or the end) waits on standard input. */
static int stdin_ready(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

static int cmd_reads(struct rmp_lease *l, const struct rmp_lease_info *in,
		     const char *file, uint64_t from)
{
	uint64_t len = in->length, row = in->ec_data * in->ec_chunk;
	uint64_t reads = 0, errors = 0, mismatches = 0;
	uint8_t *want = load(file, len), *got;
	struct rmp_lease_info in_now;
	char first[256] = "";
	double slowest = 0;
	unsigned live = 0;

	if (from >= len)
		fail("FROM %" PRIu64 " is past the lease's end", from);
	got = xcalloc(4 * row > 65536 ? 4 * row : 65536);
	srand(7);
	do {
		uint64_t n = reads % 4 == 3 ? row * (1 + (uint64_t)rand() % 4) :
			     1 + (uint64_t)rand() % 65536;
		uint64_t at;
		double t0 = now_ms(), t;
		int err;

		n = n < len - from ? n : len - from;
		at = from + (uint64_t)rand() % (len - from - n + 1);
		if (reads % 4 == 3)
			at -= (at - from) % row; /* whole rows if FROM is a
						  * row's start */
		err = rmp_read(l, at, got, n);
		t = now_ms() - t0;
		slowest = t > slowest ? t : slowest;
		if (err && !errors++)
			snprintf(first, sizeof(first), "%" PRIu64 " bytes at "
				 "%" PRIu64 ": %s", n, at, rmp_strerror(err));
		else if (!err && memcmp(got, want + at, n))
			mismatches++;
		if (!reads++) {
			printf("ready\n");
			fflush(stdout);
		}
		if (t < PACE_MS)
			nanosleep(&(struct timespec){
					  0, (long)((PACE_MS - t) * 1e6) },
				  NULL);
	} while (!stdin_ready());
	for (unsigned i = 0; i < in->ec_data + in->ec_parity; i++) {
		struct rmp_member_info mi = { .size = sizeof(mi) };

		if (!rmp_lease_member_info(l, i, &mi) &&
		    mi.state == RMP_MEMBER_LIVE)
			live++;
	}
	in_now.size = sizeof(in_now);
	if (rmp_lease_info(l, &in_now))
		fail("rmp_lease_info");
	printf("reads %" PRIu64 " errors %" PRIu64 " mismatches %" PRIu64
	       " slowest_ms %.0f live %u of %u decoded %" PRIu64 "\n", reads,
	       errors, mismatches, slowest, live,
	       in->ec_data + in->ec_parity, in_now.ec_decoded);
	if (errors)
		printf("first_error %s\n", first);
	free(want);
	free(got);
	return errors || mismatches;
}

static int cmd_rows(struct rmp_lease *l, uint64_t len, uint64_t row,
		    const char *oldf, const char *newf)
{
	uint8_t *old = load(oldf, len), *nu = load(newf, len);
	uint8_t *got = xcalloc(row);
	uint64_t rows = 0, o = 0, nw = 0, mixed = 0, torn = 0, wrong = 0;

	for (uint64_t at = 0; at < len; at += row, rows++) {
		uint64_t n = row < len - at ? row : len - at, same_o = 0,
			 same_n = 0, either = 0;
		int err = rmp_read(l, at, got, n);

		if (err == -EBADMSG) {
			torn++;
			continue;
		}
		for (uint64_t b = 0; !err && b < n; b++) {
			same_o += got[b] == old[at + b];
			same_n += got[b] == nu[at + b];
			either += got[b] == old[at + b] || got[b] == nu[at + b];
		}
		if (err || either < n)
			wrong++;
		else if (same_o == n)
			o++;
		else if (same_n == n)
			nw++;
		else
			mixed++;
		if (err)
			fprintf(stderr, "row %" PRIu64 ": %s\n", rows,
				rmp_strerror(err));
	}
	printf("rows %" PRIu64 " old %" PRIu64 " new %" PRIu64 " mixed %" PRIu64
	       " torn %" PRIu64 " wrong %" PRIu64 "\n", rows, o, nw, mixed,
	       torn, wrong);
	free(old);
	free(nu);
	free(got);
	return wrong != 0;
}

static int cmd_code(struct rmp_lease *l, const struct rmp_lease_info *in)
{
	unsigned k = in->ec_data, n = k + in->ec_parity, bad;
	uint64_t c = in->ec_chunk, rows, torn = 0;
	uint8_t *data, *all, *mem[16] = { NULL };

	if (n > 16)
		fail("not an erasure-coded lease");
	rows = (in->length + k * c - 1) / (k * c);
	/* the lease's bytes, padded with zeros to whole rows */
	data = xcalloc(rows * k * c);
	all = read_all(l, in->length);
	memcpy(data, all, in->length);
	free(all);
	for (unsigned i = 0; i < n; i++)
		mem[i] = member(l, i, rows * c + rows * TAG_BYTES);
	bad = check(data, mem, k, in->ec_parity, c, rows, &torn);
	printf("rows %" PRIu64 " torn %" PRIu64 "\n", rows, torn);
	for (unsigned i = 0; i < n; i++)
		free(mem[i]);
	free(data);
	return bad || torn;
}

int main(int argc, char **argv)
{
	struct rmp_client_opts o;
	struct rmp_cluster_opts co;
	struct rmp_lease_info in = { .size = sizeof(in) };
	const char *tenant = getenv("RMPOOL_TENANT");
	struct rmp_lease *l;
	int err, rc;

	if (argc < 4 || (strcmp(argv[1], "code") && strcmp(argv[1], "same") &&
			 strcmp(argv[1], "rows") && strcmp(argv[1], "reads")) ||
	    (!strcmp(argv[1], "same") && argc != 5) ||
	    (!strcmp(argv[1], "rows") && argc != 6) ||
	    (!strcmp(argv[1], "reads") && argc != 6)) {
		fprintf(stderr, "usage: rmp-eccheck code|same|rows|reads URL "
			"TOKEN [FILE | OLD NEW | FILE FROM]\n");
		return 2;
	}
	rmp_client_opts_init(&o);
	if (tenant && *tenant) {
		o.tenant = tenant;
		o.key_file = getenv("RMPOOL_KEY_FILE");
	}
	rmp_cluster_opts_init(&co);
	co.client = &o;
	err = rmp_cluster_open(&cl, argv[2], &co);
	if (!err)
		err = rmp_cluster_attach(cl, argv[3], NULL, &l);
	if (!err)
		err = rmp_lease_info(l, &in);
	if (err)
		fail("the lease of %s: %s", argv[3], rmp_strerror(err));
	if (!in.ec_data)
		fail("not an erasure-coded lease");
	if (!strcmp(argv[1], "code"))
		rc = cmd_code(l, &in);
	else if (!strcmp(argv[1], "same"))
		rc = cmd_same(l, in.length, argv[4]);
	else if (!strcmp(argv[1], "reads"))
		rc = cmd_reads(l, &in, argv[4], strtoull(argv[5], NULL, 0));
	else
		rc = cmd_rows(l, in.length, in.ec_data * in.ec_chunk, argv[4],
			      argv[5]);
	rmp_lease_close(l);
	rmp_cluster_close(cl);
	return rc;
}

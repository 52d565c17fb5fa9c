/* SPDX-License-Identifier: MIT */
/* bench_args.c -- rmpool-bench's command line: usage, options, modes. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

const char *const mode_names[] = {
	[READ_LAT] = "read-lat", [WRITE_LAT] = "write-lat",
	[FAA_LAT] = "faa-lat",   [CAS_LAT] = "cas-lat",
	[ALLOC_LAT] = "alloc-lat", [ATTACH_LAT] = "attach-lat",
	[READ_BW] = "read-bw",
	[WRITE_BW] = "write-bw",
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rmpool-bench {-s HOST[:PORT] | -C URL [--replicas N] [--stripes N]\n"
		"       [--ec K+M] [--lose I] [--copy] [--prefer LABEL=VALUE]} "
		"[--size N[,N...]] [--iters N] "
		"[--depth N] [--warmup N] [--busy-poll] [--spin-max-us N] "
		"[--rails N] [--rail-stripe N] [--json] [--progress] MODE\n"
		"Modes: read-lat write-lat faa-lat cas-lat alloc-lat attach-lat\n"
		"       (synchronous, one at a time; alloc-lat: lease alloc +\n"
		"       free; attach-lat: attach by token from a 2nd connection)\n"
		"       read-bw write-bw (asynchronous, DEPTH in flight)\n"
		"  -s, --server HOST[:PORT]  rmpoold address (port default %u)\n"
		"  -C, --cluster URL  or leases placed on a cluster by\n"
		"                rmp_cluster_alloc (URL: etcd, as rmpool -C);\n"
		"                alloc-lat then times rmp_cluster_alloc + free\n"
		"  --replicas N  with -C: 1 (default), 2..3 a mirrored lease\n"
		"                (synchronous reads and writes only)\n"
		"  --stripes N   with -C: 1 (default), 2..4 a striped lease, cut\n"
		"                in 1 MiB units (synchronous reads and writes only)\n"
		"  --ec K+M      with -C: an erasure-coded lease, K data and M\n"
		"                parity members, 4 KiB chunks (synchronous reads\n"
		"                and writes only)\n"
		"  --lose I      with -C, a lease of 2 members or more: member I\n"
		"                freed on its node before the run (-lost in the\n"
		"                line): the degraded lease is timed\n"
		"  --copy        with -C, the synchronous modes: the buffer is\n"
		"                not registered, so the library copies through its\n"
		"                bounce buffers (-copy in the line; whole rows of\n"
		"                an erasure-coded lease are then late bound)\n"
		"  --rail-stripe N  a call of at least 2N bytes is cut in N-byte\n"
		"                pieces over a node's rails (rmp_client_opts;\n"
		"                with N >= SIZE a call takes one rail)\n"
		"  --prefer LABEL=VALUE  with -C: nodes with that label first\n"
		"                (alloc-lat against one node's: the same node)\n"
		"  --size N[,N..] bytes per operation, suffix K/M allowed; a list\n"
		"                runs each size in turn (default 64 for *-lat,\n"
		"                65536 for *-bw, 4096 for alloc-lat; atomics: 8)\n"
		"  --iters N     timed operations (default 1000)\n"
		"  --depth N     operations in flight for *-bw (default 16)\n"
		"  --warmup N    untimed operations first (default 100)\n"
		"  --busy-poll   *-lat: post + submit + spin on rmp_poll(.., 0)\n"
		"                instead of the synchronous call\n"
		"  --spin-max-us N  longest spin of a waiting call (default:\n"
		"                the library's); 0 = sleep at once (\"-sleep\")\n"
		"  --threads N   *-bw: N connections, one thread each, summed\n"
		"  --rails N     *-bw with -s A1,A2..: the first N addresses as\n"
		"                one client's rails; each window of DEPTH x SIZE\n"
		"                is one synchronous rmp_read/rmp_write, cut by\n"
		"                the library in SIZE pieces (rail_stripe = SIZE,\n"
		"                a power of two >= 4096); the line says -railsN\n"
		"                and each rail's share of the bytes\n"
		"  --json        one JSON object per result line\n"
		"  --progress    a progress line on stderr once a second (the\n"
		"                default when stderr is a terminal)\n"
		"Prints a line per size: rmpool MODE size=.. iters=.. then min= "
		"median= p99= p99.9= avg= us sleeps= [etcd_reads=] (latency; "
		"sleeps per operation; with -C, etcd's reads of the membership "
		"while timing) or MB/s= MiB/s= Gb/s= ops/s= (bw). With -C and\n"
		"no --lose, a last line: rmpool pinned-KIND size=LEASE bytes=..\n"
		"per_byte=.. (what the nodes held for the lease, by rmp_stat).\n",
		RMP_DEFAULT_PORT);
}

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("rmpool-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	usage(stderr);
	exit(2);
}

static uint64_t parse_num(const char *opt, const char *s, uint64_t min,
			  uint64_t max);

/* parse_sizes -- "64,4K,1M": each 1 B .. 1 GiB, MAX_SIZES at most. */
static void parse_sizes(struct bench *bp, const char *arg)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		usage_error("--size: list too long");
	strcpy(buf, arg);
	bp->nsizes = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (bp->nsizes == MAX_SIZES)
			usage_error("--size: at most %u sizes", MAX_SIZES);
		bp->sizes[bp->nsizes++] = (size_t)parse_num("--size", tok, 1,
							     UINT64_C(1) << 30);
	}
	if (!bp->nsizes)
		usage_error("--size: no size given");
}

/* parse_ec -- "K+M": the code of an erasure-coded lease (the library
 * checks the bounds, k 2..12 and m 1..4, when it places the lease). */
static void parse_ec(struct bench *bp, const char *arg)
{
	unsigned k, m;
	int n = 0;

	if (sscanf(arg, "%u+%u%n", &k, &m, &n) != 2 || arg[n] || !k || !m ||
	    k + m > BENCH_EC_N_MAX)
		usage_error("--ec: K+M, such as 4+2 (k + m at most %u)",
			    BENCH_EC_N_MAX);
	bp->cluster.ec_k = k;
	bp->cluster.ec_m = m;
}

/* parse_num -- a decimal count with an optional K/M/G suffix (x1024). */
static uint64_t parse_num(const char *opt, const char *s, uint64_t min,
			  uint64_t max)
{
	unsigned long long v;
	char *end;
	unsigned shift = 0;

	errno = 0;
	if (*s < '0' || *s > '9')
		usage_error("%s: '%s' is not a number", opt, s);
	v = strtoull(s, &end, 10);
	if (errno)
		usage_error("%s: '%s' is out of range", opt, s);
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end)
		usage_error("%s: '%s' is not a number", opt, s);
	if (shift && v > (UINT64_MAX >> shift))
		usage_error("%s: '%s' is out of range", opt, s);
	v <<= shift;
	if (v < min || v > max)
		usage_error("%s: %s is outside %" PRIu64 "..%" PRIu64, opt, s,
			    min, max);
	return v;
}

/* split_server -- HOST, HOST:PORT, [V6]:PORT or a bare IPv6 address. */
static void split_server(struct bench *bp, const char *s)
{
	if (rmp_split_server(s, bp->host, sizeof(bp->host), &bp->port))
		usage_error("invalid server address '%s'", s);
}

/* check_cluster -- what a lease placed on a cluster (-C) can be used for:
 * one connection per node, all in this thread; a mirrored lease takes
 * only the synchronous reads and writes (rmp_post_* and atomics give
 * -EOPNOTSUPP on it). */
static void check_cluster(struct bench *bp, bool have_server)
{
	if (!bp->cluster.url) {
		if (bp->cluster.replicas || bp->cluster.stripes ||
		    bp->cluster.prefer || bp->cluster.ec_k ||
		    bp->cluster.lose >= 0 || bp->cluster.copy)
			usage_error("--replicas, --stripes, --ec, --lose, "
				    "--copy and --prefer are for a cluster "
				    "(-C URL)");
		if (!have_server)
			usage_error("-s HOST[:PORT] or -C URL is required");
		return;
	}
	if (have_server)
		usage_error("-s or -C, not both: -C places the leases");
	if (bp->cluster.ec_k && (bp->cluster.replicas || bp->cluster.stripes))
		usage_error("--ec: no --replicas or --stripes (the code "
			    "places its members)");
	if (!bp->cluster.replicas)
		bp->cluster.replicas = 1;
	if (!bp->cluster.stripes)
		bp->cluster.stripes = 1;
	if (bp->cluster.lose >= 0 &&
	    (unsigned)bp->cluster.lose >= bench_cluster_members(&bp->cluster))
		usage_error("--lose %d: the lease has %u members (0..%u)",
			    bp->cluster.lose,
			    bench_cluster_members(&bp->cluster),
			    bench_cluster_members(&bp->cluster) - 1);
	if (bp->cluster.lose >= 0 && bp->mode == ALLOC_LAT)
		usage_error("--lose: a data mode (alloc-lat times new leases)");
	if (bp->mode == ATTACH_LAT)
		usage_error("attach-lat is for one server (-s)");
	if (bp->cluster.copy && bp->mode != READ_LAT &&
	    bp->mode != WRITE_LAT)
		usage_error("--copy: read-lat and write-lat (the others need "
			    "a registered buffer)");
	if (bp->cluster.copy && bp->busy_poll)
		usage_error("--copy: no --busy-poll (rmp_post_* needs a "
			    "registered buffer)");
	if (bp->threads > 1)
		usage_error("--threads is for one server (-s)");
	if (bench_cluster_members(&bp->cluster) == 1)
		return;
	if (bp->busy_poll)
		usage_error("--busy-poll: a mirrored or striped lease takes "
			    "no rmp_post_*; it runs synchronous calls only");
	if (bp->mode == FAA_LAT || bp->mode == CAS_LAT ||
	    bp->mode == READ_BW || bp->mode == WRITE_BW)
		usage_error("%s: a mirrored or striped lease takes "
			    "synchronous reads and writes only",
			    mode_names[bp->mode]);
}

/* check_rails -- --rails N: a bandwidth mode of one power-of-two size
 * on one server, keeping the first N of -s's addresses. */
static void check_rails(struct bench *bp)
{
	unsigned n = 1;
	char *p;

	if (bp->rails && bp->rail_stripe)
		usage_error("--rails cuts in --size pieces: no --rail-stripe");
	if (!bp->rails)
		return;
	if (bp->mode != READ_BW && bp->mode != WRITE_BW)
		usage_error("--rails is for the bandwidth modes");
	if (bp->threads > 1 || bp->cluster.url)
		usage_error("--rails takes one server (-s), no --threads");
	if (bp->nsizes != 1 || bp->size < 4096 || (bp->size & (bp->size - 1)))
		usage_error("--rails takes one --size, a power of two >= 4096");
	for (p = bp->host; (p = strchr(p, ',')) != NULL; p++) {
		if (n == bp->rails) {
			*p = '\0'; /* the first N addresses */
			break;
		}
		n++;
	}
	if (n < bp->rails)
		usage_error("--rails %u: -s names %u address(es)", bp->rails,
			    n);
}

/* check_mode -- the sizes, depth and threads the mode takes. */
static void check_mode(struct bench *bp, bool have_size)
{
	size_t i;

	if (bp->mode == FAA_LAT || bp->mode == CAS_LAT) {
		if (have_size && (bp->nsizes != 1 || bp->sizes[0] != 8))
			usage_error("%s works on 8 bytes (--size 8)",
				    mode_names[bp->mode]);
		bp->sizes[0] = 8;
		bp->nsizes = 1;
	} else if (bp->mode == ALLOC_LAT || bp->mode == ATTACH_LAT) {
		if (bp->busy_poll)
			usage_error("--busy-poll is for the data modes");
	}
	if (!bp->nsizes) {
		bp->sizes[0] = bp->mode == READ_BW || bp->mode == WRITE_BW ?
				       65536 :
			       bp->mode == ALLOC_LAT ? 4096 : 64;
		bp->nsizes = 1;
	}
	if (!bp->threads)
		bp->threads = 1;
	if (bp->threads > 1 && bp->mode != READ_BW && bp->mode != WRITE_BW)
		usage_error("--threads is for the bandwidth modes");
	if (bp->mode != READ_BW && bp->mode != WRITE_BW)
		bp->depth = 1; /* one synchronous call at a time */
	else if (bp->busy_poll)
		usage_error("--busy-poll is for the latency modes");
	/* Lease and buffer are sized for the largest. */
	bp->size = 0;
	for (i = 0; i < bp->nsizes; i++)
		if (bp->sizes[i] > bp->size)
			bp->size = bp->sizes[i];
	if ((uint64_t)bp->size * bp->depth > (UINT64_C(1) << 34))
		usage_error("--size x --depth above 16 GiB");
}

void parse_args(struct bench *bp, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "replicas", required_argument, NULL, 'R' },
		{ "stripes", required_argument, NULL, 'K' },
		{ "prefer", required_argument, NULL, 'L' },
		{ "ec", required_argument, NULL, 'E' },
		{ "lose", required_argument, NULL, 'X' },
		{ "copy", no_argument, NULL, 'c' },
		{ "rail-stripe", required_argument, NULL, 'Z' },
		{ "size", required_argument, NULL, 'z' },
		{ "iters", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "busy-poll", no_argument, NULL, 'p' },
		{ "spin-max-us", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "threads", required_argument, NULL, 'T' },
		{ "progress", no_argument, NULL, 'P' },
		{ "rails", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_server = false, have_size = false;
	size_t i;
	int o;

	bp->iters = 1000;
	bp->depth = 16;
	bp->warmup = 100;
	bp->spin_max_us = -1;
	bp->cluster.lose = -1;
	while ((o = getopt_long(argc, argv, "s:C:h", longopts, NULL)) != -1) {
		switch (o) {
		case 's':
			split_server(bp, optarg);
			have_server = true;
			break;
		case 'C':
			bp->cluster.url = optarg;
			break;
		case 'R':
			bp->cluster.replicas = (unsigned)parse_num(
				"--replicas", optarg, 1, BENCH_REPLICAS_MAX);
			break;
		case 'K':
			bp->cluster.stripes = (unsigned)parse_num(
				"--stripes", optarg, 1, BENCH_STRIPES_MAX);
			break;
		case 'L':
			bp->cluster.prefer = optarg;
			break;
		case 'E':
			parse_ec(bp, optarg);
			break;
		case 'c':
			bp->cluster.copy = true;
			break;
		case 'X':
			bp->cluster.lose = (int)parse_num("--lose", optarg, 0,
							  BENCH_EC_N_MAX - 1);
			break;
		case 'Z':
			bp->rail_stripe = (size_t)parse_num("--rail-stripe",
				optarg, 4096, UINT64_C(1) << 30);
			if (bp->rail_stripe & (bp->rail_stripe - 1))
				usage_error("--rail-stripe: a power of two");
			break;
		case 'z':
			parse_sizes(bp, optarg);
			have_size = true;
			break;
		case 'j':
			bp->json = true;
			break;
		case 'T':
			bp->threads = (unsigned)parse_num("--threads", optarg, 1,
							  MAX_THREADS);
			break;
		case 'P':
			bp->progress = true;
			break;
		case 'r':
			bp->rails = (unsigned)parse_num("--rails", optarg, 1,
							RMP_RAILS_MAX);
			break;
		case 'n':
			bp->iters = parse_num("--iters", optarg, 1,
					      UINT64_C(1) << 32);
			break;
		case 'd':
			bp->depth = (unsigned)parse_num("--depth", optarg, 1,
							MAX_DEPTH);
			break;
		case 'w':
			bp->warmup = parse_num("--warmup", optarg, 0,
					       UINT64_C(1) << 32);
			break;
		case 'p':
			bp->busy_poll = true;
			break;
		case 'S':
			bp->spin_max_us = (long)parse_num("--spin-max-us",
							  optarg, 0, 1000000);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind + 1 != argc)
		usage_error(optind == argc ? "missing MODE" :
					     "one MODE only");
	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(argv[optind], mode_names[i]) == 0)
			break;
	if (i == sizeof(mode_names) / sizeof(mode_names[0]))
		usage_error("unknown mode '%s'", argv[optind]);
	bp->mode = (enum mode)i;
	check_mode(bp, have_size);
	check_cluster(bp, have_server);
	check_rails(bp);
	if (!bp->progress)
		bp->progress = isatty(STDERR_FILENO);
}

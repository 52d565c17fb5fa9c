/* SPDX-License-Identifier: MIT */
/* rmpool_bench.c -- latency and bandwidth of librmpool's data path against a running rmpoold. */

/*
 * Usage: rmpool-bench {-s HOST[:PORT] | -C URL [--replicas N] [--stripes N]}
 *                     [--size N[,N...]] [--iters N]
 *                     [--depth N] [--warmup N] [--busy-poll]
 *                     [--spin-max-us N] [--threads N] [--json]
 *                     [--progress] MODE
 *
 * --threads N (bandwidth modes): N threads, each with its own client,
 * connection, lease and buffer (a client belongs to one thread), start
 * each size together; the result is their sum over the time from the
 * first start to the last end, with conns=N in the line.
 *
 * -C URL (etcd endpoints, as `rmpool -C`): no server of its own; the
 * lease is placed by rmp_cluster_alloc, with --replicas N (1 default;
 * 2..3: a mirrored lease, which takes only the synchronous reads and
 * writes), and alloc-lat times rmp_cluster_alloc + rmp_lease_free from
 * one rmp_cluster (the connections to the nodes opened in the warm-up).
 * Results are named apart: "cluster-alloc-lat", "write-lat-r2" (MODE-rN
 * for the data modes). Latency lines then end with etcd_reads=: the
 * reads of the membership (Range calls, Watch streams) etcd counted in
 * its /metrics while the loop was timed, 0 when placing costs no etcd
 * round trip (bench_cluster.c).
 *
 * --rails N (bandwidth modes, -s A1,A2,..): one client over the first N
 * addresses of -s, the node's rails (N = 1: the first address alone,
 * the one-rail figure to compare with). Each window of DEPTH x SIZE
 * bytes is one synchronous rmp_read or rmp_write, which the library cuts
 * into SIZE-byte pieces (rail_stripe = SIZE) dealt over the rails, all
 * in flight before any is waited for; the line is "read-bw-rails2" and
 * ends with rails_share=: each rail's percent of the bytes it moved.
 *
 * --size takes a list: the sizes run one after the other on the same
 * connection and lease, one result each (a sweep). --json prints each
 * result as one JSON object per line instead of key=value. --progress
 * (or a terminal on stderr) shows a progress line there, once a second.
 *
 * Modes (the counterpart in perftest in brackets):
 *   read-lat   synchronous rmp_read of SIZE bytes     [ib_read_lat]
 *   write-lat  synchronous rmp_write of SIZE bytes    [ib_write_lat is a
 *              ping-pong, not the same thing: compare with care]
 *   faa-lat    synchronous 8-byte rmp_faa             [ib_atomic_lat -A FETCH_AND_ADD]
 *   cas-lat    synchronous 8-byte rmp_cas, always swapping [ib_atomic_lat -A CMP_AND_SWAP]
 *   alloc-lat  rmp_lease_alloc of SIZE bytes (default 4096) + rmp_lease_free:
 *              two control round trips per sample [ib_send_lat, twice]
 *   attach-lat a second connection attaches the lease by token, its access
 *              alternating between read-only and all, so that every attach
 *              revokes its last key and binds a new one: one control round
 *              trip per sample [ib_send_lat]
 *   read-bw    DEPTH asynchronous READs in flight     [ib_read_bw]
 *   write-bw   DEPTH asynchronous WRITEs in flight    [ib_write_bw]
 *
 * --busy-poll (latency modes): instead of the synchronous call, post the
 * one operation with rmp_post_*, rmp_submit it and spin on rmp_poll(c, ..,
 * 0) until it completes, as perftest spins on its CQ. The synchronous calls
 * spin for about twice their recent latency and then sleep on the
 * completion channel; comparing the two separates the wait strategy from
 * the rest of the library's path. The output line then says
 * "read-lat-poll" (etc.) instead of "read-lat".
 *
 * --spin-max-us N sets rmp_client_opts.spin_max_us (default: the
 * library's). With 0 the synchronous calls sleep at once, and the output
 * line says "read-lat-sleep" (etc.).
 *
 * The local memory is one buffer registered with rmp_buf_reg, so the sync
 * calls are zero copy too. The lease is max(SIZE * DEPTH, 1 MiB) bytes,
 * ephemeral and auto-renewed (no ttl runs out in a long run), and freed at
 * the end. Before timing, a warm-up of --warmup operations (default 100)
 * runs and a small write/read-back checks that the data path moves the
 * right bytes. Every return code is checked: any error ends the run with
 * a message on stderr and exit status 1 (2 for a usage error).
 *
 * Output: one line per result on stdout, key=value, fixed order:
 *   rmpool read-lat size=64 iters=2000 min=.. median=.. p99=.. p99.9=.. avg=.. us sleeps=..
 *   rmpool read-lat-poll size=64 ...            (the same with --busy-poll)
 *   rmpool write-bw size=65536 iters=2000 depth=16 MB/s=.. MiB/s=.. Gb/s=.. ops/s=..
 * or with --json:
 *   {"tool":"rmpool","mode":"read-lat","size":64,"iters":2000,"min_us":..,
 *    "median_us":..,"p99_us":..,"p999_us":..,"avg_us":..,"sleeps_per_op":..}
 * sleeps: the thread's voluntary context switches per timed operation (a
 * waiting call that slept on the completion channel, or a control
 * request's; 0 for a caller that only polls).
 *   {"tool":"rmpool","mode":"write-bw","size":65536,"iters":2000,"depth":16,
 *    "MBps":..,"MiBps":..,"Gbps":..,"ops_per_s":..}
 * Latencies are in microseconds, measured per call with CLOCK_MONOTONIC;
 * MB = 10^6 bytes, MiB = 2^20 bytes (perftest's "MB/sec"), Gb = 10^9 bits.
 * Bandwidth is timed from the first submit to the last completion.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define MIN_LEASE (1u << 20)
#define POLL_TIMEOUT_MS 10000

/* For fail(): the calling thread's client's last error. */
static __thread struct bench *g_bench;

/* fail -- report a failed call with the library's detail, exit 1. */
static void fail(const char *what, int err)
{
	const char *detail = g_bench && g_bench->c ?
				     rmp_client_last_error(g_bench->c) : "";

	fprintf(stderr, "rmpool-bench: %s: %s (%d)%s%s\n", what,
		rmp_strerror(err), err, *detail ? ": " : "", detail);
	exit(1);
}

static void failx(const char *fmt, ...)
{
	va_list ap;

	fputs("rmpool-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* server_lease -- connect to the server (-s), lease there. */
static void server_lease(struct bench *bp, const struct rmp_client_opts *co)
{
	struct rmp_alloc_opts ao;
	int err;

	err = rmp_client_new(&bp->c, co);
	if (err)
		fail("rmp_client_new", err);
	err = rmp_client_connect(bp->c, bp->host, bp->port);
	if (err)
		fail("connect", err);
	rmp_alloc_opts_init(&ao);
	ao.flags = RMP_LEASE_EPHEMERAL | RMP_LEASE_AUTO_RENEW;
	err = rmp_lease_alloc(bp->c, bp->lease_len, &ao, &bp->l);
	if (err)
		fail("rmp_lease_alloc", err);
}

/* cluster_lease -- a lease placed on the cluster (-C), as many replicas
 * as asked; bp->c is the connection to the first (the one read). */
static void cluster_lease(struct bench *bp, const struct rmp_client_opts *co)
{
	struct rmp_client **cs = bp->member_c;
	unsigned n, want = bench_cluster_members(&bp->cluster);

	bench_cluster_open(&bp->cluster, co);
	bench_cluster_alloc(&bp->cluster, bp->lease_len,
			    RMP_LEASE_EPHEMERAL | RMP_LEASE_AUTO_RENEW, &bp->l);
	n = bench_cluster_clients(&bp->cluster, bp->l, cs, BENCH_MEMBERS_MAX);
	if (n != want)
		failx("a lease of %u members asked for, %u granted", want, n);
	bp->member_nc = n;
	bp->leased = bench_cluster_leased(&bp->cluster, cs, n);
	if (bp->cluster.lose >= 0)
		bench_cluster_lose(&bp->cluster, bp->l,
				   (unsigned)bp->cluster.lose);
	bp->c = cs[0];
	/* The buffer is registered with each replica's connection below
	 * (not with --copy). */
	for (unsigned i = 1; i < n && !bp->cluster.copy; i++) {
		int err = rmp_buf_reg(cs[i], bp->mem, bp->mem_len,
				      &bp->replica_b[i - 1]);

		if (err)
			fail("rmp_buf_reg (a further replica)", err);
		bp->replica_nb = i;
	}
}

/* setup -- connect, lease, register the local buffer, check the path. */
static void setup(struct bench *bp)
{
	struct rmp_client_opts co;
	struct rmp_lease_info li;
	size_t check, i;
	int err;

	rmp_client_opts_init(&co);
	co.name = "rmpool-bench";
	/* The tenant and its key file, as for the rmpool command. */
	co.tenant = getenv("RMPOOL_TENANT");
	co.key_file = co.tenant && *co.tenant ? getenv("RMPOOL_KEY_FILE") :
		      NULL;
	co.max_inflight = bp->depth > 128 ? bp->depth : 128;
	if (bp->spin_max_us >= 0)
		co.spin_max_us = (unsigned)bp->spin_max_us;
	if (bp->rails)
		co.rail_stripe = bp->size;
	if (bp->rail_stripe)
		co.rail_stripe = bp->rail_stripe;

	/* One slot of SIZE bytes per operation in flight, page aligned;
	 * one more slot for the check below. */
	bp->mem_len = bp->size * ((size_t)bp->depth + 1);
	bp->mem_len = (bp->mem_len + 4095) / 4096 * 4096;
	bp->mem = aligned_alloc(4096, bp->mem_len);
	if (!bp->mem)
		failx("cannot allocate %zu bytes", bp->mem_len);
	for (i = 0; i < bp->mem_len; i++)
		bp->mem[i] = (char)(i * 131 + 7);

	bp->lease_len = (uint64_t)bp->size * bp->depth;
	if (bp->lease_len < MIN_LEASE)
		bp->lease_len = MIN_LEASE;
	if (bp->cluster.url)
		cluster_lease(bp, &co);
	else
		server_lease(bp, &co);
	li.size = sizeof(li);
	err = rmp_lease_info(bp->l, &li);
	if (err)
		fail("rmp_lease_info", err);
	if (li.length < bp->lease_len)
		failx("lease of %" PRIu64 " bytes granted for %" PRIu64,
		      li.length, bp->lease_len);
	if (bp->mode == ATTACH_LAT) {
		/* The second connection, of the same tenant. */
		co.name = "rmpool-bench-attach";
		err = rmp_client_new(&bp->c2, &co);
		if (err)
			fail("rmp_client_new", err);
		err = rmp_client_connect(bp->c2, bp->host, bp->port);
		if (err)
			fail("connect (second connection)", err);
		if (rmp_lease_token(bp->l, bp->token, sizeof(bp->token)) < 0)
			failx("rmp_lease_token failed");
	}

	err = bp->cluster.copy ? 0 :
	      rmp_buf_reg(bp->c, bp->mem, bp->mem_len, &bp->b);
	if (err)
		fail("rmp_buf_reg", err);

	/* The data path moves the right bytes (a broken one would make any
	 * figure meaningless): write slot 0, read it back into the spare. */
	check = bp->size < 4096 ? bp->size : 4096;
	err = rmp_write(bp->l, 0, bp->mem, check);
	if (err)
		fail("check: rmp_write", err);
	err = rmp_read(bp->l, 0, bp->mem + bp->size * bp->depth, check);
	if (err)
		fail("check: rmp_read", err);
	if (memcmp(bp->mem, bp->mem + bp->size * bp->depth, check))
		failx("check: the %zu bytes read back differ from those "
		      "written", check);
}

/* print_pinned -- what the nodes held for the lease per byte of it: the
 * tenant's bytes on its members' nodes with the lease, less without it
 * (freed). 1.00 for a lease of one node, the replicas for a mirror,
 * (k + m) / k for an erasure-coded lease, and more where a member is
 * rounded up by its pool. */
static void print_pinned(struct bench *bp)
{
	uint64_t after = bench_cluster_leased(&bp->cluster, bp->member_c,
					      bp->member_nc);
	uint64_t held = bp->leased > after ? bp->leased - after : 0;
	char kind[32] = "";

	bench_cluster_suffix(&bp->cluster, kind, sizeof(kind));
	printf(bp->json ?
		       "{\"tool\":\"rmpool\",\"mode\":\"pinned%s\",\"size\":"
		       "%" PRIu64 ",\"bytes\":%" PRIu64 ",\"per_byte\":%.3f}\n" :
		       "rmpool pinned%s size=%" PRIu64 " bytes=%" PRIu64
		       " per_byte=%.3f\n",
	       kind, bp->lease_len, held, (double)held / (double)bp->lease_len);
}

static void teardown(struct bench *bp)
{
	int err;

	rmp_buf_dereg(bp->b);
	bp->b = NULL;
	for (unsigned i = 0; i < bp->replica_nb; i++)
		rmp_buf_dereg(bp->replica_b[i]);
	bp->replica_nb = 0;
	rmp_client_free(bp->c2);
	bp->c2 = NULL;
	err = rmp_lease_free(bp->l);
	bp->l = NULL;
	if (err && !(bp->cluster.lose >= 0 && err == -ENOENT))
		fail("rmp_lease_free", err); /* a lost member: gone already */
	if (bp->cluster.url && bp->cluster.lose < 0)
		print_pinned(bp);
	if (bp->cluster.url)
		bench_cluster_close(&bp->cluster); /* its connections too */
	else
		rmp_client_free(bp->c);
	bp->c = NULL;
	free(bp->mem);
}

/* ---- latency --------------------------------------------------------- */

/* The counter's value before the next FAA (or swapping CAS). */
static uint64_t faa_expect;

/* check_old -- an atomic returned the counter's value: the next one. */
static void check_old(const char *call, uint64_t old)
{
	if (old != faa_expect)
		failx("%s returned %" PRIu64 ", expected %" PRIu64, call, old,
		      faa_expect);
	faa_expect++;
}

/* polled_op -- one operation posted asynchronously, then spin on rmp_poll. */
static void polled_op(struct bench *bp)
{
	struct rmp_completion comp;
	uint64_t old, spins = 0, deadline = 0;
	int err;

	switch (bp->mode) {
	case READ_LAT:
		err = rmp_post_read(bp->l, 0, bp->b, 0, bp->size, 1);
		break;
	case WRITE_LAT:
		err = rmp_post_write(bp->l, 0, bp->b, 0, bp->size, 1);
		break;
	case FAA_LAT:
		err = rmp_post_faa(bp->l, 0, 1, bp->b, 0, 1);
		break;
	case CAS_LAT:
		err = rmp_post_cas(bp->l, 0, faa_expect, faa_expect + 1, bp->b,
				   0, 1);
		break;
	default:
		abort();
	}
	if (err)
		fail("rmp_post", err);
	err = rmp_submit(bp->c);
	if (err != 1)
		fail("rmp_submit", err < 0 ? err : -EPROTO);
	while ((err = rmp_poll(bp->c, &comp, 1, 0)) == 0) {
		/* Read the clock only now and then: it is a spin loop. */
		if (++spins % 1024 == 0) {
			if (!deadline)
				deadline = now_ns() + POLL_TIMEOUT_MS * 1000000ull;
			else if (now_ns() > deadline)
				failx("no completion within %d ms",
				      POLL_TIMEOUT_MS);
		}
	}
	if (err < 0)
		fail("rmp_poll", err);
	if (comp.status)
		fail("completion", comp.status);
	if (bp->mode == FAA_LAT || bp->mode == CAS_LAT) {
		memcpy(&old, bp->mem, sizeof(old));
		check_old(bp->mode == FAA_LAT ? "rmp_post_faa" : "rmp_post_cas",
			  old);
	}
}

/* alloc_free -- one lease of SIZE bytes granted and given back (placed
 * on the cluster with -C: by the membership this process holds). */
static void alloc_free(struct bench *bp)
{
	struct rmp_alloc_opts ao;
	struct rmp_lease *l;
	int err;

	if (bp->cluster.url) {
		bench_cluster_alloc(&bp->cluster, bp->size,
				    RMP_LEASE_EPHEMERAL, &l);
		err = rmp_lease_free(l);
		if (err)
			fail("rmp_lease_free", err);
		return;
	}
	rmp_alloc_opts_init(&ao);
	ao.flags = RMP_LEASE_EPHEMERAL;
	err = rmp_lease_alloc(bp->c, bp->size, &ao, &l);
	if (err)
		fail("rmp_lease_alloc", err);
	err = rmp_lease_free(l);
	if (err)
		fail("rmp_lease_free", err);
}

/* attach_once -- the second connection attaches with a new key. */
static void attach_once(struct bench *bp)
{
	struct rmp_attach_opts ao;
	struct rmp_lease *l;
	int err;

	rmp_attach_opts_init(&ao);
	ao.access = bp->attaches++ % 2 ? RMP_ACCESS_ALL : RMP_ACCESS_READ;
	err = rmp_lease_attach_with(bp->c2, bp->token, &ao, &l);
	if (err)
		fail("rmp_lease_attach_with", err);
	rmp_lease_close(l);
}

/* one_op -- one synchronous call of the mode (or a polled one). */
static void one_op(struct bench *bp)
{
	uint64_t old;
	int err;

	if (bp->busy_poll) {
		polled_op(bp);
		return;
	}
	switch (bp->mode) {
	case READ_LAT:
		err = rmp_read(bp->l, 0, bp->mem, bp->size);
		if (err)
			fail("rmp_read", err);
		break;
	case WRITE_LAT:
		err = rmp_write(bp->l, 0, bp->mem, bp->size);
		if (err)
			fail("rmp_write", err);
		break;
	case FAA_LAT:
		err = rmp_faa(bp->l, 0, 1, &old);
		if (err)
			fail("rmp_faa", err);
		check_old("rmp_faa", old);
		break;
	case CAS_LAT:
		/* Always the expected value: every CAS swaps. */
		err = rmp_cas(bp->l, 0, faa_expect, faa_expect + 1, &old);
		if (err)
			fail("rmp_cas", err);
		check_old("rmp_cas", old);
		break;
	case ALLOC_LAT:
		alloc_free(bp);
		break;
	case ATTACH_LAT:
		attach_once(bp);
		break;
	default:
		abort();
	}
}

/* base_name -- the mode's name, told apart on a cluster (-C):
 * "cluster-alloc-lat" (with "-r2" for mirrored leases), or a data mode
 * with the lease's kind, "write-lat-r2". */
static void base_name(const struct bench *bp, char *buf, size_t len)
{
	char kind[32] = "";

	if (bp->cluster.url)
		bench_cluster_suffix(&bp->cluster, kind, sizeof(kind));
	if (bp->cluster.url && bp->mode == ALLOC_LAT)
		snprintf(buf, len, "cluster-%s%s", mode_names[bp->mode],
			 bp->cluster.replicas > 1 || bp->cluster.stripes > 1 ?
			 kind : "");
	else if (bp->rails)
		snprintf(buf, len, "%s-rails%u", mode_names[bp->mode],
			 bp->rails);
	else
		snprintf(buf, len, "%s%s", mode_names[bp->mode], kind);
}

/* The mode's name as printed: "-poll" / "-sleep" tell the variant. */
static void result_name(const struct bench *bp, char *buf, size_t len)
{
	char base[48];

	base_name(bp, base, sizeof(base));
	snprintf(buf, len, "%s%s", base,
		 bp->busy_poll ? "-poll" : bp->spin_max_us == 0 ? "-sleep" :
								  "");
}

/* progress -- once a second (with --progress), how far the run is. */
static void progress(struct bench *bp, const char *phase, uint64_t i,
		     uint64_t n)
{
	char name[64];
	uint64_t t;

	if (!bp->progress)
		return;
	t = now_ns();
	if (!bp->progress_at) {
		bp->progress_at = t + 1000000000u;
		return;
	}
	if (t < bp->progress_at)
		return;
	bp->progress_at = t + 1000000000u;
	result_name(bp, name, sizeof(name));
	fprintf(stderr, "rmpool-bench: %s size=%zu: %s %" PRIu64 " of %"
		PRIu64 "\n", name, bp->size, phase, i, n);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* voluntary_switches -- times this thread has slept so far (a waiting
 * call that sleeps on the completion channel is one). */
static uint64_t voluntary_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (uint64_t)ru.ru_nvcsw;
}

static void run_lat(struct bench *bp)
{
	uint64_t *t, i, t0, sum = 0, median2, p99i, p999i, sleeps;
	long long etcd0 = -1, etcd1 = -1;
	char name[64], etcd[48] = "";
	int err;

	t = malloc(bp->iters * sizeof(*t));
	if (!t)
		failx("cannot allocate %" PRIu64 " samples", bp->iters);
	if (bp->mode == FAA_LAT || bp->mode == CAS_LAT) {
		/* A known start value: every old value is then checked. */
		memset(bp->mem, 0, 8);
		err = rmp_write(bp->l, 0, bp->mem, 8);
		if (err)
			fail("rmp_write", err);
		faa_expect = 0;
	}
	for (i = 0; i < bp->warmup; i++) {
		one_op(bp);
		progress(bp, "warm-up", i, bp->warmup);
	}
	if (bp->cluster.url)
		etcd0 = bench_etcd_reads(&bp->cluster);
	sleeps = voluntary_switches();
	for (i = 0; i < bp->iters; i++) {
		t0 = now_ns();
		one_op(bp);
		t[i] = now_ns() - t0;
		progress(bp, "timed", i, bp->iters);
	}
	sleeps = voluntary_switches() - sleeps;
	/* What etcd was asked while the loop ran: the proof that placing
	 * costs no etcd round trip. */
	if (etcd0 >= 0)
		etcd1 = bench_etcd_reads(&bp->cluster);
	if (etcd1 >= 0)
		snprintf(etcd, sizeof(etcd), bp->json ? ",\"etcd_reads\":%lld" :
			 " etcd_reads=%lld", etcd1 - etcd0);
	else if (bp->cluster.url)
		fprintf(stderr, "rmpool-bench: etcd's /metrics could not be "
			"read: no etcd_reads\n");
	qsort(t, bp->iters, sizeof(*t), cmp_u64);
	for (i = 0; i < bp->iters; i++)
		sum += t[i];
	/* median: the middle sample, or the mean of the two middle ones
	 * (kept doubled to stay in integers); p99: nearest rank. */
	median2 = bp->iters % 2 ? 2 * t[bp->iters / 2] :
				  t[bp->iters / 2 - 1] + t[bp->iters / 2];
	p99i = (bp->iters * 99 + 99) / 100; /* ceil(0.99 n), 1-based */
	p999i = (bp->iters * 999 + 999) / 1000;
	result_name(bp, name, sizeof(name));
	printf(bp->json ?
		       "{\"tool\":\"rmpool\",\"mode\":\"%s\",\"size\":%zu,"
		       "\"iters\":%" PRIu64 ",\"min_us\":%.2f,\"median_us\":"
		       "%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,\"avg_us\":"
		       "%.2f,\"sleeps_per_op\":%.3f%s}\n" :
		       "rmpool %s size=%zu iters=%" PRIu64 " min=%.2f median="
		       "%.2f p99=%.2f p99.9=%.2f avg=%.2f us sleeps=%.3f%s\n",
	       name, bp->size, bp->iters, t[0] / 1e3, median2 / 2e3,
	       t[p99i - 1] / 1e3, t[p999i - 1] / 1e3,
	       (double)sum / (double)bp->iters / 1e3,
	       (double)sleeps / (double)bp->iters, etcd);
	free(t);
}

/* ---- bandwidth ------------------------------------------------------- */

/* post_one -- queue one operation on slot `slot` (buffer and lease). */
static void post_one(struct bench *bp, unsigned slot)
{
	size_t off = (size_t)slot * bp->size;
	int err;

	if (bp->mode == READ_BW)
		err = rmp_post_read(bp->l, off, bp->b, off, bp->size, slot);
	else
		err = rmp_post_write(bp->l, off, bp->b, off, bp->size, slot);
	if (err == -EAGAIN)
		failx("--depth %u is above what this connection may have in "
		      "flight (%s)", bp->depth, rmp_client_last_error(bp->c));
	if (err)
		fail(bp->mode == READ_BW ? "rmp_post_read" : "rmp_post_write",
		     err);
}

/*
 * pump -- run n operations with at most depth in flight: fill the window,
 * then repost each slot as its completion comes back (one submit, one
 * doorbell, per batch of completions).
 */
static void pump(struct bench *bp, uint64_t n, struct rmp_completion *comp)
{
	uint64_t posted = 0, done = 0;
	unsigned slot;
	int got, k, err;

	while (posted < n && posted < bp->depth)
		post_one(bp, (unsigned)posted++);
	err = rmp_submit(bp->c);
	if (err < 0)
		fail("rmp_submit", err);
	while (done < n) {
		got = rmp_poll(bp->c, comp, (int)bp->depth, POLL_TIMEOUT_MS);
		if (got < 0)
			fail("rmp_poll", got);
		if (got == 0)
			failx("no completion within %d ms (%" PRIu64 " of %"
			      PRIu64 " done)", POLL_TIMEOUT_MS, done, n);
		progress(bp, "done", done, n);
		for (k = 0; k < got; k++) {
			if (comp[k].status)
				fail("completion", comp[k].status);
			slot = (unsigned)comp[k].user_data;
			done++;
			if (posted < n) {
				post_one(bp, slot);
				posted++;
			}
		}
		err = rmp_submit(bp->c);
		if (err < 0)
			fail("rmp_submit", err);
	}
}

/* rails_share -- " rails_share=50.0/50.0": each rail's percent of the
 * bytes the client's rails moved (--rails). */
static void rails_share(const struct bench *bp, char *buf, size_t len)
{
	struct rmp_rail_info ri[RMP_RAILS_MAX];
	uint64_t sum = 0, b[RMP_RAILS_MAX];
	size_t at;
	int n;

	for (unsigned i = 0; i < RMP_RAILS_MAX; i++)
		ri[i].size = sizeof(ri[i]);
	n = rmp_client_rails(bp->c, ri, RMP_RAILS_MAX);
	if (n < 0)
		fail("rmp_client_rails", n);
	if (n > (int)RMP_RAILS_MAX)
		n = (int)RMP_RAILS_MAX;
	for (int i = 0; i < n; i++)
		sum += b[i] = ri[i].bytes_read + ri[i].bytes_written;
	at = (size_t)snprintf(buf, len, bp->json ? ",\"rails_share\":\"" :
				   " rails_share=");
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%.1f",
				       i ? "/" : "", sum ? 100.0 * (double)b[i] /
				       (double)sum : n == 1 ? 100.0 : 0.0);
	if (bp->json && at < len)
		snprintf(buf + at, len - at, "\"");
}

/* print_bw -- one bandwidth result: conns connections, ns elapsed. */
static void print_bw(const struct bench *bp, unsigned conns, uint64_t ns)
{
	double secs = (double)ns / 1e9;
	double ops = (double)bp->iters * conns;
	double bytes = (double)bp->size * ops;
	char extra[32] = "", name[64], share[96] = "";

	base_name(bp, name, sizeof(name));
	if (conns > 1)
		snprintf(extra, sizeof(extra),
			 bp->json ? ",\"conns\":%u" : " conns=%u", conns);
	if (bp->rails)
		rails_share(bp, share, sizeof(share));
	printf(bp->json ?
		       "{\"tool\":\"rmpool\",\"mode\":\"%s\",\"size\":%zu,"
		       "\"iters\":%" PRIu64 ",\"depth\":%u%s,\"MBps\":%.2f,"
		       "\"MiBps\":%.2f,\"Gbps\":%.3f,\"ops_per_s\":%.0f%s}\n" :
		       "rmpool %s size=%zu iters=%" PRIu64 " depth=%u%s MB/s=%.2f "
		       "MiB/s=%.2f Gb/s=%.3f ops/s=%.0f%s\n",
	       name, bp->size, bp->iters, bp->depth, extra,
	       bytes / secs / 1e6, bytes / secs / 1048576.0,
	       bytes * 8 / secs / 1e9, ops / secs, share);
}

/* windows -- n operations of SIZE as synchronous calls of up to DEPTH of
 * them each (--rails): the library deals each call's pieces over the
 * rails. */
static void windows(struct bench *bp, uint64_t n)
{
	uint64_t done = 0, k;
	int err;

	while (done < n) {
		k = n - done < bp->depth ? n - done : bp->depth;
		if (bp->mode == READ_BW)
			err = rmp_read(bp->l, 0, bp->mem, k * bp->size);
		else
			err = rmp_write(bp->l, 0, bp->mem, k * bp->size);
		if (err)
			fail(bp->mode == READ_BW ? "rmp_read" : "rmp_write",
			     err);
		done += k;
		progress(bp, "done", done, n);
	}
}

static void run_bw(struct bench *bp)
{
	struct rmp_completion *comp;
	uint64_t t0, t1;

	comp = calloc(bp->depth, sizeof(*comp));
	if (!comp)
		failx("cannot allocate %u completions", bp->depth);
	if (bp->rails) {
		windows(bp, bp->warmup);
		t0 = now_ns();
		windows(bp, bp->iters);
		t1 = now_ns();
		print_bw(bp, 1, t1 - t0);
		free(comp);
		return;
	}
	if (bp->warmup)
		pump(bp, bp->warmup, comp);
	t0 = now_ns();
	pump(bp, bp->iters, comp);
	t1 = now_ns();
	print_bw(bp, 1, t1 - t0);
	free(comp);
}

/* ---- several connections ------------------------------------------- */

struct worker {
	struct bench b;
	pthread_t thread;
	uint64_t start[MAX_SIZES], end[MAX_SIZES];
};

static pthread_barrier_t start_line; /* every size starts together */

static void *bw_worker(void *arg)
{
	struct worker *w = arg;
	struct rmp_completion *comp;

	g_bench = &w->b;
	setup(&w->b);
	comp = calloc(w->b.depth, sizeof(*comp));
	if (!comp)
		failx("cannot allocate %u completions", w->b.depth);
	for (unsigned i = 0; i < w->b.nsizes; i++) {
		w->b.size = w->b.sizes[i];
		if (w->b.warmup)
			pump(&w->b, w->b.warmup, comp);
		pthread_barrier_wait(&start_line);
		w->start[i] = now_ns();
		pump(&w->b, w->b.iters, comp);
		w->end[i] = now_ns();
	}
	free(comp);
	teardown(&w->b);
	return NULL;
}

/* run_threads -- bp->threads connections at once, results summed. */
static void run_threads(struct bench *bp)
{
	unsigned n = bp->threads, k;
	struct worker *w = calloc(n, sizeof(*w));
	uint64_t first, last;
	int err;

	if (!w)
		failx("cannot allocate %u workers", n);
	if (pthread_barrier_init(&start_line, NULL, n))
		failx("pthread_barrier_init failed");
	for (k = 0; k < n; k++) {
		w[k].b = *bp;
		w[k].b.progress = bp->progress && k == 0;
		err = pthread_create(&w[k].thread, NULL, bw_worker, &w[k]);
		if (err)
			failx("pthread_create: %s", strerror(err));
	}
	for (k = 0; k < n; k++)
		pthread_join(w[k].thread, NULL);
	for (unsigned i = 0; i < bp->nsizes; i++) {
		first = w[0].start[i];
		last = w[0].end[i];
		for (k = 1; k < n; k++) {
			if (w[k].start[i] < first)
				first = w[k].start[i];
			if (w[k].end[i] > last)
				last = w[k].end[i];
		}
		bp->size = bp->sizes[i];
		print_bw(bp, n, last - first);
	}
	if (fflush(stdout))
		failx("writing the result: %s", strerror(errno));
	pthread_barrier_destroy(&start_line);
	free(w);
}

int main(int argc, char **argv)
{
	struct bench bench;

	memset(&bench, 0, sizeof(bench));
	g_bench = &bench;
	parse_args(&bench, argc, argv);
	if (bench.threads > 1) {
		run_threads(&bench);
		return 0;
	}
	setup(&bench);
	for (unsigned i = 0; i < bench.nsizes; i++) {
		bench.size = bench.sizes[i];
		if (bench.mode == READ_BW || bench.mode == WRITE_BW)
			run_bw(&bench);
		else
			run_lat(&bench);
		/* Each result is out as soon as it is known. */
		if (fflush(stdout))
			failx("writing the result: %s", strerror(errno));
	}
	teardown(&bench);
	return 0;
}

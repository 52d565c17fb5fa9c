/* SPDX-License-Identifier: MIT */
/*
 * rails_client.c -- rmp-rails: a client of one node's rails, for
 * test-rails.sh.
 *
 * Usage: rmp-rails ADDRS PORT both
 *   a 64 MiB lease written and read in one call each over the rails of
 *   ADDRS ("A1,A2"): the bytes read are those written, and every rail
 *   moved more than 30 % of them each way.
 * Usage: rmp-rails ADDRS PORT flap NETDEV SECONDS DOWN_AT UP_AT
 *   writes and reads of 8 MiB (checked) for SECONDS seconds; at DOWN_AT
 *   seconds `ip link set NETDEV down` (rail 1's interface), at UP_AT
 *   `ip link set NETDEV up`. No call may fail; rail 1 moves nothing from
 *   DOWN_AT + 1 s to UP_AT, and moves bytes again before the end.
 * Prints the rails' figures; exits 0 when all held, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmpool.h"

#define MIB (UINT64_C(1) << 20)
#define LEASE (64 * MIB)
#define CHUNK (8 * MIB)

static struct rmp_client *c;
static int failed;

static void fail(const char *what, int err)
{
	fprintf(stderr, "rmp-rails: FAIL: %s: %s (%s)\n", what,
		rmp_strerror(err), rmp_client_last_error(c));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* rails -- the rails' figures into r (2 of them), printed with tag. */
static void rails(struct rmp_rail_info *r, const char *tag)
{
	int n;

	for (int i = 0; i < 2; i++)
		r[i].size = sizeof(r[i]);
	n = rmp_client_rails(c, r, 2);
	if (n != 2)
		fail("rmp_client_rails gives 2 rails", n < 0 ? n : -1);
	for (int i = 0; i < 2; i++)
		printf("%s rail %d %s %s node %d %s read %" PRIu64 " written %"
		       PRIu64 " ops %" PRIu64 " failovers %" PRIu64 "\n", tag,
		       i, r[i].address, r[i].device, r[i].numa_node,
		       r[i].up ? "up" : "down", r[i].bytes_read,
		       r[i].bytes_written, r[i].ops, r[i].failovers);
	fflush(stdout);
}

static void expect(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "rmp-rails: FAIL: %s\n", what);
		failed = 1;
	}
}

/* rmp_rail_info as 0.6 first had it, without why: a program built then
 * passes an array of these. */
struct rail_info_first {
	size_t size;
	char address[64], device[64];
	int numa_node, up;
	uint64_t bytes_read, bytes_written, ops, failovers;
};

/* first_layout -- the older, smaller struct in an array of two, with a
 * guard after it: each element is filled as r (this layout's), nothing
 * written past the array. */
static void first_layout(const struct rmp_rail_info *r)
{
	struct {
		struct rail_info_first a[2];
		uint8_t guard[512];
	} o;

	memset(&o, 0xa5, sizeof(o));
	o.a[0].size = o.a[1].size = sizeof(o.a[0]);
	expect(rmp_client_rails(c, (struct rmp_rail_info *)(void *)o.a, 2) == 2,
	       "rmp_client_rails takes the first layout");
	for (int i = 0; i < 2; i++)
		expect(!strcmp(o.a[i].address, r[i].address) &&
		       !strcmp(o.a[i].device, r[i].device) &&
		       o.a[i].bytes_read == r[i].bytes_read &&
		       o.a[i].failovers == r[i].failovers,
		       "each element of the first layout is its rail's");
	for (size_t k = 0; k < sizeof(o.guard); k++)
		if (o.guard[k] != 0xa5) {
			expect(0, "nothing written past the first layout's array");
			break;
		}
}

static int both(struct rmp_lease *l)
{
	uint8_t *src = malloc(LEASE), *dst = malloc(LEASE);
	struct rmp_rail_info r[2];
	int err;

	fill(src, LEASE, 7);
	memset(dst, 0, LEASE);
	err = rmp_write(l, 0, src, LEASE);
	if (err)
		fail("write 64 MiB", err);
	err = rmp_read(l, 0, dst, LEASE);
	if (err)
		fail("read 64 MiB", err);
	expect(!memcmp(src, dst, LEASE), "the bytes read are those written");
	rails(r, "both");
	for (int i = 0; i < 2; i++) {
		expect(r[i].bytes_written > LEASE * 3 / 10,
		       "each rail wrote over 30 % of the bytes");
		expect(r[i].bytes_read > LEASE * 3 / 10,
		       "each rail read over 30 % of the bytes");
	}
	first_layout(r);
	free(src);
	free(dst);
	return failed;
}

static void ip_link(const char *dev, const char *state, double t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link set %s %s", dev, state);
	printf("%.2f s: %s\n", t, cmd);
	if (system(cmd))
		fail(cmd, -1);
}

/* rail_change -- print when rail 1 went down or came back up (at t s);
 * its state now. */
static int rail_change(int was_up, double t)
{
	struct rmp_rail_info r[2] = { { .size = sizeof(r[0]) },
				      { .size = sizeof(r[1]) } };

	if (rmp_client_rails(c, r, 2) != 2)
		fail("rmp_client_rails gives 2 rails", -1);
	if (r[1].up != was_up)
		printf("%.2f s: rail 1 %s\n", t, r[1].up ? "up" : "down");
	return r[1].up;
}

/* moved -- bytes rail i moved (read and written). */
static uint64_t moved(const struct rmp_rail_info *r, int i)
{
	return r[i].bytes_read + r[i].bytes_written;
}

static int flap(struct rmp_lease *l, const char *dev, double secs,
		double down_at, double up_at)
{
	uint8_t *src = malloc(CHUNK), *dst = malloc(CHUNK);
	struct rmp_rail_info a[2], b[2], e[2];
	double t0 = now_s(), t;
	int stage = 0, err, was_up = 1;
	unsigned long calls = 0;

	fill(src, CHUNK, 11);
	while ((t = now_s() - t0) < secs) {
		uint64_t off = (calls % (LEASE / CHUNK)) * CHUNK;

		if (stage == 0 && t >= down_at) {
			ip_link(dev, "down", t);
			stage = 1;
		} else if (stage == 1 && t >= down_at + 1) {
			rails(a, "down+1s");
			stage = 2;
		} else if (stage == 2 && t >= up_at) {
			rails(b, "before-up");
			ip_link(dev, "up", t);
			stage = 3;
		}
		src[0] = (uint8_t)calls;
		err = rmp_write(l, off, src, CHUNK);
		if (err)
			fail("a write while rails come and go", err);
		err = rmp_read(l, off, dst, CHUNK);
		if (err)
			fail("a read while rails come and go", err);
		if (memcmp(src, dst, CHUNK))
			fail("the bytes read are those written", -1);
		calls++;
		was_up = rail_change(was_up, now_s() - t0);
	}
	rails(e, "end");
	printf("%lu calls of 8 MiB each way in %.1f s\n", calls, secs);
	expect(stage == 3, "the link went down and up during the loop");
	expect(moved(b, 1) == moved(a, 1),
	       "rail 1 moved nothing while its link was down");
	expect(moved(b, 0) > moved(a, 0), "rail 0 carried on meanwhile");
	expect(moved(e, 1) > moved(b, 1),
	       "rail 1 moved bytes again after its link came back");
	expect(e[1].up && e[1].failovers >= 1, "rail 1 failed over and is up");
	free(src);
	free(dst);
	return failed;
}

int main(int argc, char **argv)
{
	struct rmp_client_opts o;
	struct rmp_lease *l;
	int err;

	if (argc < 4)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rmp_client_opts_init(&o);
	o.tenant = getenv("RMPOOL_TENANT");
	o.key_file = getenv("RMPOOL_KEY_FILE");
	err = rmp_client_new(&c, &o);
	if (err)
		fail("rmp_client_new", err);
	err = rmp_client_connect(c, argv[1], (uint16_t)atoi(argv[2]));
	if (err)
		fail("connect", err);
	err = rmp_lease_alloc(c, LEASE, NULL, &l);
	if (err)
		fail("alloc 64 MiB", err);
	if (!strcmp(argv[3], "both"))
		err = both(l);
	else if (!strcmp(argv[3], "flap") && argc == 8)
		err = flap(l, argv[4], atof(argv[5]), atof(argv[6]),
			   atof(argv[7]));
	else
		return 2;
	rmp_lease_free(l);
	rmp_client_free(c);
	return err ? 1 : 0;
}

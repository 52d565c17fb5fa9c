/* SPDX-License-Identifier: MIT */
/* rmp_test.c -- librmpool-based test client: one scenario per subcommand. */

/*
 * Usage: rmp-test SCENARIO HOST PORT [ARGS...]   (rmp-test pattern SEED LEN)
 *
 * Each scenario checks its own expectations and exits 0 when all held,
 * 1 (with a message naming the first that did not) otherwise. Data is a
 * deterministic pattern of (seed, offset), so another process can check
 * it without being told the bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmpool.h"

static const char *scenario = "rmp-test";

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rmp-test %s: FAIL: ", scenario);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* expect -- a call returned want (0 or a negative errno). */
#define expect(call, want)                                                  \
	do {                                                                \
		int got_ = (call);                                          \
		if (got_ != (want))                                         \
			fail("%s:%d: %s returned %d (%s), want %d (%s)",    \
			     __FILE__, __LINE__, #call, got_,               \
			     rmp_strerror(got_), (want),                    \
			     rmp_strerror(want));                           \
	} while (0)

static uint8_t pattern_byte(uint32_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull ^ seed;

	return (uint8_t)(x >> 29);
}

static void fill(uint8_t *p, uint64_t len, uint32_t seed, uint64_t base)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = pattern_byte(seed, base + i);
}

static void compare(const uint8_t *p, uint64_t len, uint32_t seed,
		    uint64_t base, const char *what)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(seed, base + i))
			fail("%s: byte %" PRIu64 " is %#x, want %#x", what,
			     base + i, p[i], pattern_byte(seed, base + i));
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		fail("out of memory");
	return p;
}

static struct rmp_client *connect_to(const char *host, const char *port)
{
	struct rmp_client_opts o;
	struct rmp_client *c;
	int ret;

	rmp_client_opts_init(&o);
	o.name = "rmp-test";
	expect(rmp_client_new(&c, &o), 0);
	ret = rmp_client_connect(c, host, (uint16_t)atoi(port));
	if (ret)
		fail("connect %s:%s: %s (%s)", host, port, rmp_strerror(ret),
		     rmp_client_last_error(c));
	return c;
}

static struct rmp_lease *alloc_lease(struct rmp_client *c, uint64_t len,
				     uint32_t ttl, uint32_t access,
				     uint32_t flags)
{
	struct rmp_alloc_opts o;
	struct rmp_lease *l;
	int ret;

	rmp_alloc_opts_init(&o);
	o.ttl_s = ttl;
	o.access = access;
	o.flags = flags;
	ret = rmp_lease_alloc(c, len, &o, &l);
	if (ret)
		fail("alloc %" PRIu64 " bytes: %s (%s)", len, rmp_strerror(ret),
		     rmp_client_last_error(c));
	return l;
}

static uint64_t lease_len(struct rmp_lease *l)
{
	struct rmp_lease_info info = { .size = sizeof(info) };

	expect(rmp_lease_info(l, &info), 0);
	return info.length;
}

/* write_read_check -- fill, write, clear, read back, compare. */
static void write_read_check(struct rmp_lease *l, uint64_t len, uint32_t seed,
			     uint8_t *buf, const char *what)
{
	fill(buf, len, seed, 0);
	expect(rmp_write(l, 0, buf, len), 0);
	memset(buf, 0, len);
	expect(rmp_read(l, 0, buf, len), 0);
	compare(buf, len, seed, 0, what);
}

static void check_atomics(struct rmp_client *c)
{
	struct rmp_lease *l = alloc_lease(c, 64, 0, RMP_ACCESS_ALL, 0);
	uint64_t old;

	expect(rmp_faa(l, 8, 5, &old), 0);
	if (old != 0)
		fail("FAA on a fresh lease returned %" PRIu64 ", want 0", old);
	expect(rmp_faa(l, 8, 7, &old), 0);
	if (old != 5)
		fail("second FAA returned %" PRIu64 ", want 5", old);
	expect(rmp_cas(l, 8, 12, 100, &old), 0);
	if (old != 12)
		fail("CAS(12 -> 100) returned %" PRIu64 ", want 12", old);
	expect(rmp_cas(l, 8, 1, 2, &old), 0);
	if (old != 100)
		fail("failing CAS returned %" PRIu64 ", want 100", old);
	expect(rmp_read(l, 8, &old, 8), 0);
	if (old != 100)
		fail("word after CAS is %" PRIu64 ", want 100", old);
	expect(rmp_lease_free(l), 0);
}

/* check_async -- many writes and reads, one doorbell each batch. */
static void check_async(struct rmp_client *c, uint32_t seed)
{
	enum { N = 64, CHUNK = 4096 };
	struct rmp_lease *l = alloc_lease(c, N * CHUNK, 0, RMP_ACCESS_ALL, 0);
	uint8_t *mem = aligned_alloc(4096, 2 * N * CHUNK);
	struct rmp_completion comp[N];
	struct rmp_buf *b;
	int got = 0, n;

	if (!mem)
		fail("out of memory");
	expect(rmp_buf_reg(c, mem, 2 * N * CHUNK, &b), 0);
	fill(mem, N * CHUNK, seed, 0);
	for (int i = 0; i < N; i++)
		expect(rmp_post_write(l, (uint64_t)i * CHUNK, b,
				      (size_t)i * CHUNK, CHUNK, (uint64_t)i),
		       0);
	expect(rmp_submit(c), N);
	while (got < N) {
		n = rmp_poll(c, comp, N, 10000);
		if (n <= 0)
			fail("rmp_poll: %d (%s) after %d of %d", n,
			     rmp_strerror(n), got, N);
		for (int i = 0; i < n; i++) {
			if (comp[i].status || comp[i].user_data != (uint64_t)(got + i))
				fail("async write %" PRIu64 ": %s (order %d)",
				     comp[i].user_data,
				     rmp_strerror(comp[i].status), got + i);
		}
		got += n;
	}
	for (int i = 0; i < N; i++)
		expect(rmp_post_read(l, (uint64_t)i * CHUNK, b,
				     (size_t)(N + i) * CHUNK, CHUNK,
				     (uint64_t)i), 0);
	expect(rmp_submit(c), N);
	for (got = 0; got < N; got += n) {
		n = rmp_poll(c, comp, N, 10000);
		if (n <= 0)
			fail("rmp_poll (reads): %d", n);
		for (int i = 0; i < n; i++)
			if (comp[i].status)
				fail("async read: %s",
				     rmp_strerror(comp[i].status));
	}
	compare(mem + N * CHUNK, N * CHUNK, seed, 0, "async read back");
	rmp_buf_dereg(b);
	free(mem);
	expect(rmp_lease_free(l), 0);
}

/* patterns: leases of 64 B .. 8 MiB, sync (copy and zero copy), atomics,
 * async batches. */
static int run_patterns(const char *host, const char *port, uint32_t seed)
{
	static const uint64_t sizes[] = { 64, 4096, 65536, 1 << 20, 8 << 20 };
	struct rmp_client *c = connect_to(host, port);
	uint8_t *buf = aligned_alloc(4096, 8 << 20);
	struct rmp_buf *b;
	char what[64];

	if (!buf)
		fail("out of memory");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rmp_lease *l = alloc_lease(c, sizes[i], 0,
						  RMP_ACCESS_ALL, 0);

		if (lease_len(l) < sizes[i])
			fail("lease of %" PRIu64 " is only %" PRIu64 " bytes",
			     sizes[i], lease_len(l));
		snprintf(what, sizeof(what), "copy path, %" PRIu64 " bytes",
			 sizes[i]);
		write_read_check(l, sizes[i], seed + (uint32_t)i, buf, what);
		expect(rmp_lease_free(l), 0);
	}
	/* The same through a registered buffer: zero copy. */
	expect(rmp_buf_reg(c, buf, 8 << 20, &b), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rmp_lease *l = alloc_lease(c, sizes[i], 0,
						  RMP_ACCESS_ALL, 0);

		snprintf(what, sizeof(what), "zero copy, %" PRIu64 " bytes",
			 sizes[i]);
		write_read_check(l, sizes[i], seed * 7 + (uint32_t)i, buf, what);
		expect(rmp_lease_free(l), 0);
	}
	rmp_buf_dereg(b);
	check_atomics(c);
	check_async(c, seed);
	free(buf);
	rmp_client_free(c);
	printf("patterns %u: ok\n", seed);
	return 0;
}

/* flush: writes posted without waiting, rmp_flush, then a second
 * connection takes the lease over and must read every byte. */
static int run_flush(const char *host, const char *port)
{
	enum { N = 32, CHUNK = 16384 };
	struct rmp_client *a = connect_to(host, port), *b = connect_to(host, port);
	struct rmp_lease *la = alloc_lease(a, N * CHUNK, 0, RMP_ACCESS_ALL, 0);
	struct rmp_completion comp[N];
	uint8_t *mem = aligned_alloc(4096, N * CHUNK);
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_lease *lb;
	struct rmp_buf *buf;
	int got = 0, n;

	if (!mem)
		fail("out of memory");
	expect(rmp_buf_reg(a, mem, N * CHUNK, &buf), 0);
	fill(mem, N * CHUNK, 4242, 0);
	for (int i = 0; i < N; i++)
		expect(rmp_post_write(la, (uint64_t)i * CHUNK, buf,
				      (size_t)i * CHUNK, CHUNK, (uint64_t)i), 0);
	expect(rmp_submit(a), N);
	/* No rmp_poll before the flush: the flush alone must order them. */
	expect(rmp_flush(la), 0);
	if (rmp_lease_token(la, token, sizeof(token)) < 0)
		fail("rmp_lease_token");
	expect(rmp_lease_attach_token(b, token, &lb), 0);
	memset(mem, 0, N * CHUNK);
	expect(rmp_read(lb, 0, mem, N * CHUNK), 0);
	compare(mem, N * CHUNK, 4242, 0, "reader on another connection");
	while (got < N && (n = rmp_poll(a, comp, N, 1000)) > 0)
		got += n;
	expect(rmp_lease_free(lb), 0);
	rmp_lease_close(la);
	rmp_buf_dereg(buf);
	free(mem);
	rmp_client_free(a);
	rmp_client_free(b);
	printf("flush: ok (%d writes of %d bytes visible to another "
	       "connection)\n", N, CHUNK);
	return 0;
}

/* range: the library refuses what lies outside the lease, posting
 * nothing, and the connection stays usable. */
static int run_range(const char *host, const char *port)
{
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(c, 4096, 0, RMP_ACCESS_ALL, 0);
	struct rmp_lease *wo = alloc_lease(c, 4096, 0, RMP_ACCESS_WRITE, 0);
	uint64_t len = lease_len(l), old;
	uint8_t buf[256] = { 0 };
	struct rmp_buf *b;

	expect(rmp_read(l, len, buf, 1), -ERANGE);
	expect(rmp_write(l, len - 100, buf, 101), -ERANGE);
	expect(rmp_read(l, UINT64_MAX, buf, 2), -ERANGE);
	expect(rmp_read(l, 1, buf, (size_t)UINT64_MAX), -ERANGE);
	expect(rmp_faa(l, len, 1, &old), -ERANGE);
	expect(rmp_cas(l, 4, 0, 1, &old), -EINVAL);
	expect(rmp_buf_reg(c, buf, sizeof(buf), &b), 0);
	expect(rmp_post_read(l, len - 8, b, 0, 16, 1), -ERANGE);
	expect(rmp_read(wo, 0, buf, 8), -EACCES);
	/* Nothing was posted: the connection still works. */
	expect(rmp_write(l, len - 8, buf, 8), 0);
	expect(rmp_read(l, 0, buf, 8), 0);
	rmp_buf_dereg(b);
	expect(rmp_lease_free(l), 0);
	expect(rmp_lease_free(wo), 0);
	rmp_client_free(c);
	printf("range: ok\n");
	return 0;
}


/*
 * expiry LEN TTL TICK_MS: a lease not renewed stops working within
 * TTL + one tick (+ slack for a slow VM), and the next lease over the
 * same bytes reads back zeros. The pool must be exactly LEN bytes so the
 * second lease reuses the extent.
 */
static int run_expiry(const char *host, const char *port, uint64_t len,
		      uint32_t ttl, uint64_t tick)
{
	struct rmp_client *c = connect_to(host, port);
	uint64_t t0 = now_ms(), slack = 1000, probe = 65536;
	struct rmp_lease *l = alloc_lease(c, len, ttl, RMP_ACCESS_ALL, 0);
	uint64_t deadline = t0 + ttl * 1000ull;
	uint8_t *buf = xmalloc(len);
	int ret;

	fill(buf, probe, 99, 0);
	expect(rmp_write(l, 0, buf, probe), 0);
	/* Before the deadline the lease works... */
	if (now_ms() + 500 < deadline) {
		expect(rmp_read(l, 0, buf, 64), 0);
		compare(buf, 64, 99, 0, "before the deadline");
	}
	/* ...after deadline + tick it must not. */
	if (now_ms() < deadline + tick + slack)
		sleep_ms(deadline + tick + slack - now_ms());
	ret = rmp_read(l, 0, buf, 64);
	if (ret != -EKEYEXPIRED)
		fail("read %" PRIu64 " ms after the deadline: %d (%s), want "
		     "-EKEYEXPIRED", tick + slack, ret, rmp_strerror(ret));
	rmp_lease_close(l);
	rmp_client_free(c);

	/* The whole pool again: necessarily the same extent. */
	c = connect_to(host, port);
	l = alloc_lease(c, len, 0, RMP_ACCESS_ALL, 0);
	memset(buf, 0xff, len);
	expect(rmp_read(l, 0, buf, len), 0);
	for (uint64_t i = 0; i < len; i++)
		if (buf[i])
			fail("reused extent byte %" PRIu64 " is %#x, not 0", i,
			     buf[i]);
	expect(rmp_lease_free(l), 0);
	rmp_client_free(c);
	free(buf);
	printf("expiry: ok (revoked within ttl + %" PRIu64 " ms; reuse reads "
	       "zeros)\n", tick + slack);
	return 0;
}

/*
 * autorenew TTL TICK_MS: an auto-renew lease outlives several ttls while
 * its connection lives, survives the connection by one ttl (attach works),
 * and is gone one ttl after its last connection.
 */
static int run_autorenew(const char *host, const char *port, uint32_t ttl,
			 uint64_t tick)
{
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(c, 4096, ttl, RMP_ACCESS_ALL,
					  RMP_LEASE_AUTO_RENEW);
	char tok[RMP_TOKEN_MAXLEN];
	uint8_t buf[64];
	uint64_t t;
	int ret;

	fill(buf, sizeof(buf), 5, 0);
	expect(rmp_write(l, 0, buf, sizeof(buf)), 0);
	sleep_ms(ttl * 2500ull);
	memset(buf, 0, sizeof(buf));
	expect(rmp_read(l, 0, buf, sizeof(buf)), 0);
	compare(buf, sizeof(buf), 5, 0, "after 2.5 ttl on a live connection");
	if (rmp_lease_token(l, tok, sizeof(tok)) < 0)
		fail("rmp_lease_token");
	rmp_lease_close(l);
	rmp_client_free(c);

	/* Connection gone: one ttl to come back. */
	c = connect_to(host, port);
	expect(rmp_lease_attach_token(c, tok, &l), 0);
	memset(buf, 0, sizeof(buf));
	expect(rmp_read(l, 0, buf, sizeof(buf)), 0);
	compare(buf, sizeof(buf), 5, 0, "attached after a reconnect");
	rmp_lease_close(l);
	rmp_client_free(c);
	t = now_ms();

	c = connect_to(host, port);
	t += ttl * 1000ull + tick + 1000;
	if (now_ms() < t)
		sleep_ms(t - now_ms());
	ret = rmp_lease_attach_token(c, tok, &l);
	if (ret != -EKEYEXPIRED)
		fail("attach one ttl after the last connection: %d (%s), want "
		     "-EKEYEXPIRED", ret, rmp_strerror(ret));
	rmp_client_free(c);
	printf("autorenew: ok\n");
	return 0;
}

/* hold LEN SEED TTL: a lease and an ephemeral lease, both filled with the
 * pattern; print their tokens, then wait to be killed. */
static int run_hold(const char *host, const char *port, uint64_t len,
		    uint32_t seed, uint32_t ttl)
{
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(c, len, ttl, RMP_ACCESS_ALL, 0);
	struct rmp_lease *e = alloc_lease(c, len, ttl, RMP_ACCESS_ALL,
					  RMP_LEASE_EPHEMERAL);
	char tok[RMP_TOKEN_MAXLEN], etok[RMP_TOKEN_MAXLEN];
	uint8_t *buf = xmalloc(len);

	fill(buf, len, seed, 0);
	expect(rmp_write(l, 0, buf, len), 0);
	expect(rmp_write(e, 0, buf, len), 0);
	expect(rmp_flush(l), 0);
	if (rmp_lease_token(l, tok, sizeof(tok)) < 0 ||
	    rmp_lease_token(e, etok, sizeof(etok)) < 0)
		fail("rmp_lease_token");
	printf("TOKEN %s\nEPHEMERAL %s\n", tok, etok);
	fflush(stdout);
	/* Killed by the test (SIGKILL): that is the point. */
	while (pause() < 0 || 1)
		;
	return 0;
}

/* pattern SEED LEN: print the pattern to stdout (for cmp). */
static int run_pattern(uint32_t seed, uint64_t len)
{
	uint8_t *buf = xmalloc(len);

	fill(buf, len, seed, 0);
	if (fwrite(buf, 1, len, stdout) != len)
		fail("write to stdout");
	free(buf);
	return 0;
}

/* quota LEASES BYTES: the per-client limits give -EDQUOT. */
static int run_quota(const char *host, const char *port, uint64_t nleases,
		     uint64_t bytes)
{
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l[64];
	struct rmp_alloc_opts o;
	struct rmp_lease *x;

	rmp_alloc_opts_init(&o);
	if (nleases > 64)
		fail("at most 64 leases");
	for (uint64_t i = 0; i < nleases; i++)
		l[i] = alloc_lease(c, 4096, 0, RMP_ACCESS_ALL, 0);
	expect(rmp_lease_alloc(c, 4096, &o, &x), -EDQUOT);
	for (uint64_t i = 0; i < nleases; i++)
		expect(rmp_lease_free(l[i]), 0);
	l[0] = alloc_lease(c, bytes, 0, RMP_ACCESS_ALL, 0);
	expect(rmp_lease_alloc(c, 64, &o, &x), -EDQUOT);
	expect(rmp_lease_free(l[0]), 0);
	expect(rmp_lease_alloc(c, bytes + 1, &o, &x), -EDQUOT);
	rmp_client_free(c);
	printf("quota: ok (%" PRIu64 " leases, %" PRIu64 " bytes)\n", nleases,
	       bytes);
	return 0;
}

/* exhaust: allocate until -ENOSPC; after freeing all, the free bytes
 * are what they were at the start. */
static int run_exhaust(const char *host, const char *port)
{
	struct rmp_pool_stat s0 = { .size = sizeof(s0) }, s1 = s0;
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l[1024];
	struct rmp_alloc_opts o;
	int n = 0, ret = 0;

	rmp_alloc_opts_init(&o);
	expect(rmp_stat(c, &s0), 0);
	while (n < 1024) {
		/* Mixed sizes fragment the pool a little. */
		ret = rmp_lease_alloc(c, n % 3 ? 1 << 20 : 300 << 10, &o, &l[n]);
		if (ret)
			break;
		n++;
	}
	if (ret != -ENOSPC)
		fail("allocating until full ended with %d (%s), want -ENOSPC",
		     ret, rmp_strerror(ret));
	if (n == 0)
		fail("not a single lease fitted");
	while (n > 0)
		expect(rmp_lease_free(l[--n]), 0);
	/* Freed extents are zeroed in the background before they count as
	 * free again: wait (bounded) until nothing is being zeroed. */
	for (int tries = 0;; tries++) {
		expect(rmp_stat(c, &s1), 0);
		if (s1.zeroing_bytes == 0 || tries == 100)
			break;
		usleep(100000);
	}
	if (s1.zeroing_bytes)
		fail("%" PRIu64 " bytes still being zeroed after 10 s",
		     s1.zeroing_bytes);
	if (s1.quarantined_bytes)
		fail("%" PRIu64 " bytes quarantined", s1.quarantined_bytes);
	if (s1.free_bytes != s0.free_bytes || s1.free_bytes != s1.pool_bytes)
		fail("free bytes %" PRIu64 " after freeing all, %" PRIu64
		     " at start, pool %" PRIu64, s1.free_bytes, s0.free_bytes,
		     s1.pool_bytes);
	rmp_client_free(c);
	printf("exhaust: ok (pool %" PRIu64 " bytes free again)\n",
	       s1.free_bytes);
	return 0;
}

/* loop SECONDS GOFILE: READ/WRITE 4 KiB at varying offsets; prints READY
 * once the lease is set up, starts when GOFILE exists (so that several
 * loops run together), and prints the op count at the end. */
static int run_loop(const char *host, const char *port, unsigned seconds,
		    const char *gofile)
{
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(c, 1 << 20, 0, RMP_ACCESS_ALL, 0);
	static uint8_t buf[4096];
	uint64_t ops = 0, t0;
	struct rmp_buf *b;

	expect(rmp_buf_reg(c, buf, sizeof(buf), &b), 0);
	printf("READY\n");
	fflush(stdout);
	while (access(gofile, F_OK))
		sleep_ms(10);
	t0 = now_ms();
	do {
		uint64_t off = (ops * 4096) % ((1 << 20) - 4096);

		buf[0] = (uint8_t)ops;
		expect(rmp_write(l, off, buf, sizeof(buf)), 0);
		expect(rmp_read(l, off, buf, sizeof(buf)), 0);
		if (buf[0] != (uint8_t)ops)
			fail("read back %#x, want %#x", buf[0], (uint8_t)ops);
		ops += 2;
	} while (now_ms() - t0 < seconds * 1000ull);
	rmp_buf_dereg(b);
	expect(rmp_lease_free(l), 0);
	rmp_client_free(c);
	printf("DONE %" PRIu64 " ops\n", ops);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rmp-test patterns HOST PORT SEED\n"
		"       rmp-test flush|range|exhaust HOST PORT\n"
		"       rmp-test expiry HOST PORT LEN TTL_S TICK_MS\n"
		"       rmp-test autorenew HOST PORT TTL_S TICK_MS\n"
		"       rmp-test hold HOST PORT LEN SEED TTL_S\n"
		"       rmp-test quota HOST PORT LEASES BYTES\n"
		"       rmp-test loop HOST PORT SECONDS GOFILE\n"
		"       rmp-test pattern SEED LEN\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	scenario = argv[1];
	if (!strcmp(scenario, "pattern") && argc == 4)
		return run_pattern((uint32_t)atoi(argv[2]),
				   strtoull(argv[3], NULL, 0));
	if (argc < 4)
		usage();
	if (!strcmp(scenario, "patterns") && argc == 5)
		return run_patterns(argv[2], argv[3], (uint32_t)atoi(argv[4]));
	if (!strcmp(scenario, "flush") && argc == 4)
		return run_flush(argv[2], argv[3]);
	if (!strcmp(scenario, "range") && argc == 4)
		return run_range(argv[2], argv[3]);
	if (!strcmp(scenario, "exhaust") && argc == 4)
		return run_exhaust(argv[2], argv[3]);
	if (!strcmp(scenario, "expiry") && argc == 7)
		return run_expiry(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				  (uint32_t)atoi(argv[5]),
				  strtoull(argv[6], NULL, 0));
	if (!strcmp(scenario, "autorenew") && argc == 6)
		return run_autorenew(argv[2], argv[3], (uint32_t)atoi(argv[4]),
				     strtoull(argv[5], NULL, 0));
	if (!strcmp(scenario, "hold") && argc == 7)
		return run_hold(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				(uint32_t)atoi(argv[5]), (uint32_t)atoi(argv[6]));
	if (!strcmp(scenario, "quota") && argc == 6)
		return run_quota(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				 strtoull(argv[5], NULL, 0));
	if (!strcmp(scenario, "loop") && argc == 6)
		return run_loop(argv[2], argv[3], (unsigned)atoi(argv[4]),
				argv[5]);
	usage();
	return 2;
}

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
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
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

/*
 * pattern_byte -- byte off of the pattern of seed. The seed is spread over
 * all 64 bits before the mix: XORed in as it is, a small seed only touched
 * bits the shift drops, and every seed gave the same bytes (so a test
 * could not tell one writer's data from another's).
 */
static uint8_t pattern_byte(uint32_t seed, uint64_t off)
{
	uint64_t x = ((off + 1) ^ ((uint64_t)seed * 0xbf58476d1ce4e5b9ull)) *
		     0x9e3779b97f4a7c15ull;

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

/* new_client_with -- an unconnected client as tenant $RMPOOL_TENANT with
 * key file $RMPOOL_KEY_FILE, as for the rmpool command; op_timeout_ms 0
 * keeps the default, reconnect_ms 0 leaves reconnecting off. */
static struct rmp_client *new_client_with(unsigned op_timeout_ms,
					  unsigned reconnect_ms)
{
	struct rmp_client_opts o;
	struct rmp_client *c;

	rmp_client_opts_init(&o);
	o.name = "rmp-test";
	o.tenant = getenv("RMPOOL_TENANT");
	o.key_file = o.tenant && *o.tenant ? getenv("RMPOOL_KEY_FILE") :
		      NULL;
	if (op_timeout_ms)
		o.op_timeout_ms = (int)op_timeout_ms;
	o.reconnect_max_ms = reconnect_ms;
	expect(rmp_client_new(&c, &o), 0);
	return c;
}

static struct rmp_client *new_client(void)
{
	return new_client_with(0, 0);
}

/* connect_or_fail -- connect c to host:port, or fail the scenario. */
static struct rmp_client *connect_or_fail(struct rmp_client *c,
					  const char *host, const char *port)
{
	int ret = rmp_client_connect(c, host, (uint16_t)atoi(port));

	if (ret)
		fail("connect %s:%s: %s (%s)", host, port, rmp_strerror(ret),
		     rmp_client_last_error(c));
	return c;
}

static struct rmp_client *connect_to(const char *host, const char *port)
{
	return connect_or_fail(new_client(), host, port);
}

/* connect_timed -- connect_to with an op timeout and reconnecting
 * (reconnect_ms 0: off). */
static struct rmp_client *connect_timed(const char *host, const char *port,
					unsigned timeout_ms,
					unsigned reconnect_ms)
{
	return connect_or_fail(new_client_with(timeout_ms, reconnect_ms),
			       host, port);
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

/*
 * check_small_writes -- WRITEs of a few bytes up to past the inline limit
 * (256 asked of the device), from unaligned, unregistered memory at odd
 * offsets: each must land exactly, and the bytes around it keep theirs.
 */
static void check_small_writes(struct rmp_client *c, uint32_t seed)
{
	static const size_t lens[] = { 1, 7, 8, 63, 64, 200, 255, 256, 257,
				       300, 511, 1000 };
	enum { LEN = 8192 };
	struct rmp_lease *l = alloc_lease(c, LEN, 0, RMP_ACCESS_ALL, 0);
	uint8_t *model = calloc(1, LEN), *got = xmalloc(LEN);
	uint8_t src[1024 + 1];
	uint64_t off = 3;

	if (!model)
		fail("out of memory");
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		fill(src + 1, lens[i], seed + (uint32_t)i, 0);
		expect(rmp_write(l, off, src + 1, lens[i]), 0);
		memcpy(model + off, src + 1, lens[i]);
		expect(rmp_read(l, 0, got, LEN), 0);
		for (size_t k = 0; k < LEN; k++)
			if (got[k] != model[k])
				fail("after a %zu-byte WRITE at %" PRIu64
				     ": byte %zu is %#x, want %#x", lens[i],
				     off, k, got[k], model[k]);
		off += lens[i] + 5;
	}
	expect(rmp_lease_free(l), 0);
	free(model);
	free(got);
}

/* check_async -- many writes and reads, one doorbell each batch. */
static void check_async(struct rmp_client *c, uint32_t seed)
{
	enum { N = 64, CHUNK = 4096 };
	struct rmp_lease *l = alloc_lease(c, N * CHUNK, 0, RMP_ACCESS_ALL, 0);
	uint8_t *mem = aligned_alloc(4096, 2 * N * CHUNK);
	struct rmp_completion comp[N];
	struct rmp_buf *b;
	int got = 0, n, fd;

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
	/* The reads are waited for as an event loop would: on
	 * rmp_client_fd(), which rmp_submit() and rmp_poll() must arm. */
	fd = rmp_client_fd(c);
	if (fd < 0)
		fail("rmp_client_fd: %d (%s)", fd, rmp_strerror(fd));
	for (int i = 0; i < N; i++)
		expect(rmp_post_read(l, (uint64_t)i * CHUNK, b,
				     (size_t)(N + i) * CHUNK, CHUNK,
				     (uint64_t)i), 0);
	expect(rmp_submit(c), N);
	for (got = 0; got < N; got += n) {
		n = rmp_poll(c, comp, N, 0);
		if (n == 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (poll(&pfd, 1, 10000) != 1)
				fail("rmp_client_fd() not readable within 10 s "
				     "with %d of %d reads outstanding",
				     N - got, N);
			continue;
		}
		if (n < 0)
			fail("rmp_poll (reads): %d", n);
		for (int i = 0; i < n; i++)
			if (comp[i].status)
				fail("async read: %s",
				     rmp_strerror(comp[i].status));
	}
	compare(mem + N * CHUNK, N * CHUNK, seed, 0, "async read back");

	/* Small writes (inline where the device allows) in one batch. */
	enum { SMALL = 100 };
	fill(mem, N * SMALL, seed + 1, 0);
	for (int i = 0; i < N; i++)
		expect(rmp_post_write(l, (uint64_t)i * CHUNK + 1, b,
				      (size_t)i * SMALL, SMALL, (uint64_t)i),
		       0);
	expect(rmp_submit(c), N);
	for (got = 0; got < N; got += n) {
		n = rmp_poll(c, comp, N, 10000);
		if (n <= 0)
			fail("rmp_poll (small writes): %d", n);
		for (int i = 0; i < n; i++)
			if (comp[i].status)
				fail("small async write: %s",
				     rmp_strerror(comp[i].status));
	}
	for (int i = 0; i < N; i++) {
		expect(rmp_read(l, (uint64_t)i * CHUNK + 1, mem + N * CHUNK,
				SMALL), 0);
		compare(mem + N * CHUNK, SMALL, seed + 1, (uint64_t)i * SMALL,
			"small async write read back");
	}
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
	check_small_writes(c, seed);
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
		    uint32_t seed, uint32_t ttl, bool auto_renew)
{
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(c, len, ttl, RMP_ACCESS_ALL,
					  auto_renew ? RMP_LEASE_AUTO_RENEW : 0);
	/* With --auto-renew both are renewed: the ephemeral one then lives
	 * exactly as long as the connection. */
	struct rmp_lease *e = alloc_lease(c, len, ttl, RMP_ACCESS_ALL,
					  RMP_LEASE_EPHEMERAL |
					  (auto_renew ? RMP_LEASE_AUTO_RENEW : 0));
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

/* token_of -- l's token into buf (RMP_TOKEN_MAXLEN). */
static void token_of(struct rmp_lease *l, char *buf)
{
	if (rmp_lease_token(l, buf, RMP_TOKEN_MAXLEN) < 0)
		fail("rmp_lease_token");
}

static struct rmp_lease_info info_of(struct rmp_lease *l)
{
	struct rmp_lease_info info = { .size = sizeof(info) };

	expect(rmp_lease_info(l, &info), 0);
	return info;
}

/*
 * readloop TOKEN SECONDS: attach the lease of TOKEN and rmp_read 64
 * bytes from it back to back for SECONDS; any error fails at once.
 * Prints "ATTACHED ttl_ms=T" first and "reads N" at the end: while the
 * lease is renewed by others (rmpool renew), the application must not
 * notice anything.
 */
static int run_readloop(const char *host, const char *port,
			const char *token, unsigned seconds)
{
	struct rmp_client *c = connect_to(host, port);
	uint64_t reads = 0, t0, end;
	struct rmp_lease *l;
	uint8_t buf[64];
	int ret;

	ret = rmp_lease_attach_token(c, token, &l);
	if (ret)
		fail("attach: %s (%s)", rmp_strerror(ret),
		     rmp_client_last_error(c));
	printf("ATTACHED ttl_ms=%" PRIu64 "\n", info_of(l).ttl_ms);
	fflush(stdout);
	t0 = now_ms();
	end = t0 + seconds * 1000ull;
	while (now_ms() < end) {
		ret = rmp_read(l, 0, buf, sizeof(buf));
		if (ret)
			fail("read %" PRIu64 " after %" PRIu64 " ms (%" PRIu64
			     " reads ok): %s (%s)", reads + 1, now_ms() - t0,
			     reads, rmp_strerror(ret),
			     rmp_client_last_error(c));
		reads++;
	}
	rmp_lease_close(l);
	rmp_client_free(c);
	printf("reads %" PRIu64 " in %" PRIu64 " ms\n", reads, now_ms() - t0);
	return 0;
}

/* ---------------------------------------------------------------- share */

#define SHARE_THREADS 4
#define SHARE_OPS 10000

struct share_worker {
	pthread_t tid;
	const char *host, *port, *token;
	pthread_barrier_t *go;
	struct rmp_client *c;
	struct rmp_lease *l;
	uint32_t holders;       /* as the attach reported */
	uint64_t *olds;         /* FAA old values */
	int err;                /* first failure, 0 if none */
	char msg[256];
};

static void *share_thread(void *arg)
{
	struct share_worker *w = arg;
	int ret;

	/* connect_to / fail() exit the process: fine for a test. */
	w->c = connect_to(w->host, w->port);
	ret = rmp_lease_attach_with(w->c, w->token, NULL, &w->l);
	if (ret) {
		w->err = ret;
		snprintf(w->msg, sizeof(w->msg), "attach: %s (%s)",
			 rmp_strerror(ret), rmp_client_last_error(w->c));
	} else {
		w->holders = info_of(w->l).holders;
	}
	/* Everybody attached before anybody adds: they overlap. */
	pthread_barrier_wait(w->go);
	for (int i = 0; !w->err && i < SHARE_OPS; i++) {
		ret = rmp_faa(w->l, 0, 1, &w->olds[i]);
		if (ret) {
			w->err = ret;
			snprintf(w->msg, sizeof(w->msg), "FAA %d: %s (%s)", i,
				 rmp_strerror(ret), rmp_client_last_error(w->c));
		}
	}
	return NULL;
}

static uint64_t read_u64(struct rmp_lease *l, const char *who)
{
	uint64_t v;
	int ret = rmp_read(l, 0, &v, sizeof(v));

	if (ret)
		fail("%s: read: %s", who, rmp_strerror(ret));
	return v;
}

/* next_access_fails -- l's next access must fail (non-zero); prints it. */
static void next_access_fails(struct rmp_lease *l, const char *who,
			      const char *after)
{
	uint64_t v;
	int ret = rmp_read(l, 0, &v, sizeof(v));

	if (ret == 0)
		fail("%s could still read the lease after %s (value %" PRIu64
		     ")", who, after, v);
	printf("  %s: next access after %s -> %d (%s)\n", who, after, ret,
	       rmp_strerror(ret));
}

/*
 * share [--pause]: one lease, many connections.
 *  - the owner allocates 4 KiB (ttl 60); four threads, each with its own
 *    client, attach it by token and do 10^4 FAA(+1) at offset 0 at once:
 *    the word is exactly 40000 and the old values are 0..39999, each
 *    once; the attaches reported holders 2, 3, 4 and 5;
 *  - a fifth connection attaches read-only (holders 6, STAT keys 6): it
 *    reads 40000; the library refuses its write and FAA (-EACCES) without
 *    posting: it still reads afterwards;
 *  - with --pause: prints "PAUSE TOKEN" and waits for a line on stdin
 *    (the test proves meanwhile with rmp-raw rowrite that the NIC refuses
 *    a read-only key's WRITE); the word must still be 40000 after;
 *  - an exclusive attach from another client (holders 1): the next
 *    access of the owner, the four threads' and the read-only client
 *    fails, while the exclusive holder's FAA and read work;
 *  - two more clients attach (holders 2, 3); a fresh client frees the
 *    lease by token (rmp_lease_free_token): the next access of the
 *    exclusive holder and of both fails, and attaching gives -ENOENT.
 */
static int run_share(const char *host, const char *port, bool pause_mode)
{
	struct share_worker w[SHARE_THREADS];
	struct rmp_client *owner = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(owner, 4096, 60, RMP_ACCESS_ALL, 0);
	struct rmp_client *ro_c, *x_c, *y_c, *z_c, *f_c;
	struct rmp_lease *ro, *x, *y, *z, *tmp;
	struct rmp_pool_stat st = { .size = sizeof(st) };
	struct rmp_attach_opts ao;
	struct rmp_lease_info info;
	char token[RMP_TOKEN_MAXLEN];
	pthread_barrier_t go;
	uint8_t *seen;
	unsigned seen_holders = 0;
	uint64_t v, old;
	int ret;

	token_of(l, token);
	info = info_of(l);
	if (info.holders != 1)
		fail("a fresh lease reports %u holders, want 1", info.holders);
	expect(rmp_write(l, 0, &(uint64_t){ 0 }, 8), 0);

	/* 1. Four threads, four clients, one word. */
	pthread_barrier_init(&go, NULL, SHARE_THREADS);
	for (int i = 0; i < SHARE_THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].host = host;
		w[i].port = port;
		w[i].token = token;
		w[i].go = &go;
		w[i].olds = xmalloc(SHARE_OPS * sizeof(uint64_t));
		if (pthread_create(&w[i].tid, NULL, share_thread, &w[i]))
			fail("pthread_create");
	}
	for (int i = 0; i < SHARE_THREADS; i++)
		pthread_join(w[i].tid, NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < SHARE_THREADS; i++) {
		if (w[i].err)
			fail("thread %d: %s", i, w[i].msg);
		if (w[i].holders < 2 || w[i].holders > SHARE_THREADS + 1 ||
		    (seen_holders & (1u << w[i].holders)))
			fail("thread %d: attach reported %u holders (the "
			     "attaches should see 2..%d, each once)", i,
			     w[i].holders, SHARE_THREADS + 1);
		seen_holders |= 1u << w[i].holders;
	}
	printf("holders reported by the attaches: 2..%d (all %d attached: "
	       "%d holders)\n", SHARE_THREADS + 1, SHARE_THREADS,
	       SHARE_THREADS + 1);
	v = read_u64(l, "owner");
	if (v != SHARE_THREADS * SHARE_OPS)
		fail("the shared word is %" PRIu64 " after %d x %d FAA(+1), "
		     "want %d", v, SHARE_THREADS, SHARE_OPS,
		     SHARE_THREADS * SHARE_OPS);
	seen = calloc(SHARE_THREADS * SHARE_OPS, 1);
	if (!seen)
		fail("out of memory");
	for (int i = 0; i < SHARE_THREADS; i++) {
		for (int k = 0; k < SHARE_OPS; k++) {
			old = w[i].olds[k];
			if (old >= SHARE_THREADS * SHARE_OPS || seen[old])
				fail("FAA old value %" PRIu64 " (thread %d, op "
				     "%d) is out of range or was seen twice",
				     old, i, k);
			seen[old] = 1;
		}
		free(w[i].olds);
	}
	free(seen);
	printf("faa: %d threads x %d FAA(+1) -> %" PRIu64 "; old values "
	       "0..%d each once\n", SHARE_THREADS, SHARE_OPS, v,
	       SHARE_THREADS * SHARE_OPS - 1);

	/* 2. A read-only consumer. */
	ro_c = connect_to(host, port);
	rmp_attach_opts_init(&ao);
	ao.access = RMP_ACCESS_READ;
	ret = rmp_lease_attach_with(ro_c, token, &ao, &ro);
	if (ret)
		fail("read-only attach: %s (%s)", rmp_strerror(ret),
		     rmp_client_last_error(ro_c));
	info = info_of(ro);
	if (info.holders != SHARE_THREADS + 2)
		fail("the read-only attach reports %u holders, want %d",
		     info.holders, SHARE_THREADS + 2);
	if (info.access != RMP_ACCESS_READ)
		fail("the read-only attach has access %#x, want %#x",
		     info.access, RMP_ACCESS_READ);
	expect(rmp_stat(ro_c, &st), 0);
	if (st.keys != SHARE_THREADS + 2)
		fail("STAT says %" PRIu64 " keys, want %d (owner, %d threads, "
		     "read-only)", st.keys, SHARE_THREADS + 2, SHARE_THREADS);
	v = read_u64(ro, "read-only client");
	if (v != SHARE_THREADS * SHARE_OPS)
		fail("the read-only client reads %" PRIu64 ", want %d", v,
		     SHARE_THREADS * SHARE_OPS);
	expect(rmp_write(ro, 0, &(uint64_t){ 7 }, 8), -EACCES);
	expect(rmp_faa(ro, 0, 1, &old), -EACCES);
	v = read_u64(ro, "read-only client after the refused write");
	if (v != SHARE_THREADS * SHARE_OPS)
		fail("after the refused write the word is %" PRIu64, v);
	printf("read-only: holders %u, keys %" PRIu64 ", reads %" PRIu64
	       "; write and FAA -> -EACCES (not posted)\n", info.holders,
	       st.keys, v);

	if (pause_mode) {
		char line[64];

		printf("PAUSE %s\n", token);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			fail("stdin closed during the pause");
		v = read_u64(l, "owner after the pause");
		if (v != SHARE_THREADS * SHARE_OPS)
			fail("after the read-only WRITE attempt the word is "
			     "%#" PRIx64 ", want %d", v,
			     SHARE_THREADS * SHARE_OPS);
		printf("after the pause: the word is still %" PRIu64 "\n", v);
	}

	/* 3. An exclusive attach (takeover) from another client. */
	x_c = connect_to(host, port);
	rmp_attach_opts_init(&ao);
	ao.flags = RMP_ATTACH_EXCLUSIVE;
	ret = rmp_lease_attach_with(x_c, token, &ao, &x);
	if (ret)
		fail("exclusive attach: %s (%s)", rmp_strerror(ret),
		     rmp_client_last_error(x_c));
	info = info_of(x);
	if (info.holders != 1)
		fail("the exclusive attach reports %u holders, want 1",
		     info.holders);
	printf("exclusive attach: holders %u; the others:\n", info.holders);
	next_access_fails(l, "owner", "the exclusive attach");
	for (int i = 0; i < SHARE_THREADS; i++) {
		char who[32];

		snprintf(who, sizeof(who), "thread %d's client", i);
		next_access_fails(w[i].l, who, "the exclusive attach");
	}
	next_access_fails(ro, "read-only client", "the exclusive attach");
	expect(rmp_faa(x, 0, 1, &old), 0);
	if (old != SHARE_THREADS * SHARE_OPS)
		fail("the exclusive holder's FAA saw %" PRIu64 ", want %d",
		     old, SHARE_THREADS * SHARE_OPS);
	v = read_u64(x, "exclusive holder");
	if (v != SHARE_THREADS * SHARE_OPS + 1)
		fail("the exclusive holder reads %" PRIu64 ", want %d", v,
		     SHARE_THREADS * SHARE_OPS + 1);
	printf("exclusive holder: FAA and read work (%" PRIu64 ")\n", v);

	/* 4. Free by token from a fresh client: every holder loses it. */
	y_c = connect_to(host, port);
	z_c = connect_to(host, port);
	expect(rmp_lease_attach_token(y_c, token, &y), 0);
	expect(rmp_lease_attach_token(z_c, token, &z), 0);
	if (info_of(y).holders != 2 || info_of(z).holders != 3)
		fail("attaches after the takeover report %u and %u holders, "
		     "want 2 and 3", info_of(y).holders, info_of(z).holders);
	if (read_u64(y, "y") != v || read_u64(z, "z") != v)
		fail("y and z do not read %" PRIu64, v);
	f_c = connect_to(host, port);
	expect(rmp_lease_free_token(f_c, token), 0);
	printf("freed by token from another connection; the holders:\n");
	next_access_fails(x, "exclusive holder", "the free");
	next_access_fails(y, "y", "the free");
	next_access_fails(z, "z", "the free");
	expect(rmp_lease_attach_token(f_c, token, &tmp), -ENOENT);

	rmp_lease_close(l);
	rmp_lease_close(ro);
	rmp_lease_close(x);
	rmp_lease_close(y);
	rmp_lease_close(z);
	for (int i = 0; i < SHARE_THREADS; i++) {
		rmp_lease_close(w[i].l);
		rmp_client_free(w[i].c);
	}
	rmp_client_free(owner);
	rmp_client_free(ro_c);
	rmp_client_free(x_c);
	rmp_client_free(y_c);
	rmp_client_free(z_c);
	rmp_client_free(f_c);
	printf("share: ok\n");
	return 0;
}

/* errno_of -- "EKEYREJECTED", "-EKEYREJECTED" or "0" -> 0 / -errno. */
static int errno_of(const char *s)
{
	static const struct { const char *name; int err; } names[] = {
		{ "EKEYREJECTED", EKEYREJECTED }, { "ECONNREFUSED", ECONNREFUSED },
		{ "EACCES", EACCES }, { "ENOENT", ENOENT }, { "EPERM", EPERM },
		{ "ETIMEDOUT", ETIMEDOUT }, { "EINVAL", EINVAL },
	};

	if (*s == '-')
		s++;
	if (!strcmp(s, "0"))
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name))
			return -names[i].err;
	fprintf(stderr, "rmp-test: unknown errno name %s\n", s);
	exit(2);
}

/*
 * connect ERRNO: rmp_client_connect with the tenant of the environment
 * returns ERRNO (0: connects, and a STAT works); prints the library's
 * last error.
 */
static int run_connect(const char *host, const char *port, int want)
{
	struct rmp_pool_stat st = { .size = sizeof(st) };
	struct rmp_client *c = new_client();
	int ret;

	ret = rmp_client_connect(c, host, (uint16_t)atoi(port));
	printf("connect: %d (%s): %s\n", ret, rmp_strerror(ret),
	       rmp_client_last_error(c));
	if (ret != want)
		fail("connect returned %d (%s), want %d (%s)", ret,
		     rmp_strerror(ret), want, rmp_strerror(want));
	if (ret == 0)
		expect(rmp_stat(c, &st), 0);
	rmp_client_free(c);
	return 0;
}

/*
 * run_mix -- OPS random READs, WRITEs and CASes (1/3 each) on one 64 KiB
 * lease, checked against a local model: every READ must return the
 * model's bytes and every CAS the model's old word. Made for lossy links
 * (RC retransmits); prints the rate.
 */
static int run_mix(const char *host, const char *port, uint64_t ops,
		   uint32_t seed)
{
	enum { LEN = 65536, MAXIO = 4096 };
	struct rmp_client *c = connect_to(host, port);
	struct rmp_lease *l = alloc_lease(c, LEN, 0, RMP_ACCESS_ALL,
					  RMP_LEASE_AUTO_RENEW);
	uint8_t *model = calloc(1, LEN), *buf = xmalloc(MAXIO);
	uint64_t x = seed | 1ull, start = now_ms(), reads = 0, writes = 0,
		 cases = 0, ms;

	if (!model)
		fail("out of memory");
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r, off, len, old, want, cmp;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		r = x;
		len = 1 + (r >> 8) % MAXIO;
		off = (r >> 24) % (LEN - len + 1);
		switch (r % 3) {
		case 0:
			expect(rmp_read(l, off, buf, len), 0);
			if (memcmp(buf, model + off, len))
				fail("op %" PRIu64 ": READ %" PRIu64 "+%" PRIu64
				     " differs from what was written", i, off,
				     len);
			reads++;
			break;
		case 1:
			for (uint64_t j = 0; j < len; j++)
				buf[j] = pattern_byte(seed + (uint32_t)i, j);
			expect(rmp_write(l, off, buf, len), 0);
			memcpy(model + off, buf, len);
			writes++;
			break;
		default:
			off &= ~7ull;
			memcpy(&want, model + off, 8);
			/* Half of them match and swap, half do not. */
			cmp = (r >> 40) & 1 ? want : want + 1;
			expect(rmp_cas(l, off, cmp, r, &old), 0);
			if (old != want)
				fail("op %" PRIu64 ": CAS at %" PRIu64 " saw %#"
				     PRIx64 ", want %#" PRIx64, i, off, old,
				     want);
			if (cmp == want)
				memcpy(model + off, &r, 8);
			cases++;
			break;
		}
	}
	ms = now_ms() - start;
	printf("mix: %" PRIu64 " ops (%" PRIu64 " reads, %" PRIu64 " writes, %"
	       PRIu64 " cas) in %" PRIu64 " ms: %.0f ops/s, all checked\n",
	       ops, reads, writes, cases, ms,
	       (double)ops * 1000.0 / (double)(ms ? ms : 1));
	expect(rmp_lease_free(l), 0);
	free(model);
	free(buf);
	rmp_client_free(c);
	return 0;
}

/* timed_op -- one operation of kind i % 4 on l (WRITE, READ, CAS, or a
 * posted READ reaped by rmp_poll(.., -1)); its result, its time in *ms. */
static int timed_op(struct rmp_client *c, struct rmp_lease *l,
		    struct rmp_buf *b, uint8_t *buf, uint64_t i, uint64_t *ms)
{
	struct rmp_completion comp;
	uint64_t t0 = now_ms(), old;
	int ret;

	switch (i % 4) {
	case 0:
		ret = rmp_write(l, 0, buf, 4096);
		break;
	case 1:
		ret = rmp_read(l, 0, buf, 4096);
		break;
	case 2:
		ret = rmp_cas(l, 4096, i, i + 1, &old);
		break;
	default:
		ret = rmp_post_read(l, 0, b, 0, 4096, i);
		if (ret == 0)
			ret = rmp_submit(c) < 0 ? -EIO : 0;
		if (ret == 0) {
			ret = rmp_poll(c, &comp, 1, -1);
			ret = ret == 1 ? comp.status : ret < 0 ? ret : -EIO;
		}
		break;
	}
	*ms = now_ms() - t0;
	return ret;
}

/*
 * run_until_down -- READY, then operations without pause until one fails
 * (the server's host is killed meanwhile), then 8 more: every call must
 * return, failed ones within the op timeout (TIMEOUT_MS) and a second.
 */
static int run_until_down(const char *host, const char *port,
			  unsigned timeout_ms)
{
	static const char *const kind[] = { "rmp_write", "rmp_read", "rmp_cas",
					    "rmp_poll(-1)" };
	struct rmp_client *c;
	struct rmp_lease *l;
	struct rmp_buf *b;
	uint8_t *buf = xmalloc(4096);
	uint64_t i = 0, ms, worst = 0;
	int ret;

	c = connect_timed(host, port, timeout_ms, 0);
	l = alloc_lease(c, 8192, 0, RMP_ACCESS_ALL, RMP_LEASE_AUTO_RENEW);
	expect(rmp_buf_reg(c, buf, 4096, &b), 0);
	memset(buf, 0, 4096);
	printf("READY\n");
	fflush(stdout);
	while ((ret = timed_op(c, l, b, buf, i, &ms)) == 0)
		i++;
	printf("op %" PRIu64 ": %s failed after %" PRIu64 " ms: %s\n", i,
	       kind[i % 4], ms, rmp_strerror(ret));
	worst = ms;
	for (uint64_t j = i + 1; j <= i + 8; j++) {
		ret = timed_op(c, l, b, buf, j, &ms);
		printf("then %s: %s after %" PRIu64 " ms\n", kind[j % 4],
		       rmp_strerror(ret), ms);
		if (ret == 0)
			fail("%s succeeded with the server's host dead",
			     kind[j % 4]);
		worst = ms > worst ? ms : worst;
	}
	fflush(stdout);
	if (worst > timeout_ms + 1000)
		fail("a call took %" PRIu64 " ms, op timeout %u ms", worst,
		     timeout_ms);
	printf("DOWN after %" PRIu64 " good ops; slowest failing call %"
	       PRIu64 " ms\n", i, worst);
	/* Freeing what a dead server held must not hang either. */
	rmp_buf_dereg(b);
	rmp_lease_free(l);
	rmp_client_free(c);
	free(buf);
	return 0;
}

/*
 * run_fill -- N leases of LEN bytes (ttl TTL_S; the last one SHORT_S),
 * each written with the pattern SEED + i and flushed; one line per lease,
 * "TOKEN i token", then DONE. The leases outlive this process.
 */
static int run_fill(const char *host, const char *port, unsigned n,
		    uint64_t len, uint32_t ttl, uint32_t short_ttl,
		    uint32_t seed)
{
	struct rmp_client *c = connect_to(host, port);
	uint8_t *buf = xmalloc(len);
	char tok[RMP_TOKEN_MAXLEN];

	for (unsigned i = 0; i < n; i++) {
		struct rmp_lease *l = alloc_lease(c, len, i + 1 == n ?
						  short_ttl : ttl,
						  RMP_ACCESS_ALL, 0);

		fill(buf, len, seed + i, 0);
		expect(rmp_write(l, 0, buf, len), 0);
		expect(rmp_flush(l), 0);
		if (rmp_lease_token(l, tok, sizeof(tok)) < 0)
			fail("rmp_lease_token");
		printf("TOKEN %u %s\n", i, tok);
	}
	printf("DONE\n");
	fflush(stdout);
	free(buf);
	rmp_client_free(c);
	return 0;
}

/*
 * run_verify -- attach every token of FILE (fill's output) and compare
 * its bytes with the pattern; the token of index GONE (-1: none) must be
 * gone instead; with GONE -2 any lease may be gone (a damaged journal),
 * but none may hold other bytes. Prints how many were intact.
 */
static int run_verify(const char *host, const char *port, const char *file,
		      uint64_t len, uint32_t seed, int gone)
{
	struct rmp_client *c = connect_to(host, port);
	uint8_t *buf = xmalloc(len);
	char line[RMP_TOKEN_MAXLEN + 32], tok[RMP_TOKEN_MAXLEN];
	unsigned i, n = 0, lost = 0;
	FILE *f = fopen(file, "r");
	int ret;

	if (!f)
		fail("%s: %s", file, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct rmp_lease *l;

		if (sscanf(line, "TOKEN %u %319s", &i, tok) != 2)
			continue;
		ret = rmp_lease_attach_token(c, tok, &l);
		if (gone == -2 && (ret == -ENOENT || ret == -EKEYEXPIRED)) {
			lost++;
			continue;
		}
		if ((int)i == gone) {
			if (ret != -ENOENT && ret != -EKEYEXPIRED)
				fail("lease %u: attach gave %s, want it gone",
				     i, rmp_strerror(ret));
			printf("lease %u: gone (%s), as its deadline passed\n",
			       i, rmp_strerror(ret));
			continue;
		}
		if (ret)
			fail("lease %u: attach: %s (%s)", i, rmp_strerror(ret),
			     rmp_client_last_error(c));
		if (lease_len(l) != len)
			fail("lease %u: %" PRIu64 " bytes, want %" PRIu64, i,
			     lease_len(l), len);
		memset(buf, 0, len);
		expect(rmp_read(l, 0, buf, len), 0);
		compare(buf, len, seed + i, 0, "a recovered lease");
		rmp_lease_close(l);
		n++;
	}
	fclose(f);
	printf("VERIFIED %u leases intact, %u gone\n", n, lost);
	free(buf);
	rmp_client_free(c);
	return 0;
}

/*
 * run_crowd -- lease LEN-byte pieces until the pool is full, each written
 * with pattern SEED: if the server handed out bytes a live lease covers,
 * that lease's check (verify, afterwards) finds SEED's bytes. Prints how
 * many it got; they outlive this process until their ttl (60 s).
 */
static int run_crowd(const char *host, const char *port, uint64_t len,
		     uint32_t seed)
{
	struct rmp_client *c = connect_to(host, port);
	uint8_t *buf = xmalloc(len);
	struct rmp_alloc_opts o;
	struct rmp_lease *l;
	unsigned n = 0;
	int ret;

	fill(buf, len, seed, 0);
	rmp_alloc_opts_init(&o);
	while ((ret = rmp_lease_alloc(c, len, &o, &l)) == 0) {
		expect(rmp_write(l, 0, buf, len), 0);
		expect(rmp_flush(l), 0);
		rmp_lease_close(l);
		n++;
	}
	if (ret != -ENOSPC)
		fail("alloc: %s (%s)", rmp_strerror(ret),
		     rmp_client_last_error(c));
	printf("CROWD %u leases of %" PRIu64 " bytes until the pool was full\n",
	       n, len);
	free(buf);
	rmp_client_free(c);
	return 0;
}

/*
 * run_flap -- READY, then operations until one fails (the test cuts the
 * link meanwhile): it must fail within the op timeout and a second, and
 * the next call at once. Then, once GOFILE exists (the link is back),
 * what an application does: close, connect again (retrying for up to
 * 30 s), attach the lease by token; its bytes must be intact. With
 * reconnect (rmp_client_opts.reconnect_max_ms) the library does that: the
 * same handle reads the bytes back, and the lease saw one error in all.
 */
static int run_flap(const char *host, const char *port, unsigned timeout_ms,
		    const char *gofile, bool auto_reconnect)
{
	enum { LEN = 65536 };
	struct rmp_client *c;
	struct rmp_lease *l;
	struct rmp_buf *b;
	char tok[RMP_TOKEN_MAXLEN];
	uint8_t *buf = xmalloc(LEN);
	uint64_t i = 0, ms, t0;
	int ret;

	c = connect_timed(host, port, timeout_ms, auto_reconnect ? 2000 : 0);
	l = alloc_lease(c, LEN, 0, RMP_ACCESS_ALL, RMP_LEASE_AUTO_RENEW);
	fill(buf, LEN, 77, 0);
	expect(rmp_write(l, 0, buf, LEN), 0);
	expect(rmp_flush(l), 0);
	if (rmp_lease_token(l, tok, sizeof(tok)) < 0)
		fail("rmp_lease_token");
	expect(rmp_buf_reg(c, buf, 4096, &b), 0);
	printf("READY\n");
	fflush(stdout);
	while ((ret = timed_op(c, l, b, buf, i, &ms)) == 0)
		i++;
	printf("op %" PRIu64 " failed after %" PRIu64 " ms: %s\n", i, ms,
	       rmp_strerror(ret));
	if (ms > timeout_ms + 1000)
		fail("the failing call took %" PRIu64 " ms, op timeout %u ms",
		     ms, timeout_ms);
	if (auto_reconnect) {
		/* No call while the link is dark; then the same handle. */
		fflush(stdout);
		while (access(gofile, F_OK))
			sleep_ms(50);
		rmp_buf_dereg(b); /* registered on the lost connection */
		t0 = now_ms();
		memset(buf, 0, LEN);
		ret = rmp_read(l, 0, buf, LEN);
		if (ret)
			fail("the first read after the link came back: %s (%s)",
			     rmp_strerror(ret), rmp_client_last_error(c));
		compare(buf, LEN, 77, 0, "the lease after a reconnect");
		printf("BACK: the same handle read its %d bytes intact %"
		       PRIu64 " ms after the link returned (reconnected and "
		       "attached again by the library); 1 error in all\n",
		       LEN, now_ms() - t0);
		expect(rmp_lease_free(l), 0);
		rmp_client_free(c);
		free(buf);
		return 0;
	}
	ret = timed_op(c, l, b, buf, 0, &ms);
	printf("then: %s after %" PRIu64 " ms\n", rmp_strerror(ret), ms);
	if (ret == 0 || ms > 100)
		fail("a call on the broken connection did not fail at once");
	fflush(stdout);
	while (access(gofile, F_OK))
		sleep_ms(50);
	rmp_buf_dereg(b);
	rmp_lease_close(l);
	rmp_client_close(c);
	t0 = now_ms();
	while ((ret = rmp_client_connect(c, host, (uint16_t)atoi(port)))) {
		if (now_ms() - t0 > 30000)
			fail("no connection 30 s after the link came back: "
			     "%s", rmp_strerror(ret));
		sleep_ms(200);
	}
	ret = rmp_lease_attach_token(c, tok, &l);
	if (ret)
		fail("attach after the link came back: %s (%s)",
		     rmp_strerror(ret), rmp_client_last_error(c));
	memset(buf, 0, LEN);
	expect(rmp_read(l, 0, buf, LEN), 0);
	compare(buf, LEN, 77, 0, "the lease after the link flap");
	printf("BACK: connected and attached %" PRIu64 " ms after the link "
	       "returned; the lease's %d bytes are intact\n", now_ms() - t0,
	       LEN);
	expect(rmp_lease_free(l), 0);
	rmp_client_free(c);
	free(buf);
	return 0;
}

/* -------------------------------------------------------------- holders */

/* One holder of run_holders: its own client on a thread of its own. */
struct holder {
	pthread_t tid;
	unsigned i;
	const char *host, *port, *token;
	volatile bool *stop;
	unsigned revoked, expired, reattached;
	char err[512];   /* its failure, "" if none */
};

/* say_line -- one line of holder h on stdout, whole. */
static void say_line(const struct holder *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say_line(const struct holder *h, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("H%u %s\n", h->i, line);
	fflush(stdout);
}

/* check_whole -- l (len bytes) holds the pattern of seed: "" or why not
 * (into h->err). */
static bool check_whole(struct holder *h, struct rmp_client *c,
			struct rmp_lease *l, uint64_t len, uint32_t seed,
			const char *who)
{
	uint8_t *buf = xmalloc(len);
	int ret = rmp_read(l, 0, buf, len);

	if (ret)
		snprintf(h->err, sizeof(h->err), "read of %s: %s (%s)", who,
			 rmp_strerror(ret), rmp_client_last_error(c));
	for (uint64_t i = 0; !ret && i < len; i++)
		if (buf[i] != pattern_byte(seed, i)) {
			snprintf(h->err, sizeof(h->err), "%s: byte %" PRIu64
				 " is %#x, want %#x", who, i, buf[i],
				 pattern_byte(seed, i));
			ret = -EIO;
		}
	free(buf);
	return ret == 0;
}

/* holder_loop -- run_holders' work of one holder (see there). Its client
 * reconnects and is cheap to make again (a small bounce buffer to
 * register) and to run (it sleeps at once when it waits): eleven of them
 * in a 2-CPU VM. */
static void *holder_loop(void *arg)
{
	struct holder *h = arg;
	struct rmp_client_opts o;
	struct rmp_lease *own, *eph, *shared;
	struct rmp_client *c;
	uint32_t seed = 10 * h->i;
	bool pending = false;
	uint64_t n = 0, w;
	uint8_t buf[4096];
	int ret;

	rmp_client_opts_init(&o);
	o.name = "rmp-test";
	o.tenant = getenv("RMPOOL_TENANT");
	o.key_file = o.tenant && *o.tenant ? getenv("RMPOOL_KEY_FILE") :
		      NULL;
	o.reconnect_max_ms = 2000;
	o.bounce_bytes = 64 << 10;
	o.spin_max_us = 0;
	expect(rmp_client_new(&c, &o), 0);
	connect_or_fail(c, h->host, h->port);
	own = alloc_lease(c, sizeof(buf), 600, RMP_ACCESS_ALL, 0);
	eph = alloc_lease(c, sizeof(buf), 600, RMP_ACCESS_ALL,
			  RMP_LEASE_EPHEMERAL);
	fill(buf, sizeof(buf), seed, 0);
	expect(rmp_write(own, 0, buf, sizeof(buf)), 0);
	fill(buf, sizeof(buf), seed + 1, 0);
	expect(rmp_write(eph, 0, buf, sizeof(buf)), 0);
	ret = rmp_lease_attach_token(c, h->token, &shared);
	if (ret)
		fail("H%u: attach %s: %s (%s)", h->i, h->token,
		     rmp_strerror(ret), rmp_client_last_error(c));
	say_line(h, "READY");
	while (!*h->stop && !h->err[0]) {
		sleep_ms(20);
		n++;
		ret = rmp_write(shared, 0, &n, sizeof(n));
		if (ret == -EKEYREVOKED || ret == -EKEYEXPIRED) {
			h->revoked += ret == -EKEYREVOKED;
			h->expired += ret == -EKEYEXPIRED;
			say_line(h, "REVOKED %u %s", h->revoked + h->expired,
				 rmp_strerror(ret));
			pending = true;
		} else if (ret) {
			snprintf(h->err, sizeof(h->err), "write %" PRIu64
				 " to the shared lease: %s (%s)", n,
				 rmp_strerror(ret), rmp_client_last_error(c));
		} else if (pending) {
			pending = false;
			say_line(h, "REATTACHED %u", ++h->reattached);
		}
		if (h->err[0] || (!pending && n % 25))
			continue;
		ret = rmp_read(own, 0, &w, sizeof(w));
		if (!ret)
			ret = rmp_read(eph, 0, &w, sizeof(w));
		if (ret)
			snprintf(h->err, sizeof(h->err), "read of its own leases "
				 "after %u revocations: %s (%s)",
				 h->revoked + h->expired, rmp_strerror(ret),
				 rmp_client_last_error(c));
	}
	if (!h->err[0] && check_whole(h, c, own, sizeof(buf), seed,
				      "its own lease"))
		check_whole(h, c, eph, sizeof(buf), seed + 1,
			    "its ephemeral lease");
	if (!h->err[0] && h->expired)
		snprintf(h->err, sizeof(h->err), "%u write(s) through a "
			 "revoked key gave -EKEYEXPIRED, not -EKEYREVOKED",
			 h->expired);
	else if (!h->err[0] && (!h->revoked || h->reattached != h->revoked))
		snprintf(h->err, sizeof(h->err), "revoked %u times, attached "
			 "again %u times", h->revoked, h->reattached);
	say_line(h, "DONE revoked=%u reattached=%u%s%s", h->revoked,
		 h->reattached, h->err[0] ? " FAIL: " : "", h->err);
	rmp_lease_close(shared);
	rmp_lease_free(own);
	rmp_lease_free(eph);
	rmp_client_free(c);
	return NULL;
}

/*
 * holders HOST PORT TOKEN N: N clients (threads, each its own
 * connection, reconnecting), each holding a lease of its own, an
 * ephemeral lease of its own (both 4 KiB, ttl 600 s, written with the
 * patterns of 10 i and 10 i + 1) and the shared lease of TOKEN. Each
 * prints "Hi READY", then writes a counter into the shared lease every
 * 20 ms, and reads a word of each of its own after a revocation and
 * every 25th time, until a line or EOF on stdin. Another client's
 * exclusive ATTACH revokes its key to the shared lease: its next write
 * must fail with -EKEYREVOKED ("Hi REVOKED n"); the next call reconnects
 * and attaches its handles again, and the next write works ("Hi
 * REATTACHED n"). Any other error fails it ("Hi DONE ... FAIL: why"), as
 * does a -EKEYEXPIRED for the revoked key (it goes on, so that the test
 * sees what the server does next). At the end both its own leases must
 * still hold their patterns, whole: they were neither ended nor
 * replaced. Exit status 0 when every holder held.
 */
static int run_holders(const char *host, const char *port, const char *token,
		       unsigned n)
{
	static volatile bool stop;
	struct holder *hs = calloc(n, sizeof(*hs));
	char line[64];
	int failed = 0;

	if (!hs || n == 0)
		fail("no holders");
	for (unsigned i = 0; i < n; i++) {
		hs[i] = (struct holder){ .i = i + 1, .host = host, .port = port,
					 .token = token, .stop = &stop };
		if (pthread_create(&hs[i].tid, NULL, holder_loop, &hs[i]))
			fail("pthread_create");
	}
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	stop = true;
	for (unsigned i = 0; i < n; i++) {
		pthread_join(hs[i].tid, NULL);
		failed |= hs[i].err[0] != 0;
	}
	free(hs);
	return failed;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rmp-test patterns HOST PORT SEED\n"
		"       rmp-test flush|range|exhaust HOST PORT\n"
		"       rmp-test expiry HOST PORT LEN TTL_S TICK_MS\n"
		"       rmp-test autorenew HOST PORT TTL_S TICK_MS\n"
		"       rmp-test hold HOST PORT LEN SEED TTL_S [--auto-renew]\n"
		"       rmp-test quota HOST PORT LEASES BYTES\n"
		"       rmp-test loop HOST PORT SECONDS GOFILE\n"
		"       rmp-test readloop HOST PORT TOKEN SECONDS\n"
		"       rmp-test share HOST PORT [--pause]\n"
		"       rmp-test connect HOST PORT ERRNO\n"
		"       rmp-test mix HOST PORT OPS SEED\n"
		"       rmp-test fill HOST PORT N LEN TTL_S SHORT_TTL_S SEED\n"
		"       rmp-test verify HOST PORT FILE LEN SEED GONE_INDEX\n"
		"       rmp-test crowd HOST PORT LEN SEED\n"
		"       rmp-test flap HOST PORT TIMEOUT_MS GOFILE [--reconnect]\n"
		"       rmp-test until-down HOST PORT TIMEOUT_MS\n"
		"       rmp-test holders HOST PORT TOKEN N\n"
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
	if (!strcmp(scenario, "hold") && (argc == 7 ||
	    (argc == 8 && !strcmp(argv[7], "--auto-renew"))))
		return run_hold(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				(uint32_t)atoi(argv[5]), (uint32_t)atoi(argv[6]),
				argc == 8);
	if (!strcmp(scenario, "quota") && argc == 6)
		return run_quota(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				 strtoull(argv[5], NULL, 0));
	if (!strcmp(scenario, "loop") && argc == 6)
		return run_loop(argv[2], argv[3], (unsigned)atoi(argv[4]),
				argv[5]);
	if (!strcmp(scenario, "readloop") && argc == 6)
		return run_readloop(argv[2], argv[3], argv[4],
				    (unsigned)atoi(argv[5]));
	if (!strcmp(scenario, "share") && (argc == 4 ||
	    (argc == 5 && !strcmp(argv[4], "--pause"))))
		return run_share(argv[2], argv[3], argc == 5);
	if (!strcmp(scenario, "until-down") && argc == 5)
		return run_until_down(argv[2], argv[3],
				      (unsigned)atoi(argv[4]));
	if (!strcmp(scenario, "fill") && argc == 9)
		return run_fill(argv[2], argv[3], (unsigned)atoi(argv[4]),
				strtoull(argv[5], NULL, 0),
				(uint32_t)atoi(argv[6]), (uint32_t)atoi(argv[7]),
				(uint32_t)atoi(argv[8]));
	if (!strcmp(scenario, "verify") && argc == 8)
		return run_verify(argv[2], argv[3], argv[4],
				  strtoull(argv[5], NULL, 0),
				  (uint32_t)atoi(argv[6]), atoi(argv[7]));
	if (!strcmp(scenario, "flap") && (argc == 6 || (argc == 7 &&
	    !strcmp(argv[6], "--reconnect"))))
		return run_flap(argv[2], argv[3], (unsigned)atoi(argv[4]),
				argv[5], argc == 7);
	if (!strcmp(scenario, "crowd") && argc == 6)
		return run_crowd(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				 (uint32_t)atoi(argv[5]));
	if (!strcmp(scenario, "mix") && argc == 6)
		return run_mix(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			       (uint32_t)atoi(argv[5]));
	if (!strcmp(scenario, "holders") && argc == 6)
		return run_holders(argv[2], argv[3], argv[4],
				   (unsigned)atoi(argv[5]));
	if (!strcmp(scenario, "connect") && argc == 5)
		return run_connect(argv[2], argv[3], errno_of(argv[4]));
	usage();
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * test_etcd_hostile.c -- common/etcd.c against a server that is not etcd
 * and does not play fair (a broken gateway, a man in the middle on
 * http): an answer dripped a byte at a time, headers without end, a
 * chunk-size line without end, a grant of lease 0, a watch answered
 * with an error whose body has no end. Each request must end
 * within its attempt's time, with an error, its memory bounded; nothing
 * of it may block the loop. No etcd needed: the server is a child
 * process of the test.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>

#include "../../common/etcd.h"
#include "../unit/check.h"
#include "etcd_fixture.h"

static struct event_base *base;

enum mode {
	DRIP,        /* a 200 status line, then a byte every 50 ms */
	HEADERS,     /* a 200 status line, then header lines without end */
	CHUNK_LINE,  /* a chunked 200, then a chunk-size line without end */
	GRANT_ZERO,  /* a well-formed grant of lease 0 */
	ERROR_BODY,  /* a chunked 500, then 64 MiB of chunks, then silence */
};

#define ERROR_BODY_BYTES (64u << 20)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* send_all -- write all of s to fd; false when the peer is gone. */
static bool send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		s += w;
		n -= (size_t)w;
	}
	return true;
}

/* serve -- the child: answer each connection as mode says, for 20 s. */
static void serve(int lfd, enum mode mode)
{
	static const char body[] = "{\"header\":{\"revision\":\"1\"},"
		"\"ID\":\"0\",\"TTL\":\"10\"}";
	char junk[4096], grant0[256];
	uint64_t end = now_ms() + 20000;

	alarm(25);
	memset(junk, 'a', sizeof(junk));
	snprintf(grant0, sizeof(grant0), "HTTP/1.1 200 OK\r\nContent-Type: "
		 "application/json\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(body), body);
	while (now_ms() < end) {
		int fd = accept(lfd, NULL, NULL);
		bool ok = true;

		if (fd < 0)
			continue;
		switch (mode) {
		case DRIP:
			ok = send_all(fd, "HTTP/1.1 200 OK\r\n", 17);
			while (ok && now_ms() < end) {
				ok = send_all(fd, "X", 1);
				usleep(50000);
			}
			break;
		case HEADERS:
			ok = send_all(fd, "HTTP/1.1 200 OK\r\n", 17);
			while (ok && now_ms() < end) {
				ok = send_all(fd, "X-Junk: ", 8) &&
				     send_all(fd, junk, sizeof(junk)) &&
				     send_all(fd, "\r\n", 2);
			}
			break;
		case CHUNK_LINE:
			ok = send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
				      "chunked\r\n\r\n", 45);
			while (ok && now_ms() < end)
				ok = send_all(fd, junk, sizeof(junk));
			break;
		case GRANT_ZERO:
			send_all(fd, grant0, strlen(grant0));
			break;
		case ERROR_BODY:
			ok = send_all(fd, "HTTP/1.1 500 Internal Server Error\r\n"
				      "Transfer-Encoding: chunked\r\n\r\n", 66);
			for (size_t sent = 0; ok && sent < ERROR_BODY_BYTES &&
			     now_ms() < end; sent += sizeof(junk))
				ok = send_all(fd, "1000\r\n", 6) &&
				     send_all(fd, junk, sizeof(junk)) &&
				     send_all(fd, "\r\n", 2);
			while (ok && now_ms() < end)
				ok = recv(fd, junk, sizeof(junk), 0) > 0;
			break;
		}
		close(fd);
	}
	_exit(0);
}

/* server -- a child serving mode on a loopback port: its pid. */
static pid_t server(enum mode mode, uint16_t *port)
{
	int lfd = fixture_silent_listener(port);
	pid_t pid;

	if (lfd < 0)
		return -1;
	pid = fork();
	if (pid == 0)
		serve(lfd, mode);
	close(lfd);
	return pid;
}

struct got {
	bool done;
	int err;
	int64_t id;
	char error[200];
};

static void on_reply(const struct rmp_etcd_reply *r, void *arg)
{
	struct got *g = arg;

	g->done = true;
	g->err = r->err;
	g->id = r->id;
	snprintf(g->error, sizeof(g->error), "%s", r->error);
}

static void nothing(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* run_until -- run the loop until *done or ms pass; the longest turn. */
static uint64_t run_until(const bool *done, uint64_t ms)
{
	struct timeval tv = { 0, 10000 };
	struct event *wake = event_new(base, -1, EV_PERSIST, nothing, NULL);
	uint64_t end = now_ms() + ms, longest = 0;

	event_add(wake, &tv);
	while (!*done && now_ms() < end) {
		uint64_t t = now_ms();

		event_base_loop(base, EVLOOP_ONCE);
		if (now_ms() - t > longest)
			longest = now_ms() - t;
	}
	event_free(wake);
	return longest;
}

static long rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static struct rmp_etcd *client(uint16_t port, uint64_t timeout_ms)
{
	struct rmp_etcd_endpoint ep = { .port = port };
	struct rmp_etcd_params p = { .base = base, .endpoints = &ep,
				     .nendpoints = 1,
				     .timeout_ms = timeout_ms };
	char err[256];

	snprintf(ep.host, sizeof(ep.host), "127.0.0.1");
	return rmp_etcd_new(&p, err, sizeof(err));
}

/* A range against a server of mode, with a 500 ms attempt: it ends, with
 * an error, within a second and a half; no turn of the loop takes
 * long; memory grows by less than limit_kb. */
static void test_ends(enum mode mode, const char *what, long limit_kb)
{
	struct rmp_etcd *e;
	struct got g = { 0 };
	uint16_t port;
	pid_t pid = server(mode, &port);
	uint64_t t0, longest;
	long rss0 = rss_kb();

	CHECK(pid > 0);
	e = client(port, 500);
	CHECK(e != NULL);
	if (pid <= 0 || !e)
		return;
	t0 = now_ms();
	CHECK_EQ(rmp_etcd_range(e, "/k", false, on_reply, &g), 0);
	longest = run_until(&g.done, 5000);
	printf("# %s: done %d after %llu ms, err %d (%s), longest turn %llu "
	       "ms, max RSS +%ld KiB\n", what, g.done,
	       (unsigned long long)(now_ms() - t0), g.err, g.error,
	       (unsigned long long)longest, rss_kb() - rss0);
	CHECK(g.done);
	CHECK(g.err == -ETIMEDOUT || g.err == -ECONNREFUSED ||
	      g.err == -EPROTO);
	CHECK(now_ms() - t0 < 1500);
	CHECK(longest < 250);
	CHECK(rss_kb() - rss0 < limit_kb);
	rmp_etcd_free(e);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A grant of lease 0 is no grant: an etcd answer never holds it, and a
 * key put under lease 0 would never expire. */
static void test_grant_zero(void)
{
	struct rmp_etcd *e;
	struct got g = { 0 };
	uint16_t port;
	pid_t pid = server(GRANT_ZERO, &port);

	CHECK(pid > 0);
	e = client(port, 2000);
	CHECK(e != NULL);
	if (pid <= 0 || !e)
		return;
	CHECK_EQ(rmp_etcd_grant(e, 10, on_reply, &g), 0);
	run_until(&g.done, 5000);
	printf("# grant of lease 0: err %d (%s), id %lld\n", g.err, g.error,
	       (long long)g.id);
	CHECK(g.done);
	CHECK_EQ(g.err, -EPROTO);
	rmp_etcd_free(e);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * A watch answered with an error (not 200) whose body never ends: the
 * body of an error answer is read whole, so it must be bounded like any
 * answer's (RMP_ETCD_BODY_MAX): the watch ends with -EPROTO as soon as
 * it is past that, long before its deadline, its memory bounded.
 */
static void test_watch_error_body(void)
{
	struct rmp_etcd_request *w;
	struct rmp_etcd *e;
	struct got g = { 0 };
	uint16_t port;
	pid_t pid = server(ERROR_BODY, &port);
	uint64_t t0, longest;
	long rss0 = rss_kb();

	CHECK(pid > 0);
	e = client(port, 5000);
	CHECK(e != NULL);
	if (pid <= 0 || !e)
		return;
	t0 = now_ms();
	w = rmp_etcd_watch(e, "/k", 0, on_reply, &g);
	CHECK(w != NULL);
	longest = run_until(&g.done, 8000);
	printf("# a watch's error answer without end: done %d after %llu ms, "
	       "err %d (%s), longest turn %llu ms, max RSS +%ld KiB\n",
	       g.done, (unsigned long long)(now_ms() - t0), g.err, g.error,
	       (unsigned long long)longest, rss_kb() - rss0);
	CHECK(g.done);
	CHECK_EQ(g.err, -EPROTO);
	CHECK(now_ms() - t0 < 2500);
	CHECK(longest < 250);
	CHECK(rss_kb() - rss0 < 16 * 1024);
	rmp_etcd_free(e);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (!base) {
		printf("Bail out! no event base\n");
		return 1;
	}
	/* First: the growth it must not have is read off the peak RSS. */
	test_watch_error_body();
	test_ends(DRIP, "an answer dripped", 8 * 1024);
	test_ends(HEADERS, "headers without end", 32 * 1024);
	test_ends(CHUNK_LINE, "a chunk-size line without end", 32 * 1024);
	test_grant_zero();
	event_base_free(base);
	return check_done();
}

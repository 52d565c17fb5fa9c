/* SPDX-License-Identifier: MIT */
/* test_log.c -- log lines: one write each, prefixes, held lines in order.
 * A full log socket never blocks: lines wait in memory or are counted. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static int log_fd; /* where stderr goes: a temporary file */

/* captured -- everything written to stderr so far (static buffer). */
static const char *captured(void)
{
	static char buf[65536];
	ssize_t n = pread(log_fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void reset(void)
{
	/* stderr shares the file offset: back to 0 as well. */
	if (ftruncate(log_fd, 0) || lseek(log_fd, 0, SEEK_SET) != 0)
		abort();
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_prefixes(void)
{
	reset();
	log_notice("granted %d", 7);
	log_warn("slow %s", "bind");
	log_debug("not shown at info");
	CHECK_STR(captured(), "rmpoold: granted 7\nrmpoold: warning: slow bind\n");
}

/* Held lines wait, in order, and go out whole at release. */
static void test_hold(void)
{
	reset();
	rmp_log_hold();
	log_notice("audit: grant lease=1");
	log_notice("audit: free lease=1");
	CHECK_STR(captured(), "");
	rmp_log_release();
	CHECK_STR(captured(),
		  "rmpoold: audit: grant lease=1\nrmpoold: audit: free lease=1\n");
	/* Released: the next line goes at once. */
	log_notice("after");
	CHECK(strstr(captured(), "lease=1\nrmpoold: after\n") != NULL);
}

/* More than the hold buffer: earlier lines go first, none is lost. */
static void test_hold_overflow(void)
{
	char want[16];
	const char *s;
	unsigned i, bad = 0;

	reset();
	rmp_log_hold();
	for (i = 0; i < 400; i++)
		log_notice("line %03u %s", i, "................................");
	CHECK(count_lines(captured()) > 0); /* some went out already */
	rmp_log_release();
	s = captured();
	CHECK_EQ(count_lines(s), 400);
	for (i = 0; i < 400; i++) {
		snprintf(want, sizeof(want), "line %03u", i);
		s = strstr(s, want);
		if (!s) {
			bad++;
			break;
		}
	}
	CHECK_EQ(bad, 0);
}

/* A line past the buffer is cut, still one line. */
static void test_long_line(void)
{
	static char big[4000];

	reset();
	memset(big, 'x', sizeof(big) - 1);
	log_err("%s", big);
	CHECK_EQ(count_lines(captured()), 1);
	CHECK_EQ(strlen(captured()), 1024);
}

/* A client name cannot forge fields of an audit line. */
static void test_field(void)
{
	char out[RMP_LOG_NAME_LEN], small[8];

	rmp_log_field(out, sizeof(out), "plain-name_1.x");
	CHECK_STR(out, "plain-name_1.x");
	rmp_log_field(out, sizeof(out), "a b=c tenant=root");
	CHECK_STR(out, "a\\x20b\\x3dc\\x20tenant\\x3droot");
	rmp_log_field(out, sizeof(out), "q\"\\\x7f\x01");
	CHECK_STR(out, "q\\x22\\x5c\\x7f\\x01");
	rmp_log_field(out, sizeof(out), "");
	CHECK_STR(out, "");
	/* 24 spaces, the protocol's longest name: it fits. */
	rmp_log_field(out, sizeof(out), "                        ");
	CHECK_EQ(strlen(out), 96);
	/* Cut before an escape that does not fit, never inside one. */
	rmp_log_field(small, sizeof(small), "abcde f");
	CHECK_STR(small, "abcde");
	rmp_log_field(small, sizeof(small), "abcdefghij");
	CHECK_STR(small, "abcdefg");
}

/* now_ms -- CLOCK_MONOTONIC in ms. */
static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: a log line blocked (reader full)\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/*
 * test_slow_reader -- stderr a stream socket nobody reads (journald under
 * load): lines must not block the caller. Below notice they are dropped
 * at once; notice and above wait in memory, not for the reader; once the
 * reader drains, the next line says how many were lost.
 */
static void test_slow_reader(void)
{
	int sv[2], saved = dup(STDERR_FILENO), small = 4096;
	char buf[4096], all[65536];
	long long t0, info_ms, notice_ms;
	size_t got = 0;
	ssize_t r;

	CHECK(saved >= 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	CHECK(dup2(sv[0], STDERR_FILENO) >= 0);
	rmp_log_init("rmpoold", LOG_INFO); /* stderr is a socket now */
	signal(SIGALRM, on_alarm);
	alarm(10);
	/* Fill the socket: with nobody reading, lines start to be lost. */
	for (int i = 0; i < 2000; i++)
		log_info("filler line %d, long enough to fill the buffer soon "
			 "..........................................", i);
	t0 = now_ms();
	for (int i = 0; i < 100; i++)
		log_info("info while full %d", i);
	info_ms = now_ms() - t0;
	t0 = now_ms();
	log_notice("notice while full");
	notice_ms = now_ms() - t0;
	alarm(0);
	printf("# 100 info lines on a full socket: %lld ms; a notice: %lld ms\n",
	       info_ms, notice_ms);
	CHECK(info_ms < 1000);
	CHECK(notice_ms < 1000);
	/* Drain, then one more line: it is preceded by the count. */
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	while ((r = read(sv[1], buf, sizeof(buf))) > 0)
		;
	log_warn("after the drain");
	while ((r = read(sv[1], all + got, sizeof(all) - 1 - got)) > 0)
		got += (size_t)r;
	all[got] = '\0';
	CHECK(strstr(all, "log line(s) lost: the log's reader did not keep up") !=
	      NULL);
	CHECK(strstr(all, "rmpoold: warning: after the drain\n") != NULL);
	dup2(saved, STDERR_FILENO);
	rmp_log_init("rmpoold", LOG_INFO);
	close(saved);
	close(sv[0]);
	close(sv[1]);
}

/* count_str -- occurrences of needle in s. */
static unsigned count_str(const char *s, const char *needle)
{
	unsigned n = 0;

	for (; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/* lost_total -- the sum of the "N log line(s) lost" notes in s. */
static unsigned long lost_total(const char *s)
{
	static const char tail[] = " log line(s) lost";
	unsigned long sum = 0;
	const char *p;

	for (; (p = strstr(s, tail)); s = p + sizeof(tail) - 1) {
		const char *q = p;

		while (q > s && q[-1] >= '0' && q[-1] <= '9')
			q--;
		sum += strtoul(q, NULL, 10);
	}
	return sum;
}

/*
 * test_full_socket -- stderr a stream socket that is full (journald not
 * keeping up): no line waits for it, notice and above (the audit log)
 * included. Lines at notice and above are kept (a bounded backlog) and
 * go out, in order, once the reader drains; those below are dropped,
 * each one counted: every line logged is either read whole or counted
 * as lost.
 */
static void test_full_socket(void)
{
	enum { FILLERS = 2000, KEPT = 20 };
	int sv[2], saved = dup(STDERR_FILENO), small = 4096, big = 1 << 20;
	static char all[1 << 20];
	char want[160];
	long long t0, ms, longest = 0;
	unsigned long lost0;
	unsigned whole = 0, bad_order = 0;
	const char *at;
	size_t got = 0;
	ssize_t r;

	CHECK(saved >= 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	/* Full before any line was lost: someone else's bytes. */
	memset(all, '#', 512);
	all[511] = '\n';
	while (send(sv[0], all, 512, MSG_DONTWAIT) > 0)
		;
	CHECK(dup2(sv[0], STDERR_FILENO) >= 0);
	rmp_log_init("rmpoold", LOG_INFO);
	signal(SIGALRM, on_alarm);
	alarm(20);
	lost0 = rmp_log_lost();
	for (int i = 0; i < KEPT; i++) {
		t0 = now_ms();
		log_notice("audit: kept %02d", i);
		ms = now_ms() - t0;
		longest = ms > longest ? ms : longest;
	}
	for (int i = 0; i < FILLERS; i++)
		log_info("filler line %d, long enough to fill the buffer soon "
			 "..........................................", i);
	alarm(0);
	printf("# %d notice lines on a full socket: the longest took %lld "
	       "ms\n", KEPT, longest);
	CHECK(longest < 50);
	/* The reader catches up (and has room now): a flush (the daemon's
	 * every second) brings what waited, and the count of what was lost;
	 * then lines go out as they come. */
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	while ((r = read(sv[1], all + got, sizeof(all) - 1 - got)) > 0)
		got += (size_t)r;
	rmp_log_flush();
	while ((r = read(sv[1], all + got, sizeof(all) - 1 - got)) > 0)
		got += (size_t)r;
	all[got] = '\0';
	CHECK(strstr(all, "rmpoold: audit: kept 19\n") != NULL);
	CHECK_EQ(lost_total(all), FILLERS);
	CHECK_EQ(rmp_log_lost() - lost0, FILLERS);
	log_warn("after the drain");
	while ((r = read(sv[1], all + got, sizeof(all) - 1 - got)) > 0)
		got += (size_t)r;
	all[got] = '\0';
	at = all;
	for (int i = 0; i < KEPT; i++) {
		snprintf(want, sizeof(want), "rmpoold: audit: kept %02d\n", i);
		at = strstr(at, want);
		if (!at) {
			printf("# \"audit: kept %02d\" is missing or out of "
			       "order\n", i);
			bad_order++;
			at = all;
		}
	}
	CHECK_EQ(bad_order, 0);
	for (int i = 0; i < FILLERS; i++) {
		snprintf(want, sizeof(want), "rmpoold: filler line %d, long "
			 "enough to fill the buffer soon ......................"
			 "....................\n", i);
		whole += strstr(all, want) != NULL;
	}
	printf("# filler lines read whole: %u, counted lost: %lu\n", whole,
	       lost_total(all));
	/* (the notice lines are kept, not lost) */
	CHECK_EQ(whole + lost_total(all), FILLERS);
	CHECK_EQ(count_str(all, "rmpoold: warning: after the drain\n"), 1);
	dup2(saved, STDERR_FILENO);
	rmp_log_init("rmpoold", LOG_INFO);
	close(saved);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	char path[] = "/tmp/rmp-test-log.XXXXXX";

	log_fd = mkstemp(path);
	if (log_fd < 0 || dup2(log_fd, STDERR_FILENO) < 0)
		return 99;
	unlink(path);
	unsetenv("JOURNAL_STREAM");
	rmp_log_init("rmpoold", LOG_INFO);
	test_prefixes();
	test_hold();
	test_hold_overflow();
	test_long_line();
	test_field();
	test_slow_reader();
	test_full_socket();
	reset();
	/* Under systemd: the level as "<N>", no name. */
	setenv("JOURNAL_STREAM", "8:1", 1);
	rmp_log_init("rmpoold", LOG_INFO);
	reset();
	log_warn("w");
	CHECK_STR(captured(), "<4>w\n");
	return check_done();
}

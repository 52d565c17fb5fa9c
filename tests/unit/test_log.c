/* SPDX-License-Identifier: MIT */
/* test_log.c -- log lines: one write each, prefixes, held lines in order. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	/* Under systemd: the level as "<N>", no name. */
	setenv("JOURNAL_STREAM", "8:1", 1);
	rmp_log_init("rmpoold", LOG_INFO);
	reset();
	log_warn("w");
	CHECK_STR(captured(), "<4>w\n");
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* log.c -- leveled logging to stderr, with journal level prefixes. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static const char *log_ident = "rmpool";
static int log_max = LOG_INFO;
static int log_journal;
static bool log_socket; /* stderr is a socket (rmp_log_init looked) */
/* Each level's line prefix, made once: a line is then one formatting pass. */
static char log_prefix[LOG_DEBUG + 1][64];

static const char *const level_names[] = {
	[LOG_EMERG] = "emergency", [LOG_ALERT] = "alert",
	[LOG_CRIT] = "critical",   [LOG_ERR] = "error",
	[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
};

/* Lines a thread holds back (rmp_log_hold) until rmp_log_release. */
#define HELD_BYTES 8192
static _Thread_local bool held_on;
static _Thread_local size_t held_len;
static _Thread_local char held_buf[HELD_BYTES];

void rmp_log_init(const char *ident, int max_level)
{
	struct stat st;

	log_ident = ident;
	log_max = max_level;
	/* systemd connects stderr to the journal and says so here. */
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	log_socket = fstat(STDERR_FILENO, &st) == 0 && S_ISSOCK(st.st_mode);
	for (int i = LOG_EMERG; i <= LOG_DEBUG; i++) {
		if (log_journal)
			snprintf(log_prefix[i], sizeof(log_prefix[i]), "<%d>",
				 i);
		else if (i == LOG_INFO || i == LOG_NOTICE)
			snprintf(log_prefix[i], sizeof(log_prefix[i]), "%s: ",
				 ident);
		else
			snprintf(log_prefix[i], sizeof(log_prefix[i]),
				 "%s: %s: ", ident, level_names[i]);
	}
}

void rmp_log_set_level(int max_level)
{
	log_max = max_level;
}

int rmp_log_level(void)
{
	return log_max;
}

int rmp_log_level_parse(const char *s)
{
	for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
		if (!strcmp(s, level_names[i]))
			return i;
	return -EINVAL;
}

/*
 * A reader that does not keep up (journald under load) must not stop the
 * caller, an event loop: on a socket (the journal's stream; looked at by
 * rmp_log_init) lines are sent without blocking. A line that finds the socket full waits
 * LOG_WAIT_MS at most when it matters (notice and above: the audit log),
 * else it is dropped and counted; the next line that goes out says how
 * many were lost. Files and pipes are written as they are.
 */
#define LOG_WAIT_MS 100
static _Atomic unsigned long log_dropped;
static _Atomic bool log_torn; /* a line went out in part: end it first */

/* put -- send what the socket takes now, waiting up to wait_ms for room;
 * returns the bytes that went out (< n: the rest could not). */
static size_t put(const char *p, size_t n, int wait_ms)
{
	struct pollfd pfd = { .fd = STDERR_FILENO, .events = POLLOUT };
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		if (log_socket)
			w = send(STDERR_FILENO, p + done, n - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			w = write(STDERR_FILENO, p + done, n - done);
		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    wait_ms > 0 && poll(&pfd, 1, wait_ms) > 0) {
			wait_ms = 0; /* one wait per line */
			continue;
		}
		break;
	}
	return done;
}

/* put_whole -- put the n bytes, all or not at all as far as the reader
 * can tell (a part that went out makes the line torn). */
static bool put_whole(const char *p, size_t n, int wait_ms)
{
	size_t done = put(p, n, wait_ms);

	if (done && done < n)
		log_torn = true;
	return done == n;
}

/* write_all -- n bytes of whole lines to stderr (see above). */
static void write_all(const char *p, size_t n, bool may_wait)
{
	unsigned long lost, lines = 0;
	char note[96];
	int m;

	if (log_torn) {
		if (put("\n", 1, 0) != 1)
			goto drop;
		log_torn = false;
	}
	lost = log_dropped;
	if (lost) {
		m = snprintf(note, sizeof(note), "%s%lu log line(s) lost: the "
			     "log's reader did not keep up\n",
			     log_prefix[LOG_WARNING], lost);
		if (m < 0 || !put_whole(note, (size_t)m, 0))
			goto drop;
		log_dropped -= lost;
	}
	if (put_whole(p, n, may_wait ? LOG_WAIT_MS : 0))
		return;
drop:
	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n';
	log_dropped += lines;
}

void rmp_log_hold(void)
{
	held_on = true;
}

void rmp_log_release(void)
{
	held_on = false;
	write_all(held_buf, held_len, true);
	held_len = 0;
}

void rmp_log(int level, const char *fmt, ...)
{
	char line[1024];
	size_t n, room;
	va_list ap;
	int m;

	if (level > log_max || level < 0 || level > LOG_DEBUG)
		return;
	if (!log_prefix[LOG_ERR][0]) /* a program that never called init */
		rmp_log_init(log_ident, log_max);
	n = strlen(log_prefix[level]);
	memcpy(line, log_prefix[level], n);
	room = sizeof(line) - n; /* the newline takes the NUL's place */
	va_start(ap, fmt);
	m = vsnprintf(line + n, room, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += (size_t)m < room ? (size_t)m : room - 1;
	line[n++] = '\n';
	/* One write per line (or per held batch of whole lines), so that
	 * concurrent writers do not interleave. */
	if (!held_on) {
		write_all(line, n, level <= LOG_NOTICE);
		return;
	}
	if (held_len + n > sizeof(held_buf)) {
		write_all(held_buf, held_len, true);
		held_len = 0;
	}
	memcpy(held_buf + held_len, line, n);
	held_len += n;
}

void rmp_log_field(char *out, size_t len, const char *in)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!len)
		return;
	for (; *in; in++) {
		unsigned char ch = (unsigned char)*in;
		bool plain = ch > 0x20 && ch < 0x7f && ch != '=' &&
			     ch != '"' && ch != '\\';

		if (o + (plain ? 1 : 4) >= len)
			break;
		if (plain) {
			out[o++] = (char)ch;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

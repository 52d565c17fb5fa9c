/* SPDX-License-Identifier: MIT */
/* log.c -- leveled logging to stderr, with journal level prefixes. */
#include <errno.h>
#include <pthread.h>
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
 * rmp_log_init) nothing ever waits for room. A line at notice or above
 * (the audit log) that finds the socket full waits in memory, in a
 * backlog of LOG_BACKLOG bytes that goes out first, at the next line or
 * rmp_log_flush (the daemon calls it every second); a line below notice
 * is dropped. So is one that finds the backlog full. Dropped lines are
 * counted, and a note says how many before the next line that goes out.
 * A line the socket took in part always ends, from the backlog. Files
 * and pipes are written as they are.
 */
#define LOG_BACKLOG 65536
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under log_lock: */
static char log_backlog[LOG_BACKLOG];
static size_t log_backlog_len;
static unsigned long log_dropped; /* since the last note */
static bool log_torn; /* a line went out in part and its rest was lost */
/* Since start, for metrics (read without the lock). */
static _Atomic unsigned long log_lost;

/* put -- what of p[0, n) stderr takes now, without waiting on a socket;
 * returns the bytes that went out. */
static size_t put(const char *p, size_t n)
{
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		if (log_socket)
			w = send(STDERR_FILENO, p + done, n - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			w = write(STDERR_FILENO, p + done, n - done);
		if (w > 0)
			done += (size_t)w;
		else if (w < 0 && errno == EINTR)
			continue;
		else
			break;
	}
	return done;
}

/* queue -- keep p[0, n) in the backlog; false when it has no room. */
static bool queue(const char *p, size_t n)
{
	if (n > LOG_BACKLOG - log_backlog_len)
		return false;
	memcpy(log_backlog + log_backlog_len, p, n);
	log_backlog_len += n;
	return true;
}

/* drop -- the lines of p[0, n) are lost: count them. */
static void drop(const char *p, size_t n)
{
	unsigned long lines = 0;

	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n';
	log_dropped += lines;
	log_lost += lines;
}

/* flush -- send what waits (the end of a torn line, the backlog, the
 * note of lost lines); true when nothing waits any more. */
static bool flush(void)
{
	char note[96];
	size_t done;
	int m;

	if (log_torn) {
		if (put("\n", 1) != 1)
			return false;
		log_torn = false;
	}
	if (log_backlog_len) {
		done = put(log_backlog, log_backlog_len);
		memmove(log_backlog, log_backlog + done,
			log_backlog_len - done);
		log_backlog_len -= done;
		if (log_backlog_len)
			return false;
	}
	if (log_dropped) {
		m = snprintf(note, sizeof(note), "%s%lu log line(s) lost: the "
			     "log's reader did not keep up\n",
			     log_prefix[LOG_WARNING], log_dropped);
		if (m < 0)
			return true;
		done = put(note, (size_t)m);
		if (!done)
			return false;
		log_dropped = 0;
		/* (the backlog is empty: the rest of the note fits) */
		if (queue(note + done, (size_t)m - done) && log_backlog_len)
			return false;
	}
	return true;
}

/* write_all -- n bytes of whole lines to stderr; keep: they are at
 * notice or above, and wait in the backlog rather than be dropped. */
static void write_all(const char *p, size_t n, bool keep)
{
	size_t done;

	pthread_mutex_lock(&log_lock);
	if (!flush()) {
		if (!keep || !queue(p, n))
			drop(p, n);
		goto out;
	}
	done = put(p, n);
	if (done == n)
		goto out;
	/* The rest of a line begun must follow, or the line is torn. */
	if ((keep || done) && queue(p + done, n - done))
		goto out;
	log_torn = done > 0;
	drop(p + done, n - done);
out:
	pthread_mutex_unlock(&log_lock);
}

void rmp_log_flush(void)
{
	pthread_mutex_lock(&log_lock);
	flush();
	pthread_mutex_unlock(&log_lock);
}

unsigned long rmp_log_lost(void)
{
	return log_lost;
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

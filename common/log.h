/* SPDX-License-Identifier: MIT */
/* log.h -- leveled logging for the daemon and tools (stderr / journal). */
#ifndef RMP_LOG_H
#define RMP_LOG_H

#include <stddef.h>

#include <syslog.h>

/*
 * Levels are syslog's (LOG_ERR .. LOG_DEBUG). Under systemd (JOURNAL_STREAM
 * set) each line gets a "<N>" prefix so the journal keeps the level;
 * otherwise lines are "rmpoold: warning: ...". Library code never logs.
 * rmp_log_init also looks whether stderr is a socket (see log.c): call
 * it again after stderr was redirected.
 */
void rmp_log_init(const char *ident, int max_level);
void rmp_log_set_level(int max_level);
int rmp_log_level(void);
/* Parse "error|warning|notice|info|debug"; -EINVAL when unknown. */
int rmp_log_level_parse(const char *s);

void rmp_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A log line never waits for its reader: when stderr is a socket that is
 * full (journald not keeping up), lines at notice and above (the audit
 * log) wait in a bounded backlog, lines below are dropped and counted,
 * and a note says how many before the next line that goes out (see
 * log.c). rmp_log_flush -- send what waits, if the reader takes it now;
 * call it now and then (the daemon: every second). rmp_log_lost -- lines
 * lost since start.
 */
void rmp_log_flush(void);
unsigned long rmp_log_lost(void);

/*
 * rmp_log_hold -- the calling thread's next lines wait in memory until
 * rmp_log_release writes them, in order, in one write. For a reply that
 * should not wait for its own log lines (the daemon holds them while it
 * answers one request, microseconds). Other threads are not affected.
 */
void rmp_log_hold(void);
void rmp_log_release(void);

/*
 * rmp_log_field -- in as one field of a log line (an audit line's
 * client=...): a space, '=', '"', '\\' or any byte outside printable
 * ASCII becomes \xHH, so that a name cannot forge fields. Truncated to
 * fit len (always terminated; nothing is cut inside an escape).
 */
void rmp_log_field(char *out, size_t len, const char *in);
/* Room for a client or tenant name of the protocol (24 bytes), escaped. */
#define RMP_LOG_NAME_LEN (4 * 24 + 1)

#define log_err(...) rmp_log(LOG_ERR, __VA_ARGS__)
#define log_warn(...) rmp_log(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) rmp_log(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) rmp_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...) rmp_log(LOG_DEBUG, __VA_ARGS__)

#endif /* RMP_LOG_H */

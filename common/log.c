/* SPDX-License-Identifier: MIT */
/* log.c -- leveled logging to stderr, with journal level prefixes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *log_ident = "rmpool";
static int log_max = LOG_INFO;
static int log_journal;

static const char *const level_names[] = {
	[LOG_EMERG] = "emergency", [LOG_ALERT] = "alert",
	[LOG_CRIT] = "critical",   [LOG_ERR] = "error",
	[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
};

void rmp_log_init(const char *ident, int max_level)
{
	log_ident = ident;
	log_max = max_level;
	/* systemd connects stderr to the journal and says so here. */
	log_journal = getenv("JOURNAL_STREAM") != NULL;
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

void rmp_log(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per line so concurrent writers do not interleave. */
	if (log_journal)
		fprintf(stderr, "<%d>%s\n", level, line);
	else if (level == LOG_INFO || level == LOG_NOTICE)
		fprintf(stderr, "%s: %s\n", log_ident, line);
	else
		fprintf(stderr, "%s: %s: %s\n", log_ident, level_names[level],
			line);
}

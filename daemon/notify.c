/* SPDX-License-Identifier: MIT */
/* notify.c -- systemd: readiness, watchdog, status line, reload and stop. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"
#include "ops.h"
#include "util.h"

/* How often the status line is looked at (and sent if it changed). */
#define STATUS_MS 250

struct rmp_notify {
	const struct rmp_ops *ops;
	struct event *watchdog_ev, *status_ev;
	char status[160];
	bool ready;
};

/* human -- bytes as "1.5 GiB". */
static void human(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	unsigned u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", d, unit[u]);
}

/* send_status -- STATUS= when it differs from the last one sent. */
static void send_status(struct rmp_notify *n, bool force)
{
	struct rmp_status st;
	char line[sizeof(n->status)], fr[24], all[24];

	rmp_ops_status(n->ops, &st);
	human(st.free_bytes, fr, sizeof(fr));
	human(st.pool_bytes, all, sizeof(all));
	snprintf(line, sizeof(line), "%u client%s, %" PRIu64 " lease%s, %s of "
		 "%s free%s", st.clients, st.clients == 1 ? "" : "s",
		 st.leases, st.leases == 1 ? "" : "s", fr, all,
		 st.stopping ? ", stopping" : st.draining ? ", draining" : "");
	if (!force && !strcmp(line, n->status))
		return;
	rmp_strlcpy(n->status, line, sizeof(n->status));
	sd_notifyf(0, "STATUS=%s", line);
}

static void on_watchdog(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

static void on_status(int fd, short what, void *arg)
{
	struct rmp_notify *n = arg;

	(void)fd;
	(void)what;
	if (n->ready)
		send_status(n, false);
}

static struct event *add_timer(struct event_base *base, uint64_t usec,
			       event_callback_fn fn, void *arg)
{
	struct timeval tv = { (time_t)(usec / 1000000),
			      (suseconds_t)(usec % 1000000) };
	struct event *ev = event_new(base, -1, EV_PERSIST, fn, arg);

	if (ev && event_add(ev, &tv)) {
		event_free(ev);
		return NULL;
	}
	return ev;
}

struct rmp_notify *rmp_notify_new(struct event_base *base,
				  const struct rmp_ops *ops)
{
	struct rmp_notify *n = calloc(1, sizeof(*n));
	uint64_t usec = 0;

	if (!n)
		return NULL;
	n->ops = ops;
	if (!getenv("NOTIFY_SOCKET"))
		return n; /* not run by a service manager */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec) {
		n->watchdog_ev = add_timer(base, usec / 2, on_watchdog, n);
		if (!n->watchdog_ev)
			goto fail;
		log_info("systemd watchdog: %" PRIu64 " ms, pinged every %"
			 PRIu64 " ms", usec / 1000, usec / 2000);
	}
	n->status_ev = add_timer(base, STATUS_MS * 1000, on_status, n);
	if (!n->status_ev)
		goto fail;
	return n;
fail:
	rmp_notify_free(n);
	return NULL;
}

void rmp_notify_free(struct rmp_notify *n)
{
	if (!n)
		return;
	if (n->watchdog_ev)
		event_free(n->watchdog_ev);
	if (n->status_ev)
		event_free(n->status_ev);
	free(n);
}

void rmp_notify_ready(struct rmp_notify *n)
{
	n->ready = true;
	sd_notify(0, "READY=1");
	send_status(n, true);
}

void rmp_notify_reloading(struct rmp_notify *n)
{
	struct timespec ts;

	/* MONOTONIC_USEC lets systemd >= 253 match the READY=1 to it. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nSTATUS=reloading the configuration\n"
		   "MONOTONIC_USEC=%" PRIu64, (uint64_t)ts.tv_sec * 1000000 +
		   (uint64_t)ts.tv_nsec / 1000);
}

void rmp_notify_stopping(struct rmp_notify *n)
{
	if (!n || !n->ready)
		return; /* said already, or never ready */
	n->ready = false;
	sd_notify(0, "STOPPING=1\nSTATUS=stopping: draining");
}

void rmp_fdstore_take(const char *const *names, int *fds, unsigned n)
{
	char **got = NULL;
	int nfds;

	for (unsigned k = 0; k < n; k++)
		fds[k] = -1;
	nfds = sd_listen_fds_with_names(1, &got);
	for (int i = 0; i < nfds; i++) {
		int f = SD_LISTEN_FDS_START + i;
		bool kept = false;

		for (unsigned k = 0; k < n && !kept; k++) {
			if (fds[k] < 0 && got && got[i] &&
			    !strcmp(got[i], names[k])) {
				fds[k] = f;
				fcntl(f, F_SETFD, FD_CLOEXEC);
				kept = true;
			}
		}
		if (!kept) {
			/* nothing else is ours to keep; the service manager
			 * keeps its copy (a device not served now?) */
			log_warn("file descriptor store: %s is not used by "
				 "this start; it stays stored (with what it "
				 "holds) until systemctl stop",
				 got && got[i] ? got[i] : "an fd");
			close(f);
		}
	}
	for (int i = 0; got && got[i]; i++)
		free(got[i]);
	free(got);
}

void rmp_fdstore_remove(const char *name)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	sd_notify(0, msg);
}

int rmp_fdstore_put(int fd, const char *name)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
	return sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
}

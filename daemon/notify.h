/* SPDX-License-Identifier: MIT */
/* notify.h -- systemd: readiness, watchdog, status line, reload and stop. */
#ifndef RMP_NOTIFY_H
#define RMP_NOTIFY_H

struct event_base;
struct rmp_ops;
struct rmp_notify;

/*
 * The service manager's view of rmpoold (sd_notify(3)). Without
 * NOTIFY_SOCKET (not run by systemd) every call is a no-op.
 *
 * The watchdog is pinged from an event-loop timer at half of
 * WATCHDOG_USEC: when the loop is stuck the pings stop and systemd
 * restarts the service. STATUS= ("3 clients, 12 leases, 1.5 GiB of 4 GiB
 * free") is sent whenever it changes, looked at every STATUS_MS.
 */
struct rmp_notify *rmp_notify_new(struct event_base *base,
				  const struct rmp_ops *ops);
void rmp_notify_free(struct rmp_notify *n);

/* READY=1 with the status: clients can connect from now on. */
void rmp_notify_ready(struct rmp_notify *n);
/* RELOADING=1 before a reload (rmp_notify_ready after it). */
void rmp_notify_reloading(struct rmp_notify *n);
/* STOPPING=1: the stop has begun (once; NULL or not ready: no-op). */
void rmp_notify_stopping(struct rmp_notify *n);

/*
 * The file descriptor store (FileDescriptorStoreMax= in the unit): fds
 * the service manager keeps for the service while it restarts.
 * rmp_fdstore_take -- the stored fds called names[0..n), handed over at
 * this start (LISTEN_FDS / LISTEN_FDNAMES): fds[k] the one called
 * names[k], or -1; other passed fds are closed. Once per start.
 * rmp_fdstore_put -- store fd under name: 1 sent, 0 not run by systemd,
 * or -errno. rmp_fdstore_remove -- drop what is stored under name.
 */
void rmp_fdstore_take(const char *const *names, int *fds, unsigned n);
int rmp_fdstore_put(int fd, const char *name);
void rmp_fdstore_remove(const char *name);

#endif /* RMP_NOTIFY_H */

/* SPDX-License-Identifier: MIT */
/* metrics.h -- Prometheus metrics over HTTP on [server] metrics_listen. */
#ifndef RMP_METRICS_H
#define RMP_METRICS_H

struct event_base;
struct rmp_ops;
struct rmp_metrics;

/*
 * rmp_metrics_new -- serve GET /metrics (text exposition format 0.0.4)
 * on listen ("ADDR:PORT" or "[V6ADDR]:PORT") from the daemon's own event
 * loop: 404 for any other path, 405 for a method other than GET or HEAD.
 * Every figure is read from ops at scrape time, the device's port
 * counters from sysfs (the list of counter files is read once, here).
 * A scrape costs no walk over leases or connections. Slow or idle
 * clients cannot pile up: at most a few connections at once, each
 * closed after a short timeout, with small header and body limits.
 *
 * Returns NULL when listen does not parse or cannot be bound, logged
 * with the config key and the address (errno is set: EINVAL,
 * EADDRINUSE, ...).
 */
struct rmp_metrics *rmp_metrics_new(struct event_base *base,
				    struct rmp_ops *ops, const char *listen);
/* Close the endpoint and every connection. Accepts NULL. */
void rmp_metrics_free(struct rmp_metrics *m);

#endif /* RMP_METRICS_H */

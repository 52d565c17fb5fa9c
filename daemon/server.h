/* SPDX-License-Identifier: MIT */
/* server.h -- rmpoold as a whole: set-up, the event loop, drain, stop. */
#ifndef RMP_SERVER_H
#define RMP_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "conn.h"
#include "devices.h"
#include "listener.h"
#include "ops.h"

struct event;
struct event_base;
struct rmp_guard;
struct rmp_metrics;
struct rmp_admin;
struct rmp_cluster;
struct rmp_notify;
struct rmp_lifecycle;
struct rmp_tenants;
struct rmp_pool;

/* One served device's events: their callbacks get this. */
struct rmp_server_dev {
	struct rmp_server *srv;
	struct rmp_device *dev;
	struct event *cq_ev, *cq_more_ev, *async_ev;
};

struct rmp_server {
	struct rmp_config cfg;
	const char *config_path;
	bool verbose;              /* -v: debug logging whatever the config */
	struct event_base *base;
	struct rmp_listener listener;
	struct rmp_devices devices;  /* each with its pool and journal */
	struct rmp_server_dev sdev[RMP_DEVICES_MAX];
	struct rmp_lifecycle *lc;
	struct rmp_guard *guard;
	struct rmp_tenants *tenants;
	struct rmp_conns conns;
	struct rmp_ops ops;        /* operators' view: admin, metrics, SIGHUP */
	struct rmp_notify *notify;
	struct rmp_metrics *metrics; /* NULL: metrics_listen = "" */
	struct rmp_admin *admin;   /* NULL: admin_socket = "" */
	struct rmp_cluster *cluster; /* NULL: no [cluster] etcd */
	bool draining;
	uint64_t drain_deadline_ms;
	struct event *cm_ev, *drain_ev, *sweep_ev, *sigterm_ev, *sigint_ev,
		*sighup_ev;
};

/*
 * rmp_server_start -- bind the listen addresses, open the devices served
 * (devices.h), map and register their pools, set up queues, lease
 * lifecycle, listener and the event loop, then tell systemd it is ready.
 * On failure logs what went wrong and returns -errno.
 */
int rmp_server_start(struct rmp_server *srv);
/*
 * rmp_server_run -- the event loop, until SIGTERM/SIGINT has drained
 * (no connection left or drain_timeout passed), a second such signal, or
 * the device is lost. 0 or -errno.
 */
int rmp_server_run(struct rmp_server *srv);
/* Revoke everything, disconnect everyone, free all. Accepts half-built. */
void rmp_server_stop(struct rmp_server *srv);

#endif /* RMP_SERVER_H */

/* SPDX-License-Identifier: MIT */
/* listener.h -- rdma_cm events: admit, accept or reject, and tear down. */
#ifndef RMP_LISTENER_H
#define RMP_LISTENER_H

#include <stdbool.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>

#include "config.h"
#include "proto.h"

struct rmp_conns;
struct rmp_guard;
struct rmp_tenants;

/* Most listen addresses ([server] listen). */
#define RMP_LISTEN_MAX RMP_CONFIG_LISTEN_MAX

struct rmp_listener {
	struct rdma_event_channel *channel;
	/* One id per listen address, all on channel. */
	struct rdma_cm_id *ids[RMP_LISTEN_MAX];
	unsigned nids;
	struct rmp_conns *conns;    /* connections on devices it does not
				     * serve are refused */
	struct rmp_guard *guard;
	struct rmp_tenants *tenants;
	unsigned max_clients;
	bool wildcard;              /* bound to 0.0.0.0 or :: */
	bool draining;              /* refuse new connections */
	bool device_lost;           /* DEVICE_REMOVAL seen: stop */
	/* Connect requests refused since start, by enum rmp_reject_reason. */
	uint64_t rejects[RMP_REJ_REASONS];
};

/*
 * rmp_listener_bind -- one more id, bound to addr:port (the event channel,
 * non-blocking, comes with the first). Its id->verbs is the device of a
 * concrete address, NULL for a wildcard. Logs what fails; 0 or -errno
 * (-E2BIG: RMP_LISTEN_MAX ids already).
 */
int rmp_listener_bind(struct rmp_listener *ls, const char *addr,
		      unsigned port);
/* Start listening on every id (backlog max_clients). 0 or -errno. */
int rmp_listener_listen(struct rmp_listener *ls);
/* Handle every rdma_cm event that is ready (the channel fd is readable). */
void rmp_listener_dispatch(struct rmp_listener *ls);
void rmp_listener_close(struct rmp_listener *ls);

#endif /* RMP_LISTENER_H */

/* SPDX-License-Identifier: MIT */
/* devices.h -- the RDMA devices rmpoold serves, each with its own pool. */
#ifndef RMP_DEVICES_H
#define RMP_DEVICES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "device.h"
#include "listener.h"
#include "pool.h"
#include "proto.h"

/*
 * Which devices are served follows from the listen addresses:
 *  - concrete addresses: the device of each (in the order listed, once
 *    each); [server] device, when set, must name exactly those;
 *  - a wildcard: the devices [server] device lists, else every device
 *    with an ACTIVE port, in the order the system lists them.
 * Device i gets pool i, [pool] size bytes pinned on its NUMA node (the
 * configured node, else the device's), with its own state file and
 * journal (state_dir/pool-DEVICE, or the memfd rmpool-pool-DEVICE in the
 * service manager's fd store). Every pool is registered on every device
 * (same address everywhere), so a lease can be reached through any of
 * them; the registrations of the devices run in parallel.
 */
struct rmp_devices {
	unsigned n;
	struct rmp_device dev[RMP_DEVICES_MAX];
	struct rmp_pool *pool[RMP_DEVICES_MAX];   /* pool[i]: dev[i]'s */
	struct rmp_device *devp[RMP_DEVICES_MAX]; /* &dev[i], for callers
						   * that take a list */
	/* The listen address through which device i was found ("" for a
	 * wildcard) and its interface (for the NUMA fallback, the status). */
	char addr[RMP_DEVICES_MAX][RMP_CONFIG_ADDR_LEN];
	char netdev[RMP_DEVICES_MAX][64];
	enum rmp_keys_mode keys_mode;   /* one for all the devices */
	struct ibv_context **list;      /* rdma_get_devices() */
};

/*
 * rmp_devices_open -- find the devices served (see above) for the bound
 * listener ls, open each (PD, CQ; -E2BIG: the CQ a full house of clients
 * needs is too large) and settle one key mode for all. Logs what fails;
 * 0 or -errno (-ENODEV: a device named or needed is not there).
 */
int rmp_devices_open(struct rmp_devices *ds, const struct rmp_config *cfg,
		     const struct rmp_listener *ls);

/*
 * rmp_devices_map_pools -- each device's pool: mapped on its node,
 * faulted in, its journal opened, registered on every device; then the
 * shared receive queues (not in region key mode). Logs what fails and
 * each pool's figures; 0 or -errno.
 */
int rmp_devices_map_pools(struct rmp_devices *ds,
			  const struct rmp_config *cfg);

/* rmp_devices_close -- pools, journals, verbs objects. Accepts
 * half-built. */
void rmp_devices_close(struct rmp_devices *ds);

#endif /* RMP_DEVICES_H */

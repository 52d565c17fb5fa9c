/* SPDX-License-Identifier: MIT */
/* topology.h -- NUMA node of an RDMA device or netdev, free hugepages (sysfs). */
#ifndef RMP_TOPOLOGY_H
#define RMP_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Everything here reads sysfs below a root prefix, sysroot: NULL or ""
 * is the real root, a directory is a fixture tree laid out like /sys
 * (tests/unit/fixtures/sysfs-*). Paths printed into `how` and `path` are
 * the ones on the system, without the sysroot prefix, so they can be
 * quoted to an operator as they are.
 *
 * How a node is found:
 *  - hardware NIC: /sys/class/infiniband/<dev>/device/numa_node;
 *  - software device (rxe; it has a `parent` file, or no `device` link):
 *    `parent` names the netdev, and the node is that of the netdev;
 *  - netdev: resolve /sys/class/net/<netdev>/device and walk up its
 *    parent directories to the first `numa_node` >= 0, stopping at
 *    /sys/devices (a PCI function can say -1 while its bridge knows); a
 *    netdev with no `device` link (vlan, bond, macvlan) takes the node of
 *    its first `lower_*` netdev that has one.
 * A hardware NIC whose own numa_node is -1 is walked up the same way.
 *
 * `how` (any of the calls) receives one line saying which path was taken,
 * e.g. "rxe0 -> netdev eth0 -> /sys/devices/pci0000:80/0000:80:01.0
 * numa_node=1", also on failure (what was missing). It may be NULL; it is
 * truncated to howlen.
 */

/*
 * rmp_numa_node_of_ibdev -- the NUMA node of RDMA device ibdev.
 * @sysroot: root prefix (see above)
 * @ibdev:   device name as in /sys/class/infiniband, e.g. "mlx5_0"
 * @how:     receives the path taken (may be NULL)
 * @howlen:  size of how
 *
 * Returns the node (>= 0), -ENOENT when sysfs tells no node for it,
 * -ENODEV when the device (or its parent netdev) does not exist, -EINVAL
 * for a name that cannot be a device name, or another -errno from sysfs.
 */
int rmp_numa_node_of_ibdev(const char *sysroot, const char *ibdev, char *how,
			   size_t howlen);

/*
 * rmp_numa_node_of_netdev -- the NUMA node of network interface netdev
 * (the fallback when the RDMA device tells none: the interface of the
 * listen address).
 * @sysroot: root prefix
 * @netdev:  interface name as in /sys/class/net, e.g. "eth0"
 * @how:     receives the path taken (may be NULL)
 * @howlen:  size of how
 *
 * Returns the node (>= 0), -ENOENT (no node known), -ENODEV (no such
 * interface), -EINVAL (bad name) or another -errno.
 */
int rmp_numa_node_of_netdev(const char *sysroot, const char *netdev,
			    char *how, size_t howlen);

/*
 * rmp_numa_pick_node -- the node for `numa_node = auto`: that of ibdev,
 * else that of netdev, else 0. Never fails.
 * @sysroot: root prefix
 * @ibdev:   RDMA device; NULL or "" to skip
 * @netdev:  interface of the listen address; NULL or "" to skip
 * @how:     receives what was tried and which node was chosen, to log
 *           (may be NULL)
 * @howlen:  size of how
 *
 * Returns the node, >= 0.
 */
int rmp_numa_pick_node(const char *sysroot, const char *ibdev,
		       const char *netdev, char *how, size_t howlen);

/*
 * rmp_hugepages_free -- free hugepages of one size on one node, from
 * /sys/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/
 * free_hugepages (on a kernel without NUMA, node 0 is
 * /sys/kernel/mm/hugepages/hugepages-<kB>kB). Pages that other mappings
 * reserved but have not touched yet count as free here.
 * @sysroot:    root prefix
 * @node:       NUMA node, >= 0
 * @page_size:  hugepage size in bytes (e.g. 2 MiB, 1 GiB)
 * @free_pages: receives the count; untouched on failure
 * @path:       receives the nr_hugepages file an operator writes to get
 *              more pages of that size on that node (without sysroot);
 *              filled in on failure too, once node and page_size are
 *              valid. May be NULL.
 * @pathlen:    size of path
 *
 * Returns 0, -EINVAL (node < 0, page_size not a power of two >= 4 KiB, or
 * an unreadable count), -ENODEV (no such node), -EOPNOTSUPP (the kernel
 * has no hugepages of that size) or another -errno from reading.
 */
int rmp_hugepages_free(const char *sysroot, int node, uint64_t page_size,
		       uint64_t *free_pages, char *path, size_t pathlen);

#endif /* RMP_TOPOLOGY_H */

/* SPDX-License-Identifier: MIT */
/* test_numa.c -- unit tests of NUMA/hugepage discovery on sysfs fixtures. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../common/topology.h"
#include "check.h"

static char root[PATH_MAX];
static char how[1024];

/* fixture -- the sysroot of tests/unit/fixtures/sysfs-<name>. */
static const char *fixture(const char *name)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/tests/unit/fixtures/sysfs-%s", root,
		 name);
	return path;
}

static void test_hardware(void)
{
	const char *fx = fixture("mlx5");

	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "mlx5_0", how, sizeof(how)), 1);
	CHECK_STR(how, "mlx5_0 -> /sys/devices/pci0000:80/0000:80:02.0/"
		       "0000:82:00.0 numa_node=1");
	/* the function says -1: its root port knows */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "mlx5_1", how, sizeof(how)), 0);
	CHECK_STR(how, "mlx5_1 -> /sys/devices/pci0000:00/0000:00:03.0 "
		       "numa_node=0");
	CHECK_EQ(rmp_numa_node_of_netdev(fx, "ens2f0np0", how, sizeof(how)),
		 1);
	CHECK_STR(how, "netdev ens2f0np0 -> /sys/devices/pci0000:80/"
		       "0000:80:02.0/0000:82:00.0 numa_node=1");
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "mlx5_9", how, sizeof(how)),
		 -ENODEV);
	CHECK_STR(how, "mlx5_9: no such RDMA device");
	/* how may be NULL */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "mlx5_0", NULL, 0), 1);
}

static void test_software(void)
{
	const char *fx = fixture("rxe");

	/* rxe0 -> eth0, whose PCI function says -1 under a node-1 port */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "rxe0", how, sizeof(how)), 1);
	CHECK_STR(how, "rxe0 -> netdev eth0 -> /sys/devices/pci0000:80/"
		       "0000:80:01.0 numa_node=1");
	/* rxe1 -> dummy0: virtual, no device link */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "rxe1", how, sizeof(how)),
		 -ENOENT);
	CHECK_STR(how, "rxe1 -> netdev dummy0: virtual (no device link, no "
		       "lower netdev)");
	/* rxe2 -> eth0.100, a vlan: its lower eth0 */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "rxe2", how, sizeof(how)), 1);
	CHECK_STR(how, "rxe2 -> netdev eth0.100 -> lower eth0 -> "
		       "/sys/devices/pci0000:80/0000:80:01.0 numa_node=1");
	/* rxe3 -> eth1: -1 all the way up */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "rxe3", how, sizeof(how)),
		 -ENOENT);
	CHECK_STR(how, "rxe3 -> netdev eth1 -> /sys/devices/pci0000:00/"
		       "0000:00:1f.6: no numa_node >= 0 up to /sys/devices");
	/* rxe4 -> a netdev that is gone */
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "rxe4", how, sizeof(how)),
		 -ENODEV);
	CHECK_STR(how, "rxe4 -> netdev missing0: no such netdev");

	CHECK_EQ(rmp_numa_node_of_netdev(fx, "eth0", how, sizeof(how)), 1);
	CHECK_EQ(rmp_numa_node_of_netdev(fx, "dummy0", how, sizeof(how)),
		 -ENOENT);
	CHECK_EQ(rmp_numa_node_of_netdev(fx, "eth9", how, sizeof(how)),
		 -ENODEV);
	CHECK_STR(how, "netdev eth9: no such netdev");
}

static void test_bad_names(void)
{
	const char *fx = fixture("rxe");

	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "../rxe0", how, sizeof(how)),
		 -EINVAL);
	CHECK_STR(how, "../rxe0: not an RDMA device name");
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "..", how, sizeof(how)), -EINVAL);
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, "", how, sizeof(how)), -EINVAL);
	CHECK_EQ(rmp_numa_node_of_ibdev(fx, NULL, how, sizeof(how)), -EINVAL);
	CHECK_EQ(rmp_numa_node_of_netdev(fx, "a/b", how, sizeof(how)),
		 -EINVAL);
	CHECK_EQ(rmp_numa_node_of_netdev(fx, "sixteen-chars-xx", how,
					 sizeof(how)), -EINVAL);
	CHECK_EQ(rmp_numa_node_of_netdev(fx, ".", how, sizeof(how)), -EINVAL);
	/* a sysroot that does not exist */
	CHECK_EQ(rmp_numa_node_of_ibdev("/nonexistent-sysroot", "rxe0", how,
					sizeof(how)), -ENOENT);
	CHECK_STR(how, "sysroot /nonexistent-sysroot: No such file or "
		       "directory");
	/* the real root: no such device here either way */
	CHECK_EQ(rmp_numa_node_of_ibdev(NULL, "rmp-no-such-dev", how,
					sizeof(how)), -ENODEV);
	CHECK_EQ(rmp_numa_node_of_ibdev("", "rmp-no-such-dev", how,
					sizeof(how)), -ENODEV);
	CHECK_EQ(rmp_numa_node_of_ibdev("/", "rmp-no-such-dev", how,
					sizeof(how)), -ENODEV);
}

static void test_pick(void)
{
	const char *fx = fixture("rxe");

	CHECK_EQ(rmp_numa_pick_node(fx, "rxe0", "eth1", how, sizeof(how)), 1);
	CHECK_STR(how, "rxe0 -> netdev eth0 -> /sys/devices/pci0000:80/"
		       "0000:80:01.0 numa_node=1");
	/* the device tells nothing: the listen address's netdev does */
	CHECK_EQ(rmp_numa_pick_node(fx, "rxe1", "eth0", how, sizeof(how)), 1);
	CHECK_STR(how, "rxe1 -> netdev dummy0: virtual (no device link, no "
		       "lower netdev); listen netdev eth0 -> "
		       "/sys/devices/pci0000:80/0000:80:01.0 numa_node=1");
	CHECK_EQ(rmp_numa_pick_node(fx, "rxe1", "dummy0", how, sizeof(how)),
		 0);
	CHECK_STR(how, "rxe1 -> netdev dummy0: virtual (no device link, no "
		       "lower netdev); listen netdev dummy0: virtual (no "
		       "device link, no lower netdev); no NUMA node known, "
		       "using node 0");
	CHECK_EQ(rmp_numa_pick_node(fx, NULL, "eth0.100", how, sizeof(how)),
		 1);
	CHECK_EQ(rmp_numa_pick_node(fx, "rxe3", NULL, how, sizeof(how)), 0);
	CHECK(strstr(how, "; listen netdev unknown; no NUMA node known, "
			  "using node 0") != NULL);
	CHECK_EQ(rmp_numa_pick_node(fx, "", "", how, sizeof(how)), 0);
	CHECK_STR(how, "no RDMA device; listen netdev unknown; no NUMA node "
		       "known, using node 0");
	/* a short buffer is cut, never overrun */
	memset(how, 'x', sizeof(how));
	CHECK_EQ(rmp_numa_pick_node(fx, "rxe1", "eth0", how, 12), 1);
	CHECK_STR(how, "rxe1 -> net");
	CHECK_EQ(how[12], 'x');
	CHECK_EQ(rmp_numa_pick_node(fx, "rxe1", "eth0", NULL, 0), 1);
}

static void test_hugepages(void)
{
	const char *fx = fixture("hugepages");
	char path[256];
	uint64_t n = 777;

	CHECK_EQ(rmp_hugepages_free(fx, 0, 2 << 20, &n, path, sizeof(path)),
		 0);
	CHECK_EQ(n, 512);
	CHECK_STR(path, "/sys/devices/system/node/node0/hugepages/"
			"hugepages-2048kB/nr_hugepages");
	CHECK_EQ(rmp_hugepages_free(fx, 1, 2 << 20, &n, path, sizeof(path)),
		 0);
	CHECK_EQ(n, 100);
	CHECK_STR(path, "/sys/devices/system/node/node1/hugepages/"
			"hugepages-2048kB/nr_hugepages");
	CHECK_EQ(rmp_hugepages_free(fx, 1, 1 << 30, &n, path, sizeof(path)),
		 0);
	CHECK_EQ(n, 4);
	CHECK_STR(path, "/sys/devices/system/node/node1/hugepages/"
			"hugepages-1048576kB/nr_hugepages");
	CHECK_EQ(rmp_hugepages_free(fx, 0, 1 << 30, &n, NULL, 0), 0);
	CHECK_EQ(n, 0);

	n = 777;
	/* node 2's count is garbage; node 3 has no hugepages; no node 4 */
	CHECK_EQ(rmp_hugepages_free(fx, 2, 2 << 20, &n, path, sizeof(path)),
		 -EINVAL);
	CHECK_EQ(rmp_hugepages_free(fx, 3, 2 << 20, &n, path, sizeof(path)),
		 -EOPNOTSUPP);
	CHECK_STR(path, "/sys/devices/system/node/node3/hugepages/"
			"hugepages-2048kB/nr_hugepages");
	CHECK_EQ(rmp_hugepages_free(fx, 2, 1 << 30, &n, path, sizeof(path)),
		 -EOPNOTSUPP);
	CHECK_EQ(rmp_hugepages_free(fx, 4, 2 << 20, &n, path, sizeof(path)),
		 -ENODEV);
	CHECK_EQ(rmp_hugepages_free(fx, -1, 2 << 20, &n, path, sizeof(path)),
		 -EINVAL);
	CHECK_EQ(rmp_hugepages_free(fx, 0, 3 << 20, &n, path, sizeof(path)),
		 -EINVAL);
	CHECK_EQ(rmp_hugepages_free(fx, 0, 2048, &n, path, sizeof(path)),
		 -EINVAL);
	CHECK_EQ(rmp_hugepages_free(fx, 0, 0, &n, path, sizeof(path)),
		 -EINVAL);
	CHECK_EQ(n, 777);

	/* a kernel without NUMA: node 0 is the global pool */
	fx = fixture("nonuma");
	CHECK_EQ(rmp_hugepages_free(fx, 0, 2 << 20, &n, path, sizeof(path)),
		 0);
	CHECK_EQ(n, 64);
	CHECK_STR(path, "/sys/kernel/mm/hugepages/hugepages-2048kB/"
			"nr_hugepages");
	CHECK_EQ(rmp_hugepages_free(fx, 1, 2 << 20, &n, path, sizeof(path)),
		 -ENODEV);

	/* the real root answers something sensible */
	{
		int ret = rmp_hugepages_free(NULL, 0, 2 << 20, &n, NULL, 0);

		CHECK(ret == 0 || ret == -ENODEV || ret == -EOPNOTSUPP);
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("RMP_SOURCE_ROOT");
	char probe[PATH_MAX + 64];
	struct stat st;

	snprintf(root, sizeof(root), "%s",
		 argc > 1 ? argv[1] : env && *env ? env : ".");
	snprintf(probe, sizeof(probe), "%s/tests/unit/fixtures", root);
	if (stat(probe, &st)) {
		printf("# %s missing: set RMP_SOURCE_ROOT or pass the source "
		       "root as argv[1]\n", probe);
		CHECK(!"fixtures found");
		return check_done();
	}
	test_hardware();
	test_software();
	test_bad_names();
	test_pick();
	test_hugepages();
	return check_done();
}

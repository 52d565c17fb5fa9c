/* SPDX-License-Identifier: MIT */
/* topology.c -- NUMA node of an RDMA device or netdev, free hugepages (sysfs). */
#include "topology.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* IB_DEVICE_NAME_MAX in the kernel, NUL included. */
#define IBDEV_NAME_LEN 64

/* vlan on bond on ...: deeper stacks of lower netdevs are not followed. */
#define LOWER_DEPTH_MAX 8

/* Where sysfs is: the resolved sysroot, "" for the real root. */
struct sysfs {
	char root[PATH_MAX];
	size_t rootlen;
};

/* A bounded string builder for `how`; a NULL buffer swallows everything. */
struct sb {
	char *buf;
	size_t len;
	size_t pos;
};

/* sb_init -- start an empty string in buf (which may be NULL). */
static void sb_init(struct sb *s, char *buf, size_t len)
{
	s->buf = buf;
	s->len = buf ? len : 0;
	s->pos = 0;
	if (s->len)
		buf[0] = '\0';
}

static void sb_add(struct sb *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_add(struct sb *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!s->len || s->pos >= s->len - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(s->buf + s->pos, s->len - s->pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	s->pos += (size_t)n;
	if (s->pos > s->len - 1)
		s->pos = s->len - 1;
}

/* mkpath -- snprintf into a path buffer; -ENAMETOOLONG when cut. */
static int mkpath(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int mkpath(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * sysfs_init -- resolve sysroot once, so that resolved paths below it can
 * be shown without it. Returns 0 or -errno (sysroot does not exist).
 */
static int sysfs_init(struct sysfs *fs, const char *sysroot)
{
	fs->root[0] = '\0';
	fs->rootlen = 0;
	if (!sysroot || !*sysroot)
		return 0;
	if (!realpath(sysroot, fs->root))
		return -errno;
	if (!strcmp(fs->root, "/"))
		fs->root[0] = '\0';
	fs->rootlen = strlen(fs->root);
	return 0;
}

/* shown -- a path below the root as it is on the system. */
static const char *shown(const struct sysfs *fs, const char *path)
{
	if (fs->rootlen && !strncmp(path, fs->root, fs->rootlen))
		return path + fs->rootlen;
	return path;
}

/* exists -- the path names something (a dangling link does not count). */
static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* read_int -- a decimal int file ("1", "-1"). 0, -EINVAL or -errno. */
static int read_int(const char *path, int *out)
{
	char buf[32], *end;
	long v;
	int ret;

	ret = rmp_read_line(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (end == buf || *end || errno || v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* read_u64 -- a decimal unsigned file. 0, -EINVAL or -errno. */
static int read_u64(const char *path, uint64_t *out)
{
	char buf[32] = "", *end;
	unsigned long long v;
	int ret;

	ret = rmp_read_line(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	if (!isdigit((unsigned char)buf[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (*end || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

/* valid_name -- usable as one sysfs path component, shorter than len. */
static bool valid_name(const char *name, size_t len)
{
	size_t n;

	if (!name || !*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	n = strlen(name);
	if (n >= len)
		return false;
	return !strchr(name, '/');
}

/*
 * walk_up -- the node of the device a `device` link resolves to: that
 * directory or its closest ancestor below <root>/sys/devices with a
 * numa_node >= 0. Returns the node, -ENOENT or -errno.
 */
static int walk_up(const struct sysfs *fs, const char *link, struct sb *how)
{
	char stop[PATH_MAX], dir[PATH_MAX], start[PATH_MAX];
	char file[PATH_MAX + 16];
	size_t stoplen;
	int node, ret;

	ret = mkpath(file, sizeof(file), "%s/sys/devices", fs->root);
	if (ret)
		return ret;
	if (!realpath(file, stop)) {
		sb_add(how, ": no /sys/devices");
		return -ENOENT;
	}
	if (!realpath(link, dir)) {
		ret = -errno;
		sb_add(how, ": cannot resolve %s", shown(fs, link));
		return ret == -ENOENT ? -ENOENT : ret;
	}
	strcpy(start, dir);
	stoplen = strlen(stop);
	while (!strncmp(dir, stop, stoplen) && dir[stoplen] == '/') {
		char *slash;

		ret = mkpath(file, sizeof(file), "%s/numa_node", dir);
		if (!ret && !read_int(file, &node) && node >= 0) {
			sb_add(how, " -> %s numa_node=%d", shown(fs, dir),
			       node);
			return node;
		}
		slash = strrchr(dir, '/');
		*slash = '\0';
	}
	sb_add(how, " -> %s: no numa_node >= 0 up to /sys/devices",
	       shown(fs, start));
	return -ENOENT;
}

/* is_lower -- scandir filter: the lower_<netdev> links of a netdev. */
static int is_lower(const struct dirent *d)
{
	return !strncmp(d->d_name, "lower_", 6) && d->d_name[6];
}

/*
 * netdev_node -- the node of a netdev: walk up from its `device` link,
 * or, without one, the first of its lower netdevs (in name order) that has
 * a node. label says how it was reached ("netdev", "lower").
 */
static int netdev_node(const struct sysfs *fs, const char *netdev,
		       const char *label, int depth, struct sb *how)
{
	char dir[PATH_MAX], link[PATH_MAX + 16];
	struct dirent **lowers = NULL;
	int n, i, ret;

	sb_add(how, "%s %s", label, netdev ? netdev : "(null)");
	if (!valid_name(netdev, IF_NAMESIZE)) {
		sb_add(how, ": not an interface name");
		return -EINVAL;
	}
	ret = mkpath(dir, sizeof(dir), "%s/sys/class/net/%s", fs->root,
		     netdev);
	if (ret)
		return ret;
	if (!exists(dir)) {
		sb_add(how, ": no such netdev");
		return -ENODEV;
	}
	ret = mkpath(link, sizeof(link), "%s/device", dir);
	if (ret)
		return ret;
	if (exists(link))
		return walk_up(fs, link, how);
	if (depth >= LOWER_DEPTH_MAX) {
		sb_add(how, ": lower netdevs nest too deep");
		return -ENOENT;
	}

	n = scandir(dir, &lowers, is_lower, alphasort);
	if (n < 0)
		n = 0;
	ret = -ENOENT;
	for (i = 0; i < n; i++) {
		if (ret < 0) {
			sb_add(how, " -> ");
			ret = netdev_node(fs, lowers[i]->d_name + 6, "lower",
					  depth + 1, how);
		}
		free(lowers[i]);
	}
	free(lowers);
	if (!n)
		sb_add(how, ": virtual (no device link, no lower netdev)");
	return ret >= 0 ? ret : -ENOENT;
}

int rmp_numa_node_of_netdev(const char *sysroot, const char *netdev,
			    char *how, size_t howlen)
{
	struct sysfs fs;
	struct sb s;
	int ret;

	sb_init(&s, how, howlen);
	ret = sysfs_init(&fs, sysroot);
	if (ret) {
		sb_add(&s, "sysroot %s: %s", sysroot, strerror(-ret));
		return ret;
	}
	return netdev_node(&fs, netdev, "netdev", 0, &s);
}

int rmp_numa_node_of_ibdev(const char *sysroot, const char *ibdev, char *how,
			   size_t howlen)
{
	char dir[PATH_MAX], file[PATH_MAX + 16], parent[IF_NAMESIZE + 8];
	struct sysfs fs;
	struct sb s;
	bool has_device;
	int ret;

	sb_init(&s, how, howlen);
	ret = sysfs_init(&fs, sysroot);
	if (ret) {
		sb_add(&s, "sysroot %s: %s", sysroot, strerror(-ret));
		return ret;
	}
	sb_add(&s, "%s", ibdev ? ibdev : "(null)");
	if (!valid_name(ibdev, IBDEV_NAME_LEN)) {
		sb_add(&s, ": not an RDMA device name");
		return -EINVAL;
	}
	ret = mkpath(dir, sizeof(dir), "%s/sys/class/infiniband/%s", fs.root,
		     ibdev);
	if (ret)
		return ret;
	if (!exists(dir)) {
		sb_add(&s, ": no such RDMA device");
		return -ENODEV;
	}
	ret = mkpath(file, sizeof(file), "%s/device", dir);
	if (ret)
		return ret;
	has_device = exists(file);

	/* A software device (rxe) names its netdev in `parent`. */
	ret = mkpath(file, sizeof(file), "%s/parent", dir);
	if (ret)
		return ret;
	ret = rmp_read_line(file, parent, sizeof(parent));
	if (ret >= 0) {
		sb_add(&s, " -> ");
		ret = netdev_node(&fs, parent, "netdev", 0, &s);
		if (ret >= 0 || !has_device)
			return ret;
		/* a parent that tells nothing: try the device link too */
		sb_add(&s, "; %s", ibdev);
	} else if (ret != -ENOENT) {
		sb_add(&s, ": cannot read parent: %s", strerror(-ret));
		return ret;
	}

	if (!has_device) {
		sb_add(&s, ": no device link and no parent netdev");
		return -ENOENT;
	}
	ret = mkpath(file, sizeof(file), "%s/device", dir);
	if (ret)
		return ret;
	return walk_up(&fs, file, &s);
}

int rmp_numa_pick_node(const char *sysroot, const char *ibdev,
		       const char *netdev, char *how, size_t howlen)
{
	char part[512];
	struct sb s;
	int node;

	sb_init(&s, how, howlen);
	if (ibdev && *ibdev) {
		node = rmp_numa_node_of_ibdev(sysroot, ibdev, part,
					      sizeof(part));
		sb_add(&s, "%s", part);
		if (node >= 0)
			return node;
		sb_add(&s, "; listen ");
	} else {
		sb_add(&s, "no RDMA device; listen ");
	}
	if (netdev && *netdev) {
		node = rmp_numa_node_of_netdev(sysroot, netdev, part,
					       sizeof(part));
		sb_add(&s, "%s", part);
		if (node >= 0)
			return node;
		sb_add(&s, "; ");
	} else {
		sb_add(&s, "netdev unknown; ");
	}
	sb_add(&s, "no NUMA node known, using node 0");
	return 0;
}

int rmp_hugepages_free(const char *sysroot, int node, uint64_t page_size,
		       uint64_t *free_pages, char *path, size_t pathlen)
{
	char base[128], file[PATH_MAX];
	struct sysfs fs;
	uint64_t kb, n;
	int ret;

	if (node < 0 || page_size < 4096 || (page_size & (page_size - 1)))
		return -EINVAL;
	kb = page_size / 1024;
	ret = sysfs_init(&fs, sysroot);
	if (ret)
		return ret;

	ret = mkpath(file, sizeof(file), "%s/sys/devices/system/node",
		     fs.root);
	if (ret)
		return ret;
	if (!exists(file) && node == 0) {
		/* a kernel without NUMA: one global pool */
		snprintf(base, sizeof(base), "/sys/kernel/mm/hugepages");
	} else {
		snprintf(base, sizeof(base),
			 "/sys/devices/system/node/node%d", node);
		ret = mkpath(file, sizeof(file), "%s%s", fs.root, base);
		if (ret)
			return ret;
		if (!exists(file))
			return -ENODEV;
		snprintf(base, sizeof(base),
			 "/sys/devices/system/node/node%d/hugepages", node);
	}
	if (path && pathlen)
		snprintf(path, pathlen, "%s/hugepages-%" PRIu64
			 "kB/nr_hugepages", base, kb);

	ret = mkpath(file, sizeof(file), "%s%s/hugepages-%" PRIu64 "kB",
		     fs.root, base, kb);
	if (ret)
		return ret;
	if (!exists(file))
		return -EOPNOTSUPP;
	ret = mkpath(file, sizeof(file),
		     "%s%s/hugepages-%" PRIu64 "kB/free_hugepages", fs.root,
		     base, kb);
	if (ret)
		return ret;
	ret = read_u64(file, &n);
	if (ret)
		return ret;
	*free_pages = n;
	return 0;
}

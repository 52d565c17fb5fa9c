/* SPDX-License-Identifier: MIT */
/*
 * test_pool.c -- the state file rmp_pool_map adopts: only its own. A file
 * someone else put at the path (open to others, a link) is refused and
 * left alone; a new one and the fd store's memfd are used. Its mapping,
 * the pool and the journal's tail, stays out of core dumps.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool.h"
#include "check.h"

#define SIZE (2ull << 20)

static char tmpdir[64];

static struct rmp_pool_params params(const char *path)
{
	struct rmp_pool_params p = {
		.size = SIZE,
		.hugepage_size = SIZE,
		.node = 0,
		.sysroot = "/nonexistent", /* no hugepages: normal pages */
		.fault_threads = 1,
		.state_file = path,
		.state_bytes = 4096,
	};

	return p;
}

/* map -- rmp_pool_map of p, the pool freed again; its return value. */
static int map(const struct rmp_pool_params *p, char *err, size_t errlen)
{
	struct rmp_pool *pool = NULL;
	int ret = rmp_pool_map(&pool, p, err, errlen);

	if (ret)
		printf("# %s\n", err);
	rmp_pool_free(pool);
	return ret;
}

static void test_refused(void)
{
	char path[96], target[112], err[512];
	struct rmp_pool_params p;
	struct stat st;
	int fd;

	/* Another user's file, here one open to everybody: left alone. */
	snprintf(path, sizeof(path), "%s/pool", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && write(fd, "planted", 7) == 7 && fchmod(fd, 0666) == 0);
	close(fd);
	p = params(path);
	CHECK_EQ(map(&p, err, sizeof(err)), -EACCES);
	CHECK(strstr(err, "state file") && strstr(err, path) &&
	      strstr(err, "mode 0666"));
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(st.st_size, 7); /* not truncated, not mapped */
	unlink(path);

	/* A symbolic link: neither followed nor its target made. */
	snprintf(target, sizeof(target), "%s/target", tmpdir);
	CHECK_EQ(symlink(target, path), 0);
	CHECK_EQ(map(&p, err, sizeof(err)), -ELOOP);
	CHECK(strstr(err, "symbolic link") != NULL);
	CHECK(access(target, F_OK) != 0);
	unlink(path);
}

/* used -- map() of p did not refuse the state file: 0, or a failure of
 * a later step this host does not allow (mbind under some seccomp
 * profiles), skipped. */
static bool used(const struct rmp_pool_params *p)
{
	char err[512];
	int ret = map(p, err, sizeof(err));

	if (ret && !strncmp(err, "mbind", 5)) {
		printf("# skipped: this host refuses mbind\n");
		return true;
	}
	return ret == 0;
}

static void test_used(void)
{
	char path[96];
	struct rmp_pool_params p;
	struct stat st;
	int fd;

	/* New: made 600 and mapped; then found again. */
	snprintf(path, sizeof(path), "%s/pool", tmpdir);
	p = params(path);
	CHECK(used(&p));
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
	CHECK(used(&p));
	unlink(path);

	/* The fd store's memfd has no name, and mode 777: used. */
	fd = memfd_create("rmpool-pool", MFD_CLOEXEC);
	CHECK(fd >= 0);
	p = params("memfd rmpool-pool");
	p.has_state_fd = true;
	p.state_fd = fd; /* the pool's: closed at free */
	CHECK(used(&p));
}

/*
 * dumped -- whether the mapping that holds [p, p + len) may be dumped:
 * false when every VMA of /proc/self/smaps over it has the "dd" flag
 * (MADV_DONTDUMP); -1 when no VMA covers it.
 */
static int dumped(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, end = a + len;
	bool in = false, covered = false, dd_all = true;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char sp;

		/* A VMA's first line: "LO-HI perms ..." */
		if (sscanf(line, "%lx-%lx%c", &lo, &hi, &sp) == 3 &&
		    sp == ' ') {
			in = lo < end && hi > a;
			covered |= in;
		} else if (in && !strncmp(line, "VmFlags:", 8) &&
			   !strstr(line, " dd")) {
			dd_all = false;
		}
	}
	fclose(f);
	return covered ? !dd_all : -1;
}

/*
 * The state file's tail holds the lease journal, and so every lease's
 * secret: like the tenants' bytes, it stays out of core dumps
 * (MADV_DONTDUMP on the whole mapping, pool and tail).
 */
static void test_no_dump(void)
{
	struct rmp_pool_params p;
	struct rmp_pool *pool = NULL;
	char path[96], err[512];
	int ret;

	snprintf(path, sizeof(path), "%s/pool-dump", tmpdir);
	p = params(path);
	ret = rmp_pool_map(&pool, &p, err, sizeof(err));
	if (ret && !strncmp(err, "mbind", 5)) {
		printf("# skipped: this host refuses mbind\n");
		unlink(path);
		return;
	}
	CHECK_EQ(ret, 0);
	if (!pool)
		return;
	CHECK(pool->state == pool->base + pool->size);
	CHECK(pool->state_len >= 4096);
	CHECK_EQ(dumped(pool->base, pool->size), 0);
	CHECK_EQ(dumped(pool->state, pool->state_len), 0);
	rmp_pool_free(pool);
	unlink(path);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/rmp-pool-XXXXXX",
		 t && *t && strlen(t) < 40 ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	umask(077);
	test_refused();
	test_used();
	test_no_dump();
	rmdir(tmpdir);
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/* test_util.c -- the state directory and file only this user may reach. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "check.h"

static char tmpdir[64];

/* refused -- what returned ret, with err naming path and saying want. */
static void refused(int ret, int want_ret, const char *err, const char *path,
		    const char *want)
{
	CHECK_EQ(ret, want_ret);
	if (!check_report(strstr(err, path) && strstr(err, want),
			  "the message names the path and the fix", __FILE__,
			  __LINE__))
		printf("#   \"%s\", want \"%s\"\n", err, want);
}

static void test_private_dir(void)
{
	char dir[96], link[112], file[112], err[512];
	static const mode_t bad[] = { 0720, 0702, 0777, 01777, 0770 };

	snprintf(dir, sizeof(dir), "%s/state", tmpdir);
	CHECK_EQ(mkdir(dir, 0700), 0);
	CHECK_EQ(rmp_private_dir(dir, err, sizeof(err)), 0);
	/* Others may look, not add names. */
	CHECK_EQ(chmod(dir, 0755), 0);
	CHECK_EQ(rmp_private_dir(dir, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(chmod(dir, bad[i]), 0);
		refused(rmp_private_dir(dir, err, sizeof(err)), -EACCES, err,
			dir, "chmod 700");
	}
	CHECK_EQ(chmod(dir, 0700), 0);

	snprintf(link, sizeof(link), "%s/link", tmpdir);
	CHECK_EQ(symlink(dir, link), 0);
	refused(rmp_private_dir(link, err, sizeof(err)), -ELOOP, err, link,
		"symbolic link");
	unlink(link);

	snprintf(file, sizeof(file), "%s/file", tmpdir);
	CHECK_EQ(close(open(file, O_WRONLY | O_CREAT, 0600)), 0);
	refused(rmp_private_dir(file, err, sizeof(err)), -ENOTDIR, err, file,
		"not a directory");
	unlink(file);

	CHECK_EQ(rmp_private_dir("/nonexistent/rmp", err, sizeof(err)),
		 -ENOENT);

	if (geteuid() == 0) {
		CHECK_EQ(chown(dir, 65534, 65534), 0);
		refused(rmp_private_dir(dir, err, sizeof(err)), -EACCES, err,
			dir, "owned by uid 65534");
		CHECK_EQ(chown(dir, 0, 0), 0);
	} else {
		printf("# skipped: another owner needs root\n");
		for (int i = 0; i < 3; i++)
			CHECK(1);
	}
	rmdir(dir);
}

/* open_private -- rmp_open_private, and the fd closed again. */
static int open_private(const char *path, char *err, size_t errlen)
{
	int fd = rmp_open_private(path, err, errlen);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static void test_open_private(void)
{
	char path[96], other[112], sym[112], err[512];
	static const mode_t bad[] = { 0666, 0640, 0604, 0610, 0601 };
	struct stat st;
	int fd;

	/* Created: 600, ours, one link. */
	snprintf(path, sizeof(path), "%s/pool", tmpdir);
	fd = rmp_open_private(path, err, sizeof(err));
	CHECK(fd >= 0);
	CHECK_EQ(fstat(fd, &st), 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	CHECK_EQ(write(fd, "lease", 5), 5);
	close(fd);
	/* Found again, as it was. */
	fd = rmp_open_private(path, err, sizeof(err));
	CHECK(fd >= 0);
	CHECK_EQ(fstat(fd, &st), 0);
	CHECK_EQ(st.st_size, 5);
	close(fd);

	/* Mode bits for anybody else: refused. */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(chmod(path, bad[i]), 0);
		refused(open_private(path, err, sizeof(err)), -EACCES, err,
			path, "chmod 600");
	}
	CHECK_EQ(chmod(path, 0600), 0);
	CHECK_EQ(open_private(path, err, sizeof(err)), 0);

	/* Another name for its bytes: refused. */
	snprintf(other, sizeof(other), "%s/copy", tmpdir);
	CHECK_EQ(link(path, other), 0);
	refused(open_private(path, err, sizeof(err)), -EACCES, err, path,
		"2 links");
	unlink(other);
	CHECK_EQ(open_private(path, err, sizeof(err)), 0);

	/* A symbolic link, to our file or to nothing yet: not followed,
	 * and its target not created. */
	snprintf(sym, sizeof(sym), "%s/link", tmpdir);
	CHECK_EQ(symlink(path, sym), 0);
	refused(open_private(sym, err, sizeof(err)), -ELOOP, err, sym,
		"symbolic link");
	unlink(sym);
	CHECK_EQ(symlink(other, sym), 0);
	refused(open_private(sym, err, sizeof(err)), -ELOOP, err, sym,
		"symbolic link");
	CHECK(access(other, F_OK) != 0);
	unlink(sym);

	/* Not a regular file. */
	CHECK_EQ(mkfifo(other, 0600), 0);
	refused(open_private(other, err, sizeof(err)), -EACCES, err, other,
		"not a regular file");
	unlink(other);
	CHECK_EQ(mkdir(other, 0700), 0);
	CHECK_EQ(open_private(other, err, sizeof(err)), -EISDIR);
	rmdir(other);

	/* Someone else's, even mode 600. */
	if (geteuid() == 0) {
		CHECK_EQ(chown(path, 65534, 65534), 0);
		refused(open_private(path, err, sizeof(err)), -EACCES, err,
			path, "owned by uid 65534");
	} else {
		printf("# skipped: another owner needs root\n");
		for (int i = 0; i < 3; i++)
			CHECK(1);
	}
	unlink(path);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/rmp-util-XXXXXX",
		 t && *t && strlen(t) < 40 ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	umask(077);
	test_private_dir();
	test_open_private();
	rmdir(tmpdir);
	return check_done();
}

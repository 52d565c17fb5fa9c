/* SPDX-License-Identifier: MIT */
/* util.c -- time, randomness, small file and string helpers. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

uint64_t rmp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The coarse clock: as old as the last timer tick (1-4 ms), for deadlines
 * and ages counted in milliseconds. It never costs a system call, even
 * where the precise clock has no vDSO (TCG guests read it through one
 * system call, ~1 us, several times per control request).
 */
uint64_t rmp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t rmp_coarse_lag_ms(void)
{
	static uint64_t lag;
	struct timespec res;

	if (!lag) {
		if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
			res.tv_nsec = 10000000; /* HZ=100, the coarsest */
		lag = (uint64_t)res.tv_sec * 1000u +
		      ((uint64_t)res.tv_nsec + 999999u) / 1000000u;
	}
	return lag;
}

/*
 * Random bits are fetched 512 bytes at a time: one getrandom(2) per 64
 * values instead of one per value (a lease takes two, its id and its
 * secret, on the control path). Each value is wiped from the buffer as it
 * is handed out, and the buffer is per thread. A forked child starts with
 * an empty buffer, so parent and child never hand out the same bits.
 */
#define RANDOM_BATCH 512u
static __thread uint8_t random_buf[RANDOM_BATCH];
static __thread size_t random_left; /* unused bytes at the buffer's end */
static pthread_once_t random_once = PTHREAD_ONCE_INIT;

static void random_forget(void)
{
	explicit_bzero(random_buf, sizeof(random_buf));
	random_left = 0;
}

static void random_at_fork(void)
{
	pthread_atfork(NULL, NULL, random_forget);
}

static int random_fill(void)
{
	size_t got = 0;

	while (got < RANDOM_BATCH) {
		ssize_t n = getrandom(random_buf + got, RANDOM_BATCH - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	random_left = RANDOM_BATCH;
	return 0;
}

int rmp_random64(uint64_t *out)
{
	uint8_t *p;
	int err;

	pthread_once(&random_once, random_at_fork);
	if (random_left < sizeof(*out)) {
		err = random_fill();
		if (err)
			return err;
	}
	p = random_buf + RANDOM_BATCH - random_left;
	memcpy(out, p, sizeof(*out));
	explicit_bzero(p, sizeof(*out));
	random_left -= sizeof(*out);
	return 0;
}

int rmp_read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	n = (ssize_t)strcspn(buf, "\n");
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	return (int)n;
}

int rmp_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int rmp_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

int rmp_private_dir(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st)) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "%s is a symbolic link: name the "
			 "directory itself", path);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", path);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is owned by uid %u, not by this "
			 "process's user (uid %u): chown %u %s, or remove it "
			 "and let it be made anew", path, (unsigned)st.st_uid,
			 (unsigned)geteuid(), (unsigned)geteuid(), path);
		return -EACCES;
	}
	/* Sticky or not: whoever may add names may put one there first. */
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s is writable by its group or others "
			 "(mode %04o): chmod 700 %s", path,
			 (unsigned)(st.st_mode & 07777), path);
		return -EACCES;
	}
	return 0;
}

int rmp_open_private(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	/* O_NOFOLLOW: a link put at the path is neither followed nor its
	 * target created. */
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
		  0600);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP)
			snprintf(err, errlen, "%s is a symbolic link: remove "
				 "it", path);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto err;
	}
	ret = -EACCES;
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file: remove it",
			 path);
		goto err;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is owned by uid %u, not by this "
			 "process's user (uid %u): remove it (or chown %u %s "
			 "if it is this service's own)", path,
			 (unsigned)st.st_uid, (unsigned)geteuid(),
			 (unsigned)geteuid(), path);
		goto err;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "%s has mode %04o, open to its group or "
			 "others: remove it (or chmod 600 %s if nobody else "
			 "can have used it)", path,
			 (unsigned)(st.st_mode & 07777), path);
		goto err;
	}
	if (st.st_nlink != 1) {
		snprintf(err, errlen, "%s has %lu links: its bytes have another "
			 "name; remove the others (find -samefile %s)", path,
			 (unsigned long)st.st_nlink, path);
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}

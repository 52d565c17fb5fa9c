/* SPDX-License-Identifier: MIT */
/* util.c -- time, randomness, small file and string helpers. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
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

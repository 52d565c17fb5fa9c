/* SPDX-License-Identifier: MIT */
/* util.h -- small helpers shared by the daemon, the library and the tools. */
#ifndef RMP_UTIL_H
#define RMP_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define RMP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RMP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RMP_MAX(a, b) ((a) > (b) ? (a) : (b))

/* CLOCK_MONOTONIC in milliseconds (coarse: up to a timer tick old, no
 * system call ever) / nanoseconds (precise). Durations shorter than a few
 * ticks are measured in nanoseconds. */
uint64_t rmp_now_ms(void);
uint64_t rmp_now_ns(void);
/* How far rmp_now_ms may lag the precise clock: its resolution, in ms
 * rounded up (read once). */
uint64_t rmp_coarse_lag_ms(void);

/* rmp_random64 -- 64 random bits from getrandom(2), fetched in batches;
 * 0 or -errno. */
int rmp_random64(uint64_t *out);

/*
 * rmp_read_line -- read the first line of a small text file (sysfs) into
 * buf without the newline and trailing whitespace. Returns the length or
 * -errno.
 */
int rmp_read_line(const char *path, char *buf, size_t len);

/* rmp_set_nonblock -- O_NONBLOCK on fd (event channels). 0 or -errno. */
int rmp_set_nonblock(int fd);

/* rmp_strlcpy -- copy with truncation check: 0, or -ENAMETOOLONG. */
int rmp_strlcpy(char *dst, const char *src, size_t size);

/*
 * rmp_private_dir -- path is a directory only this process's user can
 * add or rename names in: not a symbolic link, owned by the effective
 * uid, not writable by group or others. 0, or -errno with what is wrong
 * and how to fix it in err.
 */
int rmp_private_dir(const char *path, char *err, size_t errlen);

/*
 * rmp_open_private -- open path for reading and writing, creating it
 * (mode 600) if it is not there, and make sure nobody else can reach its
 * bytes: not a symbolic link, a regular file owned by the effective uid,
 * no group or other permission bits, no other name (one link). The fd
 * (close-on-exec), or -errno with what is wrong and how to fix it in err.
 */
int rmp_open_private(const char *path, char *err, size_t errlen);

#endif /* RMP_UTIL_H */

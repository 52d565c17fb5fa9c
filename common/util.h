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

#endif /* RMP_UTIL_H */

/* SPDX-License-Identifier: MIT */
/* check.h -- minimal TAP-producing assertions for the host unit tests. */
#ifndef RMP_CHECK_H
#define RMP_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Each CHECK prints one TAP line; a failing CHECK also prints where and
 * why. check_done() prints the plan and returns the exit status, so a
 * test ends with `return check_done();`.
 */
static int check_n, check_failed;

#define CHECK(cond)                                                         \
	check_report(!!(cond), #cond, __FILE__, __LINE__)

#define CHECK_EQ(a, b)                                                      \
	do {                                                                \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b); \
		if (!check_report(check_a_ == check_b_, #a " == " #b,       \
				  __FILE__, __LINE__))                      \
			printf("#   got %lld, want %lld\n", check_a_, check_b_); \
	} while (0)

#define CHECK_STR(a, b)                                                     \
	do {                                                                \
		const char *check_a_ = (a), *check_b_ = (b);                \
		int check_ok_ = check_a_ && check_b_ && !strcmp(check_a_, check_b_); \
		if (!check_report(check_ok_, #a " == " #b, __FILE__, __LINE__)) \
			printf("#   got \"%s\", want \"%s\"\n",             \
			       check_a_ ? check_a_ : "(null)",              \
			       check_b_ ? check_b_ : "(null)");             \
	} while (0)

#define CHECK_HAS(s, part)                                                  \
	do {                                                                \
		const char *check_s_ = (s), *check_p_ = (part);             \
		if (!check_report(check_s_ && strstr(check_s_, check_p_) != NULL, \
				  #s " has " #part, __FILE__, __LINE__))    \
			printf("#   got \"%s\"\n", check_s_ ? check_s_ : "(null)"); \
	} while (0)

static inline int check_report(int ok, const char *what, const char *file,
			       int line)
{
	check_n++;
	if (ok) {
		printf("ok %d - %s\n", check_n, what);
	} else {
		check_failed++;
		printf("not ok %d - %s (%s:%d)\n", check_n, what, file, line);
	}
	return ok;
}

static inline int check_done(void)
{
	printf("1..%d\n", check_n);
	return check_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* RMP_CHECK_H */

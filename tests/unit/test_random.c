/* SPDX-License-Identifier: MIT */
/* test_random.c -- rmp_random64: batched, never repeating, fork-safe. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "util.h"

#define N 1000 /* about 16 refills of the 64-value batch */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Values across several refills: all distinct, bits of both kinds. */
static void test_distinct(void)
{
	static uint64_t v[N];
	unsigned dup = 0, bad = 0, i;
	uint64_t or_all = 0, and_all = ~(uint64_t)0;

	for (i = 0; i < N; i++) {
		bad += rmp_random64(&v[i]) != 0;
		or_all |= v[i];
		and_all &= v[i];
	}
	CHECK_EQ(bad, 0);
	qsort(v, N, sizeof(v[0]), cmp_u64);
	for (i = 1; i < N; i++)
		dup += v[i] == v[i - 1];
	CHECK_EQ(dup, 0);
	CHECK(or_all == ~(uint64_t)0);
	CHECK(and_all == 0);
}

/*
 * A child forked with values still in the parent's batch must not hand
 * out the same ones: it compares its next value with the parent's.
 */
static void test_fork(void)
{
	uint64_t first, parent_next, child_next;
	int pipefd[2], status;
	pid_t pid;

	CHECK_EQ(rmp_random64(&first), 0); /* leaves the batch mostly full */
	CHECK_EQ(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		if (rmp_random64(&child_next) ||
		    write(pipefd[1], &child_next, sizeof(child_next)) !=
			    (ssize_t)sizeof(child_next))
			_exit(1);
		_exit(0);
	}
	CHECK(pid > 0);
	close(pipefd[1]);
	CHECK_EQ(rmp_random64(&parent_next), 0);
	CHECK_EQ(read(pipefd[0], &child_next, sizeof(child_next)),
		 (long long)sizeof(child_next));
	close(pipefd[0]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK(child_next != parent_next);
}

int main(void)
{
	test_distinct();
	test_fork();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * swap_touch.c -- rmp-swap-touch MIB: a working set that must page.
 * Writes MIB MiB of anonymous memory, every 8-byte word a value of its
 * index and a seed of this run (so no earlier run's pages can pass),
 * then reads every word back and checks it. Run in a cgroup whose
 * memory.max is well below MIB, the pages go to swap on the way and
 * come back on the read. Prints the kernel's pages swapped in during
 * the read and their rate; exits 1 at the first word that differs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: a word no neighbour or earlier run shares */
static uint64_t word_of(uint64_t i, uint64_t seed)
{
	uint64_t z = i + seed * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* vmstat -- /proc/vmstat's counter name, or -1. */
static long long vmstat(const char *name)
{
	char key[64];
	long long v;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name)) {
			fclose(f);
			return v;
		}
	fclose(f);
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long mib = argc == 2 ? strtoul(argv[1], NULL, 10) : 0;
	size_t words, len;
	uint64_t *a, seed;
	long long in0, in1, out0, out1;
	double t0, t1, t2;

	if (!mib || mib > 65536) {
		fprintf(stderr, "usage: rmp-swap-touch MIB (1 to 65536)\n");
		return 2;
	}
	len = (size_t)mib << 20;
	words = len / sizeof(*a);
	a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	seed = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	out0 = vmstat("pswpout");
	t0 = now_s();
	for (size_t i = 0; i < words; i++)
		a[i] = word_of(i, seed);
	t1 = now_s();
	in0 = vmstat("pswpin");
	for (size_t i = 0; i < words; i++)
		if (a[i] != word_of(i, seed)) {
			fprintf(stderr, "swap-touch: word %zu (byte %zu of %lu "
				"MiB) is %016" PRIx64 ", not %016" PRIx64 "\n",
				i, i * sizeof(*a), mib, a[i],
				word_of(i, seed));
			return 1;
		}
	t2 = now_s();
	in1 = vmstat("pswpin");
	out1 = vmstat("pswpout");
	printf("swap-touch: %lu MiB written in %.2f s and every word read "
	       "back in %.2f s; swapped out %lld pages, in %lld pages on the "
	       "read: %.0f pages/s\n", mib, t1 - t0, t2 - t1, out1 - out0,
	       in1 - in0, (double)(in1 - in0) / (t2 - t1));
	return 0;
}

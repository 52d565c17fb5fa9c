/* SPDX-License-Identifier: MIT */
/*
 * bench_ec.c -- what the erasure code of an EC lease costs one core, in
 * this process: GB/s of a row's data bytes through client/ec_codec.c
 * (ISA-L), for the codes and chunks a lease uses.
 *
 *   encode   the m parity chunks of a whole row (a full-row write)
 *   update   the parity of one chunk's write (old XOR new: a partial
 *            write), per byte of the chunk written
 *   decode   one and two lost data chunks rebuilt from k others (a
 *            degraded read or a rebuild; tables cached)
 *
 * Beside them, for scale: memcpy of the same bytes, and ISA-L's encode
 * in each of its variants this CPU runs (base C, SSE, AVX, AVX2,
 * AVX-512): ec_encode_data picks one at run time, and the row whose
 * figure it matches says which.
 *
 * Usage: bench_ec [seconds per figure, default 0.3]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/erasure_code.h>

#include "ec_codec.h"
#include "ec_layout.h"

/* exported by libisal, not declared in its header */
void ec_encode_data_avx512(int len, int k, int rows, unsigned char *gftbls,
			   unsigned char **data, unsigned char **coding);

typedef void (*variant_fn)(int, int, int, unsigned char *, unsigned char **,
			   unsigned char **);

static double budget_s = 0.3;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A row: k data and m parity chunks, random bytes. */
struct row {
	unsigned k, m;
	size_t chunk;
	uint8_t *c[RMPC_EC_N_MAX];
};

static void row_make(struct row *r, unsigned k, unsigned m, size_t chunk)
{
	r->k = k;
	r->m = m;
	r->chunk = chunk;
	for (unsigned i = 0; i < k + m; i++) {
		r->c[i] = aligned_alloc(64, chunk);
		for (size_t b = 0; b < chunk; b++)
			r->c[i][b] = (uint8_t)rand();
	}
}

static void row_free(struct row *r)
{
	for (unsigned i = 0; i < r->k + r->m; i++)
		free(r->c[i]);
}

/* What one timed op works on. */
struct ctx {
	const struct rmpc_ec_code *c;
	struct row *r;
	size_t chunk;
	unsigned *have;
	uint8_t **src, **out, *copy;
	unsigned nwant, *want;
	variant_fn fn;
	unsigned char *tbls;
	unsigned turn;
};

typedef void (*op_fn)(struct ctx *x);

/* rate -- GB/s of bytes per op when op runs for budget_s. */
static double rate(size_t bytes, op_fn op, struct ctx *x)
{
	double t0 = now_s(), t;
	uint64_t n = 0;

	do {
		for (int i = 0; i < 64; i++)
			op(x);
		n += 64;
	} while ((t = now_s() - t0) < budget_s);
	return (double)bytes * (double)n / t / 1e9;
}

static void op_encode(struct ctx *x)
{
	rmpc_ec_encode(x->c, x->chunk, x->r->c, x->r->c + x->r->k);
}

static void op_update(struct ctx *x)
{
	rmpc_ec_update(x->c, x->chunk, 0, x->r->c[0], x->r->c + x->r->k);
}

static void op_decode(struct ctx *x)
{
	rmpc_ec_decode(x->c, x->chunk, x->have, x->src, x->nwant, x->want,
		       x->out);
}

static void op_memcpy(struct ctx *x)
{
	memcpy(x->copy, x->r->c[x->turn++ % x->r->k], x->chunk);
}

static void op_variant(struct ctx *x)
{
	x->fn((int)x->chunk, (int)x->r->k, (int)x->r->m, x->tbls, x->r->c,
	      x->r->c + x->r->k);
}

static void op_base(struct ctx *x)
{
	ec_encode_data_base((int)x->chunk, (int)x->r->k, (int)x->r->m, x->tbls,
			    x->r->c, x->r->c + x->r->k);
}

static void codec_rows(unsigned k, unsigned m, size_t chunk)
{
	struct row r;
	size_t row = k * chunk;
	unsigned have1[RMPC_EC_K_MAX], have2[RMPC_EC_K_MAX];
	unsigned want[] = { 0, 1 };
	uint8_t *src1[RMPC_EC_K_MAX], *src2[RMPC_EC_K_MAX], *out[2];
	struct ctx x = { .c = rmpc_ec_code_get(k, m), .r = &r, .chunk = chunk,
			 .want = want, .out = out };
	double enc, upd, dec1, dec2, cpy;

	row_make(&r, k, m, chunk);
	x.copy = aligned_alloc(64, chunk);
	out[0] = aligned_alloc(64, chunk);
	out[1] = aligned_alloc(64, chunk);
	/* data 0 lost: sources 1..k; data 0 and 1 lost: 2..k+1 */
	for (unsigned i = 0; i < k; i++) {
		have1[i] = i + 1;
		src1[i] = r.c[i + 1];
		have2[i] = i + 2;
		src2[i] = r.c[i + 2];
	}
	enc = rate(row, op_encode, &x);
	upd = rate(chunk, op_update, &x);
	x.have = have1, x.src = src1, x.nwant = 1;
	dec1 = rate(row, op_decode, &x);
	x.have = have2, x.src = src2, x.nwant = 2;
	dec2 = rate(row, op_decode, &x);
	cpy = rate(chunk, op_memcpy, &x);
	printf("%2u+%u %8zu  %8.2f %8.2f %8.2f %8.2f %8.2f\n", k, m, chunk,
	       enc, upd, dec1, dec2, cpy);
	free(out[0]);
	free(out[1]);
	free(x.copy);
	row_free(&r);
}

static void variants(void)
{
	/* the flags ISA-L asks of each variant (literals: the builtin
	 * takes no variable) */
	const struct {
		const char *name, *flag;
		bool has;
		variant_fn fn;
	} v[] = {
		{ "sse", "ssse3", __builtin_cpu_supports("ssse3"),
		  ec_encode_data_sse },
		{ "avx", "avx", __builtin_cpu_supports("avx"),
		  ec_encode_data_avx },
		{ "avx2", "avx2", __builtin_cpu_supports("avx2"),
		  ec_encode_data_avx2 },
		{ "avx512", "avx512bw", __builtin_cpu_supports("avx512bw"),
		  ec_encode_data_avx512 },
	};
	unsigned char gen[6 * 4], tbls[32 * 4 * 2];
	struct row r;
	struct ctx x = { .r = &r, .chunk = 4096, .tbls = tbls,
			 .fn = ec_encode_data };

	gf_gen_cauchy1_matrix(gen, 6, 4);
	ec_init_tables(4, 2, gen + 16, tbls);
	row_make(&r, 4, 2, 4096);
	printf("\nISA-L's encode variants, 4+2, 4 KiB chunks (GB/s of data):\n");
	printf("  %-10s %8.2f  (ec_encode_data: the variant it picks)\n",
	       "dispatched", rate(4 * 4096, op_variant, &x));
	printf("  %-10s %8.2f\n", "base (C)", rate(4 * 4096, op_base, &x));
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (!v[i].has) {
			printf("  %-10s %8s  (the CPU has no %s)\n", v[i].name,
			       "-", v[i].flag);
			continue;
		}
		x.fn = v[i].fn;
		printf("  %-10s %8.2f\n", v[i].name,
		       rate(4 * 4096, op_variant, &x));
	}
	row_free(&r);
}

int main(int argc, char **argv)
{
	static const unsigned codes[][2] = { { 4, 2 }, { 8, 2 }, { 6, 3 },
					     { 12, 4 } };

	if (argc > 1)
		budget_s = atof(argv[1]);
	if (budget_s <= 0)
		budget_s = 0.3;
	printf("erasure code on one core, GB/s of a row's data bytes "
	       "(update: of the chunk's)\n");
	printf("code  chunk      encode   update  decode1  decode2   memcpy\n");
	for (unsigned i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		codec_rows(codes[i][0], codes[i][1], 4096);
		codec_rows(codes[i][0], codes[i][1], 65536);
	}
	variants();
	return 0;
}

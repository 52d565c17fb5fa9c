/* SPDX-License-Identifier: MIT */
/*
 * test_ec.c -- unit tests of an erasure-coded lease's arithmetic and
 * code (client/ec_layout.c and client/ec_codec.c, included by the test,
 * over the real ISA-L):
 *   - the layout, byte by byte: every byte of a call over many offsets,
 *     lengths, chunks and k lands in exactly one piece, of the chunk and
 *     at the member offset and buffer offset the layout says; full rows,
 *     the last partial row, calls of no bytes, member sizes, tags;
 *   - the generator against a slow GF(2^8) reference written here (the
 *     Cauchy matrix, not the Vandermonde one);
 *   - encode against the reference, for k 2..12, m 1..4;
 *   - decode from every pattern of up to m lost chunks for k <= 8,
 *     m <= 4, each lost chunk (data or parity) rebuilt byte for byte;
 *   - the parity-delta update against a full re-encode;
 *   - bad indexes refused;
 *   - the sources of a degraded read by their row tags: named cases,
 *     then every torn write of a 4+2 row (each member old or new, each
 *     usable or not): what is decoded is the old row or the new one,
 *     whole, or the read fails as torn or short.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/ec_codec.c"
#include "../../client/ec_layout.c"
#include "../../client/ec_tags.c"
#include "check.h"

#define say(...) (said++ < 5 ? printf(__VA_ARGS__) : 0)
static unsigned said;

/* ---- the layout ---- */

/* call_ok -- the pieces of [off, off + len) of lo cover it exactly as
 * the layout says. */
static bool call_ok(const struct rmpc_ec_layout *lo, uint64_t off,
		    uint64_t len, unsigned char *seen)
{
	uint64_t r0, r1, row = rmpc_ec_row_bytes(lo), sum = 0;
	struct rmpc_ec_piece pc[RMPC_EC_K_MAX];

	memset(seen, 0, len);
	rmpc_ec_rows(lo, off, len, &r0, &r1);
	if (r1 >= lo->rows || r0 > r1)
		return say("# rows %llu..%llu of %llu\n", (unsigned long long)r0,
			   (unsigned long long)r1,
			   (unsigned long long)lo->rows), false;
	for (uint64_t r = r0; r <= r1; r++) {
		struct rmpc_ec_row_part p = rmpc_ec_row_part(lo, off, len, r);
		unsigned n = rmpc_ec_pieces(lo, &p, pc);
		bool full = len && off <= r * row &&
			    off + len >= r * row + rmpc_ec_row_data(lo, r);

		if (p.row != r || p.full != full)
			return say("# row %llu: full %d, want %d\n",
				   (unsigned long long)r, p.full, full), false;
		for (unsigned i = 0; i < n; i++) {
			sum += pc[i].len;
			if (i && pc[i].chunk != pc[i - 1].chunk + 1)
				return say("# pieces out of order\n"), false;
			if (pc[i].chunk >= lo->k ||
			    pc[i].off + pc[i].len > lo->chunk)
				return say("# piece %u past its chunk\n", i),
				       false;
			for (uint64_t b = 0; b < pc[i].len; b++) {
				uint64_t x = off + pc[i].local + b;
				uint64_t xr = x / row, xi = x % row / lo->chunk;

				if (x >= off + len || seen[x - off]++ ||
				    xr != r || xi != pc[i].chunk ||
				    x % lo->chunk != pc[i].off + b)
					return say("# k %u chunk %llu off %llu "
						   "len %llu: byte %llu wrong\n",
						   lo->k,
						   (unsigned long long)lo->chunk,
						   (unsigned long long)off,
						   (unsigned long long)len,
						   (unsigned long long)x), false;
			}
		}
	}
	if (sum != len)
		return say("# pieces hold %llu bytes, want %llu\n",
			   (unsigned long long)sum,
			   (unsigned long long)len), false;
	return true;
}

/* small -- the layout of k + 2 and chunk bytes, which may be below the
 * smallest chunk a lease takes: the arithmetic is the same for any power
 * of two, and small chunks let every byte be checked. */
static struct rmpc_ec_layout small(unsigned k, uint64_t chunk,
				   uint64_t length)
{
	struct rmpc_ec_layout lo;

	rmpc_ec_layout_init(&lo, k, 2, RMPC_EC_CHUNK_MIN, length);
	lo.chunk = chunk;
	lo.rows = length / (k * chunk) + (length % (k * chunk) != 0);
	lo.tag_base = lo.rows * chunk;
	return lo;
}

static void test_layout_exhaustive(void)
{
	static const unsigned ks[] = { 2, 3, 5, 12 };
	static const uint64_t chunks[] = { 512, 1024 };
	unsigned char *seen = malloc(1 << 16);
	unsigned calls = 0, bad = 0;

	for (unsigned a = 0; a < sizeof(ks) / sizeof(ks[0]); a++)
		for (unsigned b = 0; b < 2; b++) {
			uint64_t c = chunks[b], row = ks[a] * c;
			uint64_t lens[] = { 1, c - 1, c, row, row + 1,
					    3 * row - 7 };

			for (unsigned l = 0; l < 6; l++) {
				uint64_t length = lens[l];
				struct rmpc_ec_layout lo = small(ks[a], c,
								 length);

				/* offsets and lengths on a stride that
				 * crosses every boundary kind */
				for (uint64_t off = 0; off <= length;
				     off += c / 4 + 1)
					for (uint64_t n = 0; off + n <= length;
					     n += n < 8 ? 1 : c / 2 + 3) {
						calls++;
						bad += !call_ok(&lo, off, n,
								seen);
					}
			}
		}
	printf("# %u calls checked byte by byte\n", calls);
	CHECK(calls > 10000);
	CHECK_EQ(bad, 0);
	free(seen);
}

static void test_layout_edges(void)
{
	struct rmpc_ec_layout lo;
	struct rmpc_ec_row_part p;
	struct rmpc_ec_piece pc[RMPC_EC_K_MAX];
	uint64_t r0, r1;

	CHECK_EQ(rmpc_ec_layout_init(&lo, 1, 2, 4096, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 13, 2, 4096, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 0, 4096, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 5, 4096, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 2, 3000, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 2, 2048, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 2, 2u << 20, 1), -EINVAL);
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 2, 4096, 0), -EINVAL);

	/* 4+2, 4 KiB chunks, 16 MiB: 1024 rows of 16 KiB; each member
	 * 4 MiB of chunks and 8 KiB of tags */
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 2, 4096, 16 << 20), 0);
	CHECK_EQ(lo.rows, 1024);
	CHECK_EQ(rmpc_ec_tag_off(&lo, 0), 4 << 20);
	CHECK_EQ(rmpc_ec_tag_off(&lo, 1023), (4 << 20) + 8 * 1023);
	CHECK_EQ(rmpc_ec_member_size(&lo), (4 << 20) + 8192);
	/* a read inside one chunk: one piece, of one data member */
	rmpc_ec_rows(&lo, 5 * 16384 + 2 * 4096 + 100, 3996, &r0, &r1);
	CHECK(r0 == 5 && r1 == 5);
	p = rmpc_ec_row_part(&lo, 5 * 16384 + 2 * 4096 + 100, 3996, 5);
	CHECK_EQ(rmpc_ec_pieces(&lo, &p, pc), 1);
	CHECK(pc[0].chunk == 2 && pc[0].off == 100 && pc[0].len == 3996);
	/* one byte more: two chunks */
	p = rmpc_ec_row_part(&lo, 5 * 16384 + 2 * 4096 + 100, 3997, 5);
	CHECK_EQ(rmpc_ec_pieces(&lo, &p, pc), 2);
	CHECK(!p.full);
	/* a whole row is full; one byte less is not */
	p = rmpc_ec_row_part(&lo, 16384, 16384, 1);
	CHECK(p.full);
	CHECK_EQ(rmpc_ec_pieces(&lo, &p, pc), 4);
	p = rmpc_ec_row_part(&lo, 16384, 16383, 1);
	CHECK(!p.full);

	/* the last row ends early: 2.5 rows; a write of its 8 KiB is full */
	CHECK_EQ(rmpc_ec_layout_init(&lo, 4, 2, 4096, 40960), 0);
	CHECK_EQ(lo.rows, 3);
	CHECK_EQ(rmpc_ec_row_data(&lo, 2), 8192);
	p = rmpc_ec_row_part(&lo, 32768, 8192, 2);
	CHECK(p.full);
	CHECK_EQ(rmpc_ec_member_size(&lo), 3 * 4096 + 4096);
	/* no bytes: one row, chunk 0, also at the very end */
	rmpc_ec_rows(&lo, 40960, 0, &r0, &r1);
	CHECK(r0 == 2 && r1 == 2);
	p = rmpc_ec_row_part(&lo, 40960, 0, 2);
	CHECK_EQ(rmpc_ec_pieces(&lo, &p, pc), 1);
	CHECK(pc[0].chunk == 0 && pc[0].len == 0 && !p.full);
}

/* ---- the code, against a slow reference ---- */

/* GF(2^8) over x^8 + x^4 + x^3 + x^2 + 1 (0x11d), as ISA-L. */
static uint8_t ref_mul(uint8_t a, uint8_t b)
{
	uint8_t p = 0;

	while (b) {
		if (b & 1)
			p ^= a;
		a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
		b >>= 1;
	}
	return p;
}

static uint8_t ref_inv(uint8_t a) /* a^254 */
{
	uint8_t r = 1;

	for (int i = 0; i < 254; i++)
		r = ref_mul(r, a);
	return r;
}

/* ref_coef -- the systematic Cauchy generator: identity, then
 * 1 / (row XOR col) for the parity rows. */
static uint8_t ref_coef(unsigned k, unsigned row, unsigned col)
{
	if (row < k)
		return row == col;
	return ref_inv((uint8_t)(row ^ col));
}

static void ref_encode(unsigned k, unsigned m, size_t len, uint8_t **data,
		       uint8_t **parity)
{
	for (unsigned j = 0; j < m; j++)
		for (size_t b = 0; b < len; b++) {
			uint8_t s = 0;

			for (unsigned i = 0; i < k; i++)
				s ^= ref_mul(ref_coef(k, k + j, i), data[i][b]);
			parity[j][b] = s;
		}
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* A row of k + m chunks of len bytes, encoded. */
struct row {
	unsigned k, m;
	uint8_t *c[RMPC_EC_N_MAX];
};

static void row_make(struct row *r, const struct rmpc_ec_code *code,
		     unsigned k, unsigned m, size_t len, unsigned seed)
{
	r->k = k;
	r->m = m;
	for (unsigned i = 0; i < k + m; i++)
		r->c[i] = malloc(len);
	for (unsigned i = 0; i < k; i++)
		fill(r->c[i], len, seed + i);
	rmpc_ec_encode(code, len, r->c, r->c + k);
}

static void row_free(struct row *r)
{
	for (unsigned i = 0; i < r->k + r->m; i++)
		free(r->c[i]);
}

static void test_generator_and_encode(void)
{
	unsigned bad_coef = 0, bad_enc = 0, codes_n = 0;
	size_t len = 333; /* odd: ISA-L's short tail paths too */

	for (unsigned k = RMPC_EC_K_MIN; k <= RMPC_EC_K_MAX; k++)
		for (unsigned m = RMPC_EC_M_MIN; m <= RMPC_EC_M_MAX; m++) {
			const struct rmpc_ec_code *c = rmpc_ec_code_get(k, m);
			uint8_t *want[RMPC_EC_M_MAX];
			struct row r;

			if (!c)
				continue;
			codes_n++;
			for (unsigned row = 0; row < k + m; row++)
				for (unsigned col = 0; col < k; col++)
					bad_coef += rmpc_ec_coef(c, row, col) !=
						    ref_coef(k, row, col);
			row_make(&r, c, k, m, len, k * 31 + m);
			for (unsigned j = 0; j < m; j++)
				want[j] = malloc(len);
			ref_encode(k, m, len, r.c, want);
			for (unsigned j = 0; j < m; j++) {
				bad_enc += memcmp(want[j], r.c[k + j], len) != 0;
				free(want[j]);
			}
			row_free(&r);
		}
	CHECK_EQ(codes_n, 11 * 4);
	CHECK_EQ(bad_coef, 0);
	CHECK_EQ(bad_enc, 0);
	CHECK(rmpc_ec_code_get(4, 2) == rmpc_ec_code_get(4, 2));
	errno = 0;
	CHECK(rmpc_ec_code_get(1, 2) == NULL && errno == EINVAL);
	CHECK(rmpc_ec_code_get(4, 5) == NULL && errno == EINVAL);
}

/* decode_pattern -- with the chunks of lost_mask lost, the row decoded
 * from the first k others: every lost chunk rebuilt. */
static bool decode_pattern(const struct rmpc_ec_code *c, struct row *r,
			   size_t len, uint32_t lost_mask)
{
	unsigned k = r->k, n = r->k + r->m, have[RMPC_EC_K_MAX];
	unsigned want[RMPC_EC_N_MAX], nh = 0, nw = 0;
	uint8_t *src[RMPC_EC_K_MAX], *out[RMPC_EC_N_MAX];
	bool ok = true;

	for (unsigned i = 0; i < n; i++) {
		if (lost_mask & (1u << i))
			want[nw++] = i;
		else if (nh < k)
			have[nh++] = i;
	}
	/* the sources in a scrambled order: decode sorts them */
	for (unsigned i = 0; i < k; i++) {
		unsigned j = (i * 7 + 3) % k;
		unsigned t = have[i];

		have[i] = have[j];
		have[j] = t;
	}
	for (unsigned i = 0; i < k; i++)
		src[i] = r->c[have[i]];
	for (unsigned i = 0; i < nw; i++)
		out[i] = malloc(len);
	if (rmpc_ec_decode(c, len, have, src, nw, want, out))
		ok = false;
	for (unsigned i = 0; i < nw; i++) {
		if (ok && memcmp(out[i], r->c[want[i]], len)) {
			say("# k %u m %u lost %#x: chunk %u wrong\n", k, r->m,
			    lost_mask, want[i]);
			ok = false;
		}
		free(out[i]);
	}
	return ok;
}

static void test_decode_every_pattern(void)
{
	unsigned patterns = 0, bad = 0;

	for (unsigned k = 2; k <= 8; k++)
		for (unsigned m = 1; m <= 4; m++) {
			const struct rmpc_ec_code *c = rmpc_ec_code_get(k, m);
			size_t len = (k + m) % 2 ? 4096 : 100;
			struct row r;

			row_make(&r, c, k, m, len, k * 7 + m);
			for (uint32_t lost = 0; lost < 1u << (k + m); lost++) {
				if ((unsigned)__builtin_popcount(lost) > m)
					continue;
				patterns++;
				bad += !decode_pattern(c, &r, len, lost);
			}
			row_free(&r);
		}
	printf("# %u erasure patterns decoded\n", patterns);
	CHECK(patterns > 3000);
	CHECK_EQ(bad, 0);
}

static void test_update_matches_reencode(void)
{
	const struct rmpc_ec_code *c = rmpc_ec_code_get(6, 3);
	size_t len = 4096;
	unsigned bad = 0;
	struct row r, again;
	uint8_t *delta = malloc(len), *fresh = malloc(len);

	row_make(&r, c, 6, 3, len, 99);
	/* write bytes [a, b) of chunk i: the parity by the delta of those
	 * bytes only, against the whole row encoded anew */
	for (unsigned i = 0; i < 6; i++) {
		size_t a = 17 * i + 1, b = len - 100 * i - 5;
		uint8_t *par[RMPC_EC_M_MAX];

		fill(fresh, len, 1000 + i);
		for (size_t x = a; x < b; x++)
			delta[x - a] = r.c[i][x] ^ fresh[x];
		for (unsigned j = 0; j < 3; j++)
			par[j] = r.c[6 + j] + a;
		rmpc_ec_update(c, b - a, i, delta, par);
		memcpy(r.c[i] + a, fresh + a, b - a);
		row_make(&again, c, 6, 3, len, 0);
		for (unsigned d = 0; d < 6; d++)
			memcpy(again.c[d], r.c[d], len);
		rmpc_ec_encode(c, len, again.c, again.c + 6);
		for (unsigned j = 0; j < 3; j++)
			bad += memcmp(again.c[6 + j], r.c[6 + j], len) != 0;
		row_free(&again);
	}
	CHECK_EQ(bad, 0);
	free(delta);
	free(fresh);
	row_free(&r);
}

static void test_decode_refuses(void)
{
	const struct rmpc_ec_code *c = rmpc_ec_code_get(2, 1);
	uint8_t a[16] = { 0 }, b[16] = { 0 }, o[16];
	uint8_t *src[] = { a, b }, *out[] = { o };
	unsigned twice[] = { 0, 0 }, past[] = { 0, 3 }, ok[] = { 0, 2 };
	unsigned want_past[] = { 3 }, want[] = { 1 }, n0;

	CHECK_EQ(rmpc_ec_decode(c, 16, twice, src, 1, want, out), -EINVAL);
	CHECK_EQ(rmpc_ec_decode(c, 16, past, src, 1, want, out), -EINVAL);
	CHECK_EQ(rmpc_ec_decode(c, 16, ok, src, 1, want_past, out), -EINVAL);
	CHECK_EQ(rmpc_ec_decode(c, 16, ok, src, 1, want, out), 0);
	/* a pattern is cached once, however often it is used */
	n0 = atomic_load(&((struct rmpc_ec_code *)c)->npat);
	CHECK_EQ(rmpc_ec_decode(c, 16, ok, src, 1, want, out), 0);
	CHECK(n0 >= 1);
	CHECK_EQ(atomic_load(&((struct rmpc_ec_code *)c)->npat), n0);
}

static void test_pick_cases(void)
{
	bool all[6] = { 1, 1, 1, 1, 1, 1 }, no1[6] = { 1, 0, 1, 1, 1, 1 };
	bool three[6] = { 1, 1, 0, 0, 0, 1 };
	uint64_t same[6] = { 7, 7, 7, 7, 7, 7 };
	uint64_t half[6] = { 9, 9, 9, 7, 7, 7 }; /* torn: 3 and 3 */
	uint64_t most[6] = { 9, 9, 9, 9, 9, 7 }; /* 5 reached */
	unsigned h[6];

	CHECK_EQ(rmpc_ec_pick(4, 6, all, same, h), 4);
	CHECK(h[0] == 0 && h[1] == 1 && h[2] == 2 && h[3] == 3);
	CHECK_EQ(rmpc_ec_pick(4, 6, no1, same, h), 4);
	CHECK(h[0] == 0 && h[1] == 2 && h[2] == 3 && h[3] == 4);
	CHECK_EQ(rmpc_ec_pick(4, 6, all, half, h), -EBADMSG);
	CHECK_EQ(rmpc_ec_pick(4, 6, all, most, h), 4);
	CHECK(h[0] == 0 && h[3] == 3);
	CHECK_EQ(rmpc_ec_pick(4, 6, no1, most, h), 4);
	CHECK(h[0] == 0 && h[1] == 2 && h[2] == 3 && h[3] == 4);
	CHECK_EQ(rmpc_ec_pick(4, 6, three, same, h), -EIO);
	{
		/* 2+2: both writes decodable; the one of more data
		 * members, then of the lowest member */
		uint64_t a[4] = { 1, 2, 1, 2 }, b[4] = { 2, 2, 1, 1 };
		bool u[4] = { 1, 1, 1, 1 };

		CHECK_EQ(rmpc_ec_pick(2, 4, u, a, h), 2);
		CHECK(h[0] == 0 && h[1] == 2);
		CHECK_EQ(rmpc_ec_pick(2, 4, u, b, h), 2);
		CHECK(h[0] == 0 && h[1] == 1);
	}
}

/* A 4+2 row written twice, the second write torn in every way: each
 * member holds the old write's chunk and tag or the new one's, and is
 * usable or not. */
static void test_pick_torn_rows(void)
{
	const struct rmpc_ec_code *c = rmpc_ec_code_get(4, 2);
	size_t len = 512;
	struct row old_row, new_row;
	unsigned whole = 0, torn = 0, short_ = 0, wrong = 0;

	row_make(&old_row, c, 4, 2, len, 5);
	row_make(&new_row, c, 4, 2, len, 6);
	for (unsigned reached = 0; reached < 64; reached++)
		for (unsigned up = 0; up < 64; up++) {
			bool usable[6];
			uint64_t tag[6];
			uint8_t *src[4], *out[4], buf[4][512];
			unsigned have[4], want[4] = { 0, 1, 2, 3 };
			int n;

			for (unsigned i = 0; i < 6; i++) {
				usable[i] = up >> i & 1;
				tag[i] = reached >> i & 1 ? 0xbbb : 0xaaa;
			}
			n = rmpc_ec_pick(4, 6, usable, tag, have);
			if (n == -EIO) {
				short_++;
				wrong += (unsigned)__builtin_popcount(up) >= 4;
				continue;
			}
			if (n == -EBADMSG) {
				unsigned a = 0, b = 0;

				for (unsigned i = 0; i < 6; i++) {
					a += usable[i] && tag[i] == 0xaaa;
					b += usable[i] && tag[i] == 0xbbb;
				}
				torn++;
				wrong += a >= 4 || b >= 4;
				continue;
			}
			for (unsigned i = 0; i < 4; i++) {
				const struct row *r = tag[have[i]] == 0xbbb ?
						      &new_row : &old_row;

				src[i] = r->c[have[i]];
				out[i] = buf[i];
				wrong += !usable[have[i]] ||
					 tag[have[i]] != tag[have[0]] ||
					 (i && have[i] <= have[i - 1]);
			}
			if (rmpc_ec_decode(c, len, have, src, 4, want, out)) {
				wrong++;
				continue;
			}
			/* the old row or the new one, whole */
			{
				const struct row *r = tag[have[0]] == 0xbbb ?
						      &new_row : &old_row;

				for (unsigned i = 0; i < 4; i++)
					wrong += memcmp(buf[i], r->c[i], len) != 0;
			}
			whole++;
		}
	printf("# 4096 torn rows: %u decoded whole, %u torn, %u short\n",
	       whole, torn, short_);
	CHECK(whole > 0 && torn > 0 && short_ > 0);
	CHECK_EQ(whole + torn + short_, 4096);
	CHECK_EQ(wrong, 0);
	row_free(&old_row);
	row_free(&new_row);
}

int main(void)
{
	test_layout_exhaustive();
	test_layout_edges();
	test_generator_and_encode();
	test_decode_every_pattern();
	test_update_matches_reencode();
	test_decode_refuses();
	test_pick_cases();
	test_pick_torn_rows();
	return check_done();
}

/* SPDX-License-Identifier: MIT */
/*
 * ec_codec.h -- the erasure code of an EC lease: a systematic
 * Reed-Solomon code over GF(2^8) with a Cauchy generator, computed by
 * Intel ISA-L (its tables, its SIMD). No arithmetic of our own.
 *
 * The generator (gf_gen_cauchy1_matrix) has k + m rows: the first k the
 * identity (data chunks are stored as they are), the last m a Cauchy
 * matrix, every square submatrix of which is invertible: any k of the
 * k + m chunks give the row back, for every k and m. (ISA-L's
 * Vandermonde-like gf_gen_rs_matrix is not MDS for every k, m.)
 *
 * A code is made once per (k, m) and kept for the life of the process;
 * decode tables are kept per pattern (which chunks are read, which are
 * wanted), up to RMPC_EC_PATTERNS_CACHED per code, and computed on the
 * caller's stack past that. Safe from any thread.
 */
#ifndef RMPC_EC_CODEC_H
#define RMPC_EC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define RMPC_EC_PATTERNS_CACHED 64u

struct rmpc_ec_code;

/* rmpc_ec_code_get -- the code of k data and m parity chunks (limits in
 * ec_layout.h): NULL with errno EINVAL out of them, ENOMEM. */
const struct rmpc_ec_code *rmpc_ec_code_get(unsigned k, unsigned m);

/* rmpc_ec_encode -- the m parity chunks of data[0 .. k), len bytes each,
 * into parity[0 .. m). */
void rmpc_ec_encode(const struct rmpc_ec_code *c, size_t len,
		    uint8_t *const *data, uint8_t *const *parity);

/*
 * rmpc_ec_update -- data chunk i changed by delta (old XOR new, len
 * bytes): parity[0 .. m) (the same len bytes of each parity chunk, at the
 * same offset) changed to match. A write of part of one chunk updates
 * parity by what it changed, without the row's other chunks.
 */
void rmpc_ec_update(const struct rmpc_ec_code *c, size_t len, unsigned i,
		    const uint8_t *delta, uint8_t *const *parity);

/*
 * rmpc_ec_decode -- from k chunks of a row, src[0 .. k) (len bytes each)
 * whose indexes are have[0 .. k) (0 .. k + m: data then parity, distinct,
 * in any order), the chunks of indexes want[0 .. nwant) into
 * out[0 .. nwant) (data or parity: a rebuild wants either). 0, or
 * -EINVAL for indexes out of range or repeated.
 */
int rmpc_ec_decode(const struct rmpc_ec_code *c, size_t len,
		   const unsigned *have, uint8_t *const *src,
		   unsigned nwant, const unsigned *want, uint8_t *const *out);

/* rmpc_ec_coef -- the generator's entry for chunk `row` (0 .. k + m)
 * and data chunk `col` (0 .. k): for a test's reference. */
uint8_t rmpc_ec_coef(const struct rmpc_ec_code *c, unsigned row,
		     unsigned col);

#endif /* RMPC_EC_CODEC_H */

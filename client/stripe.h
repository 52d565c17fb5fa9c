/* SPDX-License-Identifier: MIT */
/*
 * stripe.h -- the arithmetic of a striped lease (pure, no state): which
 * bytes of a call fall in which stripe, and where a stripe's bytes lie
 * in the caller's buffer.
 *
 * Layout: the lease's bytes are cut in units of unit bytes (a power of
 * two); unit u is in stripe u % stripes, at offset (u / stripes) * unit
 * of that stripe's members. So the bytes of one stripe that a call
 * touches are contiguous in the stripe's members, and in the caller's
 * buffer a unit of them every stripes units: between two of its units
 * lie (stripes - 1) * unit bytes of the other stripes (the gap).
 */
#ifndef RMPC_STRIPE_H
#define RMPC_STRIPE_H

#include <stdint.h>

/* One stripe's part of a call [off, off+len) on a striped lease. */
struct rmpc_stripe_piece {
	unsigned stripe;
	uint64_t off;   /* where it starts in the stripe's members */
	uint64_t len;   /* its bytes (in the members: contiguous) */
	uint64_t local; /* where its first byte is in the call's buffer */
};

/*
 * rmpc_stripe_split -- the parts of [off, off+len) of a lease of stripes
 * stripes (>= 1) and unit bytes (a power of two), at most one per
 * stripe, into p[0..stripes), in the order of their first bytes; their
 * count. len 0 gives one part of 0 bytes: the stripe of off (a call of
 * no bytes still checks that its lease can be used). With stripes 1 the
 * part is the call itself. The caller checks off + len first (no
 * overflow).
 */
unsigned rmpc_stripe_split(unsigned stripes, uint64_t unit, uint64_t off,
			   uint64_t len, struct rmpc_stripe_piece *p);

/*
 * rmpc_stripe_size -- the bytes each member of stripe s must have for a
 * lease of length bytes (the end of its part of [0, length)).
 */
uint64_t rmpc_stripe_size(unsigned stripes, uint64_t unit, uint64_t length,
			  unsigned s);

/*
 * Where the bytes of a part lie in the caller's buffer. A run of a
 * member's bytes starting at offset off, whose units have gap bytes
 * between them locally (0: contiguous): rmpc_stripe_at -- how far from
 * the run's first byte the byte off + r is locally; rmpc_stripe_contig
 * -- how many bytes from off + r on (at most left) are contiguous
 * locally too (up to the end of its unit).
 */
uint64_t rmpc_stripe_at(uint64_t off, uint64_t unit, uint64_t gap,
			uint64_t r);
uint64_t rmpc_stripe_contig(uint64_t off, uint64_t unit, uint64_t gap,
			    uint64_t r, uint64_t left);

#endif /* RMPC_STRIPE_H */

/* SPDX-License-Identifier: MIT */
/* stripe.c -- the arithmetic of a striped lease (see stripe.h). */
#include "stripe.h"

unsigned rmpc_stripe_split(unsigned stripes, uint64_t unit, uint64_t off,
			   uint64_t len, struct rmpc_stripe_piece *p)
{
	uint64_t u0 = off / unit, u1, k = stripes;
	unsigned n = 0;

	if (!len) {
		p[0] = (struct rmpc_stripe_piece){
			.stripe = (unsigned)(u0 % k),
			.off = u0 / k * unit + off % unit,
		};
		return 1;
	}
	u1 = (off + len - 1) / unit;
	/* Stripe of u0 first, then the next ones: in the order of their
	 * first units u0, u0 + 1, ... (at most stripes of them). */
	for (uint64_t a = u0; a <= u1 && a < u0 + k; a++) {
		/* b: the last unit of a's stripe within [u0, u1] */
		uint64_t b = a + (u1 - a) / k * k;
		uint64_t start = a == u0 ? off % unit : 0;
		uint64_t end = b == u1 ? (off + len - 1) % unit + 1 : unit;
		struct rmpc_stripe_piece *q = &p[n++];

		q->stripe = (unsigned)(a % k);
		q->off = a / k * unit + start;
		q->len = (b / k - a / k) * unit + end - start;
		q->local = a * unit + start - off;
	}
	return n;
}

uint64_t rmpc_stripe_size(unsigned stripes, uint64_t unit, uint64_t length,
			  unsigned s)
{
	/* units of the lease, and of them those of stripe s: s, s + k, ... */
	uint64_t units = length / unit + (length % unit != 0), k = stripes;
	uint64_t last, mine;

	if (!length || s >= units)
		return 0;
	mine = (units - 1 - s) / k + 1;       /* its units */
	last = s + (mine - 1) * k;            /* its last unit */
	if (last == units - 1 && length % unit)
		return (mine - 1) * unit + length % unit;
	return mine * unit;
}

uint64_t rmpc_stripe_at(uint64_t off, uint64_t unit, uint64_t gap,
			uint64_t r)
{
	if (!gap)
		return r;
	return r + ((off + r) / unit - off / unit) * gap;
}

uint64_t rmpc_stripe_contig(uint64_t off, uint64_t unit, uint64_t gap,
			    uint64_t r, uint64_t left)
{
	uint64_t to_end;

	if (!gap)
		return left;
	to_end = unit - (off + r) % unit;
	return to_end < left ? to_end : left;
}

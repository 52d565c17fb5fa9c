/* SPDX-License-Identifier: MIT */
/* ec_layout.c -- the arithmetic of an erasure-coded lease (ec_layout.h). */
#include <errno.h>

#include "ec_layout.h"

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int rmpc_ec_layout_init(struct rmpc_ec_layout *lo, unsigned k, unsigned m,
			uint64_t chunk, uint64_t length)
{
	if (k < RMPC_EC_K_MIN || k > RMPC_EC_K_MAX || m < RMPC_EC_M_MIN ||
	    m > RMPC_EC_M_MAX || !pow2(chunk) || chunk < RMPC_EC_CHUNK_MIN ||
	    chunk > RMPC_EC_CHUNK_MAX || !length)
		return -EINVAL;
	lo->k = k;
	lo->m = m;
	lo->chunk = chunk;
	lo->length = length;
	lo->rows = length / (k * chunk) + (length % (k * chunk) != 0);
	lo->tag_base = lo->rows * chunk;
	return 0;
}

uint64_t rmpc_ec_member_size(const struct rmpc_ec_layout *lo)
{
	uint64_t end = lo->tag_base + lo->rows * RMPC_EC_TAG_BYTES;

	return (end + lo->chunk - 1) / lo->chunk * lo->chunk;
}

void rmpc_ec_rows(const struct rmpc_ec_layout *lo, uint64_t off,
		  uint64_t len, uint64_t *first, uint64_t *last)
{
	uint64_t row = rmpc_ec_row_bytes(lo);

	if (!len) { /* the row of off, or the last row for off at the end */
		*first = *last = off / row < lo->rows ? off / row : lo->rows - 1;
		return;
	}
	*first = off / row;
	*last = (off + len - 1) / row;
}

uint64_t rmpc_ec_row_data(const struct rmpc_ec_layout *lo, uint64_t r)
{
	uint64_t row = rmpc_ec_row_bytes(lo), at = r * row;

	return lo->length - at < row ? lo->length - at : row;
}

struct rmpc_ec_row_part rmpc_ec_row_part(const struct rmpc_ec_layout *lo,
					 uint64_t off, uint64_t len,
					 uint64_t r)
{
	uint64_t row = rmpc_ec_row_bytes(lo), at = r * row, s, e;
	struct rmpc_ec_row_part p = { .row = r };

	if (!len) /* no bytes: the row's start, for a member to check */
		return p;
	s = off > at ? off - at : 0;
	e = off + len - at < row ? off + len - at : row;
	p.start = s;
	p.end = e;
	p.local = at + s - off;
	p.full = s == 0 && e == rmpc_ec_row_data(lo, r);
	return p;
}

unsigned rmpc_ec_pieces(const struct rmpc_ec_layout *lo,
			const struct rmpc_ec_row_part *p,
			struct rmpc_ec_piece *out)
{
	uint64_t c = lo->chunk;
	unsigned n = 0;

	if (p->end == p->start) { /* no bytes: chunk 0 */
		out[0] = (struct rmpc_ec_piece){ .chunk = 0 };
		return 1;
	}
	for (uint64_t x = p->start; x < p->end; n++) {
		uint64_t stop = (x / c + 1) * c;

		if (stop > p->end)
			stop = p->end;
		out[n] = (struct rmpc_ec_piece){
			.chunk = (unsigned)(x / c), .off = x % c,
			.len = stop - x, .local = p->local + x - p->start,
		};
		x = stop;
	}
	return n;
}

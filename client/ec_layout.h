/* SPDX-License-Identifier: MIT */
/*
 * ec_layout.h -- the arithmetic of an erasure-coded lease (pure, no
 * state): which rows and chunks a call touches, where they lie in the
 * members and in the caller's buffer.
 *
 * Layout: the lease's bytes are cut in chunks of `chunk` bytes (a power
 * of two); a row is k data chunks: row r holds the lease's bytes
 * [r * k * chunk, (r + 1) * k * chunk), its chunk i on data member i at
 * r * chunk. Parity member k + j holds parity chunk j of row r at the
 * same offset. So a read inside one chunk is one read of one member, and
 * a row's chunks are at the same offset of every member.
 *
 * The bytes of the last row past the lease's end are zeros: never
 * written, encoded as zeros. After its `rows` chunks every member has a
 * row tag per row (8 bytes, at tag_base + 8 * r): the tag of the last
 * write of that row that reached the member, unique to that write. The
 * tags let a degraded read tell a row whose write was torn (its writer
 * died between members) from one it may decode (ec_tags.h).
 */
#ifndef RMPC_EC_LAYOUT_H
#define RMPC_EC_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "lease_record.h"

/* The code's limits, those of the lease's record (lease_record.h):
 * k >= 2 (k 1 is a mirror); k <= 12: a row's read waits on k + 1
 * members, and a wider fan-out costs more in the tail than its memory
 * saves; m <= 4: four lost nodes of one lease is past what a rack
 * loses, and each parity costs every write one more member. */
#define RMPC_EC_K_MIN ((unsigned)RMP_LREC_EC_K_MIN)
#define RMPC_EC_K_MAX ((unsigned)RMP_LREC_EC_K_MAX)
#define RMPC_EC_M_MIN ((unsigned)RMP_LREC_EC_M_MIN)
#define RMPC_EC_M_MAX ((unsigned)RMP_LREC_EC_M_MAX)
#define RMPC_EC_N_MAX (RMPC_EC_K_MAX + RMPC_EC_M_MAX)
/* A chunk is 4 KiB by default: a page, the unit a block device and swap
 * ask for, so their reads go to one member; 4 KiB .. 1 MiB (the record's
 * stripe unit). */
#define RMPC_EC_CHUNK_DEFAULT 4096u
#define RMPC_EC_CHUNK_MIN RMP_LREC_UNIT_MIN
#define RMPC_EC_CHUNK_MAX RMP_LREC_EC_CHUNK_MAX
/* Bytes of one row tag. */
#define RMPC_EC_TAG_BYTES 8u

struct rmpc_ec_layout {
	unsigned k, m;     /* data and parity members */
	uint64_t chunk;    /* bytes, a power of two */
	uint64_t length;   /* the lease's bytes */
	uint64_t rows;     /* rows of the lease (the last may be partial) */
	uint64_t tag_base; /* where the row tags start in every member */
};

/* rmpc_ec_layout_init -- the layout of a lease of length bytes (> 0):
 * 0, or -EINVAL when k, m or chunk is out of the limits above. */
int rmpc_ec_layout_init(struct rmpc_ec_layout *lo, unsigned k, unsigned m,
			uint64_t chunk, uint64_t length);

/* rmpc_ec_member_size -- the bytes each member needs: its chunks and its
 * row tags, rounded up to a chunk. */
uint64_t rmpc_ec_member_size(const struct rmpc_ec_layout *lo);

/* rmpc_ec_row_bytes -- a row's data bytes (k chunks). */
static inline uint64_t rmpc_ec_row_bytes(const struct rmpc_ec_layout *lo)
{
	return (uint64_t)lo->k * lo->chunk;
}

/* rmpc_ec_tag_off -- where row r's tag is in every member. */
static inline uint64_t rmpc_ec_tag_off(const struct rmpc_ec_layout *lo,
				       uint64_t r)
{
	return lo->tag_base + r * RMPC_EC_TAG_BYTES;
}

/*
 * One row's part of a call [off, off + len): the row's bytes [start,
 * end) (offsets in the row, 0 .. k * chunk), of which the first is at
 * `local` in the caller's buffer. `full`: the part is the whole row (up
 * to the lease's end for the last row), so a write encodes it alone,
 * without reading anything.
 */
struct rmpc_ec_row_part {
	uint64_t row;
	uint64_t start, end;
	uint64_t local;
	bool full;
};

/* rmpc_ec_rows -- the rows [*first, *last] that [off, off + len) touches;
 * len 0: one row, of off (the last for off at the end): a call of no
 * bytes still checks its lease. The caller checks off + len <= length
 * first. */
void rmpc_ec_rows(const struct rmpc_ec_layout *lo, uint64_t off,
		  uint64_t len, uint64_t *first, uint64_t *last);

/* rmpc_ec_row_part -- row r's part of [off, off + len) (r one of the
 * rows rmpc_ec_rows gives); len 0: [0, 0) of it. */
struct rmpc_ec_row_part rmpc_ec_row_part(const struct rmpc_ec_layout *lo,
					 uint64_t off, uint64_t len,
					 uint64_t r);

/*
 * One data chunk's piece of a row part: bytes [off, off + len) of chunk
 * i of the row (in the member: at row * chunk + off), the first at
 * `local` in the caller's buffer.
 */
struct rmpc_ec_piece {
	unsigned chunk; /* the data member, 0 .. k */
	uint64_t off, len;
	uint64_t local;
};

/* rmpc_ec_pieces -- the data chunks part p touches, in order, into
 * out[0 .. k); their count (>= 1; a part of no bytes: chunk 0's piece
 * of no bytes). */
unsigned rmpc_ec_pieces(const struct rmpc_ec_layout *lo,
			const struct rmpc_ec_row_part *p,
			struct rmpc_ec_piece *out);

/* rmpc_ec_row_data -- the lease's data bytes in row r: k * chunk but
 * for the last row, which may end early. */
uint64_t rmpc_ec_row_data(const struct rmpc_ec_layout *lo, uint64_t r);

#endif /* RMPC_EC_LAYOUT_H */

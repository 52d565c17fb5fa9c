/* SPDX-License-Identifier: MIT */
/*
 * ec_lease.h -- what an erasure-coded lease's handle keeps beside its
 * members (group.h's rmpc_group.ec): its layout and code, the tags it
 * writes, and scratch for a call's parity and old bytes (made with the
 * handle: a call allocates nothing).
 */
#ifndef RMPC_EC_LEASE_H
#define RMPC_EC_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "ec_codec.h"
#include "ec_layout.h"

/* The rows one step of a call moves (at most 1 MiB of a member's
 * chunks at a time, and at least one row). */
#define RMPC_EC_STEP_BYTES (1u << 20)

struct rmpc_ec {
	struct rmpc_ec_layout lo;
	const struct rmpc_ec_code *code;
	uint64_t step_rows;     /* rows per step */
	uint64_t writer;        /* random: the high half of its tags */
	uint32_t seq;           /* the low half of the next one */
	uint8_t *parity;        /* m * step_rows chunks, k + m at least */
	uint8_t *old;           /* (k + m) * chunk: a row's chunks */
	uint64_t *tags;         /* step_rows: a step's tag, or tags read */
	uint64_t *member_tags;  /* (k + m): one row's tags, by member; then
				 * (k + m) more: the same, read again after
				 * the chunks (a degraded read's seqlock) */
	/* The data of the row this handle last wrote anew (io_ec.c's
	 * rewrite), kept until that write is done on every member: when it
	 * failed half way (a repair's fence, a member lost), the members
	 * may hold two writes, and the one away may be decodable from
	 * neither; the write made again takes the row from here. */
	uint8_t *redo;          /* k * chunk */
	uint64_t redo_row, redo_tag; /* the row, and its write's tag */
	bool redo_valid;
	uint64_t *late_tags;    /* 2 * (k + 1) * step_rows (io_ec.c) */
	uint64_t decoded;       /* chunks reads decoded: rmp_lease_info */
	uint64_t late;          /* of them, around a straggler (late
				 * binding): reads done without its chunks */
};

/* rmpc_ec_new -- the state of a lease of length bytes coded k + m in
 * chunks of chunk bytes: 0, -EINVAL (ec_layout.h's limits), -ENOMEM. */
int rmpc_ec_new(unsigned k, unsigned m, uint64_t chunk, uint64_t length,
		struct rmpc_ec **out);
void rmpc_ec_free(struct rmpc_ec *ec);

/* rmpc_ec_next_tag -- the tag of this handle's next write of a row:
 * never 0 (a member nobody wrote holds 0: zeroed by its server, and
 * zeros are the code of zeros), never one it gave before, never with
 * RMPC_EC_TAG_PENDING (ec_tags.h). */
uint64_t rmpc_ec_next_tag(struct rmpc_ec *ec);

/*
 * Rows a process writes are serialized, whichever handles of a lease
 * write them: a partial write reads the parity it then writes, and
 * another write of the row in between would be lost from the parity.
 * rmpc_ec_lock_rows -- the locks of rows [r0, r1] of lease id (a hashed
 * table of RMPC_EC_ROW_LOCKS, taken in order); *held: which, for
 * rmpc_ec_unlock_rows.
 */
#define RMPC_EC_ROW_LOCKS 64u
void rmpc_ec_lock_rows(uint64_t id, uint64_t r0, uint64_t r1, uint64_t *held);
void rmpc_ec_unlock_rows(uint64_t held);

#endif /* RMPC_EC_LEASE_H */

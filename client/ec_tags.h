/* SPDX-License-Identifier: MIT */
/*
 * ec_tags.h -- which chunks of an erasure-coded row a degraded read may
 * decode from (pure). Every write of a row writes one tag, unique to
 * that write, beside the row on every member it reaches (the row tags of
 * ec_layout.h); a writer that dies between members leaves a row whose
 * members hold two tags. Chunks of one tag are of one write, and any k
 * of them decode to that write's row; chunks of two writes decode to
 * bytes nobody wrote. So the sources are k members of one tag.
 */
#ifndef RMPC_EC_TAGS_H
#define RMPC_EC_TAGS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A write marks the rows it is about to change on each member it writes
 * with its tag and this bit, before their bytes; its tag without the bit
 * once every member has the bytes. A member whose tag has the bit may
 * hold any mix of old and new bytes: it is no source of a decode. (A tag
 * put after the bytes alone would leave a member whose bytes changed
 * with the old tag when the writer dies between: its old tag would lie.)
 */
#define RMPC_EC_TAG_PENDING (UINT64_C(1) << 63)

/*
 * rmpc_ec_pick -- of the n = k + m members of a row, those usable
 * (usable[i]: live, read) with their tags tag[i]: the k to decode from,
 * into have[0 .. k), ascending. They share one tag, not pending: of the
 * tags that k
 * usable members hold, the one whose members include the most data
 * members (then the one of the lowest member), so that a degraded read
 * agrees with the data members a healthy read reads; and of its members,
 * the data members first. k, or -EIO when fewer than k members are
 * usable, or -EBADMSG when no k of them share a tag (a write to the row
 * was torn: rmpool scrub mends it from the data members).
 */
int rmpc_ec_pick(unsigned k, unsigned n, const bool *usable,
		 const uint64_t *tag, unsigned *have);

#endif /* RMPC_EC_TAGS_H */

/* SPDX-License-Identifier: MIT */
/* journal.h -- the leases as they must outlive the daemon process. */
#ifndef RMP_JOURNAL_H
#define RMP_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The journal lives in memory that survives the process (the tail of the
 * pool's state file, see pool.h), not on disk: the pool's bytes do not
 * survive a reboot either. It is a header and an array of fixed-size
 * records, one per live lease, each with its own BLAKE2b checksum, written
 * in place with one memcpy: a grant fills a free record, a renew rewrites
 * it, an end zeroes it. A record torn by a crash, or damaged any other
 * way, fails its checksum and is discarded alone; the others are still
 * found at their fixed places.
 *
 * Recovery trusts nothing it cannot prove. A record must check out, lie in
 * the pool, be aligned, and not be past its deadline (one too far ahead
 * is the lifecycle's to cut to the configured ttl_max: this module does
 * not know it). Two recovered leases
 * that overlap cannot both be live (the allocator never hands out a byte
 * twice), so one of them ended and its zeroed record was lost: the one
 * granted later (higher sequence number) wins, the other is discarded.
 * A record is discarded when any record granted after it overlaps it,
 * whether or not that one is kept itself (it may have expired since):
 * its grant proves the older lease had ended. Memory that no recovered
 * lease covers is zeroed before it is reused.
 */

#define RMP_JOURNAL_RECORD 256u
#define RMP_JOURNAL_HEADER 4096u

/* One lease as the journal keeps it. */
struct rmp_journal_lease {
	uint64_t seq;         /* grant order, set by rmp_journal_put */
	uint64_t id, secret;
	uint64_t offset, length;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC (the header pins the boot) */
	uint64_t ttl_ms;
	uint32_t access, flags;
	char tenant[25];
	char owner[25];
	/* The lease's group epoch (rmp_lease.group_epoch). Records of
	 * rmpool before 0.7 have zeros here (their spare bytes): none. */
	uint64_t group_epoch;
};

struct rmp_journal;

/* Bytes of memory a journal of capacity records needs. */
size_t rmp_journal_bytes(uint32_t capacity);

/*
 * rmp_journal_open -- a journal in mem[0, len) for a pool of pool_size
 * bytes. If mem holds a valid header of this boot for the same pool size
 * and capacity, *found is true and its records wait for
 * rmp_journal_recover(); otherwise mem is formatted empty (and *why says
 * why the old contents were not used, when there were any). 0 or -errno.
 */
int rmp_journal_open(struct rmp_journal **out, void *mem, size_t len,
		     uint64_t pool_size, bool *found, char *why,
		     size_t whylen);
void rmp_journal_close(struct rmp_journal *j); /* accepts NULL */

struct rmp_journal_stats {
	uint32_t capacity, used;
	/* Of the last recovery. */
	uint32_t recovered, damaged, expired, overlapped, invalid;
};
void rmp_journal_stats(const struct rmp_journal *j,
		       struct rmp_journal_stats *st);

/*
 * rmp_journal_recover -- every record that checks out, is live at now_ms
 * and overlaps no record granted after it, in increasing offset order
 * (so disjoint), to fn (slot identifies the record for later puts and
 * drops). Every other record is zeroed. Call once, right after open. 0 or
 * -ENOMEM: then nothing was read or changed, and no record is free for
 * puts: the journal is of no use until a recovery succeeds.
 */
int rmp_journal_recover(struct rmp_journal *j, uint64_t now_ms,
			void (*fn)(const struct rmp_journal_lease *r,
				   uint32_t slot, void *arg),
			void *arg);
/* rmp_journal_recover_bytes -- the memory rmp_journal_recover allocates
 * (for a while) for j. */
size_t rmp_journal_recover_bytes(const struct rmp_journal *j);

/*
 * rmp_journal_put -- write r. *slot 0: a new lease (a free record is
 * taken and stored in *slot, and r->seq set); else rewrite that record
 * (renew), keeping the seq it has (r->seq is ignored). -ENOSPC when every
 * record is in use.
 */
int rmp_journal_put(struct rmp_journal *j, struct rmp_journal_lease *r,
		    uint32_t *slot);

/* rmp_journal_drop -- the lease of *slot ended: zero its record. */
void rmp_journal_drop(struct rmp_journal *j, uint32_t *slot);

#endif /* RMP_JOURNAL_H */

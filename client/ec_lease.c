/* SPDX-License-Identifier: MIT */
/* ec_lease.c -- an erasure-coded lease handle's state (ec_lease.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <sodium.h>

#include "ec_lease.h"
#include "ec_tags.h"

int rmpc_ec_new(unsigned k, unsigned m, uint64_t chunk, uint64_t length,
		struct rmpc_ec **out)
{
	struct rmpc_ec *ec = calloc(1, sizeof(*ec));
	int err;

	if (!ec)
		return -ENOMEM;
	err = rmpc_ec_layout_init(&ec->lo, k, m, chunk, length);
	if (err) {
		free(ec);
		return err;
	}
	ec->code = rmpc_ec_code_get(k, m);
	ec->step_rows = chunk >= RMPC_EC_STEP_BYTES ? 1 :
			RMPC_EC_STEP_BYTES / chunk;
	/* a step's parity, or one row whole (io_ec.c's rewrite) */
	ec->parity = aligned_alloc(64, (m * ec->step_rows > k + m ?
					m * ec->step_rows : k + m) * chunk);
	ec->old = aligned_alloc(64, (k + m) * chunk);
	ec->tags = calloc(ec->step_rows, sizeof(*ec->tags));
	/* a row's tags by member, then the same read again (io_ec.c) */
	ec->member_tags = calloc(2 * (k + m), sizeof(*ec->member_tags));
	ec->redo = aligned_alloc(64, k * chunk);
	/* a late-bound read's tags: a step's, twice, of k + 1 members */
	ec->late_tags = calloc(2 * (k + 1) * ec->step_rows,
			       sizeof(*ec->late_tags));
	if (!ec->code || !ec->parity || !ec->old || !ec->tags ||
	    !ec->member_tags || !ec->redo || !ec->late_tags) {
		rmpc_ec_free(ec);
		return -ENOMEM;
	}
	randombytes_buf(&ec->writer, sizeof(ec->writer));
	ec->writer <<= 32;
	*out = ec;
	return 0;
}

void rmpc_ec_free(struct rmpc_ec *ec)
{
	if (!ec)
		return;
	free(ec->parity);
	free(ec->old);
	free(ec->tags);
	free(ec->member_tags);
	free(ec->redo);
	free(ec->late_tags);
	free(ec);
}

uint64_t rmpc_ec_next_tag(struct rmpc_ec *ec)
{
	uint64_t t;

	do { /* 2^32 writes of one handle: a new writer half */
		if (++ec->seq == 0)
			randombytes_buf(&ec->writer, sizeof(ec->writer)),
				ec->writer <<= 32;
		t = (ec->writer | ec->seq) & ~RMPC_EC_TAG_PENDING;
	} while (!t);
	return t;
}

_Static_assert(RMPC_EC_ROW_LOCKS == 64, "a lock a bit of a uint64_t");

static pthread_mutex_t row_locks[RMPC_EC_ROW_LOCKS];
static pthread_once_t row_locks_once = PTHREAD_ONCE_INIT;

static void row_locks_init(void)
{
	for (unsigned b = 0; b < RMPC_EC_ROW_LOCKS; b++)
		pthread_mutex_init(&row_locks[b], NULL);
}

void rmpc_ec_lock_rows(uint64_t id, uint64_t r0, uint64_t r1, uint64_t *held)
{
	uint64_t set = 0;

	pthread_once(&row_locks_once, row_locks_init);
	/* the buckets the rows hash to (all of them for a long run) */
	for (uint64_t r = r0; r <= r1 && ~set; r++)
		set |= UINT64_C(1) << ((id * 0x9e3779b97f4a7c15u + r) %
				       RMPC_EC_ROW_LOCKS);
	for (unsigned b = 0; b < RMPC_EC_ROW_LOCKS; b++)
		if (set >> b & 1)
			pthread_mutex_lock(&row_locks[b]);
	*held = set;
}

void rmpc_ec_unlock_rows(uint64_t held)
{
	for (unsigned b = RMPC_EC_ROW_LOCKS; b-- > 0;)
		if (held >> b & 1)
			pthread_mutex_unlock(&row_locks[b]);
}

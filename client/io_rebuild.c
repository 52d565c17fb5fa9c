/* SPDX-License-Identifier: MIT */
/*
 * io_rebuild.c -- rows of an erasure-coded lease made whole for a repair
 * or a scrub (rmpc_ec_rebuild_rows, io_int.h): each row's chunks decoded
 * from k members that hold one write of it and written, with its tag,
 * to the members rebuilt; a row a writer left torn mended from its data.
 * It moves its bytes by member handles (rmpc_rw), not through a group's
 * member states: the repair (cluster_repair.c) owns those.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ec_lease.h"
#include "ec_tags.h"
#include "io_int.h"
#include "util.h"

/* run_end -- the end of the run of rows from a whose picks equal row a's
 * (rows x of have[x * k ..]), at most n. */
static uint64_t run_end(const unsigned *have, unsigned k, uint64_t a,
			uint64_t n)
{
	uint64_t b = a + 1;

	while (b < n && !memcmp(have + b * k, have + a * k,
				k * sizeof(*have)))
		b++;
	return b;
}

/* rebuild_run -- rows [a, b) of the step at row r0: the k chunks of each
 * from the members have[0 .. k) read, the wanted ones decoded into
 * out[w] + x * c. */
static int rebuild_run(const struct rmpc_ec *ec, struct rmp_lease *const *src,
		       uint64_t r0, uint64_t a, uint64_t b, const unsigned *have,
		       uint8_t *data, unsigned nwant, const unsigned *want,
		       uint8_t *const *out, uint64_t n)
{
	uint64_t c = ec->lo.chunk;
	unsigned k = ec->lo.k;
	struct rmpc_leg legs[RMPC_EC_K_MAX];
	int err;

	for (unsigned i = 0; i < k; i++)
		legs[i] = (struct rmpc_leg){ .l = src[have[i]],
					     .off = (r0 + a) * c,
					     .len = (b - a) * c,
					     .local = (char *)data +
						      (i * n + a) * c };
	err = rmpc_rw(legs, k, false);
	for (uint64_t x = a; !err && x < b; x++) {
		uint8_t *from[RMPC_EC_K_MAX], *to[RMPC_EC_N_MAX];

		for (unsigned i = 0; i < k; i++)
			from[i] = data + (i * n + x) * c;
		for (unsigned w = 0; w < nwant; w++)
			to[w] = out[w] + x * c;
		err = rmpc_ec_decode(ec->code, c, have, from, nwant, want, to);
	}
	return err;
}

/* mend_row -- row r, whose members do not all hold one write (a writer
 * died within it) while every data member lives (is in src): its
 * parity encoded anew from its data and written to every parity member
 * at hand (src or dst), under a new tag (pending on the parity members
 * first, then on every member at hand). */
static int mend_row(struct rmpc_ec *ec, struct rmp_lease *const *src,
		    struct rmp_lease *const *dst, uint64_t r, uint8_t *row)
{
	uint64_t c = ec->lo.chunk, tag = rmpc_ec_next_tag(ec);
	unsigned k = ec->lo.k, n = k + ec->lo.m, nl = 0;
	struct rmpc_leg legs[RMPC_EC_N_MAX];
	uint8_t *data[RMPC_EC_K_MAX], *par[RMPC_EC_M_MAX];
	int err;

	for (unsigned i = 0; i < k; i++) {
		data[i] = row + i * c;
		legs[i] = (struct rmpc_leg){ .l = src[i], .off = r * c,
					     .len = c, .local = (char *)data[i] };
	}
	for (unsigned j = 0; j < ec->lo.m; j++)
		par[j] = row + (k + j) * c;
	err = rmpc_rw(legs, k, false);
	if (err)
		return err;
	rmpc_ec_encode(ec->code, c, data, par);
	/* rounds: pending tags of the parity, parity, tags of all */
	for (unsigned round = 0; round < 3; round++) {
		uint64_t pending = tag | RMPC_EC_TAG_PENDING;

		nl = 0;
		for (unsigned i = round == 2 ? 0 : k; i < n; i++) {
			struct rmp_lease *h = src[i] ? src[i] : dst[i];

			if (!h)
				continue;
			legs[nl++] = (struct rmpc_leg){
				.l = h,
				.off = round == 1 ? r * c :
					rmpc_ec_tag_off(&ec->lo, r),
				.len = round == 1 ? c : RMPC_EC_TAG_BYTES,
				.local = round == 1 ? (char *)par[i - k] :
					 round ? (char *)&tag :
					 (char *)&pending };
		}
		err = nl ? rmpc_rw(legs, nl, true) : 0;
		if (err)
			return err;
	}
	return 0;
}

/* row_state -- row x of a step (tags[i * n + x] of member i, n rows)
 * with sources usable[]: 1 when its members at hand do not all hold one
 * write and every data member is one of them (to mend); else 0, with
 * have[0 .. k) the sources of one write and *tag theirs; or the
 * pick's error. */
static int row_state(const struct rmpc_ec *ec, const uint64_t *tags,
		     uint64_t n, uint64_t x, const bool *usable,
		     unsigned *have, uint64_t *tag)
{
	unsigned k = ec->lo.k, nm = k + ec->lo.m, data = 0;
	uint64_t row[RMPC_EC_N_MAX];
	bool one = true;
	int got;

	unsigned first = nm;

	for (unsigned i = 0; i < nm; i++) {
		row[i] = tags[i * n + x];
		data += i < k && usable[i];
		first = usable[i] && first == nm ? i : first;
		if (usable[i] && first < nm && row[i] != row[first])
			one = false;
	}
	one = one && first < nm && !(row[first] & RMPC_EC_TAG_PENDING);
	if (!one && data == k)
		return 1;
	got = rmpc_ec_pick(k, nm, usable, row, have);
	for (unsigned i = 0; got == -EBADMSG && i < nm; i++)
		if (usable[i] && (row[i] & RMPC_EC_TAG_PENDING))
			got = -EAGAIN; /* a write under way, or cut short */
	if (got < 0)
		return got;
	*tag = row[have[0]];
	return 0;
}

int rmpc_ec_rebuild_rows(struct rmpc_ec *ec, struct rmp_lease *const *src,
			 struct rmp_lease *const *dst, uint64_t r0, uint64_t n,
			 uint64_t *bad_row, uint64_t *mended)
{
	unsigned k = ec->lo.k, nm = k + ec->lo.m, want[RMPC_EC_N_MAX];
	unsigned nwant = 0, nl = 0;
	uint64_t c = ec->lo.chunk, *tags, *put;
	struct rmpc_leg legs[RMPC_EC_N_MAX];
	uint8_t *data, *out[RMPC_EC_N_MAX];
	bool usable[RMPC_EC_N_MAX], *mend;
	unsigned *have;
	int err = 0;

	for (unsigned i = 0; i < nm; i++)
		if (dst[i])
			want[nwant++] = i;
	tags = calloc(nm * n + n, sizeof(*tags));
	have = calloc(n * k, sizeof(*have));
	mend = calloc(n, sizeof(*mend));
	data = malloc((k + RMP_MAX(nwant, ec->lo.m)) * n * c);
	if (!tags || !have || !mend || !data) {
		err = -ENOMEM;
		goto out;
	}
	put = tags + nm * n;
	for (unsigned w = 0; w < nwant; w++)
		out[w] = data + (k + w) * n * c;
	/* every source's tags of the step's rows, in one leg each */
	for (unsigned i = 0; i < nm; i++) {
		usable[i] = src[i] != NULL;
		if (usable[i])
			legs[nl++] = (struct rmpc_leg){
				.l = src[i], .off = rmpc_ec_tag_off(&ec->lo, r0),
				.len = n * RMPC_EC_TAG_BYTES,
				.local = (char *)(tags + i * n) };
	}
	err = rmpc_rw(legs, nl, false);
	/* each row: to mend, or k sources of one write and its tag */
	for (uint64_t x = 0; !err && x < n; x++) {
		int st = row_state(ec, tags, n, x, usable, have + x * k,
				   put + x);

		if (st < 0)
			*bad_row = r0 + x;
		err = st < 0 ? st : 0;
		mend[x] = st == 1;
	}
	for (uint64_t x = 0; !err && x < n; x++) {
		if (!mend[x])
			continue;
		err = mend_row(ec, src, dst, r0 + x, data);
		++*mended;
	}
	for (uint64_t a = 0, b; !err && nwant && a < n; a = b) {
		b = run_end(have, k, a, n);
		if (!mend[a])
			err = rebuild_run(ec, src, r0, a, b, have + a * k, data,
					  nwant, want, out, n);
	}
	/* the chunks, then the tags that vouch for them; not those of a
	 * row mended (done) */
	for (unsigned round = 0; !err && nwant && round < 2; round++) {
		for (uint64_t a = 0, b; !err && a < n; a = b) {
			for (b = a; b < n && mend[b] == mend[a]; b++)
				;
			if (mend[a])
				continue;
			for (unsigned w = 0; w < nwant; w++)
				legs[w] = (struct rmpc_leg){
					.l = dst[want[w]],
					.off = round ? rmpc_ec_tag_off(&ec->lo,
								       r0 + a)
						     : (r0 + a) * c,
					.len = (b - a) * (round ?
						RMPC_EC_TAG_BYTES : c),
					.local = round ? (char *)(put + a) :
						(char *)out[w] + a * c };
			err = rmpc_rw(legs, nwant, true);
		}
	}
out:
	free(tags);
	free(have);
	free(mend);
	free(data);
	return err;
}

/* SPDX-License-Identifier: MIT */
/*
 * io_ec.c -- one try of a data call on an erasure-coded lease
 * (ec_layout.h), for io_group.c's retries, waits and stale marks.
 *
 * Reads go to the data members: the data chunks of a lease lie as a
 * striped lease's units (stripes k, unit chunk), so a read is a striped
 * read over them (stripe.c). The part of a data member that is away is
 * decoded row by row from k members of one write (ec_tags.h).
 *
 * Writes: whole rows are encoded and written to every live member, a
 * step of rows at a time; a row written in part gets its parity updated
 * by the delta of the bytes written, when its touched data members and
 * its parity are live and its members agree on the row's last write;
 * else the row is read whole (decoded where need be), the bytes laid
 * over it and the row encoded anew. Each write of rows takes a new tag:
 * first marked pending on the members whose bytes it changes
 * (ec_tags.h), then the bytes, then the tag on every live member: three
 * rounds, so that no member ever holds a tag its bytes do not match.
 * A write is done once k members hold its tag finished; one cut short
 * marks nobody (the tags tell), so a member it missed in a flap comes
 * back as it is. A handle writes only while it holds the lease's writer
 * claim (the keeper's, cluster_claim.c), proven before each step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ec_lease.h"
#include "ec_tags.h"
#include "error.h"
#include "fault.h"
#include "group.h"
#include "io_int.h"
#include "lease.h"
#include "stripe.h"
#include "util.h"

static bool caller_error(int err)
{
	return rmpc_fault_of(err) == RMPC_FAULT_CALLER;
}

/* leg -- member i's bytes [off, off + len), at local, contiguous. */
static struct rmpc_leg leg(const struct rmpc_group *g, unsigned i,
			   uint64_t off, uint64_t len, void *local)
{
	return (struct rmpc_leg){ .l = g->m[i], .off = off, .len = len,
				  .local = local, .unit = g->ec->lo.chunk };
}

/* move -- legs[0 .. n) of members who[0 .. n) moved (ok[] true for
 * each); a member whose leg failed is failed (group.h) once, and ok[]
 * cleared for it. The first caller error, or 0. */
static int move(struct rmpc_group *g, struct rmpc_leg *legs,
		const unsigned *who, unsigned n, bool write, bool *ok)
{
	if (!n)
		return 0;
	if (n > RMPC_GROUP_PLANS(g->n))
		return -EINVAL; /* g->plans has no room: a bug here */
	rmpc_rails_legs(legs, n, write, g->plans);
	for (unsigned i = 0; i < n; i++) {
		int err = legs[i].err;

		if (caller_error(err))
			return err;
		if (err && ok[who[i]]) {
			rmpc_member_failed(g, who[i], err, rmp_now_ms());
			ok[who[i]] = false;
		}
	}
	return 0;
}

/* live_count -- members live now, into live[]. */
static unsigned live_count(const struct rmpc_group *g, bool *live)
{
	unsigned n = 0;

	for (unsigned i = 0; i < g->n; i++)
		n += live[i] = rmpc_member_live(g, i);
	return n;
}

/* A degraded read's tries of a row whose tags moved under it. */
#define RMPC_EC_READ_TRIES 4u

/* tag_leg -- member i's tag of row r, read into *dst. */
static struct rmpc_leg tag_leg(struct rmpc_group *g, unsigned i, uint64_t r,
			       uint64_t *dst)
{
	return leg(g, i, rmpc_ec_tag_off(&g->ec->lo, r), RMPC_EC_TAG_BYTES,
		   dst);
}

/*
 * decode_chunk -- chunk d (0 .. k + m) of row r into out (chunk bytes),
 * from k members of one write. A member's tag, chunk and tag again are
 * read in one round, in that order on one queue pair (one chain a
 * member, after_prev): first of k members, the live data members and
 * parity for the rest (the k a pick of every live member would choose
 * when they agree: rmpc_ec_pick prefers data members), then, when they
 * do not agree, of every live member. A member whose two tags differ or are
 * pending had its chunk written under the read (another process's
 * write), and k that share a finished tag are the sources: a seqlock.
 * -EBADMSG when no k agree (a torn row), -EIO when fewer than k answer.
 */
static int decode_chunk(struct rmpc_group *g, uint64_t r, unsigned d,
			uint8_t *out)
{
	struct rmpc_ec *ec = g->ec;
	uint64_t c = ec->lo.chunk, *again = ec->member_tags + g->n;
	unsigned k = ec->lo.k, have[RMPC_EC_K_MAX], who[3 * RMPC_EC_N_MAX];
	struct rmpc_leg legs[3 * RMPC_EC_N_MAX];
	bool usable[RMPC_EC_N_MAX];
	uint8_t *src[RMPC_EC_K_MAX];
	unsigned nl, changed = 0, tries = 0;
	bool first = true; /* k members first */
	int err, n = -EIO;

	/* a few times while another process's write moves under it */
	while (tries < RMPC_EC_READ_TRIES) {
		bool few = live_count(g, usable) > k && first;

		first = false;
		for (unsigned i = 0, kept = 0; few && i < g->n; i++) {
			kept += usable[i];
			usable[i] = usable[i] && kept <= k;
		}
		nl = changed = 0;
		for (unsigned i = 0; i < g->n; i++) {
			if (!usable[i])
				continue;
			who[nl] = who[nl + 1] = who[nl + 2] = i;
			legs[nl++] = tag_leg(g, i, r, &ec->member_tags[i]);
			legs[nl] = leg(g, i, r * c, c, ec->old + i * c);
			legs[nl++].after_prev = true;
			legs[nl] = tag_leg(g, i, r, &again[i]);
			legs[nl++].after_prev = true;
		}
		err = move(g, legs, who, nl, false, usable);
		if (err)
			return err;
		for (unsigned i = 0; i < g->n; i++) {
			bool moved = usable[i] &&
				     again[i] != ec->member_tags[i];

			changed += moved;
			usable[i] = usable[i] && !moved;
		}
		n = rmpc_ec_pick(k, g->n, usable, ec->member_tags, have);
		if (n >= 0)
			break;
		if (few) /* read every live member, not counted as a try */
			continue;
		if (!changed)
			break;
		tries++;
	}
	if (n < 0)
		return n;
	for (unsigned i = 0; i < k; i++)
		src[i] = ec->old + have[i] * c;
	err = rmpc_ec_decode(ec->code, c, have, src, 1, &d, &out);
	ec->decoded += !err;
	return err;
}

/* decode_part -- the bytes of striped part p (data member p->stripe)
 * into dst, decoded row by row. */
static int decode_part(struct rmpc_group *g,
		       const struct rmpc_stripe_piece *p, char *dst)
{
	struct rmpc_ec *ec = g->ec;
	uint64_t c = ec->lo.chunk, gap = (ec->lo.k - 1) * c;
	uint8_t *chunk = ec->parity; /* a chunk of scratch */

	for (uint64_t x = p->off; x < p->off + p->len;) {
		uint64_t r = x / c, a = x % c;
		uint64_t b = RMP_MIN(c - a, p->off + p->len - x);
		int err = decode_chunk(g, r, p->stripe, chunk);

		if (err)
			return err;
		memcpy(dst + p->local + rmpc_stripe_at(p->off, c, gap,
						       x - p->off),
		       chunk + a, b);
		x += b;
	}
	return 0;
}

/* read_striped -- [off, off + len) of l from its data members, the
 * part of one away decoded (the read without late binding). */
static int read_striped(struct rmp_lease *l, uint64_t off, char *dst,
			size_t len, bool fenced)
{
	struct rmpc_group *g = l->group;
	struct rmpc_ec *ec = g->ec;
	uint64_t c = ec->lo.chunk;
	struct rmpc_stripe_piece p[RMPC_EC_K_MAX];
	struct rmpc_leg legs[RMPC_EC_K_MAX];
	unsigned who[RMPC_EC_K_MAX] = { 0 }, n, nl = 0;
	bool ok[RMPC_EC_N_MAX] = { false };
	uint64_t r0, r1, held = 0;
	int err;

	if (len > l->length || off > l->length - len)
		return -ERANGE;
	n = rmpc_stripe_split(ec->lo.k, c, off, len, p);
	for (unsigned i = 0; i < n; i++) {
		unsigned d = p[i].stripe;

		if (!rmpc_member_live(g, d))
			continue;
		who[nl] = d;
		ok[d] = true;
		legs[nl] = leg(g, d, p[i].off, p[i].len, dst + p[i].local);
		legs[nl++].gap = (ec->lo.k - 1) * c;
	}
	err = move(g, legs, who, nl, false, ok);
	if (err)
		return err;
	for (unsigned i = 0; i < nl; i++)
		if (fenced && (legs[i].err == -EKEYREVOKED ||
			       legs[i].err == -ESTALE))
			return legs[i].err; /* a repair's fence */
	/* what is decoded is read under the rows' locks: a write of this
	 * process marks a row pending while it changes it (ec_tags.h) */
	for (unsigned i = 0; i < n; i++) {
		if (ok[p[i].stripe] || !p[i].len)
			continue;
		if (!held)
			rmpc_ec_rows(&ec->lo, off, len, &r0, &r1),
			rmpc_ec_lock_rows(l->id, r0, r1, &held);
		err = decode_part(g, &p[i], dst);
		if (err)
			break;
	}
	if (held)
		rmpc_ec_unlock_rows(held);
	return err;
}

/* ---- late binding ---- */

/*
 * late_members -- true when a late-bound step can run: every data
 * member live and a parity member (*p, the first) too.
 */
static bool late_members(struct rmpc_group *g, unsigned *p)
{
	unsigned k = g->ec->lo.k;

	*p = g->n;
	for (unsigned i = g->n; i-- > k;)
		if (rmpc_member_live(g, i))
			*p = i;
	if (*p == g->n)
		return false;
	for (unsigned i = 0; i < k; i++)
		if (!rmpc_member_live(g, i))
			return false;
	return true;
}

/*
 * late_rows -- the rows a late-bound read of this call moves at a time
 * (a step), or 0 for none: its buffer is not registered with the
 * members (a late READ must never land in the caller's memory after the
 * call returned, and a zero-copy READ cannot be called back; through
 * the bounce buffers the bytes are copied anyway). A step that does not
 * fit a member's bounce buffer is read as before (rmpc_read_first's
 * -E2BIG).
 */
static uint64_t late_rows(struct rmpc_group *g, const char *dst, size_t len)
{
	return rmpc_buf_lookup(g->m[0]->c, dst, len) ? 0 : g->ec->step_rows;
}

/* late_error -- after a late-bound read: the error to return at once
 * (the caller's, a repair's fence when fenced), else 0; *any: a chain
 * failed. A member is not failed here: the read is made again the
 * usual way, whose rails and members' states decide what it was. */
static int late_error(const struct rmpc_group *g, const struct rmpc_leg *legs,
		      bool fenced, bool *any)
{
	*any = false;
	for (unsigned j = 0; j <= g->ec->lo.k; j++) {
		int err = legs[3 * j].err;

		if (!err || err == -EINPROGRESS || err == -ECANCELED)
			continue;
		if (caller_error(err) ||
		    (fenced && (err == -EKEYREVOKED || err == -ESTALE)))
			return err;
		*any = true;
	}
	return 0;
}

/*
 * read_late -- whole rows [r0, r0 + nr) (nr <= late_rows) into out (row
 * r0's first byte), late bound: the data members' and parity member
 * p's tags, chunks and tags again, a chain a member, all posted, and
 * done on the first k chains to complete. When those are the data
 * members', the bytes are theirs; else the late one's chunks are
 * decoded from the others' and p's, row by row, where their two reads
 * of the tags show one finished write (decode_chunk's seqlock). The
 * late chain is left to complete in its member's bounce buffer. 0;
 * -EAGAIN when it cannot be (the legs do not fit, a chain failed, the
 * tags moved): the caller reads the rows as before; the caller's or a
 * fence's error.
 */
static int read_late(struct rmpc_group *g, uint64_t r0, uint64_t nr,
		     unsigned p, char *out, bool fenced)
{
	struct rmpc_ec *ec = g->ec;
	unsigned k = ec->lo.k, nl = 0, late = k;
	uint64_t c = ec->lo.chunk, row = rmpc_ec_row_bytes(&ec->lo);
	uint64_t *t = ec->late_tags, toff = rmpc_ec_tag_off(&ec->lo, r0);
	struct rmpc_leg legs[3 * (RMPC_EC_K_MAX + 1)];
	bool failed;
	int err, got;

	/* member j's tags (j = k: p's) at t + 2 j nr, again at + nr; on
	 * the rail a call of its bytes would take */
	for (unsigned j = 0; j <= k; j++) {
		unsigned i = j < k ? j : p;
		uint64_t *tb = t + 2 * j * nr;
		struct rmp_lease *h = rmpc_rails_pick(g->m[i], out, nr * c);

		if (!h)
			return -EAGAIN;
		legs[nl++] = leg(g, i, toff, nr * RMPC_EC_TAG_BYTES, tb);
		legs[nl] = leg(g, i, r0 * c, nr * c,
			       j < k ? out + j * c : (char *)ec->parity);
		legs[nl++].gap = j < k ? (k - 1) * c : 0;
		legs[nl++] = leg(g, i, toff, nr * RMPC_EC_TAG_BYTES, tb + nr);
		legs[nl - 3].l = legs[nl - 2].l = legs[nl - 1].l = h;
	}
	for (unsigned i = 0; i < nl; i++)
		legs[i].err = -ECANCELED; /* not posted */
	got = rmpc_read_first(legs, nl, k);
	err = late_error(g, legs, fenced, &failed);
	if (err)
		return err;
	if (got || failed)
		return -EAGAIN;
	for (unsigned j = 0; j < k; j++)
		if (legs[3 * j].err)
			late = j; /* the one of k + 1 still in flight */
	for (uint64_t x = 0; late < k && x < nr; x++) {
		unsigned have[RMPC_EC_K_MAX], h = 0;
		uint8_t *src[RMPC_EC_K_MAX], *want;
		uint64_t tag = t[2 * (late ? 0 : 1) * nr + x];

		for (unsigned j = 0; j <= k; j++) {
			uint64_t before = t[2 * j * nr + x];

			if (j == late)
				continue;
			if (before != t[(2 * j + 1) * nr + x] ||
			    before != tag || (tag & RMPC_EC_TAG_PENDING))
				return -EAGAIN;
			have[h] = j < k ? j : p;
			src[h++] = j < k ? (uint8_t *)out + x * row + j * c :
					   ec->parity + x * c;
		}
		want = (uint8_t *)out + x * row + late * c;
		if (rmpc_ec_decode(ec->code, c, have, src, 1, &late, &want))
			return -EAGAIN;
	}
	if (late < k) {
		ec->decoded += nr;
		ec->late += nr;
	}
	return 0;
}

int rmpc_ec_read_once(struct rmp_lease *l, uint64_t off, char *dst,
		      size_t len, bool fenced)
{
	struct rmpc_group *g = l->group;
	uint64_t row = rmpc_ec_row_bytes(&g->ec->lo), r0, r1, step, end;
	unsigned p;
	int err;

	if (len > l->length || off > l->length - len)
		return -ERANGE;
	/* the whole rows [r0, r1) of the call are late bound */
	r0 = (off + row - 1) / row;
	r1 = (off + len) / row;
	step = r1 > r0 && late_members(g, &p) ? late_rows(g, dst, len) : 0;
	if (!step)
		return read_striped(l, off, dst, len, fenced);
	err = r0 * row > off ? read_striped(l, off, dst, r0 * row - off,
					    fenced) : 0;
	for (uint64_t r = r0, nr; !err && r < r1; r += nr) {
		nr = RMP_MIN(step, r1 - r);
		/* the members' states as a step before may have left them */
		err = r == r0 || late_members(g, &p) ?
			      read_late(g, r, nr, p, dst + (r * row - off),
					fenced) :
			      -EAGAIN;
		if (err == -EAGAIN)
			err = read_striped(l, r * row, dst + (r * row - off),
					   nr * row, fenced);
	}
	end = r1 * row;
	if (err || end == off + len)
		return err;
	return read_striped(l, end, dst + (end - off), off + len - end, fenced);
}

/* ---- writes ---- */

/* tag_rows -- rows [r0, r0 + nrows) get tag t on every member in
 * wrote[], a round of its own: with RMPC_EC_TAG_PENDING before their
 * bytes change, without it after. A member that fails here is failed;
 * the write is not undone (a member left pending is no source of a
 * decode; the others' tags say which write their bytes are of). */
static int tag_rows(struct rmpc_group *g, uint64_t r0, uint64_t nrows,
		    bool *wrote, uint64_t t)
{
	struct rmpc_ec *ec = g->ec;
	struct rmpc_leg legs[RMPC_EC_N_MAX];
	unsigned who[RMPC_EC_N_MAX], nl = 0;

	for (uint64_t x = 0; x < nrows; x++)
		ec->tags[x] = t;
	for (unsigned i = 0; i < g->n; i++)
		if (wrote[i]) {
			who[nl] = i;
			legs[nl++] = leg(g, i, rmpc_ec_tag_off(&ec->lo, r0),
					 nrows * RMPC_EC_TAG_BYTES, ec->tags);
		}
	return move(g, legs, who, nl, true, wrote);
}

/* enough -- a write may go on: k members live (the row can be read back
 * from them alone). */
static int enough(const struct rmpc_group *g, bool *live)
{
	return live_count(g, live) >= g->ec->lo.k ? 0 : -EIO;
}

/* redo_done -- rows [r0, r0 + nrows) were written whole on every live
 * member: the row kept for a write made again is no longer needed. */
static void redo_done(struct rmpc_ec *ec, uint64_t r0, uint64_t nrows)
{
	if (ec->redo_valid && ec->redo_row >= r0 && ec->redo_row < r0 + nrows)
		ec->redo_valid = false;
}

/* write_full_rows -- rows [r0, r0 + nrows) whole (not the last row when
 * it ends early), their bytes at from: encoded, then every live member's
 * chunks of them in one leg each. */
static int write_full_rows(struct rmpc_group *g, uint64_t r0,
			   uint64_t nrows, const char *from, bool *wrote)
{
	struct rmpc_ec *ec = g->ec;
	uint64_t c = ec->lo.chunk, row = rmpc_ec_row_bytes(&ec->lo);
	unsigned k = ec->lo.k, m = ec->lo.m, nl = 0, who[RMPC_EC_N_MAX];
	struct rmpc_leg legs[RMPC_EC_N_MAX];
	uint64_t t = rmpc_ec_next_tag(ec);
	int err = enough(g, wrote);

	if (!err)
		err = tag_rows(g, r0, nrows, wrote, t | RMPC_EC_TAG_PENDING);
	if (!err)
		err = enough(g, wrote);
	if (err)
		return err;
	for (uint64_t x = 0; x < nrows; x++) {
		uint8_t *data[RMPC_EC_K_MAX], *par[RMPC_EC_M_MAX];

		for (unsigned i = 0; i < k; i++)
			data[i] = (uint8_t *)from + x * row + i * c;
		for (unsigned j = 0; j < m; j++)
			par[j] = ec->parity + (j * ec->step_rows + x) * c;
		rmpc_ec_encode(ec->code, c, data, par);
	}
	for (unsigned i = 0; i < g->n; i++) {
		if (!wrote[i])
			continue;
		who[nl] = i;
		if (i < k) {
			legs[nl] = leg(g, i, r0 * c, nrows * c,
				       (char *)from + i * c);
			legs[nl].gap = (k - 1) * c;
		} else {
			legs[nl] = leg(g, i, r0 * c, nrows * c,
				       ec->parity + (i - k) * ec->step_rows * c);
		}
		nl++;
	}
	err = move(g, legs, who, nl, true, wrote);
	if (!err) /* fewer than k have it: not done (left pending) */
		err = enough(g, wrote);
	if (!err)
		err = tag_rows(g, r0, nrows, wrote, t);
	if (!err) /* fewer than k hold it finished: not done either */
		err = enough(g, wrote);
	if (!err)
		redo_done(ec, r0, nrows);
	return err;
}

/* tags_agree -- the tags just read (ec->member_tags, read[]) show every
 * member holding the same finished write (its parity matches its data:
 * a delta keeps that so). */
static bool tags_agree(const struct rmpc_group *g, const bool *read)
{
	uint64_t t = g->ec->member_tags[0];

	for (unsigned i = 0; i < g->n; i++)
		if (!read[i] || g->ec->member_tags[i] != t ||
		    (t & RMPC_EC_TAG_PENDING))
			return false; /* unknown, two writes, or unfinished */
	return true;
}

/* write_tagged -- row r's legs[0 .. nl) (to members who[]) written
 * under tag t: first t marked pending on those members and put finished
 * on the other live ones (their bytes are the same before and after
 * this write); then the legs (but those of a member that failed
 * meanwhile); then t finished on the members written. Cut anywhere, no
 * k members share a finished tag their bytes do not match. */
static int write_tagged(struct rmpc_group *g, uint64_t r, uint64_t t,
			struct rmpc_leg *legs, const unsigned *who,
			unsigned nl, bool *wrote)
{
	struct rmpc_ec *ec = g->ec;
	uint64_t pending = t | RMPC_EC_TAG_PENDING;
	bool touched[RMPC_EC_N_MAX] = { false };
	struct rmpc_leg tl[RMPC_EC_N_MAX];
	unsigned to[RMPC_EC_N_MAX], tw[RMPC_EC_N_MAX] = { 0 }, n = 0, nt = 0;
	int err;

	for (unsigned i = 0; i < nl; i++)
		touched[who[i]] = true;
	for (unsigned i = 0; i < g->n; i++)
		if (wrote[i]) {
			tw[nt] = i;
			tl[nt++] = leg(g, i, rmpc_ec_tag_off(&ec->lo, r),
				       RMPC_EC_TAG_BYTES,
				       touched[i] ? &pending : &t);
		}
	err = move(g, tl, tw, nt, true, wrote);
	for (unsigned i = 0; i < nl; i++)
		if (wrote[who[i]]) {
			legs[n] = legs[i];
			to[n++] = who[i];
		}
	if (!err)
		err = enough(g, wrote);
	if (!err)
		err = move(g, legs, to, n, true, wrote);
	if (!err) /* fewer than k have it: not done (left pending) */
		err = enough(g, wrote);
	for (unsigned i = 0; i < g->n; i++)
		touched[i] = touched[i] && wrote[i];
	if (!err)
		err = tag_rows(g, r, 1, touched, t);
	/* fewer than k hold it finished: not done either */
	return err ? err : enough(g, wrote);
}

/* redo_ours -- the row tags just read (ec->member_tags, usable[]) show
 * the write of row r this handle keeps, cut short. */
static bool redo_ours(const struct rmpc_group *g, uint64_t r)
{
	const struct rmpc_ec *ec = g->ec;

	for (unsigned i = 0; ec->redo_valid && ec->redo_row == r && i < g->n;
	     i++)
		if ((ec->member_tags[i] & ~RMPC_EC_TAG_PENDING) == ec->redo_tag)
			return true;
	return false;
}

/* delta_legs -- the legs of a delta write of row r: each piece at its
 * bytes in src (NULL: at its place in ec->old, a row's chunks), then
 * each parity chunk whole at par[]; how many, their members in who[]. */
static unsigned delta_legs(struct rmpc_group *g, uint64_t r,
			   const struct rmpc_ec_piece *pc, unsigned np,
			   const char *src, uint8_t *const *par,
			   struct rmpc_leg *legs, unsigned *who)
{
	uint64_t c = g->ec->lo.chunk;
	unsigned k = g->ec->lo.k, nl = 0;

	for (unsigned i = 0; i < np; i++) {
		char *at = src ? (char *)src + pc[i].local :
			   (char *)g->ec->old + pc[i].chunk * c + pc[i].off;

		who[nl] = pc[i].chunk;
		legs[nl++] = leg(g, pc[i].chunk, r * c + pc[i].off, pc[i].len,
				 at);
	}
	for (unsigned j = 0; j < g->ec->lo.m; j++) {
		who[nl] = k + j;
		legs[nl++] = leg(g, k + j, r * c, c, par[j]);
	}
	return nl;
}

/*
 * write_delta -- part p of row r (pieces pc[0 .. np)) by the delta of
 * its bytes: every member's tag of the row, the old bytes of the pieces
 * and the row's parity read in one round; when the members agree on the
 * row's last write, the parity updated by old XOR new, the pieces and
 * the parity written. Every member is live (the caller saw). -EAGAIN:
 * they do not agree, or one went: the row is to be written anew.
 */
static int write_delta(struct rmpc_group *g, uint64_t r,
		       const struct rmpc_ec_piece *pc, unsigned np,
		       const char *src, bool *wrote)
{
	struct rmpc_ec *ec = g->ec;
	uint64_t c = ec->lo.chunk;
	unsigned m = ec->lo.m, nl = 0, who[2 * RMPC_EC_N_MAX];
	struct rmpc_leg legs[2 * RMPC_EC_N_MAX];
	uint8_t *par[RMPC_EC_M_MAX];
	bool ok[RMPC_EC_N_MAX];
	int err;

	memcpy(ok, wrote, sizeof(ok));
	for (unsigned j = 0; j < m; j++)
		par[j] = ec->parity + j * c;
	for (unsigned i = 0; i < g->n; i++) {
		who[nl] = i;
		legs[nl++] = tag_leg(g, i, r, &ec->member_tags[i]);
	}
	nl += delta_legs(g, r, pc, np, NULL, par, legs + nl, who + nl);
	err = move(g, legs, who, nl, false, ok);
	if (err)
		return err;
	if (!tags_agree(g, ok))
		return -EAGAIN;
	for (unsigned i = 0; i < np; i++) {
		uint8_t *old = ec->old + pc[i].chunk * c + pc[i].off;
		uint8_t *at[RMPC_EC_M_MAX];

		for (uint64_t b = 0; b < pc[i].len; b++)
			old[b] ^= (uint8_t)src[pc[i].local + b];
		for (unsigned j = 0; j < m; j++)
			at[j] = par[j] + pc[i].off;
		rmpc_ec_update(ec->code, pc[i].len, pc[i].chunk, old, at);
	}
	nl = delta_legs(g, r, pc, np, src, par, legs, who);
	err = write_tagged(g, r, rmpc_ec_next_tag(ec), legs, who, nl, wrote);
	if (!err)
		redo_done(ec, r, 1);
	return err;
}

/*
 * write_rewrite -- part p of row r (pieces pc[0 .. np)) by the row
 * encoded anew: each data chunk the part does not cover whole read from
 * its member or decoded, the part's bytes laid over, the parity encoded,
 * and the pieces and the parity written to the live members.
 */
static int write_rewrite(struct rmpc_group *g, uint64_t r,
			 const struct rmpc_ec_piece *pc, unsigned np,
			 const char *src, bool *wrote)
{
	struct rmpc_ec *ec = g->ec;
	uint64_t c = ec->lo.chunk;
	unsigned k = ec->lo.k, m = ec->lo.m, nl = 0, who[RMPC_EC_N_MAX];
	struct rmpc_leg legs[RMPC_EC_N_MAX];
	/* the row in the parity scratch: k data chunks, then m parity
	 * (decode_chunk's scratch is ec->old) */
	uint8_t *row = ec->parity, *data[RMPC_EC_K_MAX], *par[RMPC_EC_M_MAX];
	int err;

	for (unsigned i = 0; i < k; i++) {
		bool whole = false;

		data[i] = row + i * c;
		for (unsigned q = 0; q < np; q++)
			whole = whole || (pc[q].chunk == i && pc[q].len == c);
		if (whole)
			continue;
		if (rmpc_member_live(g, i)) {
			bool ok[RMPC_EC_N_MAX] = { false };

			ok[i] = true;
			legs[0] = leg(g, i, r * c, c, data[i]);
			err = move(g, legs, &i, 1, false, ok);
			if (err)
				return err;
			if (ok[i])
				continue;
		}
		err = decode_chunk(g, r, i, data[i]);
		/* torn by this handle's own write, cut short: the row as
		 * that write made it */
		if (err == -EBADMSG && redo_ours(g, r))
			memcpy(data[i], ec->redo + i * c, c), err = 0;
		if (err)
			return err;
	}
	for (unsigned q = 0; q < np; q++)
		memcpy(data[pc[q].chunk] + pc[q].off, src + pc[q].local,
		       pc[q].len);
	for (unsigned j = 0; j < m; j++)
		par[j] = row + (k + j) * c;
	rmpc_ec_encode(ec->code, c, data, par);
	err = enough(g, wrote);
	if (err)
		return err;
	memcpy(ec->redo, row, k * c);
	ec->redo_row = r;
	ec->redo_tag = rmpc_ec_next_tag(ec);
	ec->redo_valid = true;
	for (unsigned i = 0; i < g->n; i++) {
		bool touched = i >= k;

		for (unsigned q = 0; q < np; q++)
			touched = touched || pc[q].chunk == i;
		if (!wrote[i] || !touched)
			continue;
		who[nl] = i;
		legs[nl++] = leg(g, i, r * c, c, i < k ? data[i] : par[i - k]);
	}
	err = write_tagged(g, r, ec->redo_tag, legs, who, nl, wrote);
	ec->redo_valid = err != 0;
	return err;
}

/* write_part -- part p of row r: by its delta when it may, else the row
 * anew. */
static int write_part(struct rmpc_group *g, const struct rmpc_ec_row_part *p,
		      const char *src, bool *wrote)
{
	struct rmpc_ec *ec = g->ec;
	struct rmpc_ec_piece pc[RMPC_EC_K_MAX];
	unsigned np = rmpc_ec_pieces(&ec->lo, p, pc);
	bool delta = true;
	int err = enough(g, wrote);

	if (err)
		return err;
	/* by delta only with every member live: a write that fails half
	 * way then leaves every chunk it did not touch readable as it is;
	 * with one away, the row is written anew from its decoded data,
	 * which the handle keeps until the write is done (ec->redo) */
	for (unsigned j = 0; j < g->n; j++)
		delta = delta && wrote[j];
	if (delta) {
		err = write_delta(g, p->row, pc, np, src, wrote);
		if (err != -EAGAIN)
			return err;
		err = enough(g, wrote);
		if (err)
			return err;
	}
	return write_rewrite(g, p->row, pc, np, src, wrote);
}

int rmpc_ec_write_once(struct rmp_lease *l, uint64_t off, const char *src,
		       size_t len, uint32_t *made)
{
	struct rmpc_group *g = l->group;
	struct rmpc_ec *ec = g->ec;
	uint64_t row = rmpc_ec_row_bytes(&ec->lo), r0, r1, held;
	bool wrote[RMPC_EC_N_MAX];
	int err = 0;

	if (len > l->length || off > l->length - len)
		return -ERANGE;
	if (!len)
		return enough(g, wrote);
	rmpc_ec_rows(&ec->lo, off, len, &r0, &r1);
	live_count(g, wrote);
	rmpc_ec_lock_rows(l->id, r0, r1, &held);
	for (uint64_t r = r0; !err && r <= r1;) {
		struct rmpc_ec_row_part p = rmpc_ec_row_part(&ec->lo, off, len,
							     r);
		uint64_t n = 0;

		/* a long write proves the writer claim again before each
		 * step (io_group.c asked before the first): a step's time
		 * is all a claim's margin must cover */
		if (r != r0 && g->keeper)
			err = g->keeper->claim(l);
		if (err)
			break;
		/* whole rows, a step at a time (not a last row that ends
		 * early: its chunks past the end are not in src) */
		while (r + n <= r1 && n < ec->step_rows &&
		       rmpc_ec_row_part(&ec->lo, off, len, r + n).full &&
		       rmpc_ec_row_data(&ec->lo, r + n) == row)
			n++;
		if (n) {
			err = write_full_rows(g, r, n, src + (r * row - off),
					      wrote);
			r += n;
		} else {
			err = write_part(g, &p, src, wrote);
			r++;
		}
		/* rows done (k members hold them finished) without a member
		 * away: it lacks a write made, acknowledged or not, and
		 * io_group.c has it marked; rows cut short mark nobody (the
		 * tags tell) */
		for (unsigned i = 0; !err && i < g->n; i++)
			if (!wrote[i])
				*made |= UINT32_C(1) << i;
	}
	rmpc_ec_unlock_rows(held);
	return err;
}

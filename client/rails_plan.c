/* SPDX-License-Identifier: MIT */
/* rails_plan.c -- how a call is cut and dealt over a node's rails (pure; see rails.h). */
#include <string.h>

#include "rails.h"

void rmpc_rail_plan_init(struct rmpc_rail_plan *p, uint64_t off,
			 uint64_t len, uint64_t piece, unsigned first)
{
	memset(p, 0, sizeof(*p));
	p->piece = piece;
	p->next = off;
	p->end = off + len;
	p->turn = first;
}

bool rmpc_rail_plan_done(const struct rmpc_rail_plan *p)
{
	return p->next == p->end && !p->nredo;
}

int rmpc_rail_plan_redo(struct rmpc_rail_plan *p,
			const struct rmpc_rail_piece *pieces, unsigned n)
{
	if (n > RMPC_RAIL_REDO_MAX - p->nredo)
		return -1;
	memcpy(&p->redo[p->nredo], pieces, n * sizeof(*pieces));
	p->nredo += n;
	return 0;
}

/* take -- the next piece to deal: a given-back one, else the next new
 * one (up to the next multiple of the piece size). false: none left. */
static bool take(struct rmpc_rail_plan *p, struct rmpc_rail_piece *out)
{
	uint64_t stop;

	if (p->nredo) {
		*out = p->redo[0];
		memmove(&p->redo[0], &p->redo[1],
			--p->nredo * sizeof(p->redo[0]));
		return true;
	}
	if (p->next == p->end)
		return false;
	stop = (p->next | (p->piece - 1)) + 1; /* next multiple */
	if (stop > p->end || stop < p->next)
		stop = p->end;
	*out = (struct rmpc_rail_piece){ .off = p->next,
					 .len = stop - p->next };
	p->next = stop;
	return true;
}

unsigned rmpc_rail_plan_deal(struct rmpc_rail_plan *p, const bool *live,
			     unsigned nrails, unsigned per_rail,
			     struct rmpc_rail_piece out[][RMPC_RAIL_ROUND_MAX],
			     unsigned *count)
{
	unsigned dealt = 0, room = 0, i, r;

	if (per_rail > RMPC_RAIL_ROUND_MAX)
		per_rail = RMPC_RAIL_ROUND_MAX;
	for (i = 0; i < nrails; i++) {
		count[i] = 0;
		room += live[i] ? per_rail : 0;
	}
	/* One piece to each live rail in turn, from p->turn on, while a
	 * rail has room (they all have the same: one pass tells). */
	for (r = p->turn % (nrails ? nrails : 1); dealt < room;
	     r = (r + 1) % nrails) {
		if (!live[r] || count[r] == per_rail)
			continue;
		if (!take(p, &out[r][count[r]]))
			break;
		count[r]++;
		dealt++;
		p->turn = (r + 1) % nrails;
	}
	return dealt;
}

int rmpc_rail_pick(const bool *live, const int *node, unsigned nrails,
		   int buf_node, unsigned *turn)
{
	unsigned i, r;

	if (buf_node >= 0)
		for (i = 0; i < nrails; i++)
			if (live[i] && node[i] == buf_node)
				return (int)i;
	for (i = 0; i < nrails; i++) {
		r = (*turn + i) % nrails;
		if (live[r]) {
			*turn = (r + 1) % nrails;
			return (int)r;
		}
	}
	return -1;
}

uint64_t rmpc_rail_piece_size(uint64_t stripe, uint64_t limit)
{
	uint64_t cap = stripe < limit ? stripe : limit, p = 1;

	while (p <= cap / 2)
		p *= 2;
	return p;
}

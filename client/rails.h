/* SPDX-License-Identifier: MIT */
/*
 * rails.h -- the rails of one node: several addresses of one rmpoold
 * (one per RDMA device), a connection on each, used together. This part
 * is pure (no state, no verbs): how a READ or WRITE is cut into pieces
 * and dealt over the rails that are up, how the pieces of a rail that
 * failed are dealt again, and which one rail a small operation takes.
 *
 * A call [off, off+len) of a lease is cut at multiples of the piece size
 * (a power of two) of the lease's offsets, so that a piece never spans
 * two; pieces are dealt in order, one to each live rail in turn, in
 * rounds: a round gives each live rail at most per_rail pieces (what it
 * posts before any rail's are waited for). A rail that fails in a round
 * gives its pieces back (rmpc_rail_plan_redo): the next rounds deal them
 * first, to the rails still live.
 */
#ifndef RMPC_RAILS_H
#define RMPC_RAILS_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"

struct ibv_context;

#define RMPC_RAILS_MAX 4u        /* addresses of one node */
#define RMPC_RAIL_ROUND_MAX 16u  /* pieces one rail takes in a round */
#define RMPC_RAIL_REDO_MAX (RMPC_RAILS_MAX * RMPC_RAIL_ROUND_MAX)

/* One piece: lease offsets [off, off+len). */
struct rmpc_rail_piece {
	uint64_t off, len;
};

struct rmpc_rail_plan {
	uint64_t piece;  /* bytes of a piece, a power of two */
	uint64_t next;   /* the bytes not dealt yet: [next, end) ... */
	uint64_t end;
	unsigned nredo;  /* ... and these, given back by failed rails */
	struct rmpc_rail_piece redo[RMPC_RAIL_REDO_MAX];
	unsigned turn;   /* the rail the next piece is offered to first */
};

/* rmpc_rail_plan_init -- a plan for [off, off+len) in pieces of piece
 * bytes (a power of two), the first dealt to rail first. */
void rmpc_rail_plan_init(struct rmpc_rail_plan *p, uint64_t off,
			 uint64_t len, uint64_t piece, unsigned first);

/*
 * rmpc_rail_plan_deal -- one round: each rail i < nrails with live[i]
 * gets up to per_rail (<= RMPC_RAIL_ROUND_MAX) pieces into out[i],
 * count[i] of them (0 for the others); given-back pieces first, then
 * new ones in order, one to each live rail in turn. Returns how many
 * were dealt: 0 when nothing is left or no rail is live.
 */
unsigned rmpc_rail_plan_deal(struct rmpc_rail_plan *p, const bool *live,
			     unsigned nrails, unsigned per_rail,
			     struct rmpc_rail_piece out[][RMPC_RAIL_ROUND_MAX],
			     unsigned *count);

/* rmpc_rail_plan_redo -- n pieces a failed rail had: dealt again first.
 * Returns 0, or -1 when they do not fit (never with at most
 * RMPC_RAIL_REDO_MAX given back per round). */
int rmpc_rail_plan_redo(struct rmpc_rail_plan *p,
			const struct rmpc_rail_piece *pieces, unsigned n);

/* rmpc_rail_plan_done -- nothing left to deal. */
bool rmpc_rail_plan_done(const struct rmpc_rail_plan *p);

/*
 * rmpc_rail_pick -- the one rail of a small operation: among the live
 * rails (live[i], i < nrails), the first whose NUMA node (node[i], -1
 * unknown) is buf_node (>= 0: known); else the live rail at or after
 * *turn, which then moves past it (round-robin). -1 when none is live.
 */
int rmpc_rail_pick(const bool *live, const int *node, unsigned nrails,
		   int buf_node, unsigned *turn);

/* rmpc_rail_piece_size -- the piece size of a call: the largest power of
 * two at most stripe, limit (a rail's bounce buffer or message size) and
 * not 0. */
uint64_t rmpc_rail_piece_size(uint64_t stripe, uint64_t limit);

/* ---- the rail set (rails.c): state, events, figures ---------------- */

struct rmp_client;
struct rmp_rail_info;

/* One rail: a connection to one of the node's addresses. */
struct rmpc_rail {
	struct rmp_client *c; /* rail 0: the client itself; else its own */
	char addr[64];        /* as given */
	char dev[64];         /* device name, "" until connected */
	int node;             /* the device's NUMA node, -1 unknown */
	bool down;            /* failed; tried again after its backoff */
	bool port_down;       /* its port reported an error, no ACTIVE since */
	struct rmpc_backoff backoff;
	struct ibv_context *async_ctx; /* its device (events, port state) */
	uint8_t port_num;     /* its port there */
	uint64_t bytes_read, bytes_written, ops, failovers;
	char why[160];        /* why it is down, naming the local device
			       * (or none) and the address; "" while up */
};

struct rmpc_rail_set {
	unsigned n;          /* 2..RMPC_RAILS_MAX */
	uint16_t port;
	unsigned turn;       /* round-robin of small calls */
	uint64_t events_at_ms; /* async events last read */
	struct rmpc_rail r[RMPC_RAILS_MAX];
};

/* rmpc_rail_why -- set r's why (printf-like; the arguments may be r's). */
void rmpc_rail_why(struct rmpc_rail *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* rmpc_rail_down -- rail i failed (err, for the text): down, counted,
 * tried again after its backoff. */
void rmpc_rail_down(struct rmpc_rail_set *s, unsigned i);

/* rmpc_rails_events -- read the rails' devices' async events (at most
 * every few ms): a port error downs its rails, ACTIVE lets them be tried
 * again. */
void rmpc_rails_events(struct rmpc_rail_set *s);

/* rmpc_rail_watch -- rail i is connected on device ctx (NULL: not):
 * take its name, NUMA node and async events. */
void rmpc_rail_watch(struct rmpc_rail_set *s, unsigned i,
		     struct ibv_context *ctx);

/* rmpc_rail_info -- rail i's figures into out (size as the caller set). */
void rmpc_rail_info(const struct rmpc_rail *r, struct rmp_rail_info *out);

/* rmpc_buf_node -- the NUMA node of the page at p, -1 unknown. */
int rmpc_buf_node(const void *p);

#endif /* RMPC_RAILS_H */

/* SPDX-License-Identifier: MIT */
/*
 * io_rails.c -- rmp_read, rmp_write and the atomics of a client with
 * several rails (rails.h): a large call cut in pieces over the rails
 * that are up, a small one on one rail; the pieces of a rail that fails
 * done again on the others; a down rail tried again when its time came.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "chan.h"
#include "error.h"
#include "fault.h"
#include "io_int.h"
#include "lease.h"
#include "rails.h"
#include "rmpool.h"
#include "state.h"
#include "stripe.h"
#include "util.h"

/* A piece of a small call: larger than any lease, so it is one piece. */
#define RAILS_WHOLE (UINT64_C(1) << 62)

/* rails_live -- read the devices' events, try again each down rail
 * whose time came; live[i]: rail i is up. How many are. */
static unsigned rails_live(struct rmp_client *c, bool *live)
{
	struct rmpc_rail_set *s = c->rails;
	uint64_t now = rmp_now_ms();
	unsigned n = 0;

	rmpc_rails_events(s);
	for (unsigned i = 0; i < s->n; i++) {
		struct rmpc_rail *r = &s->r[i];

		if (r->down && rmpc_backoff_due(&r->backoff, now))
			(void)c->revive_rail(c, i);
		live[i] = !r->down;
		n += live[i];
	}
	return n;
}

/* one_rail -- use[]: only the rail a small call on local takes. The
 * buffer's node is asked (a system call) only when the rails' devices
 * are on different known nodes: else it could not choose. */
static void one_rail(struct rmp_client *c, const bool *live, const void *local,
		     bool *use)
{
	struct rmpc_rail_set *s = c->rails;
	int node[RMPC_RAILS_MAX], r;
	bool apart = false;

	for (unsigned i = 0; i < s->n; i++) {
		node[i] = s->r[i].node;
		use[i] = false;
		apart |= node[i] >= 0 && node[i] != node[0];
	}
	r = rmpc_rail_pick(live, node, s->n,
			   apart && local ? rmpc_buf_node(local) : -1,
			   &s->turn);
	if (r >= 0)
		use[r] = true;
}

/* A round of a call: the pieces dealt, each a leg of its own on its
 * rail's handle of the lease; of[k]: the call's leg it is a piece of,
 * rail[k]: its rail (WHOLE: the call's leg itself, on no rails). */
#define WHOLE UINT32_MAX
struct round {
	struct rmpc_leg legs[RMPC_LEGS_MAX];
	unsigned of[RMPC_LEGS_MAX];
	unsigned rail[RMPC_LEGS_MAX];
	struct rmpc_rail_piece piece[RMPC_LEGS_MAX];
	unsigned n;
};

/* How each leg of a call goes: over its client's rails, or whole. */
struct call {
	struct rmpc_leg *legs;
	unsigned n;
	struct rmpc_rail_plan *plans; /* n: the rails' legs' plans */
	bool railed[RMPC_LEGS_MAX];   /* dealt over rails (else whole) */
	bool wide[RMPC_LEGS_MAX];     /* cut over every live rail */
	bool done[RMPC_LEGS_MAX];
	int last[RMPC_LEGS_MAX];      /* its last rail failure */
	int rail[RMPC_LEGS_MAX];      /* the rail a small leg took last
				       * (-1: none yet) */
};

/* piece_leg -- piece p of leg g as a leg of its own on handle h: its
 * local bytes where g has them (g's units and gaps kept). */
static struct rmpc_leg piece_leg(const struct rmpc_leg *g,
				 struct rmp_lease *h,
				 const struct rmpc_rail_piece *p)
{
	return (struct rmpc_leg){
		.l = h, .off = p->off, .len = p->len,
		.local = g->local + rmpc_stripe_at(g->off, g->unit, g->gap,
						   p->off - g->off),
		.unit = g->unit, .gap = g->gap,
	};
}

/*
 * round_legs -- leg i's pieces dealt (out, count) onto rd, each on its
 * rail's handle of the lease (attached there when first used). A rail
 * whose handle cannot be had for its connection's sake is down and
 * gives its pieces back; another error (the lease's) is returned, and
 * none of leg i's pieces stay on rd.
 */
static int round_legs(struct call *cl, unsigned i,
		      struct rmpc_rail_piece out[][RMPC_RAIL_ROUND_MAX],
		      const unsigned *count, struct round *rd)
{
	const struct rmpc_leg *g = &cl->legs[i];
	struct rmpc_rail_set *s = g->l->c->rails;
	unsigned before = rd->n;
	struct rmp_lease *h;
	int err;

	for (unsigned r = 0; r < s->n; r++) {
		if (!count[r])
			continue;
		err = rmpc_lease_on_rail(g->l, s->r[r].c, r, &h);
		if (err && rmpc_fault_of(err) == RMPC_FAULT_TRANSIENT) {
			rmpc_rail_down(s, r);
			rmpc_rail_plan_redo(&cl->plans[i], out[r], count[r]);
			continue;
		}
		if (err) {
			rd->n = before;
			return err;
		}
		for (unsigned k = 0; k < count[r]; k++) {
			rd->legs[rd->n] = piece_leg(g, h, &out[r][k]);
			rd->of[rd->n] = i;
			rd->rail[rd->n] = r;
			rd->piece[rd->n++] = out[r][k];
		}
	}
	return 0;
}

/* round_done -- count what each piece moved; a piece whose rail failed
 * downs it and goes back to its leg's plan; any other error ends its
 * leg (the text brought to the leg's client). A whole leg is done. */
static void round_done(struct call *cl, struct round *rd, bool write)
{
	for (unsigned k = 0; k < rd->n; k++) {
		unsigned i = rd->of[k];
		struct rmp_client *c = cl->legs[i].l->c;
		struct rmpc_rail *r;
		int err = rd->legs[k].err;

		if (rd->rail[k] == WHOLE) {
			cl->legs[i].err = err;
			cl->done[i] = true;
			continue;
		}
		r = &c->rails->r[rd->rail[k]];
		if (!err) {
			*(write ? &r->bytes_written : &r->bytes_read) +=
				rd->legs[k].len;
			r->ops++;
		} else if (rmpc_fault_of(err) == RMPC_FAULT_TRANSIENT) {
			rmpc_rail_down(c->rails, rd->rail[k]);
			rmpc_rail_plan_redo(&cl->plans[i], &rd->piece[k], 1);
			cl->last[i] = err;
		} else if (!cl->done[i]) {
			cl->legs[i].err = err;
			cl->done[i] = true;
			/* the text is the rail's client's: bring it here */
			if (r->c != c)
				rmpc_set_error(c, "%s", r->c->errbuf);
		}
	}
}

/* all_down -- every rail is down: the leg fails with the last rail
 * failure. */
static int all_down(struct rmp_client *c, int last)
{
	rmpc_set_error(c, "every rail to the node is down (last: %s)",
		       rmpc_errno_text(last));
	return last;
}

/* call_start -- each leg whose client has rails planned over them (its
 * arguments checked first); the rest go whole. */
static void call_start(struct call *cl, bool write)
{
	for (unsigned i = 0; i < cl->n; i++) {
		struct rmpc_leg *g = &cl->legs[i];
		struct rmp_client *c = g->l->c;
		uint64_t stripe = c->opts.rail_stripe;

		g->err = 0;
		cl->done[i] = false;
		cl->last[i] = -ENOTCONN;
		cl->rail[i] = -1;
		cl->railed[i] = c->rails && g->len && g->local;
		if (!cl->railed[i])
			continue;
		rmpc_clear_error(c);
		g->err = rmpc_lease_args(g->l, g->off, g->len,
					 write ? RMP_ACC_WRITE : RMP_ACC_READ);
		if (g->err) {
			cl->done[i] = true;
			continue;
		}
		cl->wide[i] = g->len >= 2 * stripe && !g->after_prev;
		rmpc_rail_plan_init(&cl->plans[i], g->off, g->len,
				    cl->wide[i] ? stripe : RAILS_WHOLE,
				    c->rails->turn);
	}
}

/* follow -- use[]: the rail leg i - 1 took, when leg i goes after it
 * (after_prev, the same lease) and that rail is live; else false. */
static bool follow(const struct call *cl, unsigned i, const bool *live,
		   bool *use)
{
	int r = i ? cl->rail[i - 1] : -1;

	if (!cl->legs[i].after_prev || r < 0 || !live[r] ||
	    cl->legs[i - 1].l != cl->legs[i].l)
		return false;
	memset(use, 0, RMPC_RAILS_MAX * sizeof(*use));
	use[r] = true;
	return true;
}

/*
 * deal_leg -- leg i's next pieces onto rd, per_rail to each rail it
 * uses (every live one when wide, else the one a small call takes).
 * Its plan done: the leg is done. Every rail down: the leg fails.
 */
static void deal_leg(struct call *cl, unsigned i, unsigned per_rail,
		     struct round *rd)
{
	struct rmpc_leg *g = &cl->legs[i];
	struct rmp_client *c = g->l->c;
	struct rmpc_rail_set *s = c->rails;
	struct rmpc_rail_piece out[RMPC_RAILS_MAX][RMPC_RAIL_ROUND_MAX];
	bool live[RMPC_RAILS_MAX], use[RMPC_RAILS_MAX];
	unsigned count[RMPC_RAILS_MAX];
	int err;

	if (rmpc_rail_plan_done(&cl->plans[i])) {
		if (cl->wide[i])
			s->turn = (s->turn + 1) % s->n;
		cl->done[i] = true;
		return;
	}
	if (!rails_live(c, live)) {
		g->err = all_down(c, cl->last[i]);
		cl->done[i] = true;
		return;
	}
	if (cl->wide[i])
		memcpy(use, live, sizeof(use));
	else if (!follow(cl, i, live, use))
		one_rail(c, live, g->local, use);
	for (unsigned r = 0; !cl->wide[i] && r < s->n; r++)
		if (use[r])
			cl->rail[i] = (int)r;
	if (!rmpc_rail_plan_deal(&cl->plans[i], use, s->n, per_rail, out,
				 count)) {
		g->err = all_down(c, cl->last[i]);
		cl->done[i] = true;
		return;
	}
	err = round_legs(cl, i, out, count, rd);
	if (err) {
		g->err = err;
		cl->done[i] = true;
	}
}

/* rails_of -- how many pieces a round gives leg i at most: one per
 * rail of its client (one when small), one for a whole leg. */
static unsigned rails_of(const struct call *cl, unsigned i)
{
	if (!cl->railed[i])
		return 1;
	return cl->wide[i] ? cl->legs[i].l->c->rails->n : 1;
}

int rmpc_rails_legs(struct rmpc_leg *legs, unsigned n, bool write,
		    struct rmpc_rail_plan *plans)
{
	struct call cl = { .legs = legs, .n = n, .plans = plans };
	struct round rd;
	int first = 0;

	if (!n || n > RMPC_LEGS_MAX) {
		for (unsigned i = 0; i < RMP_MIN(n, RMPC_LEGS_MAX); i++)
			legs[i].err = -EINVAL;
		return -EINVAL;
	}
	call_start(&cl, write);
	for (;;) {
		unsigned want = 0, per_rail;

		/* the room of a round shared by the legs still going */
		for (unsigned i = 0; i < n; i++)
			want += cl.done[i] ? 0 : rails_of(&cl, i);
		if (!want)
			break;
		per_rail = RMP_MAX(1u, RMPC_LEGS_MAX / want);
		rd.n = 0;
		for (unsigned i = 0; i < n; i++) {
			if (cl.done[i])
				continue;
			if (rd.n + rails_of(&cl, i) * per_rail > RMPC_LEGS_MAX)
				break; /* the next round takes it */
			if (!cl.railed[i]) {
				rd.legs[rd.n] = legs[i];
				rd.of[rd.n] = i;
				rd.rail[rd.n++] = WHOLE;
				continue;
			}
			deal_leg(&cl, i, per_rail, &rd);
		}
		if (rd.n)
			(void)rmpc_rw(rd.legs, rd.n, write);
		round_done(&cl, &rd, write);
	}
	for (unsigned i = 0; i < n; i++)
		first = first ? first : legs[i].err;
	return first;
}

int rmpc_rails_rw(struct rmp_lease *l, uint64_t off, char *local,
		  size_t len, bool write)
{
	struct rmpc_leg leg = { .l = l, .off = off, .len = len,
				.local = local };
	struct rmpc_rail_plan plan;

	rmpc_clear_error(l->c);
	return rmpc_rails_legs(&leg, 1, write, &plan);
}

struct rmp_lease *rmpc_rails_pick(struct rmp_lease *l, const void *local,
				  uint64_t len)
{
	struct rmp_client *c = l->c;
	bool live[RMPC_RAILS_MAX], use[RMPC_RAILS_MAX];
	struct rmp_lease *h;
	unsigned r;

	if (!c->rails)
		return l;
	if (len >= 2 * c->opts.rail_stripe || !rails_live(c, live))
		return NULL;
	one_rail(c, live, local, use);
	for (r = 0; r < c->rails->n && !use[r]; r++)
		;
	if (r == c->rails->n ||
	    rmpc_lease_on_rail(l, c->rails->r[r].c, r, &h))
		return NULL;
	return h;
}

int rmpc_rails_atomic(struct rmp_lease *l, uint64_t off,
		      enum ibv_wr_opcode opcode, uint64_t compare_add,
		      uint64_t swap, uint64_t *old)
{
	struct rmp_client *c = l->c;
	struct rmpc_rail_set *s = c->rails;
	bool live[RMPC_RAILS_MAX], use[RMPC_RAILS_MAX];
	struct rmp_lease *h;
	int err = -ENOTCONN;
	unsigned r;

	/* Tried on another rail only while nothing was posted: an atomic
	 * that failed in flight may have been carried out. */
	while (rails_live(c, live)) {
		one_rail(c, live, old, use);
		for (r = 0; !use[r]; r++)
			;
		err = rmpc_lease_on_rail(l, s->r[r].c, r, &h);
		if (!err)
			err = rmpc_check_conn(s->r[r].c);
		if (err && rmpc_fault_of(err) == RMPC_FAULT_TRANSIENT) {
			rmpc_rail_down(s, r);
			continue;
		}
		if (!err)
			err = rmpc_atomic_one(h, off, opcode, compare_add,
					      swap, old);
		if (!err)
			s->r[r].ops++;
		else if (rmpc_fault_of(err) == RMPC_FAULT_TRANSIENT)
			rmpc_rail_down(s, r);
		if (err && s->r[r].c != c)
			rmpc_set_error(c, "%s", s->r[r].c->errbuf);
		return err;
	}
	return all_down(c, err);
}

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
#include "io_int.h"
#include "lease.h"
#include "rails.h"
#include "rmpool.h"
#include "state.h"
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

/* A round of a call: the legs dealt, and the rail of each. */
struct round {
	struct rmpc_leg legs[RMPC_LEGS_MAX];
	unsigned rail[RMPC_LEGS_MAX];
	struct rmpc_rail_piece piece[RMPC_LEGS_MAX];
	unsigned n;
};

/*
 * round_legs -- the legs of the pieces dealt (out, count): each on its
 * rail's handle of l (attached there when first used). A rail whose
 * handle cannot be had for its connection's sake is down and gives its
 * pieces back; another error (the lease's) is returned.
 */
static int round_legs(struct rmp_lease *l, uint64_t off, char *local,
		      struct rmpc_rail_piece out[][RMPC_RAIL_ROUND_MAX],
		      const unsigned *count, struct rmpc_rail_plan *plan,
		      struct round *rd)
{
	struct rmpc_rail_set *s = l->c->rails;
	struct rmp_lease *h;
	int err;

	rd->n = 0;
	for (unsigned r = 0; r < s->n; r++) {
		if (!count[r])
			continue;
		err = rmpc_lease_on_rail(l, s->r[r].c, r, &h);
		if (err && rmpc_rail_failure(err)) {
			rmpc_rail_down(s, r);
			rmpc_rail_plan_redo(plan, out[r], count[r]);
			continue;
		}
		if (err)
			return err;
		for (unsigned k = 0; k < count[r]; k++) {
			const struct rmpc_rail_piece *p = &out[r][k];

			rd->legs[rd->n] = (struct rmpc_leg){
				.l = h, .off = p->off, .len = p->len,
				.local = local + (p->off - off),
			};
			rd->rail[rd->n] = r;
			rd->piece[rd->n++] = *p;
		}
	}
	return 0;
}

/* round_done -- count what each leg moved; a leg whose rail failed
 * downs it and gives its piece back. The first error that is not a
 * rail's, or 0; *last: the last rail failure. */
static int round_done(struct rmp_client *c, struct round *rd, bool write,
		      struct rmpc_rail_plan *plan, int *last)
{
	struct rmpc_rail_set *s = c->rails;
	int hard = 0;

	for (unsigned i = 0; i < rd->n; i++) {
		struct rmpc_rail *r = &s->r[rd->rail[i]];
		int err = rd->legs[i].err;

		if (!err) {
			*(write ? &r->bytes_written : &r->bytes_read) +=
				rd->legs[i].len;
			r->ops++;
		} else if (rmpc_rail_failure(err)) {
			rmpc_rail_down(s, rd->rail[i]);
			rmpc_rail_plan_redo(plan, &rd->piece[i], 1);
			*last = err;
		} else if (!hard) {
			hard = err;
			/* the text is the rail's client's: bring it here */
			if (r->c != c)
				rmpc_set_error(c, "%s", r->c->errbuf);
		}
	}
	return hard;
}

/* all_down -- every rail is down: the call fails with the last rail
 * failure. */
static int all_down(struct rmp_client *c, int last)
{
	rmpc_set_error(c, "every rail to the node is down (last: %s)",
		       rmpc_errno_text(last));
	return last;
}

int rmpc_rails_rw(struct rmp_lease *l, uint64_t off, char *local,
		  size_t len, bool write)
{
	struct rmp_client *c = l->c;
	struct rmpc_rail_set *s = c->rails;
	struct rmpc_rail_piece out[RMPC_RAILS_MAX][RMPC_RAIL_ROUND_MAX];
	bool live[RMPC_RAILS_MAX], use[RMPC_RAILS_MAX];
	unsigned count[RMPC_RAILS_MAX];
	bool wide = len >= 2 * c->opts.rail_stripe;
	struct rmpc_rail_plan plan;
	struct round rd;
	int err, last = -ENOTCONN;

	rmpc_clear_error(c);
	err = rmpc_lease_args(l, off, len, write ? RMP_ACC_WRITE :
						   RMP_ACC_READ);
	if (err || !len || !local) {
		struct rmpc_leg leg = { .l = l, .off = off, .len = len,
					.local = local };

		return err ? err : rmpc_rw(&leg, 1, write);
	}
	rmpc_rail_plan_init(&plan, off, len,
			    wide ? c->opts.rail_stripe : RAILS_WHOLE, s->turn);
	while (!rmpc_rail_plan_done(&plan)) {
		if (!rails_live(c, live))
			return all_down(c, last);
		if (wide)
			memcpy(use, live, sizeof(use));
		else
			one_rail(c, live, local, use);
		if (!rmpc_rail_plan_deal(&plan, use, s->n,
					 RMPC_LEGS_MAX / s->n, out, count))
			return all_down(c, last);
		err = round_legs(l, off, local, out, count, &plan, &rd);
		if (err)
			return err;
		if (!rd.n)
			continue;
		(void)rmpc_rw(rd.legs, rd.n, write);
		err = round_done(c, &rd, write, &plan, &last);
		if (err)
			return err;
	}
	if (wide)
		s->turn = (s->turn + 1) % s->n;
	return 0;
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
		if (err && rmpc_rail_failure(err)) {
			rmpc_rail_down(s, r);
			continue;
		}
		if (!err)
			err = rmpc_atomic_one(h, off, opcode, compare_add,
					      swap, old);
		if (!err)
			s->r[r].ops++;
		else if (rmpc_rail_failure(err))
			rmpc_rail_down(s, r);
		if (err && s->r[r].c != c)
			rmpc_set_error(c, "%s", s->r[r].c->errbuf);
		return err;
	}
	return all_down(c, err);
}

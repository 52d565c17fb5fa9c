/* SPDX-License-Identifier: MIT */
/*
 * cluster_alloc.c -- placing a lease: the caller's policy read, the
 * nodes ordered (cluster_place.c), each asked in turn until one grants
 * it; a mirrored lease is that for each replica, on nodes apart (on
 * distinct values of a label, when asked); a striped one that for each
 * stripe in turn (the next ordered anew, after what the last took);
 * made one handle at the end.
 */
#include "cluster_int.h"
#include "ec_layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "fault.h"
#include "opts.h"
#include "util.h"

void rmp_cluster_alloc_opts_init(struct rmp_cluster_alloc_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->access = RMP_ACCESS_ALL;
}

/* Most node names opts->exclude takes. */
#define EXCLUDE_MAX 64

/* A striped lease's unit: the default and the bounds. */
#define UNIT_DEFAULT (UINT64_C(1) << 20)
#define UNIT_MIN (UINT64_C(1) << 12)
#define UNIT_MAX (UINT64_C(1) << 30)

/* skip -- a node refusing with err is skipped for the next one; not
 * when the options are wrong (-EINVAL) or this client is (LOCAL): no
 * other node does better. */
static bool skip(int err)
{
	return err != -EINVAL && rmpc_fault_of(err) != RMPC_FAULT_LOCAL;
}

/* split_names -- the names of list (commas or blanks between) into
 * names, copied into buf. -EINVAL when more than EXCLUDE_MAX. */
static int split_names(const char *list, char *buf, size_t cap,
		       const char **names, unsigned *n)
{
	char *s, *save = NULL;

	*n = 0;
	if (!list)
		return 0;
	if (rmp_strlcpy(buf, list, cap))
		return -EINVAL;
	for (s = strtok_r(buf, ", \t", &save); s;
	     s = strtok_r(NULL, ", \t", &save)) {
		if (*n == EXCLUDE_MAX)
			return -EINVAL;
		names[(*n)++] = s;
	}
	return 0;
}

/* What one placement asks and has found so far. */
struct placing {
	uint64_t length;                 /* of each member */
	const struct rmp_alloc_opts *ao;
	const char *spread;              /* label, or NULL */
	unsigned want;                   /* replicas (of each stripe); of
					  * an erasure-coded lease, k + m */
	unsigned ec_data;                /* k; 0: not erasure coded */
	unsigned stripes;                /* 1: not striped */
	uint64_t unit, total;            /* a striped lease's unit, length */
	struct rmp_lease *all[RMPC_MEMBERS_MAX];
	unsigned nall;                   /* the stripes placed, in order */
	/* the stripe being placed (or an erasure-coded lease's members,
	 * all apart): */
	struct rmp_lease *got[RMPC_EC_N_MAX];
	unsigned nodes[RMPC_EC_N_MAX]; /* their node indexes */
	unsigned ngot;
	char said[CL_ERRBUF];            /* what each refusing node said */
	size_t used;
	int first;                       /* the first refusal */
};

/* apart -- node idx may hold the next replica: not one of those chosen,
 * nor on a spread value one of them has. */
static bool apart(struct rmp_cluster *cl, const struct placing *pl,
		  unsigned idx)
{
	const char *v = pl->spread ?
		rmp_member_label(&cl->nodes[idx].m, pl->spread) : NULL;

	for (unsigned i = 0; i < pl->ngot; i++) {
		const char *w;

		if (pl->nodes[i] == idx)
			return false;
		if (!pl->spread)
			continue;
		w = rmp_member_label(&cl->nodes[pl->nodes[i]].m, pl->spread);
		/* no label is a value of its own too */
		if ((!v && !w) || (v && w && !strcmp(v, w)))
			return false;
	}
	return true;
}

/* ask -- node idx for the lease: 0 (pl->got grows) or its refusal,
 * noted in pl->said. */
static int ask(struct rmp_cluster *cl, struct placing *pl, unsigned idx)
{
	struct cl_node *n = &cl->nodes[idx];
	int ret;
	struct cl_conn *k = cl_node_conn(cl, n, &ret);
	struct rmp_alloc_opts ao = *pl->ao;
	struct rmp_lease *l = NULL;

	/* The node was chosen by the free bytes of all its devices' pools:
	 * the lease may go to any of them. (Only a node that lists its
	 * devices knows the flag.) */
	if (n->m.ndevices > 1)
		ao.flags |= RMP_LEASE_SPILL;
	if (k)
		ret = rmp_lease_alloc(k->c, pl->length, &ao, &l);

	if (k && rmpc_fault_reconnects(ret)) {
		/* a connection that broke since its last use: once more on
		 * a new one */
		k->up = false;
		ret = cl_conn_up(cl, k);
		if (!ret)
			ret = rmp_lease_alloc(k->c, pl->length, &ao, &l);
	}
	if (!ret) {
		n->taken += pl->length;
		pl->nodes[pl->ngot] = idx;
		pl->got[pl->ngot++] = l;
		return 0;
	}
	if (k && rmpc_fault_reconnects(ret))
		k->up = false;
	pl->used += (size_t)snprintf(pl->said + pl->used,
				     sizeof(pl->said) - pl->used, "%s%s: %s",
				     pl->used ? "; " : "", n->m.node,
				     k ? rmp_strerror(ret) : cl->err);
	pl->used = RMP_MIN(pl->used, sizeof(pl->said) - 1);
	pl->first = pl->first ? pl->first : ret;
	return ret;
}

/* in -- idx is one of list[0..n). */
static bool in(const unsigned *list, unsigned n, unsigned idx)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i] == idx)
			return true;
	return false;
}

/* ask_nodes -- the nodes of order[0..k) but those of skip_list[0..nskip)
 * in turn until pl has its replicas; false when one refused for a reason
 * every node would give (the tenant's, the arguments'). */
static bool ask_nodes(struct rmp_cluster *cl, const unsigned *order,
		      unsigned k, const unsigned *skip_list, unsigned nskip,
		      struct placing *pl)
{
	for (unsigned i = 0; i < k && pl->ngot < pl->want; i++) {
		int ret;

		if (!apart(cl, pl, order[i]) ||
		    in(skip_list, nskip, order[i]))
			continue;
		ret = ask(cl, pl, order[i]);
		if (ret && !skip(ret))
			return false;
	}
	return true;
}

/* placed -- 0 when pl has its replicas; else the first refusal (or
 * -ENOSPC: not enough nodes apart) with what each said in cl->err, the
 * replicas made since pl had `had` freed. */
static int placed(struct rmp_cluster *cl, struct placing *pl, unsigned had)
{
	if (pl->ngot == pl->want)
		return 0;
	while (pl->ngot > had)
		rmp_lease_free(pl->got[--pl->ngot]);
	if (!pl->first) {
		cl_say(cl, "fewer than %u nodes %s%s can take %" PRIu64
		       " bytes", pl->want, pl->spread ? "on distinct values "
		       "of " : "apart", pl->spread ? pl->spread : "",
		       pl->length);
		return -ENOSPC;
	}
	cl_say(cl, "no node granted %" PRIu64 " bytes: %s", pl->length,
	       pl->said);
	return pl->first;
}

/* Room for what read_policy takes out of the caller's options. */
struct policy_text {
	const char *exclude[EXCLUDE_MAX];
	char prefer[2 * RMP_CLUSTER_LABEL_LEN], names[1024];
};

/* read_policy -- o's prefer and exclude into p (their text in t). */
static int read_policy(struct rmp_cluster *cl,
		       const struct rmp_cluster_alloc_opts *o,
		       struct cl_policy *p, struct policy_text *t)
{
	char *eq;

	p->exclude = t->exclude;
	if (o->prefer) {
		if (rmp_strlcpy(t->prefer, o->prefer, sizeof(t->prefer)) ||
		    !(eq = strchr(t->prefer, '=')) || eq == t->prefer ||
		    !eq[1]) {
			cl_say(cl, "prefer: not LABEL=VALUE");
			return -EINVAL;
		}
		*eq = '\0';
		p->prefer_label = t->prefer;
		p->prefer_value = eq + 1;
	}
	if (split_names(o->exclude, t->names, sizeof(t->names), t->exclude,
			&p->nexclude)) {
		cl_say(cl, "exclude: more than %d names or longer than %zu "
		       "bytes", EXCLUDE_MAX, sizeof(t->names) - 1);
		return -EINVAL;
	}
	if (o->replicas > RMPC_REPLICAS_MAX ||
	    (o->spread && !rmp_lrec_spread_ok(o->spread))) {
		cl_say(cl, "replicas: 1 to %u (0: 1); spread: a label name",
		       RMPC_REPLICAS_MAX);
		return -EINVAL;
	}
	if ((o->ec_data || o->ec_parity) &&
	    (o->ec_data < RMPC_EC_K_MIN || o->ec_data > RMPC_EC_K_MAX ||
	     o->ec_parity < RMPC_EC_M_MIN || o->ec_parity > RMPC_EC_M_MAX ||
	     o->replicas > 1 || o->stripes > 1 ||
	     (o->ec_chunk && (o->ec_chunk & (o->ec_chunk - 1) ||
			      o->ec_chunk < RMPC_EC_CHUNK_MIN ||
			      o->ec_chunk > RMPC_EC_CHUNK_MAX)))) {
		cl_say(cl, "ec: %u to %u data and %u to %u parity members, "
		       "not with replicas or stripes; ec_chunk: a power of "
		       "two from 4 KiB to 1 MiB (0: 4 KiB)", RMPC_EC_K_MIN,
		       RMPC_EC_K_MAX, RMPC_EC_M_MIN, RMPC_EC_M_MAX);
		return -EINVAL;
	}
	if (o->stripes > RMPC_STRIPES_MAX ||
	    (o->stripe_unit && (o->stripe_unit & (o->stripe_unit - 1) ||
				o->stripe_unit < UNIT_MIN ||
				o->stripe_unit > UNIT_MAX))) {
		cl_say(cl, "stripes: 1 to %u (0: 1); stripe_unit: a power of "
		       "two from 4 KiB to 1 GiB (0: 1 MiB)", RMPC_STRIPES_MAX);
		return -EINVAL;
	}
	return 0;
}

/* stripe_length -- the bytes of each member of a lease of length bytes
 * in stripes of unit: whole units, as many as the first stripe has. */
static uint64_t stripe_length(uint64_t length, unsigned stripes,
			      uint64_t unit)
{
	uint64_t units = length / unit + (length % unit != 0);

	if (stripes == 1)
		return length;
	return (units / stripes + (units % stripes != 0)) * unit;
}

/* second_look -- pl still lacks replicas after the nodes of
 * order[0..k) the view admits: the nodes it says are short asked too,
 * into order[n..) (a free may not be in their records yet). What they
 * say is kept only when it completes pl: a failure says what the view
 * said. -ENOMEM, else 0. */
static int second_look(struct rmp_cluster *cl, struct cl_policy *p,
		       struct placing *pl, unsigned *order, unsigned k,
		       unsigned n)
{
	int first = pl->first, k2;
	size_t used = pl->used;
	char said[sizeof(pl->said)];

	memcpy(said, pl->said, sizeof(said));
	p->any_room = true;
	k2 = cl_place(cl->nodes, cl->nnodes, p, order + n);
	p->any_room = false;
	if (k2 > 0)
		ask_nodes(cl, order + n, (unsigned)k2, order, k, pl);
	if (pl->ngot < pl->want) {
		pl->first = first;
		pl->used = used;
		memcpy(pl->said, said, sizeof(said));
	}
	return k2 < 0 ? -ENOMEM : 0;
}

/* place_more -- pl's replicas past those it has (pl->ngot), on the
 * nodes in p's order: 0 or the error, said in cl->err. The free bytes
 * of the view are a node's record, rewritten within a second of a move
 * (a free, the zeroing behind it): before it fails for want of room, a
 * placement asks the nodes the view says are short too. */
static int place_more(struct rmp_cluster *cl, struct cl_policy *p,
		      struct placing *pl)
{
	unsigned n = cl->nnodes ? cl->nnodes : 1, had = pl->ngot;
	unsigned *order = malloc(2 * n * sizeof(*order));
	int k, ret = 0;

	if (!order) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	p->now_ms = rmp_now_ms();
	/* a new order among equals for each placing, with no system call
	 * (a random draw was one getrandom per ALLOC) */
	p->seed = cl_mix32(cl->seed_base ^ cl_mix32(++cl->placings));
	p->any_room = false;
	k = cl_place(cl->nodes, cl->nnodes, p, order);
	if (k >= 0 && ask_nodes(cl, order, (unsigned)k, NULL, 0, pl) &&
	    pl->ngot < pl->want && (!pl->first || pl->first == -ENOSPC))
		ret = second_look(cl, p, pl, order, (unsigned)k, n);
	if (k < 0 || ret) {
		while (pl->ngot > had) /* what the first pass made */
			rmp_lease_free(pl->got[--pl->ngot]);
		cl_say(cl, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = placed(cl, pl, had);
		if (ret && !k) { /* the view admitted none */
			cl_say(cl, "no node registered can take %" PRIu64
			       " bytes (%u known; full, draining, excluded, "
			       "or without that much in one extent)",
			       pl->length, cl->nnodes);
			ret = -ENOSPC;
		}
	}
	free(order);
	return ret;
}

/* place_stripe -- the replicas of one stripe on the nodes in p's
 * order (made anew: what the stripes before took counts): 0 (they are
 * in pl->got) or the error, said in cl->err. */
static int place_stripe(struct rmp_cluster *cl, struct cl_policy *p,
			struct placing *pl)
{
	pl->ngot = 0;
	pl->used = 0;
	pl->said[0] = '\0';
	pl->first = 0;
	return place_more(cl, p, pl);
}

/* place_all -- every stripe of pl in turn into pl->all; on a failure
 * the stripes made are freed and the error returned (which stripe
 * failed said in cl->err). */
static int place_all(struct rmp_cluster *cl, struct cl_policy *p,
		     struct placing *pl)
{
	for (unsigned s = 0; s < pl->stripes; s++) {
		int ret = place_stripe(cl, p, pl);

		if (ret) {
			char why[CL_ERRBUF];

			while (pl->nall)
				rmp_lease_free(pl->all[--pl->nall]);
			if (pl->stripes > 1) {
				memcpy(why, cl->err, sizeof(why));
				cl_say(cl, "stripe %u of %u: %s", s + 1,
				       pl->stripes, why);
			}
			return ret;
		}
		for (unsigned j = 0; j < pl->ngot; j++)
			pl->all[pl->nall++] = pl->got[j];
	}
	return 0;
}

/* place -- the lease of pl on the nodes in p's order; one handle. */
static int place(struct rmp_cluster *cl, struct cl_policy *p,
		 struct placing *pl, struct rmp_lease **out)
{
	uint64_t length = pl->total;
	int ret;

	ret = cl_members_current(cl);
	if (!ret)
		ret = place_all(cl, p, pl);
	if (ret || pl->nall == 1) {
		*out = ret ? NULL : pl->all[0];
		return ret;
	}
	if (pl->ec_data) {
		ret = rmpc_group_new_ec(pl->all, pl->ec_data,
					pl->want - pl->ec_data, pl->unit,
					pl->total, &cl->groups, out);
		goto made;
	}
	if (pl->stripes == 1) { /* mirrored: what every replica has */
		length = pl->all[0]->length;
		for (unsigned i = 1; i < pl->nall; i++)
			length = RMP_MIN(length, pl->all[i]->length);
	}
	ret = rmpc_group_new(pl->all, pl->stripes, pl->want, pl->unit, length,
			     &cl->groups, out);
made:
	if (ret) {
		cl_say(cl, "out of memory");
		for (unsigned i = 0; i < pl->nall; i++)
			rmp_lease_free(pl->all[i]);
		return -ENOMEM;
	}
	ret = cl_lease_publish(cl, *out, pl->spread);
	if (ret) {
		rmp_lease_free(*out);
		*out = NULL;
	}
	return ret;
}

int cl_alloc_apart(struct rmp_cluster *cl, uint64_t length,
		   const struct rmp_alloc_opts *ao, const char *spread,
		   const unsigned *avoid, unsigned navoid,
		   const char *exclude, struct rmp_lease **out)
{
	const char *ex[1] = { exclude };
	struct cl_policy p = { .length = length, .exclude = ex,
			       .nexclude = exclude ? 1 : 0 };
	struct placing pl = { .length = length, .ao = ao,
			      .spread = spread, .want = navoid + 1 };
	int ret;

	if (navoid >= RMPC_EC_N_MAX)
		return -EINVAL;
	/* the others count as placed already (nothing of theirs to free) */
	for (unsigned i = 0; i < navoid; i++)
		pl.nodes[pl.ngot++] = avoid[i];
	ret = cl_members_current(cl);
	if (!ret)
		ret = place_more(cl, &p, &pl);
	*out = ret ? NULL : pl.got[navoid];
	return ret;
}

int rmp_cluster_alloc(struct rmp_cluster *cl, uint64_t length,
		      const struct rmp_cluster_alloc_opts *opts,
		      struct rmp_lease **out)
{
	struct rmp_cluster_alloc_opts o;
	struct rmp_alloc_opts ao;
	struct policy_text t;
	struct cl_policy p = { .length = length };
	struct placing pl = { .length = length, .ao = &ao };
	int ret;

	if (!cl || !out || !length)
		return -EINVAL;
	rmp_cluster_alloc_opts_init(&o);
	if (opts && rmpc_opts_copy(&o, sizeof(o), opts, opts->size)) {
		cl_say(cl, "options of a size this library does not know");
		return -EINVAL;
	}
	ret = read_policy(cl, &o, &p, &t);
	if (ret)
		return ret;
	rmp_alloc_opts_init(&ao);
	ao.alignment = o.alignment;
	ao.ttl_s = o.ttl_s;
	ao.access = o.access;
	ao.flags = o.flags;
	pl.want = o.replicas ? o.replicas : 1;
	pl.spread = o.spread;
	pl.stripes = o.stripes ? o.stripes : 1;
	pl.unit = o.stripe_unit ? o.stripe_unit : UNIT_DEFAULT;
	pl.total = length;
	pl.length = p.length = stripe_length(length, pl.stripes, pl.unit);
	if (o.ec_data) { /* k + m members apart, each of a member's size */
		struct rmpc_ec_layout lo;

		pl.ec_data = o.ec_data;
		pl.want = o.ec_data + o.ec_parity;
		pl.unit = o.ec_chunk ? o.ec_chunk : RMPC_EC_CHUNK_DEFAULT;
		if (rmpc_ec_layout_init(&lo, o.ec_data, o.ec_parity, pl.unit,
					length))
			return -EINVAL;
		pl.length = p.length = rmpc_ec_member_size(&lo);
	}
	if ((pl.want > 1 || o.stripes > 1) &&
	    (o.flags & (RMP_LEASE_AUTO_RENEW | RMP_LEASE_EPHEMERAL))) {
		/* auto-renew: the servers would renew the members, not the
		 * record; ephemeral: a repair's fence would take it over,
		 * and end it when it closes */
		cl_say(cl, "a mirrored or striped lease is neither "
		       "auto-renewed nor ephemeral: renew it, free it");
		return -EINVAL;
	}
	return place(cl, &p, &pl, out);
}

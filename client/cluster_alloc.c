/* SPDX-License-Identifier: MIT */
/*
 * cluster_alloc.c -- placing a lease: the caller's policy read, the
 * nodes ordered (cluster_place.c), each asked in turn until one grants
 * it; a mirrored lease is that for each replica, on nodes apart (on
 * distinct values of a label, when asked), made one handle at the end.
 */
#include "cluster_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "opts.h"
#include "util.h"

/* Most node names opts->exclude takes. */
#define EXCLUDE_MAX 64

/* skip -- a node refusing with err is skipped for the next one. */
static bool skip(int err)
{
	return err != -EKEYREJECTED && err != -EINVAL && err != -ENOMEM &&
	       err != -EAFNOSUPPORT;
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
	uint64_t length;
	const struct rmp_alloc_opts *ao;
	const char *spread;              /* label, or NULL */
	unsigned want;                   /* replicas */
	struct rmp_lease *got[RMPC_REPLICAS_MAX];
	unsigned nodes[RMPC_REPLICAS_MAX]; /* their node indexes */
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
	struct rmp_lease *l = NULL;

	if (k)
		ret = rmp_lease_alloc(k->c, pl->length, pl->ao, &l);

	if (k && cl_conn_lost(ret)) {
		/* a connection that broke since its last use: once more on
		 * a new one */
		k->up = false;
		ret = cl_conn_up(cl, k);
		if (!ret)
			ret = rmp_lease_alloc(k->c, pl->length, pl->ao, &l);
	}
	if (!ret) {
		n->taken += pl->length;
		pl->nodes[pl->ngot] = idx;
		pl->got[pl->ngot++] = l;
		return 0;
	}
	if (k && cl_conn_lost(ret))
		k->up = false;
	pl->used += (size_t)snprintf(pl->said + pl->used,
				     sizeof(pl->said) - pl->used, "%s%s: %s",
				     pl->used ? "; " : "", n->m.node,
				     k ? rmp_strerror(ret) : cl->err);
	pl->used = RMP_MIN(pl->used, sizeof(pl->said) - 1);
	pl->first = pl->first ? pl->first : ret;
	return ret;
}

/* try_nodes -- the nodes of order[0..k) in turn until pl has its
 * replicas: 0, or the first refusal (or -ENOSPC: not enough nodes apart)
 * with what each said in cl->err, the replicas made freed. */
static int try_nodes(struct rmp_cluster *cl, const unsigned *order,
		     unsigned k, struct placing *pl)
{
	for (unsigned i = 0; i < k && pl->ngot < pl->want; i++) {
		int ret;

		if (!apart(cl, pl, order[i]))
			continue;
		ret = ask(cl, pl, order[i]);
		if (ret && !skip(ret))
			break;
	}
	if (pl->ngot == pl->want)
		return 0;
	while (pl->ngot)
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
	    (o->spread && !o->spread[0])) {
		cl_say(cl, "replicas: 1 to %u (0: 1); spread: a label name",
		       RMPC_REPLICAS_MAX);
		return -EINVAL;
	}
	return 0;
}

/* place -- the lease of pl on the nodes in p's order; one handle. */
static int place(struct rmp_cluster *cl, struct cl_policy *p,
		 struct placing *pl, struct rmp_lease **out)
{
	uint64_t length;
	unsigned *order;
	int k, ret;

	ret = cl_members_current(cl);
	if (ret)
		return ret;
	order = malloc((cl->nnodes ? cl->nnodes : 1) * sizeof(*order));
	if (!order) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	p->now_ms = rmp_now_ms();
	randombytes_buf(&p->seed, sizeof(p->seed));
	k = cl_place(cl->nodes, cl->nnodes, p, order);
	if (k < 0) {
		cl_say(cl, "out of memory");
		ret = -ENOMEM;
	} else if (!k) {
		cl_say(cl, "no node registered can take %" PRIu64 " bytes (%u "
		       "known; full, draining, excluded, or without that much "
		       "in one extent)", pl->length, cl->nnodes);
		ret = -ENOSPC;
	} else {
		ret = try_nodes(cl, order, (unsigned)k, pl);
	}
	free(order);
	if (ret || pl->want == 1) {
		*out = ret ? NULL : pl->got[0];
		return ret;
	}
	length = pl->got[0]->length; /* mirrored: what every replica has */
	for (unsigned i = 1; i < pl->ngot; i++)
		length = RMP_MIN(length, pl->got[i]->length);
	ret = rmpc_group_new(pl->got, 1, pl->ngot, UINT64_C(1) << 20, length,
			     &cl->groups, out);
	if (ret) {
		cl_say(cl, "out of memory");
		for (unsigned i = 0; i < pl->ngot; i++)
			rmp_lease_free(pl->got[i]);
		return -ENOMEM;
	}
	return 0;
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
	return place(cl, &p, &pl, out);
}

/* SPDX-License-Identifier: MIT */
/*
 * cluster.c -- the membership's state machine: an etcd lease, the node's
 * key under it, keep-alives, refreshes, outages and the way out. One
 * owner of its state (struct rmp_cluster), one function that changes it
 * (set_state), which logs each transition and publishes it to ops.
 */
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <event2/event.h>

#include "auth.h"
#include "cluster_int.h"
#include "config.h"
#include "etcd.h"
#include "log.h"
#include "ops.h"
#include "util.h"

/* The first wait after etcd failed; it doubles up to ttl/2, so that a
 * node registers again within its ttl once etcd is back. */
#define BACKOFF_MS 500
/* The longest wait while a keep-alive failed and the lease may still be
 * alive in etcd (also at most ttl/6): a partition shorter than what is
 * left of the ttl must not cost the lease for want of a try. */
#define LEASE_RETRY_MS 1000
/* How often a taken key is tried again and free bytes looked at. */
#define TICK_MS 1000
/* The value is rewritten when free bytes moved by more than 1/20 of the
 * pool (5 %); at least once a ttl the key is checked: a transaction that
 * holds only while the key is under our lease (and writes nothing then,
 * so that watchers get no event) finds a key deleted or written by
 * someone else; a keep-alive does not look. */
#define REFRESH_SHARE 20

enum cl_state {
	CL_GRANTING,   /* asking etcd for a new lease of ttl */
	CL_CREATING,   /* lease held: creating the key where nobody holds it */
	CL_TAKEN,      /* the key is another lease's: trying again each tick */
	CL_REGISTERED, /* the key is ours: keep-alives at ttl/3, refreshes */
	CL_RETRYING,   /* etcd failed: waiting (backoff) to try again */
	CL_CHECKING,   /* after the wait: the lease we had still alive, and
			* its key still ours? (etcd keeps leases over its own
			* restart) */
	CL_LEAVING,    /* stopping: revoking the lease */
	CL_LEFT,       /* stopped: lease revoked, or given up */
};

/* Each state's name for operators (status, metrics) and what a
 * transition's log line calls it. */
static const struct {
	const char *name, *words;
} states[] = {
	[CL_GRANTING] = { "registering", "granting a lease" },
	[CL_CREATING] = { "registering", "creating the key" },
	[CL_TAKEN] = { "name-taken", "name taken, waiting" },
	[CL_REGISTERED] = { "registered", "registered" },
	[CL_RETRYING] = { "etcd-unreachable", "waiting to retry etcd" },
	[CL_CHECKING] = { "etcd-unreachable", "checking the lease it had" },
	[CL_LEAVING] = { "leaving", "leaving" },
	[CL_LEFT] = { "left", "left" },
};

/* One request in flight: its reply counts only if no transition since
 * made it stale (epoch). */
struct call {
	TAILQ_ENTRY(call) link;
	struct rmp_cluster *cl;
	unsigned epoch;
	void (*done)(struct rmp_cluster *cl, const struct rmp_etcd_reply *r);
};

struct rmp_cluster {
	struct event_base *base;
	struct rmp_ops *ops;
	struct rmp_etcd *etcd;
	struct cl_identity id;
	char key[RMP_CONFIG_NAME_LEN * 2 + 8]; /* PREFIX nodes/ NODE */
	uint64_t ttl_ms;
	enum cl_state state;
	unsigned epoch;            /* bumped when replies in flight go stale */
	TAILQ_HEAD(, call) calls;
	bool op_busy, ka_busy;     /* a state request, a keep-alive in flight */
	int64_t lease;             /* etcd lease ID; 0: none */
	bool owned;                /* the key was ours under this lease */
	int64_t registered;        /* Unix seconds the key became ours */
	uint64_t published_free;   /* free bytes the value says */
	uint64_t written_ms;       /* when the key was last written or
				    * checked */
	uint64_t pool_bytes;
	uint64_t backoff_ms;
	bool outage;               /* etcd failing since outage_ms */
	uint64_t outage_ms;
	bool taken_logged;         /* "name taken" said for this wait */
	struct event *ka_ev, *tick_ev, *retry_ev;
};

/* publish -- what operators see (ops->cluster) from cl. */
static void publish(struct rmp_cluster *cl)
{
	struct rmp_cluster_status *s = &cl->ops->cluster;

	s->enabled = true;
	s->state = states[cl->state].name;
	s->registered = cl->state == CL_REGISTERED;
	snprintf(s->node, sizeof(s->node), "%s", cl->id.node);
}

/* set_state -- the one place cl->state changes; logs the transition. */
static void set_state(struct rmp_cluster *cl, enum cl_state to)
{
	/* an outage's retries go on quietly: it was said once */
	if (cl->state != to)
		rmp_log(cl->outage ? LOG_DEBUG : LOG_INFO, "cluster: %s -> %s",
			states[cl->state].words, states[to].words);
	cl->state = to;
	publish(cl);
}

static void on_reply(const struct rmp_etcd_reply *r, void *arg)
{
	struct call *c = arg;
	struct rmp_cluster *cl = c->cl;
	bool stale = c->epoch != cl->epoch;

	TAILQ_REMOVE(&cl->calls, c, link);
	if (!stale)
		c->done(cl, r);
	free(c);
}

/* call -- a request made by send; done gets its reply unless stale. */
static bool call(struct rmp_cluster *cl,
		 void (*done)(struct rmp_cluster *, const struct rmp_etcd_reply *),
		 struct call **out)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c)
		return false;
	c->cl = cl;
	c->epoch = cl->epoch;
	c->done = done;
	TAILQ_INSERT_TAIL(&cl->calls, c, link);
	*out = c;
	return true;
}

/* made -- the request of c was made (ret 0) or not: then c goes. */
static bool made(struct rmp_cluster *cl, struct call *c, int ret)
{
	if (!ret)
		return true;
	TAILQ_REMOVE(&cl->calls, c, link);
	free(c);
	return false;
}

static void etcd_failed(struct rmp_cluster *cl, int err, const char *what,
			bool keepalive);

/* note_error -- r failed: counted, kept for the status. */
static void note_error(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	struct rmp_cluster_status *s = &cl->ops->cluster;
	bool at = r->endpoint[0] && !strstr(r->error, r->endpoint);

	s->errors++;
	s->error_ms = rmp_now_ms();
	/* (cut to fit: the endpoint goes last) */
	if (snprintf(s->error, sizeof(s->error), "%s: %s%s%s",
		     rmp_etcd_op_name(r->op), r->error, at ? " at " : "",
		     at ? r->endpoint : "") < 0)
		s->error[0] = '\0';
}

/* outage_over -- the node got where etcd lets it (its key, or the
 * verdict that the name is taken): an outage, if one, is over, and the
 * backoff starts again from the first wait. Not at any answer: etcd
 * may answer one step and refuse the next (a user who may read the
 * prefix but not write it); that is one outage, its backoff growing. */
static void outage_over(struct rmp_cluster *cl)
{
	if (cl->outage)
		log_notice("cluster: etcd answers again after %" PRIu64 " s",
			   (rmp_now_ms() - cl->outage_ms + 500) / 1000);
	cl->outage = false;
	cl->backoff_ms = BACKOFF_MS;
}

static void lease_gone(struct rmp_cluster *cl);

/* failed -- r says etcd failed: noted, and the retry set up (true); or
 * that our lease is gone (any request under it: a keep-alive, or a
 * write of the key): registering again (true). Otherwise etcd answered
 * (false). */
static bool failed(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	if (r->err == -ENOENT && cl->lease) {
		lease_gone(cl);
		return true;
	}
	if (r->err) {
		note_error(cl, r);
		etcd_failed(cl, r->err, r->error,
			    r->op == RMP_ETCD_KEEPALIVE);
		return true;
	}
	return false;
}

/* ------------------------------------------------------ the steps */

static void on_grant(struct rmp_cluster *cl, const struct rmp_etcd_reply *r);
static void on_create(struct rmp_cluster *cl, const struct rmp_etcd_reply *r);

static void grant(struct rmp_cluster *cl)
{
	struct call *c;

	set_state(cl, CL_GRANTING);
	cl->op_busy = call(cl, on_grant, &c) &&
		      made(cl, c, rmp_etcd_grant(cl->etcd,
				 (int64_t)(cl->ttl_ms / 1000), on_reply, c));
	if (!cl->op_busy)
		etcd_failed(cl, -ENOMEM, "lease grant: out of memory", false);
}

/* put_record -- the node record, created (if absent) or rewritten (if
 * ours), done gets the answer. */
static void put_record(struct rmp_cluster *cl, bool create,
		       void (*done)(struct rmp_cluster *,
				    const struct rmp_etcd_reply *))
{
	int64_t reg = create ? (int64_t)time(NULL) : cl->registered;
	uint64_t free_bytes = 0;
	char *v = cl_record(&cl->id, cl->ops, reg, &free_bytes);
	struct call *c;
	int ret = -ENOMEM;

	if (v && call(cl, done, &c)) {
		ret = (create ? rmp_etcd_create : rmp_etcd_put_owned)(
			cl->etcd, cl->key, v, strlen(v), cl->lease, on_reply,
			c);
		made(cl, c, ret);
	}
	free(v);
	if (ret) {
		etcd_failed(cl, ret, "put: cannot make the request", false);
		return;
	}
	cl->op_busy = true;
	cl->published_free = free_bytes;
	cl->written_ms = rmp_now_ms();
}

static void create(struct rmp_cluster *cl)
{
	set_state(cl, CL_CREATING);
	put_record(cl, true, on_create);
}

static void on_grant(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	cl->op_busy = false;
	if (failed(cl, r))
		return;
	cl->lease = r->id;
	cl->owned = false;
	cl->ops->cluster.keepalive_ms = rmp_now_ms();
	create(cl);
}

/* registered -- the key is ours from now on. */
static void registered(struct rmp_cluster *cl)
{
	uint64_t now = rmp_now_ms();

	outage_over(cl);
	cl->taken_logged = false;
	cl->owned = true;
	cl->ops->cluster.registered_ms = now;
	cl->ops->cluster.keepalive_ms = now;
	set_state(cl, CL_REGISTERED);
	log_notice("cluster: registered as %s in etcd (key %s, lease %" PRIx64
		   ", ttl %" PRIu64 " s)", cl->id.node, cl->key,
		   (uint64_t)cl->lease, cl->ttl_ms / 1000);
}

/* taken -- the key is held under lease holder (0: none), not ours:
 * said once per wait, then tried again each tick (on_tick). */
static void taken(struct rmp_cluster *cl, int64_t holder)
{
	char who[160];

	outage_over(cl);
	if (holder)
		snprintf(who, sizeof(who), "is held by etcd lease %" PRIx64
			 " (another daemon with this name, or this node's "
			 "previous run whose lease has not run out yet)",
			 (uint64_t)holder);
	else
		snprintf(who, sizeof(who), "was written without a lease (by "
			 "hand?): it stays until someone deletes it");
	if (!cl->taken_logged)
		log_warn("cluster: node name %s is taken: %s%s %s; trying "
			 "again every second until it is free", cl->id.node,
			 cl->key, cl->owned ? ", this node's until now," : "",
			 who);
	cl->taken_logged = true;
	cl->owned = false;
	set_state(cl, CL_TAKEN);
}

static void on_create(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	cl->op_busy = false;
	if (failed(cl, r))
		return;
	if (r->succeeded || (r->nkvs && r->kvs[0].lease == cl->lease)) {
		cl->registered = (int64_t)time(NULL);
		registered(cl);
		return;
	}
	taken(cl, r->nkvs ? r->kvs[0].lease : 0);
}

static void on_refresh(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	cl->op_busy = false;
	if (failed(cl, r))
		return;
	if (r->succeeded) {
		if (cl->state != CL_REGISTERED)
			registered(cl);
		return;
	}
	/* not under our lease: someone else's now, or gone */
	if (r->nkvs && r->kvs[0].lease != cl->lease) {
		taken(cl, r->kvs[0].lease);
		return;
	}
	if (cl->owned)
		log_warn("cluster: %s was removed (not by this node): creating "
			 "it again", cl->key);
	cl->owned = false;
	create(cl);
}

/* lease_gone -- etcd says our lease is no more (it ran out, or was
 * revoked): the requests in flight are stale; a new lease. */
static void lease_gone(struct rmp_cluster *cl)
{
	if (cl->state == CL_CHECKING)
		log_info("cluster: lease %" PRIx64 " ran out during the "
			 "outage: registering again", (uint64_t)cl->lease);
	else
		log_warn("cluster: lease %" PRIx64 " is gone (it ran out): "
			 "registering again", (uint64_t)cl->lease);
	cl->lease = 0;
	cl->epoch++;
	cl->op_busy = cl->ka_busy = false;
	grant(cl);
}

/* on_check -- after an outage: is the lease we had alive? */
static void on_check(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	cl->op_busy = false;
	if (!failed(cl, r)) {
		cl->ops->cluster.keepalive_ms = rmp_now_ms();
		put_record(cl, false, on_refresh);
	}
}

static void on_keepalive(struct rmp_cluster *cl,
			 const struct rmp_etcd_reply *r)
{
	cl->ka_busy = false;
	if (!failed(cl, r))
		cl->ops->cluster.keepalive_ms = rmp_now_ms();
}

static void on_revoke(struct rmp_cluster *cl, const struct rmp_etcd_reply *r)
{
	if (r->err && r->err != -ENOENT) {
		note_error(cl, r);
		log_warn("cluster: could not revoke lease %" PRIx64 " (%s): %s "
			 "leaves when its ttl runs out", (uint64_t)cl->lease,
			 r->error, cl->key);
	} else {
		log_notice("cluster: left (lease %" PRIx64 " revoked, %s "
			   "removed)", (uint64_t)cl->lease, cl->key);
	}
	cl->lease = 0;
	set_state(cl, CL_LEFT);
}

/* retry_wait -- how long until the next try: the backoff; but when a
 * keep-alive failed while the lease may still be alive (its last
 * keep-alive less than a ttl ago), at most LEASE_RETRY_MS and ttl/6, so
 * that the first try after etcd is back comes before the lease runs
 * out. The backoff grows on underneath. Not when etcd answered the
 * keep-alive and refused another step: that wait would not save the
 * lease, only load etcd. */
static uint64_t retry_wait(struct rmp_cluster *cl, bool keepalive)
{
	uint64_t last = cl->ops->cluster.keepalive_ms;

	if (keepalive && cl->lease && rmp_now_ms() < last + cl->ttl_ms)
		return RMP_MIN(cl->backoff_ms,
			       RMP_MIN(LEASE_RETRY_MS, cl->ttl_ms / 6));
	return cl->backoff_ms;
}

/* etcd_failed -- keep serving; log once per outage; try again later
 * (keepalive: what failed was keeping the lease alive). */
static void etcd_failed(struct rmp_cluster *cl, int err, const char *what,
			bool keepalive)
{
	uint64_t wait = retry_wait(cl, keepalive);
	struct timeval tv;

	if (cl->state == CL_LEAVING || cl->state == CL_LEFT)
		return;
	if (!cl->outage) {
		cl->outage = true;
		cl->outage_ms = rmp_now_ms();
		cl->ops->cluster.outages++;
		log_warn("cluster: etcd: %s (%s); still serving, trying again "
			 "with backoff (one line per outage)", what,
			 strerror(-err));
	} else {
		log_debug("cluster: etcd: %s", what);
	}
	cl->epoch++; /* the replies still to come are stale */
	cl->op_busy = cl->ka_busy = false;
	set_state(cl, CL_RETRYING);
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(cl->retry_ev, &tv);
	cl->backoff_ms = RMP_MIN(cl->backoff_ms * 2,
				 RMP_MAX(cl->ttl_ms / 2, BACKOFF_MS));
}

/* ------------------------------------------------------ the timers */

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_cluster *cl = arg;
	struct call *c;

	(void)fd;
	(void)what;
	if (cl->state != CL_RETRYING)
		return;
	if (!cl->lease) {
		grant(cl);
		return;
	}
	set_state(cl, CL_CHECKING);
	cl->op_busy = call(cl, on_check, &c) &&
		      made(cl, c, rmp_etcd_keepalive(cl->etcd, cl->lease,
						     on_reply, c));
	if (!cl->op_busy)
		etcd_failed(cl, -ENOMEM, "lease keepalive: out of memory",
			    false);
}

/* on_ka -- every ttl/3 while a lease is held. */
static void on_ka(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_cluster *cl = arg;
	struct call *c;

	(void)fd;
	(void)what;
	if (!cl->lease || cl->ka_busy || (cl->state != CL_CREATING &&
	    cl->state != CL_TAKEN && cl->state != CL_REGISTERED))
		return;
	cl->ka_busy = call(cl, on_keepalive, &c) &&
		      made(cl, c, rmp_etcd_keepalive(cl->etcd, cl->lease,
						     on_reply, c));
}

/* moved -- free bytes moved by more than the refresh share. */
static bool moved(struct rmp_cluster *cl)
{
	struct rmp_status st;
	uint64_t d;

	rmp_ops_status(cl->ops, &st);
	d = st.free_bytes > cl->published_free ?
		    st.free_bytes - cl->published_free :
		    cl->published_free - st.free_bytes;
	return d > st.pool_bytes / REFRESH_SHARE;
}

/* keepalive_overdue -- registered, but the last keep-alive etcd
 * answered is more than a ttl ago: the lease must have run out, however
 * long the requests in flight take to say so. Then an etcd failure
 * (noted for the status), and true. */
static bool keepalive_overdue(struct rmp_cluster *cl)
{
	struct rmp_cluster_status *s = &cl->ops->cluster;
	uint64_t now = rmp_now_ms();

	if (cl->state != CL_REGISTERED || now - s->keepalive_ms <= cl->ttl_ms)
		return false;
	s->errors++;
	s->error_ms = now;
	snprintf(s->error, sizeof(s->error), "lease keepalive: no answer for "
		 "%" PRIu64 " ms, more than the ttl", now - s->keepalive_ms);
	etcd_failed(cl, -ETIMEDOUT, s->error, false);
	return true;
}

/* check_record -- is the key still ours? on_refresh hears the answer;
 * nothing is written when it is. */
static void check_record(struct rmp_cluster *cl)
{
	struct call *c;
	int ret = -ENOMEM;

	if (call(cl, on_refresh, &c)) {
		ret = rmp_etcd_check_owned(cl->etcd, cl->key, cl->lease,
					   on_reply, c);
		made(cl, c, ret);
	}
	if (ret) {
		etcd_failed(cl, ret, "txn: cannot make the request", false);
		return;
	}
	cl->op_busy = true;
	cl->written_ms = rmp_now_ms();
}

/* on_tick -- each second: a registered node whose keep-alive is overdue
 * has lost etcd (keepalive_overdue); a taken name tried again (staying in CL_TAKEN: the wait was said once and
 * operators see "name-taken" throughout); the value rewritten when it
 * moved (so at most once a second) or a ttl is nearly over since it was
 * written. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_cluster *cl = arg;

	(void)fd;
	(void)what;
	if (keepalive_overdue(cl) || cl->op_busy)
		return;
	if (cl->state == CL_TAKEN)
		put_record(cl, true, on_create);
	else if (cl->state == CL_REGISTERED && moved(cl))
		put_record(cl, false, on_refresh);
	else if (cl->state == CL_REGISTERED &&
		 rmp_now_ms() - cl->written_ms + TICK_MS >= cl->ttl_ms)
		check_record(cl);
}

/* ------------------------------------------------------ life */

/* etcd_client -- the etcd client of cfg's endpoints and credentials. */
static struct rmp_etcd *etcd_client(struct event_base *base,
				    const struct rmp_config *cfg,
				    uint64_t timeout_ms)
{
	struct rmp_etcd_settings s = {
		.endpoints = cfg->cluster.etcd, .timeout_ms = timeout_ms,
		.ca_file = cfg->cluster.ca_file,
		.cert_file = cfg->cluster.cert_file,
		.key_file = cfg->cluster.key_file,
		.credentials_file = cfg->cluster.credentials_file,
	};
	char why[512];
	struct rmp_etcd *etcd = rmp_etcd_open(base, &s, why, sizeof(why));

	if (!etcd)
		log_err("cluster: %s", why);
	return etcd;
}

struct rmp_cluster *rmp_cluster_new(struct event_base *base,
				    struct rmp_ops *ops,
				    const struct rmp_config *cfg)
{
	struct rmp_cluster *cl = calloc(1, sizeof(*cl));
	uint64_t timeout;
	struct timeval ka, tick = { TICK_MS / 1000, 0 };
	char err[512];

	if (!cl)
		return NULL;
	TAILQ_INIT(&cl->calls);
	cl->base = base;
	cl->ops = ops;
	cl->ttl_ms = cfg->cluster.ttl_ms;
	cl->backoff_ms = BACKOFF_MS;
	if (cl_identity_init(&cl->id, cfg, err, sizeof(err))) {
		log_err("%s", err);
		free(cl);
		errno = EINVAL;
		return NULL;
	}
	snprintf(cl->key, sizeof(cl->key), "%snodes/%s", cfg->cluster.prefix,
		 cl->id.node);
	/* an attempt must end well before the next keep-alive is due */
	timeout = RMP_MAX(RMP_MIN(cl->ttl_ms / 4, 2000), 250);
	cl->etcd = etcd_client(base, cfg, timeout);
	ka.tv_sec = (time_t)(cl->ttl_ms / 3000);
	ka.tv_usec = (suseconds_t)(cl->ttl_ms / 3 % 1000) * 1000;
	cl->ka_ev = event_new(base, -1, EV_PERSIST, on_ka, cl);
	cl->tick_ev = event_new(base, -1, EV_PERSIST, on_tick, cl);
	cl->retry_ev = event_new(base, -1, 0, on_retry, cl);
	if (!cl->etcd || !cl->ka_ev || !cl->tick_ev || !cl->retry_ev ||
	    event_add(cl->ka_ev, &ka) || event_add(cl->tick_ev, &tick)) {
		int e = errno ? errno : ENOMEM;

		rmp_cluster_free(cl);
		errno = e;
		return NULL;
	}
	log_info("cluster: registering as %s in etcd (%s, key %s, ttl %" PRIu64
		 " s)", cl->id.node, cfg->cluster.etcd, cl->key,
		 cl->ttl_ms / 1000);
	grant(cl);
	return cl;
}

void rmp_cluster_leave(struct rmp_cluster *cl)
{
	struct call *c;

	if (!cl || cl->state == CL_LEAVING || cl->state == CL_LEFT)
		return;
	cl->epoch++;
	cl->op_busy = cl->ka_busy = false;
	event_del(cl->retry_ev);
	event_del(cl->ka_ev);
	event_del(cl->tick_ev);
	if (!cl->lease) {
		set_state(cl, CL_LEFT);
		return;
	}
	set_state(cl, CL_LEAVING);
	if (!call(cl, on_revoke, &c) ||
	    !made(cl, c, rmp_etcd_revoke(cl->etcd, cl->lease, on_reply, c)))
		set_state(cl, CL_LEFT);
}

bool rmp_cluster_gone(const struct rmp_cluster *cl)
{
	return !cl || cl->state == CL_LEFT;
}

void rmp_cluster_free(struct rmp_cluster *cl)
{
	struct call *c;

	if (!cl)
		return;
	rmp_etcd_free(cl->etcd); /* no callback comes after this */
	while ((c = TAILQ_FIRST(&cl->calls))) {
		TAILQ_REMOVE(&cl->calls, c, link);
		free(c);
	}
	if (cl->ka_ev)
		event_free(cl->ka_ev);
	if (cl->tick_ev)
		event_free(cl->tick_ev);
	if (cl->retry_ev)
		event_free(cl->retry_ev);
	cl->ops->cluster.registered = false;
	free(cl);
}

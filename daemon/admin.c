/* SPDX-License-Identifier: MIT */
/* admin.c -- the admin socket: rmpoolctl's requests, answered in the loop. */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <json-c/json.h>

#include "admin.h"
#include "conn.h"
#include "keys.h"
#include "lease.h"
#include "lifecycle.h"
#include "log.h"
#include "ops.h"
#include "parse.h"
#include "tenant.h"
#include "util.h"

/* Admin connections at once; more get an error reply and are closed. */
#define CONNS_MAX 64
/* Output kept per connection: no more requests are read, and a leases
 * reply is not continued, while this much waits for the peer. */
#define OUT_HIGH (256u << 10)
/* ... and work resumes once the peer has read it down to this. */
#define OUT_LOW (64u << 10)
/* Input kept per connection: reading stops here until lines are taken. */
#define IN_HIGH (4 * RMP_ADMIN_LINE_MAX)
/* A peer that sends nothing for this long is closed. */
#define IDLE_TIMEOUT_S 300
/* A peer that reads nothing of a pending reply for this long is closed. */
#define WRITE_TIMEOUT_S 30
/* Nesting a request may have: requests are flat. */
#define JSON_DEPTH 8
/* After the last reply is out, a closing connection keeps reading (and
 * dropping) what the peer still sends for this long, waiting for its
 * EOF: a peer that writes its request after the daemon refused it must
 * not get EPIPE or a reset before it has read the refusal. */
#define LINGER_S 2
/* After accept() failed (out of file descriptors): wait before retrying. */
#define ACCEPT_PAUSE_MS 1000
/* Room for CONNS_MAX connects at once while the loop is busy: a full
 * backlog fails a non-blocking connect() with EAGAIN. */
#define LISTEN_BACKLOG 128

struct rmp_admin;

struct admin_conn {
	struct rmp_admin *a;
	struct bufferevent *bev;
	char who[64];       /* "rmpoolctl uid 0 pid 42": for ops and the log */
	bool eof;           /* the peer has sent all it will */
	bool closing;       /* close once the output is out */
	bool lingering;     /* output out and shut: waiting for the EOF */
	bool discarding;    /* skipping the rest of an overlong line */
	/* A leases reply in progress: the ids matched, sent from next on. */
	uint64_t *ids;
	size_t nids, next, sent;
	TAILQ_ENTRY(admin_conn) link;
};

TAILQ_HEAD(admin_conn_list, admin_conn);

struct rmp_admin {
	struct event_base *base;
	struct rmp_ops *ops;
	struct evconnlistener *lsn;
	struct event *pause_ev;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char group[RMP_CONFIG_GROUP_LEN];
	gid_t gid;
	bool has_group;
	bool made;          /* the socket file is ours: remove it at the end */
	dev_t dev;
	ino_t ino;
	char deny[160];     /* the error a peer that may not come in gets */
	struct admin_conn_list conns;
	unsigned nconns;
};

/* -------------------------------------------------------- JSON helpers */

/* put -- o[k] = v; tolerates an o that failed to allocate. */
static void put(json_object *o, const char *k, json_object *v)
{
	if (o)
		json_object_object_add(o, k, v);
	else
		json_object_put(v);
}

/*
 * put_text -- o[k] = s as a JSON string, bytes outside printable ASCII
 * shown as '?': names come from clients, and the output must stay valid
 * UTF-8 whatever they sent.
 */
static void put_text(json_object *o, const char *k, const char *s)
{
	char buf[256];
	size_t i;

	for (i = 0; s && s[i] && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	put(o, k, json_object_new_string(buf));
}

static void put_u64(json_object *o, const char *k, uint64_t v)
{
	put(o, k, json_object_new_uint64(v));
}

static void put_i64(json_object *o, const char *k, int64_t v)
{
	put(o, k, json_object_new_int64(v));
}

static void put_bool(json_object *o, const char *k, bool v)
{
	put(o, k, json_object_new_boolean(v));
}

/* put_id -- a lease id as rmpool prints it: 16 hex digits. */
static void put_id(json_object *o, const char *k, uint64_t id)
{
	char buf[17];

	snprintf(buf, sizeof(buf), "%016" PRIx64, id);
	put(o, k, json_object_new_string(buf));
}

/* put_access -- RMP_ACC_* as ["read", "write", "atomic"]. */
static void put_access(json_object *o, const char *k, uint32_t acc)
{
	json_object *arr = json_object_new_array();

	if (arr && (acc & RMP_ACC_READ))
		json_object_array_add(arr, json_object_new_string("read"));
	if (arr && (acc & RMP_ACC_WRITE))
		json_object_array_add(arr, json_object_new_string("write"));
	if (arr && (acc & RMP_ACC_ATOMIC))
		json_object_array_add(arr, json_object_new_string("atomic"));
	put(o, k, arr);
}

/* ------------------------------------------------------------ replies */

static void conn_free(struct admin_conn *c);

/*
 * linger -- the last reply is out: shut our side and wait for the peer's
 * EOF (or LINGER_S) before closing, so that the reply is not lost to a
 * reset of a peer still writing.
 */
static void linger(struct admin_conn *c)
{
	const struct timeval tv = { LINGER_S, 0 };

	if (c->eof) {
		conn_free(c);
		return;
	}
	if (c->lingering)
		return;
	c->lingering = true;
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	bufferevent_disable(c->bev, EV_WRITE);
	bufferevent_set_timeouts(c->bev, &tv, NULL);
	bufferevent_enable(c->bev, EV_READ);
}

/* finish -- no more requests: close once the output is out. */
static void finish(struct admin_conn *c)
{
	c->closing = true;
	free(c->ids);
	c->ids = NULL;
	/* The write callback now comes when the output is empty. */
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_enable(c->bev, EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		linger(c);
}

/* send_obj -- o as one line to the peer; takes o. 0, or -ENOMEM (then
 * the connection is closing: it would miss a reply). */
static int send_obj(struct admin_conn *c, json_object *o)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	const char *s = NULL;
	size_t len = 0;

	if (o)
		s = json_object_to_json_string_length(o,
			JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
			&len);
	if (!s || evbuffer_add(out, s, len) || evbuffer_add(out, "\n", 1)) {
		log_err("admin: %s: out of memory for a reply: closing",
			c->who);
		json_object_put(o);
		c->closing = true;
		return -ENOMEM;
	}
	json_object_put(o);
	return 0;
}

/* ok_reply -- a new {"ok": true} to add fields to. */
static json_object *ok_reply(void)
{
	json_object *o = json_object_new_object();

	put_bool(o, "ok", true);
	return o;
}

static void reply_error(struct admin_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* reply_error -- {"ok": false, "error": "...", "errno": "EXXX"}. */
static void reply_error(struct admin_conn *c, int err, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	const char *name = strerrorname_np(err);
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	put_bool(o, "ok", false);
	put_text(o, "error", msg);
	put(o, "errno", json_object_new_string(name ? name : "EIO"));
	send_obj(c, o);
}

/* ------------------------------------------------------------- clocks */

static uint64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* unix_s -- the wall-clock second of monotonic millisecond t. */
static int64_t unix_s(uint64_t t)
{
	int64_t d = (int64_t)t - (int64_t)rmp_now_ms();

	return ((int64_t)realtime_ms() + d) / 1000;
}

/* ----------------------------------------------------------- objects */

static const char *conn_state(enum rmp_conn_state s)
{
	switch (s) {
	case RMP_CONN_ACCEPTING:
		return "accepting";
	case RMP_CONN_ESTABLISHED:
		return "established";
	case RMP_CONN_CLOSING:
		return "closing";
	}
	return "?";
}

/* conn_of -- the connection whose holder h is (every holder is one). */
static const struct rmp_conn *conn_of(const struct rmp_ops *o,
				      const struct rmp_holder *h)
{
	const struct rmp_conn *c;

	TAILQ_FOREACH(c, &o->conns->list, link)
		if (&c->holder == h)
			return c;
	return NULL;
}

/* lease_json -- what an operator sees of l; with detail, its holders. */
static json_object *lease_json(const struct rmp_ops *o,
			       const struct rmp_lease *l, bool detail)
{
	uint64_t now = rmp_now_ms(), addr = rmp_ops_lease_addr(o, l);
	json_object *j = json_object_new_object();

	put_id(j, "id", l->id);
	put_text(j, "tenant", l->tenant ? l->tenant->name : "");
	put_text(j, "owner", l->owner);
	put_u64(j, "bytes", l->ext.length);
	put_u64(j, "offset", l->ext.offset);
	put_u64(j, "addr", addr);
	put_u64(j, "end", addr + l->ext.length);
	put_access(j, "access", l->access);
	put_u64(j, "keys", l->nkeys);
	put(j, "keys_mode", json_object_new_string(
		rmp_keys_mode_name(o->keys_mode)));
	put(j, "state", json_object_new_string(rmp_lease_state_name(l->state)));
	put_u64(j, "ttl_ms", l->ttl_ms);
	put_u64(j, "ttl_left_ms", l->deadline_ms > now ?
		l->deadline_ms - now : 0);
	put_i64(j, "deadline", unix_s(l->deadline_ms));
	put_i64(j, "created", unix_s(l->created_ms));
	put_u64(j, "age_ms", now > l->created_ms ? now - l->created_ms : 0);
	put_bool(j, "auto_renew", l->flags & RMP_LEASE_F_AUTO_RENEW);
	put_bool(j, "ephemeral", l->flags & RMP_LEASE_F_EPHEMERAL);
	if (detail) {
		json_object *arr = json_object_new_array();
		const struct rmp_key *k;

		TAILQ_FOREACH(k, &l->keys, lease_link) {
			const struct rmp_conn *c = conn_of(o, k->holder);
			json_object *h = json_object_new_object();

			put_u64(h, "client", c ? c->serial : 0);
			put_text(h, "name", k->holder->name);
			put_text(h, "peer", k->holder->peer);
			put_access(h, "access", k->access);
			put(h, "key", json_object_new_string(
				rmp_key_state_name(k->state)));
			put_bool(h, "owner", k->holder == l->owner_holder);
			if (arr)
				json_object_array_add(arr, h);
			else
				json_object_put(h);
		}
		put(j, "holders", arr);
	}
	return j;
}

static json_object *client_json(const struct rmp_conn *c)
{
	const struct rmp_tenant *t = c->holder.tenant;
	uint64_t now = rmp_now_ms(), leases, bytes;
	json_object *j = json_object_new_object();

	rmp_ops_client_usage(c, &leases, &bytes);
	put_u64(j, "client", c->serial);
	put_text(j, "name", c->name);
	/* Until it has proved its key, the tenant it named. */
	put_text(j, "tenant", t ? t->name :
		 c->auth.tenant ? c->auth.tenant->name : "");
	put_bool(j, "authenticated", t != NULL);
	put_text(j, "peer", c->peer);
	put(j, "state", json_object_new_string(conn_state(c->state)));
	put_i64(j, "connected_since", unix_s(c->accepted_ms));
	put_u64(j, "connected_ms", now > c->accepted_ms ?
		now - c->accepted_ms : 0);
	put_u64(j, "leases", leases);
	put_u64(j, "bytes", bytes);
	put_u64(j, "requests", c->requests);
	put_u64(j, "errors", c->errors);
	return j;
}

/* ----------------------------------------------------- request fields */

/*
 * get_field -- field k of req: 1 and *v when present, 0 when absent and
 * optional, -EINVAL (error replied) when absent and required.
 */
static int get_field(struct admin_conn *c, json_object *req, const char *cmd,
		     const char *k, bool required, json_object **v)
{
	if (json_object_object_get_ex(req, k, v))
		return 1;
	if (!required)
		return 0;
	reply_error(c, EINVAL, "%s needs \"%s\"", cmd, k);
	return -EINVAL;
}

/*
 * get_str -- field k of req, a string: 0 and *out (NULL when absent and
 * optional), or -EINVAL with the error replied.
 */
static int get_str(struct admin_conn *c, json_object *req, const char *cmd,
		   const char *k, bool required, const char **out)
{
	json_object *v;
	int ret;

	*out = NULL;
	ret = get_field(c, req, cmd, k, required, &v);
	if (ret <= 0)
		return ret;
	if (!json_object_is_type(v, json_type_string)) {
		reply_error(c, EINVAL, "\"%s\" must be a string", k);
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	return 0;
}

/* get_u64 -- field k, a non-negative integer; *present says if given. */
static int get_u64(struct admin_conn *c, json_object *req, const char *cmd,
		   const char *k, bool required, uint64_t *out, bool *present)
{
	json_object *v;
	int ret;

	*present = false;
	ret = get_field(c, req, cmd, k, required, &v);
	if (ret <= 0)
		return ret;
	if (!json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0) {
		reply_error(c, EINVAL, "\"%s\" must be a non-negative integer "
			    "(milliseconds)", k);
		return -EINVAL;
	}
	*out = json_object_get_uint64(v);
	*present = true;
	return 0;
}

/* get_id -- field "id": a lease id, 1 to 16 hex digits in a string. */
static int get_id(struct admin_conn *c, json_object *req, const char *cmd,
		  uint64_t *id)
{
	const char *s;
	size_t n;

	if (get_str(c, req, cmd, "id", true, &s))
		return -EINVAL;
	n = strlen(s);
	if (n == 0 || n > 16 || rmp_parse_hex_fixed(s, (unsigned int)n, id)) {
		reply_error(c, EINVAL, "\"id\" must be a lease id: 16 hex "
			    "digits, as rmpoolctl leases shows it");
		return -EINVAL;
	}
	return 0;
}

static void reply_no_lease(struct admin_conn *c, uint64_t id)
{
	reply_error(c, ENOENT, "no such lease %016" PRIx64 " (it has ended, "
		    "or never was: see rmpoolctl leases)", id);
}

/* ----------------------------------------------------------- commands */

static void cmd_status(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	struct rmp_status st;
	json_object *j = ok_reply();

	(void)req;
	rmp_ops_status(o, &st);
	put_text(j, "version", st.version);
	put_u64(j, "uptime_ms", st.uptime_ms);
	put_i64(j, "started", unix_s(o->started_ms));
	put_text(j, "device", st.device);
	put_text(j, "listen", st.listen);
	put_u64(j, "port", st.port);
	put_i64(j, "numa_node", st.numa_node);
	put_u64(j, "pool_bytes", st.pool_bytes);
	put_u64(j, "free_bytes", st.free_bytes);
	put_u64(j, "largest_free", st.largest_free);
	put_u64(j, "quarantined_bytes", st.quarantined_bytes);
	put_u64(j, "quarantined_leases", st.quarantined_leases);
	put_u64(j, "zeroing_bytes", st.zeroing_bytes);
	put_u64(j, "hugepage_size", st.hugepage_size);
	put_text(j, "keys_mode", st.keys_mode);
	put_u64(j, "clients", st.clients);
	put_u64(j, "leases", st.leases);
	put_u64(j, "max_leases", st.max_leases);
	put_u64(j, "leased_bytes", st.leased_bytes);
	put_u64(j, "keys", st.keys);
	put_bool(j, "draining", st.draining);
	put_bool(j, "drained", o->drained);
	put_bool(j, "stopping", st.stopping);
	put_bool(j, "persistent", st.persistent);
	put_u64(j, "journal_records", st.journal_records);
	put_u64(j, "journal_capacity", st.journal_capacity);
	put_u64(j, "recovered_leases", st.recovered);
	send_obj(c, j);
}

/* What `leases` keeps. */
struct lease_filter {
	const struct rmp_ops *o;
	const char *tenant;             /* NULL: any */
	const char *name;               /* client name; NULL: any */
	const struct rmp_holder *holder; /* client by number; NULL: any */
	bool by_number;
	bool expiring;
	uint64_t before_ms;             /* deadline at or before this */
	uint64_t *ids;
	size_t n, cap;
	bool nomem;
};

static bool lease_matches(const struct lease_filter *f,
			  const struct rmp_lease *l)
{
	const struct rmp_key *k;
	bool hit;

	if (f->tenant && (!l->tenant || strcmp(l->tenant->name, f->tenant)))
		return false;
	if (f->expiring && l->deadline_ms > f->before_ms)
		return false;
	if (f->by_number) {
		hit = false;
		TAILQ_FOREACH(k, &l->keys, lease_link)
			hit |= k->holder == f->holder;
		return hit;
	}
	if (f->name) {
		/* The client that allocated it, or one that holds a key. */
		hit = !strcmp(l->owner, f->name);
		TAILQ_FOREACH(k, &l->keys, lease_link)
			hit |= k->holder->name && !strcmp(k->holder->name,
							  f->name);
		return hit;
	}
	return true;
}

static void collect_one(const struct rmp_lease *l, void *arg)
{
	struct lease_filter *f = arg;

	if (f->nomem || !lease_matches(f, l))
		return;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		uint64_t *ids = realloc(f->ids, cap * sizeof(*ids));

		if (!ids) {
			f->nomem = true;
			return;
		}
		f->ids = ids;
		f->cap = cap;
	}
	f->ids[f->n++] = l->id;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* parse_number -- "#7" or "7": a client's number. */
static bool parse_number(const char *s, uint64_t *out)
{
	return !rmp_parse_dec(*s == '#' ? s + 1 : s, out);
}

/*
 * stream_leases -- send the lines of a leases reply while the peer keeps
 * up: leases that ended meanwhile are left out; the last line counts
 * the ones sent. Called again from the write callback.
 */
static void stream_leases(struct admin_conn *c)
{
	const struct rmp_ops *o = c->a->ops;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	json_object *j;

	while (c->ids && c->next < c->nids && !c->closing &&
	       evbuffer_get_length(out) < OUT_HIGH) {
		const struct rmp_lease *l =
			rmp_lifecycle_find(o->lc, c->ids[c->next++]);

		if (!l)
			continue;
		j = json_object_new_object();
		put(j, "lease", lease_json(o, l, false));
		if (send_obj(c, j))
			return;
		c->sent++;
	}
	if (!c->ids || c->next < c->nids || c->closing)
		return;
	free(c->ids);
	c->ids = NULL;
	j = ok_reply();
	put(j, "end", json_object_new_string("leases"));
	put_u64(j, "count", c->sent);
	send_obj(c, j);
}

static void cmd_leases(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	struct lease_filter f = { .o = o };
	const char *client;
	uint64_t within, n;
	json_object *j;

	if (get_str(c, req, "leases", "tenant", false, &f.tenant) ||
	    get_str(c, req, "leases", "client", false, &client) ||
	    get_u64(c, req, "leases", "expiring_within_ms", false, &within,
		    &f.expiring))
		return;
	if (f.expiring)
		f.before_ms = rmp_now_ms() + RMP_MIN(within, UINT64_MAX / 4);
	if (client && parse_number(client, &n)) {
		const struct rmp_conn *cn;

		TAILQ_FOREACH(cn, &o->conns->list, link)
			if (cn->serial == n)
				break;
		if (!cn) {
			reply_error(c, ENOENT, "no client #%" PRIu64
				    " (see rmpoolctl clients)", n);
			return;
		}
		f.by_number = true;
		f.holder = &cn->holder;
	} else {
		f.name = client;
	}
	rmp_lifecycle_foreach(o->lc, collect_one, &f);
	if (f.nomem) {
		free(f.ids);
		reply_error(c, ENOMEM, "out of memory listing the leases");
		return;
	}
	if (f.n) /* qsort(NULL, 0, ...) is undefined */
		qsort(f.ids, f.n, sizeof(*f.ids), cmp_u64);
	j = ok_reply();
	put(j, "stream", json_object_new_string("leases"));
	put_u64(j, "total", f.n);
	if (send_obj(c, j)) {
		free(f.ids);
		return;
	}
	/* An empty result still goes through the stream's end. */
	c->ids = f.ids ? f.ids : malloc(sizeof(*c->ids));
	c->nids = f.n;
	c->next = 0;
	c->sent = 0;
	if (!c->ids) {
		/* The stream has begun: no error line can follow it. */
		log_err("admin: %s: out of memory listing the leases: closing",
			c->who);
		c->closing = true;
		return;
	}
	stream_leases(c);
}

static void cmd_show(struct admin_conn *c, json_object *req)
{
	const struct rmp_ops *o = c->a->ops;
	const struct rmp_lease *l;
	json_object *j;
	uint64_t id;

	if (get_id(c, req, "show", &id))
		return;
	l = rmp_lifecycle_find(o->lc, id);
	if (!l) {
		reply_no_lease(c, id);
		return;
	}
	j = ok_reply();
	put(j, "lease", lease_json(o, l, true));
	send_obj(c, j);
}

static void cmd_revoke(struct admin_conn *c, json_object *req)
{
	json_object *j;
	uint64_t id;

	if (get_id(c, req, "revoke", &id))
		return;
	if (rmp_ops_revoke(c->a->ops, id, c->who)) {
		reply_no_lease(c, id);
		return;
	}
	j = ok_reply();
	put_id(j, "id", id);
	send_obj(c, j);
}

static void cmd_extend(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	const struct rmp_lease *l;
	uint64_t id, ttl;
	json_object *j;
	bool present;
	int ret;

	if (get_id(c, req, "extend", &id) ||
	    get_u64(c, req, "extend", "ttl_ms", true, &ttl, &present))
		return;
	ret = rmp_ops_extend(o, id, ttl, c->who);
	if (ret == -ENOENT) {
		reply_no_lease(c, id);
		return;
	}
	if (ret) {
		reply_error(c, -ret, "ttl_ms %" PRIu64 " is out of range: "
			    "1 .. %" PRIu64 " ([lease] ttl_max)", ttl,
			    o->cfg->lease.ttl_max_ms);
		return;
	}
	l = rmp_lifecycle_find(o->lc, id);
	j = ok_reply();
	if (l)
		put(j, "lease", lease_json(o, l, false));
	send_obj(c, j);
}

static void cmd_clients(struct admin_conn *c, json_object *req)
{
	const struct rmp_ops *o = c->a->ops;
	json_object *j = ok_reply(), *arr = json_object_new_array();
	const struct rmp_conn *cn;

	(void)req;
	TAILQ_FOREACH(cn, &o->conns->list, link) {
		json_object *x = client_json(cn);

		if (arr)
			json_object_array_add(arr, x);
		else
			json_object_put(x);
	}
	put(j, "clients", arr);
	send_obj(c, j);
}

static void cmd_disconnect(struct admin_conn *c, json_object *req)
{
	struct rmp_ops *o = c->a->ops;
	const char *which;
	struct rmp_conn *cn;
	json_object *j;
	int err = 0;

	if (get_str(c, req, "disconnect", "client", true, &which))
		return;
	cn = rmp_ops_find_client(o, which, &err);
	if (!cn && err == -EEXIST) {
		reply_error(c, EEXIST, "more than one client is called %s: "
			    "name it by number, #N (see rmpoolctl clients)",
			    which);
		return;
	}
	if (!cn) {
		reply_error(c, ENOENT, "no client %s (see rmpoolctl clients)",
			    which);
		return;
	}
	/* Described before: it may be gone after. */
	j = ok_reply();
	put(j, "client", client_json(cn));
	rmp_ops_disconnect(o, cn, c->who);
	send_obj(c, j);
}

static void drain(struct admin_conn *c, bool on)
{
	json_object *j;

	if (rmp_ops_drain(c->a->ops, on, c->who)) {
		reply_error(c, EBUSY, "the daemon is stopping: it cannot "
			    "take new leases again");
		return;
	}
	j = ok_reply();
	put_bool(j, "drained", on);
	send_obj(c, j);
}

static void cmd_drain(struct admin_conn *c, json_object *req)
{
	(void)req;
	drain(c, true);
}

static void cmd_undrain(struct admin_conn *c, json_object *req)
{
	(void)req;
	drain(c, false);
}

static void cmd_reload(struct admin_conn *c, json_object *req)
{
	char msg[512] = "";
	json_object *j;
	int ret;

	(void)req;
	ret = rmp_ops_reload(c->a->ops, c->who, msg, sizeof(msg));
	if (ret) {
		reply_error(c, -ret, "reload failed, nothing changed: %s",
			    msg[0] ? msg : strerror(-ret));
		return;
	}
	j = ok_reply();
	put_text(j, "message", msg);
	send_obj(c, j);
}

static const struct command {
	const char *name;
	void (*fn)(struct admin_conn *c, json_object *req);
	const char *fields[4]; /* the ones it takes besides "command" */
	bool action;           /* changes something: logged at info */
} commands[] = {
	{ "status", cmd_status, { NULL }, false },
	{ "leases", cmd_leases,
	  { "tenant", "client", "expiring_within_ms", NULL }, false },
	{ "show", cmd_show, { "id", NULL }, false },
	{ "revoke", cmd_revoke, { "id", NULL }, true },
	{ "extend", cmd_extend, { "id", "ttl_ms", NULL }, true },
	{ "clients", cmd_clients, { NULL }, false },
	{ "disconnect", cmd_disconnect, { "client", NULL }, true },
	{ "drain", cmd_drain, { NULL }, true },
	{ "undrain", cmd_undrain, { NULL }, true },
	{ "reload", cmd_reload, { NULL }, true },
};

/* unknown_field -- the first key of req the command does not take. */
static const char *unknown_field(const struct command *cmd, json_object *req)
{
	json_object_object_foreach(req, k, v) {
		bool known = !strcmp(k, "command");

		(void)v;
		for (size_t i = 0; !known && cmd->fields[i]; i++)
			known = !strcmp(k, cmd->fields[i]);
		if (!known)
			return k;
	}
	return NULL;
}

/* handle -- one request line (NUL-terminated, n bytes). */
static void handle(struct admin_conn *c, const char *line, size_t n)
{
	const struct command *cmd = NULL;
	enum json_tokener_error jerr;
	json_object *req, *v;
	json_tokener *tok;
	const char *name, *bad;
	size_t end;

	if (strspn(line, " \t\r") == n)
		return; /* a blank line asks nothing */
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (!tok) {
		reply_error(c, ENOMEM, "out of memory");
		return;
	}
	req = json_tokener_parse_ex(tok, line, (int)n);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!req || jerr != json_tokener_success) {
		json_object_put(req);
		reply_error(c, EBADMSG, "not a JSON request (%s): send one "
			    "JSON object per line, e.g. "
			    "{\"command\":\"status\"}",
			    jerr == json_tokener_continue ? "incomplete" :
			    json_tokener_error_desc(jerr));
		return;
	}
	if (strspn(line + end, " \t\r") != n - end) {
		reply_error(c, EBADMSG, "text after the JSON object at byte "
			    "%zu: one request per line", end);
	} else if (!json_object_is_type(req, json_type_object)) {
		reply_error(c, EBADMSG, "a request is a JSON object, e.g. "
			    "{\"command\":\"status\"}");
	} else if (!json_object_object_get_ex(req, "command", &v) ||
		   !json_object_is_type(v, json_type_string)) {
		reply_error(c, EINVAL, "a request needs \"command\", a "
			    "string, e.g. {\"command\":\"status\"}");
	} else {
		name = json_object_get_string(v);
		for (size_t i = 0; i < RMP_ARRAY_SIZE(commands); i++)
			if (!strcmp(name, commands[i].name))
				cmd = &commands[i];
		if (!cmd) {
			reply_error(c, EOPNOTSUPP, "unknown command \"%.64s\": "
				    "see docs/admin.md", name);
		} else if ((bad = unknown_field(cmd, req))) {
			reply_error(c, EINVAL, "%s takes no \"%.64s\"",
				    cmd->name, bad);
		} else {
			if (cmd->action)
				log_info("admin: %s: %.*s", c->who, (int)n,
					 line);
			else
				log_debug("admin: %s: %.*s", c->who, (int)n,
					  line);
			cmd->fn(c, req);
		}
	}
	json_object_put(req);
}

/* ----------------------------------------------------------- the loop */

static void conn_free(struct admin_conn *c)
{
	struct rmp_admin *a = c->a;

	TAILQ_REMOVE(&a->conns, c, link);
	a->nconns--;
	bufferevent_free(c->bev);
	free(c->ids);
	free(c);
}

/*
 * serve -- answer the complete lines that wait, in order, while the
 * output has room and no leases reply is under way; then close if the
 * peer is done and everything is out.
 */
static void serve(struct admin_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_ptr eol;
	size_t n, len;
	char *line;

	while (!c->closing && !c->ids && evbuffer_get_length(out) < OUT_HIGH) {
		len = evbuffer_get_length(in);
		if (c->discarding) {
			eol = evbuffer_search_eol(in, NULL, &n, EVBUFFER_EOL_LF);
			if (eol.pos < 0) {
				evbuffer_drain(in, len);
				break;
			}
			evbuffer_drain(in, (size_t)eol.pos + n);
			c->discarding = false;
			continue;
		}
		line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
		if (!line && len > RMP_ADMIN_LINE_MAX) {
			reply_error(c, EMSGSIZE, "request longer than %d "
				    "bytes: refused", RMP_ADMIN_LINE_MAX);
			c->discarding = true;
			continue;
		}
		if (!line && c->eof && len) {
			/* The last request may lack its newline. */
			line = malloc(len + 1);
			if (!line) {
				c->closing = true;
				break;
			}
			evbuffer_remove(in, line, len);
			line[len] = '\0';
			n = len;
		}
		if (!line)
			break;
		if (n > RMP_ADMIN_LINE_MAX)
			reply_error(c, EMSGSIZE, "request longer than %d "
				    "bytes: refused", RMP_ADMIN_LINE_MAX);
		else if (strlen(line) != n)
			reply_error(c, EBADMSG, "a NUL byte in the request");
		else
			handle(c, line, n);
		free(line);
	}
	if (c->closing || (c->eof && !c->ids &&
			   evbuffer_get_length(in) == 0))
		finish(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;

	if (c->closing) {
		/* Read and drop: closing with unread input resets the peer. */
		evbuffer_drain(bufferevent_get_input(bev),
			       evbuffer_get_length(bufferevent_get_input(bev)));
		return;
	}
	serve(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;

	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			linger(c);
		return;
	}
	stream_leases(c);
	serve(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct admin_conn *c = arg;

	if ((what & BEV_EVENT_EOF) &&
	    !(what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))) {
		/* The peer is done sending: answer what it sent, then go. */
		c->eof = true;
		if (!c->closing)
			serve(c);
		else if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c);
		return;
	}
	if (c->lingering) {
		conn_free(c); /* the peer's EOF did not come in time */
		return;
	}
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) &&
	    (c->ids || evbuffer_get_length(bufferevent_get_output(bev)))) {
		/* Quiet, but reading a reply: not idle. */
		bufferevent_enable(bev, EV_READ);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		log_info("admin: %s: %s: closing", c->who,
			 what & BEV_EVENT_WRITING ? "reads no reply" : "idle");
	else if (what & BEV_EVENT_ERROR)
		log_debug("admin: %s: %s", c->who,
			  evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	conn_free(c);
}

/* in_group -- the peer's groups (SO_PEERGROUPS) include gid. */
static bool in_group(int fd, gid_t gid)
{
	gid_t small[64], *g = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
		if (errno != ERANGE)
			return false;
		g = malloc(len);
		if (!g || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			free(g);
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		found |= g[i] == gid;
	if (g != small)
		free(g);
	return found;
}

static void on_accept(struct evconnlistener *lsn, evutil_socket_t fd,
		      struct sockaddr *sa, int salen, void *arg)
{
	const struct timeval idle = { IDLE_TIMEOUT_S, 0 },
			     wr = { WRITE_TIMEOUT_S, 0 };
	struct rmp_admin *a = arg;
	struct ucred cr = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cr);
	struct admin_conn *c;
	bool allowed;

	(void)lsn;
	(void)sa;
	(void)salen;
	c = calloc(1, sizeof(*c));
	if (c)
		c->bev = bufferevent_socket_new(a->base, fd,
						BEV_OPT_CLOSE_ON_FREE);
	if (!c || !c->bev) {
		log_err("admin: out of memory for a connection");
		free(c);
		close(fd);
		return;
	}
	c->a = a;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		log_warn("admin: SO_PEERCRED: %s", strerror(errno));
	snprintf(c->who, sizeof(c->who), "rmpoolctl uid %u pid %d",
		 (unsigned)cr.uid, (int)cr.pid);
	TAILQ_INSERT_TAIL(&a->conns, c, link);
	a->nconns++;
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, IN_HIGH);
	bufferevent_setwatermark(c->bev, EV_WRITE, OUT_LOW, 0);
	bufferevent_set_timeouts(c->bev, &idle, &wr);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);

	allowed = cr.uid == 0 || (a->has_group && (cr.gid == a->gid ||
						   in_group(fd, a->gid)));
	if (!allowed) {
		log_notice("admin: refused %s: %s", c->who, a->deny);
		reply_error(c, EACCES, "%s", a->deny);
		finish(c);
		return;
	}
	if (a->nconns > CONNS_MAX) {
		log_warn("admin: refused %s: %d admin connections already",
			 c->who, CONNS_MAX);
		reply_error(c, EUSERS, "too many admin connections (%d): "
			    "try again later", CONNS_MAX);
		finish(c);
		return;
	}
	log_debug("admin: %s connected", c->who);
}

static void on_pause_over(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_admin *a = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(a->lsn);
}

/* on_accept_error -- out of descriptors, say: pause rather than spin. */
static void on_accept_error(struct evconnlistener *lsn, void *arg)
{
	const struct timeval tv = { ACCEPT_PAUSE_MS / 1000,
				    (ACCEPT_PAUSE_MS % 1000) * 1000 };
	struct rmp_admin *a = arg;
	int err = EVUTIL_SOCKET_ERROR();

	log_warn("admin: accept on %s: %s; pausing %d ms", a->path,
		 evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
	evconnlistener_disable(lsn);
	evtimer_add(a->pause_ev, &tv);
}

/* ------------------------------------------------------- the socket */

/* make_dir -- the socket's directory, created (0755) when missing. */
static int make_dir(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *dir;
	struct stat st;

	rmp_strlcpy(buf, path, sizeof(buf));
	dir = dirname(buf);
	if (!stat(dir, &st))
		return 0;
	if (errno != ENOENT || mkdir(dir, 0755)) {
		log_err("admin socket %s: cannot create its directory %s: %s",
			path, dir, strerror(errno));
		return -errno;
	}
	log_info("admin socket: created directory %s", dir);
	return 0;
}

/*
 * clear_stale -- make room at path: nothing there, or a socket nobody
 * listens on (left by a daemon that died), which is removed. A live
 * socket or another kind of file is left alone: -EADDRINUSE / -EEXIST.
 */
static int clear_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, ret, err;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		log_err("admin socket %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_err("admin socket %s: a file that is not a socket is in "
			"the way: remove it, or set another admin_socket in "
			"rmpoold.conf", path);
		return -EEXIST;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	err = errno;
	close(fd);
	if (ret == 0 || err == EAGAIN) {
		log_err("admin socket %s: another process listens on it "
			"(another rmpoold?): stop it, or set another "
			"admin_socket in rmpoold.conf", path);
		return -EADDRINUSE;
	}
	if (err != ECONNREFUSED) {
		log_err("admin socket %s: cannot tell whether it is in use: %s",
			path, strerror(err));
		return -err;
	}
	if (unlink(path) && errno != ENOENT) {
		log_err("admin socket %s: cannot remove the stale socket: %s",
			path, strerror(errno));
		return -errno;
	}
	log_info("admin socket %s: replaced a stale socket", path);
	return 0;
}

/* give_to_group -- chown the socket to the admin group, then 0660. */
static void give_to_group(struct rmp_admin *a)
{
	struct passwd *pw;

	if (chown(a->path, (uid_t)-1, a->gid) == 0) {
		if (chmod(a->path, 0660))
			log_err("admin socket %s: chmod 0660: %s; only root "
				"can use it", a->path, strerror(errno));
		return;
	}
	pw = getpwuid(geteuid());
	log_err("admin socket %s: cannot give it to group %s: %s: the "
		"daemon's user (%s) must be a member of %s; until then only "
		"root can use the admin socket", a->path, a->group,
		strerror(errno), pw ? pw->pw_name : "?", a->group);
}

static int open_socket(struct rmp_admin *a)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st = { 0 };
	mode_t old;
	int fd, ret;

	ret = make_dir(a->path);
	if (!ret)
		ret = clear_stale(a->path);
	if (ret)
		return ret;
	memcpy(sun.sun_path, a->path, strlen(a->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("admin socket: socket: %s", strerror(errno));
		return -errno;
	}
	/* 0600 from its first moment; the group is let in after chown. */
	old = umask(0177);
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (ret) {
		ret = -errno;
		log_err("admin socket %s: cannot bind: %s", a->path,
			strerror(errno));
		close(fd);
		return ret;
	}
	a->made = !lstat(a->path, &st);
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	if (a->has_group)
		give_to_group(a);
	if (listen(fd, LISTEN_BACKLOG)) {
		ret = -errno;
		log_err("admin socket %s: listen: %s", a->path, strerror(errno));
		close(fd);
		return ret;
	}
	a->lsn = evconnlistener_new(a->base, on_accept, a,
				    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
				    0, fd);
	if (!a->lsn) {
		close(fd);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(a->lsn, on_accept_error);
	return 0;
}

struct rmp_admin *rmp_admin_new(struct event_base *base, struct rmp_ops *ops,
				const char *path, const char *group)
{
	struct rmp_admin *a;
	struct group *gr;
	int ret;

	if (!path || path[0] != '/') {
		log_err("admin socket %s: not an absolute path",
			path ? path : "(none)");
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		log_err("admin socket: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	a->base = base;
	a->ops = ops;
	TAILQ_INIT(&a->conns);
	if (rmp_strlcpy(a->path, path, sizeof(a->path)) ||
	    rmp_strlcpy(a->group, group ? group : "", sizeof(a->group))) {
		log_err("admin socket %s: path or group name too long", path);
		free(a);
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (a->group[0]) {
		errno = 0;
		gr = getgrnam(a->group);
		if (!gr) {
			log_err("admin_group %s: %s: create the group "
				"(groupadd %s), or leave admin_group empty "
				"for root only", a->group,
				errno ? strerror(errno) : "no such group",
				a->group);
			free(a);
			errno = EINVAL;
			return NULL;
		}
		a->gid = gr->gr_gid;
		a->has_group = true;
		snprintf(a->deny, sizeof(a->deny), "permission denied: only "
			 "root and members of group %s may use the admin "
			 "socket", a->group);
	} else {
		snprintf(a->deny, sizeof(a->deny), "permission denied: only "
			 "root may use the admin socket (admin_group in "
			 "rmpoold.conf can let a group in)");
	}
	a->pause_ev = evtimer_new(base, on_pause_over, a);
	ret = a->pause_ev ? open_socket(a) : -ENOMEM;
	if (ret) {
		rmp_admin_free(a);
		errno = -ret;
		return NULL;
	}
	log_info("admin socket %s, for root%s%s", a->path,
		 a->has_group ? " and group " : " only",
		 a->has_group ? a->group : "");
	return a;
}

void rmp_admin_free(struct rmp_admin *a)
{
	struct stat st;

	if (!a)
		return;
	while (!TAILQ_EMPTY(&a->conns))
		conn_free(TAILQ_FIRST(&a->conns));
	if (a->lsn)
		evconnlistener_free(a->lsn);
	if (a->pause_ev)
		event_free(a->pause_ev);
	/* Only our own socket: another daemon may have taken the path. */
	if (a->made && !lstat(a->path, &st) && st.st_dev == a->dev &&
	    st.st_ino == a->ino && unlink(a->path))
		log_warn("admin socket %s: cannot remove it: %s", a->path,
			 strerror(errno));
	free(a);
}

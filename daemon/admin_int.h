/* SPDX-License-Identifier: MIT */
/*
 * admin_int.h -- what the files of the admin socket share, and no one
 * else, in the order they call each other: admin.c (the socket, the
 * loop, the command table) -> admin_cmd.c (the commands) -> admin_json.c
 * (replies, and leases and clients as JSON).
 */
#ifndef RMP_ADMIN_INT_H
#define RMP_ADMIN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <sys/un.h>
#include <event2/bufferevent.h>
#include <json-c/json.h>

#include "config.h"
#include "ops.h"

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

/* admin_json.c */
int adm_send_obj(struct admin_conn *c, json_object *o);
json_object *adm_ok_reply(void);
void adm_reply_error(struct admin_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
json_object *adm_client_json(const struct rmp_client_view *v);
json_object *adm_lease_json(const struct rmp_ops *o,
			    const struct rmp_lease_view *v, bool detail);
void adm_put(json_object *o, const char *k, json_object *v);
void adm_put_bool(json_object *o, const char *k, bool v);
void adm_put_i64(json_object *o, const char *k, int64_t v);
void adm_put_id(json_object *o, const char *k, uint64_t id);
void adm_put_text(json_object *o, const char *k, const char *s);
void adm_put_u64(json_object *o, const char *k, uint64_t v);
int64_t adm_unix_s(uint64_t t);

/* admin_cmd.c */
void adm_cmd_clients(struct admin_conn *c, json_object *req);
void adm_cmd_disconnect(struct admin_conn *c, json_object *req);
void adm_cmd_drain(struct admin_conn *c, json_object *req);
void adm_cmd_extend(struct admin_conn *c, json_object *req);
void adm_cmd_leases(struct admin_conn *c, json_object *req);
void adm_cmd_reload(struct admin_conn *c, json_object *req);
void adm_cmd_revoke(struct admin_conn *c, json_object *req);
void adm_cmd_show(struct admin_conn *c, json_object *req);
void adm_cmd_status(struct admin_conn *c, json_object *req);
void adm_cmd_undrain(struct admin_conn *c, json_object *req);
void adm_stream_leases(struct admin_conn *c);

#endif /* RMP_ADMIN_INT_H */

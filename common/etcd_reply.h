/* SPDX-License-Identifier: MIT */
/* etcd_reply.h -- what etcd's JSON gateway answers, as etcd.c hands it
 * to its callers: the reply of one request, and its reader. */
#ifndef RMP_ETCD_REPLY_H
#define RMP_ETCD_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMP_ETCD_HOST_LEN 254
/* Key-value pairs one reply keeps (a range reads no more than this). */
#define RMP_ETCD_KVS_MAX 256
/* Longest reply body taken (a range's; other answers and each message
 * of a watch may have 64 KiB); a longer one is an error. json-c may
 * take some 250 times a body's bytes while it reads it. */
#define RMP_ETCD_BODY_MAX (512u << 10)
/* Longest auth token taken (etcd's JWT of an RSA key: some 450 bytes). */
#define RMP_ETCD_TOKEN_MAX 4096

/* What a request asked for (and so what its reply holds). */
enum rmp_etcd_op {
	RMP_ETCD_PUT,
	RMP_ETCD_RANGE,
	RMP_ETCD_TXN,
	RMP_ETCD_DELETE,
	RMP_ETCD_GRANT,
	RMP_ETCD_KEEPALIVE,
	RMP_ETCD_REVOKE,
	RMP_ETCD_AUTH,
	RMP_ETCD_WATCH, /* one message of a watch's stream */
	RMP_ETCD_OPS,
};

/* One key-value pair of a reply: the bytes base64 decoded, each followed
 * by a NUL that its length does not count. */
struct rmp_etcd_kv {
	const char *key, *value;
	size_t key_len, value_len;
	int64_t create_revision, mod_revision, version, lease;
	bool deleted;  /* watch: a DELETE event (value empty) */
};

/*
 * A reply, valid during the callback only. err is 0, or:
 *   -ETIMEDOUT     the last endpoint tried did not answer in time
 *   -ECONNREFUSED  no endpoint could be reached (or all were unavailable)
 *   -EPROTO        an answer that is not what etcd says (not JSON, ...)
 *   -EACCES        etcd refused the credentials or the permission
 *   -ENOENT        no such lease (grant, keepalive: its TTL ran out)
 *   -ESTALE        watch: the revision it starts from is compacted
 *                  (read the keys again, then watch from there)
 *   -EIO           another etcd error (error says which); watch: etcd
 *                  canceled it
 *   -ECANCELED     never: a request of a freed client gets no callback
 */
struct rmp_etcd_reply {
	enum rmp_etcd_op op;
	int err;
	int status;               /* HTTP status; 0 when none came */
	int code;                 /* etcd's gRPC code of an error, else 0 */
	char error[200];          /* what went wrong, for a log line */
	char endpoint[RMP_ETCD_HOST_LEN + 8]; /* HOST:PORT tried last */
	int64_t revision;         /* header.revision */
	int64_t id, ttl;          /* grant, keepalive: lease ID and its TTL */
	int64_t count, deleted;   /* range: count; delete: deleted */
	bool succeeded;           /* txn: the compare held */
	char token[RMP_ETCD_TOKEN_MAX]; /* auth */
	/* watch: the stream was created, or etcd ended it (canceled; with
	 * compact_revision > 0: the revision asked for is compacted). The
	 * last call of a watch (rmp_etcd_watch) says only err: -ESTALE */
	bool created, canceled;
	int64_t compact_revision;
	unsigned nkvs;            /* range; txn: its range response's; watch:
				   * its events' */
	struct rmp_etcd_kv *kvs;  /* nkvs of them (rmp_etcd_reply_clear) */
	char *mem;                /* the kvs' bytes (rmp_etcd_reply_clear) */
};

/*
 * rmp_etcd_parse (etcd_reply.c) -- the body of an answer with HTTP
 * status to a request op, into r (which it clears first, keeping
 * nothing of it). A 200 answer fills the fields of op; another status,
 * or a body that holds an error, sets err, code and error. Any bytes
 * give a reply or -EPROTO: the body is never trusted. Returns r->err.
 * rmp_etcd_reply_clear -- free what a parse allocated; r is reusable.
 */
int rmp_etcd_parse(enum rmp_etcd_op op, int status, const char *body,
		   size_t len, struct rmp_etcd_reply *r);
void rmp_etcd_reply_clear(struct rmp_etcd_reply *r);
/* rmp_etcd_op_name -- "put", "range", ... for messages. */
const char *rmp_etcd_op_name(enum rmp_etcd_op op);

#endif /* RMP_ETCD_REPLY_H */

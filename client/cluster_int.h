/* SPDX-License-Identifier: MIT */
/*
 * cluster_int.h -- the cluster handle (struct rmp_cluster) and what its
 * files give each other, top first: cluster.c (open, close, the node
 * list, attach), cluster_alloc.c (placing a lease: one, mirrored or
 * striped),
 * cluster_conn.c (a connection per server), cluster_members.c (the
 * membership read from etcd and kept current by a watch) and
 * cluster_place.c (which node to try first). The module sits above the
 * public API: it reaches nodes through ordinary rmp_client handles and
 * hands out ordinary lease handles (a mirrored or striped one through
 * lease.h).
 */
#ifndef RMPC_CLUSTER_INT_H
#define RMPC_CLUSTER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "auth.h"   /* RMP_KEY_MAX, RMP_TENANT_MAX */
#include "etcd_reply.h" /* RMP_ETCD_KVS_MAX */
#include "lease_record.h"
#include "lease.h"  /* mirrored leases: struct rmpc_lease_list */
#include "member.h"
#include "proto.h"  /* RMP_NAME_MAX */
#include "rmpool.h"
#include "token.h"  /* RMP_TOKEN_HOST_MAX */

struct event_base;
struct rmp_etcd;
struct rmp_etcd_request;

#define CL_PREFIX_MAX 128
#define CL_ERRBUF 512
/* The most bytes a catch-up in place started by a data call copies (its
 * members' in all): the call waits for them, about 15 ms at 10 GB/s; a
 * larger member comes back by rmp_lease_repair. */
#define CL_CATCH_UP_MAX_BYTES (UINT64_C(64) << 20)
/* Most nodes a membership holds (etcd's range reads no more at once). */
#define CL_NODES_MAX RMP_ETCD_KVS_MAX

/* One connection of the cluster: to a server address and port. */
struct cl_conn {
	struct cl_conn *next;
	char host[RMP_TOKEN_HOST_MAX + 1];
	uint16_t port;
	struct rmp_client *c;
	bool up;   /* connected, and no call said otherwise since */
};

/* One node as this process knows it. */
struct cl_node {
	struct rmp_member m;   /* its record as last read */
	bool present;          /* its key is in etcd now */
	uint64_t taken;        /* bytes leased there by us since the record */
	struct rmpc_backoff backoff; /* could not connect: when to try */
	/* what our last connect to it said (rmp_node_info.proven): 1 it
	 * proved the tenant's key, -1 it did not (why), 0 not tried */
	int proven;
	char why[160];
};

struct rmp_cluster {
	/* cluster.c: set at open. */
	char prefix[CL_PREFIX_MAX];      /* "/rmpool/" */
	struct rmp_client_opts copts;    /* each node's connection; its
					  * strings point below */
	char name[RMP_NAME_MAX + 1];
	char tenant[RMP_TENANT_MAX + 1];
	uint8_t key[RMP_KEY_MAX];
	char key_file[4096];
	char err[CL_ERRBUF];             /* rmp_cluster_last_error() */
	uint32_t member_timeout_ms;      /* its groups' (0: never lost so) */
	/* cl_lease_catch_up, set at open: the keeper's retry (in
	 * cluster_lease.c, called from a data call) starts a catch-up in
	 * place, which is the repair's work (cluster_repair.c, above the
	 * keeper: it attaches, refreshes and publishes through it). An
	 * upcall, so that the files of the cluster call downward only. */
	int (*catch_up)(struct rmp_lease *l);
	struct cl_conn *conns;           /* cluster_conn.c: per server */
	struct rmpc_lease_list groups;   /* cluster_alloc.c: the mirrored
					  * leases made, closed at the end */

	/* cluster_members.c: etcd and the membership. */
	struct event_base *base;         /* the etcd client's loop: run
					  * only from within our calls */
	struct rmp_etcd *etcd;
	struct rmp_etcd_request *watch;  /* NULL: not watching */
	bool synced;     /* read, and watched (created) without a break
			  * since */
	int watch_err;   /* how the last watch ended */
	int64_t revision;                /* the last one applied */
	uint64_t watch_msgs;             /* the watch's messages so far */
	uint32_t seed_base;              /* random, drawn at open: with */
	uint32_t placings;               /* this count, each placing's seed */
	struct cl_node *nodes;
	unsigned nnodes;
	char etcd_err[256];              /* why etcd failed last */
};

/* What a placement wants (cluster.c parses the caller's options). */
struct cl_policy {
	uint64_t length;
	const char *prefer_label, *prefer_value; /* NULL: none */
	const char *const *exclude;      /* node names, nexclude of them */
	unsigned nexclude;
	uint64_t now_ms;                 /* nodes to retry later are last */
	bool any_room; /* nodes the view says are short of room too */
	uint32_t seed;                   /* orders nodes that count as equal */
};

/*
 * A cluster lease's record (cluster_record.c): its token, its member list
 * as last read or written, and where that is in etcd.
 */
struct cl_record {
	struct rmp_ctoken t;
	uint8_t key[RMP_LREC_KEY_LEN]; /* its seal's: cl_record_key */
	/* the seal's key before the tenant's key was rotated, which still
	 * opens the record until a holder reseals it (has_prev) */
	uint8_t prev_key[RMP_LREC_KEY_LEN];
	bool has_key, has_prev;
	struct rmp_lease_record r;
	int64_t mod_revision;  /* of the record as read or written last */
	int64_t create_revision; /* of its key, as read last */
	int64_t etcd_lease;    /* the etcd lease it is under */
	int64_t granted;       /* the etcd lease we granted for it (0:
				* none): the only one we revoke, as the
				* one read may be anybody's */
};

/* The writer claim of an erasure-coded lease's handle (cluster_claim.c). */
struct cl_claim {
	int64_t etcd_lease;    /* the claim's, granted by this handle (0:
				* none) */
	uint64_t until_ms;     /* rmp_now_ms() up to which it holds without
				* a look at etcd (0: look before a write) */
};

/* A cluster lease's group keeper state (cluster_lease.c). */
struct cl_lease {
	struct rmp_cluster *cl;
	struct cl_record rec;
	uint32_t access;        /* its members' (0: the lease's) */
	bool behind;            /* its record is older than what a member
				 * knows: attached for a repair only */
	/* the record's epoch when a catch-up in place failed or found a
	 * member gone (not tried again on that record; 0: none) */
	uint64_t caught_up_failed;
	struct cl_claim claim;  /* a coded lease's, once it wrote */
};

/*
 * cl_record_key -- rec's seal key from its token and the tenant's key
 * (the key file read now; the key before, when it changed, kept to
 * open the record with too). 0, or -ENOENT / -EACCES (the key file
 * cannot be used) with why in cl->err.
 * cl_record_create -- grant an etcd lease of ttl_ms (and some slack) and
 * create rec's record under it (there must be none: -EAGAIN).
 * cl_record_read -- rec's record by its token: r, mod_revision and
 * etcd_lease filled. -ENOENT when there is none or it does not open with
 * the token (to the caller, a wrong secret), -EPROTO when it does not
 * decode.
 * cl_record_replace -- write rec->r if the record is still the one of
 * rec->mod_revision (-EAGAIN when not), which becomes the new one.
 * cl_record_extend -- the same under a new etcd lease of ttl_ms (the old
 * one revoked): after a renewal.
 * cl_record_drop -- the record and its etcd lease gone.
 * Each returns 0, or an error with why in cl->err: the etcd errors of
 * cl_members_current and -ENOMEM.
 */
int cl_record_key(struct rmp_cluster *cl, struct cl_record *rec);

/* One etcd answer, copied out of its callback (cluster_record.c). */
struct cl_etcd_result {
	bool done;
	int err;
	char error[200];
	int64_t id, ttl;       /* grant, keepalive */
	int64_t revision;      /* etcd's after the request */
	bool succeeded;        /* txn */
	bool found;            /* range, txn failure: the key exists */
	int64_t mod_revision, create_revision, lease;
	uint8_t *value;        /* the key's value, a NUL after it (malloc'ed) */
	size_t value_len;
};

/*
 * cl_etcd_on_result -- the callback of a request whose arg is a
 * struct cl_etcd_result (zeroed before).
 * cl_etcd_wait -- the answer of a request queued with ret (0: it was),
 * waited for on the cluster's loop (the etcd client always answers in
 * its timeouts): 0 or the etcd client's error (for a caller:
 * cl_etcd_errno), why in res->error.
 */
void cl_etcd_on_result(const struct rmp_etcd_reply *r, void *arg);
int cl_etcd_wait(struct rmp_cluster *cl, int ret, struct cl_etcd_result *res);

/* cl_etcd_said -- err (a cluster call's, cl_etcd_errno) of a request
 * about `what` ("writing the lease's record"): why in cl->err; err. */
int cl_etcd_said(struct rmp_cluster *cl, int err,
		 const struct cl_etcd_result *res, const char *what);

/* cl_lease_key -- the etcd key of rec's lease under PREFIX/dir/ ("leases":
 * its record; "writers": an erasure-coded lease's writer claim). */
void cl_lease_key(const struct rmp_cluster *cl, const struct cl_record *rec,
		  const char *dir, char *key, size_t cap);

/*
 * cluster_claim.c: the one writer of an erasure-coded lease.
 * cl_claim_hold -- the keeper's claim (lease.h) for cx's handle.
 * cl_claim_release -- the handle's claim gone (its etcd lease revoked;
 * best effort: its ttl ends it anyway).
 * cl_claim_break -- rec's claim deleted, whoever holds it: by a repair,
 * once its fence revoked every holder's keys (the holder that writes
 * again attaches anew, and claims again). 0 or etcd's error.
 * cl_claim_doubt -- cx's claim trusted no more: proven in etcd again
 * before the next write (a fence may have broken it).
 */
int cl_claim_hold(struct cl_lease *cx);
void cl_claim_release(struct cl_lease *cx);
void cl_claim_doubt(struct cl_lease *cx);
int cl_claim_break(struct rmp_cluster *cl, const struct cl_record *rec);
int cl_record_create(struct rmp_cluster *cl, struct cl_record *rec,
		     uint64_t ttl_ms);
int cl_record_read(struct rmp_cluster *cl, struct cl_record *rec);
/*
 * cl_record_newest -- the record of rec read, and the newest one in its
 * history (etcd's, as far back as it keeps it) that opens with rec's
 * keys: when that is of a higher epoch than the one now (a record put
 * back over it), it is written again (a compare-and-swap, its repair
 * mark cleared) and 1 returned, rec the newer; 0 when the record now is
 * the newest; -ESTALE when etcd's history was compacted (nothing can
 * be told); else the errors of cl_record_read.
 */
int cl_record_newest(struct rmp_cluster *cl, struct cl_record *rec);
int cl_record_replace(struct rmp_cluster *cl, struct cl_record *rec);
int cl_record_extend(struct rmp_cluster *cl, struct cl_record *rec,
		     uint64_t ttl_ms);
int cl_record_drop(struct rmp_cluster *cl, struct cl_record *rec);

/*
 * cluster_lease.c: leases with a record.
 * cl_lease_publish -- the record of l, a group just placed (its replicas
 * on distinct values of spread, or NULL), written to etcd: l has a
 * cluster token and a keeper. 0, or the error with why in cl->err (l is
 * the caller's to free).
 * cl_lease_attach -- the lease of a cluster token: its record read (a
 * repair waited out), every member attached, one handle. Errors of
 * rmp_cluster_attach. With behind, for rmp_cluster_repair of a record a
 * member found old (-ESTALE): the members attached by epoch 0 (nothing
 * checked), the handle good for rmp_lease_repair only.
 * cl_lease_refresh -- l's keeper refresh: the members the record names
 * now and the handle lacks attached (the group takes them in place of
 * its old handles, and drops one the record no longer names); 0 when
 * the handle may try again.
 * cl_lease_catch_up -- l's stale members caught up where they are, when
 * every member to repair is only behind and its server still holds it
 * (a flap, a restart from state_dir): rmp_lease_repair without a new
 * member, for members of CL_CATCH_UP_MAX_BYTES in all at most (the
 * caller's data call waits for the copy). 0 also when it is not for it
 * (a member to place anew or too large: for rmp_lease_repair; another
 * holder's repair under way; its node out of reach still, tried on its
 * backoff); once it failed, not again until the record changes.
 * cl_record_settled -- cl_record_read, and again while a repair holds
 * the lease (until its deadline, at most a repair's budget from now; a
 * mark past its time is cleared).
 * cl_member_attach -- attach member t by a record of epoch (exclusive:
 * every other key to it revoked) through the cluster's connection to
 * its server; -EHOSTDOWN when its server is not in the membership,
 * -ESTALE when the member's group knows a newer epoch.
 * cl_member_node -- the node whose address and port t names, or NULL.
 * cl_member_token -- the token of the lease handle m.
 * cl_wall_ms -- the wall clock, in ms (records are read on other hosts).
 * cl_repair_budget_ms -- the longest a repair of a lease of bytes may
 * hold it (its mark's deadline from its start).
 */
int cl_lease_publish(struct rmp_cluster *cl, struct rmp_lease *l,
		     const char *spread);
int cl_lease_attach(struct rmp_cluster *cl, const char *token,
		    const struct rmp_attach_opts *opts, bool behind,
		    struct rmp_lease **out);
int cl_lease_refresh(struct rmp_lease *l);
int cl_lease_catch_up(struct rmp_lease *l);
int cl_record_settled(struct rmp_cluster *cl, struct cl_record *rec);
int cl_member_attach(struct rmp_cluster *cl, const struct rmp_token *t,
		     uint32_t access, bool exclusive, uint64_t epoch,
		     struct rmp_lease **out);
struct cl_node *cl_member_node(struct rmp_cluster *cl,
			       const struct rmp_token *t);
void cl_member_token(const struct rmp_lease *m, struct rmp_token *t);
uint64_t cl_wall_ms(void);
uint64_t cl_repair_budget_ms(uint64_t bytes);

/*
 * cl_alloc_apart -- a lease of length bytes (ao) on a node that is none
 * of avoid[0..navoid) (node indexes), nor on a value of the label spread
 * (NULL: none) one of them has, nor named exclude (NULL: none). 0 and
 * *out, or the error with why in cl->err. For a repair.
 */
int cl_alloc_apart(struct rmp_cluster *cl, uint64_t length,
		   const struct rmp_alloc_opts *ao, const char *spread,
		   const unsigned *avoid, unsigned navoid,
		   const char *exclude, struct rmp_lease **out);

/* cl_etcd_errno -- what the cluster calls return for an etcd client's
 * error: the few rmpool.h documents (-EIO for the rest). */
int cl_etcd_errno(int err);

/* cl_say -- why the call fails, for rmp_cluster_last_error(). */
void cl_say(struct rmp_cluster *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * cl_conn_find -- the connection to host:port, made (not connected) if
 * new; NULL when out of memory.
 * cl_conn_up -- k connected: at once when it is, else a (new) connect;
 * 0 or the error of rmp_client_connect, said in cl->err.
 * cl_node_conn -- a working connection to node n: over its rails when its
 * record lists two or more devices with their addresses (host "A1,A2",
 * rmp_client_connect's rails), else (or when that fails) each address
 * of its record in turn; NULL with *err (the last connect's error, or -ENOMEM)
 * and why in cl->err, and n is tried last for a while (a second,
 * doubling up to 30 s).
 * cl_token_conn -- the working connection to the server of token; NULL
 * with *err (-EINVAL: not a token; -ENOMEM; a connect's error).
 * cl_member_conn -- the same for a member token (t, its text token) of
 * node n (NULL: not known), but over all of n's rails when its record
 * lists several devices and rail 0 is the token's address: a holder that
 * attaches a lease by its token moves its bytes over every device of
 * the node, as the process that allocated it does.
 * cl_conn_first -- addr is k's host, or the first of its rail list.
 * cl_conn_attach -- rmp_lease_attach_with on k (by a cluster record of
 * epoch: rmpc_lease_attach_epoch; 0 none), once more on a new
 * connection when k's broke since its last use; why in cl->err.
 * cl_conns_free -- free every connection (and its lease handles).
 */
struct cl_conn *cl_conn_find(struct rmp_cluster *cl, const char *host,
			     uint16_t port);
int cl_conn_up(struct rmp_cluster *cl, struct cl_conn *k);
bool cl_conn_first(const struct cl_conn *k, const char *addr);
struct cl_conn *cl_node_conn(struct rmp_cluster *cl, struct cl_node *n,
			     int *err);
/* cl_node_unreachable -- n could not be reached at now: tried last, and
 * not by a suspect member's retry, for a while (a second, doubling up to
 * 30 s; cl_node_conn's backoff). */
void cl_node_unreachable(struct cl_node *n, uint64_t now);
struct cl_conn *cl_token_conn(struct rmp_cluster *cl, const char *token,
			      int *err);
struct cl_conn *cl_member_conn(struct rmp_cluster *cl, struct cl_node *n,
			       const struct rmp_token *t, const char *token,
			       int *err);
int cl_conn_attach(struct rmp_cluster *cl, struct cl_conn *k,
		   const char *token, const struct rmp_attach_opts *opts,
		   uint64_t epoch, struct rmp_lease **out);
void cl_conns_free(struct rmp_cluster *cl);

/*
 * cl_members_open -- a client of the etcd endpoints in url (with opts'
 * TLS files and credentials), the membership read and a watch started.
 * 0, or -errno with why in cl->err. cl_members_close undoes it (the
 * nodes' connections are cluster.c's: closed before).
 */
int cl_members_open(struct rmp_cluster *cl, const char *url,
		    const struct rmp_cluster_opts *opts);
void cl_members_close(struct rmp_cluster *cl);

/*
 * cl_members_current -- take in what the watch brought; when it broke,
 * read the membership again and watch anew. 0 when the membership is
 * current, else the etcd error (-ECONNREFUSED, -ETIMEDOUT, -EACCES,
 * -EIO, -EPROTO) with why in cl->err: nothing may be placed then.
 */
int cl_members_current(struct rmp_cluster *cl);

/* cl_node_find -- the node of that name (present or not), or NULL. */
struct cl_node *cl_node_find(struct rmp_cluster *cl, const char *name);

/* cl_mix32 -- murmur3's finalizer: x's bits mixed, one to one. */
uint32_t cl_mix32(uint32_t x);

/*
 * cl_place -- the order in which to try nodes[0..n) for p: indexes into
 * order (room for n), the count returned (or -ENOMEM). Left out: nodes not present,
 * draining, excluded, or without p->length bytes in one free extent
 * (less what we leased there since its record; with p->any_room, only
 * a node whose every pool is smaller).
 * First the nodes with
 * p's preferred label, then by most free bytes; nodes within 1/16 of
 * the most free of their group count as equal and come in an order of
 * p->seed, so that clients with the same view spread their leases.
 * Nodes we could not connect to lately come after all others.
 */
int cl_place(const struct cl_node *nodes, unsigned n,
	     const struct cl_policy *p, unsigned *order);

#endif /* RMPC_CLUSTER_INT_H */

/* SPDX-License-Identifier: MIT */
/* rmp_py.h -- shared declarations of the _rmpool extension's files. */
#ifndef RMP_PY_H
#define RMP_PY_H

/*
 * The stable ABI of 3.11 is enough: heap types from PyType_FromSpec,
 * PyObject_GetBuffer/PyBuffer_Release (limited API since 3.11), struct
 * sequences. meson 1.0 has no limited_api: keyword, so it is set here.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <structmember.h>

#include <stdint.h>

#include "rmpool.h"

/* The lock of a Client, or of a Cluster (its connections and leases
 * belong to one thread at a time): see rmp_py_lock. */
typedef struct {
	PyThread_type_lock lock;
	unsigned long owner;  /* thread holding lock (read under the GIL) */
	int depth;            /* its re-entries, see rmp_py_lock */
} RmpLock;

/*
 * A Client owns its rmp_client. Leases and registered buffers hold a
 * reference to their Client, so the rmp_client (freed with the Client
 * object, which frees its lease handles and buffers too) outlives them.
 * Client.close() only disconnects: handles stay valid and give
 * -ENOTCONN. Every call into the library on one client takes the
 * client's lock, so a Client may be shared by threads: their calls run
 * one after the other, each with the GIL released while it waits.
 */
typedef struct {
	PyObject_HEAD
	struct rmp_client *c;
	RmpLock lk;
	PyObject *host;       /* str, as given */
	int port;
	int connected;
	int reconnects;       /* reconnect_max_ms > 0: reconnects by itself */
	PyObject *pending;    /* dict: op id -> (user_data, RegisteredBuffer) */
	uint64_t next_op;
	/* Completions reaped and not returned yet (client.c client_poll),
	 * oldest first; touched with the GIL held only. */
	struct rmp_completion *held;
	size_t nheld, held_cap;
	size_t reaping;       /* room polls in progress may put back */
	PyObject *weakreflist;
} RmpClient;

typedef struct RmpLease RmpLease;

/*
 * A Cluster owns its rmp_cluster, which owns the connections it opened
 * and every lease handle on them. Its leases hold a reference to it, and
 * it keeps a list of them: Cluster.close() closes their handles (they
 * then raise ValueError) before rmp_cluster_close frees what was under
 * them. One lock for the cluster and all its leases.
 */
typedef struct {
	PyObject_HEAD
	struct rmp_cluster *cl; /* NULL once closed */
	RmpLock lk;
	RmpLease *leases;     /* its live lease handles */
	PyObject *url;        /* str, as given */
	PyObject *weakreflist;
} RmpCluster;

/* A lease of a Client (client set) or of a Cluster (cluster set). */
struct RmpLease {
	PyObject_HEAD
	RmpClient *client;
	RmpCluster *cluster;
	RmpLease *next, **pprev; /* in cluster->leases while l is set */
	struct rmp_lease *l;  /* NULL once freed or closed */
	int free_on_exit;
	PyObject *weakreflist;
};

typedef struct {
	PyObject_HEAD
	RmpClient *client;
	struct rmp_buf *b;    /* NULL once unregistered */
	Py_buffer view;       /* held while registered: the memory stays put */
	int have_view;
	Py_ssize_t inflight;  /* posted operations not reaped yet */
	PyObject *weakreflist;
} RmpBuf;

/* Types and exception classes, made once at module init. */
extern PyObject *rmp_py_client_type, *rmp_py_lease_type, *rmp_py_buf_type;
extern PyObject *rmp_py_info_type, *rmp_py_cluster_type;
extern PyObject *rmp_py_node_info_type;

/* errors.c */
int rmp_py_errors_init(PyObject *m);
/* rmp_py_exception -- an exception instance for rc (negative errno) with
 * the library's text and detail (NULL or "": none); new reference. */
PyObject *rmp_py_exception(int rc, const char *detail);
/* rmp_py_error_detail -- raise that exception; NULL. Not under a lock. */
PyObject *rmp_py_error_detail(const char *detail, int rc);
/*
 * A failed library call is noted while its lock is held (errno and a
 * copy of the last-error text, which the next call may change) and
 * raised once the lock is given back: building an exception runs Python
 * code (the garbage collector, finalizers) that may wait for this lock
 * in another thread.
 */
struct rmp_py_fail {
	int rc;
	char detail[512];
};
/* rmp_py_note -- rc and a copy of detail (NULL: none) into f. */
void rmp_py_note(struct rmp_py_fail *f, int rc, const char *detail);
/* rmp_py_raise -- raise what f noted; NULL. */
PyObject *rmp_py_raise(const struct rmp_py_fail *f);
/* rmp_py_client_detail -- c's last error (c's lock held), or NULL. */
const char *rmp_py_client_detail(const RmpClient *c);

/*
 * RMP_PY_CALL_ON -- rc = call (a library call that may wait, no Python
 * object in it) under lock lk with the GIL released. h = handle is read
 * once the lock is held, with the GIL (waiting for the lock, the GIL was
 * released: another thread may have closed the handle meanwhile, and may
 * again while call runs without the GIL): call uses h, never the object's
 * field. When h is 0, no call, rc = -EBADF and the statement gone (which
 * raises) runs after the unlock. When rc < 0, detail (evaluated under
 * the lock) is noted and the exception raised after the unlock.
 * RMP_PY_CALL -- the same for a call on client c (no handle).
 */
#define RMP_PY_CALL_ON(lk, rc, h, handle, gone, detail, call)           \
	do {                                                            \
		struct rmp_py_fail fail_;                               \
		rmp_py_lock(lk);                                        \
		(h) = (handle);                                         \
		if (h) {                                                \
			Py_BEGIN_ALLOW_THREADS                          \
			(rc) = (call);                                  \
			Py_END_ALLOW_THREADS                            \
			if ((rc) < 0)                                   \
				rmp_py_note(&fail_, (rc), (detail));    \
		}                                                       \
		rmp_py_unlock(lk);                                      \
		if (!(h)) {                                             \
			(rc) = -EBADF;                                  \
			gone;                                           \
		} else if ((rc) < 0) {                                  \
			rmp_py_raise(&fail_);                           \
		}                                                       \
	} while (0)
#define RMP_PY_CALL(c, rc, call)                                        \
	do {                                                            \
		int one_;                                               \
		RMP_PY_CALL_ON(&(c)->lk, rc, one_, 1, (void)0,          \
			       rmp_py_client_detail(c), call);          \
	} while (0)

/* args.c -- Python arguments to C values, for client.c and cluster.c. */
/* rmp_py_bounded -- int o in [min, max] (TypeError / ValueError otherwise:
 * no silent wrap of 2**64 + 5 to 5). */
int rmp_py_bounded(PyObject *o, const char *what, unsigned long long min,
		   unsigned long long max, unsigned long long *out);
/* rmp_py_utf8 -- str o as UTF-8, refusing an embedded NUL. */
int rmp_py_utf8(PyObject *o, const char **out);
/* rmp_py_opt_str -- str o (None: NULL; not given, o NULL: $env). */
int rmp_py_opt_str(PyObject *o, const char *env, const char **out);
/* rmp_py_seconds_ms -- seconds o (None: keep *ms) as milliseconds. */
int rmp_py_seconds_ms(PyObject *o, const char *what, int *ms);
/* rmp_py_ttl -- a ttl in whole seconds (None: 0, the server's default). */
int rmp_py_ttl(PyObject *o, uint32_t *ttl);
/* The connection options Client and Cluster take, as parsed. */
struct rmp_py_copts {
	PyObject *tenant, *key, *key_file, *timeout, *op_timeout; /* NULL:
				 * not given */
	PyObject *reconnect, *max_inflight; /* int, checked; NULL: not given */
	const char *name;
	int spin;
	Py_ssize_t bounce, rail_stripe;
	Py_buffer keybuf;     /* held by rmp_py_client_opts; release with
			       * rmp_py_copts_release */
};
/* rmp_py_attach_args -- attach's arguments (token, *, read_only,
 * exclusive, access, free_on_exit), as Client and Cluster take them. */
int rmp_py_attach_args(PyObject *args, PyObject *kw, const char **token,
		       struct rmp_attach_opts *o, int *free_on_exit);
/* rmp_py_client_opts -- fill o from p (rmp_client_opts_init first). */
int rmp_py_client_opts(struct rmp_py_copts *p, struct rmp_client_opts *o);
void rmp_py_copts_release(struct rmp_py_copts *p);

/* client_state.c (below client.c, lease.c and buffer.c) */
/* Lock lk for a call into the library (waiting with the GIL released).
 * Re-entrant for safety: nothing that runs Python code (and so the
 * garbage collector, whose deallocation of a lease locks its client or
 * cluster) should run under the lock, but a thread that does lock it
 * again does not deadlock with itself. */
int rmp_py_lock_init(RmpLock *lk);
void rmp_py_lock_free(RmpLock *lk);
void rmp_py_lock(RmpLock *lk);
void rmp_py_unlock(RmpLock *lk);
/*
 * rmp_py_exiting -- the interpreter is exiting (the package's atexit
 * hook). A daemon thread may then stop for good inside a call, holding
 * its lock (it exits when it wants the GIL back), and the objects that
 * the teardown frees must not wait for that lock forever.
 * rmp_py_lock_to_free -- rmp_py_lock for a close or a deallocation: once
 * exiting, it waits 2 s at most and returns -1 (not locked) after, and
 * the caller leaves its handle to the process's end.
 */
void rmp_py_exiting(void);
int rmp_py_lock_to_free(RmpLock *lk);
/* rmp_py_lease_lock -- the lock of lease's client or cluster; of a bound
 * lease only (a blank one, rmp_py_lease_blank's, has neither). */
RmpLock *rmp_py_lease_lock(RmpLease *lease);
/* rmp_py_cluster_link, _unlink -- lease into and out of its cluster's
 * list of live handles. */
void rmp_py_cluster_link(RmpCluster *cl, RmpLease *lease);
void rmp_py_cluster_unlink(RmpLease *lease);
/* rmp_py_check_open -- 0, or -1 with an exception when c is closed. */
int rmp_py_check_open(RmpClient *c);
/* rmp_py_track_op -- remember an operation about to be posted: its id
 * (for rmp_post_*) in *id; takes references to user_data and b. */
int rmp_py_track_op(RmpClient *c, PyObject *user_data, RmpBuf *b,
		    uint64_t *id);
/* rmp_py_untrack_op -- forget an operation that was not posted. */
void rmp_py_untrack_op(RmpClient *c, uint64_t id);
/* rmp_py_forget_op -- drop op id's entry, if any (its buffer's count
 * too): the (user_data, buffer) tuple (new reference), or NULL (with an
 * exception set only on an error). */
PyObject *rmp_py_forget_op(RmpClient *c, uint64_t id);
/* rmp_py_peek_op -- op id's key and (user_data, buffer) tuple, new
 * references (both NULL when it is not pending), changing nothing: 0, or
 * -1 with an exception. rmp_py_forget_peeked -- then drop that entry if
 * it is still there (its buffer's count too) and the two references;
 * cannot fail (NULLs: nothing). */
int rmp_py_peek_op(RmpClient *c, uint64_t id, PyObject **key,
		   PyObject **val);
void rmp_py_forget_peeked(RmpClient *c, PyObject *key, PyObject *val);
/* rmp_py_drop_ops -- the library dropped every queued and in-flight
 * operation (close): forget them all. */
void rmp_py_drop_ops(RmpClient *c);
/* rmp_py_dealloc -- the tail of a heap type's tp_dealloc. */
void rmp_py_dealloc(PyObject *self);

/* client.c */
int rmp_py_client_init(PyObject *m);

/* lease.c */
int rmp_py_lease_init(PyObject *m);
/* rmp_py_lease_new -- wrap l of client c (takes ownership of l). */
PyObject *rmp_py_lease_new(RmpClient *c, struct rmp_lease *l,
			   int free_on_exit);
/* rmp_py_lease_blank -- a Lease without a handle (new reference): made
 * before the cluster's lock is taken, as making it may run Python code. */
PyObject *rmp_py_lease_blank(void);
/* rmp_py_cluster_lease_bind -- blank lease gets l of cluster cl (takes
 * ownership of l); with cl's lock held, so that no close comes between
 * the call that made l and this. Runs no Python code. */
void rmp_py_cluster_lease_bind(RmpCluster *cl, PyObject *lease,
			       struct rmp_lease *l, int free_on_exit);

/* cluster.c */
int rmp_py_cluster_init(PyObject *m);

/* buffer.c */
int rmp_py_buf_init(PyObject *m);
/* rmp_py_buf_new -- register obj's memory with client c. */
PyObject *rmp_py_buf_new(RmpClient *c, PyObject *obj);
/* rmp_py_buf_check -- 0 when o is a registered RegisteredBuffer of c
 * with [off, off + len) inside it, else -1 with an exception. */
int rmp_py_buf_check(PyObject *o, RmpClient *c, Py_ssize_t off,
		     Py_ssize_t len);

#endif /* RMP_PY_H */

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
	PyThread_type_lock lock;
	unsigned long owner;  /* thread holding lock (read under the GIL) */
	int depth;            /* its re-entries, see rmp_py_lock */
	PyObject *host;       /* str, as given */
	int port;
	int connected;
	int reconnects;       /* reconnect_max_ms > 0: reconnects by itself */
	PyObject *pending;    /* dict: op id -> (user_data, RegisteredBuffer) */
	uint64_t next_op;
	PyObject *weakreflist;
} RmpClient;

typedef struct {
	PyObject_HEAD
	RmpClient *client;
	struct rmp_lease *l;  /* NULL once freed or closed */
	int free_on_exit;
	PyObject *weakreflist;
} RmpLease;

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
extern PyObject *rmp_py_info_type;

/* errors.c */
int rmp_py_errors_init(PyObject *m);
/* rmp_py_exception -- an exception instance for rc (negative errno) with
 * the library's text and detail (may be NULL or ""); new reference. */
PyObject *rmp_py_exception(int rc, const char *detail);
/* rmp_py_error -- raise rc's exception without a detail (an argument the
 * extension refused before calling the library); NULL. */
PyObject *rmp_py_error(int rc);
/*
 * A failed library call is noted while its client is locked (the
 * client's last-error text copied, as the next call may change it) and
 * raised once the lock is given back: building an exception runs Python
 * code (the garbage collector, finalizers) that may wait for this client
 * in another thread.
 */
struct rmp_py_fail {
	int rc;
	char detail[512];
};
void rmp_py_note(RmpClient *c, int rc, struct rmp_py_fail *f);
/* rmp_py_raise -- raise what f noted; NULL. */
PyObject *rmp_py_raise(const struct rmp_py_fail *f);

/*
 * RMP_PY_CALL -- rc = call (a library call on client c that may wait, no
 * Python object in it) under c's lock with the GIL released; when rc < 0
 * the exception is raised after the lock is given back.
 * RMP_PY_CALL_ON -- the same for a call on a handle (a lease, a buffer):
 * handle is read again once the lock is held (waiting for it, the GIL was
 * released: another thread may have closed the handle meanwhile); when it
 * is gone, rc = -EBADF and ValueError(gone) instead of the call.
 */
#define RMP_PY_CALL(c, rc, call) RMP_PY_CALL_ON(c, rc, 1, NULL, call)
#define RMP_PY_CALL_ON(c, rc, handle, gone, call)                       \
	do {                                                            \
		struct rmp_py_fail fail_;                               \
		int live_;                                              \
		rmp_py_lock(c);                                         \
		live_ = (handle) != 0;                                  \
		if (live_) {                                            \
			Py_BEGIN_ALLOW_THREADS                          \
			(rc) = (call);                                  \
			Py_END_ALLOW_THREADS                            \
			if ((rc) < 0)                                   \
				rmp_py_note((c), (rc), &fail_);         \
		}                                                       \
		rmp_py_unlock(c);                                       \
		if (!live_) {                                           \
			(rc) = -EBADF;                                  \
			PyErr_SetString(PyExc_ValueError, (gone));      \
		} else if ((rc) < 0) {                                  \
			rmp_py_raise(&fail_);                           \
		}                                                       \
	} while (0)

/* client_state.c (below client.c, lease.c and buffer.c) */
/* Lock c for a call into the library (waiting with the GIL released).
 * Re-entrant for safety: nothing that runs Python code (and so the
 * garbage collector, whose deallocation of a lease of c locks c) should
 * run under the lock, but a thread that does lock c again does not
 * deadlock with itself. */
void rmp_py_lock(RmpClient *c);
void rmp_py_unlock(RmpClient *c);
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

/* buffer.c */
int rmp_py_buf_init(PyObject *m);
/* rmp_py_buf_new -- register obj's memory with client c. */
PyObject *rmp_py_buf_new(RmpClient *c, PyObject *obj);
/* rmp_py_buf_check -- 0 when o is a registered RegisteredBuffer of c
 * with [off, off + len) inside it, else -1 with an exception. */
int rmp_py_buf_check(PyObject *o, RmpClient *c, Py_ssize_t off,
		     Py_ssize_t len);

#endif /* RMP_PY_H */

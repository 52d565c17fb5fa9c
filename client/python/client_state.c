/* SPDX-License-Identifier: MIT */
/*
 * client_state.c -- what the extension's types share below them: a
 * Client's lock, its table of posted operations (each op's user data
 * and buffer, until its completion is reaped), and the dealloc tail of
 * the heap types. client.c, lease.c and buffer.c call down to it;
 * module.c is above them all.
 */
#include "rmp_py.h"

int rmp_py_lock_init(RmpLock *lk)
{
	lk->lock = PyThread_allocate_lock();
	return lk->lock ? 0 : -1;
}

void rmp_py_lock_free(RmpLock *lk)
{
	if (lk->lock)
		PyThread_free_lock(lk->lock);
	lk->lock = NULL;
}

/* take -- lk for this thread (again, if it holds it), waiting at most
 * timeout_us (< 0: as long as it takes) with the GIL released; 0, or -1
 * when the wait timed out. */
static int take(RmpLock *lk, PY_TIMEOUT_T timeout_us)
{
	unsigned long me = PyThread_get_thread_ident();
	PyLockStatus got = PY_LOCK_ACQUIRED;

	if (lk->depth > 0 && lk->owner == me) {
		lk->depth++;
		return 0;
	}
	if (!PyThread_acquire_lock(lk->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		got = PyThread_acquire_lock_timed(lk->lock, timeout_us, 0);
		Py_END_ALLOW_THREADS
	}
	if (got != PY_LOCK_ACQUIRED)
		return -1;
	lk->owner = me;
	lk->depth = 1;
	return 0;
}

void rmp_py_lock(RmpLock *lk)
{
	(void)take(lk, -1);
}

/* Set by the package's atexit hook (rmp_py_exiting). */
static int exiting;

void rmp_py_exiting(void)
{
	exiting = 1;
}

int rmp_py_lock_to_free(RmpLock *lk)
{
	return take(lk, exiting ? 2000000 : -1);
}

void rmp_py_unlock(RmpLock *lk)
{
	if (--lk->depth > 0)
		return;
	lk->owner = 0;
	PyThread_release_lock(lk->lock);
}

RmpLock *rmp_py_lease_lock(RmpLease *lease)
{
	return lease->client ? &lease->client->lk : &lease->cluster->lk;
}

void rmp_py_cluster_link(RmpCluster *cl, RmpLease *lease)
{
	lease->next = cl->leases;
	if (lease->next)
		lease->next->pprev = &lease->next;
	lease->pprev = &cl->leases;
	cl->leases = lease;
}

void rmp_py_cluster_unlink(RmpLease *lease)
{
	if (!lease->pprev)
		return;
	*lease->pprev = lease->next;
	if (lease->next)
		lease->next->pprev = lease->pprev;
	lease->next = NULL;
	lease->pprev = NULL;
}

int rmp_py_check_open(RmpClient *c)
{
	if (c->c && c->connected)
		return 0;
	PyErr_SetString(PyExc_ValueError, "the client is closed");
	return -1;
}

/* buf_done -- one operation on b less in flight (never below 0: a buffer
 * cleared by the garbage collector already counts none). */
static void buf_done(RmpBuf *b)
{
	if (b->inflight > 0)
		b->inflight--;
}

int rmp_py_track_op(RmpClient *c, PyObject *user_data, RmpBuf *b,
		    uint64_t *id)
{
	PyObject *key, *val;
	int rc;

	key = PyLong_FromUnsignedLongLong(c->next_op);
	if (!key)
		return -1;
	val = PyTuple_Pack(2, user_data, (PyObject *)b);
	if (!val) {
		Py_DECREF(key);
		return -1;
	}
	rc = PyDict_SetItem(c->pending, key, val);
	Py_DECREF(key);
	Py_DECREF(val);
	if (rc < 0)
		return -1;
	b->inflight++;
	*id = c->next_op++;
	return 0;
}

PyObject *rmp_py_forget_op(RmpClient *c, uint64_t id)
{
	PyObject *key = PyLong_FromUnsignedLongLong(id), *val;

	if (!key)
		return NULL;
	val = PyDict_GetItemWithError(c->pending, key);
	if (val) {
		Py_INCREF(val);
		buf_done((RmpBuf *)PyTuple_GetItem(val, 1));
		if (PyDict_DelItem(c->pending, key) < 0)
			Py_CLEAR(val);
	}
	Py_DECREF(key);
	return val;
}

int rmp_py_peek_op(RmpClient *c, uint64_t id, PyObject **key,
		   PyObject **val)
{
	*val = NULL;
	*key = PyLong_FromUnsignedLongLong(id);
	if (!*key)
		return -1;
	*val = PyDict_GetItemWithError(c->pending, *key);
	if (!*val) {
		Py_CLEAR(*key);
		return PyErr_Occurred() ? -1 : 0;
	}
	Py_INCREF(*val);
	return 0;
}

void rmp_py_forget_peeked(RmpClient *c, PyObject *key, PyObject *val)
{
	if (!key)
		return;
	/* (A close meanwhile may have dropped it: rmp_py_drop_ops.) An int
	 * key's lookup and removal allocate nothing. */
	if (PyDict_GetItemWithError(c->pending, key) == val) {
		buf_done((RmpBuf *)PyTuple_GetItem(val, 1));
		if (PyDict_DelItem(c->pending, key) < 0)
			PyErr_Clear();
	}
	Py_DECREF(key);
	Py_DECREF(val);
}

void rmp_py_untrack_op(RmpClient *c, uint64_t id)
{
	PyObject *exc_t, *exc_v, *exc_tb;

	/* Keeps the exception the failed post raised. */
	PyErr_Fetch(&exc_t, &exc_v, &exc_tb);
	Py_XDECREF(rmp_py_forget_op(c, id));
	PyErr_Restore(exc_t, exc_v, exc_tb);
}

void rmp_py_drop_ops(RmpClient *c)
{
	Py_ssize_t pos = 0;
	PyObject *key, *val;

	if (!c->pending)
		return;
	while (PyDict_Next(c->pending, &pos, &key, &val))
		buf_done((RmpBuf *)PyTuple_GetItem(val, 1));
	PyDict_Clear(c->pending);
}

void rmp_py_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);

	f(self);
	Py_DECREF(tp);
}

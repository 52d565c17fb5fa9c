/* SPDX-License-Identifier: MIT */
/*
 * client_state.c -- what the extension's types share below them: a
 * Client's lock, its table of posted operations (each op's user data
 * and buffer, until its completion is reaped), and the dealloc tail of
 * the heap types. client.c, lease.c and buffer.c call down to it;
 * module.c is above them all.
 */
#include "rmp_py.h"

void rmp_py_lock(RmpClient *c)
{
	unsigned long me = PyThread_get_thread_ident();

	if (c->depth > 0 && c->owner == me) {
		c->depth++;
		return;
	}
	if (!PyThread_acquire_lock(c->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(c->lock, WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
	c->owner = me;
	c->depth = 1;
}

void rmp_py_unlock(RmpClient *c)
{
	if (--c->depth > 0)
		return;
	c->owner = 0;
	PyThread_release_lock(c->lock);
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

/* SPDX-License-Identifier: MIT */
/* buffer.c -- rmpool.RegisteredBuffer: a Python buffer registered with the device. */
#include <errno.h>

#include "rmp_py.h"

PyObject *rmp_py_buf_type;

PyObject *rmp_py_buf_new(RmpClient *c, PyObject *obj)
{
	PyTypeObject *tp = (PyTypeObject *)rmp_py_buf_type;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	RmpBuf *self;
	int rc;

	self = (RmpBuf *)alloc(tp, 0);
	if (!self)
		return NULL;
	/* Writable when it can be (reads land in it), else read-only (a
	 * source of writes only). Held until unregistered: an exporter such
	 * as bytearray refuses to resize while a view exists. */
	if (PyObject_GetBuffer(obj, &self->view, PyBUF_WRITABLE) < 0) {
		PyErr_Clear();
		if (PyObject_GetBuffer(obj, &self->view, PyBUF_SIMPLE) < 0)
			goto err;
	}
	self->have_view = 1;
	if (self->view.len == 0) {
		PyErr_SetString(PyExc_ValueError,
				"cannot register an empty buffer");
		goto err;
	}
	self->client = (RmpClient *)Py_NewRef((PyObject *)c);
	RMP_PY_CALL(c, rc, rmp_buf_reg(c->c, self->view.buf,
				       (size_t)self->view.len, &self->b));
	if (rc < 0)
		goto err;
	return (PyObject *)self;
err:
	Py_DECREF(self);
	return NULL;
}

int rmp_py_buf_check(PyObject *o, RmpClient *c, Py_ssize_t off,
		     Py_ssize_t len)
{
	RmpBuf *b;

	if (!PyObject_TypeCheck(o, (PyTypeObject *)rmp_py_buf_type)) {
		PyErr_SetString(PyExc_TypeError,
				"buffer must be a RegisteredBuffer");
		return -1;
	}
	b = (RmpBuf *)o;
	if (!b->b) {
		PyErr_SetString(PyExc_ValueError,
				"the buffer is not registered any more");
		return -1;
	}
	if (b->client != c) {
		PyErr_SetString(PyExc_ValueError,
				"the buffer is registered with another client");
		return -1;
	}
	if (off < 0 || len <= 0 || off > b->view.len ||
	    len > b->view.len - off) {
		PyErr_Format(PyExc_ValueError,
			     "[boff, boff + length) outside the %zd-byte "
			     "buffer, or empty", b->view.len);
		return -1;
	}
	return 0;
}

/* unregister -- deregister and let go of the memory; -1 with an
 * exception while operations on it are in flight. */
static int unregister(RmpBuf *self)
{
	if (self->inflight > 0) {
		PyErr_Format(PyExc_BufferError,
			     "%zd operation(s) on the buffer not polled yet",
			     self->inflight);
		return -1;
	}
	if (self->b) {
		/* Exiting, the lock held for good: the registration and
		 * the memory are left to the process's end. */
		if (rmp_py_lock_to_free(&self->client->lk) < 0)
			return 0;
		/* The lock may have waited with the GIL released: another
		 * thread may have posted on the buffer meanwhile. */
		if (self->inflight > 0) {
			rmp_py_unlock(&self->client->lk);
			PyErr_Format(PyExc_BufferError, "%zd operation(s) on "
				     "the buffer not polled yet",
				     self->inflight);
			return -1;
		}
		rmp_buf_dereg(self->b);
		self->b = NULL;
		rmp_py_unlock(&self->client->lk);
	}
	if (self->have_view) {
		self->have_view = 0;
		PyBuffer_Release(&self->view);
	}
	return 0;
}

static PyObject *buf_unregister(PyObject *o, PyObject *unused)
{
	if (unregister((RmpBuf *)o) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *buf_enter(PyObject *o, PyObject *unused)
{
	if (!((RmpBuf *)o)->b) {
		PyErr_SetString(PyExc_ValueError,
				"the buffer is not registered any more");
		return NULL;
	}
	return Py_NewRef(o);
}

static PyObject *buf_get_obj(PyObject *o, void *unused)
{
	RmpBuf *self = (RmpBuf *)o;

	return Py_NewRef(self->have_view && self->view.obj ?
			 self->view.obj : Py_None);
}

static PyObject *buf_get_registered(PyObject *o, void *unused)
{
	return PyBool_FromLong(((RmpBuf *)o)->b != NULL);
}

static PyObject *buf_get_readonly(PyObject *o, void *unused)
{
	RmpBuf *self = (RmpBuf *)o;

	return PyBool_FromLong(self->have_view && self->view.readonly);
}

static PyObject *buf_get_inflight(PyObject *o, void *unused)
{
	return PyLong_FromSsize_t(((RmpBuf *)o)->inflight);
}

static Py_ssize_t buf_len(PyObject *o)
{
	RmpBuf *self = (RmpBuf *)o;

	return self->have_view ? self->view.len : 0;
}

static int buf_traverse(PyObject *o, visitproc visit, void *arg)
{
	RmpBuf *self = (RmpBuf *)o;

	Py_VISIT(Py_TYPE(o));
	Py_VISIT((PyObject *)self->client);
	if (self->have_view)
		Py_VISIT(self->view.obj);
	return 0;
}

/* Unreachable. Operations may still be in flight on it when its client
 * (whose table of posted operations holds it) is garbage in the same
 * cycle: then the client's connection is closed first, so that the NIC
 * has stopped before the memory is let go. */
static int buf_clear(PyObject *o)
{
	RmpBuf *self = (RmpBuf *)o;
	RmpClient *c = self->client;

	if (self->inflight > 0 && c && c->c && c->connected) {
		if (rmp_py_lock_to_free(&c->lk) < 0)
			return 0; /* exiting: see unregister */
		rmp_client_close(c->c);
		c->connected = 0;
		rmp_py_unlock(&c->lk);
	}
	self->inflight = 0;
	unregister(self);
	Py_CLEAR(self->client);
	return 0;
}

static void buf_dealloc(PyObject *o)
{
	RmpBuf *self = (RmpBuf *)o;

	PyObject_GC_UnTrack(o);
	if (self->weakreflist)
		PyObject_ClearWeakRefs(o);
	buf_clear(o);
	rmp_py_dealloc(o);
}

static PyMethodDef buf_methods[] = {
	{ "unregister", buf_unregister, METH_NOARGS,
	  "unregister($self)\n--\n\nDeregister the memory and release the Python "
	  "buffer. Raises BufferError while posted operations on it are not "
	  "polled. Twice is harmless." },
	{ "close", buf_unregister, METH_NOARGS, "Same as unregister()." },
	{ "__enter__", buf_enter, METH_NOARGS, "Return the buffer." },
	{ "__exit__", buf_unregister, METH_VARARGS, "Unregister." },
	{ 0 }
};

static PyGetSetDef buf_getset[] = {
	{ "obj", buf_get_obj, NULL, "The object whose memory is registered.",
	  NULL },
	{ "registered", buf_get_registered, NULL,
	  "False once unregistered.", NULL },
	{ "readonly", buf_get_readonly, NULL,
	  "The object gave a read-only buffer: a source for writes only.",
	  NULL },
	{ "inflight", buf_get_inflight, NULL,
	  "Posted operations on it not polled yet.", NULL },
	{ 0 }
};

static PyMemberDef buf_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET, offsetof(RmpBuf, weakreflist),
	  READONLY, NULL },
	{ 0 }
};

static PyType_Slot buf_slots[] = {
	{ Py_tp_doc, (void *)
	  "Memory of a Python buffer registered with a client's device "
	  "(Client.register). Lease.read_into/write on memory inside it "
	  "are zero-copy; Lease.post_* need it. len() is its size in "
	  "bytes. A context manager that unregisters." },
	{ Py_tp_dealloc, buf_dealloc },
	{ Py_tp_traverse, buf_traverse },
	{ Py_tp_clear, buf_clear },
	{ Py_mp_length, buf_len },
	{ Py_tp_methods, buf_methods },
	{ Py_tp_getset, buf_getset },
	{ Py_tp_members, buf_members },
	{ 0, NULL }
};

static PyType_Spec buf_spec = {
	.name = "rmpool.RegisteredBuffer",
	.basicsize = sizeof(RmpBuf),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = buf_slots,
};

int rmp_py_buf_init(PyObject *m)
{
	rmp_py_buf_type = PyType_FromSpec(&buf_spec);
	if (!rmp_py_buf_type ||
	    PyModule_AddObjectRef(m, "RegisteredBuffer", rmp_py_buf_type) < 0)
		return -1;
	return 0;
}

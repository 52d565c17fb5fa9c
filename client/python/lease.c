/* SPDX-License-Identifier: MIT */
/* lease.c -- rmpool.Lease: a handle to a lease (rmp_lease) of a Client or
 * a Cluster, and its data calls. */
#include <errno.h>

#include "rmp_py.h"

PyObject *rmp_py_lease_type, *rmp_py_info_type;

PyObject *rmp_py_lease_new(RmpClient *c, struct rmp_lease *l,
			   int free_on_exit)
{
	PyTypeObject *tp = (PyTypeObject *)rmp_py_lease_type;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	RmpLease *self = (RmpLease *)alloc(tp, 0);

	if (!self) {
		rmp_py_lock(&c->lk);
		rmp_lease_close(l);
		rmp_py_unlock(&c->lk);
		return NULL;
	}
	self->client = (RmpClient *)Py_NewRef((PyObject *)c);
	self->l = l;
	self->free_on_exit = free_on_exit;
	return (PyObject *)self;
}

PyObject *rmp_py_lease_blank(void)
{
	PyTypeObject *tp = (PyTypeObject *)rmp_py_lease_type;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	PyObject *self = alloc(tp, 0);

	/* Out of the GC's sight until bound: gc.get_objects() in another
	 * thread (while this one waits for the lock) must not find a Lease
	 * of neither a client nor a cluster. */
	if (self)
		PyObject_GC_UnTrack(self);
	return self;
}

void rmp_py_cluster_lease_bind(RmpCluster *cl, PyObject *lease,
			       struct rmp_lease *l, int free_on_exit)
{
	RmpLease *self = (RmpLease *)lease;

	self->cluster = (RmpCluster *)Py_NewRef((PyObject *)cl);
	self->l = l;
	self->free_on_exit = free_on_exit;
	rmp_py_cluster_link(cl, self);
	PyObject_GC_Track(lease);
}

/* closed_error -- the ValueError of a handle that cannot be used; -1. */
static int closed_error(RmpLease *self)
{
	PyErr_SetString(PyExc_ValueError,
			self->cluster && !self->cluster->cl ?
			"the lease's cluster is closed" :
			"the lease is freed or closed");
	return -1;
}

/* live -- 0 when the handle can be used, else -1 with an exception. */
static int live(RmpLease *self)
{
	return self->l ? 0 : closed_error(self);
}

/* lease_detail -- the last error of the lease's client (its lock held),
 * for the exception of a failed call; NULL for a cluster's lease: a
 * cluster's last error is of its own calls only (and kept after them),
 * not a data call's. */
static const char *lease_detail(RmpLease *self)
{
	return self->client ? rmp_py_client_detail(self->client) : NULL;
}

/* cluster_open -- 1 unless the lease's cluster was closed (it freed the
 * lease's handle with it; a Cluster is never opened again). With the
 * lock held. */
static int cluster_open(RmpLease *self)
{
	return !self->cluster || self->cluster->cl;
}

/* forget -- the handle is gone (closed or freed): out of its cluster's
 * list. With the GIL held, which guards the list (Cluster.close() walks
 * it with the GIL held too). */
static void forget(RmpLease *self)
{
	self->l = NULL;
	if (self->cluster)
		rmp_py_cluster_unlink(self);
}

/* off_arg -- a non-negative offset or length from o into *v. */
static int off_arg(PyObject *o, const char *what, uint64_t *v)
{
	long long x = PyLong_AsLongLong(o);

	if (x == -1 && PyErr_Occurred())
		return -1;
	if (x < 0) {
		PyErr_Format(PyExc_ValueError, "%s must be >= 0", what);
		return -1;
	}
	*v = (uint64_t)x;
	return 0;
}

/* u64_arg -- a 64-bit value: 0 .. 2**64-1, or negative as two's
 * complement (faa's add of -1). */
static int u64_arg(PyObject *o, uint64_t *v)
{
	int overflow = 0;
	long long x = PyLong_AsLongLongAndOverflow(o, &overflow);

	if (x == -1 && PyErr_Occurred())
		return -1;
	if (!overflow) {
		*v = (uint64_t)x;
		return 0;
	}
	*v = PyLong_AsUnsignedLongLong(o);
	return *v == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/*
 * fast_args -- the arguments of a METH_FASTCALL | METH_KEYWORDS method by
 * name (the data calls take this path: no tuple or dict is built per
 * call): out[i] is the argument names[i] or NULL when not given; the
 * first nreq are required. -1 with TypeError for a wrong call.
 */
static int fast_args(const char *fname, PyObject *const *args,
		     Py_ssize_t nargs, PyObject *kwnames,
		     const char *const *names, int n, int nreq,
		     PyObject **out)
{
	Py_ssize_t k, nkw = kwnames ? PyTuple_Size(kwnames) : 0;
	int i;

	if (nargs > n) {
		PyErr_Format(PyExc_TypeError,
			     "%s() takes at most %d arguments (%zd given)",
			     fname, n, nargs);
		return -1;
	}
	for (i = 0; i < n; i++)
		out[i] = i < nargs ? args[i] : NULL;
	for (k = 0; k < nkw; k++) {
		PyObject *key = PyTuple_GetItem(kwnames, k);

		for (i = 0; i < n; i++)
			if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
				break;
		if (i == n) {
			PyErr_Format(PyExc_TypeError,
				     "%s() got an unexpected keyword argument %R",
				     fname, key);
			return -1;
		}
		if (out[i]) {
			PyErr_Format(PyExc_TypeError,
				     "%s() got multiple values for argument '%s'",
				     fname, names[i]);
			return -1;
		}
		out[i] = args[nargs + k];
	}
	for (i = 0; i < nreq; i++)
		if (!out[i]) {
			PyErr_Format(PyExc_TypeError,
				     "%s() missing required argument '%s'",
				     fname, names[i]);
			return -1;
		}
	return 0;
}

/* info_quiet -- rmp_lease_info of the handle, under the lock (another
 * thread's call may be changing it), without an exception: -EBADF when
 * the handle is gone. */
static int info_quiet(RmpLease *self, struct rmp_lease_info *in)
{
	RmpLock *lk = rmp_py_lease_lock(self);
	int rc;

	rmp_py_lock(lk);
	rc = self->l ? rmp_lease_info(self->l, in) : -EBADF;
	rmp_py_unlock(lk);
	return rc;
}

/* lease_length -- the lease's length (0 if the handle is gone). */
static uint64_t lease_length(RmpLease *self)
{
	struct rmp_lease_info in = { .size = sizeof(in) };

	return info_quiet(self, &in) < 0 ? 0 : in.length;
}

/* DATA_CALL -- a call of self's lease under the lease's lock, the GIL
 * released, its exception raised after the unlock. call names the
 * handle "held": self->l read once the lock is held (a Cluster.close(),
 * a close or a free in another thread may have taken it meanwhile). */
#define DATA_CALL(self, rc, call)                                      \
	do {                                                           \
		struct rmp_lease *held;                                \
		RMP_PY_CALL_ON(rmp_py_lease_lock(self), rc, held,      \
			       (self)->l, closed_error(self),          \
			       lease_detail(self), call);              \
	} while (0)

static PyObject *lease_read(PyObject *o, PyObject *const *args,
			    Py_ssize_t nargs, PyObject *kwnames)
{
	static const char *const names[] = { "offset", "length" };
	RmpLease *self = (RmpLease *)o;
	PyObject *a[2], *b;
	uint64_t off = 0, len, total;
	char *dst;
	int rc;

	if (fast_args("read", args, nargs, kwnames, names, 2, 0, a) < 0 ||
	    live(self) < 0)
		return NULL;
	if (a[0] && off_arg(a[0], "offset", &off) < 0)
		return NULL;
	if (!a[1] || a[1] == Py_None) {
		total = lease_length(self);
		if (off > total)
			return rmp_py_error_detail(NULL, -ERANGE);
		len = total - off;
	} else if (off_arg(a[1], "length", &len) < 0) {
		return NULL;
	}
	if (len > PY_SSIZE_T_MAX)
		return rmp_py_error_detail(NULL, -ERANGE);
	b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
	if (!b)
		return NULL;
	dst = PyBytes_AsString(b); /* with the GIL: a C-API call */
	DATA_CALL(self, rc, rmp_read(held, off, dst, (size_t)len));
	if (rc < 0) {
		Py_DECREF(b);
		return NULL;
	}
	return b;
}

/* buffer_rw -- read_into (write 0) or write: the lease's bytes from
 * offset into or out of any buffer, with no copy in Python (the buffer
 * stays exported, so it cannot move, while the GIL is released). */
static PyObject *buffer_rw(PyObject *o, PyObject *const *args,
			   Py_ssize_t nargs, PyObject *kwnames, int write)
{
	static const char *const rnames[] = { "buffer", "offset" };
	static const char *const wnames[] = { "data", "offset" };
	RmpLease *self = (RmpLease *)o;
	PyObject *a[2];
	uint64_t off = 0;
	Py_buffer v;
	int rc;

	if (fast_args(write ? "write" : "read_into", args, nargs, kwnames,
		      write ? wnames : rnames, 2, 1, a) < 0 ||
	    live(self) < 0)
		return NULL;
	if (a[1] && off_arg(a[1], "offset", &off) < 0)
		return NULL;
	if (PyObject_GetBuffer(a[0], &v, write ? PyBUF_SIMPLE :
						 PyBUF_WRITABLE) < 0)
		return NULL;
	DATA_CALL(self, rc, write ? rmp_write(held, off, v.buf,
					      (size_t)v.len) :
				    rmp_read(held, off, v.buf,
					     (size_t)v.len));
	PyBuffer_Release(&v);
	return rc < 0 ? NULL : PyLong_FromSsize_t(v.len);
}

static PyObject *lease_read_into(PyObject *o, PyObject *const *args,
				 Py_ssize_t nargs, PyObject *kwnames)
{
	return buffer_rw(o, args, nargs, kwnames, 0);
}

static PyObject *lease_write(PyObject *o, PyObject *const *args,
			     Py_ssize_t nargs, PyObject *kwnames)
{
	return buffer_rw(o, args, nargs, kwnames, 1);
}

static PyObject *lease_cas(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "expected", "desired", NULL };
	RmpLease *self = (RmpLease *)o;
	PyObject *off_o, *exp_o, *des_o;
	uint64_t off, exp, des, old = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO", kwlist, &off_o,
					 &exp_o, &des_o) || live(self) < 0 ||
	    off_arg(off_o, "offset", &off) < 0 || u64_arg(exp_o, &exp) < 0 ||
	    u64_arg(des_o, &des) < 0)
		return NULL;
	DATA_CALL(self, rc, rmp_cas(held, off, exp, des, &old));
	return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(old);
}

static PyObject *lease_faa(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "add", NULL };
	RmpLease *self = (RmpLease *)o;
	PyObject *off_o, *add_o;
	uint64_t off, add, old = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO", kwlist, &off_o,
					 &add_o) || live(self) < 0 ||
	    off_arg(off_o, "offset", &off) < 0 || u64_arg(add_o, &add) < 0)
		return NULL;
	DATA_CALL(self, rc, rmp_faa(held, off, add, &old));
	return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(old);
}

static PyObject *lease_flush(PyObject *o, PyObject *unused)
{
	RmpLease *self = (RmpLease *)o;
	int rc;

	if (live(self) < 0)
		return NULL;
	DATA_CALL(self, rc, rmp_flush(held));
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *lease_renew(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "ttl", NULL };
	RmpLease *self = (RmpLease *)o;
	PyObject *ttl_o = Py_None;
	unsigned long ttl = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &ttl_o) ||
	    live(self) < 0)
		return NULL;
	if (ttl_o != Py_None) {
		ttl = PyLong_AsUnsignedLong(ttl_o);
		if (ttl == (unsigned long)-1 && PyErr_Occurred())
			return NULL;
		if (!ttl || ttl > UINT32_MAX) {
			PyErr_SetString(PyExc_ValueError,
				"ttl must be a positive number of seconds");
			return NULL;
		}
	}
	DATA_CALL(self, rc, rmp_lease_renew(held, (uint32_t)ttl));
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *lease_repair(PyObject *o, PyObject *unused)
{
	RmpLease *self = (RmpLease *)o;
	RmpLock *lk = rmp_py_lease_lock(self);
	struct rmp_lease *held;
	int rc;

	if (live(self) < 0)
		return NULL;
	/* The cluster's last error says more (of a cluster lease). */
	RMP_PY_CALL_ON(lk, rc, held, self->l, closed_error(self),
		       self->cluster && self->cluster->cl ?
		       rmp_cluster_last_error(self->cluster->cl) :
		       lease_detail(self),
		       rmp_lease_repair(held));
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *lease_free(PyObject *o, PyObject *unused)
{
	RmpLease *self = (RmpLease *)o;
	struct rmp_lease *l = self->l;
	int alive;
	int rc;

	if (live(self) < 0)
		return NULL;
	/* The handle is gone whatever the server says: taken from self
	 * first, so that no other thread starts a call on it. */
	forget(self);
	RMP_PY_CALL_ON(rmp_py_lease_lock(self), rc, alive, cluster_open(self),
		       closed_error(self), lease_detail(self),
		       rmp_lease_free(l));
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* close_handle -- close the handle, if still open: taken from self
 * first (as in lease_free), closed once the lock is held. A blank
 * lease (never bound: its alloc failed) has no handle and no lock. */
static void close_handle(RmpLease *self)
{
	struct rmp_lease *l = self->l;
	RmpLock *lk;

	if (!l)
		return;
	lk = rmp_py_lease_lock(self);
	forget(self);
	if (rmp_py_lock_to_free(lk) < 0)
		return; /* exiting, the lock held for good: left to the end */
	if (cluster_open(self))
		rmp_lease_close(l);
	rmp_py_unlock(lk);
}

static PyObject *lease_close(PyObject *o, PyObject *unused)
{
	close_handle((RmpLease *)o);
	Py_RETURN_NONE;
}

static PyObject *lease_enter(PyObject *o, PyObject *unused)
{
	if (live((RmpLease *)o) < 0)
		return NULL;
	return Py_NewRef(o);
}

static PyObject *lease_exit(PyObject *o, PyObject *args)
{
	RmpLease *self = (RmpLease *)o;

	if (!self->l)
		Py_RETURN_NONE;
	/* A lease on a closed client cannot be freed: close the handle. */
	if (self->free_on_exit &&
	    (self->client ? self->client->connected : !!self->cluster->cl))
		return lease_free(o, NULL);
	return lease_close(o, NULL);
}

/* no_cluster -- 0 for a Client's lease; a Cluster's has no completion
 * queue of a Client to post to: -1 with NotSupported. */
static int no_cluster(RmpLease *self)
{
	if (self->client)
		return 0;
	rmp_py_error_detail("the asynchronous calls need a Client's lease",
			    -EOPNOTSUPP);
	return -1;
}

/* post -- the common part of post_read and post_write. */
static PyObject *post(RmpLease *self, PyObject *args, PyObject *kw,
		      int is_read)
{
	static char *kwlist[] = { "offset", "buffer", "boff", "length",
		"user_data", NULL };
	PyObject *off_o, *buf_o, *len_o = Py_None, *ud = Py_None;
	Py_ssize_t boff = 0, len;
	uint64_t off, id, l64;
	RmpBuf *b;
	struct rmp_lease *held;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|nOO", kwlist, &off_o,
		&buf_o, &boff, &len_o, &ud) || live(self) < 0 ||
	    no_cluster(self) < 0 || off_arg(off_o, "offset", &off) < 0)
		return NULL;
	if (!PyObject_TypeCheck(buf_o, (PyTypeObject *)rmp_py_buf_type)) {
		PyErr_SetString(PyExc_TypeError,
				"buffer must be a RegisteredBuffer");
		return NULL;
	}
	b = (RmpBuf *)buf_o;
	if (len_o == Py_None) {
		len = b->have_view && boff >= 0 && boff <= b->view.len ?
			b->view.len - boff : 0;
	} else {
		if (off_arg(len_o, "length", &l64) < 0)
			return NULL;
		len = l64 > PY_SSIZE_T_MAX ? -1 : (Py_ssize_t)l64;
	}
	if (rmp_py_buf_check(buf_o, self->client, boff, len) < 0)
		return NULL;
	if (is_read && b->view.readonly) {
		PyErr_SetString(PyExc_BufferError,
				"post_read into a read-only buffer");
		return NULL;
	}
	if (rmp_py_track_op(self->client, ud, b, &id) < 0)
		return NULL;
	/* b->b changes under the lock only; self->l also without it. */
	RMP_PY_CALL_ON(&self->client->lk, rc, held, b->b ? self->l : NULL,
		       PyErr_SetString(PyExc_ValueError,
				       "the lease or the buffer is closed"),
		       lease_detail(self), is_read ?
		       rmp_post_read(held, off, b->b, (size_t)boff,
				     (size_t)len, id) :
		       rmp_post_write(held, off, b->b, (size_t)boff,
				      (size_t)len, id));
	if (rc < 0) {
		rmp_py_untrack_op(self->client, id);
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *lease_post_read(PyObject *o, PyObject *args, PyObject *kw)
{
	return post((RmpLease *)o, args, kw, 1);
}

static PyObject *lease_post_write(PyObject *o, PyObject *args, PyObject *kw)
{
	return post((RmpLease *)o, args, kw, 0);
}

/* post_atomic -- post_cas (is_cas) and post_faa: the old value lands in
 * 8 bytes of the buffer at boff. */
static PyObject *post_atomic(RmpLease *self, PyObject *args, PyObject *kw,
			     int is_cas)
{
	static char *cas_kw[] = { "offset", "expected", "desired", "buffer",
		"boff", "user_data", NULL };
	static char *faa_kw[] = { "offset", "add", "buffer", "boff",
		"user_data", NULL };
	PyObject *off_o, *a_o, *d_o = NULL, *buf_o, *ud = Py_None;
	Py_ssize_t boff = 0;
	uint64_t off, a, d = 0, id;
	RmpBuf *b;
	struct rmp_lease *held;
	int rc;

	if (is_cas)
		rc = PyArg_ParseTupleAndKeywords(args, kw, "OOOO|nO", cas_kw,
			&off_o, &a_o, &d_o, &buf_o, &boff, &ud);
	else
		rc = PyArg_ParseTupleAndKeywords(args, kw, "OOO|nO", faa_kw,
			&off_o, &a_o, &buf_o, &boff, &ud);
	if (!rc || live(self) < 0 || no_cluster(self) < 0 ||
	    off_arg(off_o, "offset", &off) < 0 ||
	    u64_arg(a_o, &a) < 0 || (d_o && u64_arg(d_o, &d) < 0) ||
	    rmp_py_buf_check(buf_o, self->client, boff, 8) < 0)
		return NULL;
	b = (RmpBuf *)buf_o;
	if (b->view.readonly) {
		PyErr_SetString(PyExc_BufferError,
				"an atomic's old value into a read-only buffer");
		return NULL;
	}
	if (rmp_py_track_op(self->client, ud, b, &id) < 0)
		return NULL;
	RMP_PY_CALL_ON(&self->client->lk, rc, held, b->b ? self->l : NULL,
		       PyErr_SetString(PyExc_ValueError,
				       "the lease or the buffer is closed"),
		       lease_detail(self), is_cas ?
		       rmp_post_cas(held, off, a, d, b->b, (size_t)boff, id) :
		       rmp_post_faa(held, off, a, b->b, (size_t)boff, id));
	if (rc < 0) {
		rmp_py_untrack_op(self->client, id);
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *lease_post_cas(PyObject *o, PyObject *args, PyObject *kw)
{
	return post_atomic((RmpLease *)o, args, kw, 1);
}

static PyObject *lease_post_faa(PyObject *o, PyObject *args, PyObject *kw)
{
	return post_atomic((RmpLease *)o, args, kw, 0);
}

static PyObject *lease_get_token(PyObject *o, void *unused)
{
	RmpLease *self = (RmpLease *)o;
	char tok[RMP_TOKEN_MAXLEN];
	int rc;

	if (live(self) < 0)
		return NULL;
	/* Under the lock, as every call: another thread's call may be
	 * changing the handle (a repair, a renew). */
	DATA_CALL(self, rc, rmp_lease_token(held, tok, sizeof(tok)));
	if (rc < 0)
		return NULL;
	return PyUnicode_FromStringAndSize(tok, rc);
}

/* members_of -- how many members self's lease has (1 of a lease of one
 * server) into *n: 0, or -1 with the exception set. */
static int members_of(RmpLease *self, unsigned *n)
{
	struct rmp_lease_info in = { .size = sizeof(in) };
	int rc;

	if (live(self) < 0)
		return -1;
	DATA_CALL(self, rc, rmp_lease_info(held, &in));
	if (rc < 0)
		return -1;
	*n = (in.stripes ? in.stripes : 1) * (in.replicas ? in.replicas : 1);
	return 0;
}

static PyObject *lease_get_replica_tokens(PyObject *o, void *unused)
{
	RmpLease *self = (RmpLease *)o;
	char tok[RMP_TOKEN_MAXLEN];
	PyObject *list, *t;
	unsigned i, n;
	int rc;

	if (members_of(self, &n) < 0)
		return NULL;
	list = PyList_New(0);
	for (i = 0; list && i < n; i++) {
		DATA_CALL(self, rc, rmp_lease_replica_token(held, i, tok,
							     sizeof(tok)));
		if (rc < 0) {
			Py_DECREF(list);
			return NULL;
		}
		t = PyUnicode_FromStringAndSize(tok, rc);
		if (!t || PyList_Append(list, t) < 0)
			Py_CLEAR(list);
		Py_XDECREF(t);
	}
	return list;
}

static PyObject *lease_get_members(PyObject *o, void *unused)
{
	RmpLease *self = (RmpLease *)o;
	PyObject *list, *d;
	unsigned i, n;
	int rc;

	if (members_of(self, &n) < 0)
		return NULL;
	list = PyList_New(0);
	for (i = 0; list && i < n; i++) {
		struct rmp_member_info m = { .size = sizeof(m) };

		DATA_CALL(self, rc, rmp_lease_member_info(held, i, &m));
		if (rc < 0) {
			Py_DECREF(list);
			return NULL;
		}
		d = Py_BuildValue("{s:I,s:I,s:s,s:s,s:H,s:I,s:I}", "stripe",
				  m.stripe, "replica", m.replica, "state",
				  rmp_member_state_name(m.state), "host", m.host,
				  "port", m.port, "rails", m.rails, "rails_up",
				  m.rails_up);
		if (!d || PyList_Append(list, d) < 0)
			Py_CLEAR(list);
		Py_XDECREF(d);
	}
	return list;
}

static PyObject *lease_get_info(PyObject *o, void *unused)
{
	RmpLease *self = (RmpLease *)o;
	struct rmp_lease_info in = { .size = sizeof(in) };
	unsigned long long v[16];
	PyObject *r;
	int rc, i;

	if (live(self) < 0)
		return NULL;
	DATA_CALL(self, rc, rmp_lease_info(held, &in));
	if (rc < 0)
		return NULL;
	v[0] = in.id;
	v[1] = in.length;
	v[2] = in.remote_addr;
	v[3] = in.rkey;
	v[4] = in.access;
	v[5] = in.flags;
	v[6] = in.ttl_ms;
	v[7] = in.holders;
	v[8] = in.replicas;
	v[9] = in.replicas_live;
	v[10] = in.stripes;
	v[11] = in.ec_data;
	v[12] = in.ec_parity;
	v[13] = in.ec_chunk;
	v[14] = in.ec_live;
	v[15] = in.ec_decoded;
	r = PyStructSequence_New((PyTypeObject *)rmp_py_info_type);
	if (!r)
		return NULL;
	for (i = 0; i < 16; i++) {
		PyObject *x = PyLong_FromUnsignedLongLong(v[i]);

		if (!x) {
			Py_DECREF(r);
			return NULL;
		}
		PyStructSequence_SetItem(r, i, x);
	}
	return r;
}

static PyObject *lease_get_length(PyObject *o, void *unused)
{
	RmpLease *self = (RmpLease *)o;

	if (live(self) < 0)
		return NULL;
	return PyLong_FromUnsignedLongLong(lease_length(self));
}

static PyObject *lease_get_closed(PyObject *o, void *unused)
{
	return PyBool_FromLong(!((RmpLease *)o)->l);
}

static PyObject *lease_get_client(PyObject *o, void *unused)
{
	PyObject *c = (PyObject *)((RmpLease *)o)->client;

	return Py_NewRef(c ? c : Py_None);
}

static PyObject *lease_get_cluster(PyObject *o, void *unused)
{
	PyObject *c = (PyObject *)((RmpLease *)o)->cluster;

	return Py_NewRef(c ? c : Py_None);
}

static PyObject *lease_get_foe(PyObject *o, void *unused)
{
	return PyBool_FromLong(((RmpLease *)o)->free_on_exit);
}

static int lease_set_foe(PyObject *o, PyObject *v, void *unused)
{
	int t;

	if (!v) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete");
		return -1;
	}
	t = PyObject_IsTrue(v);
	if (t < 0)
		return -1;
	((RmpLease *)o)->free_on_exit = t;
	return 0;
}

static PyObject *lease_len_repr(PyObject *o)
{
	RmpLease *self = (RmpLease *)o;
	struct rmp_lease_info in = { .size = sizeof(in) };

	if (info_quiet(self, &in) < 0)
		return PyUnicode_FromString("<rmpool.Lease closed>");
	return PyUnicode_FromFormat("<rmpool.Lease id %llu, %llu bytes>",
		(unsigned long long)in.id, (unsigned long long)in.length);
}

static int lease_traverse(PyObject *o, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(o));
	Py_VISIT((PyObject *)((RmpLease *)o)->client);
	Py_VISIT((PyObject *)((RmpLease *)o)->cluster);
	return 0;
}

static void lease_dealloc(PyObject *o)
{
	RmpLease *self = (RmpLease *)o;

	PyObject_GC_UnTrack(o);
	if (self->weakreflist)
		PyObject_ClearWeakRefs(o);
	close_handle(self);
	Py_CLEAR(self->client);
	Py_CLEAR(self->cluster);
	rmp_py_dealloc(o);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FAST (METH_FASTCALL | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef lease_methods[] = {
	{ "read", FN(lease_read), FAST,
	  "read($self, offset=0, length=None)\n--\n\nReturns bytes. Read length bytes "
	  "at offset (None: to the end of the lease) with one-sided RDMA. "
	  "Raises OutOfRange (nothing read), LeaseExpired, AuthRevoked (the "
	  "server revoked this connection's key: connect again), "
	  "AccessDenied, NotConnected, TransportError, Timeout." },
	{ "read_into", FN(lease_read_into), FAST,
	  "read_into($self, buffer, offset=0)\n--\n\nReturns int. Read len(buffer) bytes "
	  "at offset straight into a writable contiguous buffer (bytearray, "
	  "memoryview, numpy array, mmap): no copy in Python, and none at "
	  "all when the buffer is registered (Client.register). Returns the "
	  "number of bytes. Errors as read()." },
	{ "write", FN(lease_write), FAST,
	  "write($self, data, offset=0)\n--\n\nReturns int. Write the bytes of any "
	  "contiguous buffer at offset; returns how many. Returns once the "
	  "responder acknowledged them (flush() makes them visible to other "
	  "connections). Errors as read()." },
	{ "cas", FN(lease_cas), KW,
	  "cas($self, offset, expected, desired)\n--\n\nReturns int. Atomic "
	  "compare-and-swap of the 8-byte word at offset (8-byte aligned): "
	  "returns the old value; the swap happened iff it equals "
	  "expected. Raises NotSupported without device atomics." },
	{ "faa", FN(lease_faa), KW,
	  "faa($self, offset, add)\n--\n\nReturns int. Atomic fetch-and-add to the "
	  "8-byte word at offset (modulo 2**64; add may be negative); "
	  "returns the old value." },
	{ "flush", lease_flush, METH_NOARGS,
	  "flush($self)\n--\n\nReturn once every earlier write is placed in the "
	  "server's memory, visible to readers on other connections." },
	{ "renew", FN(lease_renew), KW,
	  "renew($self, ttl=None)\n--\n\nExtend the lease to ttl seconds from now "
	  "(None: the server's default). Raises LeaseExpired, LeaseNotFound." },
	{ "free", lease_free, METH_NOARGS,
	  "free($self)\n--\n\nGive the lease back to the server (its memory is "
	  "zeroed before reuse) and close this handle, even when the server "
	  "could not be told (then the error is raised)." },
	{ "repair", lease_repair, METH_NOARGS,
	  "repair($self)\n--\n\nGive a mirrored or striped lease of a Cluster "
	  "new replicas for those it lost (their nodes gone from the "
	  "membership): each placed apart from the others as the lease was, "
	  "filled from a live one and published in the lease's record, so "
	  "that every holder of the token reaches the new ones. Returns at "
	  "once when nothing was lost. Raises NotSupported (not a cluster "
	  "lease), TransportError (a stripe lost all its replicas: its bytes "
	  "are gone), Busy (another repair changed the record: try again), "
	  "Timeout, PoolFull (no node could take a replica), ..." },
	{ "close", lease_close, METH_NOARGS,
	  "close($self)\n--\n\nClose the handle only: the lease stays until its "
	  "deadline and can be attached again by its token." },
	{ "__enter__", lease_enter, METH_NOARGS, "Return the lease." },
	{ "__exit__", lease_exit, METH_VARARGS,
	  "Free the lease if free_on_exit (and the client is open), else "
	  "close the handle." },
	{ "post_read", FN(lease_post_read), KW,
	  "post_read($self, offset, buffer, boff=0, length=None, user_data=None)\n--\n\nQueue a read of length bytes at offset into the "
	  "RegisteredBuffer buffer at boff (None: to its end); nothing "
	  "moves until Client.submit() or Client.poll(); the completion "
	  "comes back from Client.poll() with user_data. Raises Busy when "
	  "max_inflight operations are queued or in flight." },
	{ "post_write", FN(lease_post_write), KW,
	  "post_write($self, offset, buffer, boff=0, length=None, user_data=None)\n--\n\nQueue a write from the RegisteredBuffer, as post_read." },
	{ "post_cas", FN(lease_post_cas), KW,
	  "post_cas($self, offset, expected, desired, buffer, boff=0, user_data=None)\n--\n\nQueue a compare-and-swap; the old value "
	  "lands in the 8 bytes of buffer at boff (native byte order)." },
	{ "post_faa", FN(lease_post_faa), KW,
	  "post_faa($self, offset, add, buffer, boff=0, user_data=None)\n--\n\n"
	  "Queue a fetch-and-add; the old value lands in buffer at boff." },
	{ 0 }
};

static PyGetSetDef lease_getset[] = {
	{ "token", lease_get_token, NULL,
	  "The printable token (server, id, secret): attach it from another "
	  "connection, process or the rmpool CLI. A secret: hand it only to "
	  "whom may use the lease.", NULL },
	{ "info", lease_get_info, NULL,
	  "LeaseInfo (no server round trip): id, length, remote_addr, rkey, "
	  "access, flags, ttl_ms, holders, replicas, replicas_live, stripes, "
	  "ec_data, ec_parity, ec_chunk, ec_live, ec_decoded.", NULL },
	{ "length", lease_get_length, NULL, "Usable bytes of the lease.", NULL },
	{ "closed", lease_get_closed, NULL, "True once freed or closed.", NULL },
	{ "replica_tokens", lease_get_replica_tokens, NULL,
	  "list[str]: the token of each member of a mirrored or striped "
	  "lease (each names its server), in stripe order, a stripe's "
	  "replicas together; [token] for a lease of one server.", NULL },
	{ "members", lease_get_members, NULL,
	  "list[MemberInfo]: each member in replica_tokens' order, as this "
	  "handle knows it (no server round trip): stripe, replica, state "
	  "('live'; 'suspect': out of reach for now, tried again; 'stale' or "
	  "'lost': a repair replaces it; 'missed': lacks a write its record "
	  "does not know of yet), host, port, rails, rails_up.", NULL },
	{ "client", lease_get_client, NULL,
	  "The Client of this handle; None for a Cluster's lease.", NULL },
	{ "cluster", lease_get_cluster, NULL,
	  "The Cluster of this handle; None for a Client's lease.", NULL },
	{ "free_on_exit", lease_get_foe, lease_set_foe,
	  "Whether leaving a with block frees the lease (else closes the "
	  "handle).", NULL },
	{ 0 }
};

static PyMemberDef lease_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET,
	  offsetof(RmpLease, weakreflist), READONLY, NULL },
	{ 0 }
};

static PyType_Slot lease_slots[] = {
	{ Py_tp_doc, (void *)
	  "A lease handle, from Client.alloc() or Client.attach(), or from "
	  "Cluster.alloc() or Cluster.attach(). Data calls are one-sided "
	  "RDMA, each with the GIL released while it waits. A context "
	  "manager: leaving the block frees the lease (free_on_exit, "
	  "alloc's default) or closes the handle (attach's). Collecting it "
	  "closes the handle; the lease lives to its deadline. A handle "
	  "keeps its Client or Cluster alive; once that Cluster is closed, "
	  "its handles are closed too (ValueError). A Cluster's lease has no "
	  "post_* (NotSupported) nor asyncio calls (TypeError)." },
	{ Py_tp_dealloc, lease_dealloc },
	{ Py_tp_traverse, lease_traverse },
	{ Py_tp_repr, lease_len_repr },
	{ Py_tp_methods, lease_methods },
	{ Py_tp_getset, lease_getset },
	{ Py_tp_members, lease_members },
	{ 0, NULL }
};

static PyType_Spec lease_spec = {
	.name = "rmpool.Lease",
	.basicsize = sizeof(RmpLease),
	/* Not instantiable from Python: Client.alloc and attach make them. */
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = lease_slots,
};

static PyStructSequence_Field info_fields[] = {
	{ "id", "lease id" },
	{ "length", "usable bytes" },
	{ "remote_addr", "server address of byte 0" },
	{ "rkey", "this connection's key" },
	{ "access", "ACCESS_* bits" },
	{ "flags", "LEASE_* bits" },
	{ "ttl_ms", "time left as last reported, minus the time since" },
	{ "holders", "connections with a key to it, as last reported" },
	{ "replicas", "1, or a mirrored lease's replicas" },
	{ "replicas_live", "replicas not lost" },
	{ "stripes", "1, or a striped lease's stripes" },
	{ "ec_data", "an erasure-coded lease's k data members (else 0)" },
	{ "ec_parity", "its m parity members" },
	{ "ec_chunk", "its chunk, in bytes" },
	{ "ec_live", "its members not lost" },
	{ "ec_decoded", "chunks this handle's reads decoded" },
	{ 0 }
};

static PyStructSequence_Desc info_desc = {
	"rmpool.LeaseInfo", "What Lease.info tells of a lease.", info_fields,
	16
};

int rmp_py_lease_init(PyObject *m)
{
	rmp_py_lease_type = PyType_FromSpec(&lease_spec);
	if (!rmp_py_lease_type ||
	    PyModule_AddObjectRef(m, "Lease", rmp_py_lease_type) < 0)
		return -1;
	rmp_py_info_type = (PyObject *)PyStructSequence_NewType(&info_desc);
	if (!rmp_py_info_type ||
	    PyModule_AddObjectRef(m, "LeaseInfo", rmp_py_info_type) < 0)
		return -1;
	return 0;
}

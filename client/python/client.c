/* SPDX-License-Identifier: MIT */
/* client.c -- rmpool.Client: one connection to an rmpoold (rmp_client). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmp_py.h"

PyObject *rmp_py_client_type;

static int client_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "host", "port", "tenant", "key", "key_file",
		"name", "timeout", "op_timeout", "reconnect_max_ms",
		"spin_max_us", "bounce_bytes", "max_inflight", "rail_stripe",
		NULL };
	RmpClient *c = (RmpClient *)self;
	PyObject *host;
	const char *host_s;
	int port = RMP_DEFAULT_PORT;
	struct rmp_py_copts p = { .spin = -1 };
	struct rmp_client_opts o;
	struct rmp_client *rc_c = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|i$OOOzOOOinOn", kwlist,
		&host, &port, &p.tenant, &p.key, &p.key_file, &p.name,
		&p.timeout, &p.op_timeout, &p.reconnect, &p.spin, &p.bounce,
		&p.max_inflight, &p.rail_stripe))
		return -1;
	if (c->c) {
		PyErr_SetString(PyExc_RuntimeError, "Client already initialised");
		return -1;
	}
	if (port < 0 || port > 65535) {
		PyErr_SetString(PyExc_ValueError, "port must be 0..65535");
		return -1;
	}
	if (rmp_py_utf8(host, &host_s) < 0)
		return -1;
	rmp_client_opts_init(&o);
	if (rmp_py_client_opts(&p, &o) < 0) {
		rmp_py_copts_release(&p);
		return -1;
	}
	c->reconnects = o.reconnect_max_ms > 0;
	rc = rmp_client_new(&rc_c, &o);
	rmp_py_copts_release(&p);
	if (rc < 0) {
		rmp_py_error_detail(NULL, rc);
		return -1;
	}
	c->c = rc_c;
	Py_BEGIN_ALLOW_THREADS
	rc = rmp_client_connect(rc_c, host_s, (uint16_t)port);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		struct rmp_py_fail f;

		/* No other thread has c yet: no lock. */
		rmp_py_note(&f, rc, rmp_py_client_detail(c));
		c->c = NULL;
		rmp_client_free(rc_c);
		rmp_py_raise(&f);
		return -1;
	}
	c->connected = 1;
	c->port = port ? port : RMP_DEFAULT_PORT;
	Py_XDECREF(c->host);
	c->host = Py_NewRef(host);
	return 0;
}

static PyObject *client_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	RmpClient *c = (RmpClient *)alloc(tp, 0);

	if (!c)
		return NULL;
	c->pending = PyDict_New();
	if (rmp_py_lock_init(&c->lk) < 0 || !c->pending) {
		Py_DECREF(c);
		return PyErr_NoMemory();
	}
	return (PyObject *)c;
}

static int client_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	Py_VISIT(((RmpClient *)self)->pending);
	return 0;
}

/* Unreachable: disconnect (the NIC stops using registered memory), then
 * let go of the operations' user data and buffers. */
static int client_clear(PyObject *self)
{
	RmpClient *c = (RmpClient *)self;

	if (c->c && c->connected) {
		rmp_client_close(c->c);
		c->connected = 0;
	}
	rmp_py_drop_ops(c);
	return 0;
}

static void client_dealloc(PyObject *self)
{
	RmpClient *c = (RmpClient *)self;

	PyObject_GC_UnTrack(self);
	if (c->weakreflist)
		PyObject_ClearWeakRefs(self);
	client_clear(self);
	/* Leases and buffers hold references: none is left. */
	rmp_client_free(c->c);
	rmp_py_lock_free(&c->lk);
	free(c->held);
	Py_CLEAR(c->pending);
	Py_CLEAR(c->host);
	rmp_py_dealloc(self);
}

static PyObject *client_close(PyObject *self, PyObject *unused)
{
	RmpClient *c = (RmpClient *)self;

	if (!c->c || !c->connected)
		Py_RETURN_NONE;
	rmp_py_lock(&c->lk);
	Py_BEGIN_ALLOW_THREADS
	rmp_client_close(c->c);
	Py_END_ALLOW_THREADS
	c->connected = 0;
	rmp_py_unlock(&c->lk);
	rmp_py_drop_ops(c);
	Py_RETURN_NONE;
}

static PyObject *client_enter(PyObject *self, PyObject *unused)
{
	if (rmp_py_check_open((RmpClient *)self) < 0)
		return NULL;
	return Py_NewRef(self);
}

static PyObject *client_exit(PyObject *self, PyObject *args)
{
	return client_close(self, NULL);
}

static PyObject *client_fileno(PyObject *self, PyObject *unused)
{
	RmpClient *c = (RmpClient *)self;
	struct rmp_py_fail f;
	int fd;

	if (rmp_py_check_open(c) < 0)
		return NULL;
	rmp_py_lock(&c->lk);
	fd = rmp_client_fd(c->c);
	if (fd < 0)
		rmp_py_note(&f, fd, rmp_py_client_detail(c));
	rmp_py_unlock(&c->lk);
	return fd < 0 ? rmp_py_raise(&f) : PyLong_FromLong(fd);
}

static PyObject *client_alloc(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "size", "ttl", "ephemeral", "alignment",
		"access", "auto_renew", "spill", "free_on_exit", NULL };
	RmpClient *c = (RmpClient *)self;
	unsigned long long size, alignment = 0, access = RMP_ACCESS_ALL;
	PyObject *size_o, *align_o = NULL, *access_o = NULL;
	PyObject *ttl_o = Py_None;
	int ephemeral = 0, auto_renew = 0, spill = 0, free_on_exit = 1;
	struct rmp_alloc_opts o;
	struct rmp_lease *l = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OpOOppp", kwlist,
		&size_o, &ttl_o, &ephemeral, &align_o, &access_o, &auto_renew,
		&spill, &free_on_exit))
		return NULL;
	if (rmp_py_bounded(size_o, "size", 1, INT64_MAX, &size) < 0 ||
	    (align_o && align_o != Py_None &&
	     rmp_py_bounded(align_o, "alignment", 0, INT64_MAX,
			    &alignment) < 0) ||
	    (access_o && rmp_py_bounded(access_o, "access", 1,
					RMP_ACCESS_ALL, &access) < 0))
		return NULL;
	if (alignment & (alignment - 1)) {
		PyErr_SetString(PyExc_ValueError,
				"alignment must be a power of two");
		return NULL;
	}
	rmp_alloc_opts_init(&o);
	if (rmp_py_ttl(ttl_o, &o.ttl_s) < 0)
		return NULL;
	o.alignment = alignment;
	o.access = (uint32_t)access;
	o.flags = (ephemeral ? RMP_LEASE_EPHEMERAL : 0) |
		  (auto_renew ? RMP_LEASE_AUTO_RENEW : 0) |
		  (spill ? RMP_LEASE_SPILL : 0);
	if (rmp_py_check_open(c) < 0)
		return NULL;
	RMP_PY_CALL(c, rc, rmp_lease_alloc(c->c, size, &o, &l));
	if (rc < 0)
		return NULL;
	return rmp_py_lease_new(c, l, free_on_exit);
}

static PyObject *client_attach(PyObject *self, PyObject *args, PyObject *kw)
{
	RmpClient *c = (RmpClient *)self;
	const char *token;
	int free_on_exit;
	struct rmp_attach_opts o;
	struct rmp_lease *l = NULL;
	int rc;

	if (rmp_py_attach_args(args, kw, &token, &o, &free_on_exit) < 0 ||
	    rmp_py_check_open(c) < 0)
		return NULL;
	RMP_PY_CALL(c, rc, rmp_lease_attach_with(c->c, token, &o, &l));
	if (rc < 0)
		return NULL;
	return rmp_py_lease_new(c, l, free_on_exit);
}

static PyObject *client_renew_token(PyObject *self, PyObject *args,
				    PyObject *kw)
{
	static char *kwlist[] = { "token", "ttl", NULL };
	RmpClient *c = (RmpClient *)self;
	const char *token;
	PyObject *ttl_o = Py_None;
	uint32_t ttl;
	uint64_t ttl_ms = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|O", kwlist, &token,
					 &ttl_o) ||
	    rmp_py_ttl(ttl_o, &ttl) < 0 || rmp_py_check_open(c) < 0)
		return NULL;
	RMP_PY_CALL(c, rc, rmp_lease_renew_token(c->c, token, ttl, &ttl_ms));
	return rc < 0 ? NULL : PyFloat_FromDouble((double)ttl_ms / 1000.0);
}

static PyObject *client_free_token(PyObject *self, PyObject *args)
{
	RmpClient *c = (RmpClient *)self;
	const char *token;
	int rc;

	if (!PyArg_ParseTuple(args, "s", &token) || rmp_py_check_open(c) < 0)
		return NULL;
	RMP_PY_CALL(c, rc, rmp_lease_free_token(c->c, token));
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* set_u64 -- d[k] = v; -1 on error. */
static int set_u64(PyObject *d, const char *k, unsigned long long v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc;

	if (!o)
		return -1;
	rc = PyDict_SetItemString(d, k, o);
	Py_DECREF(o);
	return rc;
}

static PyObject *client_stat(PyObject *self, PyObject *unused)
{
	RmpClient *c = (RmpClient *)self;
	struct rmp_pool_stat st = { .size = sizeof(st) };
	PyObject *d, *mode;
	int rc;

	if (rmp_py_check_open(c) < 0)
		return NULL;
	RMP_PY_CALL(c, rc, rmp_stat(c->c, &st));
	if (rc < 0)
		return NULL;
	d = PyDict_New();
	if (!d)
		return NULL;
	if (set_u64(d, "pool_bytes", st.pool_bytes) < 0 ||
	    set_u64(d, "free_bytes", st.free_bytes) < 0 ||
	    set_u64(d, "largest_free", st.largest_free) < 0 ||
	    set_u64(d, "leases", st.leases) < 0 ||
	    set_u64(d, "client_bytes", st.client_bytes) < 0 ||
	    set_u64(d, "client_leases", st.client_leases) < 0 ||
	    set_u64(d, "quota_bytes", st.quota_bytes) < 0 ||
	    set_u64(d, "quota_leases", st.quota_leases) < 0 ||
	    set_u64(d, "hugepage_size", st.hugepage_size) < 0 ||
	    set_u64(d, "ttl_min_s", st.ttl_min_s) < 0 ||
	    set_u64(d, "ttl_max_s", st.ttl_max_s) < 0 ||
	    set_u64(d, "ttl_default_s", st.ttl_default_s) < 0 ||
	    set_u64(d, "quarantined_bytes", st.quarantined_bytes) < 0 ||
	    set_u64(d, "zeroing_bytes", st.zeroing_bytes) < 0 ||
	    set_u64(d, "tenant_connections", st.tenant_connections) < 0 ||
	    set_u64(d, "quota_connections", st.quota_connections) < 0 ||
	    set_u64(d, "keys", st.keys) < 0)
		goto err;
	mode = PyLong_FromLong(st.numa_node);
	if (!mode || PyDict_SetItemString(d, "numa_node", mode) < 0) {
		Py_XDECREF(mode);
		goto err;
	}
	Py_DECREF(mode);
	mode = PyUnicode_FromString(st.keys_mode ? st.keys_mode : "unknown");
	if (!mode || PyDict_SetItemString(d, "keys_mode", mode) < 0) {
		Py_XDECREF(mode);
		goto err;
	}
	Py_DECREF(mode);
	return d;
err:
	Py_DECREF(d);
	return NULL;
}

static PyObject *client_register(PyObject *self, PyObject *obj)
{
	RmpClient *c = (RmpClient *)self;

	if (rmp_py_check_open(c) < 0)
		return NULL;
	return rmp_py_buf_new(c, obj);
}

static PyObject *client_submit(PyObject *self, PyObject *unused)
{
	RmpClient *c = (RmpClient *)self;
	struct rmp_py_fail f;
	int rc;

	if (rmp_py_check_open(c) < 0)
		return NULL;
	rmp_py_lock(&c->lk);
	rc = rmp_submit(c->c);
	if (rc < 0)
		rmp_py_note(&f, rc, rmp_py_client_detail(c));
	rmp_py_unlock(&c->lk);
	return rc < 0 ? rmp_py_raise(&f) : PyLong_FromLong(rc);
}

#define POLL_BATCH 64

/*
 * A poll reaps completions from the library, then builds the list it
 * returns; the build may fail (MemoryError) once the library has given
 * them up. So a failed build puts them back into c->held, and the next
 * poll returns those first, without waiting: none is lost, none comes
 * twice (the operations are forgotten only once the list is built). The
 * room for putting back is made before anything is reaped (hold_room;
 * c->reaping counts what polls in progress may put back), so that the
 * putting back itself cannot fail. c->held is touched with the GIL held.
 */
static int hold_room(RmpClient *c, size_t n)
{
	size_t want = c->nheld + c->reaping + n;
	struct rmp_completion *p;

	if (want > c->held_cap) {
		p = realloc(c->held, want * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->held = p;
		c->held_cap = want;
	}
	c->reaping += n;
	return 0;
}

/* take_held -- up to max of the completions c holds, oldest first. */
static int take_held(RmpClient *c, struct rmp_completion *comp, int max)
{
	size_t n = c->nheld < (size_t)max ? c->nheld : (size_t)max;

	memcpy(comp, c->held, n * sizeof(*comp));
	memmove(c->held, c->held + n, (c->nheld - n) * sizeof(*comp));
	c->nheld -= n;
	c->reaping += n; /* their room stays theirs */
	return (int)n;
}

/* put_back -- comp[0, n), reaped before what c holds, back in front. */
static void put_back(RmpClient *c, const struct rmp_completion *comp,
		     int n)
{
	memmove(c->held + n, c->held, c->nheld * sizeof(*comp));
	memcpy(c->held, comp, (size_t)n * sizeof(*comp));
	c->nheld += (size_t)n;
}

/* poll_result -- the list for comp[0, n): (user_data, status) of each
 * operation of ours. NULL with an exception, and then nothing changed:
 * the operations are still pending. */
static PyObject *poll_result(RmpClient *c, const struct rmp_completion *comp,
			     int n)
{
	PyObject *key[POLL_BATCH] = { NULL }, *val[POLL_BATCH] = { NULL };
	PyObject *list = PyList_New(0), *t;
	int i;

	if (!list)
		return NULL;
	for (i = 0; i < n; i++) {
		if (rmp_py_peek_op(c, comp[i].user_data, &key[i], &val[i]) < 0)
			goto err;
		if (!val[i])
			continue; /* not ours: cannot happen */
		t = Py_BuildValue("(Oi)", PyTuple_GetItem(val[i], 0),
				  comp[i].status);
		if (!t || PyList_Append(list, t) < 0) {
			Py_XDECREF(t);
			goto err;
		}
		Py_DECREF(t);
	}
	/* Built: only now are they forgotten (which cannot fail). */
	for (i = 0; i < n; i++)
		rmp_py_forget_peeked(c, key[i], val[i]);
	return list;
err:
	for (i = 0; i < n; i++) {
		Py_XDECREF(key[i]);
		Py_XDECREF(val[i]);
	}
	Py_DECREF(list);
	return NULL;
}

/* reap -- submit, then up to max completions of c's into comp (c's lock
 * held), waiting timeout_ms for the first with the GIL released. */
static int reap(RmpClient *c, struct rmp_completion *comp, int max,
		int timeout_ms)
{
	int n = rmp_submit(c->c);

	if (n < 0)
		return n;
	if (!timeout_ms)
		return rmp_poll(c->c, comp, max, 0);
	Py_BEGIN_ALLOW_THREADS
	n = rmp_poll(c->c, comp, max, timeout_ms);
	Py_END_ALLOW_THREADS
	return n;
}

/* poll_timeout -- poll's timeout argument (NULL: 0) in ms, -1 for ever. */
static int poll_timeout(PyObject *o, int *ms)
{
	double t;

	*ms = 0;
	if (o == Py_None) {
		*ms = -1;
	} else if (o) {
		t = PyFloat_AsDouble(o);
		if (t == -1.0 && PyErr_Occurred())
			return -1;
		if (isnan(t)) {
			PyErr_SetString(PyExc_ValueError, "timeout is NaN");
			return -1;
		}
		*ms = t < 0 ? -1 : t > 2e6 ? 2000000000 : (int)ceil(t * 1000.0);
	}
	return 0;
}

static PyObject *client_poll(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "max", "timeout", NULL };
	RmpClient *c = (RmpClient *)self;
	struct rmp_completion comp[POLL_BATCH];
	struct rmp_py_fail f;
	int max = POLL_BATCH, timeout_ms, n;
	PyObject *timeout_o = NULL, *list;
	size_t reserved = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|iO", kwlist, &max,
					 &timeout_o))
		return NULL;
	if (max <= 0 || max > POLL_BATCH) {
		PyErr_Format(PyExc_ValueError, "max must be 1..%d", POLL_BATCH);
		return NULL;
	}
	if (poll_timeout(timeout_o, &timeout_ms) < 0 ||
	    rmp_py_check_open(c) < 0)
		return NULL;
	rmp_py_lock(&c->lk);
	if (c->nheld) {
		/* A failed poll's first: they are ready, no waiting. */
		n = rmp_submit(c->c);
		if (n >= 0) {
			n = take_held(c, comp, max);
			reserved = (size_t)n;
		}
	} else if (hold_room(c, (size_t)max) == 0) {
		reserved = (size_t)max;
		n = reap(c, comp, max, timeout_ms);
	} else {
		n = -ENOMEM;
	}
	if (n < 0)
		rmp_py_note(&f, n, n == -ENOMEM && !reserved ? NULL :
			    rmp_py_client_detail(c));
	rmp_py_unlock(&c->lk);
	if (n < 0) {
		c->reaping -= reserved;
		return rmp_py_raise(&f);
	}
	list = poll_result(c, comp, n);
	if (!list)
		put_back(c, comp, n);
	c->reaping -= reserved;
	return list;
}

static PyObject *client_get_closed(PyObject *self, void *unused)
{
	RmpClient *c = (RmpClient *)self;

	return PyBool_FromLong(!c->c || !c->connected);
}

static PyObject *client_get_host(PyObject *self, void *unused)
{
	RmpClient *c = (RmpClient *)self;

	return Py_NewRef(c->host ? c->host : Py_None);
}

static PyObject *client_get_port(PyObject *self, void *unused)
{
	return PyLong_FromLong(((RmpClient *)self)->port);
}

static PyObject *client_get_pending(PyObject *self, void *unused)
{
	RmpClient *c = (RmpClient *)self;

	return PyLong_FromSsize_t(c->pending ? PyDict_Size(c->pending) : 0);
}

static PyObject *client_get_last_error(PyObject *self, void *unused)
{
	RmpClient *c = (RmpClient *)self;
	struct rmp_py_fail f;

	/* Copied under the lock: another thread's call may be writing it. */
	rmp_py_lock(&c->lk);
	rmp_py_note(&f, 0, rmp_py_client_detail(c));
	rmp_py_unlock(&c->lk);
	return PyUnicode_DecodeUTF8(f.detail, (Py_ssize_t)strlen(f.detail),
				    "replace");
}

static PyObject *client_repr(PyObject *self)
{
	RmpClient *c = (RmpClient *)self;

	return PyUnicode_FromFormat("<rmpool.Client %R port %d%s>",
		c->host ? c->host : Py_None, c->port,
		c->c && c->connected ? "" : " closed");
}

static PyMethodDef client_methods[] = {
	{ "close", client_close, METH_NOARGS,
	  "close($self)\n--\n\nDisconnect. Leases stay on the server until their "
	  "deadline (ephemeral ones end now); their handles, and registered "
	  "buffers, then raise NotConnected. Operations posted and not polled "
	  "are dropped. Closing twice is harmless." },
	{ "__enter__", client_enter, METH_NOARGS, "Return the client." },
	{ "__exit__", client_exit, METH_VARARGS, "Close the client." },
	{ "fileno", client_fileno, METH_NOARGS,
	  "fileno($self)\n--\n\nReturns int. A descriptor that becomes readable when "
	  "completions of posted operations may be ready (select, epoll, "
	  "asyncio's add_reader); then call poll(timeout=0) until it returns "
	  "fewer than max. Other calls on the client may reap completions "
	  "without the descriptor signalling them: poll after them before "
	  "waiting on it. A new connection has a new descriptor." },
	{ "alloc", (PyCFunction)(void (*)(void))client_alloc,
	  METH_VARARGS | METH_KEYWORDS,
	  "alloc($self, size, *, ttl=None, ephemeral=False, alignment=None, access=7, auto_renew=False, spill=False, free_on_exit=True)\n--\n\nReturns Lease. "
	  "Lease size bytes of the server's pool. ttl: seconds (None: the "
	  "server's default). ephemeral: freed when this connection goes. "
	  "alignment: a power of two (None: the server's, 64). access: "
	  "ACCESS_READ | ACCESS_WRITE | ACCESS_ATOMIC. auto_renew: the "
	  "server renews it while the connection lives. spill: may go to "
	  "another device's pool of the server. free_on_exit: whether "
	  "leaving a with block frees the lease (else only the handle is "
	  "closed). Raises QuotaExceeded, PoolFull, LeaseTooLarge, "
	  "ServerDraining, InvalidArgument, ..." },
	{ "attach", (PyCFunction)(void (*)(void))client_attach,
	  METH_VARARGS | METH_KEYWORDS,
	  "attach($self, token, *, read_only=False, exclusive=False, access=0, free_on_exit=False)\n--\n\nReturns Lease. "
	  "Reach an existing lease of this client's tenant by its token "
	  "(from Lease.token, or the rmpool CLI): this connection gets its "
	  "own key to the same bytes. read_only: writes and atomics fail. "
	  "exclusive: revoke every other connection's key first. Raises "
	  "LeaseNotFound, LeaseExpired, WrongTenant (another tenant's "
	  "lease), QuotaExceeded (keys per lease), InvalidArgument "
	  "(malformed token)." },
	{ "renew_token", (PyCFunction)(void (*)(void))client_renew_token,
	  METH_VARARGS | METH_KEYWORDS,
	  "renew_token($self, token, ttl=None)\n--\n\nReturns float. Renew the lease of "
	  "token without attaching it (nobody's key changes); returns its "
	  "new lifetime in seconds." },
	{ "free_token", client_free_token, METH_VARARGS,
	  "free_token($self, token)\n--\n\nFree the lease of token without "
	  "attaching it: every key to it is revoked." },
	{ "stat", client_stat, METH_NOARGS,
	  "stat($self)\n--\n\nReturns dict. Pool figures of the server (one round "
	  "trip): pool_bytes, free_bytes, largest_free, leases, "
	  "client_bytes, client_leases (this tenant's), quota_bytes, "
	  "quota_leases, ttl bounds, keys_mode, ..." },
	{ "register", client_register, METH_O,
	  "register($self, buffer)\n--\n\nReturns RegisteredBuffer. Register the memory "
	  "of a contiguous buffer (bytearray, numpy array, mmap, ...) with "
	  "the device once. Reads and writes whose memory lies inside it "
	  "then go straight to and from it (no copy), and post_* take it. "
	  "The buffer is held (it cannot be resized) until the registered "
	  "buffer is unregistered or collected." },
	{ "submit", client_submit, METH_NOARGS,
	  "submit($self)\n--\n\nReturns int. Post every queued operation (post_*) to "
	  "the NIC with one doorbell; returns how many." },
	{ "poll", (PyCFunction)(void (*)(void))client_poll,
	  METH_VARARGS | METH_KEYWORDS,
	  "poll($self, max=64, timeout=0)\n--\n\nReturns list[tuple[object, int]]. "
	  "Submit what is queued, then reap up to max completions, in "
	  "submission order: (user_data, status) pairs, status 0 or a "
	  "negative errno (rmpool.exception_for(status) makes the "
	  "exception). timeout: seconds to wait for the first, 0 not at "
	  "all, None for ever (the GIL is released while waiting). If "
	  "the list cannot be built (MemoryError), the completions it "
	  "reaped are kept: the next poll returns them first, at once." },
	{ 0 }
};

static PyGetSetDef client_getset[] = {
	{ "closed", client_get_closed, NULL, "True once closed.", NULL },
	{ "host", client_get_host, NULL, "The host as given.", NULL },
	{ "port", client_get_port, NULL, "The server's port.", NULL },
	{ "pending", client_get_pending, NULL,
	  "Posted operations not polled yet.", NULL },
	{ "last_error", client_get_last_error, NULL,
	  "The library's detail of the last failed call, or ''.", NULL },
	{ 0 }
};

static PyMemberDef client_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET,
	  offsetof(RmpClient, weakreflist), READONLY, NULL },
	{ "_reconnects", T_INT, offsetof(RmpClient, reconnects), READONLY,
	  "True when made with reconnect_max_ms > 0 (asyncio refuses it)." },
	{ 0 }
};

static PyType_Slot client_slots[] = {
	{ Py_tp_doc, (void *)
	  "Client(host, port=7471, *, tenant=<env>, key=None, key_file=<env>, "
	  "name=None, timeout=5.0, op_timeout=10.0, reconnect_max_ms=0, "
	  "spin_max_us=-1, bounce_bytes=0, max_inflight=0, rail_stripe=0)\n\n"
	  "One RDMA connection to an rmpoold, made at construction (the GIL "
	  "is released while it connects).\n\n"
	  "host: name or address of the server (\"A1,A2\": one node's "
	  "rails). tenant: the tenant's name; not given: $RMPOOL_TENANT; "
	  "None or '': anonymous. key: the tenant's key (bytes), or "
	  "key_file: a file with it as hex (not given: $RMPOOL_KEY_FILE "
	  "with the environment's tenant). timeout: seconds for connecting, "
	  "op_timeout for each reply. reconnect_max_ms > 0: reconnect by "
	  "itself after a loss (see librmpool(3)). 0 or -1 for the others: "
	  "the library's defaults.\n\n"
	  "A context manager: leaving the block closes it. Threads may share "
	  "a client: its calls take a lock, so they run one at a time (for "
	  "parallel I/O open one client per thread)." },
	{ Py_tp_new, client_new },
	{ Py_tp_init, client_init },
	{ Py_tp_dealloc, client_dealloc },
	{ Py_tp_traverse, client_traverse },
	{ Py_tp_clear, client_clear },
	{ Py_tp_repr, client_repr },
	{ Py_tp_methods, client_methods },
	{ Py_tp_getset, client_getset },
	{ Py_tp_members, client_members },
	{ 0, NULL }
};

static PyType_Spec client_spec = {
	.name = "rmpool._rmpool.Client",
	.basicsize = sizeof(RmpClient),
	/* A base type: the package's Client adds asyncio to it. */
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
	.slots = client_slots,
};

int rmp_py_client_init(PyObject *m)
{
	rmp_py_client_type = PyType_FromSpec(&client_spec);
	if (!rmp_py_client_type ||
	    PyModule_AddObjectRef(m, "Client", rmp_py_client_type) < 0)
		return -1;
	return 0;
}

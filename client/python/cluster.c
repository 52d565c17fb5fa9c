/* SPDX-License-Identifier: MIT */
/*
 * cluster.c -- rmpool.Cluster: the storage nodes registered in etcd
 * (rmp_cluster), their list (NodeInfo), and leases placed over them:
 * of one node, mirrored, striped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmp_py.h"

PyObject *rmp_py_cluster_type, *rmp_py_node_info_type;

/* check_open -- 0, or -1 with an exception when cl is closed. */
static int check_open(RmpCluster *cl)
{
	if (cl->cl)
		return 0;
	PyErr_SetString(PyExc_ValueError, "the cluster is closed");
	return -1;
}

static int cluster_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "url", "prefix", "etcd_timeout", "ca_file",
		"cert_file", "etcd_key_file", "credentials_file", "tenant",
		"key", "key_file", "name", "timeout", "op_timeout",
		"reconnect_max_ms", "spin_max_us", "bounce_bytes",
		"max_inflight", "rail_stripe", "allow_anonymous",
		"member_timeout", NULL };
	RmpCluster *cl = (RmpCluster *)self;
	PyObject *url, *prefix_o = NULL, *etcd_timeout_o = NULL;
	PyObject *ca_o = NULL, *cert_o = NULL, *ekey_o = NULL, *cred_o = NULL;
	PyObject *member_timeout_o = NULL;
	struct rmp_py_copts p = { .spin = -1 };
	struct rmp_client_opts co;
	struct rmp_cluster_opts o;
	struct rmp_cluster *c = NULL;
	const char *url_s;
	int rc, anonymous = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|$OOOOOOOOOzOOOinOnpO",
		kwlist, &url, &prefix_o, &etcd_timeout_o, &ca_o, &cert_o,
		&ekey_o, &cred_o, &p.tenant, &p.key, &p.key_file, &p.name,
		&p.timeout, &p.op_timeout, &p.reconnect, &p.spin, &p.bounce,
		&p.max_inflight, &p.rail_stripe, &anonymous,
		&member_timeout_o))
		return -1;
	/* Once: its leases' handles are known freed when cl->cl is NULL. */
	if (cl->cl || cl->url) {
		PyErr_SetString(PyExc_RuntimeError,
				"Cluster already initialised");
		return -1;
	}
	rmp_cluster_opts_init(&o);
	rmp_client_opts_init(&co);
	o.client = &co;
	o.allow_anonymous = anonymous;
	if (rmp_py_utf8(url, &url_s) < 0 ||
	    rmp_py_opt_str(prefix_o, NULL, &o.prefix) < 0 ||
	    rmp_py_seconds_ms(etcd_timeout_o, "etcd_timeout",
			      &o.etcd_timeout_ms) < 0 ||
	    rmp_py_seconds_ms(member_timeout_o, "member_timeout",
			      &o.member_timeout_ms) < 0 ||
	    rmp_py_opt_str(ca_o, NULL, &o.ca_file) < 0 ||
	    rmp_py_opt_str(cert_o, NULL, &o.cert_file) < 0 ||
	    rmp_py_opt_str(ekey_o, NULL, &o.key_file) < 0 ||
	    rmp_py_opt_str(cred_o, NULL, &o.credentials_file) < 0 ||
	    rmp_py_client_opts(&p, &co) < 0) {
		rmp_py_copts_release(&p);
		return -1;
	}
	/* Taken before the GIL is released: a second __init__ in another
	 * thread meanwhile is refused above. */
	cl->url = Py_NewRef(url);
	/* Reads the membership from etcd: a round trip or more. The
	 * options are copied (the key too) before it returns. */
	Py_BEGIN_ALLOW_THREADS
	rc = rmp_cluster_open(&c, url_s, &o);
	Py_END_ALLOW_THREADS
	rmp_py_copts_release(&p);
	if (rc < 0) {
		/* no handle to ask: the library said why on stderr */
		char detail[512];

		Py_CLEAR(cl->url);
		snprintf(detail, sizeof(detail), "cluster %s", url_s);
		rmp_py_error_detail(detail, rc);
		return -1;
	}
	cl->cl = c;
	return 0;
}

static PyObject *cluster_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	RmpCluster *cl = (RmpCluster *)alloc(tp, 0);

	if (!cl)
		return NULL;
	if (rmp_py_lock_init(&cl->lk) < 0) {
		Py_DECREF(cl);
		return PyErr_NoMemory();
	}
	return (PyObject *)cl;
}

/*
 * close_all -- close every lease handle of cl (the library frees them
 * with the cluster; the Python objects stay, closed) and the cluster.
 * With the GIL held: no handle's call is under way (each holds the lock
 * with the GIL released, and close waits for that lock).
 */
static void close_all(RmpCluster *cl)
{
	struct rmp_cluster *c;

	rmp_py_lock(&cl->lk);
	while (cl->leases) {
		RmpLease *l = cl->leases;

		l->l = NULL;
		rmp_py_cluster_unlink(l);
	}
	c = cl->cl;
	cl->cl = NULL;
	Py_BEGIN_ALLOW_THREADS
	rmp_cluster_close(c);
	Py_END_ALLOW_THREADS
	rmp_py_unlock(&cl->lk);
}

static int cluster_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	return 0;
}

static void cluster_dealloc(PyObject *self)
{
	RmpCluster *cl = (RmpCluster *)self;

	PyObject_GC_UnTrack(self);
	if (cl->weakreflist)
		PyObject_ClearWeakRefs(self);
	/* Leases hold references: none is left. */
	if (cl->cl)
		close_all(cl);
	rmp_py_lock_free(&cl->lk);
	Py_CLEAR(cl->url);
	rmp_py_dealloc(self);
}

static PyObject *cluster_close(PyObject *self, PyObject *unused)
{
	RmpCluster *cl = (RmpCluster *)self;

	if (cl->cl)
		close_all(cl);
	Py_RETURN_NONE;
}

static PyObject *cluster_enter(PyObject *self, PyObject *unused)
{
	if (check_open((RmpCluster *)self) < 0)
		return NULL;
	return Py_NewRef(self);
}

static PyObject *cluster_exit(PyObject *self, PyObject *args)
{
	return cluster_close(self, NULL);
}

/* utf8 -- str of C string s (from etcd or the library: bytes that are
 * not UTF-8 become U+FFFD rather than an error). */
static PyObject *utf8(const char *s)
{
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* utf8n -- the same for the n bytes at s. */
static PyObject *utf8n(const char *s, Py_ssize_t n)
{
	return PyUnicode_DecodeUTF8(s, n, "replace");
}

/* labels_dict -- "NAME=VALUE NAME=VALUE ..." as a dict. */
static PyObject *labels_dict(const char *s)
{
	PyObject *d = PyDict_New();

	while (d && *s) {
		const char *end = strchr(s, ' '), *eq;
		size_t n = end ? (size_t)(end - s) : strlen(s);
		PyObject *k, *v;

		eq = memchr(s, '=', n);
		if (n && eq) {
			k = utf8n(s, eq - s);
			v = utf8n(eq + 1, s + n - eq - 1);
			if (!k || !v || PyDict_SetItem(d, k, v) < 0)
				Py_CLEAR(d);
			Py_XDECREF(k);
			Py_XDECREF(v);
		}
		s += n;
		while (*s == ' ')
			s++;
	}
	return d;
}

/* node_info -- one NodeInfo of n. */
static PyObject *node_info(const struct rmp_node_info *n)
{
	PyObject *r = PyStructSequence_New(
		(PyTypeObject *)rmp_py_node_info_type);
	PyObject *v[14];
	int i;

	if (!r)
		return NULL;
	v[0] = utf8(n->node);
	v[1] = utf8(n->addr);
	v[2] = PyLong_FromLong(n->port);
	v[3] = utf8(n->device);
	v[4] = PyLong_FromLong(n->numa_node);
	v[5] = PyLong_FromUnsignedLongLong(n->pool_bytes);
	v[6] = PyLong_FromUnsignedLongLong(n->free_bytes);
	v[7] = PyLong_FromUnsignedLongLong(n->largest_free);
	v[8] = PyBool_FromLong(n->draining);
	v[9] = utf8(n->version);
	v[10] = labels_dict(n->labels);
	v[11] = PyBool_FromLong(n->connected);
	v[12] = PyLong_FromLong(n->proven);
	v[13] = utf8(n->why);
	for (i = 0; i < 14; i++) {
		if (!v[i]) {
			for (; i < 14; i++)
				Py_XDECREF(v[i]);
			Py_DECREF(r);
			return NULL;
		}
		PyStructSequence_SetItem(r, i, v[i]);
	}
	return r;
}

static PyObject *cluster_nodes(PyObject *self, PyObject *unused)
{
	RmpCluster *cl = (RmpCluster *)self;
	struct rmp_cluster *held;
	struct rmp_node_info *out = NULL;
	unsigned max = 0, i;
	PyObject *list;
	int n;

	if (check_open(cl) < 0)
		return NULL;
	/* The count first, then that many (more may come meanwhile). */
	for (;;) {
		RMP_PY_CALL_ON(&cl->lk, n, held, cl->cl, check_open(cl),
			       rmp_cluster_last_error(held),
			       rmp_cluster_nodes(held, out, max));
		if (n < 0 || (unsigned)n <= max)
			break;
		free(out);
		max = (unsigned)n + 4;
		out = calloc(max, sizeof(*out));
		if (!out)
			return PyErr_NoMemory();
		for (i = 0; i < max; i++)
			out[i].size = sizeof(*out);
		if (check_open(cl) < 0) {
			free(out);
			return NULL;
		}
	}
	list = n < 0 ? NULL : PyList_New(0);
	for (i = 0; list && i < (unsigned)n; i++) {
		PyObject *x = node_info(&out[i]);

		if (!x || PyList_Append(list, x) < 0)
			Py_CLEAR(list);
		Py_XDECREF(x);
	}
	free(out);
	return list;
}

/* What check and repair call: the cluster's name or token calls. */
enum str_call { CALL_CHECK, CALL_REPAIR };

/* str_call -- the library's call `which` on cl with the str arg (a
 * node's name, a token): None, or the exception. */
static PyObject *str_call(PyObject *self, PyObject *arg, enum str_call which)
{
	RmpCluster *cl = (RmpCluster *)self;
	struct rmp_cluster *held;
	const char *s;
	int n;

	if (check_open(cl) < 0 || rmp_py_utf8(arg, &s) < 0)
		return NULL;
	RMP_PY_CALL_ON(&cl->lk, n, held, cl->cl, check_open(cl),
		       rmp_cluster_last_error(held),
		       which == CALL_CHECK ? rmp_cluster_check(held, s) :
		       rmp_cluster_repair(held, s));
	if (n < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *cluster_check(PyObject *self, PyObject *arg)
{
	return str_call(self, arg, CALL_CHECK);
}

static PyObject *cluster_repair(PyObject *self, PyObject *arg)
{
	return str_call(self, arg, CALL_REPAIR);
}

/* exclude_arg -- None, a str ("n1,n2" or "n1 n2"), or an iterable of
 * node names, as the library's comma list into *out (a new bytes object
 * in *keep, or NULL). */
static int exclude_arg(PyObject *o, const char **out, PyObject **keep)
{
	PyObject *sep, *joined;

	*out = NULL;
	*keep = NULL;
	if (!o || o == Py_None)
		return 0;
	if (PyUnicode_Check(o))
		return rmp_py_utf8(o, out);
	if (PyBytes_Check(o)) {
		PyErr_SetString(PyExc_TypeError,
				"exclude must be a str or an iterable of str");
		return -1;
	}
	sep = PyUnicode_FromString(",");
	if (!sep)
		return -1;
	joined = PyUnicode_Join(sep, o);
	Py_DECREF(sep);
	if (!joined)
		return -1;
	*keep = joined;
	return rmp_py_utf8(joined, out);
}

/* bind_or_fail -- the tail of alloc and attach, entered with cl's lock
 * held after the call (called 0: not made, the cluster closed while this
 * thread waited for the lock): l goes into the blank lease before the
 * lock is given back (no close comes in between); on failure the
 * exception, built after the unlock. The lease, or NULL. */
static PyObject *bind_or_fail(RmpCluster *cl, PyObject *lease, int called,
			      int rc, struct rmp_lease *l, int free_on_exit)
{
	struct rmp_py_fail f;

	if (called && rc >= 0)
		rmp_py_cluster_lease_bind(cl, lease, l, free_on_exit);
	else if (called)
		rmp_py_note(&f, rc, rmp_cluster_last_error(cl->cl));
	rmp_py_unlock(&cl->lk);
	if (called && rc >= 0)
		return lease;
	if (!called)
		check_open(cl);
	else
		rmp_py_raise(&f);
	Py_DECREF(lease);
	return NULL;
}

/* ec_arg -- ec=(k, m) of Cluster.alloc into o (None: not coded). */
static int ec_arg(PyObject *ec_o, struct rmp_cluster_alloc_opts *o)
{
	unsigned long long k, m;

	if (ec_o == Py_None)
		return 0;
	if (!PyTuple_Check(ec_o) || PyTuple_Size(ec_o) != 2) {
		PyErr_SetString(PyExc_TypeError,
				"ec must be a tuple (data, parity)");
		return -1;
	}
	if (rmp_py_bounded(PyTuple_GetItem(ec_o, 0), "ec data", 2, 12,
			   &k) < 0 ||
	    rmp_py_bounded(PyTuple_GetItem(ec_o, 1), "ec parity", 1, 4,
			   &m) < 0)
		return -1;
	o->ec_data = (unsigned)k;
	o->ec_parity = (unsigned)m;
	return 0;
}

static PyObject *cluster_alloc(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "size", "ttl", "ephemeral", "alignment",
		"access", "prefer", "exclude", "replicas", "spread", "stripes",
		"stripe_unit", "ec", "ec_chunk", "free_on_exit", NULL };
	RmpCluster *cl = (RmpCluster *)self;
	unsigned long long size, alignment = 0, access = RMP_ACCESS_ALL;
	unsigned long long replicas = 1, stripes = 1, unit = 0, chunk = 0;
	PyObject *size_o, *align_o = NULL, *access_o = NULL, *ttl_o = Py_None;
	PyObject *prefer_o = NULL, *exclude_o = NULL, *spread_o = NULL;
	PyObject *replicas_o = NULL, *stripes_o = NULL, *unit_o = NULL;
	PyObject *ec_o = Py_None, *chunk_o = Py_None;
	PyObject *keep = NULL, *lease;
	int ephemeral = 0, free_on_exit = 1;
	struct rmp_cluster_alloc_opts o;
	struct rmp_lease *l = NULL;
	int rc = 0, called;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OpOOOOOOOOOOp", kwlist,
		&size_o, &ttl_o, &ephemeral, &align_o, &access_o, &prefer_o,
		&exclude_o, &replicas_o, &spread_o, &stripes_o, &unit_o, &ec_o,
		&chunk_o, &free_on_exit))
		return NULL;
	rmp_cluster_alloc_opts_init(&o);
	/* The ranges the library takes, said here in Python's terms. */
	if (rmp_py_bounded(size_o, "size", 1, INT64_MAX, &size) < 0 ||
	    (align_o && align_o != Py_None &&
	     rmp_py_bounded(align_o, "alignment", 0, INT64_MAX,
			    &alignment) < 0) ||
	    (access_o && rmp_py_bounded(access_o, "access", 1,
					RMP_ACCESS_ALL, &access) < 0) ||
	    (replicas_o && rmp_py_bounded(replicas_o, "replicas", 1, 3,
					  &replicas) < 0) ||
	    (stripes_o && rmp_py_bounded(stripes_o, "stripes", 1, 16,
					 &stripes) < 0) ||
	    (unit_o && unit_o != Py_None &&
	     rmp_py_bounded(unit_o, "stripe_unit", 4096, 1ULL << 30,
			    &unit) < 0) ||
	    (chunk_o != Py_None &&
	     rmp_py_bounded(chunk_o, "ec_chunk", 4096, 1ULL << 20,
			    &chunk) < 0) ||
	    ec_arg(ec_o, &o) < 0 ||
	    rmp_py_ttl(ttl_o, &o.ttl_s) < 0 ||
	    rmp_py_opt_str(prefer_o, NULL, &o.prefer) < 0 ||
	    rmp_py_opt_str(spread_o, NULL, &o.spread) < 0)
		return NULL;
	if (alignment & (alignment - 1)) {
		PyErr_SetString(PyExc_ValueError,
				"alignment must be a power of two");
		return NULL;
	}
	if ((unit & (unit - 1)) || (chunk & (chunk - 1))) {
		PyErr_SetString(PyExc_ValueError, unit & (unit - 1) ?
				"stripe_unit must be a power of two" :
				"ec_chunk must be a power of two");
		return NULL;
	}
	if (exclude_arg(exclude_o, &o.exclude, &keep) < 0) {
		Py_XDECREF(keep);
		return NULL;
	}
	o.alignment = alignment;
	o.access = (uint32_t)access;
	o.flags = ephemeral ? RMP_LEASE_EPHEMERAL : 0;
	o.replicas = (unsigned)replicas;
	o.stripes = (unsigned)stripes;
	o.stripe_unit = unit;
	o.ec_chunk = chunk;
	if (check_open(cl) < 0) {
		Py_XDECREF(keep);
		return NULL;
	}
	lease = rmp_py_lease_blank();
	if (!lease) {
		Py_XDECREF(keep);
		return NULL;
	}
	rmp_py_lock(&cl->lk);
	called = cl->cl != NULL;
	if (called) {
		Py_BEGIN_ALLOW_THREADS
		rc = rmp_cluster_alloc(cl->cl, size, &o, &l);
		Py_END_ALLOW_THREADS
	}
	lease = bind_or_fail(cl, lease, called, rc, l, free_on_exit);
	Py_XDECREF(keep);
	return lease;
}

static PyObject *cluster_attach(PyObject *self, PyObject *args, PyObject *kw)
{
	RmpCluster *cl = (RmpCluster *)self;
	const char *token;
	int free_on_exit;
	struct rmp_attach_opts o;
	struct rmp_lease *l = NULL;
	PyObject *lease;
	int rc = 0, called;

	if (rmp_py_attach_args(args, kw, &token, &o, &free_on_exit) < 0 ||
	    check_open(cl) < 0)
		return NULL;
	lease = rmp_py_lease_blank();
	if (!lease)
		return NULL;
	rmp_py_lock(&cl->lk);
	called = cl->cl != NULL;
	if (called) {
		Py_BEGIN_ALLOW_THREADS
		rc = rmp_cluster_attach(cl->cl, token, &o, &l);
		Py_END_ALLOW_THREADS
	}
	return bind_or_fail(cl, lease, called, rc, l, free_on_exit);
}

static PyObject *cluster_get_closed(PyObject *self, void *unused)
{
	return PyBool_FromLong(!((RmpCluster *)self)->cl);
}

static PyObject *cluster_get_url(PyObject *self, void *unused)
{
	RmpCluster *cl = (RmpCluster *)self;

	return Py_NewRef(cl->url ? cl->url : Py_None);
}

static PyObject *cluster_get_last_error(PyObject *self, void *unused)
{
	RmpCluster *cl = (RmpCluster *)self;
	struct rmp_py_fail f;

	/* Copied under the lock: another thread's call may be writing it. */
	rmp_py_lock(&cl->lk);
	rmp_py_note(&f, 0, cl->cl ? rmp_cluster_last_error(cl->cl) : NULL);
	rmp_py_unlock(&cl->lk);
	return utf8(f.detail);
}

static PyObject *cluster_repr(PyObject *self)
{
	RmpCluster *cl = (RmpCluster *)self;

	return PyUnicode_FromFormat("<rmpool.Cluster %R%s>",
		cl->url ? cl->url : Py_None, cl->cl ? "" : " closed");
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef cluster_methods[] = {
	{ "close", cluster_close, METH_NOARGS,
	  "close($self)\n--\n\nClose every connection the cluster opened. Its "
	  "leases stay on their servers until their deadlines (ephemeral "
	  "ones end now); their handles are closed with it and raise "
	  "ValueError afterwards. Closing twice is harmless." },
	{ "__enter__", cluster_enter, METH_NOARGS, "Return the cluster." },
	{ "__exit__", cluster_exit, METH_VARARGS, "Close the cluster." },
	{ "nodes", cluster_nodes, METH_NOARGS,
	  "nodes($self)\n--\n\nReturns list[NodeInfo]. The nodes registered "
	  "now, sorted by name (the membership news taken in first; no etcd "
	  "round trip while the watch holds)." },
	{ "check", cluster_check, METH_O,
	  "check($self, node)\n--\n\nConnect to the node of that name as "
	  "placing a lease there would; nodes() then says what it answered. "
	  "Raises ServerUnproven when it did not prove the tenant's key (not a "
	  "server of this tenant: never given a lease), LeaseNotFound when no "
	  "such node is registered, and the errors of Client's connect." },
	{ "repair", cluster_repair, METH_O,
	  "repair($self, token)\n--\n\nLease.repair on the cluster lease of "
	  "token (rmpc://), and also when attach raises StaleRecord: its "
	  "record in etcd is older than what its members know (put back from "
	  "before a repair, or left by one that could not finish); then the "
	  "members behind the newest epoch are replaced from those that know "
	  "it. Raises the errors of attach and Lease.repair." },
	{ "alloc", FN(cluster_alloc), KW,
	  "alloc($self, size, *, ttl=None, ephemeral=False, alignment=None, access=7, prefer=None, exclude=None, replicas=1, spread=None, stripes=1, stripe_unit=None, ec=None, ec_chunk=None, free_on_exit=True)\n--\n\nReturns Lease. "
	  "Lease size bytes on a node of the cluster: nodes with the label "
	  "prefer (\"LABEL=VALUE\") first, then those with the most free "
	  "bytes; exclude: node names never to use (a str \"n1,n2\" or an "
	  "iterable). replicas 2..3: a mirrored lease, on that many nodes "
	  "(with distinct values of the label spread, when given): writes go "
	  "to all, reads to one with failover. stripes 2..16: a striped "
	  "lease, cut in units of stripe_unit bytes (a power of two, 4 KiB "
	  "to 1 GiB; None: 1 MiB) over that many leases. ec=(k, m), k 2..12, "
	  "m 1..4: an erasure-coded lease over k + m nodes (apart as "
	  "replicas are), any m of which may be lost, in chunks of ec_chunk "
	  "bytes (a power of two, 4 KiB to 1 MiB; None: 4 KiB); a read of "
	  "a row no single write left whole while a member is away raises "
	  "TornRow. ttl, ephemeral, "
	  "alignment, access and free_on_exit as Client.alloc. A mirrored or "
	  "striped lease's token is a cluster token (rmpc://...) that "
	  "Cluster.attach and `rmpool -C` take. Raises PoolFull (no node "
	  "has room, or fewer than replicas nodes apart), InvalidArgument, "
	  "the first node's error, or the etcd error (ConnectionRefused, "
	  "Timeout, AccessDenied, ...) when the membership is not current; "
	  "the text says what each node answered." },
	{ "attach", FN(cluster_attach), KW,
	  "attach($self, token, *, read_only=False, exclusive=False, access=0, free_on_exit=False)\n--\n\nReturns Lease. "
	  "Reach the lease of a token through the cluster's connection to "
	  "its server (opened if need be), as Client.attach; a cluster "
	  "token (rmpc://) is looked up in etcd and each of its members "
	  "attached. Raises LeaseNotFound (no such lease or record), "
	  "Unreachable (every replica of a stripe is on a node gone), the "
	  "errors of Client.attach and the etcd errors." },
	{ 0 }
};

static PyGetSetDef cluster_getset[] = {
	{ "closed", cluster_get_closed, NULL, "True once closed.", NULL },
	{ "url", cluster_get_url, NULL, "The etcd url as given.", NULL },
	{ "last_error", cluster_get_last_error, NULL,
	  "The library's detail of the last failed call on the cluster "
	  "(kept until the next failure), or ''.", NULL },
	{ 0 }
};

static PyMemberDef cluster_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET,
	  offsetof(RmpCluster, weakreflist), READONLY, NULL },
	{ 0 }
};

static PyType_Slot cluster_slots[] = {
	{ Py_tp_doc, (void *)
	  "Cluster(url, *, prefix=None, etcd_timeout=None, ca_file=None, "
	  "cert_file=None, etcd_key_file=None, credentials_file=None, "
	  "tenant=<env>, key=None, key_file=<env>, name=None, timeout=5.0, "
	  "op_timeout=10.0, reconnect_max_ms=0, spin_max_us=-1, "
	  "bounce_bytes=0, max_inflight=0, rail_stripe=0, "
	  "allow_anonymous=False, member_timeout=None)\n\n"
	  "The storage nodes registered in etcd, read at construction (the "
	  "GIL is released meanwhile) and kept current by a watch; leases "
	  "placed over them (alloc), of one node, mirrored or striped.\n\n"
	  "url: etcd's endpoints, \"etcd://HOST:PORT[,HOST:PORT...]\" "
	  "(http:// and https:// too). prefix: the daemons' [cluster] "
	  "prefix (None: \"/rmpool/\"). etcd_timeout: seconds for one etcd "
	  "request (None: 2). member_timeout: seconds a member of a "
	  "mirrored or striped lease may stay out of reach before it is "
	  "lost (None: 30). ca_file, cert_file, etcd_key_file: TLS to an "
	  "https:// etcd; credentials_file: etcd's \"USER:PASSWORD\". The "
	  "others are the options of each node's connection, as Client's "
	  "(key_file is the tenant's key). A cluster refuses to open without "
	  "a tenant (InvalidArgument): an anonymous client cannot tell its "
	  "servers from any other; allow_anonymous=True takes that risk, for "
	  "a closed lab.\n\n"
	  "A context manager: leaving the block closes it, and with it the "
	  "handles of its leases. A lease keeps its cluster alive. Threads "
	  "may share a cluster: its calls and its leases' take one lock." },
	{ Py_tp_new, cluster_new },
	{ Py_tp_init, cluster_init },
	{ Py_tp_dealloc, cluster_dealloc },
	{ Py_tp_traverse, cluster_traverse },
	{ Py_tp_repr, cluster_repr },
	{ Py_tp_methods, cluster_methods },
	{ Py_tp_getset, cluster_getset },
	{ Py_tp_members, cluster_members },
	{ 0, NULL }
};

static PyType_Spec cluster_spec = {
	.name = "rmpool.Cluster",
	.basicsize = sizeof(RmpCluster),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.slots = cluster_slots,
};

static PyStructSequence_Field node_fields[] = {
	{ "node", "its name in the cluster" },
	{ "addr", "the first address its record lists" },
	{ "port", "its port" },
	{ "device", "its RDMA device" },
	{ "numa_node", "-1: not known" },
	{ "pool_bytes", "as last published" },
	{ "free_bytes", "as last published" },
	{ "largest_free", "as last published" },
	{ "draining", "True: it takes no new leases" },
	{ "version", "its rmpoold's" },
	{ "labels", "dict: label -> value" },
	{ "connected", "True: this cluster has a connection to it" },
	{ "proven", "1: it proved the tenant's key when this cluster last "
		    "connected; -1: that connect failed (why says how); 0: not "
		    "connected yet (Cluster.check connects)" },
	{ "why", "why the last connect failed (\"did not prove tenant ...'s "
		 "key\": not a server of this tenant, never given a lease); "
		 "'' otherwise" },
	{ 0 }
};

static PyStructSequence_Desc node_desc = {
	"rmpool.NodeInfo", "One node of Cluster.nodes().", node_fields, 14
};

int rmp_py_cluster_init(PyObject *m)
{
	rmp_py_cluster_type = PyType_FromSpec(&cluster_spec);
	if (!rmp_py_cluster_type ||
	    PyModule_AddObjectRef(m, "Cluster", rmp_py_cluster_type) < 0)
		return -1;
	rmp_py_node_info_type = (PyObject *)PyStructSequence_NewType(
		&node_desc);
	if (!rmp_py_node_info_type ||
	    PyModule_AddObjectRef(m, "NodeInfo", rmp_py_node_info_type) < 0)
		return -1;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * args.c -- Python arguments to the library's C values: ranged ints,
 * strs, seconds, ttls, and the connection options that Client and
 * Cluster both take. client.c and cluster.c call down to it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmp_py.h"

int rmp_py_bounded(PyObject *o, const char *what, unsigned long long min,
		   unsigned long long max, unsigned long long *out)
{
	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be an int", what);
		return -1;
	}
	*out = PyLong_AsUnsignedLongLong(o);
	if (*out == (unsigned long long)-1 && PyErr_Occurred())
		PyErr_Clear(); /* negative or above 2**64 - 1: out of range */
	else if (*out >= min && *out <= max)
		return 0;
	PyErr_Format(PyExc_ValueError, "%s must be %llu..%llu", what, min,
		     max);
	return -1;
}

/* A NUL inside o (which would cut the C string short: another host,
 * another key file) is refused. */
int rmp_py_utf8(PyObject *o, const char **out)
{
	Py_ssize_t n;

	*out = PyUnicode_AsUTF8AndSize(o, &n);
	if (!*out)
		return -1;
	if ((size_t)n != strlen(*out)) {
		PyErr_SetString(PyExc_ValueError, "embedded NUL character");
		return -1;
	}
	return 0;
}

int rmp_py_opt_str(PyObject *o, const char *env, const char **out)
{
	*out = NULL;
	if (!o) {
		*out = env ? getenv(env) : NULL;
		return 0;
	}
	if (o == Py_None)
		return 0;
	if (!PyUnicode_Check(o)) {
		PyErr_SetString(PyExc_TypeError, "expected a str or None");
		return -1;
	}
	return rmp_py_utf8(o, out);
}

int rmp_py_seconds_ms(PyObject *o, const char *what, int *ms)
{
	double s;

	if (!o || o == Py_None)
		return 0;
	s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (!(s > 0) || s > 2e6) {
		PyErr_Format(PyExc_ValueError, "%s must be > 0 seconds", what);
		return -1;
	}
	*ms = (int)ceil(s * 1000.0);
	return 0;
}

int rmp_py_ttl(PyObject *o, uint32_t *ttl)
{
	unsigned long v;

	*ttl = 0;
	if (!o || o == Py_None)
		return 0;
	v = PyLong_AsUnsignedLong(o);
	if (v == (unsigned long)-1 && PyErr_Occurred())
		return -1;
	if (v == 0 || v > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError,
				"ttl must be a positive number of seconds");
		return -1;
	}
	*ttl = (uint32_t)v;
	return 0;
}

int rmp_py_client_opts(struct rmp_py_copts *p, struct rmp_client_opts *o)
{
	const char *tenant, *key_file;
	unsigned long long v;

	o->name = p->name;
	if (rmp_py_opt_str(p->tenant, "RMPOOL_TENANT", &tenant) < 0)
		return -1;
	if (tenant && !*tenant)
		tenant = NULL;
	o->tenant = tenant;
	if (p->key && p->key != Py_None) {
		if (PyObject_GetBuffer(p->key, &p->keybuf, PyBUF_SIMPLE) < 0)
			return -1;
		o->key = p->keybuf.buf;
		o->key_len = (size_t)p->keybuf.len;
	}
	/* The environment's key file only for the environment's tenant. */
	if (rmp_py_opt_str(p->key_file, tenant && !p->tenant &&
			   (!p->key || p->key == Py_None) ?
			   "RMPOOL_KEY_FILE" : NULL, &key_file) < 0)
		return -1;
	o->key_file = key_file;
	if (rmp_py_seconds_ms(p->timeout, "timeout",
			      &o->connect_timeout_ms) < 0 ||
	    rmp_py_seconds_ms(p->op_timeout, "op_timeout",
			      &o->op_timeout_ms) < 0)
		return -1;
	if (p->reconnect) {
		if (rmp_py_bounded(p->reconnect, "reconnect_max_ms", 0,
				   UINT32_MAX, &v) < 0)
			return -1;
		o->reconnect_max_ms = (unsigned)v;
	}
	if (p->max_inflight) {
		if (rmp_py_bounded(p->max_inflight, "max_inflight", 0,
				   UINT32_MAX, &v) < 0)
			return -1;
		if (v)
			o->max_inflight = (unsigned)v;
	}
	if (p->spin < -1 || p->bounce < 0 || p->rail_stripe < 0) {
		PyErr_SetString(PyExc_ValueError, "spin_max_us, bounce_bytes "
				"and rail_stripe cannot be negative");
		return -1;
	}
	if (p->spin >= 0)
		o->spin_max_us = (unsigned)p->spin;
	if (p->bounce > 0)
		o->bounce_bytes = (size_t)p->bounce;
	if (p->rail_stripe > 0)
		o->rail_stripe = (size_t)p->rail_stripe;
	return 0;
}

void rmp_py_copts_release(struct rmp_py_copts *p)
{
	if (p->keybuf.obj)
		PyBuffer_Release(&p->keybuf);
}

int rmp_py_attach_args(PyObject *args, PyObject *kw, const char **token,
		       struct rmp_attach_opts *o, int *free_on_exit)
{
	static char *kwlist[] = { "token", "read_only", "exclusive", "access",
		"free_on_exit", NULL };
	int read_only = 0, exclusive = 0;
	unsigned long long access = 0;
	PyObject *access_o = NULL;

	*free_on_exit = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|$ppOp", kwlist, token,
		&read_only, &exclusive, &access_o, free_on_exit))
		return -1;
	if (access_o && rmp_py_bounded(access_o, "access", 0, UINT32_MAX,
				       &access) < 0)
		return -1;
	rmp_attach_opts_init(o);
	o->access = read_only ? RMP_ACCESS_READ : (uint32_t)access;
	o->flags = exclusive ? RMP_ATTACH_EXCLUSIVE : 0;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* module.c -- the _rmpool extension module: its types, errors and constants. */
#include "rmp_py.h"

static PyObject *mod_version(PyObject *m, PyObject *unused)
{
	return PyUnicode_FromString(rmp_version());
}

static PyObject *mod_strerror(PyObject *m, PyObject *arg)
{
	long e = PyLong_AsLong(arg);

	if (e == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(rmp_strerror((int)e));
}

static PyObject *mod_exception_for(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "status", "client", NULL };
	PyObject *client = Py_None;
	int status;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "i|O", kwlist, &status,
					 &client))
		return NULL;
	if (status == 0) {
		PyErr_SetString(PyExc_ValueError, "status 0 is no error");
		return NULL;
	}
	if (client != Py_None &&
	    !PyObject_TypeCheck(client, (PyTypeObject *)rmp_py_client_type)) {
		PyErr_SetString(PyExc_TypeError, "client must be a Client");
		return NULL;
	}
	if (client != Py_None) {
		RmpClient *c = (RmpClient *)client;
		struct rmp_py_fail f;

		rmp_py_lock(&c->lk);
		rmp_py_note(&f, status, rmp_py_client_detail(c));
		rmp_py_unlock(&c->lk);
		return rmp_py_exception(status, f.detail);
	}
	return rmp_py_exception(status, NULL);
}

static PyObject *mod_at_exit(PyObject *m, PyObject *unused)
{
	rmp_py_exiting();
	Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
	{ "_at_exit", mod_at_exit, METH_NOARGS,
	  "_at_exit($module)\n--\n\nThe interpreter is exiting (rmpool "
	  "registers this with atexit): closing a handle whose lock a "
	  "daemon thread still holds waits 2 s at most, then leaves it to "
	  "the process's end." },
	{ "version", mod_version, METH_NOARGS,
	  "version($module)\n--\n\nReturns str. The version of librmpool." },
	{ "strerror", mod_strerror, METH_O,
	  "strerror($module, errno)\n--\n\nReturns str. The library's text for an errno "
	  "(either sign)." },
	{ "exception_for", (PyCFunction)(void (*)(void))mod_exception_for,
	  METH_VARARGS | METH_KEYWORDS,
	  "exception_for($module, status, client=None)\n--\n\nReturns Error. The exception "
	  "(not raised) for a completion's negative status, of the class "
	  "that errno maps to, with client's last error in its text." },
	{ 0 }
};

static struct PyModuleDef mod_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "rmpool._rmpool",
	.m_doc = "librmpool's C API as Python types (see the rmpool package).",
	.m_size = -1,
	.m_methods = mod_methods,
};

PyMODINIT_FUNC PyInit__rmpool(void);

PyMODINIT_FUNC PyInit__rmpool(void)
{
	PyObject *m = PyModule_Create(&mod_def);

	if (!m)
		return NULL;
	if (rmp_py_errors_init(m) < 0 || rmp_py_client_init(m) < 0 ||
	    rmp_py_lease_init(m) < 0 || rmp_py_buf_init(m) < 0 ||
	    rmp_py_cluster_init(m) < 0 ||
	    PyModule_AddIntConstant(m, "ACCESS_READ", RMP_ACCESS_READ) < 0 ||
	    PyModule_AddIntConstant(m, "ACCESS_WRITE", RMP_ACCESS_WRITE) < 0 ||
	    PyModule_AddIntConstant(m, "ACCESS_ATOMIC", RMP_ACCESS_ATOMIC) < 0 ||
	    PyModule_AddIntConstant(m, "ACCESS_ALL", RMP_ACCESS_ALL) < 0 ||
	    PyModule_AddIntConstant(m, "LEASE_EPHEMERAL",
				    RMP_LEASE_EPHEMERAL) < 0 ||
	    PyModule_AddIntConstant(m, "LEASE_AUTO_RENEW",
				    RMP_LEASE_AUTO_RENEW) < 0 ||
	    PyModule_AddIntConstant(m, "LEASE_SPILL", RMP_LEASE_SPILL) < 0 ||
	    PyModule_AddIntConstant(m, "LEASE_SPILLED", RMP_LEASE_SPILLED) < 0 ||
	    PyModule_AddIntConstant(m, "DEFAULT_PORT", RMP_DEFAULT_PORT) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}

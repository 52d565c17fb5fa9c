/* SPDX-License-Identifier: MIT */
/* errors.c -- rmpool.Error and its subclasses, one per library errno. */
#include <errno.h>
#include <stdio.h>

#include "rmp_py.h"

/*
 * One row per exception class: its name, the builtin OSError subclass it
 * also derives from (NULL: only rmpool.Error), the errnos it stands for,
 * and its docstring. rmp_py_exception() picks the row by errno; an errno
 * of no row gives rmpool.Error itself.
 */
struct err_row {
	const char *name;
	PyObject **also;
	int errnos[3];
	const char *doc;
};

static PyObject *builtin_permission, *builtin_timeout, *builtin_conn,
	*builtin_refused, *builtin_blocking, *builtin_notfound, *builtin_value;

static struct err_row rows[] = {
	{ "LeaseExpired", NULL, { EKEYEXPIRED },
	  "The lease expired or was revoked by the server (EKEYEXPIRED)." },
	{ "QuotaExceeded", NULL, { EDQUOT },
	  "A limit of the tenant (bytes, leases, keys per lease) is reached (EDQUOT)." },
	{ "PoolFull", NULL, { ENOSPC },
	  "The pool has no free extent large enough, or the server holds max_leases (ENOSPC)." },
	{ "LeaseTooLarge", NULL, { EFBIG },
	  "Longer than the server's max_lease (EFBIG)." },
	{ "ServerDraining", NULL, { ESHUTDOWN },
	  "The server is draining and takes no new leases (ESHUTDOWN)." },
	{ "AuthError", &builtin_permission, { EKEYREJECTED },
	  "Authentication failed: wrong tenant key or unknown tenant (EKEYREJECTED)." },
	{ "AuthRevoked", &builtin_permission, { EKEYREVOKED },
	  "A key of this connection was revoked: its key to the lease (another connection's exclusive attach, a repair, an operator) or, by a server reload, its proof of the tenant; connect again (EKEYREVOKED)." },
	{ "ServerUnproven", &builtin_permission, { EBADE },
	  "The server did not prove that it holds the tenant's key: not a server of this tenant, sent nothing (EBADE)." },
	{ "StaleRecord", NULL, { ESTALE },
	  "A cluster lease's record is older than what its members know (put back from before a repair): Cluster.repair (ESTALE)." },
	{ "WrongTenant", &builtin_permission, { EPERM },
	  "The lease belongs to another tenant (EPERM)." },
	{ "AccessDenied", &builtin_permission, { EACCES },
	  "The lease does not grant this access, or the key file cannot be used (EACCES)." },
	{ "LeaseNotFound", &builtin_notfound, { ENOENT },
	  "No such lease (or a wrong secret), or no key file (ENOENT)." },
	{ "OutOfRange", NULL, { ERANGE },
	  "Offset or length outside the lease; nothing was posted (ERANGE)." },
	{ "Busy", &builtin_blocking, { EAGAIN },
	  "Too many operations in flight here or at the server: try again (EAGAIN)." },
	{ "Timeout", &builtin_timeout, { ETIMEDOUT },
	  "No answer in time (ETIMEDOUT)." },
	{ "NotConnected", &builtin_conn, { ENOTCONN },
	  "The connection is gone; close and connect again (ENOTCONN)." },
	{ "ConnectionRefused", &builtin_refused, { ECONNREFUSED },
	  "The server rejected the connection or nobody listens (ECONNREFUSED)." },
	{ "Unreachable", &builtin_conn, { EHOSTUNREACH, ENETUNREACH, EHOSTDOWN },
	  "The server cannot be reached: no such host, no route, or no RDMA device on the way." },
	{ "TransportError", NULL, { EIO },
	  "An RDMA operation completed with an error or could not be posted (EIO)." },
	{ "ProtocolError", NULL, { EPROTO, EPROTONOSUPPORT },
	  "The server sent what the protocol does not allow, or no common version." },
	{ "NotSupported", NULL, { EOPNOTSUPP, EAFNOSUPPORT },
	  "Not supported here: atomics without device support, a mirrored lease's asynchronous call, ..." },
	{ "MessageTooLarge", NULL, { EMSGSIZE },
	  "An asynchronous operation above the device's message size (EMSGSIZE)." },
	{ "TornRow", NULL, { EBADMSG },
	  "A row of an erasure-coded lease that no single write left whole (a writer died within it) was needed to decode a member that is away (EBADMSG)." },
	{ "OtherWriter", NULL, { EBUSY },
	  "Another handle writes this erasure-coded lease (its claim in etcd): one writes at a time (EBUSY)." },
	{ "InvalidArgument", &builtin_value, { EINVAL },
	  "The library refused an argument, e.g. a malformed token (EINVAL)." },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static PyObject *classes[NROWS]; /* by row */

static PyObject *base_error;

/* builtin -- a builtin exception class by name (borrowed, from builtins). */
static PyObject *builtin(PyObject *builtins, const char *name)
{
	return PyDict_GetItemString(builtins, name);
}

int rmp_py_errors_init(PyObject *m)
{
	PyObject *b = PyEval_GetBuiltins();
	size_t i;

	builtin_permission = builtin(b, "PermissionError");
	builtin_timeout = builtin(b, "TimeoutError");
	builtin_conn = builtin(b, "ConnectionError");
	builtin_refused = builtin(b, "ConnectionRefusedError");
	builtin_blocking = builtin(b, "BlockingIOError");
	builtin_notfound = builtin(b, "FileNotFoundError");
	builtin_value = builtin(b, "ValueError");
	if (!builtin_permission || !builtin_timeout || !builtin_conn ||
	    !builtin_refused || !builtin_blocking || !builtin_notfound ||
	    !builtin_value) {
		PyErr_SetString(PyExc_ImportError, "builtin exceptions missing");
		return -1;
	}
	base_error = PyErr_NewExceptionWithDoc("rmpool.Error",
		"Base of every rmpool error: an OSError with the errno the "
		"library gave and, in strerror, its text and the last-error "
		"detail of the client.", PyExc_OSError, NULL);
	if (!base_error || PyModule_AddObjectRef(m, "Error", base_error) < 0)
		return -1;
	for (i = 0; i < NROWS; i++) {
		char qual[64];
		PyObject *bases;

		snprintf(qual, sizeof(qual), "rmpool.%s", rows[i].name);
		if (rows[i].also)
			bases = PyTuple_Pack(2, base_error, *rows[i].also);
		else
			bases = PyTuple_Pack(1, base_error);
		if (!bases)
			return -1;
		classes[i] = PyErr_NewExceptionWithDoc(qual, rows[i].doc,
							bases, NULL);
		Py_DECREF(bases);
		if (!classes[i] ||
		    PyModule_AddObjectRef(m, rows[i].name, classes[i]) < 0)
			return -1;
	}
	return 0;
}

/* class_for -- the exception class of errno e (borrowed). */
static PyObject *class_for(int e)
{
	size_t i, j;

	for (i = 0; i < NROWS; i++)
		for (j = 0; j < 3 && rows[i].errnos[j]; j++)
			if (rows[i].errnos[j] == e)
				return classes[i];
	return base_error;
}

PyObject *rmp_py_exception(int rc, const char *detail)
{
	int e = rc < 0 ? -rc : rc;
	PyObject *msg, *exc;

	if (detail && *detail)
		msg = PyUnicode_FromFormat("%s: %s", rmp_strerror(e), detail);
	else
		msg = PyUnicode_FromString(rmp_strerror(e));
	if (!msg)
		return NULL;
	exc = PyObject_CallFunction(class_for(e), "iO", e, msg);
	Py_DECREF(msg);
	return exc;
}

PyObject *rmp_py_error_detail(const char *detail, int rc)
{
	PyObject *exc = rmp_py_exception(rc, detail);

	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

void rmp_py_note(struct rmp_py_fail *f, int rc, const char *detail)
{
	f->rc = rc;
	snprintf(f->detail, sizeof(f->detail), "%s", detail ? detail : "");
}

PyObject *rmp_py_raise(const struct rmp_py_fail *f)
{
	return rmp_py_error_detail(f->detail, f->rc);
}

const char *rmp_py_client_detail(const RmpClient *c)
{
	return c && c->c ? rmp_client_last_error(c->c) : NULL;
}

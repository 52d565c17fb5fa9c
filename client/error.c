/* SPDX-License-Identifier: MIT */
/* error.c -- error texts (rmp_strerror, per-client detail) and rmp_version. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "rmpool.h"
#include "state.h"

#ifndef RMP_VERSION
#define RMP_VERSION "0.1.0"
#endif

void rmpc_set_error(struct rmp_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errbuf, sizeof(c->errbuf), fmt, ap);
	va_end(ap);
}

void rmpc_clear_error(struct rmp_client *c)
{
	c->errbuf[0] = '\0';
}

const char *rmp_client_last_error(const struct rmp_client *c)
{
	return c ? c->errbuf : "";
}

/* Texts in the library's own terms for the codes its API documents. */
static const char *rmp_text(int e)
{
	switch (e) {
	case 0:
		return "success";
	case ERANGE:
		return "offset or length outside the lease";
	case EKEYEXPIRED:
		return "lease expired or revoked";
	case EDQUOT:
		return "tenant limit exceeded";
	case ENOSPC:
		return "not enough space (pool exhausted or buffer too small)";
	case ESHUTDOWN:
		return "server is draining and takes no new leases";
	case ENOENT:
		return "no such lease (or wrong secret)";
	case EPERM:
		return "lease belongs to another tenant";
	case EKEYREJECTED:
		return "authentication failed (wrong tenant key)";
	case EBADE:
		return "the server did not prove it holds the tenant's key "
		       "(not a server of this tenant)";
	case ESTALE:
		return "the lease's record is older than its members' epoch "
		       "(rolled back, or a repair moved on): read it again";
	case EKEYREVOKED:
		return "key revoked: the server revoked this connection's key "
		       "to the lease (another holder took it over, a repair, an "
		       "operator), or a reload voided its proof of the tenant; "
		       "reconnect and attach again";
	case EPROTONOSUPPORT:
		return "no common protocol version with the server";
	case EBUSY:
		return "the erasure-coded lease has another writer";
	case ECONNREFUSED:
		return "connection refused";
	case ETIMEDOUT:
		return "timed out";
	case ENOTCONN:
		return "not connected (connection closed or failed)";
	case EIO:
		return "RDMA operation failed";
	case EHOSTUNREACH:
		return "server unreachable";
	case ENETUNREACH:
		return "no RDMA device or route for the address";
	case EACCES:
		return "lease does not grant this access";
	case EINVAL:
		return "invalid argument";
	case ENOMEM:
		return "out of memory";
	case EISCONN:
		return "already connected";
	case EAGAIN:
		return "too many operations queued or in flight";
	case EMSGSIZE:
		return "operation larger than the device's message size limit";
	case EPROTO:
		return "protocol error (unexpected data from the server)";
	case EBADMSG:
		return "a row of an erasure-coded lease that no single write "
		       "left whole (a writer died within it) was needed to "
		       "decode a member that is away";
	case EOPNOTSUPP:
		return "operation not supported by the device or server";
	case ENODEV:
		return "no RDMA device";
	case EFBIG:
		return "larger than the server's largest lease ([lease] "
		       "max_lease)";
	case EAFNOSUPPORT:
		return "a tenant's proof needs an IPv4 or IPv6 server address";
	}
	return NULL;
}

const char *rmp_strerror(int err)
{
	static _Thread_local char unknown[48];
	const char *s;
	int e = err < 0 ? -err : err;

	if (err == INT_MIN)
		e = 0x7fffffff;
	s = rmp_text(e);
	if (s)
		return s;
#if defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	s = strerrordesc_np(e);
	if (s)
		return s;
#endif
	snprintf(unknown, sizeof(unknown), "unknown error %d", err);
	return unknown;
}

const char *rmpc_errno_text(int err)
{
	static _Thread_local char unknown[32];
	const char *s = NULL;

	if (err < 0)
		err = err == INT_MIN ? INT_MAX : -err;
#if defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	s = strerrordesc_np(err);
#endif
	if (s)
		return s;
	snprintf(unknown, sizeof(unknown), "error %d", err);
	return unknown;
}

const char *rmp_version(void)
{
	return RMP_VERSION;
}

/* SPDX-License-Identifier: MIT */
/* fault.c -- what an error of a call on a node means (fault.h). */
#include <errno.h>

#include "fault.h"

enum rmpc_fault rmpc_fault_of(int err)
{
	switch (err) {
	case 0:
		return RMPC_FAULT_NONE;
	case -EINVAL:
	case -ERANGE:
	case -EACCES:
		return RMPC_FAULT_CALLER;
	case -ENOMEM:
	case -EAFNOSUPPORT:
	case -EKEYREJECTED:
		return RMPC_FAULT_LOCAL;
	case -EIO:          /* a completion error of the transport */
	case -ETIMEDOUT:    /* retries ran out, or no completion in time */
	case -ENOTCONN:     /* flushed after a QP error, connection lost */
	case -ECONNRESET:
	case -ECONNABORTED:
	case -ECONNREFUSED: /* nothing listens there now: a restart */
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ENETDOWN:
		return RMPC_FAULT_TRANSIENT;
	case -EKEYREVOKED:
		return RMPC_FAULT_REVOKED;
	case -ENOENT:       /* no such lease there (any more) */
	case -EKEYEXPIRED:  /* the lease ended there */
	case -EHOSTDOWN:    /* the node is down, or left etcd */
	case -EBADE:        /* it cannot prove it is a server of ours */
		return RMPC_FAULT_GONE;
	default:
		return RMPC_FAULT_OTHER;
	}
}

bool rmpc_fault_reconnects(int err)
{
	enum rmpc_fault f = rmpc_fault_of(err);

	return f == RMPC_FAULT_TRANSIENT || f == RMPC_FAULT_REVOKED;
}

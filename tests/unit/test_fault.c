/* SPDX-License-Identifier: MIT */
/* test_fault.c -- unit tests for what an error means to the client
 * (client/fault.c): each errno the library meets in its class, either
 * sign not confused, and which of them ask for a new connection. */
#include <errno.h>

#include "check.h"
#include "fault.h"

static const struct {
	int err;
	enum rmpc_fault f;
} table[] = {
	{ 0, RMPC_FAULT_NONE },
	{ -EINVAL, RMPC_FAULT_CALLER },
	{ -ERANGE, RMPC_FAULT_CALLER },
	{ -EACCES, RMPC_FAULT_CALLER },
	{ -ENOMEM, RMPC_FAULT_LOCAL },
	{ -EAFNOSUPPORT, RMPC_FAULT_LOCAL },
	{ -EKEYREJECTED, RMPC_FAULT_LOCAL },
	/* a completion error, retries exceeded, a flush after a QP error */
	{ -EIO, RMPC_FAULT_TRANSIENT },
	{ -ETIMEDOUT, RMPC_FAULT_TRANSIENT },
	{ -ENOTCONN, RMPC_FAULT_TRANSIENT },
	/* rdma_cm's and the network's: a link down, a daemon restarting */
	{ -ECONNRESET, RMPC_FAULT_TRANSIENT },
	{ -ECONNABORTED, RMPC_FAULT_TRANSIENT },
	{ -ECONNREFUSED, RMPC_FAULT_TRANSIENT },
	{ -EHOSTUNREACH, RMPC_FAULT_TRANSIENT },
	{ -ENETUNREACH, RMPC_FAULT_TRANSIENT },
	{ -ENETDOWN, RMPC_FAULT_TRANSIENT },
	/* a remote access error on a key that passed our checks */
	{ -EKEYREVOKED, RMPC_FAULT_REVOKED },
	{ -ENOENT, RMPC_FAULT_GONE },
	{ -EKEYEXPIRED, RMPC_FAULT_GONE },
	{ -EHOSTDOWN, RMPC_FAULT_GONE },
	{ -EBADE, RMPC_FAULT_GONE },
	/* the node's own refusals, and an older record than it knows */
	{ -ENOSPC, RMPC_FAULT_OTHER },
	{ -EDQUOT, RMPC_FAULT_OTHER },
	{ -ESTALE, RMPC_FAULT_OTHER },
	{ -EAGAIN, RMPC_FAULT_OTHER },
	{ -EBUSY, RMPC_FAULT_OTHER },
};

static void test_classes(void)
{
	for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		enum rmpc_fault f = rmpc_fault_of(table[i].err);

		CHECK_EQ(f, table[i].f);
		CHECK_EQ(rmpc_fault_reconnects(table[i].err),
			 f == RMPC_FAULT_TRANSIENT || f == RMPC_FAULT_REVOKED);
	}
}

/* a positive errno is no error code of ours: not in any class */
static void test_sign(void)
{
	CHECK_EQ(rmpc_fault_of(EIO), RMPC_FAULT_OTHER);
	CHECK_EQ(rmpc_fault_of(EINVAL), RMPC_FAULT_OTHER);
	CHECK(!rmpc_fault_reconnects(ETIMEDOUT));
}

int main(void)
{
	test_classes();
	test_sign();
	return check_done();
}

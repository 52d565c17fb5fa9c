/* SPDX-License-Identifier: MIT */
/*
 * fault.h -- what an error of a call on a node means for whoever makes
 * it: the one classification of the client (the data path, the rails,
 * a group's members, the cluster's connections and placement). Pure.
 */
#ifndef RMPC_FAULT_H
#define RMPC_FAULT_H

#include <stdbool.h>

enum rmpc_fault {
	RMPC_FAULT_NONE = 0,  /* 0: no error */
	/* The call itself is wrong (its arguments, its range, the handle's
	 * access): the same at every node and every replica. */
	RMPC_FAULT_CALLER,
	/* This client's own setup or resources (memory, an address family
	 * it cannot use, a tenant key the node refuses): another try at
	 * this node fails the same way. */
	RMPC_FAULT_LOCAL,
	/* The way to the node failed (a completion error, a timeout, the
	 * connection reset or refused, the network unreachable): the node
	 * may answer again over another rail or after a reconnect. */
	RMPC_FAULT_TRANSIENT,
	/* The server revoked a key of ours (and with it the connection's
	 * queue pair): a new connection works, the lease may not. */
	RMPC_FAULT_REVOKED,
	/* The lease or its node is gone: ended or expired there, the host
	 * down, or what answers at its address is no server of ours. */
	RMPC_FAULT_GONE,
	/* Anything else: the node's own refusal (full, over quota, an older
	 * record than it knows...). */
	RMPC_FAULT_OTHER,
};

/* rmpc_fault_of -- the class of err (a negative errno; 0: NONE). */
enum rmpc_fault rmpc_fault_of(int err);

/* rmpc_fault_reconnects -- after err the connection is to be made
 * again (TRANSIENT or REVOKED). */
bool rmpc_fault_reconnects(int err);

#endif /* RMPC_FAULT_H */

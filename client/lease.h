/* SPDX-License-Identifier: MIT */
/* lease.h -- lease handles (struct rmp_lease) and whether one can be used now. */
#ifndef RMPC_LEASE_H
#define RMPC_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "token.h"

struct rmp_client;

struct rmp_lease {
	struct rmp_client *c;
	LIST_ENTRY(rmp_lease) link; /* in c->leases */
	uint64_t gen;      /* c->gen of the connection that made the handle */
	uint64_t id, secret;
	uint64_t addr, length;
	uint64_t ttl_ms;   /* as reported by the server ... */
	uint64_t stamp_ms; /* ... at this local time (rmp_now_ms) */
	uint32_t rkey, access, flags;
	uint32_t holders;  /* as last reported */
	char host[RMP_TOKEN_HOST_MAX + 1]; /* server, for the token */
	uint16_t port;
};

/*
 * rmpc_lease_usable -- l was made on the current connection, which works
 * (-ENOTCONN), and, with check_expiry, its deadline as last reported by
 * the server has not passed (-EKEYEXPIRED: posting would only make the
 * NIC answer a remote access error and break the connection). With
 * reconnecting on, a lost connection is made again first and a handle of
 * an earlier one attached again.
 */
int rmpc_lease_usable(struct rmp_lease *l, bool check_expiry);

/* rmpc_leases_free -- free every lease handle of c (rmp_client_free). */
void rmpc_leases_free(struct rmp_client *c);

#endif /* RMPC_LEASE_H */

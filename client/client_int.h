/* SPDX-License-Identifier: MIT */
/*
 * client_int.h -- what the files of the client module share: client.c
 * (connect one address, tear it down), client_opts.c (the options),
 * client_rails.c (rmp_client_connect of one address or of a node's
 * several, its rails; close and free), which calls the other two.
 */
#ifndef RMPC_CLIENT_INT_H
#define RMPC_CLIENT_INT_H

#include <stdint.h>

struct rmp_client;

/* rmpc_client_opts_check -- check c->opts and copy name, tenant, key
 * into c: 0 or -EINVAL. */
int rmpc_client_opts_check(struct rmp_client *c);

/* rmpc_connect_one -- rmp_client_connect to one address (host), what
 * rail 0 and every other rail's client does. */
int rmpc_connect_one(struct rmp_client *c, const char *host, uint16_t port);

/* rmpc_conn_teardown -- undo connect, from any state it may have
 * reached; lease handles of c become stale (gen). */
void rmpc_conn_teardown(struct rmp_client *c);

/* rmpc_client_release -- free an unconnected c with its lease handles
 * and buffers (rmp_client_free, a failed rmp_client_new). */
void rmpc_client_release(struct rmp_client *c);

#endif /* RMPC_CLIENT_INT_H */

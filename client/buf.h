/* SPDX-License-Identifier: MIT */
/* buf.h -- registered memory: application buffers (rmp_buf) and the library's control and bounce buffers. */
#ifndef RMPC_BUF_H
#define RMPC_BUF_H

#include <stddef.h>
#include <sys/queue.h>

#include "rails.h"

#define RMPC_SCRATCH 64u /* registered bytes after the bounce buffer, for
			  * atomics' results and flush */

struct ibv_mr;
struct rmp_client;

struct rmp_buf {
	struct rmp_client *c;
	LIST_ENTRY(rmp_buf) link; /* in c->bufs */
	char *addr;
	size_t len;
	struct ibv_mr *mr; /* NULL once the connection it was made on closed */
	/* With rails: the same bytes registered with rail i's client
	 * (rail[0] unused: b itself), NULL where that failed or the rail
	 * was down (it then copies through its bounce buffer). */
	struct rmp_buf *rail[RMPC_RAILS_MAX];
};

/* rmpc_mem_alloc / rmpc_mem_free -- internal buffers (new/free); free
 * also frees every rmp_buf handle of c. */
int rmpc_mem_alloc(struct rmp_client *c);
void rmpc_mem_free(struct rmp_client *c);
/* rmpc_mem_reg -- register the internal buffers with c->pd (connect).
 * Returns 0 or -errno. */
int rmpc_mem_reg(struct rmp_client *c);
/* rmpc_mem_dereg -- deregister internal and user buffers (close); user
 * buffer handles stay allocated but unusable. Accepts half-built state. */
void rmpc_mem_dereg(struct rmp_client *c);
/* rmpc_bufs_on_rail -- register every buffer of c with rail i's client
 * rc (connected anew, or for the first time): those it lacks, and again
 * those its last connection dropped. */
void rmpc_bufs_on_rail(struct rmp_client *c, struct rmp_client *rc,
		       unsigned i);
/* rmpc_bufs_rail_drop -- deregister c's buffers from rail i's client
 * (it goes). */
void rmpc_bufs_rail_drop(struct rmp_client *c, unsigned i);
/* rmpc_buf_lookup -- the MR of a registered buffer holding [p, p+len). */
struct ibv_mr *rmpc_buf_lookup(struct rmp_client *c, const void *p,
			       size_t len);

#endif /* RMPC_BUF_H */

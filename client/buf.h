/* SPDX-License-Identifier: MIT */
/* buf.h -- registered memory: application buffers (rmp_buf) and the library's control and bounce buffers. */
#ifndef RMPC_BUF_H
#define RMPC_BUF_H

#include <stddef.h>
#include <sys/queue.h>

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
/* rmpc_buf_lookup -- the MR of a registered buffer holding [p, p+len). */
struct ibv_mr *rmpc_buf_lookup(struct rmp_client *c, const void *p,
			       size_t len);

#endif /* RMPC_BUF_H */

/* SPDX-License-Identifier: MIT */
/* request.h -- one control request: decode, act through the lifecycle, reply. */
#ifndef RMP_REQUEST_H
#define RMP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "config.h"
#include "pool.h"  /* RMP_DEVICES_MAX */
#include "proto.h"

struct rmp_fence_done;
struct rmp_lifecycle;
struct rmp_holder;
struct rmp_tenant;
struct rmp_tenants;

struct rmp_request_ctx {
	struct rmp_lifecycle *lc;
	struct rmp_pool *pools[RMP_DEVICES_MAX]; /* device i's: pools[i] */
	unsigned npools;
	struct rmp_tenants *tenants;
	const struct rmp_config *cfg;
	enum rmp_keys_mode keys_mode;
};

/*
 * Service time of control requests by opcode, from the receive
 * completion to the reply posted: a histogram with the upper bounds
 * rmp_latency_bounds_us (the last bucket is everything above).
 */
#define RMP_LATENCY_BUCKETS 12
extern const uint32_t rmp_latency_bounds_us[RMP_LATENCY_BUCKETS];
struct rmp_latency {
	uint64_t count[RMP_OP_MAX + 1][RMP_LATENCY_BUCKETS + 1];
	uint64_t sum_ns[RMP_OP_MAX + 1];
};
/* rmp_latency_add -- one request of opcode op (0 = did not decode). */
void rmp_latency_add(struct rmp_latency *h, unsigned op, uint64_t ns);

/* What a connection must prove before anything else: set at accept. */
struct rmp_auth_pending {
	struct rmp_tenant *tenant;       /* the tenant it named (maybe the
					  * stranger: rmp_tenants_for_connect) */
	char tenant_name[RMP_TENANT_NAME_MAX + 1]; /* as it named it */
	uint8_t nonce[RMP_NONCE_LEN];    /* sent in the accept data */
	uint8_t version;                 /* chosen in the accept data */
	uint8_t server[RMP_ENDPOINT_LEN]; /* our end, as the client dialed it */
	char name[RMP_NAME_MAX + 1];     /* the client's name as it sent it */
};

/*
 * rmp_request_auth -- the first message of a connection, which must be an
 * AUTH proving p->tenant's key for p->nonce, the client's nonce and
 * p->server. Fills *rep: on success with the server's own proof of the
 * key (rmp_tenants_check_proof). Returns
 * RMP_DETAIL_NONE when the proof holds (h->tenant is set then), else why
 * not (RMP_DETAIL_BAD_PROOF, _REPLAYED, _NOT_AUTHED for any other
 * message): the caller closes the connection once the reply is sent.
 */
unsigned rmp_request_auth(const struct rmp_request_ctx *ctx,
			  struct rmp_holder *h,
			  const struct rmp_auth_pending *p,
			  const uint8_t *buf, size_t len, struct rmp_msg *rep);

/*
 * rmp_request_handle -- answer the len-byte message buf from holder h:
 * *rep is always filled with the reply to send (an error reply for a
 * message that does not decode). h must be authenticated. Returns true
 * when the message counts against the client: it did not decode, or it
 * reached for a lease of another tenant.
 *
 * *fence 0: send *rep now. Else it names the fence of an exclusive
 * ATTACH (rmp_lifecycle_attach): keep *rep, unsent, until the
 * lifecycle's fence upcall for it, then complete it with
 * rmp_request_fenced and send it. (Its key work, the bind of the
 * taker's key, goes out now, on its own.)
 */
bool rmp_request_handle(const struct rmp_request_ctx *ctx,
			struct rmp_holder *h, const uint8_t *buf, size_t len,
			struct rmp_msg *rep, uint64_t *fence);

/*
 * rmp_request_fenced -- rep, the reply rmp_request_handle held back for a
 * fence, as done decides it: the lease as the taker's key reaches it, or
 * an error (rmp_fence_done).
 */
void rmp_request_fenced(struct rmp_msg *rep,
			const struct rmp_fence_done *done);

/*
 * rmp_request_unanswered -- the reply rep could not be sent to h: a lease
 * it granted is freed again (only that reply carried its secret). Keys it
 * gave go with h's connection.
 */
void rmp_request_unanswered(const struct rmp_request_ctx *ctx,
			    struct rmp_holder *h, const struct rmp_msg *rep);

#endif /* RMP_REQUEST_H */

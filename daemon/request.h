/* SPDX-License-Identifier: MIT */
/* request.h -- one control request: decode, act through the lifecycle, reply. */
#ifndef RMP_REQUEST_H
#define RMP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "proto.h"

struct rmp_lifecycle;
struct rmp_holder;
struct rmp_pool;

struct rmp_request_ctx {
	struct rmp_lifecycle *lc;
	struct rmp_pool *pool;
	const struct rmp_config *cfg;
	enum rmp_keys_mode keys_mode;
};

/*
 * rmp_request_handle -- answer the len-byte message buf from holder h:
 * *rep is always filled with the reply to send (an error reply for a
 * message that does not decode). Returns true when the message counts
 * against the client: it did not decode, or it reached for a lease that
 * is not its own.
 */
bool rmp_request_handle(const struct rmp_request_ctx *ctx,
			struct rmp_holder *h, const uint8_t *buf, size_t len,
			struct rmp_msg *rep);

#endif /* RMP_REQUEST_H */

/* SPDX-License-Identifier: MIT */
/* fuzz_conn.c -- libFuzzer target: connect private data round trips. */
#include "proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Re-encoding a decoded blob must give back its first len bytes. */
static void same(const uint8_t *buf, int n, const uint8_t *data, size_t len)
{
	if (n != (int)len || memcmp(buf, data, len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[RMP_CONN_REQ_LEN];
	struct rmp_conn_req req, req2;
	struct rmp_conn_rep rep, rep2;
	struct rmp_conn_rej rej, rej2;

	/* All three share the magic, so one input can hit each decoder. */
	if (!rmp_conn_req_decode(data, size, &req)) {
		if (strlen(req.name) > RMP_NAME_MAX)
			abort();
		same(buf, rmp_conn_req_encode(buf, sizeof(buf), &req), data,
		     RMP_CONN_REQ_LEN);
		if (rmp_conn_req_decode(buf, sizeof(buf), &req2) ||
		    req.proto_min != req2.proto_min ||
		    req.proto_max != req2.proto_max ||
		    req.flags != req2.flags || strcmp(req.name, req2.name) ||
		    memcmp(req.cred, req2.cred, sizeof(req.cred)))
			abort();
	}
	if (!rmp_conn_rep_decode(data, size, &rep)) {
		same(buf, rmp_conn_rep_encode(buf, sizeof(buf), &rep), data,
		     RMP_CONN_REP_LEN);
		if (rmp_conn_rep_decode(buf, RMP_CONN_REP_LEN, &rep2) ||
		    rep.version != rep2.version ||
		    rep.keys_mode != rep2.keys_mode ||
		    rep.credits != rep2.credits || rep.max_msg != rep2.max_msg)
			abort();
	}
	if (!rmp_conn_rej_decode(data, size, &rej)) {
		same(buf, rmp_conn_rej_encode(buf, sizeof(buf), &rej), data,
		     RMP_CONN_REJ_LEN);
		if (rmp_conn_rej_decode(buf, RMP_CONN_REJ_LEN, &rej2) ||
		    rej.reason != rej2.reason ||
		    rej.proto_min != rej2.proto_min ||
		    rej.proto_max != rej2.proto_max)
			abort();
		if (!rmp_reject_reason_str(rej.reason))
			abort();
	}
	return 0;
}

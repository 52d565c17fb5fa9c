/* SPDX-License-Identifier: MIT */
/* fuzz_conn.c -- libFuzzer target: connect private data round trips. */
#include "auth.h"
#include "proto.h"

#include <errno.h>
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

static int has_v3(unsigned min, unsigned max)
{
	return min <= RMP_PROTO_VERSION && max >= RMP_PROTO_VERSION;
}

static void conn_req(const uint8_t *data, size_t size)
{
	uint8_t buf[RMP_CONN_REQ_LEN];
	struct rmp_conn_req req, req2;
	int ret;

	ret = rmp_conn_req_decode(data, size, &req);
	if (ret == -EPROTONOSUPPORT) {
		/* Told from the first 8 bytes, with the range filled in. */
		if (size < 8 || req.proto_min != data[4] ||
		    req.proto_max != data[5] ||
		    has_v3(req.proto_min, req.proto_max) || req.name[0] ||
		    req.tenant[0])
			abort();
		return;
	}
	if (ret == -EBADMSG) {
		if (req.proto_min || req.proto_max || req.flags ||
		    req.name[0] || req.tenant[0])
			abort(); /* nothing of a bad request is kept */
		return;
	}
	if (ret)
		abort();
	if (size < RMP_CONN_REQ_LEN || !has_v3(req.proto_min, req.proto_max))
		abort();
	if (strlen(req.name) > RMP_NAME_MAX ||
	    strlen(req.tenant) > RMP_TENANT_NAME_MAX)
		abort();
	/* What the wire lets through is a tenant name the daemon takes. */
	if (req.tenant[0] && !rmp_tenant_name_ok(req.tenant))
		abort();
	same(buf, rmp_conn_req_encode(buf, sizeof(buf), &req), data,
	     RMP_CONN_REQ_LEN);
	if (rmp_conn_req_decode(buf, sizeof(buf), &req2) ||
	    req.proto_min != req2.proto_min ||
	    req.proto_max != req2.proto_max || req.flags != req2.flags ||
	    strcmp(req.name, req2.name) || strcmp(req.tenant, req2.tenant))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[RMP_CONN_REQ_LEN];
	struct rmp_conn_rep rep, rep2;
	struct rmp_conn_rej rej, rej2;
	uint8_t *fixed;

	/* All three share the magic, so one input can hit each decoder. */
	conn_req(data, size);
	if (!rmp_conn_rep_decode(data, size, &rep)) {
		same(buf, rmp_conn_rep_encode(buf, sizeof(buf), &rep), data,
		     RMP_CONN_REP_LEN);
		if (rmp_conn_rep_decode(buf, RMP_CONN_REP_LEN, &rep2) ||
		    rep.version != rep2.version ||
		    rep.keys_mode != rep2.keys_mode ||
		    rep.credits != rep2.credits || rep.max_msg != rep2.max_msg ||
		    memcmp(rep.nonce, rep2.nonce, RMP_CONN_NONCE_LEN) ||
		    memcmp(rep.nonce, data + 16, RMP_CONN_NONCE_LEN))
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

	/*
	 * Again with the magic right and the range 3..3, so that random
	 * inputs reach the name and tenant checks without a seed corpus.
	 */
	if (size < RMP_CONN_REQ_LEN)
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	fixed[0] = 0x52;
	fixed[1] = 0x4d;
	fixed[2] = 0x50;
	fixed[3] = 0x43;
	fixed[4] = RMP_PROTO_VERSION;
	fixed[5] = RMP_PROTO_VERSION;
	conn_req(fixed, size);
	free(fixed);
	return 0;
}

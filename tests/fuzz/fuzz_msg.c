/* SPDX-License-Identifier: MIT */
/* fuzz_msg.c -- libFuzzer target: control messages decode and re-encode. */
#include "proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Anything the encoder accepts must decode to the same fields, with the
 * encoder-owned header fields and reserved fields set as documented.
 */
static void encode_then_decode(const uint8_t *data, size_t size)
{
	uint8_t buf[RMP_MSG_MAX], buf2[RMP_MSG_MAX];
	struct rmp_msg in, out;
	int n;

	if (size < sizeof(in))
		return;
	memcpy(&in, data, sizeof(in));
	n = rmp_msg_encode(buf, sizeof(buf), &in);
	if (n < 0)
		return;
	if (rmp_msg_decode(buf, (size_t)n, &out))
		abort();
	if (out.hdr.magic != RMP_MSG_MAGIC ||
	    out.hdr.version != RMP_PROTO_VERSION ||
	    out.hdr.payload_len != (uint32_t)n - RMP_MSG_HDR_LEN ||
	    out.hdr.opcode != in.hdr.opcode || out.hdr.flags != in.hdr.flags ||
	    out.hdr.status != in.hdr.status || out.hdr.req_id != in.hdr.req_id)
		abort();
	/* Payload fields: encoding is one-to-one, so compare bytes. */
	if (rmp_msg_encode(buf2, sizeof(buf2), &out) != n ||
	    memcmp(buf, buf2, (size_t)n))
		abort();
}

/* Whatever decodes must re-encode to the very same bytes. */
static void decode_then_encode(const uint8_t *data, size_t size)
{
	uint8_t buf[RMP_MSG_MAX];
	struct rmp_msg m, again;
	int n;

	if (rmp_msg_decode(data, size, &m))
		return;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	if (n < 0 || (size_t)n != size || memcmp(buf, data, size))
		abort();
	if (rmp_msg_decode(buf, (size_t)n, &again) ||
	    memcmp(&m, &again, sizeof(m)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	decode_then_encode(data, size);
	encode_then_decode(data, size);

	/*
	 * Again with magic, version and payload_len made right, so that
	 * random inputs reach the payload checks without a seed corpus.
	 */
	if (size < RMP_MSG_HDR_LEN || size > RMP_MSG_MAX)
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	fixed[0] = 0x52;
	fixed[1] = 0x4d;
	fixed[2] = 0x50;
	fixed[3] = 0x31;
	fixed[4] = RMP_PROTO_VERSION;
	fixed[8] = (uint8_t)(size - RMP_MSG_HDR_LEN);
	fixed[9] = 0;
	fixed[10] = 0;
	fixed[11] = 0;
	decode_then_encode(fixed, size);
	free(fixed);
	return 0;
}

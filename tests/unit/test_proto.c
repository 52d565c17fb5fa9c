/* SPDX-License-Identifier: MIT */
/* test_proto.c -- unit tests for the control message and connect codecs. */
#include "check.h"
#include "proto.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define REQ_ID 0x1122334455667788ull

/* Wire header bytes for REQ_ID with the given opcode, flags, length, status. */
#define HDR(op, fl, plen, st0, st1, st2, st3)                               \
	0x52, 0x4d, 0x50, 0x31, 0x05, (op), (fl), 0x00, (plen), 0x00, 0x00,  \
	0x00, (st0), (st1), (st2), (st3), 0x88, 0x77, 0x66, 0x55, 0x44,     \
	0x33, 0x22, 0x11

static void msg_init(struct rmp_msg *m, unsigned op, int reply)
{
	memset(m, 0, sizeof(*m));
	m->hdr.opcode = (uint8_t)op;
	m->hdr.flags = reply ? RMP_MSG_F_REPLY : 0;
	m->hdr.req_id = REQ_ID;
}

static void fill_lease(struct rmp_lease_desc *d)
{
	d->id = 0xa1a2a3a4a5a6a7a8ull;
	d->secret = 0xb1b2b3b4b5b6b7b8ull;
	d->addr = 0x00007f0012345000ull;
	d->length = 0x200000;
	d->ttl_ms = 30000;
	d->rkey = 0xdeadbeef;
	d->access = RMP_ACC_ALL;
	d->flags = RMP_LEASE_F_EPHEMERAL;
	d->holders = 0x04030201;
	d->epoch = 0xc1c2c3c4c5c6c7c8ull;
}

static void fill_stat(struct rmp_stat_rep *s)
{
	s->pool_bytes = 0x0000000400000000ull;
	s->free_bytes = 0x0000000300000000ull;
	s->largest_free = 0x0000000200000000ull;
	s->leases = 0x11;
	s->tenant_bytes = 0x400000;
	s->tenant_leases = 2;
	s->quota_bytes = 0x0102030405060708ull;
	s->quota_leases = 0x20;
	s->hugepage_size = 0x40000000;
	s->ttl_min_s = 1;
	s->ttl_max_s = 86400;
	s->ttl_default_s = 300;
	s->numa_node = -1;
	s->keys_mode = RMP_KEYS_REGION;
	s->quarantined_bytes = 0x1000;
	s->zeroing_bytes = 0x8000000000200000ull;
	s->tenant_connections = 0xc1c2c3c4;
	s->quota_connections = 0xd1d2d3d4;
	s->keys = 0xe1e2e3e4e5e6e7e8ull;
}

/*
 * Encode m, compare with the expected bytes, then decode and compare with
 * m (the decoder also fills magic, version and payload_len). Every proper
 * prefix is decoded from an exact-size heap copy so ASan sees overreads.
 */
static void check_wire(const struct rmp_msg *m, const uint8_t *want,
		       size_t want_len)
{
	uint8_t buf[RMP_MSG_MAX], *copy;
	struct rmp_msg in = *m, out;
	size_t i;
	int n;

	memset(buf, 0xaa, sizeof(buf));
	n = rmp_msg_encode(buf, sizeof(buf), m);
	CHECK_EQ(n, want_len);
	if (n != (int)want_len)
		return;
	CHECK(!memcmp(buf, want, want_len));
	CHECK_EQ(buf[want_len], 0xaa);

	/* Exact cap works, one byte less does not. */
	CHECK_EQ(rmp_msg_encode(buf, want_len, m), (int)want_len);
	CHECK_EQ(rmp_msg_encode(buf, want_len - 1, m), -EMSGSIZE);

	copy = malloc(want_len);
	if (!copy)
		abort();
	memcpy(copy, want, want_len);
	CHECK_EQ(rmp_msg_decode(copy, want_len, &out), 0);
	in.hdr.magic = RMP_MSG_MAGIC;
	in.hdr.version = RMP_PROTO_VERSION;
	in.hdr.payload_len = (uint32_t)(want_len - RMP_MSG_HDR_LEN);
	CHECK(!memcmp(&in, &out, sizeof(in)));
	free(copy);

	for (i = 0; i < want_len; i++) {
		int bad = 0;

		copy = malloc(i ? i : 1);
		if (!copy)
			abort();
		memcpy(copy, want, i);
		if (rmp_msg_decode(copy, i, &out) != -EBADMSG)
			bad++;
		free(copy);
		if (bad) {
			CHECK_EQ(i, want_len);
			return;
		}
	}
	CHECK(1); /* every truncation rejected */
}

static void test_payload_len(void)
{
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ALLOC, 0, 0), 32);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ALLOC, 1, 0), 64);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_RENEW, 0, 0), 24);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_RENEW, 1, 0), 8);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_FREE, 0, 0), 16);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_FREE, 1, 0), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ATTACH, 0, 0), 32);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ATTACH, 1, 0), 64);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_STAT, 0, 0), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_STAT, 1, 0), 128);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_AUTH, 0, 0), 64);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_AUTH, 1, 0), 32);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_AUTH, 1, -EACCES), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ALLOC, 1, -ENOMEM), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_STAT, 1, -EPERM), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ATTACH, 1, INT32_MIN), 0);
	CHECK_EQ(rmp_msg_payload_len(0, 0, 0), -EOPNOTSUPP);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_MAX + 1, 1, 0), -EOPNOTSUPP);
	CHECK_EQ(rmp_msg_payload_len(7, 0, 0), -EOPNOTSUPP);
	CHECK_EQ(rmp_msg_payload_len(0x101, 0, 0), -EOPNOTSUPP);
	/* The sizes the wire carries are those of the structs. */
	CHECK_EQ(sizeof(struct rmp_lease_desc), 64);
	CHECK_EQ(sizeof(struct rmp_renew_req), 24);
	CHECK_EQ(sizeof(struct rmp_free_req), 16);
	CHECK_EQ(sizeof(struct rmp_attach_req), 32);
	CHECK_EQ(sizeof(struct rmp_auth_req),
		 RMP_AUTH_PROOF_LEN + RMP_AUTH_NONCE_LEN);
	CHECK_EQ(sizeof(struct rmp_auth_rep), RMP_AUTH_PROOF_LEN);
	CHECK_EQ(sizeof(struct rmp_stat_rep), 128);
	CHECK_EQ(RMP_PROTO_VERSION, 5);
	CHECK_EQ(RMP_PROTO_MIN, 5);
	CHECK_EQ(RMP_PROTO_MAX, 5);
	CHECK_EQ(RMP_OP_AUTH, 6);
	CHECK_EQ(RMP_OP_MAX, RMP_OP_AUTH);
	/* The biggest message fits in one control SEND. */
	CHECK(RMP_MSG_HDR_LEN + 128 <= RMP_MSG_MAX);
}

static void test_alloc(void)
{
	static const uint8_t req[] = {
		HDR(0x01, 0x00, 32, 0, 0, 0, 0),
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* length */
		0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* alignment */
		0x0d, 0x0c, 0x0b, 0x0a,                         /* ttl_s */
		0x03, 0x00, 0x00, 0x00,                         /* access */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
		0x00, 0x00, 0x00, 0x00,                         /* reserved */
	};
	static const uint8_t rep[] = {
		HDR(0x01, 0x01, 64, 0, 0, 0, 0),
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, /* id */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1, /* secret */
		0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, /* addr */
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, /* length */
		0x30, 0x75, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ttl_ms */
		0xef, 0xbe, 0xad, 0xde,                         /* rkey */
		0x07, 0x00, 0x00, 0x00,                         /* access */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
		0x01, 0x02, 0x03, 0x04,                         /* holders */
		0xc8, 0xc7, 0xc6, 0xc5, 0xc4, 0xc3, 0xc2, 0xc1, /* epoch */
	};
	static const uint8_t err[] = {
		HDR(0x01, 0x01, 0, 0xf4, 0xff, 0xff, 0xff),
	};
	struct rmp_msg m;

	msg_init(&m, RMP_OP_ALLOC, 0);
	m.u.alloc.length = 0x0102030405060708ull;
	m.u.alloc.alignment = 0x1000;
	m.u.alloc.ttl_s = 0x0a0b0c0d;
	m.u.alloc.access = RMP_ACC_READ | RMP_ACC_WRITE;
	m.u.alloc.flags = RMP_LEASE_F_EPHEMERAL;
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_ALLOC, 1);
	fill_lease(&m.u.lease);
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_ALLOC, 1);
	m.hdr.status = -ENOMEM;
	check_wire(&m, err, sizeof(err));
}

static void test_renew(void)
{
	static const uint8_t req[] = {
		HDR(0x02, 0x00, 24, 0, 0, 0, 0),
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* id */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, /* secret */
		0x3c, 0x00, 0x00, 0x00,                         /* ttl_s */
		0x00, 0x00, 0x00, 0x00,                         /* reserved */
	};
	static const uint8_t rep[] = {
		HDR(0x02, 0x01, 8, 0, 0, 0, 0),
		0xa0, 0x86, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, /* ttl_ms */
	};
	static const uint8_t err[] = {
		HDR(0x02, 0x01, 0, 0xfe, 0xff, 0xff, 0xff),
	};
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];

	msg_init(&m, RMP_OP_RENEW, 0);
	m.u.renew.id = 0x0102030405060708ull;
	m.u.renew.secret = 0x1112131415161718ull;
	m.u.renew.ttl_s = 60;
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_RENEW, 1);
	m.u.renew_rep.ttl_ms = 100000;
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_RENEW, 1);
	m.hdr.status = -ENOENT;
	check_wire(&m, err, sizeof(err));

	/* The secret sits at offset 8 of the payload, ttl_s at 16. */
	msg_init(&m, RMP_OP_RENEW, 0);
	m.u.renew.secret = UINT64_MAX;
	m.u.renew.ttl_s = UINT32_MAX;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 24);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 7], 0);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 8], 0xff);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 15], 0xff);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 16], 0xff);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 19], 0xff);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 20], 0);
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 24, &out), 0);
	CHECK(out.u.renew.secret == UINT64_MAX);
	CHECK_EQ(out.u.renew.ttl_s, UINT32_MAX);
	CHECK_EQ(out.u.renew.id, 0);
	/* The protocol 2 request (16 bytes: id, ttl_s, reserved) is short. */
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 16, &out), -EBADMSG);
}

static void test_free(void)
{
	static const uint8_t req[] = {
		HDR(0x03, 0x00, 16, 0, 0, 0, 0),
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* id */
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* secret */
	};
	static const uint8_t rep[] = {
		HDR(0x03, 0x01, 0, 0, 0, 0, 0),
	};
	static const uint8_t err[] = {
		HDR(0x03, 0x01, 0, 0xff, 0xff, 0xff, 0xff),
	};
	struct rmp_msg m;

	msg_init(&m, RMP_OP_FREE, 0);
	m.u.free.id = 0x8000000000000005ull;
	m.u.free.secret = 0x0123456789abcdefull;
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_FREE, 1);
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_FREE, 1);
	m.hdr.status = -EPERM;
	check_wire(&m, err, sizeof(err));
}

static void test_attach(void)
{
	static const uint8_t req[] = {
		HDR(0x04, 0x00, 32, 0, 0, 0, 0),
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, /* id */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1, /* secret */
		0x01, 0x00, 0x00, 0x00,                         /* access */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* epoch */
	};
	static const uint8_t rep[] = {
		HDR(0x04, 0x01, 64, 0, 0, 0, 0),
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, /* id */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1, /* secret */
		0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, /* addr */
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, /* length */
		0x30, 0x75, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ttl_ms */
		0xef, 0xbe, 0xad, 0xde,                         /* rkey */
		0x07, 0x00, 0x00, 0x00,                         /* access */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
		0x01, 0x02, 0x03, 0x04,                         /* holders */
		0xc8, 0xc7, 0xc6, 0xc5, 0xc4, 0xc3, 0xc2, 0xc1, /* epoch */
	};
	static const uint8_t err[] = {
		HDR(0x04, 0x01, 0, 0xf3, 0xff, 0xff, 0xff),
	};
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];

	msg_init(&m, RMP_OP_ATTACH, 0);
	m.u.attach.id = 0xa1a2a3a4a5a6a7a8ull;
	m.u.attach.secret = 0xb1b2b3b4b5b6b7b8ull;
	m.u.attach.access = RMP_ACC_READ;
	m.u.attach.flags = RMP_ATTACH_F_EXCLUSIVE;
	m.u.attach.epoch = 0x8000000000000007ull;
	check_wire(&m, req, sizeof(req));

	/* access 0 (= the lease's) and no flags. */
	msg_init(&m, RMP_OP_ATTACH, 0);
	m.u.attach.id = 1;
	m.u.attach.secret = 2;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 32);
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 32, &out), 0);
	CHECK_EQ(out.u.attach.id, 1);
	CHECK_EQ(out.u.attach.secret, 2);
	CHECK_EQ(out.u.attach.access, 0);
	CHECK_EQ(out.u.attach.flags, 0);
	CHECK_EQ(out.u.attach.epoch, 0);
	/* access at payload offset 16, flags at 20, epoch at 24. */
	m.u.attach.access = RMP_ACC_ALL;
	m.u.attach.flags = RMP_ATTACH_F_ALL;
	m.u.attach.epoch = 0x0102;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 32);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 16], RMP_ACC_ALL);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 20], RMP_ATTACH_F_ALL);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 24], 0x02);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 25], 0x01);
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 32, &out), 0);
	CHECK_EQ(out.u.attach.access, RMP_ACC_ALL);
	CHECK_EQ(out.u.attach.flags, RMP_ATTACH_F_EXCLUSIVE);
	CHECK_EQ(out.u.attach.epoch, 0x0102);
	/* The protocol 2 request (16 bytes: id, secret) and the protocol 4
	 * one (24 bytes: no epoch) are short. */
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 16, &out), -EBADMSG);
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 24, &out), -EBADMSG);

	msg_init(&m, RMP_OP_ATTACH, 1);
	fill_lease(&m.u.lease);
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_ATTACH, 1);
	m.hdr.status = -EACCES;
	check_wire(&m, err, sizeof(err));
}

/* holders (the last u32 of a lease desc) is a real field now. */
static void test_lease_holders(void)
{
	static const uint32_t vals[] = { 0, 1, 16, 0x80000000u, UINT32_MAX };
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		msg_init(&m, i % 2 ? RMP_OP_ATTACH : RMP_OP_ALLOC, 1);
		fill_lease(&m.u.lease);
		m.u.lease.holders = vals[i];
		CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m),
			 RMP_MSG_HDR_LEN + 64);
		/* Little-endian at payload offset 52. */
		CHECK_EQ(buf[RMP_MSG_HDR_LEN + 52], vals[i] & 0xff);
		CHECK_EQ(buf[RMP_MSG_HDR_LEN + 55], vals[i] >> 24);
		memset(&out, 0xee, sizeof(out));
		CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 64, &out), 0);
		CHECK_EQ(out.u.lease.holders, vals[i]);
		CHECK_EQ(out.u.lease.epoch, 0xc1c2c3c4c5c6c7c8ull);
		CHECK_EQ(out.u.lease.flags, RMP_LEASE_F_EPHEMERAL);
	}
}

static void test_stat(void)
{
	static const uint8_t req[] = {
		HDR(0x05, 0x00, 0, 0, 0, 0, 0),
	};
	static const uint8_t rep[] = {
		HDR(0x05, 0x01, 128, 0, 0, 0, 0),
		0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, /* pool */
		0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* free */
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* largest */
		0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* leases */
		0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, /* tenant_b. */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* tenant_l. */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* quota_b. */
		0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* quota_l. */
		0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, /* hugepage */
		0x01, 0x00, 0x00, 0x00,                         /* ttl_min_s */
		0x80, 0x51, 0x01, 0x00,                         /* ttl_max_s */
		0x2c, 0x01, 0x00, 0x00,                         /* ttl_def */
		0xff, 0xff, 0xff, 0xff,                         /* numa_node */
		0x02, 0x00, 0x00, 0x00,                         /* keys_mode */
		0x00, 0x00, 0x00, 0x00,                         /* reserved */
		0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* quarant. */
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x80, /* zeroing */
		0xc4, 0xc3, 0xc2, 0xc1,                         /* tenant_c. */
		0xd4, 0xd3, 0xd2, 0xd1,                         /* quota_c. */
		0xe8, 0xe7, 0xe6, 0xe5, 0xe4, 0xe3, 0xe2, 0xe1, /* keys */
	};
	static const uint8_t err[] = {
		HDR(0x05, 0x01, 0, 0x00, 0x00, 0x00, 0x80),
	};
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];
	int n;

	CHECK_EQ(sizeof(rep), RMP_MSG_HDR_LEN + 128);
	msg_init(&m, RMP_OP_STAT, 0);
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_STAT, 1);
	fill_stat(&m.u.stat);
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_STAT, 1);
	m.hdr.status = INT32_MIN;
	check_wire(&m, err, sizeof(err));

	/* Signed numa_node extremes survive the trip. */
	msg_init(&m, RMP_OP_STAT, 1);
	m.u.stat.numa_node = INT32_MIN;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(n, RMP_MSG_HDR_LEN + 128);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(out.u.stat.numa_node, INT32_MIN);
	m.u.stat.numa_node = INT32_MAX;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(out.u.stat.numa_node, INT32_MAX);

	/* The new fields at payload offsets 112, 116 and 120. */
	msg_init(&m, RMP_OP_STAT, 1);
	m.u.stat.tenant_connections = 3;
	m.u.stat.quota_connections = 5;
	m.u.stat.keys = 0x0100000000000007ull;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(n, RMP_MSG_HDR_LEN + 128);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 111], 0);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 112], 3);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 116], 5);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 120], 7);
	CHECK_EQ(buf[RMP_MSG_HDR_LEN + 127], 1);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(out.u.stat.tenant_connections, 3);
	CHECK_EQ(out.u.stat.quota_connections, 5);
	CHECK(out.u.stat.keys == 0x0100000000000007ull);
	/* A protocol 2 STAT reply (112 bytes) is refused. */
	buf[8] = 112;
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 112, &out), -EBADMSG);
}

static void test_auth(void)
{
	static const uint8_t req[] = {
		HDR(0x06, 0x00, 64, 0, 0, 0, 0),
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, /* proof */
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
		0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
		0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, /* client */
		0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, /* nonce */
		0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
		0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
	};
	static const uint8_t rep[] = {
		HDR(0x06, 0x01, 32, 0, 0, 0, 0),
		0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, /* server's */
		0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f, /* proof */
		0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
		0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
	};
	/* -EACCES with detail RMP_DETAIL_BAD_PROOF in flags bits 8..15. */
	static const uint8_t err[] = {
		HDR(0x06, 0x01, 0, 0xf3, 0xff, 0xff, 0xff),
	};
	uint8_t err_detail[sizeof(err)];
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];
	int i;

	msg_init(&m, RMP_OP_AUTH, 0);
	for (i = 0; i < 16; i++)
		m.u.auth.proof[i] = (uint8_t)i;
	for (i = 16; i < RMP_AUTH_PROOF_LEN; i++)
		m.u.auth.proof[i] = (uint8_t)(0xe0 + i);
	for (i = 0; i < RMP_AUTH_NONCE_LEN; i++)
		m.u.auth.client_nonce[i] = (uint8_t)(0x40 + i);
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_AUTH, 1);
	for (i = 0; i < RMP_AUTH_PROOF_LEN; i++)
		m.u.auth_rep.server_proof[i] = (uint8_t)(0x90 + i);
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_AUTH, 1);
	m.hdr.status = -EACCES;
	check_wire(&m, err, sizeof(err));
	memcpy(err_detail, err, sizeof(err));
	err_detail[7] = RMP_DETAIL_BAD_PROOF;
	m.hdr.flags |= RMP_MSG_F_DETAIL(RMP_DETAIL_BAD_PROOF);
	check_wire(&m, err_detail, sizeof(err_detail));

	/* A proof of all zeros is a proof like any other on the wire. */
	msg_init(&m, RMP_OP_AUTH, 0);
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 64);
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + 64, &out), 0);
	for (i = 0; i < RMP_AUTH_PROOF_LEN && !out.u.auth.proof[i]; i++)
		;
	CHECK_EQ(i, RMP_AUTH_PROOF_LEN);

	/* A success reply with a payload, a request without one. */
	memcpy(buf, req, sizeof(req));
	buf[6] = RMP_MSG_F_REPLY;
	CHECK_EQ(rmp_msg_decode(buf, sizeof(req), &out), -EBADMSG);
	memcpy(buf, req, sizeof(req));
	buf[8] = 0;
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN, &out), -EBADMSG);
	/* A success reply without the server's proof (protocol 4's). */
	memcpy(buf, rep, RMP_MSG_HDR_LEN);
	buf[8] = 0;
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN, &out), -EBADMSG);
	/* A request of protocol 4's size: the proof without a nonce. */
	memcpy(buf, req, RMP_MSG_HDR_LEN + RMP_AUTH_PROOF_LEN);
	buf[8] = RMP_AUTH_PROOF_LEN;
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN + RMP_AUTH_PROOF_LEN,
				&out), -EBADMSG);
	/* One byte too many. */
	memcpy(buf, req, sizeof(req));
	buf[8] = sizeof(req) - RMP_MSG_HDR_LEN + 1;
	buf[sizeof(req)] = 0;
	CHECK_EQ(rmp_msg_decode(buf, sizeof(req) + 1, &out), -EBADMSG);
	/* A status on a request. */
	memcpy(buf, req, sizeof(req));
	buf[12] = 0xff;
	CHECK_EQ(rmp_msg_decode(buf, sizeof(req), &out), -EBADMSG);
}

/* The detail code of an error reply rides in flags bits 8..15. */
static void test_detail(void)
{
	static const unsigned details[] = {
		RMP_DETAIL_NONE, RMP_DETAIL_BYTES, RMP_DETAIL_LEASES,
		RMP_DETAIL_KEYS, RMP_DETAIL_BAD_PROOF, RMP_DETAIL_REPLAYED,
		RMP_DETAIL_NOT_AUTHED, RMP_DETAIL_TENANT, 0xff,
	};
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];
	size_t i;
	int n;

	CHECK_EQ(RMP_MSG_F_DETAIL(RMP_DETAIL_LEASES), 0x0200);
	CHECK_EQ(RMP_MSG_F_DETAIL(0x1ff), 0xff00);
	CHECK_EQ(RMP_MSG_DETAIL(0x0701), RMP_DETAIL_TENANT);
	CHECK_EQ(RMP_MSG_DETAIL(RMP_MSG_F_REPLY), RMP_DETAIL_NONE);
	CHECK_EQ(RMP_MSG_DETAIL(0xffff), 0xff);
	CHECK_EQ(RMP_MSG_F_DETAIL(RMP_DETAIL_BYTES) & RMP_MSG_F_REPLY, 0);

	for (i = 0; i < sizeof(details) / sizeof(details[0]); i++) {
		msg_init(&m, RMP_OP_ALLOC, 1);
		m.hdr.status = -EDQUOT;
		m.hdr.flags |= RMP_MSG_F_DETAIL(details[i]);
		n = rmp_msg_encode(buf, sizeof(buf), &m);
		CHECK_EQ(n, RMP_MSG_HDR_LEN);
		CHECK_EQ(buf[6], RMP_MSG_F_REPLY);
		CHECK_EQ(buf[7], details[i]);
		memset(&out, 0xee, sizeof(out));
		CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
		CHECK_EQ(out.hdr.status, -EDQUOT);
		CHECK(out.hdr.flags & RMP_MSG_F_REPLY);
		CHECK_EQ(RMP_MSG_DETAIL(out.hdr.flags), details[i]);
	}
	/* A detail on a success reply is carried as well (flags are opaque
	 * to the codec), with the payload intact. */
	msg_init(&m, RMP_OP_RENEW, 1);
	m.hdr.flags |= RMP_MSG_F_DETAIL(RMP_DETAIL_KEYS);
	m.u.renew_rep.ttl_ms = 5;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(n, RMP_MSG_HDR_LEN + 8);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(RMP_MSG_DETAIL(out.hdr.flags), RMP_DETAIL_KEYS);
	CHECK_EQ(out.u.renew_rep.ttl_ms, 5);

	CHECK_STR(rmp_detail_str(RMP_DETAIL_NONE), "");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_BYTES), "the tenant's byte limit");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_LEASES),
		  "the tenant's lease limit");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_KEYS), "the keys-per-lease limit");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_BAD_PROOF),
		  "the key does not match the tenant's");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_REPLAYED),
		  "the proof was replayed from another connection");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_NOT_AUTHED),
		  "a request before authentication");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_TENANT),
		  "the lease belongs to another tenant");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_SERVER_LEASES),
		  "the server's lease limit ([pool] max_leases)");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_TENANT_CONNECTIONS),
		  "the tenant's connection limit");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_PEER_CONNECTIONS),
		  "the connection limit of this address");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_NETWORK),
		  "the tenant may not connect from this address");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_EPOCH),
		  "the lease's group has a newer epoch than the record it "
		  "was attached by");
	CHECK_STR(rmp_detail_str(RMP_DETAIL_RETURNING),
		  "room that ended leases are returning (being revoked and "
		  "zeroed)");
	CHECK_STR(rmp_detail_str(14), "");
	CHECK_STR(rmp_detail_str(0xff), "");
	CHECK_STR(rmp_detail_str(~0u), "");
}

/* Unknown flag bits are carried through unchanged. */
static void test_flags(void)
{
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];
	int n;

	msg_init(&m, RMP_OP_FREE, 1);
	m.hdr.flags = 0x8001;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(n, RMP_MSG_HDR_LEN);
	CHECK_EQ(buf[6], 0x01);
	CHECK_EQ(buf[7], 0x80);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(out.hdr.flags, 0x8001);
}

static void test_encode_errors(void)
{
	uint8_t buf[RMP_MSG_MAX];
	struct rmp_msg m;

	msg_init(&m, RMP_OP_ALLOC, 0);
	CHECK_EQ(rmp_msg_encode(buf, 0, &m), -EMSGSIZE);
	CHECK_EQ(rmp_msg_encode(buf, RMP_MSG_HDR_LEN, &m), -EMSGSIZE);
	CHECK_EQ(rmp_msg_encode(buf, RMP_MSG_HDR_LEN + 31, &m), -EMSGSIZE);
	CHECK_EQ(rmp_msg_encode(buf, RMP_MSG_HDR_LEN + 32, &m),
		 RMP_MSG_HDR_LEN + 32);

	msg_init(&m, RMP_OP_STAT, 0);
	CHECK_EQ(rmp_msg_encode(buf, RMP_MSG_HDR_LEN - 1, &m), -EMSGSIZE);

	msg_init(&m, 0, 0);
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EOPNOTSUPP);
	msg_init(&m, RMP_OP_MAX + 1, 1);
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EOPNOTSUPP);

	msg_init(&m, RMP_OP_FREE, 1);
	m.hdr.status = 1;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EINVAL);
	m.hdr.status = INT32_MAX;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EINVAL);

	/* A request with a status would not decode; refuse to send it. */
	msg_init(&m, RMP_OP_FREE, 0);
	m.hdr.status = -EIO;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EINVAL);

	/* Reserved fields go out as zero whatever the caller left there. */
	msg_init(&m, RMP_OP_ALLOC, 0);
	m.u.alloc.reserved = 0xdeadbeef;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 32);
	CHECK(!buf[52] && !buf[53] && !buf[54] && !buf[55]);
	msg_init(&m, RMP_OP_RENEW, 0);
	m.u.renew.reserved = 1;
	m.u.renew.ttl_s = 0x01010101;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 24);
	CHECK(buf[40] == 1 && buf[43] == 1);
	CHECK(!buf[44] && !buf[45] && !buf[46] && !buf[47]);
	msg_init(&m, RMP_OP_STAT, 1);
	m.u.stat.reserved = 0x100;
	m.u.stat.keys_mode = 0x01010101;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 128);
	CHECK(buf[112] == 1 && buf[115] == 1);
	CHECK(!buf[116] && !buf[117] && !buf[118] && !buf[119]);
	/* What used to be the lease desc's reserved word is holders now. */
	msg_init(&m, RMP_OP_ATTACH, 1);
	m.u.lease.holders = 0xffffffff;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 64);
	CHECK(buf[76] == 0xff && buf[77] == 0xff && buf[78] == 0xff &&
	      buf[79] == 0xff);

	/* The encoder owns magic, version and payload_len. */
	msg_init(&m, RMP_OP_FREE, 1);
	m.hdr.magic = 1;
	m.hdr.version = 9;
	m.hdr.payload_len = 77;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN);
	CHECK_EQ(buf[0], 0x52);
	CHECK_EQ(buf[4], RMP_PROTO_VERSION);
	CHECK_EQ(buf[8], 0);
}

/* Encode a valid message of op into buf; returns its length. */
static size_t good(uint8_t *buf, unsigned op, int reply)
{
	struct rmp_msg m;
	int n;

	msg_init(&m, op, reply);
	n = rmp_msg_encode(buf, RMP_MSG_MAX, &m);
	if (n < 0)
		abort();
	return (size_t)n;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void test_decode_errors(void)
{
	uint8_t buf[RMP_MSG_MAX + 8];
	struct rmp_msg m;
	size_t n;

	/* Short: header zeroed. */
	n = good(buf, RMP_OP_STAT, 0);
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, 0, &m), -EBADMSG);
	CHECK_EQ(m.hdr.req_id, 0);
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN - 1, &m), -EBADMSG);
	CHECK_EQ(m.hdr.req_id, 0);
	CHECK_EQ(m.hdr.magic, 0);

	/* Bad magic: header not trusted, so not stored. */
	n = good(buf, RMP_OP_STAT, 0);
	buf[3] = '2';
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	CHECK_EQ(m.hdr.req_id, 0);
	set_le32(buf, 0x52504d31); /* byte-swapped magic */
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);

	/* Wrong version: header stored so the reply can echo req_id. */
	n = good(buf, RMP_OP_STAT, 0);
	CHECK_EQ(buf[4], 5);
	buf[4] = 6;
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	CHECK_EQ(m.hdr.version, 6);
	/* Protocol 4, whose server proved nothing, is not spoken. */
	buf[4] = 4;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	/* Protocol 3, whose proof named no server, is not spoken. */
	buf[4] = 3;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	/* Protocol 2 (no AUTH, no tenants) is no longer spoken... */
	buf[4] = 2;
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	CHECK_EQ(m.hdr.version, 2);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	/* ...nor protocol 1 (STAT was 96 bytes then). */
	buf[4] = 1;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	CHECK_EQ(m.hdr.opcode, RMP_OP_STAT);
	buf[4] = 0;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	/* Version is checked before opcode and length. */
	n = good(buf, RMP_OP_ALLOC, 0);
	buf[4] = 0xff;
	buf[5] = 0x77;
	CHECK_EQ(rmp_msg_decode(buf, n - 1, &m), -EPROTONOSUPPORT);

	/* Unknown opcode, checked before the length. */
	n = good(buf, RMP_OP_STAT, 0);
	buf[5] = 0;
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EOPNOTSUPP);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	buf[5] = RMP_OP_MAX + 1;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EOPNOTSUPP);
	buf[5] = 0xff;
	set_le32(buf + 8, 0xffffffff);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EOPNOTSUPP);

	/* payload_len larger than the bytes present. */
	n = good(buf, RMP_OP_ALLOC, 0);
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n - 1, &m), -EBADMSG);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	CHECK_EQ(m.hdr.payload_len, 32);
	/* payload_len smaller than the bytes present. */
	buf[n] = 0;
	CHECK_EQ(rmp_msg_decode(buf, n + 1, &m), -EBADMSG);
	/* Consistent with the buffer, but not the opcode's size. */
	set_le32(buf + 8, 31);
	CHECK_EQ(rmp_msg_decode(buf, n - 1, &m), -EBADMSG);
	set_le32(buf + 8, 33);
	CHECK_EQ(rmp_msg_decode(buf, n + 1, &m), -EBADMSG);
	/* Huge payload_len. */
	set_le32(buf + 8, 0xffffffff);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	CHECK_EQ(m.hdr.payload_len, 0xffffffff);
	n = good(buf, RMP_OP_STAT, 0);
	set_le32(buf + 8, 0xffffffff);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	set_le32(buf + 8, 0x80000000);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	/* Request payload where a header-only STAT request is due. */
	set_le32(buf + 8, 8);
	memset(buf + n, 0, 8);
	CHECK_EQ(rmp_msg_decode(buf, n + 8, &m), -EBADMSG);

	/* An error reply carries no payload... */
	n = good(buf, RMP_OP_ALLOC, 1);
	set_le32(buf + 12, (uint32_t)-ENOMEM);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	set_le32(buf + 8, 0);
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN, &m), 0);
	CHECK_EQ(m.hdr.status, -ENOMEM);
	/* ...and a success reply has its full payload. */
	set_le32(buf + 12, 0);
	CHECK_EQ(rmp_msg_decode(buf, RMP_MSG_HDR_LEN, &m), -EBADMSG);
	/* The reply bit selects the size: a request body is no reply. */
	n = good(buf, RMP_OP_ALLOC, 0);
	buf[6] = RMP_MSG_F_REPLY;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);

	/* Nonzero reserved fields, each payload kind. */
	n = good(buf, RMP_OP_ALLOC, 0);
	buf[n - 1] = 1;
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	CHECK_EQ(m.u.alloc.reserved, 0);
	n = good(buf, RMP_OP_RENEW, 0);
	buf[n - 4] = 0x80;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	CHECK_EQ(m.u.renew.reserved, 0);
	n = good(buf, RMP_OP_STAT, 1);
	buf[RMP_MSG_HDR_LEN + 95] = 0xff;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	n = good(buf, RMP_OP_STAT, 1);
	buf[RMP_MSG_HDR_LEN + 92] = 0x01;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	/* The bytes around reserved are real fields. */
	n = good(buf, RMP_OP_STAT, 1);
	buf[RMP_MSG_HDR_LEN + 91] = 0xff;
	buf[RMP_MSG_HDR_LEN + 96] = 0xff;
	buf[n - 1] = 0xff;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);
	CHECK_EQ(m.u.stat.keys_mode, 0xff000000u);
	CHECK_EQ(m.u.stat.quarantined_bytes, 0xff);
	CHECK(m.u.stat.keys == 0xff00000000000000ull);
	/* No reserved word in a lease desc any more: holders may be
	 * anything, in ALLOC and ATTACH replies alike. */
	n = good(buf, RMP_OP_ALLOC, 1);
	buf[n - 10] = 1;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);
	CHECK_EQ(m.u.lease.holders, 0x00010000);
	n = good(buf, RMP_OP_ATTACH, 1);
	buf[n - 12] = 2;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);
	CHECK_EQ(m.u.lease.holders, 2);
	/* No reserved bytes in FREE, ATTACH or AUTH requests: every bit is
	 * a field. */
	n = good(buf, RMP_OP_FREE, 0);
	buf[n - 1] = 0x80;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);
	CHECK(m.u.free.secret == 0x8000000000000000ull);
	n = good(buf, RMP_OP_ATTACH, 0);
	buf[n - 9] = 0x80;
	buf[n - 1] = 0x80;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);
	CHECK_EQ(m.u.attach.flags, 0x80000000u);
	CHECK(m.u.attach.epoch == 0x8000000000000000ull);
	n = good(buf, RMP_OP_AUTH, 0);
	buf[n - 33] = 0x80;
	buf[n - 1] = 0x81;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);
	CHECK_EQ(m.u.auth.proof[RMP_AUTH_PROOF_LEN - 1], 0x80);
	CHECK_EQ(m.u.auth.client_nonce[RMP_AUTH_NONCE_LEN - 1], 0x81);

	/* Positive status on a reply, with and without a payload. */
	n = good(buf, RMP_OP_FREE, 1);
	set_le32(buf + 12, 1);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	CHECK_EQ(m.hdr.status, 1);
	n = good(buf, RMP_OP_RENEW, 1);
	set_le32(buf + 12, 0x7fffffff);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);

	/* Any status on a request. */
	n = good(buf, RMP_OP_FREE, 0);
	set_le32(buf + 12, (uint32_t)-EIO);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	set_le32(buf + 12, 5);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	n = good(buf, RMP_OP_STAT, 0);
	set_le32(buf + 12, (uint32_t)-EIO);
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
}

static void test_names(void)
{
	CHECK_STR(rmp_opcode_name(RMP_OP_ALLOC), "ALLOC");
	CHECK_STR(rmp_opcode_name(RMP_OP_RENEW), "RENEW");
	CHECK_STR(rmp_opcode_name(RMP_OP_FREE), "FREE");
	CHECK_STR(rmp_opcode_name(RMP_OP_ATTACH), "ATTACH");
	CHECK_STR(rmp_opcode_name(RMP_OP_STAT), "STAT");
	CHECK_STR(rmp_opcode_name(RMP_OP_AUTH), "AUTH");
	CHECK_STR(rmp_opcode_name(0), "?");
	CHECK_STR(rmp_opcode_name(7), "?");
	CHECK_STR(rmp_opcode_name(~0u), "?");

	CHECK_STR(rmp_keys_mode_name(RMP_KEYS_WINDOW), "window");
	CHECK_STR(rmp_keys_mode_name(RMP_KEYS_REGION), "region");
	CHECK_STR(rmp_keys_mode_name(RMP_KEYS_POOL), "pool");
	CHECK_STR(rmp_keys_mode_name(0), "unknown");

	/* The reasons keep their wire values. */
	CHECK_EQ(RMP_REJ_BAD_REQUEST, 1);
	CHECK_EQ(RMP_REJ_PROTO, 2);
	CHECK_EQ(RMP_REJ_UNKNOWN_TENANT, 3);
	CHECK_EQ(RMP_REJ_FULL, 4);
	CHECK_EQ(RMP_REJ_DRAINING, 5);
	CHECK_EQ(RMP_REJ_INTERNAL, 6);
	CHECK_EQ(RMP_REJ_COOLDOWN, 7);
	CHECK_EQ(RMP_REJ_ANONYMOUS, 8);
	CHECK_EQ(RMP_REJ_TENANT_FULL, 9);
	CHECK_EQ(RMP_REJ_PEER_FULL, 10);
	CHECK_EQ(RMP_REJ_NETWORK, 11);

	CHECK_STR(rmp_reject_reason_str(RMP_REJ_BAD_REQUEST), "bad request");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_PROTO),
		  "no common protocol version");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_UNKNOWN_TENANT),
		  "unknown tenant");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_FULL), "server full");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_DRAINING), "server draining");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_INTERNAL),
		  "server internal error");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_COOLDOWN),
		  "refused for a while: too many access or authentication "
		  "errors from this address");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_ANONYMOUS),
		  "anonymous access is disabled: name a tenant and its key");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_TENANT_FULL),
		  "the tenant's connection limit is reached");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_PEER_FULL),
		  "the connection limit of this address is reached");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_NETWORK),
		  "the tenant may not connect from this address");
	CHECK_STR(rmp_reject_reason_str(0), "unknown reason");
	/* Every reason has its own metrics label. */
	for (unsigned i = 1; i < RMP_REJ_REASONS; i++) {
		CHECK(strcmp(rmp_reject_reason_name(i), "other") != 0);
		for (unsigned j = 1; j < i; j++)
			CHECK(strcmp(rmp_reject_reason_name(i),
				     rmp_reject_reason_name(j)) != 0);
	}
	CHECK_STR(rmp_reject_reason_name(RMP_REJ_NETWORK), "network");
	CHECK_STR(rmp_reject_reason_name(0), "other");
	CHECK_STR(rmp_reject_reason_name(RMP_REJ_REASONS), "other");
	CHECK_STR(rmp_reject_reason_str(12), "unknown reason");
	CHECK_STR(rmp_reject_reason_str(0xffff), "unknown reason");
}

static int conn_req_eq(const struct rmp_conn_req *a,
		       const struct rmp_conn_req *b)
{
	return a->proto_min == b->proto_min && a->proto_max == b->proto_max &&
	       a->flags == b->flags && !strcmp(a->name, b->name) &&
	       !strcmp(a->tenant, b->tenant);
}

/* Wire offsets of the connect request. */
#define REQ_NAME 8
#define REQ_TENANT 32

static void test_conn_req(void)
{
	static const uint8_t want[RMP_CONN_REQ_LEN] = {
		0x52, 0x4d, 0x50, 0x43, 0x03, 0x05, 0x34, 0x12,
		'c', 'l', 'i', 'e', 'n', 't', '-', '1',          /* name */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		'a', 'c', 'm', 'e', '.', 'B', '_', '9',          /* tenant */
		'-', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	uint8_t buf[RMP_CONN_REQ_LEN + 8];
	struct rmp_conn_req r, out;

	CHECK_EQ(sizeof(want), 56);
	memset(&r, 0, sizeof(r));
	r.proto_min = 3;
	r.proto_max = 5;
	r.flags = 0x1234;
	strcpy(r.name, "client-1");
	strcpy(r.tenant, "acme.B_9-");
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK(!memcmp(buf, want, sizeof(want)));
	CHECK_EQ(buf[REQ_TENANT], 'a');
	CHECK_EQ(buf[RMP_CONN_REQ_LEN - 1], 0);
	CHECK_EQ(buf[RMP_CONN_REQ_LEN], 0xaa);
	CHECK_EQ(rmp_conn_req_encode(buf, RMP_CONN_REQ_LEN, &r),
		 RMP_CONN_REQ_LEN);
	CHECK_EQ(rmp_conn_req_encode(buf, RMP_CONN_REQ_LEN - 1, &r),
		 -EMSGSIZE);
	CHECK_EQ(rmp_conn_req_encode(buf, 48, &r), -EMSGSIZE);
	CHECK_EQ(rmp_conn_req_encode(buf, 0, &r), -EMSGSIZE);

	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(want, sizeof(want), &out), 0);
	CHECK(conn_req_eq(&r, &out));
	CHECK_STR(out.name, "client-1");
	CHECK_STR(out.tenant, "acme.B_9-");
	CHECK_EQ(out.proto_min, 3);
	CHECK_EQ(out.proto_max, 5);
	CHECK_EQ(out.flags, 0x1234);
	/* Transport padding after the fixed length is ignored. */
	memcpy(buf, want, sizeof(want));
	memset(buf + sizeof(want), 0x5a, 8);
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(buf), &out), 0);
	CHECK_STR(out.tenant, "acme.B_9-");
	/* Short: the protocol 3 range, but not all 56 bytes. */
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(want, sizeof(want) - 1, &out), -EBADMSG);
	CHECK_EQ(out.proto_min, 0);
	CHECK_STR(out.name, "");
	CHECK_STR(out.tenant, "");
	CHECK_EQ(rmp_conn_req_decode(want, 48, &out), -EBADMSG);
	CHECK_EQ(rmp_conn_req_decode(want, 8, &out), -EBADMSG);
	CHECK_EQ(rmp_conn_req_decode(want, 7, &out), -EBADMSG);
	CHECK_EQ(rmp_conn_req_decode(want, 0, &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[3] = 0x31;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);

	/* A 24-byte name and tenant have no NUL on the wire but one after
	 * decode. */
	memset(&r, 0, sizeof(r));
	r.proto_min = r.proto_max = RMP_PROTO_VERSION;
	memset(r.name, '~', RMP_NAME_MAX);
	r.name[0] = ' ';
	memset(r.tenant, 'z', RMP_TENANT_NAME_MAX);
	r.tenant[0] = '0';
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(buf[REQ_NAME + RMP_NAME_MAX - 1], '~');
	CHECK_EQ(buf[REQ_TENANT], '0');
	CHECK_EQ(buf[REQ_TENANT + RMP_TENANT_NAME_MAX - 1], 'z');
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(buf, RMP_CONN_REQ_LEN, &out), 0);
	CHECK_EQ(out.name[RMP_NAME_MAX], '\0');
	CHECK_EQ(out.tenant[RMP_TENANT_NAME_MAX], '\0');
	CHECK_EQ(strlen(out.tenant), RMP_TENANT_NAME_MAX);
	CHECK(conn_req_eq(&r, &out));

	/* Empty name and tenant (an anonymous client). */
	memset(r.name, 0, sizeof(r.name));
	memset(r.tenant, 0, sizeof(r.tenant));
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(buf[REQ_TENANT], 0);
	CHECK_EQ(buf[RMP_CONN_REQ_LEN - 1], 0);
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(buf, RMP_CONN_REQ_LEN, &out), 0);
	CHECK_STR(out.name, "");
	CHECK_STR(out.tenant, "");

	/* Bad name bytes. */
	memcpy(buf, want, sizeof(want));
	buf[9] = 0x1f;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	buf[9] = 0x7f;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	buf[9] = 0x80;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	buf[9] = '\n';
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	/* Garbage after the terminating NUL. */
	memcpy(buf, want, sizeof(want));
	buf[REQ_NAME + RMP_NAME_MAX - 1] = 'x';
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[10] = 0;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	/* A leading NUL with text behind it. */
	memcpy(buf, want, sizeof(want));
	buf[REQ_NAME] = 0;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);

	/* Tenant bytes outside [A-Za-z0-9_.-], even printable ones. */
	{
		static const uint8_t bad[] = { ' ', '/', ':', '@', '[', '`',
					       '{', '~', '+', '*', 0x7f,
					       0x80, 0xff, 0x01, '\n' };
		size_t i, rejected = 0;

		for (i = 0; i < sizeof(bad); i++) {
			memcpy(buf, want, sizeof(want));
			buf[REQ_TENANT + 2] = bad[i];
			memset(&out, 0xff, sizeof(out));
			if (rmp_conn_req_decode(buf, sizeof(want), &out) ==
			    -EBADMSG && !out.tenant[0] && !out.name[0])
				rejected++;
			else
				printf("# tenant byte 0x%02x accepted\n",
				       bad[i]);
		}
		CHECK_EQ(rejected, sizeof(bad));
	}
	/* Non-NUL after the tenant's NUL padding. */
	memcpy(buf, want, sizeof(want));
	buf[RMP_CONN_REQ_LEN - 1] = 'x';
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[REQ_TENANT + 10] = 'x'; /* "acme.B_9-" NUL 'x' */
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[REQ_TENANT] = 0; /* empty tenant with text behind */
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	/* Flags are carried as they are. */
	memcpy(buf, want, sizeof(want));
	buf[6] = 0xff;
	buf[7] = 0xff;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), 0);
	CHECK_EQ(out.flags, 0xffff);

	/* The encoder refuses names and tenants the decoder would refuse. */
	memset(&r, 0, sizeof(r));
	r.proto_min = r.proto_max = RMP_PROTO_VERSION;
	strcpy(r.name, "tab\there");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	memset(r.name, 'a', sizeof(r.name));
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	strcpy(r.name, "ok");
	strcpy(r.tenant, "bad tenant");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	strcpy(r.tenant, "a/b");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	strcpy(r.tenant, "caf\xc3\xa9");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	strcpy(r.tenant, "x:y");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	memset(r.tenant, 'a', sizeof(r.tenant)); /* 25 bytes, no NUL */
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	strcpy(r.tenant, "A-z_0.9");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(rmp_conn_req_decode(buf, RMP_CONN_REQ_LEN, &out), 0);
	CHECK_STR(out.tenant, "A-z_0.9");
	CHECK_STR(out.name, "ok");
}

/*
 * The version range is checked right after the magic: an old client gets
 * -EPROTONOSUPPORT (and so a "protocol" reject naming the range), not
 * -EBADMSG for its different layout.
 */
static void test_conn_req_version(void)
{
	/* A protocol 2 request: 48 bytes, a 16-byte credential at 32. */
	static const uint8_t v2[48] = {
		0x52, 0x4d, 0x50, 0x43, 0x02, 0x02, 0x00, 0x00,
		'o', 'l', 'd', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
		0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
	};
	uint8_t buf[RMP_CONN_REQ_LEN];
	struct rmp_conn_req r, out;
	uint8_t *copy;

	/* Exact-size heap copy: nothing past 48 bytes may be read. */
	copy = malloc(sizeof(v2));
	if (!copy)
		abort();
	memcpy(copy, v2, sizeof(v2));
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(copy, sizeof(v2), &out), -EPROTONOSUPPORT);
	CHECK_EQ(out.proto_min, 2);
	CHECK_EQ(out.proto_max, 2);
	CHECK_STR(out.name, "");
	CHECK_STR(out.tenant, "");
	free(copy);
	/* Even 8 bytes are enough to tell the version range. */
	CHECK_EQ(rmp_conn_req_decode(v2, 8, &out), -EPROTONOSUPPORT);
	CHECK_EQ(out.proto_max, 2);
	/* The version is checked before the name: bad bytes don't matter. */
	memcpy(buf, v2, sizeof(v2));
	buf[9] = 0x01;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EPROTONOSUPPORT);
	/* But the magic comes first. */
	buf[0] = 0;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EBADMSG);
	CHECK_EQ(out.proto_min, 0);

	/* A range 1..2, a range above 4, an inverted one. */
	memcpy(buf, v2, sizeof(v2));
	buf[4] = 1;
	buf[5] = 2;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EPROTONOSUPPORT);
	CHECK_EQ(out.proto_min, 1);
	CHECK_EQ(out.proto_max, 2);
	buf[4] = 6;
	buf[5] = 9;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EPROTONOSUPPORT);
	CHECK_EQ(out.proto_min, 6);
	CHECK_EQ(out.proto_max, 9);
	buf[4] = 5;
	buf[5] = 4;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EPROTONOSUPPORT);
	CHECK_EQ(out.proto_min, 5);
	CHECK_EQ(out.proto_max, 4);
	/* Protocol 4 only: its server proved nothing. */
	buf[4] = 4;
	buf[5] = 4;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EPROTONOSUPPORT);
	/* A range that includes 5 but a protocol 2 length: bad request. */
	buf[4] = 2;
	buf[5] = 5;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(v2), &out), -EBADMSG);
	CHECK_EQ(out.proto_min, 0);

	/* Ranges that include 5 decode; the encoder sends any range. */
	memset(&r, 0, sizeof(r));
	r.proto_min = 1;
	r.proto_max = 5;
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(buf[4], 1);
	CHECK_EQ(buf[5], 5);
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(buf), &out), 0);
	r.proto_min = 5;
	r.proto_max = 255;
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(buf), &out), 0);
	CHECK_EQ(out.proto_max, 255);
	r.proto_min = 2;
	r.proto_max = 2;
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(buf), &out), -EPROTONOSUPPORT);
	/* A protocol 3 client (its proof names no server) is refused. */
	r.proto_min = 3;
	r.proto_max = 3;
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(buf), &out), -EPROTONOSUPPORT);
	CHECK_EQ(out.proto_max, 3);
}

static void test_conn_rep(void)
{
	uint8_t want[RMP_CONN_REP_LEN] = {
		0x52, 0x4d, 0x50, 0x43, 0x03, 0x02, 0x00, 0x00,
		0x40, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	};
	uint8_t buf[RMP_CONN_REP_LEN + 4], *copy;
	struct rmp_conn_rep r, out;
	int i;

	CHECK_EQ(sizeof(want), 48);
	memset(&r, 0, sizeof(r));
	r.version = 3;
	r.keys_mode = RMP_KEYS_REGION;
	r.credits = 64;
	r.max_msg = RMP_MSG_MAX;
	for (i = 0; i < RMP_CONN_NONCE_LEN; i++) {
		r.nonce[i] = (uint8_t)(0x11 * i + 7);
		want[16 + i] = (uint8_t)(0x11 * i + 7);
	}
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(rmp_conn_rep_encode(buf, sizeof(buf), &r), RMP_CONN_REP_LEN);
	CHECK(!memcmp(buf, want, sizeof(want)));
	CHECK_EQ(buf[16], 7);
	CHECK_EQ(buf[47], (uint8_t)(0x11 * 31 + 7));
	CHECK_EQ(buf[RMP_CONN_REP_LEN], 0xaa);
	CHECK_EQ(rmp_conn_rep_encode(buf, RMP_CONN_REP_LEN - 1, &r),
		 -EMSGSIZE);
	CHECK_EQ(rmp_conn_rep_encode(buf, 16, &r), -EMSGSIZE);

	copy = malloc(sizeof(want));
	if (!copy)
		abort();
	memcpy(copy, want, sizeof(want));
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_rep_decode(copy, sizeof(want), &out), 0);
	free(copy);
	CHECK_EQ(out.version, 3);
	CHECK_EQ(out.keys_mode, RMP_KEYS_REGION);
	CHECK_EQ(out.credits, 64);
	CHECK_EQ(out.max_msg, RMP_MSG_MAX);
	CHECK(!memcmp(out.nonce, r.nonce, RMP_CONN_NONCE_LEN));
	memcpy(buf, want, sizeof(want));
	CHECK_EQ(rmp_conn_rep_decode(buf, sizeof(buf), &out), 0);
	/* Short, down to the 16 bytes protocol 2 sent: no nonce, no deal. */
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_rep_decode(want, sizeof(want) - 1, &out), -EBADMSG);
	CHECK_EQ(out.credits, 0);
	CHECK_EQ(out.nonce[0], 0);
	CHECK_EQ(rmp_conn_rep_decode(want, 16, &out), -EBADMSG);
	CHECK_EQ(rmp_conn_rep_decode(want, 0, &out), -EBADMSG);
	buf[0] = 0;
	CHECK_EQ(rmp_conn_rep_decode(buf, sizeof(want), &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[7] = 1;
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_rep_decode(buf, sizeof(want), &out), -EBADMSG);
	CHECK_EQ(out.nonce[5], 0);
	/* Every nonce byte is carried: flip each one. */
	for (i = 0; i < RMP_CONN_NONCE_LEN; i++) {
		memcpy(buf, want, sizeof(want));
		buf[16 + i] ^= 0x80;
		if (rmp_conn_rep_decode(buf, sizeof(want), &out) ||
		    out.nonce[i] != (uint8_t)(r.nonce[i] ^ 0x80))
			break;
	}
	CHECK_EQ(i, RMP_CONN_NONCE_LEN);
}

static void test_conn_rej(void)
{
	static const uint8_t want[RMP_CONN_REJ_LEN] = {
		0x52, 0x4d, 0x50, 0x43, 0x02, 0x01, 0x03, 0x05,
	};
	uint8_t buf[RMP_CONN_REJ_LEN + 4];
	struct rmp_conn_rej r, out;

	memset(&r, 0, sizeof(r));
	r.reason = 0x0102;
	r.proto_min = 3;
	r.proto_max = 5;
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(rmp_conn_rej_encode(buf, sizeof(buf), &r), RMP_CONN_REJ_LEN);
	CHECK(!memcmp(buf, want, sizeof(want)));
	CHECK_EQ(buf[RMP_CONN_REJ_LEN], 0xaa);
	CHECK_EQ(rmp_conn_rej_encode(buf, RMP_CONN_REJ_LEN - 1, &r),
		 -EMSGSIZE);

	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_rej_decode(want, sizeof(want), &out), 0);
	CHECK_EQ(out.reason, 0x0102);
	CHECK_EQ(out.proto_min, 3);
	CHECK_EQ(out.proto_max, 5);
	memcpy(buf, want, sizeof(want));
	CHECK_EQ(rmp_conn_rej_decode(buf, sizeof(buf), &out), 0);
	CHECK_EQ(rmp_conn_rej_decode(want, sizeof(want) - 1, &out), -EBADMSG);
	buf[1] = 0;
	CHECK_EQ(rmp_conn_rej_decode(buf, sizeof(want), &out), -EBADMSG);

	r.reason = RMP_REJ_DRAINING;
	CHECK_EQ(rmp_conn_rej_encode(buf, sizeof(buf), &r), RMP_CONN_REJ_LEN);
	CHECK_EQ(rmp_conn_rej_decode(buf, RMP_CONN_REJ_LEN, &out), 0);
	CHECK_STR(rmp_reject_reason_str(out.reason), "server draining");

	/* A protocol reject for an old client names the server's range. */
	r.reason = RMP_REJ_PROTO;
	r.proto_min = RMP_PROTO_MIN;
	r.proto_max = RMP_PROTO_MAX;
	CHECK_EQ(rmp_conn_rej_encode(buf, sizeof(buf), &r), RMP_CONN_REJ_LEN);
	CHECK_EQ(buf[4], RMP_REJ_PROTO);
	CHECK_EQ(buf[6], 5);
	CHECK_EQ(buf[7], 5);
	/* The new reasons survive the trip. */
	r.reason = RMP_REJ_NETWORK;
	CHECK_EQ(rmp_conn_rej_encode(buf, sizeof(buf), &r), RMP_CONN_REJ_LEN);
	CHECK_EQ(buf[4], 11);
	CHECK_EQ(buf[5], 0);
	CHECK_EQ(rmp_conn_rej_decode(buf, RMP_CONN_REJ_LEN, &out), 0);
	CHECK_EQ(out.reason, RMP_REJ_NETWORK);
	r.reason = RMP_REJ_ANONYMOUS;
	CHECK_EQ(rmp_conn_rej_encode(buf, sizeof(buf), &r), RMP_CONN_REJ_LEN);
	CHECK_EQ(rmp_conn_rej_decode(buf, RMP_CONN_REJ_LEN, &out), 0);
	CHECK_STR(rmp_reject_reason_str(out.reason),
		  "anonymous access is disabled: name a tenant and its key");
}

/* An error reply to a request too broken to name an opcode uses 0. */
static void test_error_reply_without_opcode(void)
{
	struct rmp_msg m = { 0 }, d;
	uint8_t buf[RMP_MSG_MAX];
	int n;

	m.hdr.opcode = 0;
	m.hdr.flags = RMP_MSG_F_REPLY;
	m.hdr.status = -EBADMSG;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(n, RMP_MSG_HDR_LEN);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &d), 0);
	CHECK_EQ(d.hdr.opcode, 0);
	CHECK_EQ(d.hdr.status, -EBADMSG);
	/* A success reply still needs a known opcode. */
	m.hdr.status = 0;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EOPNOTSUPP);
	/* And so does a request. */
	m.hdr.flags = 0;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), -EOPNOTSUPP);
}

int main(void)
{
	test_payload_len();
	test_alloc();
	test_renew();
	test_free();
	test_attach();
	test_lease_holders();
	test_stat();
	test_auth();
	test_detail();
	test_flags();
	test_encode_errors();
	test_decode_errors();
	test_names();
	test_conn_req();
	test_conn_req_version();
	test_conn_rep();
	test_conn_rej();
	test_error_reply_without_opcode();
	return check_done();
}

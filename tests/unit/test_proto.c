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
	0x52, 0x4d, 0x50, 0x31, 0x02, (op), (fl), 0x00, (plen), 0x00, 0x00,  \
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
}

static void fill_stat(struct rmp_stat_rep *s)
{
	s->pool_bytes = 0x0000000400000000ull;
	s->free_bytes = 0x0000000300000000ull;
	s->largest_free = 0x0000000200000000ull;
	s->leases = 0x11;
	s->client_bytes = 0x400000;
	s->client_leases = 2;
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
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ALLOC, 1, 0), 56);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_RENEW, 0, 0), 16);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_RENEW, 1, 0), 8);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_FREE, 0, 0), 8);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_FREE, 1, 0), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ATTACH, 0, 0), 16);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ATTACH, 1, 0), 56);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_STAT, 0, 0), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_STAT, 1, 0), 112);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ALLOC, 1, -ENOMEM), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_STAT, 1, -EPERM), 0);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_ATTACH, 1, INT32_MIN), 0);
	CHECK_EQ(rmp_msg_payload_len(0, 0, 0), -EOPNOTSUPP);
	CHECK_EQ(rmp_msg_payload_len(RMP_OP_MAX + 1, 1, 0), -EOPNOTSUPP);
	CHECK_EQ(rmp_msg_payload_len(0x101, 0, 0), -EOPNOTSUPP);
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
		HDR(0x01, 0x01, 56, 0, 0, 0, 0),
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, /* id */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1, /* secret */
		0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, /* addr */
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, /* length */
		0x30, 0x75, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ttl_ms */
		0xef, 0xbe, 0xad, 0xde,                         /* rkey */
		0x07, 0x00, 0x00, 0x00,                         /* access */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
		0x00, 0x00, 0x00, 0x00,                         /* reserved */
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
		HDR(0x02, 0x00, 16, 0, 0, 0, 0),
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* id */
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
	struct rmp_msg m;

	msg_init(&m, RMP_OP_RENEW, 0);
	m.u.renew.id = 0x0102030405060708ull;
	m.u.renew.ttl_s = 60;
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_RENEW, 1);
	m.u.renew_rep.ttl_ms = 100000;
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_RENEW, 1);
	m.hdr.status = -ENOENT;
	check_wire(&m, err, sizeof(err));
}

static void test_free(void)
{
	static const uint8_t req[] = {
		HDR(0x03, 0x00, 8, 0, 0, 0, 0),
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* id */
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
		HDR(0x04, 0x00, 16, 0, 0, 0, 0),
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, /* id */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1, /* secret */
	};
	static const uint8_t rep[] = {
		HDR(0x04, 0x01, 56, 0, 0, 0, 0),
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, /* id */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1, /* secret */
		0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, /* addr */
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, /* length */
		0x30, 0x75, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ttl_ms */
		0xef, 0xbe, 0xad, 0xde,                         /* rkey */
		0x07, 0x00, 0x00, 0x00,                         /* access */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
		0x00, 0x00, 0x00, 0x00,                         /* reserved */
	};
	static const uint8_t err[] = {
		HDR(0x04, 0x01, 0, 0xf3, 0xff, 0xff, 0xff),
	};
	struct rmp_msg m;

	msg_init(&m, RMP_OP_ATTACH, 0);
	m.u.attach.id = 0xa1a2a3a4a5a6a7a8ull;
	m.u.attach.secret = 0xb1b2b3b4b5b6b7b8ull;
	check_wire(&m, req, sizeof(req));

	msg_init(&m, RMP_OP_ATTACH, 1);
	fill_lease(&m.u.lease);
	check_wire(&m, rep, sizeof(rep));

	msg_init(&m, RMP_OP_ATTACH, 1);
	m.hdr.status = -EACCES;
	check_wire(&m, err, sizeof(err));
}

static void test_stat(void)
{
	static const uint8_t req[] = {
		HDR(0x05, 0x00, 0, 0, 0, 0, 0),
	};
	static const uint8_t rep[] = {
		HDR(0x05, 0x01, 112, 0, 0, 0, 0),
		0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, /* pool */
		0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* free */
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* largest */
		0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* leases */
		0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, /* client_b. */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* client_l. */
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
	};
	static const uint8_t err[] = {
		HDR(0x05, 0x01, 0, 0x00, 0x00, 0x00, 0x80),
	};
	struct rmp_msg m, out;
	uint8_t buf[RMP_MSG_MAX];
	int n;

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
	CHECK_EQ(n, RMP_MSG_HDR_LEN + 112);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(out.u.stat.numa_node, INT32_MIN);
	m.u.stat.numa_node = INT32_MAX;
	n = rmp_msg_encode(buf, sizeof(buf), &m);
	CHECK_EQ(rmp_msg_decode(buf, (size_t)n, &out), 0);
	CHECK_EQ(out.u.stat.numa_node, INT32_MAX);
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
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 16);
	CHECK(!buf[36] && !buf[37] && !buf[38] && !buf[39]);
	msg_init(&m, RMP_OP_ATTACH, 1);
	m.u.lease.reserved = 0xffffffff;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 56);
	CHECK(!buf[76] && !buf[77] && !buf[78] && !buf[79]);
	msg_init(&m, RMP_OP_STAT, 1);
	m.u.stat.reserved = 0x100;
	CHECK_EQ(rmp_msg_encode(buf, sizeof(buf), &m), RMP_MSG_HDR_LEN + 112);
	CHECK(!buf[116] && !buf[117] && !buf[118] && !buf[119]);

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
	buf[4] = 3;
	memset(&m, 0xff, sizeof(m));
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EPROTONOSUPPORT);
	CHECK_EQ(m.hdr.req_id, REQ_ID);
	CHECK_EQ(m.hdr.version, 3);
	/* Protocol 1 (STAT was 96 bytes then) is no longer spoken. */
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
	n = good(buf, RMP_OP_ALLOC, 1);
	buf[n - 2] = 1;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	n = good(buf, RMP_OP_ATTACH, 1);
	buf[n - 3] = 1;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	n = good(buf, RMP_OP_STAT, 1);
	buf[n - 17] = 0xff;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), -EBADMSG);
	/* The bytes around reserved are real fields. */
	n = good(buf, RMP_OP_STAT, 1);
	buf[n - 21] = 0xff;
	buf[n - 16] = 0xff;
	buf[n - 1] = 0xff;
	CHECK_EQ(rmp_msg_decode(buf, n, &m), 0);

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
	CHECK_STR(rmp_opcode_name(0), "?");
	CHECK_STR(rmp_opcode_name(6), "?");
	CHECK_STR(rmp_opcode_name(~0u), "?");

	CHECK_STR(rmp_reject_reason_str(RMP_REJ_BAD_REQUEST), "bad request");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_PROTO),
		  "no common protocol version");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_UNKNOWN_CLIENT),
		  "unknown client");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_FULL), "server full");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_DRAINING), "server draining");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_INTERNAL),
		  "server internal error");
	CHECK_STR(rmp_reject_reason_str(0), "unknown reason");
	CHECK_STR(rmp_reject_reason_str(8), "unknown reason");
	CHECK_STR(rmp_reject_reason_str(RMP_REJ_COOLDOWN),
		  "refused for a while: too many access errors from this "
		  "address");
	CHECK_STR(rmp_reject_reason_str(0xffff), "unknown reason");
}

static int conn_req_eq(const struct rmp_conn_req *a,
		       const struct rmp_conn_req *b)
{
	return a->proto_min == b->proto_min && a->proto_max == b->proto_max &&
	       a->flags == b->flags && !strcmp(a->name, b->name) &&
	       !memcmp(a->cred, b->cred, sizeof(a->cred));
}

static void test_conn_req(void)
{
	static const uint8_t want[RMP_CONN_REQ_LEN] = {
		0x52, 0x4d, 0x50, 0x43, 0x01, 0x03, 0x34, 0x12,
		'c', 'l', 'i', 'e', 'n', 't', '-', '1',
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
		0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
	};
	uint8_t buf[RMP_CONN_REQ_LEN + 8];
	struct rmp_conn_req r, out;
	int i;

	memset(&r, 0, sizeof(r));
	r.proto_min = 1;
	r.proto_max = 3;
	r.flags = 0x1234;
	strcpy(r.name, "client-1");
	for (i = 0; i < RMP_CRED_LEN; i++)
		r.cred[i] = (uint8_t)(i * 0x11);
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK(!memcmp(buf, want, sizeof(want)));
	CHECK_EQ(buf[RMP_CONN_REQ_LEN], 0xaa);
	CHECK_EQ(rmp_conn_req_encode(buf, RMP_CONN_REQ_LEN - 1, &r),
		 -EMSGSIZE);
	CHECK_EQ(rmp_conn_req_encode(buf, 0, &r), -EMSGSIZE);

	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(want, sizeof(want), &out), 0);
	CHECK(conn_req_eq(&r, &out));
	CHECK_STR(out.name, "client-1");
	/* Transport padding after the fixed length is ignored. */
	memcpy(buf, want, sizeof(want));
	memset(buf + sizeof(want), 0x5a, 8);
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(buf), &out), 0);
	CHECK_EQ(rmp_conn_req_decode(want, sizeof(want) - 1, &out), -EBADMSG);
	CHECK_EQ(rmp_conn_req_decode(want, 0, &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[3] = 0x31;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);

	/* A 24-byte name has no NUL on the wire but one after decode. */
	memset(r.name, 0, sizeof(r.name));
	memset(r.name, '~', RMP_NAME_MAX);
	r.name[0] = ' ';
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(buf[8 + RMP_NAME_MAX - 1], '~');
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_req_decode(buf, RMP_CONN_REQ_LEN, &out), 0);
	CHECK_EQ(out.name[RMP_NAME_MAX], '\0');
	CHECK(conn_req_eq(&r, &out));

	/* Empty name. */
	memset(r.name, 0, sizeof(r.name));
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), RMP_CONN_REQ_LEN);
	CHECK_EQ(rmp_conn_req_decode(buf, RMP_CONN_REQ_LEN, &out), 0);
	CHECK_STR(out.name, "");

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
	buf[8 + RMP_NAME_MAX - 1] = 'x';
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[10] = 0;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);
	/* A leading NUL with text behind it. */
	memcpy(buf, want, sizeof(want));
	buf[8] = 0;
	CHECK_EQ(rmp_conn_req_decode(buf, sizeof(want), &out), -EBADMSG);

	/* The encoder refuses names the decoder would refuse. */
	strcpy(r.name, "tab\there");
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
	memset(r.name, 'a', sizeof(r.name));
	CHECK_EQ(rmp_conn_req_encode(buf, sizeof(buf), &r), -EINVAL);
}

static void test_conn_rep(void)
{
	static const uint8_t want[RMP_CONN_REP_LEN] = {
		0x52, 0x4d, 0x50, 0x43, 0x01, 0x02, 0x00, 0x00,
		0x40, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	};
	uint8_t buf[RMP_CONN_REP_LEN + 4];
	struct rmp_conn_rep r, out;

	memset(&r, 0, sizeof(r));
	r.version = 1;
	r.keys_mode = RMP_KEYS_REGION;
	r.credits = 64;
	r.max_msg = RMP_MSG_MAX;
	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(rmp_conn_rep_encode(buf, sizeof(buf), &r), RMP_CONN_REP_LEN);
	CHECK(!memcmp(buf, want, sizeof(want)));
	CHECK_EQ(buf[RMP_CONN_REP_LEN], 0xaa);
	CHECK_EQ(rmp_conn_rep_encode(buf, RMP_CONN_REP_LEN - 1, &r),
		 -EMSGSIZE);

	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(rmp_conn_rep_decode(want, sizeof(want), &out), 0);
	CHECK_EQ(out.version, 1);
	CHECK_EQ(out.keys_mode, RMP_KEYS_REGION);
	CHECK_EQ(out.credits, 64);
	CHECK_EQ(out.max_msg, RMP_MSG_MAX);
	memcpy(buf, want, sizeof(want));
	CHECK_EQ(rmp_conn_rep_decode(buf, sizeof(buf), &out), 0);
	CHECK_EQ(rmp_conn_rep_decode(want, sizeof(want) - 1, &out), -EBADMSG);
	buf[0] = 0;
	CHECK_EQ(rmp_conn_rep_decode(buf, sizeof(want), &out), -EBADMSG);
	memcpy(buf, want, sizeof(want));
	buf[7] = 1;
	CHECK_EQ(rmp_conn_rep_decode(buf, sizeof(want), &out), -EBADMSG);
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
	test_stat();
	test_flags();
	test_encode_errors();
	test_decode_errors();
	test_names();
	test_conn_req();
	test_conn_rep();
	test_conn_rej();
	test_error_reply_without_opcode();
	return check_done();
}

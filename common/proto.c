/* SPDX-License-Identifier: MIT */
/* proto.c -- encode and decode of control messages and connect data. */
#include "proto.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/*
 * Little-endian field writers and readers. Each one moves the cursor past
 * the field so a payload reads in declaration order, like the struct.
 */
static uint8_t *put_le8(uint8_t *p, uint8_t v)
{
	p[0] = v;
	return p + 1;
}

static uint8_t *put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return p + 2;
}

static uint8_t *put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
	return p + 4;
}

static uint8_t *put_le64(uint8_t *p, uint64_t v)
{
	p = put_le32(p, (uint32_t)v);
	return put_le32(p, (uint32_t)(v >> 32));
}

static const uint8_t *get_le8(const uint8_t *p, uint8_t *v)
{
	*v = p[0];
	return p + 1;
}

static const uint8_t *get_le16(const uint8_t *p, uint16_t *v)
{
	*v = (uint16_t)(p[0] | (uint16_t)p[1] << 8);
	return p + 2;
}

static const uint8_t *get_le32(const uint8_t *p, uint32_t *v)
{
	*v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	     (uint32_t)p[3] << 24;
	return p + 4;
}

static const uint8_t *get_le64(const uint8_t *p, uint64_t *v)
{
	uint32_t lo, hi;

	p = get_le32(p, &lo);
	p = get_le32(p, &hi);
	*v = (uint64_t)hi << 32 | lo;
	return p;
}

/* Two's complement conversions spelled out, so no step is impl.-defined. */
static uint32_t s32_to_u32(int32_t v)
{
	return (uint32_t)v;
}

static int32_t u32_to_s32(uint32_t v)
{
	if (v <= INT32_MAX)
		return (int32_t)v;
	return (int32_t)(v - 0x80000000u) + INT32_MIN;
}

static uint8_t *put_s32(uint8_t *p, int32_t v)
{
	return put_le32(p, s32_to_u32(v));
}

static const uint8_t *get_s32(const uint8_t *p, int32_t *v)
{
	uint32_t u;

	p = get_le32(p, &u);
	*v = u32_to_s32(u);
	return p;
}

/* Payload sizes per opcode: request, successful reply. */
#define ALLOC_REQ_LEN 32
#define LEASE_DESC_LEN 64
#define RENEW_REQ_LEN 24
#define RENEW_REP_LEN 8
#define FREE_REQ_LEN 16
#define FREE_REP_LEN 0
#define ATTACH_REQ_LEN 32
#define STAT_REQ_LEN 0
#define STAT_REP_LEN 128
#define AUTH_REQ_LEN (RMP_AUTH_PROOF_LEN + RMP_AUTH_NONCE_LEN)
#define AUTH_REP_LEN RMP_AUTH_PROOF_LEN

int rmp_msg_payload_len(unsigned opcode, int is_reply, int32_t status)
{
	static const int req_len[RMP_OP_MAX + 1] = {
		[RMP_OP_ALLOC] = ALLOC_REQ_LEN,
		[RMP_OP_RENEW] = RENEW_REQ_LEN,
		[RMP_OP_FREE] = FREE_REQ_LEN,
		[RMP_OP_ATTACH] = ATTACH_REQ_LEN,
		[RMP_OP_STAT] = STAT_REQ_LEN,
		[RMP_OP_AUTH] = AUTH_REQ_LEN,
	};
	static const int rep_len[RMP_OP_MAX + 1] = {
		[RMP_OP_ALLOC] = LEASE_DESC_LEN,
		[RMP_OP_RENEW] = RENEW_REP_LEN,
		[RMP_OP_FREE] = FREE_REP_LEN,
		[RMP_OP_ATTACH] = LEASE_DESC_LEN,
		[RMP_OP_STAT] = STAT_REP_LEN,
		[RMP_OP_AUTH] = AUTH_REP_LEN,
	};

	/* Error replies carry no payload, whatever the opcode: the server
	 * must be able to answer a request it could not even parse (it
	 * echoes opcode 0 then). */
	if (is_reply && status < 0)
		return 0;
	if (opcode < RMP_OP_ALLOC || opcode > RMP_OP_MAX)
		return -EOPNOTSUPP;
	if (!is_reply)
		return req_len[opcode];
	return rep_len[opcode];
}

static uint8_t *put_lease_desc(uint8_t *p, const struct rmp_lease_desc *d)
{
	p = put_le64(p, d->id);
	p = put_le64(p, d->secret);
	p = put_le64(p, d->addr);
	p = put_le64(p, d->length);
	p = put_le64(p, d->ttl_ms);
	p = put_le32(p, d->rkey);
	p = put_le32(p, d->access);
	p = put_le32(p, d->flags);
	p = put_le32(p, d->holders);
	return put_le64(p, d->epoch);
}

static uint8_t *put_stat_rep(uint8_t *p, const struct rmp_stat_rep *s)
{
	p = put_le64(p, s->pool_bytes);
	p = put_le64(p, s->free_bytes);
	p = put_le64(p, s->largest_free);
	p = put_le64(p, s->leases);
	p = put_le64(p, s->tenant_bytes);
	p = put_le64(p, s->tenant_leases);
	p = put_le64(p, s->quota_bytes);
	p = put_le64(p, s->quota_leases);
	p = put_le64(p, s->hugepage_size);
	p = put_le32(p, s->ttl_min_s);
	p = put_le32(p, s->ttl_max_s);
	p = put_le32(p, s->ttl_default_s);
	p = put_s32(p, s->numa_node);
	p = put_le32(p, s->keys_mode);
	p = put_le32(p, 0);
	p = put_le64(p, s->quarantined_bytes);
	p = put_le64(p, s->zeroing_bytes);
	p = put_le32(p, s->tenant_connections);
	p = put_le32(p, s->quota_connections);
	return put_le64(p, s->keys);
}

/* Write the payload of a request or of a successful reply. */
static void put_payload(uint8_t *p, const struct rmp_msg *m, int is_reply)
{
	const struct rmp_alloc_req *a = &m->u.alloc;

	switch (m->hdr.opcode) {
	case RMP_OP_ALLOC:
		if (is_reply) {
			put_lease_desc(p, &m->u.lease);
			break;
		}
		p = put_le64(p, a->length);
		p = put_le64(p, a->alignment);
		p = put_le32(p, a->ttl_s);
		p = put_le32(p, a->access);
		p = put_le32(p, a->flags);
		put_le32(p, 0);
		break;
	case RMP_OP_RENEW:
		if (is_reply) {
			put_le64(p, m->u.renew_rep.ttl_ms);
			break;
		}
		p = put_le64(p, m->u.renew.id);
		p = put_le64(p, m->u.renew.secret);
		p = put_le32(p, m->u.renew.ttl_s);
		put_le32(p, 0);
		break;
	case RMP_OP_FREE:
		if (!is_reply) {
			p = put_le64(p, m->u.free.id);
			put_le64(p, m->u.free.secret);
		}
		break;
	case RMP_OP_ATTACH:
		if (is_reply) {
			put_lease_desc(p, &m->u.lease);
			break;
		}
		p = put_le64(p, m->u.attach.id);
		p = put_le64(p, m->u.attach.secret);
		p = put_le32(p, m->u.attach.access);
		p = put_le32(p, m->u.attach.flags);
		put_le64(p, m->u.attach.epoch);
		break;
	case RMP_OP_STAT:
		if (is_reply)
			put_stat_rep(p, &m->u.stat);
		break;
	case RMP_OP_AUTH:
		if (is_reply) {
			memcpy(p, m->u.auth_rep.server_proof,
			       RMP_AUTH_PROOF_LEN);
			break;
		}
		memcpy(p, m->u.auth.proof, RMP_AUTH_PROOF_LEN);
		memcpy(p + RMP_AUTH_PROOF_LEN, m->u.auth.client_nonce,
		       RMP_AUTH_NONCE_LEN);
		break;
	}
}

int rmp_msg_encode(void *buf, size_t cap, const struct rmp_msg *m)
{
	int is_reply = !!(m->hdr.flags & RMP_MSG_F_REPLY);
	uint8_t *p = buf;
	int plen;

	plen = rmp_msg_payload_len(m->hdr.opcode, is_reply, m->hdr.status);
	if (plen < 0)
		return plen;
	/* A request carries no status; the decoder would reject one. */
	if (m->hdr.status > 0 || (!is_reply && m->hdr.status != 0))
		return -EINVAL;
	if (cap < (size_t)RMP_MSG_HDR_LEN + (size_t)plen)
		return -EMSGSIZE;

	p = put_le32(p, RMP_MSG_MAGIC);
	p = put_le8(p, RMP_PROTO_VERSION);
	p = put_le8(p, m->hdr.opcode);
	p = put_le16(p, m->hdr.flags);
	p = put_le32(p, (uint32_t)plen);
	p = put_s32(p, m->hdr.status);
	p = put_le64(p, m->hdr.req_id);
	if (plen > 0)
		put_payload(p, m, is_reply);
	return RMP_MSG_HDR_LEN + plen;
}

static int get_lease_desc(const uint8_t *p, struct rmp_lease_desc *d)
{
	p = get_le64(p, &d->id);
	p = get_le64(p, &d->secret);
	p = get_le64(p, &d->addr);
	p = get_le64(p, &d->length);
	p = get_le64(p, &d->ttl_ms);
	p = get_le32(p, &d->rkey);
	p = get_le32(p, &d->access);
	p = get_le32(p, &d->flags);
	p = get_le32(p, &d->holders);
	get_le64(p, &d->epoch);
	return 0;
}

static int get_stat_rep(const uint8_t *p, struct rmp_stat_rep *s)
{
	p = get_le64(p, &s->pool_bytes);
	p = get_le64(p, &s->free_bytes);
	p = get_le64(p, &s->largest_free);
	p = get_le64(p, &s->leases);
	p = get_le64(p, &s->tenant_bytes);
	p = get_le64(p, &s->tenant_leases);
	p = get_le64(p, &s->quota_bytes);
	p = get_le64(p, &s->quota_leases);
	p = get_le64(p, &s->hugepage_size);
	p = get_le32(p, &s->ttl_min_s);
	p = get_le32(p, &s->ttl_max_s);
	p = get_le32(p, &s->ttl_default_s);
	p = get_s32(p, &s->numa_node);
	p = get_le32(p, &s->keys_mode);
	p = get_le32(p, &s->reserved);
	p = get_le64(p, &s->quarantined_bytes);
	p = get_le64(p, &s->zeroing_bytes);
	p = get_le32(p, &s->tenant_connections);
	p = get_le32(p, &s->quota_connections);
	get_le64(p, &s->keys);
	return s->reserved ? -EBADMSG : 0;
}

/*
 * Read the payload of a request or of a successful reply; the caller has
 * checked that exactly the opcode's fixed size is present.
 */
static int get_payload(const uint8_t *p, unsigned opcode, int is_reply,
		       struct rmp_msg *m)
{
	struct rmp_alloc_req *a = &m->u.alloc;

	switch (opcode) {
	case RMP_OP_ALLOC:
		if (is_reply)
			return get_lease_desc(p, &m->u.lease);
		p = get_le64(p, &a->length);
		p = get_le64(p, &a->alignment);
		p = get_le32(p, &a->ttl_s);
		p = get_le32(p, &a->access);
		p = get_le32(p, &a->flags);
		get_le32(p, &a->reserved);
		return a->reserved ? -EBADMSG : 0;
	case RMP_OP_RENEW:
		if (is_reply) {
			get_le64(p, &m->u.renew_rep.ttl_ms);
			return 0;
		}
		p = get_le64(p, &m->u.renew.id);
		p = get_le64(p, &m->u.renew.secret);
		p = get_le32(p, &m->u.renew.ttl_s);
		get_le32(p, &m->u.renew.reserved);
		return m->u.renew.reserved ? -EBADMSG : 0;
	case RMP_OP_FREE:
		if (!is_reply) {
			p = get_le64(p, &m->u.free.id);
			get_le64(p, &m->u.free.secret);
		}
		return 0;
	case RMP_OP_ATTACH:
		if (is_reply)
			return get_lease_desc(p, &m->u.lease);
		p = get_le64(p, &m->u.attach.id);
		p = get_le64(p, &m->u.attach.secret);
		p = get_le32(p, &m->u.attach.access);
		p = get_le32(p, &m->u.attach.flags);
		get_le64(p, &m->u.attach.epoch);
		return 0;
	case RMP_OP_STAT:
		if (is_reply)
			return get_stat_rep(p, &m->u.stat);
		return 0;
	case RMP_OP_AUTH:
		if (is_reply) {
			memcpy(m->u.auth_rep.server_proof, p,
			       RMP_AUTH_PROOF_LEN);
			return 0;
		}
		memcpy(m->u.auth.proof, p, RMP_AUTH_PROOF_LEN);
		memcpy(m->u.auth.client_nonce, p + RMP_AUTH_PROOF_LEN,
		       RMP_AUTH_NONCE_LEN);
		return 0;
	}
	return -EOPNOTSUPP;
}

int rmp_msg_decode(const void *buf, size_t len, struct rmp_msg *m)
{
	const uint8_t *p = buf;
	struct rmp_msg_hdr h;
	int is_reply, plen, err;

	memset(m, 0, sizeof(*m));
	if (len < RMP_MSG_HDR_LEN)
		return -EBADMSG;
	p = get_le32(p, &h.magic);
	if (h.magic != RMP_MSG_MAGIC)
		return -EBADMSG;
	p = get_le8(p, &h.version);
	p = get_le8(p, &h.opcode);
	p = get_le16(p, &h.flags);
	p = get_le32(p, &h.payload_len);
	p = get_s32(p, &h.status);
	p = get_le64(p, &h.req_id);
	m->hdr = h;

	if (h.version != RMP_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	is_reply = !!(h.flags & RMP_MSG_F_REPLY);
	plen = rmp_msg_payload_len(h.opcode, is_reply, h.status);
	if (plen < 0)
		return plen;
	if ((size_t)h.payload_len != len - RMP_MSG_HDR_LEN ||
	    h.payload_len != (uint32_t)plen)
		return -EBADMSG;
	if (h.status > 0 || (!is_reply && h.status != 0))
		return -EBADMSG;
	if (plen > 0) {
		err = get_payload(p, h.opcode, is_reply, m);
		if (err) {
			/* Keep the header for the caller, drop the payload. */
			memset(&m->u, 0, sizeof(m->u));
			return err;
		}
	}
	return 0;
}

const char *rmp_opcode_name(unsigned opcode)
{
	switch (opcode) {
	case RMP_OP_ALLOC:
		return "ALLOC";
	case RMP_OP_RENEW:
		return "RENEW";
	case RMP_OP_FREE:
		return "FREE";
	case RMP_OP_ATTACH:
		return "ATTACH";
	case RMP_OP_STAT:
		return "STAT";
	case RMP_OP_AUTH:
		return "AUTH";
	}
	return "?";
}

const char *rmp_detail_str(unsigned detail)
{
	switch (detail) {
	case RMP_DETAIL_BYTES:
		return "the tenant's byte limit";
	case RMP_DETAIL_LEASES:
		return "the tenant's lease limit";
	case RMP_DETAIL_KEYS:
		return "the keys-per-lease limit";
	case RMP_DETAIL_BAD_PROOF:
		return "the key does not match the tenant's";
	case RMP_DETAIL_REPLAYED:
		return "the proof was replayed from another connection";
	case RMP_DETAIL_NOT_AUTHED:
		return "a request before authentication";
	case RMP_DETAIL_TENANT:
		return "the lease belongs to another tenant";
	case RMP_DETAIL_SERVER_LEASES:
		return "the server's lease limit ([pool] max_leases)";
	case RMP_DETAIL_TENANT_CONNECTIONS:
		return "the tenant's connection limit";
	case RMP_DETAIL_PEER_CONNECTIONS:
		return "the connection limit of this address";
	case RMP_DETAIL_NETWORK:
		return "the tenant may not connect from this address";
	case RMP_DETAIL_EPOCH:
		return "the lease's group has a newer epoch than the record "
		       "it was attached by";
	case RMP_DETAIL_RETURNING:
		return "room that ended leases are returning (being revoked "
		       "and zeroed)";
	}
	return "";
}

static int name_char_ok(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e;
}

int rmp_tenant_char_ok(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '-';
}

/* put_padded -- s (n bytes) then NULs up to width. */
static uint8_t *put_padded(uint8_t *p, const char *s, size_t n, size_t width)
{
	for (size_t i = 0; i < width; i++)
		p = put_le8(p, i < n ? (uint8_t)s[i] : 0);
	return p;
}

int rmp_conn_req_encode(void *buf, size_t cap, const struct rmp_conn_req *r)
{
	uint8_t *p = buf;
	size_t n, t, i;

	/* Refuse a name or tenant the decoder would reject, rather than
	 * send it. */
	n = strnlen(r->name, sizeof(r->name));
	t = strnlen(r->tenant, sizeof(r->tenant));
	if (n > RMP_NAME_MAX || t > RMP_TENANT_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!name_char_ok((unsigned char)r->name[i]))
			return -EINVAL;
	for (i = 0; i < t; i++)
		if (!rmp_tenant_char_ok((unsigned char)r->tenant[i]))
			return -EINVAL;
	if (cap < RMP_CONN_REQ_LEN)
		return -EMSGSIZE;

	p = put_le32(p, RMP_CONN_MAGIC);
	p = put_le8(p, r->proto_min);
	p = put_le8(p, r->proto_max);
	p = put_le16(p, r->flags);
	p = put_padded(p, r->name, n, RMP_NAME_MAX);
	put_padded(p, r->tenant, t, RMP_TENANT_NAME_MAX);
	return RMP_CONN_REQ_LEN;
}

/*
 * get_padded -- a NUL-padded text field of width bytes into out (width+1):
 * up to the first NUL every byte must pass ok(), after it only NULs.
 */
static int get_padded(const uint8_t *p, size_t width, int (*ok)(unsigned char),
		      char *out)
{
	size_t n, i;

	for (n = 0; n < width && p[n]; n++)
		if (!ok(p[n]))
			return -EBADMSG;
	for (i = n; i < width; i++)
		if (p[i])
			return -EBADMSG;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}


int rmp_conn_req_decode(const void *buf, size_t len, struct rmp_conn_req *r)
{
	const uint8_t *p = buf;
	uint32_t magic;

	memset(r, 0, sizeof(*r));
	if (len < 8)
		return -EBADMSG;
	p = get_le32(p, &magic);
	if (magic != RMP_CONN_MAGIC)
		return -EBADMSG;
	p = get_le8(p, &r->proto_min);
	p = get_le8(p, &r->proto_max);
	/* The version range first: what follows changed between versions. */
	if (r->proto_min > RMP_PROTO_VERSION || r->proto_max < RMP_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (len < RMP_CONN_REQ_LEN)
		goto bad;
	p = get_le16(p, &r->flags);
	if (get_padded(p, RMP_NAME_MAX, name_char_ok, r->name))
		goto bad;
	p += RMP_NAME_MAX;
	if (get_padded(p, RMP_TENANT_NAME_MAX, rmp_tenant_char_ok, r->tenant))
		goto bad;
	return 0;
bad:
	memset(r, 0, sizeof(*r));
	return -EBADMSG;
}

int rmp_conn_rep_encode(void *buf, size_t cap, const struct rmp_conn_rep *r)
{
	uint8_t *p = buf;

	if (cap < RMP_CONN_REP_LEN)
		return -EMSGSIZE;
	p = put_le32(p, RMP_CONN_MAGIC);
	p = put_le8(p, r->version);
	p = put_le8(p, r->keys_mode);
	p = put_le16(p, 0);
	p = put_le32(p, r->credits);
	p = put_le32(p, r->max_msg);
	memcpy(p, r->nonce, RMP_CONN_NONCE_LEN);
	return RMP_CONN_REP_LEN;
}

int rmp_conn_rep_decode(const void *buf, size_t len, struct rmp_conn_rep *r)
{
	const uint8_t *p = buf;
	uint32_t magic;
	uint16_t reserved;

	memset(r, 0, sizeof(*r));
	if (len < RMP_CONN_REP_LEN)
		return -EBADMSG;
	p = get_le32(p, &magic);
	if (magic != RMP_CONN_MAGIC)
		return -EBADMSG;
	p = get_le8(p, &r->version);
	p = get_le8(p, &r->keys_mode);
	p = get_le16(p, &reserved);
	p = get_le32(p, &r->credits);
	p = get_le32(p, &r->max_msg);
	memcpy(r->nonce, p, RMP_CONN_NONCE_LEN);
	/* Reserved must be zero so that it can be given a meaning later. */
	if (reserved) {
		memset(r, 0, sizeof(*r));
		return -EBADMSG;
	}
	return 0;
}

int rmp_conn_rej_encode(void *buf, size_t cap, const struct rmp_conn_rej *r)
{
	uint8_t *p = buf;

	if (cap < RMP_CONN_REJ_LEN)
		return -EMSGSIZE;
	p = put_le32(p, RMP_CONN_MAGIC);
	p = put_le16(p, r->reason);
	p = put_le8(p, r->proto_min);
	put_le8(p, r->proto_max);
	return RMP_CONN_REJ_LEN;
}

int rmp_conn_rej_decode(const void *buf, size_t len, struct rmp_conn_rej *r)
{
	const uint8_t *p = buf;
	uint32_t magic;

	memset(r, 0, sizeof(*r));
	if (len < RMP_CONN_REJ_LEN)
		return -EBADMSG;
	p = get_le32(p, &magic);
	if (magic != RMP_CONN_MAGIC)
		return -EBADMSG;
	p = get_le16(p, &r->reason);
	p = get_le8(p, &r->proto_min);
	get_le8(p, &r->proto_max);
	return 0;
}

const char *rmp_keys_mode_name(unsigned mode)
{
	switch (mode) {
	case RMP_KEYS_WINDOW:
		return RMP_KEYS_WINDOW_NAME;
	case RMP_KEYS_REGION:
		return RMP_KEYS_REGION_NAME;
	case RMP_KEYS_POOL:
		return RMP_KEYS_POOL_NAME;
	}
	return "unknown";
}

const char *rmp_reject_reason_str(unsigned reason)
{
	switch (reason) {
	case RMP_REJ_BAD_REQUEST:
		return "bad request";
	case RMP_REJ_PROTO:
		return "no common protocol version";
	case RMP_REJ_UNKNOWN_TENANT:
		return "unknown tenant";
	case RMP_REJ_FULL:
		return "server full";
	case RMP_REJ_DRAINING:
		return "server draining";
	case RMP_REJ_INTERNAL:
		return "server internal error";
	case RMP_REJ_COOLDOWN:
		return "refused for a while: too many access or "
		       "authentication errors from this address";
	case RMP_REJ_ANONYMOUS:
		return "anonymous access is disabled: name a tenant and its key";
	case RMP_REJ_TENANT_FULL:
		return "the tenant's connection limit is reached";
	case RMP_REJ_PEER_FULL:
		return "the connection limit of this address is reached";
	case RMP_REJ_NETWORK:
		return "the tenant may not connect from this address";
	}
	return "unknown reason";
}

const char *rmp_reject_reason_name(unsigned reason)
{
	static const char *const names[RMP_REJ_REASONS] = {
		[RMP_REJ_BAD_REQUEST] = "bad_request",
		[RMP_REJ_PROTO] = "protocol_version",
		[RMP_REJ_UNKNOWN_TENANT] = "unknown_tenant",
		[RMP_REJ_FULL] = "server_full",
		[RMP_REJ_DRAINING] = "draining",
		[RMP_REJ_INTERNAL] = "internal",
		[RMP_REJ_COOLDOWN] = "cooldown",
		[RMP_REJ_ANONYMOUS] = "anonymous_disabled",
		[RMP_REJ_TENANT_FULL] = "tenant_connections",
		[RMP_REJ_PEER_FULL] = "address_connections",
		[RMP_REJ_NETWORK] = "network",
	};

	return reason < RMP_REJ_REASONS && names[reason] ? names[reason] :
	       "other";
}

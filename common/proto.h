/* SPDX-License-Identifier: MIT */
/* proto.h -- rmpool control-channel wire format: messages, connect data. */
#ifndef RMP_PROTO_H
#define RMP_PROTO_H

#include <stddef.h>
#include <stdint.h>

/*
 * Every control message is one RDMA SEND of at most RMP_MSG_MAX bytes:
 * a fixed 24-byte little-endian header followed by an opcode-specific
 * payload of fixed size. Fields are encoded and decoded one by one; no
 * struct is ever cast onto a wire buffer.
 *
 *   off size field
 *     0    4 magic        RMP_MSG_MAGIC
 *     4    1 version      RMP_PROTO_VERSION
 *     5    1 opcode       enum rmp_opcode
 *     6    2 flags        RMP_MSG_F_*
 *     8    4 payload_len  bytes after the header
 *    12    4 status       replies: 0 or a negative errno; requests: 0
 *    16    8 req_id       chosen by the client, echoed in the reply
 */
#define RMP_MSG_MAGIC 0x31504d52u /* "RMP1" */
/*
 * 5: the server proves the tenant's key too (AUTH carries a nonce of the
 * client's, its reply the server's proof: common/auth.h), ATTACH carries
 * the group epoch of a cluster lease and the lease description the one
 * the server holds. 4 bound the client's proof to the server endpoint.
 * Min = max: a client that also spoke 4 would talk to a server that
 * proves nothing when a relay chose 4 in its accept data.
 */
#define RMP_PROTO_VERSION 5
#define RMP_PROTO_MIN 5
#define RMP_PROTO_MAX 5
#define RMP_MSG_HDR_LEN 24
#define RMP_MSG_MAX 256

#define RMP_MSG_F_REPLY 0x0001u
/*
 * An error reply may say more in bits 8..15 of its flags: which limit an
 * -EDQUOT hit, why an AUTH failed (enum rmp_detail; 0 = nothing more).
 */
#define RMP_MSG_DETAIL(flags) ((unsigned)((flags) >> 8) & 0xffu)
#define RMP_MSG_F_DETAIL(d) ((uint16_t)(((d) & 0xffu) << 8))

enum rmp_detail {
	RMP_DETAIL_NONE = 0,
	RMP_DETAIL_BYTES = 1,       /* the tenant's byte limit */
	RMP_DETAIL_LEASES = 2,      /* the tenant's lease limit */
	RMP_DETAIL_KEYS = 3,        /* the keys-per-lease limit */
	RMP_DETAIL_BAD_PROOF = 4,   /* AUTH: the proof does not match */
	RMP_DETAIL_REPLAYED = 5,    /* AUTH: a proof already used */
	RMP_DETAIL_NOT_AUTHED = 6,  /* a request before AUTH succeeded */
	RMP_DETAIL_TENANT = 7,      /* the lease belongs to another tenant */
	RMP_DETAIL_SERVER_LEASES = 8, /* -ENOSPC: the server's lease limit */
	RMP_DETAIL_TENANT_CONNECTIONS = 9, /* AUTH: the tenant's connections */
	RMP_DETAIL_PEER_CONNECTIONS = 10,  /* AUTH: the address's connections */
	RMP_DETAIL_NETWORK = 11,    /* AUTH: not from the tenant's networks */
	RMP_DETAIL_EPOCH = 12,      /* -ESTALE: ATTACH under an epoch older
				     * than the one the lease's group has */
	RMP_DETAIL_RETURNING = 13,  /* -ENOSPC: no room now, but extents
				     * being revoked or zeroed would make
				     * it: ask again shortly */
};
/* Text for a detail ("the tenant's byte limit", ...), "" for NONE. */
const char *rmp_detail_str(unsigned detail);

enum rmp_opcode {
	RMP_OP_ALLOC = 1,
	RMP_OP_RENEW = 2,
	RMP_OP_FREE = 3,
	RMP_OP_ATTACH = 4,
	RMP_OP_STAT = 5,
	RMP_OP_AUTH = 6,
};
#define RMP_OP_MAX RMP_OP_AUTH

/* Lease access bits (wire and API share the values). */
#define RMP_ACC_READ 0x1u
#define RMP_ACC_WRITE 0x2u
#define RMP_ACC_ATOMIC 0x4u
#define RMP_ACC_ALL (RMP_ACC_READ | RMP_ACC_WRITE | RMP_ACC_ATOMIC)

/* Lease flags. */
#define RMP_LEASE_F_EPHEMERAL 0x1u  /* ends with the connection */
#define RMP_LEASE_F_AUTO_RENEW 0x2u /* server renews it while connected */
/* ALLOC: when the pool of the device the request came in on is full, the
 * lease may be placed in another device's pool of the node. */
#define RMP_LEASE_F_SPILL 0x4u
/* Replies only: the lease is not in the pool of the device the ALLOC
 * came in on (it spilled): its memory is on another NUMA node. */
#define RMP_LEASE_F_SPILLED 0x8u
/* The flags an ALLOC may carry, and those a reply may. */
#define RMP_LEASE_F_ALL (RMP_LEASE_F_EPHEMERAL | RMP_LEASE_F_AUTO_RENEW | \
			 RMP_LEASE_F_SPILL)
#define RMP_LEASE_F_REPLY_ALL (RMP_LEASE_F_EPHEMERAL | \
			       RMP_LEASE_F_AUTO_RENEW | RMP_LEASE_F_SPILLED)

/* lease_keys modes (reported in STAT and in the accept data), and their
 * names (rmp_keys_mode_name; the daemon's config reads the same). */
enum rmp_keys_mode {
	RMP_KEYS_WINDOW = 1,
	RMP_KEYS_REGION = 2,
	RMP_KEYS_POOL = 3,
};
#define RMP_KEYS_WINDOW_NAME "window"
#define RMP_KEYS_REGION_NAME "region"
#define RMP_KEYS_POOL_NAME "pool"

struct rmp_msg_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t opcode;
	uint16_t flags;
	uint32_t payload_len;
	int32_t status;
	uint64_t req_id;
};

/* ALLOC request: 32 bytes. ttl_s 0 = the server's default. */
struct rmp_alloc_req {
	uint64_t length;
	uint64_t alignment; /* power of two, 0 = server default */
	uint32_t ttl_s;
	uint32_t access;    /* RMP_ACC_* */
	uint32_t flags;     /* RMP_LEASE_F_* */
	uint32_t reserved;  /* must be 0 */
};

/* ATTACH flags. */
#define RMP_ATTACH_F_EXCLUSIVE 0x1u /* revoke every other key first */
#define RMP_ATTACH_F_ALL RMP_ATTACH_F_EXCLUSIVE

/* ALLOC and ATTACH reply: 64 bytes. */
struct rmp_lease_desc {
	uint64_t id;
	uint64_t secret;
	uint64_t addr;    /* remote virtual address of byte 0 of the lease */
	uint64_t length;
	uint64_t ttl_ms;  /* time left at the moment of the reply */
	uint32_t rkey;
	uint32_t access;  /* of this key (an attach may ask for less) */
	uint32_t flags;
	uint32_t holders; /* live keys of the lease, this one included */
	uint64_t epoch;   /* the group epoch the server holds for it (0:
			   * none; ALLOC: always 0) */
};

/*
 * RENEW request: 24 bytes; ttl_s 0 = the server's default. By id and
 * secret from any connection of the lease's tenant: nobody's key changes.
 */
struct rmp_renew_req {
	uint64_t id;
	uint64_t secret;
	uint32_t ttl_s;
	uint32_t reserved;
};

/* RENEW reply: 8 bytes. */
struct rmp_renew_rep {
	uint64_t ttl_ms;
};

/* FREE request: 16 bytes, like RENEW. Reply has no payload. */
struct rmp_free_req {
	uint64_t id;
	uint64_t secret;
};

/*
 * ATTACH request: 32 bytes. A key for this connection beside the
 * lease's other keys, with access (0 = the lease's) up to the lease's;
 * RMP_ATTACH_F_EXCLUSIVE revokes the others first. epoch: the epoch of
 * the cluster lease record the member is attached by (0: none, nothing
 * checked); the server refuses one older than the highest it was given
 * for the lease (-ESTALE, RMP_DETAIL_EPOCH) and keeps a newer one.
 */
struct rmp_attach_req {
	uint64_t id;
	uint64_t secret;
	uint32_t access;
	uint32_t flags;
	uint64_t epoch;
};

/*
 * AUTH request: 64 bytes, the client's proof of common/auth.h and a
 * fresh random nonce of the client's; the first message of every
 * connection. Reply: 32 bytes, the server's proof over both nonces
 * (common/auth.h; zeros for the anonymous tenant, which has no key). An
 * error reply's detail says why (RMP_DETAIL_BAD_PROOF, ...) and the
 * server closes the connection after it.
 */
#define RMP_AUTH_PROOF_LEN 32
#define RMP_AUTH_NONCE_LEN 32
struct rmp_auth_req {
	uint8_t proof[RMP_AUTH_PROOF_LEN];
	uint8_t client_nonce[RMP_AUTH_NONCE_LEN];
};

struct rmp_auth_rep {
	uint8_t server_proof[RMP_AUTH_PROOF_LEN];
};

/* STAT reply: 128 bytes. Request has no payload. */
struct rmp_stat_rep {
	uint64_t pool_bytes;
	uint64_t free_bytes;
	uint64_t largest_free;
	uint64_t leases;          /* live leases, all tenants */
	uint64_t tenant_bytes;    /* this connection's tenant: leased bytes */
	uint64_t tenant_leases;
	uint64_t quota_bytes;     /* the tenant's limits, 0 = none */
	uint64_t quota_leases;
	uint64_t hugepage_size;   /* 0 = normal pages (fallback) */
	uint32_t ttl_min_s;
	uint32_t ttl_max_s;
	uint32_t ttl_default_s;
	int32_t numa_node;
	uint32_t keys_mode;       /* enum rmp_keys_mode */
	uint32_t reserved;
	/* since protocol 2 */
	uint64_t quarantined_bytes; /* never reused: no proof of revocation */
	uint64_t zeroing_bytes;     /* revoked, being zeroed before reuse */
	/* since protocol 3 */
	uint32_t tenant_connections;
	uint32_t quota_connections; /* 0 = none */
	uint64_t keys;              /* live keys of all leases */
};

struct rmp_msg {
	struct rmp_msg_hdr hdr;
	union {
		struct rmp_alloc_req alloc;
		struct rmp_lease_desc lease;
		struct rmp_renew_req renew;
		struct rmp_renew_rep renew_rep;
		struct rmp_free_req free;
		struct rmp_attach_req attach;
		struct rmp_auth_req auth;
		struct rmp_auth_rep auth_rep;
		struct rmp_stat_rep stat;
	} u;
};

/*
 * rmp_msg_payload_len -- the fixed payload size for (opcode, reply?, status).
 * Error replies (status < 0) have no payload, for any opcode (0 answers a
 * request too broken to name one). Returns -EOPNOTSUPP for an unknown
 * opcode otherwise.
 */
int rmp_msg_payload_len(unsigned opcode, int is_reply, int32_t status);

/*
 * rmp_msg_encode -- write m into buf (cap bytes). The caller fills the
 * header's opcode, flags, status and req_id; magic, version and payload_len
 * are set by the encoder. Returns the encoded length, or -EMSGSIZE when cap
 * is too small, -EOPNOTSUPP for an unknown opcode, -EINVAL for a status
 * that is positive.
 */
int rmp_msg_encode(void *buf, size_t cap, const struct rmp_msg *m);

/*
 * rmp_msg_decode -- parse len bytes of buf into *m. Checks, in order:
 *   len >= header               else -EBADMSG (m->hdr zeroed)
 *   magic                       else -EBADMSG
 *   header fields are then stored in m->hdr, so a caller can echo req_id
 *   version == RMP_PROTO_VERSION else -EPROTONOSUPPORT
 *   opcode known (or an error reply) else -EOPNOTSUPP
 *   payload_len == len - header and == the opcode's fixed size else -EBADMSG
 *   reserved fields zero, status <= 0, status == 0 on requests else -EBADMSG
 * Returns 0 on success. Never reads past buf + len.
 */
int rmp_msg_decode(const void *buf, size_t len, struct rmp_msg *m);

/* Human-readable opcode name ("ALLOC", ...) or "?". */
const char *rmp_opcode_name(unsigned opcode);
/* "window", "region", "pool" or "unknown". */
const char *rmp_keys_mode_name(unsigned mode);

/*
 * Connect private data (client -> server), 56 bytes: all that
 * rdma_connect() allows on RC.
 *   0 4 magic RMP_CONN_MAGIC | 4 1 proto_min | 5 1 proto_max | 6 2 flags
 *   8 24 name (NUL padded, printable ASCII)
 *  32 24 tenant (NUL padded, [A-Za-z0-9_.-]; empty = anonymous)
 * (Protocol 2 had a 16-byte credential at 32 and was 48 bytes long.)
 */
#define RMP_CONN_MAGIC 0x43504d52u /* "RMPC" */
#define RMP_CONN_REQ_LEN 56
#define RMP_NAME_MAX 24
#define RMP_TENANT_NAME_MAX 24

struct rmp_conn_req {
	uint8_t proto_min;
	uint8_t proto_max;
	uint16_t flags;
	char name[RMP_NAME_MAX + 1];          /* NUL terminated after decode */
	char tenant[RMP_TENANT_NAME_MAX + 1]; /* "" = anonymous */
};

/*
 * Accept private data (server -> client), 48 bytes.
 *   0 4 magic | 4 1 version chosen | 5 1 keys_mode | 6 2 reserved
 *   8 4 credits (requests the client may have in flight) | 12 4 max_msg
 *  16 32 nonce: the challenge the client's AUTH proof covers
 */
#define RMP_CONN_REP_LEN 48
#define RMP_CONN_NONCE_LEN 32
struct rmp_conn_rep {
	uint8_t version;
	uint8_t keys_mode;
	uint32_t credits;
	uint32_t max_msg;
	uint8_t nonce[RMP_CONN_NONCE_LEN];
};

/*
 * Reject private data (server -> client), 8 bytes.
 *   0 4 magic | 4 2 reason | 6 1 proto_min | 7 1 proto_max
 */
#define RMP_CONN_REJ_LEN 8
enum rmp_reject_reason {
	RMP_REJ_BAD_REQUEST = 1,  /* no, short or malformed private data */
	RMP_REJ_PROTO = 2,        /* no common protocol version */
	RMP_REJ_UNKNOWN_TENANT = 3, /* no such tenant (or it has no key) */
	RMP_REJ_FULL = 4,         /* connection limit reached */
	RMP_REJ_DRAINING = 5,     /* server is draining */
	RMP_REJ_INTERNAL = 6,     /* server could not set up the connection */
	RMP_REJ_COOLDOWN = 7,     /* this address caused too many access
				   * or authentication errors; refused for
				   * a while */
	RMP_REJ_ANONYMOUS = 8,    /* no tenant named, anonymous is off */
	RMP_REJ_TENANT_FULL = 9,  /* the tenant's connection limit */
	RMP_REJ_PEER_FULL = 10,   /* connection limit of this address */
	RMP_REJ_NETWORK = 11,     /* tenant not allowed from this address */
};
#define RMP_REJ_REASONS 12 /* reasons are 1 .. RMP_REJ_REASONS - 1 */
struct rmp_conn_rej {
	uint16_t reason;
	uint8_t proto_min;
	uint8_t proto_max;
};

/*
 * Connect data codecs. encode returns the byte count written (the fixed
 * length) or -EMSGSIZE (-EINVAL for a name or tenant the decoder would
 * refuse); decode returns 0, or -EBADMSG for a short buffer, a wrong
 * magic or (conn_req) a bad name or tenant. rmp_conn_req_decode checks
 * the version range right after the magic: when it does not include
 * RMP_PROTO_VERSION it returns -EPROTONOSUPPORT with proto_min/max set
 * (an old client gets a "protocol" reject, not "bad request"). Extra
 * bytes after the fixed length are ignored (transports pad private data).
 */
int rmp_conn_req_encode(void *buf, size_t cap, const struct rmp_conn_req *r);
int rmp_conn_req_decode(const void *buf, size_t len, struct rmp_conn_req *r);
int rmp_conn_rep_encode(void *buf, size_t cap, const struct rmp_conn_rep *r);
int rmp_conn_rep_decode(const void *buf, size_t len, struct rmp_conn_rep *r);
int rmp_conn_rej_encode(void *buf, size_t cap, const struct rmp_conn_rej *r);
int rmp_conn_rej_decode(const void *buf, size_t len, struct rmp_conn_rej *r);

/* rmp_tenant_char_ok -- c may appear in a tenant name: [A-Za-z0-9_.-]
 * (ASCII ranges: the same answer in every locale). */
int rmp_tenant_char_ok(unsigned char c);

/* Text for a reject reason ("server full", ...). */
const char *rmp_reject_reason_str(unsigned reason);
/* rmp_reject_reason_name -- a short label ("unknown_tenant"), e.g. for
 * metrics; "other" for an unknown reason. */
const char *rmp_reject_reason_name(unsigned reason);

#endif /* RMP_PROTO_H */

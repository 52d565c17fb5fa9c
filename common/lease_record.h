/* SPDX-License-Identifier: MIT */
/*
 * lease_record.h -- a cluster lease's member list as the library keeps it
 * in etcd under PREFIX/leases/ID, sealed so that only a holder of the
 * cluster lease's token who also holds its tenant's key can read or
 * write it; and that token. Pure: no I/O, no clock.
 */
#ifndef RMP_LEASE_RECORD_H
#define RMP_LEASE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "token.h"

/*
 * A cluster token is what a user copies to reach a cluster lease (several
 * ordinary leases on several nodes):
 *
 *     rmpc://ID-SECRET
 *
 * ID is 32 hex digits (16 random bytes; the etcd key is PREFIX/leases/
 * followed by ID in lower-case hex), SECRET 64 hex digits (32 random
 * bytes; the key of the record's seal is derived from it). Either case
 * of hex is read, lower case written; nothing may follow SECRET but
 * trailing whitespace (a newline from a shell pipe). Treat it like a
 * password: it holds the members' own tokens.
 */
#define RMP_CTOKEN_ID_LEN 16
#define RMP_CTOKEN_SECRET_LEN 32
#define RMP_CTOKEN_MAX (7 + 32 + 1 + 64 + 1) /* with the NUL */
#define RMP_CTOKEN_ID_HEX_LEN (2 * RMP_CTOKEN_ID_LEN + 1) /* with the NUL */

struct rmp_ctoken {
	uint8_t id[RMP_CTOKEN_ID_LEN];
	uint8_t secret[RMP_CTOKEN_SECRET_LEN];
};

/* rmp_ctoken_new -- a fresh random token (libsodium; initialises it). */
void rmp_ctoken_new(struct rmp_ctoken *t);

/* rmp_ctoken_format -- t as text into buf (NUL terminated): its length
 * without the NUL, or -ENOSPC (buf emptied when cap > 0). */
int rmp_ctoken_format(const struct rmp_ctoken *t, char *buf, size_t cap);

/* rmp_ctoken_parse -- s into *t: 0, or -EINVAL; *t written only on
 * success. */
int rmp_ctoken_parse(const char *s, struct rmp_ctoken *t);

/* rmp_ctoken_is -- does s start with "rmpc://" (a cluster token, not an
 * rmp:// one)? Says nothing of the rest: rmp_ctoken_parse does. */
bool rmp_ctoken_is(const char *s);

/* rmp_ctoken_id_hex -- t's ID as 32 lower-case hex digits and a NUL. */
void rmp_ctoken_id_hex(const struct rmp_ctoken *t,
		       char out[RMP_CTOKEN_ID_HEX_LEN]);

/*
 * The record, before sealing, is one JSON object with exactly these
 * fields, all required (a number is a JSON integer, no fraction):
 *
 *   "length"           bytes of the whole lease, 1 .. 2^50
 *   "stripe_unit"      bytes, a power of two 4096 .. 1 GiB
 *   "stripes"          1 .. RMP_LREC_STRIPES_MAX
 *   "replicas"         1 .. RMP_LREC_REPLICAS_MAX; stripes * replicas >= 2
 *   "epoch"            1 .. 2^63-1: 1 at alloc, +1 at each repair
 *   "repair_until_ms"  0 .. 2^63-1: CLOCK_REALTIME ms until which a
 *                      repair holds the lease; 0: none
 *   "spread"           "" or the label whose values the replicas of a
 *                      stripe are placed apart on (a repair keeps it):
 *                      1..63 of [A-Za-z0-9_.-], a letter first
 *   "members"          stripes * replicas rmp:// token texts, replica j
 *                      of stripe s at index s * replicas + j, each
 *                      as rmp_token_format writes it (lower-case hex,
 *                      no blanks); the replicas of one stripe on
 *                      distinct servers (HOST:PORT differ, HOST
 *                      compared without case), no lease (HOST:PORT
 *                      and ID) listed twice
 *   "stale"            the indexes of the members that missed a write
 *                      (in increasing order, each once): not read, not
 *                      written, to be replaced by a repair; every
 *                      stripe keeps one member at least that is not
 *
 * and, only in the record of an erasure-coded lease (written only then):
 *
 *   "ec_data"          k, the data members: RMP_LREC_EC_K_MIN ..
 *                      RMP_LREC_EC_K_MAX. Then "stripes" counts every
 *                      member, k data then m = stripes - k parity
 *                      (RMP_LREC_EC_M_MIN .. RMP_LREC_EC_M_MAX);
 *                      "replicas" is 1; "stripe_unit" is the chunk
 *                      (4096 .. RMP_LREC_EC_CHUNK_MAX); all members on
 *                      distinct servers; at most m of them stale
 *                      (client/ec_layout.h says where the bytes lie)
 *
 * A field the reader does not know is refused, not ignored: a newer
 * writer's field could change how the data is laid out, and an older
 * reader that guessed would read or write the wrong bytes. Blanks may
 * follow the object, nothing else.
 */
#define RMP_LREC_STRIPES_MAX 16
#define RMP_LREC_REPLICAS_MAX 3
#define RMP_LREC_MEMBERS_MAX (RMP_LREC_STRIPES_MAX * RMP_LREC_REPLICAS_MAX)
#define RMP_LREC_LENGTH_MAX (UINT64_C(1) << 50)
#define RMP_LREC_UNIT_MIN UINT64_C(4096)
#define RMP_LREC_UNIT_MAX (UINT64_C(1) << 30)
#define RMP_LREC_UNIT_DEFAULT (UINT64_C(1) << 20)
#define RMP_LREC_SPREAD_LEN 64 /* with the NUL */
/* An erasure-coded lease's code: docs/design-notes.md says why these. */
#define RMP_LREC_EC_K_MIN 2
#define RMP_LREC_EC_K_MAX 12
#define RMP_LREC_EC_M_MIN 1
#define RMP_LREC_EC_M_MAX 4
#define RMP_LREC_EC_CHUNK_MAX (UINT64_C(1) << 20)

/* Longest plaintext (a record of 48 members with the longest host names
 * is about 15 KiB) and longest sealed record (nonce, text, tag). */
#define RMP_LREC_PLAIN_MAX 16384
#define RMP_LREC_NONCE_LEN 24 /* crypto_aead_xchacha20poly1305_ietf */
#define RMP_LREC_TAG_LEN 16
#define RMP_LREC_SEALED_MAX \
	(RMP_LREC_NONCE_LEN + RMP_LREC_PLAIN_MAX + RMP_LREC_TAG_LEN)

/*
 * Why "stale" is in the record and not only in the handle that saw a
 * member fail: a write is acknowledged only once every member the record
 * names as live has it, or the record says the one that missed it is
 * stale (io_group.c, cluster_lease.c). A reader or a repair in another
 * process that reads the record after that takes no bytes from a member
 * that lacks one (a holder that read it before learns at its next read).
 */
struct rmp_lease_record {
	uint64_t length;          /* bytes of the whole lease */
	uint64_t stripe_unit;     /* bytes (meaningful when stripes > 1) */
	unsigned stripes;
	unsigned replicas;
	uint64_t epoch;
	uint64_t repair_until_ms; /* CLOCK_REALTIME ms; 0: no repair */
	char spread[RMP_LREC_SPREAD_LEN]; /* "": none */
	/* member[s * replicas + j]: replica j of stripe s */
	struct rmp_token member[RMP_LREC_MEMBERS_MAX];
	bool stale[RMP_LREC_MEMBERS_MAX]; /* missed a write */
	unsigned ec_data; /* 0: mirrored or striped; else erasure coded,
			   * k data members of the stripes */
};

/* rmp_lrec_spread_ok -- s may be a record's spread label (not ""). */
bool rmp_lrec_spread_ok(const char *s);

/*
 * rmp_lrec_encode -- r as its JSON text into buf (NUL terminated): the
 * length without the NUL, -EINVAL when r breaks a rule above, -ENOSPC
 * when buf is too small or the text longer than RMP_LREC_PLAIN_MAX.
 */
int rmp_lrec_encode(const struct rmp_lease_record *r, char *buf, size_t cap);

/*
 * rmp_lrec_decode -- the text buf (len bytes, not trusted, need not be
 * NUL terminated) into r, every rule above checked: 0, or -EPROTO with
 * why (r zeroed).
 */
int rmp_lrec_decode(const char *buf, size_t len, struct rmp_lease_record *r,
		    char *why, size_t why_len);

/*
 * Sealing. The key of a record needs the tenant's key as well as the
 * token: a holder of the token alone (another tenant it was shown to)
 * can neither read the member list nor forge one.
 *
 *   key = BLAKE2b-256(key: the tenant's key (16..64 bytes),
 *                     "rmpool-lease-v2" NUL || tenant (24, NUL padded)
 *                     || t->id (16) || t->secret (32))
 *
 * (rmp_lrec_key; an anonymous client, which has no key, hashes without
 * one: then the token alone is the key, and etcd access with it forges
 * records). sealed = nonce[24] || ciphertext || tag[16] of
 * XChaCha20-Poly1305 (IETF) under a fresh random nonce, the associated
 * data "rmpool-lease-v2" followed by t->id: a record copied under another
 * lease's key does not open. Records of the v1 seal (key from the token
 * alone) do not open. All libsodium.
 */
#define RMP_LREC_KEY_LEN 32

/* rmp_lrec_key -- the seal key of t's record for tenant (a name; "" is
 * anonymous) and its key (tenant_key, key_len bytes, RMP_KEY_MIN to
 * RMP_KEY_MAX; NULL and 0 for anonymous) into out: 0, or -EINVAL (a
 * key of another length; out zeroed). Wipe out after use. */
int rmp_lrec_key(const struct rmp_ctoken *t, const char *tenant,
		 const uint8_t *tenant_key, size_t key_len,
		 uint8_t out[RMP_LREC_KEY_LEN]);

/* rmp_lrec_seal -- plain (len bytes, at most RMP_LREC_PLAIN_MAX) sealed
 * for t under key (rmp_lrec_key) into out: the sealed length, -EINVAL
 * (too long) or -ENOSPC. */
int rmp_lrec_seal(const struct rmp_ctoken *t,
		  const uint8_t key[RMP_LREC_KEY_LEN], const void *plain,
		  size_t len, uint8_t *out, size_t cap);

/*
 * rmp_lrec_open -- sealed (len bytes, not trusted) opened into plain
 * (NUL terminated): the plaintext length, -EBADMSG (wrong key, tampered
 * with, stored under another ID, too short or too long) or -ENOSPC (cap
 * below the plaintext length + 1). plain is emptied on failure.
 */
int rmp_lrec_open(const struct rmp_ctoken *t,
		  const uint8_t key[RMP_LREC_KEY_LEN], const uint8_t *sealed,
		  size_t len, char *plain, size_t cap);

/* rmp_lrec_seal_record -- rmp_lrec_encode then rmp_lrec_seal: the
 * sealed length, or their errors. */
int rmp_lrec_seal_record(const struct rmp_ctoken *t,
			 const uint8_t key[RMP_LREC_KEY_LEN],
			 const struct rmp_lease_record *r, uint8_t *out,
			 size_t cap);

/*
 * rmp_lrec_open_record -- rmp_lrec_open then rmp_lrec_decode: 0,
 * -EBADMSG (did not open: not this lease's record, or not sealed by a
 * holder of its token and its tenant's key) or -EPROTO (opened, but not
 * a record this library reads); why says which, r is zeroed.
 */
int rmp_lrec_open_record(const struct rmp_ctoken *t,
			 const uint8_t key[RMP_LREC_KEY_LEN],
			 const uint8_t *sealed, size_t len,
			 struct rmp_lease_record *r, char *why,
			 size_t why_len);

#endif /* RMP_LEASE_RECORD_H */

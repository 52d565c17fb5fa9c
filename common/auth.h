/* SPDX-License-Identifier: MIT */
/* auth.h -- tenant keys and the connect-time proof (HMAC-SHA256, libsodium). */
#ifndef RMP_AUTH_H
#define RMP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct sockaddr;

/*
 * A tenant key is 16..64 random bytes shared by the tenant's clients and
 * the daemon, written as hex (32..128 digits, trailing whitespace
 * allowed). At connect time the server sends a fresh 32-byte nonce in its
 * accept data; the client's first message, AUTH, carries a fresh nonce
 * of its own and
 *
 *   proof = HMAC-SHA256(key, LABEL || server_nonce[32] ||
 *                            client_nonce[32] || version[1] ||
 *                            tenant[24] || name[24] || server[18])
 *
 * with LABEL "rmpool-auth-v5\0\0"; the server's reply carries the same
 * HMAC with LABEL "rmpool-serv-v5\0\0" (RMP_AUTH_SERVER). Tenant and name
 * are NUL padded as on the wire; server is the endpoint of
 * rmp_auth_endpoint. Each side's proof covers a nonce the other side
 * chose, so neither is good on another connection; the two labels keep a
 * server's proof from ever passing as a client's (a reflection). The
 * names and version bind both to what the client announced. The server
 * endpoint binds them to the server the client reached: the client takes
 * the peer address of its connection, the server the local address of
 * the accepted one, so a server that relays the nonce of another one
 * gets a proof that names itself, which the other refuses. A client that
 * checked the server's proof knows it talks to a holder of the tenant's
 * key: it sends no lease id, secret or byte before. Nothing here is
 * hand-written crypto: HMAC, the constant-time compare and the random
 * bytes are libsodium's.
 */
#define RMP_KEY_MIN 16
#define RMP_KEY_MAX 64
#define RMP_NONCE_LEN 32
#define RMP_PROOF_LEN 32
#define RMP_TENANT_MAX RMP_TENANT_NAME_MAX /* name bytes on the wire */
#define RMP_ENDPOINT_LEN 18 /* IPv6 address, port; see rmp_auth_endpoint */

/* rmp_auth_init -- initialise libsodium (idempotent). 0 or -EIO. */
int rmp_auth_init(void);

/* rmp_auth_random -- len random bytes (never fails after init). */
void rmp_auth_random(void *buf, size_t len);

/*
 * rmp_auth_endpoint -- the server endpoint of a proof: sa's address as 16
 * bytes (IPv4 as the IPv4-mapped ::ffff:a.b.c.d, so a server listening on
 * :: and its IPv4 client agree) and its port, network order. 0, or
 * -EAFNOSUPPORT (out zeroed) for a family other than AF_INET, AF_INET6.
 */
int rmp_auth_endpoint(const struct sockaddr *sa,
		      uint8_t out[RMP_ENDPOINT_LEN]);

/*
 * rmp_auth_endpoint_local -- is the address of endpoint ep (the port is
 * not looked at) one of this host's interface addresses? false also when
 * they cannot be listed.
 */
bool rmp_auth_endpoint_local(const uint8_t ep[RMP_ENDPOINT_LEN]);

/* Whose proof rmp_auth_proof makes: its label. */
enum rmp_auth_role {
	RMP_AUTH_CLIENT, /* AUTH's proof */
	RMP_AUTH_SERVER, /* the AUTH reply's proof */
};

/*
 * rmp_auth_proof -- role's proof above into out. snonce is the server's
 * nonce (the accept data's), cnonce the client's (AUTH's); tenant and
 * name are C strings of at most 24 bytes (longer ones are cut: callers
 * check); server is the endpoint of rmp_auth_endpoint.
 */
void rmp_auth_proof(enum rmp_auth_role role, const uint8_t *key,
		    size_t key_len, const uint8_t snonce[RMP_NONCE_LEN],
		    const uint8_t cnonce[RMP_NONCE_LEN], uint8_t version,
		    const char *tenant, const char *name,
		    const uint8_t server[RMP_ENDPOINT_LEN],
		    uint8_t out[RMP_PROOF_LEN]);

/* rmp_auth_equal -- constant-time compare of two proofs. */
bool rmp_auth_equal(const uint8_t a[RMP_PROOF_LEN],
		    const uint8_t b[RMP_PROOF_LEN]);

/*
 * rmp_key_parse -- hex text (whitespace around it ignored) to key bytes.
 * Returns 0 and *len, or -EINVAL (not hex, odd digits, shorter than
 * RMP_KEY_MIN or longer than RMP_KEY_MAX bytes). The text is never
 * copied into messages.
 */
int rmp_key_parse(const char *text, uint8_t out[RMP_KEY_MAX], size_t *len);

/*
 * rmp_key_load -- read a key file: a regular file holding the hex text
 * of a key, either owned by the caller's effective user (or root) with
 * no group or other access (mode 600/400), or owned by root, group of
 * the caller and only group-readable (mode 640/440: how a packaged
 * daemon running as its own user reads keys root manages). Returns 0, or -errno with a
 * one-line reason in err ("FILE: readable by others; chmod 600 FILE",
 * "FILE: not a key (expected 32 to 128 hex digits)", ...); err never
 * holds any of the file's bytes.
 */
int rmp_key_load(const char *path, uint8_t out[RMP_KEY_MAX], size_t *len,
		 char *err, size_t errlen);

/*
 * rmp_secret_read -- the bytes of a secret file kept as rmp_key_load()
 * wants a key file (the same owner and mode rules, the same messages),
 * into buf as a NUL-terminated string. 0, -EINVAL when the file does
 * not fit in buflen - 1 bytes (err: "FILE: longer than N bytes"), or
 * -errno with a one-line reason in err. Wipe buf after use.
 */
int rmp_secret_read(const char *path, char *buf, size_t buflen, char *err,
		    size_t errlen);

/* rmp_key_format -- key as lower-case hex into buf (2*len+1 bytes). */
void rmp_key_format(const uint8_t *key, size_t len, char *buf, size_t cap);

/* rmp_tenant_name_ok -- 1..24 bytes of [A-Za-z0-9_.-]. */
bool rmp_tenant_name_ok(const char *s);

/* rmp_wipe -- clear secret bytes (not optimised away). */
void rmp_wipe(void *p, size_t len);

#endif /* RMP_AUTH_H */

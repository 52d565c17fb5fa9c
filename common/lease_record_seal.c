/* SPDX-License-Identifier: MIT */
/*
 * lease_record_seal.c -- the cluster token (rmpc://ID-SECRET) and the
 * seal of a lease record under it and the tenant's key: libsodium's
 * BLAKE2b and XChaCha20-Poly1305, nothing hand-made. lease_record.h says
 * what is sealed how.
 */
#include "lease_record.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "parse.h"

#define CTOKEN_SCHEME "rmpc://"
#define SEAL_VERSION "rmpool-lease-v2"
#define SEAL_AD_LEN (sizeof(SEAL_VERSION) - 1 + RMP_CTOKEN_ID_LEN)

_Static_assert(RMP_LREC_NONCE_LEN ==
	       crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce");
_Static_assert(RMP_LREC_TAG_LEN == crypto_aead_xchacha20poly1305_ietf_ABYTES,
	       "tag");
_Static_assert(RMP_LREC_KEY_LEN == crypto_aead_xchacha20poly1305_ietf_KEYBYTES,
	       "key");
_Static_assert(RMP_KEY_MIN >= crypto_generichash_KEYBYTES_MIN &&
	       RMP_KEY_MAX <= crypto_generichash_KEYBYTES_MAX,
	       "a tenant key keys BLAKE2b as it is");

void rmp_ctoken_new(struct rmp_ctoken *t)
{
	/* libsodium's random bytes work uninitialised too; init picks the
	 * fast code and is what every other caller here does first */
	(void)rmp_auth_init();
	rmp_auth_random(t, sizeof(*t));
}

/* put_hex -- n bytes as 2n lower-case hex digits at out (no NUL). */
static void put_hex(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
}

/* get_hex -- exactly 2n hex digits (either case) at s into n bytes. */
static int get_hex(const char *s, uint8_t *b, size_t n)
{
	uint64_t v;

	for (size_t i = 0; i < n; i++) {
		if (rmp_parse_hex_fixed(s + 2 * i, 2, &v))
			return -EINVAL;
		b[i] = (uint8_t)v;
	}
	return 0;
}

int rmp_ctoken_format(const struct rmp_ctoken *t, char *buf, size_t cap)
{
	const size_t scheme = sizeof(CTOKEN_SCHEME) - 1;
	char *p = buf + scheme;

	if (cap < RMP_CTOKEN_MAX) {
		if (cap)
			buf[0] = '\0';
		return -ENOSPC;
	}
	memcpy(buf, CTOKEN_SCHEME, scheme);
	put_hex(t->id, RMP_CTOKEN_ID_LEN, p);
	p += 2 * RMP_CTOKEN_ID_LEN;
	*p++ = '-';
	put_hex(t->secret, RMP_CTOKEN_SECRET_LEN, p);
	p += 2 * RMP_CTOKEN_SECRET_LEN;
	*p = '\0';
	return (int)(p - buf);
}

int rmp_ctoken_parse(const char *s, struct rmp_ctoken *t)
{
	struct rmp_ctoken tok;
	const char *p;

	if (!s || !rmp_ctoken_is(s))
		return -EINVAL;
	p = s + sizeof(CTOKEN_SCHEME) - 1;
	/* get_hex stops at a NUL: it is not a hex digit */
	if (get_hex(p, tok.id, RMP_CTOKEN_ID_LEN) ||
	    p[2 * RMP_CTOKEN_ID_LEN] != '-')
		goto bad;
	p += 2 * RMP_CTOKEN_ID_LEN + 1;
	if (get_hex(p, tok.secret, RMP_CTOKEN_SECRET_LEN))
		goto bad;
	p += 2 * RMP_CTOKEN_SECRET_LEN;
	p += strspn(p, " \t\n\v\f\r");
	if (*p)
		goto bad;
	*t = tok;
	sodium_memzero(&tok, sizeof(tok));
	return 0;
bad:
	sodium_memzero(&tok, sizeof(tok));
	return -EINVAL;
}

bool rmp_ctoken_is(const char *s)
{
	return s && !strncmp(s, CTOKEN_SCHEME, sizeof(CTOKEN_SCHEME) - 1);
}

void rmp_ctoken_id_hex(const struct rmp_ctoken *t,
		       char out[RMP_CTOKEN_ID_HEX_LEN])
{
	put_hex(t->id, RMP_CTOKEN_ID_LEN, out);
	out[2 * RMP_CTOKEN_ID_LEN] = '\0';
}

int rmp_lrec_key(const struct rmp_ctoken *t, const char *tenant,
		 const uint8_t *tenant_key, size_t key_len,
		 uint8_t out[RMP_LREC_KEY_LEN])
{
	static const char label[16] = SEAL_VERSION; /* NUL padded */
	crypto_generichash_state st;
	uint8_t name[RMP_TENANT_MAX] = { 0 };

	(void)rmp_auth_init(); /* as in rmp_ctoken_new */
	memcpy(name, tenant, strnlen(tenant, sizeof(name)));
	if (!tenant_key || !key_len) {
		tenant_key = NULL; /* anonymous: unkeyed */
		key_len = 0;
	} else if (key_len < RMP_KEY_MIN || key_len > RMP_KEY_MAX) {
		memset(out, 0, RMP_LREC_KEY_LEN);
		return -EINVAL;
	}
	crypto_generichash_init(&st, tenant_key, key_len, RMP_LREC_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_generichash_update(&st, name, sizeof(name));
	crypto_generichash_update(&st, t->id, sizeof(t->id));
	crypto_generichash_update(&st, t->secret, sizeof(t->secret));
	crypto_generichash_final(&st, out, RMP_LREC_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
	return 0;
}

/* seal_ad -- the seal's associated data of t. */
static void seal_ad(const struct rmp_ctoken *t, uint8_t ad[SEAL_AD_LEN])
{
	memcpy(ad, SEAL_VERSION, sizeof(SEAL_VERSION) - 1);
	memcpy(ad + sizeof(SEAL_VERSION) - 1, t->id, RMP_CTOKEN_ID_LEN);
}

int rmp_lrec_seal(const struct rmp_ctoken *t,
		  const uint8_t key[RMP_LREC_KEY_LEN], const void *plain,
		  size_t len, uint8_t *out, size_t cap)
{
	uint8_t ad[SEAL_AD_LEN];
	unsigned long long sealed_len;

	if (len > RMP_LREC_PLAIN_MAX)
		return -EINVAL;
	if (cap < RMP_LREC_NONCE_LEN + len + RMP_LREC_TAG_LEN)
		return -ENOSPC;
	seal_ad(t, ad);
	rmp_auth_random(out, RMP_LREC_NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + RMP_LREC_NONCE_LEN,
						   &sealed_len, plain, len,
						   ad, sizeof(ad), NULL, out,
						   key);
	return (int)(RMP_LREC_NONCE_LEN + sealed_len);
}

int rmp_lrec_open(const struct rmp_ctoken *t,
		  const uint8_t key[RMP_LREC_KEY_LEN], const uint8_t *sealed,
		  size_t len, char *plain, size_t cap)
{
	uint8_t ad[SEAL_AD_LEN];
	unsigned long long plain_len;
	int ret;

	if (cap)
		plain[0] = '\0';
	if (len < RMP_LREC_NONCE_LEN + RMP_LREC_TAG_LEN ||
	    len > RMP_LREC_SEALED_MAX)
		return -EBADMSG;
	if (cap < len - RMP_LREC_NONCE_LEN - RMP_LREC_TAG_LEN + 1)
		return -ENOSPC;
	seal_ad(t, ad);
	ret = crypto_aead_xchacha20poly1305_ietf_decrypt(
		(unsigned char *)plain, &plain_len, NULL,
		sealed + RMP_LREC_NONCE_LEN, len - RMP_LREC_NONCE_LEN,
		ad, sizeof(ad), sealed, key);
	if (ret) {
		plain[0] = '\0';
		return -EBADMSG;
	}
	plain[plain_len] = '\0';
	return (int)plain_len;
}

int rmp_lrec_seal_record(const struct rmp_ctoken *t,
			 const uint8_t key[RMP_LREC_KEY_LEN],
			 const struct rmp_lease_record *r, uint8_t *out,
			 size_t cap)
{
	char plain[RMP_LREC_PLAIN_MAX + 1];
	int n = rmp_lrec_encode(r, plain, sizeof(plain));

	if (n >= 0)
		n = rmp_lrec_seal(t, key, plain, (size_t)n, out, cap);
	sodium_memzero(plain, sizeof(plain)); /* the members' secrets */
	return n;
}

int rmp_lrec_open_record(const struct rmp_ctoken *t,
			 const uint8_t key[RMP_LREC_KEY_LEN],
			 const uint8_t *sealed, size_t len,
			 struct rmp_lease_record *r, char *why,
			 size_t why_len)
{
	char plain[RMP_LREC_PLAIN_MAX + 1];
	int n = rmp_lrec_open(t, key, sealed, len, plain, sizeof(plain));

	memset(r, 0, sizeof(*r));
	if (n >= 0)
		n = rmp_lrec_decode(plain, (size_t)n, r, why, why_len);
	else if (why && why_len)
		snprintf(why, why_len, "does not open with this token and "
			 "tenant key");
	sodium_memzero(plain, sizeof(plain));
	return n;
}

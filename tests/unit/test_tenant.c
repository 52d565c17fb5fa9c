/* SPDX-License-Identifier: MIT */
/* test_tenant.c -- unit tests for the daemon's tenant table. */
#include "check.h"
#include "config.h"
#include "tenant.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (UINT64_C(1) << 20)

static char tmpdir[64];
static char good_file[128], missing_file[128], open_file[128];

static const char key_a_hex[] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
static const char key_c_hex[] = "00112233445566778899aabbccddeeff";
/* The server endpoint the proofs name: 192.0.2.1:7471, IPv4-mapped. */
static const uint8_t srv[RMP_ENDPOINT_LEN] = {
	[10] = 0xff, 0xff, 192, 0, 2, 1, 0x1d, 0x2f,
};

/* The client's nonce of the proofs here. */
static const uint8_t cn[RMP_NONCE_LEN] = { 0xcc, 0xcd, [31] = 0xce };

/* cli_proof -- a client's proof for the server nonce, with cn. */
static void cli_proof(const uint8_t *key, size_t len,
		      const uint8_t nonce[RMP_NONCE_LEN], uint8_t version,
		      const char *tenant, const char *name,
		      const uint8_t server[RMP_ENDPOINT_LEN],
		      uint8_t out[RMP_PROOF_LEN])
{
	rmp_auth_proof(RMP_AUTH_CLIENT, key, len, nonce, cn, version, tenant,
		       name, server, out);
}

/*
 * check_proof -- rmp_tenants_check_proof with cn, and its server proof
 * checked: on success the server's proof of t's key for the same inputs
 * (zeros for anonymous, which has none), else zeros.
 */
static unsigned check_proof(struct rmp_tenants *ts, const struct rmp_tenant *t,
			    const uint8_t nonce[RMP_NONCE_LEN],
			    uint8_t version, const char *name,
			    const uint8_t server[RMP_ENDPOINT_LEN],
			    const uint8_t proof[RMP_PROOF_LEN])
{
	static const uint8_t zeros[RMP_PROOF_LEN];
	uint8_t sp[RMP_PROOF_LEN], want[RMP_PROOF_LEN];
	unsigned d;

	memset(sp, 0xee, sizeof(sp));
	d = rmp_tenants_check_proof(ts, t, nonce, cn, version, name, server,
				    proof, sp);
	if (d == RMP_DETAIL_NONE && !t->anonymous) {
		rmp_auth_proof(RMP_AUTH_SERVER, t->key, t->key_len, nonce, cn,
			       version, t->name, name, server, want);
		CHECK(!memcmp(sp, want, sizeof(sp)));
		/* never the client's own proof sent back */
		CHECK(memcmp(sp, proof, sizeof(sp)));
	} else {
		CHECK(!memcmp(sp, zeros, sizeof(sp)));
	}
	return d;
}

static int write_key(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL, 0600);

	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/*
 * The configuration under test: tenant "a" with an inline key and limits
 * bytes=1M leases=2 connections=1; "b" whose key file does not exist;
 * "c" whose key file is fine.
 */
static void make_config(struct rmp_config *cfg, bool anonymous)
{
	struct rmp_tenant_config *t;
	size_t len;

	rmp_config_defaults(cfg);
	cfg->anonymous.enabled = anonymous;
	cfg->anonymous.limits.leases = 1;

	t = &cfg->tenants[cfg->ntenants++];
	strcpy(t->name, "a");
	if (rmp_key_parse(key_a_hex, t->key, &len))
		abort();
	t->key_len = len;
	t->limits.bytes = MIB;
	t->limits.leases = 2;
	t->limits.connections = 1;

	t = &cfg->tenants[cfg->ntenants++];
	strcpy(t->name, "b");
	strcpy(t->key_file, missing_file);

	t = &cfg->tenants[cfg->ntenants++];
	strcpy(t->name, "c");
	strcpy(t->key_file, good_file);
}

static void test_find(void)
{
	struct rmp_config cfg;
	struct rmp_tenants *ts;
	struct rmp_tenant *t;
	char err[256];
	unsigned why;

	make_config(&cfg, false);
	CHECK_EQ(rmp_config_check(&cfg, NULL, err, sizeof(err)), 0);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;

	why = 0;
	t = rmp_tenants_find(ts, "a", &why);
	CHECK(t != NULL);
	if (t) {
		CHECK_STR(t->name, "a");
		CHECK(t->usable);
		CHECK(!t->anonymous);
		CHECK_EQ(t->key_len, 32);
		CHECK_EQ(t->key[31], 0x1f);
		CHECK_EQ(t->limits.bytes, MIB);
		CHECK_EQ(t->limits.leases, 2);
		CHECK_EQ(t->limits.connections, 1);
		CHECK_EQ(t->bytes, 0);
		CHECK_EQ(t->leases, 0);
		CHECK_EQ(t->connections, 0);
	}
	t = rmp_tenants_find(ts, "c", &why);
	CHECK(t != NULL);
	if (t) {
		CHECK_STR(t->name, "c");
		CHECK_EQ(t->key_len, 16);
		CHECK_EQ(t->key[15], 0xff);
	}

	/* Unknown names, case matters. */
	why = 0;
	CHECK(rmp_tenants_find(ts, "nobody", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	why = 0;
	CHECK(rmp_tenants_find(ts, "A", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	why = 0;
	CHECK(rmp_tenants_find(ts, "aa", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	/* The key file of "b" is missing: it exists, but nobody gets in. */
	why = 0;
	CHECK(rmp_tenants_find(ts, "b", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	/* Anonymous is off. */
	why = 0;
	CHECK(rmp_tenants_find(ts, "", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_ANONYMOUS);
	/* Naming the anonymous tenant is not a way in either. */
	why = 0;
	CHECK(rmp_tenants_find(ts, "anonymous", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	rmp_tenants_free(ts);

	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	why = 0;
	t = rmp_tenants_find(ts, "", &why);
	CHECK(t != NULL);
	if (t) {
		CHECK(t->anonymous);
		CHECK(t->usable);
		CHECK_STR(t->name, "anonymous");
		CHECK_EQ(t->key_len, 0);
		CHECK_EQ(t->limits.leases, 1);
	}
	why = 0;
	CHECK(rmp_tenants_find(ts, "anonymous", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	CHECK(rmp_tenants_find(ts, "a", &why) != NULL);
	CHECK(rmp_tenants_find(ts, "b", &why) == NULL);
	rmp_tenants_free(ts);
	rmp_tenants_free(NULL);
}

/*
 * The owner of a lease recovered after a restart: the journal names the
 * anonymous tenant "anonymous", and a tenant whose key file is missing is
 * still configured. Only a tenant gone from the config, or anonymous
 * while it is off, has none.
 */
static void test_owner(void)
{
	struct rmp_config cfg;
	struct rmp_tenants *ts;
	struct rmp_tenant *t;
	unsigned why, changes;

	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	why = 0;
	t = rmp_tenants_owner(ts, "anonymous", &why);
	CHECK(t != NULL && t == rmp_tenants_find(ts, "", &why));
	t = rmp_tenants_owner(ts, "a", &why);
	CHECK(t != NULL && t == rmp_tenants_find(ts, "a", &why));
	/* b has no key file: unusable, but its leases are its own. */
	t = rmp_tenants_owner(ts, "b", &why);
	CHECK(t != NULL);
	if (t) {
		CHECK_STR(t->name, "b");
		CHECK(!t->usable);
	}
	why = 0;
	CHECK(rmp_tenants_owner(ts, "nobody", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	why = 0;
	CHECK(rmp_tenants_owner(ts, "", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	rmp_tenants_free(ts);

	/* Anonymous off: its leases have no owner, like a removed
	 * tenant's. */
	make_config(&cfg, false);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	why = 0;
	CHECK(rmp_tenants_owner(ts, "anonymous", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_ANONYMOUS);
	CHECK(rmp_tenants_owner(ts, "b", &why) != NULL);
	rmp_tenants_free(ts);

	/* A tenant a reload removed is no owner either. */
	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	t = rmp_tenants_find(ts, "a", &why);
	CHECK(t != NULL);
	if (t)
		rmp_tenant_adopt(t, MIB); /* so it stays in the table */
	cfg.ntenants = 0;
	CHECK_EQ(rmp_tenants_reload(ts, &cfg, &changes), 0);
	why = 0;
	CHECK(rmp_tenants_owner(ts, "a", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	rmp_tenants_free(ts);
}

static void test_charge(void)
{
	struct rmp_config cfg;
	struct rmp_tenants *ts;
	struct rmp_tenant *t, *anon;
	unsigned why, detail;

	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	t = rmp_tenants_find(ts, "a", &why);
	anon = rmp_tenants_find(ts, "", &why);
	CHECK(t && anon);
	if (!t || !anon) {
		rmp_tenants_free(ts);
		return;
	}

	detail = 99;
	CHECK_EQ(rmp_tenant_charge(t, MIB / 2, &detail), 0);
	CHECK_EQ(detail, RMP_DETAIL_NONE);
	CHECK_EQ(t->bytes, MIB / 2);
	CHECK_EQ(t->leases, 1);
	/* Over the byte limit. */
	CHECK_EQ(rmp_tenant_charge(t, MIB / 2 + 1, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_BYTES);
	CHECK_EQ(t->bytes, MIB / 2);
	CHECK_EQ(t->leases, 1);
	CHECK_EQ(t->quota_refusals, 1);
	/* Up to the byte limit exactly. */
	CHECK_EQ(rmp_tenant_charge(t, MIB / 2, &detail), 0);
	CHECK_EQ(detail, RMP_DETAIL_NONE);
	CHECK_EQ(t->bytes, MIB);
	CHECK_EQ(t->leases, 2);
	/* Over the lease limit (even an empty lease). */
	CHECK_EQ(rmp_tenant_charge(t, 0, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_LEASES);
	CHECK_EQ(t->leases, 2);
	CHECK_EQ(t->quota_refusals, 2);
	/* Both over: the lease limit is named. */
	CHECK_EQ(rmp_tenant_charge(t, MIB, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_LEASES);
	/* One lease given back: the byte limit applies again. */
	rmp_tenant_uncharge(t, MIB / 2);
	CHECK_EQ(rmp_tenant_charge(t, RMP_CONFIG_SIZE_MAX, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_BYTES);
	CHECK_EQ(t->bytes, MIB / 2);
	CHECK_EQ(t->leases, 1);
	/* Back to zero. */
	rmp_tenant_uncharge(t, MIB / 2);
	CHECK_EQ(t->bytes, 0);
	CHECK_EQ(t->leases, 0);
	CHECK_EQ(t->quota_refusals, 4);
	/* And the whole limit is free again. */
	CHECK_EQ(rmp_tenant_charge(t, MIB, &detail), 0);
	rmp_tenant_uncharge(t, MIB);
	CHECK_EQ(t->bytes, 0);
	CHECK_EQ(t->leases, 0);

	/* Ended leases whose bytes are not back in the pool count up to the
	 * limit once more: FREE then ALLOC at the limit works, a loop of
	 * them stops at twice the limit until the bytes come back. */
	CHECK_EQ(rmp_tenant_charge(t, MIB, &detail), 0);
	rmp_tenant_end(t, MIB);
	CHECK_EQ(t->bytes, 0);
	CHECK_EQ(t->leases, 0);
	CHECK_EQ(t->ending_bytes, MIB);
	CHECK_EQ(rmp_tenant_charge(t, MIB, &detail), 0);
	rmp_tenant_end(t, MIB);
	CHECK_EQ(t->ending_bytes, 2 * MIB);
	CHECK_EQ(rmp_tenant_charge(t, 1, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_BYTES);
	rmp_tenant_settled(t, MIB);
	CHECK_EQ(rmp_tenant_charge(t, MIB / 2, &detail), 0);
	CHECK_EQ(rmp_tenant_charge(t, MIB / 2 + 1, &detail), -EDQUOT);
	CHECK_EQ(rmp_tenant_charge(t, MIB / 2, &detail), 0);
	rmp_tenant_uncharge(t, MIB / 2);
	rmp_tenant_uncharge(t, MIB / 2);
	rmp_tenant_settled(t, MIB);
	CHECK_EQ(t->ending_bytes, 0);
	CHECK_EQ(t->bytes, 0);
	t->quota_refusals -= 2; /* the counter checks below predate these */

	/* Anonymous: one lease, no byte limit. */
	CHECK_EQ(rmp_tenant_charge(anon, UINT64_C(1) << 40, &detail), 0);
	CHECK_EQ(rmp_tenant_charge(anon, 1, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_LEASES);
	rmp_tenant_uncharge(anon, UINT64_C(1) << 40);
	CHECK_EQ(anon->bytes, 0);
	CHECK_EQ(anon->leases, 0);
	/* The counters are the tenant's own. */
	CHECK_EQ(t->quota_refusals, 4);

	/* Connections: "a" may have one, anonymous any number. */
	CHECK(rmp_tenant_may_connect(t));
	t->connections = 1;
	CHECK(!rmp_tenant_may_connect(t));
	t->connections = 0;
	CHECK(rmp_tenant_may_connect(t));
	anon->connections = 1000;
	CHECK(rmp_tenant_may_connect(anon));
	rmp_tenants_free(ts);
}

static void test_proof(void)
{
	uint8_t key[RMP_KEY_MAX], n1[RMP_NONCE_LEN], n2[RMP_NONCE_LEN];
	uint8_t p1[RMP_PROOF_LEN], p2[RMP_PROOF_LEN], bad[RMP_PROOF_LEN];
	struct rmp_config cfg;
	struct rmp_tenants *ts;
	struct rmp_tenant *a, *c, *anon;
	unsigned why;
	size_t len;

	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	a = rmp_tenants_find(ts, "a", &why);
	c = rmp_tenants_find(ts, "c", &why);
	anon = rmp_tenants_find(ts, "", &why);
	CHECK(a && c && anon);
	if (!a || !c || !anon) {
		rmp_tenants_free(ts);
		return;
	}
	memset(n1, 0x11, sizeof(n1));
	memset(n2, 0x22, sizeof(n2));

	/* The right key, nonce, version and client name. */
	if (rmp_key_parse(key_a_hex, key, &len))
		abort();
	cli_proof(key, len, n1, RMP_PROTO_VERSION, "a", "client", srv, p1);
	CHECK_EQ(check_proof(ts, a, n1, RMP_PROTO_VERSION,
					 "client", srv, p1), RMP_DETAIL_NONE);

	/* Another key. */
	if (rmp_key_parse(key_c_hex, key, &len))
		abort();
	cli_proof(key, len, n2, RMP_PROTO_VERSION, "a", "client", srv,
		       bad);
	CHECK_EQ(check_proof(ts, a, n2, RMP_PROTO_VERSION,
					 "client", srv, bad),
		 RMP_DETAIL_BAD_PROOF);
	CHECK_EQ(check_proof(ts, c, n2, RMP_PROTO_VERSION,
					 "client", srv, bad),
		 RMP_DETAIL_BAD_PROOF);
	/* The key of "c", for "c": fine (file keys work). */
	cli_proof(key, len, n2, RMP_PROTO_VERSION, "c", "client", srv, p2);
	CHECK_EQ(check_proof(ts, c, n2, RMP_PROTO_VERSION,
					 "client", srv, p2), RMP_DETAIL_NONE);

	/* The right proof of n1 shown again on a new connection (nonce
	 * n2): a replay, and told as one. */
	CHECK_EQ(check_proof(ts, a, n2, RMP_PROTO_VERSION,
					 "client", srv, p1),
		 RMP_DETAIL_REPLAYED);
	/* Bound to the client name and the version, too. */
	CHECK_EQ(check_proof(ts, a, n1, RMP_PROTO_VERSION,
					 "client2", srv, p1),
		 RMP_DETAIL_REPLAYED);
	CHECK_EQ(check_proof(ts, a, n1, 2, "client", srv, p1),
		 RMP_DETAIL_REPLAYED);
	/* A wrong proof that was never accepted is just wrong. */
	memcpy(bad, p1, sizeof(bad));
	bad[0] ^= 1;
	CHECK_EQ(check_proof(ts, a, n1, RMP_PROTO_VERSION,
					 "client", srv, bad),
		 RMP_DETAIL_BAD_PROOF);
	memset(bad, 0, sizeof(bad));
	CHECK_EQ(check_proof(ts, a, n1, RMP_PROTO_VERSION,
					 "client", srv, bad),
		 RMP_DETAIL_BAD_PROOF);
	/* The proof of "c" does not open "a", and is a wrong key there, not
	 * a replay: it was accepted for "c", and shown under a name nobody
	 * has it is a wrong key too (below); a replay under a name that
	 * exists must not look different. */
	CHECK_EQ(check_proof(ts, a, n2, RMP_PROTO_VERSION,
					 "client", srv, p2),
		 RMP_DETAIL_BAD_PROOF);

	/* A fresh right proof for n2 is fine. */
	if (rmp_key_parse(key_a_hex, key, &len))
		abort();
	cli_proof(key, len, n2, RMP_PROTO_VERSION, "a", "client", srv, p2);
	CHECK_EQ(check_proof(ts, a, n2, RMP_PROTO_VERSION,
					 "client", srv, p2), RMP_DETAIL_NONE);

	/* A name no tenant has gets the stranger: every proof fails as a
	 * wrong key's, a replayed one too (the peer must not learn that the
	 * name is unknown), and a known name gets its tenant. */
	{
		struct rmp_tenant *st;

		st = rmp_tenants_for_connect(ts, "nobody", &why);
		CHECK(st && st->stranger && !st->usable);
		CHECK(rmp_tenants_for_connect(ts, "a", &why) == a);
		CHECK(!a->stranger);
		if (st) {
			cli_proof(key, len, n1, RMP_PROTO_VERSION,
				       "nobody", "client", srv, bad);
			CHECK_EQ(check_proof(ts, st, n1,
				 RMP_PROTO_VERSION, "client", srv, bad),
				 RMP_DETAIL_BAD_PROOF);
			CHECK_EQ(check_proof(ts, st, n2,
				 RMP_PROTO_VERSION, "client", srv, p2),
				 RMP_DETAIL_BAD_PROOF);
			memset(bad, 0, sizeof(bad));
			CHECK_EQ(check_proof(ts, st, n1,
				 RMP_PROTO_VERSION, "client", srv, bad),
				 RMP_DETAIL_BAD_PROOF);
		}
	}

	/* Anonymous has no key: any proof. */
	memset(bad, 0xee, sizeof(bad));
	CHECK_EQ(check_proof(ts, anon, n1, RMP_PROTO_VERSION,
					 "client", srv, bad), RMP_DETAIL_NONE);
	CHECK_EQ(check_proof(ts, anon, n1, RMP_PROTO_VERSION, "",
					 srv, p1), RMP_DETAIL_NONE);
	rmp_tenants_free(ts);
}

/*
 * A live relay: the victim reached the relay (192.0.2.66:7471) and made
 * its proof for the relay's endpoint, with the nonce the relay passed on
 * from us. The relay forwards it: refused as a wrong proof, and so is a
 * proof for our address at another port. Our IPv4 address seen as
 * IPv4-mapped (a listener on ::) is the same endpoint.
 */
static void test_proof_relay(void)
{
	static const uint8_t relay[RMP_ENDPOINT_LEN] = {
		[10] = 0xff, 0xff, 192, 0, 2, 66, 0x1d, 0x2f,
	};
	static const uint8_t other_port[RMP_ENDPOINT_LEN] = {
		[10] = 0xff, 0xff, 192, 0, 2, 1, 0x1d, 0x30,
	};
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(7471) };
	uint8_t key[RMP_KEY_MAX], nonce[RMP_NONCE_LEN], p[RMP_PROOF_LEN];
	uint8_t mapped[RMP_ENDPOINT_LEN];
	struct rmp_config cfg;
	struct rmp_tenants *ts;
	struct rmp_tenant *a;
	unsigned why;
	size_t len;

	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	a = rmp_tenants_find(ts, "a", &why);
	CHECK(a != NULL);
	if (!a) {
		rmp_tenants_free(ts);
		return;
	}
	if (rmp_key_parse(key_a_hex, key, &len))
		abort();
	memset(nonce, 0x44, sizeof(nonce));

	cli_proof(key, len, nonce, RMP_PROTO_VERSION, "a", "victim",
		       relay, p);
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "victim", srv, p),
		 RMP_DETAIL_BAD_PROOF);
	cli_proof(key, len, nonce, RMP_PROTO_VERSION, "a", "victim",
		       other_port, p);
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "victim", srv, p),
		 RMP_DETAIL_BAD_PROOF);

	/* The client saw 192.0.2.1:7471 (srv); we, on ::, see it mapped. */
	if (inet_pton(AF_INET6, "::ffff:192.0.2.1", &in6.sin6_addr) != 1 ||
	    rmp_auth_endpoint((struct sockaddr *)&in6, mapped))
		abort();
	cli_proof(key, len, nonce, RMP_PROTO_VERSION, "a", "victim", srv,
		       p);
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "victim", mapped, p),
		 RMP_DETAIL_NONE);

	/* The relayed proof stays wrong after the right one was accepted:
	 * it is no replay, it never was good. */
	cli_proof(key, len, nonce, RMP_PROTO_VERSION, "a", "victim",
		       relay, p);
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "victim", srv, p),
		 RMP_DETAIL_BAD_PROOF);
	rmp_wipe(key, sizeof(key));
	rmp_tenants_free(ts);
}

/* Key files others can read, or that hold no key, fail the whole table. */
static void test_bad_key_files(void)
{
	struct rmp_config cfg;
	struct rmp_tenants *ts;

	make_config(&cfg, false);
	strcpy(cfg.tenants[2].key_file, open_file);
	CHECK_EQ(chmod(open_file, 0644), 0);
	CHECK(rmp_tenants_new(&cfg) == NULL);
	CHECK_EQ(chmod(open_file, 0640), 0);
	CHECK(rmp_tenants_new(&cfg) == NULL);
	/* Once fixed, it loads. */
	CHECK_EQ(chmod(open_file, 0600), 0);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	rmp_tenants_free(ts);

	/* Not a key. */
	unlink(open_file);
	CHECK_EQ(write_key(open_file, "not a key\n", 0600), 0);
	CHECK(rmp_tenants_new(&cfg) == NULL);
	/* A symlink to a good file. */
	unlink(open_file);
	CHECK_EQ(symlink(good_file, open_file), 0);
	CHECK(rmp_tenants_new(&cfg) == NULL);
	unlink(open_file);

	/* No tenants at all: only anonymous, if enabled. */
	rmp_config_defaults(&cfg);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (ts) {
		unsigned why = 0;

		CHECK(rmp_tenants_find(ts, "", &why) == NULL);
		CHECK_EQ(why, RMP_REJ_ANONYMOUS);
		CHECK(rmp_tenants_find(ts, "a", &why) == NULL);
		CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
		rmp_tenants_free(ts);
	}
}

/* collect -- the names rmp_tenants_next walks through, comma-separated. */
static void collect(const struct rmp_tenants *ts, char *names)
{
	const struct rmp_tenant *t = NULL;

	while ((t = rmp_tenants_next(ts, t))) {
		strcat(names, t->name);
		strcat(names, ",");
	}
}

/*
 * A reload changes tenants in place: a lease or connection keeps its
 * tenant and usage; a removed tenant in use is refused yet kept; a key
 * file that cannot be read changes nothing.
 */
static void test_reload(void)
{
	struct rmp_config cfg, next;
	struct rmp_tenants *ts;
	struct rmp_tenant *a, *c, *t, *anon;
	uint8_t key[RMP_KEY_MAX], nonce[RMP_NONCE_LEN], proof[RMP_PROOF_LEN];
	unsigned why, detail, changes = 99;
	char names[256] = "";
	size_t len;

	make_config(&cfg, false);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	a = rmp_tenants_find(ts, "a", &why);
	c = rmp_tenants_find(ts, "c", &why);
	CHECK(a && c);
	if (!a || !c)
		goto out;
	CHECK_EQ(rmp_tenant_charge(a, MIB / 2, &detail), 0);

	/* Nothing changed: nothing logged as a change. */
	CHECK_EQ(rmp_tenants_reload(ts, &cfg, &changes), 0);
	CHECK_EQ(changes, 0);

	/* a's limit grows, b goes, d comes, anonymous opens. */
	next = cfg;
	next.tenants[0].limits.bytes = 4 * MIB;
	next.tenants[1] = next.tenants[2];          /* c */
	strcpy(next.tenants[2].name, "d");
	strcpy(next.tenants[2].key_file, good_file);
	next.anonymous.enabled = true;
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	/* a, d, anonymous, and c's share of max_leases (4 tenants now; b
	 * was never usable). */
	CHECK_EQ(changes, 4);
	CHECK_EQ(c->max_leases, 65536 / 4);
	CHECK(rmp_tenants_find(ts, "a", &why) == a);
	CHECK_EQ(a->limits.bytes, 4 * MIB);
	CHECK_EQ(a->bytes, MIB / 2);
	CHECK_EQ(a->leases, 1);
	CHECK_EQ(rmp_tenant_charge(a, 2 * MIB, &detail), 0);
	CHECK(rmp_tenants_find(ts, "c", &why) == c);
	CHECK(rmp_tenants_find(ts, "b", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	t = rmp_tenants_find(ts, "d", &why);
	CHECK(t != NULL && t->usable && t->key_len == 16);
	anon = rmp_tenants_find(ts, "", &why);
	CHECK(anon != NULL);
	collect(ts, names);
	CHECK_STR(names, "a,c,d,anonymous,");

	/* a is removed while it holds leases: refused, kept, usage kept. */
	next.tenants[0] = next.tenants[2];            /* d */
	next.ntenants = 2;                            /* d, c */
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK_EQ(changes, 3); /* a, and the shares of c and d */
	CHECK_EQ(c->max_leases, 65536 / 3);
	CHECK(rmp_tenants_find(ts, "a", &why) == NULL);
	CHECK_EQ(why, RMP_REJ_UNKNOWN_TENANT);
	CHECK(!a->usable);
	CHECK_EQ(a->key_len, 0);
	CHECK_EQ(a->leases, 2);
	/* A connection admitted as a before this reload, still to send its
	 * proof, can prove nothing: neither with the empty key the removal
	 * left (anybody can compute that proof) nor with a's old key. */
	memset(nonce, 0x33, sizeof(nonce));
	memset(key, 0, sizeof(key));
	cli_proof(key, 0, nonce, RMP_PROTO_VERSION, "a", "client", srv,
		       proof);
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "client", srv, proof),
		 RMP_DETAIL_BAD_PROOF);
	if (rmp_key_parse(key_a_hex, key, &len))
		abort();
	cli_proof(key, len, nonce, RMP_PROTO_VERSION, "a", "client", srv,
		       proof);
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "client", srv, proof),
		 RMP_DETAIL_BAD_PROOF);
	names[0] = 0;
	collect(ts, names);
	CHECK_STR(names, "d,c,a,anonymous,");
	/* Its leases end; it comes back: the same tenant, usable again. */
	rmp_tenant_uncharge(a, 2 * MIB);
	rmp_tenant_uncharge(a, MIB / 2);
	CHECK_EQ(rmp_tenants_reload(ts, &cfg, &changes), 0);
	CHECK(rmp_tenants_find(ts, "a", &why) == a);
	CHECK(a->usable && a->key_len == 32 && a->limits.bytes == MIB);
	CHECK(rmp_tenants_find(ts, "d", &why) == NULL);
	CHECK(rmp_tenants_find(ts, "", &why) == NULL);
	/* The key is back, so is its proof; anonymous access is off again,
	 * so a connection admitted while it was on is refused now. */
	CHECK_EQ(check_proof(ts, a, nonce, RMP_PROTO_VERSION,
					 "client", srv, proof),
		 RMP_DETAIL_NONE);
	if (anon)
		CHECK_EQ(check_proof(ts, anon, nonce,
						 RMP_PROTO_VERSION, "client",
						 srv, proof),
			 RMP_DETAIL_BAD_PROOF);

	/* A key file others can read fails the reload: nothing changes. */
	if (chmod(open_file, 0644) == 0) {
		next = cfg;
		next.tenants[0].limits.bytes = 8 * MIB;
		strcpy(next.tenants[1].key_file, open_file);
		next.tenants[1].key_len = 0;
		CHECK(rmp_tenants_reload(ts, &next, &changes) < 0);
		CHECK_EQ(a->limits.bytes, MIB);
		CHECK(rmp_tenants_find(ts, "b", &why) == NULL);
		chmod(open_file, 0600);
	}
out:
	rmp_tenants_free(ts);
}

/*
 * A proof counts while the tenant keeps the key it proved: a connection's
 * epoch stops being current when a reload changes the key, removes the
 * tenant (and when it comes back) or turns anonymous access off; limits
 * changing leave it current.
 */
static void test_epoch(void)
{
	struct rmp_config cfg, next;
	struct rmp_tenants *ts;
	struct rmp_tenant *a, *c, *anon;
	uint32_t ea, ec, eanon;
	unsigned why, changes;
	size_t len;

	make_config(&cfg, true);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	a = rmp_tenants_find(ts, "a", &why);
	c = rmp_tenants_find(ts, "c", &why);
	anon = rmp_tenants_find(ts, "", &why);
	CHECK(a && c && anon);
	if (!a || !c || !anon)
		goto out;
	ea = a->epoch;
	ec = c->epoch;
	eanon = anon->epoch;
	CHECK(ea != 0 && ec != 0 && eanon != 0);
	CHECK(rmp_tenant_current(a, ea) && rmp_tenant_current(anon, eanon));
	CHECK(!rmp_tenant_current(a, 0));

	/* Limits change, the same key is read again: proofs still count. */
	next = cfg;
	next.tenants[0].limits.bytes = 4 * MIB;
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK(rmp_tenant_current(a, ea) && rmp_tenant_current(c, ec));

	/* a's key is rotated: a connection that proved the old one is not
	 * current; one proving the new key is. c is untouched. */
	if (rmp_key_parse(key_c_hex, next.tenants[0].key, &len))
		abort();
	next.tenants[0].key_len = len;
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK(a->usable);
	CHECK(!rmp_tenant_current(a, ea));
	CHECK(rmp_tenant_current(a, a->epoch));
	CHECK(rmp_tenant_current(c, ec));
	ea = a->epoch;

	/* a is removed, then added back with the same key: the proofs made
	 * before the removal stay void. */
	next.tenants[0] = next.tenants[2];
	next.ntenants = 2;
	CHECK_EQ(rmp_tenant_charge(a, MIB, &why), 0); /* keeps a alive */
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK(!rmp_tenant_current(a, ea));
	next = cfg;
	next.tenants[0].limits.bytes = 4 * MIB;
	if (rmp_key_parse(key_c_hex, next.tenants[0].key, &len))
		abort();
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK(rmp_tenants_find(ts, "a", &why) == a && a->usable);
	CHECK(!rmp_tenant_current(a, ea));
	rmp_tenant_uncharge(a, MIB);

	/* Anonymous access off and on again: the old proofs stay void. */
	next.anonymous.enabled = false;
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK(!rmp_tenant_current(anon, eanon));
	next.anonymous.enabled = true;
	CHECK_EQ(rmp_tenants_reload(ts, &next, &changes), 0);
	CHECK(!rmp_tenant_current(anon, eanon));
	CHECK(rmp_tenant_current(anon, anon->epoch));
out:
	rmp_tenants_free(ts);
}

/*
 * test_lease_share -- a tenant with no lease limit of its own may hold an
 * equal share of [pool] max_leases (anonymous counting as one tenant
 * when enabled); its own limit wins; a reload that adds a tenant makes
 * the shares smaller.
 */
static void test_lease_share(void)
{
	struct rmp_config cfg;
	struct rmp_tenants *ts;
	struct rmp_tenant *c, *anon;
	unsigned why, detail, changes;
	uint64_t n;

	make_config(&cfg, true);
	cfg.pool.max_leases = 100;
	cfg.anonymous.limits.leases = 0;
	/* a (leases = 2), b, c, anonymous: 100 / 4. */
	CHECK_EQ(rmp_tenant_lease_share(&cfg), 25);
	ts = rmp_tenants_new(&cfg);
	CHECK(ts != NULL);
	if (!ts)
		return;
	c = rmp_tenants_find(ts, "c", &why);
	anon = rmp_tenants_find(ts, "", &why);
	CHECK(c && anon);
	if (!c || !anon) {
		rmp_tenants_free(ts);
		return;
	}
	CHECK_EQ(c->max_leases, 25);
	CHECK_EQ(anon->max_leases, 25);
	CHECK_EQ(rmp_tenants_find(ts, "a", &why)->max_leases, 2);
	for (n = 0; n < 25; n++)
		if (rmp_tenant_charge(c, 64, &detail))
			break;
	CHECK_EQ(n, 25);
	CHECK_EQ(rmp_tenant_charge(c, 64, &detail), -EDQUOT);
	CHECK_EQ(detail, RMP_DETAIL_LEASES);
	/* Another tenant's share is untouched. */
	CHECK_EQ(rmp_tenant_charge(anon, 64, &detail), 0);

	/* Anonymous off: 100 / 3; a reload applies it to c at once. */
	cfg.anonymous.enabled = false;
	CHECK_EQ(rmp_tenant_lease_share(&cfg), 33);
	CHECK_EQ(rmp_tenants_reload(ts, &cfg, &changes), 0);
	CHECK_EQ(c->max_leases, 33);
	CHECK_EQ(rmp_tenant_charge(c, 64, &detail), 0);

	/* No tenant at all, or a tiny max_leases: never 0. */
	cfg.ntenants = 0;
	CHECK_EQ(rmp_tenant_lease_share(&cfg), 100);
	cfg.pool.max_leases = 2;
	cfg.anonymous.enabled = true;
	make_config(&cfg, true);
	cfg.pool.max_leases = 2;
	CHECK_EQ(rmp_tenant_lease_share(&cfg), 1);
	rmp_tenants_free(ts);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/rmp-tenant-XXXXXX",
		 t && *t && t[0] == '/' && strlen(t) < 32 ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	snprintf(good_file, sizeof(good_file), "%s/c.key", tmpdir);
	snprintf(missing_file, sizeof(missing_file), "%s/b.key", tmpdir);
	snprintf(open_file, sizeof(open_file), "%s/open.key", tmpdir);
	if (write_key(good_file, key_c_hex, 0600) ||
	    write_key(open_file, key_c_hex, 0600)) {
		perror("write key");
		return EXIT_FAILURE;
	}

	test_find();
	test_owner();
	test_charge();
	test_lease_share();
	test_epoch();
	test_proof();
	test_proof_relay();
	test_bad_key_files();
	test_reload();

	unlink(good_file);
	unlink(open_file);
	rmdir(tmpdir);
	return check_done();
}

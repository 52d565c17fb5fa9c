/* SPDX-License-Identifier: MIT */
/* tenant.c -- tenants: keys, limits, usage, and the connect-time proof. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tenant.h"
#include "util.h"

/* Proofs accepted recently, to tell a replay from a wrong key. */
#define PROOF_RING 1024

struct rmp_tenants {
	unsigned n;
	struct rmp_tenant anonymous;
	uint8_t proofs[PROOF_RING][RMP_PROOF_LEN];
	unsigned proofs_next, proofs_used;
	struct rmp_tenant v[];
};

/* load_key -- t's key from the config: inline, or its file. */
static int load_key(struct rmp_tenant *t, const struct rmp_tenant_config *tc)
{
	char err[RMP_CONFIG_PATH_LEN + 128];
	int ret;

	if (tc->key_len) {
		memcpy(t->key, tc->key, tc->key_len);
		t->key_len = tc->key_len;
		t->usable = true;
		return 0;
	}
	ret = rmp_key_load(tc->key_file, t->key, &t->key_len, err,
			   sizeof(err));
	if (ret == -ENOENT) {
		log_warn("tenant %s: no key file yet, so no client of it can "
			 "connect; create one with: rmpool keygen > %s && "
			 "chmod 600 %s", t->name, tc->key_file, tc->key_file);
		return 0;
	}
	if (ret) {
		log_err("tenant %s: %s", t->name, err);
		return ret;
	}
	t->usable = true;
	return 0;
}

/* limit -- "N" or "unlimited" for one limit. */
static const char *limit(uint64_t v, char *buf, size_t len)
{
	if (!v)
		return "unlimited";
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* log_limits -- what t may do, once at start (never its key). */
static void log_limits(const struct rmp_tenant *t)
{
	char b[24], l[24], c[24];

	log_info("tenant %s: %s; bytes %s, leases %s, connections %s, "
		 "networks %s", t->name, t->anonymous ? "anonymous clients" :
		 t->usable ? "key loaded" : "NO KEY (refused)",
		 limit(t->limits.bytes, b, sizeof(b)),
		 limit(t->limits.leases, l, sizeof(l)),
		 limit(t->limits.connections, c, sizeof(c)),
		 t->limits.nnetworks ? "restricted" : "any");
}

struct rmp_tenants *rmp_tenants_new(const struct rmp_config *cfg)
{
	struct rmp_tenants *ts;
	int ret = rmp_auth_init();

	if (ret) {
		log_err("libsodium initialisation failed");
		return NULL;
	}
	ts = calloc(1, sizeof(*ts) + cfg->ntenants * sizeof(ts->v[0]));
	if (!ts)
		return NULL;
	ts->n = cfg->ntenants;
	rmp_strlcpy(ts->anonymous.name, "anonymous",
		    sizeof(ts->anonymous.name));
	ts->anonymous.anonymous = true;
	ts->anonymous.usable = cfg->anonymous.enabled;
	ts->anonymous.limits = cfg->anonymous.limits;
	for (unsigned i = 0; i < ts->n; i++) {
		struct rmp_tenant *t = &ts->v[i];

		rmp_strlcpy(t->name, cfg->tenants[i].name, sizeof(t->name));
		t->limits = cfg->tenants[i].limits;
		if (load_key(t, &cfg->tenants[i])) {
			rmp_tenants_free(ts);
			return NULL;
		}
		log_limits(t);
	}
	if (ts->anonymous.usable)
		log_limits(&ts->anonymous);
	else
		log_info("anonymous clients: refused");
	if (!ts->anonymous.usable && ts->n == 0)
		log_warn("no tenant is configured and anonymous access is off: "
			 "every client will be refused");
	return ts;
}

void rmp_tenants_free(struct rmp_tenants *ts)
{
	if (!ts)
		return;
	rmp_wipe(ts, sizeof(*ts) + ts->n * sizeof(ts->v[0]));
	free(ts);
}

struct rmp_tenant *rmp_tenants_find(struct rmp_tenants *ts, const char *name,
				    unsigned *why)
{
	if (!name[0]) {
		*why = RMP_REJ_ANONYMOUS;
		return ts->anonymous.usable ? &ts->anonymous : NULL;
	}
	*why = RMP_REJ_UNKNOWN_TENANT;
	for (unsigned i = 0; i < ts->n; i++)
		if (!strcmp(ts->v[i].name, name))
			return ts->v[i].usable ? &ts->v[i] : NULL;
	return NULL;
}

/* seen -- was proof accepted before? (Only on the failure path.) */
static bool seen(const struct rmp_tenants *ts,
		 const uint8_t proof[RMP_PROOF_LEN])
{
	for (unsigned i = 0; i < ts->proofs_used; i++)
		if (rmp_auth_equal(ts->proofs[i], proof))
			return true;
	return false;
}

unsigned rmp_tenants_check_proof(struct rmp_tenants *ts,
				 const struct rmp_tenant *t,
				 const uint8_t nonce[RMP_NONCE_LEN],
				 uint8_t version, const char *name,
				 const uint8_t proof[RMP_PROOF_LEN])
{
	uint8_t want[RMP_PROOF_LEN];
	bool ok;

	if (t->anonymous)
		return RMP_DETAIL_NONE;
	rmp_auth_proof(t->key, t->key_len, nonce, version, t->name, name,
		       want);
	ok = rmp_auth_equal(want, proof);
	rmp_wipe(want, sizeof(want));
	if (!ok)
		return seen(ts, proof) ? RMP_DETAIL_REPLAYED :
		       RMP_DETAIL_BAD_PROOF;
	memcpy(ts->proofs[ts->proofs_next], proof, RMP_PROOF_LEN);
	ts->proofs_next = (ts->proofs_next + 1) % PROOF_RING;
	if (ts->proofs_used < PROOF_RING)
		ts->proofs_used++;
	return RMP_DETAIL_NONE;
}

int rmp_tenant_charge(struct rmp_tenant *t, uint64_t bytes, unsigned *detail)
{
	const struct rmp_tenant_limits *lim = &t->limits;

	*detail = RMP_DETAIL_NONE;
	if (lim->leases && t->leases + 1 > lim->leases)
		*detail = RMP_DETAIL_LEASES;
	else if (lim->bytes && (bytes > lim->bytes ||
				t->bytes > lim->bytes - bytes))
		*detail = RMP_DETAIL_BYTES;
	if (*detail) {
		t->quota_refusals++;
		return -EDQUOT;
	}
	t->bytes += bytes;
	t->leases++;
	return 0;
}

void rmp_tenant_uncharge(struct rmp_tenant *t, uint64_t bytes)
{
	t->bytes -= bytes;
	t->leases--;
}

bool rmp_tenant_may_connect(const struct rmp_tenant *t)
{
	return !t->limits.connections ||
	       t->connections < t->limits.connections;
}

/* SPDX-License-Identifier: MIT */
/* tenant.c -- tenants: keys, limits, usage, and the connect-time proof. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "parse.h"
#include "tenant.h"
#include "util.h"

/* Proofs accepted recently, to tell a replay from a wrong key. */
#define PROOF_RING 1024

struct rmp_tenants {
	struct rmp_tenant anonymous;
	struct rmp_tenant stranger; /* rmp_tenants_for_connect */
	/* Configured tenants, in config order, then removed ones that
	 * still have leases or connections (unusable, kept for them). */
	TAILQ_HEAD(, rmp_tenant) list;
	/* The last PROOF_RING proofs accepted, and for which tenant. */
	struct {
		uint8_t proof[RMP_PROOF_LEN];
		char tenant[RMP_TENANT_MAX + 1];
	} proofs[PROOF_RING];
	unsigned proofs_next, proofs_used;
};

/* A key as read from the config or its file, before it is used. */
struct loaded_key {
	uint8_t key[RMP_KEY_MAX];
	size_t len;          /* 0: the file does not exist yet */
};

/* load_key -- tc's key: inline, or from its file. */
static int load_key(const struct rmp_tenant_config *tc, struct loaded_key *k)
{
	char err[RMP_CONFIG_PATH_LEN + 128];
	int ret;

	k->len = 0;
	if (tc->key_len) {
		memcpy(k->key, tc->key, tc->key_len);
		k->len = tc->key_len;
		return 0;
	}
	ret = rmp_key_load(tc->key_file, k->key, &k->len, err, sizeof(err));
	if (ret == -ENOENT) {
		log_warn("tenant %s: no key file yet, so no client of it can "
			 "connect; create one with: rmpool keygen > %s && "
			 "chmod 600 %s (or, for a daemon running as user "
			 "rmpool: chgrp rmpool %s && chmod 640 %s)", tc->name,
			 tc->key_file, tc->key_file, tc->key_file,
			 tc->key_file);
		k->len = 0;
		return 0;
	}
	if (ret)
		log_err("tenant %s: %s", tc->name, err);
	return ret;
}

/* limit -- "N" or "unlimited" for one limit. */
static const char *limit(uint64_t v, char *buf, size_t len)
{
	if (!v)
		return "unlimited";
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* log_limits -- what t may do (never its key). */
static void log_limits(const struct rmp_tenant *t, const char *when)
{
	char b[24], l[24], c[24];

	log_info("%stenant %s: %s; bytes %s, leases %s%s, connections %s, "
		 "networks %s", when, t->name, t->anonymous ?
		 "anonymous clients" : t->usable ? "key loaded" :
		 "NO KEY (refused)", limit(t->limits.bytes, b, sizeof(b)),
		 limit(t->max_leases, l, sizeof(l)),
		 t->limits.leases ? "" : " (a share of max_leases)",
		 limit(t->limits.connections, c, sizeof(c)),
		 t->limits.nnetworks ? "restricted" : "any");
}

static struct rmp_tenant *by_name(const struct rmp_tenants *ts,
				  const char *name)
{
	struct rmp_tenant *t;

	TAILQ_FOREACH(t, &ts->list, link)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

static void free_tenant(struct rmp_tenant *t)
{
	rmp_wipe(t, sizeof(*t));
	free(t);
}

/* set_key -- t takes k (wiping the old one); true when it changed. */
static bool set_key(struct rmp_tenant *t, const struct loaded_key *k)
{
	bool changed = t->key_len != k->len ||
		       (k->len && memcmp(t->key, k->key, k->len));

	rmp_wipe(t->key, sizeof(t->key));
	memcpy(t->key, k->key, k->len);
	t->key_len = k->len;
	t->usable = k->len > 0;
	return changed;
}

static bool same_limits(const struct rmp_tenant_limits *a,
			const struct rmp_tenant_limits *b)
{
	return a->bytes == b->bytes && a->leases == b->leases &&
	       a->connections == b->connections &&
	       a->rotate_grace_ms == b->rotate_grace_ms &&
	       a->nnetworks == b->nnetworks &&
	       !memcmp(a->networks, b->networks,
		       a->nnetworks * sizeof(a->networks[0]));
}

/* log_limit_changes -- "reload: tenant T: bytes: 1M -> 32K", one line
 * per limit that changed. */
static void log_limit_changes(const char *name,
			      const struct rmp_tenant_limits *was,
			      const struct rmp_tenant_limits *now)
{
	char a[RMP_FORMAT_LEN], b[RMP_FORMAT_LEN];

	if (was->bytes != now->bytes)
		log_notice("reload: tenant %s: bytes: %s -> %s", name,
			   was->bytes ? rmp_format_size(was->bytes, a, sizeof(a))
				      : "unlimited",
			   now->bytes ? rmp_format_size(now->bytes, b, sizeof(b))
				      : "unlimited");
	if (was->leases != now->leases)
		log_notice("reload: tenant %s: leases: %s -> %s", name,
			   limit(was->leases, a, sizeof(a)),
			   limit(now->leases, b, sizeof(b)));
	if (was->connections != now->connections)
		log_notice("reload: tenant %s: connections: %s -> %s", name,
			   limit(was->connections, a, sizeof(a)),
			   limit(now->connections, b, sizeof(b)));
	if (was->nnetworks != now->nnetworks ||
	    memcmp(was->networks, now->networks,
		   now->nnetworks * sizeof(now->networks[0])))
		log_notice("reload: tenant %s: networks changed (%u -> %u "
			   "networks)", name, was->nnetworks, now->nnetworks);
}

/* apply_configured -- the tenants cfg names: added, or their key and
 * limits changed (each change logged). Returns the changes. */
static unsigned apply_configured(struct rmp_tenants *ts,
				 const struct rmp_config *cfg,
				 const struct loaded_key *keys, bool start,
				 uint64_t share)
{
	struct rmp_tenant *t;
	unsigned changes = 0;

	/* Every tenant is "removed" until the config names it. */
	TAILQ_FOREACH(t, &ts->list, link)
		t->configured = false;
	for (unsigned i = 0; i < cfg->ntenants; i++) {
		const struct rmp_tenant_config *tc = &cfg->tenants[i];
		bool added = false, key_changed, lim_changed;
		uint64_t max_leases;

		t = by_name(ts, tc->name);
		if (!t) {
			t = calloc(1, sizeof(*t));
			if (!t) {
				log_err("tenant %s: out of memory", tc->name);
				continue;
			}
			rmp_strlcpy(t->name, tc->name, sizeof(t->name));
			added = true;
		}
		/* Config order, for listings. */
		if (!added)
			TAILQ_REMOVE(&ts->list, t, link);
		TAILQ_INSERT_TAIL(&ts->list, t, link);
		t->configured = true;
		key_changed = set_key(t, &keys[i]);
		if (key_changed)
			t->epoch++;
		lim_changed = !same_limits(&t->limits, &tc->limits);
		if (lim_changed && !start && !added)
			log_limit_changes(t->name, &t->limits, &tc->limits);
		/* A share changes with the number of tenants, too. */
		max_leases = tc->limits.leases ? tc->limits.leases : share;
		lim_changed |= t->max_leases != max_leases;
		t->limits = tc->limits;
		t->max_leases = max_leases;
		if (start) {
			log_limits(t, "");
		} else if (added) {
			log_limits(t, "reload: added ");
			changes++;
		} else if (key_changed || lim_changed) {
			if (key_changed)
				log_notice("reload: tenant %s: key %s; its %"
					   PRIu32 " connection(s) proved the "
					   "old one: no new lease, key or time "
					   "for them", t->name,
					   t->usable ? "changed" : "gone: "
					   "refused until it is created",
					   t->connections);
			if (lim_changed)
				log_limits(t, "reload: ");
			changes++;
		}
	}
	return changes;
}

/* drop_removed -- the tenants cfg no longer names: refused from now on,
 * kept (after the configured ones) while something uses them. Returns
 * the changes. */
static unsigned drop_removed(struct rmp_tenants *ts)
{
	TAILQ_HEAD(, rmp_tenant) removed;
	struct rmp_tenant *t, *next;
	unsigned changes = 0;

	TAILQ_INIT(&removed);
	for (t = TAILQ_FIRST(&ts->list); t; t = next) {
		next = TAILQ_NEXT(t, link);
		if (t->configured)
			continue;
		TAILQ_REMOVE(&ts->list, t, link);
		if (t->usable) {
			log_notice("reload: tenant %s removed: new connections "
				   "are refused; its %" PRIu64 " lease(s) and %"
				   PRIu32 " connection(s) live on to their end",
				   t->name, t->leases, t->connections);
			changes++;
		}
		t->usable = false;
		t->epoch++;
		rmp_wipe(t->key, sizeof(t->key));
		t->key_len = 0;
		if (!t->leases && !t->connections && !t->pending &&
		    !t->ending_bytes)
			free_tenant(t);
		else
			TAILQ_INSERT_TAIL(&removed, t, link);
	}
	TAILQ_CONCAT(&ts->list, &removed, link);
	return changes;
}

/* apply_anonymous -- anonymous clients as cfg says. Returns the changes. */
static unsigned apply_anonymous(struct rmp_tenants *ts,
				const struct rmp_config *cfg, bool start,
				uint64_t share)
{
	bool anon_was = ts->anonymous.usable, anon_changed;
	unsigned changes = 0;

	ts->anonymous.usable = cfg->anonymous.enabled;
	if (anon_was && !ts->anonymous.usable)
		ts->anonymous.epoch++;
	anon_changed = anon_was != ts->anonymous.usable ||
		       !same_limits(&ts->anonymous.limits,
				    &cfg->anonymous.limits);
	ts->anonymous.limits = cfg->anonymous.limits;
	ts->anonymous.max_leases = cfg->anonymous.limits.leases ?
				   cfg->anonymous.limits.leases : share;
	if (!start && anon_changed) {
		changes++;
		if (ts->anonymous.usable)
			log_limits(&ts->anonymous, "reload: ");
		else
			log_notice("reload: anonymous clients: refused from "
				   "now on");
	}
	if (start && ts->anonymous.usable)
		log_limits(&ts->anonymous, "");
	else if (start)
		log_info("anonymous clients: refused");
	if (!ts->anonymous.usable && cfg->ntenants == 0)
		log_warn("no tenant is configured and anonymous access is off: "
			 "every client will be refused");
	return changes;
}

/*
 * apply -- make ts what cfg says, with keys already loaded: tenants are
 * updated in place (a lease or connection points at its tenant), added,
 * or taken out of use. Returns how many things changed (logged).
 */
static unsigned apply(struct rmp_tenants *ts, const struct rmp_config *cfg,
		      const struct loaded_key *keys, bool start)
{
	uint64_t share = rmp_tenant_lease_share(cfg);
	unsigned changes;

	changes = apply_configured(ts, cfg, keys, start, share);
	changes += drop_removed(ts);
	changes += apply_anonymous(ts, cfg, start, share);
	return changes;
}

/* load_keys -- every tenant's key of cfg, or nothing (-errno, logged). */
static struct loaded_key *load_keys(const struct rmp_config *cfg, int *err)
{
	struct loaded_key *keys = calloc(cfg->ntenants + 1, sizeof(*keys));

	*err = -ENOMEM;
	if (!keys)
		return NULL;
	for (unsigned i = 0; i < cfg->ntenants; i++) {
		*err = load_key(&cfg->tenants[i], &keys[i]);
		if (*err) {
			rmp_wipe(keys, (cfg->ntenants + 1) * sizeof(*keys));
			free(keys);
			return NULL;
		}
	}
	*err = 0;
	return keys;
}

struct rmp_tenants *rmp_tenants_new(const struct rmp_config *cfg)
{
	struct loaded_key *keys;
	struct rmp_tenants *ts;
	int ret = rmp_auth_init();

	if (ret) {
		log_err("libsodium initialisation failed");
		return NULL;
	}
	ts = calloc(1, sizeof(*ts));
	if (!ts)
		return NULL;
	TAILQ_INIT(&ts->list);
	rmp_strlcpy(ts->anonymous.name, "anonymous",
		    sizeof(ts->anonymous.name));
	ts->anonymous.anonymous = true;
	ts->anonymous.configured = true;
	ts->anonymous.epoch = 1;
	rmp_strlcpy(ts->stranger.name, "(unknown)", sizeof(ts->stranger.name));
	ts->stranger.stranger = true;
	ts->stranger.key_len = 32;
	rmp_auth_random(ts->stranger.key, ts->stranger.key_len);
	keys = load_keys(cfg, &ret);
	if (!keys) {
		rmp_tenants_free(ts);
		return NULL;
	}
	apply(ts, cfg, keys, true);
	rmp_wipe(keys, (cfg->ntenants + 1) * sizeof(*keys));
	free(keys);
	return ts;
}

int rmp_tenants_reload(struct rmp_tenants *ts, const struct rmp_config *cfg,
		       unsigned *changes)
{
	struct loaded_key *keys;
	int ret;

	keys = load_keys(cfg, &ret);
	if (!keys)
		return ret;
	*changes = apply(ts, cfg, keys, false);
	rmp_wipe(keys, (cfg->ntenants + 1) * sizeof(*keys));
	free(keys);
	return 0;
}

void rmp_tenants_free(struct rmp_tenants *ts)
{
	struct rmp_tenant *t;

	if (!ts)
		return;
	while ((t = TAILQ_FIRST(&ts->list))) {
		TAILQ_REMOVE(&ts->list, t, link);
		free_tenant(t);
	}
	rmp_wipe(ts, sizeof(*ts));
	free(ts);
}

struct rmp_tenant *rmp_tenants_find(struct rmp_tenants *ts, const char *name,
				    unsigned *why)
{
	struct rmp_tenant *t;

	if (!name[0]) {
		*why = RMP_REJ_ANONYMOUS;
		return ts->anonymous.usable ? &ts->anonymous : NULL;
	}
	*why = RMP_REJ_UNKNOWN_TENANT;
	t = by_name(ts, name);
	return t && t->usable ? t : NULL;
}

struct rmp_tenant *rmp_tenants_for_connect(struct rmp_tenants *ts,
					   const char *name, unsigned *why)
{
	struct rmp_tenant *t = rmp_tenants_find(ts, name, why);

	if (t || *why == RMP_REJ_ANONYMOUS)
		return t;
	return &ts->stranger;
}

struct rmp_tenant *rmp_tenants_owner(struct rmp_tenants *ts, const char *name,
				     unsigned *why)
{
	struct rmp_tenant *t;

	/* A reserved name: no configured tenant has it. */
	if (!strcmp(name, ts->anonymous.name)) {
		*why = RMP_REJ_ANONYMOUS;
		return ts->anonymous.usable ? &ts->anonymous : NULL;
	}
	*why = RMP_REJ_UNKNOWN_TENANT;
	t = by_name(ts, name);
	return t && t->configured ? t : NULL;
}

const struct rmp_tenant *rmp_tenants_next(const struct rmp_tenants *ts,
					  const struct rmp_tenant *prev)
{
	const struct rmp_tenant *t;

	if (prev == &ts->anonymous)
		return NULL;
	t = prev ? TAILQ_NEXT(prev, link) : TAILQ_FIRST(&ts->list);
	if (t)
		return t;
	if (ts->anonymous.usable || ts->anonymous.leases ||
	    ts->anonymous.connections)
		return &ts->anonymous;
	return NULL;
}

/*
 * seen -- was proof accepted before for the tenant called name? Only then
 * is a failed proof told as a replay: one accepted for another tenant and
 * shown under a name that exists would otherwise be told apart from one
 * under a name nobody has. The whole ring is read whatever the answer,
 * for every proof, so that the time taken tells nothing either.
 */
static bool seen(const struct rmp_tenants *ts,
		 const uint8_t proof[RMP_PROOF_LEN], const char *name)
{
	bool hit = false;

	for (unsigned i = 0; i < ts->proofs_used; i++)
		if (rmp_auth_equal(ts->proofs[i].proof, proof) &&
		    !strcmp(ts->proofs[i].tenant, name))
			hit = true;
	return hit;
}

unsigned rmp_tenants_check_proof(struct rmp_tenants *ts,
				 const struct rmp_tenant *t,
				 const uint8_t snonce[RMP_NONCE_LEN],
				 const uint8_t cnonce[RMP_NONCE_LEN],
				 uint8_t version, const char *name,
				 const uint8_t server[RMP_ENDPOINT_LEN],
				 const uint8_t proof[RMP_PROOF_LEN],
				 uint8_t server_proof[RMP_PROOF_LEN])
{
	bool own = t->usable && t->key_len;
	const struct rmp_tenant *key_of = own ? t : &ts->stranger;
	uint8_t want[RMP_PROOF_LEN];
	bool ok, replayed;

	/* A connection admitted before a reload removed its tenant, took
	 * its key away or turned anonymous access off can prove nothing
	 * now: a removed key is empty, and a proof made with the empty key
	 * is one anybody can make. Such a proof, and the stranger's, is
	 * checked against the stranger's key, which nobody knows: the same
	 * work as for a wrong key, and the same answer. */
	memset(server_proof, 0, RMP_PROOF_LEN);
	if (t->anonymous && t->usable)
		return RMP_DETAIL_NONE;
	rmp_auth_proof(RMP_AUTH_CLIENT, key_of->key, key_of->key_len, snonce,
		       cnonce, version, t->name, name, server, want);
	ok = rmp_auth_equal(want, proof) && own;
	rmp_wipe(want, sizeof(want));
	replayed = seen(ts, proof, t->name);
	if (!ok)
		return own && replayed ? RMP_DETAIL_REPLAYED :
		       RMP_DETAIL_BAD_PROOF;
	memcpy(ts->proofs[ts->proofs_next].proof, proof, RMP_PROOF_LEN);
	rmp_strlcpy(ts->proofs[ts->proofs_next].tenant, t->name,
		    sizeof(ts->proofs[0].tenant));
	ts->proofs_next = (ts->proofs_next + 1) % PROOF_RING;
	if (ts->proofs_used < PROOF_RING)
		ts->proofs_used++;
	rmp_auth_proof(RMP_AUTH_SERVER, t->key, t->key_len, snonce, cnonce,
		       version, t->name, name, server, server_proof);
	return RMP_DETAIL_NONE;
}

bool rmp_tenant_current(const struct rmp_tenant *t, uint32_t epoch)
{
	return t->usable && t->epoch == epoch;
}

int rmp_tenant_charge(struct rmp_tenant *t, uint64_t bytes, unsigned *detail)
{
	const struct rmp_tenant_limits *lim = &t->limits;

	*detail = RMP_DETAIL_NONE;
	if (t->leases + 1 > t->max_leases)
		*detail = RMP_DETAIL_LEASES;
	else if (lim->bytes && (bytes > lim->bytes ||
				t->bytes > lim->bytes - bytes ||
				t->ending_bytes > 2 * lim->bytes - bytes -
						  t->bytes))
		*detail = RMP_DETAIL_BYTES;
	if (*detail) {
		t->quota_refusals++;
		return -EDQUOT;
	}
	t->bytes += bytes;
	t->leases++;
	return 0;
}

uint64_t rmp_tenant_lease_share(const struct rmp_config *cfg)
{
	uint64_t n = cfg->ntenants + (cfg->anonymous.enabled ? 1 : 0);
	uint64_t share = n ? cfg->pool.max_leases / n : cfg->pool.max_leases;

	return share ? share : 1;
}

void rmp_tenant_adopt(struct rmp_tenant *t, uint64_t bytes)
{
	t->bytes += bytes;
	t->leases++;
}

void rmp_tenant_uncharge(struct rmp_tenant *t, uint64_t bytes)
{
	t->bytes -= bytes;
	t->leases--;
}

void rmp_tenant_end(struct rmp_tenant *t, uint64_t bytes)
{
	rmp_tenant_uncharge(t, bytes);
	t->ending_bytes += bytes;
}

void rmp_tenant_settled(struct rmp_tenant *t, uint64_t bytes)
{
	t->ending_bytes -= bytes;
}

bool rmp_tenant_may_connect(const struct rmp_tenant *t)
{
	return !t->limits.connections ||
	       t->connections < t->limits.connections;
}

/* SPDX-License-Identifier: MIT */
/*
 * cluster_record.c -- a cluster lease's record in etcd: the member list
 * of a mirrored or striped lease at PREFIX/leases/ID, sealed with a key
 * from its token and the tenant's key (common/lease_record.h), under an
 * etcd lease
 * that ends a little after the lease does. Each call here is one or two
 * etcd round trips, waited for on the cluster's loop.
 */
#include "cluster_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "etcd.h"
#include "util.h"

/* What a record's etcd lease outlives the lease by: clocks apart, and
 * the renewal's own round trips. */
#define RECORD_SLACK_S 10

void cl_etcd_on_result(const struct rmp_etcd_reply *r, void *arg)
{
	struct cl_etcd_result *res = arg;

	res->done = true;
	res->err = r->err;
	snprintf(res->error, sizeof(res->error), "%s", r->error);
	res->id = r->id;
	res->ttl = r->ttl;
	res->revision = r->revision;
	res->succeeded = r->succeeded;
	if (r->err || !r->nkvs)
		return;
	res->found = true;
	res->mod_revision = r->kvs[0].mod_revision;
	res->create_revision = r->kvs[0].create_revision;
	res->lease = r->kvs[0].lease;
	res->value = malloc(r->kvs[0].value_len + 1);
	if (!res->value) {
		res->err = -ENOMEM;
		return;
	}
	memcpy(res->value, r->kvs[0].value, r->kvs[0].value_len);
	res->value[r->kvs[0].value_len] = 0;
	res->value_len = r->kvs[0].value_len;
}

int cl_etcd_wait(struct rmp_cluster *cl, int ret, struct cl_etcd_result *res)
{
	while (!ret && !res->done)
		event_base_loop(cl->base, EVLOOP_ONCE);
	return ret ? ret : res->err;
}

int cl_etcd_said(struct rmp_cluster *cl, int err,
		 const struct cl_etcd_result *res, const char *what)
{
	if (err)
		cl_say(cl, "%s in etcd: %s", what,
		       err == -ENOMEM ? "out of memory" : res->error[0] ?
		       res->error : rmp_strerror(err));
	return err;
}

/* finish -- cl_etcd_wait, and why it failed in cl->err. */
static int finish(struct rmp_cluster *cl, int ret, struct cl_etcd_result *res,
		  const char *what)
{
	return cl_etcd_said(cl, cl_etcd_errno(cl_etcd_wait(cl, ret, res)), res,
			    what);
}

void cl_lease_key(const struct rmp_cluster *cl, const struct cl_record *rec,
		  const char *dir, char *key, size_t cap)
{
	char id[2 * RMP_CTOKEN_ID_LEN + 1];

	rmp_ctoken_id_hex(&rec->t, id);
	snprintf(key, cap, "%s%s/%s", cl->prefix, dir, id);
}

/* seal -- rec's record sealed with its token: length, or -EINVAL /
 * -ENOSPC with why in cl->err. */
static int seal(struct rmp_cluster *cl, const struct cl_record *rec,
		uint8_t *out, size_t cap)
{
	char *plain = malloc(RMP_LREC_PLAIN_MAX);
	int n = plain ? rmp_lrec_encode(&rec->r, plain, RMP_LREC_PLAIN_MAX)
		      : -ENOMEM;

	if (n >= 0)
		n = rmp_lrec_seal(&rec->t, rec->key, plain, (size_t)n, out,
				  cap);
	if (plain)
		rmp_wipe(plain, RMP_LREC_PLAIN_MAX);
	free(plain);
	if (n < 0)
		cl_say(cl, "the lease's member list cannot be written (%s)",
		       rmp_strerror(n));
	return n;
}

/* put -- rec's record at its key under rec->etcd_lease: created (only
 * when it does not exist) or replacing the one of rec->mod_revision.
 * 0 and rec->mod_revision the new one (a write txn's revision is its
 * put's); -EAGAIN when it was not there as expected. */
static int put(struct rmp_cluster *cl, struct cl_record *rec, bool create)
{
	struct cl_etcd_result res = { 0 };
	char key[CL_PREFIX_MAX + 64];
	uint8_t *sealed = malloc(RMP_LREC_SEALED_MAX);
	int n, ret;

	if (!sealed) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	cl_lease_key(cl, rec, "leases", key, sizeof(key));
	n = seal(cl, rec, sealed, RMP_LREC_SEALED_MAX);
	if (n < 0) {
		free(sealed);
		return n;
	}
	ret = create ? rmp_etcd_create(cl->etcd, key, sealed, (size_t)n,
				       rec->etcd_lease, cl_etcd_on_result, &res)
		     : rmp_etcd_put_if(cl->etcd, key, sealed, (size_t)n,
				       rec->etcd_lease, rec->mod_revision,
				       cl_etcd_on_result, &res);
	free(sealed);
	ret = finish(cl, ret, &res, "writing the lease's record");
	free(res.value);
	if (ret)
		return ret;
	if (!res.succeeded) {
		cl_say(cl, "the lease's record in etcd changed meanwhile");
		return -EAGAIN;
	}
	rec->mod_revision = res.revision;
	return 0;
}

/* grant -- a new etcd lease for a record whose lease has ttl_ms left. */
static int grant(struct rmp_cluster *cl, uint64_t ttl_ms, int64_t *id)
{
	struct cl_etcd_result res = { 0 };
	int ret = rmp_etcd_grant(cl->etcd, (int64_t)((ttl_ms + 999) / 1000) +
				 RECORD_SLACK_S, cl_etcd_on_result, &res);

	ret = finish(cl, ret, &res, "leasing the lease's record");
	*id = res.id;
	return ret;
}

/* revoke -- end etcd lease id and the record under it (best effort:
 * its ttl ends it anyway). */
static int revoke(struct rmp_cluster *cl, int64_t id)
{
	struct cl_etcd_result res = { 0 };
	int ret = rmp_etcd_revoke(cl->etcd, id, cl_etcd_on_result, &res);

	while (!ret && !res.done)
		event_base_loop(cl->base, EVLOOP_ONCE);
	if (!ret && res.err == -ENOENT)
		return 0; /* ended already */
	return finish(cl, ret, &res, "removing the lease's record");
}

int cl_record_key(struct rmp_cluster *cl, struct cl_record *rec)
{
	uint8_t key[RMP_KEY_MAX], seal[RMP_LREC_KEY_LEN];
	char why[CL_ERRBUF - 64];
	size_t len = 0;
	int ret;

	if (cl->copts.key) {
		len = cl->copts.key_len;
		memcpy(key, cl->key, len);
	} else if (cl->key_file[0]) {
		ret = rmp_key_load(cl->key_file, key, &len, why, sizeof(why));
		if (ret) {
			rmp_wipe(key, sizeof(key));
			cl_say(cl, "tenant %s: key file %s", cl->tenant, why);
			return ret == -ENOENT ? -ENOENT : -EACCES;
		}
	}
	ret = rmp_lrec_key(&rec->t, cl->tenant, len ? key : NULL, len, seal);
	rmp_wipe(key, sizeof(key));
	if (ret) {
		cl_say(cl, "tenant %s: a key of %zu bytes", cl->tenant, len);
		return ret;
	}
	if (rec->has_key && memcmp(seal, rec->key, sizeof(seal))) {
		/* the tenant's key was rotated */
		memcpy(rec->prev_key, rec->key, sizeof(rec->prev_key));
		rec->has_prev = true;
	}
	memcpy(rec->key, seal, sizeof(seal));
	rec->has_key = true;
	rmp_wipe(seal, sizeof(seal));
	return 0;
}

int cl_record_create(struct rmp_cluster *cl, struct cl_record *rec,
		     uint64_t ttl_ms)
{
	int ret = grant(cl, ttl_ms, &rec->etcd_lease);

	if (!ret)
		ret = put(cl, rec, true);
	if (ret && rec->etcd_lease)
		revoke(cl, rec->etcd_lease);
	rec->granted = ret ? 0 : rec->etcd_lease;
	return ret;
}

/* open_value -- a record's sealed value opened with rec's keys (the one
 * before a rotation too) and decoded into *r: 0, -ENOENT (it does not
 * open: not this tenant's, or forged), -EPROTO (not a record),
 * -EOPNOTSUPP (an erasure-coded lease, which this library cannot open
 * yet), -ENOMEM; why in *why. */
static int open_value(const struct cl_record *rec, const uint8_t *value,
		      size_t len, struct rmp_lease_record *r, char *why,
		      size_t why_len)
{
	char *plain = malloc(RMP_LREC_PLAIN_MAX + 1);
	int n, ret = 0;

	if (!plain)
		return -ENOMEM;
	n = rmp_lrec_open(&rec->t, rec->key, value, len, plain,
			  RMP_LREC_PLAIN_MAX + 1);
	if (n < 0 && rec->has_prev) /* sealed before a rotation */
		n = rmp_lrec_open(&rec->t, rec->prev_key, value, len, plain,
				  RMP_LREC_PLAIN_MAX + 1);
	if (n < 0) {
		snprintf(why, why_len, "it does not open");
		ret = -ENOENT;
	} else if (rmp_lrec_decode(plain, (size_t)n, r, why, why_len)) {
		ret = -EPROTO;
	}
	rmp_wipe(plain, RMP_LREC_PLAIN_MAX + 1);
	free(plain);
	return ret;
}

int cl_record_read(struct rmp_cluster *cl, struct cl_record *rec)
{
	struct cl_etcd_result res = { 0 };
	char key[CL_PREFIX_MAX + 64], why[160];
	int ret;

	cl_lease_key(cl, rec, "leases", key, sizeof(key));
	ret = rmp_etcd_range(cl->etcd, key, false, cl_etcd_on_result, &res);
	ret = finish(cl, ret, &res, "reading the lease's record");
	if (!ret && !res.found) {
		cl_say(cl, "the lease has no record in etcd (freed, or its "
		       "time ran out)");
		ret = -ENOENT;
	}
	if (!ret)
		ret = open_value(rec, res.value, res.value_len, &rec->r, why,
				 sizeof(why));
	if (ret == -ENOENT && res.found)
		/* not sealed by a holder of this token and of our tenant's
		 * key: another tenant's, or a forgery */
		cl_say(cl, "the lease's record in etcd does not open with "
		       "this token and tenant %s's key",
		       cl->tenant[0] ? cl->tenant : "anonymous");
	else if (ret == -EPROTO)
		cl_say(cl, "the lease's record in etcd is not valid: %s", why);
	else if (ret == -EOPNOTSUPP)
		cl_say(cl, "the lease is %s: this library does not open "
		       "erasure-coded leases yet", why);
	if (!ret) {
		rec->mod_revision = res.mod_revision;
		rec->create_revision = res.create_revision;
		rec->etcd_lease = res.lease;
	}
	free(res.value);
	return ret;
}

/* One look through a record's history (cl_record_newest). */
struct history {
	const struct cl_record *rec; /* its token and keys */
	int64_t until;               /* the revision of its value now */
	bool done, over;             /* seen up to until; the watch ended */
	int err;
	struct rmp_lease_record best; /* the newest that opened ... */
	int64_t best_rev;             /* ... written at this revision */
};

static void on_history(const struct rmp_etcd_reply *r, void *arg)
{
	struct history *h = arg;
	struct rmp_lease_record x;
	char why[160];

	if (r->err) {
		h->err = r->err;
		h->over = h->done = true;
		return;
	}
	for (unsigned i = 0; i < r->nkvs; i++) {
		const struct rmp_etcd_kv *kv = &r->kvs[i];

		/* a value of ours: by epoch, the later of one epoch */
		if (!kv->deleted &&
		    !open_value(h->rec, (const uint8_t *)kv->value,
				kv->value_len, &x, why, sizeof(why)) &&
		    (!h->best_rev || x.epoch >= h->best.epoch)) {
			h->best = x;
			h->best_rev = kv->mod_revision;
		}
		if (kv->mod_revision >= h->until)
			h->done = true;
		rmp_wipe(&x, sizeof(x));
	}
}

int cl_record_newest(struct rmp_cluster *cl, struct cl_record *rec)
{
	struct history h = { .rec = rec };
	struct rmp_etcd_request *w;
	char key[CL_PREFIX_MAX + 64];
	int ret = cl_record_read(cl, rec);

	if (ret)
		return ret;
	h.until = rec->mod_revision;
	cl_lease_key(cl, rec, "leases", key, sizeof(key));
	/* from the key's creation on: every value it had since */
	w = rmp_etcd_watch(cl->etcd, key, rec->create_revision, on_history,
			   &h);
	if (!w) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	while (!h.done)
		event_base_loop(cl->base, EVLOOP_ONCE);
	if (!h.over)
		rmp_etcd_watch_cancel(w);
	if (h.err == -ESTALE) {
		cl_say(cl, "etcd no longer keeps the history of the lease's "
		       "record (compacted): whether a newer record was put "
		       "over cannot be told");
		ret = -ESTALE;
	} else if (h.err) {
		ret = cl_etcd_errno(h.err);
		cl_say(cl, "reading the history of the lease's record: %s",
		       rmp_strerror(ret));
	} else if (h.best_rev && h.best.epoch > rec->r.epoch) {
		/* put back over a newer one: that one again, unmarked */
		struct cl_record newer = *rec;

		newer.r = h.best;
		newer.r.repair_until_ms = 0;
		ret = cl_record_replace(cl, &newer);
		if (!ret) {
			*rec = newer;
			ret = 1;
		}
		rmp_wipe(&newer, sizeof(newer));
	}
	rmp_wipe(&h.best, sizeof(h.best));
	return ret;
}

int cl_record_replace(struct rmp_cluster *cl, struct cl_record *rec)
{
	return put(cl, rec, false);
}

int cl_record_extend(struct rmp_cluster *cl, struct cl_record *rec,
		     uint64_t ttl_ms)
{
	int64_t old = rec->etcd_lease, id;
	int ret = grant(cl, ttl_ms, &id);

	if (ret)
		return ret;
	rec->etcd_lease = id;
	ret = put(cl, rec, false);
	if (ret) {
		rec->etcd_lease = old;
		revoke(cl, id);
		return ret;
	}
	/* the record is under the new lease: the one we granted before,
	 * if any, ends (never one read from etcd: maybe not ours) */
	if (rec->granted)
		revoke(cl, rec->granted);
	rec->granted = id;
	return 0;
}

int cl_record_drop(struct rmp_cluster *cl, struct cl_record *rec)
{
	struct cl_etcd_result res = { 0 };
	char key[CL_PREFIX_MAX + 64];
	int ret;

	/* the key goes whatever etcd lease it is under now; then the one
	 * we granted, if any (never one read from etcd: it may be a node's
	 * registration) */
	cl_lease_key(cl, rec, "leases", key, sizeof(key));
	ret = rmp_etcd_delete(cl->etcd, key, cl_etcd_on_result, &res);
	ret = finish(cl, ret, &res, "removing the lease's record");
	free(res.value);
	if (!ret && rec->granted)
		ret = revoke(cl, rec->granted);
	rec->granted = 0;
	return ret;
}

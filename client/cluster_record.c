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

/* One etcd answer, copied out of its callback. */
struct result {
	bool done;
	int err;
	char error[200];
	int64_t id;            /* grant */
	int64_t revision;      /* etcd's after the request */
	bool succeeded;        /* txn */
	bool found;            /* range, txn failure: the key exists */
	int64_t mod_revision, lease;
	uint8_t *value;        /* the key's value (malloc'ed) */
	size_t value_len;
};

static void on_result(const struct rmp_etcd_reply *r, void *arg)
{
	struct result *res = arg;

	res->done = true;
	res->err = r->err;
	snprintf(res->error, sizeof(res->error), "%s", r->error);
	res->id = r->id;
	res->revision = r->revision;
	res->succeeded = r->succeeded;
	if (r->err || !r->nkvs)
		return;
	res->found = true;
	res->mod_revision = r->kvs[0].mod_revision;
	res->lease = r->kvs[0].lease;
	res->value = malloc(r->kvs[0].value_len + 1);
	if (!res->value) {
		res->err = -ENOMEM;
		return;
	}
	memcpy(res->value, r->kvs[0].value, r->kvs[0].value_len);
	res->value_len = r->kvs[0].value_len;
}

/* finish -- wait for the answer of a request queued with ret (0: it
 * was); the etcd client always answers in its timeouts. 0 or the
 * documented etcd error, with why in cl->err. */
static int finish(struct rmp_cluster *cl, int ret, struct result *res,
		  const char *what)
{
	while (!ret && !res->done)
		event_base_loop(cl->base, EVLOOP_ONCE);
	ret = cl_etcd_errno(ret ? ret : res->err);
	if (ret)
		cl_say(cl, "%s the lease's record in etcd: %s", what,
		       ret == -ENOMEM ? "out of memory" : res->error[0] ?
		       res->error : rmp_strerror(ret));
	return ret;
}

static void record_key(const struct rmp_cluster *cl, const struct cl_record *rec,
		       char *key, size_t cap)
{
	char id[2 * RMP_CTOKEN_ID_LEN + 1];

	rmp_ctoken_id_hex(&rec->t, id);
	snprintf(key, cap, "%sleases/%s", cl->prefix, id);
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
	struct result res = { 0 };
	char key[CL_PREFIX_MAX + 64];
	uint8_t *sealed = malloc(RMP_LREC_SEALED_MAX);
	int n, ret;

	if (!sealed) {
		cl_say(cl, "out of memory");
		return -ENOMEM;
	}
	record_key(cl, rec, key, sizeof(key));
	n = seal(cl, rec, sealed, RMP_LREC_SEALED_MAX);
	if (n < 0) {
		free(sealed);
		return n;
	}
	ret = create ? rmp_etcd_create(cl->etcd, key, sealed, (size_t)n,
				       rec->etcd_lease, on_result, &res)
		     : rmp_etcd_put_if(cl->etcd, key, sealed, (size_t)n,
				       rec->etcd_lease, rec->mod_revision,
				       on_result, &res);
	free(sealed);
	ret = finish(cl, ret, &res, "writing");
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
	struct result res = { 0 };
	int ret = rmp_etcd_grant(cl->etcd, (int64_t)((ttl_ms + 999) / 1000) +
				 RECORD_SLACK_S, on_result, &res);

	ret = finish(cl, ret, &res, "leasing");
	*id = res.id;
	return ret;
}

/* revoke -- end etcd lease id and the record under it (best effort:
 * its ttl ends it anyway). */
static int revoke(struct rmp_cluster *cl, int64_t id)
{
	struct result res = { 0 };
	int ret = rmp_etcd_revoke(cl->etcd, id, on_result, &res);

	while (!ret && !res.done)
		event_base_loop(cl->base, EVLOOP_ONCE);
	if (!ret && res.err == -ENOENT)
		return 0; /* ended already */
	return finish(cl, ret, &res, "removing");
}

int cl_record_key(struct rmp_cluster *cl, struct cl_record *rec)
{
	uint8_t key[RMP_KEY_MAX];
	char why[CL_ERRBUF - 64];
	size_t len = 0;
	int ret;

	if (cl->copts.key) {
		len = cl->copts.key_len;
		memcpy(key, cl->key, len);
	} else if (cl->key_file[0]) {
		ret = rmp_key_load(cl->key_file, key, &len, why, sizeof(why));
		if (ret) {
			cl_say(cl, "tenant %s: key file %s", cl->tenant, why);
			return ret == -ENOENT ? -ENOENT : -EACCES;
		}
	}
	rmp_lrec_key(&rec->t, cl->tenant, len ? key : NULL, len, rec->key);
	rmp_wipe(key, sizeof(key));
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

int cl_record_read(struct rmp_cluster *cl, struct cl_record *rec)
{
	struct result res = { 0 };
	char key[CL_PREFIX_MAX + 64], why[160];
	char *plain = NULL;
	int ret, n = 0;

	record_key(cl, rec, key, sizeof(key));
	ret = rmp_etcd_range(cl->etcd, key, false, on_result, &res);
	ret = finish(cl, ret, &res, "reading");
	if (!ret && !res.found) {
		cl_say(cl, "the lease has no record in etcd (freed, or its "
		       "time ran out)");
		ret = -ENOENT;
	}
	if (!ret && !(plain = malloc(RMP_LREC_PLAIN_MAX + 1)))
		ret = -ENOMEM;
	if (!ret) {
		n = rmp_lrec_open(&rec->t, rec->key, res.value,
				  res.value_len, plain, RMP_LREC_PLAIN_MAX + 1);
		if (n < 0) {
			/* not sealed by a holder of this token and of our
			 * tenant's key: another tenant's, or a forgery */
			cl_say(cl, "the lease's record in etcd does not open "
			       "with this token and tenant %s's key",
			       cl->tenant[0] ? cl->tenant : "anonymous");
			ret = -ENOENT; /* as a wrong secret is to ATTACH */
		}
	}
	if (!ret && rmp_lrec_decode(plain, (size_t)n, &rec->r, why,
				    sizeof(why))) {
		cl_say(cl, "the lease's record in etcd is not valid: %s", why);
		ret = -EPROTO;
	}
	if (!ret) {
		rec->mod_revision = res.mod_revision;
		rec->etcd_lease = res.lease;
	}
	if (plain)
		rmp_wipe(plain, RMP_LREC_PLAIN_MAX + 1);
	free(plain);
	free(res.value);
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
	struct result res = { 0 };
	char key[CL_PREFIX_MAX + 64];
	int ret;

	/* the key goes whatever etcd lease it is under now; then the one
	 * we granted, if any (never one read from etcd: it may be a node's
	 * registration) */
	record_key(cl, rec, key, sizeof(key));
	ret = rmp_etcd_delete(cl->etcd, key, on_result, &res);
	ret = finish(cl, ret, &res, "removing");
	free(res.value);
	if (!ret && rec->granted)
		ret = revoke(cl, rec->granted);
	rec->granted = 0;
	return ret;
}

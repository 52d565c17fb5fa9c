/* SPDX-License-Identifier: MIT */
/* fuzz_etcd.c -- libFuzzer target: what etcd's gateway answers, read by
 * daemon/etcd_reply.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/etcd_reply.h"

/*
 * The first byte picks the request the answer is for, the second its
 * HTTP status; the rest is the body, never trusted. Beyond "no crash,
 * no leak, no UB" the target asserts what daemon/etcd.c and cluster.c
 * rely on: err is one of the documented ones; a reply that says success
 * keeps its key-value pairs within the reply's own memory, each byte
 * string NUL-terminated at its length; a lease it grants or keeps alive
 * has a TTL above 0; the error text holds no control character (it goes
 * to the log); clearing leaves nothing behind.
 *
 * Seeds (real answers of etcd 3.4) are in corpus/fuzz_etcd/, keywords in
 * fuzz_etcd.dict.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int statuses[] = { 200, 400, 401, 403, 404, 500, 503, 0 };

static void check_kv(const struct rmp_etcd_reply *r, size_t body_len,
		     const struct rmp_etcd_kv *kv)
{
	size_t cap = body_len + 2 * RMP_ETCD_KVS_MAX + 1;

	if (!r->mem || kv->key < r->mem || kv->value < r->mem ||
	    kv->key + kv->key_len >= r->mem + cap ||
	    kv->value + kv->value_len >= r->mem + cap ||
	    kv->key[kv->key_len] || kv->value[kv->value_len])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rmp_etcd_reply r;
	enum rmp_etcd_op op;
	int status, err;

	if (size < 2)
		return 0;
	op = (enum rmp_etcd_op)(data[0] % RMP_ETCD_OPS);
	status = statuses[data[1] % (sizeof(statuses) / sizeof(statuses[0]))];
	err = rmp_etcd_parse(op, status, (const char *)data + 2, size - 2, &r);
	if (err != r.err || r.op != op || r.status != status)
		abort();
	if (err && err != -EPROTO && err != -EACCES && err != -ENOENT &&
	    err != -EIO && err != -ECONNREFUSED && err != -ENOMEM)
		abort();
	if (err && !r.error[0])
		abort();
	for (const char *p = r.error; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	if (!err) {
		if (status != 200 || r.nkvs > RMP_ETCD_KVS_MAX)
			abort();
		for (unsigned i = 0; i < r.nkvs; i++)
			check_kv(&r, size - 2, &r.kvs[i]);
		if ((op == RMP_ETCD_GRANT || op == RMP_ETCD_KEEPALIVE) &&
		    r.ttl <= 0)
			abort();
		if (op == RMP_ETCD_AUTH &&
		    !memchr(r.token, '\0', sizeof(r.token)))
			abort();
	}
	rmp_etcd_reply_clear(&r);
	if (r.mem || r.nkvs || r.err)
		abort();
	return 0;
}

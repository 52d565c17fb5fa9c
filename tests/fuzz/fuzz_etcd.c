/* SPDX-License-Identifier: MIT */
/* fuzz_etcd.c -- libFuzzer target: what etcd's gateway answers, read by
 * common/etcd_reply.c, and the node records in it, read by
 * common/member.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/etcd_reply.h"
#include "../../common/member.h"

/*
 * The first byte picks the request the answer is for, the second its
 * HTTP status; the rest is the body, never trusted. Beyond "no crash,
 * no leak, no UB" the target asserts what common/etcd.c and cluster.c
 * rely on: err is one of the documented ones; a reply that says success
 * keeps its key-value pairs within the reply's own memory, each byte
 * string NUL-terminated at its length; a lease it grants or keeps alive
 * has a TTL above 0; the error text holds no control character (it goes
 * to the log); clearing leaves nothing behind. Each value is read as a
 * node record too: one that decodes holds what the library relies on
 * (a node name, 1.. numeric addresses, a port, largest <= free <= pool,
 * NUL-terminated text), one that does not says why.
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

/* text_ok -- s is NUL-terminated within cap, no control characters. */
static void text_ok(const char *s, size_t cap)
{
	const char *nul = memchr(s, '\0', cap);

	if (!nul)
		abort();
	for (; s < nul; s++)
		if ((unsigned char)*s < 0x20)
			abort();
}

static void check_member(const char *value, size_t len)
{
	struct rmp_member m;
	char why[200] = "";

	if (rmp_member_decode(value, len, &m, why, sizeof(why))) {
		if (!why[0])
			abort();
		return;
	}
	if (!rmp_cluster_node_ok(m.node) || !m.naddrs ||
	    m.naddrs > RMP_MEMBER_ADDRS_MAX || !m.port ||
	    m.largest_free > m.free_bytes || m.free_bytes > m.pool_bytes ||
	    m.nlabels > RMP_CLUSTER_LABELS_MAX)
		abort();
	for (unsigned i = 0; i < m.naddrs; i++)
		text_ok(m.addrs[i], sizeof(m.addrs[i]));
	for (unsigned i = 0; i < m.nlabels; i++) {
		text_ok(m.labels[i].name, sizeof(m.labels[i].name));
		text_ok(m.labels[i].value, sizeof(m.labels[i].value));
	}
	text_ok(m.device, sizeof(m.device));
	text_ok(m.version, sizeof(m.version));
	text_ok(m.keys_mode, sizeof(m.keys_mode));
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
	    err != -EIO && err != -ECONNREFUSED && err != -ENOMEM &&
	    err != -ESTALE)
		abort();
	if (err && !r.error[0])
		abort();
	for (const char *p = r.error; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	if (!err) {
		if (status != 200 || r.nkvs > RMP_ETCD_KVS_MAX)
			abort();
		for (unsigned i = 0; i < r.nkvs; i++) {
			check_kv(&r, size - 2, &r.kvs[i]);
			check_member(r.kvs[i].value, r.kvs[i].value_len);
		}
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

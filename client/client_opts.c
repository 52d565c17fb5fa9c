/* SPDX-License-Identifier: MIT */
/* client_opts.c -- struct rmp_client_opts: its defaults and the checks of a caller's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "client_int.h"
#include "proto.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

/* Defaults and bounds of struct rmp_client_opts. */
#define RMPC_DEF_CONNECT_TIMEOUT_MS 5000
#define RMPC_DEF_OP_TIMEOUT_MS 10000
#define RMPC_DEF_BOUNCE_BYTES (4u << 20)
#define RMPC_DEF_MAX_INFLIGHT 128u
#define RMPC_MIN_BOUNCE_BYTES 4096u
#define RMPC_MAX_BOUNCE_BYTES (1u << 30)
#define RMPC_MAX_INFLIGHT 65536u
/* Adaptive spinning before a wait sleeps (spin.h). */
#define RMPC_DEF_SPIN_MAX_US 1000u
#define RMPC_MAX_SPIN_MAX_US 1000000u
#define RMPC_MAX_RECONNECT_MS 60000u
#define RMPC_DEF_RAIL_STRIPE (256u << 10)
#define RMPC_MIN_RAIL_STRIPE 4096u
#define RMPC_MAX_RAIL_STRIPE (1u << 30)

/* ---- options ------------------------------------------------------- */

void rmp_client_opts_init(struct rmp_client_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->connect_timeout_ms = RMPC_DEF_CONNECT_TIMEOUT_MS;
	opts->op_timeout_ms = RMPC_DEF_OP_TIMEOUT_MS;
	opts->bounce_bytes = RMPC_DEF_BOUNCE_BYTES;
	opts->max_inflight = RMPC_DEF_MAX_INFLIGHT;
	opts->spin_max_us = RMPC_DEF_SPIN_MAX_US;
	opts->reconnect_max_ms = 0;
	opts->rail_stripe = RMPC_DEF_RAIL_STRIPE;
}

/* name_ok -- printable ASCII, at most RMP_NAME_MAX bytes. */
static bool name_ok(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++)
		if (n >= RMP_NAME_MAX || s[n] < 0x20 || s[n] > 0x7e)
			return false;
	return true;
}

/* default_name -- "<hostname>:<pid>", the host part cut to fit. */
static void default_name(char *out)
{
	char host[256] = "", pid[16];
	int plen, i;

	if (gethostname(host, sizeof(host) - 1))
		strcpy(host, "localhost");
	plen = snprintf(pid, sizeof(pid), ":%ld", (long)getpid());
	snprintf(out, RMP_NAME_MAX + 1, "%.*s%s", RMP_NAME_MAX - plen, host,
		 pid);
	for (i = 0; out[i]; i++)
		if (out[i] < 0x20 || out[i] > 0x7e)
			out[i] = '?';
}

int rmpc_client_opts_check(struct rmp_client *c)
{
	struct rmp_client_opts *o = &c->opts;

	if (o->connect_timeout_ms <= 0 || o->op_timeout_ms <= 0)
		return -EINVAL;
	if (o->bounce_bytes < RMPC_MIN_BOUNCE_BYTES ||
	    o->bounce_bytes > RMPC_MAX_BOUNCE_BYTES)
		return -EINVAL;
	if (o->max_inflight < 1 || o->max_inflight > RMPC_MAX_INFLIGHT)
		return -EINVAL;
	if (o->spin_max_us > RMPC_MAX_SPIN_MAX_US)
		return -EINVAL;
	if (o->reconnect_max_ms > RMPC_MAX_RECONNECT_MS)
		return -EINVAL;
	/* A caller of 0.5 knows no rail_stripe: its zero is the default. */
	if (!o->rail_stripe)
		o->rail_stripe = RMPC_DEF_RAIL_STRIPE;
	if (o->rail_stripe < RMPC_MIN_RAIL_STRIPE ||
	    o->rail_stripe > RMPC_MAX_RAIL_STRIPE ||
	    (o->rail_stripe & (o->rail_stripe - 1)))
		return -EINVAL;
	/* Unused since 0.3 (tenant keys replace it); still checked. */
	if (o->credential_len > 16 || (o->credential_len && !o->credential))
		return -EINVAL;
	/* A tenant proves a key; anonymous has none. */
	if (o->tenant && *o->tenant) {
		if (!rmp_tenant_name_ok(o->tenant))
			return -EINVAL;
		if (!!o->key == !!o->key_file)
			return -EINVAL;
		if (o->key && (o->key_len < RMP_KEY_MIN ||
			       o->key_len > RMP_KEY_MAX))
			return -EINVAL;
		if (o->key_file && rmp_strlcpy(c->key_file, o->key_file,
					       sizeof(c->key_file)))
			return -EINVAL;
		strcpy(c->tenant, o->tenant);
		if (o->key) {
			memcpy(c->key, o->key, o->key_len);
			c->key_len = o->key_len;
		}
	} else if (o->key || o->key_file) {
		return -EINVAL;
	}
	if (o->name) {
		if (!name_ok(o->name))
			return -EINVAL;
		strcpy(c->name, o->name);
	} else {
		default_name(c->name);
	}
	o->name = c->name;
	o->credential = NULL;
	o->credential_len = 0;
	o->tenant = c->tenant;
	o->key = NULL; /* the copy in c is wiped at free */
	o->key_file = c->key_file[0] ? c->key_file : NULL;
	return 0;
}

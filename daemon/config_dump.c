/* SPDX-License-Identifier: MIT */
/* config_dump.c -- the config as a file (rmpoold --check-config, the
 * state of a reload) and the first key two configs differ in. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "log.h"
#include "network.h"
#include "util.h"

/* name_of -- the printed spelling of v in a name table. */
static const char *name_of(const struct name_val *names, int v)
{
	size_t i;

	for (i = 0; names[i].name; i++)
		if (names[i].val == v)
			return names[i].name;
	return "?";
}

/*
 * A networks line the dump prints spaced ("networks = a/8, b/16") only up
 * to this length, well below inih's line buffer (INI_MAX_LINE, 200 by
 * default); a longer one compactly ("networks=a/8,b/16", host networks
 * bare, IPv6 shortest), which is never longer than the line it was parsed
 * from, so it fits the buffer that line fitted.
 */
#define DUMP_LINE_SOFT 120

/* dump_networks -- the "networks" line of l. */
static void dump_networks(FILE *f, const char *name,
			  const struct rmp_tenant_limits *l)
{
	char line[RMP_NETWORKS_MAX * (RMP_NETWORK_TEXT_LEN + 2) + 32];
	char t[RMP_NETWORK_TEXT_LEN];
	unsigned int i, n = cfg_nnetworks(l);
	size_t o;

	o = (size_t)snprintf(line, sizeof(line), "%s =", name);
	for (i = 0; i < n; i++) {
		rmp_network_format(&l->networks[i], false, t, sizeof(t));
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s %s",
				      i ? "," : "", t);
	}
	if (o > DUMP_LINE_SOFT) {
		o = (size_t)snprintf(line, sizeof(line), "%s=", name);
		for (i = 0; i < n; i++) {
			rmp_network_format(&l->networks[i], true, t, sizeof(t));
			o += (size_t)snprintf(line + o, sizeof(line) - o,
					      "%s%s", i ? "," : "", t);
		}
	}
	fprintf(f, "%s\n", line);
}

/*
 * dump_keys -- the n keys of tab in base (see cfg_field()), one line each;
 * [section] headers are the caller's.
 */
static void dump_keys(FILE *f, const struct key *tab, size_t n,
		      const void *base, bool show_secrets)
{
	char buf[32], hex[2 * RMP_KEY_MAX + 1];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct key *k = &tab[i];
		const char *v;
		int64_t num;

		if (k->store == ST_KEY) {
			const struct rmp_tenant_config *t = base;
			size_t len = t->key_len < RMP_KEY_MAX ? t->key_len :
								RMP_KEY_MAX;

			if (!len)
				continue;
			if (!show_secrets) {
				fprintf(f, "# %s = (inline, %zu bytes, not "
					"shown)\n", k->name, len);
				continue;
			}
			rmp_key_format(t->key, len, hex, sizeof(hex));
			fprintf(f, "%s = %s\n", k->name, hex);
			rmp_wipe(hex, sizeof(hex));
			continue;
		}
		if (k->store == ST_NETWORKS) {
			dump_networks(f, k->name, cfg_cfield(k, base));
			continue;
		}
		if (k->store == ST_STR) {
			v = cfg_cfield(k, base);
			if ((k->flags & KF_OMIT_EMPTY) && !*v)
				continue;
		} else {
			num = cfg_get_num(k, base);
			if (k->syntax == SY_BOOL)
				v = num ? "yes" : "no";
			else if (k->syntax == SY_NAMES)
				v = name_of(k->names, (int)num);
			else if (k->syntax == SY_NODE && num < 0)
				v = "auto";
			else
				v = cfg_format_num(k, num, buf, sizeof(buf));
		}
		/* "key =" for an empty value: no trailing blank */
		fprintf(f, "%s =%s%s\n", k->name, *v ? " " : "", v);
	}
}

int rmp_config_dump(const struct rmp_config *c, FILE *f, bool show_secrets)
{
	size_t i, end;

	fprintf(f, "# rmpoold effective configuration\n");
	/* cfg_keys in runs of one section each */
	for (i = 0; i < cfg_nkeys; i = end) {
		for (end = i; end < cfg_nkeys &&
			      !strcmp(cfg_keys[end].section,
				      cfg_keys[i].section); end++)
			;
		fprintf(f, "\n[%s]\n", cfg_keys[i].section);
		dump_keys(f, cfg_keys + i, end - i, c, show_secrets);
	}
	for (i = 0; i < c->ntenants && i < RMP_TENANTS_MAX; i++) {
		fprintf(f, "\n[" TENANT_PFX "%s]\n", c->tenants[i].name);
		dump_keys(f, cfg_tenant_keys, cfg_ntenant_keys, &c->tenants[i],
			  show_secrets);
	}
	fflush(f);
	return ferror(f) ? -EIO : 0;
}

/* networks_eq -- a and b list the same networks in the same order. */
static bool networks_eq(const struct rmp_tenant_limits *a,
			const struct rmp_tenant_limits *b)
{
	unsigned int i, n = cfg_nnetworks(a);

	if (n != cfg_nnetworks(b))
		return false;
	for (i = 0; i < n; i++)
		if (!rmp_network_eq(&a->networks[i], &b->networks[i]))
			return false;
	return true;
}

/* diff_keys -- the first of the n keys of tab that differs, or NULL. */
static const struct key *diff_keys(const struct key *tab, size_t n,
				   const void *a, const void *b)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct key *k = &tab[i];

		switch (k->store) {
		case ST_STR:
			if (strcmp(cfg_cfield(k, a), cfg_cfield(k, b)))
				return k;
			break;
		case ST_KEY: {
			const struct rmp_tenant_config *ta = a, *tb = b;

			if (ta->key_len != tb->key_len ||
			    (ta->key_len <= RMP_KEY_MAX &&
			     memcmp(ta->key, tb->key, ta->key_len)))
				return k;
			break;
		}
		case ST_NETWORKS:
			if (!networks_eq(cfg_cfield(k, a), cfg_cfield(k, b)))
				return k;
			break;
		default:
			if (cfg_get_num(k, a) != cfg_get_num(k, b))
				return k;
			break;
		}
	}
	return NULL;
}

const char *rmp_config_diff(const struct rmp_config *a,
			    const struct rmp_config *b)
{
	static _Thread_local char buf[sizeof(TENANT_PFX) + RMP_TENANT_MAX +
				      32];
	const struct rmp_config *x, *y;
	const struct key *k;
	unsigned int i;
	int j, pass;

	k = diff_keys(cfg_keys, cfg_nkeys, a, b);
	if (k)
		return k->qname;
	/* a's tenants, changed or gone; then b's new ones */
	for (pass = 0; pass < 2; pass++) {
		x = pass ? b : a;
		y = pass ? a : b;
		for (i = 0; i < x->ntenants && i < RMP_TENANTS_MAX; i++) {
			const struct rmp_tenant_config *t = &x->tenants[i];

			j = cfg_find_tenant(y, t->name);
			k = j < 0 || pass ? NULL :
				diff_keys(cfg_tenant_keys, cfg_ntenant_keys, t,
					  &y->tenants[j]);
			if (j < 0 || k) {
				snprintf(buf, sizeof(buf), TENANT_PFX "%.*s%s%s",
					 RMP_TENANT_MAX, t->name, k ? "." : "",
					 k ? k->name : "");
				return buf;
			}
		}
	}
	return NULL;
}

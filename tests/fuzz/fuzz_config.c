/* SPDX-License-Identifier: MIT */
/* fuzz_config.c -- libFuzzer target for the config parser and its helpers. */
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.h"

/*
 * Beyond "no crash, no leak, no UB", the target asserts what the daemon
 * relies on: an accepted configuration passes rmp_config_check(), its dump
 * with the secrets parses back to the same values, its dump without them
 * holds no inline key's hex, every network it lists contains its own
 * address (also as an IPv4-mapped peer), and the size/duration formatters
 * print what the parsers read back.
 *
 * Seeds covering every section, tenants included, are in
 * corpus/fuzz_config/, and fuzz_config.dict holds the keywords:
 *   fuzz_config -dict=tests/fuzz/fuzz_config.dict CORPUS_DIR \
 *     tests/fuzz/corpus/fuzz_config
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* dump -- c as text (free it), or NULL when memory ran out. */
static char *dump(const struct rmp_config *c, bool show_secrets)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	if (rmp_config_dump(c, f, show_secrets))
		abort();
	fclose(f);
	return buf;
}

/* roundtrip -- dump c and parse the dump: it must give c again. */
static void roundtrip(const struct rmp_config *c)
{
	struct rmp_config again;
	char err[256], *buf = dump(c, true);

	if (!buf)
		return;
	if (rmp_config_load_string(&again, buf, "dump", err, sizeof(err)) ||
	    rmp_config_diff(c, &again) || rmp_config_diff(&again, c))
		abort();
	free(buf);
}

/*
 * no_secrets -- the dump without secrets is the one with them, each
 * "key = HEX" line replaced by "# key = (inline, N bytes, not shown)".
 */
static void no_secrets(const struct rmp_config *c)
{
	char *with = dump(c, true), *without = dump(c, false), *want, *o;
	const char *l, *e;

	if (!with || !without)
		goto out;
	want = malloc(strlen(with) + 64 * RMP_TENANTS_MAX + 1);
	if (!want)
		goto out;
	for (o = want, l = with; *l; l = e + 1) {
		e = strchr(l, '\n');
		if (!e)
			abort(); /* the dump ends its lines */
		if (!strncmp(l, "key = ", 6))
			o += sprintf(o, "# key = (inline, %zu bytes, not "
				     "shown)\n", (size_t)(e - l - 6) / 2);
		else
			o += sprintf(o, "%.*s\n", (int)(e - l), l);
	}
	if (strcmp(want, without))
		abort();
	free(want);
out:
	free(with);
	free(without);
}

/* own_address -- n contains its own address, as peers of either family. */
static void own_address(const struct rmp_network *n)
{
	struct sockaddr_in6 s6;
	struct sockaddr_in s4;

	memset(&s4, 0, sizeof(s4));
	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	if (n->family == AF_INET) {
		s4.sin_family = AF_INET;
		memcpy(&s4.sin_addr, n->addr, 4);
		if (!rmp_network_match(n, (struct sockaddr *)&s4))
			abort();
		/* ::ffff:a.b.c.d is a.b.c.d */
		s6.sin6_addr.s6_addr[10] = 0xff;
		s6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&s6.sin6_addr.s6_addr[12], n->addr, 4);
	} else {
		memcpy(&s6.sin6_addr, n->addr, 16);
		if (rmp_network_match(n, (struct sockaddr *)&s4))
			abort(); /* AF_UNSPEC: no match */
	}
	if (!rmp_network_match(n, (struct sockaddr *)&s6))
		abort();
}

/* networks -- own_address() for every network c lists. */
static void networks(const struct rmp_config *c)
{
	unsigned int i, j;

	for (j = 0; j < c->anonymous.limits.nnetworks; j++)
		own_address(&c->anonymous.limits.networks[j]);
	for (i = 0; i < c->ntenants; i++)
		for (j = 0; j < c->tenants[i].limits.nnetworks; j++)
			own_address(&c->tenants[i].limits.networks[j]);
}

/* helpers -- the public parse helpers on the same text. */
static void helpers(const char *s)
{
	char buf[32], host[64];
	uint64_t v, w;
	uint16_t port;

	if (!rmp_parse_size(s, &v)) {
		if (rmp_parse_size(rmp_format_size(v, buf, sizeof(buf)), &w) ||
		    v != w)
			abort();
	}
	if (!rmp_parse_duration_ms(s, &v)) {
		rmp_format_duration_ms(v, buf, sizeof(buf));
		if (rmp_parse_duration_ms(buf, &w) || v != w)
			abort();
	}
	rmp_parse_hostport(s, host, sizeof(host), &port);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rmp_config c;
	char err[512];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!rmp_config_load_string(&c, text, "fuzz", err, sizeof(err))) {
		if (rmp_config_check(&c, NULL, NULL, 0))
			abort();
		roundtrip(&c);
		no_secrets(&c);
		networks(&c);
	} else if (!err[0]) {
		abort(); /* every failure must say why */
	}
	if (size < 64)
		helpers(text);
	free(text);
	return 0;
}

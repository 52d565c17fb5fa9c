/* SPDX-License-Identifier: MIT */
/* fuzz_config.c -- libFuzzer target for the config parser and its helpers. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.h"

/*
 * Beyond "no crash, no leak, no UB", the target asserts what the daemon
 * relies on: an accepted configuration passes rmp_config_check(), its dump
 * parses back to the same values, and the size/duration formatters print
 * what the parsers read back.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* roundtrip -- dump c and parse the dump: it must give c again. */
static void roundtrip(const struct rmp_config *c)
{
	struct rmp_config again;
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return;
	if (rmp_config_dump(c, f))
		abort();
	fclose(f);
	if (rmp_config_load_string(&again, buf, "dump", err, sizeof(err)) ||
	    rmp_config_diff(c, &again))
		abort();
	free(buf);
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
	} else if (!err[0]) {
		abort(); /* every failure must say why */
	}
	if (size < 64)
		helpers(text);
	free(text);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * forge_record.c -- rmp-forge: what a holder of a cluster token may write
 * to etcd by hand, for the trust tests: a lease record sealed for TOKEN
 * with the seal this library makes, under the key of the tenant named by
 * RMPOOL_TENANT and RMPOOL_KEY_FILE (another tenant that was shown the
 * token, say), naming members of its choosing.
 *
 *   rmp-forge seal TOKEN EPOCH MEMBER...
 *       a record of one stripe, the MEMBERs (rmp:// tokens) its
 *       replicas, at EPOCH, of RMP_FORGE_LENGTH bytes (default 4 MiB);
 *       the sealed bytes on standard output (etcdctl put KEY < them)
 *   rmp-forge key TOKEN
 *       the record's etcd key below the prefix: leases/ID
 *
 * It also builds against a library whose seal needs the token alone
 * (before 0.7: no RMP_LREC_KEY_LEN), so that the same test shows the
 * forgery working there.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "lease_record.h"

static int die(const char *what)
{
	fprintf(stderr, "rmp-forge: %s\n", what);
	return 1;
}

static int cmd_seal(int argc, char **argv)
{
	static struct rmp_lease_record r;
	static uint8_t sealed[RMP_LREC_SEALED_MAX];
	const char *len_s = getenv("RMP_FORGE_LENGTH");
	struct rmp_ctoken t;
	int n;

	if (argc < 4 || argc - 3 > RMP_LREC_REPLICAS_MAX)
		return die("usage: seal TOKEN EPOCH MEMBER...");
	if (rmp_ctoken_parse(argv[1], &t))
		return die("not a cluster token");
	memset(&r, 0, sizeof(r));
	r.length = len_s ? strtoull(len_s, NULL, 0) : 4u << 20;
	r.stripe_unit = RMP_LREC_UNIT_DEFAULT;
	r.stripes = 1;
	r.replicas = (unsigned)(argc - 3);
	r.epoch = strtoull(argv[2], NULL, 0);
	for (int i = 3; i < argc; i++)
		if (rmp_token_parse(argv[i], &r.member[i - 3]))
			return die("a member is not an rmp:// token");
#ifdef RMP_LREC_KEY_LEN
	{
		const char *tenant = getenv("RMPOOL_TENANT");
		const char *file = getenv("RMPOOL_KEY_FILE");
		uint8_t key[RMP_KEY_MAX], k[RMP_LREC_KEY_LEN];
		char why[256];
		size_t len = 0;

		if (tenant && *tenant && (!file ||
		    rmp_key_load(file, key, &len, why, sizeof(why))))
			return die("no usable RMPOOL_KEY_FILE");
		n = rmp_lrec_key(&t, tenant ? tenant : "", len ? key : NULL,
				 len, k);
		if (!n)
			n = rmp_lrec_seal_record(&t, k, &r, sealed,
						 sizeof(sealed));
	}
#else
	n = rmp_lrec_seal_record(&t, &r, sealed, sizeof(sealed));
#endif
	if (n < 0)
		return die("the record does not seal");
	return fwrite(sealed, 1, (size_t)n, stdout) == (size_t)n ? 0 :
	       die("writing failed");
}

int main(int argc, char **argv)
{
	char id[RMP_CTOKEN_ID_HEX_LEN];
	struct rmp_ctoken t;

	if (argc >= 2 && !strcmp(argv[1], "seal"))
		return cmd_seal(argc - 1, argv + 1);
	if (argc == 3 && !strcmp(argv[1], "key")) {
		if (rmp_ctoken_parse(argv[2], &t))
			return die("not a cluster token");
		rmp_ctoken_id_hex(&t, id);
		printf("leases/%s\n", id);
		return 0;
	}
	return die("usage: rmp-forge seal TOKEN EPOCH MEMBER... | key TOKEN");
}

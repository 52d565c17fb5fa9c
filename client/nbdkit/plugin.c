/* SPDX-License-Identifier: MIT */
/*
 * plugin.c -- nbdkit-rmpool-plugin: a lease as an NBD export, so that
 * the kernel's NBD client (a block device, a file system, swap), qemu
 * and libnbd reach remote memory without a line of code against
 * librmpool. The parameters, nbdkit's callbacks and what each promises;
 * the lease and its connections are lanes.c's. nbdkit-rmpool-plugin(1)
 * is the user's page.
 */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <nbdkit-plugin.h>

#include "lanes.h"

/* Parallel: requests of every connection at once, each thread on a
 * lane of its own (lanes.h); nothing cached here. */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define DEFAULT_LANES 4u

/* A request rides out a lost connection this long (a daemon restart
 * takes seconds), well inside the NBD client's timeout (60 s in the
 * examples). */
#define DEFAULT_RETRY_S 30u

static struct rmpnbd_cfg cfg = { .lanes = DEFAULT_LANES,
				 .retry_s = DEFAULT_RETRY_S };
static char *token;      /* read by nbdkit_read_password: freed at unload */
static bool mlock_all;

static void rmpool_unload(void)
{
	if (token)
		memset(token, 0, strlen(token));
	free(token);
}

/* parse_ec -- "K+M". */
static int parse_ec(const char *v)
{
	char *end;
	unsigned long k = strtoul(v, &end, 10), m;

	if (*end != '+')
		goto bad;
	m = strtoul(end + 1, &end, 10);
	if (*end || k < 2 || k > 12 || m < 1 || m > 4)
		goto bad;
	cfg.ec_k = (unsigned)k;
	cfg.ec_m = (unsigned)m;
	return 0;
bad:
	nbdkit_error("ec=%s: K+M, with K 2 to 12 data and M 1 to 4 parity "
		     "members", v);
	return -1;
}

static int parse_bool(const char *v, bool *out)
{
	int b = nbdkit_parse_bool(v);

	if (b < 0)
		return -1; /* nbdkit said why */
	*out = b;
	return 0;
}

static int rmpool_config(const char *key, const char *value)
{
	int64_t n;

	if (!strcmp(key, "token")) {
		/* "-": asked for; "+FILE": read from FILE; "-FD": from an
		 * fd: a token is a secret, not for ps(1) */
		if (token) {
			nbdkit_error("token= given twice");
			return -1;
		}
		return nbdkit_read_password(value, &token);
	}
	if (!strcmp(key, "server"))
		cfg.server = value;
	else if (!strcmp(key, "cluster"))
		cfg.cluster = value;
	else if (!strcmp(key, "size")) {
		n = nbdkit_parse_size(value);
		if (n <= 0) {
			if (!n)
				nbdkit_error("size=0: a lease has bytes");
			return -1;
		}
		cfg.size = (uint64_t)n;
	} else if (!strcmp(key, "replicas"))
		return nbdkit_parse_unsigned("replicas", value, &cfg.replicas);
	else if (!strcmp(key, "stripes"))
		return nbdkit_parse_unsigned("stripes", value, &cfg.stripes);
	else if (!strcmp(key, "ec"))
		return parse_ec(value);
	else if (!strcmp(key, "spread"))
		cfg.spread = value;
	else if (!strcmp(key, "keep"))
		return parse_bool(value, &cfg.keep);
	else if (!strcmp(key, "save-token"))
		cfg.token_file = value;
	else if (!strcmp(key, "tenant"))
		cfg.tenant = value;
	else if (!strcmp(key, "key-file"))
		cfg.key_file = value;
	else if (!strcmp(key, "mlock"))
		return parse_bool(value, &mlock_all);
	else if (!strcmp(key, "lanes"))
		return nbdkit_parse_unsigned("lanes", value, &cfg.lanes);
	else if (!strcmp(key, "retry"))
		return nbdkit_parse_unsigned("retry", value, &cfg.retry_s);
	else {
		nbdkit_error("unknown parameter %s (see nbdkit-rmpool-plugin(1))",
			     key);
		return -1;
	}
	return 0;
}

/* rmpool_config_complete -- the parameters make sense together: an
 * existing lease, or a new one where to place it. */
static int rmpool_config_complete(void)
{
	bool placed = cfg.replicas || cfg.stripes || cfg.ec_k || cfg.spread;

	cfg.token = token;
	if (!token == !cfg.size) {
		nbdkit_error("give token= (an existing lease) or size= (a new "
			     "one), one of them");
		return -1;
	}
	if (cfg.size && !cfg.server == !cfg.cluster) {
		nbdkit_error("a new lease needs server=HOST[:PORT] or "
			     "cluster=etcd://HOST:PORT, one of them");
		return -1;
	}
	if (token && !strncmp(token, "rmpc://", 7) && !cfg.cluster) {
		nbdkit_error("a cluster token (rmpc://) needs cluster=URL");
		return -1;
	}
	if (placed && !(cfg.cluster && cfg.size)) {
		nbdkit_error("replicas=, stripes=, ec= and spread= place a new "
			     "lease on a cluster (cluster= and size=)");
		return -1;
	}
	if (cfg.ec_k && (cfg.replicas > 1 || cfg.stripes > 1)) {
		nbdkit_error("ec=: no replicas= or stripes= (the code places "
			     "its members)");
		return -1;
	}
	if ((cfg.keep || cfg.token_file) && !cfg.size) {
		nbdkit_error("keep= and save-token= are for a new lease "
			     "(size=)");
		return -1;
	}
	if (cfg.keep && !cfg.token_file) {
		nbdkit_error("keep=true needs save-token=FILE: a lease kept "
			     "and its token lost could only expire");
		return -1;
	}
	if (!cfg.tenant != !cfg.key_file) {
		nbdkit_error("tenant= and key-file= go together");
		return -1;
	}
	if (cfg.lanes < 1 || cfg.lanes > RMPNBD_LANES_MAX) {
		nbdkit_error("lanes=%u: 1 to %u", cfg.lanes, RMPNBD_LANES_MAX);
		return -1;
	}
	return 0;
}

#define rmpool_config_help \
	"token=TOKEN|+FILE|-  an existing lease (rmp:// or rmpc://)\n" \
	"server=HOST[:PORT]   a new lease (size=) on this rmpoold\n" \
	"cluster=URL          etcd of a cluster: a new lease placed there\n" \
	"                     (size=, replicas=, stripes=, ec=K+M, spread=),\n" \
	"                     or the cluster of token=\n" \
	"size=SIZE            a new lease's bytes, freed at the end unless\n" \
	"keep=true            (with save-token=FILE, where its token goes)\n" \
	"tenant=NAME key-file=FILE  the tenant and its key\n" \
	"mlock=true           lock nbdkit's memory (for swap)\n" \
	"lanes=N              connections requests spread over (default 4)\n" \
	"retry=SECONDS        a request rides out a lost connection this\n" \
	"                     long (default 30)"

/* rmpool_after_fork -- connections are made after nbdkit forked: a
 * registered memory region does not survive fork() (its pages become
 * copy on write), and the renewing thread would not either. */
static int rmpool_after_fork(void)
{
	char err[512];
	int ret;

	if (mlock_all && mlockall(MCL_CURRENT | MCL_FUTURE)) {
		nbdkit_error("mlock=true: mlockall: %m (raise the memlock "
			     "limit: LimitMEMLOCK=infinity under systemd)");
		return -1;
	}
	ret = rmpnbd_open(&cfg, err, sizeof(err));
	if (ret) {
		nbdkit_error("rmpool: %s", err);
		return -1;
	}
	return 0;
}

static void rmpool_cleanup(void)
{
	rmpnbd_close();
}

static void *rmpool_open(int readonly)
{
	(void)readonly;
	return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t rmpool_get_size(void *h)
{
	(void)h;
	return (int64_t)rmpnbd_length();
}

/* rmpool_block_size -- any size and alignment works; the preferred is
 * the block a write should not cut (an erasure-coded chunk: a write of
 * part of one reads the rest). */
static int rmpool_block_size(void *h, uint32_t *minimum, uint32_t *preferred,
			     uint32_t *maximum)
{
	(void)h;
	*minimum = 1;
	*preferred = rmpnbd_block();
	*maximum = 0xffffffff;
	return 0;
}

/* rmpool_can_multi_conn -- true: a write has reached the lease's memory
 * when it returns, on whichever lane, and nothing is cached here, so
 * every connection sees it at once. */
static int rmpool_can_multi_conn(void *h)
{
	(void)h;
	return 1;
}

/* rmpool_can_fua -- native: each write is in the remote memory when it
 * returns (remote memory is as durable as it gets: RAM). */
static int rmpool_can_fua(void *h)
{
	(void)h;
	return NBDKIT_FUA_NATIVE;
}

static int rmpool_can_flush(void *h)
{
	(void)h;
	return 1;
}

static int rmpool_is_rotational(void *h)
{
	(void)h;
	return 0;
}

/* io -- one request, its failure told to nbdkit: EIO to the client and
 * why in nbdkit's log. */
static int io(void *buf, uint32_t count, uint64_t off, bool write)
{
	char err[640];

	if (!rmpnbd_io(buf, count, off, write, err, sizeof(err)))
		return 0;
	nbdkit_error("rmpool: %s", err);
	nbdkit_set_error(EIO);
	return -1;
}

static int rmpool_pread(void *h, void *buf, uint32_t count, uint64_t off,
			uint32_t flags)
{
	(void)h;
	(void)flags;
	return io(buf, count, off, false);
}

static int rmpool_pwrite(void *h, const void *buf, uint32_t count,
			 uint64_t off, uint32_t flags)
{
	(void)h;
	(void)flags; /* FUA: every write is where it goes on return */
	return io((void *)buf, count, off, true);
}

/* rmpool_flush -- every write already reached the remote memory when
 * it returned: nothing to do but say so while the lease lives. */
static int rmpool_flush(void *h, uint32_t flags)
{
	char why[256];

	(void)h;
	(void)flags;
	if (!rmpnbd_lost(why, sizeof(why)))
		return 0;
	nbdkit_error("rmpool: flush: the lease was lost (%s)", why);
	nbdkit_set_error(EIO);
	return -1;
}

/* rmpool_trim -- remote memory has no holes to punch: a trimmed range
 * keeps its bytes (NBD lets a trim leave any). */
static int rmpool_trim(void *h, uint32_t count, uint64_t off, uint32_t flags)
{
	(void)count;
	(void)off;
	return rmpool_flush(h, flags);
}

static struct nbdkit_plugin plugin = {
	.name = "rmpool",
	.longname = "rmpool remote memory lease",
	.version = RMP_VERSION,
	.description = "a lease of rmpool remote memory (one-sided RDMA) as "
		       "an NBD export",
	.unload = rmpool_unload,
	.config = rmpool_config,
	.config_complete = rmpool_config_complete,
	.config_help = rmpool_config_help,
	.magic_config_key = "token",
	.after_fork = rmpool_after_fork,
	.cleanup = rmpool_cleanup,
	.open = rmpool_open,
	.get_size = rmpool_get_size,
	.block_size = rmpool_block_size,
	.can_multi_conn = rmpool_can_multi_conn,
	.can_fua = rmpool_can_fua,
	.can_flush = rmpool_can_flush,
	.is_rotational = rmpool_is_rotational,
	.pread = rmpool_pread,
	.pwrite = rmpool_pwrite,
	.flush = rmpool_flush,
	.trim = rmpool_trim,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)

/* SPDX-License-Identifier: MIT */
/* lanes.c -- the served lease on several connections, renewed (lanes.h). */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nbdkit-plugin.h>

#include "lanes.h"
#include "rmpool.h"
#include "token.h"

/* A lost connection is made again by the library, for this long at
 * most between tries: a daemon restarted is not a lost lease. */
#define RECONNECT_MAX_MS 5000u
/* Renewed a third of the ttl before it ends, at most a minute apart;
 * after a failure, again a second later. */
#define RENEW_MAX_MS 60000u
#define RENEW_RETRY_MS 1000u

struct lane {
	pthread_mutex_t mu;
	struct rmp_client *c;   /* a lease of one server: its connection */
	struct rmp_cluster *cl; /* a lease of a cluster: a handle of it */
	struct rmp_lease *l;
};

static struct lane lanes[RMPNBD_LANES_MAX];
static unsigned nlanes;
static atomic_uint next_lane;
static _Thread_local unsigned my_lane; /* 1 + its index; 0: none yet */

static uint64_t length;
static uint32_t block;
static uint64_t retry_ms;
static bool coded;      /* erasure coded: lane 0 writes */
static bool fresh, keep; /* leased here; not freed at the end */

/* bytes the lease took and gave, told at the end (an operator's and
 * the swap test's account of what went to remote memory) */
static _Alignas(64) atomic_uint_fast64_t bytes_written;
static _Alignas(64) atomic_uint_fast64_t bytes_read; /* a line each */

static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static bool lost;
static char lost_why[256];

static pthread_t renewer;
static bool renewing, stopping;
static pthread_mutex_t stop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stop_cv;

/* lane_error -- what the library said of the lane's last failed call. */
static const char *lane_error(const struct lane *ln)
{
	const char *s = ln->cl ? rmp_cluster_last_error(ln->cl) :
		       ln->c ? rmp_client_last_error(ln->c) : "";

	return s && *s ? s : "no detail";
}

/* set_lost -- the lease is over (what failed with err): said once. */
static void set_lost(const char *what, int err, const char *detail)
{
	pthread_mutex_lock(&lost_mu);
	if (!lost) {
		snprintf(lost_why, sizeof(lost_why), "%s: %s (%s)", what,
			 rmp_strerror(err), detail);
		lost = true;
		nbdkit_error("rmpool: the lease is lost: %s; every request "
			     "fails from now on", lost_why);
	}
	pthread_mutex_unlock(&lost_mu);
}

bool rmpnbd_lost(char *why, size_t cap)
{
	bool l;

	pthread_mutex_lock(&lost_mu);
	l = lost;
	if (l)
		snprintf(why, cap, "%s", lost_why);
	pthread_mutex_unlock(&lost_mu);
	return l;
}

/* gone -- err says the lease itself is over, not a connection. */
static bool gone(int err)
{
	return err == -EKEYEXPIRED || err == -ENOENT || err == -EPERM;
}

/* passing -- err is the connection's, and may pass: a daemon restarted,
 * a link or a node's NIC down for a while (the library connects again
 * at the next call). */
static bool passing(int err)
{
	return err == -ENOTCONN || err == -ETIMEDOUT || err == -ECONNRESET ||
	       err == -ECONNREFUSED || err == -ECONNABORTED ||
	       err == -EHOSTUNREACH || err == -ENETUNREACH ||
	       err == -EHOSTDOWN || err == -EIO || err == -EAGAIN;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* server_of -- where a lease of one server is: server=, else the
 * token's host and port. */
static int server_of(const struct rmpnbd_cfg *cfg, const char *token,
		     char *host, size_t cap, uint16_t *port, char *err,
		     size_t errcap)
{
	struct rmp_token t;
	const char *colon;

	*port = 0;
	if (!cfg->server) {
		if (rmp_token_parse(token, &t)) {
			snprintf(err, errcap, "token: not a lease token");
			return -EINVAL;
		}
		snprintf(host, cap, "%s", t.host);
		*port = t.port;
		return 0;
	}
	/* HOST, HOST:PORT, [V6]:PORT; rails A1,A2:PORT */
	colon = strrchr(cfg->server, ':');
	if (colon && (cfg->server[0] == '[' || !memchr(cfg->server, ':',
				(size_t)(colon - cfg->server)))) {
		snprintf(host, cap, "%.*s", (int)(colon - cfg->server),
			 cfg->server);
		*port = (uint16_t)strtoul(colon + 1, NULL, 10);
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = '\0';
		}
	} else {
		snprintf(host, cap, "%s", cfg->server);
	}
	return 0;
}

/* lane_open -- lane ln's connection, and on it the lease: a new one
 * (first, with cfg->size), else token's. */
static int lane_open(struct lane *ln, const struct rmpnbd_cfg *cfg,
		     const char *token, bool first, char *err, size_t cap)
{
	struct rmp_client_opts o;
	int ret;

	rmp_client_opts_init(&o);
	o.name = "nbdkit-rmpool";
	o.reconnect_max_ms = RECONNECT_MAX_MS;
	o.tenant = cfg->tenant;
	o.key_file = cfg->key_file;
	pthread_mutex_init(&ln->mu, NULL);
	if (cfg->cluster) {
		struct rmp_cluster_opts co;
		struct rmp_cluster_alloc_opts ao;

		rmp_cluster_opts_init(&co);
		co.client = &o;
		ret = rmp_cluster_open(&ln->cl, cfg->cluster, &co);
		if (ret) {
			snprintf(err, cap, "the cluster %s: %s", cfg->cluster,
				 rmp_strerror(ret));
			return ret;
		}
		if (first && cfg->size) {
			rmp_cluster_alloc_opts_init(&ao);
			ao.replicas = cfg->replicas;
			ao.stripes = cfg->stripes;
			ao.ec_data = cfg->ec_k;
			ao.ec_parity = cfg->ec_m;
			ao.spread = cfg->spread;
			ret = rmp_cluster_alloc(ln->cl, cfg->size, &ao, &ln->l);
		} else {
			ret = rmp_cluster_attach(ln->cl, token, NULL, &ln->l);
		}
	} else {
		char host[RMP_TOKEN_HOST_MAX + 64];
		uint16_t port;

		ret = server_of(cfg, token, host, sizeof(host), &port, err,
				cap);
		if (ret)
			return ret;
		ret = rmp_client_new(&ln->c, &o);
		if (ret) {
			snprintf(err, cap, "client options: %s",
				 rmp_strerror(ret));
			return ret;
		}
		ret = rmp_client_connect(ln->c, host, port);
		if (ret) {
			snprintf(err, cap, "connecting to %s: %s (%s)", host,
				 rmp_strerror(ret), lane_error(ln));
			return ret;
		}
		ret = first && cfg->size ?
			      rmp_lease_alloc(ln->c, cfg->size, NULL, &ln->l) :
			      rmp_lease_attach_token(ln->c, token, &ln->l);
	}
	if (ret)
		snprintf(err, cap, "%s: %s (%s)",
			 first && cfg->size ? "a new lease" :
					      "attaching the lease",
			 rmp_strerror(ret), lane_error(ln));
	return ret;
}

static void lane_close(struct lane *ln, bool free_lease)
{
	if (ln->l && free_lease) {
		int ret = rmp_lease_free(ln->l);

		if (ret)
			nbdkit_error("rmpool: freeing the lease: %s (%s); it "
				     "ends at its deadline", rmp_strerror(ret),
				     lane_error(ln));
	} else {
		rmp_lease_close(ln->l);
	}
	ln->l = NULL;
	rmp_cluster_close(ln->cl);
	ln->cl = NULL;
	rmp_client_free(ln->c);
	ln->c = NULL;
	pthread_mutex_destroy(&ln->mu);
}

/* save_token -- a new lease's token into path, this user's alone. */
static int save_token(const char *path, const char *token, char *err,
		      size_t cap)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t n = strlen(token);

	if (fd < 0 || write(fd, token, n) != (ssize_t)n ||
	    write(fd, "\n", 1) != 1 || close(fd)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		snprintf(err, cap, "save-token=%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

/* stop_wait -- sleep ms, or less when told to stop: true to stop. */
static bool stop_wait(uint64_t ms)
{
	struct timespec at;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += (time_t)(ms / 1000);
	at.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (at.tv_nsec >= 1000000000L) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&stop_mu);
	while (!stopping &&
	       pthread_cond_timedwait(&stop_cv, &stop_mu, &at) != ETIMEDOUT)
		;
	stop = stopping;
	pthread_mutex_unlock(&stop_mu);
	return stop;
}

/* renew_loop -- the lease renewed on lane 0 until the plugin ends, a
 * third of its ttl before it would end; lost when it is over. */
static void *renew_loop(void *arg)
{
	struct lane *ln = &lanes[0];
	uint64_t next = RENEW_RETRY_MS;

	(void)arg;
	while (!stop_wait(next)) {
		struct rmp_lease_info in = { .size = sizeof(in) };
		char detail[256];
		int ret;

		pthread_mutex_lock(&ln->mu);
		ret = rmp_lease_renew(ln->l, 0);
		if (!ret)
			ret = rmp_lease_info(ln->l, &in);
		snprintf(detail, sizeof(detail), "%s", lane_error(ln));
		pthread_mutex_unlock(&ln->mu);
		if (gone(ret)) {
			set_lost("renewing it", ret, detail);
			break;
		}
		if (ret) {
			nbdkit_error("rmpool: renewing the lease: %s (%s); "
				     "trying again in %u ms", rmp_strerror(ret),
				     detail, RENEW_RETRY_MS);
			next = RENEW_RETRY_MS;
			continue;
		}
		next = in.ttl_ms / 3;
		next = next < RENEW_RETRY_MS ? RENEW_RETRY_MS :
		       next > RENEW_MAX_MS ? RENEW_MAX_MS : next;
		nbdkit_debug("rmpool: lease renewed, %" PRIu64 " ms left; "
			     "next in %" PRIu64 " ms", in.ttl_ms, next);
	}
	return NULL;
}

static int start_renewing(char *err, size_t cap)
{
	pthread_condattr_t ca;
	int ret;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&stop_cv, &ca);
	pthread_condattr_destroy(&ca);
	stopping = false;
	ret = pthread_create(&renewer, NULL, renew_loop, NULL);
	if (ret) {
		snprintf(err, cap, "the renewing thread: %s", strerror(ret));
		return -ret;
	}
	renewing = true;
	return 0;
}

int rmpnbd_open(const struct rmpnbd_cfg *cfg, char *err, size_t cap)
{
	struct rmp_lease_info in = { .size = sizeof(in) };
	char token[RMP_TOKEN_MAXLEN];
	int ret;

	keep = cfg->keep;
	fresh = cfg->size > 0;
	retry_ms = (uint64_t)cfg->retry_s * 1000;
	snprintf(token, sizeof(token), "%s", cfg->token ? cfg->token : "");
	ret = lane_open(&lanes[0], cfg, token, true, err, cap);
	nlanes = 1;
	if (!ret && fresh) {
		ret = rmp_lease_token(lanes[0].l, token, sizeof(token));
		if (ret < 0)
			snprintf(err, cap, "the new lease's token: %s",
				 rmp_strerror(ret));
		ret = ret < 0 ? ret : 0;
		if (!ret && cfg->token_file)
			ret = save_token(cfg->token_file, token, err, cap);
	}
	if (!ret)
		ret = rmp_lease_info(lanes[0].l, &in);
	for (; !ret && nlanes < cfg->lanes; nlanes++)
		ret = lane_open(&lanes[nlanes], cfg, token, false, err, cap);
	if (!ret)
		ret = start_renewing(err, cap);
	memset(token, 0, sizeof(token));
	if (ret) {
		rmpnbd_close();
		return ret;
	}
	length = in.length;
	coded = in.ec_data > 0;
	block = coded ? (uint32_t)in.ec_chunk : 4096;
	nbdkit_debug("rmpool: serving %" PRIu64 " bytes over %u lanes%s",
		     length, nlanes, coded ? " (erasure coded: lane 0 "
					     "writes)" : "");
	return 0;
}

void rmpnbd_close(void)
{
	if (renewing) {
		pthread_mutex_lock(&stop_mu);
		stopping = true;
		pthread_cond_signal(&stop_cv);
		pthread_mutex_unlock(&stop_mu);
		pthread_join(renewer, NULL);
		pthread_cond_destroy(&stop_cv);
		renewing = false;
	}
	if (nlanes)
		nbdkit_debug("rmpool: %" PRIuFAST64 " bytes written to the "
			     "lease and %" PRIuFAST64 " read from it",
			     atomic_load(&bytes_written),
			     atomic_load(&bytes_read));
	while (nlanes > 1)
		lane_close(&lanes[--nlanes], false);
	if (nlanes)
		lane_close(&lanes[--nlanes], fresh && !keep && !lost);
}

uint64_t rmpnbd_length(void)
{
	return length;
}

uint32_t rmpnbd_block(void)
{
	return block;
}

/* my_lane_for -- the calling thread's lane; an erasure-coded lease's
 * writes go through lane 0, whose handle holds the writer claim. */
static struct lane *my_lane_for(bool write)
{
	if (write && coded)
		return &lanes[0];
	if (!my_lane)
		my_lane = 1 + atomic_fetch_add(&next_lane, 1) % nlanes;
	return &lanes[my_lane - 1];
}

/* io_once -- one try of rmpnbd_io on the thread's lane. */
static int io_once(void *buf, uint32_t count, uint64_t off, bool write,
		   char *detail, size_t cap)
{
	struct lane *ln = my_lane_for(write);
	int ret;

	pthread_mutex_lock(&ln->mu);
	ret = write ? rmp_write(ln->l, off, buf, count) :
		      rmp_read(ln->l, off, buf, count);
	if (ret)
		snprintf(detail, cap, "%s", lane_error(ln));
	pthread_mutex_unlock(&ln->mu);
	return ret;
}

int rmpnbd_io(void *buf, uint32_t count, uint64_t off, bool write,
	      char *err, size_t cap)
{
	const char *what = write ? "write" : "read";
	char why[256], detail[256];
	uint64_t until = 0, pause = 100;
	int ret;

	for (;;) {
		if (rmpnbd_lost(why, sizeof(why))) {
			snprintf(err, cap, "%s: the lease was lost (%s)", what,
				 why);
			return -EIO;
		}
		ret = io_once(buf, count, off, write, detail, sizeof(detail));
		if (!ret) {
			/* a count, ordering nothing */
			atomic_fetch_add_explicit(write ? &bytes_written :
						  &bytes_read, count,
						  memory_order_relaxed);
			return 0;
		}
		if (gone(ret))
			set_lost(what, ret, detail);
		if (!passing(ret))
			break;
		if (!until) {
			until = now_ms() + retry_ms;
			nbdkit_debug("rmpool: %s of %" PRIu32 " bytes at %"
				     PRIu64 ": %s (%s); trying again for up "
				     "to %" PRIu64 " ms", what, count, off,
				     rmp_strerror(ret), detail, retry_ms);
		}
		if (now_ms() + pause > until)
			break;
		usleep((useconds_t)pause * 1000);
		pause = pause * 2 > 1000 ? 1000 : pause * 2;
	}
	snprintf(err, cap, "%s of %" PRIu32 " bytes at %" PRIu64 ": %s (%s)%s",
		 what, count, off, rmp_strerror(ret), detail,
		 until ? "; the connection did not come back in time" : "");
	return ret;
}

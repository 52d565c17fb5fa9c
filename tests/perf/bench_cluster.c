/* SPDX-License-Identifier: MIT */
/* bench_cluster.c -- rmpool-bench's leases placed on a cluster, and etcd's count of the membership reads. */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench_cluster.h"
#include "token.h"

#define ETCD_DEFAULT_PORT 2379
#define METRICS_MAX (8u << 20) /* etcd's /metrics is ~200 KB */

/* cluster_fail -- a failed cluster call with the library's detail. */
static void cluster_fail(const struct bench_cluster *bc, const char *what,
			 int err)
{
	const char *detail = bc->cl ? rmp_cluster_last_error(bc->cl) : "";

	fprintf(stderr, "rmpool-bench: %s: %s (%d)%s%s\n", what,
		rmp_strerror(err), err, *detail ? ": " : "", detail);
	exit(1);
}

void bench_cluster_open(struct bench_cluster *bc,
			const struct rmp_client_opts *co)
{
	struct rmp_cluster_opts o;
	int err;

	rmp_cluster_opts_init(&o);
	o.client = co;
	err = rmp_cluster_open(&bc->cl, bc->url, &o);
	if (err)
		cluster_fail(bc, "rmp_cluster_open", err);
}

void bench_cluster_alloc(struct bench_cluster *bc, uint64_t length,
			 uint32_t flags, struct rmp_lease **out)
{
	struct rmp_cluster_alloc_opts ao;
	int err;

	rmp_cluster_alloc_opts_init(&ao);
	ao.flags = flags;
	ao.replicas = bc->replicas;
	ao.stripes = bc->stripes;
	ao.prefer = bc->prefer;
	ao.ec_data = bc->ec_k;
	ao.ec_parity = bc->ec_m;
	if (bench_cluster_members(bc) > 1) {
		/* a mirrored or striped lease is neither ephemeral nor
		 * auto-renewed (its record in etcd would not follow): an
		 * hour, freed at the end */
		ao.flags = 0;
		ao.ttl_s = 3600;
	}
	err = rmp_cluster_alloc(bc->cl, length, &ao, out);
	if (err)
		cluster_fail(bc, "rmp_cluster_alloc", err);
}

unsigned bench_cluster_clients(struct bench_cluster *bc, struct rmp_lease *l,
			       struct rmp_client **out, unsigned max)
{
	char token[RMP_TOKEN_MAXLEN];
	unsigned n;

	for (n = 0; n < max; n++) {
		int ret = rmp_lease_replica_token(l, n, token, sizeof(token));

		if (ret == -ENOENT)
			break;
		if (ret < 0)
			cluster_fail(bc, "rmp_lease_replica_token", ret);
		out[n] = rmp_cluster_client(bc->cl, token);
		if (!out[n])
			cluster_fail(bc, "rmp_cluster_client", -ENOTCONN);
	}
	return n;
}

unsigned bench_cluster_members(const struct bench_cluster *bc)
{
	return bc->ec_k ? bc->ec_k + bc->ec_m : bc->replicas * bc->stripes;
}

uint64_t bench_cluster_leased(struct bench_cluster *bc,
			      struct rmp_client *const *cs, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		struct rmp_pool_stat st = { .size = sizeof(st) };
		bool seen = false;
		int err;

		for (unsigned j = 0; j < i; j++)
			seen |= cs[j] == cs[i];
		if (seen)
			continue; /* a node holding two members: once */
		err = rmp_stat(cs[i], &st);
		if (err)
			cluster_fail(bc, "rmp_stat", err);
		sum += st.client_bytes;
	}
	return sum;
}

void bench_cluster_lose(struct bench_cluster *bc, struct rmp_lease *l,
			unsigned i)
{
	char token[RMP_TOKEN_MAXLEN];
	struct rmp_client *c;
	int err;

	err = rmp_lease_replica_token(l, i, token, sizeof(token));
	if (err < 0)
		cluster_fail(bc, "--lose: rmp_lease_replica_token", err);
	c = rmp_cluster_client(bc->cl, token);
	if (!c)
		cluster_fail(bc, "--lose: rmp_cluster_client", -ENOTCONN);
	err = rmp_lease_free_token(c, token);
	if (err)
		cluster_fail(bc, "--lose: rmp_lease_free_token", err);
}

void bench_cluster_suffix(const struct bench_cluster *bc, char *buf,
			  size_t len)
{
	const char *lost = bc->lose >= 0 ? "-lost" : "";
	const char *copy = bc->copy ? "-copy" : "";

	if (bc->ec_k)
		snprintf(buf, len, "-ec%u+%u%s%s", bc->ec_k, bc->ec_m, lost,
			 copy);
	else if (bc->stripes > 1)
		snprintf(buf, len, "-r%u-s%u%s%s", bc->replicas, bc->stripes,
			 lost, copy);
	else
		snprintf(buf, len, "-r%u%s%s", bc->replicas, lost, copy);
}

/* first_endpoint -- host and port of the first endpoint of url, when it
 * speaks plain http (etcd://, http:// or no scheme); false otherwise. */
static bool first_endpoint(const char *url, char *host, size_t hostlen,
			   char *port, size_t portlen)
{
	char entry[300];
	uint16_t p;
	size_t n;

	if (!strncmp(url, "etcd://", 7))
		url += 7;
	else if (!strncmp(url, "http://", 7))
		url += 7;
	else if (strstr(url, "://"))
		return false; /* https: it would take TLS */
	n = strcspn(url, ",/");
	if (n >= sizeof(entry))
		return false;
	memcpy(entry, url, n);
	entry[n] = '\0';
	if (rmp_split_server(entry, host, hostlen, &p))
		return false;
	snprintf(port, portlen, "%u", p ? p : ETCD_DEFAULT_PORT);
	return true;
}

/* http_get -- the body and headers of GET path from host:port (HTTP/1.0,
 * read to the end), NUL terminated, malloc'ed; NULL on any failure. */
static char *http_get(const char *host, const char *port, const char *path)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct timeval tv = { 5, 0 };
	size_t len = 0, cap = 1u << 18;
	char *buf = NULL, req[512];
	ssize_t got;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai))
		return NULL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, ai->ai_addr, ai->ai_addrlen))
		goto out;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path,
		 host);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	buf = malloc(cap);
	while (buf && (got = read(fd, buf + len, cap - 1 - len)) > 0) {
		len += (size_t)got;
		if (len == cap - 1 && cap < METRICS_MAX) {
			char *more = realloc(buf, cap * 2);

			if (!more)
				free(buf);
			buf = more;
			cap *= 2;
		} else if (len == cap - 1) {
			got = -1; /* too large: not etcd's */
			break;
		}
	}
	if (buf && (got < 0 || len == 0)) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[len] = '\0';
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return buf;
}

long long bench_etcd_reads(const struct bench_cluster *bc)
{
	char host[256], port[8], *text, *line, *save = NULL;
	long long sum = 0;
	bool seen = false;

	if (!first_endpoint(bc->url, host, sizeof(host), port, sizeof(port)))
		return -1;
	text = http_get(host, port, "/metrics");
	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *v;

		if (strncmp(line, "grpc_server_started_total{", 26))
			continue;
		if (!(strstr(line, "grpc_method=\"Range\"") &&
		      strstr(line, "grpc_service=\"etcdserverpb.KV\"")) &&
		    !(strstr(line, "grpc_method=\"Watch\"") &&
		      strstr(line, "grpc_service=\"etcdserverpb.Watch\"")))
			continue;
		v = strrchr(line, ' ');
		if (!v)
			continue;
		sum += strtoll(v + 1, NULL, 10);
		seen = true;
	}
	free(text);
	return seen ? sum : -1;
}

void bench_cluster_close(struct bench_cluster *bc)
{
	rmp_cluster_close(bc->cl);
	bc->cl = NULL;
}

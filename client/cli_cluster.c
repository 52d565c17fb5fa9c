/* SPDX-License-Identifier: MIT */
/* cli_cluster.c -- the rmpool command's cluster: -C opens it, `nodes`
 * lists its members (alloc places through it: cli_cmd.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_int.h"
#include "rmpool.h"

/* cli_cluster_open -- the cluster of -C (or $RMPOOL_CLUSTER), with the
 * connection options of the global options. */
void cli_cluster_open(struct cli *cli)
{
	struct rmp_cluster_opts co;
	struct rmp_client_opts o;
	int err;

	if (cli->cl) /* open already: one cluster handle per command */
		return;
	if (!cli->cluster)
		cli_usage_error("no cluster: give -C etcd://HOST:PORT or set "
				"RMPOOL_CLUSTER");
	cli_client_opts(cli, &o);
	rmp_cluster_opts_init(&co);
	co.client = &o;
	co.allow_anonymous = cli->anonymous_cluster;
	if (cli->timeout_ms)
		co.etcd_timeout_ms = cli->timeout_ms;
	/* the library says why on stderr: it has no handle to ask yet */
	err = rmp_cluster_open(&cli->cl, cli->cluster, &co);
	if (err)
		cli_die("cluster: %s", rmp_strerror(err));
}

/* json_text -- s as a JSON string (records carry no control bytes). */
static void json_text(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

/* json_labels -- "a=b c=d" as {"a":"b","c":"d"}. */
static void json_labels(const char *labels)
{
	char buf[sizeof(((struct rmp_node_info *)0)->labels)], *s, *save;
	const char *sep = "";

	snprintf(buf, sizeof(buf), "%s", labels);
	putchar('{');
	for (s = strtok_r(buf, " ", &save); s; s = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(s, '=');

		if (!eq)
			continue;
		*eq = '\0';
		printf("%s", sep);
		json_text(s);
		putchar(':');
		json_text(eq + 1);
		sep = ",";
	}
	putchar('}');
}

static void print_node(const struct rmp_node_info *n, bool json)
{
	if (!json) {
		printf("%-20s %s%s%s:%u  free %" PRIu64 " of %" PRIu64
		       " (largest %" PRIu64 ")  %s%s%s%s\n", n->node,
		       strchr(n->addr, ':') ? "[" : "", n->addr,
		       strchr(n->addr, ':') ? "]" : "", n->port, n->free_bytes,
		       n->pool_bytes, n->largest_free, n->labels,
		       n->draining ? "  draining" : "",
		       n->proven > 0 ? "  proven" :
		       n->proven < 0 ? "  SKIPPED: " : "",
		       n->proven < 0 ? n->why : "");
		return;
	}
	printf("{\"node\":");
	json_text(n->node);
	printf(",\"address\":");
	json_text(n->addr);
	printf(",\"port\":%u,\"device\":", n->port);
	json_text(n->device);
	printf(",\"numa_node\":%d,\"pool_bytes\":%" PRIu64 ",\"free_bytes\":%"
	       PRIu64 ",\"largest_free\":%" PRIu64 ",\"draining\":%s,"
	       "\"version\":", n->numa_node, n->pool_bytes, n->free_bytes,
	       n->largest_free, n->draining ? "true" : "false");
	json_text(n->version);
	printf(",\"labels\":");
	json_labels(n->labels);
	printf(",\"proven\":%d,\"why\":", (int)n->proven);
	json_text(n->why);
	printf("}");
}

/* list_nodes -- the nodes registered now into *nodes (malloc'ed); how
 * many. */
static int list_nodes(struct cli *cli, struct rmp_node_info **nodes)
{
	int n, max = 0;

	*nodes = NULL;
	/* the count first, then room for it (it may grow meanwhile) */
	for (;;) {
		n = rmp_cluster_nodes(cli->cl, *nodes, (unsigned)max);
		if (n < 0)
			cli_die("nodes: %s (%s)", rmp_strerror(n),
				rmp_cluster_last_error(cli->cl));
		if (n <= max)
			return n;
		free(*nodes);
		max = n;
		*nodes = calloc((size_t)max, sizeof(**nodes));
		if (!*nodes)
			cli_die("nodes: out of memory");
		for (int i = 0; i < max; i++)
			(*nodes)[i].size = sizeof((*nodes)[i]);
	}
}

int cmd_nodes(struct cli *cli, int argc, char **argv)
{
	bool json = false, check = false;
	const struct opt opts[] = {
		{ "--json", NULL, &json },
		{ "--check", NULL, &check },
		{ NULL, NULL, NULL },
	};
	struct rmp_node_info *nodes = NULL;
	int n;

	cli_parse_args(cli, "nodes", argc, argv, opts, NULL, 0, 0);
	cli_cluster_open(cli);
	n = list_nodes(cli, &nodes);
	if (check) {
		/* a connect to each, as placing would; listed again with
		 * what each said */
		for (int i = 0; i < n; i++)
			rmp_cluster_check(cli->cl, nodes[i].node);
		free(nodes);
		n = list_nodes(cli, &nodes);
	}
	if (json)
		printf("{\"nodes\":[");
	for (int i = 0; i < n; i++) {
		if (json && i)
			putchar(',');
		print_node(&nodes[i], json);
	}
	if (json)
		printf("]}\n");
	free(nodes);
	if (fflush(stdout) == EOF)
		cli_die("nodes: writing the list failed");
	return EXIT_SUCCESS;
}

struct rmp_lease *cli_cluster_attach(struct cli *cli, const char *token,
				     uint32_t flags, struct rmp_lease_info *info)
{
	struct rmp_attach_opts ao;
	struct rmp_lease *l;
	int err;

	/* its members are found in the cluster's etcd */
	if (cli->server)
		cli_usage_error("a cluster lease token is reached through -C, "
				"not -s");
	cli_cluster_open(cli);
	rmp_attach_opts_init(&ao);
	ao.flags = flags;
	err = rmp_cluster_attach(cli->cl, token, &ao, &l);
	if (err)
		cli_die("attach: %s (%s)", rmp_strerror(err),
			rmp_cluster_last_error(cli->cl));
	if (info) {
		info->size = sizeof(*info);
		err = rmp_lease_info(l, info);
		if (err)
			cli_die("lease info: %s", rmp_strerror(err));
	}
	return l;
}

/* cluster_lease -- the cluster lease of token, attached through -C. */
static struct rmp_lease *cluster_lease(struct cli *cli, const char *token)
{
	return cli_cluster_attach(cli, token, 0, NULL);
}

void cli_cluster_renew(struct cli *cli, const char *token, uint32_t ttl_s)
{
	struct rmp_lease *l = cluster_lease(cli, token);
	int err = rmp_lease_renew(l, ttl_s);

	if (err)
		cli_die("renew: %s (%s)", rmp_strerror(err),
			rmp_cluster_last_error(cli->cl));
	rmp_lease_close(l);
}

void cli_cluster_free(struct cli *cli, const char *token)
{
	int err = rmp_lease_free(cluster_lease(cli, token));

	if (err)
		cli_die("free: %s (%s)", rmp_strerror(err),
			rmp_cluster_last_error(cli->cl));
}

/* How often repair and scrub try when told to try again. */
#define REPAIR_TRIES 10

/* repair -- the command `name` (repair, scrub) on a cluster token:
 * rmp_cluster_repair, then what the lease has live. */
static int repair(struct cli *cli, const char *name, int argc, char **argv)
{
	const char *file = NULL, *pos[1], *token;
	const struct opt opts[] = {
		{ "--token-file", &file, NULL },
		{ NULL, NULL, NULL },
	};
	struct rmp_lease_info info = { .size = sizeof(info) };
	struct rmp_lease *l;
	int err, npos;

	npos = cli_parse_args(cli, name, argc, argv, opts, pos, 0, 1);
	token = cli_take_token(name, pos, npos, 0, file, NULL);
	if (!cli_token_is_cluster())
		cli_usage_error("%s: takes a cluster lease's token "
				"(rmpc://...), with -C", name);
	/* rmp_cluster_repair: also a lease whose record is behind its
	 * members (one put back in etcd), which no attach takes */
	cli_cluster_open(cli);
	/* -EAGAIN: the record moved, or (erasure coded) a holder's write
	 * the fence cut short: it is made again once the repair is undone */
	for (int tries = 1;; tries++) {
		err = rmp_cluster_repair(cli->cl, token);
		if (err != -EAGAIN || tries == REPAIR_TRIES)
			break;
		fprintf(stderr, "rmpool: %s: %s (%s); again in 1 s\n", name,
			rmp_strerror(err), rmp_cluster_last_error(cli->cl));
		sleep(1);
	}
	if (err)
		cli_die("%s: %s (%s)", name, rmp_strerror(err),
			rmp_cluster_last_error(cli->cl));
	l = cluster_lease(cli, token);
	rmp_lease_info(l, &info);
	if (info.ec_data)
		printf("members %u of %u\n", info.ec_live,
		       info.ec_data + info.ec_parity);
	else
		printf("replicas %u of %u\n", info.replicas_live,
		       info.replicas);
	rmp_lease_close(l);
	if (fflush(stdout) == EOF)
		cli_die("%s: writing the result failed", name);
	return EXIT_SUCCESS;
}

int cmd_repair(struct cli *cli, int argc, char **argv)
{
	return repair(cli, "repair", argc, argv);
}

/* scrub: the repair of an erasure-coded lease, which looks at every row
 * (rmp_lease_repair) whether or not a member was lost */
int cmd_scrub(struct cli *cli, int argc, char **argv)
{
	return repair(cli, "scrub", argc, argv);
}

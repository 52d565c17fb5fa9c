/* SPDX-License-Identifier: MIT */
/*
 * cli_int.h -- what the files of the rmpool command share: cli.c (main,
 * options, arguments, the connection, the token, errors), cli_cmd.c
 * (the commands) and cli_cluster.c (the cluster and its commands).
 */
#ifndef RMP_CLI_INT_H
#define RMP_CLI_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "rmpool.h"
#include "token.h"

#define EXIT_USAGE 2
#define IO_CHUNK (1u << 20)       /* read: bytes per rmp_read */
#define WRITE_BUF_MAX (64u << 20) /* write: stdin buffered before writing */
#define RENEW_MIN_MS 1000u        /* alloc --ephemeral: renew at most so often */
#define KEYGEN_BYTES 32           /* keygen: key length (64 hex digits) */

struct cli {
	const char *server; /* -s argument or NULL */
	const char *cluster; /* -C argument, else $RMPOOL_CLUSTER, or NULL */
	const char *name;
	const char *tenant;   /* --tenant, else $RMPOOL_TENANT; NULL/"" = none */
	const char *key_file; /* --key-file, else $RMPOOL_KEY_FILE */
	int timeout_ms;     /* 0 = library defaults */
	bool anonymous_cluster; /* --anonymous-cluster: -C without a tenant */
	struct rmp_client *c;
	struct rmp_cluster *cl; /* opened by cli_cluster_open */
	char where[300];    /* "HOST:PORT" of the connection, for messages */
};

/* One option of a command: --name VALUE or --name=VALUE, or a flag. */
struct opt {
	const char *name;
	const char **value; /* NULL for a flag */
	bool *flag;
};

/* cli.c */
uint64_t cli_arg_size(const char *what, const char *s);
uint32_t cli_arg_ttl(const char *s);
/* cli_arg_count -- a decimal count min..max; a usage error otherwise. */
uint64_t cli_arg_count(const char *what, const char *s, uint64_t min,
		       uint64_t max);
uint64_t cli_arg_value(const char *what, const char *s);
struct rmp_lease *cli_attach(struct cli *cli, const char *token,
				uint32_t flags, struct rmp_lease_info *info);
void cli_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void cli_fail(struct rmp_client *c, const char *what, int err)
	__attribute__((noreturn));
void cli_fail_msg(struct rmp_client *c, const char *what, int err,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5), noreturn));
int cli_parse_args(struct cli *cli, const char *cmd, int argc,
		      char **argv, const struct opt *opts, const char **pos,
		      int min, int npos);
const char *cli_take_token(const char *cmd, const char **pos, int n,
			      int nother, const char *file,
			      const char ***rest);
/* cli_token_is_cluster -- the token cli_take_token took is a cluster
 * lease's (rmpc://): reached through -C. */
bool cli_token_is_cluster(void);
void cli_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void cli_connect_for_token(struct cli *cli);
void cli_connect(struct cli *cli, const struct rmp_token *token);
void cli_client_opts(const struct cli *cli, struct rmp_client_opts *o);

/* cli_cluster.c */
/* cli_cluster_open -- cli->cl opened from -C (once: later calls keep it) */
void cli_cluster_open(struct cli *cli);
int cmd_nodes(struct cli *cli, int argc, char **argv);
int cmd_repair(struct cli *cli, int argc, char **argv);
int cmd_scrub(struct cli *cli, int argc, char **argv);
int cmd_info(struct cli *cli, int argc, char **argv);
/* cli_cluster_attach -- cli_attach for a cluster lease's token: through
 * the cluster of -C (its record in etcd names the members). */
struct rmp_lease *cli_cluster_attach(struct cli *cli, const char *token,
				     uint32_t flags, struct rmp_lease_info *info);
/* cli_cluster_renew / cli_cluster_free -- renew (ttl_s) or free the
 * cluster lease of token through -C; exit on an error. */
void cli_cluster_renew(struct cli *cli, const char *token, uint32_t ttl_s);
void cli_cluster_free(struct cli *cli, const char *token);

/* cli_cmd.c: each command, given the arguments main hands it. */
int cmd_alloc(struct cli *cli, int argc, char **argv);
int cmd_cas(struct cli *cli, int argc, char **argv);
int cmd_faa(struct cli *cli, int argc, char **argv);
int cmd_free(struct cli *cli, int argc, char **argv);
int cmd_keygen(struct cli *cli, int argc, char **argv);
int cmd_read(struct cli *cli, int argc, char **argv);
int cmd_renew(struct cli *cli, int argc, char **argv);
int cmd_stat(struct cli *cli, int argc, char **argv);
int cmd_write(struct cli *cli, int argc, char **argv);

#endif /* RMP_CLI_INT_H */

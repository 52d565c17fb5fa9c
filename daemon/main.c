/* SPDX-License-Identifier: MIT */
/* main.c -- rmpoold: parse arguments, load the config, run the server. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "config.h"
#include "log.h"
#include "server.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rmpoold [-c FILE] [--check-config]\n"
		"Serve leases of pinned, RDMA-registered memory.\n\n"
		"  -c, --config FILE  configuration (default %s)\n"
		"      --check-config print the effective configuration and "
		"exit\n"
		"  -v, --verbose      log at debug level\n"
		"  -V, --version      print the version\n"
		"  -h, --help         this text\n", RMP_CONFIG_PATH);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct rmp_server srv;
	const char *path = RMP_CONFIG_PATH;
	bool check = false, verbose = false;
	char err[512];
	sigset_t mask;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "c:vVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'C':
			check = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'V':
			printf("rmpoold %s\n", RMP_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	rmp_log_init("rmpoold", LOG_INFO);
	/* No core dump, before anything secret is read: tenant keys, lease
	 * secrets and tenants' bytes would all be in it. (Root can still
	 * attach a debugger.) */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		log_warn("cannot turn core dumps off: %s", strerror(errno));
	rmp_config_defaults(&srv.cfg);
	ret = rmp_config_load_file(&srv.cfg, path, err, sizeof(err));
	if (ret) {
		log_err("%s", err);
		return 1;
	}
	if (check)
		return rmp_config_dump(&srv.cfg, stdout, false) ? 1 : 0;
	rmp_log_set_level(verbose ? LOG_DEBUG : srv.cfg.server.log_level);

	/* Signals are delivered through the event loop only. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	srv.config_path = path;
	srv.verbose = verbose;
	ret = rmp_server_start(&srv);
	if (ret == 0)
		ret = rmp_server_run(&srv);
	rmp_server_stop(&srv);
	if (ret) {
		log_err("exiting: %s", strerror(-ret));
		return 1;
	}
	log_info("stopped");
	return 0;
}

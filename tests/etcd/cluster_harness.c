/* SPDX-License-Identifier: MIT */
/* cluster_harness.c -- the loop, log and etcd the cluster tests share. */
#include "cluster_harness.h"

#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <event2/event.h>

#include "../../common/log.h"

struct event_base *base;
struct etcd_fixture fx;
struct rmp_status fig;
static struct event *wake;

/* The daemon's figures, as the test sets them. */
void rmp_ops_status(const struct rmp_ops *o, struct rmp_status *st)
{
	(void)o;
	*st = fig;
}

/* The log, kept to count the lines a daemon writes (linked with
 * --wrap=rmp_log); RMP_TEST_LOG=1 shows them. */
#define LOG_LINES 1024
static char log_lines[LOG_LINES][512];
static int log_levels[LOG_LINES];
unsigned log_n;

void __wrap_rmp_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void __wrap_rmp_log(int level, const char *fmt, ...)
{
	char *line = log_lines[log_n % LOG_LINES];
	va_list ap;

	log_levels[log_n++ % LOG_LINES] = level;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(log_lines[0]), fmt, ap);
	va_end(ap);
	if (getenv("RMP_TEST_LOG"))
		printf("# %llu log<%d>: %s\n",
		       (unsigned long long)now_ms() % 100000, level, line);
}

void log_reset(void)
{
	log_n = 0;
}

static unsigned count(const char *text, int level)
{
	unsigned n = 0;

	for (unsigned i = 0; i < log_n && i < LOG_LINES; i++)
		n += log_levels[i] <= level &&
		     strstr(log_lines[i], text) != NULL;
	return n;
}

unsigned log_count(const char *text)
{
	return count(text, LOG_INFO);
}

unsigned log_count_all(const char *text)
{
	return count(text, LOG_DEBUG);
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool run_until(const bool *until, uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	while ((!until || !*until) && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	return !until || *until;
}

static void nothing(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

bool harness_start(void)
{
	struct timeval ten_ms = { 0, 10000 };

	fixture_skip_without_etcd();
	signal(SIGPIPE, SIG_IGN);
	fig = (struct rmp_status){ .version = RMP_VERSION, .device = "rxe0",
				   .listen = "192.0.2.1", .port = 7471,
				   .numa_node = 1, .pool_bytes = GIB,
				   .free_bytes = GIB / 2,
				   .largest_free = GIB / 4,
				   .keys_mode = "window" };
	base = event_base_new();
	if (!base || !fixture_start(&fx)) {
		printf("Bail out! etcd did not start\n");
		fixture_stop(&fx);
		return false;
	}
	wake = event_new(base, -1, EV_PERSIST, nothing, NULL);
	event_add(wake, &ten_ms);
	return true;
}

void harness_end(void)
{
	event_free(wake);
	fixture_stop(&fx);
	event_base_free(base);
}

void harness_config(struct rmp_config *c, uint64_t ttl_ms)
{
	rmp_config_defaults(c);
	snprintf(c->cluster.etcd, sizeof(c->cluster.etcd), "%s", fx.url);
	strcpy(c->cluster.node, "n1");
	strcpy(c->cluster.labels, "rack=r1 zone=z1");
	c->cluster.ttl_ms = ttl_ms;
	strcpy(c->server.listen, "192.0.2.1");
}

/* first_kv -- the first key-value pair of etcdctl's JSON output o. */
static json_object *first_kv(json_object *o)
{
	json_object *kvs;

	return o && json_object_object_get_ex(o, "kvs", &kvs) ?
		       json_object_array_get_idx(kvs, 0) : NULL;
}

json_object *record(int64_t *version)
{
	char *out = fixture_etcdctl(&fx, "get " KEY " -w json");
	json_object *o = out ? json_tokener_parse(out) : NULL, *kv, *v;
	json_object *rec = NULL;
	unsigned char val[4096];
	size_t n = 0;

	free(out);
	if ((kv = first_kv(o)) && json_object_object_get_ex(kv, "value", &v) &&
	    !sodium_base642bin(val, sizeof(val) - 1,
			       json_object_get_string(v),
			       strlen(json_object_get_string(v)), NULL, &n,
			       NULL, sodium_base64_VARIANT_ORIGINAL)) {
		val[n] = '\0';
		rec = json_tokener_parse((const char *)val);
		if (version && json_object_object_get_ex(kv, "version", &v))
			*version = json_object_get_int64(v);
	}
	json_object_put(o);
	return rec;
}

int64_t key_lease(bool *exists)
{
	char *out = fixture_etcdctl(&fx, "get " KEY " -w json");
	json_object *o = out ? json_tokener_parse(out) : NULL, *kv, *v;
	int64_t lease = 0;

	free(out);
	kv = first_kv(o);
	if (exists)
		*exists = kv != NULL;
	if (kv && json_object_object_get_ex(kv, "lease", &v))
		lease = json_object_get_int64(v);
	json_object_put(o);
	return lease;
}

int64_t get_int(json_object *o, const char *name)
{
	json_object *v;

	return json_object_object_get_ex(o, name, &v) ?
		       json_object_get_int64(v) : -12345;
}

const char *get_str(json_object *o, const char *name)
{
	json_object *v;

	return json_object_object_get_ex(o, name, &v) &&
			       json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) : "(none)";
}

bool write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0 && chmod(path, mode) == 0;
}

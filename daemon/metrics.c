/* SPDX-License-Identifier: MIT */
/* metrics.c -- Prometheus metrics over HTTP on [server] metrics_listen. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "log.h"
#include "metrics.h"
#include "ops.h"
#include "util.h"

/* Connections at once: Prometheus needs one per scraper. At the limit the
 * listening socket is paused (the kernel's backlog holds the next ones)
 * until one closes. */
#define MAX_CONNS 16
/* An idle or slow connection is closed after this long (read or write). */
#define TIMEOUT_S 10
#define MAX_HEADERS 8192
/* A GET has no body; anything larger than this gets 413. */
#define MAX_BODY 1024
/* How often a paused endpoint looks whether a connection has closed. */
#define RESUME_POLL_MS 100
/* While every slot is taken, a connection this old is shut down: TIMEOUT_S
 * only bounds each pause, so a peer sending a header byte every few
 * seconds would hold its slot for hours (a scrape takes well under). */
#define OLDEST_MS 30000
/* Counter files of the device port, counters/ and hw_counters/ together. */
#define MAX_DEV_COUNTERS 512
#define SYSFS_IB "/sys/class/infiniband"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct dev_counter {
	char path[256];
	const char *name;  /* in path */
	bool hw;           /* hw_counters/, else counters/ */
	unsigned dev;      /* of rmp_metrics.devs */
};

struct rmp_metrics {
	struct event_base *base;
	struct rmp_ops *ops;
	struct evhttp *http;
	struct evhttp_bound_socket *sock;
	struct event *resume_ev;
	bool paused;
	/* Our reference to each connection's bufferevent: evhttp frees it
	 * (clearing its callbacks) when the connection ends; we then drop
	 * ours. That is how connections are counted: evhttp 2.1 has no
	 * limit of its own. */
	struct bufferevent *conns[MAX_CONNS];
	uint64_t opened_ms[MAX_CONNS]; /* when each was accepted */
	unsigned nconns;
	char listen[RMP_CONFIG_ADDR_LEN];
	/* The ports whose sysfs counters are exported: one per device. */
	struct {
		char name[64];
		unsigned port;
	} devs[RMP_DEVICES_MAX];
	unsigned ndevs;
	double start_time;  /* Unix time of the daemon's start */
	unsigned ncounters;
	struct dev_counter *counters;
};

/* ------------------------------------------------------- exposition */

/*
 * esc -- v as a label value: backslash, double quote and newline
 * escaped. Returns buf (truncated to fit; our values are short).
 */
static const char *esc(const char *v, char *buf, size_t len)
{
	size_t o = 0;

	for (; *v && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"') {
			buf[o++] = '\\';
			buf[o++] = *v;
		} else if (*v == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *v;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* family -- the HELP and TYPE lines that open a metric family. */
static void family(struct evbuffer *b, const char *name, const char *type,
		   const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help,
			    name, type);
}

/* one -- a family with a single unlabelled sample. */
static void one(struct evbuffer *b, const char *name, const char *type,
		const char *help, uint64_t v)
{
	family(b, name, type, help);
	evbuffer_add_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* seconds_text -- µs as decimal seconds, exactly ("0.000005", "0.25"). */
static const char *seconds_text(uint32_t us, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu32 ".%06" PRIu32, us / 1000000,
			 us % 1000000);

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

/* op_label -- the op label of histogram row op: "alloc", ...; row 0
 * holds requests that did not decode. */
static const char *op_label(unsigned op, char *buf, size_t len)
{
	const char *name = op ? rmp_opcode_name(op) : "invalid";
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ?
				name[i] - 'A' + 'a' : name[i]);
	buf[i] = '\0';
	return buf;
}

static void put_latency(struct evbuffer *b, const struct rmp_latency *h)
{
	const char *name = "rmpool_request_duration_seconds";
	char op[16], le[24];

	family(b, name, "histogram",
	       "Control requests from receive to reply posted, by opcode "
	       "(op=\"invalid\": did not decode).");
	for (unsigned o = 0; o <= RMP_OP_MAX; o++) {
		uint64_t cum = 0;

		op_label(o, op, sizeof(op));
		for (unsigned i = 0; i < RMP_LATENCY_BUCKETS; i++) {
			cum += h->count[o][i];
			evbuffer_add_printf(b, "%s_bucket{op=\"%s\",le=\"%s\"} %"
					    PRIu64 "\n", name, op,
					    seconds_text(rmp_latency_bounds_us[i],
							 le, sizeof(le)), cum);
		}
		cum += h->count[o][RMP_LATENCY_BUCKETS];
		evbuffer_add_printf(b, "%s_bucket{op=\"%s\",le=\"+Inf\"} %"
				    PRIu64 "\n", name, op, cum);
		evbuffer_add_printf(b, "%s_sum{op=\"%s\"} %" PRIu64 ".%09"
				    PRIu64 "\n", name, op,
				    h->sum_ns[o] / 1000000000u,
				    h->sum_ns[o] % 1000000000u);
		evbuffer_add_printf(b, "%s_count{op=\"%s\"} %" PRIu64 "\n",
				    name, op, cum);
	}
}

/* Per-tenant figures: one pass over the tenant table per family, so the
 * samples of a family stay together as the format requires. */
enum tenant_fig {
	T_BYTES, T_LEASES, T_CONNS, T_AUTH_FAIL, T_REFUSALS,
	T_LIMIT_BYTES, T_LIMIT_LEASES, T_LIMIT_CONNS, T_FIGS
};

static const struct {
	const char *name, *type, *help;
} tenant_figs[T_FIGS] = {
	[T_BYTES] = { "rmpool_tenant_lease_bytes", "gauge",
		"Bytes of the tenant's leases (granted, held or not)." },
	[T_LEASES] = { "rmpool_tenant_leases", "gauge",
		"Granted leases of the tenant." },
	[T_CONNS] = { "rmpool_tenant_connections", "gauge",
		"Connections of the tenant." },
	[T_AUTH_FAIL] = { "rmpool_tenant_auth_failures_total", "counter",
		"Failed authentications naming the tenant." },
	[T_REFUSALS] = { "rmpool_tenant_quota_refusals_total", "counter",
		"Allocations refused by the tenant's limits (EDQUOT)." },
	[T_LIMIT_BYTES] = { "rmpool_tenant_limit_bytes", "gauge",
		"The tenant's bytes limit (only tenants that have one)." },
	[T_LIMIT_LEASES] = { "rmpool_tenant_limit_leases", "gauge",
		"The tenant's leases limit (its own, or its share of "
		"max_leases)." },
	[T_LIMIT_CONNS] = { "rmpool_tenant_limit_connections", "gauge",
		"The tenant's connections limit (only tenants that have "
		"one)." },
};

/* tenant_fig -- figure fig of the tenant v. */
static uint64_t tenant_fig(const struct rmp_tenant_view *v,
			   enum tenant_fig fig)
{
	switch (fig) {
	case T_BYTES: return v->bytes;
	case T_LEASES: return v->leases;
	case T_CONNS: return v->connections;
	case T_AUTH_FAIL: return v->auth_failures;
	case T_REFUSALS: return v->quota_refusals;
	case T_LIMIT_BYTES: return v->limit_bytes;
	case T_LIMIT_LEASES: return v->limit_leases;
	default: return v->limit_connections;
	}
}

/* put_tenant_fig -- fig's samples, one per tenant; false when there is
 * none (a limit of 0 means none: no sample rather than a false 0). With
 * dry, only find out. */
static bool put_tenant_fig(struct evbuffer *b, const struct rmp_ops *o,
			   enum tenant_fig fig, bool dry)
{
	char tn[2 * RMP_TENANT_MAX + 4];
	const struct rmp_tenant *t = NULL;
	struct rmp_tenant_view v;
	bool any = false;
	uint64_t x;

	while ((t = rmp_ops_next_tenant(o, t, &v))) {
		x = tenant_fig(&v, fig);
		if (fig >= T_LIMIT_BYTES && !x)
			continue;
		any = true;
		if (!dry)
			evbuffer_add_printf(b, "%s{tenant=\"%s\"} %" PRIu64 "\n",
					    tenant_figs[fig].name,
					    esc(v.name, tn, sizeof(tn)), x);
	}
	return any;
}

static void put_tenants(struct evbuffer *b, const struct rmp_ops *o)
{
	for (int f = 0; f < T_FIGS; f++) {
		/* A family with no sample is left out altogether. */
		if (!put_tenant_fig(b, o, (enum tenant_fig)f, true))
			continue;
		family(b, tenant_figs[f].name, tenant_figs[f].type,
		       tenant_figs[f].help);
		put_tenant_fig(b, o, (enum tenant_fig)f, false);
	}
}

/* put_device -- the ports' counters, read now (open, read, close). */
static void put_device(struct rmp_metrics *m, struct evbuffer *b, bool hw)
{
	const char *name = hw ? "rmpool_device_port_hw_stats_total" :
				"rmpool_device_port_stats_total";
	char dev[2 * sizeof(m->devs[0].name)], line[32], cn[128], *end;
	bool opened = false;
	uint64_t v;

	for (unsigned i = 0; i < m->ncounters; i++) {
		const struct dev_counter *c = &m->counters[i];

		if (c->hw != hw || rmp_read_line(c->path, line, sizeof(line)) <= 0)
			continue;
		errno = 0;
		v = strtoull(line, &end, 10);
		if (errno || *end || line[0] == '-')
			continue; /* not a counter after all */
		if (!opened) {
			family(b, name, "counter", hw ?
			       "Counters of each served RDMA port from sysfs "
			       "ports/PORT/hw_counters (device-specific, as "
			       "the driver names them)." :
			       "Counters of each served RDMA port from sysfs "
			       "ports/PORT/counters; port_xmit_data and "
			       "port_rcv_data count 4-byte words, not bytes.");
			opened = true;
		}
		esc(m->devs[c->dev].name, dev, sizeof(dev));
		evbuffer_add_printf(b, "%s{device=\"%s\",port=\"%u\","
				    "counter=\"%s\"} %" PRIu64 "\n", name, dev,
				    m->devs[c->dev].port,
				    esc(c->name, cn, sizeof(cn)), v);
	}
}

/* The figures of each device's pool, by device (and its node). */
static const struct {
	const char *name, *help;
	size_t off;
} device_figs[] = {
	{ "rmpool_device_pool_size_bytes", "Size of the device's pool, on "
	  "its NUMA node.", offsetof(struct rmp_device_status, pool_bytes) },
	{ "rmpool_device_pool_free_bytes", "Free bytes of the device's pool.",
	  offsetof(struct rmp_device_status, free_bytes) },
	{ "rmpool_device_pool_largest_free_extent_bytes", "The largest free "
	  "extent of the device's pool.",
	  offsetof(struct rmp_device_status, largest_free) },
	{ "rmpool_device_leases", "Granted leases in the device's pool.",
	  offsetof(struct rmp_device_status, leases) },
	{ "rmpool_device_leased_bytes", "Bytes of the granted leases in the "
	  "device's pool.", offsetof(struct rmp_device_status, leased_bytes) },
};

/* render_devices -- each device's pool figures and clients. */
static void render_devices(struct evbuffer *b, const struct rmp_status *st)
{
	char dev[2 * sizeof(st->devices[0].name)];

	for (size_t f = 0; f < sizeof(device_figs) / sizeof(device_figs[0]);
	     f++) {
		family(b, device_figs[f].name, "gauge", device_figs[f].help);
		for (unsigned i = 0; i < st->ndevices; i++) {
			const struct rmp_device_status *d = &st->devices[i];
			uint64_t v;

			memcpy(&v, (const char *)d + device_figs[f].off,
			       sizeof(v));
			evbuffer_add_printf(b, "%s{device=\"%s\",numa_node=\""
					    "%d\"} %" PRIu64 "\n",
					    device_figs[f].name,
					    esc(d->name, dev, sizeof(dev)),
					    d->numa_node, v);
		}
	}
	family(b, "rmpool_device_clients", "gauge",
	       "Connections that came in through the device.");
	for (unsigned i = 0; i < st->ndevices; i++)
		evbuffer_add_printf(b, "rmpool_device_clients{device=\"%s\"} %"
				    PRIu32 "\n", esc(st->devices[i].name, dev,
						   sizeof(dev)),
				    st->devices[i].clients);
}

/* render_daemon -- the daemon and its pools (and journals). */
static void render_daemon(struct rmp_metrics *m, struct evbuffer *b,
			  const struct rmp_status *st)
{
	char ver[64];

	family(b, "rmpool_build_info", "gauge",
	       "Always 1; the version of rmpoold in a label.");
	evbuffer_add_printf(b, "rmpool_build_info{version=\"%s\"} 1\n",
			    esc(st->version, ver, sizeof(ver)));
	family(b, "rmpool_start_time_seconds", "gauge",
	       "When rmpoold started, in seconds since the Unix epoch.");
	evbuffer_add_printf(b, "rmpool_start_time_seconds %.3f\n",
			    m->start_time);
	family(b, "rmpool_uptime_seconds", "gauge",
	       "Seconds since rmpoold started.");
	evbuffer_add_printf(b, "rmpool_uptime_seconds %" PRIu64 ".%03" PRIu64
			    "\n", st->uptime_ms / 1000, st->uptime_ms % 1000);
	one(b, "rmpool_draining", "gauge",
	    "1 while no new leases are granted (operator's drain or "
	    "stopping), else 0.", st->draining);

	one(b, "rmpool_pool_size_bytes", "gauge",
	    "Size of the pinned, registered pool.", st->pool_bytes);
	one(b, "rmpool_pool_free_bytes", "gauge",
	    "Free bytes of the pool, ready to lease.", st->free_bytes);
	one(b, "rmpool_pool_largest_free_extent_bytes", "gauge",
	    "The largest free extent: the largest lease that fits now.",
	    st->largest_free);
	one(b, "rmpool_pool_quarantined_bytes", "gauge",
	    "Bytes never reused because a key to them could not be proven "
	    "dead.", st->quarantined_bytes);
	one(b, "rmpool_zeroing_backlog_bytes", "gauge",
	    "Bytes of ended leases waiting to be zeroed before reuse.",
	    st->zeroing_bytes);
	if (st->persistent) {
		one(b, "rmpool_journal_records", "gauge",
		    "Leases in the journal that keeps them across restarts.",
		    st->journal_records);
		one(b, "rmpool_journal_capacity", "gauge",
		    "Records the journal has room for ([pool] max_leases).",
		    st->journal_capacity);
		one(b, "rmpool_leases_recovered", "gauge",
		    "Leases the last start took back from the journal.",
		    st->recovered);
	}
}

/* unix_s -- the Unix time of monotonic millisecond t (rmp_now_ms). */
static double unix_s(uint64_t t)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (double)rt.tv_sec + rt.tv_nsec / 1e9 -
	       (double)(rmp_now_ms() - t) / 1e3;
}

/* render_cluster -- the membership in etcd, with [cluster] etcd only. */
static void render_cluster(struct evbuffer *b, const struct rmp_status *st)
{
	const struct rmp_cluster_status *cs = &st->cluster;
	char node[2 * RMP_CONFIG_NAME_LEN], state[64];

	if (!cs->enabled)
		return;
	family(b, "rmpool_cluster_info", "gauge",
	       "Always 1: the node's name in the cluster and the state of its "
	       "registration in etcd (registered, registering, name-taken, "
	       "etcd-unreachable, leaving, left).");
	evbuffer_add_printf(b, "rmpool_cluster_info{node=\"%s\",state=\"%s\"}"
			    " 1\n", esc(cs->node, node, sizeof(node)),
			    esc(cs->state, state, sizeof(state)));
	one(b, "rmpool_cluster_registered", "gauge",
	    "1 while the node's key in etcd is its own, else 0.",
	    cs->registered);
	family(b, "rmpool_cluster_last_keepalive_timestamp_seconds", "gauge",
	       "When etcd last answered a keep-alive of the node's lease "
	       "(Unix time; 0: never).");
	evbuffer_add_printf(b, "rmpool_cluster_last_keepalive_timestamp_seconds"
			    " %.3f\n", cs->keepalive_ms ?
			    unix_s(cs->keepalive_ms) : 0.0);
	one(b, "rmpool_cluster_etcd_errors_total", "counter",
	    "etcd requests that failed (the last one's error is in "
	    "rmpoolctl status).", cs->errors);
	one(b, "rmpool_cluster_etcd_outages_total", "counter",
	    "Times etcd stopped answering (each logged once).", cs->outages);
}

/* render_leases -- leases by state, keys, and the lifecycle's counters. */
static void render_leases(struct evbuffer *b,
			  const struct rmp_ops_counters *ctr, const char *keys)
{
	const struct rmp_lifecycle_stats *ls = &ctr->leases;
	family(b, "rmpool_leases", "gauge",
	       "Leases by state; keys is the daemon's lease_keys mode.");
	for (int i = 0; i < RMP_LEASE_STATES; i++)
		evbuffer_add_printf(b, "rmpool_leases{state=\"%s\",keys=\"%s\"}"
				    " %" PRIu64 "\n", ctr->by_state[i].state, keys,
				    ctr->by_state[i].leases);
	family(b, "rmpool_lease_bytes", "gauge",
	       "Bytes of leases by state; keys is the daemon's lease_keys "
	       "mode.");
	for (int i = 0; i < RMP_LEASE_STATES; i++)
		evbuffer_add_printf(b, "rmpool_lease_bytes{state=\"%s\","
				    "keys=\"%s\"} %" PRIu64 "\n",
				    ctr->by_state[i].state, keys,
				    ctr->by_state[i].bytes);
	family(b, "rmpool_lease_keys", "gauge",
	       "Live keys (rkeys handed to connections) of granted leases.");
	evbuffer_add_printf(b, "rmpool_lease_keys{keys=\"%s\"} %" PRIu64 "\n",
			    keys, ls->keys);

	one(b, "rmpool_lease_grants_total", "counter",
	    "Leases granted (ALLOC).", ls->grants);
	one(b, "rmpool_lease_renewals_total", "counter",
	    "Leases renewed (RENEW).", ls->renewals);
	one(b, "rmpool_lease_frees_total", "counter",
	    "Leases freed by a client (FREE).", ls->frees);
	one(b, "rmpool_lease_expiries_total", "counter",
	    "Leases ended by their deadline.", ls->expiries);
	one(b, "rmpool_lease_revocations_total", "counter",
	    "Leases ended by an operator.", ls->revocations);
	one(b, "rmpool_lease_attaches_total", "counter",
	    "Shared attaches: another key to a lease (ATTACH).", ls->attaches);
	one(b, "rmpool_lease_takeovers_total", "counter",
	    "Exclusive attaches that revoked the other keys.", ls->takeovers);
	one(b, "rmpool_quota_refusals_total", "counter",
	    "Allocations refused by a tenant limit (EDQUOT).", ls->refusals);
}

/* render_connections -- connections, refusals and failures. */
static void render_connections(struct evbuffer *b,
			       const struct rmp_ops_counters *ctr,
			       const struct rmp_status *st)
{
	const struct rmp_conn_counters *cs = &ctr->conns;

	one(b, "rmpool_clients_connected", "gauge",
	    "Client connections now.", st->clients);
	one(b, "rmpool_connections_accepted_total", "counter",
	    "Client connections accepted.", cs->accepted);
	one(b, "rmpool_connections_closed_total", "counter",
	    "Client connections closed.", cs->closed);
	family(b, "rmpool_connect_rejects_total", "counter",
	       "Connect requests refused, by reason.");
	for (unsigned r = 1; r < RMP_REJ_REASONS; r++)
		evbuffer_add_printf(b, "rmpool_connect_rejects_total{reason="
				    "\"%s\"} %" PRIu64 "\n",
				    ctr->rejects[r].reason,
				    ctr->rejects[r].count);
	one(b, "rmpool_auth_failures_total", "counter",
	    "Connections whose tenant proof failed (wrong key, replay, "
	    "request before AUTH).", cs->auth_failures);
	one(b, "rmpool_access_errors_total", "counter",
	    "Remote access errors: a key used outside what it was given.",
	    cs->access_errors);
	one(b, "rmpool_revoked_key_errors_total", "counter",
	    "Remote access errors of connections with a key the server had "
	    "revoked for someone else (a takeover, a repair, another "
	    "holder's free, an operator): not counted toward the cool-down.",
	    cs->revoked_key_errors);
	one(b, "rmpool_unauthenticated_evicted_total", "counter",
	    "Connections still to prove a tenant closed to make room for a "
	    "newer one (unauthenticated_per_address, max_unauthenticated).",
	    cs->preauth_evicted);
	one(b, "rmpool_auth_timeouts_total", "counter",
	    "Connections closed because they did not authenticate within "
	    "auth_timeout.", cs->auth_timeouts);
	one(b, "rmpool_log_lines_suppressed_total", "counter",
	    "Log lines about one peer beyond its rate (refused connects, "
	    "access and authentication errors), summed up instead.",
	    cs->log_suppressed);
	one(b, "rmpool_log_lines_lost_total", "counter",
	    "Log lines dropped because the log's reader (journald) did not "
	    "keep up.", rmp_log_lost());
	one(b, "rmpool_bad_messages_total", "counter",
	    "Requests that did not decode or reached for another tenant's "
	    "lease.", cs->bad_messages);
	one(b, "rmpool_clients_unreachable_total", "counter",
	    "Connections closed because a liveness probe got no answer (the "
	    "client's host died or cannot be reached).",
	    cs->unreachable);
}

static void render(struct rmp_metrics *m, struct evbuffer *b)
{
	const struct rmp_ops *o = m->ops;
	struct rmp_ops_counters ctr;
	struct rmp_status st;
	char keys[16];

	rmp_ops_status(o, &st);
	rmp_ops_counters(o, &ctr);
	esc(st.keys_mode, keys, sizeof(keys));
	render_daemon(m, b, &st);
	render_devices(b, &st);
	render_cluster(b, &st);
	render_leases(b, &ctr, keys);
	render_connections(b, &ctr, &st);
	put_latency(b, ctr.latency);
	put_tenants(b, o);
	put_device(m, b, false);
	put_device(m, b, true);
}

/* ------------------------------------------------------------- HTTP */

static void on_request(struct evhttp_request *req, void *arg)
{
	struct rmp_metrics *m = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	struct evkeyvalq *hdr = evhttp_request_get_output_headers(req);
	struct evbuffer *b;

	if (!path || strcmp(path, "/metrics")) {
		evhttp_send_error(req, HTTP_NOTFOUND, NULL);
		return;
	}
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(hdr, "Allow", "GET, HEAD");
		evhttp_send_error(req, HTTP_BADMETHOD, NULL);
		return;
	}
	b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	render(m, b);
	evhttp_add_header(hdr, "Content-Type", CONTENT_TYPE);
	evhttp_send_reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

/* sweep -- drop our reference to connections evhttp has freed. */
static void sweep(struct rmp_metrics *m)
{
	bufferevent_data_cb rd, wr;
	bufferevent_event_cb ev;
	void *arg;

	for (unsigned i = 0; i < m->nconns;) {
		bufferevent_getcb(m->conns[i], &rd, &wr, &ev, &arg);
		if (rd || wr || ev) {
			i++;
			continue;
		}
		bufferevent_decref(m->conns[i]);
		m->nconns--;
		m->conns[i] = m->conns[m->nconns];
		m->opened_ms[i] = m->opened_ms[m->nconns];
	}
}

/*
 * shut_oldest -- every slot is taken: shut down the connections open for
 * OLDEST_MS or more (evhttp then sees the end and frees them), so that
 * slow or idle peers cannot keep scrapers out for good.
 */
static void shut_oldest(struct rmp_metrics *m)
{
	uint64_t now = rmp_now_ms();
	unsigned n = 0;
	int fd;

	for (unsigned i = 0; i < m->nconns; i++) {
		if (now - m->opened_ms[i] < OLDEST_MS)
			continue;
		fd = bufferevent_getfd(m->conns[i]);
		if (fd >= 0 && shutdown(fd, SHUT_RDWR) == 0)
			n++;
		m->opened_ms[i] = now; /* once */
	}
	if (n)
		log_warn("metrics: all %u connections taken; shut down %u "
			 "open for %u s or more", m->nconns, n,
			 OLDEST_MS / 1000);
}

static void pause_accepting(struct rmp_metrics *m)
{
	const struct timeval tv = { 0, RESUME_POLL_MS * 1000 };

	if (m->paused)
		return;
	evconnlistener_disable(evhttp_bound_socket_get_listener(m->sock));
	event_add(m->resume_ev, &tv);
	m->paused = true;
	log_info("metrics: %u connections open, accepting no more until one "
		 "closes", m->nconns);
}

static void on_resume_poll(int fd, short what, void *arg)
{
	struct rmp_metrics *m = arg;

	(void)fd;
	(void)what;
	sweep(m);
	if (m->nconns >= MAX_CONNS) {
		shut_oldest(m);
		return;
	}
	event_del(m->resume_ev);
	evconnlistener_enable(evhttp_bound_socket_get_listener(m->sock));
	m->paused = false;
}

/* new_conn -- evhttp's bufferevent for a connection it accepted. */
static struct bufferevent *new_conn(struct event_base *base, void *arg)
{
	struct rmp_metrics *m = arg;
	struct bufferevent *bev;

	sweep(m);
	/* Without BEV_OPT_CLOSE_ON_FREE evhttp closes the socket itself
	 * when it frees the connection: our reference holds no socket. */
	bev = bufferevent_socket_new(base, -1, 0);
	if (!bev)
		return NULL; /* evhttp tries one of its own */
	if (m->nconns < MAX_CONNS) {
		bufferevent_incref(bev);
		m->opened_ms[m->nconns] = rmp_now_ms();
		m->conns[m->nconns++] = bev;
	}
	if (m->nconns >= MAX_CONNS)
		pause_accepting(m);
	return bev;
}

/* ------------------------------------------------------------ set-up */

static int cmp_counter(const void *a, const void *b)
{
	const struct dev_counter *x = a, *y = b;

	return x->hw != y->hw ? x->hw - y->hw : strcmp(x->name, y->name);
}

/* list_counters -- the counter files of device k's port, in name order
 * after the devices before it. */
static void list_counters(struct rmp_metrics *m, unsigned k)
{
	static const char *const dirs[] = { "counters", "hw_counters" };
	unsigned first = m->ncounters;
	char dir[160];

	for (int hw = 0; hw < 2; hw++) {
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), SYSFS_IB "/%s/ports/%u/%s",
			 m->devs[k].name, m->devs[k].port, dirs[hw]);
		d = opendir(dir);
		if (!d)
			continue;
		while ((e = readdir(d)) &&
		       m->ncounters < first + MAX_DEV_COUNTERS) {
			struct dev_counter *c = &m->counters[m->ncounters];
			int len;

			/* lifespan (hw_counters) is a setting, not a count. */
			if (e->d_name[0] == '.' || e->d_type == DT_DIR ||
			    !strcmp(e->d_name, "lifespan"))
				continue;
			len = snprintf(c->path, sizeof(c->path), "%s/%s", dir,
				       e->d_name);
			if (len < 0 || (size_t)len >= sizeof(c->path))
				continue;
			c->name = c->path + strlen(dir) + 1;
			c->hw = hw;
			c->dev = k;
			m->ncounters++;
		}
		closedir(d);
	}
	qsort(m->counters + first, m->ncounters - first, sizeof(*m->counters),
	      cmp_counter);
	if (m->ncounters == first)
		log_info("metrics: device %s port %u has no counters in sysfs",
			 m->devs[k].name, m->devs[k].port);
}

/* open_socket -- a non-blocking listening TCP socket on host:port. */
static int open_socket(const char *host, uint16_t port, const char **what)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
	}, *ai;
	char serv[8];
	int fd, one = 1, err;

	snprintf(serv, sizeof(serv), "%u", port);
	*what = "bad address";
	if (getaddrinfo(host, serv, &hints, &ai))
		return -EINVAL;
	*what = "socket";
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		goto err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	*what = "cannot bind";
	if (bind(fd, ai->ai_addr, ai->ai_addrlen))
		goto err;
	*what = "cannot listen";
	if (listen(fd, MAX_CONNS))
		goto err;
	freeaddrinfo(ai);
	return fd;
err:
	err = errno;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return -err;
}

struct rmp_metrics *rmp_metrics_new(struct event_base *base,
				    struct rmp_ops *ops, const char *listen)
{
	struct rmp_metrics *m;
	char host[RMP_CONFIG_ADDR_LEN];
	const char *what = "bad address";
	struct timespec rt;
	uint16_t port;
	int fd, err;

	m = calloc(1, sizeof(*m));
	if (!m) {
		log_err("metrics: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	m->base = base;
	m->ops = ops;
	rmp_strlcpy(m->listen, listen, sizeof(m->listen));
	err = rmp_parse_hostport(listen, host, sizeof(host), &port);
	fd = err ? err : open_socket(host, port, &what);
	if (fd < 0) {
		log_err("[server] metrics_listen = %s: %s: %s", listen, what,
			strerror(-fd));
		free(m);
		errno = -fd;
		return NULL;
	}
	m->http = evhttp_new(base);
	m->resume_ev = event_new(base, -1, EV_PERSIST, on_resume_poll, m);
	if (m->http)
		m->sock = evhttp_accept_socket_with_handle(m->http, fd);
	if (!m->sock) {
		close(fd);
		log_err("metrics on %s: cannot set up the HTTP server", listen);
		rmp_metrics_free(m);
		errno = ENOMEM;
		return NULL;
	}
	evhttp_set_timeout(m->http, TIMEOUT_S);
	evhttp_set_max_headers_size(m->http, MAX_HEADERS);
	evhttp_set_max_body_size(m->http, MAX_BODY);
	/* Every method reaches on_request, which answers 405 itself. */
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
				   EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
				   EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
				   EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
				   EVHTTP_REQ_PATCH);
	evhttp_set_bevcb(m->http, new_conn, m);
	evhttp_set_gencb(m->http, on_request, m);

	/* MAX_DEV_COUNTERS per device. */
	m->counters = calloc((size_t)MAX_DEV_COUNTERS * RMP_MAX(ops->ndevs, 1),
			     sizeof(*m->counters));
	m->ndevs = ops->ndevs;
	for (unsigned k = 0; k < m->ndevs && m->counters; k++) {
		rmp_strlcpy(m->devs[k].name, ops->devs[k]->name,
			    sizeof(m->devs[k].name));
		m->devs[k].port = rmp_ops_port_of(ops, ops->devs[k]);
		list_counters(m, k);
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	m->start_time = (double)rt.tv_sec + rt.tv_nsec / 1e9 -
			(double)(rmp_now_ms() - ops->started_ms) / 1e3;
	log_info("metrics on http://%s%s%s:%u/metrics (%u device(s), %u "
		 "port counters)", strchr(host, ':') ? "[" : "", host,
		 strchr(host, ':') ? "]" : "", port, m->ndevs, m->ncounters);
	return m;
}

void rmp_metrics_free(struct rmp_metrics *m)
{
	if (!m)
		return;
	/* evhttp frees its connections and closes the listening socket;
	 * then our references are the last. */
	if (m->http)
		evhttp_free(m->http);
	for (unsigned i = 0; i < m->nconns; i++)
		bufferevent_decref(m->conns[i]);
	if (m->resume_ev)
		event_free(m->resume_ev);
	free(m->counters);
	free(m);
}

/* SPDX-License-Identifier: MIT */
/*
 * cluster_harness.h -- what the tests of daemon/cluster.c share: one
 * event loop and one etcd (etcd_fixture), the daemon's figures stubbed
 * (rmp_ops_status says `fig`), its log kept to be counted (the test is
 * linked with --wrap=rmp_log), and the node record read back. Nothing
 * here checks: the test files do (tests/unit/check.h counts per file).
 */
#ifndef RMP_CLUSTER_HARNESS_H
#define RMP_CLUSTER_HARNESS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../daemon/config.h"
#include "../../daemon/ops.h"
#include "etcd_fixture.h"

#define GIB (UINT64_C(1) << 30)
/* The key of node n1 under the default prefix. */
#define KEY "/rmpool/nodes/n1"

extern struct event_base *base;
extern struct etcd_fixture fx;
extern struct rmp_status fig; /* what rmp_ops_status says */

/* harness_start -- fig's defaults, the loop (a 10 ms wake-up so that
 * run_until looks often) and fx started. false (after a "Bail out!"
 * line) when etcd did not start. harness_end -- all of it stopped. */
bool harness_start(void);
void harness_end(void);

/* The log: log_n lines since log_reset(); log_count counts those at
 * LOG_INFO or above holding text, log_count_all those at any level. */
extern unsigned log_n;
void log_reset(void);
unsigned log_count(const char *text);
unsigned log_count_all(const char *text);

/* now_ms -- CLOCK_MONOTONIC in ms. */
uint64_t now_ms(void);
/* run_until -- run the loop for ms, or until *until (when given) is
 * true; *until's value at the end (true without until). */
bool run_until(const bool *until, uint64_t ms);

/* harness_config -- the defaults, etcd fx, node n1 with two labels, ttl,
 * listening on 192.0.2.1. */
void harness_config(struct rmp_config *c, uint64_t ttl_ms);

/* record -- the node record of KEY in fx (etcdctl), parsed (json_object_put
 * it); NULL if none, or not JSON. *version (when given) its etcd
 * version. */
json_object *record(int64_t *version);
/* key_lease -- the etcd lease KEY is under (0: none); *exists whether
 * KEY exists at all (whatever its value). */
int64_t key_lease(bool *exists);
int64_t get_int(json_object *o, const char *name);
const char *get_str(json_object *o, const char *name);

/* write_file -- text into path with mode; false when it could not. */
bool write_file(const char *path, const char *text, mode_t mode);

#endif /* RMP_CLUSTER_HARNESS_H */

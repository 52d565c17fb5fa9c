#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-credits.sh PORT -- a client that keeps exactly as many requests in
# flight as the server's credits (16 by default), sending the next one as
# each reply arrives, is served 10000 times and never disconnected. And
# a daemon whose clients could have more completions due than the
# device's CQ holds (max_clients 65536, credits 1024) refuses to start,
# saying what to lower, instead of overrunning the CQ later.
source "$(dirname "$0")/lib.sh"

rmp_init credits "$1"
daemon_start
check rmp_raw credits 10000
daemon_stop

rmp_conf server max_clients 65536
rmp_conf server credits 1024
rc=0
timeout 120 "$RMPOOLD" -c "$RMP_CONF" >"$RMP_TMP/big.log" 2>&1 || rc=$?
grep -E "completion queue|lower" "$RMP_TMP/big.log"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
	rmp_fail "a daemon whose CQ cannot hold its clients' completions started (exit $rc)"
grep -q "lower \[server\] max_clients (65536) or credits (1024)" "$RMP_TMP/big.log" ||
	rmp_fail "the daemon did not say what to lower"
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two client processes at once: leases of 64 B .. 8 MiB written and read
# back (copy and zero-copy paths), CAS/FAA old values, async batches; then
# rmp_flush visibility to another connection and the library's range checks.
source "$(dirname "$0")/lib.sh"
rmp_init data-path "$1"
rmp_conf pool size 48M
daemon_start

"$RMP_TESTBIN" patterns "$RMP_TEST_ADDR" "$RMP_PORT" 1 & a=$!
"$RMP_TESTBIN" patterns "$RMP_TEST_ADDR" "$RMP_PORT" 2 & b=$!
wait $a || rmp_fail "client 1 failed"
wait $b || rmp_fail "client 2 failed"
check "$RMP_TESTBIN" flush "$RMP_TEST_ADDR" "$RMP_PORT"
check "$RMP_TESTBIN" range "$RMP_TEST_ADDR" "$RMP_PORT"

daemon_stop
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Per-client quotas give -EDQUOT; pool exhaustion gives -ENOSPC; after all
# leases are freed the pool's free bytes are back to the start (STAT).
source "$(dirname "$0")/lib.sh"
rmp_init quota "$1"
cp "$RMP_CONF" "$RMP_TMP/base.conf"
rmp_conf quota leases_per_client 4
rmp_conf quota bytes_per_client 1M
daemon_start
check "$RMP_TESTBIN" quota "$RMP_TEST_ADDR" "$RMP_PORT" 4 1048576
daemon_stop

cp "$RMP_TMP/base.conf" "$RMP_CONF"
daemon_start
check "$RMP_TESTBIN" exhaust "$RMP_TEST_ADDR" "$RMP_PORT"
daemon_stop
rmp_pass

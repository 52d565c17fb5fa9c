#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tenant limits give -EDQUOT; pool exhaustion gives -ENOSPC; after all
# leases are freed the pool's free bytes are back to the start (STAT).
source "$(dirname "$0")/lib.sh"
rmp_init quota "$1"
cp "$RMP_CONF" "$RMP_TMP/base.conf"
sed -i "/^key_file = /a leases = 4\nbytes = 1M" "$RMP_CONF"
daemon_start
check "$RMP_TESTBIN" quota "$RMP_TEST_ADDR" "$RMP_PORT" 4 1048576
daemon_stop

cp "$RMP_TMP/base.conf" "$RMP_CONF"
daemon_start
check "$RMP_TESTBIN" exhaust "$RMP_TEST_ADDR" "$RMP_PORT"
daemon_stop
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-oob-region.sh PORT -- with lease_keys = region the NIC enforces a
# lease's bounds: a READ of the whole lease works, a READ of one byte past
# its end completes with a remote access error. (rxe does not enforce a
# memory window's range, so this is a region-mode test.)
source "$(dirname "$0")/lib.sh"

rmp_init oob-region "$1"
rmp_conf lease lease_keys region
daemon_start
daemon_log_has "lease keys: region" ||
	rmp_fail "the daemon does not use lease_keys = region"
check "$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" oob
daemon_stop
rmp_pass

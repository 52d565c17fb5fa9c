#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A lease not renewed is revoked within TTL + one expiry tick (its rkey
# then fails with a remote access error), and a new lease over the same
# bytes reads back zeros. An auto-renew lease lives while its connection does,
# and one ttl longer. Usage: test-expiry.sh PORT window|region
source "$(dirname "$0")/lib.sh"
rmp_init "expiry-$2" "$1"
rmp_conf lease lease_keys "$2"
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
# The pool is one hugepage: the second lease must reuse the extent.
rmp_conf pool size 2M
daemon_start

check "$RMP_TESTBIN" expiry "$RMP_TEST_ADDR" "$RMP_PORT" 2097152 3 100
daemon_log_has "lease\(s\) expired and revoked" ||
	rmp_fail "the daemon did not log the expiry"
check "$RMP_TESTBIN" autorenew "$RMP_TEST_ADDR" "$RMP_PORT" 2 100

daemon_stop
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-stolen-rkey.sh PORT MODE -- a lease's rkey must not work from
# another connection (lease_keys = MODE: window or region).
#
# Process A (rmp-raw hold) allocates a lease, writes a pattern and keeps
# its connection open; process B (rmp-raw steal) connects on its own and
# RDMA READs (then, on a new connection, WRITEs) the lease with A's address
# and rkey: each must complete with a remote access error. A then checks
# that its bytes are intact and frees the lease.
source "$(dirname "$0")/lib.sh"

mode=${2:-}
case $mode in
window | region) ;;
*) echo "usage: $0 PORT window|region" >&2; exit 2 ;;
esac
rmp_init "stolen-rkey-$mode" "$1"
rmp_conf lease lease_keys "$mode"

daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"

hold_start
steal_rc=0
"$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" steal "$HOLD_ADDR" "$HOLD_RKEY" \
	"$HOLD_LEN" || steal_rc=$?
# The holder checks its bytes and frees its lease in any case.
hold_stop || rmp_fail "the holder failed"
if [ "$steal_rc" -ne 0 ]; then
	[ "$mode" = region ] && echo "NOTE: region mode relies on a" \
		"protection domain per connection (docs/design-notes.md)." >&2
	rmp_fail "lease_keys=$mode: the rkey of another connection's lease" \
		"was not refused (rmp-raw steal exit $steal_rc)"
fi
daemon_stop
rmp_pass

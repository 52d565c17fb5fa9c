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

HOLD_PID= HOLD_FD=
hold_cleanup() {
	if [ -n "$HOLD_FD" ]; then exec {HOLD_FD}>&-; fi
	if [ -n "$HOLD_PID" ]; then
		kill "$HOLD_PID" 2>/dev/null
		wait "$HOLD_PID" 2>/dev/null
	fi
	rmp_cleanup
}
trap hold_cleanup EXIT

# hold_start [ARGS...] -- rmp-raw hold in the background, stdin a fifo we
# keep open; sets HOLD_ADDR HOLD_RKEY HOLD_LEN HOLD_ID from its LEASE line.
hold_start() {
	local line=
	mkfifo "$RMP_TMP/hold.in"
	"$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" hold "$@" \
		<"$RMP_TMP/hold.in" >"$RMP_TMP/hold.out" &
	HOLD_PID=$!
	exec {HOLD_FD}>"$RMP_TMP/hold.in"
	for _ in $(seq 1 600); do
		line=$(grep -m1 '^LEASE ' "$RMP_TMP/hold.out") && break
		kill -0 "$HOLD_PID" 2>/dev/null ||
			rmp_fail "rmp-raw hold exited before printing its lease"
		sleep 0.1
	done
	[ -n "$line" ] || rmp_fail "rmp-raw hold printed no lease in 60 s"
	read -r _ HOLD_ADDR HOLD_RKEY HOLD_LEN HOLD_ID <<<"$line"
	echo "holder: lease $HOLD_ID at $HOLD_ADDR rkey $HOLD_RKEY," \
		"$HOLD_LEN bytes"
}

# hold_stop -- tell the holder to finish; it must exit 0.
hold_stop() {
	local rc=0
	exec {HOLD_FD}>&-
	HOLD_FD=
	wait "$HOLD_PID" || rc=$?
	HOLD_PID=
	[ "$rc" -eq 0 ] || rmp_fail "rmp-raw hold exited with status $rc"
}

daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"

hold_start
steal_rc=0
"$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" steal "$HOLD_ADDR" "$HOLD_RKEY" \
	"$HOLD_LEN" || steal_rc=$?
# The holder checks its bytes and frees its lease in any case.
hold_stop
if [ "$steal_rc" -ne 0 ]; then
	[ "$mode" = region ] && echo "NOTE: in region mode every lease MR is" \
		"registered in the daemon's one protection domain, which all" \
		"client QPs share: an MR rkey works from any of them." >&2
	rmp_fail "lease_keys=$mode: the rkey of another connection's lease" \
		"was not refused (rmp-raw steal exit $steal_rc)"
fi
daemon_stop
rmp_pass

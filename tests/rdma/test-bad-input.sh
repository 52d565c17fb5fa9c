#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-bad-input.sh PORT -- bad input from a client gets an error reply or
# a reject, and the daemon keeps serving a well-behaved client throughout.
#
#   - a well-behaved client holds a lease and sends a STAT every 300 ms on
#     its connection (rmp-raw hold --stat-every), while a loop runs
#     `rmpool stat` (new connections) next to it;
#   - rmp-raw garbage: truncated message, unknown opcode, wrong version,
#     huge payload_len, FREE of a missing lease, then a garbage stream
#     until the daemon disconnects;
#   - rmp-raw badconnect: no / bad-magic / newer-protocol / protocol-2 /
#     protocol-3 connect data;
#   - FREE of the well-behaved client's lease from another connection of
#     its tenant without the secret (-ENOENT: a wrong secret looks like
#     no lease; another tenant gets -EPERM, see test-tenant-auth);
#   - the well-behaved client was answered every time, its lease bytes are
#     intact, and the daemon exits 0 with no sanitizer report.
source "$(dirname "$0")/lib.sh"

rmp_init bad-input "$1"

STAT_PID=
bad_cleanup() {
	: >"$RMP_TMP/stop" 2>/dev/null
	for p in $STAT_PID; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rmp_cleanup
}
trap bad_cleanup EXIT


# stat_loop CMD... -- run CMD every 0.3 s until $RMP_TMP/stop exists;
# write "OK FAILED" counts to $RMP_TMP/stat.result.
stat_loop() {
	local ok=0 bad=0
	while [ ! -e "$RMP_TMP/stop" ]; do
		if "$@" >/dev/null 2>>"$RMP_TMP/stat.err"; then
			ok=$((ok + 1))
		else
			bad=$((bad + 1))
			echo "stat loop: '$*' failed at $(date +%T)" \
				>>"$RMP_TMP/stat.err"
		fi
		sleep 0.3
	done
	echo "$ok $bad" >"$RMP_TMP/stat.result"
}

failures=()
# step NAME CMD... -- run a check; remember a failure and go on, so that
# one run reports every broken case.
step() {
	local name=$1 rc=0
	shift
	echo "==== $name"
	"$@" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "==== $name: FAILED (exit $rc)"
		failures+=("$name")
	fi
}

daemon_start

# The well-behaved clients.
hold_start --stat-every 300
if "$RMPOOL" -s "$RMP_SERVER" stat >/dev/null 2>"$RMP_TMP/cli.err"; then
	stat_cmd=("$RMPOOL" -s "$RMP_SERVER" stat)
else
	echo "NOTE: the rmpool CLI does not work here ($(head -c 300 \
		"$RMP_TMP/cli.err")); the STAT loop uses rmp-raw stat" >&2
	stat_cmd=("$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" stat)
fi
stat_loop "${stat_cmd[@]}" &
STAT_PID=$!

raw() { "$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" "$@"; }
step "garbage messages" raw garbage
step "bad connect data" raw badconnect
step "FREE of another client's lease without its secret" raw free "$HOLD_ID" ENOENT
step "daemon logged the garbage disconnect" \
	daemon_log_has "disconnected: too many bad messages"
step "daemon logged the rejects" daemon_log_has "rejected connection from"

# Stop the well-behaved clients; each must have been served throughout.
: >"$RMP_TMP/stop"
wait "$STAT_PID"
STAT_PID=
read -r stat_ok stat_bad <"$RMP_TMP/stat.result"
echo "stat loop (${stat_cmd[0]##*/}): $stat_ok ok, $stat_bad failed"
if [ "$stat_bad" -ne 0 ] || [ "$stat_ok" -lt 1 ]; then
	cat "$RMP_TMP/stat.err" >&2
	failures+=("stat loop served throughout")
fi
hold_stop || failures+=("well-behaved holder")

daemon_stop
if [ "${#failures[@]}" -ne 0 ]; then
	printf 'failed: %s\n' "${failures[@]}" >&2
	rmp_fail "${#failures[@]} check(s) failed"
fi
rmp_pass

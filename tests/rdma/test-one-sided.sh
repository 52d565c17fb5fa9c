#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One-sided for real: while two clients run a READ/WRITE loop, the
# daemon's own CPU time grows by less than 1% of the loop's wall time.
source "$(dirname "$0")/lib.sh"
rmp_init one-sided "$1"
seconds=${RMP_LOOP_SECONDS:-10}
daemon_start

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$RMP_DPID/stat"; }
"$RMP_TESTBIN" loop "$RMP_TEST_ADDR" "$RMP_PORT" "$seconds" "$RMP_TMP/go" >"$RMP_TMP/a" & a=$!
"$RMP_TESTBIN" loop "$RMP_TEST_ADDR" "$RMP_PORT" "$seconds" "$RMP_TMP/go" >"$RMP_TMP/b" & b=$!
# Measure from the moment both loops run (connecting can be slow in a VM).
until file_match "$RMP_TMP/a" READY && file_match "$RMP_TMP/b" READY; do
	kill -0 $a 2>/dev/null && kill -0 $b 2>/dev/null ||
		rmp_fail "a client died before its loop"
	sleep 0.05
done
t0=$(date +%s%N)
c0=$(cpu_ticks)
touch "$RMP_TMP/go"
wait $a || rmp_fail "client a failed"
wait $b || rmp_fail "client b failed"
c1=$(cpu_ticks)
t1=$(date +%s%N)
hz=$(getconf CLK_TCK)
wall_ms=$(((t1 - t0) / 1000000))
cpu_ms=$(((c1 - c0) * 1000 / hz))
echo "clients: $(cat "$RMP_TMP/a" "$RMP_TMP/b" | grep DONE | tr '\n' ' ')"
echo "daemon CPU ${cpu_ms} ms over ${wall_ms} ms of loop (limit 1%: $((wall_ms / 100)) ms)"
[ "$wall_ms" -ge $((seconds * 1000)) ] || rmp_fail "loop shorter than ${seconds} s"
[ $((cpu_ms * 100)) -lt "$wall_ms" ] ||
	rmp_fail "daemon used ${cpu_ms} ms CPU: not one-sided"
daemon_stop
rmp_pass

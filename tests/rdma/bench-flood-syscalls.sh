#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-flood-syscalls.sh PORT [FLOODERS] -- the event loop's work per
# request under a flood: rmpoold runs under `strace -f -c` while
# FLOODERS (12) rmp-raw flood clients keep every credit (64) busy for
# 8 s; prints the replies, the system calls and their ratio, and the
# daemon's busiest calls. A benchmark (suite "bench", not run by
# tests/run-tests.sh): compare two builds in one VM boot with
# RMP_RMPOOLD=<other rmpoold>. Under strace every call is slow, so
# throughput here means nothing; calls per reply do. RMP_BENCH_STRACE=no
# runs the daemon as it is and prints the flood's replies per second
# instead (alternate builds over several rounds: a TCG guest's figures
# drift between runs).
source "$(dirname "$0")/lib.sh"

rmp_init bench-flood-syscalls "$1"
flooders=${2:-12}
command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 77; }
rmp_conf server credits 64
rmp_conf server drain_timeout 1s
rmp_conf server log_level info
strace=${RMP_BENCH_STRACE:-yes}
if [ "$strace" = no ]; then
	daemon_start
else
	(
		raw_bg_close_all
		exec strace -f -c -o "$RMP_TMP/strace.out" "$RMPOOLD" -c "$RMP_CONF"
	) >"$RMP_DLOG" 2>&1 &
	RMP_DPID=$!
	for _ in $(seq 1 300); do
		grep -q "listening on" "$RMP_DLOG" && break
		sleep 0.1
	done
	grep -q "listening on" "$RMP_DLOG" || rmp_fail "rmpoold did not start"
fi
for ((i = 1; i <= flooders; i++)); do
	raw_bg_start "flood$i" '^READY' flood 8
done
for ((i = 1; i <= flooders; i++)); do
	raw_bg_send "flood$i"
done
total=0
for ((i = 1; i <= flooders; i++)); do
	raw_bg_wait "flood$i" '^FLOODED ' 60
	read -r _ n _ <<<"$RAW_BG_LINE"
	total=$((total + n))
	raw_bg_stop "flood$i" >/dev/null 2>&1
done
if [ "$strace" = no ]; then
	daemon_stop
	echo "flood-rate: $RMPOOLD: $total replies in 8 s over $flooders" \
		"connections: $((total / 8)) replies/s"
	rmp_pass
fi
# The daemon itself (not strace): it drains and exits, strace reports.
kill -TERM "$(pgrep -f "^$RMPOOLD -c $RMP_CONF")"
for _ in $(seq 1 100); do
	[ -s "$RMP_TMP/strace.out" ] && break
	sleep 0.1
done
wait "$RMP_DPID" 2>/dev/null
RMP_DPID=
calls=$(awk '$NF == "total" { print $4 }' "$RMP_TMP/strace.out")
[ -n "$calls" ] || rmp_fail "no strace summary"
echo "flood-syscalls: $RMPOOLD: $total replies, $calls system calls," \
	"$(awk -v c="$calls" -v r="$total" 'BEGIN { printf "%.3f", c / r }')" \
	"per reply"
sort -k4 -n -r "$RMP_TMP/strace.out" | grep -E '^ *[0-9]' | head -n 8
rmp_pass

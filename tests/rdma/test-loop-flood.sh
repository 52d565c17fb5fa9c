#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-loop-flood.sh PORT [FLOODERS] -- connections that keep every
# credit busy do not starve rmpoold's event loop.
#
# FLOODERS (default 12) rmp-raw flood clients each keep `credits` (64)
# STATs in flight, so the completion queue is never empty. Meanwhile:
#   - `rmpoolctl status` answers every time, within STATUS_MAX_S (its
#     idle time and the ratio are printed: the guest's two CPUs are
#     shared with the flood), and so does a new connection's STAT;
#   - a 2 s lease stops working at the NIC within its deadline plus
#     two expiry ticks and the time to ask (rmp-raw expire --within);
#   - SIGTERM drains: the daemon stops once drain_timeout (5 s) is over
#     (the flood never leaves), within STOP_MAX_S, exit status 0.
# The flood's throughput (replies per second, all clients) is printed:
# the figure to compare between builds of the loop.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"

rmp_init loop-flood "$1"
flooders=${2:-12}
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
rmp_conf server drain_timeout 5s
rmp_conf server credits 64
STATUS_MAX_S=5 STOP_MAX_S=20 FLOOD_S=12

# status_time -- milliseconds one `rmpoolctl status` took (20 s at most);
# fails when it did not answer.
status_time() {
	local t0 t1
	t0=$(date +%s%N)
	timeout 20 "$RMPOOLCTL" -s "$(admin_sock)" status >/dev/null || return 1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# flood_start SECONDS -- connect every flooder, then start them at once.
flood_start() {
	local i
	for ((i = 1; i <= flooders; i++)); do
		raw_bg_start "flood$i" '^READY' flood "$1"
	done
	for ((i = 1; i <= flooders; i++)); do
		raw_bg_send "flood$i"
	done
}

daemon_start
idle=0
for i in 1 2 3; do
	t=$(status_time) || rmp_fail "rmpoolctl status failed on an idle daemon"
	[ "$t" -gt "$idle" ] && idle=$t
done
echo "idle: rmpoolctl status took up to $idle ms"

flood_start "$FLOOD_S"
echo "$flooders connections each keep every credit busy for $FLOOD_S s"
sleep 1
worst=0
for i in 1 2 3 4 5; do
	if ! t=$(status_time); then
		fail_later "flooded: rmpoolctl status #$i did not answer in 20 s"
		continue
	fi
	echo "flooded: rmpoolctl status #$i took $t ms"
	[ "$t" -gt "$worst" ] && worst=$t
done
echo "rmpoolctl status: up to $worst ms flooded, $idle ms idle" \
	"(x$(((worst + idle / 2) / (idle > 0 ? idle : 1))))"
[ "$worst" -le $((STATUS_MAX_S * 1000)) ] ||
	fail_later "flooded: rmpoolctl status took $worst ms, more than $STATUS_MAX_S s"

# A new connection is accepted and served.
for i in 1 2 3; do
	t0=$(date +%s%N)
	rmp_stat >/dev/null || fail_later "flooded: a new connection's STAT #$i failed"
	t=$((($(date +%s%N) - t0) / 1000000))
	echo "flooded: a new connection's STAT #$i took $t ms"
	[ "$t" -le $((STATUS_MAX_S * 1000)) ] ||
		fail_later "flooded: a new connection's STAT took $t ms, more than $STATUS_MAX_S s"
done

# Deadline + two ticks (200 ms) + a READ's round trip under the flood.
rmp_raw expire 2 --within 700 ||
	fail_later "flooded: a 2 s lease still worked 700 ms after its deadline"

# Throughput, and how evenly the connections were served: each has the
# same credits, so none may get less than a third of the busiest one's.
total=0 ms=0 least= most=0
for ((i = 1; i <= flooders; i++)); do
	raw_bg_wait "flood$i" '^FLOODED ' $((FLOOD_S + 30))
	read -r _ n t <<<"$RAW_BG_LINE"
	total=$((total + n))
	[ "$t" -gt "$ms" ] && ms=$t
	[ "$n" -gt "$most" ] && most=$n
	[ -z "$least" ] || [ "$n" -lt "$least" ] && least=$n
	raw_bg_stop "flood$i" || fail_later "flood client $i failed"
done
echo "flood: $total replies in $ms ms over $flooders connections:" \
	"$((total * 1000 / (ms > 0 ? ms : 1))) replies/s;" \
	"per connection $least to $most"
[ $((least * 3)) -ge "$most" ] ||
	fail_later "a connection got $least replies, the busiest $most"

# A stop while flooded drains and exits.
flood_start 60
sleep 1
t0=$(date +%s%N)
kill -TERM "$RMP_DPID"
daemon_wait_exit "$STOP_MAX_S" ||
	rmp_fail "flooded: rmpoold still ran $STOP_MAX_S s after SIGTERM"
echo "flooded: SIGTERM ended rmpoold in $((($(date +%s%N) - t0) / 1000000)) ms"
[ "$RMP_DRC" -eq 0 ] || fail_later "rmpoold exited with status $RMP_DRC"
daemon_check_log
daemon_log_has "draining: no new connections" ||
	fail_later "flooded: SIGTERM did not start a drain"
for ((i = 1; i <= flooders; i++)); do
	raw_bg_stop "flood$i" >/dev/null 2>&1
done
rmp_done

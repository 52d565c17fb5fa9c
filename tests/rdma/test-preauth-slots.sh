#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-preauth-slots.sh PORT -- connections that never authenticate
# cannot keep a tenant's own clients out.
#
# Tenant "a" may have 4 connections. From four other addresses of the
# guest (192.0.2.21-24), 20 silent connections (rmp-raw silentflood)
# name tenant a and never send AUTH, each reopened as soon as it is
# closed (cool-downs at their defaults; 2 of them from 192.0.2.21,
# closed at auth_timeout). Meanwhile a client of a connects six times, a second
# apart, from 192.0.2.1 and from 192.0.2.21 (an attacker's address), and
# must be served every time: a connection counts as the tenant's only
# once it proved the key; one still to prove it holds one of
# max_unauthenticated (16 here) slots, 4 per address, of which a newer
# connection takes the oldest; and silence cools nothing down (a
# neighbour that proves its key is not refused for it). The daemon must
# have closed unauthenticated connections to make room, and some for
# auth_timeout (its counters say how many). Nor can the flood fill the
# log at log_level info: a connect is told at info once it proves a
# tenant, and the close of one that never did is rate-limited per address
# like other lines about a peer: 60 connections from one more address
# that close before authenticating leave at most a burst of lines, and
# the rest counted. Last, a full server (max_clients 8, a restart): 6
# proven connections of tenant test from 192.0.2.24 and 2 silent ones
# from 192.0.2.22, opened again as soon as they are closed, take every
# client slot; a's client at 192.0.2.1 must still be served each time:
# a new connect closes an unproven one for its place (the oldest of the
# address that holds the most) rather than being refused as full, and
# the proven ones are left alone.
source "$(dirname "$0")/lib.sh"
rmp_init preauth-slots "$1"

case $RMP_TEST_ADDR in 192.0.2.*) ;; *)
	echo "needs the VM's 192.0.2.0/24 link" >&2; exit 77 ;;
esac
srcs=(192.0.2.21 192.0.2.22 192.0.2.23 192.0.2.24)
rmp_add_addrs "${srcs[@]/%//24}" 192.0.2.25/24

akey=$RMP_TMP/a.key
rmp_keygen "$akey"
printf '[tenant.a]\nkey_file = %s\nconnections = 4\n' "$akey" >>"$RMP_CONF"
rmp_conf server auth_timeout 1s
rmp_conf server max_unauthenticated 16
rmp_conf server unauthenticated_per_address 4
mlisten=127.0.0.1:$((RMP_PORT + 1000))
rmp_conf server metrics_listen "$mlisten"
rmp_conf server log_level info
daemon_start
as_a() { RMPOOL_TENANT=a RMPOOL_KEY_FILE=$akey "$@"; }

# Silent connections naming a, each opened again as soon as the server
# closes it (rmp-raw silentflood: one process per address, so that no
# start-up time between connects makes the attack lighter than meant).
# 192.0.2.21 has 2, fewer than its slots: they are not pushed out but
# closed at auth_timeout, over and over. The others have 6 each, more
# than their slots: a newer one pushes the oldest out.
floods=()
for a in "${srcs[@]}"; do
	n=6
	[ "$a" = "${srcs[0]}" ] && n=2
	RMP_RAW_SRC=$a RMPOOL_TENANT=a raw_bg_start "flood-${a##*.}" \
		'^FLOODING' silentflood "$n" 120
	floods+=("flood-${a##*.}")
done
served=0 served_here=0
for i in 1 2 3 4 5 6; do
	if out=$(as_a rmp_raw stat 2>&1); then
		served=$((served + 1))
	else
		echo "attempt $i from $RMP_TEST_ADDR: $out" | tail -2
	fi
	if out=$(RMP_RAW_SRC=${srcs[0]} as_a rmp_raw stat 2>&1); then
		served_here=$((served_here + 1))
	else
		echo "attempt $i from ${srcs[0]}: $out" | tail -2
	fi
	sleep 1
done
echo "tenant a's own client: served $served of 6 times from $RMP_TEST_ADDR," \
	"$served_here of 6 from ${srcs[0]} during the attack"
[ "$served" -eq 6 ] ||
	fail_later "tenant a's own client was served $served of 6 times while silent connections named a"
[ "$served_here" -eq 6 ] ||
	fail_later "tenant a's own client at ${srcs[0]} was served $served_here of 6 times while silent connections from there named a"
for f in "${floods[@]}"; do
	raw_bg_stop "$f" || fail_later "rmp-raw $f held no connection"
done
pyrun "$(dirname "$0")/prom.py" get "http://$mlisten/metrics" \
	>"$RMP_TMP/metrics.txt" || rmp_fail "GET http://$mlisten/metrics failed"
# counter NAME -- its value in the scrape.
counter() { awk -v s="$1" '$1 == s { print $2 }' "$RMP_TMP/metrics.txt"; }
n=$(counter rmpool_unauthenticated_evicted_total)
echo "unauthenticated connections closed for a newer one: $n"
[ "${n:-0}" -gt 0 ] || fail_later "no unauthenticated connection was closed to make room"
n=$(counter rmpool_auth_timeouts_total)
echo "unauthenticated connections closed for auth_timeout: $n"
[ "${n:-0}" -gt 5 ] ||
	fail_later "only $n silent connections were closed at auth_timeout: the test did not try the cool-down"

# A burst from one more address: 60 connections that close at once,
# before authenticating. Each close is one line about 192.0.2.25 (two,
# with 'connected', before the limit), of which the log takes at most
# RMP_GUARD_LOG_BURST (10) in a 10 s window; the rest are counted
# (rmpool_log_lines_suppressed_total).
before=$(counter rmpool_log_lines_suppressed_total)
t0=$(date +%s%3N)
burst_ok=0
for _ in $(seq 60); do
	RMP_RAW_SRC=192.0.2.25 RMPOOL_TENANT=a rmp_raw silent 0 >/dev/null 2>&1 &&
		burst_ok=$((burst_ok + 1))
done
[ "$burst_ok" -ge 50 ] ||
	rmp_fail "only $burst_ok of 60 burst connections from 192.0.2.25 were accepted"
burst_ms=$(($(date +%s%3N) - t0))
sleep 1
pyrun "$(dirname "$0")/prom.py" get "http://$mlisten/metrics" \
	>"$RMP_TMP/metrics.txt" || rmp_fail "GET http://$mlisten/metrics failed"
suppressed=$(($(counter rmpool_log_lines_suppressed_total) - before))
lines=$(grep -c "192\.0\.2\.25[]:, )]" "$RMP_DLOG")
# The burst spans this many 10 s windows at most (they need not start
# with it); each may have 10 lines and the one that counts the rest.
windows=$((burst_ms / 10000 + 2))
echo "60 silent connections from 192.0.2.25 in $burst_ms ms: $lines log" \
	"lines about it, $suppressed counted, not logged (at most" \
	"$((windows * 11)) lines in $windows windows)"
[ "$lines" -le $((windows * 11)) ] ||
	fail_later "$lines log lines about 192.0.2.25 for 60 connections that never authenticated, want at most $((windows * 11))"
[ "$suppressed" -gt 0 ] ||
	fail_later "no line about 192.0.2.25 was counted instead of logged"
daemon_stop

# ---- a full server: no refusal while a slot holds a connection without
# a key. auth_timeout 10 s: only newer connects close the silent ones.
rmp_conf server max_clients 8
rmp_conf server auth_timeout 10s
daemon_start
RMP_RAW_SRC=192.0.2.24 raw_bg_start held '^CONNECTED' idle 6
RMP_RAW_SRC=192.0.2.22 RMPOOL_TENANT=a raw_bg_start flood '^FLOODING' \
	silentflood 2 120
# metric NAME -- its value now.
metric() {
	pyrun "$(dirname "$0")/prom.py" get "http://$mlisten/metrics" \
		>"$RMP_TMP/metrics.txt" || rmp_fail "GET http://$mlisten/metrics failed"
	counter "$1"
}
for _ in $(seq 1 100); do
	[ "$(metric rmpool_clients_connected)" = 8 ] && break
	sleep 0.1
done
[ "$(metric rmpool_clients_connected)" = 8 ] ||
	rmp_fail "the server did not fill up: $(metric rmpool_clients_connected) of 8 clients"
evicted0=$(metric rmpool_unauthenticated_evicted_total)
served_full=0
for i in 1 2 3; do
	if out=$(as_a rmp_raw stat 2>&1); then
		served_full=$((served_full + 1))
	else
		echo "attempt $i on a full server: $out" | tail -2
	fi
done
evicted=$(($(metric rmpool_unauthenticated_evicted_total) - evicted0))
raw_bg_stop flood || fail_later "the flood of silent connections failed"
raw_bg_stop held || fail_later "a proven connection was closed to make room"
echo "full server (8 of 8, 2 without a key): tenant a's client served" \
	"$served_full of 3 times; $evicted unproven connection(s) closed for it"
[ "$served_full" -eq 3 ] ||
	fail_later "tenant a's client was served $served_full of 3 times on a server full of connections that include 2 without a key"
[ "$evicted" -ge 3 ] ||
	fail_later "only $evicted unproven connection(s) were closed for a's 3 connects"
daemon_stop
rmp_done

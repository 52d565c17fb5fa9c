#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-metrics.sh PORT -- the Prometheus endpoint, scraped by a real
# Prometheus server.
#
# The daemon serves metrics on 127.0.0.1:(PORT + 1000). A direct scrape
# passes `promtool check metrics` and has the right Content-Type; other
# paths get 404, other methods 405; a second daemon on the same metrics
# address refuses to start, naming the key and the address. Prometheus
# (scrape_interval 1s) sees rmpool_lease_grants_total rise by exactly N
# after N allocations, and the device's port counters. Pool figures
# match `rmpool stat` exactly, per-tenant and latency figures match what
# was done, idle or slow connections to the endpoint cannot block it for
# long nor touch the RDMA side, and one scrape is timed.
source "$(dirname "$0")/lib.sh"
rmp_init metrics "$1"
py_start
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	echo "prometheus and promtool are not installed (tests/setup.sh)" >&2
	exit 77
fi
PROM_PY=$(dirname "$0")/prom.py
N=5
MIB=1048576

mlisten=$(sed -n 's/^metrics_listen = //p' "$RMP_CONF")
if [ -z "$mlisten" ]; then
	mlisten=127.0.0.1:$((RMP_PORT + 1000))
	rmp_conf server metrics_listen "$mlisten"
fi
MURL=http://$mlisten/metrics

prom_py() {
	pyrun "$PROM_PY" "$@"
}

# peers_start idle|trickle N SECONDS -- N connections to the endpoint
# (prom.py, in the background: PEERS_PID), once they are open.
peers_start() {
	python3 "$PROM_PY" "$1" 127.0.0.1 "${mlisten##*:}" "$2" "$3" \
		>"$RMP_TMP/$1.out" &
	PEERS_PID=$!
	for _ in $(seq 1 100); do
		file_match "$RMP_TMP/$1.out" open && break
		sleep 0.1
	done
}

# Prometheus is ours to stop, whatever happens.
PROM_PID=
prom_stop() {
	[ -n "$PROM_PID" ] || return 0
	kill -TERM "$PROM_PID" 2>/dev/null
	for _ in $(seq 1 100); do
		pid_running "$PROM_PID" || break
		sleep 0.1
	done
	kill -KILL "$PROM_PID" 2>/dev/null
	wait "$PROM_PID" 2>/dev/null
	PROM_PID=
}
rmp_at_exit prom_stop

# scrape FILE -- GET /metrics into FILE.
scrape() {
	prom_py get "$MURL" >"$1" || rmp_fail "GET $MURL failed"
}

# mval FILE SERIES -- the value of the one sample whose name and labels
# start with SERIES (exactly one must).
mval() {
	local n
	n=$(awk -v s="$2" 'index($1, s) == 1' "$1" | wc -l)
	[ "$n" -eq 1 ] || rmp_fail "$n samples '$2...' in the scrape, want 1"
	awk -v s="$2" 'index($1, s) == 1 { print $2 }' "$1"
}

# expect_m FILE SERIES VALUE -- that sample has that value, exactly.
expect_m() {
	local got
	got=$(mval "$1" "$2") || exit 1
	[ "$got" = "$3" ] || fail_later "$2 is '$got', want $3"
	echo "metric $2 = $got"
}

daemon_start
daemon_log_has "metrics on $MURL " ||
	rmp_fail "no 'metrics on $MURL' in the daemon log"

# --- The endpoint itself.
scrape "$RMP_TMP/m0.txt"
echo "scrape: $(wc -l <"$RMP_TMP/m0.txt") lines, $(wc -c <"$RMP_TMP/m0.txt") bytes"
out=$(promtool check metrics <"$RMP_TMP/m0.txt" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ -z "$out" ] ||
	fail_later "promtool check metrics (exit $rc): $out"
read -r st ct < <(prom_py head "$MURL")
[ "$st" = 200 ] || fail_later "GET /metrics: $st"
[ "$ct" = "text/plain; version=0.0.4; charset=utf-8" ] ||
	fail_later "Content-Type '$ct'"
for u in / /metricsx /metrics/ /foo; do
	st=$(prom_py status GET "http://$mlisten$u")
	[ "$st" = 404 ] || fail_later "GET $u: $st, want 404"
done
for m in POST PUT DELETE; do
	st=$(prom_py status $m "$MURL")
	[ "$st" = 405 ] || fail_later "$m /metrics: $st, want 405"
done
[ "$(prom_py status HEAD "$MURL")" = 200 ] || fail_later "HEAD /metrics not 200"
expect_m "$RMP_TMP/m0.txt" 'rmpool_build_info{version="' 1
expect_m "$RMP_TMP/m0.txt" rmpool_lease_grants_total 0
expect_m "$RMP_TMP/m0.txt" rmpool_draining 0

# The device's counters: on Soft-RoCE hw_counters/sent_pkts, on
# hardware at least some counter of the port.
dev=${RMP_TEST_DEV:-}
ndev=$(grep -cE '^rmpool_device_port_(hw_)?stats_total\{device="'"${dev:-[^\"]+}"'",port="[0-9]+",counter="' "$RMP_TMP/m0.txt")
echo "device counters: $ndev (device '${dev:-any}')"
[ "$ndev" -gt 0 ] || fail_later "no device port counters in the scrape"
sent_series=
if [[ "$dev" == rxe* ]]; then
	sent_series="rmpool_device_port_hw_stats_total{device=\"$dev\",port=\"1\",counter=\"sent_pkts\"}"
	sent0=$(mval "$RMP_TMP/m0.txt" "$sent_series") || exit 1
fi

# --- A second daemon on the same metrics address does not start.
sed -e "s/^port = .*/port = $((RMP_PORT + 1))/" \
	-e "s|^admin_socket = .*|admin_socket = $RMP_TMP/admin2.sock|" \
	"$RMP_CONF" >"$RMP_TMP/second.conf"
timeout 120 "$RMPOOLD" -c "$RMP_TMP/second.conf" >"$RMP_TMP/second.log" 2>&1
rc=$?
echo "second daemon: exit $rc"
grep -E "metrics_listen|exiting" "$RMP_TMP/second.log"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
	fail_later "a second daemon on metrics $mlisten: exit $rc, want a failure"
grep -qF "[server] metrics_listen = $mlisten: cannot bind: Address already in use" \
	"$RMP_TMP/second.log" ||
	fail_later "the second daemon does not say which address is in use"
grep -qE "Sanitizer|runtime error:" "$RMP_TMP/second.log" &&
	fail_later "sanitizer report from the second daemon"

# --- Prometheus, scraping every second.
PROM_WEB=127.0.0.1:$(prom_py freeport)
PROM=http://$PROM_WEB
mkdir -p "$RMP_TMP/prom"
cat >"$RMP_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rmpool
    static_configs:
      - targets: ['$mlisten']
YML
promtool check config "$RMP_TMP/prometheus.yml" >/dev/null ||
	rmp_fail "promtool check config failed"
prometheus --config.file="$RMP_TMP/prometheus.yml" \
	--storage.tsdb.path="$RMP_TMP/prom" --web.listen-address="$PROM_WEB" \
	>"$RMP_TMP/prometheus.log" 2>&1 &
PROM_PID=$!
t0=$SECONDS
if ! prom_py ready "$PROM/-/ready" 300; then
	tail -n 20 "$RMP_TMP/prometheus.log" >&2
	rmp_fail "Prometheus at $PROM not ready within 300 s (slow start under TCG?)"
fi
echo "prometheus ready in $((SECONDS - t0)) s"

# promq EXPR -- the first value of an instant query, "" when empty.
promq() {
	local v rc
	v=$(prom_py query "$PROM" "$1")
	rc=$?
	[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || rmp_fail "query '$1' failed"
	echo "$v"
}

# prom_wait_after T SECS -- wait until Prometheus holds a sample of the
# daemon scraped after Unix time T.
prom_wait_after() {
	local ts
	for _ in $(seq 1 $(($2 * 4))); do
		ts=$(promq 'timestamp(rmpool_lease_grants_total{job="rmpool"})')
		if [ -n "$ts" ] && pyrun -c "import sys; sys.exit(not $ts > $1)"; then
			return 0
		fi
		sleep 0.25
	done
	rmp_fail "Prometheus has no scrape of the daemon after $1 within $2 s (last: '${ts:-none}')"
}

prom_wait_after "$(date +%s.%N)" 120
[ "$(promq 'up{job="rmpool"}')" = 1 ] || fail_later "up{job=\"rmpool\"} is not 1"
base=$(promq 'rmpool_lease_grants_total{job="rmpool"}')
echo "prometheus: rmpool_lease_grants_total = $base before"

# --- N allocations, then Prometheus sees exactly N more grants.
for i in $(seq 1 $N); do
	rmpool alloc 1M --ttl 600 >"$RMP_TMP/tok$i" || rmp_fail "alloc #$i failed"
done
t_done=$(date +%s.%N)
prom_wait_after "$t_done" 60
after=$(promq 'rmpool_lease_grants_total{job="rmpool"}')
echo "prometheus: rmpool_lease_grants_total = $after after $N allocations"
[ "$after" = $((base + N)) ] ||
	fail_later "Prometheus: grants $base -> $after, want +$N"
dcount=$(promq 'count({__name__=~"rmpool_device_port_(hw_)?stats_total",job="rmpool"})')
echo "prometheus: $dcount device counter series"
[ "${dcount:-0}" -gt 0 ] || fail_later "Prometheus has no device counters"
if [ -n "$sent_series" ]; then
	v=$(promq "$sent_series")
	echo "prometheus: $sent_series = $v"
	[ -n "$v" ] || fail_later "Prometheus has no $sent_series"
fi

# --- Exact figures against rmpool stat (no lease changes in between).
scrape "$RMP_TMP/m1.txt"
stat=$(rmpool stat --json) || rmp_fail "rmpool stat failed"
echo "stat: $stat"
read -r s_pool s_free s_largest s_leases s_quar s_zero < <(pyrun -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["pool_bytes"], d["free_bytes"], d["largest_free"], d["leases"],
      d["quarantined_bytes"], d["zeroing_bytes"])' "$stat")
[ "$s_free" -eq $((s_pool - N * MIB)) ] ||
	fail_later "stat: free $s_free, want $((s_pool - N * MIB))"
expect_m "$RMP_TMP/m1.txt" rmpool_pool_size_bytes "$s_pool"
expect_m "$RMP_TMP/m1.txt" rmpool_pool_free_bytes "$s_free"
expect_m "$RMP_TMP/m1.txt" rmpool_pool_largest_free_extent_bytes "$s_largest"
expect_m "$RMP_TMP/m1.txt" rmpool_pool_quarantined_bytes "$s_quar"
expect_m "$RMP_TMP/m1.txt" rmpool_zeroing_backlog_bytes "$s_zero"
expect_m "$RMP_TMP/m1.txt" 'rmpool_leases{state="granted",' "$s_leases"
expect_m "$RMP_TMP/m1.txt" 'rmpool_leases{state="granted",' $N
expect_m "$RMP_TMP/m1.txt" 'rmpool_lease_bytes{state="granted",' $((N * MIB))
expect_m "$RMP_TMP/m1.txt" rmpool_lease_grants_total $N
expect_m "$RMP_TMP/m1.txt" 'rmpool_tenant_leases{tenant="test"}' $N
expect_m "$RMP_TMP/m1.txt" 'rmpool_tenant_lease_bytes{tenant="test"}' $((N * MIB))
expect_m "$RMP_TMP/m1.txt" 'rmpool_request_duration_seconds_count{op="alloc"}' $N
expect_m "$RMP_TMP/m1.txt" 'rmpool_request_duration_seconds_bucket{op="alloc",le="+Inf"}' $N
if [ -n "$sent_series" ]; then
	sent1=$(mval "$RMP_TMP/m1.txt" "$sent_series") || exit 1
	echo "sent_pkts: $sent0 -> $sent1"
	[ "$sent1" -gt "$sent0" ] ||
		fail_later "sent_pkts did not rise over $N allocations ($sent0 -> $sent1)"
fi

# --- A connect refused (anonymous access is off), counted by reason; an
# unknown tenant is accepted and fails its proof, counted as such.
RMPOOL_TENANT= RMPOOL_KEY_FILE= rmpool stat >/dev/null 2>&1 &&
	fail_later "rmpool stat as an anonymous client succeeded"
RMPOOL_TENANT=nosuch rmpool stat >/dev/null 2>&1 &&
	fail_later "rmpool stat as an unknown tenant succeeded"
scrape "$RMP_TMP/m2.txt"
expect_m "$RMP_TMP/m2.txt" 'rmpool_connect_rejects_total{reason="anonymous_disabled"}' 1
expect_m "$RMP_TMP/m2.txt" rmpool_auth_failures_total 1
expect_m "$RMP_TMP/m2.txt" rmpool_auth_timeouts_total 0

# --- Frees are counted; the pool is whole again once zeroed.
for i in $(seq 1 $N); do
	rmpool free --token-file "$RMP_TMP/tok$i" || rmp_fail "free #$i failed"
done
scrape "$RMP_TMP/m3.txt"
expect_m "$RMP_TMP/m3.txt" rmpool_lease_frees_total $N
expect_m "$RMP_TMP/m3.txt" 'rmpool_leases{state="granted",' 0

# --- Idle connections: more than the endpoint takes at once. RDMA
# clients are served meanwhile, and a scrape gets through once the idle
# ones time out (10 s).
peers_start idle 24 25
t0=$(date +%s%N)
rmpool stat >/dev/null || fail_later "rmpool stat failed while the metrics endpoint was busy"
echo "rmpool stat with 24 idle metrics connections: $((($(date +%s%N) - t0) / 1000000)) ms"
t0=$SECONDS
scrape "$RMP_TMP/m4.txt"
echo "a scrape behind 24 idle connections took $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -le 22 ] || fail_later "the scrape waited $((SECONDS - t0)) s"
daemon_log_has "metrics: 16 connections open, accepting no more" ||
	fail_later "the endpoint never paused accepting at 16 connections"
# the idle peers hold on for 25 s: no need to wait that out
kill "$PEERS_PID" 2>/dev/null
wait "$PEERS_PID" 2>/dev/null

# --- Slow connections: every slot taken by a peer that sends a header
# byte every 5 s, each pause shorter than the 10 s timeout. The endpoint
# shuts down connections open for 30 s while all are taken, so a scrape
# gets through in about that time, not after the peer gives up (70 s).
peers_start trickle 16 70
t0=$SECONDS
prom_py get "$MURL" 65 >"$RMP_TMP/m5.txt" ||
	fail_later "no scrape while 16 slow connections held the endpoint"
echo "a scrape behind 16 slow connections took $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -le 50 ] || fail_later "the scrape waited $((SECONDS - t0)) s"
daemon_log_has "metrics: all 16 connections taken; shut down" ||
	fail_later "the endpoint did not shut down its oldest connections"
kill "$PEERS_PID" 2>/dev/null
wait "$PEERS_PID" 2>/dev/null

# --- The cost of one scrape (each on a new connection).
read -r mean max < <(prom_py time "$MURL" 50)
echo "scrape cost: mean $mean ms, max $max ms over 50 scrapes ($(wc -c <"$RMP_TMP/m3.txt") bytes)"

prom_stop
daemon_stop
rmp_done

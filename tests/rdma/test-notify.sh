#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-notify.sh PORT -- rmpoold under a service manager: readiness,
# watchdog, status line, live reload, stop (sd_notify over a test
# NOTIFY_SOCKET; notify-listen.py plays systemd).
#
# 1. READY=1 comes, and a client connecting the moment it comes gets in.
# 2. With WATCHDOG_USEC=1 s, WATCHDOG=1 comes every 0.5 s.
# 3. STATUS= changes when a lease is taken ("1 lease").
# 4. SIGHUP: RELOADING=1 then READY=1. A longer ttl_max applies at once
#    (an ALLOC refused before works after), a tenant added to the file
#    can connect (and tenant test's share of max_leases halves), then a
#    lowered quota of it refuses the next ALLOC above it (no restart), a
#    changed port is named as needing a restart and
#    kept; a file with a bad line changes nothing and the log names
#    FILE:LINE.
# 5. SIGTERM: STOPPING=1, exit 0.
source "$(dirname "$0")/lib.sh"

rmp_init notify "$1"
rmp_conf lease ttl_max 1h
sock=$RMP_TMP/notify.sock
nlog=$RMP_TMP/notify.log
python3 "$(dirname "$0")/notify-listen.py" "$sock" "$nlog" \
	"$RMPOOL" -s "$RMP_SERVER" stat &
listener=$!
rmp_at_exit 'kill $listener 2>/dev/null'
for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || rmp_fail "the notify listener did not start within 30 s"

# count MSG -- notify messages that contain MSG (a whole field).
count() { grep -cE "(^[0-9]+ |\|)$1(\||$)" "$nlog" || true; }
# wait_for MSG N SECS -- until at least N messages contain MSG.
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[ "$(count "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# last_status -- the latest STATUS= text.
last_status() { grep -o 'STATUS=[^|]*' "$nlog" | tail -1; }

echo "==== 1. READY=1 after a client can connect"
RMP_DAEMON_ENV=(NOTIFY_SOCKET="$sock" WATCHDOG_USEC=1000000)
daemon_start
wait_for READY=1 1 30 || rmp_fail "no READY=1 within 30 s"
for _ in $(seq 100); do grep -q "probe rc=" "$nlog" && break; sleep 0.1; done
grep "probe rc=" "$nlog"
grep -q "probe rc=0" "$nlog" ||
	rmp_fail "a client connecting when READY=1 came was refused"

echo "==== 2. the watchdog"
# The listener may read late in a loaded guest, so the shell's clock
# cannot bound the window. A marker datagram goes through the same FIFO
# queue as the daemon's pings and carries its send time (the guest's
# CLOCK_MONOTONIC): the pings logged between two markers are exactly
# those sent between them.
mark() {
	pyrun -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(("MARK=%s\nT=%d" % (sys.argv[1], time.monotonic() * 1000)).encode(), sys.argv[2])' \
		"$1" "$sock" || rmp_fail "cannot send marker $1"
	wait_for "MARK=$1" 1 30 || rmp_fail "marker $1 not read within 30 s"
}
# pings_between A B -- WATCHDOG=1 lines between markers A and B, and the
# milliseconds between the markers' sends.
pings_between() {
	awk -v a="MARK=$1" -v b="MARK=$2" '
		index($0, a "|") { on = 1; split($0, f, "T="); ta = f[2]; next }
		index($0, b "|") { split($0, f, "T="); print n + 0, f[2] - ta; exit }
		on && /(^[0-9]+ |\|)WATCHDOG=1(\||$)/ { n++ }' "$nlog"
}
py_start
mark w0
sleep 3
mark w1
read -r pings ms < <(pings_between w0 w1)
want=$((ms / 500))
echo "WATCHDOG=1: $pings in $ms ms (want $want at a 0.5 s period)"
# A late timer sends fewer (libevent does not catch up on a late
# persistent timer), never more than one per period.
[ "${pings:-0}" -ge $((want / 2)) ] && [ "${pings:-0}" -le $((want + 1)) ] ||
	fail_later "WATCHDOG=1 came ${pings:-0} times in $ms ms, want $((want / 2))..$((want + 1))"
daemon_log_has "systemd watchdog: 1000 ms, pinged every 500 ms" ||
	fail_later "the daemon did not log its watchdog period"

echo "==== 3. STATUS= follows the leases"
echo "before: $(last_status)"
last_status | grep -q "0 clients, 0 leases" ||
	fail_later "STATUS= was not '0 clients, 0 leases, ...' at start"
tok=$(rmpool alloc 64K --ttl 600) || rmp_fail "alloc failed"
for _ in $(seq 30); do last_status | grep -q " 1 lease," && break; sleep 0.1; done
echo "after: $(last_status)"
last_status | grep -q " 1 lease," ||
	fail_later "STATUS= did not change to 1 lease within 3 s"

echo "==== 4. reload"
# ttl 2 h is above ttl_max = 1h: refused until a reload raises it.
rmpool alloc 4K --ttl 7200 >/dev/null 2>&1 &&
	rmp_fail "an ALLOC above ttl_max was granted before the reload"
key2=$RMP_TMP/second.key
rmp_keygen "$key2"
RMPOOL_TENANT=second RMPOOL_KEY_FILE=$key2 rmpool stat >/dev/null 2>&1 &&
	rmp_fail "tenant second connected before it was configured"
rmp_conf lease ttl_max 3h
sed -i "s/^port = .*/port = $((RMP_PORT + 1))/" "$RMP_CONF"
printf '[tenant.second]\nkey_file = %s\nbytes = 1M\n' "$key2" >>"$RMP_CONF"
r0=$(count RELOADING=1)
k0=$(count READY=1)
kill -HUP "$RMP_DPID"
wait_for READY=1 $((k0 + 1)) 10 || rmp_fail "no READY=1 after SIGHUP"
[ "$(count RELOADING=1)" -eq $((r0 + 1)) ] ||
	fail_later "no RELOADING=1 on SIGHUP"
awk '/RELOADING=1/ { r = NR } /READY=1/ { y = NR } END { exit !(r && y > r) }' \
	"$nlog" || fail_later "READY=1 did not follow RELOADING=1"
grep -E "RELOADING|READY" "$nlog" | tail -2
for p in "reload: lease.ttl_max: 1h -> 3h" \
	"reload: server.port changed: it needs a restart" \
	"reload: added tenant second" \
	"reload: tenant test: key loaded; bytes unlimited, leases 32768 \(a share of max_leases\)" \
	"reload done: 1 change\(s\) applied, 2 tenant\(s\) changed, 1 change\(s\) need a restart"; do
	daemon_log_has "$p" || fail_later "the log lacks: $p"
done
grep -E "reload" "$RMP_DLOG" | sed 's/^/  log: /'
tok2=$(rmpool alloc 4K --ttl 7200) ||
	fail_later "ALLOC with ttl 2 h refused after ttl_max became 3h"
RMPOOL_TENANT=second RMPOOL_KEY_FILE=$key2 rmpool stat >/dev/null ||
	fail_later "tenant second could not connect after the reload"

echo "---- a lowered quota applies to the next ALLOC"
second() { RMPOOL_TENANT=second RMPOOL_KEY_FILE=$key2 rmpool "$@"; }
t=$(second alloc 64K --ttl 60) ||
	fail_later "tenant second: 64K refused under bytes = 1M"
[ -n "$t" ] && second free "$t" >/dev/null
sed -i 's/^bytes = 1M$/bytes = 32K/' "$RMP_CONF"
k0=$(count READY=1)
kill -HUP "$RMP_DPID"
wait_for READY=1 $((k0 + 1)) 10 || rmp_fail "no READY=1 after the quota reload"
daemon_log_has "reload: tenant second: bytes: 1M -> 32K" ||
	fail_later "the log does not name the lowered quota"
grep "tenant second" "$RMP_DLOG" | tail -n 2 | sed 's/^/  log: /'
if err=$(second alloc 64K --ttl 60 2>&1); then
	fail_later "tenant second: 64K granted after bytes became 32K"
	second free "$err" >/dev/null
else
	echo "64K after the reload: $err"
	grep -q "tenant limit exceeded" <<<"$err" ||
		fail_later "64K after the reload failed, but not for the quota: $err"
fi
t=$(second alloc 16K --ttl 60) ||
	fail_later "tenant second: 16K refused under bytes = 32K"
[ -n "$t" ] && second free "$t" >/dev/null

echo "---- a bad file changes nothing"
rmp_conf lease ttl_max 2h
echo "this is not a key" >>"$RMP_CONF"
bad_line=$(wc -l <"$RMP_CONF")
k0=$(count READY=1)
kill -HUP "$RMP_DPID"
wait_for READY=1 $((k0 + 1)) 10 || rmp_fail "no READY=1 after a failed reload"
daemon_log_has "reload failed, nothing changed: $RMP_CONF:$bad_line:" ||
	fail_later "the failed reload did not name $RMP_CONF:$bad_line"
grep "reload failed" "$RMP_DLOG" | sed 's/^/  log: /'
tok3=$(rmpool alloc 4K --ttl 10000) ||
	fail_later "ttl_max changed although the reload failed"

echo "==== 5. SIGTERM"
rmpool free "$tok" >/dev/null
rmpool free "$tok2" >/dev/null
rmpool free "$tok3" >/dev/null
daemon_stop
wait_for STOPPING=1 1 5 || fail_later "no STOPPING=1 on SIGTERM"
rmp_done

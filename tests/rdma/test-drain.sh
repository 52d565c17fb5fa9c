#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-drain.sh PORT -- SIGTERM drains (drain_timeout = 5s).
#
# 1. A holder and a drain probe are connected when the daemon gets
#    SIGTERM. It must keep running and refuse new connections (reason
#    "draining"); the probe's ALLOC gets -ESHUTDOWN while its READ, WRITE
#    and FREE still work; the holder reads its bytes back and frees its
#    lease. Once both are gone the daemon exits 0, within drain_timeout +
#    5 s of the SIGTERM.
# 2. A holder that never leaves: the daemon serves it until drain_timeout
#    has passed (it must not exit much sooner), then exits 0 within 5 s.
source "$(dirname "$0")/lib.sh"

rmp_init drain "$1"
drain=5
rmp_conf server drain_timeout "${drain}s"

# since_ms T0 -- milliseconds since T0 (date +%s%N).
since_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

echo "==== 1. clients that finish while the daemon drains"
daemon_start
hold_start
raw_bg_start probe '^READY' drainprobe
kill -TERM "$RMP_DPID"
t0=$(date +%s%N)
sleep 0.5
pid_running "$RMP_DPID" ||
	rmp_fail "the daemon exited at once on SIGTERM with clients connected"
rmp_raw connect draining ||
	fail_later "a new connection while draining was not refused with reason draining"
raw_bg_send probe
raw_bg_stop probe || fail_later "the drain probe failed (see above)"
hold_stop || fail_later "the holder failed to read back and free its lease while draining"
echo "clients done $(since_ms "$t0") ms after SIGTERM"
daemon_wait_exit $((drain + 5)) ||
	rmp_fail "rmpoold still runs $((drain + 5)) s after SIGTERM"
echo "rmpoold exited with status $RMP_DRC $(since_ms "$t0") ms after SIGTERM"
[ "$RMP_DRC" -eq 0 ] || fail_later "rmpoold exited with status $RMP_DRC"
daemon_check_log

echo "==== 2. a client that does not leave"
daemon_start
hold_start --stat-every 200
kill -TERM "$RMP_DPID"
t0=$(date +%s%N)
daemon_wait_exit $((drain + 5)) ||
	rmp_fail "rmpoold still runs $((drain + 5)) s after SIGTERM"
took=$(since_ms "$t0")
echo "rmpoold exited with status $RMP_DRC $took ms after SIGTERM"
[ "$RMP_DRC" -eq 0 ] || fail_later "rmpoold exited with status $RMP_DRC"
[ "$took" -ge $(((drain - 1) * 1000)) ] ||
	fail_later "rmpoold left a connected client after $took ms; drain_timeout is $drain s"
daemon_check_log
# The holder lost its server, as it should: its status does not count.
raw_bg_stop hold || true
rmp_done

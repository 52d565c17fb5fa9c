#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-revoke-parked.sh PORT -- a connection that dies while some of its
# keys' invalidations wait for room is not freed under them.
#
# rmp-raw fill --stall takes 100 leases (ttl 1 s) on one connection,
# then stalls it: its receive buffers are used up and the server's
# replies meet RNR. The leases expire together; their LOCAL_INVs queue
# behind the stuck replies, 64 posted (a connection's bound), the rest
# parked until completions make room. None comes: the server's own RNR
# retries fail the QP (~2.6 s after the stall), and the connection
# closes with invalidations still parked. Those keys must settle with
# it: the window dies with the QP. Their bytes are free once the
# connection is gone, long before revoke_timeout (6 s), and nothing of
# the connection is touched after it was freed (the sanitizer pass
# aborts on a use after free; revoke_timeout would fire one at the
# freed holder). A connection that arrives right after the stalled one
# went must stay up past that timeout.
source "$(dirname "$0")/lib.sh"

rmp_init revoke-parked "$1"
rmp_conf lease lease_keys window
rmp_conf server revoke_timeout 6s
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
nleases=100 ttl=1 revoke_timeout=6

daemon_start
rmp_stat || rmp_fail "STAT failed"
free0=$STAT_FREE quar0=$STAT_QUAR

raw_bg_start fill '^FILLED ' fill "$nleases" 4096 "$ttl" --stall
t0=$(date +%s)
raw_bg_wait fill '^STALLED'
echo "stalled client: $nleases leases, every receive buffer used up"

# Its QP fails by RNR retries (or the revoke timeout would, at ttl + 6 s:
# too late for the check below, which is what fails on a parked key).
for _ in $(seq 1 150); do
	daemon_log_has "rmp-raw-fill.* disconnected" && break
	sleep 0.1
done
daemon_log_has "rmp-raw-fill.* disconnected" ||
	rmp_fail "the stalled connection was not closed within 15 s"
gone=$(date +%s)
echo "stalled connection closed $((gone - t0)) s after the stall"
daemon_log_has "rmp-raw-fill.*key invalidation.* waiting for room settled" ||
	fail_later "no invalidation was parked when the connection closed: the test did not set up its case"
[ $((gone - t0)) -lt $((ttl + revoke_timeout)) ] ||
	fail_later "the connection closed only at the revoke timeout"

# A new connection now: it may take the freed connection's memory.
late=0
if RAW_BG_SOFT=1 raw_bg_start hold '^LEASE ' hold --stat-every 200; then
	late=1
	read -r _ _ _ HOLD_LEN _ <<<"$RAW_BG_LINE"
else
	fail_later "a new connection after the stalled one closed was not served: $(cat "$RMP_TMP/hold.err")"
	HOLD_LEN=0
fi

# Parked keys settle with their connection: the bytes are free within a
# second of its end (a tick and the zeroing grace), not at the timeout.
sleep 1
rmp_stat || rmp_fail "STAT failed"
# (The new connection holds a lease of HOLD_LEN bytes.)
[ "$STAT_FREE" -eq $((free0 - HOLD_LEN)) ] && [ "$STAT_QUAR" -eq "$quar0" ] ||
	fail_later "1 s after the stalled connection closed: free $STAT_FREE (want $((free0 - HOLD_LEN))), quarantined $STAT_QUAR (was $quar0): keys of the closed connection are still being revoked"

# Past the revoke timeout of every key: nothing fires at the old holder.
sleep $((ttl + revoke_timeout + 2 - ($(date +%s) - t0)))
if ! pid_running "$RMP_DPID"; then
	grep -A12 -E "Sanitizer|runtime error" "$RMP_DLOG" >&2
	rmp_fail "rmpoold died"
fi
daemon_log_has "took more than .* failing its connection" &&
	fail_later "a revoke timeout fired at a connection: $(grep -m1 'took more than' "$RMP_DLOG")"
[ "$late" -eq 0 ] || hold_stop ||
	fail_later "the connection made after the stalled one was not served throughout"
raw_bg_stop fill || fail_later "rmp-raw fill --stall failed"

daemon_stop
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-stalled-client.sh PORT -- a client that stops posting receive
# buffers cannot keep its lease past the deadline, nor stall the daemon.
#
# rmp-raw stall allocates a lease (ttl 1 s), then uses up every receive
# buffer it has and sends more requests: the server's replies meet RNR,
# and the client asked for infinite RNR retries. A window's revocation
# goes through that client's send queue, behind the stuck replies. By
# ttl + revoke_timeout + 1 s (+ a tick and slack) the lease's bytes must
# be free again, or quarantined: never still allocated. A second client
# (hold --stat-every 200) is served throughout, and the daemon stops
# cleanly.
#
# The server's own RNR retry count (3) fails the stalled QP by itself
# after 4 x the client's RNR timer (rdma_cm leaves it at 655 ms): ~2.6 s
# after the stall. The lease expires at 1 s and its revocation waits
# behind the stuck replies, so with revoke_timeout = 200ms the revoke
# timeout must be what fails the connection: the log must say so.
source "$(dirname "$0")/lib.sh"

rmp_init stalled-client "$1"
rmp_conf lease lease_keys window
rmp_conf server revoke_timeout 200ms
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
ttl=1
revoke_timeout=1 # 200 ms, rounded up to whole seconds for the wait

daemon_start
hold_start --stat-every 200
rmp_stat || rmp_fail "STAT failed"
free0=$STAT_FREE quar0=$STAT_QUAR

raw_bg_start stall '^LEASE ' stall "$ttl"
t0=$(date +%s%N)
read -r _ _ _ stall_len stall_id <<<"$RAW_BG_LINE"
echo "stalled client: lease $stall_id, $stall_len bytes, ttl $ttl s"
raw_bg_wait stall '^STALLED'
echo "stalled client: every receive buffer used up, replies meet RNR"

# ttl + revoke_timeout + 1 s, + 1 s for the expiry tick and slack.
wait_s=$((ttl + revoke_timeout + 1 + 1))
now=$(date +%s%N)
left_ms=$(((t0 + wait_s * 1000000000 - now) / 1000000))
[ "$left_ms" -gt 0 ] && sleep "$((left_ms / 1000)).$(printf %03d $((left_ms % 1000)))"
echo "$wait_s s after the ALLOC:"
rmp_stat || rmp_fail "STAT failed"
if [ "$STAT_FREE" -eq "$free0" ] && [ "$STAT_QUAR" -eq "$quar0" ]; then
	echo "the stalled lease's bytes are free again"
elif [ $((STAT_QUAR - quar0)) -ge "$stall_len" ] &&
	[ $((STAT_FREE + STAT_QUAR)) -eq $((free0 + quar0)) ]; then
	echo "the stalled lease's bytes are quarantined"
else
	fail_later "$wait_s s after the ALLOC (ttl $ttl s, revoke_timeout ${revoke_timeout}s) the stalled lease is still allocated: free $STAT_FREE (was $free0 before it), quarantined $STAT_QUAR (was $quar0)"
fi
[ "$STAT_LEASES" -eq 1 ] ||
	fail_later "$STAT_LEASES live leases; only the holder's should be left"
daemon_log_has "rmp-raw-stall.*revoking a key of lease .* took more than 200 ms: failing its connection" ||
	fail_later "the revoke timeout did not fail the stalled connection"

hold_stop || fail_later "the second client was not served throughout"
raw_bg_stop stall || fail_later "rmp-raw stall failed to set up"
echo "---- daemon log: the stalled client"
grep -E "rmp-raw-stall|revoke|quarantin" "$RMP_DLOG" | head -n 20
echo "----"

daemon_stop
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-free-race.sh PORT MODE -- after a FREE, a lease's own rkey reads
# only the lease's own bytes until the NIC refuses it (lease_keys = MODE:
# window or region).
#
# With windows the daemon answers a FREE before the invalidation executes
# (both go in one post); in region mode it deregisters the lease's MR.
# Either way it zeroes and reuses the extent only after the key is proven
# dead and a grace has passed. So the holder may still read its old bytes
# for a moment, but never zeroes and never the next holder's bytes.
#
# Two rmp-raw freerace processes at once, each round: ALLOC 4 KiB, WRITE
# a pattern tagged with the lease id, FREE, and READ with the old rkey
# back to back until a READ fails; the other process takes the extent
# over meanwhile. A READ fails with a remote access error, or,
# when the invalidation came in the middle of its response, is cut off
# (Soft-RoCE stops answering it and drops its retries): either way it
# must have delivered no byte but the lease's own. Access errors
# are the point here, so they do not cool the address down.
source "$(dirname "$0")/lib.sh"

mode=${2:-}
case $mode in
window | region) ;;
*) echo "usage: $0 PORT window|region" >&2; exit 2 ;;
esac
rounds=${RMP_FREE_RACE_ROUNDS:-100}
rmp_init "free-race-$mode" "$1"
rmp_conf lease lease_keys "$mode"
rmp_conf server access_errors_per_minute 0

daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"
rmp_stat || rmp_fail "STAT failed"
free0=$STAT_FREE

rmp_raw freerace "$rounds" >"$RMP_TMP/a.out" 2>"$RMP_TMP/a.err" &
a=$!
rmp_raw freerace "$rounds" >"$RMP_TMP/b.out" 2>"$RMP_TMP/b.err" &
b=$!
rc_a=0 rc_b=0
wait $a || rc_a=$?
wait $b || rc_b=$?
sed 's/^/[racer a] /' "$RMP_TMP/a.err"
sed 's/^/[racer b] /' "$RMP_TMP/b.err"
[ "$rc_a" -eq 0 ] || fail_later "racer a failed (exit $rc_a)"
[ "$rc_b" -eq 0 ] || fail_later "racer b failed (exit $rc_b)"
grep -q "^freerace: PASS" "$RMP_TMP/a.err" &&
	grep -q "^freerace: PASS" "$RMP_TMP/b.err" ||
	fail_later "a racer did not report PASS"

# Both racers' extents came back: every invalidation completed.
rmp_stat || rmp_fail "STAT after the races"
[ "$STAT_FREE" -eq "$free0" ] ||
	fail_later "free bytes $STAT_FREE after the races, $free0 before"
[ "$STAT_LEASES" -eq 0 ] || fail_later "$STAT_LEASES leases left, want 0"
[ "$STAT_QUAR" -eq 0 ] || fail_later "$STAT_QUAR extents in quarantine"

daemon_stop
rmp_done

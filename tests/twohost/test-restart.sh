#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-restart.sh PORT -- hot restart with [pool] state_dir. A client host
# writes 64 MiB across 100 leases (and one more with a short ttl); the
# daemon is killed with SIGKILL and started again: every lease attaches
# by token and reads back identical, the short one (its deadline passed
# during the outage) is gone, and the free bytes add up. Then the same
# after SIGTERM and a start (a planned restart). Prints the recovery time.
source "$(dirname "$0")/lib.sh"

th_init restart "$1"
N=100 LEN=671040 TTL=600 SHORT=6 SEED=40
export RMP_PAIR_HUGEPAGES=64
sed -i "s|^size = 16M$|size = 80M\nstate_dir = /dev/hugepages/rmp-restart-$TH_PORT\nmax_leases = 1024|" "$TH_CONF"
sed -i "s|^\[server\]$|[server]\ndrain_timeout = 2s|" "$TH_CONF"
pair_boot || th_fail "the two-host bed did not come up"
th_daemon_start rmpoold-1
on server "grep -q 'state file .*: new' $TH_LOG" || th_fail "no new state file"

rmp_test() { th_client "$(printf %q "$RMP_TESTBIN") $*"; }
free_bytes() {
	th_client "$(printf %q "$RMPOOL") -s $TH_SERVER stat --json" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["free_bytes"])'
}

fill_start=$SECONDS
rmp_test fill $PAIR_SERVER_ADDR $TH_PORT $((N + 1)) $LEN $TTL $SHORT $SEED \
	>"$TH_DIR/tokens" || th_fail "fill failed: $(tail -3 "$TH_DIR/tokens")"
grep -q '^DONE' "$TH_DIR/tokens" || th_fail "fill did not finish"
fill_end=$SECONDS # the short lease was granted last, by now
echo "filled $((N + 1)) leases of $LEN bytes in $((fill_end - fill_start)) s"
free_before=$(free_bytes) || th_fail "rmpool stat failed"

# restart HOW NAME [UNTIL] -- stop the daemon (kill -HOW), wait until
# second UNTIL of the test if given, start it as NAME.
restart() {
	on server "kill -$1 $TH_DPID; while kill -0 $TH_DPID 2>/dev/null; do sleep 0.1; done"
	[ -n "${3:-}" ] && [ "$3" -gt "$SECONDS" ] && sleep $(($3 - SECONDS))
	local t0=$SECONDS
	th_daemon_start "$2"
	echo "rmpoold ($1 before) serving again $((SECONDS - t0)) s after its start was asked for"
	on server "grep -E 'recovered|state file|pool:' $TH_LOG"
}

# The short lease's deadline passes while the daemon is down.
restart KILL rmpoold-2 $((fill_end + SHORT + 2))
on server "grep -q 'recovered $N lease(s), $((N * LEN)) bytes, from the journal; not recovered: 1 expired, 0 damaged' $TH_LOG" ||
	th_check_later "the log does not say $N leases were recovered and 1 expired"
out=$(rmp_test verify $PAIR_SERVER_ADDR $TH_PORT "$TH_DIR/tokens" $LEN $SEED $N) ||
	th_fail "after SIGKILL: $out"
echo "$out" | tail -2
grep -q "^VERIFIED $N leases intact, 0 gone" <<<"$out" || th_check_later "after SIGKILL: not all $N intact"
# The short lease ends at its deadline (at recovery or by expiry): its
# bytes are free again, every other byte is where it was.
free_after=$(free_bytes) || th_fail "rmpool stat failed"
[ "$free_after" -eq $((free_before + LEN)) ] ||
	th_check_later "free bytes $free_after after, $free_before before (+$LEN expected)"
echo "free bytes: $free_before before, $free_after after the restart"

restart TERM rmpoold-3
on server "grep -q 'recovered $N lease(s), $((N * LEN)) bytes' $TH_LOG" ||
	th_check_later "after SIGTERM the log does not say $N leases were recovered"
out=$(rmp_test verify $PAIR_SERVER_ADDR $TH_PORT "$TH_DIR/tokens" $LEN $SEED $N) ||
	th_fail "after SIGTERM: $out"
grep -q "^VERIFIED $N leases intact, 0 gone" <<<"$out" || th_check_later "after SIGTERM: not all $N intact"
# What an operator sees.
st=$(on server "$(printf %q "$RMP_BUILD_ROOT/daemon/rmpoolctl") -s $TH_ADMIN status")
grep "^restart" <<<"$st"
grep -Eq "^restart +keeps leases: journal $N records used, [0-9]+ free, $N lease\(s\) recovered at start" <<<"$st" ||
	th_check_later "rmpoolctl status does not show the journal: $st"
echo "$out" | tail -1
th_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-revoke-no-cooldown.sh PORT -- access errors on keys the server
# revoked for someone else are no attack: eleven holders on one host,
# whose key to a shared lease another client takes over again and
# again, are neither cooled down nor robbed of their other leases.
#
# Eleven clients (rmp-test holders: threads of one process, each its own
# reconnecting connection, all from one address) each hold a
# lease and an ephemeral lease of their own and a key to one shared
# lease, writing it every 20 ms. Three times another client (rmp-raw
# byid --exclusive, a new connection each time) attaches the shared
# lease exclusively; after each the test waits until every holder's
# write failed with -EKEYREVOKED and a write after it worked (the
# library reconnected and attached its handles again). Each takeover
# costs the address eleven remote access errors, more than
# access_errors_per_minute (10), and from the second round on the
# holders are on new connections (three rounds, not more: each is eleven
# reconnects, 2 to 4 s in the VM). The old daemon cooled the address down
# at the first (reject reason 7: the holders' reconnects and any new
# client refused) and ended the holders' ephemeral leases with their
# connections. Checked: every round completes, a new client connects,
# no cool-down was started or refused anyone, the errors were counted as
# revoked-key errors and none as attacks, no ephemeral lease ended, and
# at the end each holder reads both its own leases back whole.
source "$(dirname "$0")/lib.sh"

rmp_init revoke-no-cooldown "$1"
rmp_conf lease lease_keys window
rmp_conf server access_errors_per_minute 10
rmp_conf server access_cooldown 60s
nholders=11 rounds=3

T0=$(date +%s%N)
# at -- ms since the daemon started, for the log.
at() { echo "[$((($(date +%s%N) - T0) / 1000000)) ms] $*"; }
daemon_start
at "daemon listening"

token=$(rmp_raw alloc 4096 600 --token | sed -n 's/^TOKEN //p')
[ -n "$token" ] || rmp_fail "no shared lease"

# The holders: eleven clients in one rmp-test process (a process start
# costs a lot in the VM), stdin a fifo (a line ends them).
mkfifo "$RMP_TMP/holders.in"
(
	raw_bg_close_all
	exec "$RMP_TESTBIN" holders "$RMP_TEST_ADDR" "$RMP_PORT" "$token" \
		"$nholders"
) <"$RMP_TMP/holders.in" >"$RMP_TMP/holders.out" 2>"$RMP_TMP/holders.err" &
HPID=$!
exec {HFD}>"$RMP_TMP/holders.in"

# holders_have WORD N SECONDS -- wait until every holder printed N lines
# "Hi WORD ..."; 1 (and the laggards named) when they did not in time, or
# one failed, or the holders exited. (One grep a look: processes are
# slow to start in the VM.)
holders_have() {
	local word=$1 n=$2 end=$((SECONDS + $3)) i late counts
	while :; do
		counts=$(grep -oE "^H[0-9]+ ($word|DONE .*FAIL)" \
			"$RMP_TMP/holders.out" |
			sort | uniq -c)
		late=
		for i in $(seq 1 $nholders); do
			[[ $counts =~ ([0-9]+)\ H$i\ $word ]] &&
				[ "${BASH_REMATCH[1]}" -ge "$n" ] && continue
			late+=" $i"
		done
		[ -z "$late" ] && return 0
		pid_running "$HPID" || { late+=" (exited)"; break; }
		[[ $counts == *FAIL* ]] && { late+=" (one failed)"; break; }
		[ "$SECONDS" -ge "$end" ] && break
		sleep 0.05
	done
	echo "holders without $n x '$word':$late" >&2
	return 1
}

holders_have READY 1 60 || rmp_fail "the holders did not start"
at "$nholders holders ready"
t0=$(date +%s%N)
done_rounds=0 times=
for r in $(seq 1 $rounds); do
	t1=$(date +%s%N)
	rmp_raw byid attach "$token" --exclusive >/dev/null 2>"$RMP_TMP/taker.err" ||
		{ fail_later "takeover $r failed: $(cat "$RMP_TMP/taker.err")"; break; }
	holders_have REATTACHED "$r" 20 ||
		{ fail_later "round $r: not every holder got its key revoked and attached again"; break; }
	done_rounds=$r
	times+=" $((($(date +%s%N) - t1) / 1000000))"
done
ms=$((($(date +%s%N) - t0) / 1000000))
echo "$done_rounds of $rounds takeovers in $ms ms (per round:$times ms)," \
	"each holder revoked and attached again after each"

at "takeovers done"
# A new client from the same address is served.
rmp_raw connect ok >/dev/null 2>&1 ||
	fail_later "a new client from $RMP_TEST_ADDR was refused after the takeovers"
daemon_log_has "refusing connections from" &&
	fail_later "a cool-down started: $(grep -m1 'refusing connections from' "$RMP_DLOG")"
# The metrics, by bash alone (a Python start costs seconds in the VM).
exec {m}<>"/dev/tcp/127.0.0.1/$((RMP_PORT + 1000))" ||
	rmp_fail "no metrics endpoint"
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&"$m"
tr -d '\r' <&"$m" >"$RMP_TMP/metrics.txt"
exec {m}<&-
metric() { awk -v s="$1" '$1 == s { print $2 }' "$RMP_TMP/metrics.txt"; }
cool=$(metric 'rmpool_connect_rejects_total{reason="cooldown"}')
revoked=$(metric rmpool_revoked_key_errors_total)
attacks=$(metric rmpool_access_errors_total)
echo "metrics: cool-down rejects ${cool:-none}, revoked-key errors ${revoked:-none}, access errors (attacks) ${attacks:-none}"
at "checks done"
[ "${cool:-x}" = 0 ] || fail_later "connections were refused for a cool-down: ${cool:-no figure}"
[ "${revoked:-0}" -ge $((done_rounds * nholders)) ] ||
	fail_later "$((done_rounds * nholders)) revocations, ${revoked:-no} revoked-key errors counted"
[ "${attacks:-x}" = 0 ] || fail_later "${attacks:-no figure} access errors counted as attacks"
daemon_log_has "why=ephemeral" &&
	fail_later "an ephemeral lease ended: $(grep -m1 'why=ephemeral' "$RMP_DLOG")"

# The holders stop: each reads its own leases back whole.
(echo stop >&"$HFD") 2>/dev/null # (SIGPIPE when they are gone)
exec {HFD}>&-
rc=0
wait "$HPID" || rc=$?
at "holders: $(grep -cE '^H[0-9]+ DONE revoked=[1-9][0-9]* reattached=' "$RMP_TMP/holders.out") of $nholders done, exit $rc"
grep -E '^H[0-9]+ DONE' "$RMP_TMP/holders.out" | grep FAIL >&2
[ "$rc" -eq 0 ] ||
	fail_later "holders: exit $rc: $(grep -E 'FAIL' "$RMP_TMP/holders.out" "$RMP_TMP/holders.err" | head -3)"

daemon_stop
at "daemon stopped"
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-revoke-no-cooldown.sh PORT -- access errors on keys the server
# revoked for someone else are no attack: eleven holders on one host,
# whose key to a shared lease another client takes over 15 times, are
# neither cooled down nor robbed of their other leases.
#
# Eleven rmp-test holder clients (reconnecting, one address) each hold a
# lease and an ephemeral lease of their own and a key to one shared
# lease, writing it every 2 ms. Fifteen times another client (rmp-raw
# byid --exclusive, a new connection each time) attaches the shared lease
# exclusively; after each the test waits until every holder's write failed
# with -EKEYREVOKED and a write after it worked (the library reconnected
# and attached its handles again). Each takeover costs the address eleven
# remote access errors; with access_errors_per_minute 10 the old daemon
# cooled the address down at the first (reject reason 7: the holders'
# reconnects and any new client refused) and ended the holders' ephemeral
# leases with their connections. Checked: every round completes, a new
# client connects, no cool-down was started or refused anyone, the
# errors were counted as revoked-key errors, and at the end each holder
# reads both its own leases back whole.
source "$(dirname "$0")/lib.sh"

rmp_init revoke-no-cooldown "$1"
rmp_conf lease lease_keys window
rmp_conf server access_errors_per_minute 10
rmp_conf server access_cooldown 60s
nholders=11 rounds=15

daemon_start

token=$(rmp_raw alloc 4096 120 --token | sed -n 's/^TOKEN //p')
[ -n "$token" ] || rmp_fail "no shared lease"

# The holders: stdin a fifo each (a line ends them), stdout a file.
declare -a HPID HFD
for i in $(seq 1 $nholders); do
	mkfifo "$RMP_TMP/h$i.in"
	(
		raw_bg_close_all
		for fd in "${HFD[@]}"; do exec {fd}>&-; done
		exec "$RMP_TESTBIN" holder "$RMP_TEST_ADDR" "$RMP_PORT" \
			"$token" "$((i * 10))"
	) <"$RMP_TMP/h$i.in" >"$RMP_TMP/h$i.out" 2>"$RMP_TMP/h$i.err" &
	HPID[$i]=$!
	exec {fd}>"$RMP_TMP/h$i.in"
	HFD[$i]=$fd
done

# holders_have REGEX N SECONDS -- wait until every holder printed N lines
# matching REGEX; 1 (and the laggards named) when they did not in time,
# or one that did not exited. (One grep a look: processes are slow to
# start in the VM.)
holders_have() {
	local re=$1 n=$2 secs=$3 i late counts end=$((SECONDS + $3))
	while :; do
		counts=$(grep -cE "$re" "$RMP_TMP"/h*.out)
		late=
		for i in $(seq 1 $nholders); do
			[[ $counts =~ (^|$'\n')$RMP_TMP/h$i.out:([0-9]+) ]] &&
				[ "${BASH_REMATCH[2]}" -ge "$n" ] && continue
			late+=" $i"
			pid_running "${HPID[$i]}" || late+="(exited)"
		done
		[ -z "$late" ] && return 0
		[[ $late == *exited* || $SECONDS -ge $end ]] && break
		sleep 0.05
	done
	echo "holders without $n x '$re':$late" >&2
	return 1
}

holders_have '^READY' 1 60 || rmp_fail "the holders did not start"
t0=$(date +%s%N)
done_rounds=0
for r in $(seq 1 $rounds); do
	rmp_raw byid attach "$token" --exclusive >/dev/null 2>"$RMP_TMP/taker.err" ||
		{ fail_later "takeover $r failed: $(cat "$RMP_TMP/taker.err")"; break; }
	holders_have '^REATTACHED ' "$r" 20 ||
		{ fail_later "round $r: not every holder got its key revoked and attached again"; break; }
	done_rounds=$r
done
ms=$((($(date +%s%N) - t0) / 1000000))
echo "$done_rounds of $rounds takeovers in $ms ms, each holder revoked and attached again after each"

# A new client from the same address is served.
rmp_raw connect ok >/dev/null 2>&1 ||
	fail_later "a new client from $RMP_TEST_ADDR was refused after the takeovers"
daemon_log_has "refusing connections from" &&
	fail_later "a cool-down started: $(grep -m1 'refusing connections from' "$RMP_DLOG")"
pyrun "$(dirname "$0")/prom.py" get \
	"http://127.0.0.1:$((RMP_PORT + 1000))/metrics" >"$RMP_TMP/metrics.txt" ||
	rmp_fail "GET /metrics failed"
metric() { awk -v s="$1" '$1 == s { print $2 }' "$RMP_TMP/metrics.txt"; }
cool=$(metric 'rmpool_connect_rejects_total{reason="cooldown"}')
revoked=$(metric rmpool_revoked_key_errors_total)
attacks=$(metric rmpool_access_errors_total)
echo "metrics: cool-down rejects ${cool:-none}, revoked-key errors ${revoked:-none}, access errors (attacks) ${attacks:-none}"
[ "${cool:-x}" = 0 ] || fail_later "connections were refused for a cool-down: ${cool:-no figure}"
[ "${revoked:-0}" -ge $((done_rounds * nholders)) ] ||
	fail_later "$((done_rounds * nholders)) revocations, ${revoked:-no} revoked-key errors counted"
[ "${attacks:-x}" = 0 ] || fail_later "${attacks:-no figure} access errors counted as attacks"
daemon_log_has "why=ephemeral" &&
	fail_later "an ephemeral lease ended: $(grep -m1 'why=ephemeral' "$RMP_DLOG")"

# The holders stop: each reads its own leases back whole.
for i in $(seq 1 $nholders); do
	fd=${HFD[$i]}
	(echo stop >&"$fd") 2>/dev/null # (SIGPIPE for a holder gone)
	exec {fd}>&-
done
for i in $(seq 1 $nholders); do
	rc=0
	wait "${HPID[$i]}" || rc=$?
	line=$(grep -m1 '^DONE' "$RMP_TMP/h$i.out")
	[ "$rc" -eq 0 ] ||
		fail_later "holder $i: exit $rc ${line:-(no DONE)}: $(tail -1 "$RMP_TMP/h$i.err")"
done
echo "holders: $(grep -h '^DONE' "$RMP_TMP"/h*.out | sort | uniq -c | tr -s ' \n' ' ')"

daemon_stop
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-rkey-guess.sh PORT -- guessing rkeys gets nowhere, and the guesser
# is refused for a while (lease_keys = window).
#
# A holder keeps a lease; rmp-raw guess makes 256 tries, each on a new
# connection, each a READ of the lease with the holder's rkey but another
# low byte (one try has the holder's exact rkey, which must not work from
# another connection either). With access_errors_per_minute = 5 the
# daemon must refuse connections from the guesser's address after the
# sixth access error (reject reason "cool-down"), log each access error
# with the client's name and address, and log the cool-down. No try may
# succeed, and the holder's bytes stay intact.
source "$(dirname "$0")/lib.sh"

rmp_init rkey-guess "$1"
rmp_conf lease lease_keys window
rmp_conf server access_errors_per_minute 5
rmp_conf server access_cooldown 60s
tries=256
ip=$RMP_TEST_ADDR

daemon_start
hold_start

guess_rc=0
rmp_raw guess "$HOLD_ADDR" "$HOLD_RKEY" "$tries" 4096 \
	>"$RMP_TMP/guess.out" 2>"$RMP_TMP/guess.err" || guess_rc=$?
sed 's/^/[guess] /' "$RMP_TMP/guess.err"
cat "$RMP_TMP/guess.out"
# (no process substitution: the VM's /dev has no /dev/fd)
summary=$(sed -nE \
	's/^guess: ([0-9]+) tries, ([0-9]+) access errors, ([0-9]+) refused, ([0-9]+) succeeded$/\1 \2 \3 \4/p' \
	"$RMP_TMP/guess.out")
read -r n access refused succeeded <<<"$summary"
[ -n "${succeeded:-}" ] || rmp_fail "rmp-raw guess printed no summary (exit $guess_rc)"
[ "$guess_rc" -eq 0 ] && [ "$succeeded" -eq 0 ] ||
	fail_later "$succeeded guessed rkey(s) read the lease (guess exit $guess_rc)"
[ "$access" -ge 6 ] ||
	fail_later "only $access access error(s) before the cool-down; the limit is 5 a minute, so the sixth starts it"
[ "$refused" -gt 0 ] ||
	fail_later "no connection refused after $access access errors (access_errors_per_minute = 5)"
[ $((access + refused)) -eq "$n" ] ||
	fail_later "$((n - access - refused)) tries ended neither in an access error nor in a cool-down reject"

# The cool-down still holds for a new client from that address.
rmp_raw connect cooldown ||
	fail_later "a new connection from $ip after the guesses was not refused with reason cool-down"
hold_stop || fail_later "the holder failed: lease bytes changed or connection lost"

# What the daemon saw and said (rxe's report on the server side).
echo "---- daemon log: the guesser, as the server saw it (first 15 lines)"
grep -E "rmp-raw-guess" "$RMP_DLOG" | grep -vE " (connected|accepted)$" | head -n 15
echo "---- daemon log: cool-down"
grep -E "refusing connections from|refused for a while" "$RMP_DLOG" | head -n 5
echo "----"
grep -E "access error" "$RMP_DLOG" | grep -F "rmp-raw-guess" | grep -qF "$ip" ||
	fail_later "no daemon log line with 'access error', the client name rmp-raw-guess and its address $ip"
grep -E "refusing connections from" "$RMP_DLOG" | grep -qF "$ip" ||
	fail_later "no daemon log line 'refusing connections from $ip'"
daemon_log_has "rejected connection from ${ip//./\\.}:[0-9]+ \(rmp-raw-guess, tenant test\): refused for a while: too many access or authentication errors from this address" ||
	fail_later "no daemon log line 'rejected connection from $ip:PORT (rmp-raw-guess, tenant test): refused for a while: ...'"

daemon_stop
rmp_done

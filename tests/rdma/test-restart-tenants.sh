#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-restart-tenants.sh PORT -- whose leases a restart with [pool]
# state_dir brings back. Anonymous clients (enabled = yes), tenant "late"
# and tenant "test" each write leases; rmpoold stops (SIGTERM) and starts
# again with late's key file moved away:
#  - the anonymous leases attach by token and read back intact;
#  - late's leases are back (rmpoolctl leases) though nobody of late can
#    connect; once its key file is back and a reload read it, they attach
#    and read back intact.
# Then a restart with anonymous access off drops the anonymous leases
# (logged, like a removed tenant's), and one more with it on again does
# not bring them back: their records went with them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"

rmp_init restart-tenants "$1"
NA=3 NL=2 NT=2 LEN=65536 TTL=600
STATE=/dev/hugepages/rmp-restart-tenants-$RMP_PORT
rmp_at_exit 'rm -rf "$STATE"'
rm -rf "$STATE"
LATE_KEY=$RMP_TMP/late.key
rmp_keygen "$LATE_KEY"
sed -i "s|^\[pool\]$|[pool]\nstate_dir = $STATE\nmax_leases = 64|" "$RMP_CONF"
sed -i "s|^\[server\]$|[server]\ndrain_timeout = 2s|" "$RMP_CONF"
printf '[tenant.late]\nkey_file = %s\n[anonymous]\nenabled = yes\n' \
	"$LATE_KEY" >>"$RMP_CONF"

# fill_as TENANT KEY N SEED OUT / verify_as TENANT KEY FILE SEED GONE
fill_as() {
	RMPOOL_TENANT=$1 RMPOOL_KEY_FILE=$2 "$RMP_TESTBIN" fill \
		"$RMP_TEST_ADDR" "$RMP_PORT" "$3" $LEN $TTL $TTL "$4" >"$5" ||
		rmp_fail "fill as '${1:-anonymous}' failed: $(tail -3 "$5")"
	grep -q '^DONE' "$5" || rmp_fail "fill as '${1:-anonymous}' did not finish"
}
verify_as() {
	RMPOOL_TENANT=$1 RMPOOL_KEY_FILE=$2 "$RMP_TESTBIN" verify \
		"$RMP_TEST_ADDR" "$RMP_PORT" "$3" $LEN "$4" "$5" 2>&1
}
# expect_verified WHAT INTACT GONE TENANT KEY FILE SEED GONE_ARG -- verify_as
# must find INTACT leases intact and GONE gone (a failed check otherwise).
expect_verified() {
	local what=$1 intact=$2 gone=$3 out
	shift 3
	out=$(verify_as "$@") || fail_later "$what: $out"
	echo "$what: $out"
	grep -q "^VERIFIED $intact leases intact, $gone gone" <<<"$out" ||
		fail_later "$what: want $intact intact, $gone gone"
}
# leases_of NAME -- how many leases rmpoolctl lists for tenant NAME.
leases_of() {
	ctl leases | awk -v t="$1" '$2 == t' | wc -l
}
# restart N -- SIGTERM (exit 0, clean log), keep the log as run-N.log,
# start again.
restart() {
	daemon_stop
	cp "$RMP_DLOG" "$RMP_TMP/run-$1.log"
	daemon_start
	grep -E "recovered|not recovered|state file" "$RMP_DLOG"
}

daemon_start
daemon_log_has "state file .*: new" || rmp_fail "no new state file in $STATE"
fill_as "" "" $NA 10 "$RMP_TMP/anon.tokens"
fill_as late "$LATE_KEY" $NL 20 "$RMP_TMP/late.tokens"
fill_as test "$RMP_KEY" $NT 30 "$RMP_TMP/test.tokens"
[ "$(leases_of anonymous)" -eq $NA ] || rmp_fail "not $NA anonymous leases"

# 1. late's key file is gone at the start: late is configured, unusable.
mv "$LATE_KEY" "$LATE_KEY.away"
restart 1
daemon_log_has "tenant late: no key file yet" ||
	fail_later "the start did not say late has no key file"
N=$((NA + NL + NT))
daemon_log_has "recovered $N lease\(s\), $((N * LEN)) bytes, from the journal; not recovered: 0 expired, 0 damaged, 0 invalid, 0 overlapping, 0 of unknown tenants, 0 refused" ||
	fail_later "the log does not say all $N leases were recovered"
expect_verified "anonymous leases after the restart" $NA 0 \
	"" "" "$RMP_TMP/anon.tokens" 10 -1
expect_verified "test's leases after the restart" $NT 0 \
	test "$RMP_KEY" "$RMP_TMP/test.tokens" 30 -1
got=$(leases_of late)
[ "$got" -eq $NL ] || fail_later "late has $got leases after the restart, want $NL"
# Its key back: a reload makes late usable, its holders attach again.
mv "$LATE_KEY.away" "$LATE_KEY"
kill -HUP "$RMP_DPID"
for _ in $(seq 1 100); do
	daemon_log_has "reload done" && break
	sleep 0.1
done
daemon_log_has "reload done" || rmp_fail "the reload did not finish"
expect_verified "late's leases after its key came back" $NL 0 \
	late "$LATE_KEY" "$RMP_TMP/late.tokens" 20 -1

# 2. Anonymous access off at the start: its leases end, logged.
sed -i 's/^enabled = yes$/enabled = no/' "$RMP_CONF"
restart 2
n=$(grep -c "of tenant anonymous not recovered: anonymous access is off" "$RMP_DLOG")
[ "$n" -eq $NA ] || fail_later "$n anonymous leases logged as dropped, want $NA"
N=$((NL + NT))
daemon_log_has "recovered $N lease\(s\), $((N * LEN)) bytes, from the journal; not recovered: 0 expired, 0 damaged, 0 invalid, 0 overlapping, $NA of unknown tenants, 0 refused" ||
	fail_later "the log does not say $N leases were recovered and $NA dropped"
[ "$(leases_of anonymous)" -eq 0 ] || fail_later "anonymous leases listed with anonymous access off"

# 3. On again: the dropped leases stay gone; the others are still there.
sed -i 's/^enabled = no$/enabled = yes/' "$RMP_CONF"
restart 3
daemon_log_has "recovered $N lease\(s\), $((N * LEN)) bytes, from the journal; not recovered: 0 expired, 0 damaged, 0 invalid, 0 overlapping, 0 of unknown tenants" ||
	fail_later "the third start did not recover $N leases"
expect_verified "dropped anonymous leases after the third start" 0 $NA \
	"" "" "$RMP_TMP/anon.tokens" 10 -2
expect_verified "late's leases after the third start" $NL 0 \
	late "$LATE_KEY" "$RMP_TMP/late.tokens" 20 -1
daemon_stop
rmp_done

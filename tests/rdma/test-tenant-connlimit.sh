#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-connlimit.sh PORT -- connection limits: per tenant and per
# peer address.
#
# Run 1: tenant a has connections = 2 (max_clients 16). Two connections
# of a are held open; a third is accepted and, once it proved its key,
# refused (AUTH -ECONNREFUSED, RMP_DETAIL_TENANT_CONNECTIONS: only a key
# holder learns the tenant's state), by rmp-raw and by librmpool;
# tenant b connects fine meanwhile, and the two held connections are
# still served. Once one of them closes, a connects again (STAT: 2
# connections of a limit of 2).
# Run 2: connections_per_address = 3. Three connections held from this
# address; the fourth, of any tenant, is rejected with reason 10
# (RMP_REJ_PEER_FULL); once one closes, a connection is accepted again.
# Run 3: what failed cools down, nothing else. Three connections that
# never send AUTH are closed after auth_timeout and counted, but refuse
# nobody: a client from the same address is served after them. Three
# wrong proofs for tenant a (auth_failures_per_minute = 2) cool down
# tenant a from this address (reason 7, for a's right key too), while
# tenant b from the same address is served.
source "$(dirname "$0")/lib.sh"
rmp_init tenant-connlimit "$1"
akey=$RMP_TMP/a.key
bkey=$RMP_TMP/b.key
rmp_keygen "$akey"
rmp_keygen "$bkey"
cat >>"$RMP_CONF" <<CONF
[tenant.a]
key_file = $akey
connections = 2
[tenant.b]
key_file = $bkey
CONF
rmp_conf server max_clients 16

as_a() { RMPOOL_TENANT=a RMPOOL_KEY_FILE=$akey "$@"; }
as_b() { RMPOOL_TENANT=b RMPOOL_KEY_FILE=$bkey "$@"; }

# field LINE FIELD -- the value after FIELD in LINE.
field() {
	awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$1"
}

# retry_connect_ok WHO... -- a connection is accepted within 5 s (the
# server may not have seen a closed connection go yet).
retry_connect_ok() {
	for _ in $(seq 1 50); do
		"$@" rmp_raw connect ok 2>/dev/null && return 0
		sleep 0.1
	done
	"$@" rmp_raw connect ok
}

daemon_start
as_a raw_bg_start a1 '^CONNECTED' idle
as_a raw_bg_start a2 '^CONNECTED' idle
check as_a rmp_raw connect auth:tenant-full
out=$(as_a "$RMP_TESTBIN" connect "$RMP_TEST_ADDR" "$RMP_PORT" ECONNREFUSED) ||
	rmp_fail "librmpool: a third connection of a was not refused"
echo "$out"
grep -q "the tenant's connection limit" <<<"$out" ||
	rmp_fail "librmpool's last error does not name the tenant's limit"
daemon_log_has "refused after it authenticated as tenant a: the tenant's connection limit" ||
	rmp_fail "the daemon did not log the tenant-full refusal"
check as_b rmp_raw connect ok
line=$(as_b rmp_raw tstat) || rmp_fail "b: tstat failed"
echo "b: $line"
[ "$(field "$line" tenant_connections)" = 1 ] &&
	[ "$(field "$line" quota_connections)" = 0 ] ||
	rmp_fail "b's STAT: want 1 connection (its own), no limit"
# Both held connections of a are still served.
raw_bg_stop a2 || rmp_fail "a held connection of a was dropped"
retry_connect_ok as_a || rmp_fail "a could not connect again after one closed"
line=$(as_a rmp_raw tstat) || rmp_fail "a: tstat failed"
echo "a: $line"
[ "$(field "$line" tenant_connections)" = 2 ] &&
	[ "$(field "$line" quota_connections)" = 2 ] ||
	rmp_fail "a's STAT: want 2 connections (a1 and its own) of 2"
raw_bg_stop a1 || rmp_fail "a held connection of a was dropped"
daemon_stop

# ---- per address.
rmp_conf server connections_per_address 3
grep -q "^connections_per_address = 3$" "$RMP_CONF" || rmp_fail "config not changed"
daemon_start
raw_bg_start p1 '^CONNECTED' idle
as_a raw_bg_start p2 '^CONNECTED' idle
as_b raw_bg_start p3 '^CONNECTED' idle
check rmp_raw connect peer-full
check as_b rmp_raw connect peer-full
out=$("$RMP_TESTBIN" connect "$RMP_TEST_ADDR" "$RMP_PORT" ECONNREFUSED) ||
	rmp_fail "librmpool: a fourth connection from this address was not refused"
echo "$out"
grep -q "connection limit of this address" <<<"$out" ||
	rmp_fail "librmpool's last error does not name the address's limit"
raw_bg_stop p3 || rmp_fail "a held connection was dropped"
retry_connect_ok || rmp_fail "no connection accepted after one of three closed"
raw_bg_stop p2 || rmp_fail "a held connection was dropped"
raw_bg_stop p1 || rmp_fail "a held connection was dropped"
daemon_stop

# Run 3: what failed cools down, nothing else.
rmp_conf server auth_timeout 500ms
rmp_conf server auth_failures_per_minute 2
rmp_conf server access_cooldown 60s
daemon_start
for i in 1 2 3; do
	check as_a rmp_raw silent 10
done
[ "$(grep -c "disconnected: no authentication in time" "$RMP_DLOG")" -eq 3 ] ||
	rmp_fail "the three silent connections were not closed for auth_timeout"
check as_a rmp_raw connect ok
for i in 1 2 3; do
	as_a rmp_raw auth wrong-key || rmp_fail "wrong key $i: not refused as it should be"
done
daemon_log_has "refusing connections from $RMP_TEST_ADDR that name tenant a for 60 s" ||
	rmp_fail "three wrong proofs did not cool down tenant a from this address"
check as_a rmp_raw connect cooldown
check as_b rmp_raw connect ok
check rmp_raw connect ok
daemon_stop
rmp_pass

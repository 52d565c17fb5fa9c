#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-removed.sh PORT -- a reload that voids a connection's proof
# ends the connection's access: every request is refused (-EKEYREVOKED)
# and the connection is closed, its keys with it, once the tenant's
# rotate_grace is over. Three reloads void a proof: the tenant removed,
# its key rotated, its networks no longer admitting the client's
# address; all three happen in one reload here.
#
# A client of each of the tenants "gone", "rot" and "net" (rmp-raw
# voided) allocates a lease and waits; the config changes and the daemon
# reloads (SIGHUP). "rot" has rotate_grace = 2s: for 2 s its requests
# are refused while its lease's bytes stay readable, then it is closed;
# "gone" and "net" (no grace) are closed at the reload. New connections:
# as "gone", refused at AUTH as a wrong key (an unknown tenant is not
# told apart); as "rot", served with the new key only; as "net", refused
# by network once it proved its key. Tenant "test" is served
# as before, and the three leases live on to their deadlines.
source "$(dirname "$0")/lib.sh"

rmp_init tenant-removed "$1"
for t in gone rot net; do rmp_keygen "$RMP_TMP/$t.key"; done
rmp_keygen "$RMP_TMP/rot-new.key"
base=$(cat "$RMP_CONF")
tenants() { # ROT_KEY NET_NETWORKS [gone]
	printf '%s\n' "$base"
	printf '[tenant.rot]\nkey_file = %s\nrotate_grace = 2s\n' "$1"
	printf '[tenant.net]\nkey_file = %s\nnetworks = %s\n' \
		"$RMP_TMP/net.key" "$2"
	[ -z "${3:-}" ] ||
		printf '[tenant.gone]\nkey_file = %s\n' "$RMP_TMP/gone.key"
}
tenants "$RMP_TMP/rot.key" "$RMP_TEST_ADDR/32" gone >"$RMP_CONF"

daemon_start
declare -A grace=([gone]=0 [rot]=2000 [net]=0)
for t in gone rot net; do
	RMPOOL_TENANT=$t RMPOOL_KEY_FILE=$RMP_TMP/$t.key \
		raw_bg_start "$t" '^LEASE ' voided "${grace[$t]}"
	echo "$t's lease: $RAW_BG_LINE"
done
# An address no test client has: net no longer admits ours.
tenants "$RMP_TMP/rot-new.key" 198.51.100.0/24 >"$RMP_CONF"
hup_ms=$(date +%s%3N)
kill -HUP "$RMP_DPID"
for _ in $(seq 1 100); do
	daemon_log_has "reload done" && break
	sleep 0.1
done
seen_ms=$(date +%s%3N) # the voided clients time their cut from these
daemon_log_has "tenant gone removed" || rmp_fail "the reload did not remove tenant gone"
daemon_log_has "tenant rot: key changed" || rmp_fail "the reload did not change rot's key"
daemon_log_has "rmp-raw-voided.*: its tenant no longer admits its address" ||
	fail_later "the reload did not say net's connection lost its rights"
for t in gone rot net; do raw_bg_send "$t" "reload $hup_ms $seen_ms"; done
for t in gone rot net; do
	rc=0
	raw_bg_stop "$t" || rc=$?
	grep -q "^voided: PASS" "$RMP_TMP/$t.log" ||
		fail_later "$t's connection was served after the reload, or not closed after its grace (exit $rc)"
done

RMPOOL_TENANT=gone RMPOOL_KEY_FILE=$RMP_TMP/gone.key rmp_raw connect auth:wrong-key \
	>"$RMP_TMP/connect.out" 2>&1 ||
	{ cat "$RMP_TMP/connect.out"; fail_later "a new connection as gone was not refused as a wrong key"; }
RMPOOL_TENANT=net RMPOOL_KEY_FILE=$RMP_TMP/net.key rmp_raw connect auth:network \
	>"$RMP_TMP/connect.out" 2>&1 ||
	{ cat "$RMP_TMP/connect.out"; fail_later "a new connection as net was not rejected by network"; }
RMPOOL_TENANT=rot RMPOOL_KEY_FILE=$RMP_TMP/rot-new.key rmp_raw stat >/dev/null ||
	fail_later "rot is not served with its new key"
if RMPOOL_TENANT=rot RMPOOL_KEY_FILE=$RMP_TMP/rot.key rmp_raw stat >/dev/null 2>&1; then
	fail_later "rot is still served with its old key"
fi
rmp_stat || fail_later "tenant test is not served after the reload"
[ "${STAT_LEASES:-0}" -eq 3 ] ||
	fail_later "$STAT_LEASES lease(s) left, want the 3 of the closed connections"
rmp_done

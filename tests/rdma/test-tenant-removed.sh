#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-removed.sh PORT -- a reload that removes a tenant ends what
# its live connections may get: no new lease, key or renewal
# (-EKEYREVOKED), while the lease it holds can still be read, and freed.
#
# A client of tenant "gone" (rmp-raw orphan) allocates and waits; the
# tenant's section leaves the file and the daemon reloads (SIGHUP). Then,
# on the same connection: ALLOC, RENEW and ATTACH of its lease must be
# refused with -EKEYREVOKED, STAT and FREE must work. A new connection as
# "gone" must be rejected as an unknown tenant, and tenant "test" must be
# served as before.
source "$(dirname "$0")/lib.sh"

rmp_init tenant-removed "$1"
gkey=$RMP_TMP/gone.key
rmp_keygen "$gkey"
cp "$RMP_CONF" "$RMP_TMP/without.conf"
printf '[tenant.gone]\nkey_file = %s\n' "$gkey" >>"$RMP_CONF"

daemon_start
RMPOOL_TENANT=gone RMPOOL_KEY_FILE=$gkey raw_bg_start orphan '^LEASE ' orphan
echo "gone's lease: $RAW_BG_LINE"
cp "$RMP_TMP/without.conf" "$RMP_CONF"
kill -HUP "$RMP_DPID"
for _ in $(seq 1 100); do
	daemon_log_has "tenant gone removed" && break
	sleep 0.1
done
daemon_log_has "tenant gone removed" || rmp_fail "the reload did not remove tenant gone"
rc=0
raw_bg_stop orphan || rc=$?
grep -q "^orphan: PASS" "$RMP_TMP/orphan.log" ||
	fail_later "the removed tenant's connection was served (exit $rc)"
RMPOOL_TENANT=gone RMPOOL_KEY_FILE=$gkey rmp_raw connect unknown-tenant \
	>"$RMP_TMP/connect.out" 2>&1 ||
	{ cat "$RMP_TMP/connect.out"; fail_later "a new connection as gone was not rejected as unknown"; }
rmp_stat || fail_later "tenant test is not served after the reload"
[ "${STAT_LEASES:-1}" -eq 0 ] || fail_later "$STAT_LEASES lease(s) left, want 0"
rmp_done

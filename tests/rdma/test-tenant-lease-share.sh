#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-lease-share.sh PORT -- one tenant cannot take every lease
# slot, and [pool] max_leases means what it says (with a state file).
#
# max_leases = 1024, three tenants: "test" (leases = 1024, its own: as
# many as the server, more would be refused by the config check),
# "a" (bytes = 8M, no lease limit: a share, 1024 / 3 = 341) and "b".
#   - a takes 64-byte leases until refused: exactly 341, then -EDQUOT
#     (the tenant's lease limit);
#   - b's ALLOC still succeeds;
#   - test, whose own limit is the server's, is refused at the
#     server's limit (a and b hold some of it): -ENOSPC with the
#     detail that names it, with 1024 leases granted in all (the journal's mapping holds more: the limit
#     is max_leases, not what the file rounds up to).
source "$(dirname "$0")/lib.sh"

rmp_init tenant-lease-share "$1"
STATE=/dev/hugepages/rmp-tenant-lease-share-$RMP_PORT
rmp_at_exit 'rm -rf "$STATE"'
rm -rf "$STATE"
max=1024 share=$((1024 / 3))
sed -i "s|^\[pool\]$|[pool]\nstate_dir = $STATE\nmax_leases = $max|" "$RMP_CONF"
sed -i "s|^\[tenant.test\]$|[tenant.test]\nleases = $max|" "$RMP_CONF"
A_KEY=$RMP_TMP/a.key B_KEY=$RMP_TMP/b.key
rmp_keygen "$A_KEY"
rmp_keygen "$B_KEY"
printf '[tenant.a]\nkey_file = %s\nbytes = 8M\n[tenant.b]\nkey_file = %s\n' \
	"$A_KEY" "$B_KEY" >>"$RMP_CONF"

daemon_start
daemon_log_has "tenant a: key loaded; bytes 8388608, leases $share \(a share of max_leases\)" ||
	fail_later "the log does not give tenant a its share of $share leases"

# fill_upto NAME TENANT KEYFILE N -- NAME takes up to N 64-byte leases
# and holds them; sets FILL_GOT FILL_ERR FILL_DETAIL.
fill_upto() {
	local name=$1 t=$2 k=$3 n=$4
	RMPOOL_TENANT=$t RMPOOL_KEY_FILE=$k \
		raw_bg_start "$name" '^FILLED ' fill "$n" 64 600 --upto --hold
	read -r _ FILL_GOT FILL_ERR FILL_DETAIL <<<"$RAW_BG_LINE"
	echo "tenant $t: $FILL_GOT leases, then $FILL_ERR (detail $FILL_DETAIL)"
}

fill_upto fill-a a "$A_KEY" 2000
[ "$FILL_GOT" -eq "$share" ] && [ "$FILL_ERR" = -EDQUOT ] &&
	[ "$FILL_DETAIL" -eq 2 ] ||
	fail_later "tenant a (no lease limit of its own) took $FILL_GOT leases then $FILL_ERR/$FILL_DETAIL; want its share, $share, then -EDQUOT/2 (the tenant's lease limit)"

out=$(RMPOOL_TENANT=b RMPOOL_KEY_FILE=$B_KEY rmp_raw alloc 64 600 --report |
	grep '^ALLOC ')
echo "tenant b: $out"
[ "$out" = "ALLOC 0 0" ] ||
	fail_later "tenant b's ALLOC after tenant a took what it could: $out"

fill_upto fill-test test "$RMP_KEY" 2000
[ "$FILL_ERR" = -ENOSPC ] && [ "$FILL_DETAIL" -eq 8 ] ||
	fail_later "tenant test (leases = $max) was refused with $FILL_ERR/$FILL_DETAIL; want -ENOSPC/8 (the server's lease limit)"
rmp_stat || rmp_fail "STAT failed"
[ "$STAT_LEASES" -eq "$max" ] ||
	fail_later "$STAT_LEASES leases granted in all; max_leases is $max"

raw_bg_stop fill-a || fail_later "tenant a's connection did not outlive its fill"
raw_bg_stop fill-test || fail_later "tenant test's connection did not outlive its fill"
daemon_stop
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-quota.sh PORT -- a tenant's byte limit holds across all its
# connections, and a lease counts against it until it is freed, not
# until its connection goes.
#
# Tenant "test" gets bytes = 1M. Five rmp-raw processes (five
# connections) ask for 1 MiB each at once: exactly one gets the lease,
# four get -EDQUOT with detail RMP_DETAIL_BYTES (1). With the winner's
# connection closed, STAT from a new connection still shows 1 MiB and
# one lease, and another 1 MiB ALLOC is refused. A FREE by id and secret
# from yet another connection brings usage to 0, and the ALLOC then
# works. Last, ALLOC+FREE in a loop must not fill the pool with bytes in
# their grace and zeroing (rmp-raw churn).
source "$(dirname "$0")/lib.sh"
rmp_init tenant-quota "$1"
sed -i "/^key_file = /a bytes = 1M" "$RMP_CONF"
MIB=1048576

# tstat_expect FIELD VALUE... -- one STAT (a new connection): each
# FIELD of rmp-raw tstat must have its VALUE.
tstat_expect() {
	local line f v got
	line=$(rmp_raw tstat) || rmp_fail "rmp-raw tstat failed"
	echo "tstat: $line"
	while [ $# -ge 2 ]; do
		f=$1 v=$2
		shift 2
		got=$(awk -v f="$f" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$line")
		[ "$got" = "$v" ] || rmp_fail "STAT: $f is '$got', want $v"
	done
}

daemon_start
tstat_expect tenant_bytes 0 tenant_leases 0 quota_bytes $MIB

# Five connections at once, 1 MiB each.
pids=()
for i in 1 2 3 4 5; do
	rmp_raw alloc $MIB 60 --token --report >"$RMP_TMP/a$i.out" \
		2>"$RMP_TMP/a$i.log" &
	pids+=($!)
done
for i in 1 2 3 4 5; do
	wait "${pids[$((i - 1))]}" ||
		rmp_fail "rmp-raw alloc #$i got no answer: $(cat "$RMP_TMP/a$i.log")"
done
cat "$RMP_TMP"/a?.out
ok=$(cat "$RMP_TMP"/a?.out | grep -c '^ALLOC 0 0$')
dq=$(cat "$RMP_TMP"/a?.out | grep -c '^ALLOC -EDQUOT 1$')
[ "$ok" -eq 1 ] || rmp_fail "$ok of 5 concurrent 1 MiB ALLOCs succeeded, want 1"
[ "$dq" -eq 4 ] ||
	rmp_fail "$dq of 5 concurrent ALLOCs got -EDQUOT (bytes), want 4"
winner=$(grep -l '^ALLOC 0 0$' "$RMP_TMP"/a?.out)
token=$(sed -n 's/^TOKEN //p' "$winner")
read -r _ _ _ len id < <(grep '^LEASE ' "$winner")
[ -n "$token" ] || rmp_fail "the winner printed no token"
[ "$len" = $MIB ] || rmp_fail "the lease is $len bytes, want $MIB"
echo "winner: lease $id, $len bytes"
# Four refusals in the audit log, for this tenant.
n=$(grep -c "audit: refuse tenant=test .*limit=bytes" "$RMP_DLOG")
[ "$n" -eq 4 ] || rmp_fail "$n 'audit: refuse ... limit=bytes' lines, want 4"
grep -q "audit: grant tenant=test .* lease=$(printf %016x "$id") bytes=$MIB" \
	"$RMP_DLOG" || rmp_fail "no audit grant line for lease $id"

# The winner's connection is closed (its process exited): the lease
# still counts.
tstat_expect tenant_bytes $MIB tenant_leases 1 quota_bytes $MIB leases 1
out=$(rmp_raw alloc $MIB 60 --report) || rmp_fail "alloc: no answer"
[ "$out" = "ALLOC -EDQUOT 1" ] ||
	rmp_fail "a 1 MiB ALLOC with the lease unheld: '$out', want -EDQUOT 1"
out=$(rmp_raw alloc 64 60 --report) || rmp_fail "alloc: no answer"
[ "$out" = "ALLOC -EDQUOT 1" ] ||
	rmp_fail "a 64-byte ALLOC over the limit: '$out', want -EDQUOT 1"

# FREE by id and secret from another connection.
check rmp_raw byid free "$token"
tstat_expect tenant_bytes 0 tenant_leases 0 leases 0
check rmp_raw alloc $MIB 60 --free
tstat_expect tenant_bytes 0 tenant_leases 0

# ALLOC and FREE of 1 MiB in a loop for 3 s: each freed extent spends its
# grace (20 ms) and zeroing out of the pool; counted against the tenant
# up to its limit once more, they must never fill the 16 MiB pool
# (-ENOSPC), the tenant gets -EDQUOT instead.
rmp_raw churn $MIB 3 || rmp_fail "ALLOC+FREE in a loop filled the pool"
daemon_stop
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-repair.sh PORT -- striped and mirrored leases by their
# cluster token, and their repair, over three daemons registered in etcd
# (n1, n2, n3 on racks r1, r2, r3, 10 MiB pools; lib-cluster.sh). A
# 24 MiB lease in 3 stripes (larger than any pool), and one of 2 stripes
# x 2 replicas, are written and read back identical in uneven calls, by
# bounce buffer and zero copy; `rmpool -C alloc 24M --stripes 3` too, by
# its token. `rmpool -C alloc --replicas 2
# --spread rack` prints an rmpc:// token that write, read and renew take
# through -C; etcd holds the member list sealed (no rmp:// token in it).
# Tenant b, with tenant a's token, can neither read, write, renew, free
# nor repair it (the record does not open without a's key), and the bytes
# stay a's. A reader of an 8 MiB mirrored
# lease loses the replica it reads (its daemon SIGKILLed) without an
# error; `rmpool repair` then gives the lease a new replica on the third
# node while the reader goes on reading and writing (one 4 KiB write a
# turn); `rmpool info` shows the killed node's member not live before,
# both live after; after it, every replica
# read on its own holds exactly what was written (no write of the copy
# time lost), none is on the dead node, the two are on distinct racks,
# and the reader saw no error. A free removes the record.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-repair "$1"
py_start
B_KEY=$RMP_TMP/b.key
rmp_keygen "$B_KEY"
CL_POOL=([1]=10M [2]=10M [3]=10M)
CL_LABELS=([1]="rack=r1" [2]="rack=r2" [3]="rack=r3")
CL_CONF=$(printf '[tenant.b]\nkey_file = %s' "$B_KEY")
cluster_up
CLUSTER=etcd://${EURL#http://}
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster
as_b() { RMPOOL_TENANT=b RMPOOL_KEY_FILE=$B_KEY "$@"; }

# all_free -- until every node's record shows 8 MiB free in one extent
# again (a daemon writes its record at most once a second, and zeroes a
# freed lease first; 10 s at most)
all_free() {
	for _ in $(seq 1 100); do
		"$RMPOOL" -C "$CLUSTER" nodes --json | jget "all(n['largest_free'] \
			>= 8 << 20 for n in d['nodes'])" | grep -q true && return 0
		sleep 0.1
	done
	fail_later "the nodes' records did not show 8 MiB free again: $("$RMPOOL" \
		-C "$CLUSTER" nodes)"
}

# striped: larger than any pool; and striped x mirrored
out=$("$RMPC" stripe "$CLUSTER" 24M 3 1 2>&1) || fail_later "stripe 24M 3 x 1: $out"
echo "$out"
expect_eq "nodes of the 3 stripes" "$(awk '$1 == "stripe" { print $6 }' \
	<<<"$out" | sort -u | grep -c .)" 3
grep -q '^ok 25165824$' <<<"$out" || fail_later "24 MiB striped: not ok"
all_free
out=$("$RMPC" stripe "$CLUSTER" 8M 2 2 256K 2>&1) ||
	fail_later "stripe 8M 2 x 2: $out"
echo "$out"
grep -q '^ok 8388608$' <<<"$out" || fail_later "8 MiB 2 x 2 striped: not ok"
all_free
# the command: a striped lease larger than any pool, by its token
tok=$("$RMPOOL" -C "$CLUSTER" alloc 24M --stripes 3 --ttl 300) ||
	rmp_fail "rmpool -C alloc --stripes 3 failed"
head -c 25165824 /dev/urandom >"$RMP_TMP/big.bin"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/big.bin" ||
	fail_later "write of a striped lease by its token"
"$RMPOOL" -C "$CLUSTER" read "$tok" | cmp - "$RMP_TMP/big.bin" ||
	fail_later "a striped lease read back other bytes"
"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free of a striped lease"
rm -f "$RMP_TMP/big.bin"
all_free

# the command: a mirrored lease by its cluster token
tok=$("$RMPOOL" -C "$CLUSTER" alloc 1M --replicas 2 --spread rack \
	--ttl 300) || rmp_fail "rmpool -C alloc --replicas 2 failed"
case $tok in
rmpc://*) ;;
*) rmp_fail "a mirrored lease's token is not rmpc://: ${tok%%/*}" ;;
esac
head -c 1048576 /dev/urandom >"$RMP_TMP/one.bin"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/one.bin" ||
	rmp_fail "write by cluster token"
"$RMPOOL" -C "$CLUSTER" read "$tok" >"$RMP_TMP/one.out" ||
	rmp_fail "read by cluster token"
cmp "$RMP_TMP/one.bin" "$RMP_TMP/one.out" ||
	fail_later "read by cluster token: other bytes than written"
"$RMPOOL" -C "$CLUSTER" renew "$tok" --ttl 600 || fail_later "renew"
if "$RMPOOL" read "$tok" >/dev/null 2>"$RMP_TMP/noc.err"; then
	fail_later "a cluster token was read without -C"
fi
grep -q "no cluster" "$RMP_TMP/noc.err" ||
	fail_later "without -C: $(cat "$RMP_TMP/noc.err")"
# etcd: one record, sealed (no member token in clear), under a lease
recs=$(etcdctl --endpoints="$EURL" get --prefix /rmpool/leases/ \
	--keys-only | grep -c .)
expect_eq "lease records in etcd" "$recs" 1
etcdctl --endpoints="$EURL" get --prefix /rmpool/leases/ \
	--print-value-only >"$RMP_TMP/rec.bin"
grep -aq 'rmp://' "$RMP_TMP/rec.bin" &&
	fail_later "etcd holds a member token in clear"
key=$(etcdctl --endpoints="$EURL" get --prefix /rmpool/leases/ --keys-only |
	head -n 1)
ttl=$(etcdctl --endpoints="$EURL" get "$key" -w json | jget \
	"d['kvs'][0].get('lease', 0)")
[ "${ttl:-0}" != 0 ] || fail_later "the record is under no etcd lease"

# tenant b with a's token: nothing
for cmd in read renew free repair; do
	if as_b "$RMPOOL" -C "$CLUSTER" "$cmd" "$tok" >/dev/null \
		2>"$RMP_TMP/b.err"; then
		fail_later "tenant b could $cmd tenant a's cluster lease"
	fi
	# b cannot open the member list: its seal needs a's key too
	grep -q "does not open with this token and tenant b's key" \
		"$RMP_TMP/b.err" ||
		fail_later "b's $cmd: $(cat "$RMP_TMP/b.err")"
done
if head -c 4096 /dev/zero | as_b "$RMPOOL" -C "$CLUSTER" write "$tok" \
	2>"$RMP_TMP/b.err"; then
	fail_later "tenant b could write tenant a's cluster lease"
fi
"$RMPOOL" -C "$CLUSTER" read "$tok" >"$RMP_TMP/one.out" ||
	rmp_fail "read after b's tries"
cmp "$RMP_TMP/one.bin" "$RMP_TMP/one.out" ||
	fail_later "b's tries changed a's bytes"
"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free by cluster token"
recs=$(etcdctl --endpoints="$EURL" get --prefix /rmpool/leases/ \
	--keys-only | grep -c .)
expect_eq "lease records after the free" "$recs" 0

# a reader loses its replica, then the lease is repaired under it
mkfifo "$RMP_TMP/mirror.in"
"$RMPC" mirror "$CLUSTER" 8M rack repair <"$RMP_TMP/mirror.in" \
	>"$RMP_TMP/mirror.out" 2>"$RMP_TMP/mirror.err" &
MPID=$!
exec 7>"$RMP_TMP/mirror.in"
# wait_line RE -- until the mirror printed a line matching RE (60 s)
wait_line() {
	for _ in $(seq 1 600); do
		file_match "$RMP_TMP/mirror.out" "$1" && return 0
		pid_running "$MPID" || break
		sleep 0.1
	done
	cat "$RMP_TMP/mirror.out" "$RMP_TMP/mirror.err"
	rmp_fail "rmp-cluster mirror did not print $1"
}
wait_line '^ready'
r0=$(awk '$1 == "replica" && $2 == 0 { print $3 }' "$RMP_TMP/mirror.out")
r1=$(awk '$1 == "replica" && $2 == 1 { print $3 }' "$RMP_TMP/mirror.out")
mtok=$(awk '$1 == "token" { print $2 }' "$RMP_TMP/mirror.out")
json=$("$RMPOOL" -C "$CLUSTER" nodes --json) || rmp_fail "nodes --json"
rack() { jget "[n['labels']['rack'] for n in d['nodes'] \
	if n['node'] == '$1'][0]" <<<"$json"; }
sleep 1
KILLED=${r0#n}
on_daemon "$KILLED" eval 'kill -KILL $RMP_DPID'
echo killed >&7
sleep 5.5 # ttl 3 s + 2 s: the dead node leaves the membership
echo stop >&7
wait_line '^written'
grep '^reads' "$RMP_TMP/mirror.out"
read -r _ _ _ errors _ bad _ live _ total _ <<<"$(grep '^reads' \
	"$RMP_TMP/mirror.out")"
expect_eq "reader's errors at the kill" "$errors" 0
expect_eq "replicas live after the kill" "$live of $total" "1 of 2"
sleep 1 # the reader reads and writes on the survivor
# what a fresh holder sees of the members: the survivor live, the
# killed node's (replica 0's, member 0) not: stale when the reader wrote
# since, or lost
"$RMPOOL" -C "$CLUSTER" info "$mtok" >"$RMP_TMP/info.out" ||
	fail_later "rmpool info before the repair"
cat "$RMP_TMP/info.out"
expect_eq "members live before the repair (rmpool info)" \
	"$(grep -c '^member .* live,' "$RMP_TMP/info.out")" 1
st=$(awk '$1 == "member" && $2 == 0 { print $8 }' "$RMP_TMP/info.out")
case $st in
"stale," | "lost,") ;;
*) fail_later "the killed node's member is '$st' in rmpool info" ;;
esac
# never attached by this holder (its node gone): where its record says
expect_eq "the killed node's member's server (rmpool info)" \
	"$(awk '$1 == "member" && $2 == 0 { print $7 }' "$RMP_TMP/info.out")" \
	"$RMP_TEST_ADDR:${CL_PORT[KILLED]}"

"$RMPOOL" -C "$CLUSTER" repair "$mtok" >"$RMP_TMP/repair.out" \
	2>"$RMP_TMP/repair.err" || fail_later "repair failed: $(cat \
	"$RMP_TMP/repair.err")"
cat "$RMP_TMP/repair.out"
expect_eq "repair's result" "$(cat "$RMP_TMP/repair.out")" "replicas 2 of 2"
expect_eq "members' states after the repair (rmpool info --json)" \
	"$("$RMPOOL" -C "$CLUSTER" info --json "$mtok" |
		jget "' '.join(m['state'] for m in d['members'])")" "live live"
sleep 1 # the reader's calls after the repair: refreshed, on both
echo end >&7
exec 7>&-
wait "$MPID" || fail_later "rmp-cluster mirror failed: $(cat \
	"$RMP_TMP/mirror.err")"
cat "$RMP_TMP/mirror.out"
read -r _ _ reads _ writes _ errors _ bad _ slowest <<<"$(grep '^during' \
	"$RMP_TMP/mirror.out")"
[ "${writes:-0}" -gt 100 ] || fail_later "only ${writes:-0} writes around the repair"
expect_eq "errors around the repair" "$errors" 0
expect_eq "wrong bytes read around the repair" "$bad" 0
m0=$(awk '$1 == "member" && $2 == 0 { print $3 }' "$RMP_TMP/mirror.out")
m1=$(awk '$1 == "member" && $2 == 1 { print $3 }' "$RMP_TMP/mirror.out")
for m in "$m0" "$m1"; do
	[ -n "$m" ] && [ "$m" != "$r0" ] ||
		fail_later "a replica after the repair is on '$m' (killed: $r0)"
done
[ "$(rack "$m0")" != "$(rack "$m1")" ] ||
	fail_later "replicas after the repair on $m0 and $m1: one rack"
diff=$(awk '$1 == "member" { s += $5 } END { print s + 0 }' \
	"$RMP_TMP/mirror.out")
expect_eq "bytes differing from what was written, all replicas" "$diff" 0
expect_eq "replicas live at the end" "$(awk '$1 == "live" { print $2 " of " \
	$4 }' "$RMP_TMP/mirror.out")" "2 of 2"
grep -q '^record gone' "$RMP_TMP/mirror.out" ||
	fail_later "the record was still there after the free"

for i in 1 2 3; do
	[ "$i" = "$KILLED" ] && continue
	on_daemon "$i" daemon_stop
done
rmp_done

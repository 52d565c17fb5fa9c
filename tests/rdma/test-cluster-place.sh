#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-place.sh PORT -- the library places leases over three
# daemons registered in etcd (n1 rack=r1, n2 rack=r1, n3 rack=r2, equal
# pools; lib-cluster.sh): `rmpool -C nodes` lists the three with their
# labels; the Python binding's rmpool.Cluster passes test_cluster.py
# (tests/python: nodes, placement, mirrored and striped leases shared
# with the CLI by token, attach, errors, close, repair); 30 leases of one cluster handle spread by free space (no node
# takes more than half); a mirrored lease spread over racks lands on
# both racks, and a reader (one 4 KiB read a millisecond, every byte
# checked) sees no error and no wrong byte when the daemon of the
# replica it reads is SIGKILLed, and a write after it reaches the
# survivor; the dead node leaves `nodes` within ttl + 2 s and takes no
# lease after; with etcd gone a new cluster alloc fails with a clear
# error, while a lease placed before still reads.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-place "$1"
py_start
CL_POOL=([1]=24M [2]=24M [3]=24M)
cluster_up
CLUSTER=etcd://${EURL#http://}
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster
KILLED=

# nodes: the three, by name, with their labels
out=$("$RMPOOL" -C "$CLUSTER" nodes) || rmp_fail "rmpool nodes failed"
echo "$out"
expect_eq "nodes listed" "$(grep -c . <<<"$out")" 3
json=$("$RMPOOL" -C "$CLUSTER" nodes --json) || rmp_fail "nodes --json"
expect_eq "node names" "$(jget "' '.join(n['node'] for n in d['nodes'])" \
	<<<"$json")" "n1 n2 n3"
expect_eq "n3's rack" "$(jget "[n['labels']['rack'] for n in d['nodes'] \
	if n['node'] == 'n3'][0]" <<<"$json")" r2
expect_eq "n2's port" "$(jget "[n['port'] for n in d['nodes'] \
	if n['node'] == 'n2'][0]" <<<"$json")" "${CL_PORT[2]}"

# the Python binding's cluster calls (tests/python/test_cluster.py), on
# these nodes while all three live; it frees what it leased
t0=$EPOCHREALTIME
RMP_PY_CLUSTER=$CLUSTER RMP_PY_CLI=$RMPOOL RMP_PY_POOL=$((24 << 20)) \
RMP_PY_ETCD_PID=$ETCD_PID \
RMP_PY_NODES="n1:${CL_PORT[1]} n2:${CL_PORT[2]} n3:${CL_PORT[3]}" \
	"$(dirname "$0")/../python/run-pytest.sh" "$RMP_BUILD_ROOT" \
	-rfEs --durations=3 -o faulthandler_timeout=120 \
	"$(dirname "$0")/../python/test_cluster.py"
rc=$?
case $rc in
0) ;;
77) echo "test_cluster.py skipped: no rmpool extension or pytest" ;;
*) fail_later "test_cluster.py failed (exit status $rc)" ;;
esac
echo "test_cluster.py took $(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 )) ms"
# records_free -- wait (20 s at most) until every node's record in etcd
# shows its pool free again (a daemon zeroes a freed lease, then writes
# its record at its next tick, at most once a second); sets FREE_MS, how
# long it took, or none. The records are read with etcdctl (an rmpool
# under ASan takes seconds a call beside another test).
records_free() {
	local t0=${EPOCHREALTIME/./}
	FREE_MS=
	while [ $(( (${EPOCHREALTIME/./} - t0) / 1000 )) -lt 20000 ]; do
		if etcdctl --endpoints="$EURL" --command-timeout=5s get \
			--prefix /rmpool/nodes/ --print-value-only | paste -sd, |
			sed 's/^/[/; s/$/]/' | jget "len(d) == 3 and \
			all(n['free_bytes'] == n['pool_bytes'] for n in d)" |
			grep -q true; then
			FREE_MS=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
			return
		fi
		sleep 0.1
	done
}
records_free

# placement on a current view: a striped lease that fills every pool is
# freed, and at once a mirrored one needs that room: the records may
# still say the pools are full (a daemon rewrites its record within a
# second of the free); the library asks the nodes before it fails. Then
# the records show the room (at the daemons' next tick once zeroed).
tok=$("$RMPOOL" -C "$CLUSTER" alloc 66M --stripes 3 --ttl 60) ||
	rmp_fail "a 66 MiB lease striped over three 24 MiB pools"
for _ in $(seq 1 50); do # the records show it
	"$RMPOOL" -C "$CLUSTER" nodes --json | jget "all(n['free_bytes'] \
		< (4 << 20) for n in d['nodes'])" | grep -q true && break
	sleep 0.1
done
"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free of the striped lease"
if tok=$("$RMPOOL" -C "$CLUSTER" alloc 20M --replicas 2 --ttl 60 2>"$RMP_TMP/alloc.err")
then
	"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free of the mirrored lease"
else
	fail_later "a mirrored 20 MiB lease right after the free: $(cat "$RMP_TMP/alloc.err")"
fi
records_free
# A figure, not judged: a second or two on a real machine; under ASan in
# the VM beside another test the zeroing of 22 MiB a node takes seconds.
# What is judged is that the record says it at all: without the rewrite
# on a move (rmpoold's on_tick) it would keep the full pools for good.
echo "the records showed the pools free $FREE_MS ms after the last free"
[ -n "$FREE_MS" ] ||
	fail_later "the records did not show the pools free within 20 s of the free"

# spread: 30 leases of 256 KiB from one handle, no node more than half
spread=$("$RMPC" spread "$CLUSTER" 30 256K) || rmp_fail "spread failed"
echo "$spread"
expect_eq "nodes that got leases" "$(grep -c '^node ' <<<"$spread")" 3
most=$(awk '$3 > m { m = $3 } END { print m + 0 }' <<<"$spread")
[ "$most" -le 15 ] || fail_later "one node took $most of 30 leases"

# mirrored over racks; the reader's replica dies under it
mkfifo "$RMP_TMP/mirror.in"
"$RMPC" mirror "$CLUSTER" 16M rack <"$RMP_TMP/mirror.in" \
	>"$RMP_TMP/mirror.out" 2>"$RMP_TMP/mirror.err" &
MPID=$!
exec 7>"$RMP_TMP/mirror.in"
for _ in $(seq 1 600); do
	file_match "$RMP_TMP/mirror.out" '^ready' && break
	pid_running "$MPID" || break
	sleep 0.1
done
cat "$RMP_TMP/mirror.out" "$RMP_TMP/mirror.err"
grep -q '^ready' "$RMP_TMP/mirror.out" || rmp_fail "the mirrored lease " \
	"was not written and read back"
r0=$(awk '$1 == "replica" && $2 == 0 { print $3 }' "$RMP_TMP/mirror.out")
r1=$(awk '$1 == "replica" && $2 == 1 { print $3 }' "$RMP_TMP/mirror.out")
rack() { jget "[n['labels']['rack'] for n in d['nodes'] \
	if n['node'] == '$1'][0]" <<<"$json"; }
[ -n "$r0" ] && [ -n "$r1" ] && [ "$(rack "$r0")" != "$(rack "$r1")" ] ||
	fail_later "replicas on $r0 and $r1: not on two racks"
sleep 1 # the reader reads replica 0 (the first in order)
KILLED=${r0#n}
on_daemon "$KILLED" eval 'kill -KILL $RMP_DPID'
echo killed >&7
# the reader goes on while the node leaves its view (ttl 3 s + 2 s)
for _ in $(seq 1 55); do
	sleep 0.1
done
echo stop >&7
exec 7>&-
wait "$MPID" || fail_later "rmp-cluster mirror failed: $(cat "$RMP_TMP/mirror.err")"
res=$(grep '^reads' "$RMP_TMP/mirror.out")
echo "$res (replica 0 on $r0 killed)"
read -r _ reads _ errors _ bad _ live _ total _ gone <<<"$res"
[ "${reads:-0}" -gt 100 ] || fail_later "only ${reads:-0} reads in the loop"
expect_eq "reader's errors" "$errors" 0
expect_eq "wrong bytes read" "$bad" 0
expect_eq "replicas live after the kill" "$live of $total" "1 of 2"
# the dead node leaves the membership within ttl (3 s) + 2 s
[ "${gone:--1}" -ge 0 ] && [ "$gone" -le 5000 ] ||
	fail_later "$r0 left the membership after ${gone:--1} ms (want <= 5000)"
out=$("$RMPOOL" -C "$CLUSTER" nodes) || rmp_fail "nodes failed"
grep -q "^$r0 " <<<"$out" && fail_later "$r0 still listed by rmpool nodes"
spread=$("$RMPC" spread "$CLUSTER" 6 256K) || rmp_fail "spread after kill"
echo "$spread"
grep -q "^node $r0 " <<<"$spread" && fail_later "dead node $r0 got a lease"

# a lease placed by the command, used by its token alone
tok=$("$RMPOOL" -C "$CLUSTER" alloc 64K --ttl 300) ||
	rmp_fail "rmpool -C alloc failed"
head -c 65536 /dev/urandom >"$RMP_TMP/one.bin"
"$RMPOOL" write "$tok" <"$RMP_TMP/one.bin" || rmp_fail "write by token"

# etcd gone: no new placement, a clear error; placed leases still work
etcd_kill
if "$RMPOOL" -C "$CLUSTER" alloc 64K 2>"$RMP_TMP/alloc.err"; then
	fail_later "a cluster alloc worked with etcd gone"
fi
cat "$RMP_TMP/alloc.err"
grep -q "cannot be read from etcd" "$RMP_TMP/alloc.err" ||
	fail_later "the error does not say etcd cannot be read"
"$RMPOOL" read "$tok" >"$RMP_TMP/one.out" ||
	fail_later "a placed lease did not read with etcd gone"
cmp "$RMP_TMP/one.bin" "$RMP_TMP/one.out" ||
	fail_later "a placed lease read other bytes with etcd gone"

for i in 1 2 3; do
	[ "$i" = "$KILLED" ] && continue
	on_daemon "$i" daemon_stop
done
rmp_done

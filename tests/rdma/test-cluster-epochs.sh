#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-epochs.sh PORT -- no old record, no lost write: four
# daemons (n1..n4, 16 MiB pools, ttl 3 s). Rollback: a mirrored lease's
# record is saved, its first replica's node cut off (SIGSTOP) and the
# lease repaired onto the third node, new bytes written, the old record
# put back and the node let go on: a fresh reader gets the new bytes or
# a clear error (its live member knows a newer epoch), never the old
# ones, and `rmpool repair` brings the record past it (the new bytes
# read again). Lost write: a holder of a 3-replica lease that reaches
# etcd only through a proxy the test cuts writes sequence numbers (each
# in a block of its own) while another process takes its first replica's
# key (an exclusive attach), kills a second replica's daemon and
# repairs; a fresh reader finds every number the holder saw
# acknowledged.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-epochs "$1"
py_start
CL_N=4
CL_NODE=([1]=n1 [2]=n2 [3]=n3 [4]=n4)
CL_POOL=([1]=16M [2]=16M [3]=16M [4]=16M)
CL_LABELS=([1]="rack=r1" [2]="rack=r2" [3]="rack=r3" [4]="rack=r4")
cluster_up
CLUSTER=etcd://${EURL#http://}
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster
FORGE=$RMP_BUILD_ROOT/tests/rdma/rmp-forge

# members TOKEN -- the member tokens of a cluster lease, one a line
members() {
	"$RMPC" members "$CLUSTER" "$1"
}
# daemon_of MEMBER -- the number of the daemon a member token names
daemon_of() {
	local port=${1#*:*:} i
	port=${port%%/*}
	for i in 1 2 3 4; do
		[ "${CL_PORT[i]}" = "$port" ] && { echo "$i"; return; }
	done
	rmp_fail "no daemon on port $port ($1)"
}
# wait_gone I -- until node I has left the membership (ttl + 2 s)
wait_gone() {
	for _ in $(seq 1 100); do
		"$RMPOOL" -C "$CLUSTER" nodes | grep -q "^${CL_NODE[$1]} " ||
			return 0
		sleep 0.1
	done
	rmp_fail "node ${CL_NODE[$1]} did not leave the membership"
}
# record_value KEY FILE -- KEY's value in etcd, byte for byte, into FILE
record_value() {
	etcdctl --endpoints="$EURL" get "$1" -w json | python3 -c '
import base64, json, sys
sys.stdout.buffer.write(base64.b64decode(json.load(sys.stdin)["kvs"][0]["value"]))
' >"$2"
}

# ---- rollback
head -c $((1 << 20)) /dev/zero | tr '\0' 'A' >"$RMP_TMP/old.bin"
head -c $((1 << 20)) /dev/zero | tr '\0' 'N' >"$RMP_TMP/new.bin"
tok=$("$RMPOOL" -C "$CLUSTER" alloc 1M --replicas 2 --ttl 300) ||
	rmp_fail "alloc --replicas 2"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/old.bin" ||
	rmp_fail "writing the old bytes"
mapfile -t mem < <(members "$tok")
expect_eq "members" "${#mem[@]}" 2
key=/rmpool/$("$FORGE" key "$tok")
record_value "$key" "$RMP_TMP/saved.rec"
CUT=$(daemon_of "${mem[0]}") # the replica a reader reads first
on_daemon "$CUT" eval 'kill -STOP $RMP_DPID'
wait_gone "$CUT"
"$RMPOOL" -C "$CLUSTER" repair "$tok" || fail_later "repair failed"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/new.bin" ||
	fail_later "writing the new bytes"
etcdctl --endpoints="$EURL" put "$key" <"$RMP_TMP/saved.rec" >/dev/null ||
	rmp_fail "putting the old record back"
on_daemon "$CUT" eval 'kill -CONT $RMP_DPID'
cl_wait_state "$CUT" registered 30 || rmp_fail "node $CUT did not come back"
if "$RMPOOL" -C "$CLUSTER" read "$tok" >"$RMP_TMP/read.bin" \
	2>"$RMP_TMP/read.err"; then
	cmp -s "$RMP_TMP/read.bin" "$RMP_TMP/old.bin" &&
		fail_later "a fresh reader read the old bytes through the old record"
	cmp -s "$RMP_TMP/read.bin" "$RMP_TMP/new.bin" ||
		fail_later "a fresh reader read neither the old nor the new bytes"
else
	echo "the fresh reader: $(cat "$RMP_TMP/read.err")"
	grep -q "knows a newer epoch" "$RMP_TMP/read.err" ||
		fail_later "not a clear error: $(cat "$RMP_TMP/read.err")"
fi
# the operator's way out: repair takes the record past its members (it
# says "try again" while a member does not answer: a node of a loaded
# machine may miss its etcd ttl for a moment)
ok=
for _ in 1 2 3 4 5; do
	if "$RMPOOL" -C "$CLUSTER" repair "$tok" 2>"$RMP_TMP/repair.err"; then
		ok=1
		break
	fi
	cat "$RMP_TMP/repair.err"
	grep -q "try again" "$RMP_TMP/repair.err" || break
	sleep 1
done
[ -n "$ok" ] || fail_later "repair of the put-back record failed"
"$RMPOOL" -C "$CLUSTER" read "$tok" | cmp -s - "$RMP_TMP/new.bin" ||
	fail_later "after the repair: not the new bytes"
"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free"

# ---- lost write: the holder reaches etcd through a proxy we cut
PROXY_PORT=$((RMP_D_PORT[1] + 2500))
python3 "$(dirname "$0")/tcp_cut.py" "$PROXY_PORT" 127.0.0.1 \
	"${EURL##*:}" >"$RMP_TMP/proxy.out" 2>&1 &
PROXY=$!
for _ in $(seq 1 100); do
	file_match "$RMP_TMP/proxy.out" listening && break
	sleep 0.1
done
tok=$("$RMPOOL" -C "$CLUSTER" alloc 8M --replicas 3 --ttl 300) ||
	rmp_fail "alloc --replicas 3"
mapfile -t mem < <(members "$tok")
expect_eq "members" "${#mem[@]}" 3
mkfifo "$RMP_TMP/seq.in"
# a write each 10 ms: 2048 blocks outlast the cut (no block written
# twice, which would hide a loss)
"$RMPC" seq "etcd://127.0.0.1:$PROXY_PORT" "$tok" 10 <"$RMP_TMP/seq.in" \
	>"$RMP_TMP/seq.out" 2>"$RMP_TMP/seq.err" &
SPID=$!
exec 7>"$RMP_TMP/seq.in"
wait_acks 50
kill -USR1 "$PROXY" # the holder is cut off from etcd
sleep 0.5
# another process takes replica 0's key: the holder's writes fail there
"$RMPOOL" read --exclusive --length 1 "${mem[0]}" >/dev/null ||
	fail_later "the takeover of replica 0 failed"
sleep 0.5
KILLED=$(daemon_of "${mem[1]}")
on_daemon "$KILLED" eval 'kill -KILL $RMP_DPID'
wait_gone "$KILLED"
"$RMPOOL" -C "$CLUSTER" repair "$tok" >"$RMP_TMP/repair.out" 2>&1 ||
	fail_later "repair without replica 1: $(cat "$RMP_TMP/repair.out")"
kill -USR2 "$PROXY" # back
wait_acks 20
echo stop >&7
exec 7>&-
wait "$SPID" || fail_later "the holder failed: $(cat "$RMP_TMP/seq.err")"
tail -n 1 "$RMP_TMP/seq.out"
grep -c '^error' "$RMP_TMP/seq.out" | sed 's/^/errors while cut off: /'
"$RMPC" seqcheck "$CLUSTER" "$tok" <"$RMP_TMP/seq.out" \
	>"$RMP_TMP/check.out" 2>&1 ||
	fail_later "acknowledged writes lost: $(tail -n 5 "$RMP_TMP/check.out")"
tail -n 1 "$RMP_TMP/check.out"
kill "$PROXY" 2>/dev/null
"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free"

for i in 1 2 3 4; do
	[ "$i" = "$KILLED" ] && continue
	on_daemon "$i" daemon_stop
done
rmp_done

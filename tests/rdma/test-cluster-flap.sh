#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-flap.sh PORT -- a link flap is not a lost node. Three
# daemons (n1..n3 on racks r1..r3) each listen on both of the VM's
# devices, so a cluster client reaches each node over two rails. One
# process (rmp-cluster flap) writes and reads back 1 MiB blocks of a
# mirrored lease, of a 2 x 2 striped and mirrored one and of a 2+1
# erasure-coded one, checking every byte, while rail 0's link (eth0,
# every node's first device) goes down for 3 s and comes back: no call
# fails, no byte read differs, every member is live afterwards, each
# stripe's replicas hold the same bytes and the coded lease's members
# what its code says (rmp-eccheck code). The same with both links (every
# rail of every node) down for 3 s: the calls wait for the members and
# then succeed, and a coded write the flap cut leaves its members to
# come back (not marked: each row's tags say which write a member
# holds). Then a
# replica's daemon is killed (SIGKILL) and started again
# from its state_dir at once, under a reader of a mirrored lease: no call
# fails, the reads go to the other replica meanwhile, and the member
# comes back live (the library tries it again and attaches it anew).
# Last, a replica that missed writes while its daemon was down (killed,
# a write through the CLI marks it stale, the daemon started again from
# its state_dir) is caught up in place by `rmpool repair`: the record
# keeps it on its node (no other node's memory taken), both members are
# live, and a read from it gives the bytes written while it was down.
# Needs root in the VM (ip link); skipped without a second device.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-flap "$1"
if [ -z "${RMP_TEST_ADDR2:-}" ]; then
	echo "no second RDMA device (RMP_TEST_ADDR2): skipped"
	exit 77
fi
D1=${RMP_TEST_DEV:-rxe0}
NETDEV1=$(cat "/sys/class/infiniband/$D1/parent" 2>/dev/null) ||
	NETDEV1=$(rdma link show "$D1/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
[ -n "$NETDEV1" ] || rmp_fail "no netdev under $D1"
D2=${RMP_TEST_DEV2:-rxe1}
NETDEV2=$(cat "/sys/class/infiniband/$D2/parent" 2>/dev/null) ||
	NETDEV2=$(rdma link show "$D2/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
[ -n "$NETDEV2" ] || rmp_fail "no netdev under $D2"
if [ -z "${RMP_IN_VM:-}" ] || [ "$(id -u)" != 0 ]; then
	echo "takes $NETDEV1 down: only as root in the VM: skipped"
	exit 77
fi
py_start
STATE=/dev/hugepages/rmp-cluster-flap-$RMP_PORT
rmp_at_exit 'ip link set "$NETDEV1" up; ip link set "$NETDEV2" up; rm -rf "$STATE"-*'
rm -rf "$STATE"-*
CL_STATE=$STATE
CL_POOL=([1]=8M [2]=8M [3]=8M)
CL_LABELS=([1]="rack=r1" [2]="rack=r2" [3]="rack=r3")
CL_LISTEN="$RMP_TEST_ADDR, $RMP_TEST_ADDR2"
cluster_up
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster
ECCHECK=$RMP_BUILD_ROOT/tests/rdma/rmp-eccheck
CLUSTER=etcd://${EURL#http://}

# client_start NAME SIZE [TAG [EXTRA]] -- rmp-cluster NAME (flap,
# revive) with leases of SIZE spread by rack (EXTRA: its last argument),
# in the background (standard input: fd 7; output: TAG.out, TAG defaults
# to NAME); returns once it is ready.
client_start() {
	local name=${3:-$1}
	mkfifo "$RMP_TMP/$name.go"
	"$RMPC" "$1" "$EURL" "$2" rack ${4:-} <"$RMP_TMP/$name.go" >"$RMP_TMP/$name.out" \
		2>"$RMP_TMP/$name.err" &
	FPID=$!
	exec 7>"$RMP_TMP/$name.go"
	for _ in $(seq 1 300); do
		file_match "$RMP_TMP/$name.out" '^ready' && return 0
		pid_running "$FPID" || break
		sleep 0.1
	done
	rmp_fail "rmp-cluster $name did not start: $(cat "$RMP_TMP/$name.err")"
}

# client_end TAG -- its loop told to end; its output shown, and its
# figures in ops, errors, bad, slowest.
client_end() {
	local rc=0
	echo done >&7
	exec 7>&-
	wait "$FPID" || rc=$?
	cat "$RMP_TMP/$1.out"
	[ "$rc" = 0 ] || rmp_fail "rmp-cluster $1: $(cat "$RMP_TMP/$1.err")"
	read -r _ ops _ errors _ bad _ slowest < <(grep '^ops ' "$RMP_TMP/$1.out")
	[ "${ops:-0}" -gt 8 ] || fail_later "$1: only ${ops:-0} calls"
}

# expect_lease TAG LEASE -- LEASE (mirror, stripe) of TAG.out: every
# member live, a whole read and the replicas of each stripe identical.
expect_lease() {
	local out=$RMP_TMP/$1.out
	expect_eq "$2: live replicas" \
		"$(awk -v n="$2" '$1 == "lease" && $2 == n && $3 == "live" \
			{ print $4 " of " $6 }' "$out")" "2 of 2"
	expect_eq "$2: bytes of a whole read that differ" \
		"$(awk -v n="$2" '$1 == "lease" && $2 == n && $3 == "whole" \
			{ print $4 }' "$out")" 0
	expect_eq "$2: stripes whose replicas differ" \
		"$(awk -v n="$2" '$1 == "lease" && $2 == n && $3 == "whole" \
			{ print $6 }' "$out")" 0
}

# expect_ec TAG -- the 2+1 lease of TAG.out: every member live, a whole
# read identical, each member (read through a handle of its own) as its
# code says; then freed.
expect_ec() {
	local out=$RMP_TMP/$1.out tok
	expect_eq "ec: live members" \
		"$(awk '$1 == "lease" && $2 == "ec" && $3 == "live" \
			{ print $4 " of " $6 }' "$out")" "3 of 3"
	expect_eq "ec: bytes of a whole read that differ" \
		"$(awk '$1 == "lease" && $2 == "ec" && $3 == "whole" \
			{ print $4 }' "$out")" 0
	tok=$(awk '$1 == "lease" && $2 == "ec" && $3 == "token" { print $4 }' \
		"$out")
	[ -n "$tok" ] || { fail_later "$1: no token of the ec lease"; return; }
	"$ECCHECK" code "$CLUSTER" "$tok" >"$RMP_TMP/eccheck.out" 2>&1 ||
		fail_later "ec: a member differs from the code: $(cat \
			"$RMP_TMP/eccheck.out")"
	tr '\n' ' ' <"$RMP_TMP/eccheck.out"
	echo
	# a process that attaches the lease by its token (rmpool) reaches
	# each member over both of its node's devices too
	"$RMPOOL" -C "$CLUSTER" info "$tok" >"$RMP_TMP/info.out" ||
		fail_later "ec: info"
	grep "^member" "$RMP_TMP/info.out"
	expect_eq "ec: members attached by token over both rails" \
		"$(grep -c "^member .* rails 2 of 2 up$" "$RMP_TMP/info.out")" 3
	"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "ec: free"
}

client_start flap 4M flap ec
sleep 1
echo "== $NETDEV1 (rail 0 of every node) down for 3 s"
ip link set "$NETDEV1" down
echo "down $(date +%s%3N)" >&7
sleep 3
ip link set "$NETDEV1" up
sleep 4 # calls on rail 1 alone, and rail 0 back (~1 s after up)
client_end flap
expect_eq "calls that failed through the flap" "$errors" 0
expect_eq "bytes read that differ from what was written" "$bad" 0
expect_lease flap mirror
expect_lease flap stripe
expect_ec flap
echo "slowest call: $slowest ms"
# a figure (goal on a real NIC: within one op timeout), not judged here
echo "from the link down to the first call begun after it done:" \
	"$(awk '$1 == "after_down_ms" { print $2 }' "$RMP_TMP/flap.out") ms"

echo "== $NETDEV1 and $NETDEV2 (every rail of every node) down for 3 s"
client_start flap 4M both ec
sleep 1
ip link set "$NETDEV1" down
ip link set "$NETDEV2" down
sleep 3
ip link set "$NETDEV1" up
ip link set "$NETDEV2" up
sleep 4
client_end both
expect_eq "calls that failed with every link down" "$errors" 0
expect_eq "bytes read that differ from what was written" "$bad" 0
expect_lease both mirror
expect_lease both stripe
expect_ec both
echo "slowest call: $slowest ms"

echo "== a replica's daemon killed and started again under a reader"
client_start revive 2M
# the daemon of replica 0, which the reads go to
port=$(awk '$1 == "member" && $2 == 0 { print $3 }' "$RMP_TMP/revive.out")
V=
for i in 1 2 3; do [ "${CL_PORT[i]}" = "$port" ] && V=$i; done
[ -n "$V" ] || rmp_fail "replica 0's port $port is no daemon's"
kill9() { kill -KILL "$RMP_DPID"; }
on_daemon "$V" kill9
on_daemon "$V" daemon_wait_exit 10 || rmp_fail "daemon $V outlived SIGKILL"
on_daemon "$V" daemon_spawn
on_daemon "$V" daemon_listening
on_daemon "$V" daemon_log_has "pool: recovered [1-9]" ||
	fail_later "daemon $V took nothing back from its state_dir"
# the library tries a suspect member again through its node's record:
# once the node is registered anew (its earlier etcd lease must run out
# first), the next try (8 s apart at most) attaches it; then a few more
# reads on it
cl_wait_state "$V" registered 30 || fail_later "daemon $V did not register again"
for _ in $(seq 1 100); do
	file_match "${CL_LOG[V]}" "audit: attach" && break
	sleep 0.1
done
grep -q "audit: attach" "${CL_LOG[V]}" ||
	fail_later "the reader did not attach its member on daemon $V again"
sleep 0.5
client_end revive
expect_eq "reads that failed through the restart" "$errors" 0
expect_eq "bytes read that differ" "$bad" 0
expect_lease revive mirror
echo "slowest read: $slowest ms"

echo "== a replica that missed writes caught up in place"
head -c $((2 << 20)) /dev/urandom >"$RMP_TMP/a"
head -c $((1 << 20)) /dev/urandom >"$RMP_TMP/b"
tok=$("$RMPOOL" -C "$CLUSTER" alloc 2M --replicas 2 --spread rack --ttl 300) ||
	rmp_fail "a mirrored lease"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/a" || rmp_fail "its first write"
V=$(cl_member_daemon "$tok" 0) || rmp_fail "member 0's daemon"
port=${CL_PORT[V]}
on_daemon "$V" kill9
on_daemon "$V" daemon_wait_exit 10 || rmp_fail "daemon $V outlived SIGKILL"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/b" ||
	fail_later "a write with member 0's daemon down"
on_daemon "$V" daemon_spawn
on_daemon "$V" daemon_listening
cl_wait_state "$V" registered 30 || fail_later "daemon $V did not register again"
"$RMPOOL" -C "$CLUSTER" info "$tok"
out=$("$RMPOOL" -C "$CLUSTER" repair "$tok" 2>&1) || fail_later "repair: $out"
echo "$out"
json=$("$RMPOOL" -C "$CLUSTER" info --json "$tok")
expect_eq "member 0's port after the repair (caught up where it was)" \
	"$(jget "d['members'][0]['port']" <<<"$json")" "$port"
expect_eq "members' states after the repair" \
	"$(jget "' '.join(m['state'] for m in d['members'])" <<<"$json")" "live live"
# a read goes to member 0 first: the bytes written while it was down
"$RMPOOL" -C "$CLUSTER" read "$tok" --length $((1 << 20)) >"$RMP_TMP/got" ||
	fail_later "a read after the repair"
cmp -s "$RMP_TMP/b" "$RMP_TMP/got" ||
	fail_later "member 0 does not hold the bytes written while it was down"
"$RMPOOL" -C "$CLUSTER" free "$tok" || fail_later "free"
cluster_down
rmp_done

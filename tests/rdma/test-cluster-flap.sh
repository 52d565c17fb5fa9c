#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-flap.sh PORT -- a link flap is not a lost node. Three
# daemons (n1..n3 on racks r1..r3) each listen on both of the VM's
# devices, so a cluster client reaches each node over two rails. One
# process (rmp-cluster flap) writes and reads back 1 MiB blocks of a
# mirrored lease and of a 2 x 2 striped and mirrored one, checking every
# byte, while rail 0's link (eth0, every node's first device) goes down
# for 3 s and comes back: no call fails, no byte read differs, every
# member is live afterwards and each stripe's replicas hold the same
# bytes. Needs root in the VM (ip link); skipped without a second device.
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
if [ -z "${RMP_IN_VM:-}" ] || [ "$(id -u)" != 0 ]; then
	echo "takes $NETDEV1 down: only as root in the VM: skipped"
	exit 77
fi
py_start
trap 'ip link set "$NETDEV1" up; etcd_kill; rmp_cleanup' EXIT
CL_POOL=([1]=8M [2]=8M [3]=8M)
CL_LABELS=([1]="rack=r1" [2]="rack=r2" [3]="rack=r3")
CL_LISTEN="$RMP_TEST_ADDR, $RMP_TEST_ADDR2"
cluster_up
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster

mkfifo "$RMP_TMP/go"
"$RMPC" flap "$EURL" 4M rack <"$RMP_TMP/go" >"$RMP_TMP/flap.out" \
	2>"$RMP_TMP/flap.err" &
FPID=$!
exec 7>"$RMP_TMP/go"
for _ in $(seq 1 300); do
	grep -q '^ready' "$RMP_TMP/flap.out" && break
	pid_running "$FPID" || break
	sleep 0.1
done
grep -q '^ready' "$RMP_TMP/flap.out" ||
	rmp_fail "rmp-cluster flap did not start: $(cat "$RMP_TMP/flap.err")"
sleep 1
echo "== $NETDEV1 (rail 0 of every node) down for 3 s"
ip link set "$NETDEV1" down
sleep 3
ip link set "$NETDEV1" up
sleep 4 # calls on rail 1 alone, and rail 0 back (~1 s after up)
echo done >&7
exec 7>&-
FRC=0
wait "$FPID" || FRC=$?
cat "$RMP_TMP/flap.out"
[ "$FRC" = 0 ] || rmp_fail "rmp-cluster flap: $(cat "$RMP_TMP/flap.err")"
read -r _ ops _ errors _ bad _ slowest < <(grep '^ops ' "$RMP_TMP/flap.out")
[ "${ops:-0}" -gt 8 ] || fail_later "only ${ops:-0} calls around the flap"
expect_eq "calls that failed through the flap" "$errors" 0
expect_eq "bytes read that differ from what was written" "$bad" 0
for name in mirror stripe; do
	expect_eq "$name: live replicas after the flap" \
		"$(awk -v n="$name" '$1 == "lease" && $2 == n && $3 == "live" \
			{ print $4 " of " $6 }' "$RMP_TMP/flap.out")" "2 of 2"
	expect_eq "$name: bytes of a whole read that differ" \
		"$(awk -v n="$name" '$1 == "lease" && $2 == n && $3 == "whole" \
			{ print $4 }' "$RMP_TMP/flap.out")" 0
	expect_eq "$name: stripes whose replicas differ" \
		"$(awk -v n="$name" '$1 == "lease" && $2 == n && $3 == "whole" \
			{ print $6 }' "$RMP_TMP/flap.out")" 0
done
echo "slowest call: $slowest ms"
cluster_down
rmp_done

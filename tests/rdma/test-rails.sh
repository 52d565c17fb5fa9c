#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One node's two rails used together (rmp_client_connect "A1,A2"): a
# 64 MiB lease written and read in one call each, over both rails (each
# more than 30 % of the bytes), the bytes right; then 10 s of checked
# 8 MiB writes and reads while rail 1's interface goes down (at 3 s) and
# up (at 6 s): no call fails, rail 1 moves nothing while down and moves
# bytes again once back. Needs root in the VM (ip link); skipped without
# a second device.
source "$(dirname "$0")/lib.sh"

rmp_init rails "$1"
if [ -z "${RMP_TEST_ADDR2:-}" ]; then
	echo "no second RDMA device (RMP_TEST_ADDR2): skipped"
	exit 77
fi
RAILS=$RMP_BUILD_ROOT/tests/rdma/rmp-rails
D2=${RMP_TEST_DEV2:-rxe1}
NETDEV2=$(cat "/sys/class/infiniband/$D2/parent" 2>/dev/null) ||
	NETDEV2=$(rdma link show "$D2/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
[ -n "$NETDEV2" ] || rmp_fail "no netdev under $D2"
if [ -z "${RMP_IN_VM:-}" ] || [ "$(id -u)" != 0 ]; then
	echo "takes $NETDEV2 down: only as root in the VM: skipped"
	exit 77
fi
trap 'ip link set "$NETDEV2" up; rmp_cleanup' EXIT
rmp_conf server listen "$RMP_TEST_ADDR, $RMP_TEST_ADDR2"
rmp_conf pool size 72M
daemon_start

echo "== 64 MiB over both rails"
"$RAILS" "$RMP_TEST_ADDR,$RMP_TEST_ADDR2" "$RMP_PORT" both ||
	rmp_fail "64 MiB over both rails"

echo "== rmpool -s A1,A2:PORT: write and read over both rails"
on2() { "$RMPOOL" -s "$RMP_TEST_ADDR,$RMP_TEST_ADDR2:$RMP_PORT" "$@"; }
tok=$(on2 alloc 8M --ttl 600) || rmp_fail "rmpool alloc over two rails"
case $tok in *"//$RMP_TEST_ADDR:"*) ;; *) rmp_fail "the token names rail 0";; esac
head -c 6000000 /dev/urandom >"$RMP_TMP/in"
on2 write "$tok" <"$RMP_TMP/in" || rmp_fail "rmpool write over two rails"
on2 read --length 6000000 "$tok" >"$RMP_TMP/out" ||
	rmp_fail "rmpool read over two rails"
cmp "$RMP_TMP/in" "$RMP_TMP/out" || rmp_fail "rmpool read the bytes written"
on2 free "$tok" || rmp_fail "rmpool free over two rails"

echo "== 10 s of 8 MiB calls, $NETDEV2 down at 3 s, up at 6 s"
"$RAILS" "$RMP_TEST_ADDR,$RMP_TEST_ADDR2" "$RMP_PORT" flap "$NETDEV2" 10 3 6 ||
	rmp_fail "rails through a link flap"
rmp_done

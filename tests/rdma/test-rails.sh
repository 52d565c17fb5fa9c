#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One node's two rails used together (rmp_client_connect "A1,A2"): a
# 64 MiB lease written and read in one call each, over both rails (each
# more than 30 % of the bytes), the bytes right; then 10 s of checked
# 8 MiB writes and reads while rail 1's interface goes down (at 3 s) and
# up (at 6 s): no call fails, rail 1 moves nothing while down and moves
# bytes again once back; a rail no device reaches, and one with no
# server, are skipped with a message naming the device and the address;
# a cluster client (-C) opens both rails from the node's etcd record.
# Needs root in the VM (ip link); skipped without
# a second device.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"

rmp_init rails "$1"
if [ -z "${RMP_TEST_ADDR2:-}" ]; then
	echo "no second RDMA device (RMP_TEST_ADDR2): skipped"
	exit 77
fi
RAILS=$RMP_BUILD_ROOT/tests/rdma/rmp-rails
D1=${RMP_TEST_DEV:-rxe0}
D2=${RMP_TEST_DEV2:-rxe1}
NETDEV2=$(cat "/sys/class/infiniband/$D2/parent" 2>/dev/null) ||
	NETDEV2=$(rdma link show "$D2/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
[ -n "$NETDEV2" ] || rmp_fail "no netdev under $D2"
if [ -z "${RMP_IN_VM:-}" ] || [ "$(id -u)" != 0 ]; then
	echo "takes $NETDEV2 down: only as root in the VM: skipped"
	exit 77
fi
rmp_at_exit 'ip link set "$NETDEV2" up'
py_start
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

echo "== rails that cannot be used are skipped, with the local device and the address named"
# skipped RAIL1 WANT -- rmpool over RMP_TEST_ADDR and RAIL1 allocates
# (rail 0 carries it) and says on stderr that rail 1 is skipped: WANT.
skipped() {
	local tok
	tok=$("$RMPOOL" -s "$RMP_TEST_ADDR,$1:$RMP_PORT" alloc 1M --ttl 60 \
		2>"$RMP_TMP/skip.err") || rmp_fail "alloc with rail 1 at $1"
	cat "$RMP_TMP/skip.err"
	grep -qF "rail 1 ($1) skipped: $2" "$RMP_TMP/skip.err" ||
		rmp_fail "no message 'rail 1 ($1) skipped: $2'"
	"$RMPOOL" -s "$RMP_TEST_ADDR:$RMP_PORT" free "$tok" || rmp_fail "free"
}
# 203.0.113.9 (TEST-NET-3): no local RDMA device has a route to it.
skipped 203.0.113.9 "no local RDMA device reaches 203.0.113.9 port $RMP_PORT: "
# A daemon on the first address only: rail 1's device reaches its
# address, where no rmpoold listens.
daemon_stop
rmp_conf server listen "$RMP_TEST_ADDR"
daemon_start
skipped "$RMP_TEST_ADDR2" "$D2: connect to $RMP_TEST_ADDR2 port $RMP_PORT failed: no rmpool server listening"

echo "== a cluster client takes the node's rails from its record's devices"
daemon_stop
etcd_start
rmp_conf server listen "$RMP_TEST_ADDR, $RMP_TEST_ADDR2"
rmp_conf cluster etcd "$EURL"
rmp_conf cluster node railnode
daemon_start
cl_wait_state 1 registered 30 || rmp_fail "the node did not register"
etcd_get /rmpool/nodes/railnode | jget '" ".join(x["addr"] for x in d["devices"])'
# An ephemeral lease placed by the cluster holds its connection until
# its standard input ends: meanwhile both devices have a client.
mkfifo "$RMP_TMP/hold"
"$RMPOOL" -C "$EURL" alloc 1M --ephemeral <"$RMP_TMP/hold" >"$RMP_TMP/ctok" &
holder=$!
exec 7>"$RMP_TMP/hold"
for _ in $(seq 1 100); do
	[ -s "$RMP_TMP/ctok" ] && break
	sleep 0.1
done
[ -s "$RMP_TMP/ctok" ] || rmp_fail "no lease from the cluster"
ctl_json st status
got=$(jget '" ".join("%s:%s" % (x["name"], x["clients"]) for x in d["devices"])' <<<"$st")
expect_eq "clients per device while the cluster client holds its lease" \
	"$got" "$D1:1 $D2:1"
exec 7>&-
wait "$holder" || rmp_fail "the cluster client's ephemeral lease"
daemon_stop
etcd_stop
rmp_done

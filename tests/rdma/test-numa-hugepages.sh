#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pool sits on the device's NUMA node and on hugepages (numa_maps of
# the running daemon). Too few free hugepages: `required` exits non-zero
# naming count, size, node and sysfs file; `preferred` starts and warns.
source "$(dirname "$0")/lib.sh"
rmp_init numa-hugepages "$1"
# In the VM the NIC hangs off node 1; on a host say which node to expect.
node=${RMP_EXPECT_NODE:-}
[ -z "$node" ] && [ -n "${RMP_IN_VM:-}" ] && node=1
daemon_start

maps=/proc/$RMP_DPID/numa_maps
line=$(grep -E ' huge .*kernelpagesize_kB=2048' "$maps" | head -n 1)
echo "pool mapping: $line"
[ -n "$line" ] || rmp_fail "no hugepage mapping in $maps"
if [ -n "$node" ]; then
	echo "$line" | grep -qE "(^| )N$node=[0-9]+( |$)" ||
		rmp_fail "pool pages are not on node $node"
	echo "$line" | grep -qE " N[^$node]=" &&
		rmp_fail "pool pages on another node too"
	echo "$line" | grep -q "bind:$node" ||
		rmp_fail "pool is not bound to node $node"
fi
daemon_stop

# One page more than the node has free.
node_used=${node:-0}
hp=/sys/devices/system/node/node$node_used/hugepages/hugepages-2048kB
free=$(cat "$hp/free_hugepages")
size=$(((free + 1) * 2))M
rmp_conf pool size "$size"
rmp_conf pool numa_node "$node_used"
if "$RMPOOLD" -c "$RMP_CONF" >"$RMP_DLOG" 2>&1; then
	rmp_fail "rmpoold started without enough hugepages"
fi
cat "$RMP_DLOG"
daemon_log_has "needs $((free + 1)) hugepages of 2048 kB on NUMA node $node_used" ||
	rmp_fail "message does not name count, size and node"
daemon_log_has "$hp/nr_hugepages" || rmp_fail "message does not name the sysfs file"

rmp_conf pool hugepages preferred
daemon_start
daemon_log_has "warning: .*falling back to normal pages" ||
	rmp_fail "no warning about the fallback"
check rmpool stat >/dev/null
daemon_stop
rmp_pass

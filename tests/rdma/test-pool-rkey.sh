#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-pool-rkey.sh PORT MODE -- the pool MR's own key, as the kernel
# reports it, reaches no lease (lease_keys = MODE: window or region); in
# pool mode, the negative control, the same attack works.
#
# A holder (rmp-raw hold) writes a pattern into its lease. The test reads
# the daemon's MRs from the kernel (`rdma res show mr`, as root), picks
# the one of the pool's length and takes its rkey, or its lkey where the
# kernel reports rkey 0 (an MR without remote rights; on rxe rkey == lkey
# when remote access is granted). rmp-raw steal then READs, WRITEs, FAAs
# and CASes the holder's lease through that key, each from a connection
# of its own: window and region must refuse all four and the holder's
# bytes stay intact; pool must let all four through (and the holder then
# sees its bytes changed), and the daemon must warn that every client can
# reach every lease.
# Also: the lease's address is none of rmpoold's virtual addresses.
source "$(dirname "$0")/lib.sh"

mode=${2:-}
case $mode in
window | region | pool) ;;
*) echo "usage: $0 PORT window|region|pool" >&2; exit 2 ;;
esac
rmp_init "pool-rkey-$mode" "$1"
rmp_conf lease lease_keys "$mode"
pool_bytes=$((16 << 20))
rmp_conf pool size 16M

command -v rdma >/dev/null || rmp_fail "no rdma tool (iproute2) to list MRs"
if [ "$(id -u)" -ne 0 ]; then
	echo "the kernel shows MR keys to root only (CAP_NET_ADMIN)" >&2
	exit 77
fi

daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"

hold_start

# A lease's address tells a client nothing of where the pool lies in
# rmpoold: the pool is registered at a random address of its own, so the
# lease's address lies in none of the daemon's mappings (the steal below
# uses that address, so in pool mode it also shows the NIC takes it).
addr=$((HOLD_ADDR))
while read -r range _; do
	lo=$((16#${range%-*}))
	hi=$((16#${range#*-}))
	if [ "$addr" -ge "$lo" ] && [ "$addr" -lt "$hi" ]; then
		fail_later "the lease's address $HOLD_ADDR is inside rmpoold's mapping $range: a lease shows where the pool lies"
	fi
done </proc/"$RMP_DPID"/maps

# The pool MR as the kernel sees it: rmpoold's MR of the pool's length.
#   dev rxe0 mrn 0 rkey 0x25b lkey 0x25b mrlen 16777216 pdn 2 pid 163 ...
rdma res show mr >"$RMP_TMP/mr.txt" || rmp_fail "rdma res show mr failed"
echo "MRs of rmpoold (pid $RMP_DPID), from 'rdma res show mr':"
grep -E " pid $RMP_DPID( |$)" "$RMP_TMP/mr.txt" | sed 's/^/  /'
mr=$(awk -v pid="$RMP_DPID" -v len="$pool_bytes" '{
	split("", f)
	for (i = 1; i < NF; i++) f[$i] = $(i + 1)
	if (f["pid"] == pid && f["mrlen"] == len) { print; exit }
}' "$RMP_TMP/mr.txt")
[ -n "$mr" ] || rmp_fail "no MR of $pool_bytes bytes of pid $RMP_DPID"
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<<"$mr"; }
mr_rkey=$(field rkey)
mr_lkey=$(field lkey)
if [ -n "$mr_rkey" ] && [ $((mr_rkey)) -ne 0 ]; then
	key=$mr_rkey
	why="its rkey: the MR grants remote access"
else
	key=$mr_lkey
	why="its lkey: rkey ${mr_rkey:-not shown}, the MR grants no remote access"
fi
[ -n "$key" ] || rmp_fail "the pool MR line shows no keys: $mr"
echo "pool MR: $mr"
echo "attacking with key $key ($why)"

if [ "$mode" = pool ]; then
	# Clients get the pool MR's own key: the lookup found the right MR.
	[ $((HOLD_RKEY)) -eq $((key)) ] ||
		fail_later "pool mode: the lease's rkey $HOLD_RKEY is not the pool MR's key $key"
else
	[ $((HOLD_RKEY)) -ne $((key)) ] ||
		fail_later "lease_keys=$mode hands out the pool MR's key $key"
fi

steal=(steal "$HOLD_ADDR" "$key" "$HOLD_LEN")
[ "$mode" = pool ] && steal+=(--expect-success)
steal_rc=0
rmp_raw "${steal[@]}" || steal_rc=$?
hold_rc=0
hold_stop || hold_rc=$?

if [ "$mode" = pool ]; then
	[ "$steal_rc" -eq 0 ] ||
		fail_later "negative control: the pool key did not reach the lease (steal exit $steal_rc): this test's technique is broken"
	# The stolen WRITE and atomics changed the holder's bytes, and the
	# holder's own check saw it: the check that guards the other modes.
	[ "$hold_rc" -ne 0 ] && grep -q "lease bytes CHANGED" "$RMP_TMP/hold.log" ||
		fail_later "negative control: the holder did not see its bytes changed (hold exit $hold_rc)"
	daemon_log_has "every client can reach every lease" ||
		fail_later "no warning 'every client can reach every lease' in the daemon log"
else
	[ "$steal_rc" -eq 0 ] ||
		fail_later "lease_keys=$mode: the pool MR's key $key reached a lease (steal exit $steal_rc)"
	[ "$hold_rc" -eq 0 ] ||
		fail_later "the holder's lease was changed or lost (hold exit $hold_rc)"
fi

daemon_stop
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One rmpoold, two RDMA devices (the VM's rxe0 on NUMA node 1, rxe1 on
# node 0, rxe1's netdev with two more addresses, one IPv6): a pool per
# device on the device's node (status, numa_maps); a lease lands in the
# pool of the device its ALLOC came in on (through any of its addresses),
# spills to the other only when asked; a lease of one pool is read and
# written through the other device, its keys on both devices revoked by a
# FREE and by its expiry; a restart with a state file brings every lease
# back in its own pool with its bytes (the first device's from the file a
# daemon of one device left).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"

rmp_init multi-nic "$1"
if [ -z "${RMP_TEST_ADDR2:-}" ]; then
	echo "no second RDMA device (RMP_TEST_ADDR2): skipped"
	exit 77
fi
A1=$RMP_TEST_ADDR A2=$RMP_TEST_ADDR2
D1=${RMP_TEST_DEV:-rxe0} D2=${RMP_TEST_DEV2:-rxe1}
# Where the VM puts them; on a host say so (RMP_EXPECT_NODE1/2).
N1=${RMP_EXPECT_NODE1:-1} N2=${RMP_EXPECT_NODE2:-0}
STATE=/dev/hugepages/rmp-multi-nic-$RMP_PORT
rmp_at_exit 'rm -rf "$STATE"'
rm -rf "$STATE"
py_start
# A device with several addresses, IPv4 and IPv6: each is served, through
# the GID of its own address.
A3=198.51.100.101 A4=2001:db8:51::1
rmp_add_addrs_on "$A2" "$A3/24" "$A4/64"
rmp_conf server listen "$A1, $A2, $A3, $A4"
rmp_conf server drain_timeout 2s
sed -i "s|^\[pool\]$|[pool]\nstate_dir = $STATE\nmax_leases = 64|" "$RMP_CONF"
daemon_start
daemon_log_has "device\(s\) $D1 \(NUMA node $N1\), $D2 \(NUMA node $N2\)" ||
	rmp_fail "the start does not name both devices and their nodes"

on() {
	case $1 in
	*:*) "$RMPOOL" -s "[$1]:$RMP_PORT" "${@:2}" ;;
	*) "$RMPOOL" -s "$1:$RMP_PORT" "${@:2}" ;;
	esac
}
# lease_dev TOKEN -- "DEVICE NODE SPILLED" of the lease, from rmpoolctl.
lease_dev() {
	local id=${1##*/}
	ctl --json show "${id%%-*}" |
		jget '"%s %s %s" % (d["lease"]["device"], d["lease"]["numa_node"], str(d["lease"]["spilled"]).lower())'
}

echo "== status names both devices, each with its pool on its node"
ctl_json st status
got=$(jget '" ".join("%s:%s:%s" % (x["name"], x["numa_node"], x["pool_bytes"]) for x in d["devices"])' <<<"$st")
expect_eq "devices" "$got" "$D1:$N1:16777216 $D2:$N2:16777216"
expect_eq "pool bytes (both)" "$(jget 'd["pool_bytes"]' <<<"$st")" 33554432
for f in "$D1:$N1" "$D2:$N2"; do
	line=$(grep -F "pool-${f%%:*}" "/proc/$RMP_DPID/numa_maps" | head -n 1)
	echo "${f%%:*}: $line"
	[ -n "$line" ] || rmp_fail "no mapping of ${f%%:*}'s pool in numa_maps"
	echo "$line" | grep -qE " N${f#*:}=[0-9]+" ||
		fail_later "${f%%:*}'s pool pages are not on node ${f#*:}"
	echo "$line" | grep -qE " N[^${f#*:}]=" &&
		fail_later "${f%%:*}'s pool has pages on another node"
done

echo "== a lease lands in the pool of the device its ALLOC came in on"
t1=$(on "$A1" alloc 1M --ttl 600) || rmp_fail "alloc through $D1"
t2=$(on "$A2" alloc 1M --ttl 600) || rmp_fail "alloc through $D2"
expect_eq "lease through $D1" "$(lease_dev "$t1")" "$D1 $N1 false"
expect_eq "lease through $D2" "$(lease_dev "$t2")" "$D2 $N2 false"
for a in "$A3" "$A4"; do
	t=$(on "$a" alloc 64K --ttl 600) || rmp_fail "alloc through $a"
	expect_eq "lease through $a" "$(lease_dev "$t")" "$D2 $N2 false"
	on "$a" write "$t" <<<"through $a" || fail_later "write through $a"
	expect_eq "read through $a" \
		"$(on "$a" read "$t" --length $((${#a} + 9)))" "through $a"
	on "$a" free "$t" || fail_later "free through $a"
done

echo "== a lease of $D1's pool, written and read through $D2"
head -c 1048576 /dev/urandom >"$RMP_TMP/data"
on "$A2" write "$t1" <"$RMP_TMP/data" || rmp_fail "write through $D2"
on "$A1" read "$t1" >"$RMP_TMP/back1" || rmp_fail "read through $D1"
on "$A2" read "$t1" >"$RMP_TMP/back2" || rmp_fail "read through $D2"
cmp "$RMP_TMP/data" "$RMP_TMP/back1" || fail_later "$D1 read other bytes"
cmp "$RMP_TMP/data" "$RMP_TMP/back2" || fail_later "$D2 read other bytes"

echo "== full pool: -ENOSPC, unless the ALLOC may spill"
t3=$(on "$A2" alloc 15M --ttl 600) || rmp_fail "filling $D2's pool"
if on "$A2" alloc 1M --ttl 600 2>"$RMP_TMP/err"; then
	fail_later "an ALLOC beyond $D2's pool was granted without --spill"
fi
grep -q "not enough space" "$RMP_TMP/err" ||
	fail_later "a full pool said: $(cat "$RMP_TMP/err")"
js=$(on "$A2" alloc 1M --ttl 600 --spill --json) ||
	rmp_fail "an ALLOC with --spill was refused"
t4=$(jget 'd["token"]' <<<"$js")
expect_eq "spilled (reply)" "$(jget 'd["spilled"]' <<<"$js")" true
expect_eq "spilled lease" "$(lease_dev "$t4")" "$D1 $N1 true"
on "$A2" free "$t3" || rmp_fail "free"

echo "== keys through both devices: a FREE and an expiry revoke both"
# readloop fails at the first error: each reader must end with one.
reader() {
	"$RMP_TESTBIN" readloop "$1" "$RMP_PORT" "$2" 30 \
		>"$RMP_TMP/$3.out" 2>"$RMP_TMP/$3.err" &
	eval "$3=\$!"
	for _ in $(seq 1 100); do
		file_match "$RMP_TMP/$3.out" ATTACHED && return 0
		sleep 0.1
	done
	rmp_fail "reader $3 did not attach: $(cat "$RMP_TMP/$3.err")"
}
# reader_ended NAME -- it stopped within 10 s on the server's refusal of
# its key (not the library's own view of the deadline).
reader_ended() {
	local pid=${!1} i
	for ((i = 0; i < 100; i++)); do
		pid_running "$pid" || break
		sleep 0.1
	done
	if pid_running "$pid"; then
		kill "$pid"
		fail_later "reader $1 still reads through a revoked key"
		return
	fi
	wait "$pid" && fail_later "reader $1 ended without an error"
	echo "reader $1: $(tail -n 1 "$RMP_TMP/$1.err")"
	grep -q "remote access error" "$RMP_TMP/$1.err" ||
		fail_later "reader $1 was not refused by the server"
}
lease_id() { local t=${1##*/}; echo "${t%%-*}"; }
reader "$A1" "$t1" r1
reader "$A2" "$t1" r2
expect_eq "holders of the lease" \
	"$(ctl --json show "$(lease_id "$t1")" | jget 'd["lease"]["keys"]')" 2
on "$A1" free "$t1" || rmp_fail "free"
reader_ended r1
reader_ended r2
# The holders think the lease has 10 minutes; the server's deadline,
# moved to 2 s from now, ends it: both keys must die at the NICs.
t5=$(on "$A1" alloc 64K --ttl 600) || rmp_fail "alloc"
reader "$A1" "$t5" r1
reader "$A2" "$t5" r2
ctl extend "$(lease_id "$t5")" 2s || rmp_fail "rmpoolctl extend"
reader_ended r1
reader_ended r2
daemon_log_has "audit: expire .*lease=$(lease_id "$t5")" ||
	fail_later "the lease did not end by expiry"

echo "== a restart keeps each lease in its own pool, with its bytes"
head -c 65536 /dev/urandom >"$RMP_TMP/data2"
on "$A2" write "$t2" <"$RMP_TMP/data2" || rmp_fail "write"
daemon_stop
# The first device takes over the state file of a daemon of one device.
mv "$STATE/pool-$D1" "$STATE/pool"
daemon_start
daemon_log_has "state file $STATE/pool is now $STATE/pool-$D1" ||
	fail_later "the state file of one device was not taken over"
daemon_log_has "$D1's pool: recovered 1 lease\(s\)" ||
	fail_later "$D1's pool did not recover its lease"
daemon_log_has "$D2's pool: recovered 1 lease\(s\)" ||
	fail_later "$D2's pool did not recover its lease"
expect_eq "lease of $D2 after the restart" "$(lease_dev "$t2")" "$D2 $N2 false"
# (where it spilled from is not journaled: an older rmpoold would refuse
# the record)
expect_eq "lease spilled to $D1 after the restart" "$(lease_dev "$t4")" \
	"$D1 $N1 false"
on "$A1" read "$t2" --length 65536 >"$RMP_TMP/back3" || rmp_fail "read"
cmp "$RMP_TMP/data2" "$RMP_TMP/back3" ||
	fail_later "the lease's bytes changed over the restart"
ls "$STATE"
[ -e "$STATE/pool-$D1" ] && [ -e "$STATE/pool-$D2" ] ||
	fail_later "no state file per device in $STATE"
daemon_stop
rmp_done

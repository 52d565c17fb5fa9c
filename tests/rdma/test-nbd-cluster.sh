#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-nbd-cluster.sh PORT -- a cluster lease as a block device, a node
# lost while a file system is written on it. An etcd and three daemons
# (lib-cluster.sh), nbdkit with the rmpool plugin on /dev/nbd1:
#  - a 2+1 erasure-coded lease of 64 MiB (a member on each node): ext4
#    made, 40 files written, each fsynced, and the daemon of data
#    member 0 SIGKILLed once 15 are written. Every write returns, the
#    kernel logs no I/O error on the device, fsck -n is clean and, the
#    caches dropped, every file reads back (decoded around the lost
#    member) as written;
#  - then, that node gone from etcd, a lease of 64 MiB mirrored on the
#    two nodes left, nbdkit's memory locked (mlock=true): first swap,
#    the lease the only swap device and a process in a cgroup of
#    memory.max 8M writing 24 MiB word by word and reading every word
#    back (rmp-swap-touch); pswpout and pswpin must each grow by the 16
#    MiB that cannot fit, and the plugin's count of bytes written to
#    the lease and read from it, logged at its end, must cover them.
#    Then ext4 as above, with one replica's daemon SIGKILLed.
# nbdkit renews each lease meanwhile and keeps serving it: nothing in
# its log says the lease was lost, and it exits 0. The plain build only
# (meson.build says why); test nbd runs the plugin under ASan.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init nbd-cluster "$1"
py_start
NBD_DEV=/dev/nbd1
source "$(dirname "$0")/lib-nbd.sh"
for i in 1 2 3; do
	CL_POOL[$i]=80M
done
# more than the VM reserves in hugepages: normal pages
CL_CONF=$(printf '[pool]\nhugepages = preferred')
cluster_up
CLUSTER=etcd://${EURL#http://}

DEAD=()

# io_errors -- the kernel's count of I/O errors on NBD_DEV so far
io_errors() {
	dmesg | grep -c "I/O error, dev ${NBD_DEV#/dev/},"
}

# vmstat NAME -- the kernel's counter NAME (/proc/vmstat)
vmstat() {
	awk -v n="$1" '$1 == n { print $2 }' /proc/vmstat
}

# swap_on_lease -- the lease nbdkit serves as the only swap device; a
# process in a cgroup of memory.max 8M writes 24 MiB word by word and
# reads every word back (rmp-swap-touch). SWAP_OUT and SWAP_IN: the
# kernel's pages swapped out and in meanwhile. cgroup2 is mounted here
# if the system has not (and unmounted at the end).
SWAP_CG= SWAP_CG_MOUNTED=
swap_on_lease() {
	local cg=/sys/fs/cgroup out0 in0
	if ! grep -q "^[^ ]* $cg cgroup2 " /proc/mounts; then
		mount -t cgroup2 none "$cg" || rmp_fail "mount cgroup2"
		SWAP_CG_MOUNTED=1
	fi
	grep -qw memory "$cg/cgroup.controllers" ||
		rmp_fail "no memory controller in cgroup2"
	echo +memory >"$cg/cgroup.subtree_control" ||
		rmp_fail "the memory controller could not be enabled"
	SWAP_CG=$cg/rmpool-nbd-swap
	mkdir -p "$SWAP_CG"
	echo 8M >"$SWAP_CG/memory.max"
	nbd_attach -swap
	mkswap "$NBD_DEV" >/dev/null || rmp_fail "mkswap $NBD_DEV"
	swapon "$NBD_DEV" || rmp_fail "swapon $NBD_DEV"
	[ "$(swapon --noheadings --show=NAME)" = "$NBD_DEV" ] ||
		fail_later "swap is not $NBD_DEV alone: $(swapon --show)"
	out0=$(vmstat pswpout) in0=$(vmstat pswpin)
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 24' _ "$SWAP_CG" \
		"$RMP_BUILD_ROOT/tests/rdma/rmp-swap-touch" >"$RMP_TMP/swap.out" ||
		fail_later "the working set in swap differs: $(cat "$RMP_TMP/swap.out")"
	SWAP_OUT=$(($(vmstat pswpout) - out0)) SWAP_IN=$(($(vmstat pswpin) - in0))
	cat "$RMP_TMP/swap.out" >&2
	swapoff "$NBD_DEV" || rmp_fail "swapoff $NBD_DEV"
	timeout 60 nbd-client -d "$NBD_DEV" >/dev/null 2>&1
	cleanup_swap
	# 24 MiB through 8 MiB: at least 16 MiB (4096 pages) went out and
	# came back
	[ "$SWAP_OUT" -ge 4096 ] ||
		fail_later "pswpout grew by $SWAP_OUT pages, not 4096"
	[ "$SWAP_IN" -ge 4096 ] ||
		fail_later "pswpin grew by $SWAP_IN pages, not 4096"
}
# cleanup_swap -- the cgroup removed, the mount as it was
cleanup_swap() {
	[ -z "$SWAP_CG" ] || rmdir "$SWAP_CG" 2>/dev/null
	SWAP_CG=
	[ -z "$SWAP_CG_MOUNTED" ] || umount /sys/fs/cgroup 2>/dev/null
	SWAP_CG_MOUNTED=
}
rmp_at_exit cleanup_swap

# lose_a_node_while_writing WHAT MEMBER -- on the lease nbdkit serves:
# ext4 and 40 fsynced files, the daemon of MEMBER SIGKILLed once 15
# are written; then every file checked. Sets KILLED to that daemon.
lose_a_node_while_writing() {
	local what=$1 member=$2 token writer errs0 n
	token=$(cat "$RMP_TMP/token")
	KILLED=$(cl_member_daemon "$token" "$member") ||
		rmp_fail "$what: which daemon holds member $member"
	errs0=$(io_errors)
	nbd_attach
	echo "nbd-cluster: ${SECONDS}s: $what: writing" >&2
	fs_fill 40 fsync 2>"$RMP_TMP/fill.err" &
	writer=$!
	for _ in $(seq 1 1200); do
		n=$(find "$MNT" -maxdepth 1 -name 'f*' 2>/dev/null | wc -l)
		[ "$n" -ge 15 ] && break
		pid_running "$writer" || break
		sleep 0.1
	done
	[ "${n:-0}" -ge 15 ] || rmp_fail "$what: 15 files were not written"
	# the kill must land while files are still being written
	pid_running "$writer" ||
		rmp_fail "$what: every file was written before the kill"
	echo "nbd-cluster: ${SECONDS}s: $what: SIGKILL to daemon $KILLED (member $member)" >&2
	on_daemon "$KILLED" eval 'kill -KILL $RMP_DPID'
	DEAD[KILLED]=1
	on_daemon "$KILLED" daemon_wait_exit 10 ||
		rmp_fail "daemon $KILLED outlived SIGKILL"
	wait "$writer" ||
		fail_later "$what: a write failed with member $member's node lost: $(cat "$RMP_TMP/fill.err")"
	echo "nbd-cluster: ${SECONDS}s: $what: files written" >&2
	fs_verify "$what, member $member lost"
	expect_eq "$what: I/O errors on $NBD_DEV" "$(io_errors)" "$errs0"
	timeout 60 nbd-client -d "$NBD_DEV" >/dev/null 2>&1 ||
		fail_later "$what: nbd-client -d did not end in 60 s"
	grep "rmpool: the lease is lost" "$NBD_LOG" &&
		fail_later "$what: nbdkit gave the lease up"
	# what the plugin saw of the loss: requests it made again
	grep -E "rmpool: .*(trying again|renewing)" "$NBD_LOG" | head -n 5 >&2
	nbd_stop
	[ "$NBD_RC" = 0 ] || fail_later "$what: nbdkit exited with $NBD_RC"
}

nbd_start "$RMP_TMP/ec.log" cluster="$CLUSTER" size=64M ec=2+1 \
	save-token="$RMP_TMP/token"
lose_a_node_while_writing "erasure coded 2+1" 0

# The killed node's registration ends with its etcd lease (CL_TTL):
# until then a new lease could be placed on it.
for _ in $(seq 1 300); do
	etcd_keys /rmpool/nodes/ && [ "$ETCD_KEYS" = 2 ] && break
	sleep 0.1
done
expect_eq "nodes registered after the kill" "$ETCD_KEYS" 2
nbd_start "$RMP_TMP/mirror.log" cluster="$CLUSTER" size=64M replicas=2 \
	save-token="$RMP_TMP/token" mlock=true
echo "nbd-cluster: ${SECONDS}s: mirrored on 2: swap" >&2
swap_on_lease
lose_a_node_while_writing "mirrored on 2" 1
# every page the kernel swapped out reached the lease, and every page it
# swapped in came from there (the file system's bytes come on top)
nbd_bytes "$NBD_LOG"
[ "$NBD_WROTE" -ge $((SWAP_OUT * 4096)) ] ||
	fail_later "the lease took $NBD_WROTE bytes; the kernel swapped out $((SWAP_OUT * 4096))"
[ "$NBD_READ" -ge $((SWAP_IN * 4096)) ] ||
	fail_later "the lease gave $NBD_READ bytes; the kernel swapped in $((SWAP_IN * 4096))"
echo "nbd-cluster: swap: $SWAP_OUT pages out and $SWAP_IN in; the lease" \
	"took $NBD_WROTE bytes and gave $NBD_READ" >&2
for i in 1 2 3; do
	[ -n "${DEAD[i]:-}" ] || on_daemon "$i" daemon_stop
done
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-nbd-cluster.sh PORT -- a cluster lease as a block device, a node
# lost while a file system is written on it. An etcd and three daemons
# (lib-cluster.sh), nbdkit with the rmpool plugin on /dev/nbd1:
#  - a 2+1 erasure-coded lease of 64 MiB (a member on each node): ext4
#    made, 100 files written, each fsynced, and the daemon of data
#    member 0 SIGKILLed once 30 are written. Every write returns, the
#    kernel logs no I/O error on the device, fsck -n is clean and, the
#    caches dropped, every file reads back (decoded around the lost
#    member) as written;
#  - then, that node gone from etcd, a lease of 64 MiB mirrored on the
#    two nodes left, the same, with one replica's daemon SIGKILLed.
# nbdkit renews each lease meanwhile and keeps serving it: nothing in
# its log says the lease was lost. The plain build only (meson.build
# says why).
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
	dmesg | grep -c "I/O error, dev ${NBD_DEV#/dev/}"
}

# lose_a_node_while_writing WHAT MEMBER -- on the lease nbdkit serves:
# ext4 and 100 fsynced files, the daemon of MEMBER SIGKILLed once 30
# are written; then every file checked. Sets KILLED to that daemon.
lose_a_node_while_writing() {
	local what=$1 member=$2 token writer errs0 n
	token=$(cat "$RMP_TMP/token")
	KILLED=$(cl_member_daemon "$token" "$member") ||
		rmp_fail "$what: which daemon holds member $member"
	errs0=$(io_errors)
	nbd_attach
	echo "nbd-cluster: ${SECONDS}s: $what: writing" >&2
	fs_fill 100 fsync 2>"$RMP_TMP/fill.err" &
	writer=$!
	for _ in $(seq 1 1200); do
		n=$(find "$MNT" -maxdepth 1 -name 'f*' 2>/dev/null | wc -l)
		[ "$n" -ge 30 ] && break
		pid_running "$writer" || break
		sleep 0.1
	done
	[ "${n:-0}" -ge 30 ] || rmp_fail "$what: 30 files were not written"
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
	save-token="$RMP_TMP/token"
lose_a_node_while_writing "mirrored on 2" 1
for i in 1 2 3; do
	[ -n "${DEAD[i]:-}" ] || on_daemon "$i" daemon_stop
done
rmp_done

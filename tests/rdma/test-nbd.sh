#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-nbd.sh PORT -- a lease as a block device: nbdkit with the rmpool
# plugin over a new 256 MiB lease of this test's daemon, the kernel's
# NBD client on /dev/nbd0, ext4 made and mounted on it, 100 files of
# random sizes written and synced, unmounted, fsck -n clean, mounted
# again and every checksum the same; nbdkit stopped frees the lease.
# Bad input: a token of no lease, of an expired lease, or of another
# tenant's lease makes nbdkit exit with the library's words; a lease
# freed under a mounted file system turns its requests into I/O errors
# that nbdkit's log explains (never zeros), and nbdkit keeps running.
# Swap (the plain pass: the plugin as shipped; the sanitized pass has
# run the same callbacks): a new 128 MiB lease as the only swap device,
# nbdkit's memory locked (mlock=true), a process in a cgroup with
# memory.max 16M writes 48 MiB word by word and reads every word back
# (rmp-swap-touch); the kernel's pswpout says the pages went out, the
# plugin's count of bytes written to the lease that they went there.
source "$(dirname "$0")/lib.sh"

rmp_init nbd "$1"
rmp_conf pool size 320M
# more than the VM reserves in hugepages (64 of 2 MiB a node): normal pages
rmp_conf pool hugepages preferred
rmp_conf lease ttl_min 1s
# a second tenant, whose key opens none of tenant test's leases
rmp_keygen "$RMP_TMP/other.key"
printf '[tenant.other]\nkey_file = %s\n' "$RMP_TMP/other.key" >>"$RMP_CONF"
NBD_DEV=/dev/nbd0
source "$(dirname "$0")/lib-nbd.sh"
daemon_start

# swap_case -- a new 128 MiB lease as the only swap device; a process in
# a cgroup of memory.max 16M writes and checks 48 MiB. cgroup2 is
# mounted here if the system has not.
swap_case() {
	local cg=/sys/fs/cgroup me out0 out1 wrote
	grep -q "^[^ ]* $cg cgroup2 " /proc/mounts ||
		mount -t cgroup2 none "$cg" || rmp_fail "mount cgroup2"
	grep -qw memory "$cg/cgroup.controllers" ||
		rmp_fail "no memory controller in cgroup2"
	echo +memory >"$cg/cgroup.subtree_control" ||
		rmp_fail "the memory controller could not be enabled"
	me=$cg/rmpool-nbd-swap
	mkdir -p "$me"
	echo 16M >"$me/memory.max"
	SWAP_CG=$me
	echo "nbd: ${SECONDS}s: swap" >&2
	nbd_start "$RMP_TMP/swap.log" server="$RMP_SERVER" size=128M mlock=true
	nbd_attach -swap
	mkswap /dev/nbd0 >/dev/null || rmp_fail "mkswap /dev/nbd0"
	swapon /dev/nbd0 || rmp_fail "swapon /dev/nbd0"
	[ "$(swapon --noheadings --show=NAME)" = /dev/nbd0 ] ||
		fail_later "swap is not /dev/nbd0 alone: $(swapon --show)"
	out0=$(awk '$1 == "pswpout" { print $2 }' /proc/vmstat)
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 48' _ "$me" \
		"$RMP_BUILD_ROOT/tests/rdma/rmp-swap-touch" >"$RMP_TMP/swap.out" ||
		fail_later "the working set in swap differs: $(cat "$RMP_TMP/swap.out")"
	out1=$(awk '$1 == "pswpout" { print $2 }' /proc/vmstat)
	cat "$RMP_TMP/swap.out" >&2
	swapoff /dev/nbd0 || fail_later "swapoff /dev/nbd0"
	timeout 60 nbd-client -d /dev/nbd0 >/dev/null 2>&1
	nbd_stop
	[ "$NBD_RC" = 0 ] || fail_later "nbdkit (swap) exited with $NBD_RC"
	rmdir "$me"
	SWAP_CG=
	# 48 MiB through 16 MiB: at least 32 MiB (8192 pages) went out,
	# and every page the kernel wrote to swap reached the lease
	[ $((out1 - out0)) -ge 8192 ] ||
		fail_later "pswpout grew by $((out1 - out0)) pages, not 8192"
	wrote=$(sed -nE 's/.*rmpool: ([0-9]+) bytes written to the lease.*/\1/p' \
		"$RMP_TMP/swap.log")
	[ -n "$wrote" ] && [ "$wrote" -ge $(((out1 - out0) * 4096)) ] ||
		fail_later "the lease took ${wrote:-no} bytes; the kernel swapped out $(((out1 - out0) * 4096))"
	echo "nbd: swap: $((out1 - out0)) pages out, the lease took $wrote bytes" >&2
}
SWAP_CG=
cleanup_swap() {
	[ -z "$SWAP_CG" ] || rmdir "$SWAP_CG" 2>/dev/null
}
rmp_at_exit cleanup_swap


rmp_stat || rmp_fail "STAT"
leases0=$STAT_LEASES
# A lease of 1 s, not renewed: expired by the time it is tried below.
"$RMPOOL" -s "$RMP_SERVER" alloc 1M --ttl 1s >"$RMP_TMP/expired" ||
	rmp_fail "rmpool alloc --ttl 1s"
expired_at=$((SECONDS + 2))

# A token of no lease: nbdkit exits, saying why.
printf 'rmp://%s:%s/0000000000000001-0000000000000002\n' "$RMP_TEST_ADDR" "$RMP_PORT" >"$RMP_TMP/bogus"
nbd_refused "a lease of no token" "attaching the lease" \
	token=+"$RMP_TMP/bogus" tenant=test key-file="$RMP_KEY"
while [ "$SECONDS" -lt "$expired_at" ]; do sleep 0.2; done
nbd_refused "an expired lease" "attaching the lease: .*(expired|no such lease)" \
	token=+"$RMP_TMP/expired" tenant=test key-file="$RMP_KEY"

nbd_start "$RMP_TMP/nbdkit.log" server="$RMP_SERVER" size=256M \
	save-token="$RMP_TMP/token"
[ -s "$RMP_TMP/token" ] || rmp_fail "save-token wrote no token"
# Another tenant holding the token: a token is not a key.
nbd_refused "another tenant's lease" "attaching the lease: .*(not permitted|tenant)" \
	token=+"$RMP_TMP/token" tenant=other key-file="$RMP_TMP/other.key"
nbd_attach
[ "$(blockdev --getsize64 /dev/nbd0)" = $((256 << 20)) ] ||
	fail_later "/dev/nbd0 is not 256 MiB: $(blockdev --getsize64 /dev/nbd0)"

echo "nbd: ${SECONDS}s: mkfs, 100 files" >&2
fs_fill 100 || rmp_fail "ext4 and its files on /dev/nbd0"
echo "nbd: ${SECONDS}s: files written" >&2
fs_verify "a single server's lease"

# The lease freed under a mounted file system: reads fail, and nbdkit
# says why; it does not crash, and never answers with zeros.
echo "nbd: ${SECONDS}s: freeing the lease under the mount" >&2
mount /dev/nbd0 "$MNT" || rmp_fail "mount a third time"
echo 3 >/proc/sys/vm/drop_caches
"$RMPOOL" -s "$RMP_SERVER" free --token-file "$RMP_TMP/token" ||
	fail_later "rmpool free of the served lease"
echo "nbd: reading the freed lease" >&2
timeout 60 cat "$MNT/f1" >/dev/null 2>&1 &&
	fail_later "a read of a freed lease succeeded"
pid_running "$NBD_PID" || fail_later "nbdkit died when its lease was freed"
grep -Eq "rmpool: read of .*(revoked|no such lease)" "$RMP_TMP/nbdkit.log" ||
	fail_later "nbdkit's log does not say why the read failed"
echo "nbd: unmounting" >&2
timeout 60 umount -l "$MNT" 2>/dev/null
echo "nbd: disconnecting" >&2
timeout 60 nbd-client -d /dev/nbd0 >/dev/null 2>&1 ||
	fail_later "nbd-client -d did not end in 60 s"
echo "nbd: stopping nbdkit" >&2
nbd_stop
[ "$NBD_RC" = 0 ] || fail_later "nbdkit exited with $NBD_RC"
grep -Eq "rmpool: [0-9]+ bytes written to the lease and [0-9]+ read" "$NBD_LOG" ||
	fail_later "nbdkit's log does not count the lease's bytes"

# Swap, in the plain pass.
if [ -z "$asan" ]; then
	swap_case
fi

rmp_stat || rmp_fail "STAT at the end"
[ "$STAT_LEASES" = "$leases0" ] ||
	fail_later "$STAT_LEASES leases at the end, $leases0 before"
daemon_stop
rmp_done

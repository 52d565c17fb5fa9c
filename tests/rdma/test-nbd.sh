#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-nbd.sh PORT -- a lease as a block device: nbdkit with the rmpool
# plugin over a new 256 MiB lease of this test's daemon, the kernel's
# NBD client on /dev/nbd0, ext4 made and mounted on it, 100 files of
# random sizes written and synced, unmounted, fsck -n clean, mounted
# again and every checksum the same; nbdkit stopped frees the lease.
# Bad input: a token of no lease makes nbdkit exit with the library's
# words, a lease freed under a mounted file system turns its requests
# into I/O errors that nbdkit's log explains (never zeros), and nbdkit
# keeps running.
source "$(dirname "$0")/lib.sh"

rmp_init nbd "$1"
rmp_conf pool size 320M
# more than the VM reserves in hugepages (64 of 2 MiB a node): normal pages
rmp_conf pool hugepages preferred
PLUGIN=$RMP_BUILD_ROOT/client/nbdkit/nbdkit-rmpool-plugin.so
[ -e "$PLUGIN" ] || rmp_fail "no $PLUGIN: build with nbdkit-plugin-dev"
command -v nbdkit >/dev/null || rmp_fail "no nbdkit (Debian nbdkit)"
command -v nbd-client >/dev/null || rmp_fail "no nbd-client"
[ -e /sys/block/nbd0 ] || modprobe nbd 2>/dev/null
[ -e /sys/block/nbd0 ] || rmp_fail "no /dev/nbd0: the nbd module"
daemon_start

# A plugin built with a sanitizer needs its runtime loaded first.
asan=$(ldd "$PLUGIN" 2>/dev/null | awk '$1 ~ /^libasan/ { print $3 }')
NBDKIT_ENV=()
[ -n "$asan" ] && NBDKIT_ENV=("LD_PRELOAD=$asan"
	"ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0")

SOCK=$RMP_TMP/nbd.sock
MNT=$RMP_TMP/mnt
mkdir -p "$MNT"
NBD_PID=

# nbd_start LOG ARGS... -- nbdkit in the foreground on $SOCK with the
# plugin and ARGS (tenant "test"), waited for until the plugin serves
# the lease (nbdkit listens before it, and before its after_fork).
nbd_start() {
	local log=$1
	shift
	rm -f "$SOCK"
	env "${NBDKIT_ENV[@]}" nbdkit -f -v -U "$SOCK" "$PLUGIN" \
		tenant=test key-file="$RMP_KEY" "$@" >"$log" 2>&1 &
	NBD_PID=$!
	for _ in $(seq 1 600); do
		file_match "$log" "rmpool: serving [0-9]+ bytes" && return 0
		pid_running "$NBD_PID" || break
		sleep 0.1
	done
	tail -n 20 "$log" >&2
	rmp_fail "nbdkit did not start ($*)"
}

# nbd_stop -- SIGTERM, waited for: NBD_RC its exit status. nbdkit with
# the sanitizer's runtime preloaded hangs in exit() after the plugin is
# gone (p11-kit's destructor waits on glibc's setlocale lock: seen with
# gdb); that one is killed once the log shows the plugin unloaded. The
# plain pass (suite plain-too) checks nbdkit's own exit.
nbd_stop() {
	[ -n "$NBD_PID" ] || return 0
	kill -TERM "$NBD_PID" 2>/dev/null
	for _ in $(seq 1 300); do
		pid_running "$NBD_PID" || break
		if [ -n "$asan" ] &&
			file_match "$RMP_TMP/nbdkit.log" "debug: rmpool: unload"; then
			sleep 1 # its own exit, when it comes
			kill -KILL "$NBD_PID" 2>/dev/null
			wait "$NBD_PID"
			NBD_RC=0 NBD_PID=
			return 0
		fi
		sleep 0.1
	done
	pid_running "$NBD_PID" && {
		tail -n 30 "$RMP_TMP/nbdkit.log" >&2
		command -v gdb >/dev/null &&
			timeout 60 gdb -p "$NBD_PID" -batch -nx \
				-ex "thread apply all bt" >&2 2>&1
		rmp_fail "nbdkit did not end in 30 s after SIGTERM"
	}
	wait "$NBD_PID"
	NBD_RC=$?
	NBD_PID=
}

cleanup_nbd() {
	umount "$MNT" 2>/dev/null
	nbd-client -d /dev/nbd0 >/dev/null 2>&1
	[ -n "$NBD_PID" ] && kill -KILL "$NBD_PID" 2>/dev/null
}
rmp_at_exit cleanup_nbd

# A token of no lease: nbdkit exits, saying why.
printf 'rmp://%s:%s/0000000000000001-0000000000000002\n' "$RMP_TEST_ADDR" "$RMP_PORT" >"$RMP_TMP/bogus"
env "${NBDKIT_ENV[@]}" nbdkit -f -U "$SOCK.bad" "$PLUGIN" \
	token=+"$RMP_TMP/bogus" tenant=test key-file="$RMP_KEY" \
	>"$RMP_TMP/bad.log" 2>&1 && fail_later "nbdkit served a lease of no token"
grep -q "attaching the lease" "$RMP_TMP/bad.log" ||
	fail_later "nbdkit's exit on a bad token says nothing of the lease: $(tail -n 3 "$RMP_TMP/bad.log")"

rmp_stat || rmp_fail "STAT"
leases0=$STAT_LEASES
nbd_start "$RMP_TMP/nbdkit.log" server="$RMP_SERVER" size=256M \
	save-token="$RMP_TMP/token"
[ -s "$RMP_TMP/token" ] || rmp_fail "save-token wrote no token"
nbd-client -unix "$SOCK" /dev/nbd0 -b 4096 -timeout 60 >/dev/null ||
	rmp_fail "nbd-client could not connect"
[ "$(blockdev --getsize64 /dev/nbd0)" = $((256 << 20)) ] ||
	fail_later "/dev/nbd0 is not 256 MiB: $(blockdev --getsize64 /dev/nbd0)"

echo "nbd: ${SECONDS}s: mkfs" >&2
mkfs.ext4 -q -F /dev/nbd0 || rmp_fail "mkfs.ext4 on /dev/nbd0"
mount /dev/nbd0 "$MNT" || rmp_fail "mount /dev/nbd0"
for i in $(seq 1 100); do
	head -c $((RANDOM * 8 + i)) /dev/urandom >"$MNT/f$i" ||
		rmp_fail "writing file $i"
done
(cd "$MNT" && sha256sum f*) >"$RMP_TMP/sums"
echo "nbd: ${SECONDS}s: files written" >&2
sync
umount "$MNT" || rmp_fail "umount"
echo "nbd: ${SECONDS}s: fsck" >&2
fsck.ext4 -n -f /dev/nbd0 >"$RMP_TMP/fsck.log" 2>&1 ||
	fail_later "fsck -n found errors: $(tail -n 5 "$RMP_TMP/fsck.log")"
# the kernel's cached pages go, so that the next reads cross the wire
echo 3 >/proc/sys/vm/drop_caches
mount /dev/nbd0 "$MNT" || rmp_fail "mount again"
(cd "$MNT" && sha256sum -c --quiet "$RMP_TMP/sums") ||
	fail_later "a file read back differs from what was written"
umount "$MNT"

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
rmp_stat || rmp_fail "STAT at the end"
[ "$STAT_LEASES" = "$leases0" ] ||
	fail_later "$STAT_LEASES leases at the end, $leases0 before"
daemon_stop
rmp_done

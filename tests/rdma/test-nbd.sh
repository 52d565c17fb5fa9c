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
# The daemon restarted (its leases kept in state_dir) under the mounted
# file system: reads made while it is down wait and succeed.
# The sanitized pass only (the plugin under ASan): nbd-cluster runs the
# plain build's plugin, with swap, and checks nbdkit's own exit.
source "$(dirname "$0")/lib.sh"

rmp_init nbd "$1"
rmp_conf pool size 320M
# more than the VM reserves in hugepages (64 of 2 MiB a node): normal pages
rmp_conf pool hugepages preferred
rmp_conf lease ttl_min 1s
# a restart takes the leases back (normal pages: a tmpfs), and SIGTERM
# waits 2 s at most for nbdkit's connections
STATE=/dev/shm/rmp-nbd-$RMP_PORT
rm -rf "$STATE"
rmp_at_exit 'rm -rf "$STATE"'
rmp_conf pool state_dir "$STATE"
sed -i "s|^\[server\]$|[server]\ndrain_timeout = 2s|" "$RMP_CONF"
# a second tenant, whose key opens none of tenant test's leases
rmp_keygen "$RMP_TMP/other.key"
printf '[tenant.other]\nkey_file = %s\n' "$RMP_TMP/other.key" >>"$RMP_CONF"
NBD_DEV=/dev/nbd0
source "$(dirname "$0")/lib-nbd.sh"
daemon_start


rmp_stat || rmp_fail "STAT"
leases0=$STAT_LEASES
# A lease of 1 s, not renewed: expired by the time it is tried below.
"$RMPOOL" -s "$RMP_SERVER" alloc 1M --ttl 1s >"$RMP_TMP/expired" ||
	rmp_fail "rmpool alloc --ttl 1s"
expired_at=$((SECONDS + 2))

# A token of no lease: nbdkit exits, saying why.
printf 'rmp://%s:%s/0000000000000001-0000000000000002\n' "$RMP_TEST_ADDR" "$RMP_PORT" >"$RMP_TMP/bogus"
nbd_refused "a lease of no token" "attaching the lease: no such lease" \
	token=+"$RMP_TMP/bogus" tenant=test key-file="$RMP_KEY"
# A second token= would leak the first secret: refused.
nbd_refused "token= twice" "token= given twice" token=+"$RMP_TMP/bogus" \
	token=+"$RMP_TMP/bogus"
while [ "$SECONDS" -lt "$expired_at" ]; do sleep 0.2; done
nbd_refused "an expired lease" "attaching the lease: lease expired" \
	token=+"$RMP_TMP/expired" tenant=test key-file="$RMP_KEY"

nbd_start "$RMP_TMP/nbdkit.log" server="$RMP_SERVER" size=256M \
	save-token="$RMP_TMP/token"
[ -s "$RMP_TMP/token" ] || rmp_fail "save-token wrote no token"
# Another tenant holding the token: a token is not a key.
nbd_refused "another tenant's lease" \
	"attaching the lease: lease belongs to another tenant" \
	token=+"$RMP_TMP/token" tenant=other key-file="$RMP_TMP/other.key"
nbd_attach
[ "$(blockdev --getsize64 /dev/nbd0)" = $((256 << 20)) ] ||
	fail_later "/dev/nbd0 is not 256 MiB: $(blockdev --getsize64 /dev/nbd0)"

echo "nbd: ${SECONDS}s: mkfs, 100 files" >&2
fs_fill 100 || rmp_fail "ext4 and its files on /dev/nbd0"
echo "nbd: ${SECONDS}s: files written" >&2
fs_verify "a single server's lease"

# The daemon restarted under a mounted file system: reads made while it
# is down wait (the plugin's retry=, the library connecting and
# attaching again), and every file reads back as written.
echo "nbd: ${SECONDS}s: restarting the daemon under the mount" >&2
mount /dev/nbd0 "$MNT" || rmp_fail "mount after fsck"
echo 3 >/proc/sys/vm/drop_caches
daemon_stop
(cd "$MNT" && sha256sum -c --quiet "$RMP_TMP/sums") >"$RMP_TMP/restart.out" 2>&1 &
reader=$!
daemon_start
daemon_log_has "recovered [1-9][0-9]* lease" || fail_later "the restarted daemon did not take its leases back"
wait "$reader" ||
	fail_later "a read across the daemon's restart failed: $(tail -n 3 "$RMP_TMP/restart.out")"
grep -q "trying again" "$NBD_LOG" ||
	fail_later "no request of nbdkit waited for the restart (its log)"
umount "$MNT" || rmp_fail "umount after the restart"

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
nbd_bytes "$NBD_LOG"
[ "$NBD_WROTE" -gt 0 ] && [ "$NBD_READ" -gt 0 ] ||
	fail_later "nbdkit's log counts $NBD_WROTE bytes written and $NBD_READ read after ext4"


rmp_stat || rmp_fail "STAT at the end"
[ "$STAT_LEASES" = "$leases0" ] ||
	fail_later "$STAT_LEASES leases at the end, $leases0 before"
daemon_stop
rmp_done

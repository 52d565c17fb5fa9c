# SPDX-License-Identifier: MIT
# lib-nbd.sh -- nbdkit with the rmpool plugin on a socket of the test's
# own and the kernel's NBD client on NBD_DEV, for the block-device
# tests. Source after lib.sh, with rmp_init called and NBD_DEV set (each
# test has a device of its own: the nbd module makes 16). Skips nothing:
# a test that sources this needs the plugin, nbdkit, nbd-client and the
# nbd module, and fails without them.
#
#   nbd_start LOG ARGS...      nbdkit serving the plugin with ARGS
#   nbd_stop                   SIGTERM, NBD_RC its exit status
#   nbd_refused WHAT RE ARGS.. nbdkit with ARGS must exit, saying RE
#   nbd_attach [OPTS...]       NBD_DEV on the socket (60 s timeout)
#   nbd_bytes LOG              the plugin's count of bytes written, read
#   fs_fill N [fsync]          ext4 on NBD_DEV, mounted, N files of
#                              random sizes, their sums kept
#   fs_verify WHEN             unmounted, fsck -n, caches dropped,
#                              mounted again, every sum the same
# The cleanup at exit, before nbdkit and the daemons are killed, takes
# swap and the mount off NBD_DEV, detaches it and kills nbdkit.
PLUGIN=$RMP_BUILD_ROOT/client/nbdkit/nbdkit-rmpool-plugin.so
[ -e "$PLUGIN" ] || rmp_fail "no $PLUGIN: build with nbdkit-plugin-dev"
command -v nbdkit >/dev/null || rmp_fail "no nbdkit (Debian nbdkit)"
command -v nbd-client >/dev/null || rmp_fail "no nbd-client"
[ -e /sys/block/${NBD_DEV#/dev/} ] || modprobe nbd 2>/dev/null
[ -e /sys/block/${NBD_DEV#/dev/} ] || rmp_fail "no $NBD_DEV: the nbd module"

# A plugin built with a sanitizer needs its runtime loaded first.
asan=$(ldd "$PLUGIN" 2>/dev/null | awk '$1 ~ /^libasan/ { print $3 }')
NBDKIT_ENV=()
[ -n "$asan" ] && NBDKIT_ENV=("LD_PRELOAD=$asan"
	"ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0")

SOCK=$RMP_TMP/nbd.sock
MNT=$RMP_TMP/mnt
mkdir -p "$MNT"
NBD_PID= NBD_LOG=

# nbd_start LOG ARGS... -- nbdkit in the foreground on $SOCK with the
# plugin and ARGS (tenant "test"), waited for until the plugin serves
# the lease (nbdkit listens before it, and before its after_fork).
nbd_start() {
	local log=$1
	shift
	rm -f "$SOCK"
	NBD_LOG=$log
	env "${NBDKIT_ENV[@]}" nbdkit -f -v -U "$SOCK" "$PLUGIN" \
		tenant=test key-file="$RMP_KEY" "$@" >"$log" 2>&1 &
	NBD_PID=$!
	for _ in $(seq 1 600); do
		file_match "$log" "rmpool: serving [0-9]+ bytes" && return 0
		pid_running "$NBD_PID" || break
		sleep 0.1
	done
	tail -n 20 "$log" >&2
	nbd_backtrace
	rmp_fail "nbdkit did not start ($*)"
}

# nbd_backtrace -- where nbdkit's threads are, when it hangs (gdb).
nbd_backtrace() {
	pid_running "$NBD_PID" && command -v gdb >/dev/null &&
		timeout 60 gdb -p "$NBD_PID" -batch -nx \
			-ex "thread apply all bt" >&2 2>&1
	return 0
}

# nbd_stop -- SIGTERM, waited for: NBD_RC its exit status. nbdkit with
# the sanitizer's runtime preloaded hangs in exit() after the plugin is
# gone (p11-kit's destructor waits on glibc's setlocale lock: seen with
# gdb); that one is killed once the log shows the plugin unloaded. The
# plain build (nbd-cluster) checks nbdkit's own exit.
nbd_stop() {
	[ -n "$NBD_PID" ] || return 0
	kill -TERM "$NBD_PID" 2>/dev/null
	for _ in $(seq 1 300); do
		pid_running "$NBD_PID" || break
		if [ -n "$asan" ] &&
			file_match "$NBD_LOG" "debug: rmpool: unload"; then
			sleep 1 # its own exit, when it comes
			kill -KILL "$NBD_PID" 2>/dev/null
			wait "$NBD_PID"
			NBD_RC=0 NBD_PID=
			return 0
		fi
		sleep 0.1
	done
	pid_running "$NBD_PID" && {
		tail -n 30 "$NBD_LOG" >&2
		nbd_backtrace
		rmp_fail "nbdkit did not end in 30 s after SIGTERM"
	}
	wait "$NBD_PID"
	NBD_RC=$?
	NBD_PID=
}

# nbd_refused WHAT PATTERN ARGS... -- nbdkit with ARGS must exit, its
# log matching PATTERN (the library's words for why).
nbd_refused() {
	local what=$1 pattern=$2
	shift 2
	rm -f "$SOCK.bad"
	timeout 60 env "${NBDKIT_ENV[@]}" nbdkit -f -v -U "$SOCK.bad" \
		"$PLUGIN" "$@" >"$RMP_TMP/bad.log" 2>&1
	case $? in
	0) fail_later "nbdkit exited 0 on $what" ;;
	124) # served, it would run for ever; or hung
		if grep -q "rmpool: serving" "$RMP_TMP/bad.log"; then
			fail_later "nbdkit served $what"
		else
			fail_later "nbdkit did not end in 60 s on $what"
		fi ;;
	esac
	grep -Eq "$pattern" "$RMP_TMP/bad.log" ||
		fail_later "nbdkit's exit on $what does not say why: $(tail -n 3 "$RMP_TMP/bad.log")"
}

# nbd_bytes LOG -- the plugin's count, at its end, of bytes written to
# the lease and read from it: NBD_WROTE and NBD_READ (-1: not logged).
nbd_bytes() {
	local re='rmpool: ([0-9]+) bytes written to the lease and ([0-9]+) read'
	NBD_WROTE=-1 NBD_READ=-1
	[[ $(grep -E "$re" "$1") =~ $re ]] || return 0
	NBD_WROTE=${BASH_REMATCH[1]} NBD_READ=${BASH_REMATCH[2]}
}

# nbd_attach [OPTS...] -- NBD_DEV on the socket, 4 KiB blocks.
nbd_attach() {
	nbd-client -unix "$SOCK" "$NBD_DEV" -b 4096 -timeout 60 "$@" \
		>/dev/null || rmp_fail "nbd-client could not attach $NBD_DEV"
}

# fs_fill N [fsync] -- ext4 made on NBD_DEV and mounted on MNT, N files
# of random sizes written from /dev/urandom (each one fsynced with
# fsync: it has reached the device when the next begins), their sums in
# $RMP_TMP/sums. Its exit status: 0 when every write went.
fs_fill() {
	local i n
	mkfs.ext4 -q -F -b 4096 "$NBD_DEV" || { echo "mkfs.ext4" >&2; return 1; }
	mount "$NBD_DEV" "$MNT" || { echo "mount $NBD_DEV" >&2; return 1; }
	for ((i = 1; i <= $1; i++)); do
		n=$((RANDOM * 8 + i))
		if [ "${2:-}" = fsync ]; then
			head -c "$n" /dev/urandom | dd of="$MNT/f$i" bs=64k \
				iflag=fullblock conv=fsync status=none
		else
			head -c "$n" /dev/urandom >"$MNT/f$i"
		fi || { echo "writing file $i" >&2; return 1; }
	done
	(cd "$MNT" && sha256sum f*) >"$RMP_TMP/sums"
}

# fs_verify WHEN -- synced and unmounted, fsck -n clean, the kernel's
# cached pages dropped (the reads cross the wire), mounted again and
# every file's sum as written; unmounted at the end.
fs_verify() {
	sync
	umount "$MNT" || rmp_fail "$1: umount"
	fsck.ext4 -n -f "$NBD_DEV" >"$RMP_TMP/fsck.log" 2>&1 ||
		fail_later "$1: fsck -n found errors: $(tail -n 5 "$RMP_TMP/fsck.log")"
	echo 3 >/proc/sys/vm/drop_caches
	mount "$NBD_DEV" "$MNT" || rmp_fail "$1: mount again"
	(cd "$MNT" && sha256sum -c --quiet "$RMP_TMP/sums") ||
		fail_later "$1: a file read back differs from what was written"
	umount "$MNT" || rmp_fail "$1: umount after the check"
}

# cleanup_nbd -- at exit, before nbdkit and the daemons are killed:
# swap and mounts off the device while its server still answers (a
# writer of a failed test may still hold the mount: lazily), detached.
cleanup_nbd() {
	timeout 60 swapoff "$NBD_DEV" 2>/dev/null
	umount -l "$MNT" 2>/dev/null
	timeout 30 nbd-client -d "$NBD_DEV" >/dev/null 2>&1
	[ -n "$NBD_PID" ] && kill -KILL "$NBD_PID" 2>/dev/null
	return 0
}
rmp_at_exit_first cleanup_nbd

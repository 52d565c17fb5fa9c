#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-syscalls.sh PORT -- a caller that polls pays no system call per
# operation for completions.
#
# rmpool-bench read-lat --busy-poll posts one 64-byte READ, rmp_submit()s
# it and spins on rmp_poll(c, .., 0), never asking for rmp_client_fd().
# It runs twice under `strace -f -c`, with N1 and N2 operations; the
# difference of the two counts, divided by N2 - N1, is what one operation
# costs (connection set-up and tear-down cancel out). Per operation:
#  - read, poll, ppoll, epoll_wait, ioctl: none (< 0.01): the completion
#    channel is neither read nor armed, nothing sleeps;
#  - write: at most one (<= 1.01), the doorbell of ibv_post_send, which
#    Soft-RoCE's provider rings with a write to the uverbs fd (a hardware
#    NIC rings it from user space: 0 there).
# Reported, not asserted: the same for the synchronous rmp_read (it spins
# before it sleeps, so it may arm and read the channel now and then).
# Asserted where the clock is a system call (no vDSO clock, as in the
# TCG guest): a synchronous rmp_read reads it at most 2.5 times more per
# operation than a polled one: the wait's start and end, and now and then
# a spin check (every 16 polls) or a sleep. It read it four times before
# (the lease's expiry check and the wait's deadline besides). On hardware
# both are 0.
# Last, rmpool-bench's own count of sleeps: none for a polled READ, some
# for control requests that may not spin.
source "$(dirname "$0")/lib.sh"

rmp_init syscalls "$1"
command -v strace >/dev/null || {
	echo "strace is not installed (tests/setup.sh)" >&2
	exit 77
}
BENCH=$RMP_BUILD_ROOT/tests/perf/rmpool-bench
N1=2000
N2=12000
daemon_start

# counts MODE ITERS [ARGS...] -- "read write poll ppoll epoll_wait ioctl
# clock_gettime" calls of rmpool-bench MODE over ITERS operations (after
# 100 warm-up ones).
counts() {
	local mode=$1 iters=$2 out=$RMP_TMP/strace.$1.$2
	shift 2
	# LeakSanitizer stops the world with ptrace at exit, which fails
	# under strace: leaks are the other tests' business.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -c -o "$out" "$BENCH" -s "$RMP_SERVER" --size 64 \
		--iters "$iters" --warmup 100 "$@" "$mode" >"$out.bench" ||
		rmp_fail "rmpool-bench $mode --iters $iters $* failed"
	cat "$out.bench" >&2
	awk '$NF ~ /^(read|write|poll|ppoll|epoll_wait|epoll_pwait|ioctl|clock_gettime)$/ {
		n[$NF] = $4 }
	     END { printf "%d %d %d %d %d %d %d\n", n["read"], n["write"],
		   n["poll"], n["ppoll"], n["epoll_wait"] + n["epoll_pwait"],
		   n["ioctl"], n["clock_gettime"] }' "$out"
}

# ran ITERS -- rmpool-bench's result line for ITERS is there (counts runs
# in a subshell: its failure alone would leave empty counts behind).
ran() {
	grep -q "^rmpool read-lat.* iters=$1 " "$RMP_TMP/strace.read-lat.$1.bench" ||
		rmp_fail "rmpool-bench read-lat --iters $1 printed no result"
}

# per_op A B -- (B - A) / (N2 - N1) with 3 decimals.
per_op() { awk -v a="$1" -v b="$2" -v d=$((N2 - N1)) 'BEGIN { printf "%.3f", (b - a) / d }'; }

echo "==== polled: rmp_post_read + rmp_submit + rmp_poll(.., 0)"
read -r r1 w1 p1 pp1 e1 i1 c1 < <(counts read-lat $N1 --busy-poll)
read -r r2 w2 p2 pp2 e2 i2 c2 < <(counts read-lat $N2 --busy-poll)
polled_clock=$(per_op "$c1" "$c2")
ran $N1
ran $N2
echo "N=$N1: read $r1 write $w1 poll $p1 ppoll $pp1 epoll $e1 ioctl $i1"
echo "N=$N2: read $r2 write $w2 poll $p2 ppoll $pp2 epoll $e2 ioctl $i2"
for s in "read $r1 $r2" "poll $p1 $p2" "ppoll $pp1 $pp2" "epoll $e1 $e2" \
	 "ioctl $i1 $i2"; do
	set -- $s
	v=$(per_op "$2" "$3")
	echo "per operation: $1 $v"
	awk -v v="$v" 'BEGIN { exit !(v < 0.01) }' ||
		fail_later "a polled READ costs $v $1 call(s), want none"
done
v=$(per_op "$w1" "$w2")
echo "per operation: write $v (the doorbell: 1 on Soft-RoCE, 0 on hardware)"
awk -v v="$v" 'BEGIN { exit !(v <= 1.01) }' ||
	fail_later "a polled READ costs $v write(s), want at most the doorbell (1)"

echo "==== synchronous rmp_read (reported, but for the clock)"
read -r r1 w1 p1 pp1 e1 i1 c1 < <(counts read-lat $N1)
read -r r2 w2 p2 pp2 e2 i2 c2 < <(counts read-lat $N2)
ran $N1
ran $N2
echo "per operation: read $(per_op "$r1" "$r2") write $(per_op "$w1" "$w2")" \
	"poll $(per_op "$p1" "$p2") ppoll $(per_op "$pp1" "$pp2")"
sync_clock=$(per_op "$c1" "$c2")
echo "clock_gettime per operation: sync $sync_clock, polled $polled_clock" \
	"(both include rmpool-bench's own two)"
awk -v s="$sync_clock" -v p="$polled_clock" 'BEGIN { exit !(s - p <= 2.5) }' ||
	fail_later "a synchronous READ reads the clock $sync_clock times," \
		"a polled one $polled_clock: want at most 2.5 more"

# rmpool-bench's sleeps= (voluntary context switches per operation) is
# what tells a wait that slept: a polled READ never sleeps. A READ that
# may not spin does not either on Soft-RoCE in one guest (the kernel
# carries the READ out inside the doorbell's system call, and its
# completion is there once the CQ is armed: measured 0.000), so the
# counter is checked on ALLOC+FREE pairs that may not spin: their replies
# come from the daemon, another process, and the client sleeps for them.
echo "==== sleeps per operation, as rmpool-bench counts them"
sleeps() {
	"$BENCH" -s "$RMP_SERVER" --iters 200 "$@" |
		sed -nE 's/^rmpool .* sleeps=([0-9.]+)$/\1/p'
}
polled_sleeps=$(sleeps --size 64 --busy-poll read-lat)
sync_sleeps=$(sleeps --size 64 --spin-max-us 0 read-lat)
ctl_sleeps=$(sleeps --spin-max-us 0 alloc-lat)
echo "READ polled $polled_sleeps, READ never spinning $sync_sleeps" \
	"(reported), ALLOC+FREE never spinning $ctl_sleeps"
awk -v v="$polled_sleeps" 'BEGIN { exit !(v != "" && v < 0.01) }' ||
	fail_later "a polled READ slept ${polled_sleeps:-?} times an operation, want none"
awk -v v="$ctl_sleeps" 'BEGIN { exit !(v != "" && v >= 0.5) }' ||
	fail_later "ALLOC+FREE pairs that may not spin slept ${ctl_sleeps:-?} times a pair: the counter does not see sleeps"

daemon_stop
rmp_done

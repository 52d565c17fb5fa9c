#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-pair.sh SCRIPT PORT [SCRIPT PORT ...] -- the two-host tests
# run one after the other on one boot of the pair (a boot and a power-off
# cost 15 s a test). TAP: a line per test, with its time.
#
# Each SCRIPT is a test of this folder, run as it runs alone but on the
# pair booted here (lib.sh: PAIR_SHARED). After each test the hosts are
# made clean (th_cleanup: every rmpoold and client killed, netem and
# state files removed); a host the test killed (dead-server, dead-client)
# or left without an answer is booted again, alone, before the next.
source "$(dirname "$0")/lib.sh"

: "${RMP_BUILD_ROOT:?RMP_BUILD_ROOT is not set}"
command -v qemu-system-x86_64 >/dev/null || {
	echo "qemu is not installed (tests/setup.sh)" >&2
	exit 77
}
[ $# -ge 2 ] && [ $(($# % 2)) -eq 0 ] || {
	echo "usage: $0 SCRIPT PORT [SCRIPT PORT ...]" >&2
	exit 2
}
mkdir -p "$RMP_BUILD_ROOT/twohost-tmp"
PAIR_DIR=$(mktemp -d "$RMP_BUILD_ROOT/twohost-tmp/pair.XXXXXX")
trap 'pair_stop; rm -rf "$PAIR_DIR"' EXIT
# The most any of them needs (restart: an 80 MiB pool).
export RMP_PAIR_HUGEPAGES=64

# export_pids -- where the tests find the hosts (an array is not exported).
export_pids() {
	export PAIR_DIR PAIR_SHARED=1
	export PAIR_SERVER_PID=${PAIR_VM_PID[server]}
	export PAIR_CLIENT_PID=${PAIR_VM_PID[client]}
}

# alive HOST -- HOST's QEMU runs and its agent answers within 20 s.
alive() {
	local pid
	pid=$(cat "$PAIR_DIR/$1.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null &&
		RMP_ON_TIMEOUT=20 on "$1" true >/dev/null 2>&1
}

# revive HOST -- HOST booted again on its end of the link (the same
# address and MAC: its peer's neighbour entry still holds).
revive() {
	echo "# $1 is down or does not answer: booting it again"
	host_down "$1"
	boot_host "$1" || return 1
	export_pids
	on client "busybox ping -c 1 -W 5 $PAIR_SERVER_ADDR >/dev/null"
}

echo "1..$(($# / 2))"
pair_boot || { echo "Bail out! the two-host bed did not come up"; exit 1; }
export_pids
n=0 failed=0
while [ $# -gt 0 ]; do
	script=$1 port=$2 name=${1##*/test-}
	name=${name%.sh}
	shift 2
	n=$((n + 1))
	for host in server client; do
		alive $host || revive $host ||
			{ echo "Bail out! $host did not come up again"; exit 1; }
	done
	t0=$SECONDS
	bash "$script" "$port" 2>&1 | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - $name ($((SECONDS - t0)) s)"
	elif [ "$rc" -eq 77 ]; then
		echo "ok $n - $name # SKIP"
	else
		echo "not ok $n - $name ($((SECONDS - t0)) s, exit $rc)"
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ]

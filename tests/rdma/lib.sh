# SPDX-License-Identifier: MIT
# lib.sh -- helpers for the RDMA tests: a daemon per test, checks, cleanup.
#
# A test script sources this file, calls rmp_init NAME PORT, writes extra
# config lines with rmp_conf, starts the daemon with daemon_start, runs
# clients, and ends with daemon_stop (which fails the test if the daemon
# did not exit 0 or a sanitizer reported anything) and rmp_pass.
#
# Environment (meson sets the first; run-in-vm.sh the others):
#   RMP_BUILD_ROOT  the build directory holding daemon/, client/, tests/
#   RMP_TEST_ADDR   an address of the RDMA device to use (else: skip, 77)

set -u

rmp_fail() {
	echo "FAIL: $*" >&2
	if [ -n "${RMP_DLOG:-}" ] && [ -f "$RMP_DLOG" ]; then
		echo "---- rmpoold log ----" >&2
		tail -n 60 "$RMP_DLOG" >&2
	fi
	exit 1
}

rmp_pass() {
	echo "PASS: $RMP_NAME"
	exit 0
}

# check CONDITION-COMMAND... -- run it; fail with its text if it fails.
check() {
	"$@" || rmp_fail "check failed: $*"
}

rmp_init() {
	RMP_NAME=$1
	RMP_PORT=$2
	: "${RMP_BUILD_ROOT:?RMP_BUILD_ROOT is not set}"
	if [ -z "${RMP_TEST_ADDR:-}" ]; then
		echo "RMP_TEST_ADDR is not set: no RDMA device to test on" >&2
		exit 77
	fi
	RMPOOLD=$RMP_BUILD_ROOT/daemon/rmpoold
	RMPOOL=$RMP_BUILD_ROOT/client/rmpool
	RMP_TESTBIN=$RMP_BUILD_ROOT/tests/rdma/rmp-test
	RMP_RAW=$RMP_BUILD_ROOT/tests/rdma/rmp-raw
	RMP_SERVER=$RMP_TEST_ADDR:$RMP_PORT
	RMP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/rmp-$RMP_NAME.XXXXXX")
	RMP_CONF=$RMP_TMP/rmpoold.conf
	RMP_DLOG=$RMP_TMP/rmpoold.log
	RMP_DPID=
	trap rmp_cleanup EXIT
	# A small pool by default: tests run side by side in one VM.
	cat >"$RMP_CONF" <<CONF
[server]
listen = $RMP_TEST_ADDR
port = $RMP_PORT
log_level = debug
[pool]
size = 16M
CONF
}

HOLD_PID= HOLD_FD=
# hold_start [ARGS...] -- rmp-raw hold in the background, stdin a fifo we
# keep open; sets HOLD_ADDR HOLD_RKEY HOLD_LEN HOLD_ID from its LEASE line.
hold_start() {
	local line=
	mkfifo "$RMP_TMP/hold.in"
	"$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" hold "$@" \
		<"$RMP_TMP/hold.in" >"$RMP_TMP/hold.out" &
	HOLD_PID=$!
	exec {HOLD_FD}>"$RMP_TMP/hold.in"
	for _ in $(seq 1 600); do
		line=$(grep -m1 '^LEASE ' "$RMP_TMP/hold.out") && break
		kill -0 "$HOLD_PID" 2>/dev/null ||
			rmp_fail "rmp-raw hold exited before printing its lease"
		sleep 0.1
	done
	[ -n "$line" ] || rmp_fail "rmp-raw hold printed no lease in 60 s"
	read -r _ HOLD_ADDR HOLD_RKEY HOLD_LEN HOLD_ID <<<"$line"
	echo "holder: lease $HOLD_ID at $HOLD_ADDR rkey $HOLD_RKEY," \
		"$HOLD_LEN bytes"
}

# hold_stop -- tell the holder to finish; returns its exit status.
hold_stop() {
	local rc=0
	exec {HOLD_FD}>&-
	HOLD_FD=
	wait "$HOLD_PID" || rc=$?
	HOLD_PID=
	[ "$rc" -eq 0 ] || echo "rmp-raw hold exited with status $rc" >&2
	return "$rc"
}

rmp_cleanup() {
	# Background clients of a failed test must not outlive it.
	local jobs
	if [ -n "${HOLD_FD:-}" ]; then exec {HOLD_FD}>&-; fi
	jobs=$(jobs -p)
	[ -n "$jobs" ] && kill -KILL $jobs 2>/dev/null
	if [ -n "${RMP_DPID:-}" ]; then
		kill -KILL "$RMP_DPID" 2>/dev/null
		wait "$RMP_DPID" 2>/dev/null
	fi
	rm -rf "$RMP_TMP"
}

# rmp_conf SECTION KEY VALUE -- set a key: replace it where the file has
# it already (key names are unique across sections), else add it.
rmp_conf() {
	if grep -q "^$2 = " "$RMP_CONF"; then
		sed -i "s|^$2 = .*|$2 = $3|" "$RMP_CONF"
	else
		printf '[%s]\n%s = %s\n' "$1" "$2" "$3" >>"$RMP_CONF"
	fi
}

# daemon_start -- start rmpoold and wait until it listens.
daemon_start() {
	"$RMPOOLD" -c "$RMP_CONF" >"$RMP_DLOG" 2>&1 &
	RMP_DPID=$!
	for _ in $(seq 1 300); do
		grep -q "listening on" "$RMP_DLOG" && return 0
		kill -0 "$RMP_DPID" 2>/dev/null ||
			rmp_fail "rmpoold exited during start"
		sleep 0.1
	done
	rmp_fail "rmpoold did not start listening in 30 s"
}

# daemon_stop -- SIGTERM; the daemon must exit 0 with a clean log.
daemon_stop() {
	local rc=0
	kill -TERM "$RMP_DPID" || rmp_fail "rmpoold is not running"
	wait "$RMP_DPID" || rc=$?
	RMP_DPID=
	[ "$rc" -eq 0 ] || rmp_fail "rmpoold exited with status $rc"
	if grep -qE "Sanitizer|runtime error:" "$RMP_DLOG"; then
		rmp_fail "sanitizer report in the daemon log"
	fi
}

# daemon_log_has REGEX -- the daemon log matches (extended regex).
daemon_log_has() {
	grep -qE "$1" "$RMP_DLOG"
}

# rmpool ARGS... -- the CLI against this test's daemon.
rmpool() {
	"$RMPOOL" -s "$RMP_SERVER" "$@"
}

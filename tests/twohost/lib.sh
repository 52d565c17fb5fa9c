# SPDX-License-Identifier: MIT
# lib.sh -- shared by the tests on the two-host bed (tests/vm/pair.sh).
# Each test is a host-side script: `test-X.sh PORT`; it boots the pair
# (or uses one test-pair.sh booted), runs rmpoold on the server
# host and clients on the client host.
source "$(dirname "${BASH_SOURCE[0]}")/../vm/pair.sh"

TH_FAILURES=()

th_fail() {
	echo "FAIL: $TH_NAME: $*" >&2
	th_dump
	exit 1
}

# th_check_later MSG -- note a failed check, go on.
th_check_later() {
	echo "check failed: $*" >&2
	TH_FAILURES+=("$*")
}

th_done() {
	[ "${#TH_FAILURES[@]}" -eq 0 ] || th_fail "${#TH_FAILURES[@]} check(s) failed"
	echo "PASS: $TH_NAME"
	exit 0
}

# th_dump -- the daemon's log tail, for a failure's reader.
th_dump() {
	local log=${TH_LOG:-$TH_DIR/rmpoold.log}
	[ -r "$log" ] || return 0
	echo "---- ${log##*/} (last 40 lines)" >&2
	tail -n 40 "$log" >&2
}

# th_cleanup -- power the hosts off (a shared pair: leave them as they
# were booted, for the next test); keep the test directory of a failure.
th_cleanup() {
	local rc=$?
	if [ -n "${PAIR_SHARED:-}" ]; then
		th_clean_host server
		th_clean_host client
	else
		pair_stop
	fi
	[ "$rc" -eq 0 ] && [ -z "${RMP_KEEP_TMP:-}" ] && rm -rf "$TH_DIR"
	[ "$rc" -eq 0 ] || echo "test files kept in $TH_DIR" >&2
	return "$rc"
}

# th_clean_host HOST -- every daemon and client of a test killed on HOST,
# its netem gone, its state files (and their hugepages) freed.
th_clean_host() {
	local pid
	# not one the test killed (kill_host)
	pid=$(cat "$PAIR_DIR/$1.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null ||
		return 0
	RMP_ON_TIMEOUT=30 on "$1" "pkill -KILL -x rmpoold; pkill -KILL -x rmp-test; \
		pkill -KILL -x rmpool; pkill -KILL -x rmp-cluster; pkill -KILL -x etcd; \
		tc qdisc del dev eth0 root 2>/dev/null; \
		rm -rf /dev/hugepages/rmp-* /run/rmpoold-*.sock; true" >/dev/null
}

# th_init NAME PORT -- a fresh test directory, tenant key and config.
th_init() {
	TH_NAME=$1
	TH_PORT=$2
	: "${RMP_BUILD_ROOT:?RMP_BUILD_ROOT is not set}"
	command -v qemu-system-x86_64 >/dev/null || {
		echo "qemu is not installed (tests/setup.sh)" >&2
		exit 77
	}
	mkdir -p "$RMP_BUILD_ROOT/twohost-tmp"
	TH_DIR=$(mktemp -d "$RMP_BUILD_ROOT/twohost-tmp/$TH_NAME.XXXXXX")
	[ -n "${PAIR_SHARED:-}" ] || PAIR_DIR=$TH_DIR
	trap th_cleanup EXIT
	RMPOOLD=$RMP_BUILD_ROOT/daemon/rmpoold
	RMPOOL=$RMP_BUILD_ROOT/client/rmpool
	RMP_TESTBIN=$RMP_BUILD_ROOT/tests/rdma/rmp-test
	TH_SERVER=$PAIR_SERVER_ADDR:$TH_PORT
	TH_KEY=$TH_DIR/test.key
	(umask 077 && "$RMPOOL" keygen >"$TH_KEY") || th_fail "keygen"
	TH_CONF=$TH_DIR/rmpoold.conf
	# On the server host's own /run: a unix socket cannot live on 9p.
	TH_ADMIN=/run/rmpoold-$TH_PORT.sock
	cat >"$TH_CONF" <<CONF
[tenant.test]
key_file = $TH_KEY
[server]
listen = $PAIR_SERVER_ADDR
port = $TH_PORT
log_level = debug
admin_socket = $TH_ADMIN
metrics_listen =
[pool]
size = 16M
CONF
}

# th_client CMD -- run CMD on the client host as tenant "test".
th_client() {
	on client "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); $1"
}

# th_daemon_start [NAME] -- rmpoold on the server host, listening; its
# output in $TH_DIR/NAME.log (default rmpoold), the file TH_LOG names.
th_daemon_start() {
	local i
	TH_LOG=$TH_DIR/${1:-rmpoold}.log
	TH_DPID=$(bg_on server "$TH_LOG" \
		"exec $(printf %q "$RMPOOLD") -c $(printf %q "$TH_CONF")") ||
		th_fail "starting rmpoold"
	for ((i = 0; i < 120; i++)); do
		on server "grep -q 'listening on' $(printf %q "$TH_LOG")" &&
			return 0
		on server "kill -0 $TH_DPID" || th_fail "rmpoold exited during start"
		sleep 0.25
	done
	th_fail "rmpoold did not start listening in 30 s"
}

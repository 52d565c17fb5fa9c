#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-python.sh PORT -- the Python module rmpool against a real rmpoold (test_rdma.py): every method of Client, Lease and RegisteredBuffer, each error class a server can be made to give (ServerDraining by rmpoolctl drain, AuthRevoked by a key rotated and a reload, Timeout with the daemon stopped, Unreachable by an address without a route included), tokens shared with the rmpool CLI both ways, read_into a registered numpy array, post_* and poll, 64 concurrent asyncio reads, threads sharing a client, the GIL released while a call waits (another thread runs meanwhile), exceptions built after the client's lock is given back (a finalizer that waits for the client does not deadlock), an exit with a daemon thread stuck in a call (the teardown gives up on its lock), 10^5 calls with Python memory and RSS flat, the examples, tenant isolation (another tenant's token: PermissionError) and a reconnect after a daemon restart on its state file.
#
# Tenant "test" (lib.sh) for most, tenant "b" with a 1 MiB quota, max_lease
# 8M, a 1 s minimum ttl.
source "$(dirname "$0")/../rdma/lib.sh"
rmp_init python "$1"
bkey=$RMP_TMP/b.key
rmp_keygen "$bkey"
revkey=$RMP_TMP/rev.key
rmp_keygen "$revkey"
cat >>"$RMP_CONF" <<CONF
[tenant.b]
key_file = $bkey
bytes = 1M
[tenant.rev]
key_file = $revkey
rotate_grace = 30s
CONF
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
rmp_conf lease max_lease 8M
# test_zz_restart restarts the daemon (SIGTERM, then a new one it starts,
# its pid in $RMP_TMP/rmpoold2.pid): leases come back from the state.
STATE=/dev/hugepages/rmp-python-$RMP_PORT
rm -rf "$STATE"
rmp_conf pool state_dir "$STATE"
rmp_conf server drain_timeout 2s
D2=
trap 'rmp_cleanup; [ -n "$D2" ] && kill -KILL "$D2" 2>/dev/null; rm -rf "$STATE"' EXIT
daemon_start
# RMP_PLAIN_TOO_ONLY (tests/run-tests.sh's plain pass, when the
# sanitized one runs the rest): only what a sanitizer hides, Python's
# memory and RSS over 10^5 calls.
select=()
[ -n "${RMP_PLAIN_TOO_ONLY:-}" ] && select=(-k test_no_leaks)
RMP_PY_ADDR=$RMP_TEST_ADDR RMP_PY_PORT=$RMP_PORT RMP_PY_CLI=$RMPOOL \
RMP_PY_B_KEY=$bkey RMP_PY_REV_KEY=$revkey RMP_PY_TMP=$RMP_TMP RMP_PY_RMPOOLD=$RMPOOLD \
RMP_PY_CONF=$RMP_CONF RMP_PY_DPID=$RMP_DPID \
RMP_PY_CTL=$RMP_BUILD_ROOT/daemon/rmpoolctl \
RMP_PY_DAEMON_ASAN_OPTIONS=${ASAN_OPTIONS:-} \
	"$(dirname "$0")/run-pytest.sh" "$RMP_BUILD_ROOT" \
	-rfEP --durations=8 -o faulthandler_timeout=120 "${select[@]}" \
	"$(dirname "$0")/test_rdma.py"
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || rmp_fail "pytest failed ($rc)"
# The daemon the restart test started is not this shell's child: stop
# it by pid, and read its log as daemon_stop reads the first one's.
if [ -s "$RMP_TMP/rmpoold2.pid" ]; then
	D2=$(cat "$RMP_TMP/rmpoold2.pid")
	# The first daemon exited (SIGTERM); reap it.
	wait "$RMP_DPID" || rmp_fail "the first rmpoold exited with $?"
	RMP_DPID=
	kill -TERM "$D2" || rmp_fail "the restarted rmpoold is gone"
	for _ in $(seq 1 600); do
		kill -0 "$D2" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$D2" 2>/dev/null && rmp_fail "the restarted rmpoold did not stop"
	D2=
	grep -qE "Sanitizer|runtime error:" "$RMP_TMP/rmpoold2.log" &&
		rmp_fail "sanitizer report in the restarted rmpoold's log"
	grep -q "listening on" "$RMP_TMP/rmpoold2.log" ||
		rmp_fail "the restarted rmpoold did not listen"
else
	daemon_stop
fi
rmp_pass

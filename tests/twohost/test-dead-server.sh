#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-dead-server.sh PORT -- the server's whole host dies while a client
# is busy on the data path (WRITE, READ, CAS, and a posted READ waited for
# with rmp_poll(.., -1)): every call returns, the failing ones within the
# client's op timeout (and a second), and the client process exits.
source "$(dirname "$0")/lib.sh"

th_init dead-server "$1"
TIMEOUT_MS=3000
pair_boot || th_fail "the two-host bed did not come up"
th_daemon_start

# In the background: the client host's agent runs one request at a time.
bg_on client "$TH_DIR/client.out" "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
	$(printf %q "$RMP_TESTBIN") until-down $PAIR_SERVER_ADDR $TH_PORT $TIMEOUT_MS; \
	echo \$? >$TH_DIR/client.rc" >/dev/null || th_fail "cannot start the client"
for ((i = 0; i < 100; i++)); do
	on client "grep -q READY $TH_DIR/client.out" && break
	sleep 0.2
done
on client "grep -q READY $TH_DIR/client.out" || th_fail "the client did not start"
sleep 2 # mid-transfer
kill_host server
t0=$SECONDS
until on client "test -e $TH_DIR/client.rc"; do
	[ $((SECONDS - t0)) -le $((TIMEOUT_MS / 1000 * 10 + 30)) ] ||
		th_fail "the client hangs $((SECONDS - t0)) s after the server's host died: $(on client "cat $TH_DIR/client.out")"
	sleep 0.5
done
took=$((SECONDS - t0))
on client "cat $TH_DIR/client.out"
rc=$(on client "cat $TH_DIR/client.rc")
[ "$rc" = 0 ] || th_fail "rmp-test until-down exited $rc"
on client "grep -q 'failed after [0-9]* ms: timed out' $TH_DIR/client.out" ||
	th_check_later "the first failure does not say the server did not answer"
on client "grep -q '^DOWN after' $TH_DIR/client.out" || th_fail "no DOWN line"
echo "the client was done $took s after the server's host died (op timeout $((TIMEOUT_MS / 1000)) s; 9 failing calls)"
th_done

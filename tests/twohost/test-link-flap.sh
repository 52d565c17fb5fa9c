#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-link-flap.sh PORT -- the link between the hosts goes dark (netem
# drops every packet of the client host: a cut somewhere on the path,
# both NICs still up) for longer than the transport's retry budget. The
# client's call fails within its op timeout and the next one at once; the
# server's liveness probe closes its side. When the link is back the
# client connects again, attaches its auto-renewed lease by token and
# reads its bytes back intact.
source "$(dirname "$0")/lib.sh"

th_init link-flap "$1"
TIMEOUT_MS=3000 DARK=8
sed -i "s/^\[server\]$/[server]\nkeepalive = 2s/" "$TH_CONF"
pair_boot || th_fail "the two-host bed did not come up"
th_daemon_start

GO=/tmp/link-back # on the client host's own /tmp
bg_on client "$TH_DIR/client.out" "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
	$(printf %q "$RMP_TESTBIN") flap $PAIR_SERVER_ADDR $TH_PORT $TIMEOUT_MS $GO; \
	echo \$? >$TH_DIR/client.rc" >/dev/null || th_fail "cannot start the client"
for ((i = 0; i < 100; i++)); do
	on client "grep -q READY $TH_DIR/client.out" && break
	sleep 0.2
done
on client "grep -q READY $TH_DIR/client.out" || th_fail "the client did not start"
sleep 1
on client "tc qdisc add dev eth0 root netem loss 100%" || th_fail "netem failed"
t0=$SECONDS
sleep $DARK
on client "grep 'failed after\|^then' $TH_DIR/client.out" ||
	th_check_later "the client's call had not failed after $DARK s dark"
on server "grep -E 'disconnected: peer unreachable' $TH_LOG" ||
	th_check_later "the server did not close the unreachable client's connection"
on client "tc qdisc del dev eth0 root; touch $GO" || th_fail "could not restore the link"
echo "link dark for $((SECONDS - t0)) s"
for ((i = 0; i < 200; i++)); do
	on client "test -e $TH_DIR/client.rc" && break
	sleep 0.3
done
on client "cat $TH_DIR/client.out"
rc=$(on client "cat $TH_DIR/client.rc") || th_fail "the client did not finish"
[ "$rc" = 0 ] || th_fail "rmp-test flap exited $rc"
th_done

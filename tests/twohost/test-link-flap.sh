#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-link-flap.sh PORT -- the link between the hosts goes dark (netem
# drops every packet of the client host: a cut somewhere on the path,
# both NICs still up) for longer than the transport's retry budget. The
# client's call fails within its op timeout; the server's liveness probe
# closes its side. When the link is back the lease reads back intact:
#  - round "manual": the application closes, connects again and attaches
#    the lease by token (and a call on the broken connection fails at
#    once meanwhile);
#  - round "reconnect": rmp_client_opts.reconnect_max_ms: the library
#    reconnects and attaches again by itself, and the same handle reads
#    the bytes back: one error in all for the lease.
source "$(dirname "$0")/lib.sh"

th_init link-flap "$1"
TIMEOUT_MS=3000 DARK=8
sed -i "s/^\[server\]$/[server]\nkeepalive = 2s/" "$TH_CONF"
pair_boot || th_fail "the two-host bed did not come up"
th_daemon_start

# round NAME [--reconnect]
round() {
	local name=$1 out=$TH_DIR/client-$1.out rc=$TH_DIR/client-$1.rc
	local go=/tmp/link-back-$1 i t0 closes
	shift
	closes=$(on server "grep -c 'disconnected: peer unreachable' $TH_LOG")
	bg_on client "$out" "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
		$(printf %q "$RMP_TESTBIN") flap $PAIR_SERVER_ADDR $TH_PORT $TIMEOUT_MS $go $*; \
		echo \$? >$rc" >/dev/null || th_fail "$name: cannot start the client"
	for ((i = 0; i < 100; i++)); do
		on client "grep -q READY $out" && break
		sleep 0.2
	done
	on client "grep -q READY $out" || th_fail "$name: the client did not start"
	sleep 1
	on client "tc qdisc add dev eth0 root netem loss 100%" || th_fail "netem failed"
	t0=$SECONDS
	sleep $DARK
	on client "grep -q 'failed after' $out" ||
		th_check_later "$name: the client's call had not failed after $DARK s dark"
	[ "$(on server "grep -c 'disconnected: peer unreachable' $TH_LOG")" -gt "$closes" ] ||
		th_check_later "$name: the server did not close the unreachable client's connection"
	on client "tc qdisc del dev eth0 root; touch $go" || th_fail "could not restore the link"
	echo "== $name: link dark for $((SECONDS - t0)) s"
	for ((i = 0; i < 200; i++)); do
		on client "test -e $rc" && break
		sleep 0.3
	done
	on client "cat $out"
	[ "$(on client "cat $rc")" = 0 ] || th_fail "$name: rmp-test flap failed"
}

round manual
round reconnect --reconnect
th_done

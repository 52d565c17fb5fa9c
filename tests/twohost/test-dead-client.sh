#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-dead-client.sh PORT -- the client's whole host dies (its guest is
# SIGKILLed: no disconnect, no FIN, nothing reaches the server). Within
# the liveness bound the server closes the connection; the ephemeral
# lease ends at once (its bytes zeroed and free), the auto-renewed lease
# lives one more ttl and then ends; the pool's free bytes come back.
source "$(dirname "$0")/lib.sh"

th_init dead-client "$1"
# TTL: the check below reads the auto-renewed lease from the server host
# right after the close, and that read has taken 5-7 s on this bed
# (TCG); with 8 s it found the lease already gone.
KEEPALIVE=2 TTL=20 LEN=1048576
# Bound: keepalive, the 1 s sweep, the transport's retries (7 x the ACK
# timeout, at most ~1 s each on this bed), with slack for TCG.
BOUND=$((KEEPALIVE + 1 + 8 + 4))
sed -i "s/^\[server\]$/[server]\nkeepalive = ${KEEPALIVE}s/" "$TH_CONF"
pair_boot || th_fail "the two-host bed did not come up"
th_daemon_start
LOG=$TH_DIR/rmpoold.log
# The holder as the daemon's log names it: "(rmp-test, 192.0.2.2:PORT)".
HOLDER='\(rmp-test, 192\.0\.2\.2:[0-9]+\)'

# server_has REGEX -- the daemon's log has a line matching REGEX.
server_has() { on server "grep -qE $(printf %q "$1") $(printf %q "$LOG")"; }

# Free bytes as rmpool stat reports them, asked on the server host.
free_bytes() {
	on server "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
		$(printf %q "$RMPOOL") -s $TH_SERVER stat --json" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["free_bytes"])'
}
free0=$(free_bytes) || th_fail "rmpool stat failed"

th_client "$(printf %q "$RMP_TESTBIN") hold $PAIR_SERVER_ADDR $TH_PORT $LEN 7 $TTL --auto-renew \
	>$TH_DIR/hold 2>&1 & sleep 0.1" >/dev/null
for ((i = 0; i < 100; i++)); do
	on client "grep -q EPHEMERAL $TH_DIR/hold" && break
	sleep 0.2
done
on client "grep -q EPHEMERAL $TH_DIR/hold" || th_fail "the holder printed no tokens"
token=$(on client "awk '\$1 == \"TOKEN\" { print \$2 }' $TH_DIR/hold")
# The grants in order: the auto-renewed lease, then the ephemeral one.
ids=$(on server "sed -n 's/.*audit: grant .* lease=\([0-9a-f]*\) .*/\1/p' $LOG")
auto_id=$(sed -n 1p <<<"$ids") eph_id=$(sed -n 2p <<<"$ids")
[ -n "$auto_id" ] && [ -n "$eph_id" ] || th_fail "no grants in the log: $ids"
echo "auto-renew lease $auto_id, ephemeral lease $eph_id, held from the client host"

# Longer than a keepalive: the live client's NIC answers the probes.
sleep $((KEEPALIVE * 2 + 1))
server_has "$HOLDER disconnected" && th_fail "a live, idle client was disconnected"
server_has "$HOLDER: quiet for .* probed" || th_check_later "the idle live client was never probed"

kill_host client
t0=$SECONDS
until server_has "$HOLDER disconnected"; do
	[ $((SECONDS - t0)) -le $((BOUND + 10)) ] || th_fail "the server never noticed the dead client host"
	sleep 0.3
done
noticed=$((SECONDS - t0))
echo "the server closed the dead client's connection $noticed s after its host died (bound $BOUND s)"
[ "$noticed" -le "$BOUND" ] || th_check_later "noticed after $noticed s, bound $BOUND s"
server_has "$HOLDER disconnected: peer unreachable" ||
	th_check_later "the close does not say why: $(on server "grep -E '$HOLDER disconnected' $LOG")"
server_has "no answer to a liveness probe" || th_check_later "no liveness probe failure logged"

# The ephemeral lease ended with the connection, its bytes zeroed, free.
server_has "lease $eph_id: $LEN bytes zeroed and free" ||
	th_check_later "the ephemeral lease's extent is not zeroed and free"
# The auto-renewed one lives on for one ttl: still readable right now.
rd="export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
	$(printf %q "$RMPOOL") read $token --length 16 >/dev/null"
t1=$SECONDS
on server "$rd" || th_check_later "the auto-renewed lease did not outlive its connection"
until server_has "lease $auto_id .* ends: expired"; do
	[ $((SECONDS - t1)) -le $((TTL + 6)) ] || break
	sleep 0.5
done
ended=$((SECONDS - t1))
server_has "lease $auto_id .* ends: expired" ||
	th_fail "the auto-renewed lease did not end one ttl after the connection"
echo "the auto-renewed lease ended $ended s after the close was seen (ttl $TTL s)"
[ "$ended" -ge $((TTL - 2)) ] || th_check_later "the auto-renewed lease ended too early ($ended s)"
on server "$rd" 2>&1 && th_check_later "the expired lease is still readable"
sleep 1
free1=$(free_bytes) || th_fail "rmpool stat failed"
[ "$free1" = "$free0" ] || th_check_later "free bytes $free1 after, $free0 before"
echo "free bytes: $free0 before, $free1 after"
th_done

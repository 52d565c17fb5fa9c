#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-replica.sh PORT -- a mirrored lease survives the death of a
# whole host: with one replica on each host, a reader on the client host
# (one 4 KiB read a millisecond, every byte checked) sees no error and no
# wrong byte when the server's host, holding the replica it reads first,
# is SIGKILLed, and reads on from the client host's replica, each read
# within the op timeout. The nodes: rmpoold "srv" (rack=a) on the server
# host, "cli" (rack=b) on the client host, registered in an etcd on the
# client host (it must outlive the other). After the kill a write reaches
# the survivor, the lease says 1 of 2 replicas live, and srv leaves the
# membership within ttl + 2 s.
#
# Replica 0 (the one reads go to first) is the first node in the placement
# order, which puts the most free bytes first: srv gets a pool twice the
# size of cli's, so the replica read first is on the host that dies.
#
# Before the kill, every rail of one node out of reach for 3 s: the
# server host's NIC drops every packet (netem loss 100 %: the host and
# its daemon live on) under a mirrored lease and a 2 x 2 striped and
# mirrored one, both written and read in a checked loop on the client
# host (rmp-cluster flap). No call may fail and no byte differ; the
# members on srv are suspect, then stale (writes went on without them:
# seen by the client), then caught up where they are by the library
# itself once srv answers again: every member live within 60 s, the same
# members as before (no repair placed any anew), and each stripe's
# replicas identical. (netem drops what srv sends, not what it gets: the
# missed writes may have landed there all the same, so identical bytes
# alone would not show a catch-up; the members' return does.)
source "$(dirname "$0")/lib.sh"

th_init cluster-replica "$1"
TTL=3
LEASE=4M
EURL=http://$PAIR_CLIENT_ADDR:$((TH_PORT + 2000))
EPEER=http://$PAIR_CLIENT_ADDR:$((TH_PORT + 3000))
CLUSTER=etcd://${EURL#http://}
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster
command -v etcd >/dev/null && command -v etcdctl >/dev/null || {
	echo "etcd and etcdctl are not installed (tests/setup.sh)" >&2
	exit 77
}
[ -x "$RMPC" ] || th_fail "no $RMPC"

# node_conf HOST NAME RACK POOL -- the config of the daemon on HOST.
node_conf() {
	local conf=$TH_DIR/$2.conf
	sed -e "s/^listen = .*/listen = $(pair_addr "$1")/" \
		-e "s|^admin_socket = .*|admin_socket = /run/rmpoold-$2.sock|" \
		-e "s/^size = .*/size = $4/" "$TH_CONF" >"$conf"
	cat >>"$conf" <<CONF
[cluster]
etcd = $EURL
node = $2
labels = rack=$3
ttl = ${TTL}s
CONF
}

# node_start HOST NAME -- rmpoold NAME on HOST, listening; its pid.
node_start() {
	local log=$TH_DIR/$2.log pid i
	pid=$(bg_on "$1" "$log" "exec $(printf %q "$RMPOOLD") -c $(printf %q "$TH_DIR/$2.conf")") ||
		th_fail "starting rmpoold $2"
	for ((i = 0; i < 120; i++)); do
		on "$1" "grep -q 'listening on' $(printf %q "$log")" && {
			echo "$pid"
			return 0
		}
		on "$1" "kill -0 $pid" || th_fail "rmpoold $2 exited during start: $(cat "$log")"
		sleep 0.25
	done
	th_fail "rmpoold $2 did not start listening in 30 s"
}

node_conf server srv a 32M
node_conf client cli b 16M
pair_boot || th_fail "the two-host bed did not come up"
t_boot=$SECONDS

# etcd on the client host (it must outlive the server's), data in its /tmp
bg_on client "$TH_DIR/etcd.log" "exec etcd --data-dir /tmp/etcd \
	--listen-client-urls $EURL --advertise-client-urls $EURL \
	--listen-peer-urls $EPEER --initial-advertise-peer-urls $EPEER \
	--initial-cluster default=$EPEER --log-level warn" >/dev/null ||
	th_fail "cannot start etcd"
on client "for i in \$(seq 1 300); do \
	ETCDCTL_API=3 etcdctl --endpoints=$EURL --dial-timeout=1s \
		--command-timeout=1s endpoint health >/dev/null 2>&1 && exit 0; \
	sleep 0.1; done; exit 1" || th_fail "etcd did not start: $(tail -n 20 "$TH_DIR/etcd.log")"

SRV_PID=$(node_start server srv) || exit 1
CLI_PID=$(node_start client cli) || exit 1
TH_LOG=$TH_DIR/srv.log
for ((i = 0; i < 120; i++)); do
	nodes=$(th_client "$(printf %q "$RMPOOL") -C $CLUSTER nodes" 2>&1)
	[ "$(grep -cE '^(srv|cli) ' <<<"$nodes")" = 2 ] && break
	sleep 0.25
done
echo "$nodes"
[ "$(grep -cE '^(srv|cli) ' <<<"$nodes")" = 2 ] || th_fail "srv and cli did not both register"

# --- Every rail of srv out of reach for 3 s, then caught up in place.
on client "mkfifo /run/flap.in" || th_fail "mkfifo"
bg_on client "$TH_DIR/flap.err" "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
	$(printf %q "$RMPC") flap $CLUSTER 4M rack 0<>/run/flap.in >$TH_DIR/flap.out; \
	echo \$? >$TH_DIR/flap.rc" >/dev/null || th_fail "cannot start rmp-cluster flap"
for ((i = 0; i < 150; i++)); do
	on client "grep -q '^ready' $TH_DIR/flap.out || test -e $TH_DIR/flap.rc" && break
	sleep 0.2
done
on client "grep -q '^ready' $TH_DIR/flap.out" ||
	th_fail "the flap leases were not made: $(on client "cat $TH_DIR/flap.out $TH_DIR/flap.err")"
sleep 1 # a few turns on both nodes
on server "tc qdisc add dev eth0 root netem loss 100%" || th_fail "netem failed"
sleep 3
on server "tc qdisc del dev eth0 root" || th_fail "could not restore srv's link"
on client "timeout 5 bash -c 'echo settle 60000 >/run/flap.in'" ||
	th_fail "cannot tell the flap client"
for ((i = 0; i < 200; i++)); do
	on client "test -e $TH_DIR/flap.rc" && break
	sleep 0.5
done
on client "cat $TH_DIR/flap.out $TH_DIR/flap.err"
[ "$(on client "cat $TH_DIR/flap.rc")" = 0 ] || th_fail "rmp-cluster flap failed"
flap=$(on client "cat $TH_DIR/flap.out")
read -r _ ops _ errors _ bad _ slowest < <(grep '^ops ' <<<"$flap")
echo "flap of srv: ops $ops errors $errors mismatches $bad slowest_ms $slowest"
[ "${ops:-0}" -gt 10 ] || th_check_later "only ${ops:-0} calls in the flap loop"
[ "$errors" = 0 ] || th_check_later "$errors calls failed over srv's flap: $(grep '^first_error' <<<"$flap")"
[ "$bad" = 0 ] || th_check_later "$bad wrong bytes read over srv's flap"
settled=$(awk '$1 == "settled_ms" { print $2 }' <<<"$flap")
echo "every member live again ${settled:-?} ms after srv's link came back"
[ "${settled:--1}" -ge 0 ] || th_check_later "not every member was live again within 60 s of srv's return"
for name in mirror stripe; do
	# writes went on without srv's member (netem drops srv's answers:
	# its bytes may have landed, its acknowledgements did not)
	[ "$(awk -v n=$name '$2 == n && $3 == "stale_seen" { print $4 }' <<<"$flap")" = 1 ] ||
		th_check_later "lease $name: no member was ever stale: the flap did not test a catch-up"
	[ "$(awk -v n=$name '$2 == n && $3 == "moved" { print $4 }' <<<"$flap")" = 0 ] ||
		th_check_later "lease $name: members placed anew (a repair, not a catch-up)"
	[ "$(awk -v n=$name '$2 == n && $3 == "whole" { print $4, $6 }' <<<"$flap")" = "0 0" ] ||
		th_check_later "lease $name: bytes differ after the catch-up: $(grep "^lease $name whole" <<<"$flap")"
done

# The reader on the client host; its stdin a fifo it holds open itself
# (<>), so that each `on` that writes a line to it leaves no EOF behind.
# tell LINE -- a line to the reader (the open would block without it).
tell() {
	on client "timeout 5 bash -c 'echo $1 >/run/mirror.in'"
}
on client "mkfifo /run/mirror.in" || th_fail "mkfifo"
bg_on client "$TH_DIR/mirror.err" "export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$(printf %q "$TH_KEY"); \
	$(printf %q "$RMPC") mirror $CLUSTER $LEASE rack 0<>/run/mirror.in >$TH_DIR/mirror.out; \
	echo \$? >$TH_DIR/mirror.rc" >/dev/null || th_fail "cannot start rmp-cluster mirror"
for ((i = 0; i < 150; i++)); do
	on client "grep -q '^ready' $TH_DIR/mirror.out || test -e $TH_DIR/mirror.rc" && break
	sleep 0.2
done
on client "cat $TH_DIR/mirror.out $TH_DIR/mirror.err"
on client "grep -q '^ready' $TH_DIR/mirror.out" ||
	th_fail "the mirrored lease was not written and read back"
r0=$(on client "awk '\$1 == \"replica\" && \$2 == 0 { print \$3 }' $TH_DIR/mirror.out")
r1=$(on client "awk '\$1 == \"replica\" && \$2 == 1 { print \$3 }' $TH_DIR/mirror.out")
# The placement order (free bytes) put replica 0 on the host to kill.
[ "$r0 $r1" = "srv cli" ] || th_fail "replicas on '$r0' and '$r1', want srv then cli"

sleep 1 # the reader reads replica 0, on the server's host
kill_host server
t_kill=$SECONDS
tell killed || th_fail "cannot tell the reader"
# the reader goes on while srv leaves the membership (ttl + 2 s)
sleep $((TTL + 2))
tell stop || th_fail "cannot stop the reader"
until on client "test -e $TH_DIR/mirror.rc"; do
	[ $((SECONDS - t_kill)) -le 60 ] ||
		th_fail "the reader did not end: $(on client "cat $TH_DIR/mirror.out $TH_DIR/mirror.err")"
	sleep 0.5
done
on client "cat $TH_DIR/mirror.err"
rc=$(on client "cat $TH_DIR/mirror.rc")
[ "$rc" = 0 ] || th_fail "rmp-cluster mirror exited $rc"
res=$(on client "grep '^reads' $TH_DIR/mirror.out")
echo "$res (replica 0 on srv, its host killed)"
read -r _ reads _ errors _ bad _ live _ total _ gone <<<"$res"
res=$(on client "grep '^after_killed' $TH_DIR/mirror.out")
echo "$res (the slowest read: the failover's wait)"
read -r _ after _ slowest <<<"$res"
[ "${reads:-0}" -gt 100 ] || th_check_later "only ${reads:-0} reads in the loop"
# the reader read on (from cli) after the host's death, not only before
[ "${after:-0}" -gt 100 ] || th_check_later "only ${after:-0} reads after the kill"
# a read fails over within the call: no wait past the op timeout (10 s)
[ "${slowest:-99999}" -le 11000 ] || th_check_later "a read took ${slowest:-?} ms"
[ "$errors" = 0 ] || th_check_later "the reader had $errors failed reads"
[ "$bad" = 0 ] || th_check_later "the reader read $bad wrong bytes"
[ "$live of $total" = "1 of 2" ] || th_check_later "replicas live after the kill: $live of $total, want 1 of 2"
[ "${gone:--1}" -ge 0 ] && [ "$gone" -le $(((TTL + 2) * 1000)) ] ||
	th_check_later "srv left the membership after ${gone:--1} ms (want <= $(((TTL + 2) * 1000)))"

# The client host's daemon and etcd serve on: srv gone, cli still there.
TH_LOG=$TH_DIR/cli.log
on client "kill -0 $CLI_PID" || th_fail "rmpoold cli died"
nodes=$(th_client "$(printf %q "$RMPOOL") -C $CLUSTER nodes") || th_fail "rmpool nodes failed"
echo "$nodes"
grep -q '^srv ' <<<"$nodes" && th_check_later "srv is still listed"
grep -q '^cli ' <<<"$nodes" || th_check_later "cli is not listed"
echo "test took $SECONDS s ($t_boot s to boot the pair)"
th_done

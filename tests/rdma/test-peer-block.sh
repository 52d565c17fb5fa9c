#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-peer-block.sh PORT -- an IPv6 peer is counted by its /64.
#
# The guest's RDMA netdev gets four IPv6 addresses: ::1, ::2, ::3 of
# 2001:db8:5:6::/64 (the daemon listens on ::1) and 2001:db8:5:7::1,
# another /64 on the same link. rmp-raw connects from a chosen one
# (RMP_RAW_SRC).
# Run 1: connections_per_address = 2. One connection held from ::1 and
# one from ::2; a third from ::3 is rejected with reason 10 (peer full):
# three addresses, one /64. From the other /64 a connection is accepted,
# and one that sends no name authenticates (shown as ADDR:PORT, longer
# than a client's name).
# Run 2: auth_failures_per_minute = 2. Three wrong proofs for tenant
# test, from ::1, ::2 and ::3, count as three failed proofs of one /64:
# a connection from ::3 naming test is then refused (reason 7), and the
# daemon logs the /64 it refuses; the other /64 still connects.
source "$(dirname "$0")/lib.sh"
rmp_init peer-block "$1"

net=2001:db8:5:6
# Long: as ADDR:PORT it does not fit a client name (24 bytes).
other=2001:db8:5:7:aaaa:bbbb:cccc:dddd
rmp_add_addrs $net::1/64 $net::2/64 $net::3/64 $other/64

RMP_TEST_ADDR=$net::1
rmp_conf server listen "$net::1"
from() { RMP_RAW_SRC=$1 "${@:2}"; }

# ---- run 1: connections per address.
rmp_conf server connections_per_address 2
daemon_start
from "$net::1" raw_bg_start h1 '^CONNECTED' idle
from "$net::2" raw_bg_start h2 '^CONNECTED' idle
check from "$net::3" rmp_raw connect peer-full
check from "$other" rmp_raw connect ok
# A client that sends no name is shown as ADDR:PORT and still proves
# its key (the proof names the empty name it signed).
RMP_RAW_NAME= check from "$other" rmp_raw stat
daemon_log_has "client #[0-9]+ \($other:[0-9]+, $other:[0-9]+\) authenticated" ||
	rmp_fail "a client with no name from $other was not authenticated under its address"
daemon_log_has "rejected connection from $net::3" ||
	rmp_fail "the daemon did not log the rejected connection from $net::3"
raw_bg_stop h2 || rmp_fail "a held connection was dropped"
raw_bg_stop h1 || rmp_fail "a held connection was dropped"
daemon_stop

# ---- run 2: failed proofs.
rmp_conf server connections_per_address 16
rmp_conf server auth_timeout 500ms
rmp_conf server auth_failures_per_minute 2
rmp_conf server access_cooldown 60s
daemon_start
for i in 1 2 3; do
	from "$net::$i" rmp_raw auth wrong-key ||
		rmp_fail "wrong key from $net::$i: not refused as it should be"
done
check from "$net::3" rmp_raw connect cooldown
daemon_log_has "refusing connections from $net::/64 that name tenant test for 60 s" ||
	rmp_fail "the daemon did not log the cool-down of $net::/64"
check from "$other" rmp_raw connect ok
daemon_stop
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-expiry-nic.sh PORT MODE -- after its deadline a lease's rkey fails
# on the very connection it was granted to: rmp-raw expire READs with it
# 1.5 s past the ttl and the NIC must answer with a remote access error
# (no library clock check is involved). lease_keys = MODE (window|region).
source "$(dirname "$0")/lib.sh"

mode=${2:-}
case $mode in
window | region) ;;
*) echo "usage: $0 PORT window|region" >&2; exit 2 ;;
esac
rmp_init "expiry-nic-$mode" "$1"
rmp_conf lease lease_keys "$mode"
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"

check rmp_raw expire 2
daemon_log_has "lease\(s\) expired and revoked" ||
	rmp_fail "the daemon did not log the expiry"
daemon_stop
rmp_pass

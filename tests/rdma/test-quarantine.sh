#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-quarantine.sh PORT MODE -- an extent whose key cannot be proven
# dead is quarantined: never handed out again (lease_keys = MODE).
#
# The daemon runs with the fault shim preloaded: in window mode
# ibv_dealloc_mw fails, in region mode ibv_dereg_mr of a 2 MiB MR fails.
# The pool is one 2 MiB hugepage. Region mode: a client allocates all of
# it, writes, reads back and frees it. Window mode: a successful
# LOCAL_INV proves a window dead and the window is kept for the next
# grant, so no dealloc is due on a live connection; the proof is a
# dealloc when the connection is gone. So a client holding two leases of
# 1 MiB, one ephemeral, one with a 2 s ttl, is killed (SIGKILL: no FREE);
# each lease ends on the dead queue pair (at once, and at its deadline)
# and its window must be deallocated. Then STAT must report 2 MiB
# quarantined, a new ALLOC of 2 MiB must fail with -ENOSPC, and the
# daemon must log "quarantined". It must still exit 0 (it may complain
# about the PD it cannot free).
source "$(dirname "$0")/lib.sh"

mode=${2:-}
size=2097152
case $mode in
window) fault=(RMP_SHIM_FAIL_DEALLOC_MW=1) ;;
region) fault=("RMP_SHIM_FAIL_DEREG_LEN=$size") ;;
*) echo "usage: $0 PORT window|region" >&2; exit 2 ;;
esac
rmp_init "quarantine-$mode" "$1"
rmp_conf lease lease_keys "$mode"
rmp_conf pool size 2M
: "${RMP_FAILSHIM:?RMP_FAILSHIM is not set}"
daemon_preload "$RMP_FAILSHIM" "${fault[@]}"

daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"
daemon_log_has "^failshim: loaded" || rmp_fail "the fault shim is not loaded"

if [ "$mode" = window ]; then
	rmp_hold $((size / 2)) 7 2
	kill -KILL $HOLDER
	wait $HOLDER 2>/dev/null
	# Both leases end within their 2 s ttl of the kill.
	for _ in $(seq 1 100); do
		rmp_stat && [ "$STAT_QUAR" -eq "$size" ] && break
		sleep 0.1
	done
else
	check rmp_raw alloc "$size" 60 --free
fi
daemon_log_has "^failshim: .* -> EIO" ||
	rmp_fail "no fault was injected: the test would prove nothing"
grep "^failshim: " "$RMP_DLOG"
rmp_stat || rmp_fail "STAT failed"
[ "$STAT_QUAR" -eq "$size" ] ||
	fail_later "quarantined bytes $STAT_QUAR, want $size"
[ "$STAT_FREE" -eq 0 ] ||
	fail_later "$STAT_FREE bytes free: the extent whose key survived is back in the pool"
rmp_raw alloc "$size" 60 --expect ENOSPC ||
	fail_later "a new ALLOC of $size bytes did not fail with -ENOSPC"
daemon_log_has "quarantined" ||
	fail_later "the daemon did not log 'quarantined'"
grep -E "quarantin" "$RMP_DLOG" | head -n 5

daemon_stop
rmp_done

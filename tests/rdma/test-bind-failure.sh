#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-bind-failure.sh PORT -- a grant whose window bind cannot be posted
# fails cleanly: the client gets the error, its connection keeps working,
# the extent goes back to the pool, and the window is deallocated (the
# daemon frees its protection domain at exit; in a sanitizer build leak
# detection stays on: a leaked window is reported and fails the test).
#
# The fault shim makes ibv_post_send refuse every chain holding an
# IBV_WR_BIND_MW (RMP_SHIM_FAIL_BIND=1).
source "$(dirname "$0")/lib.sh"

rmp_init bind-failure "$1"
rmp_conf lease lease_keys window
: "${RMP_FAILSHIM:?RMP_FAILSHIM is not set}"
daemon_preload --strict "$RMP_FAILSHIM" RMP_SHIM_FAIL_BIND=1

daemon_start
daemon_log_has "^failshim: loaded" || rmp_fail "the fault shim is not loaded"
rmp_stat || rmp_fail "STAT failed"
free0=$STAT_FREE

for _ in 1 2 3; do
	rmp_raw alloc 4096 60 --expect ENOMEM ||
		fail_later "ALLOC with a failing bind did not get -ENOMEM"
done
daemon_log_has "^failshim: .* -> ENOMEM" ||
	rmp_fail "no fault was injected: the test would prove nothing"
rmp_stat || rmp_fail "STAT after the failed grants"
[ "$STAT_FREE" -eq "$free0" ] ||
	fail_later "free bytes $STAT_FREE after failed grants, $free0 before"
[ "$STAT_LEASES" -eq 0 ] ||
	fail_later "$STAT_LEASES leases after failed grants, want 0"

daemon_stop
# Every window the failed grants allocated was deallocated: nothing of
# the PD is left when the daemon frees it.
daemon_log_has "ibv_dealloc_pd" &&
	fail_later "the daemon could not free its PD: a window leaked"
rmp_done

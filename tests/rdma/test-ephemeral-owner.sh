#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-ephemeral-owner.sh PORT -- an ephemeral lease ends with its owner,
# even when an ATTACH took its owner's key and then failed.
#
# Client A (rmp-raw hold) allocates an ephemeral lease. Client B, of the
# same tenant, takes it over with an exclusive ATTACH, which revokes A's
# key first; the fault shim makes B's window allocation fail
# (RMP_SHIM_FAIL_ALLOC_MW), so B gets -ENOMEM and no key. Nobody holds a
# key now, so no connection's close would ever end the lease: it must
# end at once (audit "ephemeral-owner-lost-its-key"), not linger to its
# deadline with an owner pointer that outlives its connection.
source "$(dirname "$0")/lib.sh"

rmp_init ephemeral-owner "$1"
rmp_conf lease lease_keys window
: "${RMP_FAILSHIM:?RMP_FAILSHIM is not set}"
gate=$RMP_TMP/no-windows
daemon_preload --strict "$RMP_FAILSHIM" "RMP_SHIM_FAIL_ALLOC_MW=$gate"
daemon_start
daemon_log_has "^failshim: loaded" || rmp_fail "the fault shim is not loaded"

raw_bg_start hold '^TOKEN ' hold --flags 1
token=${RAW_BG_LINE#TOKEN }
rmp_stat || rmp_fail "STAT failed"
[ "$STAT_LEASES" -eq 1 ] || rmp_fail "$STAT_LEASES leases, want A's one"

touch "$gate"
rmp_raw byid attach "$token" --exclusive --expect ENOMEM ||
	fail_later "the takeover did not fail with -ENOMEM"
rm -f "$gate"
daemon_log_has "^failshim: ibv_alloc_mw -> ENOMEM" ||
	rmp_fail "no fault was injected: the test would prove nothing"
rmp_stat || rmp_fail "STAT failed"
[ "$STAT_LEASES" -eq 0 ] ||
	fail_later "$STAT_LEASES lease(s) left: the ephemeral lease outlived its owner's key"
daemon_log_has "why=ephemeral-owner-lost-its-key" ||
	fail_later "no audit line for the lease's end"
# A's key was revoked: its final check fails, which is expected here.
raw_bg_stop hold || true
daemon_stop
rmp_done

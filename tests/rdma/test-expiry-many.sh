#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-expiry-many.sh PORT -- one client's leases expiring together are
# all revoked, and the client stays connected.
#
# In window mode each revoke is a LOCAL_INV on the holder's own QP, and a
# holder may have 64 key work requests in flight. rmp-raw fill allocates
# 400 leases of ttl 1 s on one connection and holds it: with an
# expiry_tick of 1 s they expire in one or two wake-ups, far more
# LOCAL_INVs than fit at once. Those that find no room must be posted as
# completions make room, not left to the revoke timeout, which would
# fail the client's connection. After 5 s (ttl, the tick, revoke_timeout
# 1 s, slack) the connection must still be served, no revocation may
# have timed out, and no lease may be left.
source "$(dirname "$0")/lib.sh"

rmp_init expiry-many "$1"
rmp_conf lease lease_keys window
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 1s
rmp_conf server revoke_timeout 1s
daemon_start

raw_bg_start fill '^FILLED ' fill 400 64 1 --hold
echo "$RAW_BG_LINE"
sleep 5
raw_bg_stop fill ||
	fail_later "the client's connection did not outlive its leases' expiry"
daemon_log_has "took more than" &&
	fail_later "a revocation timed out: its LOCAL_INV was never posted"
n=$(grep -c "lease(s) expired and revoked" "$RMP_DLOG" || true)
echo "expiry wake-ups that revoked leases: $n"
rmp_stat || rmp_fail "STAT failed"
[ "$STAT_LEASES" -eq 0 ] || fail_later "$STAT_LEASES lease(s) left, want 0"
daemon_stop
rmp_done

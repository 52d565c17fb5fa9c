#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-not-a-send.sh PORT -- a client that uses up a receive of the server
# with anything but a plain SEND gets no answer and is disconnected
# (lease_keys = window: the receive queue is shared by all connections).
#
# rmp-raw notsend imm: an RDMA WRITE with immediate into its own lease,
# which writes nothing into the server's receive buffer; before, the
# server decoded whatever another connection had left there as this
# connection's request (an ATTACH replayed this way handed out a lease's
# secret). rmp-raw notsend inv: a SEND with invalidate of its own rkey
# carrying a FREE; before, the server handled the FREE after its NIC had
# invalidated the window and posted a LOCAL_INV of it, which crashed the
# guest's kernel (rdma_rxe invalidates the window twice); a device that
# reports the failure instead left a key not proven dead, and the extent
# quarantined for good. Each time another connection is served before and
# after. Then: both violations logged, nothing in quarantine, no lease
# left but the two the attackers hold, on Soft-RoCE the start-up warning
# that a client can crash its kernel with SENDs with invalidate (see
# docs/security.md), and a clean stop.
source "$(dirname "$0")/lib.sh"

rmp_init not-a-send "$1"
rmp_conf lease lease_keys window

daemon_start
daemon_log_has "lease keys: window" ||
	rmp_fail "the daemon does not use lease_keys = window"
for how in imm inv; do
	rc=0
	rmp_raw notsend "$how" >"$RMP_TMP/$how.out" 2>"$RMP_TMP/$how.err" || rc=$?
	sed "s/^/[$how] /" "$RMP_TMP/$how.err"
	[ "$rc" -eq 0 ] && grep -q "^notsend: PASS" "$RMP_TMP/$how.err" ||
		fail_later "notsend $how failed (exit $rc)"
done
daemon_log_has "sent an RDMA WRITE with immediate data \(not part of the protocol\)" ||
	fail_later "the WRITE with immediate was not logged"
daemon_log_has "sent a SEND with invalidate \(not part of the protocol\)" ||
	fail_later "the SEND with invalidate was not logged"
rmp_stat || rmp_fail "STAT failed"
[ "$STAT_QUAR" -eq 0 ] || fail_later "$STAT_QUAR extent(s) in quarantine"
[ "$STAT_LEASES" -eq 2 ] ||
	fail_later "$STAT_LEASES lease(s), want the 2 the attackers hold"
daemon_log_has "quarantined" && fail_later "the daemon quarantined an extent"
# Where a client can crash the kernel this way, the operator is told.
case ${RMP_TEST_DEV:-rxe0} in
rxe*) daemon_log_has "lease_keys = window on Soft-RoCE: a client" ||
	fail_later "no start-up warning about window mode on Soft-RoCE" ;;
esac
rmp_done

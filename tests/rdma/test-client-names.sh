#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-client-names.sh PORT -- a client's name cannot forge fields of
# the audit log, and a client that sends no name can authenticate.
#
#   - rmp-raw named "x tenant=root client=y" allocates a lease: the
#     audit line shows the name escaped (x\x20tenant\x3droot...), and no
#     line has a field tenant=root;
#   - rmp-raw with an empty name connects, proves its key (the proof
#     names "", what it signed) and gets a STAT; the log shows it as
#     ADDR:PORT.
source "$(dirname "$0")/lib.sh"

rmp_init client-names "$1"
daemon_start

RMP_RAW_NAME="x tenant=root client=y" rmp_raw alloc 4096 60 >/dev/null ||
	fail_later "the client named 'x tenant=root client=y' was not served"
grep "audit: grant" "$RMP_DLOG"
daemon_log_has 'audit: grant tenant=test client=x\\x20tenant\\x3droot\\x20client\\x3dy peer=' ||
	fail_later "the audit line does not show the name escaped"
daemon_log_has 'tenant=root' &&
	fail_later "a log line has a field tenant=root: $(grep -m1 'tenant=root' "$RMP_DLOG")"

RMP_RAW_NAME= rmp_raw stat >/dev/null ||
	fail_later "a client that sends no name cannot authenticate"
daemon_log_has "client #[0-9]+ \\($RMP_TEST_ADDR:[0-9]+, $RMP_TEST_ADDR:[0-9]+\\) authenticated as tenant test" ||
	fail_later "a client with no name is not shown as ADDR:PORT"
daemon_stop
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-loss.sh PORT -- with 1 % loss and 2 ms delay on the client host's
# NIC, a 4000-operation READ/WRITE/CAS mix completes with the right data
# (RC retransmits what netem drops: some 40 packets at 1 %); the rate
# with and without the impairment is printed.
source "$(dirname "$0")/lib.sh"

th_init loss "$1"
OPS=${RMP_LOSS_OPS:-4000}
pair_boot || th_fail "the two-host bed did not come up"
th_daemon_start

# rate LINE -- the ops/s figure of rmp-test mix's result line.
rate() { sed -n 's/.*: \([0-9]*\) ops\/s.*/\1/p' <<<"$1"; }

clean=$(th_client "$(printf %q "$RMP_TESTBIN") mix $PAIR_SERVER_ADDR $TH_PORT $OPS 1") ||
	th_fail "the mix failed on a clean link: $clean"
echo "clean link: $clean"

on client "tc qdisc add dev eth0 root netem loss 1% delay 2ms" ||
	th_fail "netem is not available in the guest"
lossy=$(th_client "$(printf %q "$RMP_TESTBIN") mix $PAIR_SERVER_ADDR $TH_PORT $OPS 2") ||
	th_fail "the mix failed with 1% loss and 2 ms delay: $lossy"
echo "1% loss, 2 ms delay: $lossy"
stats=$(on client "tc -s qdisc show dev eth0")
echo "$stats"
dropped=$(sed -n 's/.*dropped \([0-9]*\).*/\1/p' <<<"$stats" | head -n1)
[ "${dropped:-0}" -gt 0 ] || th_check_later "netem dropped nothing: the loss was not applied"
c=$(rate "$clean") l=$(rate "$lossy")
echo "throughput: $c ops/s clean, $l ops/s lossy ($(awk -v c="$c" -v l="$l" \
	'BEGIN { printf "%.1f", 100 * (1 - l / c) }') % less); $dropped packets dropped"
th_done

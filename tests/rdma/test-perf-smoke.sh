#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-perf-smoke.sh PORT -- tests/perf/bench-vs-perftest.sh, smoke-sized,
# so that the comparison cannot rot unnoticed (it once printed perftest's
# column only, for months, after anonymous clients were refused).
#
# One round, 200 iterations a pair: it must exit 0 and its table must
# hold an rmpool figure (not "-") for each row: sync and polled READ
# latency and WRITE bandwidth. No figure is judged: under TCG they mean
# nothing at this size.
source "$(dirname "$0")/lib.sh"

rmp_init perf-smoke "$1"
out=$RMP_TMP/bench.out
rc=0
RMP_BENCH_PORT=$RMP_PORT RMP_BENCH_PERFTEST_PORT=$((RMP_PORT + 11000)) \
RMP_BENCH_ROUNDS=1 RMP_BENCH_LAT_ITERS=200 RMP_BENCH_BW_ITERS=200 \
RMP_BENCH_READ_BW=0 \
	"$(dirname "$0")/../perf/bench-vs-perftest.sh" >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" -eq 0 ] || fail_later "bench-vs-perftest.sh exited $rc"
for row in "read 64B lat median (us)" "polled: lat median (us)" \
	"write 64KiB bw (Gb/s)"; do
	line=$(grep -F "$row" "$out" | tail -n 1)
	# metric columns: ... perftest rmpool ratio range
	rm=$(awk '{ print $(NF - 2) }' <<<"$line")
	echo "$row: rmpool $rm"
	[[ $rm =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		fail_later "no rmpool figure for '$row' in the table: '$line'"
done
rmp_done

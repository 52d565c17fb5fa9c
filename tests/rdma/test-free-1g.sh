#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-free-1g.sh PORT -- freeing a 1 GiB lease does not stall the
# daemon: a client sending STATs back to back on its connection
# (rmp-raw statloop 8) sees no STAT slower than 10 times its median while
# another client frees a 1 GiB lease (STATs sent from the free on: the
# loop starts 2 s earlier), and the pool is whole again (free ==
# pool) a few seconds later, once the extent is zeroed.
#
# Under TCG the guest itself stalls a STAT now and then by 20 ms or more
# (10-30 times the median) with nothing else going on. So the same loop
# first runs alone as a control, and a slowest STAT above 10 x the median
# still passes when it is within 3 x the control's slowest, or, in the
# VM (RMP_IN_VM), under 100 ms (with the zeroing thread taking one of the
# guest's two vCPUs a STAT has been seen at 38 ms): a daemon that zeroes
# 1 GiB on its event loop stalls it for seconds under TCG. On hardware
# (a 1 GiB memset is about 100 ms there) only the ratios count.
source "$(dirname "$0")/lib.sh"

rmp_init free-1g "$1"
big=$((1 << 30))
rmp_conf pool size 1G
rmp_conf pool hugepages preferred

# 1 GiB pinned on one NUMA node, on normal pages when the node lacks
# hugepages: take the node with the most room, skip when none has it.
need_kb=$(((big >> 10) + (128 << 10)))
best='' best_kb=0
for m in /sys/devices/system/node/node[0-9]*/meminfo; do
	[ -f "$m" ] || continue
	node=${m%/meminfo}
	node=${node##*/node}
	kb=$(awk '$3 == "MemFree:" { print $4 }' "$m")
	hp=$(cat "/sys/devices/system/node/node$node/hugepages/hugepages-2048kB/free_hugepages" 2>/dev/null || echo 0)
	[ $((hp * 2048)) -ge $((big >> 10)) ] && kb=$((need_kb + hp * 2048))
	echo "NUMA node $node: $((kb >> 10)) MiB free, $hp free 2 MiB hugepages"
	if [ "$kb" -gt "$best_kb" ]; then best=$node best_kb=$kb; fi
done
if [ -z "$best" ]; then
	best_kb=$(awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo)
else
	rmp_conf pool numa_node "$best"
fi
if [ "$best_kb" -lt "$need_kb" ]; then
	echo "SKIP: a 1 GiB pool needs $((need_kb >> 10)) MiB free on one" \
		"NUMA node; the best has $((best_kb >> 10)) MiB (in the VM:" \
		"tests/vm/run-in-vm.sh --mem 4096)" >&2
	exit 77
fi

RMP_START_TIMEOUT=240 daemon_start
grep -E "pool: " "$RMP_DLOG"

# figure NAME LINE -- the value of NAME=... in a statloop line.
figure() { sed -nE "s/.* $1=([0-9]+).*/\1/p" <<<"$2"; }

# The control: the same loop with nothing else going on.
rmp_raw statloop 8 >"$RMP_TMP/control.out" 2>/dev/null ||
	rmp_fail "the control STAT loop failed"
control=$(grep '^statloop: ' "$RMP_TMP/control.out")
echo "control, nothing else going on: $control"
c_max=$(figure max_us "$control")

hold_start --len "$big"
rmp_stat || rmp_fail "STAT failed"
pool=$STAT_POOL
[ "$STAT_FREE" -eq $((pool - HOLD_LEN)) ] ||
	echo "note: free $STAT_FREE with a $HOLD_LEN-byte lease in a $pool-byte pool"

rmp_raw statloop 8 >"$RMP_TMP/loop.out" 2>"$RMP_TMP/loop.err" &
loop=$!
sleep 2
t0=$(date +%s%N)
from=$(date +%T.%3N)
echo "$from: the holder reads back 4 KiB and frees the 1 GiB lease"
hold_stop || fail_later "the 1 GiB holder failed (READ back or FREE)"
echo "$(date +%T.%3N): done, $((($(date +%s%N) - t0) / 1000000)) ms"
loop_rc=0
wait "$loop" || loop_rc=$?
cat "$RMP_TMP/loop.err" >&2
line=$(grep '^statloop: ' "$RMP_TMP/loop.out")
echo "while freeing: $line"
[ "$loop_rc" -eq 0 ] && [ -n "$line" ] ||
	rmp_fail "the STAT loop failed (exit $loop_rc)"
median=$(figure median_us "$line")
max=$(figure max_us "$line")
# The loop ran 2 s before the free began; a guest stall then is not the
# free's. The loop names its five slowest STATs with their send times:
# the slowest sent from $from on is the slowest of the free's window,
# and when all five came before, none after was slower than the least
# of them.
max=$(awk -v from="$from" '
	/^statloop: slow STAT: / {
		us = $4; at = $NF; n++
		if (at >= from && us > after) after = us
		if (least == "" || us < least) least = us
	}
	END { print n < 5 ? -1 : after ? after : least }' "$RMP_TMP/loop.err")
[ "$max" -ge 0 ] || max=$(figure max_us "$line")
awk -v m="$max" -v med="$median" -v c="$c_max" 'BEGIN {
	printf "slowest STAT %d us = %.1f x the median %d us (limit 10 x), " \
		"%.1f x the control'"'"'s slowest %d us (limit 3 x)\n",
		m, m / (med > 0 ? med : 1), med, m / (c > 0 ? c : 1), c }'
if [ "$max" -le $((10 * median)) ]; then
	echo "ok: within 10 x the median"
elif [ "$max" -le $((3 * c_max)) ]; then
	echo "ok: above 10 x the median, but within the guest's own noise" \
		"(3 x the control's slowest)"
elif [ -n "${RMP_IN_VM:-}" ] && [ "$max" -le 100000 ]; then
	echo "ok: above 10 x the median and 3 x the control's slowest, but" \
		"under 100 ms: CPU contention in the guest, not a stalled loop"
else
	fail_later "a STAT took $max us while the 1 GiB lease was freed: more than 10 x the median $median us, 3 x the control's slowest $c_max us and 100 ms"
fi

# The extent comes back once zeroed.
for _ in $(seq 1 60); do
	rmp_stat || rmp_fail "STAT failed"
	[ "$STAT_FREE" -eq "$pool" ] && break
	sleep 1
done
[ "$STAT_FREE" -eq "$pool" ] ||
	fail_later "60 s after the FREE: $STAT_FREE bytes free, $STAT_ZERO being zeroed, pool $pool"
daemon_stop
rmp_done

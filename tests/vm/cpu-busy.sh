#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cpu-busy.sh COMMAND [ARGS...] -- run COMMAND, then print how busy the
# machine's CPUs were meanwhile (from /proc/stat), and exit with its
# status. In the VM it tells whether a pass is bound by the CPU (near
# 100 %: more tests at once would only slow each) or by waits (room for
# more at once).
ticks() {
	local cpu user nice sys idle iowait irq softirq steal rest
	read -r cpu user nice sys idle iowait irq softirq steal rest </proc/stat
	echo "$((user + nice + sys + idle + iowait + irq + softirq + steal)) $((idle + iowait))"
}
read -r all0 idle0 < <(ticks)
t0=$SECONDS
"$@"
rc=$?
read -r all1 idle1 < <(ticks)
all=$((all1 - all0))
[ "$all" -gt 0 ] &&
	echo "cpu-busy: $(((100 * (all - (idle1 - idle0))) / all)) % of $(nproc) CPUs busy over $((SECONDS - t0)) s: $*" | cut -c1-160
exit $rc

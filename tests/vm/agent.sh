#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# agent.sh -- the command a guest of the two-host bed runs: it carries out
# the host's requests from the spool (tests/vm/pair.sh writes them) until
# told to stop.
#
# Spool protocol, per request N (names sort in order):
#   N.sh     written by the host (atomically, by rename): a bash script
#   N.out    its stdout and stderr
#   N.rc     its exit status, written last (by rename): the request is done
#   stop     the host wants the guest to power off (exit status in it)
# Requests run one at a time, in the guest's root, as root. A request that
# starts something in the background returns at once (pair.sh's bg_on).
set -u
spool=/run/rmp-spool
[ -d "$spool" ] || { echo "agent: no spool at $spool" >&2; exit 125; }
echo "agent: $(hostname) ready" >"$spool/ready.tmp"
mv "$spool/ready.tmp" "$spool/ready"
# A pipe nobody writes: read -t on it sleeps without forking a process.
mkfifo /tmp/agent.tick
exec 9<>/tmp/agent.tick
while :; do
	if [ -e "$spool/stop" ]; then
		read -r rc <"$spool/stop" || rc=0
		exit "${rc:-0}"
	fi
	did=0
	for req in "$spool"/*.sh; do
		[ -e "$req" ] || break
		n=${req%.sh}
		[ -e "$n.rc" ] && continue
		bash "$req" >"$n.out" 2>&1 </dev/null
		echo $? >"$n.rc.tmp"
		mv "$n.rc.tmp" "$n.rc"
		did=1
	done
	[ "$did" = 1 ] || read -r -t 0.05 -u 9 _ || :
done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# agent.sh -- the command a guest of the two-host bed runs: it carries out
# the host's requests from the spool (tests/vm/pair.sh writes them) until
# told to stop.
#
# Spool protocol, per request N (000000, 000001, ... never reused):
#   N.sh     written by the host (atomically, by rename): a bash script
#   N.out    its stdout and stderr
#   N.rc     its exit status, written last (by rename): the request is done
#   stop     the host wants the guest to power off (exit status in it)
# Requests run one at a time and in order, in the guest's root, as root. A
# request that starts something in the background returns at once (pair.sh's
# bg_on). The agent asks for the next number by name and never lists the
# directory: a listing can still show a request the host has already read
# and removed, and running that again answers the wrong request.
set -u
spool=/run/rmp-spool
[ -d "$spool" ] || { echo "agent: no spool at $spool" >&2; exit 125; }
echo "agent: $(hostname) ready" >"$spool/ready.tmp"
mv "$spool/ready.tmp" "$spool/ready"
# A pipe nobody writes: read -t on it sleeps without forking a process.
mkfifo /tmp/agent.tick
exec 9<>/tmp/agent.tick
next=0
while :; do
	if [ -e "$spool/stop" ]; then
		read -r rc <"$spool/stop" || rc=0
		exit "${rc:-0}"
	fi
	printf -v n '%s/%06d' "$spool" "$next"
	if [ -e "$n.sh" ]; then
		bash "$n.sh" >"$n.out" 2>&1 </dev/null
		echo $? >"$n.rc.tmp"
		mv "$n.rc.tmp" "$n.rc"
		next=$((next + 1))
	else
		read -r -t 0.05 -u 9 _ || :
	fi
done

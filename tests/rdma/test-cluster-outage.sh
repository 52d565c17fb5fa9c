#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-outage.sh PORT -- etcd gone for 20 s: three daemons keep
# serving, their admin sockets answer, and each registers again within
# ttl + 3 s once etcd is back.
#
# etcd and three daemons (lib-cluster.sh: n1 and n2 in rack r1, n3 in
# r2; ttl 3 s), a lease on each. etcd is paused (SIGSTOP: requests hang
# until their timeout) for 8 s, then killed (connections refused) and
# started again on its data 18 s after the pause. Meanwhile every
# daemon's `rmpoolctl status` answers within 4 s and says
# etcd-unreachable with the etcd error of each kind; the leases read,
# write and renew; each daemon grants a new lease; the daemons back off
# (about one failed request per ttl/2 at most). Once etcd answers: each
# daemon is registered again within ttl + 3 s, its record is in etcd
# with its figures of now, every lease still holds its bytes, and each
# log says once that etcd was lost and once that it answers again (a
# handful of lines, no flood).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-outage "$1"
py_start

TTL_S=3
CL_TTL=${TTL_S}s
PAUSE_S=8       # etcd paused, from the pause
RESTART_S=18    # etcd started again, from the pause
# Not held by the outage (8 s paused, then refused): a sanitized
# rmpoolctl in a loaded VM took 676-1387 ms, and 3595 ms once on a slow
# host, against a bound of 2 s then.
STATUS_MAX_MS=4000
BACK_MAX_S=$((TTL_S + 3))

# now_ms -- the clock, in ms (no fork).
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	echo $((t / 1000))
}

cluster_up
for ((i = 1; i <= CL_N; i++)); do
	rec=$(cl_record "$i")
	echo "record of n$i: $rec"
	expect_eq "n$i's record node" "$(jget "d['node']" <<<"$rec")" "n$i"
	expect_eq "n$i's record port" "$(jget "d['port']" <<<"$rec")" \
		"${CL_PORT[i]}"
	expect_eq "n$i's record labels" "$(jget "d['labels']" <<<"$rec")" \
		"{\"rack\": \"${CL_LABELS[i]#rack=}\"}"
done

# Leases by name (n1.a: daemon 1's first), with what was last written.
declare -A TOK=() WROTE=()

# lease_new I NAME TEXT -- a lease of daemon I (rmpool -s), TEXT written.
lease_new() {
	TOK[$2]=$("$RMPOOL" -s "${CL_SERVER[$1]}" alloc 1M --ttl 120) || {
		fail_later "no new lease $2 from n$1"
		return 1
	}
	printf '%s' "$3" | "$RMPOOL" write "${TOK[$2]}" ||
		fail_later "cannot write lease $2"
	WROTE[$2]=$3
}

# lease_holds NAME -- lease NAME (by its token alone: the token names its
# daemon) holds what was last written to it.
lease_holds() {
	local got
	[ -n "${TOK[$1]:-}" ] || return 0 # its alloc failed, said already
	got=$("$RMPOOL" read "${TOK[$1]}" --length "${#WROTE[$1]}") ||
		{ fail_later "cannot read lease $1"; return 1; }
	[ "$got" = "${WROTE[$1]}" ] ||
		fail_later "lease $1 holds '$got', want '${WROTE[$1]}'"
}

# lease_works NAME TEXT -- lease NAME holds its bytes, takes TEXT (read
# back by the next lease_holds) and renews.
lease_works() {
	[ -n "${TOK[$1]:-}" ] || return 0
	lease_holds "$1" || return
	printf '%s' "$2" | "$RMPOOL" write "${TOK[$1]}" ||
		fail_later "cannot write lease $1"
	WROTE[$1]=$2
	"$RMPOOL" renew "${TOK[$1]}" --ttl 120 >/dev/null ||
		fail_later "cannot renew lease $1"
}

# timed_status I -- daemon I's `rmpoolctl --json status` (10 s at most)
# into ST, its cluster state and last error into ST_STATE and ST_ERROR;
# it must answer within STATUS_MAX_MS. SLOWEST: the longest so far.
SLOWEST=0
timed_status() {
	local t0 ms rc=0 s
	t0=$(now_ms)
	ST=$(timeout 10 "$RMPOOLCTL" -s "${CL_ADMIN[$1]}" --json status) ||
		rc=$?
	ms=$(($(now_ms) - t0))
	[ "$ms" -gt "$SLOWEST" ] && SLOWEST=$ms
	[ "$ms" -lt "$STATUS_MAX_MS" ] ||
		fail_later "rmpoolctl status of n$1 took $ms ms"
	if [ "$rc" -ne 0 ]; then
		fail_later "rmpoolctl status of n$1: exit $rc after $ms ms"
		ST_STATE=none ST_ERROR=
		return 1
	fi
	s=$(jget "d['cluster']['state'] + '|' + d['cluster']['last_error']" \
		<<<"$ST")
	ST_STATE=${s%%|*}
	ST_ERROR=${s#*|}
}

# wait_unreachable REGEX SECONDS -- every daemon says etcd-unreachable
# with a last error matching REGEX, within SECONDS.
wait_unreachable() {
	local i end=$((EPOCHSECONDS + $2))
	for ((i = 1; i <= CL_N; i++)); do
		while timed_status "$i"; do
			[ "$ST_STATE" = etcd-unreachable ] &&
				[[ $ST_ERROR =~ $1 ]] && break
			if [ "$EPOCHSECONDS" -ge "$end" ]; then
				fail_later "n$i: '$ST_STATE', error '$ST_ERROR'" \
					"$2 s into the outage, want" \
					"etcd-unreachable and /$1/"
				break
			fi
			sleep 0.2
		done
		echo "n$i: $ST_STATE: $ST_ERROR"
	done
}

# poll_until T -- until the clock reaches T (ms): each daemon's status
# again and again; each must stay etcd-unreachable.
poll_until() {
	local i
	while [ "$(now_ms)" -lt "$1" ]; do
		for ((i = 1; i <= CL_N; i++)); do
			timed_status "$i" || continue
			[ "$ST_STATE" = etcd-unreachable ] ||
				fail_later "n$i is '$ST_STATE' while etcd is gone"
		done
		sleep 0.5
	done
}

for ((i = 1; i <= CL_N; i++)); do
	lease_new "$i" "n$i.a" "n$i.a before the outage"
done

echo "== etcd paused (SIGSTOP): requests to it hang"
etcd_pause
t_pause=$(now_ms)
wait_unreachable 'no answer in time' 10
for ((i = 1; i <= CL_N; i++)); do
	lease_works "n$i.a" "n$i.a while etcd was paused"
	lease_new "$i" "n$i.b" "n$i.b, granted while etcd was paused"
done
poll_until $((t_pause + PAUSE_S * 1000))

echo "== etcd killed: connections to it refused"
etcd_kill
wait_unreachable 'cannot connect' 10
for ((i = 1; i <= CL_N; i++)); do
	lease_works "n$i.a" "n$i.a while etcd was dead"
	lease_holds "n$i.b"
done
poll_until $((t_pause + RESTART_S * 1000))

echo "== etcd started again on its data"
etcd_start
t_back=$(now_ms)
echo "etcd answers $(((t_back - t_pause) / 1000)) s after the pause;" \
	"the slowest status took $SLOWEST ms"
declare -A BACK_MS=()
while [ "${#BACK_MS[@]}" -lt "$CL_N" ] &&
	[ "$(now_ms)" -lt $((t_back + (BACK_MAX_S + 10) * 1000)) ]; do
	for ((i = 1; i <= CL_N; i++)); do
		[ -n "${BACK_MS[$i]:-}" ] && continue
		timed_status "$i" && [ "$ST_STATE" = registered ] &&
			BACK_MS[$i]=$(($(now_ms) - t_back))
	done
	sleep 0.1
done
for ((i = 1; i <= CL_N; i++)); do
	ms=${BACK_MS[$i]:-}
	if [ -z "$ms" ]; then
		fail_later "n$i is not registered $((BACK_MAX_S + 10)) s" \
			"after etcd answers: '$ST_STATE', '$ST_ERROR'"
		continue
	fi
	echo "n$i registered again $ms ms after etcd answered"
	[ "$ms" -le $((BACK_MAX_S * 1000)) ] ||
		fail_later "n$i registered again only after $ms ms"
done

# Failed etcd requests of one daemon in the outage, with backoff: one
# per ttl/2 (1.5 s) once it has grown (0.5 s, 1 s first), a few more
# while etcd starts. Without backoff: one per 0.5 s, about 3 times more.
ERRORS_MAX=$(((t_back - t_pause) * 2 / (TTL_S * 1000) + 4))

# The records are in etcd again, rewritten since: the free bytes they
# say are the daemons' of now (the .b leases came during the outage).
# The logs are judged as they were when the status was read (LOGLEN):
# a loaded etcd, just restarted, may miss a request's deadline (ttl/4)
# later on, a second outage that is not this test's.
declare -A LOGLEN=()
for ((i = 1; i <= CL_N; i++)); do
	LOGLEN[$i]=$(wc -l <"${CL_LOG[i]}")
	ctl_status=$(cl_status "$i" "[d['free_bytes'], d['cluster']['outages'],
				      d['cluster']['errors']]")
	read -r free outages errors <<<"$(tr -d '[],' <<<"$ctl_status")"
	echo "n$i: free $free bytes, $outages outage(s), $errors failed" \
		"etcd request(s)"
	expect_eq "n$i's outages" "$outages" 1
	[ "$errors" -ge 2 ] && [ "$errors" -le "$ERRORS_MAX" ] ||
		fail_later "n$i: $errors failed etcd requests, want 2 to" \
			"$ERRORS_MAX (backoff)"
	rec=$(cl_record "$i")
	[ -n "$rec" ] || { fail_later "no record of n$i in etcd"; continue; }
	expect_eq "n$i's record free_bytes" \
		"$(jget "d['free_bytes']" <<<"$rec")" "$free"
	[ "$(jget "d['updated']" <<<"$rec")" -ge $((t_back / 1000 - 1)) ] ||
		fail_later "n$i's record was not rewritten: $rec"
done

for ((i = 1; i <= CL_N; i++)); do
	lease_works "n$i.a" "n$i.a after the outage"
	lease_holds "n$i.a"
	lease_holds "n$i.b"
done

# The logs: one line for the outage, one for its end, registered again;
# from the outage on, a handful of lines above debug about the cluster.
for ((i = 1; i <= CL_N; i++)); do
	log=$RMP_TMP/n$i-outage.lines # (not *.log: rmp_fail shows the daemon's)
	head -n "${LOGLEN[$i]}" "${CL_LOG[i]}" >"$log"
	n=$(grep -c 'warning: cluster: etcd: .*one line per outage' "$log")
	expect_eq "n$i's lines saying etcd is lost" "$n" 1
	n=$(grep -c 'cluster: etcd answers again after' "$log")
	expect_eq "n$i's lines saying etcd answers again" "$n" 1
	n=$(grep -c "cluster: registered as n$i in etcd" "$log")
	expect_eq "n$i's lines saying it registered" "$n" 2
	lines=$(awk '/one line per outage/ { on = 1 }
		on && /cluster:/ && !/: debug: /' "$log")
	echo "n$i's log from the outage on:"
	echo "$lines"
	[ "$(wc -l <<<"$lines")" -le 6 ] ||
		fail_later "n$i logged $(wc -l <<<"$lines") lines about the" \
			"cluster from the outage on"
done

cluster_down
rmp_done

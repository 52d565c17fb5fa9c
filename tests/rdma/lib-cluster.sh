# SPDX-License-Identifier: MIT
# lib-cluster.sh -- an etcd of the test's own and three daemons registered
# in it, in one VM: three ports, pools, directories, node names and
# labels. Source after lib.sh and lib-admin.sh; the functions need
# rmp_init NAME PORT and py_start called first.
#
# Ports: daemon I listens on PORT + I - 1 (its metrics on that + 1000),
# so a test takes PORT .. PORT + 2; etcd on PORT + 2000 (clients, $EURL)
# and PORT + 3000 (peers), its data in $RMP_TMP/etcd (kept over
# etcd_kill and etcd_start: etcd keeps its leases over a restart).
#
# cluster_up starts etcd and the daemons, and returns when each is
# registered. Before it a test may change CL_NODE, CL_LABELS, CL_POOL (by
# daemon number, 1 to 3), CL_TTL, CL_LISTEN (the daemons' listen
# addresses; default RMP_TEST_ADDR), CL_STATE (a path: daemon I keeps its
# pools in state_dir CL_STATE-I, so that a restart takes its leases back)
# and CL_CONF (text added to each daemon's config, e.g. a [tenant.NAME]
# section). Then, for daemon I:
#   CL_PORT[I]    its port; CL_SERVER[I] ADDR:PORT, what `rmpool -s`
#                 takes and the host a token of its leases names
#   CL_ADMIN[I]   its admin socket; CL_LOG[I] its log
#   on_daemon I CMD...  CMD with daemon I selected (daemon_select): ctl,
#                 ctl_json, rmpool, rmp_raw, rmp_conf, daemon_log_has ...
# cluster_down stops every daemon (each must exit 0 with a clean log, as
# daemon_stop checks for one) and then etcd.

CL_N=3
CL_NODE=([1]=n1 [2]=n2 [3]=n3)
CL_LABELS=([1]="rack=r1" [2]="rack=r1" [3]="rack=r2")
CL_POOL=([1]=4M [2]=6M [3]=8M)
CL_TTL=3s
CL_LISTEN=
CL_STATE=
CL_CONF=
CL_PORT=() CL_SERVER=() CL_ADMIN=() CL_LOG=()
ETCD_PID=
EURL=
export ETCDCTL_API=3

# etcd_start -- start etcd (again: on the same data) and wait until it
# answers (30 s at most). Skips the test (77) when etcd is not installed.
etcd_start() {
	local purl=http://127.0.0.1:$((RMP_D_PORT[1] + 3000))
	if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null
	then
		echo "etcd and etcdctl are not installed (tests/setup.sh)" >&2
		exit 77
	fi
	EURL=http://127.0.0.1:$((RMP_D_PORT[1] + 2000))
	etcd --data-dir "$RMP_TMP/etcd" --listen-client-urls "$EURL" \
		--advertise-client-urls "$EURL" --listen-peer-urls "$purl" \
		--initial-advertise-peer-urls "$purl" \
		--initial-cluster "default=$purl" --log-level warn \
		>>"$RMP_TMP/etcd.log" 2>&1 &
	ETCD_PID=$!
	[ -n "${ETCD_AT_EXIT:-}" ] || rmp_at_exit etcd_kill
	ETCD_AT_EXIT=1
	for _ in $(seq 1 300); do
		etcd_healthy && return 0
		pid_running "$ETCD_PID" || break
		sleep 0.1
	done
	tail -n 20 "$RMP_TMP/etcd.log" >&2
	rmp_fail "etcd did not start"
}

# etcd_healthy -- etcd at $EURL answers GET /health with health true.
# Over bash's /dev/tcp: etcdctl, a Go program, costs some 0.4 s of CPU
# a start under TCG, and etcd takes seconds to start there.
etcd_healthy() {
	etcd_http GET /health "" 2 && [[ $ETCD_REPLY == *'"health":"true"'* ]]
}

# etcd_http METHOD PATH BODY SECONDS -- one HTTP/1.0 request to etcd's
# JSON gateway over bash's /dev/tcp (no program started), its whole
# answer (headers and body: HTTP/1.0 reads to the close) in ETCD_REPLY;
# false when etcd takes no connection.
etcd_http() {
	local hp=${EURL#http://} fd
	ETCD_REPLY=
	{ exec {fd}<>"/dev/tcp/${hp%:*}/${hp##*:}"; } 2>/dev/null || return 1
	printf '%s %s HTTP/1.0\r\nHost: %s\r\n' "$1" "$2" "$hp" >&"$fd"
	printf 'Content-Length: %d\r\n\r\n%s' "${#3}" "$3" >&"$fd"
	IFS= read -r -d '' -t "$4" -u "$fd" ETCD_REPLY
	exec {fd}>&-
	return 0
}

# etcd_pause, etcd_resume -- SIGSTOP, SIGCONT: etcd takes connections
# (the kernel does) and answers none while paused.
etcd_pause() {
	kill -STOP "$ETCD_PID" || rmp_fail "etcd is not running"
}
etcd_resume() {
	kill -CONT "$ETCD_PID" || rmp_fail "etcd is not running"
}

# etcd_kill -- SIGKILL (paused or not), waited for: connections refused.
etcd_kill() {
	[ -n "$ETCD_PID" ] || return 0
	kill -KILL "$ETCD_PID" 2>/dev/null
	wait "$ETCD_PID" 2>/dev/null
	ETCD_PID=
}

# etcd_stop -- SIGTERM, waited for (10 s at most, then SIGKILL).
etcd_stop() {
	[ -n "$ETCD_PID" ] || return 0
	kill -TERM "$ETCD_PID" 2>/dev/null
	for _ in $(seq 1 100); do
		pid_running "$ETCD_PID" || break
		sleep 0.1
	done
	etcd_kill
}

# etcd_keys PREFIX -- how many keys in etcd start with PREFIX (its last
# byte below 0xff), into ETCD_KEYS; 1 when etcd does not answer. Asked of
# etcd's JSON gateway over bash's /dev/tcp, in this shell: cheap enough
# to poll (etcdctl costs 0.4 s of CPU a start under TCG).
declare -A ETCD_KEYS_BODY
etcd_keys() {
	local end
	if [ -z "${ETCD_KEYS_BODY[$1]:-}" ]; then
		end=${1%?}$(printf "\\$(printf '%03o' \
			$(($(printf '%d' "'${1: -1}") + 1)))")
		ETCD_KEYS_BODY[$1]=$(printf \
			'{"key":"%s","range_end":"%s","count_only":true}' \
			"$(printf '%s' "$1" | base64 -w0)" \
			"$(printf '%s' "$end" | base64 -w0)")
	fi
	etcd_http POST /v3/kv/range "${ETCD_KEYS_BODY[$1]}" 5 || return 1
	[[ $ETCD_REPLY == *'"header"'* ]] || return 1
	# a count of 0 is left out of the answer (proto3's default)
	ETCD_KEYS=0
	[[ $ETCD_REPLY =~ \"count\":\"([0-9]+)\" ]] &&
		ETCD_KEYS=${BASH_REMATCH[1]}
	return 0
}

# etcd_get KEY -- KEY's value in etcd ("" when there is none).
etcd_get() {
	etcdctl --endpoints="$EURL" --command-timeout=5s get "$1" \
		--print-value-only
}

# cl_record I -- daemon I's node record in etcd.
cl_record() {
	etcd_get "/rmpool/nodes/${CL_NODE[$1]}"
}

# cl_member_daemon TOKEN M -- the daemon (1 to CL_N) that holds member
# M of the cluster lease TOKEN, by its port in `rmpool info --json`;
# false, saying why, when no daemon has that port.
cl_member_daemon() {
	local port i
	port=$("$RMPOOL" -C "etcd://${EURL#http://}" info --json "$1" |
		jget "d['members'][$2]['port']")
	for ((i = 1; i <= CL_N; i++)); do
		[ "${CL_PORT[i]}" = "$port" ] && { echo "$i"; return 0; }
	done
	echo "member $2's port '$port' is no daemon's" >&2
	return 1
}

# on_daemon I CMD... -- CMD with daemon I selected; its exit status.
on_daemon() {
	local prev=$RMP_D rc=0
	daemon_select "$1"
	shift
	"$@" || rc=$?
	daemon_select "$prev"
	return "$rc"
}

# cl_status I EXPR -- EXPR (Python, d the reply) of daemon I's
# `rmpoolctl --json status`.
cl_status() {
	local st
	on_daemon "$1" ctl_json st status
	jget "$2" <<<"$st"
}

# cl_wait_state I STATE SECONDS -- wait until daemon I's cluster state
# is STATE; 1 when it is not after SECONDS.
cl_wait_state() {
	local end=$((EPOCHSECONDS + $3))
	while :; do
		[ "$(cl_status "$1" "d['cluster']['state']")" = "$2" ] &&
			return 0
		[ "$EPOCHSECONDS" -ge "$end" ] && return 1
		sleep 0.1
	done
}

# cluster_add I -- daemon I's directory and config: port PORT + I - 1,
# pool CL_POOL[I], node CL_NODE[I] with CL_LABELS[I] in this etcd.
cluster_add() {
	local i=$1 port=$((RMP_D_PORT[1] + $1 - 1))
	[ "$i" -eq 1 ] || daemon_add "$i" "$port"
	CL_PORT[i]=$port
	CL_SERVER[i]=$RMP_TEST_ADDR:$port
	CL_ADMIN[i]=${RMP_D_DIR[$i]}/admin.sock
	CL_LOG[i]=${RMP_D_DIR[$i]}/rmpoold.log
	on_daemon "$i" rmp_conf pool size "${CL_POOL[i]}"
	on_daemon "$i" rmp_conf cluster etcd "$EURL"
	on_daemon "$i" rmp_conf cluster node "${CL_NODE[i]}"
	on_daemon "$i" rmp_conf cluster labels "${CL_LABELS[i]}"
	on_daemon "$i" rmp_conf cluster ttl "$CL_TTL"
	[ -z "$CL_LISTEN" ] || on_daemon "$i" rmp_conf server listen "$CL_LISTEN"
	[ -z "$CL_STATE" ] ||
		on_daemon "$i" rmp_conf pool state_dir "$CL_STATE-$i"
	[ -z "$CL_CONF" ] || printf '%s\n' "$CL_CONF" \
		>>"${RMP_D_DIR[$i]}/rmpoold.conf"
}

# cluster_up -- etcd (unless it runs) and CL_N daemons, started side by
# side; returns when each listens and is registered (30 s at most).
cluster_up() {
	local i
	daemon_select 1
	[ -n "$ETCD_PID" ] || etcd_start
	for ((i = 1; i <= CL_N; i++)); do
		cluster_add "$i"
		on_daemon "$i" daemon_spawn
	done
	for ((i = 1; i <= CL_N; i++)); do
		on_daemon "$i" daemon_listening
	done
	for ((i = 1; i <= CL_N; i++)); do
		cl_wait_state "$i" registered 30 ||
			rmp_fail "daemon $i (${CL_NODE[i]}) did not register:" \
				"$(cl_status "$i" "d['cluster']")"
	done
}

# cluster_down -- SIGTERM to every daemon at once, each checked as
# daemon_stop does; then etcd stops.
cluster_down() {
	local i
	for ((i = 1; i <= CL_N; i++)); do
		daemon_select "$i"
		kill -TERM "$RMP_DPID" || rmp_fail "rmpoold $i is not running"
	done
	for ((i = 1; i <= CL_N; i++)); do
		daemon_select "$i"
		daemon_stopped
	done
	daemon_select 1
	etcd_stop
}

# wait_acks N -- until the holder of `rmp-cluster seq` ($SPID, writing
# $RMP_TMP/seq.out) acknowledged N more writes (30 s at most)
wait_acks() {
	local from
	from=$(grep -c '^acked' "$RMP_TMP/seq.out")
	for _ in $(seq 1 300); do
		[ "$(grep -c '^acked' "$RMP_TMP/seq.out")" -ge $((from + $1)) ] &&
			return 0
		pid_running "$SPID" || break
		sleep 0.1
	done
	cat "$RMP_TMP/seq.err"
	rmp_fail "the holder acknowledged no $1 more writes"
}

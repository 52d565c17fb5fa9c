# SPDX-License-Identifier: MIT
# lib.sh -- helpers for the RDMA tests: a daemon per test, checks, cleanup.
#
# A test script sources this file, calls rmp_init NAME PORT, writes extra
# config lines with rmp_conf, starts the daemon with daemon_start, runs
# clients, and ends with daemon_stop (which fails the test if the daemon
# did not exit 0 or a sanitizer reported anything) and rmp_pass.
#
# A test may run more daemons (lib-cluster.sh runs three): daemon_add
# sets up another, daemon_select makes it the one the helpers below
# act on.
#
# Environment (meson sets the first two; run-in-vm.sh the others):
#   RMP_BUILD_ROOT  the build directory holding daemon/, client/, tests/
#   RMP_FAILSHIM    the LD_PRELOAD fault shim (tests/rdma/failshim.c)
#   RMP_TEST_ADDR   an address of the RDMA device to use (else: skip, 77)

set -u

# python3 is Debian's, not whatever PATH finds first: a version manager's
# shim (pyenv's is a shell script that runs another program) costs
# seconds per start in the TCG VM, and the tests start python often. On
# PATH, not as a shell function: `python3 ... &` must leave a PID that
# kill reaches (a function would run in a subshell with python its child).
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH

# Tests poll (a log, a file, a process) in loops of sleep and seq. Under
# TCG each program started costs some 40-70 ms of CPU before it does
# anything (process accounting of the sanitized pass: 691 sleeps, 258
# seqs and 1375 greps, 5 % of its CPU), CPU the test beside needs. So
# sleep and seq are builtins here, and the pollers below match files
# with bash's own [[ ]]. sleep SECONDS is a timed read of a pipe nobody
# writes; any other argument runs the program.
exec {RMP_SLEEP_FD}<> <(:)
sleep() {
	local nothing
	if [ $# -eq 1 ] && [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
		read -r -t "$1" -u "$RMP_SLEEP_FD" nothing
		[ $? -gt 128 ] && return 0
	fi
	command sleep "$@"
}
# seq [FIRST] LAST -- the numbers from FIRST (1) to LAST, a line each.
seq() {
	local i first=1 last=${1:-}
	[ $# -eq 2 ] && first=$1 last=$2
	if [ $# -ge 1 ] && [ $# -le 2 ] && [[ $first =~ ^[0-9]+$ ]] &&
		[[ $last =~ ^[0-9]+$ ]]; then
		for ((i = first; i <= last; i++)); do echo "$i"; done
		return 0
	fi
	command seq "$@"
}

# file_match FILE REGEX -- the first line of FILE that matches REGEX
# (extended, as grep -E) is left in FILE_LINE; 1 when none does or FILE
# is missing.
file_match() {
	local lines line
	{ mapfile -t lines <"$1"; } 2>/dev/null || return 1
	for line in "${lines[@]}"; do
		[[ $line =~ $2 ]] && FILE_LINE=$line && return 0
	done
	return 1
}

RMP_FAILURES=()

rmp_fail() {
	local f d
	# What background clients said that was not shown yet, the end of
	# other programs' logs (etcd's), the daemons' logs.
	for f in "${RMP_TMP:-/nonexistent}"/*.err; do
		[ -s "$f" ] || continue
		echo "---- ${f##*/} ----" >&2
		cat "$f" >&2
	done
	for f in "${RMP_TMP:-/nonexistent}"/*.log; do
		[ -s "$f" ] || continue
		echo "---- ${f##*/} (last 20 lines) ----" >&2
		tail -n 20 "$f" >&2
	done
	for d in $(printf '%s\n' "${!RMP_D_DIR[@]}" | sort -n); do
		f=${RMP_D_DIR[$d]}/rmpoold.log
		[ -f "$f" ] || continue
		if [ "${#RMP_D_DIR[@]}" -eq 1 ]; then
			echo "---- rmpoold log ----" >&2
		else
			echo "---- rmpoold $d log ----" >&2
		fi
		tail -n 60 "$f" >&2
	done
	# A process the kernel killed for memory says nothing itself.
	f=$(dmesg 2>/dev/null | grep -iE 'out of memory|oom-kill|killed process')
	[ -z "$f" ] || printf -- '---- kernel ----\n%s\n' "$f" >&2
	# Why, last: a runner that shows only a log's end shows it.
	echo "FAIL: $*" >&2
	[ "${#RMP_FAILURES[@]}" -eq 0 ] ||
		printf '  failed check: %s\n' "${RMP_FAILURES[@]}" >&2
	exit 1
}

rmp_pass() {
	echo "PASS: $RMP_NAME"
	exit 0
}

# check CONDITION-COMMAND... -- run it; fail with its text if it fails.
check() {
	"$@" || rmp_fail "check failed: $*"
}

# fail_later MESSAGE -- a failed check that does not stop the test: the
# rest still runs, rmp_done fails the test.
fail_later() {
	echo "FAILED CHECK: $*" >&2
	RMP_FAILURES+=("$*")
}

# rmp_done -- pass, or fail listing the checks that failed.
rmp_done() {
	[ "${#RMP_FAILURES[@]}" -eq 0 ] && rmp_pass
	rmp_fail "${#RMP_FAILURES[@]} check(s) failed"
}

rmp_init() {
	RMP_NAME=$1
	RMP_PORT=$2
	: "${RMP_BUILD_ROOT:?RMP_BUILD_ROOT is not set}"
	if [ -z "${RMP_TEST_ADDR:-}" ]; then
		echo "RMP_TEST_ADDR is not set: no RDMA device to test on" >&2
		exit 77
	fi
	# RMP_RMPOOLD: another build's daemon, to compare two in one run.
	RMPOOLD=${RMP_RMPOOLD:-$RMP_BUILD_ROOT/daemon/rmpoold}
	RMPOOL=$RMP_BUILD_ROOT/client/rmpool
	RMP_TESTBIN=$RMP_BUILD_ROOT/tests/rdma/rmp-test
	RMP_RAW=$RMP_BUILD_ROOT/tests/rdma/rmp-raw
	RMP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/rmp-$RMP_NAME.XXXXXX")
	RMP_DRC=
	RMP_DAEMON_ENV=()
	trap rmp_cleanup EXIT
	# Every client of the tests is tenant "test" (RMPOOL_TENANT and
	# RMPOOL_KEY_FILE: read by rmpool, rmp-test, rmp-raw, rmpool-bench)
	# with a fresh key; all connect from one address, so no per-address
	# limit unless a test sets one.
	RMP_KEY=$RMP_TMP/test.key
	rmp_keygen "$RMP_KEY"
	export RMPOOL_TENANT=test RMPOOL_KEY_FILE=$RMP_KEY
	RMP_D=
	daemon_add 1 "$RMP_PORT" "$RMP_TMP"
	daemon_select 1
}

# The daemons of a test, by number: the test's own is 1 (rmp_init), more
# come from daemon_add. Each has its port, its directory (config
# rmpoold.conf, log rmpoold.log, admin socket admin.sock) and its pid.
declare -A RMP_D_PORT=() RMP_D_DIR=() RMP_D_PID=()

# daemon_add N PORT [DIR] -- daemon N listens on PORT, keeps its files
# in DIR (default $RMP_TMP/dN) and gets the default config. A small pool
# by default: tests run side by side in one VM, each daemon with its own
# admin socket and metrics port (PORT + 1000).
daemon_add() {
	local dir=${3:-$RMP_TMP/d$1}
	mkdir -p "$dir"
	RMP_D_PORT[$1]=$2
	RMP_D_DIR[$1]=$dir
	RMP_D_PID[$1]=
	cat >"$dir/rmpoold.conf" <<CONF
[tenant.test]
key_file = $RMP_KEY
[server]
listen = $RMP_TEST_ADDR
port = $2
log_level = debug
connections_per_address = 0
admin_socket = $dir/admin.sock
metrics_listen = 127.0.0.1:$(($2 + 1000))
[pool]
size = 16M
CONF
}

# daemon_select N -- daemon N is the one RMP_PORT, RMP_SERVER, RMP_CONF,
# RMP_DLOG, RMP_ADMIN_SOCK, RMP_DPID and every helper below (and ctl of
# lib-admin.sh) mean; the pid of the one selected before is kept.
daemon_select() {
	[ -n "${RMP_D_DIR[$1]:-}" ] || rmp_fail "no daemon $1 (daemon_add)"
	[ -n "$RMP_D" ] && RMP_D_PID[$RMP_D]=$RMP_DPID
	RMP_D=$1
	RMP_PORT=${RMP_D_PORT[$1]}
	RMP_SERVER=$RMP_TEST_ADDR:$RMP_PORT
	RMP_CONF=${RMP_D_DIR[$1]}/rmpoold.conf
	RMP_DLOG=${RMP_D_DIR[$1]}/rmpoold.log
	RMP_ADMIN_SOCK=${RMP_D_DIR[$1]}/admin.sock
	RMP_DPID=${RMP_D_PID[$1]}
}

# py_start -- start this test's Python server (pyserve.py): after it,
# pyrun runs scripts without a python3 start each (about 1 s in the TCG
# guest). Call it after rmp_init, from the test's own shell.
RMP_PYS=
py_start() {
	RMP_PYS=$RMP_TMP/pyserve
	mkdir "$RMP_PYS" && mkfifo "$RMP_PYS/req" "$RMP_PYS/rc" ||
		rmp_fail "cannot make the FIFOs of pyserve"
	python3 "$(dirname "${BASH_SOURCE[0]}")/pyserve.py" "$RMP_PYS" $$ &
	RMP_PYS_PID=$!
}

# pyrun [--stdin] SCRIPT|-c CODE [ARGS...] -- what `python3 SCRIPT ARGS`
# prints and its exit status, run by the Python server if the test
# started one (else by python3 itself). --stdin: the script reads this
# function's stdin (otherwise an empty one). One call at a time: from the
# test's own flow, never from a background job (those run python3).
pyrun() {
	local in= rc out err
	if [ "${1:-}" = --stdin ]; then
		shift
		IFS= read -r -d '' in || true
	fi
	if [ -z "$RMP_PYS" ]; then
		python3 "$@" <<<"$in"
		return
	fi
	pid_running "$RMP_PYS_PID" || rmp_fail "the pyserve process is gone"
	{ printf '%s\0' "$#" "$PWD" "$@"; printf '%s' "$in"; } >"$RMP_PYS/req"
	IFS= read -r rc <"$RMP_PYS/rc"
	IFS= read -r -d '' out <"$RMP_PYS/out" || true
	IFS= read -r -d '' err <"$RMP_PYS/err" || true
	printf '%s' "$out"
	printf '%s' "$err" >&2
	return "${rc:-1}"
}

# rmp_python ARGS... -- Debian's python3 with the build's rmpool module
# importable (tests/python/pyenv.sh: the sanitizer runtime too, in an
# ASan build); 77 when the build has no extension.
RMP_PYENV=$(cd "$(dirname "${BASH_SOURCE[0]}")/../python" && pwd)/pyenv.sh
rmp_python() {
	(
		. "$RMP_PYENV" "$RMP_BUILD_ROOT" || exit 77
		exec /usr/bin/python3 "$@"
	)
}

# rmp_keygen FILE -- a new random 32-byte tenant key, hex, mode 600.
rmp_keygen() {
	(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$1")
}

# pid_running PID -- the process exists and is not a zombie (kill -0
# succeeds on a child that exited but was not waited for).
# Without a fork: tests call it in polling loops, and pyrun per request.
pid_running() {
	local st
	{ IFS= read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
	st=${st##*) } # after the command name, which may hold ") "
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

# Background rmp-raw clients, by NAME: stdin a fifo the test keeps open
# (a line or EOF on it tells the client to finish), stdout in
# $RMP_TMP/NAME.out, stderr in $RMP_TMP/NAME.err (shown when it stops or
# the test fails; then moved to $RMP_TMP/NAME.log).
declare -A RAW_BG_PID=() RAW_BG_FD=()

# raw_bg_start NAME REGEX SUBCOMMAND [ARGS...] -- start rmp-raw SUBCOMMAND
# and wait (60 s at most) for a line of its stdout matching REGEX; the
# line is left in RAW_BG_LINE.
raw_bg_start() {
	local name=$1 re=$2 fd
	shift 2
	rm -f "$RMP_TMP/$name.in" "$RMP_TMP/$name.out"
	mkfifo "$RMP_TMP/$name.in"
	(
		raw_bg_close_all
		exec "$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" "$@"
	) <"$RMP_TMP/$name.in" >"$RMP_TMP/$name.out" 2>"$RMP_TMP/$name.err" &
	RAW_BG_PID[$name]=$!
	exec {fd}>"$RMP_TMP/$name.in"
	RAW_BG_FD[$name]=$fd
	raw_bg_wait "$name" "$re"
	return
}

# raw_bg_wait NAME REGEX [SECONDS] -- wait for a line of NAME's stdout
# matching REGEX (default 60 s); the line is left in RAW_BG_LINE. With
# RAW_BG_SOFT set, a client that prints none returns 1 instead of
# failing the test (raw_bg_start too).
raw_bg_wait() {
	local name=$1 re=$2 secs=${3:-60}
	local out=$RMP_TMP/$name.out
	for _ in $(seq 1 $((secs * 10))); do
		file_match "$out" "$re" && RAW_BG_LINE=$FILE_LINE && return 0
		if ! pid_running "${RAW_BG_PID[$name]}"; then
			file_match "$out" "$re" && RAW_BG_LINE=$FILE_LINE &&
				return 0
			[ -n "${RAW_BG_SOFT:-}" ] && return 1
			rmp_fail "rmp-raw $name exited before printing '$re'"
		fi
		sleep 0.1
	done
	[ -n "${RAW_BG_SOFT:-}" ] && return 1
	rmp_fail "rmp-raw $name printed no '$re' in $secs s"
}

# raw_bg_close_all -- close this shell's ends of the clients' fifos: for
# children, which would otherwise keep a client from seeing EOF.
raw_bg_close_all() {
	local fd
	for fd in "${RAW_BG_FD[@]}"; do exec {fd}>&-; done
}

# raw_bg_send NAME [LINE] -- send NAME a line ("go" by default) on its
# stdin (in a subshell: a client that is gone means SIGPIPE, for the
# subshell alone).
raw_bg_send() {
	(echo "${2:-go}" >&"${RAW_BG_FD[$1]}") 2>/dev/null
}

# raw_bg_stop NAME -- send NAME a line and close its stdin (any child
# started with & may hold the fifo open too: the line is what counts),
# wait for it, show its stderr; returns its exit status.
raw_bg_stop() {
	local name=$1 fd=${RAW_BG_FD[$1]:-} rc=0
	if [ -n "$fd" ]; then
		raw_bg_send "$name"
		exec {fd}>&-
	fi
	unset "RAW_BG_FD[$name]"
	wait "${RAW_BG_PID[$name]}" || rc=$?
	unset "RAW_BG_PID[$name]"
	# Shown now, kept in NAME.log for later checks.
	if [ -f "$RMP_TMP/$name.err" ]; then
		sed "s/^/[$name] /" "$RMP_TMP/$name.err" >&2
		cat "$RMP_TMP/$name.err" >>"$RMP_TMP/$name.log"
		rm -f "$RMP_TMP/$name.err"
	fi
	[ "$rc" -eq 0 ] || echo "rmp-raw $name exited with status $rc" >&2
	return "$rc"
}

# hold_start [ARGS...] -- rmp-raw hold in the background (name "hold");
# sets HOLD_ADDR HOLD_RKEY HOLD_LEN HOLD_ID from its LEASE line.
hold_start() {
	raw_bg_start hold '^LEASE ' hold "$@"
	read -r _ HOLD_ADDR HOLD_RKEY HOLD_LEN HOLD_ID <<<"$RAW_BG_LINE"
	echo "holder: lease $HOLD_ID at $HOLD_ADDR rkey $HOLD_RKEY," \
		"$HOLD_LEN bytes"
}

# hold_stop -- tell the holder to finish; returns its exit status.
hold_stop() {
	raw_bg_stop hold
}

# rmp_hold LEN SEED TTL -- start "rmp-test hold" in the background: a
# lease and an ephemeral lease of LEN bytes (ttl TTL s) written with the
# pattern SEED; return once both tokens are out ($RMP_TMP/hold). Sets
# HOLDER to its pid, for the test to kill.
rmp_hold() {
	"$RMP_TESTBIN" hold "$RMP_TEST_ADDR" "$RMP_PORT" "$1" "$2" "$3" \
		>"$RMP_TMP/hold" &
	HOLDER=$!
	for _ in $(seq 1 200); do
		file_match "$RMP_TMP/hold" EPHEMERAL && return 0
		kill -0 $HOLDER 2>/dev/null || rmp_fail "holder died"
		sleep 0.1
	done
	rmp_fail "the holder printed no tokens in 20 s"
}

# rmp_raw ARGS... -- rmp-raw against this test's daemon.
rmp_raw() {
	"$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" "$@"
}

# rmp_stat -- one STAT (rmp-raw stat, a new connection); prints the
# figures and sets STAT_POOL STAT_FREE STAT_LEASES STAT_KEYS STAT_QUAR
# STAT_ZERO.
rmp_stat() {
	local line
	line=$(rmp_raw stat) || return 1
	echo "stat: $line"
	read -r _ STAT_POOL _ STAT_FREE _ STAT_LEASES _ STAT_KEYS \
		_ STAT_QUAR _ STAT_ZERO <<<"$line"
}

# rmp_at_exit CMD -- CMD (evaluated) runs at the test's exit, after its
# daemons are killed, in the order added: the one way to add to the
# cleanup (a trap set by a test or a lib would replace another's).
RMP_AT_EXIT=()
rmp_at_exit() {
	RMP_AT_EXIT+=("$1")
}

# rmp_at_exit_first CMD -- CMD runs at the test's exit before anything
# is killed: for what needs its server alive to be undone (a swap device
# or a mount on an NBD export: swapoff reads every page back).
RMP_AT_EXIT_FIRST=()
rmp_at_exit_first() {
	RMP_AT_EXIT_FIRST+=("$1")
}

rmp_cleanup() {
	local jobs a
	for a in "${RMP_AT_EXIT_FIRST[@]}"; do
		eval "$a"
	done
	# Background clients of a failed test must not outlive it.
	raw_bg_close_all
	jobs=$(jobs -p)
	[ -n "$jobs" ] && kill -KILL $jobs 2>/dev/null
	[ -n "${RMP_D:-}" ] && RMP_D_PID[$RMP_D]=${RMP_DPID:-}
	for a in "${RMP_D_PID[@]}"; do
		[ -n "$a" ] || continue
		kill -KILL "$a" 2>/dev/null
		wait "$a" 2>/dev/null
	done
	for a in "${RMP_AT_EXIT[@]}"; do
		eval "$a"
	done
	# Last, so that the next test finds the netdev as it was.
	for a in "${RMP_ADDED_ADDRS[@]}"; do
		ip addr del "$a" dev "$RMP_ADDR_DEV" 2>/dev/null || true
	done
	rm -rf "$RMP_TMP"
}

# rmp_gid_count -- distinct non-zero GIDs of the RDMA devices (RoCE v1
# and v2 entries of one address count once).
rmp_gid_count() {
	cat /sys/class/infiniband/*/ports/1/gids/* 2>/dev/null | sort -u |
		grep -vc '^0000:0000:0000:0000:0000:0000:0000:0000$'
}

# rmp_add_addrs ADDR/PREFIX... -- more addresses on the netdev that has
# RMP_TEST_ADDR, for clients that connect from several (RMP_RAW_SRC):
# waits until the RDMA device has a GID for each, and removes them when
# the test ends (rmp_cleanup). IPv6 ones skip duplicate detection.
RMP_ADDED_ADDRS=()
RMP_ADDR_DEV=
rmp_add_addrs() {
	rmp_add_addrs_on "$RMP_TEST_ADDR" "$@"
}

# rmp_add_addrs_on ADDR ADDR/PREFIX... -- rmp_add_addrs on the netdev that
# has ADDR (one netdev per test).
rmp_add_addrs_on() {
	local a n0 n on=$1
	shift
	RMP_ADDR_DEV=$(ip -o addr show | awk -v a="$on" \
		'{ split($4, p, "/"); if (p[1] == a) print $2 }')
	[ -n "$RMP_ADDR_DEV" ] || rmp_fail "no netdev has $on"
	n0=$(rmp_gid_count)
	for a in "$@"; do
		case $a in
		*:*) ip -6 addr add "$a" dev "$RMP_ADDR_DEV" nodad ;;
		*) ip addr add "$a" dev "$RMP_ADDR_DEV" ;;
		esac || rmp_fail "cannot add $a to $RMP_ADDR_DEV"
		RMP_ADDED_ADDRS+=("$a")
	done
	for _ in $(seq 1 50); do
		n=$(rmp_gid_count)
		[ "$n" -ge $((n0 + $#)) ] && return 0
		sleep 0.1
	done
	rmp_fail "only $((n - n0)) of $# new GIDs appeared on the RDMA device"
}

# rmp_conf SECTION KEY VALUE -- set a key: replace it where the file has
# it already (key names are unique across sections), else add it.
rmp_conf() {
	if grep -q "^$2 = " "$RMP_CONF"; then
		sed -i "s|^$2 = .*|$2 = $3|" "$RMP_CONF"
	else
		printf '[%s]\n%s = %s\n' "$1" "$2" "$3" >>"$RMP_CONF"
	fi
}

# daemon_asan_lib -- the ASan runtime rmpoold links, if it is sanitized.
daemon_asan_lib() {
	ldd "$RMPOOLD" 2>/dev/null | awk '$1 ~ /^libasan/ { print $3 }'
}

# daemon_preload [--strict] LIB [VAR=VALUE...] -- the next daemon_start runs rmpoold
# with LIB (the fault shim) preloaded and the variables set. In a
# sanitizer build the ASan runtime must come first in the preload list:
# it is put there; and the verbs objects a failed dealloc/dereg leaves
# behind on purpose are not reported as the daemon's leaks.
#
# With --strict first, leaks stay reported: for faults after which the
# daemon must release everything.
daemon_preload() {
	local lib asan supp=$RMP_TMP/lsan.supp strict=
	[ "$1" = --strict ] && { strict=1; shift; }
	lib=$1
	shift
	[ -f "$lib" ] || rmp_fail "no preload library $lib"
	asan=$(daemon_asan_lib)
	printf 'leak:librxe-rdmav\nleak:/libibverbs/\n' >"$supp"
	RMP_DAEMON_ENV=("LD_PRELOAD=${asan:+$asan }$lib" "$@")
	[ -n "$strict" ] || RMP_DAEMON_ENV+=(
		"LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp")
}

# daemon_start -- start rmpoold (with RMP_DAEMON_ENV) and wait until it
# listens (RMP_START_TIMEOUT seconds, default 30).
daemon_start() {
	daemon_spawn
	daemon_listening
}

# daemon_spawn -- start rmpoold, not waiting (several start side by side).
daemon_spawn() {
	(
		raw_bg_close_all
		exec env "${RMP_DAEMON_ENV[@]}" "$RMPOOLD" -c "$RMP_CONF"
	) >"$RMP_DLOG" 2>&1 &
	RMP_DPID=$!
}

# daemon_listening -- the rest of daemon_start: wait until it listens.
daemon_listening() {
	local secs=${RMP_START_TIMEOUT:-30}
	for _ in $(seq 1 $((secs * 10))); do
		file_match "$RMP_DLOG" "listening on" && return 0
		pid_running "$RMP_DPID" ||
			rmp_fail "rmpoold $RMP_D exited during start"
		sleep 0.1
	done
	rmp_fail "rmpoold $RMP_D did not start listening in $secs s"
}

# daemon_wait_exit SECONDS -- wait for the daemon (already told to stop)
# to exit; 0 with its status in RMP_DRC, or 1 if it still runs.
daemon_wait_exit() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		pid_running "$RMP_DPID" || break
		sleep 0.1
	done
	pid_running "$RMP_DPID" && return 1
	RMP_DRC=0
	wait "$RMP_DPID" || RMP_DRC=$?
	RMP_DPID=
	return 0
}

# daemon_check_log -- no sanitizer report in the daemon log.
daemon_check_log() {
	if grep -qE "Sanitizer|runtime error:" "$RMP_DLOG"; then
		rmp_fail "sanitizer report in the log of rmpoold $RMP_D"
	fi
}

# daemon_stop -- SIGTERM; the daemon must exit 0 (within
# RMP_STOP_TIMEOUT seconds, default 60) with a clean log.
daemon_stop() {
	kill -TERM "$RMP_DPID" || rmp_fail "rmpoold $RMP_D is not running"
	daemon_stopped
}

# daemon_stopped -- the rest of daemon_stop, for a daemon already sent
# SIGTERM (several stop side by side).
daemon_stopped() {
	local secs=${RMP_STOP_TIMEOUT:-60}
	daemon_wait_exit "$secs" ||
		rmp_fail "rmpoold $RMP_D still runs $secs s after SIGTERM"
	[ "$RMP_DRC" -eq 0 ] ||
		rmp_fail "rmpoold $RMP_D exited with status $RMP_DRC"
	daemon_check_log
}

# daemon_log_has REGEX -- the daemon log matches (extended regex).
daemon_log_has() {
	grep -qE "$1" "$RMP_DLOG"
}

# rmpool ARGS... -- the CLI against this test's daemon.
rmpool() {
	"$RMPOOL" -s "$RMP_SERVER" "$@"
}

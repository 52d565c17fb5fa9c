# SPDX-License-Identifier: MIT
# pair.sh -- the two-host fault bed: a server guest and a client guest, each
# with its own NIC and rxe device, linked to each other and to nothing else.
# Sourced by host-side test scripts (tests/twohost/); bash.
#
#   pair_boot            boot both hosts (server 192.0.2.1, client 192.0.2.2);
#                        with PAIR_SHARED set, use the pair another process
#                        booted (PAIR_SERVER_PID, PAIR_CLIENT_PID, PAIR_DIR)
#   on HOST CMD          run the bash command CMD on HOST (server|client) in
#                        the caller's directory; its output on stdout, its
#                        exit status returned (125: HOST did not answer in
#                        RMP_ON_TIMEOUT seconds, default 300)
#   bg_on HOST LOG CMD   start CMD in the background on HOST, output to LOG
#   kill_host HOST       SIGKILL HOST's QEMU: a host that dies at once
#   boot_host HOST       boot HOST (again) and wait for its agent (a guest
#                        that hangs while booting is booted once more)
#   pair_stop            power both off (on exit too, unless the caller has
#                        an EXIT trap of its own: then that must call it)
#
# Each guest runs tests/vm/run-in-vm.sh with tests/vm/agent.sh as its
# command; requests go through a spool directory that the guest sees
# uncached (PAIR_DIR/HOST.spool). Ethernet frames travel between the two
# QEMU processes as UDP datagrams on 127.0.0.1, so netem, `ip link` and
# a killed guest act on a real link. Both guests share the host's root
# over 9p as in the one-host VM; files written in one guest reach the other
# only through the host (write them, then read them with `on`).
#
# Needs: PAIR_DIR (a directory visible in the guests, i.e. not under /tmp
# or /run) and RMP_BUILD_ROOT. Knobs: RMP_PAIR_MEM (MiB per guest, default
# 1024), RMP_PAIR_TIMEOUT (seconds a guest may live, default 1200).

PAIR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PAIR_SERVER_ADDR=192.0.2.1
PAIR_CLIENT_ADDR=192.0.2.2
declare -A PAIR_VM_PID=()

pair_log() { printf 'pair: %s\n' "$*" >&2; }

# pair_ports -- two free UDP ports on 127.0.0.1, one per guest's link end.
pair_ports() {
	python3 - <<'PY'
import socket
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
PY
}

pair_addr() { [ "$1" = server ] && echo $PAIR_SERVER_ADDR || echo $PAIR_CLIENT_ADDR; }

# boot_host HOST -- boot HOST and wait for its agent. A guest boots in
# 5-15 s; one that has not answered in RMP_PAIR_BOOT_WAIT seconds (default
# 90) is killed, its console shown, and booted once more: a guest that
# hangs while booting under TCG (seen once in CI: nothing on its console
# for 195 s) is the emulator's trouble, not the test's. Its console (the
# guest's setup stages are on: RMP_VM_DEBUG) says where it stopped.
boot_host() {
	local host=$1 try
	for try in 1 2; do
		boot_host_once "$host" && return 0
		pair_log "$host did not come up (boot $try of 2); its console:"
		tail -n 30 "$PAIR_DIR/$host.console" >&2
		host_down "$host"
	done
	return 1
}

boot_host_once() {
	local host=$1 spool=$PAIR_DIR/$1.spool link i
	local wait=$(( ${RMP_PAIR_BOOT_WAIT:-90} * 10 ))
	[ "$host" = server ] && link=$PAIR_SPORT:$PAIR_CPORT || link=$PAIR_CPORT:$PAIR_SPORT
	rm -rf "$spool"
	mkdir -p "$spool"
	rm -f "$PAIR_DIR/$host.pid"
	RMP_VM_DEBUG=1 RMP_VM_HUGEPAGES=${RMP_PAIR_HUGEPAGES:-32} \
	"$PAIR_TOP/tests/vm/run-in-vm.sh" --build-dir "$RMP_BUILD_ROOT" \
		--mem "${RMP_PAIR_MEM:-1024}" --timeout "${RMP_PAIR_TIMEOUT:-1200}" \
		--name "$host" --addr "$(pair_addr "$host")" --link "$link" \
		--spool "$spool" --pidfile "$PAIR_DIR/$host.pid" \
		-- bash "$PAIR_TOP/tests/vm/agent.sh" \
		>"$PAIR_DIR/$host.console" 2>&1 </dev/null &
	PAIR_VM_PID[$host]=$!
	# The next request number lives in a file: `on` is often called in a
	# command substitution, a subshell, where a shell variable would not
	# keep its increment and a number would be used twice.
	echo 0 >"$PAIR_DIR/$host.seq"
	for ((i = 0; i < wait; i++)); do
		[ -e "$spool/ready" ] && return 0
		kill -0 "${PAIR_VM_PID[$host]}" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

# host_down HOST -- SIGKILL HOST's QEMU (if it runs) and reap run-in-vm.
host_down() {
	local pid
	[ -n "${PAIR_VM_PID[$1]:-}" ] || return 0
	pid=$(cat "$PAIR_DIR/$1.pid" 2>/dev/null) && kill -KILL "$pid" 2>/dev/null
	timeout 60 tail --pid="${PAIR_VM_PID[$1]}" -f /dev/null ||
		kill "${PAIR_VM_PID[$1]}" 2>/dev/null
	wait "${PAIR_VM_PID[$1]}" 2>/dev/null
	PAIR_VM_PID[$1]=
}

pair_boot() {
	: "${PAIR_DIR:?PAIR_DIR is not set}" "${RMP_BUILD_ROOT:?RMP_BUILD_ROOT is not set}"
	local t0=$SECONDS
	# A pair another process booted (tests/twohost/test-pair.sh):
	# this process uses it and never powers it off.
	if [ -n "${PAIR_SHARED:-}" ]; then
		PAIR_VM_PID[server]=${PAIR_SERVER_PID:?} PAIR_VM_PID[client]=${PAIR_CLIENT_PID:?}
		return 0
	fi
	read -r PAIR_SPORT PAIR_CPORT < <(pair_ports)
	# The caller's own EXIT trap, if any, must call pair_stop.
	[ -n "$(trap -p EXIT)" ] || trap pair_stop EXIT
	# One at a time: the first boot builds the initramfs cache.
	boot_host server || return 1
	boot_host client || return 1
	pair_log "both hosts up in $((SECONDS - t0)) s (link udp $PAIR_SPORT <-> $PAIR_CPORT)"
	# The link works both ways before anything relies on it.
	on client "busybox ping -c 1 -W 5 $PAIR_SERVER_ADDR >/dev/null" ||
		{ pair_log "no ping from client to server"; return 1; }
}

on() {
	local host=$1 cmd=$2 spool=$PAIR_DIR/$1.spool seq n rc i limit
	limit=$(( ${RMP_ON_TIMEOUT:-300} * 20 ))
	read -r seq <"$PAIR_DIR/$host.seq" || return 125
	echo $((seq + 1)) >"$PAIR_DIR/$host.seq"
	printf -v n '%06d' "$seq"
	printf 'cd %q || exit 125\n%s\n' "$PWD" "$cmd" >"$spool/$n.sh.tmp"
	mv "$spool/$n.sh.tmp" "$spool/$n.sh"
	for ((i = 0; i < limit; i++)); do
		[ -e "$spool/$n.rc" ] && break
		if ! kill -0 "${PAIR_VM_PID[$host]:-0}" 2>/dev/null; then
			pair_log "$host is not running: cannot run: $cmd"
			return 125
		fi
		sleep 0.05
	done
	if [ ! -e "$spool/$n.rc" ]; then
		pair_log "$host did not finish in ${RMP_ON_TIMEOUT:-300} s: $cmd"
		return 125
	fi
	cat "$spool/$n.out"
	read -r rc <"$spool/$n.rc"
	rm -f "$spool/$n.sh" "$spool/$n.out" "$spool/$n.rc"
	return "$rc"
}

bg_on() {
	local host=$1 log=$2
	shift 2
	on "$host" "setsid bash -c $(printf %q "$*") >$(printf %q "$log") 2>&1 </dev/null & echo \$!"
}

kill_host() {
	local pid
	pid=$(cat "$PAIR_DIR/$1.pid" 2>/dev/null) || return 1
	kill -KILL "$pid"
	wait "${PAIR_VM_PID[$1]}" 2>/dev/null
	PAIR_VM_PID[$1]=
	pair_log "$1 killed"
}

pair_stop() {
	local host
	for host in server client; do
		[ -n "${PAIR_VM_PID[$host]:-}" ] || continue
		echo 0 >"$PAIR_DIR/$host.spool/stop"
	done
	for host in server client; do
		[ -n "${PAIR_VM_PID[$host]:-}" ] || continue
		# run-in-vm.sh returns once the guest powered off (or timed out).
		timeout 60 tail --pid="${PAIR_VM_PID[$host]}" -f /dev/null ||
			kill "${PAIR_VM_PID[$host]}" 2>/dev/null
		wait "${PAIR_VM_PID[$host]}" 2>/dev/null
		PAIR_VM_PID[$host]=
	done
	return 0
}

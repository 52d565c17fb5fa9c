#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-vs-perftest.sh -- librmpool's data path side by side with perftest,
# same device, same message sizes and iteration counts, in one run.
#
# Runs where there is an RDMA device: RMP_TEST_ADDR names an address of it
# (RMP_TEST_DEV its device, default rxe0). Without hardware, through the
# Soft-RoCE VM, from the top of the checkout:
#
#   tests/vm/run-in-vm.sh --build-dir build -- tests/perf/bench-vs-perftest.sh
#
# It starts its own rmpoold (64 MiB pool, hugepages preferred, listening
# on RMP_TEST_ADDR, on a free port), then runs each pair, perftest server
# in the background and client to RMP_TEST_ADDR, then rmpool-bench:
#
#   ib_read_lat -s 64 -n LAT_ITERS         vs  rmpool-bench read-lat --size 64
#                                              (and read-lat --busy-poll)
#   ib_write_bw -s 65536 -n BW_ITERS -t D  vs  rmpool-bench write-bw --size 65536 --depth D
#   ib_read_bw  -s 65536 -n BW_ITERS -t D  vs  rmpool-bench read-bw --size 65536 --depth D
#
# ROUNDS times, interleaved (odd rounds perftest first, even rounds rmpool
# first). It prints each tool's result line, then a table: metric,
# perftest, rmpool (medians over the rounds), ratio = rmpool/perftest, and
# the range of the per-round ratios. Under TCG emulation only ratios within
# one run mean something, and on a busy host even those swing from round
# to round (x2 happens for latency): read the range before the ratio.
# This is a benchmark, not a test: it exits non-zero when a tool failed
# (or rmpoold did not stop cleanly), never because of a figure.
#
# perftest runs on verbs with the RoCE GID of RMP_TEST_ADDR (-x, found in
# sysfs; -F: no CPU frequency check, VMs fail it); if that fails it is
# tried once over rdma_cm (-R), and that choice is kept for the run. Its
# "MB/sec" is MiB/s; the table compares Gb/s (10^9 bit/s).
#
# What differs by design: perftest spins on ibv_poll_cq; rmpool's
# synchronous calls spin 20 us, then arm the CQ and sleep on the
# completion channel (on rxe each arm is a system call), so a slow round
# trip costs them a wake-up. "polled" rows use rmp_post_read + rmp_submit +
# rmp_poll(.., 0) instead. In bandwidth, perftest signals every WR at
# these depths and posts them one by one; rmpool chains what it reposts
# after each poll into one doorbell and signals only the batch's last WR.
#
# Environment (all optional):
#   RMP_BUILD_ROOT           build directory (default: <checkout>/build)
#   RMP_BENCH_ROUNDS         rounds of every pair (default 2; each round
#                            takes about a minute in the TCG guest)
#   RMP_BENCH_LAT_ITERS      iterations of the latency pair (default 2000)
#   RMP_BENCH_BW_ITERS       iterations of the bandwidth pairs (default 1000)
#   RMP_BENCH_DEPTH          operations in flight for *-bw (default 16)
#   RMP_BENCH_READ_BW        0: leave out the read bandwidth pair (default 1)
#   RMP_BENCH_PORT           first rmpoold port to try (default 7690)
#   RMP_BENCH_PERFTEST_PORT  first perftest port to try (default 18700)
#   RMP_BENCH_GID            perftest's GID index (default: from sysfs)
#   RMP_BENCH_LEASE_KEYS     rmpoold lease_keys (default: the daemon's)
#   RMP_BENCH_KEEP           1: keep the work folder with every tool's output

set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${RMP_BUILD_ROOT:-$(cd "$here/../.." && pwd)/build}
addr=${RMP_TEST_ADDR:-}
dev=${RMP_TEST_DEV:-rxe0}
lat_iters=${RMP_BENCH_LAT_ITERS:-2000}
bw_iters=${RMP_BENCH_BW_ITERS:-1000}
rounds=${RMP_BENCH_ROUNDS:-2}
depth=${RMP_BENCH_DEPTH:-16}
with_read_bw=${RMP_BENCH_READ_BW:-1}
lat_size=64
bw_size=65536
tool_timeout=120 # seconds, per tool run

rmpoold=$build/daemon/rmpoold
bench=$build/tests/perf/rmpool-bench

die() {
	echo "bench-vs-perftest: $*" >&2
	exit 1
}

[ -n "$addr" ] || die "RMP_TEST_ADDR is not set (no RDMA device); run me as" \
	"tests/vm/run-in-vm.sh --build-dir build -- $0"
for n in lat_iters bw_iters depth rounds; do
	[[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "$n must be a positive number"
done
[ -x "$rmpoold" ] || die "$rmpoold not built (ninja -C $build)"
[ -x "$bench" ] || die "$bench not built (ninja -C $build)"
for t in ib_read_lat ib_write_bw ib_read_bw; do
	command -v "$t" >/dev/null || die "$t not found (apt-get install perftest)"
done
[ -d "/sys/class/infiniband/$dev" ] || die "no RDMA device $dev"

work=$(mktemp -d "${TMPDIR:-/tmp}/rmp-bench.XXXXXX") || die "mktemp failed"
dpid=
failures=0

cleanup() {
	local j
	for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null; done
	wait 2>/dev/null
	if [ "${RMP_BENCH_KEEP:-0}" = 1 ]; then
		echo "bench-vs-perftest: outputs kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

failed() {
	echo "bench-vs-perftest: FAILED: $*" >&2
	failures=$((failures + 1))
}

# show_log FILE -- the last lines of a tool's output, for a failure.
show_log() {
	echo "---- $(basename "$1") ----" >&2
	tail -n 25 "$1" >&2
}

# tcp_port_used PORT [listen] -- a TCP socket uses PORT (locally or as
# its peer), or with "listen" listens on it. Bash only: every fork costs
# a lot under TCG.
tcp_port_used() {
	local hex f loc rem st rest
	printf -v hex '%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] || continue
		while read -r _ loc rem st rest; do
			if [ "${2:-}" = listen ]; then
				[[ ${loc##*:} == "$hex" && $st == 0A ]] && return 0
			else
				[[ ${loc##*:} == "$hex" || ${rem##*:} == "$hex" ]] && return 0
			fi
		done <"$f"
	done
	return 1
}

next_pt_port=${RMP_BENCH_PERFTEST_PORT:-18700}
# pick_port -- a TCP port no socket uses, each call a new one.
pick_port() {
	while tcp_port_used "$next_pt_port"; do
		next_pt_port=$((next_pt_port + 1))
	done
	echo "$next_pt_port"
	next_pt_port=$((next_pt_port + 1))
}

# gid_index -- the RoCE v2 GID of $addr on $dev port 1 (IPv4 mapped), or
# nothing (an InfiniBand port needs none).
gid_index() {
	local port=/sys/class/infiniband/$dev/ports/1 want g i type
	[ -n "${RMP_BENCH_GID:-}" ] && { echo "$RMP_BENCH_GID"; return; }
	grep -q InfiniBand "$port/link_layer" 2>/dev/null && return
	if [[ $addr =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
		IFS=. read -r a b c d <<<"$addr"
		want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
			"$a" "$b" "$c" "$d")
	else
		echo 1
		return
	fi
	for g in "$port"/gids/*; do
		i=${g##*/}
		[ "$(cat "$g" 2>/dev/null)" = "$want" ] || continue
		type=$(cat "$port/gid_attrs/types/$i" 2>/dev/null)
		case $type in *v2*) echo "$i"; return ;; esac
		[ -n "${first:-}" ] || first=$i
	done
	echo "${first:-1}"
}

# ---- rmpoold -------------------------------------------------------------

dport=
start_daemon() {
	local port=${RMP_BENCH_PORT:-7690}
	# A tenant of its own (anonymous clients are refused by default);
	# no admin socket or metrics endpoint to collide with a real daemon.
	(umask 077 && "$build/client/rmpool" keygen >"$work/bench.key")
	export RMPOOL_TENANT=bench RMPOOL_KEY_FILE=$work/bench.key
	for _ in 1 2 3 4 5; do
		cat >"$work/rmpoold.conf" <<CONF
[server]
listen = $addr
port = $port
log_level = info
admin_socket =
metrics_listen =
[pool]
size = 64M
hugepages = preferred
[tenant.bench]
key_file = $work/bench.key
CONF
		if [ -n "${RMP_BENCH_LEASE_KEYS:-}" ]; then
			printf '[lease]\nlease_keys = %s\n' "$RMP_BENCH_LEASE_KEYS" \
				>>"$work/rmpoold.conf"
		fi
		"$rmpoold" -c "$work/rmpoold.conf" >"$work/rmpoold.log" 2>&1 &
		dpid=$!
		for _ in $(seq 1 300); do
			if grep -q "listening on" "$work/rmpoold.log"; then
				dport=$port
				return 0
			fi
			kill -0 "$dpid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$dpid" 2>/dev/null; then
			show_log "$work/rmpoold.log"
			die "rmpoold did not start listening in 30 s"
		fi
		wait "$dpid" 2>/dev/null
		dpid=
		grep -qi "in use" "$work/rmpoold.log" || break
		port=$((port + 1)) # port taken: try the next one
	done
	show_log "$work/rmpoold.log"
	die "rmpoold did not start"
}

stop_daemon() {
	local rc=0
	[ -n "$dpid" ] || return 0
	kill -TERM "$dpid" 2>/dev/null
	for _ in $(seq 1 300); do
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$dpid" 2>/dev/null && kill -KILL "$dpid"
	wait "$dpid" || rc=$?
	dpid=
	if [ "$rc" -ne 0 ]; then
		show_log "$work/rmpoold.log"
		failed "rmpoold exited with status $rc"
	fi
}

# ---- perftest --------------------------------------------------------------

pt_mode=    # "verbs" or "cm", once one has worked
linebuf=()
command -v stdbuf >/dev/null && linebuf=(stdbuf -oL)
gid=$(gid_index)

# pt_once MODE OUT TOOL ARGS... -- one server/client pair; the client's
# output in OUT. Returns non-zero when either side failed.
pt_once() {
	local mode=$1 out=$2 tool=$3 port spid rc=0 srv_rc=0 deadline
	local -a extra=(-d "$dev" -F)
	shift 3
	port=$(pick_port)
	if [ "$mode" = cm ]; then
		extra+=(-R)
	elif [ -n "$gid" ]; then
		extra+=(-x "$gid")
	fi
	extra+=(-p "$port" "$@")
	# Line-buffered, so that its banner shows while it waits.
	timeout -k 5 "$tool_timeout" "${linebuf[@]}" "$tool" "${extra[@]}" \
		>"$out.server" 2>&1 &
	spid=$!
	# Wait for the server to listen (verbs: its TCP port; rdma_cm: no
	# socket shows, its banner is what there is), 20 s at most.
	deadline=$((SECONDS + 20))
	while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$spid" 2>/dev/null; do
		if [ "$mode" = cm ]; then
			[[ -f $out.server && $(<"$out.server") == *"Waiting for client"* ]] &&
				break
		else
			tcp_port_used "$port" listen && break
		fi
		sleep 0.1
	done
	[ "$mode" = cm ] && sleep 0.5 # the banner comes before rdma_listen
	# A client that failed before its results (no #bytes header) while
	# the server still waits was early: connect again, twice at most.
	for _ in 1 2 3; do
		rc=0
		timeout -k 5 "$tool_timeout" "$tool" "${extra[@]}" "$addr" >"$out" 2>&1 || rc=$?
		if [ "$rc" -eq 0 ] || [[ $(<"$out") == *"#bytes"* ]] ||
			! kill -0 "$spid" 2>/dev/null; then
			break
		fi
		sleep 1
	done
	if [ "$rc" -ne 0 ]; then
		kill -TERM "$spid" 2>/dev/null
	fi
	wait "$spid" || srv_rc=$?
	[ "$rc" -eq 0 ] && [ "$srv_rc" -eq 0 ]
}

# pt_run OUT TOOL ARGS... -- pt_once in the mode that works here.
pt_run() {
	local out=$1
	if [ -n "$pt_mode" ]; then
		pt_once "$pt_mode" "$@" && return 0
		show_log "$out"
		return 1
	fi
	if pt_once verbs "$@"; then
		pt_mode=verbs
		return 0
	fi
	echo "bench-vs-perftest: $2 on verbs (GID index ${gid:-none}) failed;" \
		"trying rdma_cm (-R)" >&2
	show_log "$out"
	if pt_once cm "$@"; then
		pt_mode=cm
		return 0
	fi
	show_log "$out"
	return 1
}

# pt_col FILE SIZE COLUMN -- the value in perftest's result table: the
# row whose #bytes is SIZE, the column whose header starts with COLUMN
# (headers made one word: "99% percentile[usec]" -> "99%_percentile[usec]").
# Prints "VALUE HEADER".
pt_col() {
	awk -v size="$2" -v want="$3" '
		/#bytes/ {
			h = $0
			gsub(/ percentile/, "_percentile", h)
			gsub(/BW /, "BW_", h)
			gsub(/MsgRate /, "MsgRate_", h)
			gsub(/tps /, "tps_", h)
			n = split(h, f, " ")
			col = 0
			for (i = 1; i <= n; i++)
				if (index(f[i], want) == 1) { col = i; name = f[i]; break }
			next
		}
		col && $1 == size && $(col) ~ /^[0-9.]+$/ { print $(col), name; found = 1; exit }
		END { exit !found }' "$1"
}

# pt_show FILE TOOL -- echo perftest's result row (after the #bytes header).
pt_show() {
	awk -v t="$2" 'h && NF { print "perftest " t ":" $0; exit } /#bytes/ { h = 1 }' "$1" |
		tr -s ' \t' ' '
}

# ---- rmpool-bench ----------------------------------------------------------

# rb_run OUT ARGS... -- rmpool-bench against our daemon.
rb_run() {
	local out=$1
	shift
	local server=$addr:$dport
	[[ $addr == *:* ]] && server="[$addr]:$dport" # IPv6
	if ! timeout -k 5 "$tool_timeout" "$bench" -s "$server" "$@" >"$out" 2>&1; then
		show_log "$out"
		return 1
	fi
}

# rb_val FILE KEY -- the value of KEY=... in rmpool-bench's result line.
rb_val() {
	awk -v key="$2" '/^rmpool / {
		for (i = 1; i <= NF; i++) {
			k = $i; sub(/=.*/, "", k)
			if (k == key) { v = $i; sub(/^[^=]*=/, "", v); print v; f = 1 }
		}
	} END { exit !f }' "$1"
}

# ---- figures and the table ------------------------------------------------

declare -A vals=() # "METRIC TOOL" -> one figure per round, space separated
# keep METRIC TOOL VALUE -- record one round's figure ("-" when missing).
keep() {
	vals["$1 $2"]+="${3:--} "
}

# median LIST... -- of the numbers among the arguments, or "-".
median() {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
		awk '{ v[NR] = $1 } END {
			if (!NR) { print "-"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf(m >= 10 ? "%.2f\n" : "%.3f\n", m) }'
}

rows=()
# row LABEL METRIC -- a table line: medians over the rounds, their
# ratio, and the range of the rounds' own ratios (round i against round i).
row() {
	local -a p r
	local pm rm ratio=- range=- pairs='' i
	read -r -a p <<<"${vals["$2 perftest"]:-}"
	read -r -a r <<<"${vals["$2 rmpool"]:-}"
	pm=$(median "${p[@]}")
	rm=$(median "${r[@]}")
	if [[ $pm =~ ^[0-9.]+$ && $rm =~ ^[0-9.]+$ ]]; then
		ratio=$(awk -v a="$pm" -v b="$rm" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')
	fi
	for ((i = 0; i < ${#p[@]} && i < ${#r[@]}; i++)); do
		pairs+="${p[i]} ${r[i]}"$'\n'
	done
	range=$(printf '%s' "$pairs" |
		awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $1 > 0 {
			q = $2 / $1; if (!n || q < lo) lo = q; if (!n || q > hi) hi = q; n++ }
			END { if (n > 1) printf "%.2f-%.2f", lo, hi; else print "-" }')
	rows+=("$(printf '%-30s %10s %10s %8s %12s' "$1" "$pm" "$rm" "$ratio" "$range")")
}

# pt_gbps VALUE HEADER -- in Gb/s: perftest's MB/sec is MiB/s (2^20).
pt_gbps() {
	case $2 in
	*Gb/sec*) printf '%.3f' "$1" ;;
	*) awk -v v="$1" 'BEGIN { printf "%.3f", v * 1048576 * 8 / 1e9 }' ;;
	esac
}

# ---- one round of each pair ------------------------------------------------

# pt_lat R -- ib_read_lat, round R.
pt_lat() {
	local f=$work/read_lat.$1.pt v
	if pt_run "$f" ib_read_lat -s "$lat_size" -n "$lat_iters"; then
		pt_show "$f" ib_read_lat
		v=$(pt_col "$f" "$lat_size" t_avg) || { show_log "$f"; failed "cannot parse ib_read_lat's output"; }
		keep lat_avg perftest "${v%% *}"
		v=$(pt_col "$f" "$lat_size" t_typical) || v=-
		keep lat_med perftest "${v%% *}"
		v=$(pt_col "$f" "$lat_size" "99%_percentile") || v=-
		keep lat_p99 perftest "${v%% *}"
	else
		failed "ib_read_lat"
		keep lat_avg perftest -; keep lat_med perftest -; keep lat_p99 perftest -
	fi
}

# rb_lat R [--busy-poll] -- rmpool-bench read-lat, round R.
rb_lat() {
	local f=$work/read_lat.$1${2:-}.rb m=lat
	[ -n "${2:-}" ] && m=plat
	if rb_run "$f" read-lat ${2:+"$2"} --size "$lat_size" --iters "$lat_iters"; then
		cat "$f"
		keep ${m}_avg rmpool "$(rb_val "$f" avg)"
		keep ${m}_med rmpool "$(rb_val "$f" median)"
		[ "$m" = plat ] || keep lat_p99 rmpool "$(rb_val "$f" p99)"
	else
		failed "rmpool-bench read-lat ${2:-}"
		keep ${m}_avg rmpool -; keep ${m}_med rmpool -
		[ "$m" = plat ] || keep lat_p99 rmpool -
	fi
}

# pt_bw R NAME TOOL -- a perftest bandwidth run, round R.
pt_bw() {
	local f=$work/$2.$1.pt v val hdr g=-
	if pt_run "$f" "$3" -s "$bw_size" -n "$bw_iters" -t "$depth"; then
		pt_show "$f" "$3"
		if v=$(pt_col "$f" "$bw_size" BW_average); then
			read -r val hdr <<<"$v"
			g=$(pt_gbps "$val" "$hdr")
			if awk -v g="$g" 'BEGIN { exit !(g == 0) }'; then
				# Seen under TCG: exit 0, every figure 0.00.
				echo "bench-vs-perftest: warning: $3 reported 0 bandwidth;" \
					"round $1 of it left out" >&2
				g=-
			fi
		else
			show_log "$f"
			failed "cannot parse $3's output"
		fi
	else
		failed "$3"
	fi
	keep "$2" perftest "$g"
}

# rb_bw R NAME MODE -- an rmpool-bench bandwidth run, round R.
rb_bw() {
	local f=$work/$2.$1.rb g=-
	if rb_run "$f" "$3" --size "$bw_size" --iters "$bw_iters" --depth "$depth"; then
		cat "$f"
		g=$(rb_val "$f" Gb/s) || g=-
	else
		failed "rmpool-bench $3"
	fi
	keep "$2" rmpool "$g"
}

# ---- run -----------------------------------------------------------------

t_start=$SECONDS
start_daemon
echo "rmpoold on $addr port $dport ($(grep -m1 -o 'pool: .*' "$work/rmpoold.log"))"
echo "device $dev, perftest GID index ${gid:-none}; $rounds round(s) of:" \
	"read latency $lat_size B x $lat_iters," \
	"bandwidth $bw_size B x $bw_iters at depth $depth"

# Rounds interleave the tools, and alternate which goes first, so that a
# drift of the machine (TCG on a shared host drifts a lot) hits both alike.
for ((r = 1; r <= rounds; r++)); do
	echo "-- round $r"
	if ((r % 2)); then
		pt_lat "$r"; rb_lat "$r"; rb_lat "$r" --busy-poll
		pt_bw "$r" write_bw ib_write_bw; rb_bw "$r" write_bw write-bw
		if [ "$with_read_bw" != 0 ]; then
			pt_bw "$r" read_bw ib_read_bw; rb_bw "$r" read_bw read-bw
		fi
	else
		rb_lat "$r" --busy-poll; rb_lat "$r"; pt_lat "$r"
		rb_bw "$r" write_bw write-bw; pt_bw "$r" write_bw ib_write_bw
		if [ "$with_read_bw" != 0 ]; then
			rb_bw "$r" read_bw read-bw; pt_bw "$r" read_bw ib_read_bw
		fi
	fi
done

stop_daemon

# rmpool's "polled" row sets rmpool-bench --busy-poll against the same
# perftest figures: it separates the synchronous call's wait (spin 20 us,
# then sleep on the completion channel) from the rest of the path.
vals["plat_avg perftest"]=${vals["lat_avg perftest"]:-}
vals["plat_med perftest"]=${vals["lat_med perftest"]:-}
row "read ${lat_size}B lat avg (us)" lat_avg
row "read ${lat_size}B lat median (us)" lat_med
row "read ${lat_size}B lat p99 (us)" lat_p99
row "  polled: lat avg (us)" plat_avg
row "  polled: lat median (us)" plat_med
row "write $((bw_size / 1024))KiB bw (Gb/s)" write_bw
[ "$with_read_bw" = 0 ] || row "read $((bw_size / 1024))KiB bw (Gb/s)" read_bw

echo
echo "perftest over ${pt_mode:-?}; $rounds round(s) in $((SECONDS - t_start)) s;" \
	"figures are medians over the rounds"
printf '%-30s %10s %10s %8s %12s\n' metric perftest rmpool ratio "ratio range"
printf '%s\n' "${rows[@]}"
echo "(ratio = rmpool / perftest: for latency > 1 means rmpool is slower," \
	"for bandwidth < 1 does; range: per-round ratios; polled: --busy-poll)"
if [ "$failures" -gt 0 ]; then
	echo "bench-vs-perftest: $failures failure(s)" >&2
	exit 1
fi
exit 0

# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2034 # compare's globals (build, work, addr, ...)
# compare-nbd.sh -- the block-device cases of tests/perf/compare (sourced
# by it, after its helpers): a lease as /dev/nbdN through nbdkit and the
# rmpool plugin, against nbdkit's own memory plugin (the same NBD path,
# the bytes in local RAM), each round, in the same boot:
#
#   fio --direct=1 --ioengine=libaio on the device:
#     4 KiB random read and write, iodepth 1 and 32    IOPS
#     1 MiB sequential read and write, iodepth 4       MiB/s
#   swap-in: the device the only swap (highest priority), rmp-swap-touch
#   in a cgroup of memory.max RMP_BENCH_NBD_SWAP_LIMIT MiB writing and
#   checking 3x that: pages swapped in per second on its read
#
# Each job runs for RMP_BENCH_NBD_SECONDS (default 10) or until it moved
# RMP_BENCH_NBD_IO (default 1G), whichever comes first; the device is
# RMP_BENCH_NBD_SIZE MiB (default 48: compare's pool is 64 MiB) on
# RMP_BENCH_NBD_DEV (default /dev/nbd2). The ratio rmpool / memory is
# what the plugin and the wire add to the NBD path (goal at iodepth 32
# and for 1 MiB: at least 0.77, i.e. at most 1.3x the time). Needs root,
# fio, nbdkit, nbd-client, the nbd module and the plugin built; left out,
# saying why, otherwise, or with RMP_BENCH_NBD=0.
#
# Globals it sets: nb_dev, nb_pid.

nb_dev=${RMP_BENCH_NBD_DEV:-/dev/nbd2}
nb_secs=${RMP_BENCH_NBD_SECONDS:-10}
nb_io=${RMP_BENCH_NBD_IO:-1G}
nb_size=${RMP_BENCH_NBD_SIZE:-48}
nb_swap_limit=${RMP_BENCH_NBD_SWAP_LIMIT:-12}
nb_plugin=$build/client/nbdkit/nbdkit-rmpool-plugin.so
nb_sock=
nb_pid=
nb_cg=
nb_used= # nb_dev was attached by a case: nb_stop detaches it

# nb_wanted -- whether the block-device cases run; says why not when not.
nb_wanted() {
	local t
	if [ "${RMP_BENCH_NBD:-1}" = 0 ]; then
		echo "block-device cases left out (RMP_BENCH_NBD=0)"
		return 1
	fi
	for t in fio nbdkit nbd-client mkswap; do
		command -v "$t" >/dev/null || {
			echo "block-device cases left out: no $t"
			return 1
		}
	done
	[ -e "$nb_plugin" ] || {
		echo "block-device cases left out: no $nb_plugin (nbdkit-plugin-dev)"
		return 1
	}
	[ -x "$build/tests/rdma/rmp-swap-touch" ] || {
		echo "block-device cases left out: rmp-swap-touch not built"
		return 1
	}
	[ "$(id -u)" = 0 ] || {
		echo "block-device cases left out: nbd-client needs root"
		return 1
	}
	[ -e "/sys/block/${nb_dev#/dev/}" ] || modprobe nbd 2>/dev/null
	[ -e "/sys/block/${nb_dev#/dev/}" ] || {
		echo "block-device cases left out: no $nb_dev (the nbd module)"
		return 1
	}
	return 0
}

# nb_rows -- the table's rows: memory plugin the base, rmpool the other.
nb_rows() {
	local op d
	for op in randread randwrite; do
		for d in 1 32; do
			row "nbd 4KiB $op qd$d (IOPS)" nbd 4096 \
				"mem-$op-4k-qd$d" iops 1 "rmp-$op-4k-qd$d" iops \
				"$([ "$d" = 32 ] && echo ">=0.77" || echo -)"
		done
	done
	for op in read write; do
		row "nbd 1MiB seq $op (MiB/s)" nbd 1048576 \
			"mem-$op-1m" mibps 1 "rmp-$op-1m" mibps ">=0.77"
	done
	row "nbd swap-in (pages/s)" nbd 4096 "mem-swapin" pages_per_s 1 \
		"rmp-swapin" pages_per_s "-"
}

# nb_serve WHICH -- nbdkit serving the memory plugin (mem: malloc'd and
# locked, as the lease's memory is pinned) or a new lease of compare's
# rmpoold (rmp) on a socket of its own, attached as nb_dev.
nb_serve() {
	local log=$work/nbdkit-$1.log server=$addr:$dport ready=
	[[ $addr == *:* ]] && server="[$addr]:$dport"
	nb_sock=$work/nbd.sock
	rm -f "$nb_sock"
	if [ "$1" = mem ]; then
		nbdkit -f -v -U "$nb_sock" memory "${nb_size}M" \
			allocator=malloc,mlock=true >"$log" 2>&1 &
	else
		nbdkit -f -v -U "$nb_sock" "$nb_plugin" \
			server="$server" size="${nb_size}M" \
			tenant="$RMPOOL_TENANT" key-file="$RMPOOL_KEY_FILE" \
			mlock=true >"$log" 2>&1 &
	fi
	nb_pid=$!
	for _ in $(seq 1 600); do
		# nbdkit listens before the plugin's after_fork: wait for both
		if [ -S "$nb_sock" ] && { [ "$1" = mem ] ||
			grep -q "rmpool: serving" "$log"; }; then
			ready=1
			break
		fi
		kill -0 "$nb_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$ready" ]; then
		show_log "$log"
		failed "nbdkit ($1) did not start"
		nb_unserve
		return 1
	fi
	nb_used=1
	if ! nbd-client -unix "$nb_sock" "$nb_dev" -b 4096 -timeout 60 \
		>"$work/nbd-client.log" 2>&1; then
		show_log "$log"
		show_log "$work/nbd-client.log"
		failed "nbdkit ($1) on $nb_dev"
		nb_unserve
		return 1
	fi
}

# nb_unserve -- nb_dev detached, nbdkit stopped (and waited for).
nb_unserve() {
	swapoff "$nb_dev" 2>/dev/null
	nbd-client -d "$nb_dev" >/dev/null 2>&1
	[ -n "$nb_pid" ] || return 0
	kill -TERM "$nb_pid" 2>/dev/null
	for _ in $(seq 1 300); do
		kill -0 "$nb_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$nb_pid" 2>/dev/null
	wait "$nb_pid" 2>/dev/null
	nb_pid=
}

# nb_fio R WHICH -- every fio case on nb_dev, one after another in one
# fio run (a start of fio costs a second under TCG): their IOPS (4 KiB)
# or MiB/s (1 MiB) into $data.
nb_fio() {
	local r=$1 which=$2 f op d
	local -a jobs=()
	for op in randread randwrite; do
		for d in 1 32; do
			jobs+=(--name="$op-4k-qd$d" --stonewall --rw="$op" --bs=4k
				--iodepth="$d")
		done
	done
	jobs+=(--name=read-1m --stonewall --rw=read --bs=1M --iodepth=4
		--name=write-1m --stonewall --rw=write --bs=1M --iodepth=4)
	f=$work/fio-$which.$r.json
	if ! fio --filename="$nb_dev" --direct=1 --ioengine=libaio \
		--runtime="$nb_secs" --io_size="$nb_io" --size="${nb_size}M" \
		--output-format=json "${jobs[@]}" >"$f" 2>"$f.err"; then
		show_log "$f.err"
		failed "fio on $which"
		return
	fi
	python3 - "$f" "$r" "$([ "$which" = mem ] && echo nbd || echo rmpool)" \
		"$which" >>"$data" <<'PY' || failed "fio on $which: no figures"
import json, sys
f, rnd, tool, which = sys.argv[1:]
for job in json.load(open(f))["jobs"]:
    side = job["read"] if job["read"]["io_bytes"] else job["write"]
    if job["jobname"].endswith("-1m"):
        metric, v = "mibps", side["bw_bytes"] / 1048576
    else:
        metric, v = "iops", side["iops"]
    if not v > 0:
        sys.exit(f"{job['jobname']}: {v}")
    print(f"{rnd}\t{tool}\t{which}-{job['jobname']}\t{metric}\t{v:.2f}")
PY
}

# nb_swapin R WHICH -- nb_dev as the first swap; rmp-swap-touch in a
# cgroup of nb_swap_limit MiB over 3x that; its pages/s into $data.
nb_swapin() {
	local r=$1 which=$2 cg=/sys/fs/cgroup out v
	grep -q "^[^ ]* $cg cgroup2 " /proc/mounts ||
		mount -t cgroup2 none "$cg" 2>/dev/null
	if ! grep -qw memory "$cg/cgroup.controllers" 2>/dev/null ||
		! echo +memory >"$cg/cgroup.subtree_control" 2>/dev/null; then
		failed "swap-in: no cgroup2 memory controller"
		return
	fi
	nb_cg=$cg/rmpool-bench-swap
	mkdir -p "$nb_cg"
	echo "${nb_swap_limit}M" >"$nb_cg/memory.max"
	out=$work/swap-$which.$r.out
	if mkswap "$nb_dev" >/dev/null && swapon -p 32767 "$nb_dev" &&
		bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3"' _ \
			"$nb_cg" "$build/tests/rdma/rmp-swap-touch" \
			$((nb_swap_limit * 3)) >"$out" 2>&1; then
		v=$(sed -nE 's/.* ([0-9]+) pages\/s$/\1/p' "$out")
		if [ -n "$v" ]; then
			printf '%s\t%s\t%s-swapin\tpages_per_s\t%s\n' "$r" \
				"$([ "$which" = mem ] && echo nbd || echo rmpool)" \
				"$which" "$v" >>"$data"
		else
			failed "swap-in on $which: no rate"
		fi
		sed "s/^/  $which: /" "$out"
	else
		show_log "$out"
		failed "swap-in on $which"
	fi
	swapoff "$nb_dev" 2>/dev/null
	rmdir "$nb_cg" 2>/dev/null
	nb_cg=
}

# nb_one R WHICH -- every case on one server.
nb_one() {
	nb_serve "$2" || return
	nb_fio "$1" "$2"
	nb_swapin "$1" "$2"
	nb_unserve
}

# nb_side R -- one round: both servers, which first alternating.
nb_side() {
	if (($1 % 2)); then
		nb_one "$1" mem
		nb_one "$1" rmp
	else
		nb_one "$1" rmp
		nb_one "$1" mem
	fi
}

# nb_stop -- at exit: nothing of a case left behind (and nothing done
# to nb_dev when no case used it: it may be another's).
nb_stop() {
	[ -n "$nb_used" ] || return 0
	nb_unserve
	[ -z "$nb_cg" ] || rmdir "$nb_cg" 2>/dev/null
}

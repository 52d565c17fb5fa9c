# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2034 # compare's globals (build, work, addr, ...)
# compare-cluster.sh -- the cluster cases of tests/perf/compare (sourced by
# it, after its helpers): an etcd of its own and K + M more rmpoold
# (RMP_BENCH_EC's code: six for 4+2) registered in it (nodes bench-n1,
# bench-n2 .., 32 MiB pools, the same
# tenant), started once per run, at its first cluster round (idle, they
# would slow the cases before); each round then runs
#
#   rmpool-bench -C URL --prefer bench=n1         vs alloc-lat -s on
#                alloc-lat --size 4096            node bench-n1
#   rmpool-bench -C URL --replicas 2 write-lat    vs --replicas 1
#                --size 64 (sync)
#   rmpool-bench -C URL --stripes 2 read-lat      vs --stripes 1 (one
#                --size 16M (sync)                node; RMP_BENCH_BIG_ITERS,
#                                                 default 20)
#   rmpool-bench -C URL --ec 4+2 read-lat         vs --replicas 3 (the same
#                --size 4K,64K; write-lat         two losses survived);
#                --size 4K; and 1M of each        the pinned line of each
#                (RMP_BENCH_BIG_ITERS)            gives bytes held per
#                                                 lease byte
#   rmpool-bench -C URL --ec 4+2 --lose 0         vs the healthy EC read
#                read-lat --size 4K               (member 0 freed on its
#                                                 node: every read of its
#                                                 chunks decoded from 4)
#   rmpool-bench -C URL --ec 4+2 --copy           vs --replicas 3 --copy
#                read-lat --size 64K              (the buffer not
#                                                 registered: the EC read
#                                                 late bound, 5 members
#                                                 read, done on 4)
#
# like with like: both sides on these nodes (compare's own server is
# warmer and has no [cluster]; under TCG its ALLOC+FREE was 3x faster
# than the same on a node of the cluster with etcd running beside), and
# the cluster's ALLOCs on bench-n1 too (label bench=n1 preferred): left
# to place them, it alternates the nodes, and each daemon, idle in
# between, took twice as long per ALLOC as one that gets them back to
# back (300 vs 150 us in the daemon's own metrics, Soft-RoCE VM); that
# was most of the 3.8x this row once showed, none of it the library's.
#
# and the table gets their rows beside perftest's (goals: ALLOC+FREE
# within 1.1x with no etcd round trip, a mirrored 64 B WRITE within 1.2x:
# the replicas written in parallel; a 16 MiB read over 2 stripes in at
# most 0.6x the time of one node's: both nodes move it at once; with a
# second device, the daemons listen on both and a mirrored 1 MiB READ and
# WRITE cut over each node's two rails take at most 0.6x the time of the
# same on one rail). The erasure-coded lease against the 3-replica
# mirror: half the bytes pinned; a 4 KiB READ (one chunk, one member)
# within 1.1x; 64 KiB within 1.2x, zero copy and copied (late bound); a 1 MiB WRITE within 1.25x (its
# bandwidth at least 0.8x); a 4 KiB WRITE (a part of a row: its parity
# updated by delta) printed; a 4 KiB READ with a data member lost within
# 2x the healthy one; and ISA-L's encode on one core beside memcpy
# (tests/perf/bench_ec, when built). Every cluster line of rmpool-bench
# carries etcd_reads=, etcd's count of membership reads while it timed.
#
# Globals it sets: cl_on (1: the cases run), cl_url, cl_pids, cl_ports.

cl_on=0
cl_url=
cl_pids=()
cl_ports=()
cl_cpu0=0
cl_t0=0
cl_etcd_pid=
# the erasure-coded lease's code (RMP_BENCH_EC, default 4+2) and the
# mirror it is set beside: as many losses survived (m + 1 replicas)
cl_ec=${RMP_BENCH_EC:-4+2}
cl_ec_k=${cl_ec%+*} cl_ec_m=${cl_ec#*+}
cl_ec_reps=$((cl_ec_m + 1))
# nodes: the code's members, each apart (two at least: the other cases)
cl_n=$((cl_ec_k + cl_ec_m > 2 ? cl_ec_k + cl_ec_m : 2))

# cl_wanted -- whether the cluster cases run; says why not when not.
cl_wanted() {
	if [ "${RMP_BENCH_CLUSTER:-1}" = 0 ]; then
		echo "cluster cases left out (RMP_BENCH_CLUSTER=0)"
		return 1
	fi
	if ! command -v etcd >/dev/null; then
		echo "cluster cases left out: etcd is not installed" \
			"(apt-get install etcd-server)"
		return 1
	fi
	return 0
}

# cl_nodes -- how many nodes `rmpool -C URL nodes` lists (fails while
# etcd does not answer).
cl_nodes() {
	local out
	out=$("$build/client/rmpool" -C "$cl_url" nodes 2>/dev/null) || return 1
	grep -c . <<<"$out" || true # none: "0", and grep's status 1
}

# cl_etcd_start -- etcd on two free ports, its data in the work folder;
# returns when it answers (60 s at most: TCG is slow to start it).
cl_etcd_start() {
	local cport pport deadline
	# pick_port runs in a subshell here: move its start on by hand.
	cport=$(pick_port)
	next_pt_port=$((cport + 1))
	pport=$(pick_port)
	next_pt_port=$((pport + 1))
	cl_url=http://127.0.0.1:$cport
	etcd --data-dir "$work/etcd" --listen-client-urls "$cl_url" \
		--advertise-client-urls "$cl_url" \
		--listen-peer-urls "http://127.0.0.1:$pport" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "default=http://127.0.0.1:$pport" \
		--log-level warn >"$work/etcd.log" 2>&1 &
	cl_etcd_pid=$!
	deadline=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$deadline" ]; do
		cl_nodes >/dev/null && return 0
		kill -0 "$cl_etcd_pid" 2>/dev/null || break
		sleep 0.1
	done
	show_log "$work/etcd.log"
	die "etcd did not start"
}

# cl_daemon_spawn I PORT -- rmpoold I (node bench-nI) started on PORT or
# the next free one (cl_ports[I]), not waited for.
cl_daemon_spawn() {
	local i=$1 port=$2 conf=$work/rmpoold-n$1.conf
	local listen=$addr
	[ "$with_rails" = 0 ] || listen="$addr, $addr2"
	while tcp_port_used "$port"; do port=$((port + 1)); done
	cat >"$conf" <<CONF
[server]
listen = $listen
port = $port
log_level = info
admin_socket =
metrics_listen =
[pool]
size = 32M
hugepages = preferred
[tenant.bench]
key_file = $work/bench.key
[cluster]
etcd = $cl_url
node = bench-n$i
labels = bench=n$i
CONF
	"$rmpoold" -c "$conf" >"$work/rmpoold-n$i.log" 2>&1 &
	cl_pids[i]=$!
	cl_ports[i]=$port
}

# cl_daemon_wait I -- rmpoold I listens (30 s at most); one whose port
# was taken meanwhile starts again on a higher one (5 tries).
cl_daemon_wait() {
	local i=$1 log=$work/rmpoold-n$1.log try
	for try in 1 2 3 4 5; do
		for _ in $(seq 1 300); do
			grep -q "listening on" "$log" && return 0
			kill -0 "${cl_pids[i]}" 2>/dev/null || break
			sleep 0.1
		done
		wait "${cl_pids[i]}" 2>/dev/null
		grep -qi "in use" "$log" || break
		cl_daemon_spawn "$i" $((cl_ports[i] + 100 * try))
	done
	show_log "$log"
	die "rmpoold bench-n$i did not start"
}

# cl_start -- etcd and the cluster's daemons, started at once (each maps
# and registers its pool meanwhile); returns when all are listed (60 s
# at most).
cl_start() {
	local i n deadline port=$((dport + 1))
	cl_etcd_start
	for ((i = 1; i <= cl_n; i++)); do
		cl_daemon_spawn "$i" "$port"
		port=$((cl_ports[i] + 1))
	done
	for ((i = 1; i <= cl_n; i++)); do
		cl_daemon_wait "$i"
	done
	deadline=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$deadline" ]; do
		n=$(cl_nodes) && [ "$n" -eq "$cl_n" ] && break
		sleep 0.2
	done
	[ "${n:-0}" -eq "$cl_n" ] || die "the cluster's daemons did not" \
		"register (${n:-0} of $cl_n listed)"
	cl_on=1
	cl_cpu0=$(cl_cpu) cl_t0=$(date +%s.%N)
	echo "cluster: etcd at $cl_url, nodes bench-n1 .. bench-n$cl_n (32" \
		"MiB pools) on $addr"
}

# cl_cpu -- CPU clock ticks etcd and the cluster's daemons have used.
cl_cpu() {
	local p t sum=0
	for p in "$cl_etcd_pid" "${cl_pids[@]}"; do
		t=$(cpu_ticks "$p") && sum=$((sum + t))
	done
	echo "$sum"
}

# cl_stop -- SIGTERM to the daemons (each must exit 0, as stop_daemon
# checks), then to etcd. First the CPU they used while they ran (the
# rest of the run's cases ran beside them), into $data.
cl_stop() {
	local i rc
	[ "$cl_on" = 1 ] || return 0
	awk -v c="$(($(cl_cpu) - cl_cpu0))" -v hz="$(getconf CLK_TCK)" \
		-v t0="$cl_t0" -v t1="$(date +%s.%N)" 'BEGIN { printf \
		"0\tcluster\tcpu-beside\tpercent\t%.2f\n", 100 * c / hz / (t1 - t0) }' >>"$data"
	for ((i = 1; i <= cl_n; i++)); do
		kill -TERM "${cl_pids[i]}" 2>/dev/null
	done
	for ((i = 1; i <= cl_n; i++)); do
		rc=0
		wait "${cl_pids[i]}" || rc=$?
		if [ "$rc" -ne 0 ]; then
			show_log "$work/rmpoold-n$i.log"
			failed "rmpoold bench-n$i exited with status $rc"
		fi
	done
	kill -TERM "$cl_etcd_pid" 2>/dev/null
	wait "$cl_etcd_pid" 2>/dev/null
	cl_on=0
}

# cl_rows -- the table's cluster rows: kind "cl", both sides rmpool's
# (compare-report.py prints them apart).
cl_rows() {
	row "alloc+free 4KiB, cluster (us)" cl 4096 \
		"node-alloc-lat@4096" median 1 "cluster-alloc-lat@4096" median "<=1.10"
	row "write 64B sync, 2 replicas (us)" cl 64 \
		"write-lat-r1@64" median 1 "write-lat-r2@64" median "<=1.20"
	row "read 16MiB sync, 2 stripes (us)" cl 16777216 \
		"read-lat-r1@16777216" median 1 "read-lat-r1-s2@16777216" \
		median "<=0.60"
	cl_ec_rows
	[ "$with_rails" = 0 ] && return
	row "read 1MiB sync, 2 replicas, 2 rails vs 1 (us)" cl 1048576 \
		"rail1-read-lat-r2@1048576" median 1 "rails2-read-lat-r2@1048576" \
		median "<=0.60"
	row "write 1MiB sync, 2 replicas, 2 rails vs 1 (us)" cl 1048576 \
		"rail1-write-lat-r2@1048576" median 1 "rails2-write-lat-r2@1048576" \
		median "<=0.60"
}

# cl_ec_rows -- the erasure-coded lease's rows: k+m against m + 1
# replicas (4+2 and 3: both survive two lost nodes), and against itself
# with a member lost.
cl_ec_rows() {
	local e=$cl_ec r=r$cl_ec_reps vs="EC $cl_ec vs $cl_ec_reps replicas"
	row "pinned per lease byte, $vs" cl 1048576 \
		"pinned-$r@1048576" per_byte 1 "pinned-ec$e@1048576" per_byte \
		"<=$(awk -v k="$cl_ec_k" -v m="$cl_ec_m" -v n="$cl_ec_reps" \
			'BEGIN { printf "%.2f", (k + m) / k / n + 0.05 }')"
	row "read 4KiB sync, $vs (us)" cl 4096 \
		"read-lat-$r@4096" median 1 "read-lat-ec$e@4096" median "<=1.10"
	row "read 64KiB sync, $vs (us)" cl 65536 \
		"read-lat-$r@65536" median 1 "read-lat-ec$e@65536" median "<=1.20"
	row "read 64KiB sync copied (EC late bound), $vs (us)" cl 65536 \
		"read-lat-$r-copy@65536" median 1 "read-lat-ec$e-copy@65536" \
		median "<=1.20"
	row "read 4KiB sync, EC $e, member lost vs none (us)" cl 4096 \
		"read-lat-ec$e@4096" median 1 "read-lat-ec$e-lost@4096" median \
		"<=2.00"
	row "write 1MiB sync, $vs (us)" cl 1048576 \
		"write-lat-$r@1048576" median 1 "write-lat-ec$e@1048576" median \
		"<=1.25"
	row "write 4KiB sync, $vs (us)" cl 4096 \
		"write-lat-$r@4096" median 1 "write-lat-ec$e@4096" median "-"
	[ -x "$build/tests/perf/bench_ec" ] &&
		row "encode 4+2 4KiB chunks vs memcpy, 1 core (GB/s)" cl 4096 \
			"ec-memcpy@4096" GBps 1 "ec-encode-4+2@4096" GBps "-"
	return 0
}

# cl_ec_side R -- round R's erasure-coded runs, against the mirror in
# the order of the round.
cl_ec_side() {
	local r=$1 kind kinds=("--ec $cl_ec" "--replicas $cl_ec_reps")
	((r % 2)) || kinds=("--replicas $cl_ec_reps" "--ec $cl_ec")
	for kind in "${kinds[@]}"; do
		# shellcheck disable=SC2086 # two words each
		rb "$r" -C "$cl_url" $kind read-lat --size 4K,64K \
			--iters "$lat_iters"
		# shellcheck disable=SC2086 # through the bounce buffers
		rb "$r" -C "$cl_url" $kind --copy read-lat --size 64K \
			--iters "$lat_iters"
		# shellcheck disable=SC2086
		rb "$r" -C "$cl_url" $kind write-lat --size 4K --iters "$lat_iters"
		# shellcheck disable=SC2086
		rb "$r" -C "$cl_url" $kind write-lat --size 1M \
			--iters "$big_iters" --warmup 2
	done
	rb "$r" -C "$cl_url" --ec "$cl_ec" --lose 0 read-lat --size 4K \
		--iters "$lat_iters"
	# the code itself, once a run (its figures do not drift with the
	# rounds: the rows it reads stay in the caches)
	[ "$r" = 1 ] && [ -x "$build/tests/perf/bench_ec" ] && cl_ec_codec "$r"
	return 0
}

# cl_ec_codec R -- bench_ec's encode of 4+2 rows of 4 KiB chunks and
# memcpy of the same bytes (GB/s, one core), into $data; its table shown.
cl_ec_codec() {
	local f=$work/bench_ec.out
	if ! timeout 120 "$build/tests/perf/bench_ec" \
		"${RMP_BENCH_EC_SECONDS:-0.1}" >"$f" 2>&1; then
		show_log "$f"
		failed "bench_ec"
		return
	fi
	cat "$f"
	awk -v r="$1" '$1 == "4+2" && $2 == 4096 {
		print r "\trmpool\tec-encode-4+2@4096\tGBps\t" $3
		print r "\trmpool\tec-memcpy@4096\tGBps\t" $7
	}' "$f" >>"$data"
}

# cl_side R -- round R's cluster runs; the order alternates by round, as
# the groups' does.
cl_side() {
	local r=$1 n reps=(1 2) node=$addr:${cl_ports[1]}
	((r % 2)) || reps=(2 1)
	[[ $addr == *:* ]] && node="[$addr]:${cl_ports[1]}" # IPv6
	if ((r % 2)); then
		rb_prefix=node- rb "$r" -s "$node" alloc-lat --size 4096 \
			--iters "$alloc_iters"
		rb "$r" -C "$cl_url" --prefer bench=n1 alloc-lat --size 4096 \
			--iters "$alloc_iters"
	else
		rb "$r" -C "$cl_url" --prefer bench=n1 alloc-lat --size 4096 \
			--iters "$alloc_iters"
		rb_prefix=node- rb "$r" -s "$node" alloc-lat --size 4096 \
			--iters "$alloc_iters"
	fi
	for n in "${reps[@]}"; do
		rb "$r" -C "$cl_url" --replicas "$n" write-lat --size 64 \
			--iters "$lat_iters"
	done
	# a striped 16 MiB read against one node's: the two nodes move it
	# at once (latency rows: a speed-up is a ratio below 1)
	for n in "${reps[@]}"; do
		rb "$r" -C "$cl_url" --stripes "$n" read-lat --size 16M --depth 1 \
			--iters "$big_iters" --warmup 2
	done
	cl_ec_side "$r"
	# a mirrored 1 MiB call cut in 256 KiB pieces over each node's two
	# rails against the same call on one rail (pieces of 1 MiB: the call
	# is not cut)
	[ "$with_rails" = 0 ] && return
	for n in read-lat write-lat; do
		rb_prefix=rail1- rb "$r" -C "$cl_url" --replicas 2 \
			--rail-stripe 1M "$n" --size 1M --iters "$big_iters" --warmup 2
		rb_prefix=rails2- rb "$r" -C "$cl_url" --replicas 2 \
			--rail-stripe 256K "$n" --size 1M --iters "$big_iters" --warmup 2
	done
}

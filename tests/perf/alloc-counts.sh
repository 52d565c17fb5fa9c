#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# alloc-counts.sh PORT -- what one ALLOC+FREE costs placed by a cluster
# against the same on one node, counted (a benchmark: it prints, it does
# not judge). Two rmpoold registered in etcd (tests/rdma/lib-cluster.sh);
# rmpool-bench alloc-lat -s on node 1, and -C with node 1 preferred (the
# same daemon, requests back to back), then -C left to place (the two
# nodes in turn). For each: the latency line, the daemon's mean time and
# count per request from its metrics (control messages: one ALLOC and
# one FREE per pair on either path), and the client's system calls per
# pair under strace -f -c ((N2 - N1) runs apart, set-up cancelled out).
# Run it where the RDMA tests run (the Soft-RoCE VM):
#   tests/vm/run-in-vm.sh --build-dir build -- \
#     env RMP_BUILD_ROOT=$PWD/build bash tests/perf/alloc-counts.sh 7960
here=$(dirname "$0")/../rdma
source "$here/lib.sh"
source "$here/lib-admin.sh"
source "$here/lib-cluster.sh"
rmp_init alloc-counts "$1"
command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 77; }
BENCH=$RMP_BUILD_ROOT/tests/perf/rmpool-bench
CL_N=2
CL_POOL=([1]=32M [2]=32M)
CL_LABELS=([1]="bench=n1" [2]="bench=n2")
cluster_up
CLUSTER=etcd://${EURL#http://}
NODE=(-s "$RMP_TEST_ADDR:${CL_PORT[1]}")
SAME=(-C "$CLUSTER" --prefer bench=n1)
SPREAD=(-C "$CLUSTER")

# requests -- "dI.OP_sum S" and "dI.OP_count N" of each daemon's metrics.
requests() {
	local i
	for i in 1 2; do
		curl -s "http://127.0.0.1:$((CL_PORT[i] + 1000))/metrics" |
			sed -n "s/^rmpool_request_duration_seconds_\([a-z]*\){op=\"\([a-z]*\)\"} /d$i.\2_\1 /p"
	done
}

# timed NAME ARGS... -- 300 pairs: the latency line and, per daemon and
# request kind, its mean time and count.
timed() {
	local name=$1 m0 m1
	shift
	m0=$(requests)
	echo "$name: $("$BENCH" "$@" --iters 300 --warmup 20 alloc-lat --size 4096 | grep alloc-lat)"
	m1=$(requests)
	awk 'NR == FNR { a[$1] = $2; next } { d[$1] = $2 - a[$1] }
	     END { for (k in d) if (k ~ /_count$/ && d[k] > 0) {
			s = k; sub(/_count$/, "_sum", s)
			printf "   daemon %s: %d requests, %.1f us each\n",
				substr(k, 1, length(k) - 6), d[k], 1e6 * d[s] / d[k] } }' \
		<(echo "$m0") <(echo "$m1") | sort
}

# calls NAME ARGS... -- system calls per pair (those of at least 0.05).
calls() {
	local name=$1 n
	shift
	for n in 50 250; do
		strace -f -c -o "$RMP_TMP/s.$n" "$BENCH" "$@" --iters $n --warmup 20 \
			alloc-lat --size 4096 >/dev/null || rmp_fail "$name: rmpool-bench failed"
	done
	join -a2 -e0 -o 0,1.2,2.2 \
		<(awk 'NR > 2 && $NF !~ /^(total|-+)$/ { print $NF, $4 }' "$RMP_TMP/s.50" | sort) \
		<(awk 'NR > 2 && $NF !~ /^(total|-+)$/ { print $NF, $4 }' "$RMP_TMP/s.250" | sort) |
		awk -v name="$name" '{ d = ($3 - $2) / 200; if (d >= 0.05) s = s sprintf(" %s %.2f", $1, d) }
			END { print name ": system calls per pair:" s }'
}

for round in 1 2; do
	echo "== round $round"
	timed node "${NODE[@]}"
	timed cluster-same-node "${SAME[@]}"
	timed cluster-two-nodes "${SPREAD[@]}"
done
calls node "${NODE[@]}"
calls cluster-same-node "${SAME[@]}"
cluster_down
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-perf-smoke.sh PORT -- tests/perf/compare, smoke-sized, so that the
# comparison cannot rot unnoticed (it once printed perftest's column only,
# for months, after anonymous clients were refused).
#
# One round, 200 iterations a case, one latency size and one bandwidth
# case (and its two-connection variant; with a second device, the rails
# rows at 256 KiB x 4, 40 operations): compare must exit 0 (it does
# not when a row lacks a figure of either tool), every row of
# compare.json must hold both figures, the daemon's time per ALLOC, FREE
# and ATTACH must be there, and compare.png must be a PNG. With etcd
# installed, the cluster cases too (an etcd and three more daemons):
# both figures of each cluster row, etcd_reads 0 on each cluster line
# (placing a lease is no etcd round trip), and the bytes the nodes held
# per lease byte: 2 for 2 replicas, 1.5 and its row tags for an
# erasure-coded 2+1 lease (what it is for; 2+1 on three nodes, not the
# 4+2 of a full run on six: each node costs the smoke time). With fio
# and the nbdkit plugin, the block-device rows (fio for a second or 1
# MiB a case, swap-in through a cgroup of 4 MiB): both figures of each.
# With the Python module built, its figures (py_bench.json)
# beside rmpool-bench's. No figure is judged: under TCG they mean nothing at this
# size.
source "$(dirname "$0")/lib.sh"

rmp_init perf-smoke "$1"
out=$RMP_TMP/compare.out
rc=0
RMP_BENCH_PORT=$RMP_PORT RMP_BENCH_PERFTEST_PORT=$((RMP_PORT + 11000)) \
RMP_BENCH_ROUNDS=1 RMP_BENCH_LAT_SIZES=64 RMP_BENCH_LAT_ITERS=200 \
RMP_BENCH_BW_CASES=65536:16 RMP_BENCH_BW_ITERS=200 \
RMP_BENCH_ALLOC_ITERS=50 RMP_BENCH_BIG_ITERS=3 RMP_BENCH_OUT=$RMP_TMP/out \
RMP_BENCH_RAILS_CASE=262144:4 RMP_BENCH_RAILS_ITERS=40 RMP_BENCH_EC_SECONDS=0.01 \
RMP_BENCH_EC=2+1 RMP_BENCH_NBD_SECONDS=1 RMP_BENCH_NBD_IO=1M \
RMP_BENCH_NBD_SIZE=32 RMP_BENCH_NBD_SWAP_LIMIT=4 \
	"$(dirname "$0")/../perf/compare" >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" -eq 0 ] || fail_later "tests/perf/compare exited $rc"

# Every pair the issue names, each with both figures.
# compare says why when it leaves the block-device cases out; with fio
# and the plugin here (tests/setup.sh installs both), it must not
nbd_out=$(grep -m1 "block-device cases left out" "$out")
[ -n "$nbd_out" ] && command -v fio >/dev/null &&
	[ -e "$RMP_BUILD_ROOT/client/nbdkit/nbdkit-rmpool-plugin.so" ] &&
	fail_later "compare: $nbd_out"
python3 - "$RMP_TMP/out/compare.json" "${RMP_TEST_ADDR2:-}" "$nbd_out" <<'PY' || fail_later "compare.json incomplete"
import json, shutil, sys
doc = json.load(open(sys.argv[1]))
rows = doc["rows"]
want = ["read 64B lat, polled", "read 64B lat, sync", "write 64B lat, polled",
        "write 64B lat, sync", "cas 8B lat, polled", "cas 8B lat, sync",
        "faa 8B lat, polled", "faa 8B lat, sync", "alloc+free 4KiB pair",
        "attach, new key",
        "write 65536B x16 bw", "read 65536B x16 bw",
        "write 65536B x16 2 conns"]
if sys.argv[2]:  # a second device: the rails rows
    want += [f"{op} 262144B x4, {n}" for op in ("read", "write")
             for n in ("1 rail", "2 rails")]
bad = 0
for w in want:
    r = [x for x in rows if x["label"].startswith(w)]
    if not r:
        print(f"no row '{w}'"); bad += 1; continue
    r = r[0]
    if not (isinstance(r["perftest"], float) and r["perftest"] > 0 and
            isinstance(r["rmpool"], float) and r["rmpool"] > 0):
        print(f"row '{w}': perftest {r['perftest']} rmpool {r['rmpool']}")
        bad += 1
    else:
        print(f"row '{w}': perftest {r['perftest']:.2f} rmpool {r['rmpool']:.2f}")
# The daemon's side of the control rows (from its metrics endpoint).
ctl = doc.get("rmpoold_per_control_request", {})
for k in ("alloc_us", "free_us", "attach_us", "preempted_per_request"):
    v = ctl.get(k)
    ok = isinstance(v, (int, float)) and (v > 0 or k.startswith("preempted")
                                          and v >= 0)
    print(f"rmpoold {k}: {v}")
    bad += 0 if ok else 1
def both(kind, rows, w, base, other):
    """1 unless the row labelled w... has a figure > 0 on both sides."""
    r = [x for x in rows if x["label"].startswith(w)]
    if not r or not all(isinstance(r[0][k], float) and r[0][k] > 0
                        for k in (base, other)):
        print(f"{kind} row '{w}': {r[0] if r else 'missing'}")
        return 1
    print(f"{kind} row '{w}': {base} {r[0][base]:.2f} "
          f"{other} {r[0][other]:.2f}")
    return 0
# The cluster cases (tests/perf/compare-cluster.sh), when etcd is there.
if shutil.which("etcd"):
    cl = doc.get("cluster_rows", [])
    for w in ("alloc+free 4KiB, cluster", "write 64B sync, 2 replicas",
              "read 16MiB sync, 2 stripes", "pinned per lease byte, EC",
              "read 4KiB sync, EC 2+1 vs", "read 64KiB sync, EC",
              "read 64KiB sync copied (EC late bound)",
              "read 4KiB sync, EC 2+1, member lost", "write 1MiB sync, EC",
              "write 4KiB sync, EC", "encode 4+2"):
        bad += both("cluster", cl, w, "baseline", "cluster")
    pin = [x for x in cl if x["label"].startswith("pinned per lease byte")]
    if pin:  # exact, not timed: what the pools hold
        print(f"pinned per lease byte: 2 replicas {pin[0]['baseline']}, "
              f"EC 2+1 {pin[0]['cluster']}")
        # 2+1: 1.5, and each member's row tags (8 B a row, a page at
        # least: 3 pages on this 1 MiB lease)
        if pin[0]["baseline"] != 2.0 or not 1.5 <= pin[0]["cluster"] <= 1.55:
            print("pinned per lease byte: want 2.0 and 1.5 .. 1.55"); bad += 1
    reads = doc.get("etcd_reads_while_timed", {})
    for case in ("cluster-alloc-lat@4096", "write-lat-r1@64",
                 "write-lat-r2@64", "read-lat-r1-s2@16777216",
                 "read-lat-ec2+1@4096", "write-lat-ec2+1@4096",
                 "read-lat-ec2+1-lost@4096", "read-lat-ec2+1-copy@65536"):
        print(f"etcd reads while {case} was timed: {reads.get(case)}")
        bad += 0 if reads.get(case) == 0 else 1
else:
    print("etcd not installed: no cluster cases")
# The block-device rows (tests/perf/compare-nbd.sh), unless compare left
# them out, saying why (no fio, no plugin, not root).
if not sys.argv[3]:
    nb = doc.get("nbd_rows", [])
    for w in ("nbd 4KiB randread qd1", "nbd 4KiB randread qd32",
              "nbd 4KiB randwrite qd1", "nbd 4KiB randwrite qd32",
              "nbd 1MiB seq read", "nbd 1MiB seq write", "nbd swap-in"):
        bad += both("nbd", nb, w, "memory", "rmpool")
else:
    print(sys.argv[3])
sys.exit(1 if bad else 0)
PY
# The Python module's table (tests/perf/py_bench.py), when compare could
# run it (the module built, numpy there): every figure of both sides.
if [ -d "$RMP_BUILD_ROOT/client/python/rmpool" ] &&
	/usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	/usr/bin/python3 - "$RMP_TMP/out/py_bench.json" <<'PY' ||
import json, sys
try:
    med = json.load(open(sys.argv[1]))["medians"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"no py_bench figures: {e}")
bad = [k for k in ("c-64", "py-sync-64", "py-async-64", "c-1M", "py-1M")
       if not (isinstance(med.get(k), float) and med[k] > 0)]
print(f"py_bench medians: {med}")
sys.exit(f"py_bench figures missing: {bad}" if bad else 0)
PY
		fail_later "the Python module's figures are missing"
fi
magic=$(head -c 8 "$RMP_TMP/out/compare.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
[ "$magic" = 89504e470d0a1a0a ] || fail_later "compare.png is not a PNG ($magic)"
rmp_done

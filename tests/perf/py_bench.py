#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""py_bench.py -- the rmpool Python module beside rmpool-bench, in one run.

    PYTHONPATH=build/client/python /usr/bin/python3 tests/perf/py_bench.py \\
        --server ADDR:PORT --bench build/tests/perf/rmpool-bench

Against a running rmpoold (tenant from RMPOOL_TENANT/RMPOOL_KEY_FILE, as
rmpool-bench takes it), rounds that alternate which side goes first:

  64 B read latency   Lease.read(0, 64), one at a time (sync), and
                      `await lease.aread(0, 64)` one at a time (asyncio:
                      post, doorbell, the completion fd through the event
                      loop) vs rmpool-bench read-lat --size 64 (rmp_read)
  1 MiB read          Lease.read_into(a registered numpy array) vs
                      rmpool-bench read-lat --size 1M (rmp_read into its
                      registered buffer); as bandwidth, Gb/s

Prints one table: medians over the rounds, the ratio Python/C and the
issue's goal (sync latency <= 1.3x, bandwidth >= 0.95x). A benchmark:
exits non-zero when a tool fails, never because of a figure.
"""
import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

import rmpool

MIB = 1 << 20


def c_median_us(bench, server, size, iters):
    """rmpool-bench read-lat's median (us) for size."""
    r = subprocess.run([bench, "-s", server, "--size", str(size),
                        "--iters", str(iters), "--json", "read-lat"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"rmpool-bench: {r.stderr.strip()}")
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            return float(json.loads(line)["median_us"])
    raise RuntimeError(f"rmpool-bench printed no result: {r.stdout!r}")


def py_sync_us(lease, iters, warmup=100):
    rd = lease.read
    for _ in range(warmup):
        rd(0, 64)
    t = []
    now = time.perf_counter_ns
    for _ in range(iters):
        t0 = now()
        rd(0, 64)
        t.append(now() - t0)
    return statistics.median(t) / 1000.0


def py_async_us(host, port, token, iters, warmup=100):
    """asyncio on a client of its own: the completion fd it turns on
    would cost the sync cases a notification per completion."""
    async def run(lease):
        for _ in range(warmup):
            await lease.aread(0, 64)
        t = []
        now = time.perf_counter_ns
        for _ in range(iters):
            t0 = now()
            await lease.aread(0, 64)
            t.append(now() - t0)
        return statistics.median(t) / 1000.0
    with rmpool.Client(host, port, name="py_bench-aio") as c, \
            c.attach(token) as lease:
        return asyncio.run(run(lease))


def py_big_us(lease, arr, iters, warmup=5):
    for _ in range(warmup):
        lease.read_into(arr)
    t = []
    now = time.perf_counter_ns
    for _ in range(iters):
        t0 = now()
        lease.read_into(arr)
        t.append(now() - t0)
    return statistics.median(t) / 1000.0


def gbps(us):
    return MIB * 8 / (us * 1000.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True, help="ADDR:PORT of rmpoold")
    ap.add_argument("--bench", required=True, help="rmpool-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2000, help="64 B reads")
    ap.add_argument("--big-iters", type=int, default=50, help="1 MiB reads")
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args()
    host, _, port = a.server.rpartition(":")
    host = host.strip("[]")
    import numpy as np

    rows = {k: [] for k in ("c-64", "py-sync-64", "py-async-64",
                            "c-1M", "py-1M")}
    with rmpool.Client(host, int(port), name="py_bench") as c, \
            c.alloc(MIB) as lease:
        lease.write(os.urandom(MIB))
        arr = np.zeros(MIB, dtype=np.uint8)
        with c.register(arr):
            for r in range(a.rounds):
                sides = [("c", lambda: (
                            rows["c-64"].append(c_median_us(
                                a.bench, a.server, 64, a.iters)),
                            rows["c-1M"].append(c_median_us(
                                a.bench, a.server, MIB, a.big_iters)))),
                         ("py", lambda: (
                            rows["py-sync-64"].append(py_sync_us(lease, a.iters)),
                            rows["py-async-64"].append(py_async_us(
                                host, int(port), lease.token, a.iters)),
                            rows["py-1M"].append(py_big_us(lease, arr, a.big_iters))))]
                if r % 2:
                    sides.reverse()
                for name, f in sides:
                    print(f"-- py_bench round {r + 1} of {a.rounds}: {name}",
                          flush=True)
                    f()
    med = {k: statistics.median(v) for k, v in rows.items()}

    def rng(k, ck):
        rs = [p / q for p, q in zip(rows[k], rows[ck])]
        return f"{min(rs):.2f}..{max(rs):.2f}"
    print()
    print("Python (rmpool module) vs C (rmpool-bench), medians over "
          f"{a.rounds} round(s)")
    print(f"{'case':34} {'Python':>11} {'C':>11} {'ratio':>6} {'range':>11}  goal")
    print(f"{'64 B read latency, sync (us)':34} {med['py-sync-64']:11.2f} "
          f"{med['c-64']:11.2f} {med['py-sync-64'] / med['c-64']:6.2f} "
          f"{rng('py-sync-64', 'c-64'):>11}  <= 1.30")
    print(f"{'64 B read latency, asyncio (us)':34} {med['py-async-64']:11.2f} "
          f"{med['c-64']:11.2f} {med['py-async-64'] / med['c-64']:6.2f} "
          f"{rng('py-async-64', 'c-64'):>11}  -")
    py_bw, c_bw = gbps(med["py-1M"]), gbps(med["c-1M"])
    bw_rng = [q / p for p, q in zip(rows["py-1M"], rows["c-1M"])]
    print(f"{'1 MiB read_into numpy (Gb/s)':34} {py_bw:11.3f} {c_bw:11.3f} "
          f"{py_bw / c_bw:6.2f} {min(bw_rng):.2f}..{max(bw_rng):.2f}  >= 0.95")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": rows, "medians": med}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

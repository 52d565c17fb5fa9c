#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""compare-report.py -- the table, JSON and chart of tests/perf/compare.

Input (written by tests/perf/compare):
  --data FILE  one figure per line: round, tool, case, metric, value (tabs)
  --rows FILE  one table row per line: label, kind (lat|ctl|bw|bwc|bwr|cl),
               size, perftest case, metric, scale, rmpool case, metric,
               target (tabs). The perftest figure is multiplied by scale (2
               for ib_write_lat's half round trip, see compare's header).
               Kind cl (the cluster cases, tests/perf/compare-cluster.sh)
               compares rmpool with rmpool: its "perftest" case is
               rmpool's baseline (one server, one replica); those rows get
               a table of their own, with etcd's reads while they ran.
Output:
  the table on stdout; OUT/compare.json (rows with medians, ratio, per-
  round ratios and target, the cluster rows apart as cluster_rows, plus
  every raw figure); OUT/compare.png
  (gnuplot: latency and bandwidth by message size, both tools).
Exit status 1 when a row lacks a figure of either tool, or gnuplot fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def tsv(path, fields):
    """The lines of a tab-separated file that have that many fields."""
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == fields:
                yield parts


def load_data(path):
    figures = {}  # (tool, case, metric) -> {round: value}
    raw = []
    for rnd, tool, case, metric, value in tsv(path, 5):
        try:
            v = float(value)
        except ValueError:
            continue
        figures.setdefault((tool, case, metric), {})[int(rnd)] = v
        raw.append({"round": int(rnd), "tool": tool, "case": case,
                    "metric": metric, "value": v})
    return figures, raw


def load_rows(path):
    return [{"label": p[0], "kind": p[1], "size": int(p[2]),
             "perftest_case": p[3], "perftest_metric": p[4],
             "perftest_scale": float(p[5]), "rmpool_case": p[6],
             "rmpool_metric": p[7], "target": p[8]}
            for p in tsv(path, 9)]


def meets(ratio, target):
    if ratio is None or target[:2] not in ("<=", ">="):
        return None  # "-": a row for reference, no target
    op, val = target[:2], float(target[2:])
    return ratio <= val if op == "<=" else ratio >= val


def fmt(v, digits=None):
    if v is None:
        return "-"
    if digits is None:
        digits = 2 if v >= 10 else 3
    return f"{v:.{digits}f}"


def evaluate(rows, figures):
    missing = 0
    for row in rows:
        base_tool = {"cl": "rmpool", "nbd": "nbd"}.get(row["kind"],
                                                        "perftest")
        pt = figures.get((base_tool, row["perftest_case"],
                          row["perftest_metric"]), {})
        rb = figures.get(("rmpool", row["rmpool_case"],
                          row["rmpool_metric"]), {})
        pt = {r: v * row["perftest_scale"] for r, v in pt.items()}
        row["perftest_rounds"] = [pt[r] for r in sorted(pt)]
        row["rmpool_rounds"] = [rb[r] for r in sorted(rb)]
        row["perftest"] = statistics.median(pt.values()) if pt else None
        row["rmpool"] = statistics.median(rb.values()) if rb else None
        row["ratio"] = (row["rmpool"] / row["perftest"]
                        if row["perftest"] and row["rmpool"] is not None
                        else None)
        per_round = [rb[r] / pt[r] for r in sorted(pt) if r in rb and pt[r]]
        row["round_ratios"] = per_round
        row["meets_target"] = meets(row["ratio"], row["target"])
        if row["perftest"] is None or row["rmpool"] is None:
            missing += 1
    return missing


def print_rows(rows, first, base, other):
    print(f"{first:34} {base:>9} {other:>9} {'ratio':>6} "
          f"{'ratio range':>11} {'target':>7}")
    for row in rows:
        rr = row["round_ratios"]
        rng = f"{min(rr):.2f}-{max(rr):.2f}" if len(rr) > 1 else "-"
        verdict = {True: "", False: " (not met)", None: ""}[
            row["meets_target"]]
        print(f"{row['label']:34} {fmt(row['perftest']):>9} "
              f"{fmt(row['rmpool']):>9} {fmt(row['ratio'], 2):>6} "
              f"{rng:>11} {row['target']:>7}{verdict}")


def print_table(rows, rounds, mode):
    print_rows(rows, "metric", "perftest", "rmpool")
    print(f"(medians over {rounds} round(s); ratio = rmpool / perftest: for "
          "latency > 1 means rmpool is slower, for bandwidth < 1 does; range:"
          " per-round ratios; write rows: 2 x ib_write_lat, alloc+free: "
          "4 x ib_send_lat, attach: 2 x ib_send_lat, see tests/perf/compare;"
          " perftest over "
          f"{mode})")


def etcd_reads(rows, figures):
    """etcd's reads of the membership while each cluster case was timed
    (rmpool-bench's etcd_reads=), summed over rounds; None: not read."""
    cases = []
    for row in rows:
        for case in (row["perftest_case"], row["rmpool_case"]):
            if case not in cases:
                cases.append(case)
    out = {}
    for case in cases:
        v = figures.get(("rmpool", case, "etcd_reads"))
        if v is not None:
            out[case] = int(sum(v.values()))
        elif any(k[:2] == ("rmpool", case) for k in figures) and \
                case.startswith(("cluster-", "write-lat-r", "read-lat-r")):
            out[case] = None
    return out


def print_cluster(rows, reads, rounds, cpu):
    print()
    print_rows(rows, "cluster case (rmpool only)", "baseline", "cluster")
    print(f"(medians over {rounds} round(s); ratio = cluster / baseline; "
          "baselines on the cluster's nodes: alloc+free by -s to one of "
          "them, write on a lease of one replica; an erasure-coded "
          "lease's: a mirror of 3 replicas, or itself with no member "
          "lost)")
    print("etcd reads of the membership (Range calls + Watch streams, its "
          "/metrics) while they were timed, summed over rounds: "
          + ", ".join(f"{c.split('@')[0]} "
                      + ("not read" if n is None else str(n))
                      for c, n in reads.items())
          + ("; 0: no etcd round trip on the path" if reads else "none"))
    if cpu is not None:
        print(f"etcd and the cluster's rmpoold used {cpu:.1f}% of a CPU "
              "while they ran (from the first cluster round to the last "
              "round's end: later rounds' cases ran beside them)")


# One hue per operation, dark for perftest, lighter for rmpool's variants.
STYLES = {
    "perftest read": "lc rgb '#000080'",
    "rmpool read polled": "lc rgb '#1f77b4'",
    "rmpool read sync": "lc rgb '#9ecae1'",
    "rmpool read": "lc rgb '#1f77b4'",
    "perftest write": "lc rgb '#8b0000'",
    "rmpool write polled": "lc rgb '#d62728'",
    "rmpool write sync": "lc rgb '#fc9272'",
    "rmpool write": "lc rgb '#d62728'",
}


def chart(rows, out_dir):
    """compare.png: latency (left) and bandwidth (right) by size."""
    series = {}  # (panel, title) -> [(size, value)]
    for row in rows:
        op = row["label"].split()[0]
        # Atomics and ALLOC+FREE have one size: the table has them.
        if row["kind"] not in ("lat", "bw") or op not in ("read", "write"):
            continue
        panel = "lat" if row["kind"] == "lat" else "bw"
        variant = ""
        if "polled" in row["label"]:
            variant = " polled"
        elif "sync" in row["label"]:
            variant = " sync"
        for tool in ("perftest", "rmpool"):
            if row[tool] is None:
                continue
            title = f"{tool} {op}" + (variant if tool == "rmpool" else "")
            pts = series.setdefault((panel, title), [])
            if (row["size"], row[tool]) not in pts:
                pts.append((row["size"], row[tool]))
    data_path = os.path.join(out_dir, "compare.dat")
    plots = {"lat": [], "bw": []}
    index = 0
    with open(data_path, "w") as f:
        for (panel, title), pts in sorted(series.items()):
            f.write(f"# {title}\n")
            for size, v in sorted(pts):
                f.write(f"{size} {v}\n")
            f.write("\n\n")
            style = STYLES.get(title, "lc rgb 'gray'")
            plots[panel].append(f"'{data_path}' index {index} with "
                                f"linespoints {style} lw 2 pt 7 "
                                f"title '{title}'")
            index += 1
    png = os.path.join(out_dir, "compare.png")
    script = f"""
set terminal png size 1400,600 noenhanced
set output '{png}'
set multiplot layout 1,2 title 'rmpool vs perftest, same device, same run'
set logscale x 2
set grid
set key left top
set xlabel 'message size (bytes)'
set ylabel 'median latency (us)'
set title 'latency (write: 2 x ib_write_lat)'
plot {', '.join(plots['lat']) or "NaN notitle"}
set ylabel 'bandwidth (Gb/s)'
set title 'bandwidth (each size at its depth: see the table)'
plot {', '.join(plots['bw']) or "NaN notitle"}
unset multiplot
"""
    res = subprocess.run(["gnuplot"], input=script, text=True,
                         capture_output=True)
    if res.returncode != 0 or not os.path.exists(png):
        sys.stderr.write(f"compare-report: gnuplot failed: {res.stderr}\n")
        return None
    return png


def daemon_cpu(figures):
    """rmpoold's CPU share while rmpool-bench ran the bandwidth cases."""
    v = figures.get(("rmpoold", "cpu-during-bw", "percent"), {})
    return [v[r] for r in sorted(v)]


def daemon_ctl(figures):
    """rmpoold's side of the control rows, median over rounds: its mean time
    per ALLOC, FREE and ATTACH (us) and its preemptions per request."""
    out = {}
    for key in ("alloc", "free", "attach"):
        v = figures.get(("rmpoold", "ctl-" + key, "us"), {})
        if v:
            out[key + "_us"] = statistics.median(v.values())
    v = figures.get(("rmpoold", "ctl-preempted", "per-request"), {})
    if v:
        out["preempted_per_request"] = statistics.median(v.values())
    return out


def print_nbd(rows, rounds):
    print()
    print_rows(rows, "block device (fio, nbdkit)", "memory", "rmpool")
    print(f"(medians over {rounds} round(s); ratio = rmpool / memory: "
          "nbdkit's rmpool plugin over a lease against its memory plugin, "
          "the same NBD path; < 1 means rmpool is slower)")


def sides_json(row, base, other):
    """A row of rmpool against something not perftest, with its sides
    named as they are (base, other)."""
    names = {"perftest": base, "rmpool": other}
    out = {}
    for k, v in row.items():
        side = k.split("_")[0]
        out[k.replace(side, names[side], 1) if side in names else k] = v
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--rows", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--perftest-mode", default="?")
    args = ap.parse_args()

    figures, raw = load_data(args.data)
    every = load_rows(args.rows)
    missing = evaluate(every, figures)
    rows = [r for r in every if r["kind"] not in ("cl", "nbd")]
    cluster = [r for r in every if r["kind"] == "cl"]
    nbd = [r for r in every if r["kind"] == "nbd"]
    print_table(rows, args.rounds, args.perftest_mode)
    reads = etcd_reads(cluster, figures)
    cl_cpu = figures.get(("cluster", "cpu-beside", "percent"), {}).get(0)
    if cluster:
        print_cluster(cluster, reads, args.rounds, cl_cpu)
    if nbd:
        print_nbd(nbd, args.rounds)
    cpu = daemon_cpu(figures)
    if cpu:
        print("rmpoold CPU while the rmpool bandwidth cases ran: "
              + ", ".join(f"{c:.2f}%" for c in cpu) + " (per round; "
              "target < 1%)")
    ctl = daemon_ctl(figures)
    if ctl:
        print("rmpoold per control request, from receiving it to its reply "
              "posted (mean, us): "
              + ", ".join(f"{k[:-3]} {ctl[k]:.1f}" for k in
                          ("alloc_us", "free_us", "attach_us") if k in ctl)
              + (f"; preempted {ctl['preempted_per_request']:.2f} times a "
                 "request" if "preempted_per_request" in ctl else "")
              + " (medians over rounds)")
    os.makedirs(args.out, exist_ok=True)
    json_path = os.path.join(args.out, "compare.json")
    with open(json_path, "w") as f:
        json.dump({"rounds": args.rounds,
                   "perftest_mode": args.perftest_mode,
                   "rmpoold_cpu_percent_during_bw": cpu,
                   "rmpoold_per_control_request": ctl,
                   "rows": rows,
                   "cluster_rows": [sides_json(r, "baseline", "cluster")
                                    for r in cluster],
                   "nbd_rows": [sides_json(r, "memory", "rmpool")
                                for r in nbd],
                   "etcd_reads_while_timed": reads,
                   "cluster_cpu_percent_beside": cl_cpu,
                   "figures": raw}, f, indent=1)
        f.write("\n")
    png = chart(rows, args.out)
    print(f"compare: wrote {json_path}" + (f" and {png}" if png else ""))
    if missing:
        sys.stderr.write(f"compare-report: {missing} row(s) lack a figure "
                         "of one tool\n")
    return 1 if missing or not png else 0


if __name__ == "__main__":
    sys.exit(main())

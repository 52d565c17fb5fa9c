#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers.py -- the daemon's files call downward only.

Reads the #include "..." lines of daemon/*.[ch] (a file can call only
what a header it includes declares) and checks them against LAYERS, top
first: a module may include its own header and headers of modules in
lower layers, never one in its own or a higher layer, so there is no
circle. common/ sits below everything. Prints the module graph
(--graph prints only that, for the README) and exits 1 on a violation.

Usage: check_layers.py [--graph] [SOURCE_ROOT]
"""
import os
import re
import sys

# Top first. Each line is one layer; the README shows the same picture.
LAYERS = [
    ["main", "rmpoolctl"],  # the daemon; rmpoolctl, a program of its own
    ["server"],        # set-up, event loop, signals, drain, stop
    ["admin", "metrics", "notify"],  # admin socket; Prometheus; systemd
    ["ops"],           # operators: status, leases, clients, reload
    ["listener"],      # rdma_cm events: admit or reject
    ["conn"],          # a connection: QP, receive path, replies, close
    ["request"],       # decode one request, act, build the reply
    ["lifecycle"],     # the one owner of a lease's life
    ["keys", "zero", "tenant"],  # windows / regions; zeroing; tenants
    ["pool", "device", "lease", "journal", "guard", "config"],
    ["alloc", "topology", "network"],  # extent allocator; NUMA and sysfs
                                       # facts; peer networks
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def main(argv):
    graph_only = "--graph" in argv
    args = [a for a in argv if a != "--graph"]
    root = args[0] if args else os.environ.get(
        "RMP_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
    ddir = os.path.join(root, "daemon")
    common = {f[:-2] for f in os.listdir(os.path.join(root, "common"))
              if f.endswith(".h")}
    layer_of = {m: i for i, layer in enumerate(LAYERS) for m in layer}
    uses = {}
    errors = []
    for f in sorted(os.listdir(ddir)):
        if not f.endswith((".c", ".h")):
            continue
        # A module may span files: NAME.c, NAME_PART.c and a private
        # NAME_int.h are all module NAME (the lifecycle is four files).
        mod = f[:-2].split("_")[0]
        if mod not in layer_of:
            errors.append(f"daemon/{f}: module '{mod}' has no layer in "
                          f"{os.path.basename(__file__)}")
            continue
        with open(os.path.join(ddir, f)) as fh:
            for inc in INCLUDE.findall(fh.read()):
                if inc.split("_")[0] == mod or inc in common:
                    continue
                if inc not in layer_of:
                    errors.append(f"daemon/{f}: includes unknown {inc}.h")
                    continue
                uses.setdefault(mod, set()).add(inc)
                if layer_of[inc] <= layer_of[mod]:
                    errors.append(
                        f"daemon/{f}: includes {inc}.h, which is not below "
                        f"it ({mod}: layer {layer_of[mod]}, {inc}: layer "
                        f"{layer_of[inc]})")
    lines = []
    for layer in LAYERS:
        cells = []
        for m in layer:
            down = sorted(uses.get(m, ()), key=lambda x: (layer_of[x], x))
            cells.append(f"{m} -> {', '.join(down)}" if down else m)
        lines.append("  |  ".join(cells))
    if graph_only:
        print("\n".join(lines))
        return 0
    for line in lines:
        print("# " + line)
    for e in errors:
        print("not ok - " + e)
    print(f"{'not ok' if errors else 'ok'} 1 - daemon/ includes point "
          f"downward only ({len(errors)} violation(s))")
    print("1..1")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers.py -- the daemon's and the client library's files call downward only.

Reads the #include "..." lines of daemon/*.[ch] and of client/*.[ch]
with client/include/*.h (a file can call only what a header it includes
declares) and checks each folder against its LAYERS, top first: a
module may include its own header and headers of modules in lower
layers, never one in its own or a higher layer, so there is no circle.
common/ sits below everything. A program on top of the client library
(the rmpool command) may include only its public header. Prints each
folder's module graph (--graph prints only the daemon's, for
docs/architecture.md; --graph=client the client's) and exits 1 on a
violation.

Usage: check_layers.py [--graph[=FOLDER]] [SOURCE_ROOT]
"""
import os
import re
import sys

# Top first. Each line is one layer; docs/architecture.md shows the same
# picture.
DAEMON_LAYERS = [
    ["main", "rmpoolctl"],  # the daemon; rmpoolctl, a program of its own
    ["server"],        # set-up, event loop, signals, drain, stop
    ["devices"],       # the devices served, each with its pool
    ["admin", "metrics", "notify", "cluster"],  # admin socket; Prometheus;
                                    # systemd; membership in etcd
    ["ops"],           # operators: status, leases, clients, reload
    ["listener"],      # rdma_cm events: admit or reject
    ["conn"],          # a connection: QP, receive path, replies, close
    ["request"],       # decode one request, act, build the reply
    ["lifecycle"],     # the one owner of a lease's life
    ["keys", "zero", "tenant"],  # windows / regions; zeroing; tenants
    ["pool", "device", "lease", "journal", "guard", "config"],
    ["alloc", "network"],  # extent allocator; peer networks (NUMA and
                           # sysfs facts: common/topology.c)
]

# librmpool, top first. client.c's reconnect is an upcall through a
# function pointer that state.h explains, not an include.
CLIENT_LAYERS = [
    ["cli"],           # the rmpool command: a program on the public API
    ["cluster"],       # many nodes: membership from etcd, placement
    ["client"],        # options, connect, close, free; reconnecting
    ["io"],            # the data path: READ, WRITE, atomics, the async ring
    ["lease"],         # lease handles and their control calls
    ["chan", "buf"],   # completions, send queue, waits, control RPC;
                       # registered memory
    ["error", "spin", "stripe", "ec", "rails", "group"],  # error texts;
                                  # how long a wait polls; a striped
                                  # lease's arithmetic; an erasure-coded
                                  # one's layout and code (ISA-L); how a
                                  # call is dealt over a node's rails; a
                                  # group's member states
    ["state", "opts"],  # one client's state; the option structs' rule
    ["backoff", "fault", "park"],  # the wait before trying again what failed;
                           # what an error means; cm ids kept while
                           # their port is down
    ["rmpool"],        # the public API (client/include): declarations
]

# folder: (its layers, the folders its files are read from, programs that
# may include only the named modules of the folder).
FOLDERS = {
    "daemon": (DAEMON_LAYERS, ["daemon"], {}),
    "client": (CLIENT_LAYERS, ["client", os.path.join("client", "include")],
               {"cli": {"rmpool"}}),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def check(root, folder, common):
    """(graph lines, violations) of one folder."""
    layers, dirs, programs = FOLDERS[folder]
    layer_of = {m: i for i, layer in enumerate(layers) for m in layer}
    uses = {}
    errors = []
    for d in dirs:
        for f in sorted(os.listdir(os.path.join(root, d))):
            if not f.endswith((".c", ".h")):
                continue
            # A module may span files: NAME.c, NAME_PART.c and a private
            # NAME_int.h are all module NAME (the lifecycle is six files).
            mod = f[:-2].split("_")[0]
            where = f"{d}/{f}"
            if mod not in layer_of:
                errors.append(f"{where}: module '{mod}' has no layer in "
                              f"{os.path.basename(__file__)}")
                continue
            with open(os.path.join(root, d, f)) as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                if inc.split("_")[0] == mod or inc in common:
                    continue
                # another module's part header (ec_lease.h: module ec)
                if inc not in layer_of and inc.split("_")[0] in layer_of:
                    inc = inc.split("_")[0]
                if inc not in layer_of:
                    errors.append(f"{where}: includes unknown {inc}.h")
                    continue
                uses.setdefault(mod, set()).add(inc)
                if mod in programs and inc not in programs[mod]:
                    errors.append(
                        f"{where}: includes {inc}.h, but {mod} is a program "
                        f"on {', '.join(sorted(programs[mod]))}.h only")
                elif layer_of[inc] <= layer_of[mod]:
                    errors.append(
                        f"{where}: includes {inc}.h, which is not below "
                        f"it ({mod}: layer {layer_of[mod]}, {inc}: layer "
                        f"{layer_of[inc]})")
    lines = []
    for layer in layers:
        cells = []
        for m in layer:
            down = sorted(uses.get(m, ()), key=lambda x: (layer_of[x], x))
            cells.append(f"{m} -> {', '.join(down)}" if down else m)
        lines.append("  |  ".join(cells))
    return lines, errors


def main(argv):
    graph = None
    args = []
    for a in argv:
        if a == "--graph" or a.startswith("--graph="):
            graph = a.partition("=")[2] or "daemon"
        else:
            args.append(a)
    root = args[0] if args else os.environ.get(
        "RMP_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
    common = {f[:-2] for f in os.listdir(os.path.join(root, "common"))
              if f.endswith(".h")}
    if graph is not None:
        if graph not in FOLDERS:
            print(f"--graph: no folder {graph} (one of "
                  f"{', '.join(FOLDERS)})", file=sys.stderr)
            return 2
        print("\n".join(check(root, graph, common)[0]))
        return 0
    failed = 0
    page = os.path.join("docs", "architecture.md")
    shown_in = open(os.path.join(root, page), encoding="utf-8").read()
    n = 0
    for folder in FOLDERS:
        lines, errors = check(root, folder, common)
        print(f"# {folder}/, top first:")
        for line in lines:
            print("#   " + line)
        for e in errors:
            print("# violation: " + e)
        n += 1
        print(f"{'not ok' if errors else 'ok'} {n} - {folder}/ includes "
              f"point downward only ({len(errors)} violation(s))")
        failed += bool(errors)
        # docs/architecture.md shows each folder's picture; it must be
        # today's.
        shown = "```\n" + "\n".join(lines) + "\n```" in shown_in
        n += 1
        print(f"{'ok' if shown else 'not ok'} {n} - {page} shows "
              f"{folder}/'s layers as they are"
              + ("" if shown else f" (paste the output of --graph={folder})"))
        failed += not shown
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""index.py BUILD_DIR [MODE] -- the test index of tests/README.md.

Every test meson knows of (`meson introspect --tests`), grouped by suite,
with the promise it checks: the first sentence of the header comment of
its script or source file (after "NAME ARGS -- "). The index sits in
tests/README.md between the two INDEX markers. Without a MODE it is
printed; --write puts it there; --check fails (exit 1, with a diff) when
what is there is not what the tests say, so the index cannot drift.
The fuzz suite is left out: it exists only in a -Dfuzz=true build.
"""
import difflib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
README = os.path.join(ROOT, "tests", "README.md")
BEGIN = "<!-- INDEX BEGIN: tests/index.py BUILD_DIR --write -->"
END = "<!-- INDEX END -->"
# The suites in the order a reader meets them; tag suites go in a column.
SUITES = [
    ("unit", "Unit (host only; `meson test --suite unit`)"),
    ("rdma", "RDMA (daemon and clients on Soft-RoCE; `--suite rdma`)"),
    ("twohost", "Two hosts (two VMs; `--suite twohost`)"),
    ("etcd", "etcd (a real etcd the test starts, no RDMA; `--suite etcd`)"),
    ("bench", "Benchmarks (figures, no verdict; `--suite bench`)"),
]
TAGS = {"admin", "plain-only", "plain-too"}


def source_of(cmd):
    """The file that says what a test checks: its script, or the C source
    of its binary (tests/**/NAME.c)."""
    for arg in cmd:
        if arg.endswith((".sh", ".py")) and os.path.exists(arg):
            return arg
    base = os.path.basename(cmd[0])
    for d, _, files in os.walk(os.path.join(ROOT, "tests")):
        if base + ".c" in files:
            return os.path.join(d, base + ".c")
    return None


def promise(path):
    """The header comment's first sentence, without "NAME ARGS -- "."""
    if not path:
        return "?"
    text = []
    comment = (r'^(?:/?\*+)\s?(.*?)\s*(?:\*/)?$' if path.endswith(".c") else
               r'^(?:#|""")\s?(.*?)\s*$')
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s.startswith("#!") or "SPDX-License-Identifier" in s:
                continue
            if s in ("/*", "#", "*", ""):
                if text:
                    break
                continue
            if text and text[0] is None:  # inside a Python docstring
                text.append(s.replace('"""', ""))
                if s.endswith('"""'):
                    break
                continue
            m = re.match(comment, s)
            if not m:
                break
            if s.startswith('"""'):
                text.append(None)
            text.append(m.group(1).replace('"""', ""))
    t = " ".join(x for x in text if x is not None)
    t = re.sub(r"^\S+\.(?:sh|c|py)\b[^-]*--\s*", "", t)
    end = re.search(r"(?<!\.)\.(?!\.)(\s|$)", t)
    return (t[:end.start()] if end else t).strip() or "?"


def index(build):
    out = subprocess.run(["meson", "introspect", build, "--tests"],
                         check=True, capture_output=True, text=True).stdout
    tests = json.loads(out)
    lines = []
    for suite, title in SUITES:
        rows = []
        for t in tests:
            suites = {s.split(":", 1)[-1] for s in t["suite"]}
            if suite not in suites:
                continue
            src = source_of(t["cmd"])
            rel = os.path.relpath(src, ROOT) if src else "?"
            tags = ", ".join(sorted(suites & TAGS))
            rows.append((t["name"], rel, tags, promise(src)))
            # a test that runs other scripts (tests/twohost/test-pair.sh):
            # a row for each, named after it
            for sub in [a for a in t["cmd"][1:]
                        if a.endswith(".sh") and a != src]:
                name = re.sub(r"^test-|\.sh$", "", os.path.basename(sub))
                rows.append((f'{t["name"]} / {name}',
                             os.path.relpath(sub, ROOT), tags, promise(sub)))
        if not rows:
            continue
        lines += ["", "### " + title, "",
                  "| test | file | also in | what it checks |",
                  "|---|---|---|---|"]
        for name, rel, tags, what in sorted(rows):
            what = what.replace("|", "\\|")
            lines.append(f"| `{name}` | `{rel}` | {tags} | {what} |")
    return "\n".join(lines[1:]) + "\n"


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    new = index(argv[0])
    if len(argv) == 1:
        sys.stdout.write(new)
        return 0
    with open(README, encoding="utf-8") as f:
        doc = f.read()
    i, j = doc.find(BEGIN), doc.find(END)
    if i < 0 or j < i:
        print(f"{README}: no index markers", file=sys.stderr)
        return 1
    old = doc[i + len(BEGIN) + 1:j]
    if argv[1] == "--write":
        with open(README, "w", encoding="utf-8") as f:
            f.write(doc[:i + len(BEGIN)] + "\n" + new + doc[j:])
        return 0
    if old == new:
        print("ok - tests/README.md lists every test and what it checks")
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), "tests/README.md",
        "tests/index.py"))
    print("not ok - tests/README.md is out of date: run "
          "tests/index.py BUILD_DIR --write")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_sizes.py [ROOT] -- no function of daemon/, client/ or common/
over 100 lines, no file over 900; prints TAP.

A function is counted from the line of its opening brace (at the start
of a line, as the code writes every function body) to its closing one.
FILES_OVER lists the files that are still over 900 lines, each with the
most it may have: a ceiling that only goes down, until the file is split
and leaves the list. FUNCTIONS_OVER would list a function that reads
better long, with why; none does.
"""
import glob
import os
import re
import sys

MAX_FUNCTION = 100
MAX_FILE = 900
FILES_OVER = {
    # file: (ceiling, why it is still over)
}
# Headers that are a manual, with the most lines they may have and why.
MANUALS = {
    os.path.join("client", "include", "rmpool.h"): (
        1100, "the library's manual: every call and option documented "
        "where it is declared (STYLE 1); it grows with the API"),
}
FUNCTIONS_OVER = {}


def functions(path):
    """(name, first line, lines) of each function body in path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("{") and i > 0:
            j = i - 1
            while j > 0 and lines[j - 1].strip() and not lines[j - 1].startswith(
                    ("}", "/*", " *", "#")) and not lines[j - 1].endswith(";"):
                j -= 1
            m = re.search(r"(\w+)\s*\(", " ".join(lines[j:i]))
            k = i + 1
            while k < len(lines) and not lines[k].startswith("}"):
                k += 1
            out.append((m.group(1) if m else "?", i + 1, k - i + 1))
            i = k
        i += 1
    return out


def main(argv):
    root = argv[0] if argv else os.environ.get(
        "RMP_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
    errors, n = [], 0
    for path in sorted(glob.glob(os.path.join(root, "daemon", "*.[ch]")) +
                       glob.glob(os.path.join(root, "client", "*.[ch]")) +
                       glob.glob(os.path.join(root, "client", "include", "*.h")) +
                       glob.glob(os.path.join(root, "common", "*.[ch]"))):
        rel = os.path.relpath(path, root)
        nlines = len(open(path, encoding="utf-8").read().split("\n")) - 1
        ceiling = FILES_OVER.get(rel, MANUALS.get(rel, (MAX_FILE, "")))[0]
        if nlines > ceiling:
            errors.append(f"{rel}: {nlines} lines (at most {ceiling})")
        n += 1
        if not path.endswith(".c"):
            continue
        for name, first, length in functions(path):
            limit = FUNCTIONS_OVER.get(f"{rel}:{name}", (MAX_FUNCTION,))[0]
            if length > limit:
                errors.append(f"{rel}:{first}: {name} has {length} lines "
                              f"(at most {limit})")
    for rel, (ceiling, _) in FILES_OVER.items():
        path = os.path.join(root, rel)
        if os.path.exists(path) and \
                len(open(path, encoding="utf-8").read().split("\n")) - 1 <= MAX_FILE:
            errors.append(f"{rel}: at most {MAX_FILE} lines now: take it "
                          "off FILES_OVER")
    for e in errors:
        print("not ok - " + e)
    print(f"{'not ok' if errors else 'ok'} 1 - {n} files within their size, "
          f"functions within {MAX_FUNCTION} lines ({len(errors)} over)")
    print("1..1")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

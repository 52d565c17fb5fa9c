#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_links.py -- every relative link of README.md and docs/ names a file that exists, and every anchor a heading of it.

Reads README.md and every docs/**/*.md. Each inline link or image,
[text](PATH#ANCHOR) or ![alt](PATH), and each reference definition,
[id]: PATH#ANCHOR, outside code blocks and code spans, that is relative
(no scheme such as https: or mailto:) must name a file or folder that
exists, relative to the page; an ANCHOR (alone, #ANCHOR, for the page
itself) must be the slug of one of the target's headings as GitHub makes
it: the heading's text without its markup, lowercased, every character
but letters, digits, '-', '_' and spaces dropped, spaces made '-', and
a second heading of the same slug given "-1", a third "-2". An
id="..." or name="..." in the page's HTML is an anchor too. Only a
Markdown file has anchors. Prints one TAP line per page and exits 1
when a link does not resolve, listing each as FILE:LINE.

Usage: check_links.py [SOURCE_ROOT]
"""
import os
import re
import sys
from urllib.parse import unquote

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A code span: a run of backticks, text not crossing a blank line, the
# same run again.
CODE_SPAN = re.compile(r"(`+)(?:(?!\n[ \t]*\n).)+?\1", re.S)
# [text](target "title") and ![alt](target); the text may hold one level
# of brackets and may cross lines.
INLINE = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^)\s]+)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
HTML_ID = re.compile(r"""<[a-zA-Z][^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def blank(text, start, end):
    """text with [start, end) replaced by spaces, its newlines kept."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def prose(text):
    """The page with fenced code blocks and code spans blanked out (so
    offsets and line numbers stay those of the page)."""
    lines = text.split("\n")
    fence = None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            lines[i] = " " * len(line)
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            lines[i] = " " * len(line)
    text = "\n".join(lines)
    for m in reversed(list(CODE_SPAN.finditer(text))):
        text = blank(text, m.start(), m.end())
    return text


def heading_text(raw):
    """A heading as it reads: links as their text, no code or emphasis
    marks, no HTML tags."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    t = re.sub(r"<[^>]+>", "", t)
    t = t.replace("`", "")
    t = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", t)
    return t.strip()


def slug(text):
    s = "".join(c for c in heading_text(text).lower()
                if c.isalnum() or c in "-_ ")
    return s.replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor of a Markdown file."""
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found, seen = set(), {}
        fence = None
        for line in text.split("\n"):
            m = FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)
                continue
            if fence is not None:
                if m and m.group(1)[0] == fence[0] \
                        and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            h = HEADING.match(line)
            if h:
                s = slug(h.group(2) or "")
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
            found.update(HTML_ID.findall(line))
        cache[path] = found
    return cache[path]


def targets(text):
    """(offset, target) of every link and reference definition."""
    body = prose(text)
    out = [(m.start(1), m.group(1)) for m in INLINE.finditer(body)]
    out += [(m.start(1), m.group(1)) for m in REFDEF.finditer(body)]
    return sorted((o, t[1:-1] if t.startswith("<") else t) for o, t in out)


def check_page(root, page):
    """(links checked, failures) of one page."""
    path = os.path.join(root, page)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    failures = []
    checked = 0
    for offset, target in targets(text):
        if SCHEME.match(target) or target.startswith("//"):
            continue
        checked += 1
        line = text.count("\n", 0, offset) + 1
        where = f"{page}:{line}: ({target})"
        name, _, anchor = target.partition("#")
        name = unquote(name.split("?")[0])
        dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) \
            if name else path
        if not os.path.exists(dest):
            failures.append(f"{where} no such file: "
                            f"{os.path.relpath(dest, root)}")
            continue
        if not anchor:
            continue
        anchor = unquote(anchor)
        if not dest.endswith(".md") or os.path.isdir(dest):
            failures.append(f"{where} #{anchor}: "
                            f"{os.path.relpath(dest, root)} has no headings "
                            "to point into")
        elif anchor not in anchors(dest):
            failures.append(f"{where} no heading of "
                            f"{os.path.relpath(dest, root)} makes "
                            f"#{anchor}")
    return checked, failures


def pages(root):
    out = ["README.md"]
    for d, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def main(argv):
    root = argv[0] if argv else os.environ.get(
        "RMP_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
    failed = 0
    all_pages = pages(root)
    for n, page in enumerate(all_pages, 1):
        checked, failures = check_page(root, page)
        for f in failures:
            print("# " + f)
        print(f"{'not ok' if failures else 'ok'} {n} - {page}: "
              f"{checked} relative link(s), "
              + (f"{len(failures)} do not resolve" if failures
                 else "every file and anchor there"))
        failed += bool(failures)
    print(f"1..{len(all_pages)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

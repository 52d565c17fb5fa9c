#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_errnos.py -- every errno a public function of librmpool can
return is documented for it, in rmpool.h and in librmpool(3); prints TAP.

Usage: check_errnos.py [--dump] [SOURCE_ROOT]; --dump also shows what
each request can get from the server and what was read as no errno.

The errnos are derived from the code, not listed by hand:

 - the library: every function of librmpool's sources (client/meson.build)
   and of common/ is read (a body opens and closes with a brace at the
   start of a line, as check_sizes.py relies on too). A function can
   return what its return statements give: -E literals, the values of
   the calls they return, of the locals, parameters and fields they
   return (every assignment to them; every argument at every call site),
   through ?: (`v == -EX ? -EY : v` turns EX into EY) and guards
   (`if (v && v != -EX) return v;` passes no EX on). `-errno` and the
   like pass on a system's or device's error: listed in a TAP comment,
   not checked.
 - the server: the status of a reply (c->rpc_rep.hdr.status, which
   rmpc_rpc returns) depends on the request, named by the hdr.opcode the
   caller set (followed through parameters, as in id_rpc and token_rpc).
   What each request can get is derived the same way from the daemon's
   sources (daemon/meson.build): the returns of dispatch() in
   daemon/request.c before its switch (every request) and in that
   request's case; for AUTH the statuses rmp_request_auth and
   admit_proven set (the decoder's statuses in rmp_request_handle are
   for malformed messages, which the library does not send); for ATTACH
   also those of the fence of an exclusive one (rmp_request_fenced sets
   the status the lifecycle's lc_fence_status returned). Another
   function that sets a reply's status makes the check fail until it is
   taught here; so does a call to a function a header declares but no
   source read defines (a file missing from the lists).

The documentation of a function in rmpool.h is the comment block above
its declaration (shared by the declarations right after it); in
librmpool(3), the paragraphs of its section that start with its name, or
with no function's name. Either may point on, followed further: "as
rmp_x", "those of rmp_x", "errors of rmp_x" (or of several, "rmp_x and
rmp_y"), and "those of a control call": the overview's paragraph that
starts "Control calls" (in the page, "*Control calls*"). Besides, the
overview's "Errors:" list in rmpool.h and the ERRORS section of the page
must name every errno any function can return.

EXCLUDED and UPCALLS are the only hand-made parts; each entry says why.
An entry that no longer matches the code fails the check too.
"""
import errno as errno_mod
import os
import re
import sys

# -E literals that cannot reach a caller: (the function that has the
# literal, errno) -> why.
EXCLUDED = {
    ("rmpc_rpc", "EAGAIN"):
        "ctl_ready() saw a free send slot just before (the code says "
        "'not reached')",
    ("rmp_msg_encode", "EMSGSIZE"):
        "the library encodes into RMP_MSG_MAX bytes; the largest message "
        "(24 + 128) fits (test_proto checks it)",
    ("rmp_msg_encode", "EINVAL"):
        "only for a status other than 0 in a request: rmpc_rpc sets 0",
    ("rmp_msg_payload_len", "EOPNOTSUPP"):
        "the library sends only the opcodes proto.h defines",
    ("rmp_conn_req_encode", "EMSGSIZE"):
        "handshake() encodes into RMP_CONN_REQ_LEN bytes",
    ("rmp_lrec_encode", "ENOSPC"):
        "every record fits RMP_LREC_PLAIN_MAX: the longest (48 members, "
        "255-byte hosts, every member it may mark stale) is written by "
        "test_lease_record",
    ("rmp_lrec_seal", "ENOSPC"):
        "cluster_record.c seals into RMP_LREC_SEALED_MAX bytes, room for "
        "the longest plaintext",
    ("rmp_lease_table_add", "EEXIST"):
        "new_ids() picked an id the table does not hold, just before",
}

# Calls through a function pointer: (file, member called) -> the function
# it always is.
UPCALLS = {
    # state.h: the reconnect upcall is client.c's reconnect().
    ("client/chan.c", "reconnect"): "reconnect",
    # lease.h: a group's keeper is cluster_lease.c's, the only one made
    # (rmpc_group_keep); a write done without a member returns what
    # marking it stale in the record returned.
    ("client/io_group.c", "missed"): "keeper_missed",
    # and a coded lease's write returns what its writer claim returned
    ("client/io_group.c", "claim"): "keeper_claim",
}

ERRNO_NAMES = {n for n in dir(errno_mod) if re.match(r"^E[A-Z0-9]+$", n)}
LIT = re.compile(r"-\s*(E[A-Z0-9]+)\b")
# A return statement, with the condition of an `if (...)` right before.
GUARDED_RETURN = re.compile(r"(?:\bif\s*\(([^;{}]*)\)\s*)?\breturn\b([^;]*);")
IDENT = re.compile(r"^[A-Za-z_]\w*$")
CAST = re.compile(r"^\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?"
                  r"(?:int|long|short|char|u?int\d+_t|size_t|ssize_t|"
                  r"struct\s+\w+\s*\*|void\s*\*)\s*\)\s*")


class Fail(Exception):
    """The derivation met code it cannot read: the check fails."""


# ------------------------------------------------------------ reading C


def strip_c(text):
    """text without comments, string and char literals emptied; the
    newlines stay, so line starts stay where they were."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(s, seps=","):
    """s split at the characters seps outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch in seps and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def close_of(s, i):
    """The index of the bracket that closes the one at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    raise Fail("unbalanced brackets in: " + s[i:i + 60])


class Func:
    def __init__(self, name, params, body, path):
        self.name, self.params, self.body, self.path = name, params, body, path

    def __repr__(self):
        return "%s (%s)" % (self.name, self.path)


FUNC = re.compile(r"^(?:[A-Za-z_][\w \t*]*?[\s*])?([A-Za-z_]\w*)\s*"
                  r"\(([^;{}]*?)\)\s*\n\{\n(.*?)^\}", re.M | re.S)


def param_names(params):
    names = []
    for p in split_top(params):
        if p in ("void", "...", ""):
            continue
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", p)  # a function pointer
        if not m:
            m = re.search(r"(\w+)\s*(?:\[[^\]]*\])?$", p)
        names.append(m.group(1) if m else "?")
    return names


def read_funcs(root, files):
    funcs = {}
    for rel in files:
        text = strip_c(open(os.path.join(root, rel), encoding="utf-8").read())
        for m in FUNC.finditer(text):
            f = Func(m.group(1), param_names(m.group(2)), m.group(3), rel)
            funcs.setdefault(f.name, []).append(f)
    return funcs


def meson_sources(root, meson, target):
    """The .c files of `target ...` (up to its first keyword argument),
    named there or in a variable set to files(...) or [...] before."""
    text = re.sub(r"#.*", "", open(os.path.join(root, meson),
                                   encoding="utf-8").read())
    m = re.search(re.escape(target) + r"(.*?)\w+\s*:", text, re.S)
    if not m:
        raise Fail("no %s in %s" % (target, meson))
    args = m.group(1)
    for var in re.findall(r"\b([a-z_]\w*)\b(?!\s*\()", args):
        d = re.search(r"^" + var + r"\s*=\s*(?:files\s*\(|\[)(.*?)[)\]]",
                      text, re.M | re.S)
        if d:
            args += d.group(1)
    d = os.path.dirname(meson)
    found = [d + "/" + f for f in re.findall(r"'([\w.]+\.c)'", args)]
    if not found:
        raise Fail("no sources of %s in %s" % (target, meson))
    return found


def declared(root):
    """Every function a header of this tree declares."""
    names = set()
    for d in ("client", "client/include", "common", "daemon"):
        for rel in files_of(root, d, ".h"):
            text = strip_c(open(os.path.join(root, rel), encoding="utf-8").read())
            names |= set(re.findall(r"\b(\w+)\s*\([^;{}()]*(?:\([^()]*\)[^;{}()]*)*"
                                    r"\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?;",
                                    text))
    return names


def files_of(root, d, ext):
    return sorted(d + "/" + f for f in os.listdir(os.path.join(root, d))
                  if f.endswith(ext))


# ----------------------------------------------------------- derivation


class Universe:
    """One program's functions, and what each can return.

    Values are sets of tokens: ("E", name) an errno; ("DYN", where) an
    errno of the system or a device, passed on in where; ("SRV", spec,
    excluded) the status of the server's reply to a request, spec being
    ("op", "RMP_OP_X") or, still to be told by the caller, ("param", i)
    (the opcode is parameter i) or ("msg", i) (parameter i is the
    message, its opcode set by the caller)."""

    def __init__(self, funcs, declared, statuses=None, where=""):
        self.funcs = funcs
        self.declared = declared  # functions of this tree's headers
        self.statuses = statuses  # opcode -> tokens (for the library)
        self.where = where        # prefix of DYN tokens
        self.summary, self.last = {}, {}
        self.busy = set()
        self.used_exclusions, self.used_upcalls = set(), set()
        self.unread = set()  # (function, expression) read as no errno
        self._sites = None

    def lookup(self, name, near=None):
        cands = self.funcs.get(name, [])
        same = [f for f in cands if near and f.path == near.path]
        if len(same) == 1:
            return same[0]
        if len(cands) == 1:
            return cands[0]
        if not cands:
            return None
        raise Fail("%s is defined more than once: %s" % (name, cands))

    def derive(self, names):
        """{name: tokens} for names, iterated until nothing changes (the
        calls may go round in a circle)."""
        while True:
            self.last, self.summary = self.summary, {}
            for n in names:
                f = self.lookup(n)
                if f is None:
                    raise Fail("%s is declared but not defined" % n)
                self.returns_of(f)
            if self.summary == self.last:
                return {n: self.summary[n] for n in names}

    def returns_of(self, f):
        if f.name in self.summary:
            return self.summary[f.name]
        if f.name in self.busy:
            return self.last.get(f.name, set())
        self.busy.add(f.name)
        out = set()
        for guard, expr in GUARDED_RETURN.findall(f.body):
            got = self.value(f, expr, f.body)
            if "||" not in guard:
                for name in re.findall(r"\b" + re.escape(expr.strip()) +
                                       r"\s*!=\s*-\s*(E[A-Z0-9]+)", guard):
                    got = without(got, name)
            out |= got
        self.busy.discard(f.name)
        self.summary[f.name] = out
        return out

    def value(self, f, e, scope, seen=frozenset()):
        """The tokens expression e in f can be (locals: from scope)."""
        e = e.strip()
        while True:
            m = CAST.match(e)
            if m:
                e = e[m.end():].strip()
            elif e.startswith("(") and close_of(e, 0) == len(e) - 1:
                e = e[1:-1].strip()
            else:
                break
        if (not e or re.match(r"^\d+[uUlL]*$", e) or e == "errno" or
                e in ("true", "false", "NULL")):
            return set()  # (errno is positive: negated where passed on)
        if len(split_top(e, "?")) > 1:
            return self.ternary(f, e, scope, seen)
        m = re.match(r"^-\s*(E[A-Z0-9]+)$", e)
        if m:
            return self.literal(f, m.group(1))
        if re.match(r"^-\s*\w", e):
            return {("DYN", self.where + f.name)}
        m = re.match(r"^([\w.>-]+?)\s*\((.*)\)$", e, re.S)
        if m and close_of(e, e.index("(")) == len(e) - 1:
            return self.call(f, m.group(1), split_top(m.group(2)), scope)
        if IDENT.match(e):
            if e.isupper():
                return set()  # a constant
            return self.variable(f, e, scope, seen)
        m = re.match(r"^\w+(?:(?:->|\.)\w+)*(?:->|\.)(\w+)$", e)
        if m:
            return self.field(f, e, m.group(1), seen)
        if sum(e.count(c) for c in "([{") != sum(e.count(c) for c in ")]}"):
            raise Fail("cannot read in %s: %s" % (f.name, " ".join(e.split())))
        found = set()
        for name in LIT.findall(e):
            found |= self.literal(f, name)
        if not found:
            self.unread.add((f.name, " ".join(e.split())))
        return found

    def ternary(self, f, e, scope, seen):
        q = split_top(e, "?")
        cond, rest = q[0], "?".join(q[1:])
        depth, nested, k = 0, 0, None
        for i, ch in enumerate(rest):
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "?" and depth == 0:
                nested += 1
            elif ch == ":" and depth == 0:
                if nested == 0:
                    k = i
                    break
                nested -= 1
        if k is None:
            raise Fail("cannot read the ?: in %s: %s" % (f.name, e))
        a, b = rest[:k].strip(), rest[k + 1:].strip()
        va = self.value(f, a, scope, seen)
        vb = self.value(f, b, scope, seen)
        m = re.match(r"^(\w+)\s*(==|!=)\s*-\s*(E[A-Z0-9]+)$", cond.strip())
        if m:
            var, op, name = m.groups()
            if op == "==" and b == var:
                vb = without(vb, name)
            if op == "!=" and a == var:
                va = without(va, name)
        return va | vb

    def literal(self, f, name):
        if name not in ERRNO_NAMES:
            raise Fail("%s gives -%s, which is no errno" % (f.name, name))
        if (f.name, name) in EXCLUDED:
            self.used_exclusions.add((f.name, name))
            return set()
        return {("E", name)}

    def call(self, f, callee, args, scope):
        m = re.match(r"^\w+(?:->|\.)(\w+)$", callee)
        if m:
            key = (f.path, m.group(1))
            if key not in UPCALLS:
                raise Fail("%s calls through %s: teach UPCALLS"
                           % (f.name, callee))
            self.used_upcalls.add(key)
            callee = UPCALLS[key]
        if not IDENT.match(callee) or callee.isupper():
            return set()  # a macro
        g = self.lookup(callee, f)
        if g is None:
            if callee in self.declared:
                raise Fail("%s calls %s, which no source read defines (a "
                           "file missing from meson_sources?)"
                           % (f.name, callee))
            # Outside: the C library, verbs, rdma_cm. Their errors come
            # back positive, or as -1 and errno; never passed on as is.
            self.unread.add((f.name, callee + "()"))
            return set()
        out = set()
        for t in self.returns_of(g):
            if t[0] != "SRV" or t[1][0] == "op":
                out.add(t)
            else:
                spec = self.opcode_at(f, t[1], args, scope)
                out |= self.server(f, spec, t[2])
        return out

    def server(self, f, spec, excluded):
        if spec[0] != "op" or self.statuses is None:
            return {("SRV", spec, excluded)}
        if spec[1] not in self.statuses:
            raise Fail("%s sends %s, which the daemon does not answer"
                       % (f.name, spec[1]))
        return {t for t in self.statuses[spec[1]]
                if not (t[0] == "E" and t[1] in excluded)}

    def opcode_at(self, f, spec, args, scope):
        """The callee's opcode spec as seen from f, calling with args."""
        kind, i = spec
        if i >= len(args):
            raise Fail("%s: too few arguments for %s" % (f.name, spec))
        arg = args[i].lstrip("&").strip()
        if kind == "msg":
            rhs = set(re.findall(r"\b" + re.escape(arg) + r"\s*(?:\.|->)\s*"
                                 r"hdr\.opcode\s*=(?!=)([^;]*);", scope))
            if not rhs and arg in f.params:
                return ("msg", f.params.index(arg))
            if len(rhs) != 1:
                raise Fail("%s sets the opcode of %s %d times"
                           % (f.name, arg, len(rhs)))
            arg = rhs.pop()
        arg = CAST.sub("", arg.strip()).strip()
        if re.match(r"^RMP_OP_\w+$", arg):
            return ("op", arg)
        if arg in f.params:
            return ("param", f.params.index(arg))
        raise Fail("%s: cannot tell the opcode %s" % (f.name, arg))

    def variable(self, f, v, scope, seen):
        if (f.name, v) in seen:
            return set()
        seen = seen | {(f.name, v)}
        if v in f.params:
            out = set()  # its arguments at every call site
            for caller, args in self.sites(f.name):
                i = f.params.index(v)
                if i < len(args):
                    out |= self.value(caller, args[i], caller.body, seen)
            return out
        rhs = re.findall(r"(?<![\w.>])" + re.escape(v) +
                         r"\s*=(?!=)\s*([^;]*);", scope)
        if not rhs:
            raise Fail("%s returns %s, never assigned" % (f.name, v))
        out = set()
        for r in rhs:
            out |= self.value(f, r, scope, seen)
        return out

    def sites(self, name):
        if self._sites is None:
            self._sites = {}
            for fs in self.funcs.values():
                for g in fs:
                    for m in re.finditer(r"\b(\w+)\s*\(", g.body):
                        j = close_of(g.body, m.end() - 1)
                        args = split_top(g.body[m.end():j])
                        self._sites.setdefault(m.group(1), []).append((g, args))
        return self._sites.get(name, [])

    def field(self, f, e, name, seen):
        if e.endswith("hdr.status"):
            if "m" not in f.params:
                raise Fail("%s returns a reply's status but has no "
                           "message parameter m" % f.name)
            return {("SRV", ("msg", f.params.index("m")), frozenset())}
        if ("." + name, "") in seen:
            return set()
        seen = seen | {("." + name, "")}
        out = set()  # every assignment to that field
        for fs in self.funcs.values():
            for g in fs:
                for r in re.findall(r"(?<=[\w\])])(?:->|\.)" +
                                    re.escape(name) + r"\s*=(?!=)\s*([^;]*);",
                                    g.body):
                    out |= self.value(g, r, g.body, seen)
        return out


def without(vals, name):
    """vals where errno name cannot be (also in server statuses)."""
    out = set()
    for t in vals:
        if t == ("E", name):
            continue
        if t[0] == "SRV":
            t = ("SRV", t[1], t[2] | {name})
        out.add(t)
    return out


# ----------------------------------------------------------- the server


def switch_cases(body, subject):
    """(the text before, {case label: its text}) of `switch (subject)`."""
    m = re.search(r"\bswitch\s*\(\s*" + re.escape(subject) + r"\s*\)\s*\{",
                  body)
    if not m:
        raise Fail("no switch (%s)" % subject)
    inner = body[m.end():close_of(body, m.end() - 1)]
    labels = re.findall(r"^\s*case\s+(\w+)\s*:", inner, flags=re.M)
    texts = re.split(r"^\s*case\s+\w+\s*:", inner, flags=re.M)[1:]
    return body[:m.start()], dict(zip(labels, texts))


def returns_in(u, f, text):
    out = set()
    for expr in re.findall(r"\breturn\b([^;]*);", text):
        out |= u.value(f, expr, text)
    return out


def server_statuses(root):
    """{opcode: tokens} the daemon can answer a well-formed request with
    (the library sends no other), and its Universe."""
    meson = "daemon/meson.build"
    u = Universe(read_funcs(root, meson_sources(root, meson,
                                                "static_library('rmpdaemon',") +
                            meson_sources(root, meson, "executable('rmpoold',") +
                            files_of(root, "daemon", ".h") +
                            files_of(root, "common", (".c", ".h"))),
                 declared(root), where="the server's ")
    writers = {g.name for fs in u.funcs.values() for g in fs
               if re.search(r"hdr\.status\s*=(?!=)", g.body)}
    known = {"rmp_request_handle", "rmp_request_auth", "admit_proven",
             "rmp_request_fenced"}
    if writers != known:
        raise Fail("reply statuses are set in %s; the check knows %s"
                   % (sorted(writers), sorted(known)))
    handle = u.lookup("rmp_request_handle")
    if not re.search(r"\bret\s*=\s*dispatch\(", handle.body):
        raise Fail("rmp_request_handle no longer answers with dispatch()")
    # Its other statuses are the decoder's: for malformed messages.
    dispatch = u.lookup("dispatch", handle)
    before, cases = switch_cases(dispatch.body, "req->hdr.opcode")
    every = returns_in(u, dispatch, before)
    statuses = {op: every | returns_in(u, dispatch, text)
                for op, text in cases.items()}
    # An exclusive ATTACH whose fence waited is answered later, with the
    # status of its fence (lifecycle_fence.c decides it).
    fenced = u.lookup("rmp_request_fenced", handle)
    if not re.search(r"hdr\.status\s*=\s*done->status\s*;", fenced.body):
        raise Fail("rmp_request_fenced no longer answers with the fence's "
                   "status")
    fence_status = u.lookup("lc_fence_status", handle)
    statuses["RMP_OP_ATTACH"] |= returns_in(u, fence_status,
                                            fence_status.body)
    # A connection's first message, AUTH, is answered by rmp_request_auth
    # (and admit_proven); dispatch's AUTH case answers a second one.
    statuses["RMP_OP_AUTH"] = set()
    for name in ("rmp_request_auth", "admit_proven"):
        g = u.lookup(name, handle)
        for expr in re.findall(r"hdr\.status\s*=(?!=)([^;]*);", g.body):
            statuses["RMP_OP_AUTH"] |= u.value(g, expr, g.body)
    return statuses, u


# ------------------------------------------------------------- the docs


def header_docs(root):
    """{function: its documentation} of rmpool.h, with the overview's
    paragraphs under their lower-cased lead ("errors", "control calls"),
    and the functions that return int."""
    text = open(os.path.join(root, "client/include/rmpool.h"),
                encoding="utf-8").read()
    docs, ints, block = {}, set(), None
    for m in re.finditer(r"/\*(.*?)\*/|^([a-z][\w \t*]*?)\b(rmp_\w+)\(|"
                         r"^(?:[^\s/#]|#define)", text, re.M | re.S):
        if m.group(1) is not None:
            block = re.sub(r"^\s*\* ?", "", m.group(1), flags=re.M)
            for para in re.split(r"\n\s*\n", block):
                lead = re.match(r"\s*([A-Z][a-z ]+):", para)
                if lead:  # the overview comes first: it wins
                    docs.setdefault(lead.group(1).lower(), para)
        elif m.group(3):
            docs[m.group(3)] = block or ""
            if re.match(r"^int\b", m.group(2)):
                ints.add(m.group(3))
        else:
            block = None  # a struct, a #define: the block was theirs
    return docs, ints


def man_docs(root, names):
    """{function: its text} of librmpool(3), and {"control calls": ...,
    "errors": the ERRORS section}."""
    text = open(os.path.join(root, "docs/man/librmpool.3.scd"),
                encoding="utf-8").read()
    docs = {n: "" for n in names}
    for sec in re.split(r"^# ", text, flags=re.M)[1:]:
        title, sec = sec.split("\n", 1)
        blocks = re.split(r"^```\s*$", sec, flags=re.M)
        members = set(re.findall(r"\b(rmp_\w+)\(", " ".join(blocks[1::2])))
        if title == "ERRORS":
            docs["errors"] = " ".join(blocks[0::2])
        for para in re.split(r"\n\s*\n", "\n\n".join(blocks[0::2])):
            p = para.strip()
            named = re.match(r"^\*([A-Z][a-z ]+)\*", p)
            if named:
                docs.setdefault(named.group(1).lower(), p)
            lead = re.match(r"^(?:\*rmp_[\w\\*]+\*\(\)(?:,\s*|\s+and\s+|/)?)+",
                            p)
            who = members
            if lead:
                who = set()
                for w in re.findall(r"\*(rmp_[\w\\*]+?)\*\(\)", lead.group(0)):
                    w = w.replace("\\*", "")  # *rmp_post_\**(): them all
                    who |= ({n for n in names if n.startswith(w)}
                            if w.endswith("_") else {w})
            for n in who & set(names):
                docs[n] += "\n" + p
    return docs


REF = re.compile(r"\b(?:as|those\s+of|errors\s+of)\s+((?:\**rmp_\w+\**(?:\(\))?"
                 r"(?:,\s*|\s+and\s+|\s+or\s+)?)+|(?:a|every)\s+control\s+call)")


def documented(docs, name, seen=None):
    """The errnos the documentation of name names, following on."""
    seen = set() if seen is None else seen
    if name in seen or name not in docs:
        return set()
    seen.add(name)
    text = docs[name].replace("*", "").replace("\\", "")
    got = set(re.findall(r"\b(E[A-Z0-9]{2,})\b", text)) & ERRNO_NAMES
    for ref in REF.findall(text):
        targets = (["control calls"] if "control" in ref else
                   re.findall(r"rmp_\w+", ref))
        for t in targets:
            got |= documented(docs, t, seen)
    return got


# ----------------------------------------------------------------- main


class Tap:
    def __init__(self):
        self.n = self.failed = 0

    def check(self, ok, what):
        self.n += 1
        self.failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", self.n, what))


def names(tokens, kind="E"):
    return sorted({t[1] for t in tokens if t[0] == kind})


def missing_text(missing):
    return "; missing: " + " ".join("-" + e for e in missing) if missing else ""


def main(argv):
    dump = "--dump" in argv
    args = [a for a in argv if a != "--dump"]
    root = args[0] if args else os.environ.get(
        "RMP_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
    tap = Tap()
    try:
        statuses, su = server_statuses(root)
        u = Universe(read_funcs(root, meson_sources(
            root, "client/meson.build", "shared_library('rmpool',") +
            files_of(root, "client", ".h") +
            files_of(root, "common", (".c", ".h"))), declared(root), statuses)
        hdocs, public = header_docs(root)
        got = u.derive(sorted(public))
    except Fail as e:
        tap.check(False, "derivation: %s" % e)
        print("1..%d" % tap.n)
        return 1
    mdocs = man_docs(root, sorted(n for n in hdocs if n.startswith("rmp_")))
    if dump:
        for op in sorted(statuses):
            print("# %s: %s; %s" % (op, " ".join(names(statuses[op])),
                                    ", ".join(names(statuses[op], "DYN"))))
        for f, e in sorted(su.unread | u.unread):
            print("# read as no errno, in %s: %s" % (f, e))
    every = set()
    for name in sorted(public):
        errs = set(names(got[name]))
        every |= errs
        for t in got[name]:
            if t[0] == "SRV":
                tap.check(False, "%s: sends a request not known (%s)"
                          % (name, t[1]))
        dyn = names(got[name], "DYN")
        print("# %s: %s%s" % (name, " ".join("-" + e for e in sorted(errs)),
                              "; and a system's or device's errno from "
                              + ", ".join(dyn) if dyn else ""))
        for where, docs in (("rmpool.h", hdocs), ("librmpool(3)", mdocs)):
            missing = sorted(errs - documented(docs, name))
            tap.check(not missing, "%s: %s documents its %d errnos%s"
                      % (name, where, len(errs), missing_text(missing)))
    for where, docs, part in (("rmpool.h", hdocs, "Errors: list"),
                              ("librmpool(3)", mdocs, "ERRORS section")):
        missing = sorted(every - documented(docs, "errors"))
        tap.check(not missing, "%s: its %s names all %d errnos%s"
                  % (where, part, len(every), missing_text(missing)))
    stale = sorted(set(EXCLUDED) - u.used_exclusions - su.used_exclusions)
    stale += sorted(set(UPCALLS) - u.used_upcalls)
    tap.check(not stale, "every entry of EXCLUDED and UPCALLS matches the "
              "code%s" % ("; stale: %s" % stale if stale else ""))
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pyserve.py DIR PID -- run a test's small Python scripts in one
interpreter (lib.sh: py_start, pyrun).

Starting python3 costs about a second in the TCG guest, and the admin and
metrics tests ran it hundreds of times (jget, prom.py): most of their
run time. This process starts once per test and runs each request as
`python3 SCRIPT ARGS` or `python3 -c CODE ARGS` would: same argv, working
directory, stdin, stdout, stderr and exit status; modules imported once
stay imported.

DIR holds three FIFOs made by py_start and two files:
  req  one request per open: "N\\0CWD\\0ARG1\\0...ARGN\\0" then stdin's bytes
  out, err  the request's stdout and stderr (files, rewritten per request)
  rc   after out and err are complete: the exit status and a newline
The server exits when process PID (the test's shell) is gone.
"""
import io
import os
import runpy
import sys
import threading
import time
import traceback


def watch(pid):
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass
        time.sleep(1)


def parse(msg):
    head, rest = msg.split(b"\0", 1)
    n = int(head)
    parts = rest.split(b"\0", n + 1)
    if len(parts) != n + 2:
        raise ValueError(f"request has {len(parts) - 2} of {n} arguments")
    cwd = os.fsdecode(parts[0])
    argv = [os.fsdecode(a) for a in parts[1:n + 1]]
    return cwd, argv, parts[n + 1]


def run(argv):
    """Run argv as python3 would; return the exit status."""
    try:
        if argv[0] == "-c":
            sys.argv = ["-c"] + argv[2:]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            sys.argv = argv
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def serve(d):
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    while True:
        with open(os.path.join(d, "req"), "rb") as f:
            msg = f.read()
        with open(os.path.join(d, "out"), "w") as out, \
                open(os.path.join(d, "err"), "w") as err:
            sys.stdout, sys.stderr = out, err
            try:
                cwd, argv, data = parse(msg)
                os.chdir(cwd)
                sys.stdin = io.TextIOWrapper(io.BytesIO(data))
                rc = run(argv)
            except Exception:
                traceback.print_exc()
                rc = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        with open(os.path.join(d, "rc"), "w") as f:
            f.write(f"{rc & 0xff}\n")


if __name__ == "__main__":
    threading.Thread(target=watch, args=(int(sys.argv[2]),),
                     daemon=True).start()
    serve(sys.argv[1])

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""prom.py -- small HTTP helpers for test-metrics.sh (python3 stdlib only).

  prom.py get URL [SECS]       body to stdout; exit 1 unless 200 (SECS:
                               how long to wait for it, default 30)
  prom.py head URL             "STATUS CONTENT-TYPE"
  prom.py status METHOD URL    the status code of METHOD URL
  prom.py time URL N           mean and max ms of N scrapes, a connection each
  prom.py idle HOST PORT N S   hold N idle TCP connections open for S seconds
  prom.py trickle HOST PORT N S  N connections that each send a request
                               line, then a header byte every 5 s, for S s
  prom.py ready URL SECS       wait until URL answers 200; exit 1 if not
  prom.py query BASE EXPR      the first value of instant query EXPR
                               (exit 3 when the result is empty)
  prom.py freeport             a free TCP port on 127.0.0.1
"""
import json
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def fetch(url, method="GET", timeout=30):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def main(argv):
    cmd = argv[1]
    if cmd == "get":
        status, _, body = fetch(argv[2], timeout=float(argv[3])
                                if len(argv) > 3 else 30)
        sys.stdout.write(body.decode())
        if status != 200:
            print(f"HTTP {status} from {argv[2]}", file=sys.stderr)
            return 1
        return 0
    if cmd == "head":
        status, ctype, _ = fetch(argv[2])
        print(status, ctype)
        return 0
    if cmd == "status":
        print(fetch(argv[3], method=argv[2])[0])
        return 0
    if cmd == "time":
        n = int(argv[3])
        times = []
        for _ in range(n):
            t = time.monotonic()
            status, _, _ = fetch(argv[2])
            times.append(time.monotonic() - t)
            if status != 200:
                print(f"HTTP {status}", file=sys.stderr)
                return 1
        print(f"{1000 * sum(times) / n:.2f} {1000 * max(times):.2f}")
        return 0
    if cmd == "idle":
        socks = [socket.create_connection((argv[2], int(argv[3])))
                 for _ in range(int(argv[4]))]
        print("open", len(socks), flush=True)
        time.sleep(float(argv[5]))
        for s in socks:
            s.close()
        return 0
    if cmd == "trickle":
        socks = [socket.create_connection((argv[2], int(argv[3])))
                 for _ in range(int(argv[4]))]
        for s in socks:
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
        print("open", len(socks), flush=True)
        end = time.monotonic() + float(argv[5])
        while time.monotonic() < end:
            time.sleep(5)
            for s in socks:
                try:
                    s.sendall(b"X")
                except OSError:
                    pass  # shut down by the server: the point
        for s in socks:
            s.close()
        return 0
    if cmd == "ready":
        deadline = time.monotonic() + float(argv[3])
        while time.monotonic() < deadline:
            try:
                if fetch(argv[2], timeout=5)[0] == 200:
                    return 0
            except OSError:
                pass
            time.sleep(0.5)
        return 1
    if cmd == "query":
        q = urllib.parse.urlencode({"query": argv[3]})
        status, _, body = fetch(f"{argv[2]}/api/v1/query?{q}")
        if status != 200:
            print(f"HTTP {status}: {body.decode()}", file=sys.stderr)
            return 1
        res = json.loads(body)["data"]["result"]
        if not res:
            return 3
        r = res[0]
        print(r["value"][1] if "value" in r else r[1])
        return 0
    if cmd == "freeport":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            print(s.getsockname()[1])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""notify-listen.py -- a stand-in for systemd's notify socket.

Usage: notify-listen.py SOCKET LOG [PROBE...]

Binds a datagram socket at SOCKET and appends every message to LOG as
one line "<monotonic ms> <message>" (the message's newlines become '|').
On the first message with READY=1 it runs PROBE (if given) at once and
logs "probe rc=N": proof that a client could connect when READY=1 came.
Runs until killed.
"""
import os
import socket
import subprocess
import sys
import time


def main():
    path, log = sys.argv[1], sys.argv[2]
    probe = sys.argv[3:]
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    probed = False
    with open(log, "a", buffering=1) as out:
        out.write("%d listening\n" % (time.monotonic() * 1000))
        while True:
            msg = s.recv(4096).decode(errors="replace")
            now = time.monotonic() * 1000
            out.write("%d %s\n" % (now, msg.strip().replace("\n", "|")))
            if probe and not probed and "READY=1" in msg.split("\n"):
                probed = True
                rc = subprocess.call(probe, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT)
                out.write("%d probe rc=%d\n" % (time.monotonic() * 1000, rc))


if __name__ == "__main__":
    main()

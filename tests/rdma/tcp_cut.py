#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tcp_cut.py LISTEN_PORT TARGET_HOST TARGET_PORT -- a TCP proxy on
127.0.0.1:LISTEN_PORT to TARGET that the test can cut: SIGUSR1 closes
every connection and the listening socket (new connects are refused: a
client cut off from etcd), SIGUSR2 listens again. Prints "listening"
once it first listens."""
import select
import signal
import socket
import sys

port, host, tport = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
state = {"want": True}
lsock = None
pairs = {}  # socket -> its peer


def on_cut(*_):
    state["want"] = False


def on_restore(*_):
    state["want"] = True


def close_all():
    for s in list(pairs):
        s.close()
    pairs.clear()


signal.signal(signal.SIGUSR1, on_cut)
signal.signal(signal.SIGUSR2, on_restore)
said = False
while True:
    if state["want"] and lsock is None:
        lsock = socket.socket()
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind(("127.0.0.1", port))
        lsock.listen(64)
        if not said:
            print("listening", flush=True)
            said = True
    if not state["want"] and lsock is not None:
        lsock.close()
        lsock = None
        close_all()
    socks = list(pairs) + ([lsock] if lsock else [])
    try:
        ready, _, _ = select.select(socks, [], [], 0.05)
    except (InterruptedError, OSError, ValueError):
        continue
    for s in ready:
        if s is lsock:
            try:
                c, _ = lsock.accept()
                t = socket.create_connection((host, tport), timeout=2)
            except OSError:
                continue
            pairs[c], pairs[t] = t, c
            continue
        if s not in pairs:
            continue
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        peer = pairs.get(s)
        if not data or peer is None:
            for x in (s, peer):
                if x is not None:
                    pairs.pop(x, None)
                    x.close()
            continue
        try:
            peer.sendall(data)
        except OSError:
            pairs.pop(s, None)
            pairs.pop(peer, None)
            s.close()
            peer.close()

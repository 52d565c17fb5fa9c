#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""basic.py SERVER -- lease 1 MiB, write, read, atomics, share the token.

Tenant and key from RMPOOL_TENANT and RMPOOL_KEY_FILE (as the rmpool CLI).
Prints the token of a second lease that outlives this script for a
minute: read it with `rmpool read TOKEN`.
"""
import sys

import rmpool

server = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
host, _, port = server.partition(":")

with rmpool.Client(host, int(port or rmpool.DEFAULT_PORT)) as c:
    print("pool:", c.stat()["free_bytes"], "bytes free")
    with c.alloc(1 << 20, ttl=60) as lease:       # freed at the end
        lease.write(b"hello, remote memory", 0)
        print(lease.read(0, 20))
        print("counter was", lease.faa(4096, 1))
        print("info:", lease.info)
    keep = c.alloc(4096, ttl=60, free_on_exit=False)
    keep.write(b"from python\n")
    print(keep.token)                             # rmpool read TOKEN
    sys.stdout.flush()
    keep.close()                                  # the lease lives on
    try:
        c.attach("rmp://nowhere")
    except rmpool.InvalidArgument as e:           # an OSError: errno, text
        print("refused:", e.errno, e.strerror)

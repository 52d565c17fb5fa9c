#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""async_reads.py SERVER -- 64 reads in flight from one asyncio task group.

Lease.aread/awrite post to the NIC (one doorbell per loop tick) and the
event loop wakes on the client's completion fd: no thread per call.
"""
import asyncio
import sys

import rmpool


async def main(host, port):
    with rmpool.Client(host, port) as c, c.alloc(64 * 4096) as lease:
        await lease.awrite(bytes(range(256)) * 1024)
        pages = await asyncio.gather(
            *(lease.aread(i * 4096, 64) for i in range(64)))
        print(len(pages), "pages, first bytes", [p[0] for p in pages[:4]])


server = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
h, _, p = server.partition(":")
asyncio.run(main(h, int(p or rmpool.DEFAULT_PORT)))

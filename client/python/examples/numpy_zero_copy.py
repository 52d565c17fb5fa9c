#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""numpy_zero_copy.py SERVER -- RDMA straight into and out of numpy arrays.

A registered array is read into and written from by the NIC itself: no
copy in Python nor in the library. post_* + poll batch many operations.
"""
import sys

import numpy as np

import rmpool

server = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
host, _, port = server.partition(":")
N = 1 << 18  # float32s: 1 MiB

with rmpool.Client(host, int(port or rmpool.DEFAULT_PORT)) as c, \
        c.alloc(4 * N * 4) as lease:
    src = np.random.rand(N).astype(np.float32)
    dst = np.empty_like(src)
    with c.register(src) as rs, c.register(dst) as rd:
        lease.write(src)                      # zero copy: src is registered
        lease.read_into(dst)                  # into dst itself
        assert np.array_equal(src, dst)
        # Four 1 MiB writes with one doorbell, then wait for all four.
        for i in range(4):
            lease.post_write(i * src.nbytes, rs, user_data=i)
        done = []
        while len(done) < 4:
            done += c.poll(timeout=5)
        assert all(status == 0 for _, status in done)
    print("ok:", dst[:4])

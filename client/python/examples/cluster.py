#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""cluster.py ETCD_URL -- the nodes registered in etcd, and a mirrored
lease over two of them.

Tenant and key from RMPOOL_TENANT and RMPOOL_KEY_FILE (as the rmpool CLI).
Prints the cluster token of a lease that outlives this script for a
minute: read it with `rmpool -C ETCD_URL read TOKEN`.
"""
import sys

import rmpool

url = sys.argv[1] if len(sys.argv) > 1 else "etcd://127.0.0.1:2379"

with rmpool.Cluster(url) as cl:
    for n in cl.nodes():
        print(f"{n.node} {n.addr}:{n.port} {n.free_bytes} bytes free",
              n.labels)
    # Two replicas on distinct nodes: a write goes to both, a read to
    # one (the other if it fails). spread="rack" would also keep them on
    # distinct values of the label rack.
    with cl.alloc(1 << 20, ttl=60, replicas=2) as lease:   # freed at the end
        lease.write(b"mirrored", 0)
        print(lease.read(0, 8), lease.info.replicas_live, "replicas live")
        print("members:", *lease.replica_tokens)
    # Striped: 4 leases of 64 KiB units, read and written as one.
    with cl.alloc(256 << 10, stripes=4, stripe_unit=64 << 10) as lease:
        lease.write(bytes(range(256)) * 1024)
        print("striped over", len(lease.replica_tokens), "leases")
    keep = cl.alloc(4096, ttl=60, replicas=2, free_on_exit=False)
    keep.write(b"from python\n")
    print(keep.token)                          # rmpool -C URL read TOKEN
    sys.stdout.flush()
    keep.close()                               # the lease lives on

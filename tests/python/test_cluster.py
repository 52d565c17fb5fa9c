# SPDX-License-Identifier: MIT
"""rmpool.Cluster against an etcd and three rmpoold registered in it,
those of tests/rdma/test-cluster-place.sh (lib-cluster.sh): n1 and n2 in
rack r1, n3 in rack r2, equal pools. Tenant "test" from RMPOOL_TENANT
and RMPOOL_KEY_FILE. Every lease made is freed: the script's own checks
follow."""
import asyncio
import gc
import os
import re
import signal
import subprocess
import sys
import threading
import time
import weakref

import pytest

import rmpool

URL = os.environ["RMP_PY_CLUSTER"]
CLI = os.environ["RMP_PY_CLI"]
# "n1:PORT n2:PORT n3:PORT", each pool's bytes
NODES = {n: int(port) for n, port in
         (x.split(":") for x in os.environ["RMP_PY_NODES"].split())}
POOL = int(os.environ["RMP_PY_POOL"])
RACK = {"n1": "r1", "n2": "r1", "n3": "r2"}
MIB = 1 << 20


def server_of(token):
    """The host and port a token names."""
    host, port = re.match(r"rmp://(.*):(\d+)/", token).groups()
    return host, int(port)


def node_of(token):
    """The node whose server a token names (by its port)."""
    port = server_of(token)[1]
    return next(n for n, p in NODES.items() if p == port)


def cli(*args, data=None):
    """rmpool -C URL ARGS..., its stdout (bytes); fails on an error."""
    r = subprocess.run([CLI, "-C", URL, *args], input=data,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


@pytest.fixture(scope="module")
def cl():
    with rmpool.Cluster(URL, etcd_timeout=5) as c:
        yield c


def test_nodes(cl):
    nodes = cl.nodes()
    assert [n.node for n in nodes] == ["n1", "n2", "n3"]
    for n in nodes:
        assert isinstance(n, rmpool.NodeInfo)
        assert n.port == NODES[n.node]
        assert n.labels == {"rack": RACK[n.node]}
        assert n.pool_bytes == POOL and not n.draining
        assert 0 < n.largest_free <= n.free_bytes <= n.pool_bytes
        assert n.device and n.version == rmpool.version()
    with pytest.raises(AttributeError):
        nodes[0].port = 1  # read-only


def test_alloc_placement(cl):
    size = 256 * 1024
    data = os.urandom(size)
    with cl.alloc(size, ttl=60, prefer="rack=r2") as lease:
        assert lease.cluster is cl and lease.client is None
        assert node_of(lease.token) == "n3"
        assert lease.replica_tokens == [lease.token]
        i = lease.info
        assert (i.length, i.replicas, i.stripes) == (size, 1, 1)
        assert lease.write(data) == size
        assert lease.read() == data
        buf = bytearray(100)
        assert lease.read_into(buf, 4000) == 100 and buf == data[4000:4100]
        with pytest.raises(rmpool.NotSupported):
            lease.post_read(0, None)
        with pytest.raises(TypeError, match="asyncio needs"):
            asyncio.run(lease.aread(0, 10))
    for excl in (["n1", "n3"], "n1,n3", "n3 n1"):
        with cl.alloc(4096, exclude=excl) as lease:
            assert node_of(lease.token) == "n2", excl
    with pytest.raises(rmpool.PoolFull):
        cl.alloc(4096, exclude=iter(NODES))  # every node


def test_mirrored_with_cli(cl):
    data = bytearray(os.urandom(64 * 1024))
    with cl.alloc(MIB, ttl=60, replicas=2, spread="rack") as lease:
        assert lease.token.startswith("rmpc://")
        i = lease.info
        assert (i.replicas, i.replicas_live, i.stripes) == (2, 2, 1)
        racks = sorted(RACK[node_of(t)] for t in lease.replica_tokens)
        assert racks == ["r1", "r2"]
        members = lease.members
        assert [(m["stripe"], m["replica"], m["state"]) for m in members] \
            == [(0, 0, "live"), (0, 1, "live")]
        assert [(m["host"], m["port"]) for m in members] == \
            [server_of(t) for t in lease.replica_tokens]
        assert all(m["rails_up"] == m["rails"] >= 1 for m in members)
        lease.write(data, 4096)
        # Python's write read by the C CLI through the cluster token ...
        assert cli("read", lease.token, "--offset", "4096", "--length",
                   str(len(data))) == data
        # ... and the CLI's write read back here, and by a second
        # cluster's handle of the same token.
        other = os.urandom(8192)
        cli("write", lease.token, "--offset", "8192", data=other)
        assert lease.read(8192, 8192) == other
        data[4096:12288] = other
        with rmpool.Cluster(URL) as c2, c2.attach(lease.token) as a:
            assert a.info.replicas == 2 and a.info.length == MIB
            assert a.read(4096, len(data)) == data
            assert not a.free_on_exit
        with pytest.raises(rmpool.NotSupported):
            lease.cas(0, 0, 1)  # no atomics on a mirrored lease


def test_striped(cl):
    size = 5 * 64 * 1024 + 12345  # every stripe, one of them twice
    data = os.urandom(size)
    with cl.alloc(size, ttl=60, stripes=3, stripe_unit=64 * 1024) as lease:
        i = lease.info
        assert (i.length, i.stripes, i.replicas) == (size, 3, 1)
        assert len(lease.replica_tokens) == 3
        lease.write(data)
        assert lease.read() == data
        assert cli("read", lease.token) == data
        token = lease.token
    # freed on leaving the block: its record is gone
    with pytest.raises(rmpool.LeaseNotFound):
        cl.attach(token)


def test_erasure_coded(cl):
    size = 3 * 8192 * 2 + 1000  # three rows of 2 x 8 KiB and a tail
    data = os.urandom(size)
    with cl.alloc(size, ttl=60, ec=(2, 1), ec_chunk=8192) as lease:
        assert lease.token.startswith("rmpc://")
        i = lease.info
        assert (i.ec_data, i.ec_parity, i.ec_chunk, i.ec_live) == \
            (2, 1, 8192, 3)
        assert (i.length, i.replicas_live) == (size, 1)
        assert len({(m["host"], m["port"]) for m in lease.members}) == 3
        lease.write(data)
        lease.write(b"x" * 100, 8000)  # a part of a row, across chunks
        data = data[:8000] + b"x" * 100 + data[8100:]
        assert lease.read() == data
        assert lease.info.ec_decoded == 0  # every member live: none
        assert cli("read", lease.token) == data
        # one writing handle at a time: a second reads, and may not write
        with cl.attach(lease.token) as other:
            assert other.read(0, 100) == data[:100]
            with pytest.raises(rmpool.OtherWriter, match="another writer"):
                other.write(b"y", 0)
        lease.write(b"z", 1)  # the first writes on
        data = data[:1] + b"z" + data[2:]
        assert lease.read() == data
        with pytest.raises(rmpool.NotSupported):
            lease.faa(0, 1)  # no atomics on an erasure-coded lease
    with pytest.raises(ValueError, match="ec_chunk must be a power of two"):
        cl.alloc(4096, ec=(2, 1), ec_chunk=5000)
    with pytest.raises(ValueError):
        cl.alloc(4096, ec=(13, 1))  # k is 2..12
    with pytest.raises(TypeError):
        cl.alloc(4096, ec=2)


def test_errors(cl):
    with pytest.raises(rmpool.PoolFull) as ei:
        cl.alloc(POOL + MIB)  # more than any pool
    assert str(POOL + MIB) in ei.value.strerror
    assert cl.last_error and cl.last_error in ei.value.strerror
    with pytest.raises(rmpool.PoolFull):
        cl.alloc(4096, replicas=3, spread="rack")  # two racks only
    with pytest.raises(rmpool.InvalidArgument):
        cl.alloc(4096, prefer="no-equals-sign")
    with pytest.raises(rmpool.InvalidArgument):
        cl.attach("not a token")


@pytest.mark.skipif(bool(os.environ.get("RMP_PY_ASAN")),
                    reason="one interpreter more: slow under ASan (the "
                    "plain pass runs it)")
def test_example(cl):
    ex = os.path.join(os.path.dirname(__file__), "..", "..", "client",
                      "python", "examples", "cluster.py")
    r = subprocess.run([sys.executable, ex, URL], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l.split()[0] for l in lines[:3]] == ["n1", "n2", "n3"]
    tok = lines[-1]
    assert tok.startswith("rmpc://")
    assert cli("read", tok, "--length", "12") == b"from python\n"
    cli("free", tok)


def test_lease_keeps_cluster_then_close():
    c = rmpool.Cluster(URL)
    ref = weakref.ref(c)
    lease = c.alloc(8192, ttl=120)
    token = lease.token
    del c
    gc.collect()
    assert ref() is not None  # kept alive by its lease
    assert ref() is lease.cluster
    lease.write(b"kept")
    assert lease.read(0, 4) == b"kept"
    other = ref().alloc(4096, ttl=120, free_on_exit=False)
    other_token = other.token
    ref().close()  # closes the handles of its leases
    for l in (lease, other):
        assert l.closed
        with pytest.raises(ValueError, match="cluster is closed"):
            l.read(0, 4)
        with pytest.raises(ValueError, match="cluster is closed"):
            l.token
        l.close()  # harmless
        l.__exit__(None, None, None)  # closed: nothing to free
    # the lease stayed on its server: attach it from another cluster
    with rmpool.Cluster(URL) as c2, c2.attach(token, free_on_exit=True) as a:
        assert a.read(0, 4) == b"kept"
    cli("free", other_token)  # every lease of the module is freed
    del lease, other, l
    gc.collect()
    assert ref() is None


def test_unbound_lease_out_of_gc_sight(cl):
    """While Cluster.alloc waits for the cluster's lock (another thread's
    attach holds it, waiting for a stopped etcd), the Lease it made and
    has not bound yet is not among the garbage collector's objects: a
    Lease of neither a client nor a cluster, found there, crashed its
    repr()."""
    etcd = int(os.environ["RMP_PY_ETCD_PID"])
    with cl.alloc(4096, ttl=60, replicas=2) as mirrored, \
            rmpool.Cluster(URL, etcd_timeout=3) as c2:
        token = mirrored.token  # rmpc://: attach reads etcd
        attached, made = [], []

        def attach():
            try:
                attached.append(c2.attach(token))
            except rmpool.Error:
                pass  # etcd did not answer in time

        def alloc():
            made.append(c2.alloc(4096, ttl=60))
        os.kill(etcd, signal.SIGSTOP)
        try:
            holder = threading.Thread(target=attach)
            holder.start()
            time.sleep(0.3)
            waiter = threading.Thread(target=alloc)
            waiter.start()
            time.sleep(0.3)
            waiting = holder.is_alive() and waiter.is_alive()
            unbound = [o for o in gc.get_objects()
                       if isinstance(o, rmpool.Lease) and
                       o.client is None and o.cluster is None]
        finally:
            os.kill(etcd, signal.SIGCONT)
        holder.join(30)
        waiter.join(30)
        assert waiting, "the attach did not hold the cluster's lock"
        assert not unbound, "an unbound Lease among the GC's objects"
        for l in attached:
            l.close()  # mirrored's: freed by the with
        for l in made:
            l.free()


def test_repair(cl):
    """A member freed behind the lease's back (by its own token) is lost
    at the next write; repair() gives the lease a new one."""
    data = bytearray(os.urandom(256 * 1024))
    lease = cl.alloc(len(data), ttl=60, replicas=2, spread="rack")
    lease.write(data)
    victim = next(t for t in lease.replica_tokens if node_of(t) != "n3")
    with rmpool.Client(*server_of(victim)) as c:
        c.free_token(victim)
    # The write goes on with the survivor and finds the member lost.
    data[4096:8192] = os.urandom(4096)
    lease.write(data[4096:8192], 4096)
    assert lease.info.replicas_live == 1
    assert lease.read() == data
    lease.repair()
    assert lease.info.replicas_live == 2
    members = lease.replica_tokens
    assert victim not in members and len(members) == 2
    assert sorted(RACK[node_of(t)] for t in members) == ["r1", "r2"]
    assert lease.read() == data
    assert cli("read", lease.token) == data
    lease.repair()  # nothing lost: nothing to do
    assert lease.replica_tokens == members
    lease.free()

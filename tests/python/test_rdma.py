# SPDX-License-Identifier: MIT
"""The rmpool Python module against a real rmpoold (test-python.sh starts
it: tenant "test" from RMPOOL_TENANT/RMPOOL_KEY_FILE, tenant "b" with a
1 MiB quota, max_lease 8M, pool 16M, ttl_min 1 s)."""
import asyncio
import errno
import gc
import mmap
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import weakref

import pytest

import rmpool

ADDR = os.environ["RMP_PY_ADDR"]
PORT = int(os.environ["RMP_PY_PORT"])
CLI = os.environ["RMP_PY_CLI"]
B_KEY = os.environ["RMP_PY_B_KEY"]
TMP = os.environ["RMP_PY_TMP"]
MIB = 1 << 20


@pytest.fixture(scope="module")
def client():
    with rmpool.Client(ADDR, PORT, name="pytest") as c:
        yield c


@pytest.fixture
def lease(client):
    with client.alloc(64 * 1024) as l:
        yield l


def ctl(*args):
    """rmpoolctl against the test's daemon."""
    r = subprocess.run([os.environ["RMP_PY_CTL"], "-s",
                        os.path.join(TMP, "admin.sock"), *args],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def run_async(coro, timeout=20):
    """asyncio.run with a deadline: lost completions fail, not hang."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def pattern(n, seed=1):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


def cli(*args, data=None):
    """The rmpool CLI against the test's daemon (tenant from the env)."""
    r = subprocess.run([CLI, "-s", f"{ADDR}:{PORT}", *args], input=data,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


# --- Client -----------------------------------------------------------

def test_client_basics(client):
    assert not client.closed
    assert client.host == ADDR and client.port == PORT
    assert isinstance(client.fileno(), int) and client.fileno() >= 0
    st = client.stat()
    assert st["pool_bytes"] == 16 * MIB
    assert 0 < st["free_bytes"] <= st["pool_bytes"]
    assert st["keys_mode"] in ("window", "region", "pool")
    before = st["client_leases"]
    with client.alloc(4096):
        assert client.stat()["client_leases"] == before + 1
    assert client.stat()["client_leases"] == before


def test_client_close_and_context():
    c = rmpool.Client(ADDR, PORT)
    l = c.alloc(4096)
    with c:
        pass
    assert c.closed
    with pytest.raises(ValueError):
        c.alloc(4096)
    # Handles of a closed client: NotConnected from the library.
    with pytest.raises(rmpool.NotConnected) as ei:
        l.read(0, 8)
    assert ei.value.errno == errno.ENOTCONN
    l.close()
    c.close()  # twice is harmless


# --- Lease data path --------------------------------------------------

def test_write_read(lease):
    data = pattern(4096)
    assert lease.write(data, 100) == 4096
    assert lease.read(100, 4096) == data
    assert lease.read(100, 10) == data[:10]
    whole = lease.read()
    assert len(whole) == lease.length == 64 * 1024
    assert whole[100:4196] == data
    assert lease.read(lease.length - 3) == whole[-3:]
    assert lease.read(5, 0) == b""
    assert lease.read(length=3, offset=101) == data[1:4]
    assert lease.write(offset=200, data=b"kw") == 2
    with pytest.raises(TypeError):
        lease.read(0, 1, 2)
    with pytest.raises(TypeError):
        lease.read(0, offset=1)
    with pytest.raises(TypeError):
        lease.read(size=1)
    with pytest.raises(TypeError):
        lease.read_into()
    with pytest.raises(TypeError):
        lease.read("0")
    lease.flush()


def test_write_any_buffer(lease):
    lease.write(memoryview(b"xxabcdxx")[2:6], 0)
    assert lease.read(0, 4) == b"abcd"
    lease.write(bytearray(b"EFGH"), 4)
    assert lease.read(0, 8) == b"abcdEFGH"


def test_read_into(lease):
    data = pattern(1000, 3)
    lease.write(data)
    ba = bytearray(1000)
    assert lease.read_into(ba) == 1000 and ba == data
    ba2 = bytearray(20)
    lease.read_into(memoryview(ba2)[5:15], 10)
    assert ba2[5:15] == data[10:20] and ba2[:5] == bytes(5)
    with mmap.mmap(-1, 4096) as m:
        lease.read_into(m)
        assert m[:1000] == data
    with pytest.raises(BufferError):
        lease.read_into(b"read-only bytes")


def test_numpy_zero_copy(client):
    np = pytest.importorskip("numpy")
    with client.alloc(MIB) as l:
        src = np.arange(MIB // 8, dtype=np.uint64)
        l.write(src)
        arr = np.zeros(MIB // 8, dtype=np.uint64)
        addr = arr.ctypes.data
        with client.register(arr) as rb:
            assert len(rb) == MIB and rb.obj is arr and rb.registered
            assert l.read_into(arr) == MIB
        assert arr.ctypes.data == addr  # into the array itself
        assert np.array_equal(arr, src)
        # A slice of it, and a non-contiguous view refused.
        part = np.zeros(16, dtype=np.uint64)
        l.read_into(part, 8 * 100)
        assert np.array_equal(part, src[100:116])
        with pytest.raises((BufferError, ValueError, TypeError)):
            l.read_into(arr[::2])


def test_atomics(lease):
    lease.write((41).to_bytes(8, sys.byteorder), 64)
    assert lease.faa(64, 1) == 41
    assert lease.faa(64, -2) == 42
    assert lease.cas(64, 40, 7) == 40          # swapped
    assert lease.cas(64, 40, 9) == 7           # not swapped
    assert int.from_bytes(lease.read(64, 8), sys.byteorder) == 7
    assert lease.faa(64, 0) == 7
    with pytest.raises(rmpool.InvalidArgument):
        lease.faa(3, 1)  # not 8-byte aligned


def test_info_token_renew(client):
    with client.alloc(10000, ttl=30, alignment=4096) as l:
        i = l.info
        assert isinstance(i, rmpool.LeaseInfo)
        assert i.length >= 10000 and i.length == l.length
        assert i.access == rmpool.ACCESS_ALL
        assert 0 < i.ttl_ms <= 30000
        assert i.remote_addr % 4096 == 0
        assert i.holders == 1 and i.replicas == 1 and i.stripes == 1
        assert isinstance(l.token, str) and f"id {i.id}," in repr(l)
        l.renew(100)
        assert l.info.ttl_ms > 30000
        l.renew()
        assert client.renew_token(l.token, 50) == pytest.approx(50, abs=2)


def test_ephemeral_flag(client):
    with client.alloc(4096, ephemeral=True) as l:
        assert l.info.flags & rmpool.LEASE_EPHEMERAL


def test_free_and_exit(client):
    l = client.alloc(4096)
    tok = l.token
    l.free()
    assert l.closed
    with pytest.raises(ValueError):
        l.read(0, 1)
    with pytest.raises(rmpool.LeaseNotFound) as ei:
        client.attach(tok)
    assert ei.value.errno == errno.ENOENT
    # free_on_exit=False: leaving the block only closes the handle.
    with client.alloc(4096, free_on_exit=False) as l2:
        tok = l2.token
    assert l2.closed
    with client.attach(tok) as l3:  # attach's default: close on exit
        assert not l3.free_on_exit
    client.free_token(tok)
    with pytest.raises(rmpool.LeaseNotFound):
        client.attach(tok)


def test_attach_shared_and_read_only(client, lease):
    lease.write(b"shared!")
    with rmpool.Client(ADDR, PORT) as c2:
        with c2.attach(lease.token) as l2:
            assert l2.read(0, 7) == b"shared!"
            l2.write(b"S")
            l2.flush()
            assert l2.info.holders == 2
        with c2.attach(lease.token, read_only=True) as ro:
            assert ro.info.access == rmpool.ACCESS_READ
            assert ro.read(0, 7) == b"Shared!"
            with pytest.raises(rmpool.AccessDenied) as ei:
                ro.write(b"x")
            assert isinstance(ei.value, PermissionError)
        with pytest.raises(ValueError):  # would wrap to 1 (read only)
            c2.attach(lease.token, access=2**32 + 1)


def test_attach_exclusive():
    with rmpool.Client(ADDR, PORT) as c1, rmpool.Client(ADDR, PORT) as c2:
        l1 = c1.alloc(4096)
        l1.write(b"owner")
        with c2.attach(l1.token, exclusive=True) as l2:
            assert l2.read(0, 5) == b"owner"
            # The first connection's key was revoked, and dead before
            # the exclusive attach returned.
            with pytest.raises(rmpool.AuthRevoked) as ei:
                l1.read(0, 5)
            assert ei.value.errno == errno.EKEYREVOKED
            l2.free()
        l1.close()


# --- Errors -----------------------------------------------------------

def test_out_of_range(lease):
    with pytest.raises(rmpool.OutOfRange) as ei:
        lease.read(lease.length - 4, 8)
    assert ei.value.errno == errno.ERANGE
    assert "lease" in ei.value.strerror
    with pytest.raises(rmpool.OutOfRange):
        lease.write(b"12345678", lease.length - 4)
    with pytest.raises(rmpool.OutOfRange):
        lease.read(lease.length + 1)
    with pytest.raises(ValueError):
        lease.read(-1, 4)


def test_malformed_token(client):
    with pytest.raises(rmpool.InvalidArgument) as ei:
        client.attach("not a token")
    assert isinstance(ei.value, ValueError) and ei.value.errno == errno.EINVAL


def test_lease_expired(client):
    import time
    l = client.alloc(4096, ttl=1)
    time.sleep(1.6)
    with pytest.raises(rmpool.LeaseExpired) as ei:
        l.read(0, 8)
    assert ei.value.errno == errno.EKEYEXPIRED
    l.close()
    client.stat()  # the connection is still usable


def test_quota_and_sizes():
    with rmpool.Client(ADDR, PORT, tenant="b", key_file=B_KEY) as b:
        with pytest.raises(rmpool.QuotaExceeded) as ei:
            b.alloc(2 * MIB)
        assert ei.value.errno == errno.EDQUOT
    with rmpool.Client(ADDR, PORT) as c:
        with pytest.raises(rmpool.LeaseTooLarge):
            c.alloc(9 * MIB)
        held = []
        with pytest.raises(rmpool.PoolFull) as ei:
            for _ in range(8):
                held.append(c.alloc(4 * MIB))
        assert ei.value.errno == errno.ENOSPC
        for l in held:
            l.free()
        with pytest.raises(ValueError):
            c.alloc(0)
        with pytest.raises(ValueError):
            c.alloc(4096, alignment=3)
        # No silent wrap to a small size, alignment or fewer rights.
        for kw in ({"size": 2**64 + 4096}, {"size": -4096},
                   {"size": 4096, "alignment": 2**64 + 64},
                   {"size": 4096, "access": 2**32 + 1}):
            with pytest.raises(ValueError):
                c.alloc(**kw)
        with pytest.raises(TypeError):
            c.alloc(4096.0)
        with pytest.raises(ValueError):
            c.poll(timeout=float("nan"))


def test_alloc_right_after_free():
    """Leases freed a moment ago leave room, not a full pool: their bytes
    are still being revoked and zeroed when the next ALLOC comes, and the
    library asks again instead of failing with PoolFull."""
    with rmpool.Client(ADDR, PORT) as c:
        held = []
        with pytest.raises(rmpool.PoolFull):
            for _ in range(8):
                held.append(c.alloc(4 * MIB))
        assert len(held) >= 2
        for l in held:
            l.free()
        again = [c.alloc(4 * MIB) for _ in held]
        for l in again:
            l.free()


def test_auth_errors():
    wrong = os.path.join(TMP, "wrong.key")
    with open(wrong, "w") as f:
        f.write("ab" * 32)
    os.chmod(wrong, 0o600)
    with pytest.raises(rmpool.AuthError) as ei:
        rmpool.Client(ADDR, PORT, tenant="test", key_file=wrong)
    assert ei.value.errno == errno.EKEYREJECTED
    assert isinstance(ei.value, PermissionError)
    with pytest.raises(rmpool.LeaseNotFound):
        rmpool.Client(ADDR, PORT, tenant="test",
                      key_file=os.path.join(TMP, "no-such.key"))
    # Anonymous access is off: refused by the server.
    with pytest.raises(rmpool.ConnectionRefused):
        rmpool.Client(ADDR, PORT, tenant=None)


def test_server_draining():
    """rmpoolctl drain: no new leases (ServerDraining), existing ones
    work on; undrain: new leases again."""
    with rmpool.Client(ADDR, PORT) as c, c.alloc(4096) as l:
        ctl("drain")
        try:
            with pytest.raises(rmpool.ServerDraining) as ei:
                c.alloc(4096)
            assert ei.value.errno == errno.ESHUTDOWN
            l.write(b"still here")
            assert l.read(0, 10) == b"still here"
        finally:
            ctl("undrain")
        c.alloc(4096).free()


def test_auth_revoked():
    """Tenant "rev"'s key changes and the daemon reloads: the requests of
    a client that proved the old key are refused (AuthRevoked, a
    PermissionError) for the tenant's rotate_grace; one with the new key
    is served."""
    key = os.environ["RMP_PY_REV_KEY"]
    with rmpool.Client(ADDR, PORT, tenant="rev", key_file=key) as old:
        old.stat()
        with open(key, "w") as f:
            f.write(os.urandom(32).hex())
        os.kill(int(os.environ["RMP_PY_DPID"]), signal.SIGHUP)
        deadline = time.monotonic() + 20
        while True:
            try:
                old.stat()
            except rmpool.AuthRevoked as e:
                assert e.errno == errno.EKEYREVOKED
                assert isinstance(e, PermissionError)
                break
            assert time.monotonic() < deadline, "the reload changed nothing"
            time.sleep(0.1)
        with rmpool.Client(ADDR, PORT, tenant="rev", key_file=key) as new:
            new.stat()


def test_timeout():
    """No reply within op_timeout (the daemon stopped): Timeout, a
    TimeoutError."""
    dpid = int(os.environ["RMP_PY_DPID"])
    with rmpool.Client(ADDR, PORT, op_timeout=1) as c:
        os.kill(dpid, signal.SIGSTOP)
        try:
            with pytest.raises(rmpool.Timeout) as ei:
                c.stat()
        finally:
            os.kill(dpid, signal.SIGCONT)
        assert ei.value.errno == errno.ETIMEDOUT
        assert isinstance(ei.value, TimeoutError)


def test_unreachable():
    """An address no local RDMA device reaches (TEST-NET-3, no route)."""
    with pytest.raises(rmpool.Unreachable) as ei:
        rmpool.Client("203.0.113.9", PORT, timeout=2)
    assert ei.value.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH,
                              errno.EHOSTDOWN)


def test_connection_refused():
    with pytest.raises(rmpool.ConnectionRefused) as ei:
        rmpool.Client(ADDR, PORT + 5, timeout=5)
    assert isinstance(ei.value, ConnectionRefusedError)
    assert ei.value.errno == errno.ECONNREFUSED


def test_tenant_isolation(client, lease):
    with rmpool.Client(ADDR, PORT, tenant="b", key_file=B_KEY) as b:
        for call in (lambda: b.attach(lease.token),
                     lambda: b.renew_token(lease.token),
                     lambda: b.free_token(lease.token)):
            with pytest.raises(PermissionError) as ei:
                call()
            assert isinstance(ei.value, rmpool.WrongTenant)
            assert ei.value.errno == errno.EPERM
        with b.alloc(4096) as mine:
            with pytest.raises(rmpool.WrongTenant):
                client.attach(mine.token)
    lease.read(0, 1)  # untouched


# --- Tokens shared with the C CLI -------------------------------------

def test_cli_reads_python_lease(client):
    data = pattern(3000, 9)
    with client.alloc(4096) as l:
        l.write(data)
        l.flush()
        assert cli("read", l.token, "--length", "3000") == data
        assert cli("read", l.token, "--offset", "10", "--length", "5") == data[10:15]


def test_python_reads_cli_lease(client):
    tok = cli("alloc", "8192", "--ttl", "60").decode().strip()
    data = pattern(5000, 11)
    cli("write", tok, "--offset", "100", data=data)
    with client.attach(tok, free_on_exit=True) as l:
        assert l.read(100, 5000) == data
        l.write(b"from python", 0)
        l.flush()
        assert cli("read", tok, "--length", "11") == b"from python"
        assert int(cli("faa", tok, "6144", "5").split()[0]) == 0
        assert l.faa(6144, 1) == 5
    with pytest.raises(rmpool.LeaseNotFound):
        client.attach(tok)


# --- Registered buffers, post_* and poll ------------------------------

def test_post_and_poll(client, lease):
    buf = bytearray(8192)
    buf[:4096] = pattern(4096, 5)
    with client.register(buf) as rb:
        lease.post_write(0, rb, 0, 4096, user_data="w")
        assert rb.inflight == 1 and client.pending == 1
        with pytest.raises(BufferError):
            rb.unregister()
        client.submit()
        done = []
        while len(done) < 1:
            done += client.poll(timeout=5)
        assert done == [("w", 0)]
        lease.post_read(0, rb, 4096, 4096, user_data=("r", 1))
        lease.post_faa(4096, 3, rb, 0, user_data="faa")
        done = []
        while len(done) < 2:
            done += client.poll(timeout=5)
        assert done == [(("r", 1), 0), ("faa", 0)]
        assert buf[4096:] == pattern(4096, 5)
        assert rb.inflight == 0 and client.pending == 0
        lease.post_cas(4096, 3, 99, rb, 8, user_data="cas")
        done = client.poll(timeout=5)
        assert done == [("cas", 0)]
        assert int.from_bytes(buf[8:16], sys.byteorder) == 3
        assert lease.read(4096, 8) == (99).to_bytes(8, sys.byteorder)
        # Errors of a post: raised, nothing left pending.
        with pytest.raises(rmpool.OutOfRange):
            lease.post_read(lease.length - 8, rb, 0, 16)
        with pytest.raises(ValueError):
            lease.post_read(0, rb, 8000, 1000)
        with pytest.raises(TypeError):
            lease.post_read(0, buf)
        assert client.pending == 0 and rb.inflight == 0
    assert not rb.registered
    buf.append(0)  # released: the bytearray may resize again
    with pytest.raises(ValueError):
        lease.post_read(0, rb)


def test_poll_memory_error_loses_nothing(client, lease):
    """A MemoryError while poll builds its result -- any allocation of it,
    made to fail in turn by _testcapi.set_nomemory -- loses no
    completion: a later poll returns each posted operation exactly once,
    and none stays pending or in flight on its buffer."""
    _testcapi = pytest.importorskip("_testcapi")
    buf = bytearray(64)
    raised = 0
    with client.register(buf) as rb:
        for fail_at in range(16):
            ops = [("op", fail_at, i) for i in range(4)]
            for i, ud in enumerate(ops):
                lease.post_read(i * 8, rb, i * 8, 8, user_data=ud)
            client.submit()
            got = []
            _testcapi.set_nomemory(fail_at)
            try:
                done = client.poll(64, 5.0)
            except MemoryError:
                done = None
            finally:
                _testcapi.remove_mem_hooks()
            if done is None:
                raised += 1
            else:
                got += done
            deadline = time.monotonic() + 5
            while len(got) < len(ops) and time.monotonic() < deadline:
                got += client.poll(64, 0.5)
            assert sorted(got) == sorted((ud, 0) for ud in ops), \
                f"failing allocation {fail_at}: got {got}"
            assert client.poll(64, 0) == []
            assert client.pending == 0 and rb.inflight == 0
    assert raised > 0, "no allocation of poll was made to fail"


def test_post_status_error(client):
    l = client.alloc(4096, ttl=1)
    buf = bytearray(64)
    import time
    time.sleep(1.6)
    with client.register(buf) as rb:
        try:
            l.post_read(0, rb, 0, 64, user_data=1)
        except rmpool.LeaseExpired:
            pass  # refused at post: the library checked the deadline
        else:
            (ud, st), = client.poll(timeout=5)
            assert st < 0
            assert isinstance(rmpool.exception_for(st), rmpool.Error)
    l.close()


def test_busy():
    with rmpool.Client(ADDR, PORT, max_inflight=2) as c:
        with c.alloc(4096) as l, c.register(bytearray(64)) as rb:
            l.post_read(0, rb, 0, 8)
            l.post_read(8, rb, 8, 8)
            with pytest.raises(rmpool.Busy) as ei:
                l.post_read(16, rb, 16, 8)
            assert isinstance(ei.value, BlockingIOError)
            n = 0
            while n < 2:
                n += len(c.poll(timeout=5))


# --- asyncio ----------------------------------------------------------

def test_asyncio_64_concurrent(client):
    async def main():
        with client.alloc(64 * 1024) as l:
            data = pattern(64 * 1024, 13)
            await l.awrite(data)
            reads = [l.aread(i * 1024, 64) for i in range(64)]
            got = await asyncio.gather(*reads)
            for i, g in enumerate(got):
                assert g == data[i * 1024:i * 1024 + 64]
            # More than the arena's slots at once, and a read of several.
            big = await l.aread(0, 64 * 1024)
            assert big == data
            ba = bytearray(300)
            assert await l.aread_into(ba, 7) == 300 and ba == data[7:307]
            assert await l.afaa(0, 1) == int.from_bytes(data[:8], sys.byteorder)
            old = await l.acas(8, 0, 5)
            assert old == int.from_bytes(data[8:16], sys.byteorder)
            with pytest.raises(rmpool.OutOfRange):
                await l.aread(l.length - 1, 2)
    run_async(main())
    assert client.pending == 0


def test_asyncio_engine_faults(client):
    """Slots given back when a post fails; an idle loop does not spin on
    the completion fd; a client that reconnects by itself refused."""
    from rmpool import _aio

    async def main():
        with client.alloc(64 * 1024) as l:
            # More failed posts than the arena has slots: none leaks.
            for _ in range(_aio.NSLOTS + 8):
                with pytest.raises(rmpool.OutOfRange):
                    await l.aread(l.length, 8)
                with pytest.raises(rmpool.OutOfRange):
                    await l.afaa(l.length, 1)
            assert await asyncio.wait_for(l.aread(0, 8), 10) == bytes(8)
            # Idle: the fd's event was consumed, the loop sleeps.
            e = _aio.engine(client)
            calls = [0]
            reap = e.reap

            def counted():
                calls[0] += 1
                reap()
            client_loop = asyncio.get_running_loop()
            client_loop.remove_reader(e.fd)
            client_loop.add_reader(e.fd, counted)
            await l.aread(0, 8)
            await asyncio.sleep(0.3)
            client_loop.remove_reader(e.fd)
            client_loop.add_reader(e.fd, reap)
            assert calls[0] < 20, f"reap ran {calls[0]} times in 0.3 s idle"
    run_async(main())
    c = rmpool.Client(ADDR, PORT, reconnect_max_ms=500)
    try:
        with c.alloc(4096) as l:
            with pytest.raises(RuntimeError):
                run_async(l.aread(0, 8))
    finally:
        c.close()


def test_asyncio_registered_zero_copy(client):
    np = pytest.importorskip("numpy")

    async def main():
        with client.alloc(MIB) as l:
            src = np.arange(MIB // 4, dtype=np.uint32)
            dst = np.zeros_like(src)
            with client.register(src) as rs, client.register(dst) as rd:
                await l.awrite(rs)
                assert await l.aread_into(rd) == MIB
            assert np.array_equal(src, dst)
    run_async(main())
    run_async(main())  # a second loop: the engine follows it


def test_asyncio_close_fails_waiters():
    async def main():
        c = rmpool.Client(ADDR, PORT)
        l = c.alloc(4096)
        t = asyncio.ensure_future(l.aread(0, 8))
        await asyncio.sleep(0)
        c.close()
        with pytest.raises(rmpool.Error):
            await t
        l.close()
    run_async(main())


def test_asyncio_dropped_client_is_freed(client):
    """A client dropped without close() while its event loop runs is
    freed (the loop does not hold it through its fd's reader), and the
    loop goes on serving other clients. (The fallback timer's part:
    test_unit.py, where a completion can be made late.)"""
    async def main():
        c = rmpool.Client(ADDR, PORT)
        with c.alloc(4096) as l:
            await l.awrite(b"x" * 8)
            assert await l.aread(0, 8) == b"x" * 8
        gone = weakref.ref(c)
        del c, l
        gc.collect()
        assert gone() is None, "the event loop keeps the client alive"
        # The loop still works, its selector without the freed fd.
        with client.alloc(4096) as l2:
            await l2.awrite(b"y" * 8)
            assert await l2.aread(0, 8) == b"y" * 8
    run_async(main())


# --- Threads share a client -------------------------------------------

def test_threads_share_client(client, lease):
    want = pattern(4096, 17)
    lease.write(want)
    errors = []

    def worker():
        try:
            for _ in range(50):
                assert lease.read(0, 4096) == want
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_gc_under_the_client_lock():
    """An exception built under the client's lock may run the garbage
    collector, which may deallocate a lease of the same client (locking it
    again): no deadlock."""
    done = []

    def work():
        with rmpool.Client(ADDR, PORT) as c:
            probe = c.alloc(4096, ttl=5)
            old = gc.get_threshold()
            gc.set_threshold(1)
            try:
                for _ in range(100):
                    cyc = [c.alloc(4096, ttl=2)]
                    cyc.append(cyc)  # unreachable once dropped: for the GC
                    del cyc
                    try:
                        probe.read(probe.length, 8)
                    except rmpool.OutOfRange:
                        pass
            finally:
                gc.set_threshold(*old)
            probe.free()
        done.append(True)
    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(60)
    assert done, "deadlock: a lease deallocated under its client's lock"


def test_lease_closed_while_waiting_for_the_lock():
    """A call that waited for the client's lock (the GIL released) while
    another thread closed its lease says so, without touching the
    handle."""
    dpid = int(os.environ["RMP_PY_DPID"])
    with rmpool.Client(ADDR, PORT) as c:
        l = c.alloc(4096)
        errors = []

        def read():
            try:
                l.read(0, 8)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        os.kill(dpid, signal.SIGSTOP)
        try:
            holder = threading.Thread(target=c.stat)  # holds the lock
            holder.start()
            time.sleep(0.3)
            reader = threading.Thread(target=read)  # waits for it
            reader.start()
            time.sleep(0.3)
            assert holder.is_alive() and reader.is_alive()
            closer = threading.Thread(target=l.close)
            closer.start()
        finally:
            os.kill(dpid, signal.SIGCONT)
        for t in (holder, reader, closer):
            t.join(30)
        assert len(errors) == 1 and type(errors[0]) is ValueError, errors
        assert "freed or closed" in str(errors[0])


def test_exit_with_a_daemon_thread_in_a_call():
    """At exit a daemon thread inside a call (the server stopped) holds
    its client's lock, and stops for good when it wants the GIL back:
    the teardown, closing another lease of that client, gives up on the
    lock after 2 s instead of waiting forever."""
    dpid = int(os.environ["RMP_PY_DPID"])
    script = f"""
import os, signal, threading, time
import rmpool
c = rmpool.Client({ADDR!r}, {PORT}, op_timeout=60)
lease = c.alloc(4096, ttl=60)  # closed by the teardown
os.kill({dpid}, signal.SIGSTOP)
threading.Thread(target=c.stat, daemon=True).start()
time.sleep(0.5)
print("exiting", flush=True)
"""
    try:
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", script],
                           capture_output=True, text=True, timeout=40)
        took = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        pytest.fail("the interpreter did not exit: waiting for the lock")
    finally:
        os.kill(dpid, signal.SIGCONT)
    assert r.returncode == 0 and "exiting" in r.stdout, r.stderr
    print(f"exited in {took:.1f} s")


def test_exception_built_after_the_lock():
    """The exception of a failed call is built once the client's lock is
    given back: building it may run the garbage collector, whose
    finalizers may wait for another thread's call on the same client."""
    waited = []

    class WaitsForTheClient:
        def __del__(self):
            t = threading.Thread(target=c.stat)
            t.start()
            t.join(3)
            waited.append(not t.is_alive())

    if sys.version_info >= (3, 12):
        pytest.skip("from 3.12 the GC runs only between bytecodes, never "
                    "inside the extension's exception building")
    with rmpool.Client(ADDR, PORT) as c:
        probe = c.alloc(4096, ttl=60)
        old = gc.get_threshold()
        gc.collect()
        gc.set_threshold(1)
        end = probe.length
        try:
            for _ in range(20):
                cyc = [WaitsForTheClient()]
                cyc.append(cyc)  # unreachable once dropped: for the GC
                del cyc
                # Past the end: the library refuses under the lock. Nothing
                # here allocates before the call (the GC would run there).
                try:
                    probe.read(end, 8)
                except rmpool.OutOfRange:
                    pass
                if waited:
                    break
        finally:
            gc.set_threshold(*old)
        gc.collect()
        probe.free()
    assert waited, "the garbage collector never ran a finalizer"
    assert all(waited), "a finalizer waited on the client's lock"


def test_gil_released():
    """A call waiting for the server lets other threads run: with the
    daemon stopped (SIGSTOP), a thread's stat() and alloc() can only end
    after this thread, running Python meanwhile, continues the daemon.
    A call that kept the GIL would hold this thread until its timeout.
    (Every call that may wait, data calls included, goes through the
    same RMP_PY_CALL.)"""
    dpid = int(os.environ["RMP_PY_DPID"])
    with rmpool.Client(ADDR, PORT, op_timeout=5) as c:
        for name, fn in (("stat", c.stat),
                         ("alloc", lambda: c.alloc(4096).free())):
            result = []

            def call():
                try:
                    fn()
                    result.append("done")
                except rmpool.Error as e:
                    result.append(e)
            os.kill(dpid, signal.SIGSTOP)
            try:
                t = threading.Thread(target=call)
                t.start()
                time.sleep(0.5)  # the thread is in the call by now
                waiting = t.is_alive()
            finally:
                os.kill(dpid, signal.SIGCONT)
            t.join(30)
            assert waiting, f"{name} ended while the daemon was stopped"
            assert result == ["done"], f"{name}: {result}"


# --- Reference counts and leaks ---------------------------------------

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_leaks(client):
    """10^5 calls (most without a round trip, 4000 with one): neither
    Python memory (tracemalloc) nor RSS grows."""
    l = client.alloc(4096)
    l.write(pattern(4096))
    ba = bytearray(64)

    def round_(n, wire):
        for i in range(n):
            _ = l.info
            _ = l.token
            try:
                l.read(4090, 64)
            except rmpool.OutOfRange:
                pass
            l.read_into(memoryview(ba)[:0])
            if i < wire:
                l.read(0, 64)
                l.read_into(bytearray(64))
                l.write(b"x" * 64, 128)

    round_(2000, 500)  # warm up caches and free lists
    gc.collect()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    rss0 = rss_kib()
    round_(25000, 1000)  # 4 x 25000 calls without, 3000 with a round trip
    gc.collect()
    grown = sum(s.size_diff for s in
                tracemalloc.take_snapshot().compare_to(snap0, "filename"))
    rss1 = rss_kib()
    tracemalloc.stop()
    l.free()
    print(f"tracemalloc +{grown} B, RSS {rss0} -> {rss1} KiB")
    assert grown < 64 * 1024, f"Python memory grew by {grown} bytes"
    if not os.environ.get("RMP_PY_ASAN"):  # ASan's quarantine holds frees
        assert rss1 - rss0 < 2048, f"RSS grew from {rss0} to {rss1} KiB"


# --- The examples run -------------------------------------------------

@pytest.mark.parametrize("name", ["basic.py", "async_reads.py",
                                  "numpy_zero_copy.py"])
def test_examples(name, monkeypatch, capsys):
    """Each example as its __main__, in this interpreter (a process each
    cost 3-6 s of start-up in the VM)."""
    if name.startswith("numpy"):
        pytest.importorskip("numpy")
    ex = os.path.join(os.path.dirname(__file__), "..", "..", "client",
                      "python", "examples", name)
    monkeypatch.setattr(sys, "argv", [ex, f"{ADDR}:{PORT}"])
    try:
        runpy.run_path(ex, run_name="__main__")
    except SystemExit as e:
        assert e.code in (None, 0), f"{name} exited with {e.code}"
    out = capsys.readouterr().out
    if name == "basic.py":
        tok = out.splitlines()[-2]
        assert cli("read", tok, "--length", "12") == b"from python\n"
        cli("free", tok)


# --- Reconnect after a daemon restart (last: it restarts the daemon) ---

def test_zz_restart_reconnect():
    """SIGTERM the daemon and start it again on its state: a client with
    reconnect_max_ms connects again by itself and the lease handle,
    attached again, reads its bytes back."""
    import signal
    import time
    c = rmpool.Client(ADDR, PORT, reconnect_max_ms=1000)
    l = c.alloc(8192, ttl=600)
    data = pattern(8192, 21)
    l.write(data)
    l.flush()
    dpid = int(os.environ["RMP_PY_DPID"])
    os.kill(dpid, signal.SIGTERM)
    for _ in range(300):  # gone, or a zombie of the test's shell
        try:
            with open(f"/proc/{dpid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except (FileNotFoundError, ProcessLookupError):
            break  # gone (ESRCH when it went between open and read)
        time.sleep(0.1)
    else:
        pytest.fail("rmpoold did not exit after SIGTERM")
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    if os.environ.get("RMP_PY_DAEMON_ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] = os.environ["RMP_PY_DAEMON_ASAN_OPTIONS"]
    log = os.path.join(TMP, "rmpoold2.log")
    with open(log, "w") as out:
        d2 = subprocess.Popen([os.environ["RMP_PY_RMPOOLD"], "-c",
                               os.environ["RMP_PY_CONF"]], stdout=out,
                              stderr=subprocess.STDOUT, env=env,
                              start_new_session=True)
    with open(os.path.join(TMP, "rmpoold2.pid"), "w") as f:
        f.write(str(d2.pid))
    for _ in range(300):
        with open(log) as f:
            if "listening on" in f.read():
                break
        assert d2.poll() is None, "the restarted rmpoold exited"
        time.sleep(0.1)
    else:
        pytest.fail("the restarted rmpoold did not listen in 30 s")
    # At most one error per lease for the loss; then it works again.
    errors = []
    for _ in range(50):
        try:
            got = l.read(0, 8192)
            break
        except (rmpool.NotConnected, rmpool.Timeout,
                rmpool.TransportError) as e:
            errors.append(e)
            time.sleep(0.2)
    else:
        pytest.fail(f"no reconnect: {errors[-3:]}")
    assert got == data
    print(f"reconnected after {len(errors)} error(s)")
    l.write(b"after", 0)
    assert l.read(0, 5) == b"after"
    l.free()
    c.close()

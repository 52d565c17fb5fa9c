# SPDX-License-Identifier: MIT
"""Host-side checks of the rmpool module: no RDMA device needed."""
import errno
import inspect
import os
import re

import pytest

import rmpool

# The errno each exception class stands for (errors.c's table).
CLASSES = {
    "LeaseExpired": (errno.EKEYEXPIRED, None),
    "QuotaExceeded": (errno.EDQUOT, None),
    "PoolFull": (errno.ENOSPC, None),
    "LeaseTooLarge": (errno.EFBIG, None),
    "ServerDraining": (errno.ESHUTDOWN, None),
    "AuthError": (errno.EKEYREJECTED, PermissionError),
    "AuthRevoked": (errno.EKEYREVOKED, PermissionError),
    "WrongTenant": (errno.EPERM, PermissionError),
    "AccessDenied": (errno.EACCES, PermissionError),
    "LeaseNotFound": (errno.ENOENT, FileNotFoundError),
    "OutOfRange": (errno.ERANGE, None),
    "Busy": (errno.EAGAIN, BlockingIOError),
    "Timeout": (errno.ETIMEDOUT, TimeoutError),
    "NotConnected": (errno.ENOTCONN, ConnectionError),
    "ConnectionRefused": (errno.ECONNREFUSED, ConnectionRefusedError),
    "Unreachable": (errno.EHOSTUNREACH, ConnectionError),
    "TransportError": (errno.EIO, None),
    "ProtocolError": (errno.EPROTO, None),
    "NotSupported": (errno.EOPNOTSUPP, None),
    "MessageTooLarge": (errno.EMSGSIZE, None),
    "TornRow": (errno.EBADMSG, None),
    "OtherWriter": (errno.EBUSY, None),
    "InvalidArgument": (errno.EINVAL, ValueError),
}


def test_import_and_version():
    assert re.match(r"^\d+\.\d+\.\d+", rmpool.version())
    assert rmpool.__version__ == rmpool.version()
    assert rmpool.DEFAULT_PORT == 7471
    assert rmpool.ACCESS_ALL == (rmpool.ACCESS_READ | rmpool.ACCESS_WRITE |
                                 rmpool.ACCESS_ATOMIC)
    # Built against the stable ABI? The module is found as the build's.
    assert "client/python/rmpool" in rmpool._rmpool.__file__


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_exception_classes(name):
    cls = getattr(rmpool, name)
    num, builtin = CLASSES[name]
    assert issubclass(cls, rmpool.Error) and issubclass(cls, OSError)
    if builtin:
        assert issubclass(cls, builtin)
    e = rmpool.exception_for(-num)
    assert type(e) is cls
    assert e.errno == num
    assert e.strerror == rmpool.strerror(num)
    assert type(rmpool.exception_for(num)) is cls  # either sign
    assert cls.__doc__


def test_more_errnos():
    assert type(rmpool.exception_for(-errno.ENETUNREACH)) is rmpool.Unreachable
    assert type(rmpool.exception_for(-errno.EHOSTDOWN)) is rmpool.Unreachable
    assert type(rmpool.exception_for(-errno.EPROTONOSUPPORT)) is rmpool.ProtocolError
    e = rmpool.exception_for(-errno.ENOMEM)
    assert type(e) is rmpool.Error and e.errno == errno.ENOMEM
    with pytest.raises(ValueError):
        rmpool.exception_for(0)
    with pytest.raises(TypeError):
        rmpool.exception_for(-1, client=3)


def test_strerror():
    assert "lease" in rmpool.strerror(errno.ENOENT)
    assert rmpool.strerror(-errno.ENOENT) == rmpool.strerror(errno.ENOENT)


def test_argument_errors():
    with pytest.raises(TypeError):
        rmpool.Client(1234)
    with pytest.raises(ValueError):
        rmpool.Client("127.0.0.1", 70000)
    with pytest.raises(ValueError):
        rmpool.Client("127.0.0.1", timeout=-1)
    with pytest.raises(TypeError):
        rmpool.Client("127.0.0.1", tenant=5)
    with pytest.raises(TypeError):
        rmpool.Client("127.0.0.1", 1, 2)  # tenant is keyword-only
    # Options the library refuses: a tenant without a key.
    with pytest.raises(rmpool.InvalidArgument):
        rmpool.Client("127.0.0.1", tenant="t", key_file=None)
    with pytest.raises(rmpool.InvalidArgument):
        rmpool.Client("127.0.0.1", tenant=None, name="x" * 100)
    # A NUL would cut the C string short: another host, another file.
    with pytest.raises(ValueError):
        rmpool.Client("127.0.0.1\0.evil")
    with pytest.raises(ValueError):
        rmpool.Client("127.0.0.1", tenant="t", key_file="k\0ey")
    # Integers that would wrap or be ignored are refused before a connect.
    for kw in ({"max_inflight": 2**32 + 7}, {"reconnect_max_ms": -1},
               {"reconnect_max_ms": 2**32}, {"bounce_bytes": -1},
               {"rail_stripe": -4096}, {"spin_max_us": -2}):
        with pytest.raises(ValueError):
            rmpool.Client("192.0.2.1", tenant=None, **kw)
        with pytest.raises(ValueError):
            rmpool.Cluster("etcd://192.0.2.1:2379", tenant=None, **kw)
    with pytest.raises(TypeError):
        rmpool.Lease()
    with pytest.raises(TypeError):
        rmpool.RegisteredBuffer()


def test_unreachable_client():
    """No RDMA device here (or no route in the VM): a clear OSError."""
    with pytest.raises(rmpool.Error) as ei:
        rmpool.Client("192.0.2.1", 7471, tenant=None, timeout=2)
    e = ei.value
    assert isinstance(e, OSError) and e.errno in (
        errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ETIMEDOUT,
        errno.ENODEV, errno.ECONNREFUSED)
    assert e.strerror and rmpool.strerror(e.errno) in e.strerror
    with pytest.raises(rmpool.Unreachable):
        rmpool.Client("no-such-host.invalid", tenant=None, timeout=2)


def test_cluster_argument_errors():
    """What Cluster() refuses before or at its first etcd request."""
    with pytest.raises(TypeError):
        rmpool.Cluster(1234)
    with pytest.raises(TypeError):
        rmpool.Cluster("etcd://127.0.0.1:1", "/p/")  # keyword-only
    with pytest.raises(TypeError):
        rmpool.Cluster("etcd://127.0.0.1:1", prefix=5)
    with pytest.raises(ValueError):
        rmpool.Cluster("etcd://127.0.0.1:1", etcd_timeout=0)
    with pytest.raises(ValueError):
        rmpool.Cluster("etcd://127.0.0.1:1\0.evil")
    # The library's checks, given through: a url, a prefix, TLS files
    # for an endpoint without TLS, the client options.
    for url, kw in (("foo://x", {}),
                    ("etcd://127.0.0.1:1", {"prefix": "no-slash"}),
                    ("etcd://127.0.0.1:1", {"ca_file": "/dev/null"}),
                    ("etcd://127.0.0.1:1", {"etcd_key_file": "/dev/null",
                                            "cert_file": "/dev/null"}),
                    ("etcd://127.0.0.1:1", {"tenant": None,
                                            "name": "x" * 100})):
        with pytest.raises(rmpool.InvalidArgument) as ei:
            rmpool.Cluster(url, **kw)
        assert url in ei.value.strerror, kw
    # No tenant: refused before etcd is asked, unless allowed (an
    # anonymous server proves nothing).
    with pytest.raises(rmpool.InvalidArgument):
        rmpool.Cluster("etcd://127.0.0.1:1", tenant=None, etcd_timeout=2)
    # Nobody listens: ConnectionRefused, the url in its text.
    with pytest.raises(rmpool.ConnectionRefused) as ei:
        rmpool.Cluster("etcd://127.0.0.1:1", tenant=None, etcd_timeout=2,
                       allow_anonymous=True)
    assert "etcd://127.0.0.1:1" in ei.value.strerror


def test_cluster_alloc_arguments():
    """alloc's ranges are checked before the cluster is asked: here on a
    Cluster never opened, which refuses every call as closed."""
    cl = rmpool.Cluster.__new__(rmpool.Cluster)
    assert cl.closed and "closed" in repr(cl)
    for kw, what in (({"replicas": 0}, "replicas must be 1..3"),
                     ({"replicas": 4}, "replicas must be 1..3"),
                     ({"stripes": 17}, "stripes must be 1..16"),
                     ({"stripe_unit": 2048}, "stripe_unit must be"),
                     ({"stripe_unit": 3 << 12}, "power of two"),
                     ({"ttl": 0}, "ttl must be"),
                     ({"alignment": 3}, "power of two")):
        with pytest.raises(ValueError, match=what):
            cl.alloc(4096, **kw)
    with pytest.raises(ValueError, match="size must be"):
        cl.alloc(0)
    for bad in (5, b"n1", [1, 2]):
        with pytest.raises(TypeError):
            cl.alloc(4096, exclude=bad)
    with pytest.raises(TypeError):
        cl.alloc(4096, prefer=5)
    with pytest.raises(ValueError, match="the cluster is closed"):
        cl.alloc(4096, replicas=3, stripes=16, stripe_unit=1 << 30,
                 exclude=("n1", "n2"), prefer="rack=r1", spread="rack")
    for call in (cl.nodes, lambda: cl.attach("rmpc://1-x"), cl.__enter__):
        with pytest.raises(ValueError, match="the cluster is closed"):
            call()
    cl.close()  # harmless
    assert cl.last_error == "" and cl.url is None


def test_docstrings():
    for cls in (rmpool.Client, rmpool.Lease, rmpool.RegisteredBuffer,
                rmpool.Cluster):
        assert cls.__doc__
        for n, f in inspect.getmembers(cls):
            if n.startswith("_") or not callable(f):
                continue
            assert f.__doc__ and len(f.__doc__) > 20, f"{cls.__name__}.{n}"
    assert str(inspect.signature(rmpool.Lease.read)) == \
        "(self, /, offset=0, length=None)"


STUB_CLASSES = ("Client", "Cluster", "Lease", "RegisteredBuffer",
                "LeaseInfo", "NodeInfo")


def stub_text():
    pyi = os.path.join(os.path.dirname(rmpool.__file__), "__init__.pyi")
    with open(pyi) as f:
        return f.read()


def stub_class_members(stub, name):
    """The names a class of the stub declares (methods and attributes)."""
    body = re.search(rf"^class {name}\b.*?(?=^\S|\Z)", stub,
                     re.M | re.S).group(0)
    return set(re.findall(r"^    (?:async )?(?:def )?([A-Za-z_]\w*)[(:]",
                          body, re.M))


def test_stubs_cover_module():
    """The type stubs and the module agree both ways: every public name of
    the module and of its classes is in __init__.pyi, and everything the
    stubs declare exists (a name added or removed on one side alone
    fails here)."""
    stub = stub_text()
    public = {n for n in dir(rmpool) if not n.startswith("_") and
              not inspect.ismodule(getattr(rmpool, n))}
    declared = set(re.findall(r"^(?:class |def )?([A-Za-z_]\w*)\b[(:]",
                              stub, re.M)) - {"from", "import"}
    declared.add("__version__")
    # a TypedDict is a type for the checker only: the module has dicts
    declared -= set(re.findall(r"^class (\w+)\(TypedDict\)", stub, re.M))
    for n in set(rmpool.__all__) | public:
        assert n in declared, f"rmpool.{n} is not in __init__.pyi"
    for n in declared:
        assert hasattr(rmpool, n), f"__init__.pyi declares rmpool.{n}"
    for name in STUB_CLASSES:
        cls = getattr(rmpool, name)
        members = stub_class_members(stub, name)
        have = {n for n, _ in inspect.getmembers(cls)
                if not n.startswith("_")}
        if issubclass(cls, tuple):  # a struct sequence's fields only
            have -= set(dir(tuple)) | {"n_fields", "n_sequence_fields",
                                       "n_unnamed_fields"}
        for n in have - members:
            assert False, f"{name}.{n} is not in __init__.pyi"
        for n in members - have - {"__init__", "__enter__", "__exit__",
                                    "__aenter__", "__aexit__"}:
            if not n.startswith("_"):
                assert False, f"__init__.pyi declares {name}.{n}"


# --- The asyncio engine's life, against a fake client ------------------

class FakeClient:
    """What rmpool._aio.Engine uses of a Client: a pipe stands for the
    completion fd; completions are handed in by complete()."""

    def __init__(self):
        self.rfd, self.wfd = os.pipe()
        self.done = []
        self.submits = 0

    def register(self, buf):
        class Reg:
            def unregister(self):
                pass
        return Reg()

    def fileno(self):
        return self.rfd

    def submit(self):
        self.submits += 1

    def poll(self, max_, timeout):
        os.set_blocking(self.rfd, False)
        try:
            os.read(self.rfd, 64)
        except BlockingIOError:
            pass
        out, self.done = self.done[:max_], self.done[max_:]
        return out

    def complete(self, op):
        self.done.append((op, 0))
        os.write(self.wfd, b"x")

    def close_fds(self):
        os.close(self.rfd)
        os.close(self.wfd)


def test_aio_engine_freed_after_slow_completion(monkeypatch):
    """An operation that completes after the doorbell's spin, through the
    fd, while the fallback timer is armed: once it is done, nothing of
    the event loop holds the engine (or its client) any more."""
    import asyncio
    import gc
    import weakref
    from rmpool import _aio

    monkeypatch.setattr(_aio, "SPIN_S", 0)
    fake = FakeClient()

    async def main():
        loop = asyncio.get_running_loop()
        e = _aio.Engine(fake, loop)
        op = _aio._Op(loop.create_future())
        fut = await e.post(lambda user_data: None, op=op)
        await asyncio.sleep(0)  # the doorbell (submit) runs
        assert e.timer is not None, "no fallback timer armed"
        loop.call_later(0.002, fake.complete, op)
        await fut
        gone = weakref.ref(e)
        del e, op, fut
        gc.collect()
        assert gone() is None, "the event loop still holds the engine"
        # Its fd left the loop with it.
        assert fake.rfd not in loop._selector.get_map()

    asyncio.run(main())
    fake.close_fds()

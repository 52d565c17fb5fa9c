# SPDX-License-Identifier: MIT
"""rmpool -- lease remote memory and access it with one-sided RDMA.

The Python binding of librmpool (see librmpool(3) and rmpool.h): Client,
Lease, RegisteredBuffer, Cluster (leases placed over the nodes registered
in etcd: mirrored, striped), NodeInfo and the exception classes are the C
extension rmpool._rmpool's; this package adds asyncio (Lease.aread, awrite,
aread_into, acas, afaa: see rmpool._aio).

    import rmpool
    with rmpool.Client("10.0.0.1", tenant="app", key_file="app.key") as c:
        with c.alloc(1 << 20, ttl=60) as lease:
            lease.write(b"hello")
            print(lease.read(0, 5), lease.token)

Every failure raises an rmpool.Error (an OSError) subclass with the
library's errno and text: LeaseExpired, QuotaExceeded, AuthError,
WrongTenant (a PermissionError), Timeout (a TimeoutError), ...
"""
import atexit

from . import _rmpool
from ._rmpool import *  # noqa: F401,F403
from ._rmpool import (Lease, LeaseInfo, RegisteredBuffer, Error,  # noqa: F401
                      exception_for, strerror, version)
from . import _aio

__version__ = version()


class Client(_rmpool.Client):
    __doc__ = _rmpool.Client.__doc__

    _aio_engine = None

    def close(self):
        """close()

        Disconnect. Leases stay on the server until their deadline
        (ephemeral ones end now); their handles, and registered buffers,
        then raise NotConnected. Operations posted and not polled are
        dropped (coroutines awaiting them raise NotConnected). Closing
        twice is harmless."""
        e, self._aio_engine = self._aio_engine, None
        if e is not None:
            e.detach()
        super().close()
        if e is not None:
            e.close()

    def __exit__(self, *exc):
        self.close()


_aio.install(Lease)
# At exit a daemon thread may stop for good inside a call, holding its
# client's lock: the teardown's closes then wait for it 2 s at most.
atexit.register(_rmpool._at_exit)

__all__ = [n for n in dir(_rmpool) if not n.startswith("_")] + ["Client"]

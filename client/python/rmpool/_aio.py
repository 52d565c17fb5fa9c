# SPDX-License-Identifier: MIT
"""asyncio for rmpool: coroutine data calls over the asynchronous C API.

No thread per call: operations are posted with Lease.post_* (one
doorbell per event-loop tick, Client.submit), and their completions are
reaped by Client.poll when the client's completion fd (Client.fileno)
turns readable, through loop.add_reader. Reads and writes of unregistered
memory go through an arena the engine registers once per client (64
slots of 64 KiB); a RegisteredBuffer given to aread_into/awrite is used
directly (zero copy).
"""
import asyncio
import sys
import time
import weakref

from . import _rmpool

SLOT = 64 * 1024
NSLOTS = 64
# The completion fd does not signal completions that another (sync)
# call on the client reaped: the engine polls after this many seconds
# too while operations are outstanding.
FALLBACK_POLL_S = 0.02
# After a doorbell the engine polls the completion queue for up to this
# long before it lets the loop sleep on the fd: a wake-up through epoll
# costs more than a short RDMA operation. Stops at the first completion.
# 0: never spin (no CPU spent, a wake-up added to every operation).
SPIN_S = 100e-6


class _Op:
    """One posted operation: its future, and what to do at completion
    before the slot goes back (copy a read out, decode an atomic)."""
    __slots__ = ("fut", "slot", "dst", "n", "kind")

    def __init__(self, fut, slot=None, dst=None, n=0, kind=None):
        self.fut, self.slot, self.dst, self.n, self.kind = fut, slot, dst, n, kind


class Engine:
    """Completion dispatch of one client on one event loop."""

    def __init__(self, client, loop):
        self.client = client
        self.loop = loop
        self.arena = bytearray(SLOT * NSLOTS)
        self.view = memoryview(self.arena)
        self.rbuf = client.register(self.arena)
        self.free = list(range(NSLOTS))
        self.waiters = []
        self.ops = set()
        self.submit_due = False
        self.timer = None
        self.fd = client.fileno()
        # The loop holds the engine only weakly: a client dropped without
        # close() is freed (with its engine) while the loop runs on, and
        # its fd leaves the loop's selector then.
        loop.add_reader(self.fd, _reap_engine, weakref.ref(self), loop,
                        self.fd)
        self.unwatch = weakref.finalize(self, _remove_reader, loop, self.fd)

    # Slots of the arena.
    async def slot(self):
        while not self.free:
            w = self.loop.create_future()
            self.waiters.append(w)
            try:
                await w
            except asyncio.CancelledError:
                # Woken for a slot, then cancelled: the next waiter
                # gets the wake-up (else it would sleep on a free slot).
                if w.done() and not w.cancelled():
                    self.wake_next()
                raise
        return self.free.pop()

    def wake_next(self):
        while self.waiters:
            w = self.waiters.pop(0)
            if not w.done():
                w.set_result(None)
                break

    def release(self, s):
        self.free.append(s)
        self.wake_next()

    async def post(self, fn, *args, **kw):
        """Queue fn(*args, user_data=op, **kw); the op's future."""
        op = kw.pop("op")
        while True:
            try:
                fn(*args, user_data=op, **kw)
                break
            except _rmpool.Busy:
                # max_inflight reached: let completions come back.
                self.submit()
                await asyncio.sleep(0.0002)
                self.reap()
        self.ops.add(op)
        if not self.submit_due:
            self.submit_due = True
            self.loop.call_soon(self.submit)
        return op.fut

    def submit(self):
        self.submit_due = False
        try:
            self.client.submit()
        except (_rmpool.Error, ValueError) as e:
            # Their futures fail now; each op keeps its slot until its
            # own completion (the NIC may still use it) or close().
            self.fail_all(e)
            return
        # Completions another call reaped do not make the fd readable.
        self.reap()
        if self.ops and SPIN_S > 0:
            end = time.perf_counter() + SPIN_S
            n = len(self.ops)
            while self.ops and len(self.ops) == n and \
                    time.perf_counter() < end:
                self.reap()
        self.arm_timer()

    def arm_timer(self):
        """Poll after FALLBACK_POLL_S while operations are outstanding.
        The timer holds the engine weakly, and goes when the last
        operation completes: a client dropped then is freed."""
        if self.ops and self.timer is None:
            self.timer = self.loop.call_later(FALLBACK_POLL_S, _tick_engine,
                                              weakref.ref(self))

    def tick(self):
        self.timer = None
        self.reap()
        self.arm_timer()

    def reap(self):
        # Poll at least once: the fd's event is consumed only by a poll,
        # even when the spin after submit already took the completion
        # (else the loop would call us again at once, forever).
        while True:
            try:
                done = self.client.poll(64, 0)
            except (_rmpool.Error, ValueError) as e:
                self.fail_all(e)
                return
            for op, status in done:
                self.complete(op, status)
            if len(done) < 64:
                break
        if not self.ops and self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def complete(self, op, status):
        if op not in self.ops:
            return  # not ours, or dropped at close: its slot is back
        self.ops.discard(op)
        live = not op.fut.done()  # failed, or cancelled: nothing to copy
        result = None
        if op.slot is not None:
            base = op.slot * SLOT
            if status == 0 and live:
                if op.kind == "read":
                    op.dst[:op.n] = self.view[base:base + op.n]
                    result = op.n
                elif op.kind == "atomic":
                    result = int.from_bytes(self.view[base:base + 8],
                                            sys.byteorder)
            self.release(op.slot)
        op.dst = None
        if not live:
            return
        if status == 0:
            op.fut.set_result(result)
        else:
            op.fut.set_exception(_rmpool.exception_for(status, self.client))

    def fail_all(self, exc, drop=False):
        """Fail every op's future with exc. drop (the client closed, the
        library dropped them): forget the ops and take their slots back;
        else each keeps its slot until its completion comes."""
        for op in list(self.ops):
            if not op.fut.done():
                op.fut.set_exception(exc)
            if drop:
                self.ops.discard(op)
                if op.slot is not None:
                    self.release(op.slot)

    def detach(self):
        """Stop watching the fd (before the client closes)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.unwatch()

    def close(self):
        """After the client closed: fail what is left, free the arena."""
        self.fail_all(_rmpool.NotConnected(107, "the client was closed"),
                      drop=True)
        try:
            self.rbuf.unregister()
        except BufferError:
            pass
        self.view.release()


def _reap_engine(ref, loop, fd):
    """The fd's reader: reap for the engine; if it is gone (its finalizer
    could not remove the reader), remove it here, or a readable fd would
    call this again and again."""
    e = ref()
    if e is not None:
        e.reap()
    else:
        _remove_reader(loop, fd)


def _tick_engine(ref):
    """The fallback timer: poll for the engine, if it is still there."""
    e = ref()
    if e is not None:
        e.tick()


def _remove_reader(loop, fd):
    try:
        loop.remove_reader(fd)
    except (RuntimeError, ValueError, OSError):
        pass  # the loop is closed already


def engine(client):
    """The client's engine for the running loop (made on first use)."""
    loop = asyncio.get_running_loop()
    try:
        e = client._aio_engine
    except AttributeError:
        raise TypeError("asyncio needs an rmpool.Client") from None
    if e is not None and e.loop is loop:
        return e
    if client._reconnects:
        # A reconnect drops what was posted and changes the fd and the
        # arena's registration under the engine.
        raise RuntimeError("asyncio needs a client without "
                           "reconnect_max_ms (it reconnects by itself)")
    if e is not None:
        if e.ops:
            raise RuntimeError("the client has operations outstanding "
                               "on another event loop")
        e.detach()
        e.close()
    client._aio_engine = e = Engine(client, loop)
    return e


async def _chunks(lease, offset, length, kind, src=None, dst=None):
    """Read into dst or write from src through arena slots, SLOT bytes
    per operation, all posted before any is awaited."""
    e = engine(lease.client)
    futs = []
    pos = 0
    try:
        while pos < length:
            n = min(SLOT, length - pos)
            s = await e.slot()
            base = s * SLOT
            try:
                if kind == "read":
                    op = _Op(e.loop.create_future(), s, dst[pos:pos + n], n,
                             "read")
                    futs.append(await e.post(lease.post_read, offset + pos,
                                             e.rbuf, base, n, op=op))
                else:
                    e.view[base:base + n] = src[pos:pos + n]
                    op = _Op(e.loop.create_future(), s, None, n, "write")
                    futs.append(await e.post(lease.post_write, offset + pos,
                                             e.rbuf, base, n, op=op))
            except BaseException:
                e.release(s)  # not posted: the slot is free again
                raise
            pos += n
    finally:
        if futs:
            await asyncio.gather(*futs)
    return length


async def aread(self, offset=0, length=None):
    """aread(offset=0, length=None) -> bytes (coroutine)

    Read as Lease.read(), posted asynchronously: the event loop runs on
    while the NIC works; many aread()s at once share one doorbell per
    loop tick. Errors as read(), raised by the await."""
    if length is None:
        length = self.length - offset
    if length < 0 or offset < 0:
        raise _rmpool.exception_for(-34)  # ERANGE, as read() does
    if length == 0:
        return b""
    out = bytearray(length)
    await _chunks(self, offset, length, "read", dst=memoryview(out))
    return bytes(out)


async def aread_into(self, buffer, offset=0):
    """aread_into(buffer, offset=0) -> int (coroutine)

    Read len(buffer) bytes at offset into buffer. A RegisteredBuffer of
    this lease's client is read into directly (zero copy, one operation);
    any other writable buffer through the engine's registered arena."""
    if isinstance(buffer, _rmpool.RegisteredBuffer):
        e = engine(self.client)
        op = _Op(e.loop.create_future())
        await (await e.post(self.post_read, offset, buffer, 0, len(buffer),
                            op=op))
        return len(buffer)
    dst = memoryview(buffer).cast("B")
    if dst.readonly:
        raise TypeError("aread_into needs a writable buffer")
    return await _chunks(self, offset, dst.nbytes, "read", dst=dst)


async def awrite(self, data, offset=0):
    """awrite(data, offset=0) -> int (coroutine)

    Write any buffer at offset, as Lease.write(). A RegisteredBuffer of
    this lease's client is written from directly (zero copy)."""
    if isinstance(data, _rmpool.RegisteredBuffer):
        e = engine(self.client)
        op = _Op(e.loop.create_future())
        await (await e.post(self.post_write, offset, data, 0, len(data),
                            op=op))
        return len(data)
    src = memoryview(data).cast("B")
    return await _chunks(self, offset, src.nbytes, "write", src=src)


async def _atomic(self, fn, args):
    e = engine(self.client)
    s = await e.slot()
    op = _Op(e.loop.create_future(), s, None, 8, "atomic")
    try:
        fut = await e.post(fn, *args, e.rbuf, s * SLOT, op=op)
    except BaseException:
        e.release(s)  # not posted: the slot is free again
        raise
    return await fut


async def acas(self, offset, expected, desired):
    """acas(offset, expected, desired) -> int (coroutine): Lease.cas()."""
    return await _atomic(self, self.post_cas, (offset, expected, desired))


async def afaa(self, offset, add):
    """afaa(offset, add) -> int (coroutine): Lease.faa()."""
    return await _atomic(self, self.post_faa, (offset, add))


def install(lease_type):
    """Add the coroutine methods to the extension's Lease type."""
    for f in (aread, aread_into, awrite, acas, afaa):
        setattr(lease_type, f.__name__, f)

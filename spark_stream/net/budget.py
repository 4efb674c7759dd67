"""A per-process budget for the request bytes servers hold in memory.

Theory of operation. Every request frame a ``Server`` reads is charged to the process's
``RequestBudget`` from the moment its header is parsed until its handler has finished
(or the frame was answered at once), so the bytes held across all connections of all the
process's servers stay near ``capacity``. A connection that needs bytes the budget cannot
grant stops reading (its read loop awaits the grant; the kernel's socket buffer then
fills and TCP pushes back on the sender), and nothing it sent is ever dropped.

Three rules keep that from deadlocking:

- A frame is reserved whole, once, when its header arrives: a connection never holds a
  part of a frame while waiting for the rest, so two half-read frames cannot wait on each
  other.
- Small frames (below ``SMALL_FRAME``: control traffic such as credits, heartbeats,
  follower reports, group joins) are charged without ever waiting, so a handler that
  holds budget while it waits for such a request (``acks=all`` waiting on follower
  reports) always gets it.
- A frame larger than the whole budget is granted when nothing else is held, and then
  alone: one oversize frame at a time, never refused for its size here (the servers'
  ``max_frame_size`` is the limit on size).

Grants are first come, first served, so a large frame is not starved by a stream of
smaller ones. ``ByteBudget`` is the pure accounting (no asyncio, table-tested);
``RequestBudget`` wraps it with futures. When the budget drains after a burst, it
asks glibc to return freed heap pages to the system (``release_free_memory``), so the
process's RSS goes back to its baseline once the connections are idle or closed (servers
also call ``trim_soon`` when a connection closes, as its read buffers are freed then).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
from collections import OrderedDict
from collections.abc import Callable, Hashable

import pyarrow as pa

__all__ = [
    "ByteBudget",
    "RequestBudget",
    "DEFAULT_REQUEST_BUDGET",
    "SMALL_FRAME",
    "TRIM_AFTER_BYTES",
    "release_free_memory",
    "tune_heap",
]

DEFAULT_REQUEST_BUDGET = 256 << 20
"""Bytes of request frames a process holds at once by default (SC and SPU settings)."""
SMALL_FRAME = 64 << 10
"""Frames below this size are charged but never wait for the budget."""
TRIM_AFTER_BYTES = 32 << 20
"""Bytes released since the last trim before a drained budget trims the heap again."""
DRAINED_BYTES = 1 << 20
"""Held bytes at or below which the budget counts as drained: open streams keep their
(small) request frames held for as long as they last."""
TRIM_DELAY = 0.5
"""Seconds the budget must stay drained before the heap is trimmed (one trim per lull)."""


class ByteBudget:
    """First-come first-served accounting of a byte capacity (no I/O, no clock).

    Args:
        capacity: bytes that may be held at once (a single larger request is granted
            alone, when nothing else is held).

    Raises:
        ValueError: capacity is not positive.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"a byte budget needs a positive capacity, got {capacity}")
        self.capacity = capacity
        self.used = 0
        self.peak = 0
        self._queue: OrderedDict[Hashable, int] = OrderedDict()  # waiters, oldest first

    @property
    def waiting(self) -> int:
        """Requests queued for bytes."""
        return len(self._queue)

    def take(self, key: Hashable, n: int) -> bool:
        """Ask for ``n`` bytes under ``key``: True if granted now, else ``key`` is queued.

        Raises:
            ValueError: ``n`` is negative or ``key`` is already queued.
        """
        _check_size(n)
        if key in self._queue:
            raise ValueError(f"{key!r} is already waiting for bytes")
        if not self._queue and self._fits(n):
            self._add(n)
            return True
        self._queue[key] = n
        return False

    def try_take(self, n: int) -> bool:
        """Take ``n`` bytes if they are granted now (nobody waits and they fit); never queues.

        Raises:
            ValueError: ``n`` is negative.
        """
        _check_size(n)
        if self._queue or not self._fits(n):
            return False
        self._add(n)
        return True

    def charge(self, n: int) -> None:
        """Count ``n`` bytes as held without waiting, even past the capacity."""
        _check_size(n)
        self._add(n)

    def release(self, n: int) -> list[Hashable]:
        """Give back ``n`` held bytes; returns the queued keys granted now, in order.

        Raises:
            ValueError: more bytes than are held.
        """
        _check_size(n)
        if n > self.used:
            raise ValueError(f"releasing {n} bytes but only {self.used} are held")
        self.used -= n
        return self._grant()

    def withdraw(self, key: Hashable) -> list[Hashable]:
        """Remove a queued ``key`` (its connection is gone); returns keys granted now."""
        self._queue.pop(key, None)
        return self._grant()

    def _fits(self, n: int) -> bool:
        return self.used == 0 or self.used + n <= self.capacity

    def _add(self, n: int) -> None:
        self.used += n
        self.peak = max(self.peak, self.used)

    def _grant(self) -> list[Hashable]:
        granted: list[Hashable] = []
        while self._queue:
            key, n = next(iter(self._queue.items()))
            if not self._fits(n):
                break
            del self._queue[key]
            self._add(n)
            granted.append(key)
        return granted


def _check_size(n: int) -> None:
    if n < 0:
        raise ValueError(f"a byte count cannot be negative, got {n}")


class RequestBudget:
    """The asyncio face of a ``ByteBudget``, shared by the servers of one process.

    Args:
        capacity: bytes of request frames held at once (``DEFAULT_REQUEST_BUDGET``).
        trim: called when the budget drained after a burst; returns heap pages to the
            system by default.
    """

    def __init__(
        self,
        capacity: int = DEFAULT_REQUEST_BUDGET,
        *,
        trim: Callable[[], object] | None = None,
    ) -> None:
        self._bytes = ByteBudget(capacity)
        self._trim = trim or release_free_memory
        self._released = 0  # bytes released since the last trim
        self._trim_handle: asyncio.TimerHandle | None = None
        self._active_at = 0.0  # loop time of the last release or close
        self._waits: dict[asyncio.Future[None], int] = {}  # queued grants and their sizes

    @property
    def capacity(self) -> int:
        """Bytes that may be held at once."""
        return self._bytes.capacity

    @property
    def used(self) -> int:
        """Bytes held now."""
        return self._bytes.used

    @property
    def peak(self) -> int:
        """The most bytes ever held at once."""
        return self._bytes.peak

    @property
    def waiting(self) -> int:
        """Frames waiting for bytes (their connections are not reading)."""
        return self._bytes.waiting

    def try_acquire(self, n: int) -> bool:
        """Hold ``n`` bytes if that needs no wait (always, for a small frame)."""
        if n < SMALL_FRAME:
            self._bytes.charge(n)
            return True
        return self._bytes.try_take(n)

    async def acquire(self, n: int) -> None:
        """Hold ``n`` bytes, waiting for them if needed (small frames never wait).

        Cancelling the wait leaves nothing held.
        """
        if self.try_acquire(n):
            return
        grant: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._bytes.take(grant, n):
            return
        self._waits[grant] = n
        try:
            await grant
        except asyncio.CancelledError:
            if grant.done() and not grant.cancelled():
                self.release(n)  # granted as we were cancelled: give it straight back
            else:
                self._wake(self._bytes.withdraw(grant))
            raise
        finally:
            self._waits.pop(grant, None)

    def release(self, n: int) -> None:
        """Give back ``n`` bytes taken with ``acquire``; wakes the frames that fit now."""
        self._wake(self._bytes.release(n))
        self._released += n
        if self._bytes.used <= DRAINED_BYTES and self._released >= TRIM_AFTER_BYTES:
            self.trim_soon()

    def trim_soon(self) -> None:
        """Trim the heap once the budget has stayed drained for ``TRIM_DELAY`` seconds.

        Called when a burst drained the budget and when a connection closed (its read
        buffers were freed). Each call restarts the delay, so under steady load (the budget
        draining between frames) the heap is not trimmed and re-faulted over and over.
        """
        loop = asyncio.get_running_loop()
        self._active_at = loop.time()
        if self._trim_handle is None:
            self._trim_handle = loop.call_later(TRIM_DELAY, self._trim_if_idle)

    def _wake(self, granted: list[Hashable]) -> None:
        for key in granted:
            assert isinstance(key, asyncio.Future)
            grant: asyncio.Future[None] = key
            if not grant.done():
                grant.set_result(None)
            else:  # cancelled while still queued: nobody will hold these bytes
                self._wake(self._bytes.release(self._waits[grant]))

    def _trim_if_idle(self) -> None:
        loop = asyncio.get_running_loop()
        quiet = loop.time() - self._active_at
        if quiet < TRIM_DELAY:  # active since: wait for the rest of the delay
            self._trim_handle = loop.call_later(TRIM_DELAY - quiet, self._trim_if_idle)
            return
        self._trim_handle = None
        if self._bytes.used <= DRAINED_BYTES:
            self._released = 0
            self._trim()


HEAP_MMAP_THRESHOLD = 32 << 20
"""Allocations below this come from glibc's heap (reused), larger ones are mmap'd."""
HEAP_TRIM_THRESHOLD = 128 << 20
"""Free bytes at the top of the heap before glibc gives them back on its own."""
_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def tune_heap() -> bool:
    """Fix glibc's heap thresholds for a server process; False where that is not possible.

    Called once by the SC and SPU at start. By default glibc raises its mmap threshold to
    the largest buffer freed and trims the heap top past twice that, so a frame body freed
    at the top of the heap is handed back to the system and the next one is page-faulted
    in again: about 256 faults per MiB received (measured: 480,000 faults and 1.5 CPU s
    per GiB of 1 MiB frames, against 6,000 and 0.84 s with fixed thresholds). With fixed
    thresholds, frame bodies up to 32 MiB reuse heap memory while the server is busy, and
    the budget's ``release_free_memory`` returns it once the server is idle.
    """
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD)
        and mallopt(_M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD)
    )


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    func = getattr(_libc(), "malloc_trim", None)
    if func is None:
        return None
    func.argtypes = [ctypes.c_size_t]
    func.restype = ctypes.c_int
    return func


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; False where that is not possible.

    glibc keeps freed memory in its arenas (and below a threshold that grows with the
    largest buffer freed, even 1 MiB buffers come from the heap), so after a burst of
    large frames RSS stays at its peak although Python freed every buffer.
    ``malloc_trim(0)`` gives the free pages back. Arrow's pool, which large frame bodies
    come from (``spark_stream.protocol.body_buffer``), keeps freed pages too: they go
    back first.
    """
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True

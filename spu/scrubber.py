"""The SPU's background scrub: re-read sealed segments, find bit rot, report it.

Theory of operation. ``Scrubber.run`` makes passes over every open replica log (leaders'
and followers'): for each sealed segment not verified in this pass (``plan_scrub``), a
worker thread reads its ``.log`` through a descriptor of its own, in chunks, each chunk
after the shared ``RateLimiter`` allows it (``scrub_mb_per_s``), and checks every frame
(``check_chunk``, ``finish``). The event loop plans, waits out the budget (a cancellable
sleep) and takes results; each chunk is read and checked in a thread, so neither the I/O
nor the crc work stalls produce, fetch or replication, and stopping the SPU waits for
one chunk at most. A segment deleted meanwhile
(retention, a repair) is simply skipped: the thread's descriptor keeps the old inode.

A damage is taken only if the segment is still in the log as it was read (same base and
size: a repair that cut it meanwhile is not damage), and then handed to ``on_damage`` once
per segment: the dispatcher marks the replica and repairs it (``spu.dispatcher``). After
a pass the scrubber sleeps ``pass_interval_s`` and starts over with nothing verified.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from spark_stream.errors import FluvioError
from spu.storage import ReplicaLog
from spu.storage.config import MIB
from spu.storage.scrub import (
    Damage,
    RateLimiter,
    SegmentKey,
    check_chunk,
    finish,
    plan_scrub,
)

__all__ = ["SegmentCheck", "Scrubber", "scrub_segment"]

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 * MIB


class SegmentCheck:
    """The check of one segment's log, one chunk per ``step`` (a blocking read: a thread's).

    The descriptor is its own, so the file may be deleted or replaced meanwhile: the check
    goes on over the bytes it opened. ``close`` it when done.

    Args:
        path: the segment's ``.log``.
        base_offset: its base offset.
        end_offset: where it must end (the next segment's base offset).
        chunk_bytes: bytes read per step.
    """

    def __init__(
        self, path: Path, base_offset: int, end_offset: int, chunk_bytes: int = CHUNK_BYTES
    ) -> None:
        self.base_offset, self.end_offset, self.chunk_bytes = base_offset, end_offset, chunk_bytes
        self.damage: Damage | None = None
        """The first damage, once a step found it."""
        self.done = False
        try:
            self._fd: int | None = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            self._fd, self.done = None, True  # deleted meanwhile: nothing to check
        # ``close`` may come from the loop while a cancelled step still reads in its
        # thread: the lock keeps the descriptor open until that step is over.
        self._lock = threading.Lock()
        self._pending = bytearray()
        self._read_at = 0
        self._expected = base_offset
        self._consumed_at = 0

    def step(self) -> bool:
        """Read and check the next chunk; True once the check is over (damage or end)."""
        with self._lock:
            return self._step()

    def _step(self) -> bool:
        if self.done or self._fd is None:
            return True
        chunk = os.pread(self._fd, self.chunk_bytes, self._read_at)
        self._read_at += len(chunk)
        self._pending += chunk
        result = check_chunk(self._pending, self._expected)
        if result.error is not None:
            position = self._consumed_at + result.consumed
            self._found(result.next_offset, position, result.error)
            return True
        self._expected = result.next_offset
        self._consumed_at += result.consumed
        del self._pending[: result.consumed]
        if chunk:
            return False
        reason = finish(len(self._pending), self._expected, self.end_offset)
        if reason is not None:
            self._found(self._expected, self._consumed_at, reason)
        self.done = True
        return True

    def close(self) -> None:
        """Release the descriptor (after a step running in another thread)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self.done = True

    def _found(self, offset: int, position: int, reason: str) -> None:
        self.damage = Damage(self.base_offset, offset, self.end_offset, position, reason)
        self.done = True


def scrub_segment(
    path: Path,
    base_offset: int,
    end_offset: int,
    limiter: RateLimiter,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Damage | None:
    """Check one sealed segment whole, blocking (tools and tests; the SPU uses ``Scrubber``).

    Returns:
        The first damage, or ``None`` when the segment checks (or is gone).
    """
    check = SegmentCheck(path, base_offset, end_offset, chunk_bytes)
    try:
        while not check.done:
            delay = limiter.reserve(chunk_bytes, clock())
            if delay > 0:
                sleep(delay)
            check.step()
        return check.damage
    finally:
        check.close()


class Scrubber:
    """Passes over the open logs' sealed segments at a bounded rate.

    Args:
        logs: the open logs by partition name, read at every step.
        on_damage: called on the event loop with the partition name, its log and the
            damage (once per damaged segment and pass).
        mb_per_s: the read budget in MiB per second, for all logs together.
        pass_interval_s: the pause between passes.
    """

    def __init__(
        self,
        logs: Callable[[], Mapping[str, ReplicaLog]],
        on_damage: Callable[[str, ReplicaLog, Damage], None],
        *,
        mb_per_s: float,
        pass_interval_s: float,
    ) -> None:
        self._logs = logs
        self._on_damage = on_damage
        self.limiter = RateLimiter(mb_per_s * MIB)
        self.pass_interval_s = pass_interval_s
        self.passes = 0
        self.segments_checked = 0
        self.damages_found = 0

    async def run(self) -> None:
        """Forever: a pass, then a pause."""
        while True:
            await self.scrub_pass()
            await asyncio.sleep(self.pass_interval_s)

    async def scrub_pass(self) -> None:
        """Check every sealed segment of every open log once; errors skip one log."""
        verified: dict[int, set[SegmentKey]] = {}
        for name, log in list(self._logs().items()):
            done = verified.setdefault(id(log), set())
            try:
                await self._scrub_log(name, log, done)
            except FluvioError as exc:
                logger.warning("scrub of partition=%s stopped: %s", name, exc)
            except Exception:
                logger.exception("scrub of partition=%s failed", name)
        self.passes += 1

    async def _scrub_log(self, name: str, log: ReplicaLog, done: set[SegmentKey]) -> None:
        while not log.closed:
            segments = log.segments
            todo = plan_scrub(segments, done)
            if not todo:
                return
            base = todo[0]
            i = next(k for k, s in enumerate(segments) if s.base_offset == base)
            info, end = segments[i], segments[i + 1].base_offset
            damage = await self._check(info.path, base, end)
            done.add((base, info.size))
            self.segments_checked += 1
            if damage is None or log.closed:
                continue
            if not any(s.base_offset == base and s.size == info.size for s in log.segments):
                continue  # cut or replaced while it was read: not damage
            logger.error(
                "scrub found damage partition=%s dir=%s %s", name, log.directory, damage.describe()
            )
            self.damages_found += 1
            self._on_damage(name, log, damage)

    async def _check(self, path: Path, base: int, end: int) -> Damage | None:
        """Check one segment: waits on the loop (cancellable), reads and checks in a thread."""
        check = SegmentCheck(path, base, end)
        try:
            while not check.done:
                delay = self.limiter.reserve(check.chunk_bytes, time.monotonic())
                if delay > 0:
                    await asyncio.sleep(delay)
                await asyncio.to_thread(check.step)
            return check.damage
        finally:
            check.close()

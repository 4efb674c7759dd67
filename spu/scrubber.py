"""The SPU's background scrub: re-read sealed segments, find bit rot, report it.

Theory of operation. ``Scrubber.run`` makes passes over every open replica log (leaders'
and followers'): for each sealed segment not verified in this pass (``plan_scrub``), a
worker thread reads its ``.log`` through a descriptor of its own, in chunks, each chunk
after the shared ``RateLimiter`` allows it (``scrub_mb_per_s``), and checks every frame
(``check_chunk``, ``finish``). The event loop only plans and takes results, so neither the
I/O nor the crc work stalls produce, fetch or replication. A segment deleted meanwhile
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

__all__ = ["Scrubber", "scrub_segment"]

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 * MIB


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
    """Read one sealed segment log and check every frame (blocking: run it in a thread).

    Args:
        path: the segment's ``.log``.
        base_offset: its base offset.
        end_offset: where it must end (the next segment's base offset).
        limiter: the I/O budget, shared by every scrub of the process.

    Returns:
        The first damage, or ``None`` when the segment checks (or is gone).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        pending = bytearray()
        read_at, expected, consumed_at = 0, base_offset, 0
        while True:
            delay = limiter.reserve(chunk_bytes, clock())
            if delay > 0:
                sleep(delay)
            chunk = os.pread(fd, chunk_bytes, read_at)
            read_at += len(chunk)
            pending += chunk
            result = check_chunk(pending, expected)
            if result.error is not None:
                position = consumed_at + result.consumed
                return Damage(base_offset, result.next_offset, end_offset, position, result.error)
            expected = result.next_offset
            consumed_at += result.consumed
            del pending[: result.consumed]
            if not chunk:
                break
        reason = finish(len(pending), expected, end_offset)
        if reason is None:
            return None
        return Damage(base_offset, expected, end_offset, consumed_at, reason)
    finally:
        os.close(fd)


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
        self.damages: list[tuple[str, Damage]] = []

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
            damage = await asyncio.to_thread(scrub_segment, info.path, base, end, self.limiter)
            done.add((base, info.size))
            self.segments_checked += 1
            if damage is None or log.closed:
                continue
            if not any(s.base_offset == base and s.size == info.size for s in log.segments):
                continue  # cut or replaced while it was read: not damage
            logger.error(
                "scrub found damage partition=%s dir=%s %s", name, log.directory, damage.describe()
            )
            self.damages.append((name, damage))
            self._on_damage(name, log, damage)

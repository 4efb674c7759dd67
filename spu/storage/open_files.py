"""The process-wide bound on open segment files: segments register, the idle ones close.

Every segment (``spu.storage.segment``) tells ``OPEN_FILES`` when it opens its files
(``opened``), when it uses them (``used``) and when it closes for good (``closed``). When
more than ``capacity`` segments are open, the least recently used ones (unused for at
least ``min_idle_s``) are asked to ``release`` their descriptors and maps; ``sweep``
releases every segment unused for ``idle_s`` (the SPU's housekeeping calls it once a
round), so an idle replica keeps no segment file open. A released segment opens its files
again on its next use. The decisions are ``IdleLru``'s (pure); this module holds the lock
and calls ``release`` outside it.

``release`` may be refused: a segment in use on another thread at that moment says so
(``False``) and is kept as just used.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from spu.storage.idle_lru import IdleLru

__all__ = ["OPEN_FILES", "OpenFiles", "Releasable"]

DEFAULT_CAPACITY = 1024
"""Segments open at once per process (each holds up to 6 descriptors: the log, two
indexes, and the memory map of each, which CPython's ``mmap`` keeps as a duplicate)."""
DEFAULT_IDLE_S = 10.0
DEFAULT_MIN_IDLE_S = 1.0


class Releasable(Protocol):
    """What the bound can close: a segment (hashed by identity)."""

    def __hash__(self) -> int: ...

    def release(self) -> bool:
        """Close the files (they reopen on next use); False when busy on another thread."""
        ...


class OpenFiles:
    """Tracks open segments and releases the least recently used or idle ones.

    Args:
        capacity, min_idle_s, idle_s: as ``IdleLru``.
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        min_idle_s: float = DEFAULT_MIN_IDLE_S,
        idle_s: float | None = DEFAULT_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lru: IdleLru[Releasable] = IdleLru(capacity, min_idle_s, idle_s)
        self._clock = clock
        self._lock = threading.Lock()
        self.released = 0
        """Segments released so far (a counter for tests and metrics)."""

    def __len__(self) -> int:
        return len(self._lru)

    def configure(
        self,
        capacity: int = DEFAULT_CAPACITY,
        min_idle_s: float = DEFAULT_MIN_IDLE_S,
        idle_s: float | None = DEFAULT_IDLE_S,
    ) -> None:
        """Change the bounds (checked as ``IdleLru``'s); the open segments stay tracked."""
        probe: IdleLru[Releasable] = IdleLru(capacity, min_idle_s, idle_s)
        with self._lock:
            self._lru.capacity = probe.capacity
            self._lru.min_idle_s = probe.min_idle_s
            self._lru.idle_s = probe.idle_s
        self._release(self._pop(excess=True))

    def opened(self, owner: Releasable) -> None:
        """``owner`` opened its files: track it, and release the excess over capacity."""
        with self._lock:
            self._lru.touch(owner, self._clock())
        self._release(self._pop(excess=True))

    def used(self, owner: Releasable) -> None:
        """``owner`` (open) is being used now."""
        with self._lock:
            self._lru.touch(owner, self._clock())

    def closed(self, owner: Releasable) -> None:
        """``owner`` closed its files for good (or released them itself)."""
        with self._lock:
            self._lru.forget(owner)

    def sweep(self) -> int:
        """Release the segments idle for ``idle_s`` or more; returns how many were."""
        return self._release(self._pop(excess=False))

    def _pop(self, *, excess: bool) -> list[Releasable]:
        with self._lock:
            now = self._clock()
            return self._lru.pop_excess(now) if excess else self._lru.pop_idle(now)

    def _release(self, owners: list[Releasable]) -> int:
        count = 0
        for owner in owners:
            if owner.release():
                count += 1
            else:  # busy on another thread: keep it, as used now
                self.used(owner)
        self.released += count
        return count


OPEN_FILES = OpenFiles()
"""The one bound of this process (the SPU configures it from its settings)."""

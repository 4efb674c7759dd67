"""Which open things to close: least recently used order with last-use times (pure).

An SPU can hold tens of thousands of replicas, and a segment with its files open costs
several descriptors (the log, its two indexes, their memory maps), so the storage engine
keeps only a bounded number of segments open and closes the ones nobody used lately
(``spu.storage.open_files`` does the I/O). This module only decides: it remembers when
each key was last used, in least-recently-used order, and names the keys to close:

* ``pop_excess``: the oldest keys beyond ``capacity``, but only those unused for at
  least ``min_idle_s`` (a key just used may be in use on another thread right now; a
  burst of more than ``capacity`` busy keys overshoots the bound for a moment instead);
* ``pop_idle``: every key unused for ``idle_s`` or more (an idle replica costs no
  descriptor of its segments).

Times are whatever monotonic clock the caller passes, in seconds. Not thread-safe: the
caller holds a lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["IdleLru"]

K = TypeVar("K", bound=Hashable)


class IdleLru(Generic[K]):
    """Keys in least-recently-used order, each with the time it was last used.

    Args:
        capacity: how many keys may stay open (``pop_excess`` closes the rest).
        min_idle_s: a key used more recently than this is never popped.
        idle_s: ``pop_idle`` pops keys unused for this long; ``None``: never.

    Raises:
        ValueError: a negative or zero bound.
    """

    def __init__(self, capacity: int, min_idle_s: float = 1.0, idle_s: float | None = 10.0):
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        if min_idle_s < 0:
            raise ValueError(f"min_idle_s must not be negative, not {min_idle_s}")
        if idle_s is not None and idle_s < min_idle_s:
            raise ValueError(f"idle_s ({idle_s}) must not be below min_idle_s ({min_idle_s})")
        self.capacity = capacity
        self.min_idle_s = min_idle_s
        self.idle_s = idle_s
        self._used: OrderedDict[K, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._used)

    def __contains__(self, key: object) -> bool:
        return key in self._used

    def touch(self, key: K, now: float) -> None:
        """Record that ``key`` is open and was used at ``now`` (the newest)."""
        self._used[key] = now
        self._used.move_to_end(key)

    def forget(self, key: K) -> None:
        """Drop ``key`` (it was closed for good); unknown keys are ignored."""
        self._used.pop(key, None)

    def pop_excess(self, now: float) -> list[K]:
        """Remove and return the oldest keys beyond ``capacity`` idle ``>= min_idle_s``."""
        popped: list[K] = []
        while len(self._used) > self.capacity:
            key, used = next(iter(self._used.items()))
            if now - used < self.min_idle_s:
                break  # the rest are newer still
            del self._used[key]
            popped.append(key)
        return popped

    def pop_idle(self, now: float) -> list[K]:
        """Remove and return every key unused for ``idle_s`` or more, oldest first."""
        popped: list[K] = []
        if self.idle_s is None:
            return popped
        while self._used:
            key, used = next(iter(self._used.items()))
            if now - used < self.idle_s:
                break
            del self._used[key]
            popped.append(key)
        return popped

"""The SC's garbage-collection policy: what survived a full collection leaves the collector.

CPython's full collection scans every tracked object. The SC's heap grows with its
client connections (about 100 objects each), so with 1,000 group members a full
collection paused the event loop 25-45 ms, and while members joined one ran every 1-2 s
(each time the heap had grown by a quarter), putting heartbeat replies behind it
(``bench/groups.py``). Objects that survive a full collection are mostly long-lived
(connections, member state): freezing them after each full collection makes the next one
scan only what is newer, so collections stay proportional to recent allocation, not to
the heap.

Frozen objects are still freed by reference counting; only a cycle among them would
outlive its last reference. So every ``thaw_s`` seconds the frozen set goes back to the
collector, whose next full collection examines it (one pause of the old length per
period) before it is frozen again.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["FreezeSurvivors", "THAW_S"]

THAW_S = 300.0
"""Seconds between returns of the frozen objects to the collector (cycles among them
are freed at most this much later than without the policy)."""


class FreezeSurvivors:
    """A ``gc.callbacks`` hook: freeze after each full collection, thaw every ``thaw_s``."""

    def __init__(self, thaw_s: float = THAW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.thaw_s = thaw_s
        self.clock = clock
        self._thaw_at = clock() + thaw_s
        self.freezes = 0
        self.thaws = 0

    def install(self) -> None:
        """Freeze what is alive now and start the policy."""
        gc.freeze()
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def uninstall(self) -> None:
        """Stop the policy and return every frozen object to the collector."""
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        gc.unfreeze()

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 2:
            return
        now = self.clock()
        if now >= self._thaw_at:
            # the next full collection examines the old survivors too, then they freeze
            gc.unfreeze()
            self._thaw_at = now + self.thaw_s
            self.thaws += 1
        else:
            gc.freeze()
            self.freezes += 1

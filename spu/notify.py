"""Wake-ups on one event loop: change subscribers and offset waiters.

``Subscribers`` wakes tasks that wait for "something changed" (new frames, a moved high
watermark, a lost leadership). A task subscribes an ``asyncio.Event``, clears it, checks
its condition, and waits on it only when there was nothing to do: a change between the
check and the wait has already set the event, so no wake-up is lost.

``OffsetWaiters`` holds futures that complete once an offset (the high watermark) passes
a target: ``acks=all`` produce requests. A heap keeps resolution proportional to the
waiters that complete, not to all of them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

from spark_stream.errors import FluvioError

__all__ = ["Subscribers", "OffsetWaiters"]


class Subscribers:
    """Events to set whenever the owner changes."""

    def __init__(self) -> None:
        self._events: set[asyncio.Event] = set()

    def __len__(self) -> int:
        return len(self._events)

    def add(self, event: asyncio.Event) -> None:
        """Set ``event`` on every later change."""
        self._events.add(event)

    def discard(self, event: asyncio.Event) -> None:
        """Stop setting ``event``."""
        self._events.discard(event)

    def notify(self) -> None:
        """Set every subscribed event."""
        for event in self._events:
            event.set()


class OffsetWaiters:
    """Futures completed once an offset reaches their target."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def wait_for(self, target: int) -> asyncio.Future[None]:
        """A future completed by ``advance(offset)`` with ``offset >= target``."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (target, next(self._order), future))
        return future

    def advance(self, offset: int, check: Callable[[], FluvioError | None] | None = None) -> int:
        """Complete the waiters whose target is at or below ``offset``.

        Args:
            offset: the offset reached.
            check: called once if any waiter completes; an error it returns fails them
                instead (e.g. too few in-sync replicas when the offset moved).

        Returns:
            How many waiters completed.
        """
        done = 0
        error: FluvioError | None = None
        checked = False
        while self._heap and self._heap[0][0] <= offset:
            _, _, future = heapq.heappop(self._heap)
            if future.done():
                continue
            if not checked and check is not None:
                error, checked = check(), True
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(type(error)(str(error)))
            done += 1
        return done

    def fail_all(self, error: FluvioError) -> None:
        """Fail every waiter with a copy of ``error``."""
        heap, self._heap = self._heap, []
        for _, _, future in heap:
            if not future.done():
                future.set_exception(type(error)(str(error)))

"""One timer for every partition leader of a period: a thousand leaders, one wake-up.

Each leader re-evaluates its in-sync set on a timer (``LeaderController``), so that a
follower that went silent is evicted even when nothing else happens. A timer task per
leader costs an event-loop wake-up per leader per period, which is most of what an idle
SPU with a thousand partitions spends. Leaders of one period on one event loop share a
``Ticker`` instead (``shared_ticker``): one task sleeps the period and calls every
member's callback in turn. A callback that raises is logged and keeps its place (a bug
must not silently end lag checks); the task ends when the last member leaves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

__all__ = ["Ticker", "shared_ticker"]

logger = logging.getLogger(__name__)

_TICKERS: dict[tuple[asyncio.AbstractEventLoop, float], Ticker] = {}


class Ticker:
    """Calls every member's callback once per ``interval_s`` on the running loop.

    Args:
        interval_s: the period.
        on_empty: called when the last member left (``shared_ticker`` forgets it).
    """

    def __init__(self, interval_s: float, on_empty: Callable[[], None] | None = None) -> None:
        self.interval_s = interval_s
        self._members: dict[Hashable, Callable[[], None]] = {}
        self._task: asyncio.Task[None] | None = None
        self._on_empty = on_empty

    def __len__(self) -> int:
        return len(self._members)

    def add(self, key: Hashable, callback: Callable[[], None]) -> None:
        """Call ``callback`` every period from the next tick on (starts the timer)."""
        self._members[key] = callback
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"ticker-{self.interval_s}s"
            )

    def discard(self, key: Hashable) -> None:
        """Stop calling ``key``'s callback (no effect when it is not a member)."""
        self._members.pop(key, None)
        if not self._members:
            self._stop()

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._on_empty is not None:
            self._on_empty()

    async def _run(self) -> None:
        while self._members:
            await asyncio.sleep(self.interval_s)
            for key, callback in list(self._members.items()):
                if key not in self._members:
                    continue  # left during this tick
                try:
                    callback()
                except Exception:
                    logger.exception("tick failed member=%s", key)


def shared_ticker(interval_s: float) -> Ticker:
    """The ``Ticker`` of ``interval_s`` on the running event loop (made on first use)."""
    loop = asyncio.get_running_loop()
    key = (loop, interval_s)
    ticker = _TICKERS.get(key)
    if ticker is None:

        def forget() -> None:
            _TICKERS.pop(key, None)

        ticker = _TICKERS[key] = Ticker(interval_s, on_empty=forget)
    return ticker

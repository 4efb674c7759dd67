"""How long a KV call may keep retrying: the store's reconnect timeout, or less for a caller
who is waiting.

The SC's own loops (the watcher, the controllers' updaters) ride out a Redis restart by
retrying for the store's ``reconnect_timeout`` (30 s). An admin request has a client
waiting on it, and a client learns more from a quick typed, retriable
``KvUnavailableError`` than from a call that blocks until its own request timeout. So the
public API runs each admin handler inside ``retry_budget(seconds)``: every KV call made in
that task (and the tasks it starts) gives up once the budget is spent, including a call
to a Redis that accepts connections but never answers (a stopped process).

The budget travels in a ``ContextVar``, so the ``KvStore`` interface does not change and
stores that cannot block (``MemoryKvStore``) ignore it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["retry_budget", "budget_deadline", "call_deadline"]

_DEADLINE: ContextVar[float | None] = ContextVar("kv_retry_deadline", default=None)


@contextlib.contextmanager
def retry_budget(seconds: float) -> Iterator[None]:
    """KV calls made inside give up after ``seconds`` (loop time) in all; nests to the
    earlier deadline.

    Raises:
        ValueError: ``seconds`` is not positive.
    """
    if seconds <= 0:
        raise ValueError(f"retry budget must be > 0, got {seconds}")
    deadline = asyncio.get_running_loop().time() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def budget_deadline() -> float | None:
    """The loop time at which the current budget ends (None: no budget)."""
    return _DEADLINE.get()


def call_deadline(now: float, reconnect_timeout: float, budget: float | None) -> float:
    """When a KV call starting at ``now`` stops retrying: the store's reconnect timeout,
    cut short by the caller's budget."""
    own = now + reconnect_timeout
    return own if budget is None else min(own, budget)

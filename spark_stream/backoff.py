"""Exponential backoff: one policy for every retry and reconnect loop.

A ``BackoffPolicy`` is data (first delay, ceiling, factor); ``Backoff`` is one loop's
state under it: ``next()`` gives the delay to wait now and doubles the following one,
``reset()`` starts again after a success, and ``sleep(wake=event)`` waits that delay but
returns early when ``event`` is set, so a reconnect loop acts at once on a change (a new
endpoint, new work) instead of finishing a stale wait. ``sleep_or_wake`` is that wait
for a fixed pause.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

__all__ = ["BackoffPolicy", "Backoff", "sleep_or_wake"]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Delays ``initial * factor**attempt``, capped at ``maximum`` (seconds)."""

    initial: float = 0.05
    maximum: float = 2.0
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"backoff needs 0 < initial <= maximum, got {self}")
        if self.factor < 1:
            raise ValueError(f"backoff factor must be >= 1, got {self.factor}")

    def delay(self, attempt: int) -> float:
        """The delay before retry number ``attempt`` (0 for the first retry)."""
        return min(self.initial * self.factor ** min(attempt, 64), self.maximum)

    def start(self) -> Backoff:
        """A fresh backoff state under this policy."""
        return Backoff(self)


class Backoff:
    """One loop's position in its ``BackoffPolicy``."""

    __slots__ = ("policy", "attempt")

    def __init__(self, policy: BackoffPolicy) -> None:
        self.policy = policy
        self.attempt = 0

    def next(self) -> float:
        """The delay to wait now; the one after is longer (up to the ceiling)."""
        delay = self.policy.delay(self.attempt)
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """Start from the first delay again (the last attempt succeeded)."""
        self.attempt = 0

    async def sleep(self, wake: asyncio.Event | None = None) -> bool:
        """Wait ``next()`` seconds, or less if ``wake`` is set meanwhile.

        Returns:
            True when ``wake`` ended the wait early (the event is left set).
        """
        return await sleep_or_wake(self.next(), wake)


async def sleep_or_wake(seconds: float, wake: asyncio.Event | None = None) -> bool:
    """Wait ``seconds``, or less if ``wake`` is set meanwhile.

    Returns:
        True when ``wake`` ended the wait early (the event is left set).
    """
    if wake is None:
        await asyncio.sleep(seconds)  # a pause between attempts
        return False
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await wake.wait()
            return True
    return False

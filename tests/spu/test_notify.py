"""Wake-ups: subscribers and offset waiters."""

from __future__ import annotations

import asyncio

import pytest

from spark_stream.errors import NotEnoughReplicasError, NotLeaderError
from spu.notify import OffsetWaiters, Subscribers


def test_subscribers_set_every_event_until_discarded() -> None:
    async def body() -> None:
        subs = Subscribers()
        a, b = asyncio.Event(), asyncio.Event()
        subs.add(a)
        subs.add(b)
        subs.notify()
        assert a.is_set() and b.is_set()
        a.clear()
        b.clear()
        subs.discard(a)
        subs.notify()
        assert not a.is_set() and b.is_set()

    asyncio.run(body())


def test_offset_waiters_complete_in_target_order_and_fail() -> None:
    async def body() -> None:
        waiters = OffsetWaiters()
        low, high, never = waiters.wait_for(3), waiters.wait_for(10), waiters.wait_for(99)
        assert waiters.advance(5) == 1
        assert low.done() and not high.done()
        assert waiters.advance(12, lambda: NotEnoughReplicasError("too few")) == 1
        with pytest.raises(NotEnoughReplicasError, match="too few"):
            high.result()
        waiters.fail_all(NotLeaderError("gone"))
        with pytest.raises(NotLeaderError):
            never.result()
        assert len(waiters) == 0

    asyncio.run(body())


def test_cancelled_waiter_is_skipped() -> None:
    async def body() -> None:
        waiters = OffsetWaiters()
        gone = waiters.wait_for(1)
        gone.cancel()
        kept = waiters.wait_for(1)
        assert waiters.advance(1) == 1
        assert kept.done() and kept.exception() is None

    asyncio.run(body())

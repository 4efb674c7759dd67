"""The shared timer of partition leaders: one task, every member called each period."""

from __future__ import annotations

import asyncio
import logging

import pytest

from spu.ticker import Ticker, shared_ticker
from tests.spu.helpers import run


def test_members_are_called_every_period_until_they_leave(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body() -> None:
        calls: list[str] = []
        ticker = Ticker(0.02)

        def broken() -> None:
            calls.append("broken")
            raise RuntimeError("a bug")

        ticker.add("a", lambda: calls.append("a"))
        ticker.add("broken", broken)
        await asyncio.sleep(0.07)
        assert calls.count("a") >= 2 and calls.count("broken") == calls.count("a")
        ticker.discard("a")
        seen = calls.count("a")
        await asyncio.sleep(0.05)
        assert calls.count("a") == seen  # left: not called again
        assert calls.count("broken") > seen  # a failing member keeps its place
        ticker.discard("broken")
        ticker.discard("never")  # not a member: nothing happens
        assert len(ticker) == 0

    with caplog.at_level(logging.ERROR, logger="spu.ticker"):
        run(body)
    assert "tick failed member=broken" in caplog.text


def test_leaders_of_one_period_share_one_ticker_per_loop() -> None:
    async def body() -> tuple[Ticker, Ticker]:
        first = shared_ticker(0.5)
        assert shared_ticker(0.5) is first and shared_ticker(0.25) is not first
        first.add(1, lambda: None)
        first.discard(1)  # the last member left: the ticker is forgotten
        second = shared_ticker(0.5)
        assert second is not first
        return first, second

    first, _ = run(body)
    assert first is not run(lambda: _same(0.5))  # another loop: another ticker


async def _same(interval: float) -> Ticker:
    return shared_ticker(interval)

"""Polling a condition with a deadline: the one way tests wait for other tasks or processes."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["run_bounded", "until", "wait_until"]


def wait_until(
    check: Callable[[], object], timeout: float = 30.0, what: str = "condition"
) -> object:
    """Poll ``check()`` until it returns something truthy (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)  # polling interval, bounded by the deadline


async def until(
    cond: Callable[[], object | Awaitable[object]],
    within: float = 10.0,
    what: str = "condition",
) -> object:
    """Poll ``cond`` (sync or async) until it is truthy (returned); fail after ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = cond()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"{what} not met within {within}s")
        await asyncio.sleep(0.005)  # polling interval, bounded by the deadline


def run_bounded(coro: Awaitable[Any], timeout: float = 30.0) -> Any:
    """Run ``coro`` on a new event loop; fail with ``TimeoutError`` after ``timeout`` s."""

    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await coro

    return asyncio.run(bounded())

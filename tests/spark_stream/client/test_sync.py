"""The blocking face's loop thread: closing it never leaves a caller waiting."""

from __future__ import annotations

import asyncio
import threading

import pytest

from spark_stream.client.sync import LoopThread
from spark_stream.errors import ClientClosedError


def test_stop_releases_a_thread_blocked_on_the_loop() -> None:
    runner = LoopThread("test-loop")
    started = threading.Event()
    outcome: list[BaseException] = []

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    def blocked_caller() -> None:
        try:
            runner.run(forever())
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    caller = threading.Thread(target=blocked_caller, daemon=True)
    caller.start()
    assert started.wait(10)
    runner.stop()
    caller.join(10)
    assert not caller.is_alive(), "a caller blocked in run() outlived the loop"
    assert len(outcome) == 1 and isinstance(outcome[0], ClientClosedError)


def test_run_after_stop_is_a_typed_error() -> None:
    runner = LoopThread("test-loop")
    runner.stop()

    async def nothing() -> int:
        return 1

    with pytest.raises(ClientClosedError):
        runner.run(nothing())

"""The blocking mechanism: the loop thread, and facade methods derived from async ones."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from spark_stream.client._blocking import (
    Facade,
    LoopThread,
    SyncStream,
    blocking,
    blocking_facade,
    blocking_stream,
    blocking_stream_via,
    same_signature,
)
from spark_stream.errors import ClientClosedError, UnknownTopicError


class Core:
    """An asyncio object as the client has them: coroutines and async generators."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.closed_streams = 0
        self.batches_read = 0

    async def add(self, a: int, b: int = 1, *, scale: int = 1) -> int:
        """Add, then scale."""
        self.threads.append(threading.current_thread().name)
        return (a + b) * scale

    async def fail(self, topic: str) -> None:
        """Always fails, typed."""
        raise UnknownTopicError(f"topic {topic!r} not found")

    async def child(self, name: str) -> Core:
        """Another core on the same loop."""
        return Core()

    async def items(self, count: int, *, start: int = 0) -> AsyncIterator[int]:
        """``count`` integers from ``start``."""
        try:
            for batch in self.batches(count, start=start):
                for item in batch:
                    yield item
        finally:
            self.closed_streams += 1

    async def item_batches(self, count: int, *, start: int = 0) -> AsyncIterator[list[int]]:
        """The same integers, two by two."""
        try:
            for batch in self.batches(count, start=start):
                self.batches_read += 1
                yield batch
        finally:
            self.closed_streams += 1

    def batches(self, count: int, *, start: int = 0) -> list[list[int]]:
        values = list(range(start, start + count))
        return [values[i : i + 2] for i in range(0, count, 2)]

    async def put(self, value: int, *, twice: bool = False) -> list[int]:
        """Put a value once or twice."""
        return self.put_now(value, twice=twice)

    def put_now(self, value: int, *, twice: bool = False) -> list[int]:
        self.threads.append(threading.current_thread().name)
        return [value, value] if twice else [value]


class Child(Facade[Core]):
    """A facade handed out by another."""

    add = blocking(Core.add)


class Face(Facade[Core]):
    """A facade with one method of each kind."""

    add = blocking(Core.add)
    fail = blocking(Core.fail)
    child = blocking_facade(Core.child, Child)
    items = blocking_stream(Core.items)
    items_batched = blocking_stream_via(Core.items, Core.item_batches, list)

    @same_signature(Core.put)
    def put(self, *args: Any, **kwargs: Any) -> list[int]:
        # The same arguments, handled in the calling thread rather than on the loop.
        return self._core.put_now(*args, **kwargs)


@pytest.fixture
def runner() -> Iterator[LoopThread]:
    loop_thread = LoopThread("test-loop")
    try:
        yield loop_thread
    finally:
        loop_thread.stop()


def test_blocking_runs_the_coroutine_on_the_loop_thread(runner: LoopThread) -> None:
    core = Core()
    face = Face(core, runner)
    assert face.add(2, scale=3) == 9
    assert face.add(a=2, b=2) == 4
    assert core.threads == ["test-loop", "test-loop"]
    with pytest.raises(UnknownTopicError, match="'t'"):
        face.fail("t")
    with pytest.raises(TypeError):
        face.add(1, 2, 3)  # type: ignore[call-arg]  # scale is keyword-only, as in Core.add


def test_blocking_facade_wraps_the_result_on_the_same_loop(runner: LoopThread) -> None:
    child = Face(Core(), runner).child("c")
    assert isinstance(child, Child)
    assert child._runner is runner
    assert child.add(1) == 2


def test_streams_yield_in_order_and_close_their_source(runner: LoopThread) -> None:
    core = Core()
    face = Face(core, runner)
    assert list(face.items(5, start=10)) == [10, 11, 12, 13, 14]
    with face.items_batched(5) as stream:
        assert isinstance(stream, SyncStream)
        assert next(stream) == 0
    assert core.batches_read == 1  # one crossing of the thread for the first two items
    assert core.closed_streams == 2  # the second stream was closed early, by ``with``
    assert list(face.items_batched(5, start=1)) == [1, 2, 3, 4, 5]
    assert core.batches_read == 4


def test_derived_methods_say_the_async_signature_and_docstring() -> None:
    assert Face.add.__doc__ == Core.add.__doc__
    assert inspect.unwrap(Face.add) is Core.add
    assert Face.items_batched.__doc__ == Core.items.__doc__
    assert Face.put.__doc__ == Core.put.__doc__
    assert inspect.signature(Face.add) == inspect.signature(Core.add)
    assert inspect.signature(Face.put) == inspect.signature(Core.put)
    items = inspect.signature(Face.items)
    assert items.parameters == inspect.signature(Core.items).parameters
    assert items.return_annotation == "SyncStream"
    assert inspect.signature(Face.child).return_annotation == "Child"
    assert Face.add.__qualname__ == "Face.add"
    assert Child.add.__qualname__ == "Child.add"


def test_same_signature_keeps_the_body_in_the_calling_thread(runner: LoopThread) -> None:
    core = Core()
    assert Face(core, runner).put(7, twice=True) == [7, 7]
    assert core.threads == [threading.current_thread().name]


def test_calls_after_close_are_typed(runner: LoopThread) -> None:
    face = Face(Core(), runner)
    runner.stop()
    with pytest.raises(ClientClosedError):
        face.add(1)


def test_a_blocking_call_on_the_loop_thread_refuses_instead_of_deadlocking(
    runner: LoopThread,
) -> None:
    face = Face(Core(), runner)

    async def call_from_the_loop() -> int:
        return face.add(1)

    with pytest.raises(RuntimeError, match="own loop thread"):
        runner.run(call_from_the_loop())


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

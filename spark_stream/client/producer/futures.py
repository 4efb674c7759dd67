"""Delivery futures: what ``send`` and ``send_batch`` return, usable from threads and asyncio.

A produced batch completes one ``concurrent.futures.Future`` (thread-safe, completed by
the sender on the event loop thread). A record's ``DeliveryFuture`` is a view on its
batch's future plus its row index, so ``send`` allocates no future per record. Both
kinds can be waited on with ``result(timeout)`` from any thread, or awaited in a
coroutine (``await producer.send(...)`` then ``await future``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Generator, Sequence
from typing import Any

from spark_stream.client.types import BatchMetadata, RecordMetadata
from spark_stream.errors import FluvioError, RequestTimeoutError

__all__ = ["DeliveryFuture", "BatchFuture", "BatchResult"]

BatchResult = concurrent.futures.Future  # of BatchMetadata


def _result(future: concurrent.futures.Future[Any], timeout: float | None) -> Any:
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        raise RequestTimeoutError(f"delivery not confirmed within {timeout}s") from None


class DeliveryFuture:
    """The outcome of one ``send``: a ``RecordMetadata`` or the typed error.

    Args:
        batch: the future of the batch the record travels in.
        index: the record's row in that batch.
    """

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: concurrent.futures.Future[BatchMetadata], index: int) -> None:
        self._batch = batch
        self._index = index

    def done(self) -> bool:
        """True once delivered or failed."""
        return self._batch.done()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Wait for delivery.

        Raises:
            FluvioError: the typed error that failed the batch.
            RequestTimeoutError: not settled within ``timeout`` seconds.
        """
        return self._metadata(_result(self._batch, timeout))

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The error that failed delivery, or None once delivered."""
        try:
            self.result(timeout)
        except FluvioError as exc:
            if isinstance(exc, RequestTimeoutError) and not self._batch.done():
                raise
            return exc
        return None

    def add_done_callback(self, fn: Callable[[DeliveryFuture], object]) -> None:
        """Call ``fn(self)`` when settled (on the sender's thread, or now if done)."""
        self._batch.add_done_callback(lambda _: fn(self))

    def _metadata(self, batch: BatchMetadata) -> RecordMetadata:
        offset = batch.base_offset + self._index if batch.base_offset >= 0 else -1
        return RecordMetadata(batch.topic, batch.partition, offset)

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        batch = yield from asyncio.wrap_future(self._batch).__await__()
        return self._metadata(batch)


class BatchFuture:
    """The outcome of one ``send_batch``: where each partition's run of records landed.

    Args:
        parts: one future per produced batch (several per partition when split by size).
    """

    __slots__ = ("_parts",)

    def __init__(self, parts: Sequence[concurrent.futures.Future[BatchMetadata]]) -> None:
        self._parts = list(parts)

    def done(self) -> bool:
        """True once every part settled."""
        return all(part.done() for part in self._parts)

    def result(self, timeout: float | None = None) -> list[BatchMetadata]:
        """Wait for every part; the first failure raises.

        Raises:
            FluvioError: the typed error that failed a part.
            RequestTimeoutError: not settled within ``timeout`` seconds.
        """
        done, pending = concurrent.futures.wait(self._parts, timeout)
        if pending:
            raise RequestTimeoutError(f"{len(pending)} batch(es) not confirmed within {timeout}s")
        return [part.result() for part in self._parts]

    @property
    def count(self) -> int:
        """Number of produced batches (frames) behind this future."""
        return len(self._parts)

    def __await__(self) -> Generator[Any, None, list[BatchMetadata]]:
        results = yield from asyncio.gather(
            *(asyncio.wrap_future(part) for part in self._parts)
        ).__await__()
        return list(results)

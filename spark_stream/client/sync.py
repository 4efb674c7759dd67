"""``Fluvio``: the blocking face of ``FluvioAsync``, for threads, the CLI and Spark.

Theory of operation. Each ``Fluvio`` owns one daemon thread running an event loop, and
the ``FluvioAsync`` core lives on it. A blocking call submits a coroutine to that loop
and waits for its result; iterators cross the thread once per Arrow batch (records of a
batch are then handed out locally). The producer's accumulator is thread-safe, so
``send`` never crosses to the loop thread at all: it appends under a lock and wakes the
sender only when a batch fills or a linger timer must start; ``send_batch`` routes and
encodes in the calling thread. ``close`` stops producers and consumers, closes every
socket, then stops and joins the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Generic, TypeVar

import pyarrow as pa

from spark_stream.client.consumer.consumer import (
    AsyncConsumer,
    AsyncPartitionConsumer,
    batch_records,
)
from spark_stream.client.consumer.offset import Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.client.producer.futures import BatchFuture, DeliveryFuture
from spark_stream.client.producer.producer import AsyncTopicProducer
from spark_stream.client.types import PartitionInfo, PartitionOffsets
from spark_stream.errors import ClientClosedError, FluvioError, RequestTimeoutError
from spark_stream.protocol.data import DEFAULT_FETCH_MAX_BYTES, Isolation

__all__ = [
    "Fluvio",
    "TopicProducer",
    "PartitionConsumer",
    "Consumer",
    "SyncStream",
    "SyncAdmin",
    "LoopThread",
]

T = TypeVar("T")


class LoopThread:
    """An event loop on a daemon thread, and a way to run coroutines on it and wait."""

    def __init__(self, name: str = "fluvio-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._stopping = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception, typed).

        Raises:
            RuntimeError: called from the loop thread itself (it would deadlock).
            RequestTimeoutError: not done within ``timeout`` (the coroutine is cancelled).
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("blocking Fluvio call made on the client's own loop thread")
        if not self._thread.is_alive() or self.loop.is_closed():
            coro.close()
            raise ClientClosedError("the client is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RequestTimeoutError(f"operation not done within {timeout}s") from None
        except concurrent.futures.CancelledError:
            if self._stopping:
                raise ClientClosedError("the client was closed during the call") from None
            raise

    @property
    def alive(self) -> bool:
        """True while the loop thread runs."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop the loop, join the thread and close the loop. Idempotent.

        Work still running on the loop is cancelled first, so a thread blocked in ``run``
        (a consumer iterating a stream, say) gets ``ClientClosedError`` instead of
        waiting forever on a loop that no longer runs.
        """
        self._stopping = True
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(5)
            with contextlib.suppress(Exception):
                shutdown = self.loop.shutdown_asyncgens()
                asyncio.run_coroutine_threadsafe(shutdown, self.loop).result(5)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        if not self.loop.is_closed():
            self.loop.close()


async def _cancel_all() -> None:
    """Cancel every other task on the running loop and wait for them to finish."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class SyncStream(Iterator[T], Generic[T]):
    """A blocking iterator over an async iterator living on a ``LoopThread``.

    Args:
        runner: the loop thread.
        source: the async iterator (an async generator, closed by ``close``).
        explode: turns each item into several (Arrow batch -> records), done here.
    """

    def __init__(
        self,
        runner: LoopThread,
        source: AsyncIterator[Any],
        explode: Callable[[Any], list[T]] | None = None,
    ) -> None:
        self._runner = runner
        self._source = source
        self._explode = explode
        self._buffer: deque[T] = deque()
        self._done = False

    def __next__(self) -> T:
        while not self._buffer:
            if self._done:
                raise StopIteration
            try:
                item = self._runner.run(_anext(self._source))
            except StopAsyncIteration:
                self._done = True
                raise StopIteration from None
            except BaseException:
                self.close()
                raise
            if self._explode is None:
                return item  # type: ignore[no-any-return]
            self._buffer.extend(self._explode(item))
        return self._buffer.popleft()

    def close(self) -> None:
        """Stop the stream (cancels it on the leader). Idempotent."""
        self._buffer.clear()
        if self._done:
            return
        self._done = True
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None and self._runner.alive:
            with contextlib.suppress(FluvioError, RuntimeError):
                self._runner.run(aclose(), timeout=10.0)

    def __enter__(self) -> SyncStream[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def _anext(source: AsyncIterator[T]) -> T:
    return await source.__anext__()


class SyncAdmin:
    """Blocking face of ``spark_stream.client.admin.AdminClient``: same methods, same arguments.

    Coroutine methods run on the client's loop; ``watch_metadata`` is a blocking iterator.
    """

    def __init__(self, runner: LoopThread, admin: Any) -> None:
        self._runner = runner
        self._admin = admin

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._admin, name)
        if inspect.isasyncgenfunction(attr):
            return lambda *a, **k: SyncStream(self._runner, attr(*a, **k))
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **k: self._runner.run(attr(*a, **k))
        return attr

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._admin)) | set(super().__dir__()))


class TopicProducer:
    """Blocking face of ``AsyncTopicProducer`` (see it for the arguments)."""

    def __init__(self, core: AsyncTopicProducer, runner: LoopThread) -> None:
        self._core = core
        self._runner = runner
        self.topic = core.topic
        self.config = core.config
        self.producer_id = core.producer_id

    def _wait_space(self) -> None:
        acc = self._core.accumulator
        if not acc.has_space() and not acc.wait_for_space(self.config.delivery_timeout_ms / 1000.0):
            raise RequestTimeoutError(
                f"producer buffer ({self.config.buffer_memory} bytes) still full after "
                f"{self.config.delivery_timeout_ms / 1000.0}s"
            )

    def send(
        self,
        key: bytes | str | None,
        value: bytes | str,
        *,
        timestamp_us: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        partition: int | None = None,
    ) -> DeliveryFuture:
        """Queue one record; returns its delivery future (``.result()`` waits)."""
        self._wait_space()
        return self._core.append_record(key, value, timestamp_us, headers, partition)

    def send_batch(
        self,
        data: pa.Table | pa.RecordBatch,
        *,
        key_column: str | None = "key",
        value_column: str = "value",
        timestamp_column: str | None = "timestamp",
        headers_column: str | None = "headers",
        partition: int | None = None,
        partition_column: str | None = None,
    ) -> BatchFuture:
        """Queue a whole Arrow table or batch (vectorised partitioning and encoding)."""
        self._wait_space()
        planned = self._core.plan_batch(
            data,
            key_column=key_column,
            value_column=value_column,
            timestamp_column=timestamp_column,
            headers_column=headers_column,
            partition=partition,
            partition_column=partition_column,
        )
        for frame in planned:
            self._core.encode_planned(frame)
        return BatchFuture([f.batch.future for f in planned])

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait for it (raises the first delivery error).

        Raises:
            FluvioError: the first delivery error among the batches flushed.
            RequestTimeoutError: not settled within ``timeout``.
        """
        futures = self._core.begin_flush()
        done, pending = concurrent.futures.wait(futures, timeout)
        if pending:
            raise RequestTimeoutError(f"{len(pending)} batch(es) not delivered within {timeout}s")
        for future in futures:
            exc = future.exception()
            if exc is not None:
                raise exc

    def close(self, timeout: float | None = None) -> None:
        """Flush and stop. Idempotent."""
        if self._runner.alive:
            self._runner.run(self._core.close(), timeout)

    def __enter__(self) -> TopicProducer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PartitionConsumer:
    """Blocking face of ``AsyncPartitionConsumer``."""

    def __init__(self, core: AsyncPartitionConsumer, runner: LoopThread) -> None:
        self._core = core
        self._runner = runner
        self.topic = core.topic
        self.partition = core.partition

    def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream[Any]:
        """A blocking iterator of ``Record`` from ``offset``."""
        source = self._core.stream_batches(
            offset, isolation=isolation, end_offset=end_offset, stop_at_end=stop_at_end
        )
        return SyncStream(self._runner, source, batch_records)

    def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        end_offset: int | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream[pa.RecordBatch]:
        """A blocking iterator of ``pyarrow.RecordBatch`` from ``offset``."""
        source = self._core.stream_batches(
            offset, isolation=isolation, end_offset=end_offset, stop_at_end=stop_at_end
        )
        return SyncStream(self._runner, source)


class Consumer:
    """Blocking face of ``AsyncConsumer`` (several partitions merged)."""

    def __init__(self, core: AsyncConsumer, runner: LoopThread) -> None:
        self._core = core
        self._runner = runner
        self.topic = core.topic
        self.partitions = core.partitions

    def stream(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream[Any]:
        """A blocking iterator of ``Record`` of every partition."""
        source = self._core.stream_batches(offset, isolation=isolation, stop_at_end=stop_at_end)
        return SyncStream(self._runner, source, batch_records)

    def stream_batches(
        self,
        offset: Offset,
        *,
        isolation: Isolation | str | None = None,
        stop_at_end: bool = False,
    ) -> SyncStream[pa.RecordBatch]:
        """A blocking iterator of ``pyarrow.RecordBatch`` of every partition."""
        source = self._core.stream_batches(offset, isolation=isolation, stop_at_end=stop_at_end)
        return SyncStream(self._runner, source)


class Fluvio:
    """A blocking connection to a cluster. ``Fluvio.connect()`` or ``Fluvio.connect("h:p")``.

    Attributes:
        endpoint: the SC public address in use.
    """

    def __init__(self, core: FluvioAsync, runner: LoopThread) -> None:
        self._core = core
        self._runner = runner
        self.endpoint = core.endpoint
        self._closed = False

    @classmethod
    def connect(cls, endpoint: str | None = None, *, timeout: float = 10.0) -> Fluvio:
        """Connect to the SC at ``"host:port"``, or the local profile when None.

        Raises:
            ConnectionClosedError: the SC is unreachable.
            NotFoundError: no endpoint given and no profile found.
        """
        runner = LoopThread()
        try:
            core = runner.run(FluvioAsync.connect(endpoint, timeout=timeout))
        except BaseException:
            runner.stop()
            raise
        return cls(core, runner)

    @property
    def core(self) -> FluvioAsync:
        """The asyncio core (use it only from coroutines run on ``loop``)."""
        return self._core

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The client's event loop (on its own thread)."""
        return self._runner.loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the client's loop and wait for it."""
        return self._runner.run(coro, timeout)

    def admin(self) -> SyncAdmin:
        """A blocking admin client: the methods of ``AdminClient``, run on the loop."""
        return SyncAdmin(self._runner, self._core.admin())

    def topic_producer(self, topic: str, **config: Any) -> TopicProducer:
        """A producer for ``topic``; options as ``ProducerConfig``."""
        return TopicProducer(
            self._runner.run(self._core.topic_producer(topic, **config)), self._runner
        )

    def partition_consumer(self, topic: str, partition: int, **config: Any) -> PartitionConsumer:
        """A consumer of one partition; options as ``ConsumerConfig``."""
        core = self._runner.run(self._core.partition_consumer(topic, partition, **config))
        return PartitionConsumer(core, self._runner)

    def consumer(self, topic: str, partitions: list[int] | None = None, **config: Any) -> Consumer:
        """A consumer of several partitions (all when None)."""
        return Consumer(
            self._runner.run(self._core.consumer(topic, partitions, **config)), self._runner
        )

    def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        """Every partition of ``topic`` with its leader and replicas, by index."""
        return self._runner.run(self._core.topic_partitions(topic))

    def fetch_offsets(self, topic: str, partition: int) -> PartitionOffsets:
        """``(log_start, hw, leo)`` of a partition, from its leader."""
        return self._runner.run(self._core.fetch_offsets(topic, partition))

    def offset_for_timestamp(self, topic: str, partition: int, timestamp_us: int) -> int | None:
        """The first offset at or after ``timestamp_us`` (None: no record that recent)."""
        return self._runner.run(self._core.offset_for_timestamp(topic, partition, timestamp_us))

    def fetch_frames(
        self,
        topic: str,
        partition: int,
        start: int,
        end_exclusive: int | None = None,
        *,
        isolation: Isolation | str = Isolation.COMMITTED,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    ) -> SyncStream[memoryview]:
        """Raw whole batch frames covering ``[start, end_exclusive)`` (see ``FluvioAsync``)."""
        source = self._core.fetch_frames(
            topic, partition, start, end_exclusive, isolation=isolation, max_bytes=max_bytes
        )
        return SyncStream(self._runner, source)

    def fetch_batches(
        self,
        topic: str,
        partition: int,
        start: int,
        end_exclusive: int | None = None,
        *,
        isolation: Isolation | str = Isolation.COMMITTED,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        with_offsets: bool = True,
        local: bool = True,
    ) -> SyncStream[pa.RecordBatch]:
        """Exactly the records ``[start, end_exclusive)`` as Arrow batches with offsets
        (``local``: read the leader's files directly when they are on this host)."""
        source = self._core.fetch_batches(
            topic,
            partition,
            start,
            end_exclusive,
            isolation=isolation,
            max_bytes=max_bytes,
            with_offsets=with_offsets,
            local=local,
        )
        return SyncStream(self._runner, source)

    def close(self) -> None:
        """Close everything and stop the loop thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._runner.alive:
                self._runner.run(self._core.close(), timeout=120.0)
        finally:
            self._runner.stop()

    def __enter__(self) -> Fluvio:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

"""``Fluvio``: the blocking face of ``FluvioAsync``, for threads, the CLI and Spark.

Theory of operation. Each ``Fluvio`` owns one ``LoopThread`` and the ``FluvioAsync`` core
lives on it; the admin client, producers and consumers it hands out are facades over
their asyncio objects on that same loop, their methods derived from the async ones
(``_blocking``). Iterators cross the thread once per Arrow batch (records of a batch are
then handed out locally). The producer's accumulator is thread-safe, so ``send`` never
crosses to the loop thread at all: it appends under a lock and wakes the sender only when
a batch fills or a linger timer must start; ``send_batch`` routes and encodes in the
calling thread. ``close`` stops producers and consumers, closes every socket, then stops
and joins the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

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
from spark_stream.client.admin import AdminClient
from spark_stream.client.consumer.consumer import (
    AsyncConsumer,
    AsyncPartitionConsumer,
    batch_records,
)
from spark_stream.client.consumer.group import (
    AsyncGroupConsumer,
    CommitCallback,
    RebalanceCallback,
)
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.client.producer.futures import BatchFuture, DeliveryFuture
from spark_stream.client.producer.producer import AsyncTopicProducer
from spark_stream.errors import RequestTimeoutError
from spark_stream.models.topic_schema import TopicSchema
from spark_stream.net.tls import TlsConfig

__all__ = [
    "Fluvio",
    "TopicProducer",
    "PartitionConsumer",
    "Consumer",
    "GroupConsumer",
    "SyncStream",
    "SyncAdmin",
    "LoopThread",
]

T = TypeVar("T")


class SyncAdmin(Facade[AdminClient]):
    """Blocking face of ``AdminClient``: the same methods and arguments, run on the loop.

    Attributes:
        host: the SC's public address.
        port: the SC's public port.
        timeout: seconds each request may take.
    """

    def __init__(self, core: AdminClient, runner: LoopThread) -> None:
        super().__init__(core, runner)
        self.host = core.host
        self.port = core.port
        self.timeout = core.timeout

    connect = blocking(AdminClient.connect)
    close = blocking(AdminClient.close)
    create_topic = blocking(AdminClient.create_topic)
    delete_topic = blocking(AdminClient.delete_topic)
    update_topic_schema = blocking(AdminClient.update_topic_schema)
    list_topics = blocking(AdminClient.list_topics)
    describe_topic = blocking(AdminClient.describe_topic)
    list_partitions = blocking(AdminClient.list_partitions)
    add_partitions = blocking(AdminClient.add_partitions)
    elect_preferred = blocking(AdminClient.elect_preferred)
    register_spu = blocking(AdminClient.register_spu)
    unregister_spu = blocking(AdminClient.unregister_spu)
    list_spus = blocking(AdminClient.list_spus)
    create_spu_group = blocking(AdminClient.create_spu_group)
    scale_spu_group = blocking(AdminClient.scale_spu_group)
    delete_spu_group = blocking(AdminClient.delete_spu_group)
    list_spu_groups = blocking(AdminClient.list_spu_groups)
    list_groups = blocking(AdminClient.list_groups)
    describe_group = blocking(AdminClient.describe_group)
    delete_group = blocking(AdminClient.delete_group)
    reset_offsets = blocking(AdminClient.reset_offsets)
    fetch_offsets = blocking(AdminClient.fetch_offsets)
    delete_offsets = blocking(AdminClient.delete_offsets)
    commit_progress = blocking(AdminClient.commit_progress)
    watch_metadata = blocking_stream(AdminClient.watch_metadata)


class TopicProducer(Facade[AsyncTopicProducer]):
    """Blocking face of ``AsyncTopicProducer``; ``send`` and ``send_batch`` stay in the caller.

    Attributes:
        topic: the topic produced to.
        config: the validated options.
        producer_id: the idempotent producer id, or None without idempotence.
    """

    def __init__(self, core: AsyncTopicProducer, runner: LoopThread) -> None:
        super().__init__(core, runner)
        self.topic = core.topic
        self.config = core.config
        self.producer_id = core.producer_id
        self._buffer_memory = core.config.buffer_memory
        self._accumulator = core.accumulator
        self._append = core.append_record

    def topic_schema(self) -> TopicSchema | None:
        """The typed topic's schema from the cached metadata (None: untyped)."""
        return self._core.topic_schema()

    def _wait_space(self) -> None:
        acc = self._core.accumulator
        if not acc.has_space() and not acc.wait_for_space(self.config.delivery_timeout_ms / 1000.0):
            raise RequestTimeoutError(
                f"producer buffer ({self.config.buffer_memory} bytes) still full after "
                f"{self.config.delivery_timeout_ms / 1000.0}s"
            )

    @same_signature(AsyncTopicProducer.send)
    def send(
        self,
        key: bytes | str | None,
        value: bytes | str,
        *,
        timestamp_us: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        partition: int | None = None,
    ) -> DeliveryFuture:
        # The async send, with the wait for buffer space done in this thread. The
        # parameters are spelled out (test_sync checks they equal the async ones):
        # forwarding *args/**kwargs cost ~190 ns a record, a tenth of this hot path.
        # The space check is inlined for the same reason (two calls, ~100 ns).
        if self._accumulator.queued_bytes >= self._buffer_memory:
            self._wait_space()
        return self._append(key, value, timestamp_us, headers, partition)

    @same_signature(AsyncTopicProducer.send_batch)
    def send_batch(self, *args: Any, **kwargs: Any) -> BatchFuture:
        # The async send_batch, planned and encoded in this thread.
        self._wait_space()
        planned = self._core.plan_batch(*args, **kwargs)
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


class PartitionConsumer(Facade[AsyncPartitionConsumer]):
    """Blocking face of ``AsyncPartitionConsumer``.

    Attributes:
        topic: topic name.
        partition: partition index.
    """

    def __init__(self, core: AsyncPartitionConsumer, runner: LoopThread) -> None:
        super().__init__(core, runner)
        self.topic = core.topic
        self.partition = core.partition

    stream = blocking_stream_via(
        AsyncPartitionConsumer.stream, AsyncPartitionConsumer.stream_batches, batch_records
    )
    stream_batches = blocking_stream(AsyncPartitionConsumer.stream_batches)


class Consumer(Facade[AsyncConsumer]):
    """Blocking face of ``AsyncConsumer`` (several partitions merged).

    Attributes:
        topic: topic name.
        partitions: the partition indexes read.
    """

    def __init__(self, core: AsyncConsumer, runner: LoopThread) -> None:
        super().__init__(core, runner)
        self.topic = core.topic
        self.partitions = core.partitions

    stream = blocking_stream_via(AsyncConsumer.stream, AsyncConsumer.stream_batches, batch_records)
    stream_batches = blocking_stream(AsyncConsumer.stream_batches)


class GroupConsumer(Facade[AsyncGroupConsumer]):
    """Blocking face of ``AsyncGroupConsumer`` (a consumer-group member).

    Attributes:
        group: the consumer group.
        topics: the topics subscribed.
        member_id: this member's id.
    """

    def __init__(self, core: AsyncGroupConsumer, runner: LoopThread) -> None:
        super().__init__(core, runner)
        self.group = core.group
        self.topics = core.topics

    @property
    def member_id(self) -> str:
        """This member's id (a new one after a ``max_poll_interval_ms`` leave)."""
        return self._core.member_id

    stream = blocking_stream_via(
        AsyncGroupConsumer.stream, AsyncGroupConsumer.stream_batches, batch_records
    )
    stream_batches = blocking_stream(AsyncGroupConsumer.stream_batches)
    commit = blocking(AsyncGroupConsumer.commit)
    committed = blocking(AsyncGroupConsumer.committed)
    seek = blocking(AsyncGroupConsumer.seek)
    pause = blocking(AsyncGroupConsumer.pause)
    resume = blocking(AsyncGroupConsumer.resume)
    close = blocking(AsyncGroupConsumer.close)

    def commit_async(
        self,
        offsets: dict[tuple[str, int], int] | None = None,
        callback: CommitCallback | None = None,
    ) -> concurrent.futures.Future[None]:
        """``AsyncGroupConsumer.commit_async``: returns at once; a sync ``callback`` runs
        in a worker thread (it may call this consumer's blocking methods)."""
        wrapped = in_thread(callback)

        async def start() -> asyncio.Task[None]:
            return self._core.commit_async(offsets, wrapped)

        task = self._runner.run(start())
        return asyncio.run_coroutine_threadsafe(_awaited(task), self._runner.loop)

    def assignment(self) -> list[tuple[str, int]]:
        """The partitions this member holds now (paused ones too), sorted."""
        return self._runner.run(_on_loop(self._core.assignment))

    def paused(self) -> list[tuple[str, int]]:
        """The paused partitions, sorted."""
        return self._runner.run(_on_loop(self._core.paused))

    def position(self, partition: int | tuple[str, int]) -> int | None:
        """The next offset the stream hands out for the partition (None: unknown)."""
        return self._runner.run(_on_loop(lambda: self._core.position(partition)))

    def __enter__(self) -> GroupConsumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def _on_loop(read: Callable[[], T]) -> T:
    """``read()`` run on the loop thread (the core's state belongs to it)."""
    return read()


async def _awaited(task: asyncio.Task[None]) -> None:
    await task


def in_thread(
    callback: Callable[..., Any] | None,
) -> Callable[..., Coroutine[Any, Any, None]] | None:
    """A blocking application callback as an async one that runs it in a worker thread,
    so it may call the blocking facade (which runs on the loop it would otherwise hold);
    None stays None."""
    if callback is None:
        return None

    async def call(*args: Any) -> None:
        result = await asyncio.to_thread(callback, *args)
        if inspect.isawaitable(result):
            await result

    return call


class Fluvio(Facade[FluvioAsync]):
    """A blocking connection to a cluster. ``Fluvio.connect()`` or ``Fluvio.connect("h:p")``.

    Attributes:
        endpoint: the SC public address in use.
        tls: the TLS settings in use (None: plaintext).
    """

    def __init__(self, core: FluvioAsync, runner: LoopThread) -> None:
        super().__init__(core, runner)
        self.endpoint = core.endpoint
        self.tls = core.tls
        self._closed = False

    @classmethod
    def connect(
        cls,
        endpoint: str | None = None,
        *,
        timeout: float = 10.0,
        tls: TlsConfig | None = None,
        token: str | None = None,
    ) -> Fluvio:
        """Connect on a new loop thread; arguments and errors as ``FluvioAsync.connect``."""
        runner = LoopThread()
        try:
            core = runner.run(FluvioAsync.connect(endpoint, timeout=timeout, tls=tls, token=token))
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
        return SyncAdmin(self._core.admin(), self._runner)

    topic_producer = blocking_facade(FluvioAsync.topic_producer, TopicProducer)
    partition_consumer = blocking_facade(FluvioAsync.partition_consumer, PartitionConsumer)
    consumer = blocking_facade(FluvioAsync.consumer, Consumer)

    def group_consumer(
        self,
        topic_or_topics: str | list[str] | None = None,
        *,
        group: str,
        pattern: str | None = None,
        instance_id: str | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 1000,
        max_poll_interval_ms: int = 60_000,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
        **config: Any,
    ) -> GroupConsumer:
        """``FluvioAsync.group_consumer`` (same arguments), blocking. The rebalance
        callbacks (``on_assign``, ``on_revoke``, ``on_lost``) run in a worker thread while
        the member waits for them, so they may call the consumer's blocking methods
        (``commit``, ``position``)."""
        core = self._runner.run(
            self._core.group_consumer(
                topic_or_topics,
                group=group,
                pattern=pattern,
                instance_id=instance_id,
                auto_offset_reset=auto_offset_reset,
                enable_auto_commit=enable_auto_commit,
                auto_commit_interval_ms=auto_commit_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms,
                on_assign=in_thread(on_assign),
                on_revoke=in_thread(on_revoke),
                on_lost=in_thread(on_lost),
                **config,
            ),
            self._call_timeout,
        )
        return GroupConsumer(core, self._runner)

    topic_partitions = blocking(FluvioAsync.topic_partitions)
    fetch_offsets = blocking(FluvioAsync.fetch_offsets)
    offset_for_timestamp = blocking(FluvioAsync.offset_for_timestamp)
    fetch_frames = blocking_stream(FluvioAsync.fetch_frames)
    fetch_batches = blocking_stream(FluvioAsync.fetch_batches)

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

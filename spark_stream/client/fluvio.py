"""``FluvioAsync``: the asyncio client core (SC metadata, SPU connections, low-level fetch).

Theory of operation. ``connect`` opens the SC's public endpoint and starts one metadata
watch; a ``MetadataView`` mirrors the SPUs, topics and partitions it pushes, so leader
discovery is a dictionary lookup refreshed on every change. Data requests go straight
to partition leaders over pooled connections (one per SPU, multiplexed). A retriable
failure (``NotLeaderError``, a closed connection) makes the next lookup wait briefly
for the SC to publish a new leader, then the request is retried with backoff.

Everything here runs on one event loop; ``spark_stream.client.Fluvio`` is the same API
for threads, running this class on a background loop thread.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

import pyarrow as pa

from spark_stream.client.admin import AdminClient
from spark_stream.client.config import ConsumerConfig, ProducerConfig, parse_isolation
from spark_stream.client.consumer import fetch, tiered
from spark_stream.client.consumer.consumer import AsyncConsumer, AsyncPartitionConsumer
from spark_stream.client.consumer.group import AsyncGroupConsumer, RebalanceCallback
from spark_stream.client.consumer.local_files import LocalFiles
from spark_stream.client.consumer.offset import check_start
from spark_stream.client.leader import LeaderClient, RetryPolicy
from spark_stream.client.metadata import MetadataWatcher
from spark_stream.client.pool import ConnectionPool
from spark_stream.client.producer.producer import AsyncTopicProducer
from spark_stream.client.profile import resolve_endpoint, resolve_tls, resolve_token
from spark_stream.client.timestamps import to_timestamp_us
from spark_stream.client.types import PartitionInfo, PartitionOffsets
from spark_stream.errors import (
    NotActiveError,
    RequestTimeoutError,
    UnknownTopicError,
)
from spark_stream.net.connection import Connection
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.net.tls import TlsConfig, client_context
from spark_stream.protocol.data import DEFAULT_FETCH_MAX_BYTES, Isolation

__all__ = ["FluvioAsync"]

log = logging.getLogger(__name__)


class FluvioAsync:
    """A connection to a cluster, for asyncio code. Create it with ``await connect()``.

    Attributes:
        endpoint: the SC public address(es) given (comma separated with standby SCs).
        sc: every SC's public address and the one in use (it follows the active SC).
        tls: the TLS settings in use (None: plaintext).
    """

    def __init__(
        self,
        endpoint: str,
        timeout: float,
        watcher: MetadataWatcher,
        sc: ScEndpoints,
        tls: TlsConfig | None = None,
        token: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.sc = sc
        self.token = token
        self.watcher = watcher
        self.tls = tls
        self.pool = ConnectionPool(connect_timeout=timeout, tls=client_context(tls), token=token)
        self.leaders = LeaderClient(watcher, self.pool)
        self.local_files = LocalFiles()
        self._admin: AdminClient | None = None
        self._producers: list[AsyncTopicProducer] = []
        self._group_consumers: list[AsyncGroupConsumer] = []
        self._closed = False

    @classmethod
    async def connect(
        cls,
        endpoint: str | None = None,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        tls: TlsConfig | None = None,
        token: str | None = None,
    ) -> FluvioAsync:
        """Connect to the SC at ``"host:port"``; when None, as ``resolve_endpoint`` finds it.

        Args:
            endpoint: the SC public address; None takes ``FLUVIO_ENDPOINT``, else the
                profile written by ``fluvio cluster start`` (``FLUVIO_PROFILE``, default
                ``~/.fluvio/profile.json``).
            timeout: bound on connecting and receiving the first metadata.
            tls: connect to the SC and the SPUs over TLS (``TlsConfig(ca=...)``, with
                ``cert``/``key`` for mutual TLS); None takes the profile's when it
                names this endpoint (``resolve_tls``), else plaintext.
            token: the client token for a cluster with auth on; None takes
                ``FLUVIO_TOKEN``, else the current profile's token (``resolve_token``).

        Raises:
            AuthenticationError: the cluster checks tokens and none, or a bad one, was
                given.
            ConnectionClosedError: the SC is unreachable.
            TlsError: the TLS handshake failed (untrusted certificate, plaintext port).
            InvalidConfigError: a malformed endpoint (naming where it came from), or a
                TLS file missing.
            NotFoundError: no endpoint given, no ``FLUVIO_ENDPOINT`` and no profile.
        """
        endpoint = resolve_endpoint(endpoint)
        sc = ScEndpoints.parse(endpoint)
        tls = resolve_tls(endpoint, tls)
        context = client_context(tls)
        token = resolve_token(token, endpoint)

        async def open_one(at: Endpoint) -> Connection:
            return await Connection.open(
                at.host, at.port, timeout=timeout, name=f"sc@{at}", tls=context, token=token
            )

        async def open_sc() -> Connection:
            # Each SC in turn from the current one: the first that accepts serves, and
            # a standby's NotActiveError makes the watch follow the active SC.
            return await sc.open_first(open_one)

        def on_error(exc: BaseException) -> None:
            if isinstance(exc, NotActiveError) and not sc.follow(exc):
                sc.advance()

        log.info("connecting to the SC at %s", endpoint)
        watcher = MetadataWatcher(open_sc, on_error=on_error)
        await watcher.start(timeout)
        view = watcher.view
        log.info(
            "connected to the SC at %s: metadata revision=%s spus=%d topics=%d partitions=%d",
            endpoint,
            view.revision,
            len(view.spus),
            len(view.topics),
            len(view.partitions),
        )
        return cls(endpoint, timeout, watcher, sc, tls, token)

    @property
    def host(self) -> str:
        """The SC in use: its address."""
        return self.sc.current.host

    @property
    def port(self) -> int:
        """The SC in use: its public port."""
        return self.sc.current.port

    def admin(self) -> AdminClient:
        """The admin client (topics, partitions, SPUs, SPU groups) on this cluster."""
        if self._admin is None:
            self._admin = AdminClient(
                timeout=max(self.timeout, 30.0),
                endpoints=self.sc,
                tls=self.tls,
                token=self.token,
            )
        return self._admin

    def _policy(self) -> RetryPolicy:
        return RetryPolicy(timeout_s=max(30.0, self.timeout * 3), request_timeout_s=30.0)

    async def _known_topic(self, topic: str) -> None:
        """Wait (bounded) for the topic to appear in the metadata, then check it exists."""
        if self.watcher.view.partition_count(topic) is None:
            with contextlib.suppress(RequestTimeoutError):
                await self.watcher.wait_for(
                    lambda v: v.partition_count(topic) is not None, min(self.timeout, 2.0)
                )
        if self.watcher.view.partition_count(topic) is None:
            raise UnknownTopicError(f"topic {topic!r} not found")

    async def topic_producer(self, topic: str, **config: Any) -> AsyncTopicProducer:
        """A producer for ``topic``; options as ``ProducerConfig``.

        Raises:
            UnknownTopicError: the topic does not exist.
            InvalidConfigError: an unknown option or a bad value.
        """
        cfg = ProducerConfig.from_options(**config)
        await self._known_topic(topic)
        producer = AsyncTopicProducer(topic, cfg, self.watcher, self.leaders)
        self._producers.append(producer)
        return producer

    async def partition_consumer(
        self, topic: str, partition: int, **config: Any
    ) -> AsyncPartitionConsumer:
        """A consumer of one partition; options as ``ConsumerConfig``.

        Raises:
            UnknownTopicError: the topic does not exist.
            UnknownPartitionError: no such partition.
        """
        cfg = ConsumerConfig.from_options(**config)
        await self._known_topic(topic)
        return AsyncPartitionConsumer(topic, partition, cfg, self.leaders)

    async def consumer(
        self, topic: str, partitions: list[int] | None = None, **config: Any
    ) -> AsyncConsumer:
        """A consumer of several partitions (all when None), merged.

        With all partitions, partitions added to the topic while a stream runs are read
        too, each from its beginning (not by a stream that stops at its end).
        """
        cfg = ConsumerConfig.from_options(**config)
        await self._known_topic(topic)
        count = self.watcher.view.partition_count(topic) or 0
        indexes = list(range(count)) if partitions is None else list(partitions)
        consumers = [AsyncPartitionConsumer(topic, p, cfg, self.leaders) for p in indexes]
        return AsyncConsumer(topic, consumers, follow_new=partitions is None)

    async def group_consumer(
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
    ) -> AsyncGroupConsumer:
        """A member of consumer group ``group``, joined (see ``AsyncGroupConsumer``).

        Args:
            auto_offset_reset: where a partition without a committed offset starts:
                ``"earliest"`` (log start) or ``"latest"`` (its end when granted).
            enable_auto_commit: commit positions every ``auto_commit_interval_ms`` and
                on ``close``.
            max_poll_interval_ms: leave the group when the application has not pulled
                from the stream for this long (1 s - 30 min; the next pull rejoins).
            on_assign: called (sync or async) with new grants once they started.
            on_revoke: called with revoked partitions before they are committed and
                released (it may commit), and on ``close`` and a ``max_poll`` leave.
            on_lost: called with partitions lost without a revoke (fenced, dropped by the
                SC; not committed); default ``on_revoke``.
            pattern: a regular expression; every topic it matches whole is subscribed
                too, also topics created later (the SC resolves it).
            config: options as ``ConsumerConfig`` (e.g. ``isolation``).

        Raises:
            UnknownTopicError: a topic does not exist.
            InvalidConfigError: a bad option.
            InvalidRequestError: ``pattern`` is not a regular expression.
        """
        cfg = ConsumerConfig.from_options(**config)
        named = topic_or_topics if topic_or_topics is not None else []
        topics = [named] if isinstance(named, str) else list(named)
        for topic in topics:
            await self._known_topic(topic)
        consumer = AsyncGroupConsumer(
            self.host,
            self.port,
            self.leaders,
            topics,
            group=group,
            config=cfg,
            instance_id=instance_id,
            auto_offset_reset=auto_offset_reset,
            enable_auto_commit=enable_auto_commit,
            auto_commit_interval_ms=auto_commit_interval_ms,
            max_poll_interval_ms=max_poll_interval_ms,
            on_assign=on_assign,
            on_revoke=on_revoke,
            on_lost=on_lost,
            endpoints=self.sc,
            pattern=pattern,
            tls=client_context(self.tls),
            token=self.token,
        )
        try:
            await consumer.start()
        except BaseException:
            await consumer.close()
            raise
        self._group_consumers.append(consumer)
        return consumer

    async def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        """Every partition of ``topic`` with its leader and replicas, by index.

        Waits (bounded) until the SC has created all of them.

        Raises:
            UnknownTopicError: the topic does not exist.
            InsufficientResourcesError: the topic waits for more SPUs (it has none).
            InvalidConfigError: the topic's assignment names unregistered SPUs.
        """
        await self._known_topic(topic)
        view = self.watcher.view
        with contextlib.suppress(RequestTimeoutError):
            await self.watcher.wait_for(
                lambda v: (
                    len(v.topic_partitions(topic)) >= (v.partition_count(topic) or 0)
                    or v.topic_problem(topic) is not None
                ),
                self.timeout,
            )
        problem = view.topic_problem(topic)
        if problem is not None:
            raise problem
        return view.topic_partitions(topic)

    async def fetch_offsets(self, topic: str, partition: int) -> PartitionOffsets:
        """The partition's ``(log_start, hw, leo)`` as its leader sees them now; for a
        tiered topic ``log_start`` is the first offset its tier holds (see
        ``consumer.tiered``)."""
        await self._known_topic(topic)
        return await tiered.readable_offsets(self.leaders, topic, partition, self._policy())

    async def offset_for_timestamp(
        self, topic: str, partition: int, timestamp_us: int
    ) -> int | None:
        """The first offset whose timestamp is at or after ``timestamp_us`` (None: none).

        Raises:
            InvalidConfigError: ``timestamp_us`` is negative or past the year 9999.
        """
        to_timestamp_us(timestamp_us, "us", "offset_for_timestamp: timestamp_us")
        await self._known_topic(topic)
        return await fetch.offset_for_timestamp(
            self.leaders, topic, partition, timestamp_us, self._policy()
        )

    async def fetch_frames(
        self,
        topic: str,
        partition: int,
        start: int,
        end_exclusive: int | None = None,
        *,
        isolation: Isolation | str = Isolation.COMMITTED,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    ) -> AsyncGenerator[memoryview, None]:
        """Raw batch frames covering ``[start, end_exclusive)``, one frame per item.

        Frames are whole and as stored: the first may begin before ``start`` and the
        last may end after ``end_exclusive`` (decode and slice, or use
        ``fetch_batches``). ``end_exclusive=None`` reads to the end visible at the first
        fetch (HW for committed, LEO for uncommitted). Fails over to a new leader.

        Raises:
            OffsetOutOfRangeError: ``start`` is below the log start or past the end.
        """
        await self._known_topic(topic)
        async with contextlib.aclosing(
            fetch.fetch_frames(
                self.leaders,
                topic,
                partition,
                start,
                end_exclusive,
                parse_isolation(isolation),
                max_bytes,
                self._policy(),
            )
        ) as frames:
            async for frame in frames:
                yield frame

    async def fetch_batches(
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
        group: fetch.GroupFetch | None = None,
        skip_corrupt_frames: bool = False,
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Exactly the records ``[start, end_exclusive)`` as Arrow batches.

        Each batch has the record schema with an ``offset`` column first (unless
        ``with_offsets=False``); buffers are zero-copy views of the received frames. A
        typed topic's batches have its latest user columns (null in records written
        before a column was added), then ``key``, ``timestamp``, ``headers``.

        Args:
            local: when the leader's segment files are on this host, read them directly
                (no bytes through the leader or a socket); otherwise, or with False,
                fetch over the network.
            group: a consumer-group member's grant: the reads are gated by the leader
                and carry the partition's leader epoch (fetch version 2);
                ``FencedMemberError`` when the grant is not current.
            skip_corrupt_frames: a frame found damaged (bit rot) is skipped with a
                WARNING naming its offsets; by default the read fails with
                ``CorruptFrameError`` naming them.
        """
        await self._known_topic(topic)
        schema = fetch.typed_read_schema(self.watcher, topic)
        if tiered.tier_url(self.leaders, topic) is not None:
            if end_exclusive is None:  # the end visible now, before the tier is read
                offsets = await fetch.fetch_offsets(self.leaders, topic, partition, self._policy())
                end_exclusive = fetch.visible_end(offsets, parse_isolation(isolation))
                # past the end: the one rule; below the leader's log start the tier decides
                check_start(start, min(start, offsets.log_start), offsets.leo, topic)
            async with contextlib.aclosing(
                tiered.tier_prefix(
                    self.leaders, topic, partition, start, end_exclusive, schema, self._policy()
                )
            ) as older:
                async for batch in older:
                    start = batch.column(0)[-1].as_py() + 1
                    yield batch if with_offsets else batch.drop_columns(["offset"])
            if start >= end_exclusive:
                return
        async with contextlib.aclosing(
            fetch.fetch_batches(
                self.leaders,
                topic,
                partition,
                start,
                end_exclusive,
                parse_isolation(isolation),
                max_bytes,
                self._policy(),
                with_offsets=with_offsets,
                schema=schema,
                local=self.local_files if local else None,
                group=group,
                skip_corrupt=skip_corrupt_frames,
            )
        ) as batches:
            async for batch in batches:
                yield batch

    async def close(self) -> None:
        """Close group consumers (leaving), producers (flushing them), the metadata watch
        and every connection."""
        if self._closed:
            return
        self._closed = True
        for member in self._group_consumers:
            await member.close()  # commits (auto-commit) and leaves its group
        self._group_consumers.clear()
        for producer in self._producers:
            await producer.close()
        self._producers.clear()
        if self._admin is not None:
            await self._admin.close()
        await self.watcher.close()
        await self.pool.close()
        self.local_files.close()

    async def __aenter__(self) -> FluvioAsync:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

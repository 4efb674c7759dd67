"""``AdminClient``: the SC public api (topics, partitions, SPUs, SPU groups, metadata).

An asyncio client over one ``Connection`` to the SC's public port. Requests take and
return the cluster models (``Topic``, ``Partition``, ``Spu``, ``SpuGroup``); server
errors arrive typed (``InvalidConfigError`` naming the field, ``TopicExistsError``,
``UnknownTopicError``...). ``watch_metadata`` is an async iterator of
``MetadataUpdate``s that reconnects with backoff and resumes from the last revision it
delivered, so a consumer sees every change once the stream is back (or a full snapshot
when the SC no longer holds them). ``SyncAdmin`` (``client.sync``) is its blocking face.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any, Self, TypeVar

import pyarrow as pa

from spark_stream.backoff import BackoffPolicy
from spark_stream.client.metadata import WATCH_BACKOFF, watch_metadata
from spark_stream.client.types import PreferredElection
from spark_stream.errors import (
    ConnectionClosedError,
    InvalidRequestError,
    NotActiveError,
    NotFoundError,
)
from spark_stream.models import (
    Partition,
    Spu,
    SpuGroup,
    SpuGroupSpec,
    SpuSpec,
    Topic,
    TopicSpec,
)
from spark_stream.models.topic_schema import TopicSchema, check_user_schema, encode_arrow
from spark_stream.net.connection import Connection
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.net.tls import TlsConfig, client_context
from spark_stream.protocol import Message
from spark_stream.protocol import control as c
from spark_stream.spu_identity import secret_verifier

__all__ = ["AdminClient"]

M = TypeVar("M", bound=Message)

#: Delays between attempts while no SC is active (a standby taking over).
_FAILOVER_BACKOFF = BackoffPolicy(0.05, 1.0)


def _spec_dict(spec: Any) -> dict[str, Any]:
    if isinstance(spec, dict):
        return spec
    to_dict = getattr(spec, "to_dict", None)
    if to_dict is None:
        raise InvalidRequestError(f"a spec must be a model or a dict, got {type(spec).__name__}")
    result: dict[str, Any] = to_dict()
    return result


class AdminClient:
    """Admin requests to one SC.

    With standby SCs (``endpoints``), a connection that fails moves to the next SC, and
    a request a standby refuses (``NotActiveError`` naming the active SC) is sent again
    to the SC it names: a standby refuses before doing anything, so this is safe.

    Args:
        host: the SC's public address.
        port: the SC's public port (9003 by default).
        timeout: seconds each request may take.
        endpoints: every SC's public address (overrides ``host`` and ``port``).
        tls: connect over TLS (see ``TlsConfig``); None: plaintext.
        token: the client token presented on connect (None: none; a cluster with auth on
            then refuses every request with ``AuthenticationError``).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9003,
        *,
        timeout: float = 30.0,
        endpoints: ScEndpoints | None = None,
        tls: TlsConfig | None = None,
        token: str | None = None,
    ) -> None:
        self.endpoints = endpoints or ScEndpoints((Endpoint(host, port),))
        self.timeout = timeout
        self.tls = tls
        self.token = token
        self._conn: Connection | None = None

    @property
    def host(self) -> str:
        """The SC in use: its address."""
        return self.endpoints.current.host

    @property
    def port(self) -> int:
        """The SC in use: its public port."""
        return self.endpoints.current.port

    async def connect(self) -> Self:
        """Open the connection (done on first use otherwise).

        Raises:
            ConnectionClosedError: no SC answers.
        """
        if self._conn is not None and not self._conn.closed:
            return self

        async def open_one(sc: Endpoint) -> Connection:
            return await Connection.open(
                sc.host,
                sc.port,
                timeout=self.timeout,
                name=f"sc-public {sc}",
                tls=client_context(self.tls),
                token=self.token,
            )

        self._conn = await self.endpoints.open_first(open_one)
        return self

    async def close(self) -> None:
        """Close the connection; idempotent."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _connection(self) -> Connection:
        """The open connection (reopened once it closed)."""
        await self.connect()
        assert self._conn is not None
        return self._conn

    async def _call(self, request: Message, expect: type[M]) -> M:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        backoff = _FAILOVER_BACKOFF.start()
        failing_over = False

        def late() -> bool:
            return loop.time() + backoff.policy.delay(backoff.attempt) > deadline

        while True:
            try:
                conn = await self._connection()
                reply = await conn.call(request, timeout=self.timeout)
                break
            except NotActiveError as exc:
                # A standby: go to the SC it names (or the next one), until one is active
                # (a takeover lasts up to the lease TTL) or the request's time is up.
                if not self.endpoints.follow(exc):
                    self.endpoints.advance()
                failing_over = True
                await self.close()
                if late():
                    raise
            except ConnectionClosedError:
                # The SC a standby named is gone too (it died): keep looking meanwhile.
                if not failing_over or late():
                    raise
                self.endpoints.advance()
            await backoff.sleep()  # a takeover in progress
        if not isinstance(reply, expect):  # pragma: no cover - the registry guarantees it
            raise InvalidRequestError(f"expected {expect.__name__}, got {type(reply).__name__}")
        return reply

    # -- topics ------------------------------------------------------------------------

    async def create_topic(
        self,
        name: str,
        spec: TopicSpec | dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
        allow_missing_spus: bool = False,
        schema: pa.Schema | None = None,
        **fields: Any,
    ) -> Topic:
        """Create a topic from a spec (or keyword fields: ``partitions=6``...).

        Args:
            schema: make it a typed topic of these user columns (schema version 1):
                producers send Arrow tables of them, readers get them as columns.
            dry_run: validate only (the SPU check included), store nothing.
            allow_missing_spus: create it even when the registered SPUs cannot hold it
                yet; it stays ``InsufficientResources`` (or ``InvalidConfig`` for an
                assignment naming unregistered SPUs), and producing or consuming fails
                at once, until enough SPUs join.

        Raises:
            InvalidConfigError: the spec is invalid (the message names the field), or
                its replica assignment names an unregistered SPU.
            InsufficientResourcesError: the replication factor exceeds the registered
                SPUs.
            TopicExistsError: a topic of that name exists.
        """
        data = {**(_spec_dict(spec) if spec is not None else {}), **fields}
        if schema is not None:
            data["topicSchema"] = TopicSchema.of(schema).to_dict()
        request = c.CreateTopicRequest(name, data, dry_run, allow_missing_spus)
        reply = await self._call(request, c.CreateTopicResponse)
        return Topic.from_dict(reply.topic)

    async def update_topic_schema(self, name: str, schema: pa.Schema) -> Topic:
        """Evolve a typed topic's schema to ``schema`` (the next version), or type an
        empty untyped topic (version 1).

        Only appending nullable columns is allowed: frames written before read them as
        null. Producers and readers pick the new version up from their metadata. An
        untyped topic is empty when no leader reported a record to the SC (they report
        within a heartbeat); one that holds records is refused.

        Raises:
            InvalidConfigError: the topic is untyped and holds records, or the change
                removes, renames, retypes or reorders a column, adds a non-nullable one,
                or adds none.
            UnknownTopicError: no such topic.
        """
        request = c.UpdateTopicSchemaRequest(name, encode_arrow(check_user_schema(schema)))
        reply = await self._call(request, c.UpdateTopicSchemaResponse)
        return Topic.from_dict(reply.topic)

    async def delete_topic(self, name: str) -> int:
        """Delete a topic and its partitions; return the KV revision.

        Raises:
            UnknownTopicError: no such topic.
        """
        reply = await self._call(c.DeleteTopicRequest(name), c.DeleteTopicResponse)
        return reply.revision

    async def list_topics(self, *names: str) -> list[Topic]:
        """Every topic (or those named), sorted by name."""
        reply = await self._call(c.ListTopicsRequest(list(names)), c.ListTopicsResponse)
        return [Topic.from_dict(t) for t in reply.topics]

    async def describe_topic(self, name: str) -> tuple[Topic, list[Partition]]:
        """A topic and its partitions.

        Raises:
            UnknownTopicError: no such topic.
        """
        reply = await self._call(c.DescribeTopicRequest(name), c.DescribeTopicResponse)
        return Topic.from_dict(reply.topic), [Partition.from_dict(p) for p in reply.partitions]

    async def list_partitions(self, topic: str | None = None) -> list[Partition]:
        """Partitions (of ``topic``, or all): replicas, leader, resolution, LEO, HW, LRS."""
        reply = await self._call(c.ListPartitionsRequest(topic), c.ListPartitionsResponse)
        return [Partition.from_dict(p) for p in reply.partitions]

    async def add_partitions(self, topic: str, count: int = 1) -> Topic:
        """Add ``count`` partitions to ``topic`` (Fluvio's ``AddPartition``; never fewer).

        Returns once the SC has provisioned them: the topic's ``replicaMap`` lists the
        new partitions (leader first), or its ``reason`` says why they wait for SPUs.
        New records spread over them as soon as a producer's metadata shows them;
        records already written stay where they are (a key may now map elsewhere).

        Raises:
            InvalidConfigError: ``count`` below 1, too many partitions in all, or a
                topic with a manual replica assignment.
            InsufficientResourcesError: fewer SPUs than the replication factor.
            UnknownTopicError: no such topic.
        """
        reply = await self._call(c.AddPartitionsRequest(topic, count), c.AddPartitionsResponse)
        return Topic.from_dict(reply.topic)

    async def elect_preferred(self, topic: str | None = None) -> PreferredElection:
        """Move leadership back to each partition's preferred replica (the first of its
        replica list) where that replica is online and in sync (Kafka's preferred leader
        election); the SC also does it by itself every ``leader_rebalance_interval_s``.

        Args:
            topic: only this topic's partitions; None: every topic.

        Returns:
            The partitions moved, and those still led elsewhere.

        Raises:
            UnknownTopicError: no such topic.
        """
        reply = await self._call(c.ElectPreferredRequest(topic), c.ElectPreferredResponse)
        return PreferredElection(tuple(reply.moved), tuple(reply.pending))

    # -- SPUs --------------------------------------------------------------------------

    async def register_spu(
        self,
        spu_id: int,
        *,
        name: str | None = None,
        spec: SpuSpec | dict[str, Any] | None = None,
        secret: str | None = None,
        **fields: Any,
    ) -> Spu:
        """Register a custom SPU (it may connect afterwards, presenting ``secret``).

        Args:
            spu_id: the SPU's id.
            name: the object name (default ``custom-spu-{id}``).
            spec: more of the spec (endpoints, rack).
            secret: the SPU's own secret (``spu_identity.new_secret()``); only its
                verifier is sent and stored. Without one the SPU cannot connect.
            fields: spec fields, camelCase or snake_case.

        Raises:
            InvalidConfigError: the spec is invalid.
            SpuExistsError: the id is taken or reserved by an SPU group.
        """
        data = {**(_spec_dict(spec) if spec is not None else {}), **fields, "spuId": spu_id}
        data.pop("spu_id", None)
        if secret is not None:
            data["secretVerifier"] = secret_verifier(secret)
        reply = await self._call(c.RegisterSpuRequest(data, name), c.RegisterSpuResponse)
        return Spu.from_dict(reply.spu)

    async def unregister_spu(self, spu_id: int | None = None, *, name: str | None = None) -> int:
        """Remove a custom SPU by id or name; return the KV revision.

        Raises:
            NotFoundError: no such SPU.
            InvalidRequestError: the SPU is managed (scale its group instead).
        """
        reply = await self._call(c.UnregisterSpuRequest(spu_id, name), c.UnregisterSpuResponse)
        return reply.revision

    async def list_spus(self) -> list[Spu]:
        """Every SPU, sorted by id: endpoints and Online/Offline."""
        reply = await self._call(c.ListSpusRequest(), c.ListSpusResponse)
        return [Spu.from_dict(s) for s in reply.spus]

    # -- SPU groups --------------------------------------------------------------------

    async def create_spu_group(
        self,
        name: str,
        spec: SpuGroupSpec | dict[str, Any] | None = None,
        *,
        update: bool = False,
        **fields: Any,
    ) -> SpuGroup:
        """Create an SPU group (or, with ``update``, replace its spec: scale up/down).

        Raises:
            InvalidConfigError: the spec is invalid.
            ObjectExistsError: the group exists and ``update`` is false.
        """
        data = {**(_spec_dict(spec) if spec is not None else {}), **fields}
        reply = await self._call(
            c.CreateSpuGroupRequest(name, data, update), c.CreateSpuGroupResponse
        )
        return SpuGroup.from_dict(reply.group)

    async def scale_spu_group(self, name: str, replicas: int) -> SpuGroup:
        """Change a group's ``replicas``, keeping the rest of its spec."""
        groups = {g.name: g for g in await self.list_spu_groups()}
        if name not in groups:
            raise NotFoundError(f"SPU group {name!r} does not exist")
        spec = groups[name].spec.model_copy(update={"replicas": replicas})
        return await self.create_spu_group(name, spec, update=True)

    async def delete_spu_group(self, name: str) -> int:
        """Delete an SPU group (its managed SPUs stop); return the KV revision.

        Raises:
            NotFoundError: no such group.
        """
        reply = await self._call(c.DeleteSpuGroupRequest(name), c.DeleteSpuGroupResponse)
        return reply.revision

    async def list_spu_groups(self) -> list[SpuGroup]:
        """Every SPU group, sorted by name."""
        reply = await self._call(c.ListSpuGroupsRequest(), c.ListSpuGroupsResponse)
        return [SpuGroup.from_dict(g) for g in reply.groups]

    # -- metadata ----------------------------------------------------------------------

    # -- consumer groups -------------------------------------------------------------------

    async def list_groups(self) -> list[dict[str, Any]]:
        """Every consumer group: ``{"name", "state", "generation", "members", "live"}``."""
        reply = await self._call(c.ListGroupsRequest(), c.ListGroupsResponse)
        return reply.groups

    async def describe_group(self, group: str) -> c.DescribeGroupResponse:
        """A group's object, live members and per-partition offsets and lag.

        Raises:
            UnknownGroupError: no such group.
        """
        return await self._call(c.DescribeGroupRequest(group), c.DescribeGroupResponse)

    async def delete_group(self, group: str) -> int:
        """Delete a group and its offsets; returns the KV revision.

        Raises:
            GroupNotEmptyError: the group has members.
            UnknownGroupError: no such group.
        """
        reply = await self._call(c.DeleteGroupRequest(group), c.DeleteGroupResponse)
        return reply.revision

    async def reset_offsets(
        self,
        group: str,
        mode: str,
        *,
        topic: str | None = None,
        value: int = 0,
        offsets: dict[tuple[str, int], int] | None = None,
        execute: bool = False,
    ) -> c.ResetOffsetsResponse:
        """Plan new committed offsets (``RESET_MODES``); write them only with ``execute``.

        ``offsets`` are the targets the caller resolved for ``to-datetime``/``by-duration``.

        Raises:
            GroupNotEmptyError: the group has members.
            InvalidRequestError: a bad field (named).
        """
        given = [{"topic": t, "partition": p, "offset": o} for (t, p), o in (offsets or {}).items()]
        request = c.ResetOffsetsRequest(group, mode, topic, value, given, execute)
        return await self._call(request, c.ResetOffsetsResponse)

    async def fetch_offsets(
        self, group: str, partitions: list[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], int]:
        """A group's committed offsets (partitions without one are absent)."""
        wanted = (
            None if partitions is None else [{"topic": t, "partition": p} for t, p in partitions]
        )
        reply = await self._call(c.OffsetFetchRequest(group, wanted), c.OffsetFetchResponse)
        return {(o["topic"], o["partition"]): o["offset"] for o in reply.offsets}

    async def commit_progress(
        self, group: str, offsets: dict[tuple[str, int], int]
    ) -> c.ProgressCommitResponse:
        """Write an outside reader's progress (a Spark query's) into a progress-only group.

        The first call creates the group (``kind: external``); ``{}`` only claims it.
        Offsets are stored as given, also below the stored ones; partitions that no
        longer exist are skipped (listed in the reply).

        Raises:
            GroupNotEmptyError: the group has members.
            InvalidRequestError: the group is a group of members, or a bad field (named).
        """
        given = [{"topic": t, "partition": p, "offset": o} for (t, p), o in offsets.items()]
        return await self._call(c.ProgressCommitRequest(group, given), c.ProgressCommitResponse)

    async def delete_offsets(self, group: str, topic: str | None = None) -> int:
        """Delete a group's offsets (of one topic); returns how many."""
        reply = await self._call(c.DeleteOffsetsRequest(group, topic), c.DeleteOffsetsResponse)
        return reply.deleted

    async def watch_metadata(
        self,
        from_revision: int | None = None,
        *,
        reconnect: bool = True,
        max_backoff: float = 2.0,
    ) -> AsyncGenerator[c.MetadataUpdate, None]:
        """Metadata updates: a full snapshot (unless resuming), then changes, forever.

        The stream is ``spark_stream.client.metadata.watch_metadata`` on this client's
        connection, re-yielded so this stays an async generator function (the sync
        facade wraps those as blocking iterators).

        Args:
            from_revision: resume after this revision (None: start with a snapshot).
            reconnect: when the connection drops, reconnect with backoff and resume from
                the last delivered revision; otherwise raise ``ConnectionClosedError``.
            max_backoff: cap of the delay between reconnect attempts, in seconds (> 0).
        """
        initial = min(WATCH_BACKOFF.initial, max_backoff)
        updates = watch_metadata(
            self._connection,
            from_revision,
            backoff=BackoffPolicy(initial, max_backoff),
            reconnect=reconnect,
        )
        async with contextlib.aclosing(updates):
            async for update in updates:
                yield update
                del update  # freed while waiting for the next (see watch_metadata)

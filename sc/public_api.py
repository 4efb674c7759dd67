"""The SC public server (port 9003): admin requests and the metadata watch.

One handler per api. Writes go to the KV store (the SC's desired state); the
controllers take it from there. Reads come from the local mirror after it caught up
with the KV's current revision, and every write waits (bounded) until the mirror holds
it, so a client reads its own writes. Errors are typed (``docs/protocol.md``):
``InvalidConfigError`` naming the field, ``TopicExistsError``, ``UnknownTopicError``,
``SpuExistsError``, ``ObjectExistsError``, ``NotFoundError``. A topic the registered SPUs
cannot hold yet is refused (``InsufficientResourcesError``, or ``InvalidConfigError`` for
an assignment naming an unregistered SPU) unless the request allows missing SPUs, as
Fluvio's SC refuses it; the controllers would only park it unprovisioned.

The metadata watch is ``sc.metadata_feed.MetadataFeed``: the recent SPU, topic and
partition changes in memory, coalesced and encoded once for every watcher. A watcher that
names a revision the feed still covers gets the changes after it; any other watcher first
gets a full snapshot. Partition changes that only move LEO or HW are not sent (clients
need endpoints and leaders, not offsets).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sc.assignment import InsufficientSpus, InvalidAssignment, short_of_spus
from sc.controllers.topic.policy import missing_spus
from sc.dispatcher import Dispatcher
from sc.groups import GateAcks, GroupCoordinator
from sc.groups.api import GroupApi
from sc.kv.budget import retry_budget
from sc.kv.store import KvStore
from sc.local_store import StoreView
from sc.metadata_feed import MetadataFeed
from sc.preferred_api import elect_preferred
from sc.topic_tier import with_tier
from spark_stream.auth.guard import Guard
from spark_stream.errors import (
    ConflictError,
    InsufficientResourcesError,
    InvalidConfigError,
    InvalidRequestError,
    NotFoundError,
    ObjectExistsError,
    SpuExistsError,
    TopicExistsError,
    UnknownTopicError,
)
from spark_stream.models import (
    MAX_PARTITIONS,
    ConsumerGroupSpec,
    KvObject,
    Partition,
    Spu,
    SpuGroup,
    SpuSpec,
    SpuType,
    Topic,
    TopicSchema,
    TopicSpec,
)
from spark_stream.models.topic_schema import decode_arrow, untyped_with_records
from spark_stream.models.topic_table import TableFormat, check_delta_types
from spark_stream.net.budget import RequestBudget
from spark_stream.net.server import ConnContext, Handler, Server
from spark_stream.protocol import ApiKey, Encoded, Message, Request
from spark_stream.protocol import control as c

__all__ = ["PublicApi", "MetadataFeed"]

log = logging.getLogger(__name__)

_WAIT = 5.0  # seconds a handler waits for the mirror before answering anyway
_CAS_ATTEMPTS = 5  # compare-and-set rounds of a spec update racing other writers


class PublicApi:
    """The public server and its handlers.

    Args:
        kv: the KV store (writes, and the current revision for reads).
        dispatcher: the controller loop (its mirror answers reads).
        host: address to bind.
        port: port to bind (0: any free one).
        group_defaults: the spec of a consumer group a join creates (its timeouts).
        gates: the SPUs' gate reports (the connection manager), so the coordinator
            pushes a grant once the leader holds its gate.
        tier_root: the cluster's default tier (topics with a table need one).
        budget: the process's request-bytes budget (shared with the private server).
        auth_key: the cluster key checking client tokens (``spark_stream.auth``); None:
            clients need none.
    """

    def __init__(
        self,
        kv: KvStore,
        dispatcher: Dispatcher,
        *,
        host: str = "127.0.0.1",
        port: int = 9003,
        group_defaults: ConsumerGroupSpec | None = None,
        gates: GateAcks | None = None,
        tier_root: str | None = None,
        kv_budget_s: float = 3.0,
        budget: RequestBudget | None = None,
        tls: ssl.SSLContext | None = None,
        auth_key: bytes | None = None,
    ) -> None:
        self.kv = kv
        self.kv_budget_s = kv_budget_s
        self.tier_root = tier_root
        self.dispatcher = dispatcher
        self.store = dispatcher.store
        self.feed = MetadataFeed(self.store)
        dispatcher.add_listener(self.feed.on_changes)
        self._spu_lock = asyncio.Lock()  # one SPU registration at a time: ids stay unique
        self.groups = GroupCoordinator(kv, self.store, defaults=group_defaults, gates=gates)
        dispatcher.add_listener(self.groups.on_changes)
        group_api = GroupApi(kv, self.store, self.groups)
        admin: dict[int, Handler] = {
            ApiKey.CREATE_TOPIC: self._create_topic,
            ApiKey.DELETE_TOPIC: self._delete_topic,
            ApiKey.LIST_TOPICS: self._list_topics,
            ApiKey.DESCRIBE_TOPIC: self._describe_topic,
            ApiKey.LIST_PARTITIONS: self._list_partitions,
            ApiKey.ADD_PARTITIONS: self._add_partitions,
            ApiKey.UPDATE_TOPIC_SCHEMA: self._update_topic_schema,
            ApiKey.ELECT_PREFERRED: self._elect_preferred,
            ApiKey.REGISTER_SPU: self._register_spu,
            ApiKey.UNREGISTER_SPU: self._unregister_spu,
            ApiKey.LIST_SPUS: self._list_spus,
            ApiKey.CREATE_SPU_GROUP: self._create_spu_group,
            ApiKey.DELETE_SPU_GROUP: self._delete_spu_group,
            ApiKey.LIST_SPU_GROUPS: self._list_spu_groups,
        }
        guard = Guard(auth_key, name="sc-public")
        self.server = Server(
            guard.routes(
                {
                    **{key: self._bounded(handler) for key, handler in admin.items()},
                    ApiKey.WATCH_METADATA: self._watch_metadata,
                    **group_api.routes(),
                }
            ),
            host=host,
            port=port,
            name="sc-public",
            tls=tls,
            on_disconnect=group_api.disconnected,
            budget=budget,
        )

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        return self.server.port

    async def start(self) -> None:
        """Listen."""
        self.feed.start_revision = self.store.revision
        await self.groups.start()
        await self.server.start()

    async def stop(self) -> None:
        """Stop listening and close every client connection (members keep the plan)."""
        self.groups.stopping()
        await self.server.stop()
        await self.groups.stop()

    # -- helpers -----------------------------------------------------------------------

    def _bounded(self, handler: Handler) -> Handler:
        """``handler`` with its KV calls bounded by ``kv_budget_s`` (fail fast while Redis
        is down: the client gets a typed retriable error, not a 30 s wait)."""

        async def bounded(request: Request, ctx: ConnContext) -> Any:
            with retry_budget(self.kv_budget_s):
                reply = handler(request, ctx)
                return await reply if inspect.isawaitable(reply) else reply

        return bounded

    async def _fresh(self) -> int:
        """Wait until the mirror holds what the KV holds now; return the revision."""
        await self.dispatcher.catch_up(_WAIT, processed=False)
        return self.store.revision

    async def _written(self, obj: KvObject[Any, Any]) -> None:
        await self.dispatcher.wait_revision(obj.revision, _WAIT)

    # -- topics ------------------------------------------------------------------------

    async def _create_topic(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.CreateTopicRequest)
        topic = with_tier(msg.topic(), self.tier_root)
        await self._fresh()
        if self.store.topic(topic.name) is not None:  # before the SPU check, as Fluvio
            raise TopicExistsError(f"topic {msg.name!r} already exists")
        if not msg.allow_missing_spus:
            _refuse_missing_spus(topic, self.store)
        if msg.dry_run:
            return c.CreateTopicResponse(topic.to_dict())
        try:
            stored = await self.kv.create(topic)
        except ObjectExistsError:
            raise TopicExistsError(f"topic {msg.name!r} already exists") from None
        log.info(
            "topic created topic=%s partitions=%d replication=%d",
            topic.name,
            topic.spec.partitions,
            topic.spec.replication_factor,
        )
        await self._written(stored)
        return c.CreateTopicResponse(stored.to_dict())

    async def _delete_topic(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.DeleteTopicRequest)
        try:
            await self.kv.delete(Topic.kind, msg.name)
        except NotFoundError:
            raise UnknownTopicError(f"topic {msg.name!r} does not exist") from None
        revision = await self.kv.revision()
        log.info("topic deleted topic=%s", msg.name)
        await self.dispatcher.wait_revision(revision, _WAIT)
        return c.DeleteTopicResponse(revision)

    async def _list_topics(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.ListTopicsRequest)
        revision = await self._fresh()
        wanted = set(msg.names)
        topics = [t for t in self.store.topics() if not wanted or t.name in wanted]
        return c.ListTopicsResponse([t.to_dict() for t in topics], revision)

    async def _describe_topic(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.DescribeTopicRequest)
        revision = await self._fresh()
        topic = self.store.topic(msg.name)
        if topic is None:
            raise UnknownTopicError(f"topic {msg.name!r} does not exist")
        partitions = [p.to_dict() for p in self.store.partitions_of(msg.name)]
        return c.DescribeTopicResponse(topic.to_dict(), partitions, revision)

    async def _list_partitions(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.ListPartitionsRequest)
        revision = await self._fresh()
        if msg.topic is None:
            partitions = self.store.partitions()
        elif self.store.topic(msg.topic) is None:
            raise UnknownTopicError(f"topic {msg.topic!r} does not exist")
        else:
            partitions = self.store.partitions_of(msg.topic)
        return c.ListPartitionsResponse([p.to_dict() for p in partitions], revision)

    async def _add_partitions(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.AddPartitionsRequest)
        for _ in range(_CAS_ATTEMPTS):  # concurrent adds each apply: compare-and-set
            await self._fresh()
            topic = self.store.topic(msg.name)
            if topic is None:
                raise UnknownTopicError(f"topic {msg.name!r} does not exist")
            spec = _grown_spec(topic, msg.count, self.store)
            try:
                stored = await self.kv.update_spec(Topic.kind, topic.name, spec, topic.revision)
            except ConflictError:
                continue
            break
        else:
            raise ConflictError(f"topic {msg.name!r} kept changing; retry add-partition")
        log.info(
            "topic partitions added topic=%s added=%d partitions=%d",
            topic.name,
            msg.count,
            spec.partitions,
        )
        # Answer once the topic controller has handled the spec (the new rows and their
        # partitions written) and the mirror holds it, so the reply names the new leaders.
        await self.dispatcher.wait_revision(stored.revision, _WAIT, processed=True)
        await self._fresh()
        return c.AddPartitionsResponse((self.store.topic(topic.name) or stored).to_dict())

    async def _elect_preferred(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.ElectPreferredRequest)
        await self._fresh()
        return await elect_preferred(self.dispatcher, msg.topic, _WAIT)

    async def _update_topic_schema(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.UpdateTopicSchemaRequest)
        await self._fresh()
        topic = self.store.topic(msg.name)
        if topic is None:
            raise UnknownTopicError(f"topic {msg.name!r} does not exist")
        new = evolved_schema(topic, msg.arrow, self.store.partitions_of(topic.name))
        try:
            stored = await self.kv.update_spec(
                Topic.kind,
                topic.name,
                topic.spec.model_copy(update={"topic_schema": new}),
                topic.revision,
            )
        except ConflictError:
            raise ConflictError(f"topic {msg.name!r} changed meanwhile; retry") from None
        # The partitions carry the topic's settings to their SPUs: each leader checks
        # produced frames against its partition's copy of the schema.
        for part in self.store.partitions_of(topic.name):
            written = await self._set_partition_schema(part, new)
            stored = written if written.revision > stored.revision else stored
        log.info("topic schema updated topic=%s version=%d", topic.name, new.version)
        await self._written(stored)
        return c.UpdateTopicSchemaResponse((self.store.topic(topic.name) or topic).to_dict())

    async def _set_partition_schema(
        self, part: Partition, schema: TopicSchema
    ) -> KvObject[Any, Any]:
        """Write ``schema`` into one partition's spec, re-reading it after a concurrent
        write (compare-and-set), a few times at most."""
        for _ in range(_CAS_ATTEMPTS):
            spec = part.spec.model_copy(update={"topic_schema": schema})
            try:
                return await self.kv.update_spec(Partition.kind, part.name, spec, part.revision)
            except ConflictError:
                await self._fresh()
                part = self.store.partition(part.name) or part
        raise ConflictError(f"partition {part.name!r} kept changing; retry update-schema")

    # -- SPUs --------------------------------------------------------------------------

    async def _register_spu(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.RegisterSpuRequest)
        spec = _spu_spec(msg.spec)
        name = msg.name or f"custom-spu-{spec.spu_id}"
        spu = Spu.build(name, spec)
        async with self._spu_lock:
            await self._fresh()
            holder = self.store.spu(spec.spu_id)
            if holder is not None:
                raise SpuExistsError(
                    f"SPU id {spec.spu_id} is already registered as {holder.name!r}"
                )
            for group in self.store.spu_groups():
                if spec.spu_id in group.spec.spu_ids:
                    raise SpuExistsError(
                        f"SPU id {spec.spu_id} is reserved by SPU group {group.name!r}"
                    )
            try:
                stored = await self.kv.create(spu)
            except ObjectExistsError:
                raise SpuExistsError(f"an SPU named {name!r} already exists") from None
            await self._written(stored)
        log.info("spu registered spu=%d name=%s", spec.spu_id, name)
        assert isinstance(stored, Spu)
        return c.RegisterSpuResponse(stored.public_dict())

    async def _unregister_spu(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.UnregisterSpuRequest)
        await self._fresh()
        spu = (
            self.store.spu(msg.spu_id)
            if msg.spu_id is not None
            else (self.store.spu_by_name(msg.name or ""))
        )
        if spu is None:
            raise NotFoundError(f"no SPU {msg.spu_id if msg.name is None else repr(msg.name)}")
        if spu.spec.spu_type is not SpuType.CUSTOM:
            raise InvalidRequestError(
                f"SPU {spu.spu_id} is managed by its SPU group; scale or delete the group"
            )
        await self.kv.delete(Spu.kind, spu.name)
        revision = await self.kv.revision()
        log.info("spu unregistered spu=%d name=%s", spu.spu_id, spu.name)
        await self.dispatcher.wait_revision(revision, _WAIT)
        return c.UnregisterSpuResponse(revision)

    async def _list_spus(self, request: Request, ctx: ConnContext) -> Message:
        revision = await self._fresh()
        return c.ListSpusResponse([s.public_dict() for s in self.store.spus()], revision)

    # -- SPU groups ---------------------------------------------------------------------

    async def _create_spu_group(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.CreateSpuGroupRequest)
        group = msg.group()
        try:
            stored = await self.kv.create(group)
            log.info(
                "spu group created group=%s replicas=%d min_id=%d",
                group.name,
                group.spec.replicas,
                group.spec.min_id,
            )
        except ObjectExistsError:
            if not msg.update:
                raise
            current = await self.kv.get(SpuGroup.kind, group.name)
            if current is None:
                raise NotFoundError(f"SPU group {group.name!r} vanished; retry") from None
            stored = await self.kv.update_spec(
                SpuGroup.kind, group.name, group.spec, current.revision
            )
            log.info("spu group updated group=%s replicas=%d", group.name, group.spec.replicas)
        await self._written(stored)
        return c.CreateSpuGroupResponse(stored.to_dict())

    async def _delete_spu_group(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.DeleteSpuGroupRequest)
        await self.kv.delete(SpuGroup.kind, msg.name)
        revision = await self.kv.revision()
        log.info("spu group deleted group=%s", msg.name)
        await self.dispatcher.wait_revision(revision, _WAIT)
        return c.DeleteSpuGroupResponse(revision)

    async def _list_spu_groups(self, request: Request, ctx: ConnContext) -> Message:
        revision = await self._fresh()
        return c.ListSpuGroupsResponse([g.to_dict() for g in self.store.spu_groups()], revision)

    # -- metadata watch -----------------------------------------------------------------

    async def _watch_metadata(self, request: Request, ctx: ConnContext) -> AsyncIterator[Encoded]:
        msg = request.message()
        assert isinstance(msg, c.WatchMetadataRequest)
        await self._fresh()
        log.info("metadata watch opened peer=%s from_revision=%s", ctx.peer, msg.from_revision)
        return self.feed.updates(msg.from_revision)


def _refuse_missing_spus(topic: Topic, store: StoreView) -> None:
    """Raise when the registered SPUs cannot hold ``topic`` (see ``missing_spus``).

    Raises:
        InsufficientResourcesError: more replicas per partition than registered SPUs.
        InvalidConfigError: a manual assignment names an unregistered SPU.
    """
    missing = missing_spus(topic, store)
    anyway = "--allow-missing-spus creates it anyway, unusable until the SPUs join"
    if isinstance(missing, InsufficientSpus):
        raise InsufficientResourcesError(
            f"topic {topic.name!r} not created: {missing.reason}; add SPUs or use a "
            f"smaller replication factor ({anyway})"
        )
    if isinstance(missing, InvalidAssignment):
        raise InvalidConfigError(
            f"topic {topic.name!r} not created: {missing.reason}; register the SPU first ({anyway})"
        )


def _grown_spec(topic: Topic, count: int, store: StoreView) -> TopicSpec:
    """``topic``'s spec with ``count`` more partitions, checked as the controller would.

    Raises:
        InvalidConfigError: a total above ``MAX_PARTITIONS``, or a topic with a manual
            replica assignment (its map names every partition). A ``count`` below 1 is
            refused by the message itself.
        InsufficientResourcesError: the registered SPUs are fewer than the replication
            factor, so the new partitions could not be placed.
    """
    spec = topic.spec
    total = spec.partitions + count
    if total > MAX_PARTITIONS:
        raise InvalidConfigError(
            f"count: topic {topic.name!r} would have {total} partitions, "
            f"more than the {MAX_PARTITIONS} a topic may have"
        )
    if spec.is_manual:
        raise InvalidConfigError(
            f"topic {topic.name!r} has a manual replica assignment; partitions cannot be "
            "added to it (create a topic with the new assignment instead)"
        )
    short = short_of_spus(len(store.spus()), spec.replication_factor)
    if short is not None:
        raise InsufficientResourcesError(
            f"partitions not added to topic {topic.name!r}: {short.reason}; add SPUs first"
        )
    return spec.model_copy(update={"partitions": total})


def evolved_schema(topic: Topic, arrow: str, partitions: Sequence[Partition]) -> TopicSchema:
    """The next version of ``topic``'s schema with the user columns ``arrow`` describes.

    An untyped topic that holds no record (no partition's leader reported a record)
    becomes typed: version 1 of ``arrow``. One that holds records stays untyped: its
    records have no columns, so a schema would make them unreadable.

    Raises:
        InvalidConfigError: the topic is untyped and holds records, ``arrow`` is not an
            Arrow schema, or the change is not only appended nullable columns (the
            message says which).
    """
    old = topic.spec.topic_schema
    if old is None:
        if any(max(p.status.leo, p.status.log_start_offset) > 0 for p in partitions):
            raise InvalidConfigError(untyped_with_records(topic.name))
        new = TopicSchema.of(decode_arrow(arrow))
    else:
        new = old.evolve(decode_arrow(arrow))
    if topic.spec.table is TableFormat.DELTA:
        check_delta_types(new.arrow_schema)
    return new


def _spu_spec(data: dict[str, Any]) -> SpuSpec:
    """A custom SPU's spec from a request (``spuType`` defaults to ``Custom``)."""
    spec = Spu.build("spu", data).spec  # errors name the field as ``spec.<field>``
    if spec.spu_type is not SpuType.CUSTOM:
        raise InvalidConfigError(
            "invalid Spu: spec.spuType: only Custom SPUs are registered; "
            "managed SPUs come from SPU groups"
        )
    return spec

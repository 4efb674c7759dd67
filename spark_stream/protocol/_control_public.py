"""SC public messages (port 9003): topics, partitions, SPUs, SPU groups, metadata watch.

Import them from ``spark_stream.protocol.control``, which lists the public names once and
holds the theory of operation; ``docs/protocol.md`` ("SC public messages") has the layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_stream.errors import FluvioError, InvalidConfigError, InvalidRequestError
from spark_stream.models import Partition, Spu, SpuGroup, Topic
from spark_stream.protocol._control_private import _PlainMeta, _wire_error
from spark_stream.protocol.api import ApiKey
from spark_stream.protocol.message import Message, Role, message

# -- public api ------------------------------------------------------------------------


@message(ApiKey.AUTHENTICATE, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class AuthenticateRequest(Message):
    """Present a client token for the rest of the connection (SC and SPU public ports).

    Attributes:
        token: the token (``fv1.<claims>.<mac>``, see ``spark_stream.auth``).
    """

    token: str


@message(ApiKey.AUTHENTICATE, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class AuthenticateResponse(Message):
    """The token was accepted.

    Attributes:
        principal: whom the server took the client for ('' when auth is off).
        required: whether this server checks tokens at all.
    """

    principal: str
    required: bool


class _NamedRequest(Message):
    """A request about one named object, whose name must not be empty."""

    __slots__ = ()
    name: str

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidRequestError(f"{type(self).__name__}.name must not be empty")


@message(ApiKey.CREATE_TOPIC, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class CreateTopicRequest(_NamedRequest):
    """Create a topic.

    Attributes:
        name: the topic name (DNS label, at most 63 characters).
        spec: ``TopicSpec.to_dict()``: partitions, replication factor or a manual
            ``replicaAssignment``, retention, segment size, compression...
        dry_run: validate only, store nothing.
        allow_missing_spus: create the topic even when the registered SPUs cannot hold
            it yet (a replication factor above their number, an assignment naming
            unregistered SPUs); it stays unprovisioned, and unusable, until they join.
            Without it such a topic is refused (``InsufficientResourcesError``,
            ``InvalidConfigError``), as Fluvio's SC does.
    """

    name: str
    spec: dict[str, Any]
    dry_run: bool = False
    allow_missing_spus: bool = False

    def topic(self) -> Topic:
        """The topic object to store (status ``Init``).

        Raises:
            InvalidConfigError: the name or spec is invalid; the message names the field.
        """
        return Topic.build(self.name, self.spec)


@message(ApiKey.CREATE_TOPIC, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class CreateTopicResponse(Message):
    """The stored topic (``Topic.to_dict()``, with its revision)."""

    topic: dict[str, Any]


@message(ApiKey.DELETE_TOPIC, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class DeleteTopicRequest(_NamedRequest):
    """Delete a topic and its partitions (every SPU then deletes their storage)."""

    name: str


@message(ApiKey.DELETE_TOPIC, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class DeleteTopicResponse(Message):
    """The KV revision of the deletion."""

    revision: int = 0


@message(ApiKey.LIST_TOPICS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ListTopicsRequest(Message):
    """List topics; ``names`` empty means all."""

    names: list[str] = field(default_factory=list)


@message(ApiKey.LIST_TOPICS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListTopicsResponse(_PlainMeta):
    """``Topic.to_dict()`` of each topic, sorted by name, and the revision they reflect."""

    topics: list[dict[str, Any]]
    revision: int = 0


@message(ApiKey.DESCRIBE_TOPIC, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class DescribeTopicRequest(_NamedRequest):
    """One topic with its partitions."""

    name: str


@message(ApiKey.DESCRIBE_TOPIC, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class DescribeTopicResponse(_PlainMeta):
    """The topic and its partitions (``Partition.to_dict()``, by index)."""

    topic: dict[str, Any]
    partitions: list[dict[str, Any]]
    revision: int = 0


@message(ApiKey.LIST_PARTITIONS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ListPartitionsRequest(Message):
    """List partitions, of one topic or of all (``topic`` nil)."""

    topic: str | None = None


@message(ApiKey.LIST_PARTITIONS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListPartitionsResponse(_PlainMeta):
    """``Partition.to_dict()`` of each: replicas, leader, resolution, LEO, HW, LRS."""

    partitions: list[dict[str, Any]]
    revision: int = 0


@message(ApiKey.ADD_PARTITIONS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class AddPartitionsRequest(_NamedRequest):
    """Add ``count`` partitions to a topic, as Fluvio's ``AddPartition`` (the number to
    add, not the new total).

    Attributes:
        name: the topic.
        count: partitions to add, at least 1 (partitions are never removed).
    """

    name: str
    count: int = 1

    def __post_init__(self) -> None:
        _NamedRequest.__post_init__(self)
        if isinstance(self.count, bool) or not isinstance(self.count, int):
            raise InvalidConfigError(f"count: expected an integer, got {self.count!r}")
        if self.count < 1:
            raise InvalidConfigError(
                f"count: partitions can only be added, at least 1 at a time, got {self.count!r}"
            )


@message(ApiKey.ADD_PARTITIONS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class AddPartitionsResponse(Message):
    """The topic after the SC provisioned the new partitions (``Topic.to_dict()``; its
    ``replicaMap`` lists them, or ``reason`` says why they wait for SPUs)."""

    topic: dict[str, Any]


@message(ApiKey.ELECT_PREFERRED, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ElectPreferredRequest(Message):
    """Move leadership back to each partition's preferred replica (the first of its
    replica list) where that replica is online and in sync (Kafka's preferred election).

    Attributes:
        topic: only this topic's partitions; nil: every topic.
    """

    topic: str | None = None

    def __post_init__(self) -> None:
        if self.topic is not None and not self.topic:
            raise InvalidRequestError("ElectPreferredRequest.topic must not be empty")


@message(ApiKey.ELECT_PREFERRED, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ElectPreferredResponse(Message):
    """What the election did, by partition name (``{topic}-{index}``).

    Attributes:
        moved: partitions now led by their preferred replica that were not before.
        pending: partitions still led elsewhere (their preferred replica is offline, out
            of sync or damaged, or the move did not finish within the SC's wait).
    """

    moved: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)


@message(ApiKey.UPDATE_TOPIC_SCHEMA, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class UpdateTopicSchemaRequest(_NamedRequest):
    """Evolve a typed topic's schema to the next version.

    Attributes:
        name: the topic.
        arrow: the new user columns as a base64 Arrow IPC schema (``TopicSchema.arrow``);
            the SC accepts it only if it appends nullable columns to the latest version.
    """

    name: str
    arrow: str

    def __post_init__(self) -> None:
        _NamedRequest.__post_init__(self)
        if not self.arrow:
            raise InvalidRequestError("UpdateTopicSchemaRequest.arrow must not be empty")


@message(ApiKey.UPDATE_TOPIC_SCHEMA, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class UpdateTopicSchemaResponse(Message):
    """The topic after the update (``Topic.to_dict()``, its ``topicSchema`` the new
    version)."""

    topic: dict[str, Any]


@message(ApiKey.REGISTER_SPU, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class RegisterSpuRequest(Message):
    """Register a custom SPU so it may connect.

    Attributes:
        spec: ``SpuSpec.to_dict()``; ``spuType`` must be (and defaults to) ``Custom``.
        name: the object name; default ``custom-spu-{spuId}``.
    """

    spec: dict[str, Any]
    name: str | None = None


@message(ApiKey.REGISTER_SPU, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class RegisterSpuResponse(Message):
    """The stored SPU (``Spu.to_dict()``)."""

    spu: dict[str, Any]


@message(ApiKey.UNREGISTER_SPU, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class UnregisterSpuRequest(Message):
    """Remove a custom SPU, named by ``spu_id`` or ``name``; its connection is dropped."""

    spu_id: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if (self.spu_id is None) == (self.name is None):
            raise InvalidRequestError("UnregisterSpuRequest needs exactly one of spu_id, name")


@message(ApiKey.UNREGISTER_SPU, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class UnregisterSpuResponse(Message):
    """The KV revision of the deletion."""

    revision: int = 0


@message(ApiKey.LIST_SPUS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ListSpusRequest(Message):
    """List every SPU, custom and managed."""


@message(ApiKey.LIST_SPUS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListSpusResponse(_PlainMeta):
    """``Spu.to_dict()`` of each SPU, sorted by id: endpoints and Online/Offline."""

    spus: list[dict[str, Any]]
    revision: int = 0


@message(ApiKey.CREATE_SPU_GROUP, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class CreateSpuGroupRequest(_NamedRequest):
    """Create an SPU group, or with ``update`` change an existing one (e.g. scale).

    Attributes:
        name: the group name.
        spec: ``SpuGroupSpec.to_dict()``: replicas, minId, template.
        update: when the group exists, replace its spec instead of failing with
            ``ObjectExistsError`` (there is no separate update api).
    """

    name: str
    spec: dict[str, Any]
    update: bool = False

    def group(self) -> SpuGroup:
        """The group object (status ``Init``).

        Raises:
            InvalidConfigError: the name or spec is invalid; the message names the field.
        """
        return SpuGroup.build(self.name, self.spec)


@message(ApiKey.CREATE_SPU_GROUP, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class CreateSpuGroupResponse(Message):
    """The stored group (``SpuGroup.to_dict()``)."""

    group: dict[str, Any]


@message(ApiKey.DELETE_SPU_GROUP, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class DeleteSpuGroupRequest(_NamedRequest):
    """Delete an SPU group; its managed SPUs are terminated and removed."""

    name: str


@message(ApiKey.DELETE_SPU_GROUP, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class DeleteSpuGroupResponse(Message):
    """The KV revision of the deletion."""

    revision: int = 0


@message(ApiKey.LIST_SPU_GROUPS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ListSpuGroupsRequest(Message):
    """List every SPU group."""


@message(ApiKey.LIST_SPU_GROUPS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListSpuGroupsResponse(_PlainMeta):
    """``SpuGroup.to_dict()`` of each group, sorted by name."""

    groups: list[dict[str, Any]]
    revision: int = 0


@message(ApiKey.WATCH_METADATA, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class WatchMetadataRequest(Message):
    """Open the metadata stream.

    Attributes:
        from_revision: the ``revision`` of the last update the client applied; the SC
            sends only later changes when it still holds them, else a full snapshot.
            Nil: start with a full snapshot.
    """

    from_revision: int | None = None

    def __post_init__(self) -> None:
        if self.from_revision is not None and self.from_revision < 0:
            raise InvalidRequestError("WatchMetadataRequest.from_revision must be >= 0")


@message(ApiKey.WATCH_METADATA, Role.PUSH)
@dataclass(frozen=True, slots=True)
class MetadataUpdate(_PlainMeta):
    """One push of the metadata stream.

    Attributes:
        full: True: the lists are the whole cluster, replace the local view.
        revision: the KV revision this update brings the client to.
        spus: ``Spu.to_dict()`` of SPUs added or changed (endpoints, Online/Offline).
        topics: ``Topic.to_dict()`` of topics added or changed.
        partitions: ``Partition.to_dict()`` of partitions added or whose replicas,
            leader or resolution changed (LEO/HW-only changes are not sent).
        deleted: ``{"kind": ..., "name": ...}`` of objects removed.
    """

    full: bool
    revision: int
    spus: list[dict[str, Any]] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[dict[str, Any]] = field(default_factory=list)

    def objects(self) -> tuple[list[Spu], list[Topic], list[Partition]]:
        """The SPUs, topics and partitions as models.

        Raises:
            InvalidRequestError: an entry does not validate (names the field).
        """
        try:
            return (
                [Spu.from_dict(d) for d in self.spus],
                [Topic.from_dict(d) for d in self.topics],
                [Partition.from_dict(d) for d in self.partitions],
            )
        except FluvioError as exc:
            raise _wire_error("MetadataUpdate", exc) from None

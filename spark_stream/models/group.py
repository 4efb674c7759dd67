"""The ConsumerGroup object: a group's config (spec) and its durable plan (status).

Spec (seed ``004``, brief 4.4)::

    spec:
      kind: members            # or `external`: a progress-only group (Spark), no members
      sessionTimeoutMs: 10000
      heartbeatIntervalMs: 1000
      rebalanceTimeoutMs: 60000
      offsetsRetentionMs: 604800000

Status (written by the SC's group reducer, ``sc/controllers/group``)::

    status:
      state: Stable
      generation: 4            # bumps only when the assignment content changes
      groupEpoch: 3            # bumps when membership or subscriptions change
      members:
        - {memberId: 0b6f..., instanceId: web-1, clientId: c, host: 10.0.0.1,
           memberEpoch: 2, topics: [orders], joinedAt: 1721000000000}
      assignment:
        - {topic: orders, partition: 0, memberId: 0b6f..., grantEpoch: 4, revoking: false}

A partition appears at most once in ``assignment``: one grant holder at a time, by
construction. ``revoking`` marks a grant its holder has been asked to give up; it stays
valid (the holder may still commit) until the holder releases it. Lists are kept sorted
(members by id, assignment by topic and partition), so equal plans compare equal.

Every group entry point validates its fields with ``check_group_name``,
``check_member_id``, ``check_instance_id`` and ``check_member_epoch``: each failure is an
``InvalidRequestError`` whose message starts with the field's name.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import ClassVar, Self

from pydantic import Field, field_validator, model_validator

from spark_stream.errors import InvalidRequestError
from spark_stream.models._base import (
    NAME_RULE,
    CaseInsensitiveEnum,
    FrozenModel,
    KvObject,
    Metadata,
)
from spark_stream.models.topic import MAX_PARTITIONS, MAX_TOPIC_NAME

__all__ = [
    "MAX_GROUP_NAME",
    "MAX_EPOCH",
    "MAX_CLIENT_FIELD",
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "GroupKind",
    "GroupState",
    "ConsumerGroupSpec",
    "GroupMember",
    "GroupGrant",
    "ConsumerGroupStatus",
    "ConsumerGroup",
    "check_group_name",
    "check_instance_id",
    "check_member_id",
    "check_member_epoch",
    "check_pattern",
    "matching_topics",
]

#: Group names and instance ids: the topic-name characters, up to Kafka's 249.
MAX_GROUP_NAME = 249
#: Epochs and generations are int32, as Kafka's.
MAX_EPOCH = 2**31 - 1
#: ``client_id`` and ``host`` are free text up to this many characters.
MAX_CLIENT_FIELD = 255
#: A subscription pattern is a regular expression of at most this many characters.
MAX_PATTERN = 1000
#: ``member_epoch`` of a leave: the member is gone.
LEAVE_EPOCH = -1
#: ``member_epoch`` of a static member's temporary leave: it keeps its partitions.
STATIC_LEAVE_EPOCH = -2

_MS_PER_DAY = 86_400_000


# -- validation shared by every entry point ------------------------------------------


def _name(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(f"{field}: must be a string, got {type(value).__name__}")
    if len(value) > MAX_GROUP_NAME:
        raise InvalidRequestError(
            f"{field}: {value[:40]!r}... is longer than {MAX_GROUP_NAME} characters"
        )
    if not NAME_RULE.match(value):
        raise InvalidRequestError(
            f"{field}: {value!r} must be lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return value


def check_group_name(value: object, field: str = "group") -> str:
    """Return ``value`` if it is a valid group name (topic-name characters, <= 249).

    Raises:
        InvalidRequestError: the message starts with ``field``.
    """
    return _name(value, field)


def check_instance_id(value: object, field: str = "instance_id") -> str:
    """Return ``value`` if it is a valid static-member instance id (as a group name).

    Raises:
        InvalidRequestError: the message starts with ``field``.
    """
    return _name(value, field)


def check_member_id(value: object, field: str = "member_id") -> str:
    """Return ``value`` if it is a canonical lowercase UUID other than the nil one.

    Raises:
        InvalidRequestError: the message starts with ``field``.
    """
    if not isinstance(value, str):
        raise InvalidRequestError(f"{field}: must be a string, got {type(value).__name__}")
    try:
        parsed: uuid.UUID | None = uuid.UUID(value)
    except ValueError:
        parsed = None
    if parsed is None or str(parsed) != value:
        raise InvalidRequestError(f"{field}: {value[:64]!r} is not a canonical lowercase UUID")
    if parsed.int == 0:
        raise InvalidRequestError(f"{field}: must not be the nil UUID")
    return value


def check_pattern(value: object, field: str = "pattern") -> str:
    """Return ``value`` if it is a subscription pattern: a Python regular expression that
    a topic name must match whole (``re.fullmatch``, as Kafka's ``Pattern.matches``).

    Raises:
        InvalidRequestError: the message starts with ``field``.
    """
    if not isinstance(value, str):
        raise InvalidRequestError(f"{field}: must be a string, got {type(value).__name__}")
    if not value or len(value) > MAX_PATTERN:
        raise InvalidRequestError(f"{field}: must be 1-{MAX_PATTERN} characters")
    try:
        re.compile(value)
    except re.error as exc:
        msg = f"{field}: {value[:64]!r} is not a regular expression: {exc}"
        raise InvalidRequestError(msg) from None
    return value


def matching_topics(pattern: str | None, topics: Iterable[str]) -> set[str]:
    """The names in ``topics`` that ``pattern`` matches whole (none without a pattern)."""
    if pattern is None:
        return set()
    compiled = re.compile(pattern)  # re caches compiled patterns
    return {topic for topic in topics if compiled.fullmatch(topic)}


def check_member_epoch(value: object, field: str = "member_epoch", *, leave: bool = False) -> int:
    """Return ``value`` if it is a valid member epoch.

    A join or heartbeat carries ``0`` (new member) or a positive epoch (a known member);
    a leave carries ``-1`` (leave) or ``-2`` (a static member's temporary leave).

    Args:
        value: the epoch as received.
        field: the field name for the error.
        leave: the epoch of a leave request.

    Raises:
        InvalidRequestError: the message starts with ``field``.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequestError(f"{field}: must be an integer, got {type(value).__name__}")
    if leave:
        if value not in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            raise InvalidRequestError(f"{field}: a leave carries -1 or -2, got {value}")
    elif not 0 <= value <= MAX_EPOCH:
        raise InvalidRequestError(f"{field}: must be in [0, {MAX_EPOCH}], got {value}")
    return value


def _as_value_error(check: Callable[[object], object], value: object) -> None:
    """Run an ``InvalidRequestError`` check inside a pydantic validator."""
    try:
        check(value)
    except InvalidRequestError as exc:
        # pydantic reports a ValueError against the field path already.
        raise ValueError(str(exc).split(": ", 1)[-1]) from None


# -- spec ------------------------------------------------------------------------------


class GroupKind(CaseInsensitiveEnum):
    """Whether members join the group or it only mirrors an outside reader's progress."""

    MEMBERS = "members"
    #: A Spark query's progress group: offsets written unfenced, never any members.
    EXTERNAL = "external"


class ConsumerGroupSpec(FrozenModel):
    """A group's configuration; the bounds are the brief's (4.4)."""

    kind: GroupKind = GroupKind.MEMBERS
    session_timeout_ms: int = Field(default=10_000, ge=3_000, le=60_000)
    heartbeat_interval_ms: int = Field(default=1_000, ge=500, le=5_000)
    #: How long a member may hold a revoked partition (and, client side, go without
    #: polling) before it is fenced: Kafka's ``max.poll.interval.ms``.
    rebalance_timeout_ms: int = Field(default=60_000, ge=1_000, le=1_800_000)
    #: How long the offsets of a group with no members are kept.
    offsets_retention_ms: int = Field(default=7 * _MS_PER_DAY, ge=60_000, le=365 * _MS_PER_DAY)

    @model_validator(mode="after")
    def _heartbeats_fit(self) -> Self:
        # Two heartbeats per session at least, or one late heartbeat expires a member.
        if 2 * self.heartbeat_interval_ms > self.session_timeout_ms:
            raise ValueError(
                f"heartbeatIntervalMs ({self.heartbeat_interval_ms}) must be at most half "
                f"of sessionTimeoutMs ({self.session_timeout_ms})"
            )
        return self


# -- status ----------------------------------------------------------------------------


class GroupState(CaseInsensitiveEnum):
    """Where a group stands (the CLI's STATE column)."""

    #: No members.
    EMPTY = "Empty"
    #: Reserved for the wiring step: grants published, gates not yet confirmed. The
    #: reducer grants in the same write as the plan, so it never writes this state.
    ASSIGNING = "Assigning"
    #: A handoff is in progress: some grant is revoking.
    RECONCILING = "Reconciling"
    #: Every member holds its target.
    STABLE = "Stable"
    #: A progress-only group (``kind: external``).
    EXTERNAL = "External"


class GroupMember(FrozenModel):
    """A member as the plan records it (liveness is the SC's, in memory)."""

    member_id: str
    instance_id: str | None = None
    client_id: str = Field(default="", max_length=MAX_CLIENT_FIELD)
    host: str = Field(default="", max_length=MAX_CLIENT_FIELD)
    #: Bumps each time the SC pushes this member a changed assignment; 1 after joining.
    member_epoch: int = Field(default=1, ge=1, le=MAX_EPOCH)
    #: Subscribed topic names, sorted and distinct.
    topics: tuple[str, ...] = ()
    #: A subscription pattern: every existing topic it matches whole is subscribed too
    #: (resolved against the topics each time the plan is computed).
    pattern: str | None = None
    #: When the member joined (Unix ms).
    joined_at: int = Field(default=0, ge=0)

    @field_validator("member_id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        _as_value_error(check_member_id, value)
        return value

    @field_validator("instance_id")
    @classmethod
    def _instance(cls, value: str | None) -> str | None:
        if value is not None:
            _as_value_error(check_instance_id, value)
        return value

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            _as_value_error(check_pattern, value)
        return value

    def subscribed(self, topics: Iterable[str]) -> tuple[str, ...]:
        """The topics this member reads among ``topics`` (the existing ones): those it
        names, and those its pattern matches. Sorted."""
        return tuple(sorted(set(self.topics) | matching_topics(self.pattern, topics)))

    @field_validator("topics")
    @classmethod
    def _topics(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for topic in value:
            if len(topic) > MAX_TOPIC_NAME or not NAME_RULE.match(topic):
                raise ValueError(f"{topic!r} is not a topic name")
        return tuple(sorted(set(value)))


class GroupGrant(FrozenModel):
    """One partition's grant: who may fetch and commit it, under which grant epoch."""

    topic: str
    partition: int = Field(ge=0, lt=MAX_PARTITIONS)
    member_id: str
    #: The generation at which the partition was granted to this member.
    grant_epoch: int = Field(ge=1, le=MAX_EPOCH)
    #: The holder was asked to release it; the grant stays valid until it does.
    revoking: bool = False

    @property
    def tp(self) -> tuple[str, int]:
        """``(topic, partition)``."""
        return (self.topic, self.partition)


class ConsumerGroupStatus(FrozenModel):
    """A group's durable plan: members, grants and the counters that fence them."""

    state: GroupState = GroupState.EMPTY
    generation: int = Field(default=0, ge=0, le=MAX_EPOCH)
    group_epoch: int = Field(default=0, ge=0, le=MAX_EPOCH)
    members: tuple[GroupMember, ...] = ()
    assignment: tuple[GroupGrant, ...] = ()

    @field_validator("members")
    @classmethod
    def _members_sorted_distinct(cls, value: tuple[GroupMember, ...]) -> tuple[GroupMember, ...]:
        ordered = tuple(sorted(value, key=lambda m: m.member_id))
        _distinct([m.member_id for m in ordered], "memberId")
        _distinct([m.instance_id for m in ordered if m.instance_id is not None], "instanceId")
        return ordered

    @field_validator("assignment")
    @classmethod
    def _grants_sorted_distinct(cls, value: tuple[GroupGrant, ...]) -> tuple[GroupGrant, ...]:
        keys = [(g.topic, g.partition) for g in value]
        if any(a >= b for a, b in zip(keys, keys[1:], strict=False)):  # not sorted: sort
            value = tuple(sorted(value, key=lambda g: (g.topic, g.partition)))
            keys.sort()
            for a, b in zip(keys, keys[1:], strict=False):
                if a == b:
                    raise ValueError(f"partition '{a[0]}/{a[1]}' is listed twice")
        return value

    @model_validator(mode="after")
    def _grants_fit(self) -> Self:
        ids = {m.member_id for m in self.members}
        for grant in self.assignment:
            if grant.member_id not in ids:
                raise ValueError(
                    f"assignment: {grant.topic}/{grant.partition} is granted to "
                    f"{grant.member_id}, which is not a member"
                )
            if grant.grant_epoch > self.generation:
                raise ValueError(
                    f"assignment: {grant.topic}/{grant.partition} has grantEpoch "
                    f"{grant.grant_epoch} above the generation {self.generation}"
                )
        return self

    def member(self, member_id: str) -> GroupMember | None:
        """The member with ``member_id``, if any."""
        for member in self.members:
            if member.member_id == member_id:
                return member
        return None

    def grants_of(self, member_id: str) -> tuple[GroupGrant, ...]:
        """The grants ``member_id`` holds (revoking ones included), sorted."""
        return tuple(g for g in self.assignment if g.member_id == member_id)

    def owners(self) -> dict[tuple[str, int], tuple[str, int]]:
        """The owner map (the commit fence): ``(topic, p) -> (member_id, grant_epoch)``.

        Revoking grants are in it: their holder may still commit its final offset.
        """
        return {g.tp: (g.member_id, g.grant_epoch) for g in self.assignment}


def _distinct(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} is listed twice")
        seen.add(value)


class ConsumerGroup(KvObject[ConsumerGroupSpec, ConsumerGroupStatus]):
    """A consumer group object (kind ``ConsumerGroup``), named by the group."""

    kind: ClassVar[str] = "ConsumerGroup"

    spec: ConsumerGroupSpec = ConsumerGroupSpec()
    status: ConsumerGroupStatus = ConsumerGroupStatus()

    @field_validator("metadata")
    @classmethod
    def _group_name(cls, value: Metadata) -> Metadata:
        _as_value_error(check_group_name, value.name)
        return value

    @classmethod
    def new(
        cls,
        name: str,
        spec: ConsumerGroupSpec | None = None,
        status: ConsumerGroupStatus | None = None,
    ) -> ConsumerGroup:
        """Build a group object with revision 0 (the store assigns the real one)."""
        return cls.build(name, spec or ConsumerGroupSpec(), status)

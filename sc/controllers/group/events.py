"""What the group reducer reduces: the snapshot of one group, and the events about it.

The events come from the SC's group coordinator (the wiring step): membership news from
its member sessions (``GROUP_JOIN`` streams, heartbeats, releases, leaves, timers) and
topic news from the local store. Connections are named by an ``int`` the coordinator
chooses (one per client connection); the reducer only compares them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from sc.controllers.group.assignor import TopicPartition
from spark_stream.models import ConsumerGroup

__all__ = [
    "GroupSnapshot",
    "MemberJoined",
    "MemberLeft",
    "ExpiryCause",
    "MemberExpired",
    "PartitionsReleased",
    "RebalanceTimedOut",
    "TopicPartitionsChanged",
    "TopicDeleted",
    "Seed",
    "GroupEvent",
]


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """Everything the reducer reads about one group.

    Attributes:
        group: the group object as last read from the KV (the published plan and its
            revision, which the plan's write compares against).
        topics: the partition count of every existing topic (at least those the
            group's members name).
        sessions: ``member_id -> connection`` for members with a live session now (the
            coordinator's memory; empty right after an SC start).
    """

    group: ConsumerGroup
    topics: Mapping[str, int]
    sessions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemberJoined:
    """A ``GROUP_JOIN`` on ``connection``: a new member (epoch 0) or a known one (> 0).

    Attributes:
        member_id: the client-chosen member id (a canonical UUID).
        connection: the connection the join arrived on.
        member_epoch: 0 for a new member; the epoch it last received to resume.
        topics: the topics it subscribes to.
        instance_id: a static member's instance id.
        client_id: the client's free-text id.
        host: where the member connects from.
        owned: the partitions it believes it holds (a resuming member).
        now_ms: the coordinator's clock (Unix ms), recorded as ``joined_at``.
        pattern: a subscription pattern (topics it matches whole are subscribed too).
    """

    member_id: str
    connection: int
    member_epoch: int
    topics: tuple[str, ...]
    instance_id: str | None = None
    client_id: str = ""
    host: str = ""
    owned: tuple[TopicPartition, ...] = ()
    now_ms: int = 0
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class MemberLeft:
    """A ``GROUP_LEAVE``: ``-1`` leaves for good, ``-2`` is a static member's pause."""

    member_id: str
    connection: int
    member_epoch: int = -1


class ExpiryCause(StrEnum):
    """Why the coordinator gave up on a member's session."""

    #: The member's connection closed (a dead process): a dynamic member leaves now.
    CONNECTION_CLOSED = "connection closed"
    #: No heartbeat for ``session_timeout_ms`` (or a static member stayed away as long).
    SESSION_TIMEOUT = "session timeout"


@dataclass(frozen=True, slots=True)
class MemberExpired:
    """The coordinator lost the member's session.

    Attributes:
        member_id: the member.
        connection: the session's connection when the cause arose (``None``: the member
            had none, e.g. a static member away or a member not back after an SC
            start). An event whose connection is no longer the member's is stale.
        cause: what ended the session.
    """

    member_id: str
    connection: int | None
    cause: ExpiryCause


@dataclass(frozen=True, slots=True)
class PartitionsReleased:
    """A ``GROUP_RELEASE``: the member stopped fetching these and committed them."""

    member_id: str
    connection: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class RebalanceTimedOut:
    """The rebalance timer the coordinator armed for a push with revokes ran out.

    ``member_epoch`` is the epoch of that push: if the member has moved on since (a newer
    push), the timer is stale and the newer push's own timer decides.
    """

    member_id: str
    member_epoch: int


@dataclass(frozen=True, slots=True)
class TopicPartitionsChanged:
    """A topic now has ``partitions`` partitions (created, or grown)."""

    topic: str
    partitions: int


@dataclass(frozen=True, slots=True)
class TopicDeleted:
    """A topic was deleted: its grants go (members stay subscribed to the name)."""

    topic: str


@dataclass(frozen=True, slots=True)
class Seed:
    """The SC (re)started: take the published plan as the sticky state and re-check it."""


GroupEvent = (
    MemberJoined
    | MemberLeft
    | MemberExpired
    | PartitionsReleased
    | RebalanceTimedOut
    | TopicPartitionsChanged
    | TopicDeleted
    | Seed
)

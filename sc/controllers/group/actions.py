"""What the group reducer asks the coordinator to do, as plain data.

The coordinator (wiring step) carries them out **in list order** and stops at the first
failure: ``PublishPlan`` first (a compare-and-set on the group's revision, writing the
status and the owner map in one step); if it conflicts, every later action of the list
is dropped and the event is reduced again on a fresh snapshot. Then ``FenceMember``
(close the connection), ``UpdateGates`` (to each partition's leader SPU) and the
``PushAssignment``s, so a member learns of a grant only after its gate was sent.
A ``Reject`` comes alone: the request is refused and nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sc.controllers.group.assignor import TopicPartition
from spark_stream.errors import FluvioError
from spark_stream.models import ConsumerGroupStatus

__all__ = [
    "Granted",
    "PublishPlan",
    "PushAssignment",
    "FenceMember",
    "GateEntry",
    "UpdateGates",
    "Reject",
    "GroupAction",
]


@dataclass(frozen=True, slots=True, order=True)
class Granted:
    """A partition in an assignment push, with the grant epoch to fetch and commit it."""

    topic: str
    partition: int
    grant_epoch: int

    @property
    def tp(self) -> TopicPartition:
        """``(topic, partition)``."""
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class PublishPlan:
    """Write ``status`` to the group, if it is still at ``revision``, with its owner map.

    The owner map (``status.owners()``) replaces the group's in the same atomic write.
    """

    group: str
    status: ConsumerGroupStatus
    revision: int

    def owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """``(topic, p) -> (member_id, grant_epoch)``: the commit fence to write."""
        return self.status.owners()


@dataclass(frozen=True, slots=True)
class PushAssignment:
    """Send a ``GROUP_ASSIGNMENT`` to ``member_id`` on ``connection``.

    Attributes:
        assigned: what the member may fetch and commit.
        revoke: what it must stop fetching, commit and release (its grant is valid
            until then).
        heartbeat_interval_ms, session_timeout_ms: the group's timing, for the client.
    """

    group: str
    member_id: str
    connection: int
    generation: int
    member_epoch: int
    assigned: tuple[Granted, ...]
    revoke: tuple[Granted, ...]
    heartbeat_interval_ms: int
    session_timeout_ms: int


@dataclass(frozen=True, slots=True)
class FenceMember:
    """Close ``member_id``'s session on ``connection`` (``FencedMember`` to the client)."""

    group: str
    member_id: str
    connection: int
    reason: str


@dataclass(frozen=True, slots=True, order=True)
class GateEntry:
    """One delivery gate for the partition's leader SPU.

    ``member_id`` ``None`` closes the gate (no one may fetch; ``grant_epoch`` is 0).
    An SPU ignores an entry older (by ``generation``) than the one it holds.
    """

    group: str
    topic: str
    partition: int
    member_id: str | None
    grant_epoch: int
    generation: int


@dataclass(frozen=True, slots=True)
class UpdateGates:
    """Send these gates to their partitions' leaders (the coordinator routes them)."""

    entries: tuple[GateEntry, ...]


@dataclass(frozen=True, slots=True)
class Reject:
    """Refuse the request that arrived on ``connection`` with a typed error."""

    connection: int
    error: type[FluvioError]
    message: str

    def exception(self) -> FluvioError:
        """The error to send back."""
        return self.error(self.message)


GroupAction = PublishPlan | PushAssignment | FenceMember | UpdateGates | Reject

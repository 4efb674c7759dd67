"""Consumer-group messages on the SC public port (9003): members (5001-5006), admin (5010-5015).

Theory of operation (``docs/consumer-groups.md``, "Coordinator"). A member opens a
``GROUP_JOIN`` stream; the SC pushes a ``GroupAssignment`` first and again each time
what the member is told changes. On the same connection the member sends heartbeats,
releases (after a revoke: it stopped fetching and committed), commits, and finally a
leave. Closing the connection is a leave for a dynamic member. Admin requests may come
from any connection.

Every request checks its fields when built and when decoded: a bad one is an
``InvalidRequestError`` whose message starts with the field (``owned[1].partition: ...``),
answered before anything is written; the connection stays usable. Partitions travel as
``{"topic", "partition"}`` maps, grants as ``{"topic", "partition", "grantEpoch"}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spark_stream.errors import InvalidRequestError
from spark_stream.models import (
    check_group_name,
    check_instance_id,
    check_member_epoch,
    check_member_id,
    check_pattern,
)
from spark_stream.protocol._control_private import _PlainMeta
from spark_stream.protocol.api import ApiKey
from spark_stream.protocol.message import Role, message

__all__ = [
    "GroupJoinRequest",
    "GroupAssignment",
    "GroupHeartbeatRequest",
    "GroupHeartbeatResponse",
    "GroupReleaseRequest",
    "GroupReleaseResponse",
    "GroupLeaveRequest",
    "GroupLeaveResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "DescribeGroupRequest",
    "DescribeGroupResponse",
    "DeleteGroupRequest",
    "DeleteGroupResponse",
    "RESET_MODES",
    "ResetOffsetsRequest",
    "ResetOffsetsResponse",
    "DeleteOffsetsRequest",
    "DeleteOffsetsResponse",
    "ProgressCommitRequest",
    "ProgressCommitResponse",
    "tp_list",
    "grant_list",
]

_MAX_I32 = 2**31 - 1
_MAX_I64 = 2**63 - 1
_MAX_ITEMS = 100_000


def _int(value: object, name: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequestError(f"{name}: must be an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise InvalidRequestError(f"{name}: must be in [{lo}, {hi}], got {value}")
    return value


def _topic(value: object, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 249:
        raise InvalidRequestError(f"{name}: must be a topic name (1-249 characters)")
    return value


def _list(value: object, name: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise InvalidRequestError(f"{name}: must be a list, got {type(value).__name__}")
    if len(value) > _MAX_ITEMS:
        raise InvalidRequestError(f"{name}: at most {_MAX_ITEMS} entries")
    return list(value)


def _entry(value: object, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{name}: must be a map, got {type(value).__name__}")
    return value


def tp_list(value: object, name: str) -> tuple[tuple[str, int], ...]:
    """Check a list of ``{"topic", "partition"}`` maps; return ``(topic, partition)``s.

    Raises:
        InvalidRequestError: the message names the entry and field.
    """
    out: list[tuple[str, int]] = []
    for i, item in enumerate(_list(value, name)):
        entry = _entry(item, f"{name}[{i}]")
        out.append(
            (
                _topic(entry.get("topic"), f"{name}[{i}].topic"),
                _int(entry.get("partition"), f"{name}[{i}].partition", 0, _MAX_I32),
            )
        )
    if len(set(out)) != len(out):
        raise InvalidRequestError(f"{name}: a partition is listed twice")
    return tuple(out)


def grant_list(grants: Iterable[Any]) -> list[dict[str, Any]]:
    """Grants (anything with ``topic``, ``partition``, ``grant_epoch``) as wire maps."""
    return [
        {"topic": g.topic, "partition": g.partition, "grantEpoch": g.grant_epoch} for g in grants
    ]


def _group(value: object) -> None:
    check_group_name(value, "group")


# -- member apis -------------------------------------------------------------------------


@message(ApiKey.GROUP_JOIN, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class GroupJoinRequest(_PlainMeta):
    """Open a member session (a stream of ``GroupAssignment`` pushes).

    Attributes:
        group: the group name (created on first join).
        member_id: the client-chosen member id, a canonical lowercase UUID.
        topics: the topics subscribed to (at least one, unless ``pattern`` is given).
        member_epoch: 0 for a new member; the last epoch received to resume.
        instance_id: a static member's instance id.
        client_id: free text shown by ``describe``.
        rebalance_timeout_ms: how long a revoke may take (set when the group is created).
        session_timeout_ms: how long without heartbeats ends the member (idem).
        owned: partitions a resuming member believes it holds.
        pattern: a regular expression: every topic it matches whole is subscribed too,
            including topics created later (resolved by the SC).
    """

    group: str
    member_id: str
    topics: list[str]
    member_epoch: int = 0
    instance_id: str | None = None
    client_id: str = ""
    rebalance_timeout_ms: int | None = None
    session_timeout_ms: int | None = None
    owned: list[dict[str, Any]] = field(default_factory=list)
    pattern: str | None = None

    def __post_init__(self) -> None:
        _group(self.group)
        check_member_id(self.member_id)
        topics = _list(self.topics, "topics")
        if self.pattern is not None:
            check_pattern(self.pattern)
        elif not topics:
            raise InvalidRequestError("topics: must name at least one topic (or give a pattern)")
        for i, t in enumerate(topics):
            _topic(t, f"topics[{i}]")
        if len(set(topics)) != len(topics):
            raise InvalidRequestError("topics: a topic is listed twice")
        check_member_epoch(self.member_epoch)
        if self.instance_id is not None:
            check_instance_id(self.instance_id)
        if not isinstance(self.client_id, str) or len(self.client_id) > 255:
            raise InvalidRequestError("client_id: must be a string of at most 255 characters")
        if self.rebalance_timeout_ms is not None:
            _int(self.rebalance_timeout_ms, "rebalance_timeout_ms", 1_000, 1_800_000)
        if self.session_timeout_ms is not None:
            _int(self.session_timeout_ms, "session_timeout_ms", 3_000, 60_000)
        tp_list(self.owned, "owned")

    def owned_partitions(self) -> tuple[tuple[str, int], ...]:
        """``owned`` as ``(topic, partition)``s."""
        return tp_list(self.owned, "owned")


@message(ApiKey.GROUP_JOIN, Role.PUSH)
@dataclass(frozen=True, slots=True)
class GroupAssignment(_PlainMeta):
    """What a member holds now (a push on its ``GROUP_JOIN`` stream).

    Attributes:
        generation: the plan's generation.
        member_epoch: the member's epoch; send it with heartbeats, releases, leaves.
        heartbeat_ms: how often to heartbeat.
        session_ms: heartbeats missing this long end the member.
        assigned: grants to fetch and commit (``grantEpoch`` goes with both).
        revoke: grants to stop fetching, commit and release (still valid until then).
    """

    generation: int
    member_epoch: int
    heartbeat_ms: int
    session_ms: int
    assigned: list[dict[str, Any]] = field(default_factory=list)
    revoke: list[dict[str, Any]] = field(default_factory=list)


class _MemberRequest(_PlainMeta):
    __slots__ = ()
    group: str
    member_id: str


@message(ApiKey.GROUP_HEARTBEAT, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class GroupHeartbeatRequest(_MemberRequest):
    """A member is alive, at ``member_epoch``, holding ``owned``. No KV write."""

    group: str
    member_id: str
    member_epoch: int
    owned: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _group(self.group)
        check_member_id(self.member_id)
        check_member_epoch(self.member_epoch)
        tp_list(self.owned, "owned")


@message(ApiKey.GROUP_HEARTBEAT, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class GroupHeartbeatResponse(_PlainMeta):
    """The member's current assignment (as the last push said)."""

    generation: int
    member_epoch: int
    assigned: list[dict[str, Any]] = field(default_factory=list)
    revoke: list[dict[str, Any]] = field(default_factory=list)


@message(ApiKey.GROUP_RELEASE, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class GroupReleaseRequest(_MemberRequest):
    """The member stopped fetching ``partitions`` (revoked) and committed them."""

    group: str
    member_id: str
    member_epoch: int
    partitions: list[dict[str, Any]]

    def __post_init__(self) -> None:
        _group(self.group)
        check_member_id(self.member_id)
        check_member_epoch(self.member_epoch)
        tp_list(self.partitions, "partitions")


@message(ApiKey.GROUP_RELEASE, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class GroupReleaseResponse(_PlainMeta):
    """The plan's generation after the release."""

    generation: int


@message(ApiKey.GROUP_LEAVE, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class GroupLeaveRequest(_MemberRequest):
    """Leave (``-1``), or a static member's temporary leave (``-2``)."""

    group: str
    member_id: str
    member_epoch: int = -1

    def __post_init__(self) -> None:
        _group(self.group)
        check_member_id(self.member_id)
        check_member_epoch(self.member_epoch, leave=True)


@message(ApiKey.GROUP_LEAVE, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class GroupLeaveResponse(_PlainMeta):
    """The plan's generation after the leave."""

    generation: int


@message(ApiKey.OFFSET_COMMIT, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class OffsetCommitRequest(_MemberRequest):
    """Commit offsets (the next offset to read), fenced per partition by grant epoch.

    ``commits``: ``{"topic", "partition", "offset", "grantEpoch", "metadata"?}`` maps.
    """

    group: str
    member_id: str
    commits: list[dict[str, Any]]

    def __post_init__(self) -> None:
        _group(self.group)
        check_member_id(self.member_id)
        tp_list(self.commits, "commits")
        for i, item in enumerate(self.commits):
            _int(item.get("offset"), f"commits[{i}].offset", 0, _MAX_I64)
            _int(item.get("grantEpoch"), f"commits[{i}].grantEpoch", 0, _MAX_I32)
            meta = item.get("metadata", "")
            if not isinstance(meta, str) or len(meta.encode()) > 4096:
                raise InvalidRequestError(f"commits[{i}].metadata: a string of at most 4 KiB")


@message(ApiKey.OFFSET_COMMIT, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class OffsetCommitResponse(_PlainMeta):
    """Per partition, in request order: ``{"topic", "partition", "errorCode", "message",
    "committed"}`` (``errorCode`` 0: stored; ``committed``: the stored offset or nil)."""

    results: list[dict[str, Any]]


@message(ApiKey.OFFSET_FETCH, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class OffsetFetchRequest(_PlainMeta):
    """Committed offsets of a group (any reader; nil ``partitions``: all of them)."""

    group: str
    partitions: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        _group(self.group)
        if self.partitions is not None:
            tp_list(self.partitions, "partitions")


@message(ApiKey.OFFSET_FETCH, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class OffsetFetchResponse(_PlainMeta):
    """``{"topic", "partition", "offset", "grantEpoch", "tsMs", "metadata"}`` per stored
    offset, sorted; partitions without one are absent."""

    offsets: list[dict[str, Any]]


# -- admin apis --------------------------------------------------------------------------


@message(ApiKey.LIST_GROUPS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ListGroupsRequest(_PlainMeta):
    """Every consumer group."""


@message(ApiKey.LIST_GROUPS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListGroupsResponse(_PlainMeta):
    """``{"name", "state", "generation", "members", "live", "topics", "lag"}`` per group,
    by name (``lag``: the sum over partitions with a committed offset and a known HW)."""

    groups: list[dict[str, Any]]


class _GroupRequest(_PlainMeta):
    __slots__ = ()
    group: str

    def __post_init__(self) -> None:
        _group(self.group)


@message(ApiKey.DESCRIBE_GROUP, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class DescribeGroupRequest(_GroupRequest):
    """One group: its object, live members and per-partition offsets and lag."""

    group: str


@message(ApiKey.DESCRIBE_GROUP, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class DescribeGroupResponse(_PlainMeta):
    """The group.

    Attributes:
        group: ``ConsumerGroup.to_dict()`` (spec, status with members and assignment).
        live: member ids with a session on this SC now.
        partitions: per partition of the subscribed topics: ``{"topic", "partition",
            "memberId", "instanceId", "clientId", "host", "offset", "hw", "leo", "lag",
            "lastCommitMs"}`` (``offset`` nil: none committed; ``lag`` = HW - offset,
            nil when either is unknown).
        assignor: the assignment strategy's name.
        metrics: the coordinator's counters for the group since the SC started
            (``sc.groups.metrics``: ``members``, ``rebalances``, ``reassignments``,
            ``reassignMsLast``, ``reassignMsMax``, ``fencedCommits``, ``gateWaitTimeouts``).
    """

    group: dict[str, Any]
    live: list[str]
    partitions: list[dict[str, Any]]
    assignor: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)


@message(ApiKey.DELETE_GROUP, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class DeleteGroupRequest(_GroupRequest):
    """Delete a group and its offsets (``GroupNotEmptyError`` while it has members)."""

    group: str


@message(ApiKey.DELETE_GROUP, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class DeleteGroupResponse(_PlainMeta):
    """The KV revision of the deletion."""

    revision: int


RESET_MODES = ("earliest", "latest", "offset", "shift-by", "to-datetime", "by-duration")
"""``earliest``/``latest``: log start / high watermark; ``offset``: ``value``;
``shift-by``: committed + ``value`` (clamped); ``to-datetime``/``by-duration``: offsets the
client resolved from the leaders (``offsets``), since only leaders know timestamps."""


@message(ApiKey.RESET_OFFSETS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ResetOffsetsRequest(_GroupRequest):
    """Plan (and with ``execute``, write) new committed offsets for a group with no members.

    Attributes:
        group: the group.
        mode: one of ``RESET_MODES``.
        topic: only this topic (nil: every topic with a stored offset).
        value: the offset (``offset``) or the shift (``shift-by``, may be negative).
        offsets: for the time modes: ``{"topic", "partition", "offset"}`` maps.
        execute: write the plan; without it the reply is a dry run.
    """

    group: str
    mode: str
    topic: str | None = None
    value: int = 0
    offsets: list[dict[str, Any]] = field(default_factory=list)
    execute: bool = False

    def __post_init__(self) -> None:
        _group(self.group)
        if self.mode not in RESET_MODES:
            raise InvalidRequestError(f"mode: must be one of {', '.join(RESET_MODES)}")
        if self.topic is not None:
            _topic(self.topic, "topic")
        _int(self.value, "value", -_MAX_I64, _MAX_I64)
        if self.mode == "offset" and self.value < 0:
            raise InvalidRequestError(f"value: an offset must be >= 0, got {self.value}")
        tp_list(self.offsets, "offsets")
        for i, item in enumerate(self.offsets):
            _int(item.get("offset"), f"offsets[{i}].offset", 0, _MAX_I64)
        if not isinstance(self.execute, bool):
            raise InvalidRequestError("execute: must be a boolean")


@message(ApiKey.RESET_OFFSETS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ResetOffsetsResponse(_PlainMeta):
    """``{"topic", "partition", "current", "target"}`` per partition; ``executed``."""

    plan: list[dict[str, Any]]
    executed: bool


@message(ApiKey.DELETE_OFFSETS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class DeleteOffsetsRequest(_GroupRequest):
    """Delete a group's offsets (of one topic): refused while a member holds them."""

    group: str
    topic: str | None = None

    def __post_init__(self) -> None:
        _group(self.group)
        if self.topic is not None:
            _topic(self.topic, "topic")


@message(ApiKey.DELETE_OFFSETS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class DeleteOffsetsResponse(_PlainMeta):
    """How many offsets were deleted."""

    deleted: int


@message(ApiKey.PROGRESS_COMMIT, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ProgressCommitRequest(_GroupRequest):
    """Mirror an outside reader's progress (a Spark query) into a progress-only group.

    The first request creates the group (``kind: external``); an empty ``offsets`` only
    claims it. Offsets are written unfenced and may move back: the reader's own
    checkpoint is the truth. Refused for a group of members.

    Attributes:
        group: the progress group.
        offsets: ``{"topic", "partition", "offset"}`` maps (the next offset to read).
    """

    group: str
    offsets: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _group(self.group)
        tp_list(self.offsets, "offsets")
        for i, item in enumerate(self.offsets):
            _int(item.get("offset"), f"offsets[{i}].offset", 0, _MAX_I64)


@message(ApiKey.PROGRESS_COMMIT, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ProgressCommitResponse(_PlainMeta):
    """How many offsets were written; ``skipped``: ``{"topic", "partition"}`` of
    partitions that no longer exist (a topic deleted while the query ran)."""

    written: int
    skipped: list[dict[str, Any]] = field(default_factory=list)

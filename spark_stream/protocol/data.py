"""Data-plane messages of the SPU public api: produce, fetch, fetch offsets, stream fetch.

Records travel as back-to-back batch frames (``spark_stream.records``) in the message
tail: the producer encodes them once, the leader rewrites only base offsets, and
consumers decode them with ``records.decode_frames``. Nothing here looks inside a frame.
Idempotence (producer id, sequence) lives in the batch frame headers, not in the meta.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

from spark_stream.errors import InvalidRequestError
from spark_stream.protocol.api import ApiKey
from spark_stream.protocol.frame import Tail
from spark_stream.protocol.message import Message, Role, check_tail_present, message

__all__ = [
    "Acks",
    "Isolation",
    "DEFAULT_FETCH_MAX_BYTES",
    "GROUP_FETCH_VERSION",
    "LEADER_EPOCH_VERSION",
    "NO_LEADER_EPOCH",
    "ProduceRequest",
    "ProduceResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchLocalRequest",
    "FetchLocalResponse",
    "FetchOffsetsRequest",
    "FetchOffsetsResponse",
    "StreamFetchRequest",
    "StreamFetchPush",
]

DEFAULT_FETCH_MAX_BYTES = 1024 * 1024


class Acks(IntEnum):
    """When the leader answers a produce: never, after its own append, or after the ISR."""

    NONE = 0
    LEADER = 1
    ALL = -1


class Isolation(StrEnum):
    """Which records a consumer may see: up to the high watermark, or up to the LEO."""

    COMMITTED = "committed"
    UNCOMMITTED = "uncommitted"


def _non_negative(owner: str, **values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 0:
            raise InvalidRequestError(f"{owner}.{name} must be >= 0, got {value}")


def _positive(owner: str, **values: int) -> None:
    for name, value in values.items():
        if value <= 0:
            raise InvalidRequestError(f"{owner}.{name} must be > 0, got {value}")


def _topic(owner: str, topic: str) -> None:
    if not topic:
        raise InvalidRequestError(f"{owner}.topic must not be empty")


GROUP_FETCH_VERSION = 1
"""The fetch version that carries ``group``, ``member_id`` and ``grant_epoch``."""


def _group_fields(
    owner: str, group: str | None, member_id: str | None, grant_epoch: int | None
) -> None:
    """A group fetch names all three of group, member and grant epoch; a plain one none."""
    given = {"group": group, "member_id": member_id, "grant_epoch": grant_epoch}
    if all(value is None for value in given.values()):
        return
    for name, value in given.items():
        if value is None:
            raise InvalidRequestError(f"{owner}.{name} is required in a group fetch")
        if value == "":
            raise InvalidRequestError(f"{owner}.{name} must not be empty")
    _non_negative(owner, grant_epoch=grant_epoch)


_GROUP_FIELDS = ("group", "member_id", "grant_epoch")

LEADER_EPOCH_VERSION = 2
"""The fetch version that carries ``leader_epoch`` (with or without the group fields)."""

NO_LEADER_EPOCH = -1
"""``leader_epoch`` of a request that does not check it (what versions 0 and 1 mean)."""


def _leader_epoch(owner: str, leader_epoch: int) -> None:
    if leader_epoch < NO_LEADER_EPOCH:
        raise InvalidRequestError(
            f"{owner}.leader_epoch must be >= 0, or -1 for none, got {leader_epoch}"
        )


def _fetch_version(group: str | None, leader_epoch: int) -> int:
    """The lowest version that carries the fields set, so older SPUs understand the rest."""
    if leader_epoch >= 0:
        return LEADER_EPOCH_VERSION
    return 0 if group is None else GROUP_FETCH_VERSION


def _fetch_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The meta of the version ``_fetch_version`` picks: no nil group fields, and no
    ``leader_epoch`` below version 2."""
    if meta.get("group") is None:
        for name in _GROUP_FIELDS:
            meta.pop(name, None)
    if meta.get("leader_epoch", NO_LEADER_EPOCH) < 0:
        meta.pop("leader_epoch", None)
    return meta


def _check_fetch_version(owner: str, group: str | None, leader_epoch: int, version: int) -> None:
    """Group fields from ``GROUP_FETCH_VERSION`` on (required at exactly that one), the
    leader epoch at ``LEADER_EPOCH_VERSION`` and only there."""
    if group is not None and version < GROUP_FETCH_VERSION:
        raise InvalidRequestError(
            f"{owner}.group needs version {GROUP_FETCH_VERSION}, got {version}"
        )
    if group is None and version == GROUP_FETCH_VERSION:
        raise InvalidRequestError(f"{owner}.group is required at version {version}")
    if leader_epoch >= 0 and version < LEADER_EPOCH_VERSION:
        raise InvalidRequestError(
            f"{owner}.leader_epoch needs version {LEADER_EPOCH_VERSION}, got {version}"
        )
    if leader_epoch < 0 and version >= LEADER_EPOCH_VERSION:
        raise InvalidRequestError(f"{owner}.leader_epoch is required at version {version}")


@message(ApiKey.PRODUCE, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class ProduceRequest(Message):
    """Append batch frames to one partition on its leader.

    Attributes:
        topic: topic name.
        partition: partition index.
        acks: when to answer (see ``Acks``); ``ALL`` enforces ``min_in_sync_replicas``.
        timeout_ms: how long the leader may wait for ``acks=ALL`` before failing.
        tail: one or more back-to-back batch frames (base offsets are rewritten).
    """

    topic: str
    partition: int
    acks: Acks = Acks.LEADER
    timeout_ms: int = 5000
    tail: Tail = b""

    def __post_init__(self) -> None:
        _topic("ProduceRequest", self.topic)
        _non_negative("ProduceRequest", partition=self.partition, timeout_ms=self.timeout_ms)
        check_tail_present(self.tail, "ProduceRequest")


@message(ApiKey.PRODUCE, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class ProduceResponse(Message):
    """Where the produced records landed.

    Attributes:
        base_offset: offset given to the first record of the request.
        leo: log end offset after the append.
        hw: high watermark when the answer was sent.
    """

    base_offset: int
    leo: int
    hw: int


@message(ApiKey.FETCH, Role.REQUEST, version=LEADER_EPOCH_VERSION, min_version=0)
@dataclass(frozen=True, slots=True)
class FetchRequest(Message):
    """Read batch frames from a partition leader, starting at an offset.

    Version 0 is a plain fetch; version 1 adds the consumer-group fields, checked by the
    leader's delivery gate (``spu.gates``); version 2 adds ``leader_epoch`` (with or
    without a group). A request is sent at the lowest version its fields need, so plain
    consumers speak version 0 to any SPU, and an SPU that knows no gates (or no leader
    epochs) refuses the fields it would ignore (``UnsupportedVersionError``) instead of
    serving without them.

    Attributes:
        offset: first offset wanted; the reply starts at the frame holding it.
        max_bytes: soft limit on the reply's tail (at least one frame is returned).
        isolation: committed (up to HW) or uncommitted (up to LEO).
        max_wait_ms: how long the leader may wait for data when none is visible; 0 = none.
        group: v1: the consumer group fetching; all three group fields or none.
        member_id: v1: the member fetching.
        grant_epoch: v1: the generation at which the member got the partition.
        leader_epoch: v2: the partition's leader epoch in the requester's metadata; the
            SPU refuses the request unless it is this SPU's, as leader (KIP-320). -1:
            not checked (versions 0 and 1).
    """

    topic: str
    partition: int
    offset: int
    max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    isolation: Isolation = Isolation.COMMITTED
    max_wait_ms: int = 0
    group: str | None = None
    member_id: str | None = None
    grant_epoch: int | None = None
    leader_epoch: int = NO_LEADER_EPOCH

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _topic(owner, self.topic)
        _non_negative(
            owner, partition=self.partition, offset=self.offset, max_wait_ms=self.max_wait_ms
        )
        _positive(owner, max_bytes=self.max_bytes)
        _group_fields(owner, self.group, self.member_id, self.grant_epoch)
        _leader_epoch(owner, self.leader_epoch)

    def wire_version(self) -> int:
        """2 with a leader epoch, else 1 for a group fetch, else 0 (what every SPU
        understands)."""
        return _fetch_version(self.group, self.leader_epoch)

    def to_meta(self) -> dict[str, Any]:
        """The meta of ``wire_version``: a plain fetch sends the version 0 fields only."""
        return _fetch_meta(Message.to_meta(self))

    def check_version(self, version: int) -> None:
        """Group fields from version 1 (always at 1), the leader epoch at 2 (always)."""
        _check_fetch_version(type(self).__name__, self.group, self.leader_epoch, version)


@message(ApiKey.FETCH, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class FetchResponse(Message):
    """Batch frames read from the log and the partition's offsets at read time.

    Attributes:
        hw: high watermark.
        leo: log end offset.
        log_start: first offset still in the log.
        tail: back-to-back batch frames as stored, possibly empty.
    """

    hw: int
    leo: int
    log_start: int
    tail: Tail = b""


@message(ApiKey.FETCH_LOCAL, Role.REQUEST, version=LEADER_EPOCH_VERSION, min_version=0)
@dataclass(frozen=True, slots=True)
class FetchLocalRequest(FetchRequest):
    """A fetch answered with where its frames lie in the leader's files, not the frames.

    A client on the leader's host reads them itself: no bytes cross the socket and the
    leader does no work per byte. The fields are ``FetchRequest``'s, meaning the same.
    """


@message(ApiKey.FETCH_LOCAL, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class FetchLocalResponse(Message):
    """Where the frames a ``FetchRequest`` would have returned are, and the offsets.

    Attributes:
        hw: high watermark.
        leo: log end offset.
        log_start: first offset still in the log.
        path: the segment file holding the frames; empty when none are visible.
        base_offset: base offset of the first frame, to check what was read.
        position: byte position of the first frame in the file.
        length: bytes of back-to-back frames from ``position``.
        device: ``st_dev`` of the file, so a reader knows it opened the same file.
        inode: ``st_ino`` of the file.
    """

    hw: int
    leo: int
    log_start: int
    path: str = ""
    base_offset: int = 0
    position: int = 0
    length: int = 0
    device: int = 0
    inode: int = 0


@message(ApiKey.FETCH_OFFSETS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class FetchOffsetsRequest(Message):
    """Ask a leader for a partition's offsets, and optionally the offset for a time.

    Attributes:
        timestamp_us: when set, also find the first offset whose timestamp is at or
            after this time (microseconds since the epoch).
    """

    topic: str
    partition: int
    timestamp_us: int | None = None

    def __post_init__(self) -> None:
        _topic("FetchOffsetsRequest", self.topic)
        _non_negative("FetchOffsetsRequest", partition=self.partition)


@message(ApiKey.FETCH_OFFSETS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class FetchOffsetsResponse(Message):
    """A partition's offsets.

    Attributes:
        offset: the answer to ``timestamp_us``; None when not asked or no record is that
            recent.
    """

    log_start: int
    leo: int
    hw: int
    offset: int | None = None


@message(ApiKey.STREAM_FETCH, Role.REQUEST, version=LEADER_EPOCH_VERSION, min_version=0)
@dataclass(frozen=True, slots=True)
class StreamFetchRequest(Message):
    """Open a stream: the leader pushes frames from ``offset`` on as they become visible.

    Version 1 adds the group fields, as ``FetchRequest``'s: the stream ends with
    ``FencedMemberError`` once the partition's delivery gate stops admitting the member.
    Version 2 adds ``leader_epoch``: checked on open, and before each push, so a stream
    opened under an older epoch ends with ``FencedLeaderEpochError``.

    Attributes:
        max_bytes: soft limit on the tail of each push.
        isolation: committed (pushes up to HW) or uncommitted (up to LEO).
        group, member_id, grant_epoch: v1: who streams, as in ``FetchRequest``.
        leader_epoch: v2: as in ``FetchRequest``.
    """

    topic: str
    partition: int
    offset: int
    max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    isolation: Isolation = Isolation.COMMITTED
    group: str | None = None
    member_id: str | None = None
    grant_epoch: int | None = None
    leader_epoch: int = NO_LEADER_EPOCH

    def __post_init__(self) -> None:
        _topic("StreamFetchRequest", self.topic)
        _non_negative("StreamFetchRequest", partition=self.partition, offset=self.offset)
        _positive("StreamFetchRequest", max_bytes=self.max_bytes)
        _group_fields("StreamFetchRequest", self.group, self.member_id, self.grant_epoch)
        _leader_epoch("StreamFetchRequest", self.leader_epoch)

    def wire_version(self) -> int:
        """As ``FetchRequest.wire_version``."""
        return _fetch_version(self.group, self.leader_epoch)

    def to_meta(self) -> dict[str, Any]:
        """The meta of ``wire_version``: a plain stream sends the version 0 fields only."""
        return _fetch_meta(Message.to_meta(self))

    def check_version(self, version: int) -> None:
        """As ``FetchRequest.check_version``."""
        _check_fetch_version("StreamFetchRequest", self.group, self.leader_epoch, version)


@message(ApiKey.STREAM_FETCH, Role.PUSH)
@dataclass(frozen=True, slots=True)
class StreamFetchPush(Message):
    """One push of a fetch stream: new frames and the offsets after them.

    A push with an empty tail only reports moved offsets (e.g. the HW advanced).
    """

    hw: int
    leo: int
    log_start: int
    tail: Tail = b""

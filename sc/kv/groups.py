"""Consumer-group data kept beside the group object: the owner map and the offsets.

Theory of operation (brief sections 4.2, 4.5, 4.8):

- The **owner map** of a group says, per partition, which member holds the grant and
  under which grant epoch: ``(topic, partition) -> Grant(member_id, grant_epoch)``. It
  is the commit fence. ``KvStore.publish_group_plan`` replaces it in the same atomic
  step as the group object's status (the durable plan), with compare-and-set on the
  object's revision, so the fence never disagrees with a published plan.
- **Offsets** are stored per group and partition (``StoredOffset``). A member's commit
  (``KvStore.commit_group_offsets``) is accepted per partition only when the owner map
  names that member under that grant epoch and the offset does not move backwards; the
  other partitions of the request are refused in the result, not by an exception.
  Unfenced writes (``KvStore.write_group_offsets``: an admin reset, or Spark's progress
  mirror) are refused while the group holds any grant.
- Offsets and owner maps are **not** in the change feed and do not take a revision:
  commits are frequent and nobody watches them.
- Group data never outlives what it refers to: deleting a partition object (a topic
  delete deletes its partitions) removes that partition's grant and offset from every
  group, deleting the group object removes its owner map and offsets, and offsets are
  only ever written for existing partitions.

This module is pure: the records, the validation of every input (bad input raises
``InvalidRequestError`` naming the field, before anything is written) and the string
encoding both stores share. Offsets are encoded as decimal strings and compared exactly,
never as floating point (Redis Lua numbers are doubles).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from spark_stream.errors import (
    FencedMemberError,
    FluvioError,
    InvalidRequestError,
    OffsetOutOfRangeError,
    UnknownPartitionError,
)
from spark_stream.models import NAME_RULE
from spark_stream.models.group import MAX_GROUP_NAME, check_group_name, check_member_id
from spark_stream.models.topic import MAX_PARTITIONS, MAX_TOPIC_NAME

__all__ = [
    "GROUP_KIND",
    "MAX_GROUP_NAME",
    "MAX_GRANT_EPOCH",
    "MAX_OFFSET",
    "MAX_METADATA_BYTES",
    "TopicPartition",
    "Grant",
    "OffsetCommit",
    "StoredOffset",
    "CommitOutcome",
    "CommitResult",
    "check_group_name",
    "check_member_id",
    "check_owners",
    "check_commits",
    "check_offsets",
    "check_partitions",
    "check_topic",
    "check_metadata",
    "field",
    "parse_field",
    "grant_value",
    "parse_grant",
    "offset_value",
    "parse_offset",
]

#: The kind of the group object (registered in ``spark_stream.models.KINDS`` by the
#: group models). Group methods take ``kind=`` so tests can use any registered kind.
GROUP_KIND = "ConsumerGroup"
#: Group names follow the topic-name rule, up to this length (brief 4.4).
#: Grant epochs are generations: int32, as Kafka's epochs.
MAX_GRANT_EPOCH = 2**31 - 1
#: Offsets are int64 record offsets.
MAX_OFFSET = 2**63 - 1
#: A commit's metadata, UTF-8 encoded, as Kafka's ``offset.metadata.max.bytes``.
MAX_METADATA_BYTES = 4096

#: ``(topic, partition index)``.
TopicPartition = tuple[str, int]


class Grant(NamedTuple):
    """One owner-map entry: the member holding a partition and its grant epoch.

    ``grant_epoch`` is the group generation at which the member was granted the
    partition; a commit or fetch carries it, so a bump elsewhere in the group does not
    fence a member that kept its partition.
    """

    member_id: str
    grant_epoch: int


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One partition of a member's commit request.

    Attributes:
        topic: the topic name.
        partition: the partition index.
        offset: the next offset to consume (Kafka's convention), ``>= 0``.
        grant_epoch: the grant epoch the member holds the partition under.
        metadata: free text stored with the offset, at most 4 KiB in UTF-8.
    """

    topic: str
    partition: int
    offset: int
    grant_epoch: int
    metadata: str = ""

    @property
    def tp(self) -> TopicPartition:
        """``(topic, partition)``."""
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class StoredOffset:
    """A committed offset as stored.

    Attributes:
        offset: the committed (next) offset.
        grant_epoch: the grant epoch of the accepted member commit; ``None`` for an
            unfenced write (reset or progress mirror).
        ts_ms: when the SC stored it, in Unix milliseconds.
        metadata: the commit's metadata.
    """

    offset: int
    grant_epoch: int | None
    ts_ms: int
    metadata: str = ""


class CommitOutcome(StrEnum):
    """What happened to one partition of a member's commit."""

    ACCEPTED = "accepted"
    #: The owner map does not name this member under this grant epoch.
    FENCED = "fenced"
    #: The offset is below the committed one; only an explicit reset moves it back.
    BACKWARDS = "backwards"
    #: No such partition (never created, or deleted).
    UNKNOWN_PARTITION = "unknown_partition"


@dataclass(frozen=True, slots=True)
class CommitResult:
    """The result for one partition of a commit, in request order.

    Attributes:
        topic: the topic name.
        partition: the partition index.
        outcome: accepted or why not.
        committed: the stored offset after the request (``None``: nothing stored).
    """

    topic: str
    partition: int
    outcome: CommitOutcome
    committed: int | None

    @property
    def accepted(self) -> bool:
        """True when the commit was stored."""
        return self.outcome is CommitOutcome.ACCEPTED

    def error(self) -> FluvioError | None:
        """The typed error for a refused partition (for the wire), ``None`` if accepted."""
        where = f"{self.topic}/{self.partition}"
        match self.outcome:
            case CommitOutcome.ACCEPTED:
                return None
            case CommitOutcome.FENCED:
                return FencedMemberError(f"{where}: not granted to this member at this epoch")
            case CommitOutcome.BACKWARDS:
                return OffsetOutOfRangeError(
                    f"{where}: below the committed offset {self.committed}"
                )
            case CommitOutcome.UNKNOWN_PARTITION:
                return UnknownPartitionError(f"{where}: no such partition")


# -- validation ---------------------------------------------------------------------


def _bad(where: str, reason: str) -> InvalidRequestError:
    return InvalidRequestError(f"{where}: {reason}")


def _int_in(value: object, low: int, high: int, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(where, f"must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise _bad(where, f"must be in [{low}, {high}], got {value}")
    return value


def _name(value: object, max_len: int, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(where, f"must be a string, got {type(value).__name__}")
    if len(value) > max_len:
        raise _bad(where, f"{value[:40]!r}... is longer than {max_len} characters")
    if not NAME_RULE.match(value):
        raise _bad(
            where,
            f"{value!r} must be lowercase letters, digits and '-', "
            "starting and ending with a letter or digit",
        )
    return value


def check_topic(topic: object, where: str = "topic") -> str:
    """Return ``topic`` if it is a valid topic name.

    Raises:
        InvalidRequestError: naming ``where``.
    """
    return _name(topic, MAX_TOPIC_NAME, where)


def check_metadata(metadata: object, where: str = "metadata") -> str:
    """Return ``metadata`` if it is a string of at most 4 KiB in UTF-8.

    Raises:
        InvalidRequestError: naming ``where``.
    """
    if not isinstance(metadata, str):
        raise _bad(where, f"must be a string, got {type(metadata).__name__}")
    try:
        size = len(metadata.encode())
    except UnicodeEncodeError:
        raise _bad(where, "is not encodable as UTF-8") from None
    if size > MAX_METADATA_BYTES:
        raise _bad(where, f"is {size} bytes, more than {MAX_METADATA_BYTES}")
    return metadata


def _tp(key: object, where: str) -> TopicPartition:
    if not isinstance(key, tuple) or len(key) != 2:
        raise _bad(where, f"must be a (topic, partition) pair, got {key!r}")
    topic, partition = key
    check_topic(topic, f"{where}.topic")
    _int_in(partition, 0, MAX_PARTITIONS - 1, f"{where}.partition")
    return (topic, partition)


def check_partitions(
    partitions: Iterable[object], where: str = "partitions"
) -> list[TopicPartition]:
    """Return ``partitions`` as a list of valid ``(topic, partition)`` pairs.

    Raises:
        InvalidRequestError: naming the bad entry.
    """
    return [_tp(key, f"{where}[{i}]") for i, key in enumerate(partitions)]


def check_owners(owners: Mapping[TopicPartition, Grant]) -> dict[TopicPartition, Grant]:
    """Validate an owner map: partitions, member ids and grant epochs.

    Raises:
        InvalidRequestError: naming the bad entry (``owners[orders/0].member_id``).
    """
    if not isinstance(owners, Mapping):
        raise _bad("owners", f"must be a mapping, got {type(owners).__name__}")
    out: dict[TopicPartition, Grant] = {}
    for key, grant in owners.items():
        tp = _tp(key, "owners key")
        where = f"owners[{field(*tp)}]"
        if not isinstance(grant, tuple) or len(grant) != 2:
            raise _bad(where, f"must be a Grant(member_id, grant_epoch), got {grant!r}")
        member_id = check_member_id(grant[0], f"{where}.member_id")
        epoch = _int_in(grant[1], 0, MAX_GRANT_EPOCH, f"{where}.grant_epoch")
        out[tp] = Grant(member_id, epoch)
    return out


def check_commits(commits: Collection[OffsetCommit]) -> tuple[OffsetCommit, ...]:
    """Validate a member's commit request; each partition at most once.

    Raises:
        InvalidRequestError: naming the bad entry (``commits[2].offset``).
    """
    seen: set[TopicPartition] = set()
    for i, commit in enumerate(commits):
        where = f"commits[{i}]"
        if not isinstance(commit, OffsetCommit):
            raise _bad(where, f"must be an OffsetCommit, got {type(commit).__name__}")
        _tp((commit.topic, commit.partition), where)
        _int_in(commit.offset, 0, MAX_OFFSET, f"{where}.offset")
        _int_in(commit.grant_epoch, 0, MAX_GRANT_EPOCH, f"{where}.grant_epoch")
        check_metadata(commit.metadata, f"{where}.metadata")
        if commit.tp in seen:
            raise _bad(where, f"partition {field(*commit.tp)} appears twice")
        seen.add(commit.tp)
    return tuple(commits)


def check_offsets(offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Validate an unfenced offset write: partitions and offsets.

    Raises:
        InvalidRequestError: naming the bad entry (``offsets[orders/0]``).
    """
    if not isinstance(offsets, Mapping):
        raise _bad("offsets", f"must be a mapping, got {type(offsets).__name__}")
    out: dict[TopicPartition, int] = {}
    for key, offset in offsets.items():
        tp = _tp(key, "offsets key")
        out[tp] = _int_in(offset, 0, MAX_OFFSET, f"offsets[{field(*tp)}]")
    return out


# -- encoding (the Redis hash fields and values; readable with redis-cli) -------------


def field(topic: str, partition: int) -> str:
    """The hash field of a partition, ``{topic}/{partition}`` ('/' is not in names)."""
    return f"{topic}/{partition}"


def parse_field(value: str) -> TopicPartition:
    """The ``(topic, partition)`` of a hash field."""
    topic, _, partition = value.rpartition("/")
    return (topic, int(partition))


def grant_value(grant: Grant) -> str:
    """The owner-map value of a grant, ``{member_id}|{grant_epoch}``."""
    return f"{grant.member_id}|{grant.grant_epoch}"


def parse_grant(value: str) -> Grant:
    """The grant of an owner-map value."""
    member_id, _, epoch = value.partition("|")
    return Grant(member_id, int(epoch))


def offset_value(stored: StoredOffset) -> str:
    """The offsets-hash value: ``{offset}|{grant_epoch or ''}|{ts_ms}|{metadata}``.

    The offset comes first, as a plain decimal, so the commit script can compare it
    exactly as a string; the metadata comes last, so it may hold any character.
    """
    epoch = "" if stored.grant_epoch is None else str(stored.grant_epoch)
    return f"{stored.offset}|{epoch}|{stored.ts_ms}|{stored.metadata}"


def parse_offset(value: str) -> StoredOffset:
    """The stored offset of an offsets-hash value."""
    offset, epoch, ts_ms, metadata = value.split("|", 3)
    return StoredOffset(int(offset), int(epoch) if epoch else None, int(ts_ms), metadata)

"""Plain values the client hands back: partition info, offsets, delivery metadata, records.

All are frozen, slotted dataclasses (or named tuples) holding only ints, strings and
bytes, so they pickle and can travel to Spark executors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "PartitionInfo",
    "PartitionOffsets",
    "PreferredElection",
    "RecordMetadata",
    "BatchMetadata",
    "Record",
]


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """Where a partition lives, as the SC's metadata describes it.

    Attributes:
        topic: topic name.
        partition: partition index.
        leader: SPU id of the current leader, or None while no leader is known.
        replicas: SPU ids of the replica set, the initial leader first.
        resolution: the partition status resolution (``Online``, ``Offline``, ...).
        leader_endpoint: ``"host:port"`` of the leader's public endpoint, if known.
        in_sync: SPU ids the leader last reported in sync.
        leo: log end offset last reported by the leader (-1 unknown).
        hw: high watermark last reported by the leader (-1 unknown).
        log_start: first offset still in the log (-1 unknown).
    """

    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    resolution: str = "Init"
    leader_endpoint: str | None = None
    in_sync: tuple[int, ...] = ()
    leo: int = -1
    hw: int = -1
    log_start: int = -1


@dataclass(frozen=True, slots=True)
class PreferredElection:
    """What a preferred-leader election did (``AdminClient.elect_preferred``).

    Attributes:
        moved: partitions (``{topic}-{index}``) now led by their preferred replica (the
            first of their replica list) that were led by another before.
        pending: partitions still led by another replica: their preferred one is
            offline, out of sync or damaged (the SC's sweep moves them once it can).
    """

    moved: tuple[str, ...]
    pending: tuple[str, ...]


class PartitionOffsets(NamedTuple):
    """A partition's offsets at one moment: ``(log_start, hw, leo)``.

    Committed readers see ``[log_start, hw)``, uncommitted readers ``[log_start, leo)``.
    """

    log_start: int
    hw: int
    leo: int


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where one produced record landed.

    Attributes:
        topic: topic name.
        partition: partition index.
        offset: the record's offset, or -1 when unknown (``acks=none``, or a duplicate
            an idempotent leader dropped without telling the original offset).
    """

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Where a run of produced records landed in one partition.

    Attributes:
        topic: topic name.
        partition: partition index.
        base_offset: offset of the first record (-1 when unknown, see ``RecordMetadata``).
        count: number of records.
    """

    topic: str
    partition: int
    base_offset: int
    count: int

    @property
    def last_offset(self) -> int:
        """Offset of the last record (-1 when unknown)."""
        return self.base_offset + self.count - 1 if self.base_offset >= 0 else -1


@dataclass(frozen=True, slots=True)
class Record:
    """One consumed record.

    Attributes:
        partition: partition index it was read from.
        offset: its offset in the partition.
        key: the key, or None.
        value: the value.
        timestamp_us: producer timestamp, microseconds since the epoch (UTC).
        headers: ``(name, value)`` pairs.
        topic: the topic, for records of a group consumer (None from the others).
    """

    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_us: int
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())
    topic: str | None = None

    def value_str(self) -> str:
        """The value decoded as UTF-8 (invalid bytes replaced)."""
        return self.value.decode("utf-8", errors="replace")

    def key_str(self) -> str | None:
        """The key decoded as UTF-8 (invalid bytes replaced), or None."""
        return None if self.key is None else self.key.decode("utf-8", errors="replace")

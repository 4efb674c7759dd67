"""Producer and consumer options: one frozen object each, validated once, with defaults.

``fluvio.topic_producer(topic, **options)`` and the consumers take these options as
keyword arguments; unknown names and bad values raise ``InvalidConfigError`` naming the
option. Both objects pickle (they travel to Spark executors inside writer options).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, fields, replace
from typing import Any

from spark_stream.errors import InvalidConfigError
from spark_stream.protocol.data import DEFAULT_FETCH_MAX_BYTES, Acks, Isolation
from spark_stream.records import Compression

__all__ = [
    "Acks",
    "Isolation",
    "Compression",
    "ProducerConfig",
    "ConsumerConfig",
    "parse_acks",
    "parse_isolation",
    "ISOLATION_WORDS",
    "producer_id_for",
    "random_producer_id",
    "MAX_PRODUCER_ID",
]

#: Producer ids are positive int64 (the batch frame carries -1 for "none").
MAX_PRODUCER_ID = 2**63 - 1
_COMPRESSIONS: tuple[Compression, ...] = ("none", "lz4", "zstd")
_PARTITIONERS = ("default", "hash", "round_robin")
_ACKS = {"none": Acks.NONE, "0": Acks.NONE, "leader": Acks.LEADER, "1": Acks.LEADER,
         "all": Acks.ALL, "-1": Acks.ALL}  # fmt: skip

ISOLATION_WORDS: dict[str, Isolation] = {
    "read_committed": Isolation.COMMITTED,
    "read_uncommitted": Isolation.UNCOMMITTED,
    "committed": Isolation.COMMITTED,
    "uncommitted": Isolation.UNCOMMITTED,
}
"""The words for an isolation, Kafka's first (``isolation.level``), then this project's
older short forms, kept as aliases. The JVM connector's ``Isolation.WORDS`` mirrors it."""


def parse_acks(value: Acks | int | str) -> Acks:
    """``"none"|"leader"|"all"`` (or 0, 1, -1, or an ``Acks``) as an ``Acks``.

    Raises:
        InvalidConfigError: anything else.
    """
    if isinstance(value, Acks):
        return value
    key = str(value).strip().lower()
    if key not in _ACKS:
        raise InvalidConfigError(f"acks: must be none, leader or all, got {value!r}")
    return _ACKS[key]


def parse_isolation(value: Isolation | str) -> Isolation:
    """A word of ``ISOLATION_WORDS`` (any case, ``-`` for ``_``) as ``Isolation``.

    The CLI's ``--isolation``, ``ConsumerConfig`` and Spark's ``isolation`` option (and
    its alias ``kafka.isolation.level``) all read isolation through this table.

    Raises:
        InvalidConfigError: anything else.
    """
    if isinstance(value, Isolation):
        return value
    key = str(value).strip().lower().replace("-", "_")
    if key not in ISOLATION_WORDS:
        raise InvalidConfigError(
            f"isolation: must be one of {', '.join(ISOLATION_WORDS)}, got {value!r}"
        )
    return ISOLATION_WORDS[key]


def random_producer_id() -> int:
    """A fresh random producer id in ``1 .. MAX_PRODUCER_ID``."""
    return secrets.randbelow(MAX_PRODUCER_ID) + 1


def producer_id_for(*parts: str | int) -> int:
    """A stable producer id derived from an identity, e.g. ``(query_id, batch_id, task)``.

    The same parts always give the same id (blake2b of their text, not Python's
    randomised ``hash``), so a retried Spark task produces under the identity of the
    first attempt and the leader drops what that attempt already appended.
    """
    if not parts:
        raise InvalidConfigError("producer_id_for: needs at least one part")
    text = "\x1f".join(str(p) for p in parts).encode()
    digest = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")
    return (digest % MAX_PRODUCER_ID) + 1


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """How a topic producer batches, compresses, acknowledges and retries.

    Attributes:
        batch_size: bytes of records per batch frame: ``send`` seals a partition's batch at
            this size, ``send_batch`` cuts Arrow data into frames of about this size
            (bigger frames, fewer requests: 1-4 MiB suits bulk writes).
        linger_ms: how long a partial batch may wait for more records.
        max_request_bytes: largest produce request (frames of one partition) sent at once.
        compression: Arrow IPC buffer compression: ``none``, ``lz4`` or ``zstd``; None
            (default) = the topic's ``compression`` setting (``none`` when it accepts any).
        acks: ``none`` (fire and forget), ``leader`` or ``all`` (in-sync replicas).
        partitioner: ``default`` (key hash for keyed records, round robin otherwise),
            ``hash`` or ``round_robin``.
        idempotence: stamp batches with a producer id and per-partition sequence so the
            leader drops resent duplicates.
        producer_id: the idempotent identity (see ``producer_id_for``); None = random.
        retries: attempts after the first for a retriable error.
        retry_backoff_ms: first backoff, doubled per attempt.
        retry_backoff_max_ms: backoff ceiling.
        delivery_timeout_ms: bound on the whole life of a batch, retries included.
        request_timeout_ms: bound on one produce request; also the leader's acks=all wait.
        max_in_flight: produce requests outstanding per partition.
        buffer_memory: bytes of unsent records before ``send`` blocks (backpressure).
    """

    batch_size: int = 1024 * 1024
    linger_ms: float = 5.0
    max_request_bytes: int = 8 * 1024 * 1024
    compression: Compression | None = None
    acks: Acks = Acks.LEADER
    partitioner: str = "default"
    idempotence: bool = False
    producer_id: int | None = None
    retries: int = 10
    retry_backoff_ms: float = 50.0
    retry_backoff_max_ms: float = 2000.0
    delivery_timeout_ms: float = 60_000.0
    request_timeout_ms: float = 30_000.0
    max_in_flight: int = 5
    buffer_memory: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        object.__setattr__(self, "acks", parse_acks(self.acks))
        if self.compression is not None and self.compression not in _COMPRESSIONS:
            raise InvalidConfigError(
                f"compression: must be one of {', '.join(_COMPRESSIONS)}, got {self.compression!r}"
            )
        if self.partitioner not in _PARTITIONERS:
            raise InvalidConfigError(
                f"partitioner: must be one of {', '.join(_PARTITIONERS)}, got {self.partitioner!r}"
            )
        _positive(self, "batch_size", "max_request_bytes", "request_timeout_ms",
                  "delivery_timeout_ms", "max_in_flight", "buffer_memory")  # fmt: skip
        _non_negative(self, "linger_ms", "retries", "retry_backoff_ms", "retry_backoff_max_ms")
        if self.producer_id is not None:
            if not self.idempotence:
                raise InvalidConfigError("producer_id: only meaningful with idempotence=True")
            if not 0 < self.producer_id <= MAX_PRODUCER_ID:
                raise InvalidConfigError(
                    f"producer_id: must be in 1..{MAX_PRODUCER_ID}, got {self.producer_id}"
                )
        if self.idempotence and self.acks is Acks.NONE:
            raise InvalidConfigError("idempotence: needs acks=leader or acks=all, not none")

    @property
    def codec(self) -> Compression:
        """The codec frames are encoded with (``none`` while unset)."""
        return self.compression or "none"

    def for_topic(self, topic: str, setting: str) -> ProducerConfig:
        """This config with the codec a topic whose ``compression`` is ``setting`` takes.

        A topic set to one codec stores only that codec (its SPUs refuse others), so an
        unset ``compression`` adopts it and a different one is refused here, before
        anything is sent; a topic set to ``any`` takes what the producer chose.

        Raises:
            InvalidConfigError: ``compression`` differs from the topic's codec.
        """
        if setting == "any":
            return self
        codec = next((c for c in _COMPRESSIONS if c == setting), None)
        if codec is None:
            raise InvalidConfigError(f"topic '{topic}' has an unknown compression {setting!r}")
        if self.compression not in (None, codec):
            raise InvalidConfigError(
                f"compression: topic '{topic}' stores {setting} batches (its compression "
                f"setting), not {self.compression}: leave compression unset or use {setting}"
            )
        return replace(self, compression=codec)

    @classmethod
    def from_options(cls, **options: Any) -> ProducerConfig:
        """Build from keyword options, rejecting unknown names.

        Raises:
            InvalidConfigError: an unknown option or a bad value.
        """
        return _build(cls, options)

    def with_options(self, **options: Any) -> ProducerConfig:
        """A copy with some options changed (validated)."""
        _check_names(type(self), options)
        return replace(self, **options)


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """How a consumer reads.

    Attributes:
        isolation: ``committed`` (up to the high watermark) or ``uncommitted`` (LEO).
        max_bytes: soft limit of bytes per fetch or per stream push.
        window: stream pushes the leader may send ahead of the consumer.
        retries: reconnect attempts after a leader failure before giving up.
        retry_backoff_ms: first backoff between reconnects, doubled per attempt.
        retry_backoff_max_ms: backoff ceiling.
        request_timeout_ms: bound on one fetch request.
        skip_corrupt_frames: a frame found damaged on the way out (bit rot: its crc or
            its decode fails) is skipped with a WARNING naming its offsets, instead of
            ending the read with ``CorruptFrameError`` (the default, False).
    """

    isolation: Isolation = Isolation.COMMITTED
    max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    window: int = 16
    retries: int = 60
    retry_backoff_ms: float = 50.0
    retry_backoff_max_ms: float = 1000.0
    request_timeout_ms: float = 30_000.0
    skip_corrupt_frames: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "isolation", parse_isolation(self.isolation))
        if not isinstance(self.skip_corrupt_frames, bool):
            raise InvalidConfigError(
                f"skip_corrupt_frames: must be true or false, got {self.skip_corrupt_frames!r}"
            )
        _positive(self, "max_bytes", "window", "request_timeout_ms")
        _non_negative(self, "retries", "retry_backoff_ms", "retry_backoff_max_ms")

    @classmethod
    def from_options(cls, **options: Any) -> ConsumerConfig:
        """Build from keyword options, rejecting unknown names.

        Raises:
            InvalidConfigError: an unknown option or a bad value.
        """
        return _build(cls, options)


def _check_names(cls: type, options: dict[str, Any]) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidConfigError(
            f"{cls.__name__}: unknown option(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known))})"
        )


def _build(cls: type[Any], options: dict[str, Any]) -> Any:
    _check_names(cls, options)
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"{cls.__name__}: {exc}") from exc


def _positive(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise InvalidConfigError(f"{name}: must be a number > 0, got {value!r}")


def _non_negative(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InvalidConfigError(f"{name}: must be a number >= 0, got {value!r}")

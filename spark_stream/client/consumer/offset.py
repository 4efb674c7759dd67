"""Where a consumer starts: the offset specification, and its pure resolution.

An ``Offset`` is a request ("the beginning", "the end", "offset 42", "3 records before
the end", "the first record at or after this time"); ``resolve`` turns it into an
absolute offset given a partition's ``(log_start, end)`` offsets, where ``end`` is the
high watermark for committed readers and the LEO for uncommitted ones. A timestamp
needs the leader's time index, so ``resolve`` takes the answer of that lookup
(``None`` = no record that recent: start at the end).

The rule for a start past the end is Kafka's, one for every read path (client fetch and
stream, SPU fetch and stream, local files, the JVM connector through the SPU):
``check_start`` accepts ``[log_start, leo]``; a start between the visible end (HW for
committed readers) and the LEO is valid and reads nothing until the records are visible;
a start past the LEO is ``OffsetOutOfRangeError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spark_stream.client.timestamps import to_timestamp_us
from spark_stream.errors import InvalidRequestError, OffsetOutOfRangeError

__all__ = ["Offset", "OffsetKind", "check_start"]


def check_start(start: int, log_start: int, leo: int, where: str = "the log") -> int:
    """``start`` when a read may begin there: within ``[log_start, leo]`` (see above).

    Raises:
        OffsetOutOfRangeError: below the log start (retention removed it) or past the LEO.
    """
    if not log_start <= start <= leo:
        raise OffsetOutOfRangeError(f"offset {start} is outside {where} [{log_start}, {leo}]")
    return start


class OffsetKind(StrEnum):
    """How an ``Offset`` is anchored."""

    ABSOLUTE = "absolute"
    FROM_BEGINNING = "from_beginning"
    FROM_END = "from_end"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True, slots=True)
class Offset:
    """A start position. Build it with the class methods, not the constructor.

    Attributes:
        kind: how ``value`` is read.
        value: the offset, the distance from the beginning or end, or a timestamp in
            microseconds since the epoch.
    """

    kind: OffsetKind
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise InvalidRequestError(f"Offset {self.kind.value} must be >= 0, got {self.value}")

    @classmethod
    def beginning(cls) -> Offset:
        """The first record still in the log."""
        return cls(OffsetKind.FROM_BEGINNING, 0)

    @classmethod
    def end(cls) -> Offset:
        """After the last visible record: only new records are read."""
        return cls(OffsetKind.FROM_END, 0)

    @classmethod
    def absolute(cls, offset: int) -> Offset:
        """Exactly ``offset``; resolving fails when it is outside the log."""
        return cls(OffsetKind.ABSOLUTE, offset)

    @classmethod
    def from_beginning(cls, n: int) -> Offset:
        """``n`` records after the log start (clamped to the end)."""
        return cls(OffsetKind.FROM_BEGINNING, n)

    @classmethod
    def from_end(cls, n: int) -> Offset:
        """``n`` records before the end (clamped to the log start): the last ``n``."""
        return cls(OffsetKind.FROM_END, n)

    @classmethod
    def from_timestamp(cls, timestamp_us: int) -> Offset:
        """The first record whose timestamp is at or after ``timestamp_us``.

        Args:
            timestamp_us: microseconds since the epoch (UTC), as records carry them.

        Raises:
            InvalidConfigError: negative, or past the year 9999 (milliseconds are not
                caught, nanoseconds are: see ``spark_stream.client.timestamps``).
        """
        checked = to_timestamp_us(timestamp_us, "us", "Offset.from_timestamp(timestamp_us)")
        return cls(OffsetKind.TIMESTAMP, checked)

    @property
    def needs_timestamp_lookup(self) -> bool:
        """True when resolving needs the leader's time index."""
        return self.kind is OffsetKind.TIMESTAMP

    def resolve(
        self,
        log_start: int,
        end: int,
        timestamp_offset: int | None = None,
        *,
        leo: int | None = None,
    ) -> int:
        """The absolute offset this spec names in a log holding ``[log_start, end)``.

        Args:
            log_start: first offset still in the log.
            end: the reader's end: HW (committed) or LEO (uncommitted).
            timestamp_offset: for ``from_timestamp``, the leader's answer (None: no
                record that recent).
            leo: the log end offset, up to which an absolute start is valid (default
                ``end``).

        Raises:
            OffsetOutOfRangeError: an absolute offset outside ``[log_start, leo]``.
        """
        if log_start < 0 or end < log_start:
            raise InvalidRequestError(f"bad log range [{log_start}, {end})")
        match self.kind:
            case OffsetKind.ABSOLUTE:
                return check_start(self.value, log_start, max(end, leo or end))
            case OffsetKind.FROM_BEGINNING:
                return min(log_start + self.value, end)
            case OffsetKind.FROM_END:
                return max(end - self.value, log_start)
            case OffsetKind.TIMESTAMP:
                if timestamp_offset is None:
                    return end
                return min(max(timestamp_offset, log_start), end)
        raise AssertionError(self.kind)  # pragma: no cover - exhaustive match

    def __str__(self) -> str:
        return f"{self.kind.value}({self.value})"

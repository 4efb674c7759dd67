"""Idempotent producer state of one partition: which producer sequences the log already holds.

Theory of operation (record-based sequences, see ``docs/decisions.md``). A batch frame's
header carries a producer id and the sequence number of its *first record* for that
(producer id, partition); the next frame of the producer continues at ``sequence +
record_count``. The leader keeps, per producer id, the next expected sequence and the
last ``window`` frames it appended (first sequence, base offset, record count), and
classifies each produced frame:

- producer id ``-1``: not idempotent, always appended;
- a producer id the table does not know: appended whatever its sequence (the state may
  have been lost to retention, or this is the producer's first frame);
- ``sequence == next expected``: appended;
- wholly below the next expected sequence: a **duplicate**, not appended; its records'
  original offsets come from the window (the remembered frame holding its first
  sequence), or ``DuplicateSequenceError`` when the window no longer reaches back that far
  (the client counts that as delivered);
- past the next expected sequence: ``OutOfOrderSequenceError`` (a gap);
- starting below and ending past it: ``OutOfOrderSequenceError`` (part of a frame cannot be
  dropped without decoding it).

Frames of one request are judged in order, each against the state the earlier ones
would leave, and nothing is recorded until the append succeeded (``plan`` then
``commit``). A new leader rebuilds the table from the frame headers in its log
(``rebuild``: header-only, nothing is decoded), so duplicates are caught across a leader
change. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from spark_stream.errors import (
    DuplicateSequenceError,
    InvalidRequestError,
    OutOfOrderSequenceError,
)
from spark_stream.records import BatchHeader

__all__ = [
    "DEFAULT_WINDOW",
    "DEFAULT_MAX_PRODUCERS",
    "AppendedFrame",
    "ProducePlan",
    "ProducerTable",
]

DEFAULT_WINDOW = 16
"""Frames remembered per producer (Kafka keeps 5; Spark retries resend more)."""

DEFAULT_MAX_PRODUCERS = 4096
"""Producer ids remembered per partition; the least recently used is forgotten first."""


@dataclass(frozen=True, slots=True)
class AppendedFrame:
    """One idempotent frame in the log: its producer, first sequence, offsets."""

    producer_id: int
    sequence: int
    base_offset: int
    record_count: int

    @property
    def next_sequence(self) -> int:
        """The sequence the producer's next frame must start at."""
        return self.sequence + self.record_count


@dataclass(frozen=True, slots=True)
class ProducePlan:
    """What to do with the frames of one produce request.

    Attributes:
        offsets: the base offset of every frame of the request, in order: the original
            one for duplicates, the one the append will assign for the others.
        append: indices (into the request's frames) of the frames to append, in order.
        end_offset: the offset after the last record the request covers (what
            ``acks=all`` waits for).
        entries: idempotent frames to remember once the append succeeded.
    """

    offsets: list[int]
    append: list[int]
    end_offset: int
    entries: list[AppendedFrame] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        """How many frames of the request were already in the log."""
        return len(self.offsets) - len(self.append)


class _Producer:
    __slots__ = ("next_sequence", "frames")

    def __init__(self, window: int) -> None:
        self.next_sequence = 0
        self.frames: deque[AppendedFrame] = deque(maxlen=window)

    def add(self, frame: AppendedFrame) -> None:
        self.frames.append(frame)
        self.next_sequence = frame.next_sequence

    def find(self, sequence: int) -> AppendedFrame | None:
        for frame in reversed(self.frames):
            if frame.sequence <= sequence < frame.next_sequence:
                return frame
        return None


class ProducerTable:
    """Per producer id: the next expected sequence and the last frames appended.

    Args:
        window: frames remembered per producer (how far back a retry is answered with
            its original offsets).
        max_producers: producer ids remembered; the least recently used is dropped.
    """

    def __init__(
        self, window: int = DEFAULT_WINDOW, max_producers: int = DEFAULT_MAX_PRODUCERS
    ) -> None:
        if window < 1 or max_producers < 1:
            raise InvalidRequestError("window and max_producers must be >= 1")
        self.window = window
        self.max_producers = max_producers
        self._producers: OrderedDict[int, _Producer] = OrderedDict()

    def __len__(self) -> int:
        return len(self._producers)

    def next_sequence(self, producer_id: int) -> int | None:
        """The sequence ``producer_id``'s next frame must start at, or None if unknown."""
        producer = self._producers.get(producer_id)
        return None if producer is None else producer.next_sequence

    @classmethod
    def rebuild(
        cls,
        headers: Iterable[BatchHeader],
        window: int = DEFAULT_WINDOW,
        max_producers: int = DEFAULT_MAX_PRODUCERS,
    ) -> ProducerTable:
        """The table a log's frames imply, from their headers in offset order."""
        table = cls(window, max_producers)
        for header in headers:
            table.observe(header)
        return table

    def observe(self, header: BatchHeader) -> None:
        """Remember a frame found in the log (its header holds its final base offset)."""
        if header.producer_id < 0 or header.sequence < 0:
            return
        self._remember(
            AppendedFrame(
                header.producer_id, header.sequence, header.base_offset, header.record_count
            )
        )

    def plan(self, headers: Sequence[BatchHeader], leo: int) -> ProducePlan:
        """Classify a request's frames (see the module docstring); changes nothing.

        Args:
            headers: the request's frame headers, in order.
            leo: the log end offset, where the first appended frame will start.

        Raises:
            OutOfOrderSequenceError: a frame skips or straddles the expected sequence.
            DuplicateSequenceError: a duplicate older than the remembered window.
            InvalidRequestError: an idempotent frame with a negative sequence.
        """
        offsets: list[int] = []
        append: list[int] = []
        entries: list[AppendedFrame] = []
        pending: dict[int, list[AppendedFrame]] = {}
        next_offset, end = leo, leo
        for index, header in enumerate(headers):
            pid, seq, count = header.producer_id, header.sequence, header.record_count
            if pid >= 0:
                if seq < 0:
                    raise InvalidRequestError(
                        f"frame {index} has producer id {pid} but sequence {seq}"
                    )
                original = self._duplicate_offset(pid, seq, count, pending.get(pid, []))
                if original is not None:
                    offsets.append(original)
                    end = max(end, original + count)
                    continue
                entry = AppendedFrame(pid, seq, next_offset, count)
                pending.setdefault(pid, []).append(entry)
                entries.append(entry)
            offsets.append(next_offset)
            append.append(index)
            next_offset += count
            end = max(end, next_offset)
        return ProducePlan(offsets, append, end, entries)

    def commit(self, plan: ProducePlan) -> None:
        """Remember the idempotent frames of a plan whose append succeeded."""
        for entry in plan.entries:
            self._remember(entry)

    # -- internals -------------------------------------------------------------------

    def _duplicate_offset(
        self, pid: int, seq: int, count: int, pending: list[AppendedFrame]
    ) -> int | None:
        """The original offset of a duplicate, None for a frame to append; or raise."""
        producer = self._producers.get(pid)
        if pending:
            expected = pending[-1].next_sequence
        elif producer is not None:
            expected = producer.next_sequence
        else:
            return None  # unknown producer: any sequence starts it
        if seq == expected:
            return None
        if seq > expected:
            raise OutOfOrderSequenceError(
                f"producer {pid}: sequence {seq} skips ahead of the expected {expected}"
            )
        if seq + count > expected:
            raise OutOfOrderSequenceError(
                f"producer {pid}: frame with sequences {seq}..{seq + count - 1} straddles "
                f"the expected sequence {expected}"
            )
        for frame in reversed(pending):
            if frame.sequence <= seq < frame.next_sequence:
                return frame.base_offset + (seq - frame.sequence)
        found = producer.find(seq) if producer is not None else None
        if found is None:
            raise DuplicateSequenceError(
                f"producer {pid}: sequence {seq} was appended before the "
                f"{self.window} frames still remembered (next expected {expected})"
            )
        return found.base_offset + (seq - found.sequence)

    def _remember(self, entry: AppendedFrame) -> None:
        producer = self._producers.get(entry.producer_id)
        if producer is None:
            producer = self._producers[entry.producer_id] = _Producer(self.window)
            if len(self._producers) > self.max_producers:
                self._producers.popitem(last=False)
        else:
            self._producers.move_to_end(entry.producer_id)
        producer.add(entry)

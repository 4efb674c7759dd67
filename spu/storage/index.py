"""Pure index math: entry layouts, the indexing policy, binary searches, sanity checks.

Theory of operation. A segment has two sparse indexes, both sorted, both searched with
``numpy.searchsorted`` over (memory-mapped) structured arrays:

* the **offset index**: ``(rel uint32, pos uint32)`` = a batch starting at relative offset
  ``rel`` sits at byte ``pos`` of the ``.log``. To find the batch holding an offset, take
  the last entry with ``rel <= target`` (byte 0 if none) and walk batch headers forward.
* the **time index**: ``(ts int64, rel uint64)`` = every record in the batches up to and
  including the one starting at ``rel`` has a timestamp ``<= ts``. ``ts`` is the running
  maximum, so the keys never decrease. To find the first record with a timestamp
  ``>= target``, take the last entry with ``ts < target``: everything up to its batch is
  older, so the walk starts there (byte 0 if none).

The policy (``IndexCursor``) is Kafka's: a batch gets an offset entry when more than
``interval`` bytes were appended since the previous entry (so the first batch of a segment
never does; lookups below the first entry start at byte 0), and a time entry at the same
batch when the running maximum timestamp grew. Sealing adds a last time entry carrying the
segment's maximum, so a sealed segment's maximum timestamp is its last time-index key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_stream.records import BATCH_HEADER_SIZE

__all__ = [
    "OFFSET_ENTRY",
    "TIME_ENTRY",
    "MAX_RELATIVE_OFFSET",
    "NO_TIMESTAMP",
    "IndexCursor",
    "floor_by_rel",
    "floor_by_pos",
    "last_below_ts",
    "count_below_pos",
    "count_below_rel",
    "offset_index_problem",
    "time_index_problem",
]

OFFSET_ENTRY = np.dtype([("rel", "<u4"), ("pos", "<u4")])
# 16 bytes, not 12: an unaligned int64 field makes numpy copy the column on every search.
TIME_ENTRY = np.dtype([("ts", "<i8"), ("rel", "<u8")])
MAX_RELATIVE_OFFSET = (1 << 32) - 1
NO_TIMESTAMP = -(1 << 63)


@dataclass(slots=True)
class IndexCursor:
    """The running state of the indexing policy over one segment's batches, in order."""

    interval: int
    bytes_since_entry: int = 0
    max_timestamp: int = NO_TIMESTAMP
    last_time_key: int = NO_TIMESTAMP
    last_rel: int = -1

    def on_batch(
        self, rel: int, pos: int, length: int, max_timestamp: int
    ) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        """Account for the next batch; return the offset and time entries it gets, if any."""
        offset_entry = time_entry = None
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
        if self.bytes_since_entry > self.interval:
            offset_entry = (rel, pos)
            self.bytes_since_entry = 0
            if self.max_timestamp > self.last_time_key:
                time_entry = (self.max_timestamp, rel)
                self.last_time_key = self.max_timestamp
        self.bytes_since_entry += length
        self.last_rel = rel
        return offset_entry, time_entry

    def seal_entry(self) -> tuple[int, int] | None:
        """The closing time entry (segment maximum -> last batch) a seal appends, if new."""
        if self.last_rel < 0 or self.max_timestamp <= self.last_time_key:
            return None
        self.last_time_key = self.max_timestamp
        return (self.max_timestamp, self.last_rel)


def floor_by_rel(entries: np.ndarray, rel: int) -> int:
    """Index of the last offset entry with ``rel <= rel``, or -1."""
    return int(np.searchsorted(entries["rel"], np.uint32(rel), side="right")) - 1


def floor_by_pos(entries: np.ndarray, pos: int) -> int:
    """Index of the last offset entry with ``pos <= pos``, or -1."""
    return (
        int(np.searchsorted(entries["pos"], np.uint32(min(pos, MAX_RELATIVE_OFFSET)), side="right"))
        - 1
    )


def count_below_pos(entries: np.ndarray, pos: int) -> int:
    """How many offset entries point below byte ``pos`` (the ones a cut at ``pos`` keeps)."""
    return int(np.searchsorted(entries["pos"], np.uint32(pos), side="left"))


def count_below_rel(entries: np.ndarray, rel: int) -> int:
    """How many time entries refer to batches starting below relative offset ``rel``."""
    return int(np.searchsorted(entries["rel"], np.uint64(rel), side="left"))


def last_below_ts(entries: np.ndarray, ts: int) -> int:
    """Index of the last time entry with ``ts < ts``, or -1."""
    return int(np.searchsorted(entries["ts"], np.int64(ts), side="left")) - 1


def offset_index_problem(
    entries: np.ndarray, log_size: int, bases_at: np.ndarray | None, base_offset: int
) -> str | None:
    """Why an offset index cannot be trusted for a log of ``log_size`` bytes, or ``None``.

    Args:
        entries: the index entries.
        log_size: bytes in the segment's log.
        bases_at: the base offsets the log's batch headers hold at each entry's position,
            or ``None`` to skip that cross-check.
        base_offset: the segment's base offset.
    """
    if len(entries) == 0:
        return None
    rel = entries["rel"].astype(np.int64)
    pos = entries["pos"].astype(np.int64)
    if np.any(np.diff(rel) <= 0) or np.any(np.diff(pos) <= 0):
        return "entries are not strictly increasing"
    if pos[0] <= 0 or rel[0] <= 0:
        return "an entry points at the first batch, which is never indexed"
    if pos[-1] + BATCH_HEADER_SIZE >= log_size:
        return f"an entry points at byte {pos[-1]}, past the last batch of {log_size} bytes"
    if bases_at is not None and not np.array_equal(bases_at, rel + base_offset):
        return "an entry does not point at the batch it names"
    return None


def time_index_problem(entries: np.ndarray, last_rel: int, indexed_rels: np.ndarray) -> str | None:
    """Why a time index cannot be trusted, or ``None``.

    Args:
        entries: the time index entries.
        last_rel: relative offset of the segment's last batch.
        indexed_rels: relative offsets the offset index names (time entries sit at those
            batches, or at the last batch for the closing entry).
    """
    if len(entries) == 0:
        return None
    ts = entries["ts"]
    rel = entries["rel"].astype(np.int64)
    if np.any(np.diff(ts) <= 0) or np.any(np.diff(rel) <= 0):
        return "entries are not strictly increasing"
    if rel[-1] > last_rel:
        return f"an entry names relative offset {rel[-1]}, past the last batch at {last_rel}"
    allowed = np.append(indexed_rels.astype(np.int64), last_rel)
    if not np.all(np.isin(rel, allowed)):
        return "an entry names an offset that does not start an indexed batch"
    return None

"""Pure planning: offset ranges per Spark task, and read-limit arithmetic per micro-batch.

``plan_ranges`` turns start and end offsets into one ``OffsetRange`` per topic-partition
with data, and with ``minPartitions`` splits large ranges (proportionally to their size,
as Spark's Kafka source does) so more Spark tasks read in parallel. ``prorate`` divides a
budget (rows or bytes of one trigger) among partitions in proportion to their backlog
with the largest-remainder method: the shares are deterministic, never sum past the
budget, and a budget of at least one record always makes progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from datasource.offsets import TopicPartition

__all__ = ["OffsetRange", "plan_ranges", "split_range", "prorate", "limit_rows", "delay_batch"]


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Records ``[start, end)`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Number of offsets in the range."""
        return self.end - self.start

    @property
    def tp(self) -> TopicPartition:
        """The topic-partition the range belongs to."""
        return TopicPartition(self.topic, self.partition)


def split_range(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """Cut ``r`` into ``parts`` contiguous ranges whose sizes differ by at most one."""
    parts = max(1, min(parts, r.size))
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [
        OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:], strict=False)
    ]


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    min_partitions: int | None = None,
) -> list[OffsetRange]:
    """The non-empty ranges to read between ``start`` and ``end``, in stable order.

    Args:
        start: first offset per partition; a partition missing here starts at 0 (the
            caller clamps to the log start).
        end: end offset (exclusive) per partition; partitions missing here are not read.
        min_partitions: when there are fewer ranges than this, split each range into
            ``round(size / total * min_partitions)`` parts (at least one).
    """
    ranges = [
        OffsetRange(tp.topic, tp.partition, start.get(tp, 0), stop)
        for tp, stop in sorted(end.items())
        if stop > start.get(tp, 0)
    ]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, round(r.size / total * min_partitions))
        out.extend(split_range(r, parts))
    return out


def prorate(total: int, weights: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Split ``total`` among partitions in proportion to ``weights`` (largest remainder).

    Each share is at most its weight only if ``total`` does not exceed the weights' sum;
    callers that need a cap (rows) take ``min`` themselves. Ties go to the partition that
    sorts first, so the result is deterministic.
    """
    if total < 0:
        raise ValueError(f"budget must be >= 0, got {total}")
    positive = {tp: w for tp, w in sorted(weights.items()) if w > 0}
    weight_sum = sum(positive.values())
    if weight_sum == 0:
        return {tp: 0 for tp in weights}
    shares = {tp: total * w // weight_sum for tp, w in positive.items()}
    left = total - sum(shares.values())
    by_remainder = sorted(positive, key=lambda tp: (-(total * positive[tp] % weight_sum), tp))
    for tp in by_remainder[:left]:
        shares[tp] += 1
    return {tp: shares.get(tp, 0) for tp in weights}


def limit_rows(
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    max_rows: int,
) -> dict[TopicPartition, int]:
    """End offsets that admit at most ``max_rows`` records in total past ``start``.

    The budget goes to partitions in proportion to their backlog, so a busy partition
    cannot starve the others. A partition missing from ``start`` begins at 0 (callers
    pass a new partition's log start); an end is never below its start.
    """
    begin = {tp: start.get(tp, 0) for tp in latest}
    backlog = {tp: max(0, end - begin[tp]) for tp, end in latest.items()}
    budget = min(max_rows, sum(backlog.values()))
    shares = prorate(budget, backlog)
    return {tp: begin[tp] + shares[tp] for tp in latest}


def delay_batch(min_rows: int, new_rows: int, now_ms: int, last_ms: int, max_delay_ms: int) -> bool:
    """Whether a trigger waits (``minOffsetsPerTrigger`` + ``maxTriggerDelay``, as Spark's
    Kafka source decides it): it waits while fewer than ``min_rows`` records are new and
    less than ``max_delay_ms`` passed since the last trigger that ran (``last_ms``; 0
    before the first, so the first trigger never waits).

    Args:
        min_rows: ``minOffsetsPerTrigger``.
        new_rows: records visible past the query's position now.
        now_ms: the time now.
        last_ms: when the last trigger that did not wait ran.
        max_delay_ms: ``maxTriggerDelay``.
    """
    if now_ms - last_ms >= max_delay_ms:
        return False
    return new_rows < min_rows

"""Retention policy as a pure function over segment snapshots.

Only a prefix of the log can go (deleting a middle segment would leave a gap), only
sealed segments (never the active one), and only segments wholly below the high
watermark (as in Kafka, a segment that followers may still fetch stays). Within those
limits a segment is deleted when its newest record is older than ``retention_ms`` or when
the partition, without it, would still hold at least ``retention_bytes``. A tiered
partition also passes ``floor``, the end of its tier copy: a segment reaching past it
stays until the tier holds it.
"""

from __future__ import annotations

from collections.abc import Sequence

from spu.storage.segment import SegmentInfo

__all__ = ["segments_to_delete"]


def segments_to_delete(
    segments: Sequence[SegmentInfo],
    *,
    now_us: int,
    retention_ms: int | None,
    retention_bytes: int | None,
    high_watermark: int,
    floor: int | None = None,
) -> int:
    """How many of the oldest ``segments`` the policy deletes.

    Args:
        segments: snapshots of all segments, oldest first.
        now_us: the current time, microseconds since the epoch.
        retention_ms: age limit on a segment's newest record timestamp, or ``None``.
        retention_bytes: size limit of the partition, or ``None``.
        high_watermark: segments must end at or below it to be deleted.
        floor: when set, segments must end at or below it too (the tier's end).
    """
    total = sum(s.size for s in segments)
    cutoff = None if retention_ms is None else now_us - retention_ms * 1000
    count = 0
    for segment in segments:
        if not segment.sealed or segment.next_offset > high_watermark:
            break
        if floor is not None and segment.next_offset > floor:
            break
        too_old = cutoff is not None and segment.max_timestamp < cutoff
        too_big = retention_bytes is not None and total - segment.size >= retention_bytes
        if not (too_old or too_big):
            break
        total -= segment.size
        count += 1
    return count

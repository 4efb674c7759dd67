"""What a partition's leader tiers next, and what local retention may delete (pure).

A leader tiers *pieces*: the committed part of each sealed segment that the tier does
not hold yet. Usually a piece is a whole segment; after a leader change it may be the
tail of one, because replicas roll segments independently (a follower's segment
boundaries are its own) while batch boundaries, and so the manifest's end, are the same
on every replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spu.storage.segment import SegmentInfo

__all__ = ["Piece", "pieces_to_tier", "tier_status_text"]


@dataclass(frozen=True, slots=True)
class Piece:
    """Offsets ``[start, end)`` of one sealed segment, to be written as one tier file."""

    start: int
    end: int


def pieces_to_tier(
    segments: Sequence[SegmentInfo], tiered_end: int | None, high_watermark: int
) -> list[Piece]:
    """The pieces to tier, oldest first.

    Args:
        segments: the log's segments, oldest first (the last one is active).
        tiered_end: where the tier's manifest ends (``None``: the tier holds nothing).
        high_watermark: only committed records are tiered.
    """
    pieces = []
    for segment in segments:
        if not segment.sealed or segment.next_offset > high_watermark:
            break
        start = segment.base_offset if tiered_end is None else max(segment.base_offset, tiered_end)
        if start < segment.next_offset:
            pieces.append(Piece(start, segment.next_offset))
    return pieces


def tier_status_text(error: str | None, start: int | None, end: int | None, files: int) -> str:
    """The ``TIER`` cell of ``partition list``: ``ok: 3 files [0, 4500)``, ``ok: empty``
    or ``error: <cause>``."""
    if error is not None:
        return f"error: {error}"
    if start is None or end is None:
        return "ok: empty"
    return f"ok: {files} files [{start}, {end})"

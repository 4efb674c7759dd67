"""Checked reads from sealed segments: what a leader serves is crc-checked once.

Bit rot in a sealed segment is the scrub's to find in the background, but a leader
also checks every frame it serves from a sealed segment (crc per frame, cheap next to
the copy) so that a damaged frame never reaches a consumer. A sealed segment never
changes, so this keeps, per segment, how many bytes from its start reads have already
checked: history re-read by many consumers is checked once per leadership (bit rot
after that is the scrub's to find again).

Pure bookkeeping over bytes already read: the leader decides what a damage means (it
records it and hands leadership over or fails the read).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from spu.storage import LogSlice, ReplicaLog
from spu.storage.layout import parse_segment_name
from spu.storage.scrub import Damage, check_chunk

__all__ = ["SealedCheck", "SealedReadCheck"]


@dataclass(frozen=True, slots=True)
class SealedCheck:
    """What checking a slice of a sealed segment found.

    Attributes:
        piece: the intact frames of the slice, from its start (the whole slice when
            ``damage`` is None); ``None`` when its first frame is the damaged one.
        damage: the first damaged frame of the slice, ``None`` when every frame checks.
    """

    piece: LogSlice | None
    damage: Damage | None = None


class SealedReadCheck:
    """Checks slices read from sealed segments, each byte once (until ``forget``)."""

    def __init__(self) -> None:
        # Sealed segment base -> bytes from its start that reads already checked.
        self._checked: dict[int, int] = {}

    def forget(self) -> None:
        """Check everything again (a damage was found: what was checked before may not hold)."""
        self._checked.clear()

    def check(self, piece: LogSlice, log: ReplicaLog) -> SealedCheck:
        """Check the frames of ``piece``, a slice of one of ``log``'s sealed segments.

        Args:
            piece: a non-empty slice below ``log.active_base``.
            log: the log it was read from (its segment bases bound a damage).

        Returns:
            The slice cut before its first damaged frame and that damage, or the slice
            unchanged when every frame of it checks (or was checked before).
        """
        segment_base = parse_segment_name(piece.path.name) if piece.path is not None else None
        end = piece.position + piece.length
        checked = self._checked.get(segment_base, 0) if segment_base is not None else 0
        if end <= checked:
            return SealedCheck(piece)
        result = check_chunk(piece.data, piece.base_offset)
        if result.error is None:
            if segment_base is not None and piece.position <= checked:
                if segment_base not in self._checked:  # a new key: forget deleted segments
                    start = log.log_start_offset
                    self._checked = {b: n for b, n in self._checked.items() if b >= start}
                self._checked[segment_base] = end
            return SealedCheck(piece)
        segment = max(s.base_offset for s in log.segments if s.base_offset <= piece.base_offset)
        end = min(
            (s.base_offset for s in log.segments if s.base_offset > segment),
            default=log.leo,
        )
        position = piece.position + result.consumed
        damage = Damage(segment, result.next_offset, end, position, result.error)
        if not result.consumed:
            return SealedCheck(None, damage)
        cut = dataclasses.replace(
            piece, next_offset=result.next_offset, data=piece.data[: result.consumed]
        )
        return SealedCheck(cut, damage)

"""The small interface the replica controllers program against.

Leader and follower controllers need only this: append (two ways), read a slice, the
offsets, truncation and durability. ``ReplicaLog`` implements it; a test double or a
future engine can too.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from spu.storage.framing import FramesInput
from spu.storage.slices import LogSlice

__all__ = ["ReplicaStorage"]


@runtime_checkable
class ReplicaStorage(Protocol):
    """Storage of one partition replica (see ``spu.storage.log`` for the semantics)."""

    @property
    def log_start_offset(self) -> int:
        """The first offset still stored."""
        ...

    @property
    def leo(self) -> int:
        """The log end offset."""
        ...

    @property
    def hw(self) -> int:
        """The high watermark."""
        ...

    @hw.setter
    def hw(self, value: int) -> None: ...

    def append_produced(self, frames: FramesInput) -> list[int]:
        """Append producer batches, assigning offsets; return their base offsets."""
        ...

    def append_replicated(self, frames: FramesInput) -> list[int]:
        """Append the leader's batches as they are; reject gaps and overlaps."""
        ...

    def read(self, offset: int, max_bytes: int = ..., *, end_offset: int | None = None) -> LogSlice:
        """Whole frames from the one holding ``offset``, bounded by ``end_offset``."""
        ...

    def offset_for_timestamp(self, ts_us: int, *, end_offset: int | None = None) -> int | None:
        """The first offset whose timestamp is at least ``ts_us``."""
        ...

    def truncate_to(self, offset: int) -> int:
        """Cut at the batch boundary at or below ``offset``; return the new LEO."""
        ...

    def flush(self) -> None:
        """fsync what was appended and checkpoint the high watermark."""
        ...

    def close(self) -> None:
        """Flush and release the storage (it stays on disk for a later reopen)."""
        ...

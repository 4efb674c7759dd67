"""Which tier files a read of an offset range needs (pure planning over a manifest)."""

from __future__ import annotations

from spark_stream.errors import OffsetOutOfRangeError
from spark_stream.tier.manifest import TierEntry, TierManifest

__all__ = ["covering_entries", "tier_start"]


def tier_start(manifest: TierManifest, log_start: int) -> int:
    """The first readable offset of a partition: the tier's start when the tier reaches
    the SPU's log start (no hole between them), else the SPU's log start."""
    start, end = manifest.start_offset, manifest.end_offset
    if start is None or end is None or end < log_start:
        return log_start
    return min(start, log_start)


def covering_entries(manifest: TierManifest, start: int, end: int) -> list[TierEntry]:
    """The entries holding offsets ``[start, end)``, in order (empty when ``start >= end``).

    Raises:
        OffsetOutOfRangeError: the tier does not hold ``start`` (below its start: tier
            retention removed it) or ends before ``end``.
    """
    if start >= end:
        return []
    first, last = manifest.start_offset, manifest.end_offset
    if first is None or last is None or not first <= start < last:
        held = "nothing" if first is None else f"[{first}, {last})"
        raise OffsetOutOfRangeError(
            f"partition {manifest.partition}: offset {start} is not in the tier, which holds {held}"
        )
    if end > last:
        raise OffsetOutOfRangeError(
            f"partition {manifest.partition}: the tier ends at {last}, before {end}"
        )
    return [e for e in manifest.files if e.next_offset > start and e.base_offset < end]

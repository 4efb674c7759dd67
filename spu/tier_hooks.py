"""The seam between tiering and a table over the tier (``--table delta``).

After a file is recorded in a partition's manifest, the leader calls the topic's hook
with the partition and the manifest entry. When a leader starts tiering a partition it
first replays every entry of the manifest through the hook (a crash may have come
between recording a file and calling the hook), so a hook must be idempotent per
``(partition, entry.base_offset)``. A hook runs in the tiering worker thread; an
exception is logged and the entry is offered again at the next round. Before tier
retention deletes files, the hook is told (``on_expired``), so a table over the tier
never names a deleted file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from spark_stream.models import TopicSettings
from spark_stream.models.topic_table import TableFormat
from spark_stream.tier import TierEntry
from spu.delta_hook import DeltaTableHook

__all__ = ["TierHook", "table_hook"]


class TierHook(Protocol):
    """Told about every file in a topic's tier (see the module docstring)."""

    def on_tiered(self, partition: int, entry: TierEntry) -> None:
        """``entry`` of ``partition`` is in the manifest; its file is at
        ``{tier}/{entry.file}``."""
        ...

    def on_expired(self, partition: int, entries: Sequence[TierEntry]) -> None:
        """``entries`` (the oldest of ``partition``) are about to leave the tier."""
        ...


def table_hook(settings: TopicSettings, tier_url: str) -> TierHook | None:
    """The hook of a topic's table setting, or ``None`` (no table over the tier).

    Args:
        settings: the topic settings the partition spec carries.
        tier_url: the topic's tier directory.
    """
    if settings.table is TableFormat.DELTA:
        return DeltaTableHook(tier_url)
    return None

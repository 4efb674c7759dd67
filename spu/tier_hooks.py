"""The seam between tiering and a table over the tier (``--table delta``).

After a file is recorded in a partition's manifest, the leader calls the topic's hook
with the partition and the manifest entry. When a leader starts tiering a partition it
first replays every entry of the manifest through the hook (a crash may have come
between recording a file and calling the hook), so a hook must be idempotent per
``(partition, entry.base_offset)``. A hook runs in the tiering worker thread; an
exception is logged and the entry is offered again at the next round.
"""

from __future__ import annotations

from typing import Protocol

from spark_stream.models import TopicSettings
from spark_stream.tier import TierEntry

__all__ = ["TierHook", "table_hook"]


class TierHook(Protocol):
    """Told about every file in a topic's tier (see the module docstring)."""

    def on_tiered(self, partition: int, entry: TierEntry) -> None:
        """``entry`` of ``partition`` is in the manifest; its file is at
        ``{tier}/{entry.file}``."""
        ...


def table_hook(settings: TopicSettings, tier_url: str) -> TierHook | None:
    """The hook of a topic's table setting, or ``None`` (no table over the tier).

    Args:
        settings: the topic settings the partition spec carries.
        tier_url: the topic's tier directory.
    """
    del settings, tier_url  # the Delta table plugs in here
    return None

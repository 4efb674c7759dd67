"""The Delta side of tiering: a tier hook that commits each tiered file to the Delta table.

A topic with ``table: delta`` gets one ``DeltaTableHook`` per tiering round of a
partition (``spu.tier_hooks.table_hook``). Tiering calls ``on_tiered`` for each file
recorded in the partition's manifest, in offset order, and first replays every entry of
the manifest when a leader starts (or after a round failed); so a commit that failed
(an unreachable object store, a crash) is made at a later round, and a replayed entry
already in the table costs nothing: the hook remembers the partition's committed
version after the first look and skips entries at or below it without reading the table.
``on_expired`` removes files from the table before tier retention deletes them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from spu.storage.delta_table import commit_segments, committed_version, remove_segments

__all__ = ["TieredEntry", "DeltaTableHook"]

logger = logging.getLogger(__name__)


class TieredEntry(Protocol):
    """What the hook reads of a tier manifest entry (``spark_stream.tier.TierEntry``)."""

    @property
    def base_offset(self) -> int:
        """The file's first offset (it names the file)."""
        ...


class DeltaTableHook:
    """Commits tiered files of a topic to its Delta table at the tier's root."""

    def __init__(self, tier_url: str, storage_options: dict[str, str] | None = None) -> None:
        """Args:
        tier_url: the topic's tier directory, the table root.
        storage_options: object store options for delta-rs.
        """
        self.tier_url = tier_url
        self._options = storage_options
        self._committed: dict[int, int | None] = {}

    def on_tiered(self, partition: int, entry: TieredEntry) -> None:
        """Commit ``entry``'s file (idempotent per partition and base offset).

        Raises:
            StorageError: the commit failed; tiering reports it and replays later.
            InvalidConfigError: the file's columns do not fit the table.
        """
        if partition not in self._committed:
            self._committed[partition] = committed_version(self.tier_url, partition, self._options)
        done = self._committed[partition]
        if done is not None and entry.base_offset <= done:
            return
        added = commit_segments(
            self.tier_url, partition, [entry.base_offset], storage_options=self._options
        )
        self._committed[partition] = entry.base_offset
        if added:
            logger.info(
                "delta commit partition=%d base_offset=%d table=%s",
                partition,
                entry.base_offset,
                self.tier_url,
            )

    def on_expired(self, partition: int, entries: Sequence[TieredEntry]) -> None:
        """Remove expired files from the table; call before deleting them from the tier.

        Raises:
            StorageError: the commit failed.
        """
        removed = remove_segments(
            self.tier_url,
            partition,
            [e.base_offset for e in entries],
            storage_options=self._options,
        )
        if removed:
            logger.info(
                "delta remove partition=%d files=%d table=%s",
                partition,
                len(removed),
                self.tier_url,
            )

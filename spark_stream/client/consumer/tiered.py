"""Reads below a partition's log start, from its topic's tier, then on from the SPU.

A tiered topic (``spec.tier`` in the metadata) keeps history in Parquet files after the
SPUs deleted their segments (``spark_stream.tier``). For a reader the partition then
starts at the tier's start (``readable_offsets``), and a read from an offset below the
SPU's log start takes the records from the tier first (``tier_prefix``), with the same
offsets, up to the SPU's log start, and continues from the SPU. The SPU's log start may
move while the tier is read (local retention); the prefix reads on until it reaches
wherever the SPU's log starts by then. Files are read in worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pyarrow as pa

from spark_stream.client.consumer.fetch import fetch_offsets
from spark_stream.client.leader import LeaderClient, RetryPolicy
from spark_stream.client.types import PartitionOffsets
from spark_stream.errors import OffsetOutOfRangeError
from spark_stream.tier import TierManifest, load_manifest, read_tier_batches, tier_start

__all__ = ["readable_offsets", "tier_prefix", "tier_url"]


def tier_url(leaders: LeaderClient, topic: str) -> str | None:
    """The topic's tier as the cached metadata has it (``None``: not tiered)."""
    known = leaders.watcher.view.topics.get(topic)
    return None if known is None else known.spec.tier


async def _manifest(url: str, partition: int) -> TierManifest:
    return await asyncio.to_thread(load_manifest, url, partition)


async def readable_offsets(
    leaders: LeaderClient, topic: str, partition: int, policy: RetryPolicy
) -> PartitionOffsets:
    """``(log_start, hw, leo)`` with ``log_start`` the first offset readable at all: the
    tier's start when the tier reaches the SPU's log start, else the SPU's."""
    offsets = await fetch_offsets(leaders, topic, partition, policy)
    url = tier_url(leaders, topic)
    if url is None or offsets.log_start == 0:
        return offsets
    manifest = await _manifest(url, partition)
    return offsets._replace(log_start=tier_start(manifest, offsets.log_start))


def _read_all(
    url: str, manifest: TierManifest, start: int, end: int, schema: pa.Schema
) -> list[pa.RecordBatch]:
    return list(read_tier_batches(url, manifest, start, end, schema))


async def tier_prefix(
    leaders: LeaderClient,
    topic: str,
    partition: int,
    start: int,
    end: int | None,
    schema: pa.Schema,
    policy: RetryPolicy,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The records from ``start`` up to the SPU's log start (and below ``end``) from the
    tier: batches of ``offset`` then ``schema``'s columns. Nothing when ``start`` is
    already on the SPU or the topic has no tier (the SPU then answers for itself).

    Raises:
        OffsetOutOfRangeError: the tier does not hold the offsets (tier retention).
        StorageError: a tier file or manifest cannot be read.
    """
    url = tier_url(leaders, topic)
    if url is None:
        return
    position = start
    while end is None or position < end:
        offsets = await fetch_offsets(leaders, topic, partition, policy)
        stop = offsets.log_start if end is None else min(end, offsets.log_start)
        if position >= stop:
            return
        manifest = await _manifest(url, partition)
        for entry in manifest.files:
            if entry.next_offset <= position or entry.base_offset >= stop:
                continue
            piece_end = min(entry.next_offset, stop)
            single = manifest.model_copy(update={"files": (entry,)})
            for batch in await asyncio.to_thread(
                _read_all, url, single, position, piece_end, schema
            ):
                yield batch
            position = piece_end
        if position < stop:
            held = (
                "nothing"
                if manifest.start_offset is None
                else f"[{manifest.start_offset}, {manifest.end_offset})"
            )
            raise OffsetOutOfRangeError(
                f"{topic}-{partition}: offset {position} is below the log start "
                f"{offsets.log_start} and not in the tier {url}, which holds {held}"
            )

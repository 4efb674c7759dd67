"""A topic's tier: sealed segments as Parquet files in an fsspec directory, and their manifest.

Layout of a topic's tier directory ``T`` (agreed with the Delta table, which lives at
``T`` too and partitions by ``partition``)::

    T/partition={p}/{base_offset:020}.parquet   one file per tiered piece of a segment
    T/_fluvio/partition={p}.json                the partition's manifest

Modules: ``layout`` (names, pure), ``manifest`` (the manifest model and its pure
updates), ``plan`` (which files cover an offset range, pure), ``store`` (manifest and
file I/O through fsspec), ``reader`` (records of an offset range read from the tier).
The SPU writes (``spu.tiering``); the client and the Spark source read (``reader``).
"""

from __future__ import annotations

from spark_stream.tier.layout import data_file, manifest_file, topic_tier_url
from spark_stream.tier.manifest import TierEntry, TierManifest
from spark_stream.tier.plan import covering_entries, tier_start
from spark_stream.tier.reader import read_tier_batches
from spark_stream.tier.store import load_manifest, save_manifest

__all__ = [
    "TierEntry",
    "TierManifest",
    "covering_entries",
    "data_file",
    "load_manifest",
    "manifest_file",
    "read_tier_batches",
    "save_manifest",
    "tier_start",
    "topic_tier_url",
]

"""Names inside a topic's tier directory: pure functions of the URL, the partition, offsets.

Hive-style ``partition={p}`` directories let a table engine (Delta, Spark's Parquet
source) read the partition as a column and prune by it; ``_fluvio`` starts with an
underscore, which Spark and Delta skip when they list data files.
"""

from __future__ import annotations

__all__ = [
    "MANIFEST_DIR",
    "PARQUET_SUFFIX",
    "data_file",
    "join",
    "manifest_file",
    "partition_dir",
    "topic_tier_url",
]

PARQUET_SUFFIX = ".parquet"
MANIFEST_DIR = "_fluvio"


def join(url: str, relative: str) -> str:
    """``url`` and a relative path below it, one ``/`` between them."""
    return f"{url.rstrip('/')}/{relative}"


def topic_tier_url(root: str, topic: str) -> str:
    """The tier directory of ``topic`` under a cluster's tier root: ``{root}/{topic}``."""
    return join(root, topic)


def partition_dir(partition: int) -> str:
    """The directory of a partition's files, relative to the topic's tier."""
    return f"partition={partition}"


def data_file(partition: int, base_offset: int) -> str:
    """The file of the piece starting at ``base_offset``, relative to the topic's tier."""
    return f"{partition_dir(partition)}/{base_offset:020d}{PARQUET_SUFFIX}"


def manifest_file(partition: int) -> str:
    """The manifest of ``partition``, relative to the topic's tier."""
    return f"{MANIFEST_DIR}/partition={partition}.json"

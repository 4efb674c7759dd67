"""Names inside a topic's tier directory: pure functions of the URL, the partition, offsets.

Hive-style ``partition={p}`` directories let a table engine (Delta, Spark's Parquet
source) read the partition as a column and prune by it; ``_fluvio`` starts with an
underscore, which Spark and Delta skip when they list data files.

Temporary files. Every file is written under a hidden temporary name next to its target
and moved in (``store.write_atomic``): ``.{name}.e{epoch}.{nonce}.tmp``, with the leader
epoch of the partition's leader that writes it. A writer killed in between leaves the
file behind; readers never see it (they go by the manifest, and Spark and Delta skip
hidden files), and a partition's next leader removes it (``stale_temps``): a temporary
file of an epoch up to its own is abandoned, since no other writer of that epoch or an
older one may write any more (a deposed leader that still tries fails at its move).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "MANIFEST_DIR",
    "PARQUET_SUFFIX",
    "TMP_SUFFIX",
    "data_file",
    "join",
    "manifest_file",
    "partition_dir",
    "stale_temps",
    "temp_name",
    "temp_target",
    "topic_tier_url",
]

PARQUET_SUFFIX = ".parquet"
MANIFEST_DIR = "_fluvio"
TMP_SUFFIX = ".tmp"
_EPOCH = re.compile(r"(?P<target>.+)\.e(?P<epoch>\d+)")


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


def temp_name(name: str, epoch: int | None, nonce: str) -> str:
    """The hidden name a write of the file ``name`` goes to before it is moved in:
    ``.{name}.e{epoch}.{nonce}.tmp``, or ``.{name}.{nonce}.tmp`` for a writer that is no
    partition's leader (``epoch`` None: whoever leads next removes it)."""
    owner = "" if epoch is None else f".e{epoch}"
    return f".{name}{owner}.{nonce}{TMP_SUFFIX}"


def temp_target(name: str) -> tuple[str, int | None] | None:
    """The target file name and the writer's epoch of a temporary name (``temp_name``),
    or ``None`` when ``name`` is not one."""
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return None
    body, dot, nonce = name[1 : -len(TMP_SUFFIX)].rpartition(".")
    if not (dot and body and nonce):
        return None
    tagged = _EPOCH.fullmatch(body)
    if tagged is None:
        return body, None
    return tagged["target"], int(tagged["epoch"])


def stale_temps(names: Iterable[str], epoch: int, target: str | None = None) -> list[str]:
    """The temporary files among ``names`` that the leader of ``epoch`` removes: those of
    writers of an epoch up to its own or of none (a newer leader's are left alone).

    Args:
        names: file names in one directory of the tier.
        epoch: the leader epoch of the partition's leader that cleans up.
        target: only temporary files of this target name (the manifest directory holds
            every partition's manifest); ``None``: any target.
    """
    stale = []
    for name in names:
        parsed = temp_target(name)
        if parsed is None or (target is not None and parsed[0] != target):
            continue
        if parsed[1] is None or parsed[1] <= epoch:
            stale.append(name)
    return stale

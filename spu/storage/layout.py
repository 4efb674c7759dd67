"""File names inside a replica directory: pure functions, no I/O except listing.

A replica directory ``{root}/{topic}-{partition}`` holds, per segment, ``{base:020}.log``,
``{base:020}.index`` and ``{base:020}.timeindex``; the high-watermark checkpoint
``replication.chk``; the uid of the partition it stores, ``partition.uid`` (see
``identity``); the metadata of the replica as the SC last handed it over,
``replica.json`` (see ``replica_meta``); and a ``.lock`` file held while a process has the log open.
"""

from __future__ import annotations

import re
from pathlib import Path

from spark_stream.errors import InvalidRequestError

__all__ = [
    "LOG_SUFFIX",
    "INDEX_SUFFIX",
    "TIMEINDEX_SUFFIX",
    "CORRUPT_SUFFIX",
    "SWAP_SUFFIX",
    "CHECKPOINT_NAME",
    "UID_NAME",
    "REPLICA_META_NAME",
    "LOCK_NAME",
    "segment_stem",
    "segment_paths",
    "parse_segment_name",
    "list_segment_bases",
    "replica_dir",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
CORRUPT_SUFFIX = ".corrupt"
SWAP_SUFFIX = ".swap"
CHECKPOINT_NAME = "replication.chk"
UID_NAME = "partition.uid"
REPLICA_META_NAME = "replica.json"
LOCK_NAME = ".lock"

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_REPLICA_PART = re.compile(r"^[A-Za-z0-9._-]+$")


def segment_stem(base_offset: int) -> str:
    """The zero-padded name shared by a segment's files, e.g. ``00000000000000000042``."""
    return f"{base_offset:020d}"


def segment_paths(directory: Path, base_offset: int) -> tuple[Path, Path, Path]:
    """The ``.log``, ``.index`` and ``.timeindex`` paths of the segment at ``base_offset``."""
    stem = segment_stem(base_offset)
    return (
        directory / f"{stem}{LOG_SUFFIX}",
        directory / f"{stem}{INDEX_SUFFIX}",
        directory / f"{stem}{TIMEINDEX_SUFFIX}",
    )


def parse_segment_name(name: str) -> int | None:
    """The base offset a ``.log`` file name encodes, or ``None`` for any other name."""
    match = _SEGMENT_NAME.match(name)
    return int(match.group(1)) if match else None


def list_segment_bases(directory: Path) -> list[int]:
    """Base offsets of the segment logs in ``directory``, ascending."""
    bases = (parse_segment_name(p.name) for p in directory.iterdir() if p.is_file())
    return sorted(b for b in bases if b is not None)


def replica_dir(root: Path | str, topic: str, partition: int) -> Path:
    """The directory of replica ``topic``/``partition`` under ``root``.

    The same replica id always maps to the same directory, which is how a replica that
    moves away and back reattaches its storage; a topic deleted and created again maps
    to the same directory too, which ``partition.uid`` tells apart (``identity``).

    Raises:
        InvalidRequestError: a topic name that is not a safe file name, or a negative
            partition.
    """
    if not _REPLICA_PART.match(topic) or topic in (".", ".."):
        raise InvalidRequestError(f"topic name {topic!r} is not a valid directory name")
    if partition < 0:
        raise InvalidRequestError(f"partition {partition} is negative")
    return Path(root) / f"{topic}-{partition}"

"""The replica storage engine: segmented, indexed, append-only logs of Arrow batch frames.

One ``ReplicaLog`` per partition replica, in its own directory (``replica_dir``). Its
segments ``{base:020}.log`` hold batch frames back to back (``spark_stream.records``);
sparse ``.index`` and ``.timeindex`` files, memory-mapped and binary-searched, find an
offset or a timestamp; reads return frame bytes without decoding them (``LogSlice``).
See ``log.py`` for the theory of operation and ``recovery.py`` for repair at open.

Modules: ``config`` (settings), ``layout`` (file names), ``identity`` (which partition
incarnation a directory holds), ``index`` (pure index math),
``index_file`` (mmap'd index files), ``framing`` (validation and scans), ``segment``,
``idle_lru`` and ``open_files`` (the per-process bound on open segment files),
``recovery``, ``retention`` (pure policy), ``checkpoint`` (high watermark), ``tier``
(Parquet export), ``slices`` (read results), ``interface`` (the protocol), ``log``.
"""

from __future__ import annotations

from spu.storage.config import LogConfig
from spu.storage.identity import list_replica_dirs, read_uid, remove_replica_dir, write_uid
from spu.storage.interface import ReplicaStorage
from spu.storage.layout import replica_dir
from spu.storage.log import DEFAULT_READ_BYTES, ReplicaLog
from spu.storage.recovery import RecoveryReport
from spu.storage.segment import SegmentInfo
from spu.storage.slices import LogSlice, decode_trusted
from spu.storage.tier import tier_path, write_parquet

__all__ = [
    "DEFAULT_READ_BYTES",
    "LogSlice",
    "RecoveryReport",
    "ReplicaLog",
    "ReplicaStorage",
    "SegmentInfo",
    "LogConfig",
    "decode_trusted",
    "list_replica_dirs",
    "read_uid",
    "remove_replica_dir",
    "replica_dir",
    "tier_path",
    "write_parquet",
    "write_uid",
]

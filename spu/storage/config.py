"""The one configuration object of a replica log, with documented defaults.

Sizes are bytes and durations milliseconds, as in Kafka's topic configs, so a YAML file or
a ``FLUVIO_*`` variable can set them without unit parsing. ``None`` turns a policy off.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from spark_stream.frame_check import PayloadCheck
from spark_stream.models import MAX_SEGMENT_SIZE
from spark_stream.records import BATCH_HEADER_SIZE

__all__ = ["LogConfig", "GIB", "MIB", "DAY_MS"]

MIB = 1 << 20
GIB = 1 << 30
DAY_MS = 24 * 3600 * 1000
# Batch positions are uint32 in the offset index. A batch starts below segment_max_bytes
# (one that would not fit rolls first), so 2 GiB keeps every position representable. A
# topic's segment size is held to the same bound when it is created.
_MAX_SEGMENT_BYTES = MAX_SEGMENT_SIZE


class LogConfig(BaseModel):
    """Segment, index, retention and flush settings of one partition replica.

    Attributes:
        segment_max_bytes: roll to a new segment when the next batch would make the active
            one larger than this (a batch larger than the limit gets a segment of its own).
            Default 1 GiB.
        segment_max_age_ms: roll when the active segment was created longer ago than this
            (wall clock of this process; the clock restarts when the log is reopened).
            Default 7 days; ``None`` never rolls by age.
        index_interval_bytes: one sparse offset-index entry per this many log bytes (about;
            an entry is always at a batch start). Default 4096.
        retention_ms: delete sealed segments whose newest record timestamp is older than
            this. Default 7 days; ``None`` keeps data forever.
        retention_bytes: delete the oldest sealed segments while the partition would stay
            at or above this size without them. Default ``None`` (no size limit).
        flush_bytes: fsync the active segment after this many appended bytes. Default
            ``None``: durability across machines comes from replication, as in Kafka.
        flush_interval_ms: fsync when an append finds the last fsync older than this (the
            owner may also call ``maybe_flush`` on a timer). Default 1000.
        max_batch_bytes: largest accepted batch frame, header included. Default 16 MiB.
        recovery_scan: at open, crc-scan only the ``"active"`` segment (sealed segments get
            a cheap index and tail check) or ``"all"`` segments. Default ``"active"``.
        check_payload: on append, how much of each payload to check before anything is
            written (``spark_stream.frame_check``): ``"none"`` (header and crc only),
            ``"structure"`` (the record-batch message's header, layout and buffer
            bounds, values not read) or ``"full"`` (a record batch every reader can
            decode, ``validate(full=True)``). Default ``"full"``. Produced appends only:
            replicated ones were checked by their leader.
        tier_url: fsspec URL of the directory Parquet exports go to; ``None`` means a
            ``tier/`` directory inside the replica directory.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    segment_max_bytes: int = Field(GIB, ge=BATCH_HEADER_SIZE + 1, le=_MAX_SEGMENT_BYTES)
    segment_max_age_ms: int | None = Field(7 * DAY_MS, gt=0)
    index_interval_bytes: int = Field(4096, ge=0)
    retention_ms: int | None = Field(7 * DAY_MS, gt=0)
    retention_bytes: int | None = Field(None, ge=0)
    flush_bytes: int | None = Field(None, gt=0)
    flush_interval_ms: int | None = Field(1000, ge=0)
    max_batch_bytes: int = Field(16 * MIB, ge=BATCH_HEADER_SIZE + 1, le=_MAX_SEGMENT_BYTES)
    recovery_scan: Literal["active", "all"] = "active"
    check_payload: PayloadCheck = "full"
    tier_url: str | None = None

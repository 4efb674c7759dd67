"""Low-level reads from partition leaders: offsets, a time lookup, frames and batches.

These are what Spark's reader plans with: ``fetch_offsets`` gives ``(log_start, hw,
leo)``, ``fetch_frames`` walks ``[start, end)`` with plain ``FETCH`` requests (one per
``max_bytes``) and yields whole frames as received, and ``fetch_batches`` decodes them
zero-copy and slices the first and last so exactly ``[start, end)`` comes out. Every
request fails over through ``LeaderClient``; a read resumes from the next offset it
has not yet yielded, so a leader change mid-range neither repeats nor skips records.

Given ``LocalFiles``, a range read first tries local fetches: the leader names where the
frames lie in its segment file and, when that file is on this host, the client reads it
itself (see ``local_files``). The first local fetch that cannot be served that way
switches the rest of the read to plain fetches; frames are crc-checked either way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from spark_stream.client.consumer.corrupt import checked, read_frame
from spark_stream.client.consumer.local_files import LocalFiles
from spark_stream.client.consumer.offset import check_start
from spark_stream.client.leader import LeaderClient, RetryPolicy
from spark_stream.client.metadata import Leader, MetadataWatcher
from spark_stream.client.types import PartitionOffsets
from spark_stream.errors import (
    CorruptFrameError,
    OffsetOutOfRangeError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from spark_stream.models.topic_schema import storage_schema
from spark_stream.protocol import received_tail
from spark_stream.protocol.data import (
    FetchLocalRequest,
    FetchLocalResponse,
    FetchOffsetsRequest,
    FetchOffsetsResponse,
    FetchRequest,
    FetchResponse,
    Isolation,
)
from spark_stream.records import (
    RECORD_SCHEMA,
    BatchHeader,
    iter_frames,
    read_header,
)

__all__ = [
    "typed_read_schema",
    "GroupFetch",
    "fetch_offsets",
    "offset_for_timestamp",
    "fetch_frames",
    "fetch_range",
    "fetch_batches",
    "visible_end",
    "slice_to_range",
]

log = logging.getLogger(__name__)

LOCAL_MAPPED_MAX_BYTES = 256 * 1024 * 1024
"""Bytes one local fetch of committed frames may name: nothing travels and the frames are
mapped, not copied, so one request covers up to this much of a segment (fewer round
trips to a leader that competes for the same cores)."""

#: How long a leader may hold a fetch that finds nothing new (a new leader's HW may lag).
_EMPTY_WAIT_MS = 200


@dataclass(frozen=True, slots=True)
class GroupFetch:
    """Who fetches, for a consumer-group member: sent with the leader epoch of the
    leader fetched from (fetch version 2), checked by the partition leader's delivery
    gate and leader epoch. Plain reads pass none and speak version 0.

    Attributes:
        group: the consumer group.
        member_id: the member fetching.
        grant_epoch: the generation at which the member got the partition.
    """

    group: str
    member_id: str
    grant_epoch: int


def group_fields(group: GroupFetch | None, leader: Leader) -> dict[str, Any]:
    """The fetch request fields of ``group`` sent to ``leader`` (keyword arguments of
    ``FetchRequest`` and ``StreamFetchRequest``), or none for a plain read (version 0).

    A group read always carries the leader's epoch as the metadata has it, so a deposed
    leader cannot serve the member (``FencedLeaderEpochError``, retried on the new one).
    """
    if group is None:
        return {}
    return {
        "group": group.group,
        "member_id": group.member_id,
        "grant_epoch": group.grant_epoch,
        "leader_epoch": leader.leader_epoch,
    }


@dataclass(frozen=True, slots=True)
class _Read:
    """One fetch's answer: the partition's offsets and its frames, headers walked as they
    are iterated (a local read may name far more than the range still needs); the reader
    checks the crc of each frame it uses."""

    log_start: int
    hw: int
    leo: int
    frames: Iterator[tuple[BatchHeader, memoryview]]
    local: bool = False


def visible_end(offsets: PartitionOffsets, isolation: Isolation) -> int:
    """The end a reader sees: the HW when committed, the LEO when uncommitted."""
    return offsets.hw if isolation is Isolation.COMMITTED else offsets.leo


async def fetch_offsets(
    leaders: LeaderClient, topic: str, partition: int, policy: RetryPolicy
) -> PartitionOffsets:
    """``(log_start, hw, leo)`` from the leader."""
    reply = await leaders.call(topic, partition, FetchOffsetsRequest(topic, partition), policy)
    assert isinstance(reply, FetchOffsetsResponse)
    return PartitionOffsets(reply.log_start, reply.hw, reply.leo)


async def offset_for_timestamp(
    leaders: LeaderClient, topic: str, partition: int, timestamp_us: int, policy: RetryPolicy
) -> int | None:
    """The first offset with a timestamp at or after ``timestamp_us`` (None: none)."""
    request = FetchOffsetsRequest(topic, partition, timestamp_us=timestamp_us)
    reply = await leaders.call(topic, partition, request, policy)
    assert isinstance(reply, FetchOffsetsResponse)
    return reply.offset


async def fetch_frames(
    leaders: LeaderClient,
    topic: str,
    partition: int,
    start: int,
    end_exclusive: int | None,
    isolation: Isolation,
    max_bytes: int,
    policy: RetryPolicy,
) -> AsyncGenerator[memoryview, None]:
    """Whole frames covering ``[start, end_exclusive)`` (see the module docstring)."""
    async for _, frame in fetch_range(
        leaders, topic, partition, start, end_exclusive, isolation, max_bytes, policy
    ):
        yield frame


async def fetch_range(
    leaders: LeaderClient,
    topic: str,
    partition: int,
    start: int,
    end_exclusive: int | None,
    isolation: Isolation,
    max_bytes: int,
    policy: RetryPolicy,
    local: LocalFiles | None = None,
    *,
    group: GroupFetch | None = None,
    skip_corrupt: bool = False,
) -> AsyncGenerator[tuple[BatchHeader, memoryview], None]:
    """Whole frames (crc-checked) with their headers, covering ``[start, end_exclusive)``.

    Args:
        local: try local fetches first (the leader's files read from this host).
        group: a consumer-group member's grant (fetch version 1, gated by the leader).
        skip_corrupt: a frame whose crc fails is skipped with a WARNING naming its
            offsets (``consumer.corrupt``) instead of ending the read.

    Raises:
        OffsetOutOfRangeError: ``start`` lies outside the log.
        RequestTimeoutError: the range did not become readable within the policy's time.
        CorruptFrameError: a damaged frame, naming its offsets (without ``skip_corrupt``).
    """
    where = f"{topic}-{partition}"
    if end_exclusive is None:
        offsets = await fetch_offsets(leaders, topic, partition, policy)
        end = visible_end(offsets, isolation) if end_exclusive is None else end_exclusive
        check_start(start, offsets.log_start, max(end, offsets.leo), f"{topic}-{partition}")
    else:
        end = end_exclusive
    position = start
    deadline = time.monotonic() + policy.timeout_s
    while position < end:
        read: _Read | None = None
        if local is not None:
            read = await _fetch_local(
                leaders, topic, partition, position, isolation, max_bytes, policy, local, group
            )
            if read is None:
                local = None  # not on this host (or not now): plain fetches from here on
        if read is None:
            read = await _fetch(
                leaders, topic, partition, position, isolation, max_bytes, policy, group
            )
        if position < read.log_start:
            raise OffsetOutOfRangeError(
                f"{topic}-{partition}: offset {position} is below the log start "
                f"{read.log_start} (retention removed it)"
            )
        progressed = False
        try:
            for header, frame in read.frames:
                if header.next_offset <= position:
                    continue  # a frame wholly before what we still need
                # A local copy that fails falls back to the network (below), which decides.
                if checked(frame, header, where=where, skip=skip_corrupt and not read.local):
                    yield header, frame
                position = header.next_offset
                progressed = True
                if position >= end:
                    return
        except CorruptFrameError as exc:
            if not read.local:
                raise
            # e.g. uncommitted frames truncated under a pread: the network has the truth
            log.debug(
                "%s-%d: local read failed at offset %d (%s); fetching over the network",
                topic,
                partition,
                position,
                exc,
            )
            local = None
            continue
        if progressed:
            deadline = time.monotonic() + policy.timeout_s
        elif time.monotonic() > deadline:
            raise RequestTimeoutError(
                f"{topic}-{partition}: offsets [{position}, {end}) not readable "
                f"({isolation.value}) within {policy.timeout_s}s; hw={read.hw} leo={read.leo}"
            )


async def _fetch(
    leaders: LeaderClient,
    topic: str,
    partition: int,
    position: int,
    isolation: Isolation,
    max_bytes: int,
    policy: RetryPolicy,
    group: GroupFetch | None = None,
) -> _Read:
    """A plain fetch: the frames come in the reply."""

    def request(leader: Leader) -> FetchRequest:
        return FetchRequest(
            topic,
            partition,
            position,
            max_bytes=max_bytes,
            isolation=isolation,
            max_wait_ms=_EMPTY_WAIT_MS,
            **group_fields(group, leader),
        )

    reply = await leaders.call(topic, partition, request, policy)
    assert isinstance(reply, FetchResponse)
    frames = iter_frames(received_tail(reply.tail), check_crc=False)
    return _Read(reply.log_start, reply.hw, reply.leo, frames)


async def _fetch_local(
    leaders: LeaderClient,
    topic: str,
    partition: int,
    position: int,
    isolation: Isolation,
    max_bytes: int,
    policy: RetryPolicy,
    local: LocalFiles,
    group: GroupFetch | None = None,
) -> _Read | None:
    """A local fetch, or None when the leader's file cannot be read from here."""
    mapped = isolation is Isolation.COMMITTED  # committed frames are never truncated

    def request(leader: Leader) -> FetchLocalRequest:
        return FetchLocalRequest(
            topic,
            partition,
            position,
            max_bytes=max(max_bytes, LOCAL_MAPPED_MAX_BYTES) if mapped else max_bytes,
            isolation=isolation,
            max_wait_ms=_EMPTY_WAIT_MS,
            **group_fields(group, leader),
        )

    try:
        reply = await leaders.call(topic, partition, request, policy)
    except UnsupportedVersionError:
        return None  # a leader from before local fetches
    assert isinstance(reply, FetchLocalResponse)
    if not reply.path:
        return _Read(reply.log_start, reply.hw, reply.leo, iter(()))
    data = await asyncio.to_thread(
        local.read,
        reply.path,
        reply.position,
        reply.length,
        reply.device,
        reply.inode,
        mapped=mapped,
    )
    if data is None:
        log.debug(
            "%s-%d: %s is not readable here; fetching over the network",
            topic,
            partition,
            reply.path,
        )
        return None
    try:
        first = read_header(data)
    except CorruptFrameError:
        first = None
    if first is None or first.base_offset != reply.base_offset:
        log.debug(
            "%s-%d: %s does not hold the frames named; fetching over the network",
            topic,
            partition,
            reply.path,
        )
        return None
    frames = iter_frames(data, check_crc=False)
    return _Read(reply.log_start, reply.hw, reply.leo, frames, local=True)


def slice_to_range(batch: pa.RecordBatch, base: int, start: int, end: int) -> pa.RecordBatch:
    """The rows of ``batch`` (row 0 at offset ``base``) whose offsets are in ``[start, end)``."""
    lo = max(0, start - base)
    hi = min(batch.num_rows, end - base)
    if lo == 0 and hi == batch.num_rows:
        return batch
    return batch.slice(lo, max(0, hi - lo))


def typed_read_schema(
    watcher: MetadataWatcher, topic: str, version: int | None = None
) -> pa.Schema:
    """The schema to decode a frame of ``version`` with: ``RECORD_SCHEMA`` for untyped
    frames, or for a version newer than the cached metadata knows (the frame's own
    schema then); else the typed topic's latest storage schema (older frames widened).
    ``version`` None: the topic's latest (``RECORD_SCHEMA`` for an untyped topic)."""
    if version == 0:
        return RECORD_SCHEMA
    known = watcher.view.topics.get(topic)
    schema = None if known is None else known.spec.topic_schema
    if schema is None or (version is not None and version > schema.version):
        return RECORD_SCHEMA
    return storage_schema(schema.user_schema())


async def fetch_batches(
    leaders: LeaderClient,
    topic: str,
    partition: int,
    start: int,
    end_exclusive: int | None,
    isolation: Isolation,
    max_bytes: int,
    policy: RetryPolicy,
    *,
    with_offsets: bool = True,
    schema: pa.Schema = RECORD_SCHEMA,
    local: LocalFiles | None = None,
    group: GroupFetch | None = None,
    skip_corrupt: bool = False,
) -> AsyncGenerator[pa.RecordBatch, None]:
    """Exactly the records ``[start, end_exclusive)`` as Arrow batches (zero-copy).

    Args:
        local: try local fetches first (see the module docstring).
        group: a consumer-group member's grant (see ``fetch_range``).
        skip_corrupt: skip damaged frames with a WARNING naming their offsets
            (``consumer.corrupt``) instead of raising ``CorruptFrameError``.
    """
    end = end_exclusive
    if end is None:
        offsets = await fetch_offsets(leaders, topic, partition, policy)
        end = visible_end(offsets, isolation)
        check_start(start, offsets.log_start, max(end, offsets.leo), f"{topic}-{partition}")
    where = f"{topic}-{partition}"
    async for header, frame in fetch_range(
        leaders, topic, partition, start, end, isolation, max_bytes, policy, local,
        group=group, skip_corrupt=skip_corrupt,
    ):  # fmt: skip
        batch = read_frame(
            frame, header, schema=schema, with_offsets=with_offsets, where=where, skip=skip_corrupt
        )
        if batch is None:
            continue
        part = slice_to_range(batch, header.base_offset, start, end)
        if part.num_rows:
            yield part

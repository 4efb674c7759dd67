"""The recovery curve of ``bench.scale``: an SPU reopening logs of many sealed segments.

Sizes are GB *scaled by segment count*: at the default segment size (1 GiB) a log of
G GB holds G sealed segments, so G GB is modelled by G sealed segments of a small real
template (``SEGMENT_BYTES``), which keeps the disk and the time of the run small. What
an SPU does per sealed segment at open is the same at any segment size except the index
check, whose vectorised gather reads one frame header per 4 KiB of log: a real 1 GiB
segment costs more per segment than the template, by a constant factor.

The template is real: records are produced to a one-partition topic (replication 1,
``segmentSize`` = ``SEGMENT_BYTES``) until it has two sealed segments; the SPU is
stopped (SIGTERM) and the first sealed segment (``.log``, ``.index``, ``.timeindex``) is
copied N times with its base offsets moved on (the 8 header bytes outside the crc; the
indexes hold relative offsets and stay valid), plus one more copy as the active segment,
whose full scan is a constant cost; the high-watermark checkpoint is set to the new log
end. The SPU is started again and ``recovery_s`` runs from that start until a fetch of
the last sealed segment's first offset returns its frames (offsets and indexes intact, so
nothing is repaired), after one reopen at the smallest size that is not counted (the
first start after the template pays for cold caches). The log at each size is checked
to have opened whole: the fetch's log end offset is the one written.
"""

from __future__ import annotations

import asyncio
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._scale_procs import (
    kill_spu,
    one_spu_topic,
    progress,
    spu_ids,
    start_cluster,
    wait_async,
)
from bench._scale_spu import values_table
from spark_stream.client import Fluvio
from spark_stream.errors import FluvioError
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.connection import Connection
from spark_stream.protocol.data import FetchRequest, FetchResponse
from spark_stream.records import iter_frames
from spu.storage.checkpoint import write_checkpoint
from spu.storage.framing import BASE_OFFSET_AT
from spu.storage.layout import CHECKPOINT_NAME, list_segment_bases, replica_dir, segment_paths

__all__ = ["SEGMENT_BYTES", "measure_recovery", "rebase_frames"]

TOPIC = "scale-recovery"
SEGMENT_BYTES = 1 << 20
CHUNK = 2_000
"""Records per produced batch (200 KB of 100 B values): a few frames per segment."""
TIMEOUT = 600.0
_BASE = struct.Struct("<q")


def rebase_frames(log: bytes, delta: int) -> bytearray:
    """A copy of a segment's frames with every base offset moved on by ``delta``.

    The base offset is the one header field outside the crc, so the frames stay valid.
    """
    out = bytearray(log)
    pos = 0
    for header, frame in iter_frames(log, check_crc=False):
        _BASE.pack_into(out, pos + BASE_OFFSET_AT, header.base_offset + delta)
        pos += len(frame)
    return out


def _make_template(cluster: LocalCluster) -> tuple[Path, int]:
    """Produce until the replica has two sealed segments; returns its directory and the
    first segment's record count."""
    (spu,) = spu_ids(1)
    directory = replica_dir(cluster.spu_dir(spu), TOPIC, 0)
    table = values_table(CHUNK)
    with Fluvio.connect(cluster.endpoint, timeout=120) as client:
        producer = client.topic_producer(TOPIC, acks="leader", linger_ms=0)
        while len(list_segment_bases(directory)) < 3:
            producer.send_batch(table, partition=0).result(timeout=TIMEOUT)
        producer.close()
    return directory, list_segment_bases(directory)[1]


def _write_log(directory: Path, template: list[bytes], records: int, sealed: int) -> int:
    """Replace the replica's segments by ``sealed`` rebased copies of the template plus
    an active one; returns the new log end offset."""
    for base in list_segment_bases(directory):
        for path in segment_paths(directory, base):
            path.unlink(missing_ok=True)
    log, index, timeindex = template
    for k in range(sealed + 1):
        paths = segment_paths(directory, k * records)
        paths[0].write_bytes(rebase_frames(log, k * records))
        paths[1].write_bytes(index)
        paths[2].write_bytes(timeindex)
    end = (sealed + 1) * records
    write_checkpoint(directory / CHECKPOINT_NAME, end)
    return end


async def _fetch_ok(port: int, offset: int) -> FetchResponse | None:
    try:
        conn = await Connection.open("127.0.0.1", port, timeout=5)
    except (FluvioError, OSError):
        return None
    try:
        reply = await conn.call(FetchRequest(TOPIC, 0, offset), timeout=30)
    except FluvioError:
        return None  # not serving the partition yet
    finally:
        await conn.close()
    assert isinstance(reply, FetchResponse)
    return reply if len(reply.tail) else None


def _reopen(cluster: LocalCluster, port: int, offset: int, end: int) -> float:
    """Seconds from starting the stopped SPU to a fetch at ``offset`` served."""
    start = time.perf_counter()
    cluster.start()
    replies: list[FetchResponse] = []

    async def served() -> bool:
        reply = await _fetch_ok(port, offset)
        if reply is not None:
            replies.append(reply)
        return reply is not None

    asyncio.run(wait_async(served, TIMEOUT, "the reopened SPU to serve a fetch"))
    seconds = time.perf_counter() - start
    if replies[-1].leo != end:
        raise AssertionError(f"the SPU reopened a log ending at {replies[-1].leo}, not {end}")
    return seconds


def measure_recovery(sizes: list[int]) -> dict[int, dict[str, Any]]:
    """``recovery_s`` for each number of sealed segments (module docstring)."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-recovery-") as tmp:
        cluster = start_cluster(Path(tmp) / "cluster", 1)
        try:
            (spu,) = spu_ids(1)
            port = one_spu_topic(cluster, TOPIC, TIMEOUT, segment_size=SEGMENT_BYTES)
            directory, records = _make_template(cluster)
            kill_spu(cluster, spu, 15)
            template = [p.read_bytes() for p in segment_paths(directory, 0)]
            results: dict[int, dict[str, Any]] = {}
            ordered = sorted(sizes)
            # a first reopen, not counted, warms the page cache and the interpreter's files
            for n, sealed in enumerate([ordered[0], *ordered]):
                end = _write_log(directory, template, records, sealed)
                seconds = _reopen(cluster, port, (sealed - 1) * records, end)
                kill_spu(cluster, spu, 15)
                progress(f"  {sealed} sealed segments: served after {seconds:.2f}s")
                if n == 0:
                    continue  # the warm-up
                size_mb = (sealed + 1) * len(template[0]) / 2**20
                results[sealed] = {"recovery_s": round(seconds, 3), "log_mb": round(size_mb, 1)}
            return results
        finally:
            cluster.stop()

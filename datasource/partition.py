"""What one Spark task reads, and how: an offset range fetched from the partition leader.

A ``FluvioPartition`` is plain data (topic, partition, offsets, and a ``ReadSpec`` with
the endpoint and read settings resolved on the driver), so it pickles small and an
executor needs nothing else. ``read_partition`` runs on the executor: it fetches exactly
``[start, end)`` from the leader as zero-copy Arrow batches and rearranges their columns
into the output schema (``schema.to_spark_batch``): no Python work per record. The
fetches run ``PREFETCH`` batches ahead on the client's event-loop thread, so the next
round trip to the leader overlaps Spark's handling of the current batch.

Data loss: when retention removed the start of the range before the task ran, the
task fails with ``DataLossError`` when ``failOnDataLoss`` is on, and otherwise logs it
and reads from the new log start. A range that begins "at the log start" (a partition
that appeared after the query started) skips silently.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from datasource.clients import client_for, drop_client
from datasource.schema import combine, to_spark_batch
from datasource.typed import to_typed_spark_batch
from spark_stream.client import Fluvio, TlsConfig
from spark_stream.errors import ConnectionClosedError, DataLossError

__all__ = ["ReadSpec", "FluvioPartition", "read_partition", "COMBINE_ROWS", "PREFETCH"]

log = logging.getLogger(__name__)

PREFETCH = 16
"""Decoded batches (frames as producers wrote them) fetched ahead of the one Spark is
consuming."""

COMBINE_ROWS = 8192
"""Fetched frames smaller than this are merged before they go to Spark: every batch
crossing to the JVM costs a fixed overhead, and producers often write small frames."""


@dataclass(frozen=True)
class ReadSpec:
    """Read settings shared by every task of a query, resolved on the driver.

    Attributes:
        endpoint: the SC address, resolved on the driver (``resolve_endpoint``).
        token: the client token, resolved on the driver (``resolve_token``); None: none.
        isolation: ``committed`` or ``uncommitted``.
        include_headers: emit the ``headers`` column.
        fail_on_data_loss: fail when records of the range are gone.
        fetch_max_bytes: bytes asked of the leader per fetch.
        local_reads: read the leader's segment files directly when they are on this host.
        skip_corrupt_frames: skip frames found damaged (a WARNING names their offsets).
        output: a typed topic's output Arrow schema (``datasource.typed``); None: the
            fixed columns of untyped topics.
        tls: TLS to the cluster, resolved on the driver (the ``tls.*`` options, else the
            driver's profile); None: plaintext.
    """

    endpoint: str
    isolation: str = "committed"
    include_headers: bool = False
    fail_on_data_loss: bool = True
    fetch_max_bytes: int = 8 * 1024 * 1024
    local_reads: bool = True
    skip_corrupt_frames: bool = False
    output: pa.Schema | None = None
    tls: TlsConfig | None = None
    token: str | None = None


@dataclass(frozen=True)
class FluvioPartition(InputPartition):
    """Offsets ``[start, end)`` of one topic partition, read by one Spark task.

    Attributes:
        from_log_start: the range starts wherever the log starts now (a partition
            discovered mid-query); records below it are not data loss.
    """

    topic: str
    partition: int
    start: int
    end: int
    spec: ReadSpec
    from_log_start: bool = False


def read_partition(part: InputPartition) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``part`` as output-schema Arrow batches.

    ``InputPartition(None)`` (what Spark substitutes for an empty plan) yields nothing.

    Raises:
        DataLossError: records of the range are gone and ``failOnDataLoss`` is on.
    """
    if not isinstance(part, FluvioPartition) or part.end <= part.start:
        return iter(())
    return _read(part)


def _read(part: FluvioPartition) -> Iterator[pa.RecordBatch]:
    spec = part.spec
    try:
        client = client_for(spec.endpoint, tls=spec.tls, token=spec.token)
        start = _checked_start(client, part)
    except ConnectionClosedError:
        drop_client(spec.endpoint, tls=spec.tls, token=spec.token)
        client = client_for(spec.endpoint, tls=spec.tls, token=spec.token)
        start = _checked_start(client, part)
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in _prefetched(client, part, start):
        if spec.output is not None:
            out = to_typed_spark_batch(batch, part.topic, part.partition, spec.output)
        else:
            out = to_spark_batch(
                batch, part.topic, part.partition, include_headers=spec.include_headers
            )
        if out.num_rows >= COMBINE_ROWS and not pending:
            yield out
            continue
        pending.append(out)
        rows += out.num_rows
        if rows >= COMBINE_ROWS:
            yield combine(pending)
            pending, rows = [], 0
    if pending:
        yield combine(pending)


_END = object()


def _prefetched(client: Fluvio, part: FluvioPartition, start: int) -> Iterator[pa.RecordBatch]:
    """``fetch_batches`` run ahead on the client's loop thread, ``PREFETCH`` batches deep,
    so the next fetch from the leader overlaps Spark's work on the current batch. Each
    hop between the threads takes every batch ready by then, not one."""
    spec = part.spec
    loop = client.loop

    async def make_queue() -> asyncio.Queue[object]:
        return asyncio.Queue(maxsize=PREFETCH)

    queue = client.run(make_queue())

    async def pump() -> None:
        try:
            batches = client.core.fetch_batches(
                part.topic, part.partition, start, part.end,
                isolation=spec.isolation, max_bytes=spec.fetch_max_bytes, with_offsets=True,
                local=spec.local_reads, skip_corrupt_frames=spec.skip_corrupt_frames,
            )  # fmt: skip
            async for batch in batches:
                await queue.put(batch)
            await queue.put(_END)
        except Exception as exc:  # handed to the consuming thread, raised there
            await queue.put(exc)

    async def take() -> list[object]:
        items = [await queue.get()]
        while not queue.empty():
            items.append(queue.get_nowait())
        return items

    pumping = asyncio.run_coroutine_threadsafe(pump(), loop)
    try:
        while True:
            for item in asyncio.run_coroutine_threadsafe(take(), loop).result():
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
    finally:
        pumping.cancel()


def _checked_start(client: Fluvio, part: FluvioPartition) -> int:
    """Where to start reading: ``part.start``, or the log start when records are gone."""
    offsets = client.fetch_offsets(part.topic, part.partition)
    if part.start >= offsets.log_start:
        return part.start
    if part.from_log_start:
        return min(offsets.log_start, part.end)
    message = (
        f"{part.topic}/{part.partition}: offsets {part.start}..{offsets.log_start - 1} were "
        f"removed by retention before they were read"
    )
    if part.spec.fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to skip them")
    log.warning("%s; skipping to %d (failOnDataLoss=false)", message, offsets.log_start)
    return min(offsets.log_start, part.end)

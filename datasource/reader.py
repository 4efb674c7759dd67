"""Batch and streaming readers of ``format("fluvio")``.

Batch: ``partitions()`` (on the driver) resolves the start and end offsets of every
selected partition once and plans one Spark partition per topic-partition range (more
with ``minPartitions``); each task fetches its range straight from the partition leader.

Streaming: Spark keeps this reader alive on the driver for the whole query and asks it,
each trigger, for ``latestOffset(start, limit)``: the visible end of every partition
(high watermark when committed, LEO when uncommitted), cut down by the read limit
(``maxRecordsPerTrigger``/``maxBytesPerTrigger``, or the ``availableNow`` target), never
below ``start``. Partitions that appear mid-query are read from their log start; a
``start`` below a partition's log start is data loss. Offsets are checkpointed by Spark
as ``{"topic": {"0": next_offset}}``; with a ``progressGroup`` the committed position
(``latestOffset``'s ``start``, ``commit``'s ``end``) is mirrored into that group
(``progress.py``). The only in-memory state (the ``availableNow`` target, the last latest
offsets for progress reports, a progress write to retry) is an optimisation of the
driver process, never needed for correctness, and pickles.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from datasource.clients import client_for
from datasource.offset_spec import OffsetSpec
from datasource.offsets import PartitionOffsetMap, TopicPartition, from_json_dict, to_json_dict
from datasource.options import ReaderOptions
from datasource.partition import FluvioPartition, ReadSpec, read_partition
from datasource.planning import OffsetRange, delay_batch, limit_rows, plan_ranges, prorate
from datasource.progress import ProgressMirror
from datasource.resolve import (
    fetch_all_offsets,
    resolve_offsets,
    subscribed_partitions,
    visible_end,
)
from spark_stream.client import Fluvio, PartitionOffsets, resolve_endpoint
from spark_stream.client.profile import resolve_tls, resolve_token
from spark_stream.errors import DataLossError, DataSourceOptionError
from spark_stream.records import read_header

__all__ = ["FluvioBatchReader", "FluvioStreamReader", "read_spec", "to_partitions"]

log = logging.getLogger(__name__)


def read_spec(
    opts: ReaderOptions, client: Fluvio | None = None, output: pa.Schema | None = None
) -> ReadSpec:
    """The executor-side read settings, with the endpoint resolved here on the driver.

    Executors get the address and the token themselves, so their environment and profile
    do not matter. ``output``: a typed topic's Arrow output schema.
    """
    endpoint = client.endpoint if client is not None else resolve_endpoint(opts.endpoint)
    return ReadSpec(
        endpoint=endpoint,
        tls=client.tls if client is not None else resolve_tls(endpoint, opts.tls),
        token=client.core.token if client is not None else resolve_token(opts.token, endpoint),
        isolation=opts.isolation,
        include_headers=opts.include_headers,
        fail_on_data_loss=opts.fail_on_data_loss,
        fetch_max_bytes=opts.fetch_max_bytes,
        local_reads=opts.local_reads,
        skip_corrupt_frames=opts.skip_corrupt_frames,
        output=output,
    )


def to_partitions(
    ranges: list[OffsetRange], spec: ReadSpec, new: frozenset[TopicPartition] = frozenset()
) -> list[FluvioPartition]:
    """Input partitions for planned ranges; ranges of ``new`` partitions start at the log
    start wherever it is."""
    return [
        FluvioPartition(r.topic, r.partition, r.start, r.end, spec, r.tp in new) for r in ranges
    ]


def _spec_name(spec: OffsetSpec, offsets: str, timestamp: str) -> str:
    """The option a spec came from: ``<offsets>``, ``<timestamp>`` or ``<offsets>ByTimestamp``."""
    if spec.timestamps:
        return offsets + "ByTimestamp"
    return timestamp if spec.timestamp_ms is not None else offsets


class FluvioBatchReader(DataSourceReader):
    """``spark.read.format("fluvio")``: fixed ranges, resolved when the query is planned."""

    def __init__(self, opts: ReaderOptions, output: pa.Schema | None = None) -> None:
        self.opts = opts
        self.output = output

    def partitions(self) -> list[FluvioPartition]:
        """One partition per topic-partition range (or per split with ``minPartitions``).

        Raises:
            DataSourceOptionError: missing topics or partitions, an end before a start.
            DataLossError: a JSON start below the log start with ``failOnDataLoss``.
        """
        opts = self.opts
        assert opts.ending is not None
        client = client_for(opts.endpoint, tls=opts.tls, token=opts.token)
        tps = subscribed_partitions(client, opts)
        offsets = fetch_all_offsets(client, tps)
        start = resolve_offsets(
            client, opts.starting, offsets, opts,
            name=_spec_name(opts.starting, "startingOffsets", "startingTimestamp"),
        )  # fmt: skip
        end = resolve_offsets(
            client, opts.ending, offsets, opts,
            name=_spec_name(opts.ending, "endingOffsets", "endingTimestamp"),
        )  # fmt: skip
        for tp in sorted(start):
            # A group's committed offset may lie past the end: that range is empty.
            by_time = opts.ending.timestamp_ms is not None or opts.ending.timestamps
            if start[tp] > end[tp] and not by_time and not opts.starting.group:
                raise DataSourceOptionError(
                    f"options 'startingOffsets'/'endingOffsets': {tp} starts at {start[tp]} "
                    f"but ends at {end[tp]}"
                )
        ranges = plan_ranges(start, end, opts.min_partitions)
        return to_partitions(ranges, read_spec(opts, client, self.output))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Fetch one range from its leader (on an executor)."""
        return read_partition(partition)


class FluvioStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("fluvio")`` with admission control and ``availableNow``."""

    def __init__(self, opts: ReaderOptions, output: pa.Schema | None = None) -> None:
        self.opts = opts
        self.output = output
        self._target: dict[str, dict[str, int]] | None = None
        self._last_latest: dict[str, dict[str, int]] | None = None
        self._last_trigger_ms = 0  # minOffsetsPerTrigger: when a trigger last ran
        self._progress = (
            ProgressMirror(opts.progress_group, opts.endpoint, tls=opts.tls, token=opts.token)
            if opts.progress_group
            else None
        )

    # -- offsets ---------------------------------------------------------------------

    def initialOffset(self) -> dict:
        """Where a new query starts (``startingOffsets``/``startingTimestamp``)."""
        opts = self.opts
        client = client_for(opts.endpoint, tls=opts.tls, token=opts.token)
        tps = subscribed_partitions(client, opts)
        offsets = fetch_all_offsets(client, tps)
        name = _spec_name(opts.starting, "startingOffsets", "startingTimestamp")
        return to_json_dict(resolve_offsets(client, opts.starting, offsets, opts, name=name))

    def _visible(self, client: Fluvio) -> dict[TopicPartition, PartitionOffsets]:
        tps = subscribed_partitions(client, self.opts, strict=False)
        return fetch_all_offsets(client, tps)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch: visible ends, capped by ``limit`` and target.

        Raises:
            DataLossError: a partition's log start passed ``start`` and
                ``failOnDataLoss`` is on.
            DataSourceOptionError: the ``progressGroup`` is a group of members.
        """
        opts = self.opts
        begin = from_json_dict(start)
        if self._progress is not None:  # start: where the last committed batch ended
            self._progress.claim()
            self._progress.mirror(begin)
        client = client_for(opts.endpoint, tls=opts.tls, token=opts.token)
        offsets = self._visible(client)
        base: PartitionOffsetMap = {}
        latest: PartitionOffsetMap = {}
        visible: PartitionOffsetMap = {}
        for tp, off in offsets.items():
            end = visible[tp] = visible_end(off, opts.isolation)
            if tp in begin:
                base[tp] = self._checked_begin(tp, begin[tp], off)
                latest[tp] = max(begin[tp], end)
            else:
                base[tp] = off.log_start
                latest[tp] = max(off.log_start, end)
        self._last_latest = to_json_dict(visible)
        if self._target is not None:
            target = from_json_dict(self._target)
            for tp in list(latest):
                cap = target.get(tp)
                if cap is None and tp not in begin:
                    del latest[tp], base[tp]
                    continue
                latest[tp] = max(begin.get(tp, base[tp]), min(latest[tp], cap or 0))
        if self._waits(base, latest):
            return start  # too few new records and the delay not over: no batch yet
        latest = self._apply_limit(client, base, latest, limit)
        for tp, offset in begin.items():
            latest.setdefault(tp, offset)  # a partition that vanished keeps its offset
        return to_json_dict(latest)

    def _waits(self, base: PartitionOffsetMap, latest: PartitionOffsetMap) -> bool:
        """``minOffsetsPerTrigger``: whether this trigger waits for more records (never
        under ``availableNow``, whose run must end)."""
        minimum = self.opts.min_records_per_trigger
        if minimum is None or self._target is not None:
            return False
        new_rows = sum(max(0, end - base[tp]) for tp, end in latest.items())
        now_ms = int(time.time() * 1000)
        delay = self.opts.max_trigger_delay_ms
        if delay_batch(minimum, new_rows, now_ms, self._last_trigger_ms, delay):
            return True
        self._last_trigger_ms = now_ms
        return False

    def _checked_begin(self, tp: TopicPartition, begin: int, off: PartitionOffsets) -> int:
        if begin >= off.log_start:
            return begin
        message = (
            f"{tp}: the query's next offset {begin} is below the log start {off.log_start}: "
            f"{off.log_start - begin} records were removed by retention before they were read"
        )
        if self.opts.fail_on_data_loss:
            raise DataLossError(message + "; set failOnDataLoss=false to skip them")
        log.warning("%s; skipping them (failOnDataLoss=false)", message)
        return off.log_start

    def _apply_limit(
        self,
        client: Fluvio,
        base: PartitionOffsetMap,
        latest: PartitionOffsetMap,
        limit: ReadLimit,
    ) -> PartitionOffsetMap:
        if isinstance(limit, ReadAllAvailable):
            return latest
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        if not isinstance(limit, ReadMaxRows | ReadMaxBytes):
            return latest  # limits this source does not offer: read what is there
        # The engine's limit, plus the other one configured in the options.
        max_rows = max_rows or self.opts.max_records_per_trigger
        max_bytes = max_bytes or self.opts.max_bytes_per_trigger
        clamped = {tp: min(base[tp], latest[tp]) for tp in latest}
        if max_rows is not None:
            latest = limit_rows(clamped, latest, max_rows)
        if max_bytes is not None:
            latest = self._limit_bytes(client, clamped, latest, max_bytes)
        return latest

    def _limit_bytes(
        self,
        client: Fluvio,
        base: Mapping[TopicPartition, int],
        latest: PartitionOffsetMap,
        max_bytes: int,
    ) -> PartitionOffsetMap:
        """Cut each partition's range at whole stored frames within its share of the
        byte budget (at least one frame, so a large frame cannot stall the query)."""
        backlog = {tp: latest[tp] - base[tp] for tp in latest}
        shares = prorate(max_bytes, backlog)
        out = dict(latest)
        for tp, share in shares.items():
            if backlog[tp] <= 0:
                continue
            if share <= 0:
                out[tp] = base[tp]
                continue
            used, end = 0, base[tp]
            frames = client.fetch_frames(
                tp.topic, tp.partition, base[tp], latest[tp],
                isolation=self.opts.isolation, max_bytes=share,
            )  # fmt: skip
            for frame in frames:
                header = read_header(frame)
                if used and used + header.frame_length > share:
                    break
                used += header.frame_length
                end = min(header.next_offset, latest[tp])
                if end >= latest[tp]:
                    break
            out[tp] = max(end, base[tp])
        return out

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRecordsPerTrigger`` or ``maxBytesPerTrigger`` from the options, else all."""
        if self.opts.max_records_per_trigger is not None:
            return ReadMaxRows(self.opts.max_records_per_trigger)
        if self.opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.opts.max_bytes_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict | None:
        """The visible ends seen by the last ``latestOffset`` call (no limit applied)."""
        if self._last_latest is None:
            client = client_for(self.opts.endpoint, tls=self.opts.tls, token=self.opts.token)
            ends = {
                tp: visible_end(off, self.opts.isolation)
                for tp, off in self._visible(client).items()
            }
            self._last_latest = to_json_dict(ends)
        return self._last_latest

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the target: what is visible now is all this ``availableNow`` run reads."""
        client = client_for(self.opts.endpoint, tls=self.opts.tls, token=self.opts.token)
        ends = {
            tp: visible_end(off, self.opts.isolation) for tp, off in self._visible(client).items()
        }
        self._target = to_json_dict(ends)

    # -- planning and reading ------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[FluvioPartition]:
        """One input partition per non-empty range between two offsets."""
        begin = from_json_dict(start)
        stop = from_json_dict(end)
        ranges = plan_ranges(begin, stop, self.opts.min_partitions)
        if not ranges:
            return []
        new = frozenset(tp for tp in stop if tp not in begin)
        return to_partitions(ranges, read_spec(self.opts, output=self.output), new)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Fetch one range from its leader (on an executor)."""
        return read_partition(partition)

    def commit(self, end: dict) -> None:
        """Mirror the committed end into the ``progressGroup`` (if set); never fails.

        The query's offsets live in Spark's checkpoint; the group only shows them.
        """
        log.debug("micro-batch committed up to %s", end)
        if self._progress is not None:
            self._progress.mirror(from_json_dict(end))

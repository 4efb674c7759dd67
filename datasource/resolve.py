"""Driver-side lookups: which partitions a query reads and where its ranges start and end.

This is the I/O half of planning (``planning.py`` is the pure half). Everything goes
through one connected ``Fluvio`` client: topic discovery (fixed names or a pattern over
the SC's topic list), each partition's ``(log_start, hw, leo)`` from its leader, and
time-index lookups for ``startingTimestamp``/``endingTimestamp``, and a consumer group's
committed offsets for ``startingOffsets=group:NAME``. The *visible end* of a
partition is its high watermark for committed readers and its LEO for uncommitted ones;
nothing here ever resolves an offset past it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from datasource.offset_spec import EARLIEST, LATEST, OffsetSpec
from datasource.offsets import PartitionOffsetMap, TopicPartition
from datasource.options import ReaderOptions
from spark_stream.client import Fluvio, PartitionOffsets
from spark_stream.errors import (
    DataLossError,
    DataSourceOptionError,
    UnknownGroupError,
    UnknownTopicError,
)

__all__ = [
    "list_topic_names",
    "subscribed_partitions",
    "fetch_all_offsets",
    "visible_end",
    "group_offsets",
    "resolve_offsets",
]

log = logging.getLogger(__name__)


def list_topic_names(client: Fluvio) -> list[str]:
    """Every topic name the SC knows, sorted."""
    topics: Iterable[Any] = client.admin().list_topics()
    names = []
    for topic in topics:
        if isinstance(topic, str):
            names.append(topic)
        elif isinstance(topic, dict):
            names.append(topic["metadata"]["name"] if "metadata" in topic else topic["name"])
        else:
            names.append(topic.metadata.name if hasattr(topic, "metadata") else topic.name)
    return sorted(names)


def subscribed_partitions(
    client: Fluvio, opts: ReaderOptions, *, strict: bool = True
) -> list[TopicPartition]:
    """The topic-partitions the options select, as the cluster holds them now.

    Args:
        client: a connected client.
        opts: reader options (topics or a pattern, optional partition filter).
        strict: fail when a named topic or partition does not exist (at query start);
            later micro-batches pass False and skip what disappeared.

    Raises:
        DataSourceOptionError: a named topic or partition does not exist (strict).
    """
    if opts.topic_pattern is not None:
        topics = [t for t in list_topic_names(client) if opts.matches(t)]
    else:
        topics = list(opts.topics)
    out: list[TopicPartition] = []
    for topic in topics:
        try:
            infos = client.topic_partitions(topic)
        except UnknownTopicError:
            if strict and opts.topic_pattern is None:
                raise DataSourceOptionError(
                    f"option 'topic(s)': topic {topic!r} does not exist"
                ) from None
            continue
        indexes = sorted(info.partition for info in infos)
        wanted = opts.partitions_of(topic)
        if wanted is not None:
            missing = sorted(set(wanted) - set(indexes))
            if missing and strict and opts.topic_pattern is None:
                name = "assign" if opts.assign is not None else "partitions"
                raise DataSourceOptionError(
                    f"option '{name}': topic {topic!r} has no partition(s) "
                    f"{', '.join(map(str, missing))} (it has {len(indexes)})"
                )
            indexes = [i for i in indexes if i in wanted]
        out.extend(TopicPartition(topic, i) for i in indexes)
    return out


def fetch_all_offsets(
    client: Fluvio, tps: Iterable[TopicPartition]
) -> dict[TopicPartition, PartitionOffsets]:
    """``(log_start, hw, leo)`` of each partition, from its leader."""
    return {tp: client.fetch_offsets(tp.topic, tp.partition) for tp in tps}


def visible_end(offsets: PartitionOffsets, isolation: str) -> int:
    """The end a reader may read to: HW when committed, LEO when uncommitted."""
    return offsets.hw if isolation == "committed" else offsets.leo


def group_offsets(
    client: Fluvio, group: str, tps: Iterable[TopicPartition], *, name: str
) -> PartitionOffsetMap:
    """The committed offsets of ``group`` for the partitions ``tps`` (those with one).

    Raises:
        DataSourceOptionError: naming ``name``, when the group does not exist.
    """
    admin = client.admin()
    try:
        admin.describe_group(group)
    except UnknownGroupError:
        raise DataSourceOptionError(
            f"option '{name}': consumer group {group!r} does not exist"
        ) from None
    wanted = [(tp.topic, tp.partition) for tp in tps]
    if not wanted:
        return {}
    committed = admin.fetch_offsets(group, wanted)
    return {TopicPartition(t, p): offset for (t, p), offset in committed.items()}


def resolve_offsets(
    client: Fluvio,
    spec: OffsetSpec,
    offsets: dict[TopicPartition, PartitionOffsets],
    opts: ReaderOptions,
    *,
    name: str,
) -> PartitionOffsetMap:
    """Absolute offsets ``spec`` names for each partition, within its visible log.

    Args:
        client: for time-index lookups.
        spec: a starting or ending offset spec.
        offsets: each partition's current offsets.
        opts: for the isolation and ``failOnDataLoss``.
        name: the option name, for error messages.

    A group's committed offset past the visible end is kept as it is (a stream waits
    for the partition to reach it): starting lower would read again what the group
    already consumed.

    Raises:
        DataSourceOptionError: a JSON offset past the visible end of its partition, a
            JSON entry for a partition that does not exist, an unknown group, or a
            starting time with no record at or after it under the ``error`` strategy.
        DataLossError: a JSON or group offset below the log start while
            ``failOnDataLoss`` is on.
    """
    for topic, partition, _ in (*spec.specific, *spec.timestamps):
        if TopicPartition(topic, partition) not in offsets:
            raise DataSourceOptionError(
                f"option '{name}' names {topic}/{partition}, which the query does not read"
            )
    committed: PartitionOffsetMap = {}
    if spec.group is not None:
        committed = group_offsets(client, spec.group, offsets, name=name)
    out: PartitionOffsetMap = {}
    for tp, off in offsets.items():
        end = visible_end(off, opts.isolation)
        ms = spec.time_for(tp.topic, tp.partition)
        if ms is not None:
            found = client.offset_for_timestamp(tp.topic, tp.partition, ms * 1000)
            out[tp] = _at_time(found, off.log_start, end, spec.time_strategy, name, tp, ms)
            continue
        wanted = committed.get(tp, spec.for_partition(tp.topic, tp.partition))
        if wanted == EARLIEST:
            out[tp] = off.log_start
        elif wanted == LATEST:
            out[tp] = end
        elif wanted > end and tp not in committed:
            raise DataSourceOptionError(
                f"option '{name}': offset {wanted} of {tp} is past its end {end} ({opts.isolation})"
            )
        elif wanted < off.log_start:
            if opts.fail_on_data_loss:
                raise DataLossError(
                    f"option '{name}': offset {wanted} of {tp} is below its log start "
                    f"{off.log_start} (removed by retention); set failOnDataLoss=false to "
                    "start at the log start instead"
                )
            log.warning(
                "%s: offset %d of %s is below the log start %d; starting there",
                name,
                wanted,
                tp,
                off.log_start,
            )
            out[tp] = off.log_start
        else:
            out[tp] = wanted
    return out


def _at_time(
    found: int | None,
    log_start: int,
    end: int,
    strategy: str,
    name: str,
    tp: TopicPartition,
    ms: int,
) -> int:
    """The offset of a time: the first record at or after it, within the visible log.
    Without one, the end, unless the strategy is ``error`` (Kafka's
    ``startingOffsetsByTimestampStrategy``): then the query fails."""
    if found is None:
        if strategy == "error":
            raise DataSourceOptionError(
                f"option '{name}': {tp} has no record at or after {ms} ms; set "
                "startingOffsetsByTimestampStrategy=latest to start at its end"
            )
        return end
    return min(max(found, log_start), end)

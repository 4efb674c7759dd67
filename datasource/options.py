"""Parse and check the options of ``format("fluvio")``, named like Spark's Kafka source.

Spark hands a data source its options as a case-insensitive dict of strings. Parsing
is pure and happens when the reader or writer is built, i.e. at query start on the
driver, so an unknown, malformed or contradictory option fails the query before any
task runs, with a ``DataSourceOptionError`` that names the option. The parsed values are
frozen dataclasses of plain values, so they pickle to executors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from datasource._option_values import (
    parse_assign,
    parse_duration_ms,
    parse_timestamp_ms,
    parse_timestamps,
)
from datasource.connection_options import (
    TLS_OPTIONS,
    endpoint_option,
    named_token,
    tls_option,
)
from datasource.offset_spec import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    TimeStrategy,
    group_option,
    parse_offset_spec,
)
from datasource.option_names import (
    READER_ALIASES,
    WRITER_ALIASES,
    GivenOptions,
    canonical_options,
)
from spark_stream.client.config import ISOLATION_WORDS, parse_isolation
from spark_stream.errors import DataSourceOptionError, InvalidConfigError
from spark_stream.net.tls import TlsConfig
from spark_stream.records import Compression

__all__ = [
    "ReaderOptions",
    "WriterOptions",
    "named_endpoint",
    "named_tls",
    "named_topics",
    "check_reader_option_names",
    "parse_reader_options",
    "parse_writer_options",
]

Mode = Literal["batch", "stream"]
IsolationName = Literal["committed", "uncommitted"]
AcksName = Literal["all", "leader"]
_TIME_STRATEGIES: tuple[TimeStrategy, ...] = ("error", "latest")
_COMPRESSIONS: tuple[Compression, ...] = ("none", "lz4", "zstd")
_ACKS: tuple[AcksName, ...] = ("all", "leader")
_C = TypeVar("_C", bound=str)

_READER = (
    "endpoint",
    "token",
    "topic",
    "topics",
    "topicPattern",
    "partitions",
    "startingOffsets",
    "startingTimestamp",
    "endingOffsets",
    "endingTimestamp",
    "isolation",
    "maxRecordsPerTrigger",
    "maxOffsetsPerTrigger",
    "maxBytesPerTrigger",
    "minPartitions",
    "failOnDataLoss",
    "includeHeaders",
    "fetchMaxBytes",
    "localReads",
    "skipCorruptFrames",
    "progressGroup",
    "assign",
    "startingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "endingOffsetsByTimestamp",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    *TLS_OPTIONS,
)
_STREAM_ONLY = (
    "maxRecordsPerTrigger",
    "maxOffsetsPerTrigger",
    "maxBytesPerTrigger",
    "progressGroup",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
)
_BATCH_ONLY = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
_WRITER = (
    "endpoint",
    "token",
    "topic",
    "compression",
    "batchSize",
    "acks",
    "preservePartitions",
    *TLS_OPTIONS,
    "mergeSchema",
)

_DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024
_DEFAULT_BATCH_SIZE = 256 * 1024
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
"""``maxTriggerDelay`` when not set: 15 minutes, as Spark's Kafka source."""


@dataclass(frozen=True)
class ReaderOptions:
    """Parsed reader options (see ``docs/spark.md`` for each one).

    Attributes:
        endpoint: SC address ``host:port`` as given; None = resolved on the driver by
            ``resolve_endpoint`` (``FLUVIO_ENDPOINT``, else the profile).
        topics: fixed topic names (``topic``/``topics``), empty with a pattern.
        topic_pattern: regex over topic names (``topicPattern``), matched in full.
        partitions: restrict reads to these partition indexes; None = all.
        starting: where a query starts (batch default earliest, stream default latest).
        ending: where a batch read ends (default latest); None for streams.
        isolation: ``committed`` (up to the high watermark) or ``uncommitted`` (to LEO).
        max_records_per_trigger: streaming row limit per micro-batch.
        max_bytes_per_trigger: streaming byte limit per micro-batch (stored frame bytes).
        min_partitions: split ranges until at least this many Spark partitions.
        fail_on_data_loss: fail when retention removed records the query must read.
        include_headers: add the ``headers`` column.
        fetch_max_bytes: bytes asked of a leader per fetch request.
        local_reads: read a leader's segment files directly when they are on the
            executor's host (``localReads``, default true).
        skip_corrupt_frames: skip a frame found damaged on disk, with a WARNING in the
            executor's log naming its offsets, instead of failing the task
            (``skipCorruptFrames``, default false).
        progress_group: streams only: the progress-only consumer group each committed
            micro-batch's end offsets are mirrored into (``progressGroup``).
        assign: Kafka's ``assign``: ``(topic, partitions)`` pairs, the only partitions
            read (``topics`` then holds the same topics); None otherwise.
        min_records_per_trigger: streams only (``minOffsetsPerTrigger``): a micro-batch
            waits until this many new records are visible or ``max_trigger_delay_ms``
            passed since the last one.
        max_trigger_delay_ms: the longest such wait (``maxTriggerDelay``, default 15m).
        token: the client token for a cluster with auth on (``token``); None: as
            ``resolve_token`` finds it on the driver (``FLUVIO_TOKEN``, the profile's).
        tls: TLS to the cluster (``tls.ca``, ``tls.cert``, ``tls.key``); None: the
            profile's when it names the endpoint, else plaintext.
    """

    endpoint: str | None
    topics: tuple[str, ...]
    topic_pattern: str | None
    partitions: tuple[int, ...] | None
    starting: OffsetSpec
    ending: OffsetSpec | None
    isolation: IsolationName
    max_records_per_trigger: int | None
    max_bytes_per_trigger: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    include_headers: bool
    fetch_max_bytes: int
    local_reads: bool = True
    skip_corrupt_frames: bool = False
    progress_group: str | None = None
    assign: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    min_records_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    tls: TlsConfig | None = None
    token: str | None = None

    def matches(self, topic: str) -> bool:
        """True when ``topic`` is one this reader subscribes to."""
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics

    def partitions_of(self, topic: str) -> tuple[int, ...] | None:
        """The partitions read of ``topic``: ``assign``'s, else ``partitions``; None = all."""
        if self.assign is not None:
            return dict(self.assign).get(topic, ())
        return self.partitions


@dataclass(frozen=True)
class WriterOptions:
    """Parsed writer options.

    Attributes:
        endpoint: SC address as given; None = resolved on the driver by
            ``resolve_endpoint`` (``FLUVIO_ENDPOINT``, else the profile).
        topic: the topic to write to; overrides a ``topic`` column when set.
        compression: Arrow IPC buffer compression of produced frames; None (not set) =
            the topic's ``compression`` setting.
        batch_size: bytes of records per produced batch frame.
        acks: ``all`` (default, wait for the in-sync replicas) or ``leader``.
        preserve_partitions: whether a ``partition`` column routes rows; None (not set)
            = yes, unless the DataFrame is a read of a topic (see ``sink_schema``).
        tls: TLS to the cluster (``tls.*`` options), as for readers.
        token: the client token for a cluster with auth on (``token``); None: as
            ``resolve_token`` finds it on the driver (``FLUVIO_TOKEN``, the profile's).
        merge_schema: set the ``topic``'s schema from the DataFrame's user columns
            before writing (``datasource.merge_schema``); needs the ``topic`` option.
    """

    endpoint: str | None
    topic: str | None
    compression: Compression | None
    batch_size: int
    acks: AcksName
    preserve_partitions: bool | None = None
    tls: TlsConfig | None = None
    token: str | None = None
    merge_schema: bool = False


def check_reader_option_names(options: Mapping[str, str]) -> None:
    """Reject unknown reader option names early (at ``load()``, before any planning).

    Raises:
        DataSourceOptionError: naming the first unknown option.
    """
    canonical_options(options, _READER, READER_ALIASES)


def _int(opts: Mapping[str, str], name: str, minimum: int) -> int | None:
    raw = opts.get(name)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise DataSourceOptionError(f"option '{name}' must be an integer, got {raw!r}") from None
    if value < minimum:
        raise DataSourceOptionError(f"option '{name}' must be >= {minimum}, got {value}")
    return value


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered not in ("true", "false"):
        raise DataSourceOptionError(f"option '{name}' must be true or false, got {raw!r}")
    return lowered == "true"


def _choice(opts: Mapping[str, str], name: str, choices: tuple[_C, ...], default: _C) -> _C:
    """The option's value among ``choices`` (case-insensitive), typed as the choices are."""
    raw = opts.get(name, default).strip().lower()
    for choice in choices:
        if raw == choice:
            return choice
    raise DataSourceOptionError(
        f"option '{name}' must be one of {', '.join(choices)}, got {opts.get(name)!r}"
    )


def _exclusive(opts: GivenOptions, *names: str) -> None:
    given = [opts.name(n) for n in names if n in opts.values]
    if len(given) > 1:
        raise DataSourceOptionError(
            f"options {' and '.join(repr(n) for n in given)} contradict each other: give one"
        )


def _topic_names(raw: str, name: str) -> tuple[str, ...]:
    topics = tuple(t.strip() for t in raw.split(","))
    if not topics or any(not t for t in topics):
        raise DataSourceOptionError(f"option '{name}' has an empty topic name: {raw!r}")
    return tuple(dict.fromkeys(topics))


def named_topics(options: Mapping[str, str]) -> tuple[str, ...]:
    """The topics a read names (``topic``/``topics``/``assign``); empty with a pattern.

    Raises:
        DataSourceOptionError: an unknown option, an empty topic name, bad ``assign``.
    """
    given = canonical_options(options, _READER, READER_ALIASES)
    if "topicPattern" in given.values:
        return ()
    try:
        return _subscription(given)[0]
    except DataSourceOptionError:
        if {"topic", "topics", "assign"} & given.values.keys():
            raise
        return ()


def named_endpoint(options: Mapping[str, str]) -> str | None:
    """The endpoint a read names (``endpoint``/``kafka.bootstrap.servers``), or None.

    Raises:
        DataSourceOptionError: an unknown option or a malformed endpoint.
    """
    return endpoint_option(canonical_options(options, _READER, READER_ALIASES))


def _offsets_or_time(
    opts: GivenOptions,
    names: tuple[str, str, str],
    *,
    ending: bool,
    default: int,
    strategy: TimeStrategy = "latest",
) -> tuple[OffsetSpec, str]:
    """The spec of ``(offsets, time, per-partition times)`` options and the name given."""
    _exclusive(opts, *names)
    offsets_name, time_name, by_time_name = names
    values = opts.values
    if time_name in values:
        ms = parse_timestamp_ms(values[time_name], time_name)
        return OffsetSpec(default, timestamp_ms=ms, time_strategy=strategy), time_name
    if by_time_name in values:
        times = parse_timestamps(values[by_time_name], by_time_name)
        return OffsetSpec(default, timestamps=times, time_strategy=strategy), by_time_name
    if offsets_name in values:
        return parse_offset_spec(values[offsets_name], offsets_name, ending=ending), offsets_name
    return OffsetSpec(default=default), offsets_name


def _subscription(
    opts: GivenOptions,
) -> tuple[tuple[str, ...], str | None, tuple[tuple[str, tuple[int, ...]], ...] | None]:
    """``(topics, pattern, assign)`` from ``topic``/``topics``/``topicPattern``/``assign``."""
    values = opts.values
    if "topic" in values:
        topics = _topic_names(values["topic"], "topic")
        if len(topics) > 1:
            raise DataSourceOptionError("option 'topic' names one topic; use 'topics' for many")
        return topics, None, None
    if "topics" in values:
        return _topic_names(values["topics"], opts.name("topics")), None, None
    if "topicPattern" in values:
        pattern = values["topicPattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise DataSourceOptionError(
                f"option '{opts.name('topicPattern')}' is not a regex: {exc}"
            ) from None
        return (), pattern, None
    if "assign" in values:
        assign = parse_assign(values["assign"], "assign")
        return tuple(t for t, _ in assign), None, assign
    raise DataSourceOptionError(
        "one of the options 'topic', 'topics' ('subscribe'), 'topicPattern' "
        "('subscribePattern'), 'assign' is required"
    )


def _partitions(opts: GivenOptions) -> tuple[int, ...] | None:
    raw = opts.values.get("partitions")
    if raw is None:
        return None
    try:
        partitions = tuple(sorted({int(p) for p in raw.split(",")}))
    except ValueError:
        partitions = (-1,)
    if not partitions or partitions[0] < 0:
        raise DataSourceOptionError(
            f"option 'partitions' must be a comma list of partition numbers, got {raw!r}"
        )
    return partitions


def _time_strategy(opts: GivenOptions) -> TimeStrategy:
    """``startingOffsetsByTimestampStrategy``: Kafka's default ``error`` with the
    per-partition form; ``latest`` (this source's behaviour before the option) with
    ``startingTimestamp``; refused without either."""
    name = "startingOffsetsByTimestampStrategy"
    if name not in opts.values:
        return "error" if "startingOffsetsByTimestamp" in opts.values else "latest"
    if not {"startingTimestamp", "startingOffsetsByTimestamp"} & opts.values.keys():
        raise DataSourceOptionError(
            f"option '{name}' only applies with 'startingOffsetsByTimestamp' or 'startingTimestamp'"
        )
    return _choice(opts.values, name, _TIME_STRATEGIES, "error")


def _trigger_wait(opts: GivenOptions) -> tuple[int | None, int]:
    """``(minOffsetsPerTrigger, maxTriggerDelay in ms)``; the delay needs the minimum."""
    minimum = _int(opts.values, "minOffsetsPerTrigger", 1)
    delay = DEFAULT_MAX_TRIGGER_DELAY_MS
    if "maxTriggerDelay" in opts.values:
        if minimum is None:
            raise DataSourceOptionError(
                "option 'maxTriggerDelay' only applies with 'minOffsetsPerTrigger'"
            )
        delay = parse_duration_ms(opts.values["maxTriggerDelay"], "maxTriggerDelay")
    return minimum, delay


def _isolation(opts: GivenOptions) -> IsolationName:
    """``isolation`` (``kafka.isolation.level``) in the words of ``ISOLATION_WORDS``."""
    raw = opts.values.get("isolation")
    if raw is None:
        return "committed"
    try:
        return "committed" if parse_isolation(raw).value == "committed" else "uncommitted"
    except InvalidConfigError:
        raise DataSourceOptionError(
            f"option '{opts.name('isolation')}' must be one of "
            f"{', '.join(ISOLATION_WORDS)}, got {raw!r}"
        ) from None


def parse_reader_options(options: Mapping[str, str], mode: Mode) -> ReaderOptions:
    """Parse reader options for a batch read or a stream.

    Raises:
        DataSourceOptionError: naming the option that is unknown, malformed, missing,
            or contradicts another one.
    """
    given = canonical_options(options, _READER, READER_ALIASES)
    opts = given.values
    for name in _STREAM_ONLY if mode == "batch" else _BATCH_ONLY:
        if name in opts:
            kind = "streaming" if mode == "batch" else "batch"
            raise DataSourceOptionError(f"option '{name}' only applies to {kind} reads")
    _exclusive(given, "topic", "topics", "topicPattern", "assign")
    _exclusive(given, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
    _exclusive(given, "assign", "partitions")
    topics, pattern, assign = _subscription(given)
    partitions = _partitions(given)

    start_default = EARLIEST if mode == "batch" else LATEST
    starting, starting_name = _offsets_or_time(
        given,
        ("startingOffsets", "startingTimestamp", "startingOffsetsByTimestamp"),
        ending=False,
        default=start_default,
        strategy=_time_strategy(given),
    )
    if (
        mode == "batch"
        and starting.default == LATEST
        and not starting.specific
        and starting.timestamp_ms is None
        and not starting.timestamps
    ):
        raise DataSourceOptionError("option 'startingOffsets' cannot be 'latest' for batch reads")
    checked = [(starting, starting_name)]
    ending = None
    if mode == "batch":
        ending, ending_name = _offsets_or_time(
            given,
            ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"),
            ending=True,
            default=LATEST,
        )
        checked.append((ending, ending_name))
    for spec, name in checked:
        stray = sorted(t for t in spec.topics() if not _subscribed(t, topics, pattern))
        if stray:
            raise DataSourceOptionError(
                f"option '{name}' names topics the query does not read: {', '.join(stray)}"
            )
    endpoint = endpoint_option(given)
    max_records = _int(opts, "maxRecordsPerTrigger", 1)
    if max_records is None:
        max_records = _int(opts, "maxOffsetsPerTrigger", 1)
    min_records, max_delay_ms = _trigger_wait(given)
    return ReaderOptions(
        endpoint=endpoint,
        topics=topics,
        topic_pattern=pattern,
        partitions=partitions,
        starting=starting,
        ending=ending,
        isolation=_isolation(given),
        max_records_per_trigger=max_records,
        max_bytes_per_trigger=_int(opts, "maxBytesPerTrigger", 1),
        min_partitions=_int(opts, "minPartitions", 1),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        fetch_max_bytes=_int(opts, "fetchMaxBytes", 1024) or _DEFAULT_FETCH_MAX_BYTES,
        local_reads=_bool(opts, "localReads", True),
        skip_corrupt_frames=_bool(opts, "skipCorruptFrames", False),
        progress_group=(
            group_option(opts["progressGroup"], "progressGroup")
            if "progressGroup" in opts
            else None
        ),
        assign=assign,
        min_records_per_trigger=min_records,
        max_trigger_delay_ms=max_delay_ms,
        tls=tls_option(given),
        token=named_token(opts),
    )


def _subscribed(topic: str, topics: tuple[str, ...], pattern: str | None) -> bool:
    if pattern is not None:
        return re.fullmatch(pattern, topic) is not None
    return topic in topics


def named_tls(options: Mapping[str, str]) -> TlsConfig | None:
    """The TLS a read names (``tls.*`` options), or None.

    Raises:
        DataSourceOptionError: an unknown option or unusable TLS files.
    """
    return tls_option(canonical_options(options, _READER, READER_ALIASES))


def parse_writer_options(options: Mapping[str, str]) -> WriterOptions:
    """Parse writer options (batch and streaming sinks alike).

    Raises:
        DataSourceOptionError: naming an unknown or malformed option.
    """
    given = canonical_options(options, _WRITER, WRITER_ALIASES)
    opts = given.values
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise DataSourceOptionError("option 'topic' must not be empty")
    endpoint = endpoint_option(given)
    merge_schema = _bool(opts, "mergeSchema", False)
    if merge_schema and topic is None:
        raise DataSourceOptionError(
            "option 'mergeSchema' needs the 'topic' option: it sets that one topic's schema "
            "(rows routed by a 'topic' column may go to many topics)"
        )
    return WriterOptions(
        endpoint=endpoint,
        topic=topic.strip() if topic else None,
        compression=(
            _choice(opts, "compression", _COMPRESSIONS, "none") if "compression" in opts else None
        ),
        batch_size=_int(opts, "batchSize", 1) or _DEFAULT_BATCH_SIZE,
        acks=_choice(opts, "acks", _ACKS, "all"),
        preserve_partitions=(
            _bool(opts, "preservePartitions", False) if "preservePartitions" in opts else None
        ),
        tls=tls_option(given),
        token=named_token(opts),
        merge_schema=merge_schema,
    )

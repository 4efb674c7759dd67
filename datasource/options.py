"""Parse and check the options of ``format("fluvio")``, named like Spark's Kafka source.

Spark hands a data source its options as a case-insensitive dict of strings. Parsing
is pure and happens when the reader or writer is built, i.e. at query start on the
driver, so an unknown, malformed or contradictory option fails the query before any
task runs, with a ``DataSourceOptionError`` that names the option. The parsed values are
frozen dataclasses of plain values, so they pickle to executors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from spark_stream.client.timestamps import to_timestamp_us
from spark_stream.errors import DataSourceOptionError, InvalidConfigError, InvalidRequestError
from spark_stream.models import check_group_name
from spark_stream.net.endpoint import parse_endpoint
from spark_stream.records import Compression

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "ReaderOptions",
    "WriterOptions",
    "parse_offset_spec",
    "check_reader_option_names",
    "parse_reader_options",
    "parse_writer_options",
]

EARLIEST = -2
"""In offset JSON, as in Kafka: start at the first offset still in the log."""
LATEST = -1
"""In offset JSON, as in Kafka: the end of the log (HW, or LEO when uncommitted)."""

Mode = Literal["batch", "stream"]
IsolationName = Literal["committed", "uncommitted"]
AcksName = Literal["all", "leader"]
_ISOLATIONS: tuple[IsolationName, ...] = ("committed", "uncommitted")
_COMPRESSIONS: tuple[Compression, ...] = ("none", "lz4", "zstd")
_ACKS: tuple[AcksName, ...] = ("all", "leader")
_C = TypeVar("_C", bound=str)

_READER = (
    "endpoint",
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
    "progressGroup",
)
_STREAM_ONLY = (
    "maxRecordsPerTrigger",
    "maxOffsetsPerTrigger",
    "maxBytesPerTrigger",
    "progressGroup",
)
_BATCH_ONLY = ("endingOffsets", "endingTimestamp")
_WRITER = ("endpoint", "topic", "compression", "batchSize", "acks", "preservePartitions")
_SPARK_OWNED = ("checkpointLocation",)
"""Options Spark itself reads from the same map; accepted and ignored here."""

_GROUP_PREFIX = "group:"
"""``startingOffsets=group:NAME``: start at a consumer group's committed offsets."""
_DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024
_DEFAULT_BATCH_SIZE = 256 * 1024


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or end: ``earliest``, ``latest``, per-partition offsets, a time, or
    a consumer group's committed offsets.

    Attributes:
        default: ``EARLIEST`` or ``LATEST``, for every partition not named in ``specific``.
        specific: ``(topic, partition, offset)`` triples from the JSON form; the offset
            may be ``EARLIEST`` or ``LATEST``.
        timestamp_ms: the time form (milliseconds since the epoch): the first record at
            or after it; when set, ``specific`` is empty.
        group: the group form ``group:NAME`` (starting offsets only): each partition
            starts at the group's committed offset, or at ``default`` (``EARLIEST``)
            without one; resolved at query start, when ``specific`` is empty.
    """

    default: int = LATEST
    specific: tuple[tuple[str, int, int], ...] = ()
    timestamp_ms: int | None = None
    group: str | None = None

    def for_partition(self, topic: str, partition: int) -> int:
        """The offset (or ``EARLIEST``/``LATEST``) this spec names for one partition."""
        for t, p, offset in self.specific:
            if t == topic and p == partition:
                return offset
        return self.default

    def topics(self) -> set[str]:
        """Topics the JSON form names."""
        return {t for t, _, _ in self.specific}


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
        progress_group: streams only: the progress-only consumer group each committed
            micro-batch's end offsets are mirrored into (``progressGroup``).
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
    progress_group: str | None = None

    def matches(self, topic: str) -> bool:
        """True when ``topic`` is one this reader subscribes to."""
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics


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
    """

    endpoint: str | None
    topic: str | None
    compression: Compression | None
    batch_size: int
    acks: AcksName
    preserve_partitions: bool | None = None


def _canonical(options: Mapping[str, str], known: Iterable[str]) -> dict[str, str]:
    """Map option keys (any case, as Spark passes them) to canonical names; reject unknowns."""
    by_lower = {name.lower(): name for name in known}
    spark_owned = {name.lower() for name in _SPARK_OWNED}
    out: dict[str, str] = {}
    for key, value in options.items():
        name = by_lower.get(key.lower())
        if name is None:
            if key.lower() in spark_owned:
                continue
            hint = " (name the topic with option('topic', ...))" if key.lower() == "path" else ""
            raise DataSourceOptionError(
                f"unknown option '{key}' for format('fluvio'){hint}; known options: "
                f"{', '.join(sorted(by_lower.values()))}"
            )
        out[name] = str(value)
    return out


def check_reader_option_names(options: Mapping[str, str]) -> None:
    """Reject unknown reader option names early (at ``load()``, before any planning).

    Raises:
        DataSourceOptionError: naming the first unknown option.
    """
    _canonical(options, _READER)


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


def _exclusive(opts: Mapping[str, str], *names: str) -> None:
    given = [n for n in names if n in opts]
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
    """The topics a read or write names (``topic``/``topics``); empty with a pattern.

    Raises:
        DataSourceOptionError: an empty topic name.
    """
    opts = {key.lower(): value for key, value in options.items()}
    for name in ("topic", "topics"):
        if name in opts:
            return _topic_names(opts[name], name)
    return ()


def parse_offset_spec(raw: str, name: str, *, ending: bool) -> OffsetSpec:
    """Parse ``earliest``, ``latest``, Kafka-style JSON ``{"topic": {"0": 23}}`` or, for
    starting offsets, ``group:NAME``.

    In the JSON form -2 means earliest and -1 latest; partitions not named take the
    default (earliest for starting, latest for ending offsets). In the group form,
    partitions without a committed offset start at the earliest.

    Raises:
        DataSourceOptionError: naming ``name``, on anything else.
    """
    text = raw.strip()
    lowered = text.lower()
    if lowered.startswith(_GROUP_PREFIX):
        if ending:
            raise DataSourceOptionError(f"option '{name}' cannot be a group's offsets")
        return OffsetSpec(default=EARLIEST, group=_group_name(text[len(_GROUP_PREFIX) :], name))
    if lowered == "earliest":
        if ending:
            raise DataSourceOptionError(f"option '{name}' cannot be 'earliest'")
        return OffsetSpec(default=EARLIEST)
    if lowered == "latest":
        return OffsetSpec(default=LATEST)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        forms = "latest" if ending else "earliest, latest, group:NAME"
        raise DataSourceOptionError(
            f'option \'{name}\' must be {forms} or JSON like {{"topic": {{"0": 23}}}}, got {raw!r}'
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise DataSourceOptionError(f"option '{name}' JSON must be a non-empty object")
    specific: list[tuple[str, int, int]] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise DataSourceOptionError(
                f"option '{name}': topic {topic!r} must map partition numbers to offsets"
            )
        for part, offset in parts.items():
            try:
                index = int(part)
            except ValueError:
                index = -1
            if index < 0 or isinstance(offset, bool) or not isinstance(offset, int):
                raise DataSourceOptionError(
                    f"option '{name}': {topic}/{part} -> {offset!r} is not a partition "
                    "number mapped to an integer offset"
                )
            if offset < EARLIEST or (ending and offset == EARLIEST):
                raise DataSourceOptionError(
                    f"option '{name}': offset {offset} for {topic}/{index} is invalid"
                )
            specific.append((topic, index, offset))
    default = LATEST if ending else EARLIEST
    return OffsetSpec(default=default, specific=tuple(sorted(specific)))


def _group_name(raw: str, name: str) -> str:
    """A consumer group's name, checked by the rule the SC applies (topic-name rules)."""
    try:
        return check_group_name(raw.strip(), f"option '{name}'")
    except InvalidRequestError as exc:
        raise DataSourceOptionError(str(exc)) from None


def _timestamp_ms(raw: str, name: str) -> int:
    """A time option: milliseconds since the epoch, as in Spark's Kafka source.

    A value past the year 9999 in milliseconds was written in microseconds or
    nanoseconds and would read nothing: it is refused, naming the unit it looks like.
    """
    try:
        ms = int(raw.strip())
    except ValueError:
        raise DataSourceOptionError(
            f"option '{name}' must be an integer (milliseconds since the epoch), got {raw!r}"
        ) from None
    try:
        to_timestamp_us(ms, "ms", f"option '{name}'")
    except InvalidConfigError as exc:
        raise DataSourceOptionError(str(exc)) from None
    return ms


def _offsets_or_time(
    opts: Mapping[str, str], offsets_name: str, time_name: str, *, ending: bool, default: int
) -> OffsetSpec:
    _exclusive(opts, offsets_name, time_name)
    if time_name in opts:
        return OffsetSpec(default=default, timestamp_ms=_timestamp_ms(opts[time_name], time_name))
    if offsets_name in opts:
        return parse_offset_spec(opts[offsets_name], offsets_name, ending=ending)
    return OffsetSpec(default=default)


def parse_reader_options(options: Mapping[str, str], mode: Mode) -> ReaderOptions:
    """Parse reader options for a batch read or a stream.

    Raises:
        DataSourceOptionError: naming the option that is unknown, malformed, missing,
            or contradicts another one.
    """
    opts = _canonical(options, _READER)
    for name in _STREAM_ONLY if mode == "batch" else _BATCH_ONLY:
        if name in opts:
            kind = "streaming" if mode == "batch" else "batch"
            raise DataSourceOptionError(f"option '{name}' only applies to {kind} reads")
    _exclusive(opts, "topic", "topics", "topicPattern")
    _exclusive(opts, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    if "topic" in opts:
        topics = _topic_names(opts["topic"], "topic")
        if len(topics) > 1:
            raise DataSourceOptionError("option 'topic' names one topic; use 'topics' for many")
    elif "topics" in opts:
        topics = _topic_names(opts["topics"], "topics")
    elif "topicPattern" in opts:
        pattern = opts["topicPattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise DataSourceOptionError(f"option 'topicPattern' is not a regex: {exc}") from None
    else:
        raise DataSourceOptionError(
            "one of the options 'topic', 'topics', 'topicPattern' is required"
        )

    partitions: tuple[int, ...] | None = None
    if "partitions" in opts:
        try:
            partitions = tuple(sorted({int(p) for p in opts["partitions"].split(",")}))
        except ValueError:
            partitions = (-1,)
        if not partitions or partitions[0] < 0:
            raise DataSourceOptionError(
                f"option 'partitions' must be a comma list of partition numbers, "
                f"got {opts['partitions']!r}"
            )

    start_default = EARLIEST if mode == "batch" else LATEST
    starting = _offsets_or_time(
        opts, "startingOffsets", "startingTimestamp", ending=False, default=start_default
    )
    if (
        mode == "batch"
        and starting.default == LATEST
        and not starting.specific
        and (starting.timestamp_ms is None)
    ):
        raise DataSourceOptionError("option 'startingOffsets' cannot be 'latest' for batch reads")
    ending = None
    if mode == "batch":
        ending = _offsets_or_time(
            opts, "endingOffsets", "endingTimestamp", ending=True, default=LATEST
        )
    for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if spec is not None and spec.specific:
            stray = sorted(t for t in spec.topics() if not _subscribed(t, topics, pattern))
            if stray:
                raise DataSourceOptionError(
                    f"option '{name}' names topics the query does not read: {', '.join(stray)}"
                )
    endpoint = _endpoint(opts)
    max_records = _int(opts, "maxRecordsPerTrigger", 1)
    if max_records is None:
        max_records = _int(opts, "maxOffsetsPerTrigger", 1)
    return ReaderOptions(
        endpoint=endpoint,
        topics=topics,
        topic_pattern=pattern,
        partitions=partitions,
        starting=starting,
        ending=ending,
        isolation=_choice(opts, "isolation", _ISOLATIONS, "committed"),
        max_records_per_trigger=max_records,
        max_bytes_per_trigger=_int(opts, "maxBytesPerTrigger", 1),
        min_partitions=_int(opts, "minPartitions", 1),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        fetch_max_bytes=_int(opts, "fetchMaxBytes", 1024) or _DEFAULT_FETCH_MAX_BYTES,
        local_reads=_bool(opts, "localReads", True),
        progress_group=(
            _group_name(opts["progressGroup"], "progressGroup") if "progressGroup" in opts else None
        ),
    )


def _subscribed(topic: str, topics: tuple[str, ...], pattern: str | None) -> bool:
    if pattern is not None:
        return re.fullmatch(pattern, topic) is not None
    return topic in topics


def _endpoint(opts: Mapping[str, str]) -> str | None:
    """The ``endpoint`` option as given, checked by the one endpoint parser."""
    endpoint = opts.get("endpoint")
    if endpoint is not None:
        try:
            parse_endpoint(endpoint, what="option 'endpoint'")
        except InvalidConfigError as exc:
            raise DataSourceOptionError(str(exc)) from None
    return endpoint


def parse_writer_options(options: Mapping[str, str]) -> WriterOptions:
    """Parse writer options (batch and streaming sinks alike).

    Raises:
        DataSourceOptionError: naming an unknown or malformed option.
    """
    opts = _canonical(options, _WRITER)
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise DataSourceOptionError("option 'topic' must not be empty")
    endpoint = _endpoint(opts)
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
    )

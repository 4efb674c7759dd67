"""Reader option vectors (``reader_options.json``): option maps and what
``parse_reader_options`` makes of them, for batch reads and streams.

Each case is the options and either the parsed values the JVM connector also uses or
the error message it must give word for word, for ``ReaderOptionsTest``.
"""

from __future__ import annotations

from typing import Any

from datasource.offset_spec import OffsetSpec
from datasource.options import Mode, parse_reader_options
from spark_stream.errors import FluvioError

__all__ = ["reader_options"]

_EP = {"endpoint": "127.0.0.1:9003"}
_OPTION_CASES: list[dict[str, str]] = [
    {"topic": "t", **_EP},
    {"TOPIC": "t", "Endpoint": "[::1]:9003", "checkpointLocation": "/x"},
    {"topik": "t", **_EP},
    {"path": "x", "topic": "t", **_EP},
    {"topic": "a,b", **_EP},
    {"topics": "a,,b", **_EP},
    {"topics": "b, a,b", **_EP},
    {"topic": "t", "topics": "a", **_EP},
    {**_EP},
    {"topic": "t", "partitions": "0,x", **_EP},
    {"topic": "t", "partitions": "2,0,2", **_EP},
    {"topic": "t", "partitions": "-1", **_EP},
    {"topic": "t", "startingOffsets": "latest", **_EP},
    {"topic": "t", "startingOffsets": "bogus", **_EP},
    {"topic": "t", "endingOffsets": "bogus", **_EP},
    {"topic": "t", "startingOffsets": "[]", **_EP},
    {"topic": "t", "startingOffsets": '{"t": 5}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"x": 5}}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"0": "5"}}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"0": true}}', **_EP},
    {"topic": "t", "startingOffsets": '{"t": {"0": -3}}', **_EP},
    {"topic": "t", "endingOffsets": "earliest", **_EP},
    {"topic": "t", "endingOffsets": '{"t": {"0": -2}}', **_EP},
    {"topic": "t", "startingOffsets": '{"u": {"0": 1}}', **_EP},
    {
        "topic": "t",
        "startingOffsets": '{"t": {"1": 5, "0": -2}}',
        "endingOffsets": '{"t": {"0": 9}}',
        **_EP,
    },
    {"topic": "t", "startingOffsets": "earliest", "startingTimestamp": "5", **_EP},
    {"topic": "t", "startingTimestamp": "abc", **_EP},
    {"topic": "t", "startingTimestamp": "1700000000000", **_EP},
    {"topic": "t", "startingTimestamp": "-5", **_EP},
    {"topic": "t", "endingTimestamp": "1700000000123000", **_EP},  # microseconds
    {"topic": "t", "endingTimestamp": "1700000000000000000", **_EP},  # nanoseconds
    {"topic": "t", "endingTimestamp": "99999999999999999999999", **_EP},
    {"topic": "t", "isolation": " Uncommitted", **_EP},
    {"topic": "t", "isolation": "sometimes", **_EP},
    {"topic": "t", "includeHeaders": "yes", **_EP},
    {"topic": "t", "includeHeaders": "TRUE", "failOnDataLoss": "false", **_EP},
    {"topic": "t", "fetchMaxBytes": "10", **_EP},
    {"topic": "t", "fetchMaxBytes": "x", **_EP},
    {"topic": "t", "fetchMaxBytes": "4096", "localReads": "false", **_EP},
    {"topic": "t", "minPartitions": "0", **_EP},
    {"topic": "t", "minPartitions": "7", **_EP},
    {"topic": "t", "maxOffsetsPerTrigger": "5", **_EP},
    {"topic": "t", "progressGroup": "g", **_EP},
    {"topic": "t", "startingOffsets": "group:g-1", **_EP},
    {"topic": "t", "startingOffsets": " GROUP: g2 ", **_EP},
    {"topic": "t", "startingOffsets": "group:", **_EP},
    {"topic": "t", "startingOffsets": "group:a/b", **_EP},
    {"topic": "t", "startingOffsets": "group:" + "x" * 250, **_EP},
    {"topic": "t", "endingOffsets": "group:g", **_EP},
    {"topicPattern": "orders-.*", **_EP},
    {"topicPattern": "o.*", "startingOffsets": '{"orders": {"0": 1}}', **_EP},
    {"topicPattern": "o.*", "startingOffsets": '{"x": {"0": 1}}', **_EP},
    {"topic": "t", "endpoint": "nohost"},
    {"topic": "t", "endpoint": "h:99999"},
    # Spark's Kafka names (issue 14)
    {"subscribe": "b,a", **_EP},
    {"subscribe": "a", "topics": "a", **_EP},
    {"subscribe": "a", "topics": "b", **_EP},
    {"subscribe": "a", "topic": "a", **_EP},
    {"subscribe": "a,,b", **_EP},
    {"subscribePattern": "o.*", **_EP},
    {"subscribePattern": "o.*", "topicPattern": "x.*", **_EP},
    {"assign": '{"b": [1, 0, 1], "a": [2]}', **_EP},
    {"assign": '{"t": [0]}', "partitions": "0", **_EP},
    {"assign": '{"t": [0]}', "topic": "t", **_EP},
    {"assign": "t", **_EP},
    {"assign": "[]", **_EP},
    {"assign": '{"t": []}', **_EP},
    {"assign": '{"t": [-1]}', **_EP},
    {"assign": '{"t": ["0"]}', **_EP},
    {"assign": '{"t": [0]}', "startingOffsets": '{"t": {"0": 3}}', **_EP},
    {"assign": '{"t": [0]}', "startingOffsets": '{"u": {"0": 3}}', **_EP},
    {"topic": "t", "kafka.bootstrap.servers": "127.0.0.1:9003"},
    {"topic": "t", "KAFKA.BOOTSTRAP.SERVERS": " h1:9003, h2:9004 "},
    {"topic": "t", "kafka.bootstrap.servers": "h1:9003,nohost"},
    {"topic": "t", "kafka.bootstrap.servers": "h1:1", "endpoint": "h2:2"},
    {"topic": "t", "kafka.bootstrap.servers": "h1:1", "endpoint": "h1:1"},
    {"topic": "t", "kafka.isolation.level": "read_uncommitted", **_EP},
    {"topic": "t", "kafka.isolation.level": "READ_COMMITTED", **_EP},
    {"topic": "t", "isolation": "read-uncommitted", **_EP},
    {"topic": "t", "kafka.isolation.level": "dirty", **_EP},
    {"topic": "t", "kafka.isolation.level": "read_committed", "isolation": "uncommitted", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"1": 1700000000000, "0": 5}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": "5", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": "{}", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": 5}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": "5"}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"x": 5}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": -5}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": 1700000000000000}}', **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"u": {"0": 5}}', **_EP},
    {
        "topic": "t",
        "startingOffsetsByTimestamp": '{"t": {"0": 5}}',
        "startingTimestamp": "5",
        **_EP,
    },  # fmt: skip
    {
        "topic": "t",
        "startingOffsetsByTimestamp": '{"t": {"0": 5}}',
        "startingOffsetsByTimestampStrategy": " Latest",
        **_EP,
    },  # fmt: skip
    {
        "topic": "t",
        "startingTimestamp": "5",
        "startingOffsetsByTimestampStrategy": "error",
        **_EP,
    },  # fmt: skip
    {"topic": "t", "startingOffsetsByTimestampStrategy": "error", **_EP},
    {
        "topic": "t",
        "startingTimestamp": "5",
        "startingOffsetsByTimestampStrategy": "never",
        **_EP,
    },  # fmt: skip
    {"topic": "t", "endingOffsetsByTimestamp": '{"t": {"0": 1700000000000}}', **_EP},
    {
        "topic": "t",
        "endingOffsetsByTimestamp": '{"t": {"0": 5}}',
        "endingOffsets": "latest",
        **_EP,
    },  # fmt: skip
    {"topic": "t", "minOffsetsPerTrigger": "5", **_EP},
    {"topic": "t", "maxTriggerDelay": "5s", **_EP},
    {"topic": "t", "startingOffset": "earliest", **_EP},
    {"topic": "t", "subscribePatern": "x", **_EP},
    {"topic": "t", "kafka.bootstrap.server": "h:1", **_EP},
    {"topic": "t", "maxoffsetspertriger": "5", **_EP},
    {"topic": "t", "minPartition": "2", **_EP},
    {"topic": "t", "zzzzzz": "2", **_EP},
    {"topic": "t", "kafka.group.id": "g", **_EP},
]

_STREAM_CASES: list[dict[str, str]] = [
    {"topic": "t", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": " 2 Min", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "250", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1h", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "3d", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "0ms", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "soon", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "-1s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1.5s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "9" * 20 + "d", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "0", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "x", **_EP},
    {"topic": "t", "maxTriggerDelay": "5s", **_EP},
    {"topic": "t", "minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "50", **_EP},
    {"topic": "t", "startingOffsetsByTimestamp": '{"t": {"0": 5}}', **_EP},
    {"topic": "t", "endingOffsetsByTimestamp": '{"t": {"0": 5}}', **_EP},
    {"subscribe": "t", "kafka.isolation.level": "read_uncommitted", **_EP},
]


def _spec_json(spec: OffsetSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    out = {
        "default": spec.default,
        "specific": [list(s) for s in spec.specific],
        "timestamp_ms": spec.timestamp_ms,
    }
    if spec.group is not None:
        out["group"] = spec.group
    if spec.timestamps:
        out["timestamps"] = [list(t) for t in spec.timestamps]
    if spec.timestamps or spec.timestamp_ms is not None:
        out["time_strategy"] = spec.time_strategy
    return out


def _reader_cases(cases: list[dict[str, str]], mode: Mode) -> list[dict[str, Any]]:
    out = []
    for options in cases:
        case: dict[str, Any] = {"options": options}
        try:
            opts = parse_reader_options(options, mode)
        except FluvioError as exc:
            case["error"] = f"{type(exc).__name__}: {exc}"
        else:
            case["parsed"] = {
                "endpoint": opts.endpoint,
                "topics": list(opts.topics),
                "partitions": None if opts.partitions is None else list(opts.partitions),
                "starting": _spec_json(opts.starting),
                "ending": _spec_json(opts.ending),
                "isolation": opts.isolation,
                "include_headers": opts.include_headers,
                "fetch_max_bytes": opts.fetch_max_bytes,
                "fail_on_data_loss": opts.fail_on_data_loss,
                "min_partitions": opts.min_partitions,
                "local_reads": opts.local_reads,
            }
            if opts.topic_pattern is not None:
                case["parsed"]["topic_pattern"] = opts.topic_pattern
            if opts.assign is not None:
                case["parsed"]["assign"] = [[t, list(ps)] for t, ps in opts.assign]
            if mode == "stream":
                case["parsed"]["max_records_per_trigger"] = opts.max_records_per_trigger
                case["parsed"]["min_records_per_trigger"] = opts.min_records_per_trigger
                case["parsed"]["max_trigger_delay_ms"] = opts.max_trigger_delay_ms
        out.append(case)
    return out


def reader_options() -> dict[str, Any]:
    """Reader options and what ``parse_reader_options`` makes of them, for batch reads
    and streams: the parsed values the JVM connector also uses, or the error message it
    must give word for word."""
    return {
        "batch": _reader_cases(_OPTION_CASES, "batch"),
        "stream": _reader_cases(_STREAM_CASES, "stream"),
    }

"""Reader and writer option parsing: defaults, every option, and clear rejections."""

from __future__ import annotations

import pytest

from datasource.offset_spec import EARLIEST, LATEST, OffsetSpec
from datasource.options import (
    check_reader_option_names,
    parse_reader_options,
    parse_writer_options,
)
from spark_stream.errors import DataSourceOptionError


def test_batch_defaults() -> None:
    opts = parse_reader_options({"topic": "orders"}, "batch")
    assert opts.topics == ("orders",)
    assert opts.topic_pattern is None
    assert opts.starting == OffsetSpec(default=EARLIEST)
    assert opts.ending == OffsetSpec(default=LATEST)
    assert opts.isolation == "committed"
    assert opts.fail_on_data_loss is True
    assert opts.include_headers is False
    assert opts.local_reads is True
    assert parse_reader_options({"topic": "o", "localReads": "false"}, "batch").local_reads is False
    assert opts.partitions is None
    assert opts.endpoint is None


def test_stream_defaults_start_at_latest_and_have_no_end() -> None:
    opts = parse_reader_options({"topic": "orders"}, "stream")
    assert opts.starting == OffsetSpec(default=LATEST)
    assert opts.ending is None
    assert opts.max_records_per_trigger is None


def test_option_names_are_case_insensitive_as_spark_passes_them() -> None:
    opts = parse_reader_options(
        {"TOPICS": "a, b,a", "startingoffsets": "earliest", "MAXRECORDSPERTRIGGER": "10",
         "includeheaders": "TRUE", "isolation": "Uncommitted", "endpoint": "127.0.0.1:9003",
         "partitions": "2,0", "minPartitions": "4", "failOnDataLoss": "false",
         "maxBytesPerTrigger": "1000"},
        "stream",
    )  # fmt: skip
    assert opts.topics == ("a", "b")
    assert opts.starting.default == EARLIEST
    assert opts.max_records_per_trigger == 10
    assert opts.max_bytes_per_trigger == 1000
    assert opts.include_headers is True
    assert opts.isolation == "uncommitted"
    assert opts.endpoint == "127.0.0.1:9003"
    assert opts.partitions == (0, 2)
    assert opts.min_partitions == 4
    assert opts.fail_on_data_loss is False


def test_kafka_name_max_offsets_per_trigger_is_accepted() -> None:
    opts = parse_reader_options({"topic": "t", "maxOffsetsPerTrigger": "7"}, "stream")
    assert opts.max_records_per_trigger == 7


def test_topic_pattern_matches_whole_names() -> None:
    opts = parse_reader_options({"topicPattern": "orders-.*"}, "batch")
    assert opts.matches("orders-eu")
    assert not opts.matches("x-orders-eu")
    assert opts.topics == ()


def test_timestamps_are_milliseconds() -> None:
    opts = parse_reader_options(
        {"topic": "t", "startingTimestamp": "1700000000000", "endingTimestamp": "1700000001000"},
        "batch",
    )
    assert opts.starting.timestamp_ms == 1_700_000_000_000
    assert opts.ending is not None and opts.ending.timestamp_ms == 1_700_000_001_000


def test_group_options() -> None:
    opts = parse_reader_options(
        {"topic": "t", "startingOffsets": " Group:orders-app ", "progressGroup": "q-1"}, "stream"
    )
    assert opts.starting == OffsetSpec(default=EARLIEST, group="orders-app")
    assert opts.progress_group == "q-1"
    batch = parse_reader_options({"topic": "t", "startingOffsets": "group:g"}, "batch")
    assert batch.starting.group == "g" and batch.progress_group is None


@pytest.mark.parametrize(
    ("options", "mode", "names"),
    [
        ({"topic": "t", "progressGroup": "g"}, "batch", "'progressGroup' only applies to stream"),
        ({"topic": "t", "progressGroup": "No Caps"}, "stream", "option 'progressGroup': 'No Caps'"),
        ({"topic": "t", "progressGroup": ""}, "stream", "option 'progressGroup'"),
        ({"topic": "t", "startingOffsets": "group:"}, "stream", "option 'startingOffsets': ''"),
        ({"topic": "t", "startingOffsets": "group:a/b"}, "batch", "option 'startingOffsets'"),
        ({"topic": "t", "endingOffsets": "group:g"}, "batch", "'endingOffsets' cannot be a group"),
        ({"topic": "t", "startingOffsets": "soon"}, "stream", "earliest, latest, group:NAME or"),
        ({"topic": "t", "topik": "x"}, "batch", "topik"),
        ({"topic": "t", "path": "x"}, "batch", "option('topic'"),
        ({}, "batch", "'topic', 'topics' ('subscribe'), 'topicPattern'"),
        ({"topic": "t", "topics": "a,b"}, "batch", "'topic' and 'topics'"),
        ({"topic": "t", "topicPattern": "x"}, "stream", "'topic' and 'topicPattern'"),
        ({"topic": "a,b"}, "batch", "use 'topics'"),
        ({"topics": "a,,b"}, "batch", "'topics'"),
        ({"topicPattern": "("}, "batch", "'topicPattern'"),
        (
            {"topic": "t", "startingOffsets": "1", "startingTimestamp": "1"},
            "batch",
            "'startingOffsets' and 'startingTimestamp'",
        ),
        (
            {"topic": "t", "endingOffsets": '{"t":{"0":1}}', "endingTimestamp": "1"},
            "batch",
            "'endingOffsets' and 'endingTimestamp'",
        ),
        (
            {"topic": "t", "maxRecordsPerTrigger": "1", "maxOffsetsPerTrigger": "1"},
            "stream",
            "'maxRecordsPerTrigger' and 'maxOffsetsPerTrigger'",
        ),
        ({"topic": "t", "maxRecordsPerTrigger": "5"}, "batch", "'maxRecordsPerTrigger'"),
        ({"topic": "t", "endingOffsets": "latest"}, "stream", "'endingOffsets'"),
        ({"topic": "t", "startingOffsets": "latest"}, "batch", "'startingOffsets'"),
        ({"topic": "t", "startingOffsets": "soonest"}, "batch", "'startingOffsets'"),
        ({"topic": "t", "startingOffsets": "[1]"}, "batch", "'startingOffsets'"),
        ({"topic": "t", "startingOffsets": '{"t": {"x": 1}}'}, "batch", "'startingOffsets'"),
        ({"topic": "t", "startingOffsets": '{"t": {"0": -3}}'}, "batch", "'startingOffsets'"),
        ({"topic": "t", "startingOffsets": '{"t": {"0": true}}'}, "batch", "'startingOffsets'"),
        ({"topic": "t", "startingOffsets": '{"other": {"0": 1}}'}, "batch", "other"),
        ({"topic": "t", "endingOffsets": "earliest"}, "batch", "'endingOffsets'"),
        ({"topic": "t", "endingOffsets": '{"t": {"0": -2}}'}, "batch", "'endingOffsets'"),
        ({"topic": "t", "isolation": "dirty"}, "batch", "'isolation'"),
        ({"topic": "t", "maxRecordsPerTrigger": "0"}, "stream", "'maxRecordsPerTrigger'"),
        ({"topic": "t", "maxBytesPerTrigger": "lots"}, "stream", "'maxBytesPerTrigger'"),
        ({"topic": "t", "minPartitions": "-1"}, "batch", "'minPartitions'"),
        ({"topic": "t", "failOnDataLoss": "maybe"}, "batch", "'failOnDataLoss'"),
        ({"topic": "t", "includeHeaders": "1"}, "batch", "'includeHeaders'"),
        ({"topic": "t", "localReads": "sometimes"}, "batch", "'localReads'"),
        ({"topic": "t", "partitions": "0,x"}, "batch", "'partitions'"),
        ({"topic": "t", "partitions": "-1"}, "batch", "'partitions'"),
        ({"topic": "t", "endpoint": "nohost"}, "batch", "'endpoint'"),
        ({"topic": "t", "startingTimestamp": "-5"}, "batch", "'startingTimestamp'"),
        ({"topic": "t", "startingTimestamp": "soon"}, "batch", "milliseconds since the epoch"),
        (
            {"topic": "t", "startingTimestamp": "1700000000000000"},
            "stream",
            "option 'startingTimestamp' is milliseconds since the epoch, and 1700000000000000 "
            "ms is after the year 9999: it looks like microseconds; in milliseconds that is "
            "1700000000000",
        ),
        (
            {"topic": "t", "endingTimestamp": "1700000000000000000"},
            "batch",
            "option 'endingTimestamp' is milliseconds since the epoch, and "
            "1700000000000000000 ms is after the year 9999: it looks like nanoseconds",
        ),
    ],
)
def test_bad_reader_options_name_the_option(options: dict[str, str], mode: str, names: str) -> None:
    with pytest.raises(DataSourceOptionError) as info:
        parse_reader_options(options, mode)  # type: ignore[arg-type]
    assert names in str(info.value)


def test_endpoints_take_ipv6_in_brackets_and_refuse_it_bare() -> None:
    assert parse_reader_options({"topic": "t", "endpoint": "[::1]:9003"}, "batch").endpoint == (
        "[::1]:9003"
    )
    assert parse_writer_options({"endpoint": "[::1]:9003"}).endpoint == "[::1]:9003"
    for parse in (
        lambda: parse_reader_options({"topic": "t", "endpoint": "::1:9003"}, "batch"),
        lambda: parse_writer_options({"endpoint": "::1:9003"}),
    ):
        with pytest.raises(DataSourceOptionError, match="^option 'endpoint' must be 'host:port'"):
            parse()


def test_name_check_alone_rejects_unknown_names_only() -> None:
    check_reader_option_names({"topic": "t", "maxRecordsPerTrigger": "3"})
    with pytest.raises(DataSourceOptionError, match="'bogus'"):
        check_reader_option_names({"topic": "t", "bogus": "1"})


def test_checkpoint_location_is_left_to_spark() -> None:
    opts = parse_reader_options({"topic": "t", "checkpointLocation": "/tmp/x"}, "stream")
    assert opts.topics == ("t",)


def test_writer_options() -> None:
    opts = parse_writer_options({"topic": " out ", "compression": "LZ4", "checkpointLocation": "c"})
    assert opts.topic == "out"
    assert opts.compression == "lz4"
    assert opts.acks == "all"
    assert opts.batch_size > 0
    assert parse_writer_options({}).topic is None
    assert parse_writer_options({}).compression is None  # the topic's setting decides
    assert parse_writer_options({}).preserve_partitions is None
    assert parse_writer_options({"preservepartitions": "TRUE"}).preserve_partitions is True
    assert parse_writer_options({"preservePartitions": "false"}).preserve_partitions is False


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"topic": ""}, "'topic'"),
        ({"compression": "gzip"}, "'compression'"),
        ({"acks": "none"}, "'acks'"),
        ({"batchSize": "0"}, "'batchSize'"),
        ({"preservePartitions": "yes"}, "'preservePartitions'"),
        ({"startingOffsets": "earliest"}, "startingOffsets"),
        ({"endpoint": "x:99999"}, "'endpoint'"),
    ],
)
def test_bad_writer_options_name_the_option(options: dict[str, str], names: str) -> None:
    with pytest.raises(DataSourceOptionError) as info:
        parse_writer_options(options)
    assert names in str(info.value)

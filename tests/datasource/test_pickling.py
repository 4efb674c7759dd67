"""Everything Spark ships between processes pickles (plain and cloudpickle) and keeps
no sockets: data source, readers, partitions, writers, commit messages."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql.datasource import CaseInsensitiveDict
from pyspark.sql.types import StringType, StructField, StructType

from datasource import (
    FluvioCommitMessage,
    FluvioDataSource,
    FluvioPartition,
    ReadSpec,
    parse_reader_options,
)
from datasource.offsets import TopicPartition
from datasource.reader import FluvioBatchReader, FluvioStreamReader, read_spec
from datasource.typed import typed_arrow_schema, typed_spark_schema
from spark_stream.errors import NotFoundError
from spark_stream.models.topic_schema import TopicSchema
from spark_stream.net.tls import TlsConfig

OPTIONS = {"topic": "t", "endpoint": "127.0.0.1:9003"}


def _round_trip(obj: Any) -> Any:
    again = pickle.loads(pickle.dumps(obj))
    assert type(cloudpickle.loads(cloudpickle.dumps(obj))) is type(obj)
    return again


def test_partition() -> None:
    part = FluvioPartition(
        "t", 2, 10, 20, ReadSpec("127.0.0.1:9003", "uncommitted", True), from_log_start=True
    )
    assert _round_trip(part) == part


def test_partition_with_tls() -> None:
    tls = TlsConfig(ca="/c/ca.pem", cert="/c/client.pem", key="/c/client.key")
    part = FluvioPartition("t", 0, 0, 5, ReadSpec("127.0.0.1:9003", tls=tls))
    again = _round_trip(part)
    assert again == part and again.spec.tls == tls


def test_commit_message() -> None:
    msg = FluvioCommitMessage(3, 12345, 100, ("a", "b"))
    assert _round_trip(msg) == msg


def test_data_source_with_spark_options() -> None:
    source = FluvioDataSource(CaseInsensitiveDict(OPTIONS))
    again = _round_trip(source)
    assert dict(again.options) == dict(source.options)


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_readers(mode: str) -> None:
    opts = parse_reader_options({**OPTIONS, "startingOffsets": '{"t": {"0": 3}}'}, mode)
    reader = FluvioBatchReader(opts) if mode == "batch" else FluvioStreamReader(opts)
    if isinstance(reader, FluvioStreamReader):
        reader._target = {"t": {"0": 9}}
    again = _round_trip(reader)
    assert again.opts == opts
    assert vars(again) == vars(reader)


def test_stream_reader_with_a_progress_group_and_a_write_to_retry() -> None:
    opts = parse_reader_options({**OPTIONS, "progressGroup": "q1"}, "stream")
    reader = FluvioStreamReader(opts)
    assert reader._progress is not None
    reader._progress.pending = {TopicPartition("t", 0): 12}
    again = _round_trip(reader)
    assert vars(again) == vars(reader)
    assert again._progress.pending == {TopicPartition("t", 0): 12}


def test_writers_resolve_nothing_when_the_endpoint_is_given() -> None:
    schema = StructType([StructField("value", StringType())])
    source = FluvioDataSource(CaseInsensitiveDict(OPTIONS))
    for writer in (source.writer(schema, False), source.streamWriter(schema, False)):
        again = _round_trip(writer)
        assert vars(again) == vars(writer)
        assert again.endpoint == "127.0.0.1:9003"


def test_the_driver_resolves_fluvio_endpoint_for_executors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an ``endpoint`` option, readers and writers ship ``FLUVIO_ENDPOINT``'s
    address (resolved on the driver, no connection made), even with no profile."""
    monkeypatch.setenv("FLUVIO_PROFILE", str(tmp_path / "missing.json"))
    monkeypatch.setenv("FLUVIO_ENDPOINT", "127.0.0.1:4444")
    schema = StructType([StructField("value", StringType())])
    source = FluvioDataSource(CaseInsensitiveDict({"topic": "t"}))
    for writer in (source.writer(schema, False), source.streamWriter(schema, False)):
        assert _round_trip(writer).endpoint == "127.0.0.1:4444"
    spec = read_spec(parse_reader_options({"topic": "t"}, "stream"))
    assert _round_trip(spec).endpoint == "127.0.0.1:4444"
    monkeypatch.delenv("FLUVIO_ENDPOINT")
    with pytest.raises(NotFoundError, match="FLUVIO_ENDPOINT"):
        source.writer(schema, False)


def test_typed_partition_and_topic_schema() -> None:
    user = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    output = typed_arrow_schema(typed_spark_schema(TopicSchema.of(user)))
    part = FluvioPartition("t", 0, 0, 5, ReadSpec("127.0.0.1:9003", output=output))
    again = _round_trip(part)
    assert again == part and again.spec.output.equals(output)
    schema = TopicSchema.of(user).evolve(user.append(pa.field("x", pa.string())))
    assert _round_trip(schema) == schema  # what a typed writer ships to its tasks


def test_stream_reader_with_kafka_options() -> None:
    opts = parse_reader_options(
        {
            "assign": '{"t": [1, 0]}',
            "kafka.bootstrap.servers": "127.0.0.1:9003",
            "startingOffsetsByTimestamp": '{"t": {"0": 1700000000000}}',
            "minOffsetsPerTrigger": "5",
            "maxTriggerDelay": "30s",
        },
        "stream",
    )
    reader = FluvioStreamReader(opts)
    reader._last_trigger_ms = 1234
    again = _round_trip(reader)
    assert again.opts == opts and again.opts.partitions_of("t") == (0, 1)
    assert vars(again) == vars(reader)

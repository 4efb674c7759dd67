"""Users' type checkers see the blocking client's types: those of the async API it wraps.

``used_as_a_user_would`` is never run: the test runs mypy on this file, where each
``assert_type`` fails when a result type is lost (``Any`` included), and each ``type:
ignore`` must be needed (``warn_unused_ignores``), so wrong arguments stay errors.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import assert_type

import pyarrow as pa

from spark_stream.client import (
    BatchFuture,
    DeliveryFuture,
    Fluvio,
    Offset,
    PartitionInfo,
    PartitionOffsets,
    Record,
    SyncAdmin,
    SyncStream,
    TopicProducer,
)
from spark_stream.models import Partition, Spu, Topic
from spark_stream.protocol.control import MetadataUpdate

ROOT = Path(__file__).resolve().parents[3]

MYPY_CONFIG = """\
[mypy]
plugins = pydantic.mypy
warn_unused_ignores = True
ignore_missing_imports = True
follow_imports = silent
"""


def used_as_a_user_would(table: pa.Table) -> None:
    with Fluvio.connect("127.0.0.1:9003", timeout=5) as fluvio:
        admin = assert_type(fluvio.admin(), SyncAdmin)
        assert_type(admin.create_topic("t", partitions=3, dry_run=True), Topic)
        assert_type(admin.describe_topic("t"), tuple[Topic, list[Partition]])
        assert_type(admin.add_partitions("t", 2), Topic)
        assert_type(admin.list_spus(), list[Spu])
        assert_type(admin.delete_topic("t"), int)
        assert_type(admin.watch_metadata(reconnect=False), SyncStream[MetadataUpdate])

        producer = assert_type(fluvio.topic_producer("t", acks="all"), TopicProducer)
        assert_type(producer.send(b"k", "v", partition=0), DeliveryFuture)
        assert_type(producer.send_batch(table, key_column=None), BatchFuture)
        assert_type(producer.flush(timeout=1.0), None)

        records = fluvio.partition_consumer("t", 0).stream(Offset.beginning(), end_offset=9)
        assert_type(records, SyncStream[Record])
        assert_type(fluvio.consumer("t").stream(Offset.end(), stop_at_end=True), SyncStream[Record])
        assert_type(fluvio.topic_partitions("t"), list[PartitionInfo])
        assert_type(fluvio.fetch_offsets("t", 0), PartitionOffsets)
        assert_type(fluvio.offset_for_timestamp("t", 0, 0), int | None)
        assert_type(fluvio.fetch_frames("t", 0, 0, 10), SyncStream[memoryview])

        producer.send(b"k", b"v", partiton=0)  # type: ignore[call-arg]
        producer.send(b"k", b"v", 0)  # type: ignore[call-arg]
        fluvio.fetch_batches("t", 0, 0, local="yes")  # type: ignore[arg-type]
        admin.delete_topic()  # type: ignore[call-arg]


def test_the_blocking_client_is_typed_for_users(tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    command = [sys.executable, "-m", "mypy", "--config-file", str(config)]
    command += ["--cache-dir", str(tmp_path / "cache"), str(Path(__file__).relative_to(ROOT))]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr

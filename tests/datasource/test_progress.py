"""The stream reader's ``progressGroup`` mirror against a real local cluster, driven the
way Spark's driver drives it (no Spark): a refused or failed write never fails the
query, is logged, and is retried at the next trigger."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from datasource.offsets import TopicPartition, from_json_dict
from datasource.options import parse_reader_options
from datasource.progress import ProgressMirror
from datasource.reader import FluvioBatchReader, FluvioStreamReader
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.spark_conftest import produce

pytestmark = pytest.mark.integration


def _offsets(fluvio: Fluvio, group: str) -> dict[TopicPartition, int]:
    return {TopicPartition(t, p): o for (t, p), o in fluvio.admin().fetch_offsets(group).items()}


def test_refused_writes_warn_and_are_retried_until_the_group_is_a_progress_group(
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = new_topic(partitions=2)
    group = f"q-{uuid.uuid4().hex[:8]}"
    produce(fluvio, topic, ["a"] * 10)
    opts = parse_reader_options(
        {"topic": topic, "endpoint": fluvio_cluster.endpoint, "progressGroup": group,
         "startingOffsets": "earliest"},
        "stream",
    )  # fmt: skip
    reader = FluvioStreamReader(opts)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert _offsets(fluvio, group) == from_json_dict(start)  # claimed at the first trigger
    reader.commit(end)
    assert _offsets(fluvio, group) == from_json_dict(end)

    # The name is taken over by a group of members: the query goes on, warning.
    fluvio.admin().delete_group(group)
    member = fluvio.group_consumer(topic, group=group, enable_auto_commit=False)
    produce(fluvio, topic, ["b"] * 6)
    caplog.set_level(logging.WARNING, logger="datasource.progress")
    later = reader.latestOffset(end, ReadAllAvailable())
    reader.commit(later)
    assert f"'{group}' has 1 member" in caplog.text
    member.close()
    caplog.clear()
    reader.latestOffset(later, ReadAllAvailable())  # retried: still a group of members
    assert f"'{group}' is a group of members" in caplog.text
    assert _offsets(fluvio, group) == {}
    fluvio.admin().delete_group(group)
    reader.latestOffset(later, ReadAllAvailable())  # retried: the progress group again
    assert _offsets(fluvio, group) == from_json_dict(later)
    assert reader._progress is not None and reader._progress.pending is None


def test_unreachable_sc_keeps_the_write_pending(
    fluvio_cluster: LocalCluster, fluvio: Fluvio, caplog: pytest.LogCaptureFixture
) -> None:
    group = f"q-{uuid.uuid4().hex[:8]}"
    mirror = ProgressMirror(group, "127.0.0.1:1")  # nothing listens on port 1
    caplog.set_level(logging.WARNING, logger="datasource.progress")
    mirror.claim()
    mirror.mirror({})
    assert not mirror.claimed and mirror.pending == {}
    assert "cannot connect" in caplog.text and "offsets not mirrored" in caplog.text
    mirror.endpoint = fluvio_cluster.endpoint  # the SC is reachable again
    mirror.flush()
    assert mirror.pending is None and mirror.written == {}
    assert group in {g["name"] for g in fluvio.admin().list_groups()}


def test_group_start_resolves_committed_offsets_and_earliest_without_one(
    fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3)
    for p in range(3):
        produce(fluvio, topic, ["r"] * 4, partition=p)
    group = f"q-{uuid.uuid4().hex[:8]}"
    # 1 past its end (a progress write may run ahead of this reader's view), 2 none.
    fluvio.admin().commit_progress(group, {(topic, 0): 1, (topic, 1): 9})
    options = {"topic": topic, "endpoint": fluvio_cluster.endpoint}
    spec = {"startingOffsets": f"group:{group}"}
    stream = FluvioStreamReader(parse_reader_options({**options, **spec}, "stream"))
    assert stream.initialOffset() == {topic: {"0": 1, "1": 9, "2": 0}}
    batch = FluvioBatchReader(parse_reader_options({**options, **spec}, "batch"))
    ranges = {(p.partition, p.start, p.end) for p in batch.partitions()}
    assert ranges == {(0, 1, 4), (2, 0, 4)}  # 1 reads nothing (9 is past its end, 4)

"""Continuous (``Trigger.Continuous``) and real-time (``trigger(realTime=...)``) queries
through the JVM connector against a real cluster: every record once, in offset order per
partition, including records produced while the query runs; and the real-time mode's
refusal of per-trigger limits at query start.

The queries run in a child interpreter whose session has the connector jar
(``_run_child`` of ``test_jvm_batch_read``); the child also produces the records that
arrive mid-query, once the query has delivered the first ones.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.auth import Claims, load_key, parse_grant, sign
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.datasource.test_jvm_batch_read import _run_child, connector_jar  # noqa: F401
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import leader_pid, make_topic, running_cluster, unique
from tests.polling import wait_until
from tests.spark_conftest import produce
from tests.tls_cluster import tls_cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]

_HELPERS = """
import glob, os, time
from spark_stream.client import Fluvio
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import leader_pid
from tests.polling import wait_until
from tests.spark_conftest import produce

# A continuous or real-time task holds a task slot for the whole query (one per topic
# partition), so the session needs more slots than the topic has partitions.
spark.stop()
spark = local_session("jvm-low-latency", master="local[4]", jvm_connector=True)

def wait_for(count_rows, want, what, timeout=180):
    deadline = time.monotonic() + timeout
    while count_rows() < want:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: {count_rows()} of {want} rows in {timeout} s")
        time.sleep(0.2)

def stream(**options):
    reader = spark.readStream.format("fluvio").option("endpoint", endpoint).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()

# (partition, offset, value) of the topic from its start into the memory table ``name``
def continuous_to_memory(name):
    return (
        stream(startingOffsets="earliest").select("partition", "offset", "value")
        .writeStream.format("memory").queryName(name)
        .trigger(continuous="1 second").start()
    )

def memory_count(name):
    return lambda: spark.sql(f"select * from {name}").count()

def memory_rows(name):
    rows = spark.sql(f"select * from {name}").collect()
    return [[r["partition"], r["offset"], r["value"].decode()] for r in rows]

# A foreach sink writing each task epoch's rows (the ``columns``, values decoded) as JSON
# lines into a file of its own in ``sink_dir``; ``sink_files`` reads them back.
import json, uuid

class FileSink:
    def __init__(self, sink_dir, columns):
        self.sink_dir, self.columns = sink_dir, columns
    def open(self, partition_id, epoch_id):
        name = f"{partition_id}-{epoch_id}-{uuid.uuid4().hex}.jsonl"
        self.file = open(os.path.join(self.sink_dir, name), "a")
        return True
    def process(self, row):
        cells = [row[c].decode() if c == "value" else row[c] for c in self.columns]
        self.file.write(json.dumps(cells) + "\\n")
        self.file.flush()
    def close(self, error):
        self.file.close()

def sink_files(sink_dir):
    files = []
    for path in sorted(glob.glob(os.path.join(sink_dir, "*.jsonl"))):
        with open(path) as f:
            files.append([json.loads(line) for line in f if line.endswith("\\n")])
    return files

def sink_rows(sink_dir):
    return [row for rows in sink_files(sink_dir) for row in rows]
"""


def _check_every_record_once_in_order(
    rows: list[list[object]], fluvio: Fluvio, topic: str, partitions: int
) -> None:
    by_partition: dict[int, list[tuple[int, str]]] = {}
    for partition, offset, value in rows:
        by_partition.setdefault(int(partition), []).append((int(offset), str(value)))  # type: ignore[call-overload]
    for p in range(partitions):
        hw = fluvio.fetch_offsets(topic, p).hw
        got = by_partition.get(p, [])
        assert [o for o, _ in got] == list(range(hw)), (p, got[:5], hw)


def test_continuous_query_delivers_every_record_once_in_order(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=2, replicas=2)
    produce(fluvio, topic, [f"a{i}" for i in range(40)], keys=[f"k{i}" for i in range(40)])
    out = _run_child(
        _HELPERS
        + textwrap.dedent(
            """
            query = continuous_to_memory("continuous_sink")
            try:
                count = memory_count("continuous_sink")
                wait_for(count, 40, "records produced before the query")
                with Fluvio.connect(endpoint) as client:
                    produce(client, topic, [f"b{i}" for i in range(30)],
                            keys=[f"k{i}" for i in range(30)])
                wait_for(count, 70, "records produced during the query")
                out["plan"] = query._jsq.streamingQuery().lastExecution().executedPlan().toString()
            finally:
                query.stop()
            out["rows"] = memory_rows("continuous_sink")
            """
        ),
        fluvio_cluster.endpoint,
        topic,
    )
    assert "ContinuousScan" in out["plan"] and "fluvio JVM scan of" in out["plan"], out["plan"]
    assert len(out["rows"]) == 70
    _check_every_record_once_in_order(out["rows"], fluvio, topic, 2)
    assert sorted(r[2] for r in out["rows"]) == sorted(
        [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(30)]
    )


def test_real_time_query_delivers_every_record_once_in_order(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=2, replicas=2)
    produce(fluvio, topic, [f"a{i}" for i in range(40)], keys=[f"k{i}" for i in range(40)])
    sink = tmp_path / "sink"
    sink.mkdir()
    out = _run_child(
        _HELPERS
        + textwrap.dedent(
            f"""
            sink_dir = {str(sink)!r}
            sink = FileSink(sink_dir, ["partition", "offset", "value"])

            df = stream(startingOffsets="earliest").select("partition", "offset", "value")
            query = (
                df.writeStream.foreach(sink).outputMode("update")
                .option("checkpointLocation", os.path.join(sink_dir, "..", "checkpoint"))
                .trigger(realTime="5 seconds").start()
            )
            try:
                wait_for(lambda: len(sink_rows(sink_dir)), 40, "records produced before the query")
                with Fluvio.connect(endpoint) as client:
                    produce(client, topic, [f"b{{i}}" for i in range(30)],
                            keys=[f"k{{i}}" for i in range(30)])
                wait_for(lambda: len(sink_rows(sink_dir)), 70, "records produced during the query")
                out["error"] = None if query.exception() is None else str(query.exception())
            finally:
                query.stop()
            out["rows"] = sink_rows(sink_dir)
            out["files"] = sink_files(sink_dir)
            limited = stream(startingOffsets="earliest", maxRecordsPerTrigger="10")
            out["limit_error"] = error_of(lambda: limited.writeStream.foreach(sink)
                .outputMode("update").trigger(realTime="5 seconds").start().awaitTermination(60))
            waiting = stream(startingOffsets="earliest", minOffsetsPerTrigger="10")
            out["min_error"] = error_of(lambda: waiting.writeStream.foreach(sink)
                .outputMode("update").trigger(realTime="5 seconds").start().awaitTermination(60))
            out["continuous_min_error"] = error_of(lambda: waiting.writeStream.foreach(sink)
                .trigger(continuous="1 second").start().awaitTermination(60))
            """
        ),
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["error"] is None
    # Each sink file is what one task wrote in one batch: its offsets come in order.
    for rows_of_task in out["files"]:
        for p in range(2):
            offsets = [r[1] for r in rows_of_task if r[0] == p]
            assert offsets == sorted(offsets), offsets
    rows = sorted(out["rows"], key=lambda r: (r[0], r[1]))
    assert len(out["rows"]) == 70
    _check_every_record_once_in_order(rows, fluvio, topic, 2)
    assert out["limit_error"] is not None
    assert "option 'maxRecordsPerTrigger' is not supported in real-time mode" in out["limit_error"]
    # Kafka's minOffsetsPerTrigger sizes micro-batches: refused where batches last a time.
    assert "option 'minOffsetsPerTrigger' is not supported in real-time mode" in out["min_error"]
    assert "option 'minOffsetsPerTrigger' is not supported in continuous mode" in (
        out["continuous_min_error"] or ""
    )


def test_continuous_query_picks_up_an_added_partition(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    """A partition added to the topic while a continuous query runs: the stream asks for
    reconfiguration, Spark restarts the tasks from their offsets, and the new partition
    is read from its log start; nothing lost or repeated in the old ones."""
    topic = new_topic(partitions=2, replicas=2)
    produce(fluvio, topic, [f"a{i}" for i in range(40)], keys=[f"k{i}" for i in range(40)])
    out = _run_child(
        _HELPERS
        + textwrap.dedent(
            """
            query = continuous_to_memory("grown_sink")
            try:
                count = memory_count("grown_sink")
                wait_for(count, 40, "records produced before the growth")
                with Fluvio.connect(endpoint) as client:
                    client.admin().add_partitions(topic, 1)
                    wait_for(lambda: len(client.topic_partitions(topic)), 3, "3 partitions")
                    produce(client, topic, [f"c{i}" for i in range(20)], partition=2)
                    produce(client, topic, [f"b{i}" for i in range(10)],
                            keys=[f"k{i}" for i in range(10)])
                wait_for(count, 70, "records produced after the growth")
                out["error"] = None if query.exception() is None else str(query.exception())
            finally:
                query.stop()
            out["rows"] = memory_rows("grown_sink")
            """
        ),
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["error"] is None
    assert len(out["rows"]) == 70
    _check_every_record_once_in_order(out["rows"], fluvio, topic, 3)
    added = sorted((r[1], r[2]) for r in out["rows"] if r[0] == 2)
    assert [v for _, v in added[:20]] == [f"c{i}" for i in range(20)]


def test_continuous_query_rides_out_a_killed_leader(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
) -> None:
    """SIGKILL the partition's leader while a continuous task streams from it: the task
    reopens its stream on the new leader at its next offset, and nothing is lost or
    repeated."""
    topic = new_topic(partitions=1, replicas=2)
    produce(fluvio, topic, [f"a{i}" for i in range(40)])
    leader, pid = leader_pid(fluvio, fluvio_cluster, topic)
    try:
        out = _run_child(
            _HELPERS
            + textwrap.dedent(
                f"""
                import signal
                query = continuous_to_memory("killed_sink")
                try:
                    count = memory_count("killed_sink")
                    wait_for(count, 40, "records produced before the kill")
                    os.kill({pid}, signal.SIGKILL)
                    with Fluvio.connect(endpoint) as client:
                        produce(client, topic, [f"b{{i}}" for i in range(30)])
                    wait_for(count, 70, "records produced after the kill")
                    out["error"] = None if query.exception() is None else str(query.exception())
                finally:
                    query.stop()
                out["rows"] = memory_rows("killed_sink")
                """
            ),
            fluvio_cluster.endpoint,
            topic,
        )
    finally:
        kill_spu(fluvio_cluster, leader)
        fluvio_cluster.start()  # brings the killed SPU back for the next tests
    assert out["error"] is None
    assert len(out["rows"]) == 70
    _check_every_record_once_in_order(out["rows"], fluvio, topic, 1)
    assert [r[2] for r in out["rows"]] == [f"a{i}" for i in range(40)] + [
        f"b{i}" for i in range(30)
    ]


def test_continuous_and_real_time_queries_read_the_tier_first(
    connector_jar: Path,  # noqa: F811
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """A tiered topic whose SPU no longer holds its first records: continuous and
    real-time queries from earliest deliver the tier's records, then the SPU's, then those
    produced while they run, each offset once and in order."""
    topic = new_topic(segmentSize=1024, tier=str(tmp_path / "tier"), localRetentionSecs=1)
    sent = []
    for n in range(8):  # about 2 KiB a batch: a segment each
        values = [f"{n}-{i}-{'v' * 60}" for i in range(25)]
        produce(fluvio, topic, values)
        sent += values

    def spu_log_start() -> int:
        (part,) = fluvio.admin().list_partitions(topic)
        return part.status.log_start_offset

    wait_until(lambda: spu_log_start() >= 100, 90, "local retention")
    assert fluvio.fetch_offsets(topic, 0).log_start == 0  # the tier holds the start
    sink = tmp_path / "sink"
    sink.mkdir()
    out = _run_child(
        _HELPERS
        + textwrap.dedent(
            f"""
            sink_dir = {str(sink)!r}
            sink = FileSink(sink_dir, ["offset", "value"])

            query = continuous_to_memory("tiered_sink")
            try:
                count = memory_count("tiered_sink")
                wait_for(count, 200, "records in the tier and on the SPU")
                with Fluvio.connect(endpoint) as client:
                    produce(client, topic, [f"b{{i}}" for i in range(30)])
                wait_for(count, 230, "records produced during the query")
                out["error"] = None if query.exception() is None else str(query.exception())
            finally:
                query.stop()
            out["continuous"] = memory_rows("tiered_sink")

            df = stream(startingOffsets="earliest").select("offset", "value")
            query = (
                df.writeStream.foreach(sink).outputMode("update")
                .option("checkpointLocation", os.path.join(sink_dir, "..", "checkpoint"))
                .trigger(realTime="5 seconds").start()
            )
            try:
                wait_for(
                    lambda: len(sink_rows(sink_dir)), 230, "records in the tier and on the SPU"
                )
                out["real_time_error"] = (
                    None if query.exception() is None else str(query.exception()))
            finally:
                query.stop()
            out["real_time"] = sink_rows(sink_dir)
            """
        ),
        fluvio_cluster.endpoint,
        topic,
    )
    expected = list(enumerate([*sent, *(f"b{i}" for i in range(30))]))
    assert out["error"] is None
    continuous = [(int(o), str(v)) for _, o, v in out["continuous"]]
    assert continuous == expected  # a memory sink keeps a partition's order
    assert out["real_time_error"] is None
    assert sorted((int(o), str(v)) for o, v in out["real_time"]) == expected


@pytest.mark.parametrize("transport", ["plaintext", "mtls"])
def test_a_continuous_query_on_a_cluster_with_auth_reads_with_its_token(
    connector_jar: Path,  # noqa: F811
    tmp_path: Path,
    transport: str,
) -> None:
    # The stream's own socket presents the token before STREAM_FETCH (before, it presented
    # none, and a cluster with auth on refused every continuous and real-time read); over
    # mutual TLS the token goes inside the TLS session the ``tls.*`` options make.
    cluster = (
        running_cluster(tmp_path / "auth", spus=1, auth=True)
        if transport == "plaintext"
        else tls_cluster(tmp_path / "auth", spus=1, auth=True)
    )
    with cluster as secured:
        tls = {} if transport == "plaintext" else {
            "tls.ca": str(secured.certs.ca),
            "tls.cert": str(secured.certs.cert("client")),
            "tls.key": str(secured.certs.key("client")),
        }  # fmt: skip
        admin = Fluvio.connect(secured.endpoint, token=secured.admin_token, tls=secured.client_tls)
        with admin:
            topic = make_topic(admin, unique("jvm-auth"), partitions=2)
            produce(admin, topic, [f"a{i}" for i in range(30)], keys=[f"k{i}" for i in range(30)])
        consume = sign(
            Claims("spark", (parse_grant(f"{topic}=consume"),)),
            load_key(secured.auth_key_file),
        )
        out = _run_child(
            _HELPERS
            + textwrap.dedent(
                f"""
                query = (
                    stream(startingOffsets="earliest", token={consume!r}, **{tls!r})
                    .select("partition", "offset", "value")
                    .writeStream.format("memory").queryName("auth_sink")
                    .trigger(continuous="1 second").start()
                )
                try:
                    count = memory_count("auth_sink")
                    deadline = time.monotonic() + 180
                    while count() < 30 and query.isActive and time.monotonic() < deadline:
                        time.sleep(0.2)
                    out["error"] = (
                        None if query.exception() is None else str(query.exception()))
                finally:
                    query.stop()
                out["rows"] = memory_rows("auth_sink")
                """
            ),
            secured.endpoint,
            topic,
        )
        assert out["error"] is None, out["error"]
        with Fluvio.connect(
            secured.endpoint, token=secured.admin_token, tls=secured.client_tls
        ) as admin:
            _check_every_record_once_in_order(out["rows"], admin, topic, 2)
        assert sorted(r[2] for r in out["rows"]) == sorted(f"a{i}" for i in range(30))

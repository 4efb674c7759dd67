"""Writes through the JVM connector (``connector/``) against a real local cluster.

As in ``test_jvm_batch_read.py``, the queries run in a child interpreter whose session has
the connector jar, and the assertions are here. What the child writes is read back with
the Python source of the suite's shared session, so these tests also show that Python
reads the frames Java encodes. The streaming sources are file sources: the JVM connector
does not serve streaming reads yet, and a file source replays a batch with the same rows
in the same tasks, which the exactly-once test needs.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_stream.client import Fluvio
from spark_stream.client.producer.partitioner import fnv1a_32
from spark_stream.local.cluster import LocalCluster
from tests.datasource.test_jvm_batch_read import _run_child, connector_jar

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    # The shared session is the Python side here; the JVM side runs in a child session.
    pytest.mark.spark_source("python", reason="compares the Python source with the jar's"),
]

__all__ = ["connector_jar"]  # the fixture, shared with the read tests


def _total(fluvio: Fluvio, topic: str) -> int:
    return sum(fluvio.fetch_offsets(topic, p.partition).hw for p in fluvio.topic_partitions(topic))


def _python_read(spark: SparkSession, cluster: LocalCluster, topic: str, **options: str):  # type: ignore[no-untyped-def]
    reader = spark.read.format("fluvio").option("endpoint", cluster.endpoint).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_jvm_batch_write_reads_back_equal(
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
) -> None:
    topic = new_topic(partitions=3, replicas=2)
    out = _run_child(
        """
        from datetime import datetime, timezone
        when = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
        rows = [(f"k{i % 5}" if i % 4 else None, f"v{i}", when,
                 [("h", bytes([i % 256]))] if i % 3 else None) for i in range(200)]
        df = spark.createDataFrame(
            rows, "key string, value string, timestamp timestamp, "
                  "headers array<struct<key: string, value: binary>>")
        writer = df.write.format("fluvio").option("endpoint", endpoint).option("topic", topic)
        writer.save()  # no mode: appends, as with the Python source
        out["jvm"] = spark._jvm.org.apache.spark.sql.execution.datasources.DataSource \\
            .lookupDataSource("fluvio", spark._jsparkSession.sessionState().conf()).getName()
        def w(frame, **options):
            wr = frame.write.format("fluvio").option("endpoint", endpoint)
            for key, value in options.items():
                wr = wr.option(key, value)
            return wr
        out["errors"] = [
            error_of(lambda: w(df, topic=topic).mode("overwrite").save()),
            error_of(lambda: w(df, topic=topic, acks="some").mode("append").save()),
            error_of(lambda: w(df, topic=topic, topik="x").mode("append").save()),
            error_of(lambda: w(df.select("key"), topic=topic).mode("append").save()),
            error_of(lambda: w(df.withColumn("extra", F.lit(1)), topic=topic)
                     .mode("append").save()),
            error_of(lambda: w(df).mode("append").save()),
            error_of(lambda: w(df, topic=topic, compression="zstd").mode("append").save()),
        ]
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["jvm"] == "io.sparkstream.fluvio.datasource.FluvioProvider"
    back = _python_read(spark, fluvio_cluster, topic, includeHeaders="true").collect()
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    got = sorted(
        (
            (
                None if r["key"] is None else bytes(r["key"]).decode(),
                bytes(r["value"]).decode(),
                r["timestamp"].astimezone(UTC),
                None
                if r["headers"] is None
                else [(h["key"], bytes(h["value"])) for h in r["headers"]],
            )
            for r in back
        ),
        key=repr,
    )
    expected = sorted(
        (  # written twice: without a mode, then with compression=zstd
            (
                f"k{i % 5}" if i % 4 else None,
                f"v{i}",
                when,
                [("h", bytes([i % 256]))] if i % 3 else None,
            )
            for i in [*range(200), *range(200)]
        ),
        key=repr,
    )
    assert got == expected
    for r in back:  # keys go where Python's partitioner sends them
        if r["key"] is not None:
            assert r["partition"] == fnv1a_32(bytes(r["key"])) % 3
    keyless = [r["partition"] for r in back if r["key"] is None]
    spread = [keyless.count(p) for p in range(3)]  # round robin in each task
    assert sum(spread) == 100 and max(spread) - min(spread) <= 4, spread
    expected_errors = [
        "mode('overwrite') is not supported: topics are append-only; use mode('append')",
        "option 'acks' must be one of all, leader, got 'some'",
        "unknown option 'topik' for format('fluvio'); did you mean 'topic'?",
        "the DataFrame needs a 'value' column (binary or string)",
        "cannot write column(s) extra to a topic",
        "set the 'topic' option or give the DataFrame a 'topic' column",
        None,  # the topic accepts any codec
    ]
    for message, error in zip(expected_errors, out["errors"], strict=True):
        if message is None:
            assert error is None, error
        else:
            assert error is not None and message in error, (message, error)


def test_jvm_streaming_write_reads_back_equal(
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=2)
    source = tmp_path / "in"
    source.mkdir()
    for f in range(3):
        (source / f"part-{f}.txt").write_text("".join(f"f{f}-{i}\n" for i in range(40)))
    out = _run_child(
        f"""
        stream = (spark.readStream.format("text").option("maxFilesPerTrigger", "1")
                  .load({str(source)!r}).select(F.upper("value").alias("value")))
        query = (stream.writeStream.format("fluvio").option("endpoint", endpoint)
                 .option("topic", topic).option("checkpointLocation", {str(tmp_path / "c")!r})
                 .trigger(availableNow=True).start())
        out["done"] = query.awaitTermination(120)
        out["error"] = None if query.exception() is None else str(query.exception())
        out["batches"] = len(query.recentProgress)
        out["sink"] = query.lastProgress["sink"]["description"]
        bad = (stream.writeStream.format("fluvio").option("endpoint", endpoint)
               .option("topic", topic).option("acks", "x")
               .option("checkpointLocation", {str(tmp_path / "bad")!r}).start())
        out["bad"] = error_of(lambda: bad.awaitTermination(120))
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["done"] and out["error"] is None
    assert out["batches"] == 3
    assert out["sink"].startswith("io.sparkstream.fluvio.datasource.FluvioTable")  # JVM sink
    assert (
        out["bad"] is not None and "option 'acks' must be one of all, leader, got 'x'" in out["bad"]
    )
    values = sorted(
        bytes(r["value"]).decode() for r in _python_read(spark, fluvio_cluster, topic).collect()
    )
    assert values == sorted(f"F{f}-{i}" for f in range(3) for i in range(40))


def _fail_once(marker: str, endpoint: str, topic: str) -> Callable[..., str]:
    """A UDF that, on its first run, lets the task of file ``a`` write its 300 records,
    then fails the task of file ``b``: the micro-batch dies half written."""

    # No annotations: Spark would read type hints as a request for an Arrow UDF.
    def value_of(value):  # type: ignore[no-untyped-def]
        import os

        if value.startswith("b-") and not os.path.exists(marker):
            from spark_stream.client import Fluvio as Client

            with Client.connect(endpoint) as client:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    written = sum(
                        client.fetch_offsets(topic, p.partition).hw
                        for p in client.topic_partitions(topic)
                    )
                    if written >= 300:
                        break
                    time.sleep(0.05)  # polling another task's progress, bounded
            open(marker, "w").close()
            raise RuntimeError("injected failure in the middle of a micro-batch")
        return value

    return value_of


def _start_sink(spark: SparkSession, endpoint: str, topic: str, tmp_path: Path) -> Any:
    """The file stream of ``tmp_path/in`` through ``_fail_once`` into ``topic``, one file
    a task (``openCostInBytes`` keeps Spark from packing both files into one task)."""
    from pyspark.sql.types import StringType

    udf = F.udf(_fail_once(str(tmp_path / "failed-once"), endpoint, topic), StringType())
    spark.conf.set("spark.sql.files.openCostInBytes", str(1 << 30))
    try:
        df = spark.readStream.format("text").load(str(tmp_path / "in"))
        return (
            df.select(udf("value").alias("value"))
            .writeStream.format("fluvio").option("endpoint", endpoint)
            .option("topic", topic).option("checkpointLocation", str(tmp_path / "c"))
            .trigger(availableNow=True).start()
        )  # fmt: skip
    finally:
        spark.conf.unset("spark.sql.files.openCostInBytes")


def _files(tmp_path: Path) -> list[str]:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.txt").write_text("".join(f"a-{i}\n" for i in range(300)))
    (source / "b.txt").write_text("".join(f"b-{i}\n" for i in range(200)))
    return [f"a-{i}" for i in range(300)] + [f"b-{i}" for i in range(200)]


_CHILD_FIRST_RUN = """
    from pathlib import Path
    from tests.datasource.test_jvm_write import _start_sink
    first = _start_sink(spark, endpoint, topic, Path(tmp))
    out["first"] = error_of(lambda: first.awaitTermination(120))
"""

_CHILD_SECOND_RUN = """
    from pathlib import Path
    from tests.datasource.test_jvm_write import _start_sink
    second = _start_sink(spark, endpoint, topic, Path(tmp))
    out["second"] = second.awaitTermination(120)
    out["second_error"] = None if second.exception() is None else str(second.exception())
"""


def test_jvm_sink_is_exactly_once_when_a_failed_batch_is_rerun(
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """The Python sink's exactly-once test with the jar: a micro-batch fails after one of
    its tasks wrote everything; the query restarts from its checkpoint, the batch re-runs
    under the same producer ids, and each record is in the topic once."""
    topic = new_topic(partitions=2, replicas=2)
    expected = _files(tmp_path)
    out = _run_child(
        f"tmp = {str(tmp_path)!r}\n"
        + textwrap.dedent(_CHILD_FIRST_RUN)
        + "from spark_stream.client import Fluvio as Client\n"
        + "with Client.connect(endpoint) as c:\n"
        + "    out['partial'] = sum(c.fetch_offsets(topic, p.partition).hw"
        + " for p in c.topic_partitions(topic))\n"
        + textwrap.dedent(_CHILD_SECOND_RUN),
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["first"] is not None and "injected failure" in out["first"]
    assert out["partial"] == 300  # file a's task wrote everything before the batch died
    assert out["second"] and out["second_error"] is None
    assert _total(fluvio, topic) == 500  # the re-run batch added only what was missing
    values = [
        bytes(r["value"]).decode() for r in _python_read(spark, fluvio_cluster, topic).collect()
    ]
    assert sorted(values) == sorted(expected)


@pytest.mark.parametrize("first_side", ["python", "jvm"])
def test_a_half_written_batch_is_resumed_by_the_other_sink_exactly_once(
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
    first_side: str,
) -> None:
    """One sink dies half way through a micro-batch; the other (Python after JVM, or JVM
    after Python) resumes the query from the same checkpoint. Both derive the same
    producer ids from (query id, batch id, task) and cut these frames alike, so the
    leaders drop what the first run wrote and each record is in the topic once."""
    topic = new_topic(partitions=2, replicas=2)
    expected = _files(tmp_path)
    preamble = f"tmp = {str(tmp_path)!r}\n"
    if first_side == "python":
        first = _start_sink(spark, fluvio_cluster.endpoint, topic, tmp_path)
        with pytest.raises(Exception, match="injected failure"):
            first.awaitTermination(120)
        assert _total(fluvio, topic) == 300
        out = _run_child(
            preamble + textwrap.dedent(_CHILD_SECOND_RUN), fluvio_cluster.endpoint, topic
        )
        assert out["second"] and out["second_error"] is None
    else:
        out = _run_child(
            preamble + textwrap.dedent(_CHILD_FIRST_RUN), fluvio_cluster.endpoint, topic
        )
        assert out["first"] is not None and "injected failure" in out["first"]
        assert _total(fluvio, topic) == 300
        second = _start_sink(spark, fluvio_cluster.endpoint, topic, tmp_path)
        assert second.awaitTermination(120)
        assert second.exception() is None
    assert _total(fluvio, topic) == 500
    values = [
        bytes(r["value"]).decode() for r in _python_read(spark, fluvio_cluster, topic).collect()
    ]
    assert sorted(values) == sorted(expected)


def test_jvm_sink_under_a_continuous_trigger_writes_each_row_once(
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """``Trigger.Continuous`` into the fluvio sink (the rate source serves continuous
    reads): each epoch's rows are produced under (query id, epoch, task) and appear once;
    each rate partition's values arrive as a gapless prefix, in order."""
    topic = new_topic(partitions=1)
    out = _run_child(
        f"""
        from tests.polling import wait_until
        from spark_stream.client import Fluvio as Client
        stream = (spark.readStream.format("rate").option("rowsPerSecond", "200")
                  .option("numPartitions", "2").load()
                  .select(F.col("value").cast("string").alias("value")))
        query = (stream.writeStream.format("fluvio").option("endpoint", endpoint)
                 .option("topic", topic).option("checkpointLocation", {str(tmp_path / "c")!r})
                 .trigger(continuous="1 second").start())
        with Client.connect(endpoint) as client:
            wait_until(lambda: client.fetch_offsets(topic, 0).hw >= 400, 120, "400 records")
        query.stop()
        out["error"] = None if query.exception() is None else str(query.exception())
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["error"] is None
    rows = _python_read(spark, fluvio_cluster, topic).orderBy("offset").collect()
    values = [int(bytes(r["value"])) for r in rows]
    assert len(values) >= 400
    assert len(set(values)) == len(values)  # no row twice
    for part in (0, 1):  # the rate source's partition p makes p, p + 2, p + 4, ...
        mine = [v for v in values if v % 2 == part]
        assert mine == list(range(part, part + 2 * len(mine), 2))


def test_jvm_sink_in_real_time_mode_needs_the_allowlist_setting(
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """Real-time mode (``trigger(realTime=...)``) into the fluvio sink. Spark's sink
    allowlist refuses it until ``spark.sql.streaming.realTimeMode.allowlistCheck=false``;
    then each row lands once. The source is Spark's own real-time memory stream
    (``LowLatencyMemoryStream``), as the JVM connector has no real-time read yet."""
    topic = new_topic(partitions=2)
    out = _run_child(
        f"""
        from pyspark.sql import DataFrame
        from tests.polling import wait_until
        from spark_stream.client import Fluvio as Client
        jvm = spark._jvm
        memory = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
        stream = memory.apply(spark._jsparkSession, 2, jvm.org.apache.spark.sql.Encoders.STRING())
        df = DataFrame(stream.toDF(), spark)
        def start(name):
            return (df.writeStream.format("fluvio").option("endpoint", endpoint)
                    .option("topic", topic).outputMode("update")
                    .option("checkpointLocation", {str(tmp_path)!r} + "/" + name)
                    .trigger(realTime="5 seconds").start())
        out["refused"] = error_of(lambda: start("a"))
        spark.conf.set("spark.sql.streaming.realTimeMode.allowlistCheck", "false")
        query = start("b")
        rows = jvm.java.util.ArrayList()
        for i in range(300):
            rows.add(f"rt-{{i}}")
        stream.addData(jvm.scala.jdk.javaapi.CollectionConverters.asScala(rows))
        with Client.connect(endpoint) as client:
            def landed():
                return sum(client.fetch_offsets(topic, p).hw for p in (0, 1)) >= 300
            wait_until(landed, 120, "300 records")
        query.stop()
        out["error"] = None if query.exception() is None else str(query.exception())
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["refused"] is not None and "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in out["refused"]
    assert out["error"] is None
    values = [
        bytes(r["value"]).decode() for r in _python_read(spark, fluvio_cluster, topic).collect()
    ]
    assert sorted(values) == sorted(f"rt-{i}" for i in range(300))


@pytest.mark.parametrize("batch_size", ["1", "262144"], ids=["frame-a-record", "linger-cuts"])
def test_jvm_sink_in_real_time_mode_is_exactly_once_when_a_batch_is_rerun(
    batch_size: str,
    connector_jar: Path,
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """The exactly-once test in real-time mode: the task of source partition 0 has
    appended its 300 records when the task of partition 1 fails (one frame a record with
    ``batchSize=1``; else frames the linger cut, wherever the time fell); the query
    restarts from its checkpoint, the batch re-runs under the same producer ids, cut
    anew, and each record is in the topic once."""
    topic = new_topic(partitions=2, replicas=2)
    out = _run_child(
        f"""
        from pyspark.sql import DataFrame
        from pyspark.sql.types import StringType
        from spark_stream.client import Fluvio as Client
        from tests.datasource.test_jvm_write import _fail_once
        from tests.polling import wait_until
        jvm = spark._jvm
        spark.conf.set("spark.sql.streaming.realTimeMode.allowlistCheck", "false")
        memory = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
        stream = memory.apply(spark._jsparkSession, 2, jvm.org.apache.spark.sql.Encoders.STRING())
        udf = F.udf(_fail_once({str(tmp_path / "failed-once")!r}, endpoint, topic), StringType())
        df = DataFrame(stream.toDF(), spark).select(udf("value").alias("value"))
        def start():
            return (df.writeStream.format("fluvio").option("endpoint", endpoint)
                    .option("topic", topic).option("batchSize", {batch_size!r})
                    .outputMode("update")
                    .option("checkpointLocation", {str(tmp_path / "c")!r})
                    .trigger(realTime="5 seconds").start())
        def rows(prefix, n):
            out = jvm.java.util.ArrayList()
            for i in range(n):
                out.add(f"{{prefix}}-{{i}}")
            return jvm.scala.jdk.javaapi.CollectionConverters.asScala(out)
        def total():
            with Client.connect(endpoint) as client:
                return sum(client.fetch_offsets(topic, p).hw for p in (0, 1))
        first = start()
        stream.addData(0, rows("a", 300))
        stream.addData(1, rows("b", 200))
        out["first"] = error_of(lambda: first.awaitTermination(120))
        out["partial"] = total()
        second = start()
        # Until the re-run batch has ended (its progress is reported at its end).
        wait_until(lambda: second.recentProgress, 120, "the re-run batch to end")
        out["rerun"] = [[p["batchId"], p["numInputRows"]] for p in second.recentProgress]
        second.stop()
        out["second_error"] = None if second.exception() is None else str(second.exception())
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["first"] is not None and "injected failure" in out["first"]
    # Half written: the failure waits (up to 60 s) for task 0's 300 rows. A real-time
    # batch ends by time, so on a loaded machine task 0 can reach the batch's end before
    # it has read all 300 (its rows then belong to the next batch, which never starts: the
    # failing task holds this one). Instrumented runs saw 1 and 276 rows reach the UDF and
    # exactly those in the topic, task 0 already gone. The re-run writes the rest once.
    assert 0 < out["partial"] <= 300
    assert out["second_error"] is None
    # The failed batch again, with every row of both partitions. It is batch 0, or 1 when
    # batch 0 was planned (and ended empty) before the rows were added, on a loaded machine.
    assert out["rerun"][0][0] in (0, 1) and out["rerun"][0][1] == 500, out["rerun"]
    assert _total(fluvio, topic) == 500
    values = [
        bytes(r["value"]).decode() for r in _python_read(spark, fluvio_cluster, topic).collect()
    ]
    assert sorted(values) == sorted([f"a-{i}" for i in range(300)] + [f"b-{i}" for i in range(200)])


def test_jvm_sink_in_real_time_mode_sends_a_slow_input_before_the_batch_ends(
    connector_jar: Path,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """The writer's linger: each record of a slow input is in the topic while its
    real-time batch (10 minutes long) still runs, not when the batch ends."""
    topic = new_topic(partitions=1)
    out = _run_child(
        f"""
        from pyspark.sql import DataFrame
        from spark_stream.client import Fluvio as Client
        from tests.polling import wait_until
        jvm = spark._jvm
        spark.conf.set("spark.sql.streaming.realTimeMode.allowlistCheck", "false")
        memory = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
        stream = memory.apply(spark._jsparkSession, 1, jvm.org.apache.spark.sql.Encoders.STRING())
        query = (DataFrame(stream.toDF(), spark).writeStream.format("fluvio")
                 .option("endpoint", endpoint).option("topic", topic).outputMode("update")
                 .option("checkpointLocation", {str(tmp_path / "c")!r})
                 .trigger(realTime="10 minutes").start())
        def hw():
            with Client.connect(endpoint) as client:
                return client.fetch_offsets(topic, 0).hw
        out["landed"] = []
        for i in range(3):  # one record at a time, as a slow input sends them
            rows = jvm.java.util.ArrayList()
            rows.add(f"slow-{{i}}")
            stream.addData(jvm.scala.jdk.javaapi.CollectionConverters.asScala(rows))
            wait_until(lambda: hw() == i + 1, 120, f"record {{i}} in the topic")
            out["landed"].append(hw())
        out["batches_ended"] = len(query.recentProgress)
        query.stop()
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["landed"] == [1, 2, 3]
    assert out["batches_ended"] == 0  # all three landed within the first batch
    assert _total(fluvio, topic) == 3

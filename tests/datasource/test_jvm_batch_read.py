"""Batch reads through the JVM connector (``connector/``) against a real local cluster.

Each test runs its queries in a child interpreter whose SparkSession has the connector
jar (``local_session(jvm_connector=True)``): the suite's shared session must keep the
Python source, and a JVM's classpath is fixed once it runs. The child prints one JSON
line of results; the assertions are here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spark_stream.client import Fluvio
from spark_stream.client.profile import Profile, save_profile, switch_profile
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.redis_server import free_port
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import leader_pid
from tests.polling import wait_until
from tests.spark_conftest import connector_jar_or_skip, produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ROOT = Path(__file__).resolve().parent.parent.parent

_CHILD = """
import json, sys
from pyspark.sql import functions as F
from datasource.session import local_session

endpoint, topic = sys.argv[1], sys.argv[2]
spark = local_session("jvm-batch-read", jvm_connector=True)
out = {}

def read(**options):
    reader = spark.read.format("fluvio").option("endpoint", endpoint).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()

def error_of(run):
    try:
        run()
    except Exception as exc:
        return str(exc)
    return None
"""


@pytest.fixture(scope="module")
def connector_jar() -> Path:
    """The connector jar, built when missing or stale (needs Maven, as ./dev test has)."""
    return connector_jar_or_skip()


def _start_child(
    body: str, endpoint: str, topic: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    script = _CHILD + textwrap.dedent(body) + "\nprint('RESULT ' + json.dumps(out))\n"
    return subprocess.Popen(
        [sys.executable, "-c", script, endpoint, topic],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _child_result(child: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        stdout, stderr = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert child.returncode == 0 and lines, stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def _run_child(
    body: str, endpoint: str, topic: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    return _child_result(_start_child(body, endpoint, topic, env))


def test_jvm_read_equals_what_was_produced(
    connector_jar: Path, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3, replicas=2)
    keys = [f"k{i % 7}" for i in range(300)]
    values = [f"value-{i}" for i in range(300)]
    # Several frames per partition, so ranges below start and end inside frames.
    for start in range(0, 300, 50):
        produce(fluvio, topic, values[start : start + 50], keys=keys[start : start + 50])
    out = _run_child(
        """
        df = read()
        out["plan"] = df._jdf.queryExecution().executedPlan().toString()
        out["schema"] = df.schema.simpleString()
        out["partitions"] = df.rdd.getNumPartitions()
        rows = df.collect()
        out["rows"] = [
            [r["key"].decode(), r["value"].decode(), r["topic"], r["partition"], r["offset"],
             r["timestampType"]]
            for r in rows
        ]
        out["ts_ok"] = all(r["timestamp"].year >= 2024 for r in rows)
        out["pruned"] = [r[0].decode() for r in read().select("value").collect()]
        ranged = read(startingOffsets=json.dumps({topic: {"0": 5}}),
                      endingOffsets=json.dumps({topic: {"0": 17, "1": 3, "2": 0}}))
        out["ranged"] = sorted([r["partition"], r["offset"]] for r in ranged.collect())
        client = spark._jvm.io.sparkstream.fluvio.client
        sc = client.Connection.open(client.Endpoint.parse(endpoint, "sc"), 10000)
        out["sc_apis"] = sorted(int(k) for k in sc.apiVersions().keySet())
        sc.close()
        # The local-read path piece by piece, against the real leader: FETCH_LOCAL names
        # its segment file, which this host can read.
        leaders = client.LeaderClient(client.Endpoint.parse(endpoint, "sc"), 10000)
        named = leaders.fetchLocal(topic, 0, 0, 1 << 20, client.Isolation.COMMITTED)
        data = client.LocalFiles.read(named.path(), named.position(), named.length(),
                                      named.device(), named.inode(), True)
        frames = spark._jvm.io.sparkstream.fluvio.records.BatchFrames.split(data, True)
        out["local"] = [named.baseOffset(), frames.size() > 0, frames.get(0).header().baseOffset()]
        leaders.close()
        network = read(localReads="false").orderBy("partition", "offset").collect()
        out["same_both_ways"] = network == read().orderBy("partition", "offset").collect()
        split = read(minPartitions="7")
        out["split"] = [split.rdd.getNumPartitions(), split.count()]
        out["unknown"] = error_of(lambda: read(topik="x"))
        out["latest"] = error_of(lambda: read(startingOffsets="latest").collect())
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert f"fluvio JVM scan of [{topic}]" in out["plan"], out["plan"]  # not the Python source
    assert out["schema"] == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>"
    )
    assert out["partitions"] == 3
    assert sorted((r[0], r[1]) for r in out["rows"]) == sorted(zip(keys, values, strict=True))
    assert {r[2] for r in out["rows"]} == {topic}
    assert {r[5] for r in out["rows"]} == {0}
    for p in range(3):
        offsets = sorted(r[4] for r in out["rows"] if r[3] == p)
        assert offsets == list(range(len(offsets)))
    key_partitions: dict[str, set[int]] = {}
    for r in out["rows"]:
        key_partitions.setdefault(r[0], set()).add(r[3])
    assert all(len(ps) == 1 for ps in key_partitions.values())  # one partition per key
    assert out["ts_ok"]
    assert sorted(out["pruned"]) == sorted(values)
    assert out["ranged"] == [[0, o] for o in range(5, 17)] + [[1, o] for o in range(3)]
    assert {1, 1004, 1012} <= set(out["sc_apis"])  # the Java client against the real SC
    assert out["local"] == [0, True, 0]
    assert out["same_both_ways"]
    assert out["split"] == [7, 300]
    assert "unknown option 'topik' for format('fluvio')" in out["unknown"]
    assert "option 'startingOffsets' cannot be 'latest' for batch reads" in out["latest"]


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_jvm_read_of_compressed_frames_with_headers(
    connector_jar: Path,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    compression: str,
) -> None:
    topic = new_topic(partitions=1, compression=compression)
    values = [f"{compression}-{i}" * 5 for i in range(200)]
    produce(fluvio, topic, values)
    producer = fluvio.topic_producer(topic, acks="all", linger_ms=0)
    producer.send(b"k", b"with-headers", headers=[("trace", b"abc"), ("n", b"")]).result(timeout=30)
    producer.close()
    out = _run_child(
        """
        df = read(includeHeaders="true").orderBy("offset")
        out["schema"] = df.schema.simpleString()
        rows = df.collect()
        out["values"] = [r["value"].decode() for r in rows]
        def pairs(headers):
            return [[h["key"], bytes(h["value"]).hex()] for h in headers]
        out["headers"] = [None if r["headers"] is None else pairs(r["headers"]) for r in rows]
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["schema"].endswith(",headers:array<struct<key:string,value:binary>>>")
    assert out["values"] == [*values, "with-headers"]
    assert out["headers"] == [None] * 200 + [[["trace", b"abc".hex()], ["n", ""]]]


def test_jvm_options_and_ranges_against_the_cluster(
    connector_jar: Path, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    """The errors and ranges of ``test_batch_read.py``'s tests, through the JVM."""
    topic = new_topic(partitions=2)
    base = 1_700_000_000_000_000
    stamps = [base + i * 1_000_000 for i in range(50)]
    produce(fluvio, topic, [f"a{i}" for i in range(50)], partition=0, timestamps_us=stamps)
    produce(fluvio, topic, [f"b{i}" for i in range(50)], partition=1)
    out = _run_child(
        f"""
        ranged = read(startingOffsets=json.dumps({{topic: {{"0": 10, "1": -2}}}}),
                      endingOffsets=json.dumps({{topic: {{"0": 20}}}}))
        out["ranged"] = sorted([r["partition"], r["offset"]] for r in ranged.collect())
        timed = read(partitions="0", startingTimestamp=str({base} // 1000 + 30_000),
                     endingTimestamp=str({base} // 1000 + 40_000))
        out["timed"] = sorted(r["offset"] for r in timed.collect())
        out["errors"] = [
            error_of(lambda: spark.read.format("fluvio").option("endpoint", endpoint)
                     .option("topic", "no-such-topic").load().collect()),
            error_of(lambda: read(partitions="0,9").collect()),
            error_of(lambda: read(startingOffsets=json.dumps({{topic: {{"0": 999}}}})).collect()),
            error_of(lambda: read(partitions="0",
                                  endingOffsets=json.dumps({{topic: {{"1": 1}}}})).collect()),
            error_of(lambda: read(isolation="sometimes").collect()),
            error_of(lambda: read(maxRecordsPerTrigger="5").collect()),
        ]
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["ranged"] == [[0, o] for o in range(10, 20)] + [[1, o] for o in range(50)]
    assert out["timed"] == list(range(30, 40))
    expected = [
        "option 'topic(s)': topic 'no-such-topic' does not exist",
        f"option 'partitions': topic '{topic}' has no partition(s) 9 (it has 2)",
        f"option 'startingOffsets': offset 999 of {topic}/0 is past its end 50 (committed)",
        f"option 'endingOffsets' names {topic}/1, which the query does not read",
        "option 'isolation' must be one of read_committed, read_uncommitted, committed, "
        "uncommitted, got 'sometimes'",
        "option 'maxRecordsPerTrigger' only applies to streaming reads",
    ]
    for message, error in zip(expected, out["errors"], strict=True):
        assert error is not None and message in error, (message, error)


def test_jvm_read_rides_out_a_killed_leader(
    connector_jar: Path, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    """SIGKILL the leader right before a read (from the child, after its JVM is warm):
    the read is served by the new leader and nothing is lost. (The SC elects within
    milliseconds here, so this rarely needs the client's retry; the retry on
    ``NotLeaderError`` itself is tested deterministically by ``LeaderClientTest``.)"""
    topic = new_topic(partitions=1, replicas=2)
    values = [f"v{i}" for i in range(120)]
    produce(fluvio, topic, values)
    wait_until(lambda: fluvio.fetch_offsets(topic, 0).hw == 120, 30, "HW to reach 120")
    leader, pid = leader_pid(fluvio, fluvio_cluster, topic)
    try:
        out = _run_child(
            f"""
            import os, signal
            out["before"] = read().count()
            os.kill({pid}, signal.SIGKILL)
            out["values"] = [r["value"].decode() for r in read().orderBy("offset").collect()]
            """,
            fluvio_cluster.endpoint,
            topic,
        )
    finally:
        kill_spu(fluvio_cluster, leader)  # waits until it is gone (already, normally)
        fluvio_cluster.start()  # brings the killed SPU back for the next tests
    assert out["before"] == 120
    assert out["values"] == values


def test_jvm_predicates_become_ranges(
    connector_jar: Path, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    """Partition, offset and timestamp predicates shrink what the scan reads, and a
    filtered query returns what filtering every record gives."""
    topic = new_topic(partitions=3)
    base = 1_700_000_000_000_000
    for p in range(3):
        # Partition 2's times run backwards: a time bound must not skip its older records.
        stamps = [base + (99 - i if p == 2 else i) * 1_000_000 for i in range(100)]
        for start in range(0, 100, 10):  # ten frames per partition
            produce(
                fluvio, topic, [f"{p}-{i}" for i in range(start, start + 10)], partition=p,
                timestamps_us=stamps[start : start + 10],
            )  # fmt: skip
    out = _run_child(
        f"""
        spark.conf.set("spark.sql.adaptive.enabled", "false")  # a fixed plan holds the metrics

        def scan(where):
            df = read().where(where)
            rows = sorted([r["partition"], r["offset"]] for r in df.collect())
            plan = df._jdf.queryExecution().executedPlan()
            leaves = plan.collectLeaves().iterator()
            scanned = None
            while leaves.hasNext():
                node = leaves.next()
                if node.nodeName().startswith("BatchScan"):
                    scanned = node.metrics().apply("numOutputRows").value()
            return {{"rows": rows, "scanned": scanned, "plan": plan.toString()}}

        out["all"] = sorted(
            [r["partition"], r["offset"], r["timestamp"].timestamp()] for r in read().collect()
        )
        out["offsets"] = scan("offset >= 35 AND offset < 62 AND partition IN (0, 2)")
        out["partition"] = scan("partition = 1")
        out["time"] = scan("timestamp >= timestamp_micros({base + 70_000_000})")
        out["none"] = scan("offset > 1000")
        out["residual"] = scan("offset < 20 AND value = CAST('1-5' AS BINARY)")
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    rows = out["all"]
    assert len(rows) == 300

    def where(keep: Callable[[list[Any]], bool]) -> list[list[int]]:
        return [[r[0], r[1]] for r in rows if keep(r)]

    offsets = out["offsets"]
    assert offsets["rows"] == where(lambda r: 35 <= r[1] < 62 and r[0] in (0, 2))
    assert offsets["scanned"] == 2 * 27  # only the range, trimmed inside frames
    assert "where" in offsets["plan"], offsets["plan"]  # the predicates reached the scan
    assert out["partition"]["rows"] == where(lambda r: r[0] == 1)
    assert out["partition"]["scanned"] == 100
    cut = (base + 70_000_000) / 1e6
    assert out["time"]["rows"] == where(lambda r: r[2] >= cut)
    assert len(out["time"]["rows"]) == 90
    assert out["time"]["scanned"] == 30 + 30 + 100  # partition 2 read whole, then filtered
    assert out["none"] == {**out["none"], "rows": [], "scanned": 0}
    assert out["residual"]["rows"] == [[1, 5]]
    assert out["residual"]["scanned"] == 3 * 20


def test_jvm_read_from_a_groups_committed_offsets(
    connector_jar: Path, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    """``startingOffsets=group:NAME`` as ``test_progress.py`` checks it in Python: the
    committed offsets, the earliest where there is none, nothing past the end."""
    topic = new_topic(partitions=3)
    for p in range(3):
        produce(fluvio, topic, ["r"] * 4, partition=p)
    group = f"q-{uuid.uuid4().hex[:8]}"
    # 1 past its end (a progress write may run ahead of this reader's view), 2 none.
    fluvio.admin().commit_progress(group, {(topic, 0): 1, (topic, 1): 9})
    out = _run_child(
        f"""
        rows = read(startingOffsets="group:{group}").collect()
        out["rows"] = sorted([r["partition"], r["offset"]] for r in rows)
        out["unknown"] = error_of(lambda: read(startingOffsets="group:no-such-group").collect())
        out["bad"] = error_of(lambda: read(startingOffsets="group:No").collect())
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    assert out["rows"] == [[0, o] for o in range(1, 4)] + [[2, o] for o in range(4)]
    unknown = "option 'startingOffsets': consumer group 'no-such-group' does not exist"
    assert unknown in out["unknown"]
    assert "option 'startingOffsets': 'No' must be lowercase letters" in out["bad"]


def test_jvm_endpoint_from_the_client_profile(
    connector_jar: Path,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """Without the endpoint option or FLUVIO_ENDPOINT, the JVM connector finds the SC in
    the client profile, as ``resolve_endpoint`` does; without a profile it says how to
    give one."""
    topic = new_topic(partitions=1)
    produce(fluvio, topic, ["a", "b", "c"])
    profile = tmp_path / "profile.json"
    # Two named profiles: the connector reads the current one, as the Python client does.
    save_profile(Profile(endpoint=fluvio_cluster.endpoint, name="local"), profile)
    save_profile(Profile(endpoint=f"127.0.0.1:{free_port()}", name="elsewhere"), profile)
    switch_profile("local", profile)
    body = """
        def values():
            df = spark.read.format("fluvio").option("topic", topic).load()
            return sorted(r["value"].decode() for r in df.collect())
        out["values"] = error_of(values) or values()
        """
    found = _run_child(
        body, "unused:1", topic, env={"FLUVIO_PROFILE": str(profile), "FLUVIO_ENDPOINT": ""}
    )
    missing = _run_child(
        body,
        "unused:1",
        topic,
        env={"FLUVIO_PROFILE": str(tmp_path / "none.json"), "FLUVIO_ENDPOINT": ""},
    )
    assert found["values"] == ["a", "b", "c"]
    assert "NotFoundError: no cluster endpoint: give one" in missing["values"]
    assert str(tmp_path / "none.json") in missing["values"]


def test_jvm_read_by_topic_pattern(
    connector_jar: Path, fluvio_cluster: LocalCluster, fluvio: Fluvio, new_topic: Callable[..., str]
) -> None:
    """``topicPattern`` reads every topic whose whole name matches, as in Python."""
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    one = new_topic(partitions=1, prefix=prefix)
    two = new_topic(partitions=2, prefix=prefix)
    other = new_topic(partitions=1, prefix=f"x{prefix}")  # contains the prefix, not at the start
    produce(fluvio, one, ["a"])
    produce(fluvio, two, ["b"], partition=1)
    produce(fluvio, other, ["c"])
    out = _run_child(
        f"""
        def by_pattern(**options):
            reader = spark.read.format("fluvio").option("endpoint", endpoint)
            reader = reader.option("topicPattern", "{prefix}-.*")
            for key, value in options.items():
                reader = reader.option(key, value)
            return reader.load()
        df = by_pattern()
        out["plan"] = df._jdf.queryExecution().executedPlan().toString()
        out["rows"] = sorted([r.topic, r.partition, r.value.decode()] for r in df.collect())
        out["p1"] = sorted(r["topic"] for r in by_pattern(partitions="1").collect())
        out["bad"] = error_of(lambda: spark.read.format("fluvio").option("endpoint", endpoint)
                              .option("topicPattern", "(").load().collect())
        """,
        fluvio_cluster.endpoint,
        one,
    )
    assert f"fluvio JVM scan of pattern {prefix}-.*" in out["plan"], out["plan"]
    assert out["rows"] == sorted([[one, 0, "a"], [two, 1, "b"]])
    assert out["p1"] == [two]  # partition 1 of the topics that have one
    assert "option 'topicPattern' is not a regex" in out["bad"]


def test_jvm_isolation_committed_hides_what_a_paused_follower_has_not_copied(
    connector_jar: Path,
    fluvio_cluster: LocalCluster,
    fluvio: Fluvio,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    """``isolation`` as ``test_batch_read.py`` checks it in Python, with local reads (the
    uncommitted range is copied, the committed one mapped) and over the network. The
    child starts its session first and reads once told to, so the follower is paused
    only for the reads (long enough, and the SC would drop it from the in-sync set)."""
    topic = new_topic(replicas=2)
    produce(fluvio, topic, ["before"] * 10)
    info = fluvio.topic_partitions(topic)[0]
    follower = next(r for r in info.replicas if r != info.leader)
    wait_until(lambda: fluvio.fetch_offsets(topic, 0).hw == 10, 30, "HW to reach 10")
    ready, go = tmp_path / "ready", tmp_path / "go"
    child = _start_child(
        f"""
        import os, time
        read().count()  # the session and the JVM are warm before the follower pauses
        open({str(ready)!r}, "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:
            time.sleep(0.02)
        for local in ("true", "false"):
            for isolation in ("committed", "uncommitted"):
                rows = read(isolation=isolation, localReads=local).orderBy("offset").collect()
                out[f"{{isolation}}-{{local}}"] = [r["value"].decode() for r in rows]
        out["hw"] = spark._jvm.io.sparkstream.fluvio.client.LeaderClient(
            spark._jvm.io.sparkstream.fluvio.client.Endpoint.parse(endpoint, "sc"), 10000
        ).fetchOffsets(topic, 0, None).hw()
        """,
        fluvio_cluster.endpoint,
        topic,
    )
    pid = fluvio_cluster.spu_pid(follower)
    assert pid is not None
    try:
        wait_until(lambda: ready.exists() or child.poll() is not None, 120, "the child session")
        os.kill(pid, signal.SIGSTOP)
        try:
            produce(fluvio, topic, ["after"] * 5, acks="leader")
            offsets = fluvio.fetch_offsets(topic, 0)
            assert (offsets.hw, offsets.leo) == (10, 15)
            go.touch()
            out = _child_result(child)
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert out["hw"] == 10, "the follower was dropped before the reads ended: no check made"
    for local in ("true", "false"):
        assert out[f"committed-{local}"] == ["before"] * 10
        assert out[f"uncommitted-{local}"] == ["before"] * 10 + ["after"] * 5

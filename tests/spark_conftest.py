"""Fixtures for the Spark connector and job tests: one Spark session per source, one cluster.

``spark`` is the ONE local SparkSession at a time (``local[2]``, Delta enabled). Every
test that uses it runs twice, once per source of ``format("fluvio")``: ``python`` (the
Python data source, no jar) and ``jvm`` (the JVM connector's jar on the classpath, built
when missing; skipped when it cannot be). A JVM's classpath is fixed when it starts and
PySpark keeps one JVM per process, so the two sources cannot share a JVM: the fixture is
session-scoped and parametrised, pytest groups the tests by its parameter (all
``[python]`` ones, then all ``[jvm]`` ones), and between the halves the first session
is stopped together with its JVM (``stop_spark``), so the second starts a fresh one.
``--spark-source=python|jvm`` runs one half. A test that holds for one source only says
so with ``@pytest.mark.spark_source("python", reason=...)`` (the reason names what the
other source lacks, e.g. a line of docs/jvm-connector.md).

``fluvio_cluster`` is a ``LocalCluster`` with a real Redis, the SC and three SPU
processes (custom SPUs, so a test may pause one), under a temporary directory, with its
own client profile; it is stopped by pid at the end of the session. ``fluvio`` is a
connected client; ``new_topic`` creates a uniquely named topic and waits until every
partition has a leader. Tests using these are ``integration`` tests (and ``spark`` when
they also use ``spark``).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from datasource.connector_jar import build_jar, jar_path
from spark_stream.client import Fluvio
from spark_stream.errors import JarFetchError
from spark_stream.local.cluster import LocalCluster
from tests.integration.gate_audits import AUDIT_ENV, assert_no_overlapping_grants
from tests.polling import wait_until

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SOURCES", "connector_jar_or_skip", "produce", "stop_spark"]

SOURCES = ("python", "jvm")
"""The sources of ``format("fluvio")`` every test using ``spark`` runs against."""
_JVM_EXIT_TIMEOUT_S = 60

SPUS = 3
# Generous follower lag bound, so a paused follower stays in sync long enough for a test
# to see the high watermark held back (eviction would advance it).
# Frames up to 512 KiB (above the producer's default 256 KiB batches), so a topic may use
# segments that small and a test can see retention at work.
# Every gate change is audited, so group tests can check Z1 (``no_overlapping_grants``).
_ENV = {
    "FLUVIO_SPU_REPLICA_MAX_LAG_MS": "60000",
    "FLUVIO_SPU_MAX_BATCH_BYTES": "524288",
    "FLUVIO_SPU_RETENTION_INTERVAL_S": "2",  # tier tests wait for local retention
    **AUDIT_ENV,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--spark-source",
        choices=[*SOURCES, "both"],
        default="both",
        help="which source of format('fluvio') the tests using the spark fixture run on",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "spark_source(name, reason): the test holds for that source of format('fluvio') only",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``spark`` by source, session-scoped, so pytest groups tests by it."""
    if "spark" not in metafunc.fixturenames:
        return
    sources = list(SOURCES)
    marker = metafunc.definition.get_closest_marker("spark_source")
    if marker is not None:
        if (
            len(marker.args) != 1
            or marker.args[0] not in SOURCES
            or not marker.kwargs.get("reason")
        ):
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: use spark_source(one of {SOURCES}, reason=...)"
            )
        sources = [marker.args[0]]
    metafunc.parametrize("spark", sources, indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--spark-source``, deselect the tests of the other source."""
    chosen = config.getoption("--spark-source")
    if chosen == "both":
        return
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        source = callspec.params.get("spark", chosen) if callspec is not None else chosen
        (keep if source == chosen else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    """The session of the current source (``request.param``; ``python`` if not parametrised).

    It starts on first use (about 12 s) and stops, with its JVM, when the tests of its
    source are done.
    """
    from datasource.session import local_session

    source = getattr(request, "param", "python")
    if source == "jvm":
        connector_jar_or_skip()
    session = local_session("spark-stream-tests", delta=True, jvm_connector=source == "jvm")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        stop_spark(session)


def connector_jar_or_skip() -> Path:
    """The connector jar, built when missing or stale (Maven, as ./dev test has it); the
    test is skipped when Maven is not installed and the jar is not built."""
    if shutil.which("mvn") is None:
        built = jar_path()
        if built is None:
            pytest.skip("the JVM connector jar is not built and Maven is not installed")
        return built
    try:
        return build_jar()
    except JarFetchError as exc:
        pytest.fail(f"cannot build the connector jar: {exc}")


def stop_spark(session: SparkSession) -> None:
    """Stop ``session`` and its JVM, so the next session starts a JVM of its own.

    PySpark starts one JVM per process (its py4j gateway) and reuses it for every later
    SparkContext, and ``spark.jars`` only reaches the classpath when a JVM starts. The
    JVM (``PythonGatewayServer``) exits when its stdin closes; forgetting the gateway
    makes the next ``getOrCreate`` launch a new one.
    """
    from pyspark import SparkContext

    session.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=_JVM_EXIT_TIMEOUT_S)


@pytest.fixture(scope="session")
def fluvio_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A local cluster of three SPUs for the session (its own profile and data dir)."""
    root: Path = tmp_path_factory.mktemp("fluvio")
    saved = {"FLUVIO_PROFILE": os.environ.get("FLUVIO_PROFILE")}
    os.environ["FLUVIO_PROFILE"] = str(root / "profile.json")
    # The SPU settings go to the cluster's processes only: through os.environ they would
    # leak into every cluster other tests start later in the session.
    # No default tier: topics of the shared cluster are untiered (their log start is the
    # SPU's, which retention tests rely on); tier tests give their topics a tier.
    cluster = LocalCluster(
        root / "cluster", spus=SPUS, sc_port=0, spu_mode="custom", start_timeout=60.0,
        env=_ENV, default_tier=False,
    )  # fmt: skip
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def fluvio(fluvio_cluster: LocalCluster) -> Iterator[Fluvio]:
    """A client connected to the session cluster."""
    client = Fluvio.connect(fluvio_cluster.endpoint)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def no_overlapping_grants(fluvio_cluster: LocalCluster) -> Iterator[None]:
    """After the test, Z1 over the session cluster's gate audits (every grant so far)."""
    yield
    assert_no_overlapping_grants(fluvio_cluster)


@pytest.fixture
def new_topic(fluvio: Fluvio) -> Callable[..., str]:
    """``new_topic(partitions=1, replicas=1, **settings)`` -> a fresh topic's name."""

    def make(partitions: int = 1, replicas: int = 1, prefix: str = "t", **settings: object) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        fluvio.admin().create_topic(
            name, partitions=partitions, replicationFactor=replicas, **settings
        )

        def ready() -> bool:
            try:
                infos = fluvio.topic_partitions(name)
            except Exception:
                return False
            return len(infos) == partitions and all(
                i.leader is not None and i.leader_endpoint for i in infos
            )

        wait_until(ready, 30.0, f"topic {name} to have leaders")
        for p in range(partitions):
            wait_until(lambda p=p: _offsets_ok(fluvio, name, p), 30.0, f"{name}/{p} to answer")
        return name

    return make


def _offsets_ok(fluvio: Fluvio, topic: str, partition: int) -> bool:
    try:
        fluvio.fetch_offsets(topic, partition)
    except Exception:
        return False
    return True


def produce(
    fluvio: Fluvio,
    topic: str,
    values: Sequence[str],
    *,
    keys: Sequence[str | None] | None = None,
    partition: int | None = None,
    timestamps_us: Sequence[int] | None = None,
    acks: str = "all",
) -> None:
    """Produce ``values`` (one Arrow batch) and wait until they are acknowledged."""
    columns: dict[str, pa.Array] = {"value": pa.array(list(values), pa.string())}
    if keys is not None:
        columns["key"] = pa.array(list(keys), pa.string())
    if timestamps_us is not None:
        columns["timestamp"] = pa.array(list(timestamps_us), pa.int64())
    producer = fluvio.topic_producer(topic, acks=acks, linger_ms=0)
    try:
        producer.send_batch(
            pa.table(columns),
            partition=partition,
            key_column="key" if keys is not None else None,
            timestamp_column="timestamp" if timestamps_us is not None else None,
        ).result(timeout=60)
    finally:
        producer.close()

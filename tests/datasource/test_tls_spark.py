"""``format("fluvio")`` against a cluster started with mutual TLS and client tokens: the
``tls.ca``, ``tls.cert`` and ``tls.key`` options carry the PEM files to the driver and
executors, the ``token`` option the token (presented over TLS).

The queries name the SC as ``localhost:PORT``, an address the cluster's profile (which
says ``127.0.0.1:PORT``) does not name, so the profile's TLS does not apply (a JVM keeps
the environment it started with, so hiding the profile from this process would not hide
it there) and only the options can make the connection: a round trip (write, then read
back) must succeed with them, and a read without them must fail with the cluster's TLS
refusal, not hang; a read with them and without a token fails with the token refusal.
The server certificate names ``localhost`` too.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from datasource.clients import close_all
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until
from tests.tls_cluster import tls_cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with tls_cluster(tmp_path_factory.mktemp("spark-mtls"), auth=True) as running:
        yield running


@pytest.fixture
def topic(cluster: LocalCluster) -> str:
    name = f"tls-{uuid.uuid4().hex[:8]}"
    with Fluvio.connect(
        cluster.endpoint, tls=cluster.client_tls, token=cluster.admin_token
    ) as fluvio:
        fluvio.admin().create_topic(name, partitions=2, replicationFactor=2)
        wait_until(
            lambda: all(p.leader is not None for p in fluvio.topic_partitions(name)),
            30.0,
            f"topic {name} to have leaders",
        )
    return name


@pytest.fixture
def hidden_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FLUVIO_PROFILE", str(tmp_path / "none.json"))
    monkeypatch.delenv("FLUVIO_TOKEN", raising=False)
    close_all()  # no client cached with the profile's TLS
    yield
    close_all()


def _unprofiled(cluster: LocalCluster) -> str:
    """The SC's address as the profile does not write it."""
    return f"localhost:{cluster.layout.sc_public_port}"


def _options(cluster: LocalCluster, *, token: bool = True) -> dict[str, str]:
    assert cluster.admin_token is not None
    return {
        "endpoint": _unprofiled(cluster),
        "tls.ca": str(cluster.certs.ca),
        "tls.cert": str(cluster.certs.cert("client")),
        "tls.key": str(cluster.certs.key("client")),
    } | ({"token": cluster.admin_token} if token else {})


@pytest.mark.usefixtures("hidden_profile")
def test_write_and_read_back_over_mutual_tls(
    spark: SparkSession, cluster: LocalCluster, topic: str
) -> None:
    rows = [(f"k{i % 3}", f"v{i}") for i in range(60)]
    df = spark.createDataFrame(rows, "key string, value string")
    df.write.format("fluvio").options(**_options(cluster)).option("topic", topic).mode(
        "append"
    ).save()
    back = spark.read.format("fluvio").options(**_options(cluster)).option("topic", topic).load()
    got = sorted((r.key.decode(), r.value.decode()) for r in back.select("key", "value").collect())
    assert got == sorted(rows)


@pytest.mark.usefixtures("hidden_profile")
def test_a_read_without_tls_options_fails_with_the_tls_refusal(
    spark: SparkSession, cluster: LocalCluster, topic: str
) -> None:
    reader = spark.read.format("fluvio").option("endpoint", _unprofiled(cluster))
    with pytest.raises(Exception, match="speaks TLS on this port"):
        reader.option("topic", topic).load().collect()


@pytest.mark.usefixtures("hidden_profile")
def test_a_read_with_tls_options_and_no_token_fails_with_the_token_refusal(
    spark: SparkSession, cluster: LocalCluster, topic: str
) -> None:
    reader = spark.read.format("fluvio").options(**_options(cluster, token=False))
    with pytest.raises(Exception, match="requires a client token"):
        reader.option("topic", topic).load().collect()

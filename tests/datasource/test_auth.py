"""``format("fluvio")`` against a cluster with auth on: the ``token`` option, both sources.

Runs on the ``[python]`` and ``[jvm]`` sessions alike: a write with a produce token, a
read with a consume token, and the refusals (no token, a token without the permission)
as the typed errors naming what is missing, on the driver or in a task.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_stream.auth import Claims, load_key, parse_grant, sign
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.integration.helpers import make_topic, running_cluster, unique

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("auth-spark"), spus=1, auth=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def topic(secured: LocalCluster) -> str:
    with Fluvio.connect(secured.endpoint, token=secured.admin_token) as admin:
        return make_topic(admin, unique("spark-auth"), partitions=2)


def token(cluster: LocalCluster, grant: str) -> str:
    return sign(Claims("spark", (parse_grant(grant),)), load_key(cluster.auth_key_file))


def read(spark: SparkSession, cluster: LocalCluster, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("fluvio").option("endpoint", cluster.endpoint)
    for key, value in {"topic": topic, **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def test_write_and_read_with_the_token_option(
    spark: SparkSession, secured: LocalCluster, topic: str
) -> None:
    rows = [(f"k{i}", f"v{i}") for i in range(50)]
    spark.createDataFrame(rows, "key string, value string").write.format("fluvio").option(
        "endpoint", secured.endpoint
    ).option("topic", topic).option("token", token(secured, f"{topic}=produce")).mode(
        "append"
    ).save()
    back = read(spark, secured, topic, token=token(secured, "spark-auth-*=consume"))
    values = {r.value.decode() for r in back.select("value").collect()}
    assert {f"v{i}" for i in range(50)} <= values


def test_a_read_without_a_token_or_without_consume_is_refused(
    spark: SparkSession, secured: LocalCluster, topic: str
) -> None:
    with pytest.raises(Exception, match="AuthenticationError") as anonymous:
        read(spark, secured, topic).collect()
    assert "requires a client token" in str(anonymous.value)
    with pytest.raises(Exception, match="PermissionDeniedError") as producer:
        read(spark, secured, topic, token=token(secured, f"{topic}=produce")).collect()
    assert f"lacks the consume permission on topic {topic!r}" in str(producer.value)


def test_a_write_without_produce_is_refused(
    spark: SparkSession, secured: LocalCluster, topic: str
) -> None:
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(Exception, match="PermissionDeniedError") as refused:
        df.write.format("fluvio").option("endpoint", secured.endpoint).option(
            "topic", topic
        ).option("token", token(secured, f"{topic}=consume")).mode("append").save()
    assert f"lacks the produce permission on topic {topic!r}" in str(refused.value)

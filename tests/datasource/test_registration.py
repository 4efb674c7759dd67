"""``format("fluvio")`` resolves in a SparkSession with no ``register()`` call.

The Python source looks a named topic's schema up at ``load()`` (typed topics), so the
reads name the session cluster, where topic ``t`` does not exist: nothing is read.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from datasource.schema import spark_schema
from spark_stream.local.cluster import LocalCluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture
def endpoint(fluvio_cluster: LocalCluster) -> str:
    """The session cluster's SC, which holds no topic ``t``."""
    return fluvio_cluster.endpoint


def test_batch_and_stream_reads_resolve_the_format(spark: SparkSession, endpoint: str) -> None:
    df = spark.read.format("fluvio").option("topic", "t").option("endpoint", endpoint).load()
    assert df.schema == spark_schema(False)
    stream = (
        spark.readStream.format("fluvio")
        .option("topic", "t").option("endpoint", endpoint).option("includeHeaders", "true")
        .load()
    )  # fmt: skip
    assert stream.isStreaming
    assert stream.schema == spark_schema(True)


def test_unknown_option_fails_at_load_naming_it(spark: SparkSession) -> None:
    with pytest.raises(Exception, match="unknown option 'topik'"):
        spark.read.format("fluvio").option("topik", "t").load()


def test_contradictory_options_fail_at_query_start(spark: SparkSession, endpoint: str) -> None:
    df = (
        spark.read.format("fluvio").option("topic", "t").option("topics", "a,b")
        .option("endpoint", endpoint).load()
    )  # fmt: skip
    with pytest.raises(Exception, match="'topic' and 'topics' contradict"):
        df.collect()


def test_the_session_reads_through_the_source_it_was_started_for(
    spark: SparkSession, endpoint: str, request: pytest.FixtureRequest
) -> None:
    """The ``[jvm]`` session has the connector's jar on its classpath and the ``[python]``
    one has not, so the same ``format("fluvio")`` code runs on each path in turn."""
    source = request.node.callspec.params["spark"]
    df = spark.read.format("fluvio").option("topic", "t").option("endpoint", endpoint).load()
    table = df._jdf.queryExecution().analyzed().table().getClass().getName()
    if source == "jvm":
        assert table == "io.sparkstream.fluvio.datasource.FluvioTable"
    else:
        assert table.startswith("org.apache.spark.sql.execution.datasources.v2.python."), table

# Databricks notebook source
# MAGIC %md
# MAGIC # A Fluvio topic from Databricks: write, read, stream into Delta
# MAGIC
# MAGIC Import this file into a workspace (it is a notebook in Databricks' source format).
# MAGIC It needs a running cluster (docs/deploy.md) that the Databricks compute can reach: the
# MAGIC SC's public address and every SPU's advertised address.
# MAGIC
# MAGIC Two ways `format("fluvio")` is served, with the same code below:
# MAGIC
# MAGIC - **Python data source** (any compute, serverless too): the wheel alone, installed by
# MAGIC   the next cell. Install it without the `[spark]` extra: the runtime's own pyspark and
# MAGIC   Delta serve, and the wheel must not bring a second pyspark.
# MAGIC - **JVM connector** (classic compute): also add `fluvio-spark-connector.jar` (built by
# MAGIC   `./dev setup`, carried in the wheel under `datasource/jars/`) as a cluster library;
# MAGIC   it takes effect at the cluster's next start and then serves `format("fluvio")`,
# MAGIC   including `Trigger.Continuous` and real-time mode (docs/jvm-connector.md, Databricks).
# MAGIC
# MAGIC Both need a runtime with Spark 4.2 (the Python source's admission control and the
# MAGIC connector's build); see docs/deploy.md.

# COMMAND ----------

# MAGIC %pip install /Volumes/main/default/libraries/spark_stream-0.1.0-py3-none-any.whl

# COMMAND ----------

dbutils.library.restartPython()

# COMMAND ----------

dbutils.widgets.text("endpoint", "fluvio-sc.fluvio.svc.cluster.local:9003", "SC address")
dbutils.widgets.text("topic", "notebook-events", "Topic")
dbutils.widgets.text("output", "/Volumes/main/default/fluvio/notebook-events", "Delta output")
endpoint = dbutils.widgets.get("endpoint")
topic = dbutils.widgets.get("topic")
output = dbutils.widgets.get("output")

# COMMAND ----------

# The Python data source, registered by name. A session started before the %pip install
# did not see the pyspark_fluvio module at its start; with the connector jar as a cluster
# library, Spark resolves "fluvio" to the JVM connector all the same.
import pyspark_fluvio

spark.dataSource.register(pyspark_fluvio.DefaultSource)

# COMMAND ----------

# The topic, created once (a rerun of the notebook finds it).
import contextlib

from spark_stream.client import Fluvio
from spark_stream.errors import TopicExistsError

with Fluvio.connect(endpoint) as fluvio, contextlib.suppress(TopicExistsError):
    fluvio.admin().create_topic(topic, partitions=2, replication_factor=1)

# COMMAND ----------

# Write: a batch DataFrame appended to the topic (key picks the partition).
events = spark.createDataFrame(
    [(f"user-{i % 3}", f"event {i}") for i in range(12)], "key string, value string"
)
events.write.format("fluvio").option("endpoint", endpoint).option("topic", topic).mode(
    "append"
).save()

# COMMAND ----------

# Read: the whole topic as a batch DataFrame (key and value are binary).
records = (
    spark.read.format("fluvio")
    .option("endpoint", endpoint)
    .option("topic", topic)
    .load()
    .selectExpr(
        "partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value"
    )
)
display(records)

# COMMAND ----------

# Stream: everything the topic holds now into a Delta table, then stop (availableNow, the
# trigger serverless compute allows). Run it again later to append what arrived since.
query = (
    spark.readStream.format("fluvio")
    .option("endpoint", endpoint)
    .option("topic", topic)
    .option("startingOffsets", "earliest")
    .load()
    .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "timestamp")
    .writeStream.format("delta")
    .option("checkpointLocation", f"{output}/_checkpoint")
    .trigger(availableNow=True)
    .start(f"{output}/table")
)
query.awaitTermination()
display(spark.read.format("delta").load(f"{output}/table").groupBy("key").count().orderBy("key"))

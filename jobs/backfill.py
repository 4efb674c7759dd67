"""Backfill: copy a Parquet or Delta table into a topic, with progress reporting.

    python -m jobs.backfill --source data/orders --format delta --topic orders \
        [--key-column id] [--value-column payload] [--timestamp-column ts]
    python -m jobs.backfill --source-topic old_orders --topic orders
    spark-submit jobs/backfill.py ...     (same arguments)

``--source-topic T`` reads the history of a topic created with ``--table delta`` from the
Delta table over its tier (no SPU is read): its ``key``, ``value`` and ``timestamp``
columns are the records' by default (a typed topic's user columns become the JSON value),
and its ``offset`` and ``partition`` columns are dropped.

Each row becomes one record. The value is ``--value-column`` (binary or string), or the
whole row as JSON when none is given; the key and timestamp are optional columns. The
write goes through ``df.write.format("fluvio")``: every task produces with an idempotent
producer, so Spark's task retries add no duplicates. Progress (tasks done, records in
the topic so far) is printed while it runs; the last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from datasource.clients import client_for
from jobs._main import run_job
from jobs._progress import JobProgress
from jobs._session import job_session
from jobs._tier import TIER_COLUMNS, delta_tier
from spark_stream.errors import DataSourceOptionError, SinkSchemaError

__all__ = ["BackfillResult", "backfill", "records_frame", "tier_source", "main"]

#: The record columns of a tier table that map to the sink's, when not named otherwise.
_RECORD_COLUMNS = ("key", "value", "timestamp")


@dataclass(frozen=True)
class BackfillResult:
    """What a backfill wrote."""

    topic: str
    rows: int
    records_added: int
    seconds: float


def records_frame(
    df: DataFrame,
    *,
    key_column: str | None = None,
    value_column: str | None = None,
    timestamp_column: str | None = None,
) -> DataFrame:
    """Map a table's rows to the sink's ``key``/``value``/``timestamp`` columns.

    Raises:
        SinkSchemaError: a named column does not exist.
    """
    for name in (key_column, value_column, timestamp_column):
        if name is not None and name not in df.columns:
            raise SinkSchemaError(f"column {name!r} is not in the source ({', '.join(df.columns)})")
    value = F.col(value_column) if value_column else F.to_json(F.struct(*df.columns))
    cols = [value.alias("value")]
    if key_column:
        cols.append(F.col(key_column).cast("string").alias("key"))
    if timestamp_column:
        cols.append(F.col(timestamp_column).cast("timestamp").alias("timestamp"))
    return df.select(*cols)


def tier_source(spark: SparkSession, endpoint: str | None, topic: str) -> DataFrame:
    """``topic``'s history from the Delta table over its tier, as a backfill source.

    Raises:
        DataSourceOptionError: the topic has no Delta table over its tier (or does not
            exist).
    """
    table = delta_tier(spark, endpoint, topic)
    if table is None:
        raise DataSourceOptionError(
            f"backfill: topic {topic!r} has no Delta table over its tier (create it with "
            "--table delta; the table appears once a segment is tiered)"
        )
    df = spark.read.format("delta").load(table)
    return df.drop(*TIER_COLUMNS, "headers")


def _topic_records(endpoint: str | None, topic: str) -> int:
    client = client_for(endpoint)
    return sum(client.fetch_offsets(topic, p.partition).leo for p in client.topic_partitions(topic))


def backfill(
    spark: SparkSession,
    source: str | None,
    topic: str,
    *,
    fmt: str = "parquet",
    endpoint: str | None = None,
    key_column: str | None = None,
    value_column: str | None = None,
    timestamp_column: str | None = None,
    source_topic: str | None = None,
    progress: bool = True,
) -> BackfillResult:
    """Copy the table at ``source`` (``fmt`` parquet or delta) into ``topic``.

    With ``source_topic`` instead of ``source``: that topic's Delta table over its tier
    (``tier_source``), its record columns mapped to the sink's unless named.

    Raises:
        SinkSchemaError: a named column does not exist.
        UnknownTopicError: the topic does not exist.
        DataSourceOptionError: both or neither of ``source`` and ``source_topic``, or a
            source topic without a Delta table over its tier.
    """
    if (source is None) == (source_topic is None):
        raise DataSourceOptionError("backfill: give one of --source and --source-topic")
    if source_topic is not None:
        df = tier_source(spark, endpoint, source_topic)
        key_column, value_column, timestamp_column = (
            given or (name if name in df.columns else None)
            for given, name in zip(
                (key_column, value_column, timestamp_column), _RECORD_COLUMNS, strict=True
            )
        )
        if value_column is None:  # a typed topic: the JSON of its user columns
            user = [c for c in df.columns if c not in _RECORD_COLUMNS]
            df = df.withColumn("value", F.to_json(F.struct(*user)))
            value_column = "value"
    else:
        assert source is not None
        df = spark.read.format(fmt).load(source)
    before = _topic_records(endpoint, topic)
    frame = records_frame(
        df, key_column=key_column, value_column=value_column, timestamp_column=timestamp_column
    )
    rows = frame.count()
    writer = frame.write.format("fluvio").option("topic", topic).mode("append")
    if endpoint:
        writer = writer.option("endpoint", endpoint)
    started = time.monotonic()
    if progress:

        def extra() -> str:
            return f"{_topic_records(endpoint, topic) - before}/{rows} records in {topic}"

        with JobProgress(spark, "backfill", extra=extra):
            writer.save()
    else:
        writer.save()
    added = _topic_records(endpoint, topic) - before
    return BackfillResult(topic, rows, added, round(time.monotonic() - started, 3))


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point: 0, 1 with ``error: <message>`` on stderr, 2 bad usage."""
    parser = argparse.ArgumentParser(
        prog="python -m jobs.backfill", description="Copy a Parquet or Delta table into a topic."
    )
    origin = parser.add_mutually_exclusive_group(required=True)
    origin.add_argument("--source", help="table path or URL")
    origin.add_argument(
        "--source-topic", help="a topic created with --table delta: its tier's Delta table"
    )
    parser.add_argument("--format", default="parquet", choices=["parquet", "delta"])
    parser.add_argument("--topic", required=True)
    parser.add_argument("--endpoint", default=None, help="SC host:port (default: the profile)")
    parser.add_argument("--key-column")
    parser.add_argument("--value-column")
    parser.add_argument("--timestamp-column")
    args = parser.parse_args(argv)

    def body() -> int:
        delta = args.format == "delta" or args.source_topic is not None
        spark = job_session("backfill", delta=delta)
        result = backfill(
            spark, args.source, args.topic, fmt=args.format, endpoint=args.endpoint,
            key_column=args.key_column, value_column=args.value_column,
            timestamp_column=args.timestamp_column, source_topic=args.source_topic,
        )  # fmt: skip
        print(json.dumps(asdict(result)))
        return 0

    return run_job(body)


if __name__ == "__main__":
    sys.exit(main())

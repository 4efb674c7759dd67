"""Backfill: copy a Parquet or Delta table into a topic, with progress reporting.

    python -m jobs.backfill --source data/orders --format delta --topic orders \
        [--key-column id] [--value-column payload] [--timestamp-column ts]
    spark-submit jobs/backfill.py ...     (same arguments)

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
from spark_stream.errors import SinkSchemaError

__all__ = ["BackfillResult", "backfill", "records_frame", "main"]


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


def _topic_records(endpoint: str | None, topic: str) -> int:
    client = client_for(endpoint)
    return sum(client.fetch_offsets(topic, p.partition).leo for p in client.topic_partitions(topic))


def backfill(
    spark: SparkSession,
    source: str,
    topic: str,
    *,
    fmt: str = "parquet",
    endpoint: str | None = None,
    key_column: str | None = None,
    value_column: str | None = None,
    timestamp_column: str | None = None,
    progress: bool = True,
) -> BackfillResult:
    """Copy the table at ``source`` (``fmt`` parquet or delta) into ``topic``.

    Raises:
        SinkSchemaError: a named column does not exist.
        UnknownTopicError: the topic does not exist.
    """
    before = _topic_records(endpoint, topic)
    frame = records_frame(
        spark.read.format(fmt).load(source),
        key_column=key_column, value_column=value_column, timestamp_column=timestamp_column,
    )  # fmt: skip
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
    parser.add_argument("--source", required=True, help="table path or URL")
    parser.add_argument("--format", default="parquet", choices=["parquet", "delta"])
    parser.add_argument("--topic", required=True)
    parser.add_argument("--endpoint", default=None, help="SC host:port (default: the profile)")
    parser.add_argument("--key-column")
    parser.add_argument("--value-column")
    parser.add_argument("--timestamp-column")
    args = parser.parse_args(argv)

    def body() -> int:
        spark = job_session("backfill", delta=args.format == "delta")
        result = backfill(
            spark, args.source, args.topic, fmt=args.format, endpoint=args.endpoint,
            key_column=args.key_column, value_column=args.value_column,
            timestamp_column=args.timestamp_column,
        )  # fmt: skip
        print(json.dumps(asdict(result)))
        return 0

    return run_job(body)


if __name__ == "__main__":
    sys.exit(main())

"""Archive: copy a topic's offset range into a Delta table; re-running it adds nothing twice.

    python -m jobs.archive --topic orders --table data/orders_archive \
        [--starting-offsets earliest|JSON] [--ending-offsets latest|JSON] [--include-headers]
    python -m jobs.archive --topic orders     (a topic created with --table delta)
    spark-submit jobs/archive.py ...     (same arguments)

A topic created with ``--table delta`` already is a Delta table: every tiered segment is
committed to the table at its tier directory as it is tiered. Archiving such a topic
copies nothing; the job names that table (``copied: false``), which holds the topic's
history up to its tiered end (the unsealed tail of each partition follows as segments
seal). ``--table`` may then be left out, or name the tier itself.

Idempotence: the table itself records what was archived. Before reading, the job looks
up the highest archived offset of every partition of the topic, starts each partition
just after it, and also drops any row at or below it, then appends in one Delta commit
(atomic: a crash leaves the table as it was). Running the same command again, or after
a crash, therefore archives each record exactly once.
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
from jobs._tier import delta_tier, same_location
from spark_stream.errors import DataSourceOptionError

__all__ = ["ArchiveResult", "archive", "archived_offsets", "main"]


@dataclass(frozen=True)
class ArchiveResult:
    """What an archive run appended."""

    topic: str
    table: str
    records_added: int
    seconds: float
    #: False when the topic's own Delta table over its tier is the archive (no copy).
    copied: bool = True


def _is_delta(spark: SparkSession, table: str) -> bool:
    from delta.tables import DeltaTable

    return bool(DeltaTable.isDeltaTable(spark, table))


def archived_offsets(spark: SparkSession, table: str, topic: str) -> dict[int, int]:
    """The highest archived offset per partition of ``topic`` (empty for a new table)."""
    if not _is_delta(spark, table):
        return {}
    rows = (
        spark.read.format("delta").load(table).where(F.col("topic") == topic)
        .groupBy("partition").agg(F.max("offset").alias("max_offset")).collect()
    )  # fmt: skip
    return {int(r["partition"]): int(r["max_offset"]) for r in rows}


def _resume_offsets(endpoint: str | None, topic: str, done: dict[int, int]) -> str:
    """``startingOffsets`` JSON: after the archived offset of each partition (or earliest),
    never past what a committed reader can see now."""
    client = client_for(endpoint)
    starts: dict[str, int] = {}
    for info in client.topic_partitions(topic):
        p = info.partition
        if p not in done:
            starts[str(p)] = -2
            continue
        offsets = client.fetch_offsets(topic, p)
        starts[str(p)] = max(min(done[p] + 1, offsets.hw), offsets.log_start)
    return json.dumps({topic: starts})


def archive(
    spark: SparkSession,
    topic: str,
    table: str | None,
    *,
    endpoint: str | None = None,
    starting_offsets: str = "earliest",
    ending_offsets: str = "latest",
    include_headers: bool = False,
    progress: bool = True,
) -> ArchiveResult:
    """Append ``topic``'s records in the range (minus those archived) to the Delta ``table``.

    A topic with a Delta table over its tier (``--table delta``) is not copied when
    ``table`` is None or that table: the result names it, with ``copied`` False.

    Raises:
        DataSourceOptionError: bad offsets, a topic that does not exist, or no ``table``
            for a topic without a Delta table over its tier.
    """
    started = time.monotonic()
    tier = delta_tier(spark, endpoint, topic)
    if tier is not None and (table is None or same_location(table, tier)):
        return ArchiveResult(topic, tier, 0, round(time.monotonic() - started, 3), copied=False)
    if table is None:
        raise DataSourceOptionError(
            f"archive: give --table; topic {topic!r} has no Delta table over its tier "
            "(a topic created with --table delta has one once a segment is tiered)"
        )
    done = archived_offsets(spark, table, topic)
    if starting_offsets.strip().lower() == "earliest" and done:
        starting_offsets = _resume_offsets(endpoint, topic, done)
    reader = (
        spark.read.format("fluvio").option("topic", topic)
        .option("startingOffsets", starting_offsets).option("endingOffsets", ending_offsets)
        .option("includeHeaders", str(include_headers).lower())
    )  # fmt: skip
    if endpoint:
        reader = reader.option("endpoint", endpoint)
    df: DataFrame = reader.load()
    if done:
        columns = df.columns
        archived = spark.createDataFrame(
            [(p, o) for p, o in sorted(done.items())], "partition int, archived_offset long"
        )
        df = (
            df.join(F.broadcast(archived), "partition", "left")
            .where(
                F.col("archived_offset").isNull() | (F.col("offset") > F.col("archived_offset"))
            )
            .select(*columns)
        )  # fmt: skip
    df = df.cache()
    try:
        added = df.count()
        if added:
            writer = df.write.format("delta").mode("append")
            if progress:
                with JobProgress(spark, "archive", extra=lambda: f"{added} records to {table}"):
                    writer.save(table)
            else:
                writer.save(table)
    finally:
        df.unpersist()
    return ArchiveResult(topic, table, added, round(time.monotonic() - started, 3))


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point: 0, 1 with ``error: <message>`` on stderr, 2 bad usage."""
    parser = argparse.ArgumentParser(
        prog="python -m jobs.archive", description="Archive a topic's offset range into Delta."
    )
    parser.add_argument("--topic", required=True)
    parser.add_argument(
        "--table",
        default=None,
        help="Delta table path or URL (optional for a topic created with --table delta)",
    )
    parser.add_argument("--endpoint", default=None, help="SC host:port (default: the profile)")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--ending-offsets", default="latest")
    parser.add_argument("--include-headers", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        spark = job_session("archive", delta=True)
        result = archive(
            spark, args.topic, args.table, endpoint=args.endpoint,
            starting_offsets=args.starting_offsets, ending_offsets=args.ending_offsets,
            include_headers=args.include_headers,
        )  # fmt: skip
        print(json.dumps(asdict(result)))
        return 0

    return run_job(body)


if __name__ == "__main__":
    sys.exit(main())

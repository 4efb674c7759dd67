"""Where a topic's history is already a Delta table: its tier, with ``table: delta``.

A topic created with ``--table delta`` has every tiered segment committed to a Delta table
at its tier directory (``spu.delta_hook``). The jobs use it instead of copying: archiving
such a topic names that table, and a backfill can read it as a source.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from datasource.clients import client_for
from spark_stream.errors import UnknownTopicError
from spark_stream.models.topic_table import TableFormat

__all__ = ["TIER_COLUMNS", "delta_tier", "same_location"]

#: Columns of the tier table that are the topic's own bookkeeping, not record data.
TIER_COLUMNS = ("offset", "partition")


def delta_tier(spark: SparkSession, endpoint: str | None, topic: str) -> str | None:
    """The Delta table over ``topic``'s tier, or None (no tier table, or none written yet).

    An unknown topic is None too: the data source reports it, in its own words, when the
    job reads the topic.
    """
    from delta.tables import DeltaTable

    try:
        spec = client_for(endpoint).admin().describe_topic(topic)[0].spec
    except UnknownTopicError:
        return None
    if spec.table is not TableFormat.DELTA or spec.tier is None:
        return None
    return spec.tier if DeltaTable.isDeltaTable(spark, spec.tier) else None


def same_location(a: str, b: str) -> bool:
    """Whether two table paths or URLs name the same place (``file://`` and trailing ``/``
    aside)."""
    return _plain(a) == _plain(b)


def _plain(url: str) -> str:
    return url.removeprefix("file://").rstrip("/")

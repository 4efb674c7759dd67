"""PySpark data source ``fluvio``: batch and streaming reads and writes of topics.

``pyspark_fluvio.DefaultSource`` (a top-level module) is this package's
``FluvioDataSource``, so Spark registers ``format("fluvio")`` by itself once the
project is installed; ``spark.dataSource.register(FluvioDataSource)`` also works.
Importing this package also makes a batch write with no ``mode(...)`` append
(``save_mode``), which Spark alone refuses.
"""

from __future__ import annotations

import importlib.util

# A client-only install (`pip install spark-stream`) has no pyspark: say what to install
# instead of failing deep inside an import chain.
if importlib.util.find_spec("pyspark") is None:
    raise ModuleNotFoundError(
        "the Spark data source needs pyspark: pip install 'spark-stream[spark]' "
        "(on Databricks the runtime's own pyspark serves)",
        name="pyspark",
    )

from datasource.lag import behind_latest_metrics, offsets_behind_latest
from datasource.options import (
    ReaderOptions,
    WriterOptions,
    parse_reader_options,
    parse_writer_options,
)
from datasource.partition import FluvioPartition, ReadSpec
from datasource.reader import FluvioBatchReader, FluvioStreamReader
from datasource.save_mode import install_default_append
from datasource.schema import arrow_schema, spark_schema
from datasource.source import FluvioDataSource
from datasource.writer import FluvioBatchWriter, FluvioCommitMessage, FluvioStreamWriter

__all__ = [
    "FluvioDataSource",
    "FluvioBatchReader",
    "FluvioStreamReader",
    "FluvioBatchWriter",
    "FluvioStreamWriter",
    "FluvioCommitMessage",
    "FluvioPartition",
    "ReadSpec",
    "ReaderOptions",
    "WriterOptions",
    "parse_reader_options",
    "parse_writer_options",
    "spark_schema",
    "arrow_schema",
    "offsets_behind_latest",
    "behind_latest_metrics",
]

install_default_append()

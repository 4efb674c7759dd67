"""The ``fluvio`` data source: what Spark instantiates for ``format("fluvio")``.

Spark creates a ``FluvioDataSource`` from the user's options (on the driver, and again
on executors and in its streaming runner), then asks it for a schema and a reader or a
writer. Options are parsed when the reader or writer is made, so bad options fail the
query at its start; construction itself does no I/O.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from datasource.connection_options import named_token
from datasource.options import (
    check_reader_option_names,
    named_endpoint,
    named_tls,
    named_topics,
    parse_reader_options,
    parse_writer_options,
)
from datasource.reader import FluvioBatchReader, FluvioStreamReader
from datasource.schema import spark_schema
from datasource.typed import typed_arrow_schema, typed_spark_schema, typed_user_schema
from datasource.writer import FluvioBatchWriter, FluvioStreamWriter
from spark_stream.client import resolve_endpoint
from spark_stream.errors import DataSourceOptionError
from spark_stream.models.topic_schema import TopicSchema

__all__ = ["FluvioDataSource"]


class FluvioDataSource(DataSource):
    """``spark.read``/``readStream``/``write``/``writeStream`` ``.format("fluvio")``."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "fluvio"

    def schema(self) -> StructType:
        """Kafka-like columns; ``headers`` with ``includeHeaders=true``. A typed topic
        reads as its user columns plus key, topic, partition, offset, timestamp, headers.

        Spark asks for the schema at ``load()``, so unknown option names fail there (and
        a typed topic's schema is looked up there, on the driver).
        """
        check_reader_option_names(self.options)
        raw = str(self.options.get("includeHeaders", "false")).strip().lower()
        if raw not in ("true", "false"):
            raise DataSourceOptionError(
                f"option 'includeHeaders' must be true or false, got {raw!r}"
            )
        typed = self._typed()
        return spark_schema(raw == "true") if typed is None else typed_spark_schema(typed)

    def _typed(self) -> TopicSchema | None:
        topics = named_topics(self.options)
        if not topics:
            return None
        endpoint = named_endpoint(self.options)
        return typed_user_schema(
            endpoint, topics, tls=named_tls(self.options), token=named_token(self.options)
        )

    def _output(self, schema: StructType) -> pa.Schema | None:
        """A typed read's Arrow output schema (None for untyped topics)."""
        if "value" in schema.fieldNames():
            return None
        return typed_arrow_schema(schema)

    def _check_schema(self, schema: StructType, include_headers: bool) -> None:
        typed = self._typed() if "value" not in schema.fieldNames() else None
        expected = spark_schema(include_headers) if typed is None else typed_spark_schema(typed)
        if schema != expected:
            raise DataSourceOptionError(
                "format('fluvio') has a fixed schema; do not pass .schema(...) "
                f"(expected {expected.simpleString()}, got {schema.simpleString()})"
            )

    def reader(self, schema: StructType) -> FluvioBatchReader:
        """A batch reader (``spark.read``)."""
        opts = parse_reader_options(self.options, "batch")
        self._check_schema(schema, opts.include_headers)
        return FluvioBatchReader(opts, self._output(schema))

    def streamReader(self, schema: StructType) -> FluvioStreamReader:
        """A streaming reader (``spark.readStream``)."""
        opts = parse_reader_options(self.options, "stream")
        self._check_schema(schema, opts.include_headers)
        return FluvioStreamReader(opts, self._output(schema))

    def writer(self, schema: StructType, overwrite: bool) -> FluvioBatchWriter:
        """A batch writer (``df.write``); topics are append-only, so no overwrite."""
        if overwrite:
            raise DataSourceOptionError(
                "mode('overwrite') is not supported: topics are append-only; use mode('append')"
            )
        opts = parse_writer_options(self.options)
        return FluvioBatchWriter(opts, schema, resolve_endpoint(opts.endpoint))

    def streamWriter(self, schema: StructType, overwrite: bool) -> FluvioStreamWriter:
        """The exactly-once streaming sink (``df.writeStream``)."""
        if overwrite:
            raise DataSourceOptionError(
                "outputMode('complete') is not supported: topics are append-only"
            )
        opts = parse_writer_options(self.options)
        return FluvioStreamWriter(opts, schema, resolve_endpoint(opts.endpoint))

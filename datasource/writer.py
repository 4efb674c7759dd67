"""Batch writer and streaming sink of ``format("fluvio")``, through Spark's Arrow writers.

Theory of operation (exactly once). Every write task produces with an *idempotent
producer* whose id is derived, not random: ``producer_id_for(query id, batch id, task
partition)`` for a streaming micro-batch, ``producer_id_for(write id, task partition)``
for a batch write (the write id is drawn once on the driver). A task retried, or a
micro-batch re-run after a crash and a restart from the checkpoint, sees the same input
rows in the same order, so it sends the same records under the same producer id and
the same per-partition sequence numbers; each partition leader drops what the earlier
attempt already appended. Records of a micro-batch therefore land once, however often
it runs. The driver's ``commit``/``abort`` run on a fresh writer and keep no state:
commit only reports, so committing a batch id twice is harmless.

The DataFrame's columns map to records: ``value`` (binary or string, required), and
optionally ``key``, ``partition``, ``timestamp``, ``headers``, and ``topic`` (the
``topic`` option, when set, wins over the column). A read of a topic can be written as it
is: its ``offset``/``timestampType`` columns, and its ``partition`` column unless
``preservePartitions=true``, are ignored (``sink_schema`` states the rules). Any other
column is an error naming it.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, StructField, StructType

from datasource.clients import client_for
from datasource.merge_schema import merge_topic_schema
from datasource.options import WriterOptions
from datasource.sink_schema import (
    SINK_COLUMNS,
    SOURCE_COLUMNS,
    SinkColumns,
    sink_columns,
    to_record_batch,
    typed_topic_refused,
)
from datasource.typed import to_typed_rows, typed_sink_columns, typed_user_schema
from spark_stream.client import TlsConfig, TopicProducer, producer_id_for
from spark_stream.client.profile import resolve_tls, resolve_token
from spark_stream.errors import SchemaMismatchError, SinkSchemaError
from spark_stream.models.topic_schema import TopicSchema

__all__ = [
    "FluvioCommitMessage",
    "FluvioBatchWriter",
    "FluvioStreamWriter",
    "QUERY_ID_PROPERTY",
    "BATCH_ID_PROPERTY",
    "write_task",
]

log = logging.getLogger(__name__)

QUERY_ID_PROPERTY = "sql.streaming.queryId"
"""Task local property Spark sets to the streaming query's id (stable across restarts)."""
BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""Task local property Spark sets to the micro-batch id."""


@dataclass(frozen=True)
class FluvioCommitMessage(WriterCommitMessage):
    """What one write task produced.

    Attributes:
        task: the Spark partition id of the task.
        producer_id: the idempotent producer id it wrote under.
        records: rows it sent (duplicates a leader dropped included).
        topics: topics it wrote to.
    """

    task: int
    producer_id: int
    records: int
    topics: tuple[str, ...]


def _task_identity() -> tuple[int, int, str | None, str | None]:
    """``(partition id, attempt, query id, batch id)`` of the running Spark task."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:  # called outside Spark (unit tests): one task, no query
        return 0, 0, None, None
    return (
        ctx.partitionId(),
        ctx.attemptNumber(),
        ctx.getLocalProperty(QUERY_ID_PROPERTY),
        ctx.getLocalProperty(BATCH_ID_PROPERTY),
    )


def write_task(
    batches: Iterator[pa.RecordBatch],
    opts: WriterOptions,
    endpoint: str,
    columns: SinkColumns,
    producer_id: int,
    task: int,
    typed: TopicSchema | None = None,
    tls: TlsConfig | None = None,
) -> FluvioCommitMessage:
    """Produce every row of one task with an idempotent producer, then flush.

    A fresh producer per task routes and cuts rows into frames from the data alone
    (key hash, a round robin that starts at 0, ``batchSize`` bytes per frame), so an
    identical re-run produces identical frames under identical sequences.

    Args:
        typed: the schema of the typed topic written to (its user columns are sent as
            they are); None for untyped topics.
        tls: TLS to the cluster, resolved on the driver; None: plaintext.

    Raises:
        SinkSchemaError: a null value or topic in the data.
        SchemaMismatchError: a value that does not fit the typed topic's column.
    """
    client = client_for(endpoint, tls=tls, token=opts.token)
    producers: dict[str, TopicProducer] = {}
    futures = []
    records = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            records += batch.num_rows
            for topic, rows in _by_topic(batch, opts, columns):
                producer = producers.get(topic)
                if producer is None:
                    producer = client.topic_producer(
                        topic,
                        idempotence=True,
                        producer_id=producer_id,
                        acks=opts.acks,
                        compression=opts.compression,
                        batch_size=opts.batch_size,
                    )
                    producers[topic] = producer
                    _check_untyped(producer, topic, typed, routed=opts.topic is None)
                if typed is None:
                    data = to_record_batch(rows, columns)
                else:
                    data = to_typed_rows(rows, typed, _record_columns(columns))
                futures.append(
                    producer.send_batch(
                        data,
                        key_column="key" if columns.key else None,
                        timestamp_column="timestamp" if columns.timestamp else None,
                        headers_column="headers",
                        partition_column="partition" if columns.partition else None,
                    )
                )
        for producer in producers.values():
            producer.flush()
        for future in futures:
            future.result()
    finally:
        for producer in producers.values():
            producer.close()
    return FluvioCommitMessage(task, producer_id, records, tuple(sorted(producers)))


def _check_untyped(
    producer: TopicProducer, topic: str, typed: TopicSchema | None, *, routed: bool
) -> None:
    """Refuse untyped records for a typed topic, saying what to write instead.

    Raises:
        SchemaMismatchError: ``topic`` is typed and the rows are untyped records.
    """
    schema = producer.topic_schema()
    if typed is None and schema is not None:
        names = [c.name for c in schema.columns]
        raise SchemaMismatchError(typed_topic_refused(topic, names, routed=routed))


def _record_columns(columns: SinkColumns) -> tuple[str, ...]:
    """The record columns a typed write sends along with the user columns."""
    used = {
        "key": columns.key,
        "timestamp": columns.timestamp,
        "headers": columns.headers,
        "partition": columns.partition,
    }
    return tuple(name for name, on in used.items() if on)


def _by_topic(
    batch: pa.RecordBatch, opts: WriterOptions, columns: SinkColumns
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Split a batch by target topic (vectorised); the ``topic`` option wins."""
    if opts.topic is not None:
        yield opts.topic, batch
        return
    topic_col = batch.column("topic")
    if topic_col.null_count:
        raise SinkSchemaError("column 'topic' has null values and no 'topic' option is set")
    for topic in pc.unique(topic_col).to_pylist():
        yield topic, batch.filter(pc.equal(topic_col, topic))


class _WriterBase:
    """Schema checking shared by the batch writer and the streaming sink."""

    def __init__(self, opts: WriterOptions, schema: StructType, endpoint: str) -> None:
        # The token is resolved here, on the driver: executors get it with the options.
        self.opts = opts = dataclasses.replace(opts, token=resolve_token(opts.token, endpoint))
        self.endpoint = endpoint
        # Resolved here, on the driver: executors get the files it names, not a profile.
        self.tls = resolve_tls(endpoint, opts.tls)
        # A DataFrame with a ``value`` column writes records (no typed topic has one):
        # only one without it asks the cluster whether the topic is typed.
        typed_rows = opts.topic is not None and "value" not in schema.fieldNames()
        topics = (opts.topic,) if typed_rows and opts.topic is not None else ()
        if opts.merge_schema and opts.topic is not None:
            # Once, on the driver, before any task writes (``merge_schema``).
            self.typed: TopicSchema | None = merge_topic_schema(
                endpoint, opts.topic, schema, tls=self.tls, token=opts.token
            )
        else:
            self.typed = typed_user_schema(endpoint, topics, tls=self.tls, token=opts.token)
        if self.typed is not None:
            assert opts.topic is not None
            typed_sink_columns(schema, self.typed, opts.topic)
            # The record columns follow the untyped rules; the user columns stand in
            # for ``value``.
            schema = StructType(
                [f for f in schema.fields if f.name in SINK_COLUMNS + SOURCE_COLUMNS]
                + [StructField("value", BinaryType(), False)]
            )
        self.columns = sink_columns(
            schema,
            topic_option=opts.topic is not None,
            preserve_partitions=opts.preserve_partitions,
        )


class FluvioBatchWriter(_WriterBase, DataSourceArrowWriter):
    """``df.write.format("fluvio")``: each task writes once, retries are deduplicated."""

    def __init__(self, opts: WriterOptions, schema: StructType, endpoint: str) -> None:
        super().__init__(opts, schema, endpoint)
        self.write_id = uuid.uuid4().hex  # drawn once on the driver, shared by all tasks

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FluvioCommitMessage:
        """Produce this task's rows (on an executor)."""
        task, _, _, _ = _task_identity()
        pid = producer_id_for("batch", self.write_id, task)
        return write_task(
            iterator, self.opts, self.endpoint, self.columns, pid, task, self.typed, self.tls
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Report what was written; the records are already in their topics."""
        total = sum(m.records for m in messages if isinstance(m, FluvioCommitMessage))
        log.info("fluvio batch write %s committed: %d records", self.write_id, total)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Topics are append-only: records of tasks that finished stay written."""
        done = sum(m.records for m in messages if isinstance(m, FluvioCommitMessage))
        log.warning(
            "fluvio batch write %s aborted; %d records of finished tasks remain in the topic",
            self.write_id,
            done,
        )


class FluvioStreamWriter(_WriterBase, DataSourceStreamArrowWriter):
    """``df.writeStream.format("fluvio")``: exactly once per micro-batch (see module doc)."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FluvioCommitMessage:
        """Produce this task's rows under the (query, batch, task) producer identity.

        Raises:
            SinkSchemaError: Spark did not tell the task its query or batch id.
        """
        task, _, query_id, batch_id = _task_identity()
        if query_id is None or batch_id is None:
            raise SinkSchemaError(
                "the fluvio streaming sink needs Spark's query and batch ids in the task "
                f"properties ({QUERY_ID_PROPERTY}, {BATCH_ID_PROPERTY})"
            )
        pid = producer_id_for(query_id, batch_id, task)
        return write_task(
            iterator, self.opts, self.endpoint, self.columns, pid, task, self.typed, self.tls
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Idempotent: the micro-batch's records are already durable; only report."""
        total = sum(m.records for m in messages if isinstance(m, FluvioCommitMessage))
        log.info("fluvio sink: micro-batch %d committed, %d records", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Keep nothing: the re-run of this batch id produces under the same identities,
        so whatever the failed attempt appended is deduplicated, not repeated."""
        log.warning("fluvio sink: micro-batch %d aborted; its re-run is deduplicated", batchId)

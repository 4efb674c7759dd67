"""``mergeSchema``: a write sets its topic's schema from the DataFrame's user columns.

Run once on the driver, when the writer is built, before any task writes (the tasks
then write the topic's new version like any typed write). The user columns are the
DataFrame's columns but the record ones (``key``, ``timestamp``, ``headers``,
``partition``) and what a read of a topic adds (``topic``, ``offset``); their Arrow
types are the ones Spark's Arrow writer sends (``to_arrow_schema``, UTC timestamps).

- An untyped topic that holds no record becomes typed: version 1 of the user columns.
  One that holds records is refused (its records have no columns): its leaders are
  asked for their log end offsets first, and the SC checks what the leaders reported.
- A typed topic gets the user columns it lacks appended, as the next version, by the
  admin API's ``update_topic_schema`` (so its evolution rules and messages apply: a new
  column must be nullable). The columns it has are checked as any typed write checks
  them, before the topic changes. A DataFrame with no new column changes nothing.

The JVM connector's ``SchemaMerge`` does the same with the same messages.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from datasource.clients import client_for
from datasource.typed import SINK_EXTRA, typed_sink_columns
from spark_stream.client import Fluvio, TlsConfig
from spark_stream.errors import InvalidConfigError, SinkSchemaError, UnknownTopicError
from spark_stream.models.topic_schema import TopicSchema, untyped_with_records

__all__ = ["user_columns", "merged_schema", "merge_topic_schema"]


def user_columns(df_schema: StructType) -> StructType:
    """The DataFrame's columns that a typed topic stores as user columns.

    Raises:
        SinkSchemaError: a ``value`` column (a DataFrame with one writes untyped records).
    """
    if "value" in df_schema.fieldNames():
        raise SinkSchemaError(
            "option 'mergeSchema' makes the DataFrame's columns the topic's; a 'value' "
            "column writes untyped records: drop the option, or write columns, not 'value'"
        )
    return StructType([f for f in df_schema.fields if f.name not in SINK_EXTRA])


def merged_schema(df_schema: StructType, current: TopicSchema | None) -> pa.Schema | None:
    """The user columns to set: the DataFrame's for an untyped topic, the topic's latest
    followed by the DataFrame's new ones for a typed topic (None: nothing new). Pure.

    Raises:
        SinkSchemaError: see ``user_columns``.
    """
    user = to_arrow_schema(user_columns(df_schema), timezone="UTC")
    if current is None:
        return user
    latest = current.arrow_schema
    new = [f for f in user if latest.get_field_index(f.name) < 0]
    return pa.schema([*latest, *new]) if new else None


def merge_topic_schema(
    endpoint: str | None,
    topic: str,
    df_schema: StructType,
    *,
    tls: TlsConfig | None = None,
    token: str | None = None,
) -> TopicSchema:
    """Set ``topic``'s schema from the DataFrame (see the module doc); its schema after.

    Raises:
        UnknownTopicError: no such topic.
        InvalidConfigError: an untyped topic that holds records, or a change the
            evolution rules refuse (the admin API's message).
        SchemaMismatchError: a column the typed topic has, of another type.
        SinkSchemaError: see ``user_columns``.
    """
    client = client_for(endpoint, tls=tls, token=token)
    found = client.admin().list_topics(topic)
    if not found:
        raise UnknownTopicError(f"topic {topic!r} does not exist")
    current = found[0].spec.topic_schema
    merged = merged_schema(df_schema, current)
    if current is not None:
        kept = StructType([f for f in df_schema.fields if f.name in current.arrow_schema.names])
        typed_sink_columns(kept, current, topic)  # before the topic changes
        if merged is None:
            return current
    elif _holds_records(client, topic):
        raise InvalidConfigError(untyped_with_records(topic))
    assert merged is not None
    updated = client.admin().update_topic_schema(topic, merged).spec.topic_schema
    assert updated is not None
    return updated


def _holds_records(client: Fluvio, topic: str) -> bool:
    """Whether any partition of ``topic`` ever took a record, as its leader says now."""
    partitions = client.topic_partitions(topic)
    return any(client.fetch_offsets(topic, p.partition).leo > 0 for p in partitions)

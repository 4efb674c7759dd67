"""Typed topics on a real cluster: create with a schema, produce tables, read columns, evolve."""

from __future__ import annotations

import json
import threading

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.errors import ConflictError, InvalidConfigError, SchemaMismatchError
from spark_stream.records import read_header
from tests.integration.helpers import make_topic
from tests.polling import wait_until

pytestmark = pytest.mark.integration

USER = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def read_all(fluvio: Fluvio, topic: str, partition: int = 0) -> pa.Table:
    return pa.Table.from_batches(list(fluvio.fetch_batches(topic, partition, 0)))


def test_typed_round_trip_through_the_python_client(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=2, replication=2, schema=USER)
    described = fluvio.admin().describe_topic(topic)[0].spec.topic_schema
    assert described is not None and described.version == 1
    assert described.arrow_schema.equals(USER)
    table = pa.table(
        {
            "name": ["a", None, "c", "d"],  # column order is the topic's, not the table's
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "key": ["k1", "k2", "k1", "k2"],
        }
    )
    producer = fluvio.topic_producer(topic, acks="all")
    assert sum(m.count for m in producer.send_batch(table).result(30)) == 4
    rows = []
    for part in range(2):
        got = read_all(fluvio, topic, part)
        assert got.schema.names == ["offset", "id", "name", "key", "timestamp", "headers"]
        assert got.schema.field("id").type == pa.int64()
        rows += got.select(["id", "name", "key"]).to_pylist()
        frames = list(fluvio.fetch_frames(topic, part, 0))
        assert {read_header(f).schema_version for f in frames} <= {1}
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": 1, "name": "a", "key": b"k1"},
        {"id": 2, "name": None, "key": b"k2"},
        {"id": 3, "name": "c", "key": b"k1"},
        {"id": 4, "name": "d", "key": b"k2"},
    ]
    consumer = fluvio.consumer(topic)
    records = list(consumer.stream(Offset.beginning(), stop_at_end=True))
    values = sorted((json.loads(r.value) for r in records), key=lambda v: v["id"])
    assert values[1] == {"id": 2, "name": None}
    assert [r.key for r in records if json.loads(r.value)["id"] == 3] == [b"k1"]


def test_the_client_refuses_a_mismatching_table_before_sending(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, schema=USER)
    producer = fluvio.topic_producer(topic)
    wrong_type = pa.table({"id": pa.array([1.5]), "name": ["x"]})
    with pytest.raises(SchemaMismatchError, match="column 'id' is double.*says int64"):
        producer.send_batch(wrong_type)
    with pytest.raises(SchemaMismatchError, match="column 'id' .*not null.* is missing"):
        producer.send_batch(pa.table({"name": ["x"]}))
    with pytest.raises(SchemaMismatchError, match="'extra' are not in the topic's"):
        producer.send_batch(pa.table({"id": [1], "name": ["x"], "extra": [True]}))
    with pytest.raises(SchemaMismatchError, match="column 'id' has 1 nulls"):
        producer.send_batch(pa.table({"id": pa.array([None, 1], pa.int64()), "name": ["x", "y"]}))
    with pytest.raises(SchemaMismatchError, match="is typed .*send_batch"):
        producer.send(None, b"untyped")
    producer.flush()
    assert fluvio.fetch_offsets(topic, 0).leo == 0  # nothing was sent
    producer.send_batch(pa.table({"id": [7]})).result(30)  # a missing nullable column: null
    assert read_all(fluvio, topic).select(["id", "name"]).to_pylist() == [{"id": 7, "name": None}]


def test_adding_a_nullable_column_reads_older_records_with_nulls(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, replication=2, schema=USER)
    admin = fluvio.admin()
    old = pa.table({"id": [1], "name": ["old"]})
    fluvio.topic_producer(topic, acks="all").send_batch(old).result(30)
    wider = USER.append(pa.field("score", pa.float64()))
    updated = admin.update_topic_schema(topic, wider).spec.topic_schema
    assert updated is not None and updated.version == 2 and updated.history == (2, 3)
    fresh = Fluvio.connect(fluvio.endpoint, timeout=20.0)  # metadata of version 2
    try:
        fresh.topic_producer(topic, acks="all").send_batch(
            pa.table({"id": [2], "name": ["new"], "score": [0.5]})
        ).result(30)
        got = read_all(fresh, topic)
        assert got.select(["id", "name", "score"]).to_pylist() == [
            {"id": 1, "name": "old", "score": None},
            {"id": 2, "name": "new", "score": 0.5},
        ]
        versions = [read_header(f).schema_version for f in fresh.fetch_frames(topic, 0, 0)]
        assert versions == [1, 2]
    finally:
        fresh.close()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (USER.append(pa.field("rank", pa.int32(), nullable=False)), "must be nullable"),
        (pa.schema([USER.field("id")]), "'name' .* is missing: columns can only be added"),
        (
            pa.schema([pa.field("id", pa.int32(), nullable=False), USER.field("name")]),
            "column 0 is 'id' \\(int32, not null\\), version 1 has 'id' \\(int64",
        ),
        (USER, "adds no column"),
    ],
)
def test_other_schema_changes_are_refused(fluvio: Fluvio, schema: pa.Schema, message: str) -> None:
    topic = make_topic(fluvio, schema=USER)
    with pytest.raises(InvalidConfigError, match=message):
        fluvio.admin().update_topic_schema(topic, schema)
    after = fluvio.admin().describe_topic(topic)[0].spec.topic_schema
    assert after is not None and after.version == 1


def test_an_empty_untyped_topic_becomes_typed_one_with_records_is_refused(
    fluvio: Fluvio,
) -> None:
    empty = make_topic(fluvio, partitions=2)
    typed = fluvio.admin().update_topic_schema(empty, USER).spec.topic_schema
    assert typed is not None and typed.version == 1 and typed.arrow_schema.equals(USER)
    table = pa.table({"id": pa.array([7], pa.int64()), "name": ["x"]})
    fluvio.topic_producer(empty, acks="all").send_batch(table).result(30)
    got = [r for p in range(2) for b in fluvio.fetch_batches(empty, p, 0) for r in b.to_pylist()]
    assert [(r["id"], r["name"]) for r in got] == [(7, "x")]

    used = make_topic(fluvio)
    fluvio.topic_producer(used, acks="all").send("k", "v").result(30)
    wait_until(
        lambda: fluvio.admin().list_partitions(used)[0].status.leo > 0,
        60,
        "the leader's report of the record",
    )
    with pytest.raises(InvalidConfigError, match="is untyped and holds records"):
        fluvio.admin().update_topic_schema(used, USER)
    assert fluvio.admin().describe_topic(used)[0].spec.topic_schema is None


def test_a_group_member_reads_typed_rows(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, schema=USER)
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", None]})
    fluvio.topic_producer(topic, acks="all").send_batch(rows).result(30)
    member = fluvio.group_consumer(topic, group=f"g-{topic}", auto_offset_reset="earliest")
    try:
        records = list(member.stream(True))
    finally:
        member.close()
    assert [json.loads(r.value) for r in records] == rows.to_pylist()
    assert {r.topic for r in records} == {topic}


def test_concurrent_schema_updates_from_one_version_never_both_apply(fluvio: Fluvio) -> None:
    """Two ``update-schema`` calls evolving the same version at once: one applies, the
    other fails (a ``ConflictError`` when both read version 1, the SC's compare-and-set
    on the topic's revision; an ``InvalidConfigError`` when it read the winner's version,
    whose column it would drop); the schema is the winner's, never a lost update."""
    topic = make_topic(fluvio, schema=USER)
    clients = [Fluvio.connect(fluvio.endpoint, timeout=20.0) for _ in range(2)]
    try:
        start = threading.Barrier(2)
        outcomes: dict[str, object] = {}

        def update(client: Fluvio, column: str) -> None:
            start.wait(timeout=30)
            try:
                client.admin().update_topic_schema(topic, USER.append(pa.field(column, pa.int8())))
                outcomes[column] = "applied"
            except (ConflictError, InvalidConfigError) as exc:
                outcomes[column] = exc

        threads = [
            threading.Thread(target=update, args=(c, name))
            for c, name in zip(clients, ["a", "b"], strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for client in clients:
            client.close()
    assert sorted(str(o) == "applied" for o in outcomes.values()) == [False, True], outcomes
    winner = next(c for c, o in outcomes.items() if o == "applied")
    after = fluvio.admin().describe_topic(topic)[0].spec.topic_schema
    assert after is not None and after.version == 2
    assert after.arrow_schema.names == ["id", "name", winner]

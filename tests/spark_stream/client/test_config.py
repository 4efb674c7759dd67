"""Producer and consumer options: defaults, parsing, typed errors, pickling."""

from __future__ import annotations

import pickle

import pytest

from spark_stream.client.config import (
    MAX_PRODUCER_ID,
    Acks,
    ConsumerConfig,
    Isolation,
    ProducerConfig,
    parse_acks,
    parse_isolation,
    producer_id_for,
)
from spark_stream.errors import InvalidConfigError


@pytest.mark.parametrize(
    ("text", "acks"),
    [
        ("none", Acks.NONE),
        ("0", Acks.NONE),
        ("leader", Acks.LEADER),
        (1, Acks.LEADER),
        ("ALL", Acks.ALL),
        (-1, Acks.ALL),
        (Acks.ALL, Acks.ALL),
    ],
)
def test_parse_acks(text: object, acks: Acks) -> None:
    assert parse_acks(text) is acks  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("committed", Isolation.COMMITTED),
        ("read_uncommitted", Isolation.UNCOMMITTED),
        ("Read-Committed", Isolation.COMMITTED),
    ],
)
def test_parse_isolation(text: str, iso: Isolation) -> None:
    assert parse_isolation(text) is iso


def test_bad_acks_and_isolation() -> None:
    with pytest.raises(InvalidConfigError, match="acks"):
        parse_acks("some")
    with pytest.raises(InvalidConfigError, match="isolation"):
        parse_isolation("dirty")


def test_producer_options() -> None:
    cfg = ProducerConfig.from_options(acks="all", compression="zstd", linger_ms=0)
    assert cfg.acks is Acks.ALL and cfg.compression == "zstd" and cfg.linger_ms == 0
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert cfg.with_options(batch_size=10).batch_size == 10


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"nope": 1}, "nope"),
        ({"compression": "gzip"}, "compression"),
        ({"batch_size": 0}, "batch_size"),
        ({"linger_ms": -1}, "linger_ms"),
        ({"partitioner": "x"}, "partitioner"),
        ({"producer_id": 5}, "producer_id"),
        ({"idempotence": True, "acks": "none"}, "idempotence"),
        ({"idempotence": True, "producer_id": 0}, "producer_id"),
        ({"max_in_flight": True}, "max_in_flight"),
    ],
)
def test_bad_producer_options_name_the_field(options: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field):
        ProducerConfig.from_options(**options)


@pytest.mark.parametrize(
    ("asked", "setting", "codec"),
    [
        (None, "any", "none"),
        ("lz4", "any", "lz4"),
        (None, "zstd", "zstd"),
        ("zstd", "zstd", "zstd"),
        (None, "none", "none"),
    ],
)
def test_the_codec_follows_the_topic_setting(asked: str | None, setting: str, codec: str) -> None:
    assert ProducerConfig(compression=asked).for_topic("t", setting).codec == codec  # type: ignore[arg-type]


@pytest.mark.parametrize(("asked", "setting"), [("lz4", "zstd"), ("zstd", "none")])
def test_a_codec_other_than_the_topic_setting_is_refused(asked: str, setting: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"topic 't' stores {setting} batches"):
        ProducerConfig(compression=asked).for_topic("t", setting)  # type: ignore[arg-type]


def test_consumer_options() -> None:
    cfg = ConsumerConfig.from_options(isolation="uncommitted", max_bytes=1024)
    assert cfg.isolation is Isolation.UNCOMMITTED
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    with pytest.raises(InvalidConfigError, match="window"):
        ConsumerConfig.from_options(window=0)


def test_producer_id_for_is_stable_and_in_range() -> None:
    a = producer_id_for("query-1", 7, 3)
    assert a == producer_id_for("query-1", 7, 3)
    assert a != producer_id_for("query-1", 7, 4)
    assert 0 < a <= MAX_PRODUCER_ID
    assert ProducerConfig(idempotence=True, producer_id=a).producer_id == a
    with pytest.raises(InvalidConfigError):
        producer_id_for()

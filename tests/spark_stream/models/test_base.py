"""Shared model machinery: names, error conversion, YAML dispatch, copies, pickling."""

from __future__ import annotations

import pickle

import pytest
from pydantic import ValidationError

from spark_stream.errors import InvalidConfigError
from spark_stream.models import (
    KINDS,
    ConsumerGroup,
    Metadata,
    Partition,
    PartitionSpec,
    Spu,
    SpuGroup,
    SpuGroupSpec,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicSpec,
    TopicStatus,
    config_error,
    load_yaml,
    object_class,
    object_from_dict,
)
from spark_stream.models.spu import SpuResolution


def _samples() -> list:
    topic = Topic.new("orders", TopicSpec(partitions=2, replication_factor=2))
    return [
        Spu.new("spu-1", SpuSpec(spu_id=1, rack="r1")),
        SpuGroup.new("main", SpuGroupSpec(replicas=3, min_id=10)),
        topic,
        Partition.new("orders", 1, PartitionSpec.for_replicas(topic.spec, [2, 1])),
        ConsumerGroup.new("billing"),
    ]


@pytest.mark.parametrize("obj", _samples(), ids=lambda o: o.kind)
def test_pickle_round_trip(obj) -> None:
    assert pickle.loads(pickle.dumps(obj)) == obj


@pytest.mark.parametrize("obj", _samples(), ids=lambda o: o.kind)
def test_yaml_round_trip_by_kind(obj) -> None:
    text = obj.to_yaml()
    assert text.startswith(f"kind: {obj.kind}\n")
    assert load_yaml(text) == obj


@pytest.mark.parametrize("obj", _samples(), ids=lambda o: o.kind)
def test_dict_round_trip_by_kind(obj) -> None:
    data = obj.to_dict()
    assert data == obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert object_from_dict(obj.kind, data) == obj


def test_kinds_registry() -> None:
    assert set(KINDS) == {"Spu", "SpuGroup", "Topic", "Partition", "ConsumerGroup"}
    assert object_class("Topic") is Topic
    with pytest.raises(InvalidConfigError, match="unknown kind 'Nope'"):
        object_class("Nope")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("spec: {}\n", "needs a 'kind'"),
        ("kind: Gizmo\nspec: {}\n", "unknown kind 'Gizmo'"),
        ("- a\n- b\n", "expected a YAML mapping"),
        ("kind: [unclosed\n", "not valid YAML"),
        ("kind: Topic\nmetadata: {name: x}\nspec: {partitions: -1}\n", "spec.partitions"),
    ],
)
def test_load_yaml_rejects(text: str, match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        load_yaml(text)


def test_kind_mismatch_is_rejected() -> None:
    data = {**_samples()[0].to_dict(), "kind": "Topic"}
    with pytest.raises(InvalidConfigError, match="expected 'Spu'"):
        Spu.from_dict(data)


@pytest.mark.parametrize("name", ["a", "orders", "a-b-c", "0abc", "x" * 63])
def test_valid_names(name: str) -> None:
    assert Metadata(name=name).name == name


@pytest.mark.parametrize("name", ["", "A", "-a", "a-", "a_b", "a.b", "a b", "ü", "x" * 254])
def test_invalid_names(name: str) -> None:
    with pytest.raises(InvalidConfigError, match="metadata.name"):
        Topic.from_dict({"metadata": {"name": name}, "spec": {}})


def test_topic_name_is_a_dns_label() -> None:
    with pytest.raises(InvalidConfigError, match="longer than 63"):
        Topic.new("x" * 64, TopicSpec())


def test_models_are_frozen_and_copies_update() -> None:
    spu = Spu.new("spu-1", SpuSpec(spu_id=1))
    with pytest.raises(ValidationError):
        spu.spec = SpuSpec(spu_id=2)  # type: ignore[misc]
    online = spu.with_status(SpuStatus(resolution=SpuResolution.ONLINE))
    assert online.status.is_online and not spu.status.is_online
    moved = spu.with_spec(SpuSpec(spu_id=2)).with_revision(7)
    assert (moved.spec.spu_id, moved.revision, moved.name) == (2, 7, "spu-1")
    assert (spu.spec.spu_id, spu.revision) == (1, 0)


def test_config_error_names_every_field() -> None:
    with pytest.raises(ValidationError) as info:
        TopicSpec.model_validate({"partitions": 0, "bogus": 1})
    err = config_error(info.value, "Topic")
    assert isinstance(err, InvalidConfigError)
    assert str(err).startswith("invalid Topic: ")
    assert "partitions: " in str(err) and "bogus: Extra inputs" in str(err)


def test_snake_case_and_camel_case_inputs_agree() -> None:
    camel = TopicStatus.from_dict({"resolution": "Pending", "replicaMap": {0: [1]}})
    snake = TopicStatus.from_dict({"resolution": "Pending", "replica_map": {0: [1]}})
    assert camel == snake

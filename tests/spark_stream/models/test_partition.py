"""Partition model: naming, parent link, the seed's YAML, LRS, rejected specs."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.models import (
    Metadata,
    ObjectRef,
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    TopicSpec,
    parse_partition_name,
    partition_name,
)

SEED = """\
spec:
  initialLeader: 101
  replicas: [101, 102]
status:
  leader: 101
  lrs: [101, 102]
"""


def test_seed_yaml_parses_and_round_trips() -> None:
    part = Partition.from_yaml(SEED, name="orders-0")
    assert part.spec.initial_leader == 101 and part.spec.replicas == (101, 102)
    assert part.spec.followers == (102,)
    assert part.status.leader == 101
    assert [r.spu_id for r in part.status.lrs] == [101, 102]
    assert part.status.replica(102) is not None and part.status.replica(103) is None
    assert part.metadata.parent == ObjectRef(kind="Topic", name="orders")
    assert (part.topic, part.index) == ("orders", 0)
    text = part.to_yaml()
    assert "initialLeader: 101" in text and "spuId: 102" in text
    assert Partition.from_yaml(text) == part


@pytest.mark.parametrize(
    ("topic", "index"), [("orders", 0), ("a-1", 12), ("x-0", 3), ("9", 99_999)]
)
def test_name_round_trip(topic: str, index: int) -> None:
    assert parse_partition_name(partition_name(topic, index)) == (topic, index)


@pytest.mark.parametrize(
    "name", ["orders", "orders-", "-1", "orders-01", "orders--1", "Orders-1", "t-100000"]
)
def test_bad_partition_names(name: str) -> None:
    with pytest.raises(ValueError):
        parse_partition_name(name)
    with pytest.raises(InvalidConfigError):
        Partition.from_dict(
            {"metadata": {"name": name}, "spec": {"initialLeader": 1, "replicas": [1]}}
        )


def test_parent_must_match_the_name() -> None:
    meta = {"name": "orders-1", "parent": {"kind": "Topic", "name": "other"}}
    with pytest.raises(InvalidConfigError, match="parent"):
        Partition.from_dict({"metadata": meta, "spec": {"initialLeader": 1, "replicas": [1]}})
    bare = Metadata(name="orders-1")
    part = Partition(metadata=bare, spec=PartitionSpec(initial_leader=1, replicas=(1,)))
    assert part.metadata.parent == ObjectRef(kind="Topic", name="orders")


def test_spec_copies_topic_settings() -> None:
    topic = TopicSpec(
        partitions=2,
        replication_factor=2,
        retention_secs=60,
        segment_size=4096,
        min_in_sync_replicas=2,
        unclean_leader_election=True,
    )
    spec = PartitionSpec.for_replicas(topic, [5, 6])
    assert (spec.initial_leader, spec.replicas) == (5, (5, 6))
    assert spec.settings() == topic.settings()
    part = Partition.new("orders", 1, spec)
    assert part.name == "orders-1" and part.status.resolution is PartitionResolution.INIT


def test_status_defaults_and_full_lrs() -> None:
    status = PartitionStatus()
    assert (status.leader, status.leo, status.hw, status.log_start_offset) == (None, -1, -1, -1)
    full = PartitionStatus.from_dict(
        {
            "resolution": "Online",
            "leader": 1,
            "leo": 10,
            "hw": 8,
            "logStartOffset": 0,
            "lrs": [
                {"spuId": 1, "leo": 10, "hw": 8},
                {"spuId": 2, "leo": 8, "hw": 8, "inSync": False},
            ],
        }
    )
    assert full.replica(2) is not None and full.replica(2).in_sync is False
    assert PartitionStatus.from_dict(full.to_dict()) == full


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": [1]}, "spec.initialLeader"),
        ({"initialLeader": 1}, "spec.replicas"),
        ({"initialLeader": 1, "replicas": []}, "spec.replicas"),
        ({"initialLeader": 1, "replicas": [1, 1]}, "spec.replicas"),
        ({"initialLeader": 3, "replicas": [1, 2]}, "initialLeader 3 is not in replicas"),
        ({"initialLeader": 1, "replicas": [1], "segmentSize": 0}, "spec.segmentSize"),
        ({"initialLeader": 1, "replicas": [1], "leader": 1}, "spec.leader"),
    ],
)
def test_invalid_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field.replace(".", r"\.")):
        Partition.from_dict({"metadata": {"name": "t-0"}, "spec": spec})


@pytest.mark.parametrize(
    ("status", "field"),
    [
        ({"resolution": "Broken"}, "status.resolution"),
        ({"leader": -1}, "status.leader"),
        ({"hw": -2}, "status.hw"),
        ({"lrs": [{"leo": 3}]}, "status.lrs.0.spuId"),
        ({"lrs": ["x"]}, "status.lrs.0"),
    ],
)
def test_invalid_status_names_the_field(status: dict, field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field.replace(".", r"\.")):
        Partition.from_dict(
            {
                "metadata": {"name": "t-0"},
                "spec": {"initialLeader": 1, "replicas": [1]},
                "status": status,
            }
        )

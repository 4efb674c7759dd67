"""Topic model: the seed's YAML, manual assignment, settings, rejected specs."""

from __future__ import annotations

import msgpack
import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.models import Compression, Topic, TopicResolution, TopicSpec, TopicStatus

SEED = """\
spec:
  partitions: 6
  replicationFactor: 3
status:
  resolution: Provisioned
  replicaMap:
    - 0: [0, 1, 2]
    - 1: [1, 2, 0]
    - 2: [2, 1, 0]
    - 3: [0, 1, 2]
    - 4: [1, 2, 0]
    - 5: [2, 1, 0]
"""


def test_seed_yaml_parses_and_round_trips() -> None:
    topic = Topic.from_yaml(SEED, name="orders")
    assert (topic.spec.partitions, topic.spec.replication_factor) == (6, 3)
    assert not topic.spec.is_manual
    assert topic.status.resolution is TopicResolution.PROVISIONED
    assert topic.status.replica_map[4] == (1, 2, 0)
    assert sorted(topic.status.replica_map) == list(range(6))
    text = topic.to_yaml()
    assert "replicationFactor: 3" in text and "replicaMap:" in text
    assert Topic.from_yaml(text) == topic


def test_msgpack_round_trip() -> None:
    topic = Topic.from_yaml(SEED, name="orders")
    wire = msgpack.packb(topic.to_dict())
    assert Topic.from_dict(msgpack.unpackb(wire)) == topic


def test_defaults() -> None:
    spec = TopicSpec()
    assert (spec.partitions, spec.replication_factor) == (1, 1)
    assert spec.compression is Compression.ANY
    assert spec.min_in_sync_replicas == 1 and spec.unclean_leader_election is False
    assert TopicStatus().resolution is TopicResolution.INIT


def test_every_seed_resolution_parses() -> None:
    names = ["Init", "Pending", "InsufficientResources", "InvalidConfig", "Provisioned"]
    assert [r.value for r in TopicResolution] == names
    for name in names:
        assert TopicStatus.from_dict({"resolution": name}).resolution.value == name


def test_manual_assignment_implies_counts() -> None:
    spec = TopicSpec.from_dict(
        {
            "replicaAssignment": [
                {"partition": 1, "replicas": [2, 3]},
                {"partition": 0, "replicas": [3, 2]},
            ]
        }
    )
    assert spec.is_manual
    assert (spec.partitions, spec.replication_factor) == (2, 2)
    assert spec.assignment_map() == {0: (3, 2), 1: (2, 3)}


def test_settings_carry_retention_and_segments() -> None:
    spec = TopicSpec.from_dict(
        {
            "partitions": 3,
            "replicationFactor": 2,
            "retentionSecs": 3600,
            "maxPartitionSize": 10**9,
            "segmentSize": 2**20,
            "compression": "ZSTD",
            "minInSyncReplicas": 2,
            "uncleanLeaderElection": True,
        }
    )
    assert spec.settings() == {
        "retention_secs": 3600,
        "local_retention_secs": None,
        "tier": None,  # untiered unless the SC has a tier root (sc.topic_tier)
        "max_partition_size": 10**9,
        "segment_size": 2**20,
        "compression": Compression.ZSTD,
        "min_in_sync_replicas": 2,
        "unclean_leader_election": True,
        "topic_schema": None,  # an untyped topic's partitions carry no schema
        "table": None,  # no Delta table
    }


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"partitions": 0}, "spec.partitions"),
        ({"partitions": -3}, "spec.partitions"),
        ({"partitions": 10**6}, "spec.partitions"),
        ({"partitions": "six"}, "spec.partitions"),
        ({"replicationFactor": 0}, "spec.replicationFactor"),
        ({"retentionSecs": 0}, "spec.retentionSecs"),
        ({"maxPartitionSize": -1}, "spec.maxPartitionSize"),
        ({"segmentSize": 0}, "spec.segmentSize"),
        ({"segmentSize": 1023}, "spec.segmentSize: 1023 bytes is outside"),
        ({"segmentSize": 1 << 31}, "spec.segmentSize"),
        ({"compression": "gzip"}, "spec.compression"),
        ({"minInSyncReplicas": 0}, "spec.minInSyncReplicas"),
        ({"replicationFactor": 2, "minInSyncReplicas": 3}, "minInSyncReplicas"),
        ({"shards": 3}, "spec.shards"),
        ({"replicaAssignment": []}, "replicaAssignment"),
        ({"replicaAssignment": [{"partition": 1, "replicas": [1]}]}, "replicaAssignment"),
        ({"replicaAssignment": [{"partition": 0, "replicas": [1, 1]}]}, "replicas"),
        ({"replicaAssignment": [{"partition": 0, "replicas": []}]}, "replicas"),
        ({"replicaAssignment": [{"partition": 0, "replicas": [-1]}]}, "replicas"),
        (
            {
                "replicaAssignment": [
                    {"partition": 0, "replicas": [1, 2]},
                    {"partition": 1, "replicas": [1]},
                ]
            },
            "replicaAssignment",
        ),
        ({"partitions": 3, "replicaAssignment": [{"partition": 0, "replicas": [1]}]}, "partitions"),
    ],
)
def test_invalid_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field.replace(".", r"\.")):
        Topic.from_dict({"metadata": {"name": "t"}, "spec": spec})


@pytest.mark.parametrize(
    ("status", "field"),
    [
        ({"resolution": "Invalid"}, "status.resolution"),
        ({"replicaMap": [{0: [1]}, {0: [2]}]}, "status.replicaMap"),
        ({"replicaMap": [[0, 1]]}, "status.replicaMap"),
        ({"replicaMap": {"zero": [1]}}, "status.replicaMap"),
    ],
)
def test_invalid_status_names_the_field(status: dict, field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field.replace(".", r"\.")):
        Topic.from_dict({"metadata": {"name": "t"}, "spec": {}, "status": status})


def test_a_tier_and_a_local_retention_reach_the_partitions() -> None:
    spec = TopicSpec.from_dict(
        {"tier": "s3://bucket/tier/t", "retentionSecs": 86400, "localRetentionSecs": 3600}
    )
    settings = spec.settings()
    assert (settings["tier"], settings["local_retention_secs"]) == ("s3://bucket/tier/t", 3600)
    assert spec.to_dict()["tier"] == "s3://bucket/tier/t"
    with pytest.raises(InvalidConfigError, match="tier"):
        TopicSpec.from_dict({"tier": " /tmp/x"})
    with pytest.raises(InvalidConfigError, match="localRetentionSecs"):
        TopicSpec.from_dict({"tier": "/tmp/x", "localRetentionSecs": 0})

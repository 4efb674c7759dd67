"""The generic KV actions: kinds checked against the registry, keys, log forms."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sc.actions import KvCreate, KvDelete, KvUpdateSpec, KvUpdateStatus
from spark_stream.errors import InvalidConfigError
from spark_stream.models import (
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    ReplicaStatus,
    Topic,
    TopicResolution,
    TopicSpec,
    TopicStatus,
)

TOPIC = Topic.new("t", TopicSpec(partitions=1)).with_revision(7)
PART = Partition.new("t", 0, PartitionSpec(initial_leader=1, replicas=(1, 2)))


def test_a_create_names_its_object() -> None:
    action = KvCreate(PART)
    assert (action.kind, action.name) == ("Partition", "t-0")


def test_of_writes_against_the_revision_read() -> None:
    status = TopicStatus(resolution=TopicResolution.PENDING)
    assert KvUpdateStatus.of(TOPIC, status) == KvUpdateStatus("Topic", "t", status, 7)
    spec = TopicSpec(partitions=2)
    assert KvUpdateSpec.of(TOPIC, spec) == KvUpdateSpec("Topic", "t", spec, 7)


@pytest.mark.parametrize(
    "build",
    [
        lambda: KvUpdateStatus("Topics", "t", TopicStatus()),
        lambda: KvUpdateSpec("Nope", "t", TopicSpec(partitions=1), 1),
        lambda: KvDelete("topic", "t"),
    ],
    ids=["status", "spec", "delete"],
)
def test_an_unregistered_kind_is_refused_when_the_action_is_built(
    build: Callable[[], object],
) -> None:
    with pytest.raises(InvalidConfigError, match="unknown kind"):
        build()


def test_log_forms_name_the_object_and_the_status_scalars_only() -> None:
    lrs = (ReplicaStatus(spu_id=1, leo=5), ReplicaStatus(spu_id=2, leo=3))
    status = PartitionStatus(resolution=PartitionResolution.ONLINE, leader=1, lrs=lrs, leo=5)
    text = str(KvUpdateStatus("Partition", "t-0", status, 3))
    assert text.startswith("KvUpdateStatus(Partition t-0 -> resolution=Online leader=1")
    assert "leo=5" in text and "lrs" not in text and "spuId" not in text
    assert str(KvCreate(PART)) == "KvCreate(Partition t-0)"
    assert str(KvDelete("Spu", "spu-1")) == "KvDelete(Spu spu-1)"
    assert str(KvUpdateSpec("Topic", "t", TopicSpec(partitions=2), 7)) == "KvUpdateSpec(Topic t @7)"

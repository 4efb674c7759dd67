"""The SC's under-replicated count: a table of partitions as leaders report them."""

from __future__ import annotations

import pytest

from sc.metrics import under_replicated
from spark_stream.models import Partition, PartitionSpec, PartitionStatus, ReplicaStatus


def _partition(replicas: tuple[int, ...], in_sync: tuple[bool, ...]) -> Partition:
    lrs = tuple(
        ReplicaStatus(spu_id=spu, leo=10, hw=10, in_sync=ok)
        for spu, ok in zip(replicas, in_sync, strict=False)
    )
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
    return Partition.build("t-0", spec, PartitionStatus(lrs=lrs))


@pytest.mark.parametrize(
    ("replicas", "in_sync", "counted"),
    [
        ((1,), (True,), 0),
        ((1, 2, 3), (True, True, True), 0),
        ((1, 2, 3), (True, True, False), 1),  # a follower out of sync
        ((1, 2, 3), (True, True), 1),  # a follower the leader does not report
        ((1, 2), (), 0),  # no live status yet: not counted (the leader has not reported)
    ],
)
def test_under_replicated(
    replicas: tuple[int, ...], in_sync: tuple[bool, ...], counted: int
) -> None:
    assert under_replicated([_partition(replicas, in_sync)]) == counted

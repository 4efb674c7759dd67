"""``sc.isr``: which in-sync removals a report makes that the store does not record yet."""

from __future__ import annotations

import pytest

from sc.isr import in_sync_ids, unrecorded_removals
from spark_stream.models import PartitionStatus, ReplicaStatus


def _status(in_sync: set[int], replicas: tuple[int, ...] = (1, 2, 3)) -> PartitionStatus:
    lrs = tuple(ReplicaStatus(spu_id=spu, in_sync=spu in in_sync) for spu in replicas)
    return PartitionStatus(leader=1, lrs=lrs)


@pytest.mark.parametrize(
    ("stored", "reported", "removals"),
    [
        # A shrink the store does not hold yet: the dropped follower.
        (_status({1, 2, 3}), _status({1, 2}), {3}),
        (_status({1, 2, 3}), _status({1}), {2, 3}),
        # Recorded: the store already lists the smaller set.
        (_status({1, 2}), _status({1, 2}), set()),
        # A growth or an unchanged set needs nothing recorded first.
        (_status({1}), _status({1, 2, 3}), set()),
        (_status({1, 2, 3}), _status({1, 2, 3}), set()),
        # The store never heard from the leader (no live status yet).
        (PartitionStatus(), _status({1}), set()),
        # A partition the store no longer has.
        (None, _status({1}), set()),
        # Only what the store still lists in sync counts (3 was out already).
        (_status({1, 2}), _status({1}), {2}),
    ],
)
def test_unrecorded_removals(
    stored: PartitionStatus | None, reported: PartitionStatus, removals: set[int]
) -> None:
    assert unrecorded_removals(stored, reported) == removals


def test_in_sync_ids_reads_the_live_replica_list() -> None:
    assert in_sync_ids(_status({1, 3})) == {1, 3}
    assert in_sync_ids(PartitionStatus()) == frozenset()

"""The leader's live status: built from plain inputs, the same object while unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

from spark_stream.models import PartitionSpec
from spark_stream.protocol.control import Replica
from spu.live_status import LastStatus, StatusInputs, build_status, status_inputs
from spu.replication import FollowerProgress
from spu.storage.scrub import Damage

LEADER, F1, F2 = 1, 2, 3
REPLICA = Replica(
    "orders-0", LEADER, PartitionSpec(initial_leader=LEADER, replicas=(LEADER, F1, F2)), 1, "uid", 4
)


def inputs(replica: Replica = REPLICA, **changes: Any) -> StatusInputs:
    """The inputs of a leader at LEO 7, HW 5, F1 in sync at 6, F2 offline."""
    base: dict[str, Any] = {
        "hw": 5,
        "leo": 7,
        "reported": frozenset({LEADER, F1}),
        "damage": None,
        "progress": {F1: FollowerProgress(6, 10, 10, 7), F2: None},
        "repairs": {},
        "log_start_offset": 0,
        "size": 700,
        "tier": None,
    }
    return status_inputs(LEADER, replica, **(base | changes))


def test_the_status_lists_each_replica_as_the_leader_sees_it() -> None:
    status = build_status(inputs(repairs={F1: 3})).status
    assert (status.leader, status.leader_epoch, status.leo, status.hw, status.size) == (
        LEADER,
        4,
        7,
        5,
        700,
    )
    rows = {r.spu_id: (r.leo, r.hw, r.in_sync, r.damaged, r.repair) for r in status.lrs}
    assert rows == {
        LEADER: (7, 5, True, False, None),
        F1: (6, 5, True, False, "repaired from offset 3"),
        F2: (-1, -1, False, False, None),  # offline: no progress
    }


def test_a_damaged_leader_reports_itself_out_of_sync() -> None:
    damage = Damage(segment=0, offset=2, end_offset=5, position=128, reason="crc")
    (own,) = [r for r in build_status(inputs(damage=damage)).status.lrs if r.spu_id == LEADER]
    assert own.damaged and not own.in_sync and own.repair and "crc" in own.repair


def test_the_last_status_is_reused_until_an_input_changes() -> None:
    last = LastStatus()
    first = last.get(inputs())
    # a newer report at the same LEO changes only times: the same object
    same = last.get(inputs(progress={F1: FollowerProgress(6, 99, 99, 7), F2: None}))
    assert same is first
    for change in (
        {"hw": 6},
        {"leo": 8},
        {"reported": frozenset({LEADER})},
        {"progress": {F1: FollowerProgress(7, 10, 10, 7), F2: None}},
        {"size": 800},
        {"tier": "tiered to 5"},
        {"log_start_offset": 2},
    ):
        fresh = last.get(inputs(**change))
        assert fresh is not first and fresh == build_status(inputs(**change))
        assert last.get(inputs(**change)) is fresh
    moved = dataclasses.replace(REPLICA, leader_epoch=5)
    assert last.get(inputs(moved)).status.leader_epoch == 5

"""Preferred-leader planning: one row per rule of ``sc.controllers.partition.preferred``."""

from __future__ import annotations

import pytest

from sc.actions import CmLeaderChange, KvUpdateStatus
from sc.controllers import ElectPreferred
from sc.controllers.partition import reduce
from sc.controllers.partition.preferred import imbalance, is_movable, plan_preferred
from sc.local_store import LocalStore
from spark_stream.models import Partition, PartitionResolution
from tests.sc.controllers.helpers import OFFLINE, make_partition, make_spu

P = PartitionResolution
ALL = frozenset({1, 2, 3})


def _away(
    index: int,
    replicas: tuple[int, ...] = (1, 2, 3),
    *,
    leader: int = 2,
    topic: str = "t",
    pref_in_sync: bool = True,
    pref_damaged: bool = False,
    resolution: PartitionResolution = P.ONLINE,
) -> Partition:
    """A partition led by ``leader``; its preferred replica's standing as given."""
    p = make_partition(
        topic,
        index,
        replicas,
        leader=leader,
        resolution=resolution,
        lrs=[(replicas[0], 10, pref_in_sync), *((s, 10, True) for s in replicas[1:])],
    )
    if pref_damaged:
        lrs = tuple(r.model_copy(update={"damaged": r.spu_id == replicas[0]}) for r in p.status.lrs)
        p = p.with_status(p.status.model_copy(update={"lrs": lrs}))
    return p


HOME = make_partition("t", 9, (1, 2, 3), lrs=[(1, 10, True), (2, 10, True), (3, 10, True)])

MOVABLE_ROWS: list[tuple[str, Partition, frozenset[int], bool]] = [
    ("led elsewhere, preferred online and in sync", _away(0), ALL, True),
    ("already led by its preferred replica", HOME, ALL, False),
    ("preferred replica offline", _away(0), frozenset({2, 3}), False),
    ("preferred replica out of sync", _away(0, pref_in_sync=False), ALL, False),
    ("preferred replica damaged", _away(0, pref_damaged=True), ALL, False),
    ("partition Offline", _away(0, resolution=P.OFFLINE), ALL, False),
    ("preferred replica never reported: not in sync",
     make_partition("t", 0, (1, 2, 3), leader=2, lrs=[(2, 10, True), (3, 10, True)]), ALL, False),
    ("leader never reported: every replica counts in sync",
     make_partition("t", 0, (1, 2, 3), leader=2), ALL, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("partition", "online", "expected"),
    [r[1:] for r in MOVABLE_ROWS],
    ids=[r[0] for r in MOVABLE_ROWS],
)
def test_is_movable(partition: Partition, online: frozenset[int], expected: bool) -> None:
    assert is_movable(partition, online) is expected


def test_imbalance_is_the_share_of_preferred_partitions_not_led() -> None:
    partitions = [
        _away(0),
        _away(1),
        HOME,
        _away(2, (2, 1, 3), leader=1),
        _away(3, (3, 1, 2), leader=3),
    ]
    assert imbalance(partitions) == {1: 2 / 3, 2: 1.0, 3: 0.0}


# Ten partitions preferring SPU 1, one of them led elsewhere: SPU 1 at 10% imbalance.
TEN = [make_partition("t", i, (1, 2, 3), lrs=[(1, 10, True), (2, 10, True), (3, 10, True)])
       for i in range(10, 19)]  # fmt: skip

PLAN_ROWS: list[tuple[str, list[Partition], dict[str, int | float | str], list[str]]] = [
    ("everything movable moves, in name order", [_away(1), HOME, _away(0)], {}, ["t-0", "t-1"]),
    ("bounded by the limit", [_away(i) for i in range(5)], {"limit": 2}, ["t-0", "t-1"]),
    ("limit 0 moves nothing", [_away(0)], {"limit": 0}, []),
    ("only the asked topic", [_away(0, topic="a"), _away(0, topic="b")], {"topic": "b"}, ["b-0"]),
    ("unknown topic: nothing", [_away(0)], {"topic": "nope"}, []),
    ("imbalance at the threshold: no move", [*TEN, _away(0)], {"imbalance_pct": 10.0}, []),
    ("imbalance above the threshold: moves", [*TEN, _away(0), _away(1)],
     {"imbalance_pct": 10.0}, ["t-0", "t-1"]),
    ("threshold per SPU: only the unbalanced SPU's partitions",
     [*TEN, _away(0), _away(1, (2, 1, 3), leader=1)], {"imbalance_pct": 10.0}, ["t-1"]),
    ("not movable ones are left out", [_away(0, pref_in_sync=False), _away(1)], {}, ["t-1"]),
    ("partitions counted outside the topic do not dilute it",
     [*TEN, _away(0, topic="u")], {"imbalance_pct": 10.0, "topic": "u"}, ["u-0"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("partitions", "options", "expected"),
    [r[1:] for r in PLAN_ROWS],
    ids=[r[0] for r in PLAN_ROWS],
)
def test_plan_preferred(
    partitions: list[Partition], options: dict[str, int | float | str], expected: list[str]
) -> None:
    topic = options.get("topic")
    planned = plan_preferred(
        partitions,
        ALL,
        limit=int(options.get("limit", 100)),
        imbalance_pct=float(options.get("imbalance_pct", 0.0)),
        topic=None if topic is None else str(topic),
    )
    assert [p.name for p in planned] == expected


def test_reducer_elects_the_preferred_replica_at_the_next_epoch() -> None:
    away = _away(0)
    away = away.with_status(away.status.model_copy(update={"leader_epoch": 4}))
    store = LocalStore.of([make_spu(1), make_spu(2), make_spu(3), away, HOME])
    actions = reduce(store, ElectPreferred(limit=10))
    status = away.status.model_copy(update={"leader": 1, "leader_epoch": 5, "reason": None})
    assert actions == [
        KvUpdateStatus.of(away, status),
        CmLeaderChange(away.name, 1, away.spec.replicas, 5),
    ]


def test_reducer_moves_nothing_while_the_preferred_spu_is_offline() -> None:
    store = LocalStore.of([make_spu(1, OFFLINE), make_spu(2), make_spu(3), _away(0)])
    assert reduce(store, ElectPreferred(limit=10)) == []

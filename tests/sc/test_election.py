"""Leader election: one row per rule of the clean/unclean election."""

from __future__ import annotations

import pytest

from sc.election import ReplicaStanding, elect_leader, is_eligible


def _st(spu: int, leo: int, in_sync: bool = True, damaged: bool = False) -> ReplicaStanding:
    return ReplicaStanding(spu=spu, leo=leo, in_sync=in_sync, damaged=damaged)


REPLICAS = (1, 2, 3)

ELECTIONS = [
    # (case, standings, online, unclean, exclude, expected)
    ("highest LEO among in-sync online wins",
     [_st(1, 10), _st(2, 8), _st(3, 9)], {2, 3}, False, {1}, 3),
    ("tie on LEO goes to the replica listed first",
     [_st(1, 10), _st(2, 9), _st(3, 9)], {2, 3}, False, {1}, 2),
    ("an out-of-sync replica with more data loses to an in-sync one",
     [_st(1, 10), _st(2, 5), _st(3, 12, in_sync=False)], {2, 3}, False, {1}, 2),
    ("offline in-sync replicas are skipped",
     [_st(1, 10), _st(2, 10), _st(3, 7)], {3}, False, {1}, 3),
    ("no in-sync replica online: no leader",
     [_st(1, 10), _st(2, 4, in_sync=False), _st(3, 3, in_sync=False)], {2, 3}, False, {1}, None),
    ("nothing online: no leader",
     [_st(1, 10), _st(2, 10), _st(3, 10)], set(), False, set(), None),
    ("unclean: out-of-sync replica with highest LEO leads when no in-sync one is online",
     [_st(1, 10), _st(2, 4, in_sync=False), _st(3, 6, in_sync=False)], {2, 3}, True, {1}, 3),
    ("unclean still prefers an in-sync replica",
     [_st(1, 10), _st(2, 4), _st(3, 6, in_sync=False)], {2, 3}, True, {1}, 2),
    ("unclean with nothing online: no leader",
     [_st(1, 10), _st(2, 4, in_sync=False)], set(), True, set(), None),
    ("a replica never reported is not in sync",
     [_st(1, 10)], {2, 3}, False, {1}, None),
    ("unclean: never-reported replicas rank by list order",
     [_st(1, 10)], {2, 3}, True, {1}, 2),
    ("SPUs outside the replica list never lead",
     [_st(1, 10), _st(9, 99)], {9}, True, {1}, None),
    ("the excluded former leader is not re-elected",
     [_st(1, 10), _st(2, 3)], {1, 2}, False, {1}, 2),
    ("a damaged replica never leads, however much it holds",
     [_st(1, 10), _st(2, 12, damaged=True), _st(3, 9)], {2, 3}, False, {1}, 3),
    ("a damaged replica never leads, even unclean and alone",
     [_st(1, 10), _st(2, 12, damaged=True)], {2}, True, {1}, None),
    ("only damaged replicas in sync: no leader",
     [_st(1, 10, damaged=True), _st(2, 10, damaged=True), _st(3, 4, in_sync=False)], {1, 2, 3},
     False, set(), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("standings", "online", "unclean", "exclude", "expected"),
    [row[1:] for row in ELECTIONS],
    ids=[row[0] for row in ELECTIONS],
)
def test_elect_leader(
    standings: list[ReplicaStanding],
    online: set[int],
    unclean: bool,
    exclude: set[int],
    expected: int | None,
) -> None:
    got = elect_leader(REPLICAS, standings, online, unclean=unclean, exclude=exclude)
    assert got == expected
    by_spu = {s.spu: s for s in standings}
    assert elect_leader(REPLICAS, by_spu, online, unclean=unclean, exclude=exclude) == expected


def test_replica_order_is_the_tiebreak_not_spu_id() -> None:
    standings = [_st(1, 5), _st(2, 5), _st(3, 5)]
    assert elect_leader((3, 1, 2), standings, {1, 2, 3}) == 3
    assert elect_leader((2, 3, 1), standings, {1, 2, 3}) == 2


ELIGIBILITY = [
    # (case, spu, standings, unclean, expected)
    ("in-sync replica is eligible", 2, [_st(2, 5)], False, True),
    ("out-of-sync replica is not", 2, [_st(2, 5, in_sync=False)], False, False),
    ("unknown replica is not", 2, [], False, False),
    ("unclean makes any replica eligible", 2, [_st(2, 5, in_sync=False)], True, True),
    ("a non-replica never is", 7, [_st(7, 5)], True, False),
    ("a damaged replica is not", 2, [_st(2, 5, damaged=True)], False, False),
    ("a damaged replica is not, even unclean", 2, [_st(2, 5, damaged=True)], True, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spu", "standings", "unclean", "expected"),
    [row[1:] for row in ELIGIBILITY],
    ids=[row[0] for row in ELIGIBILITY],
)
def test_is_eligible(
    spu: int, standings: list[ReplicaStanding], unclean: bool, expected: bool
) -> None:
    assert is_eligible(spu, REPLICAS, standings, unclean=unclean) is expected

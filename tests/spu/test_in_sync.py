"""The leader's follower bookkeeping (``spu.in_sync``), sans I/O: steps from given LEOs."""

from __future__ import annotations

import pytest

from spu.in_sync import InSyncTracker
from spu.replication import LagPolicy

LEADER, F1, F2 = 1, 2, 3
POLICY = LagPolicy(max_lag_ms=1_000)


def tracker(*, sc_confirms: bool, online: frozenset[int] = frozenset({F1, F2})) -> InSyncTracker:
    t = InSyncTracker(LEADER, POLICY, is_online=lambda s: s in online, sc_confirms=sc_confirms)
    t.seed((LEADER, F1, F2), hw=5, leo=10, now=0, initial=True)
    return t


def test_seed_counts_online_followers_in_sync_at_the_hw() -> None:
    t = tracker(sc_confirms=False, online=frozenset({F1}))
    assert t.followers == (F1, F2)
    assert t.isr == {LEADER, F1}
    assert t.lag(10) == {F1: 5, F2: -1}  # F1 counted at the HW, F2 offline: unknown


def test_reports_move_the_hw_to_the_min_over_the_set() -> None:
    t = tracker(sc_confirms=False)
    t.record(F1, 10, 10, 100)
    t.record(F2, 8, 10, 100)
    step = t.refresh(10, 5, 1, 100, force=False)
    assert (step.hw, step.isr, step.changed, step.report) == (8, {LEADER, F1, F2}, True, False)


@pytest.mark.parametrize("sc_confirms", [False, True])
def test_a_silent_follower_leaves_at_once_or_once_the_sc_accepted(sc_confirms: bool) -> None:
    t = tracker(sc_confirms=sc_confirms)
    t.record(F1, 10, 10, 1_500)
    step = t.refresh(10, 5, 1, 1_500, force=False)  # F2 silent past max_lag_ms
    assert step.report and step.previous == {LEADER, F1, F2}
    if not sc_confirms:
        assert step.isr == t.isr == t.reported == {LEADER, F1} and step.proposed is None
        return
    assert step.isr == t.isr == {LEADER, F1, F2}  # in force until the SC accepts
    assert step.proposed == t.proposed == t.reported == {LEADER, F1}
    assert step.hw == 5  # F2 still holds the HW
    assert t.refresh(10, 5, 1, 1_501, force=False).proposed is None  # proposed once
    assert t.accept({LEADER, F1}, 10, 5, 1_502)
    assert t.isr == {LEADER, F1}
    assert t.refresh(10, 5, 1, 1_503, force=False).hw == 10


def test_offline_forgets_the_follower_once() -> None:
    t = tracker(sc_confirms=False)
    assert t.offline(F2) and not t.offline(F2) and not t.offline(99)
    assert t.lag(10)[F2] == -1


def test_quiet_until_a_lag_is_due_and_while_leo_and_hw_stay() -> None:
    t = tracker(sc_confirms=False)
    t.record(F1, 10, 10, 100)
    t.record(F2, 10, 10, 100)
    step = t.refresh(10, 5, 1, 100, force=False)
    assert step.hw == 10
    assert t.quiet(200, 10, 10)
    assert not t.quiet(200, 11, 10)  # an append
    assert not t.quiet(200, 10, 9)  # the HW is not where the step left it
    assert not t.quiet(1_101, 10, 10)  # both followers' lag is due
    assert t.record(F1, 10, 10, 1_050)  # same LEO, in sync: only its catch-up moved
    assert not t.record(F2, 9, 10, 1_050)  # a different LEO is no repeat

"""The group assignor: T1 properties (hypothesis) and fibril's sticky-assignor cases."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from sc.controllers.group.assignor import TopicPartition, assign

Plan = dict[TopicPartition, str]
TOPICS = ("a", "b", "c")


def _ids(n: int, start: int = 0) -> list[str]:
    return [f"m{i:04d}" for i in range(start, start + n)]


def _loads(plan: Plan, members: Collection[str]) -> dict[str, int]:
    counts = Counter(plan.values())
    return {m: counts.get(m, 0) for m in members}


def _moves(before: Plan, after: Plan) -> int:
    return sum(1 for tp, m in before.items() if tp in after and after[tp] != m)


def _classes(
    partitions: Mapping[str, int], subs: Mapping[str, Collection[str]]
) -> dict[tuple[str, ...], list[str]]:
    classes: dict[tuple[str, ...], list[str]] = {}
    for topic, count in partitions.items():
        members = tuple(sorted(m for m, topics in subs.items() if topic in topics))
        if members and count:
            classes.setdefault(members, []).append(topic)
    return classes


def _check_plan(
    partitions: Mapping[str, int], subs: Mapping[str, Collection[str]], plan: Plan
) -> None:
    """Coverage, eligibility, disjointness, and balance within 1 in every class."""
    subscribed = {t for topics in subs.values() for t in topics}
    expected = {(t, p) for t, n in partitions.items() if t in subscribed for p in range(n)}
    assert set(plan) == expected  # coverage, nothing else (one owner each: a dict)
    for (topic, _), member in plan.items():
        assert topic in subs[member]  # only subscribers get a topic's partitions
    for members, topics in _classes(partitions, subs).items():
        loads = Counter(m for (t, _), m in plan.items() if t in topics)
        spread = [loads.get(m, 0) for m in members]
        assert max(spread) - min(spread) <= 1, (members, spread)


# -- T1: properties ------------------------------------------------------------------------

counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 40), min_size=1)
member_names = st.lists(st.text("mnopq", min_size=1, max_size=3), unique=True, max_size=12)


@st.composite
def groups(draw: st.DrawFn, uniform: bool = False) -> tuple[dict[str, int], dict[str, set[str]]]:
    partitions = draw(counts)
    names = draw(member_names)
    topics = sorted(partitions)
    if uniform:
        subs = {m: set(topics) for m in names}
    else:
        subs = {m: set(draw(st.lists(st.sampled_from(TOPICS), min_size=1))) for m in names}
    return partitions, subs


@st.composite
def currents(draw: st.DrawFn, partitions: dict[str, int], members: list[str]) -> Plan:
    """Any current holders, including non-members and ineligible members."""
    holders = [*members, "gone"]
    current: Plan = {}
    for topic, n in partitions.items():
        for p in range(n):
            if draw(st.booleans()):
                current[(topic, p)] = draw(st.sampled_from(holders))
    return current


@settings(max_examples=200, deadline=None)
@given(data=st.data(), group=groups())
def test_any_input_gives_a_covering_balanced_plan(
    data: st.DataObject, group: tuple[dict[str, int], dict[str, set[str]]]
) -> None:
    partitions, subs = group
    current = data.draw(currents(partitions, sorted(subs)))
    plan = assign(partitions, subs, current)
    _check_plan(partitions, subs, plan)
    # Sticky: in each class a member keeps min(what it validly holds, its target).
    for members, topics in _classes(partitions, subs).items():
        held = Counter(
            m for (t, p), m in current.items() if t in topics and m in members and p < partitions[t]
        )
        loads = Counter(m for (t, _), m in plan.items() if t in topics)
        kept = Counter(m for tp, m in plan.items() if tp[0] in topics and current.get(tp) == m)
        for m in members:
            assert kept.get(m, 0) == min(held.get(m, 0), loads.get(m, 0))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), group=groups())
def test_same_input_in_any_order_gives_the_same_plan(
    data: st.DataObject, group: tuple[dict[str, int], dict[str, set[str]]]
) -> None:
    partitions, subs = group
    current = data.draw(currents(partitions, sorted(subs)))
    plan = assign(partitions, subs, current)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    shuffled_subs = dict(rng.sample(sorted(subs.items()), len(subs)))
    shuffled_current = dict(rng.sample(sorted(current.items()), len(current)))
    shuffled_parts = dict(rng.sample(sorted(partitions.items()), len(partitions)))
    assert assign(shuffled_parts, shuffled_subs, shuffled_current) == plan


@settings(max_examples=200, deadline=None)
@given(data=st.data(), group=groups())
def test_a_plan_fed_back_is_reproduced(
    data: st.DataObject, group: tuple[dict[str, int], dict[str, set[str]]]
) -> None:
    # What an SC seeded from the published plan computes: the same plan, nothing moves.
    partitions, subs = group
    plan = assign(partitions, subs, data.draw(currents(partitions, sorted(subs))))
    assert assign(partitions, subs, plan) == plan


@settings(max_examples=200, deadline=None)
@given(data=st.data(), group=groups(uniform=True))
def test_join_moves_only_the_newcomers_share(
    data: st.DataObject, group: tuple[dict[str, int], dict[str, set[str]]]
) -> None:
    partitions, subs = group
    before = assign(partitions, subs, data.draw(currents(partitions, sorted(subs))))
    joined = {**subs, "zz-new": set(partitions)}
    after = assign(partitions, joined, before)
    _check_plan(partitions, joined, after)
    total = sum(partitions.values())
    share = total // len(joined)
    assert _loads(after, ["zz-new"])["zz-new"] == share
    # every move goes to the newcomer (with no members before, nothing was held)
    assert _moves(before, after) == (share if subs else 0)
    assert all(after[tp] == "zz-new" for tp, m in before.items() if after[tp] != m)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), group=groups(uniform=True))
def test_leave_moves_only_the_leavers_partitions(
    data: st.DataObject, group: tuple[dict[str, int], dict[str, set[str]]]
) -> None:
    partitions, subs = group
    if not subs:
        return
    before = assign(partitions, subs, data.draw(currents(partitions, sorted(subs))))
    leaver = data.draw(st.sampled_from(sorted(subs)))
    rest = {m: t for m, t in subs.items() if m != leaver}
    after = assign(partitions, rest, before)
    if rest:
        _check_plan(partitions, rest, after)
    orphans = {tp for tp, m in before.items() if m == leaver}
    assert {tp for tp, m in before.items() if after.get(tp) != m} == orphans


# -- fibril's cases --------------------------------------------------------------------------


def test_first_assignment_is_balanced() -> None:
    subs = {m: {"t"} for m in _ids(3)}
    plan = assign({"t": 6}, subs, {})
    assert _loads(plan, subs) == {"m0000": 2, "m0001": 2, "m0002": 2}
    assert len(plan) == 6


def test_first_assignment_spreads_each_topic() -> None:
    subs = {m: {"a", "b"} for m in _ids(3)}
    plan = assign({"a": 3, "b": 3}, subs, {})
    for member in subs:
        assert sorted(t for (t, _), m in plan.items() if m == member) == ["a", "b"]


def test_extra_members_stay_idle_and_no_members_assign_nothing() -> None:
    subs = {m: {"t"} for m in _ids(5)}
    plan = assign({"t": 3}, subs, {})
    assert sorted(_loads(plan, subs).values()) == [0, 0, 1, 1, 1]
    assert assign({"t": 3}, {}, {}) == {}
    assert assign({"t": 3}, {"m": {"other"}}, {}) == {}


def test_join_moves_only_what_balance_requires() -> None:
    two = {m: {"t"} for m in _ids(2)}
    before = assign({"t": 4}, two, {})
    after = assign({"t": 4}, {**two, "m0002": {"t"}}, before)
    assert _moves(before, after) == 1
    assert _loads(after, [*two, "m0002"])["m0002"] == 1


def test_leave_moves_only_the_orphans() -> None:
    three = {m: {"t"} for m in _ids(3)}
    before = assign({"t": 6}, three, {})
    after = assign({"t": 6}, {m: {"t"} for m in _ids(2)}, before)
    assert _moves(before, after) == 2
    assert all(after[tp] == m for tp, m in before.items() if m != "m0002")


def test_an_over_target_member_is_trimmed_and_extra_slots_go_to_the_biggest() -> None:
    subs = {m: {"t"} for m in _ids(3)}
    current = {("t", p): "m0002" for p in range(7)}
    plan = assign({"t": 7}, subs, current)
    # 7 over 3: targets 3, 2, 2; the +1 goes to m0002, which holds the most.
    assert _loads(plan, subs) == {"m0000": 2, "m0001": 2, "m0002": 3}
    assert [p for (_, p), m in sorted(plan.items()) if m == "m0002"] == [0, 1, 2]


def test_mixed_subscriptions_balance_within_each_class() -> None:
    # a: only m0 subscribes; b: m0 and m1. Each class is balanced on its own.
    plan = assign({"a": 2, "b": 4}, {"m0": {"a", "b"}, "m1": {"b"}}, {})
    assert {tp for tp, m in plan.items() if m == "m0"} == {("a", 0), ("a", 1), ("b", 0), ("b", 2)}
    assert _loads(plan, ["m0", "m1"]) == {"m0": 4, "m1": 2}


def test_partitions_of_deleted_or_shrunk_topics_are_dropped() -> None:
    subs = {"m0": {"a", "b"}}
    plan = assign({"a": 1}, subs, {("a", 0): "m0", ("a", 5): "m0", ("b", 0): "m0"})
    assert plan == {("a", 0): "m0"}


def test_scale_100_members_1000_partitions_join_and_leave() -> None:
    subs = {m: {"t"} for m in _ids(100)}
    before = assign({"t": 1000}, subs, {})
    joined = {**subs, "new": {"t"}}
    after = assign({"t": 1000}, joined, before)
    gained = {m for tp, m in after.items() if before[tp] != m}
    assert gained == {"new"} and _loads(after, ["new"])["new"] == 9
    left = {m: t for m, t in subs.items() if m != "m0042"}
    after_leave = assign({"t": 1000}, left, before)
    assert all(after_leave[tp] == m for tp, m in before.items() if m != "m0042")
    assert _moves(before, after_leave) == 10


def test_scale_300_members_5000_partitions_balanced_and_covered() -> None:
    subs = {m: {"a", "b"} for m in _ids(300)}
    plan = assign({"a": 2500, "b": 2500}, subs, {})
    _check_plan({"a": 2500, "b": 2500}, subs, plan)
    assert sorted(set(_loads(plan, subs).values())) == [16, 17]
    joined = {**subs, "new": {"a", "b"}}
    after = assign({"a": 2500, "b": 2500}, joined, plan)
    assert _moves(plan, after) == 5000 // 301 == 16

"""IdleLru: which open segments to close (pure: times are passed in)."""

from __future__ import annotations

import pytest

from spu.storage.idle_lru import IdleLru


def test_pop_excess_closes_the_least_recently_used_beyond_capacity() -> None:
    lru: IdleLru[str] = IdleLru(2, min_idle_s=1.0, idle_s=None)
    lru.touch("a", 0.0)
    lru.touch("b", 1.0)
    lru.touch("c", 2.0)
    lru.touch("a", 3.0)  # used again: now the newest
    assert lru.pop_excess(10.0) == ["b"]
    assert len(lru) == 2 and "b" not in lru and "a" in lru and "c" in lru
    assert lru.pop_excess(10.0) == []


def test_pop_excess_spares_keys_used_more_recently_than_min_idle() -> None:
    lru: IdleLru[str] = IdleLru(1, min_idle_s=1.0, idle_s=None)
    lru.touch("a", 5.0)
    lru.touch("b", 5.5)
    assert lru.pop_excess(5.9) == []  # "a" may be in use on another thread
    assert len(lru) == 2  # the bound overshoots for a moment
    assert lru.pop_excess(6.0) == ["a"]


@pytest.mark.parametrize(
    ("now", "popped"),
    [
        (9.9, []),
        (10.0, ["a"]),
        (12.0, ["a", "b"]),
        (20.0, ["a", "b", "c"]),
    ],
)
def test_pop_idle_closes_every_key_unused_for_idle_s(now: float, popped: list[str]) -> None:
    lru: IdleLru[str] = IdleLru(100, min_idle_s=1.0, idle_s=10.0)
    for key, at in (("a", 0.0), ("b", 2.0), ("c", 5.0)):
        lru.touch(key, at)
    assert lru.pop_idle(now) == popped
    assert len(lru) == 3 - len(popped)


def test_idle_none_never_pops_idle_keys() -> None:
    lru: IdleLru[str] = IdleLru(10, min_idle_s=0.0, idle_s=None)
    lru.touch("a", 0.0)
    assert lru.pop_idle(1e9) == []


def test_forget_drops_a_key_and_ignores_unknown_ones() -> None:
    lru: IdleLru[str] = IdleLru(1, min_idle_s=0.0, idle_s=0.0)
    lru.touch("a", 0.0)
    lru.forget("a")
    lru.forget("never")
    assert len(lru) == 0 and lru.pop_idle(1.0) == [] and lru.pop_excess(1.0) == []


@pytest.mark.parametrize(
    ("capacity", "min_idle_s", "idle_s"),
    [(0, 1.0, 10.0), (1, -1.0, 10.0), (1, 5.0, 1.0)],
)
def test_bad_bounds_are_refused(capacity: int, min_idle_s: float, idle_s: float) -> None:
    with pytest.raises(ValueError):
        IdleLru(capacity, min_idle_s, idle_s)

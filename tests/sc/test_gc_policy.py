"""The SC's collection policy, on this process's real collector."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sc.gc_policy import FreezeSurvivors


class _Node:
    """A cycle member the collector (not reference counting) must free."""

    def __init__(self) -> None:
        self.other: _Node | None = None


def _pair() -> _Node:
    """Two nodes referring to each other; the first is returned."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return a


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def policy() -> Iterator[tuple[FreezeSurvivors, _Clock]]:
    clock = _Clock()
    p = FreezeSurvivors(thaw_s=60.0, clock=clock)
    p.install()
    try:
        yield p, clock
    finally:
        p.uninstall()


def test_survivors_of_a_full_collection_are_frozen(
    policy: tuple[FreezeSurvivors, _Clock],
) -> None:
    p, _ = policy
    kept = [_Node() for _ in range(1000)]
    before = gc.get_freeze_count()
    gc.collect()
    assert p.freezes == 1
    assert gc.get_freeze_count() >= before + len(kept)
    assert not gc.get_objects(2), "nothing is left for the next full collection to scan"


def test_garbage_made_after_a_freeze_is_still_collected(
    policy: tuple[FreezeSurvivors, _Clock],
) -> None:
    gc.collect()
    ref = weakref.ref(_pair())  # unreachable at once, but only the collector frees a cycle
    gc.collect()
    assert ref() is None


def test_a_cycle_among_frozen_objects_is_freed_after_the_thaw(
    policy: tuple[FreezeSurvivors, _Clock],
) -> None:
    p, clock = policy
    holder = [_pair()]
    ref = weakref.ref(holder[0])
    gc.collect()  # the cycle survives and is frozen
    holder.clear()  # now unreachable, but frozen: no collection frees it yet
    gc.collect()
    assert ref() is not None
    clock.now = 61.0
    gc.collect()  # this one thaws at its end...
    assert p.thaws == 1
    gc.collect()  # ...so this one examines the old survivors
    assert ref() is None


def test_uninstall_returns_everything_to_the_collector(
    policy: tuple[FreezeSurvivors, _Clock],
) -> None:
    p, _ = policy
    gc.collect()
    assert gc.get_freeze_count() > 0
    p.uninstall()
    assert gc.get_freeze_count() == 0
    assert p._on_gc not in gc.callbacks
    gc.collect()
    assert p.freezes == 1

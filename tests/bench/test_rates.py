"""``bench._rates.best_times``: the order queries run in, and the checksum guard."""

from __future__ import annotations

import functools
import itertools

import pytest

from bench._rates import best_times


def test_each_round_starts_one_query_further_down_the_list() -> None:
    calls: list[str] = []

    def query(label: str) -> int:
        calls.append(label)
        return 1

    runs = {label: functools.partial(query, label) for label in "abc"}
    best_times(runs, dict.fromkeys(runs, 1), repeat=2, rounds=3)
    warm_up, timed = calls[:3], calls[3:]
    assert warm_up == ["a", "b", "c"]
    rounds = [[label for label, _ in itertools.groupby(timed[i : i + 6])] for i in (0, 6, 12)]
    assert rounds == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert timed.count("a") == timed.count("b") == timed.count("c") == 6


def test_a_wrong_checksum_is_never_timed() -> None:
    with pytest.raises(AssertionError, match="b: checksum 2, expected 1"):
        best_times({"a": lambda: 1, "b": lambda: 2}, {"a": 1, "b": 1}, repeat=1)


def test_the_best_time_of_each_clock_is_kept() -> None:
    ticks = itertools.count()
    best = best_times(
        {"a": lambda: 0}, {"a": 0}, repeat=3, rounds=1, clocks={"tick": lambda: next(ticks)}
    )
    assert best == {"tick": {"a": 1}}

"""Best-of-rounds Spark query rates, shared by the Spark benchmarks (``bench.spark``,
``bench.tier``): one way to turn timed queries into records/s on a shared machine."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["best_rates", "best_seconds"]


def _say(prefix: str, message: str) -> None:
    print(f"[{prefix}] {message}", file=sys.stderr, flush=True)


def best_seconds(
    runs: dict[str, Callable[[], int]],
    expected: dict[str, int],
    repeat: int,
    *,
    rounds: int = 2,
    prefix: str = "bench",
) -> dict[str, float]:
    """The best wall seconds of each run: of ``rounds`` x ``repeat`` runs after one warm-up.

    Each round runs every query ``repeat`` times in a row (a query keeps its warm caches),
    and the rounds repeat the whole sequence, so neither the JVM's warm-up (the first
    query pays the JIT) nor a slow spell of the shared machine decides a figure alone.

    Args:
        runs: label -> a query returning a checksum.
        expected: label -> the checksum the query must return (a wrong answer is never
            timed as a fast one).
        repeat: runs of a query in a row per round.
        rounds: passes over all the queries.
        prefix: progress lines' prefix (stderr).

    Raises:
        AssertionError: a query returned another checksum than expected.
    """
    for run in runs.values():
        run()  # warm-up: Python workers, JIT, caches
    best: dict[str, float] = {label: float("inf") for label in runs}
    for round_ in range(rounds):
        for label, run in runs.items():
            for i in range(repeat):
                started = time.perf_counter()
                total = run()
                seconds = time.perf_counter() - started
                if total != expected[label]:
                    raise AssertionError(f"{label}: checksum {total}, expected {expected[label]}")
                best[label] = min(best[label], seconds)
                _say(prefix, f"{label} round {round_ + 1} run {i + 1}: {seconds:.3f}s")
    return best


def best_rates(
    runs: dict[str, Callable[[], int]],
    records: int,
    value_bytes: int,
    repeat: int,
    *,
    rounds: int = 2,
    prefix: str = "bench",
) -> dict[str, float]:
    """Records/s of each run of ``sum(length(value))`` over ``records`` values of
    ``value_bytes`` bytes: ``records`` / the best seconds of ``best_seconds``."""
    expected = dict.fromkeys(runs, records * value_bytes)
    seconds = best_seconds(runs, expected, repeat, rounds=rounds, prefix=prefix)
    return {label: records / s for label, s in seconds.items()}

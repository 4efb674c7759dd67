"""Best-of-rounds Spark query timings, shared by the Spark benchmarks (``bench.spark``,
``bench.tier``): one way to turn timed queries into records/s on a shared machine.

Wall time is what a user waits, but on a loaded machine (runnable threads well above the
cores) it mostly measures the others. ``jvm_cpu_seconds`` is a second clock for
``local[...]`` sessions, where every task runs in the driver's JVM: the CPU seconds that
JVM spent, which the load barely moves, so two queries' costs compare even then.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["best_rates", "best_times", "jvm_cpu_seconds"]

Clock = Callable[[], float]


def _say(prefix: str, message: str) -> None:
    print(f"[{prefix}] {message}", file=sys.stderr, flush=True)


def jvm_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process's ``java`` children: the JVM of a local
    Spark session started from here. 0.0 when there is none (not Linux, no session)."""
    me = os.getpid()
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # gone meanwhile
        name_end = text.rfind(")")
        fields = text[name_end + 2 :].split()
        if "java" in text[: name_end + 1] and int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def best_times(
    runs: Mapping[str, Callable[[], int]],
    expected: Mapping[str, int],
    repeat: int,
    *,
    rounds: int = 2,
    prefix: str = "bench",
    clocks: Mapping[str, Clock] | None = None,
) -> dict[str, dict[str, float]]:
    """The best time of each run by each clock, of ``rounds`` x ``repeat`` runs after one
    warm-up.

    Each round runs every query ``repeat`` times in a row (a query keeps its warm caches),
    and the rounds repeat the whole sequence, so neither the JVM's warm-up (the first
    query pays the JIT) nor a slow spell of the shared machine decides a figure alone.
    Each round starts one query further down the list (round 2 of ``a, b, c`` runs
    ``b, c, a``): a query never always follows the same one, whose garbage the JVM may
    still be collecting.

    Args:
        runs: label -> a query returning a checksum.
        expected: label -> the checksum the query must return (a wrong answer is never
            timed as a fast one).
        repeat: runs of a query in a row per round.
        rounds: passes over all the queries.
        prefix: progress lines' prefix (stderr).
        clocks: name -> a clock in seconds (default ``{"wall": time.perf_counter}``).

    Returns:
        clock name -> label -> the least seconds any run took by that clock.

    Raises:
        AssertionError: a query returned another checksum than expected.
    """
    clocks = clocks or {"wall": time.perf_counter}
    for run in runs.values():
        run()  # warm-up: Python workers, JIT, caches
    best = {name: dict.fromkeys(runs, float("inf")) for name in clocks}
    labels = list(runs)
    for round_ in range(rounds):
        shift = round_ % len(labels)
        for label in labels[shift:] + labels[:shift]:
            run = runs[label]
            for i in range(repeat):
                before = {name: clock() for name, clock in clocks.items()}
                total = run()
                spent = {name: clock() - before[name] for name, clock in clocks.items()}
                if total != expected[label]:
                    raise AssertionError(f"{label}: checksum {total}, expected {expected[label]}")
                for name, seconds in spent.items():
                    best[name][label] = min(best[name][label], seconds)
                shown = ", ".join(f"{name} {s:.3f}s" for name, s in spent.items())
                _say(prefix, f"{label} round {round_ + 1} run {i + 1}: {shown}")
    return best


def best_rates(
    runs: Mapping[str, Callable[[], int]],
    records: int,
    value_bytes: int,
    repeat: int,
    *,
    rounds: int = 2,
    prefix: str = "bench",
) -> dict[str, float]:
    """Records/s of each run of ``sum(length(value))`` over ``records`` values of
    ``value_bytes`` bytes: ``records`` / the best wall seconds of ``best_times``."""
    expected = dict.fromkeys(runs, records * value_bytes)
    seconds = best_times(runs, expected, repeat, rounds=rounds, prefix=prefix)["wall"]
    return {label: records / s for label, s in seconds.items()}

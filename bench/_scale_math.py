"""The pure figures of the scale benchmark (``bench.scale``): growth, percentiles, goals.

Each curve measures a cost at a few sizes of its variable (partitions, connections,
sealed segments). ``growth`` compares the cost *per unit* at the largest size with the
smallest: 1 means the curve is linear, below 1 sub-linear (a fixed cost spread over
more units), above 1 super-linear. ``flat`` asks whether a cost stays level while its
variable grows (recovery time against sealed segment count). No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "FLAT_TOLERANCE",
    "cpu_percent",
    "flat",
    "goal",
    "growth",
    "latency_summary",
    "per_unit",
]

FLAT_TOLERANCE = 1.5
"""A "flat" cost may be this many times its smallest-size value at the largest size:
process start alone varies that much on a loaded 2-core machine."""


def per_unit(total: float, baseline: float, units: int) -> float:
    """``(total - baseline) / units``: the cost each unit adds (e.g. RSS per partition).

    Raises:
        ValueError: ``units`` is not positive.
    """
    if units <= 0:
        raise ValueError(f"units must be positive, got {units}")
    return (total - baseline) / units


def growth(costs: Mapping[int, float | None], *, per: bool = True) -> float | None:
    """The cost per unit at the largest size over the smallest (``per=False``: the raw
    costs' ratio, for figures that are already per unit, like RSS per partition).

    ``costs`` maps a size to the cost measured there; sizes without a figure (None) are
    skipped. None when fewer than two sizes have one, or the smallest cost is not
    positive (no ratio to take).
    """
    known = sorted((size, cost) for size, cost in costs.items() if cost is not None)
    if len(known) < 2:
        return None
    (small, small_cost), (big, big_cost) = known[0], known[-1]
    if small_cost <= 0:
        return None
    ratio = big_cost / small_cost
    if per:
        ratio *= small / big
    return round(ratio, 3)


def flat(costs: Mapping[int, float | None], tolerance: float = FLAT_TOLERANCE) -> bool | None:
    """Whether the cost at the largest size is within ``tolerance`` times the cost at
    the smallest (None: fewer than two sizes measured)."""
    known = sorted((size, cost) for size, cost in costs.items() if cost is not None)
    if len(known) < 2:
        return None
    return known[-1][1] <= known[0][1] * tolerance


def cpu_percent(cpu_before_s: float, cpu_after_s: float, wall_s: float) -> float:
    """CPU time used over a wall-clock interval, in percent of one core.

    Raises:
        ValueError: ``wall_s`` is not positive.
    """
    if wall_s <= 0:
        raise ValueError(f"wall_s must be positive, got {wall_s}")
    return 100.0 * (cpu_after_s - cpu_before_s) / wall_s


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float | None]:
    """p50, p99 and max of latencies in milliseconds (all None for none)."""
    if not latencies_ms:
        return {"p50": None, "p99": None, "max": None}
    values = np.asarray(latencies_ms, dtype=float)
    return {
        "p50": round(float(np.percentile(values, 50)), 3),
        "p99": round(float(np.percentile(values, 99)), 3),
        "max": round(float(values.max()), 3),
    }


def goal(value: float | None, limit: float, *, strict: bool = True) -> bool | None:
    """``value < limit`` (``strict=False``: ``<=``); None when not measured."""
    if value is None:
        return None
    return value < limit if strict else value <= limit

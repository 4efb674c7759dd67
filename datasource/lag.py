"""How far a streaming query is behind its topics, from its progress reports.

Each micro-batch's progress (``query.lastProgress``, ``query.recentProgress``) holds,
per source, ``endOffset`` (where the batch ended) and ``latestOffset`` (what the
partition leaders had visible when Spark planned it: ``reportLatestOffset`` of both
sources). Their difference per partition is the query's lag, in records. The JVM
connector also reports the summary in each source's ``metrics``
(``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest``, ``avgOffsetsBehindLatest``,
Kafka's names); PySpark's Python data sources cannot report source metrics, so
``behind_latest_metrics`` computes the same three from the offsets. Pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spark_stream.errors import InvalidRequestError

__all__ = ["offsets_behind_latest", "behind_latest_metrics"]


def _offsets(value: Any) -> dict[str, int]:
    """``{"topic-partition": offset}`` of a progress offset (JSON text or parsed)."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise InvalidRequestError(f"not a fluvio offset: {value!r}") from exc
    if not isinstance(value, Mapping):
        raise InvalidRequestError(f"not a fluvio offset: {value!r}")
    out: dict[str, int] = {}
    for topic, partitions in value.items():
        if not isinstance(partitions, Mapping):
            raise InvalidRequestError(f"not a fluvio offset: {value!r}")
        for partition, offset in partitions.items():
            out[f"{topic}-{partition}"] = int(offset)
    return out


def offsets_behind_latest(source: Mapping[str, Any]) -> dict[str, int]:
    """Records each partition is behind, as of one source's progress report.

    Args:
        source: one entry of a progress's ``sources`` (``query.lastProgress["sources"][0]``).

    Returns:
        ``{"topic-partition": records}`` for every partition of ``latestOffset`` (empty
        before the first batch reported one).

    Raises:
        InvalidRequestError: an offset that is not this connector's JSON.
    """
    end = _offsets(source.get("endOffset"))
    latest = _offsets(source.get("latestOffset"))
    return {tp: max(offset - end.get(tp, 0), 0) for tp, offset in sorted(latest.items())}


def behind_latest_metrics(behind: Mapping[str, int]) -> dict[str, str]:
    """The JVM connector's source metrics for ``behind``: min, max and average lag."""
    if not behind:
        return {}
    values = list(behind.values())
    return {
        "minOffsetsBehindLatest": str(min(values)),
        "maxOffsetsBehindLatest": str(max(values)),
        "avgOffsetsBehindLatest": str(sum(values) / len(values)),
    }

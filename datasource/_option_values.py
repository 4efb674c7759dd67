"""Values of the reader options that Spark's Kafka source defines: ``assign`` (JSON of
partition lists), the per-partition times of ``startingOffsetsByTimestamp`` and
``endingOffsetsByTimestamp`` (JSON of milliseconds), a time in milliseconds, and the
duration of ``maxTriggerDelay``. Pure; every failure is a ``DataSourceOptionError``
naming the option as the user spelled it. The JVM connector's ``ReaderOptions`` parses
them with the same rules and messages (checked by the shared test vectors).
"""

from __future__ import annotations

import json
import re
from typing import Any

from spark_stream.client.timestamps import to_timestamp_us
from spark_stream.errors import DataSourceOptionError, InvalidConfigError

__all__ = ["parse_assign", "parse_duration_ms", "parse_timestamp_ms", "parse_timestamps"]

_DURATION = re.compile(r"([0-9]+)\s*(ms|s|m|min|h|d)?")
_DURATION_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                "d": 86_400_000}  # fmt: skip
_MAX_DURATION_MS = 2**63 - 1
_MAX_INT32 = 2**31 - 1  # partition numbers are int32 on the wire and in the JVM


def _json_object(raw: str, name: str, example: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw.strip())
    except json.JSONDecodeError:
        raise DataSourceOptionError(
            f"option '{name}' must be JSON like {example}, got {raw!r}"
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise DataSourceOptionError(f"option '{name}' JSON must be a non-empty object")
    return parsed


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_assign(raw: str, name: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Kafka's ``assign``: ``{"topic": [0, 1]}`` as ``(topic, sorted partitions)`` pairs
    in the order given.

    Raises:
        DataSourceOptionError: not such JSON, an empty topic name or partition list, or
            a partition that is not a number >= 0.
    """
    parsed = _json_object(raw, name, '{"topic": [0, 1]}')
    out: list[tuple[str, tuple[int, ...]]] = []
    for topic, parts in parsed.items():
        if (
            not topic.strip()
            or not isinstance(parts, list)
            or not parts
            or not all(_is_int(p) and 0 <= p <= _MAX_INT32 for p in parts)
        ):
            raise DataSourceOptionError(
                f"option '{name}': topic {topic!r} must map to a non-empty list of partition "
                "numbers"
            )
        out.append((topic, tuple(sorted(set(parts)))))
    return tuple(out)


def parse_timestamp_ms(raw: str, name: str) -> int:
    """A time option: milliseconds since the epoch, as in Spark's Kafka source.

    A value past the year 9999 in milliseconds was written in microseconds or
    nanoseconds and would read nothing: it is refused, naming the unit it looks like.

    Raises:
        DataSourceOptionError: not an integer, negative, or past the year 9999.
    """
    try:
        ms = int(raw.strip())
    except ValueError:
        raise DataSourceOptionError(
            f"option '{name}' must be an integer (milliseconds since the epoch), got {raw!r}"
        ) from None
    return _checked_ms(ms, f"option '{name}'")


def _checked_ms(ms: int, what: str) -> int:
    try:
        to_timestamp_us(ms, "ms", what)
    except InvalidConfigError as exc:
        raise DataSourceOptionError(str(exc)) from None
    return ms


def parse_timestamps(raw: str, name: str) -> tuple[tuple[str, int, int], ...]:
    """Kafka's per-partition times ``{"topic": {"0": 1700000000000}}`` (ms) as sorted
    ``(topic, partition, ms)`` triples.

    Raises:
        DataSourceOptionError: not such JSON, or a time that ``parse_timestamp_ms`` refuses.
    """
    parsed = _json_object(raw, name, '{"topic": {"0": 1700000000000}}')
    out: list[tuple[str, int, int]] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise DataSourceOptionError(
                f"option '{name}': topic {topic!r} must map partition numbers to timestamps"
            )
        for part, ms in parts.items():
            try:
                index = int(part)
            except ValueError:
                index = -1
            if not 0 <= index <= _MAX_INT32 or not _is_int(ms):
                raise DataSourceOptionError(
                    f"option '{name}': {topic}/{part} -> {ms!r} is not a partition number "
                    "mapped to milliseconds since the epoch"
                )
            out.append((topic, index, _checked_ms(ms, f"option '{name}' at {topic}/{index}")))
    return tuple(sorted(out))


def parse_duration_ms(raw: str, name: str) -> int:
    """A duration as Spark writes them (``15m``, ``30s``, ``500ms``, ``2h``, ``1d``; a
    bare number is milliseconds), in milliseconds.

    Raises:
        DataSourceOptionError: anything else.
    """
    match = _DURATION.fullmatch(raw.strip().lower())
    if match is None:
        raise DataSourceOptionError(
            f"option '{name}' must be a duration like 15m, 30s or 500ms, got {raw!r}"
        )
    ms = int(match.group(1)) * _DURATION_MS[match.group(2)]
    if ms > _MAX_DURATION_MS:
        raise DataSourceOptionError(f"option '{name}' is too long: {raw!r}")
    return ms

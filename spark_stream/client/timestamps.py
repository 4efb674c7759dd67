"""The one rule for times given as integers, and its check.

Records carry their time in microseconds since the Unix epoch (UTC), so every client
name that takes one says so (``timestamp_us``, ``Offset.from_timestamp(ts_us)``,
integer ``timestamp`` columns of ``send_batch``). Spark's options keep the unit of
Spark's Kafka source, milliseconds (``startingTimestamp``, ``endingTimestamp``). A value
in the wrong unit is caught when it is clearly wrong: a time past the year 9999 (the
last one Python and Spark timestamps hold) was written in a finer unit (microseconds or
nanoseconds where milliseconds were asked), and would otherwise silently read nothing.
A coarser unit (seconds for milliseconds) cannot be told from an early time and is not
caught. See "Time and units" in ``docs/user-guide.md``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from spark_stream.errors import InvalidConfigError

__all__ = ["MAX_TIMESTAMP_US", "TimeUnit", "to_timestamp_us"]

TimeUnit = Literal["ms", "us"]

MAX_TIMESTAMP_US = 253_402_300_799_999_999
"""9999-12-31T23:59:59.999999Z in microseconds since the epoch: the latest time accepted."""

_PER_US: dict[str, int] = {"ms": 1000, "us": 1}
_NAMES = {"ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
_FINER: dict[str, tuple[tuple[str, int], ...]] = {
    "ms": (("us", 1000), ("ns", 1_000_000)),
    "us": (("ns", 1000),),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(us: int) -> str:
    return (_EPOCH + timedelta(microseconds=us)).isoformat().replace("+00:00", "Z")


def to_timestamp_us(value: int, unit: TimeUnit, what: str) -> int:
    """``value``, a time in ``unit`` since the epoch, as microseconds, once checked.

    Args:
        value: the time as given.
        unit: ``"ms"`` or ``"us"``, the unit ``what`` is documented in.
        what: how errors name the value (``"option 'startingTimestamp'"``).

    Raises:
        InvalidConfigError: a negative value, or one past the year 9999 in ``unit``;
            the message names the finer unit it looks like and the value converted.
    """
    name = _NAMES[unit]
    if value < 0:
        raise InvalidConfigError(f"{what} is {name} since the epoch and must be >= 0, got {value}")
    limit = MAX_TIMESTAMP_US // _PER_US[unit]
    if value <= limit:
        return value * _PER_US[unit]
    for finer, factor in _FINER[unit]:
        converted = value // factor
        if converted <= limit:
            raise InvalidConfigError(
                f"{what} is {name} since the epoch, and {value} {unit} is after the year "
                f"9999: it looks like {_NAMES[finer]}; in {name} that is {converted} "
                f"({_iso(converted * _PER_US[unit])})"
            )
    raise InvalidConfigError(
        f"{what} is {name} since the epoch, and {value} {unit} is after the year 9999"
    )

"""The time rule: integers are microseconds in the client, milliseconds in Spark's
options, and a value past the year 9999 in the unit asked is refused as a finer unit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from spark_stream.client.timestamps import MAX_TIMESTAMP_US, to_timestamp_us
from spark_stream.errors import InvalidConfigError

NOV_2023_US = 1_700_000_000_000_000
"""2023-11-14T22:13:20Z, the example of "Time and units" in docs/user-guide.md."""


@pytest.mark.parametrize(
    ("value", "unit", "expected_us"),
    [
        (0, "ms", 0),
        (0, "us", 0),
        (5_000, "us", 5_000),  # early times are times, not errors
        (1_700_000_000_000, "ms", NOV_2023_US),
        (NOV_2023_US, "us", NOV_2023_US),
        (MAX_TIMESTAMP_US // 1000, "ms", MAX_TIMESTAMP_US // 1000 * 1000),
        (MAX_TIMESTAMP_US, "us", MAX_TIMESTAMP_US),
    ],
)
def test_times_in_their_unit_convert_to_microseconds(
    value: int, unit: str, expected_us: int
) -> None:
    assert to_timestamp_us(value, unit, "t") == expected_us  # type: ignore[arg-type]


def test_the_documented_example_is_one_instant() -> None:
    instant = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert int(instant.timestamp()) * 1_000_000 == NOV_2023_US
    assert to_timestamp_us(int(instant.timestamp() * 1000), "ms", "t") == NOV_2023_US


@pytest.mark.parametrize(
    ("value", "unit", "message"),
    [
        (
            NOV_2023_US,
            "ms",
            "option 'startingTimestamp' is milliseconds since the epoch, and "
            "1700000000000000 ms is after the year 9999: it looks like microseconds; in "
            "milliseconds that is 1700000000000 (2023-11-14T22:13:20Z)",
        ),
        (
            NOV_2023_US * 1000,
            "ms",
            "it looks like nanoseconds; in milliseconds that is 1700000000000 ",
        ),
        (
            NOV_2023_US * 1000,
            "us",
            "it looks like nanoseconds; in microseconds that is 1700000000000000 ",
        ),
        (MAX_TIMESTAMP_US // 1000 + 1, "ms", "ms is after the year 9999: it looks like micro"),
        (MAX_TIMESTAMP_US * 1_000_000, "us", "us is after the year 9999"),
        (-1, "ms", "is milliseconds since the epoch and must be >= 0, got -1"),
        (-1, "us", "is microseconds since the epoch and must be >= 0, got -1"),
    ],
)
def test_wrong_units_are_refused_with_the_conversion(value: int, unit: str, message: str) -> None:
    with pytest.raises(InvalidConfigError) as exc:
        to_timestamp_us(value, unit, "option 'startingTimestamp'")  # type: ignore[arg-type]
    assert message in str(exc.value)

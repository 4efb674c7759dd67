"""The offset specification and its resolution against a log's range."""

from __future__ import annotations

import pytest

from spark_stream.client.consumer.offset import Offset, check_start
from spark_stream.errors import InvalidConfigError, InvalidRequestError, OffsetOutOfRangeError

# (spec, log_start, end, timestamp lookup answer, expected)
CASES = [
    (Offset.beginning(), 0, 10, None, 0),
    (Offset.beginning(), 5, 10, None, 5),
    (Offset.end(), 5, 10, None, 10),
    (Offset.absolute(7), 5, 10, None, 7),
    (Offset.absolute(10), 5, 10, None, 10),
    (Offset.from_beginning(3), 5, 10, None, 8),
    (Offset.from_beginning(30), 5, 10, None, 10),
    (Offset.from_end(3), 5, 10, None, 7),
    (Offset.from_end(30), 5, 10, None, 5),
    (Offset.from_timestamp(123), 5, 10, 6, 6),
    (Offset.from_timestamp(123), 5, 10, None, 10),
    (Offset.from_timestamp(123), 5, 10, 2, 5),
    (Offset.beginning(), 0, 0, None, 0),
]


@pytest.mark.parametrize(("spec", "start", "end", "found", "expected"), CASES)
def test_resolve(spec: Offset, start: int, end: int, found: int | None, expected: int) -> None:
    assert spec.resolve(start, end, found) == expected


@pytest.mark.parametrize("offset", [4, 11])
def test_absolute_outside_the_log_is_out_of_range(offset: int) -> None:
    with pytest.raises(OffsetOutOfRangeError, match=str(offset)):
        Offset.absolute(offset).resolve(5, 10)


# (start, log_start, leo, valid): Kafka's rule, one for every read path
START_CASES = [
    (5, 5, 10, True),  # the log start
    (10, 5, 10, True),  # the LEO: valid, nothing to read yet
    (4, 5, 10, False),  # below the log start: removed by retention
    (11, 5, 10, False),  # past the LEO
]


@pytest.mark.parametrize(("start", "log_start", "leo", "valid"), START_CASES)
def test_check_start(start: int, log_start: int, leo: int, valid: bool) -> None:
    if valid:
        assert check_start(start, log_start, leo) == start
    else:
        with pytest.raises(OffsetOutOfRangeError, match=f"offset {start} is outside"):
            check_start(start, log_start, leo)


def test_an_absolute_start_between_hw_and_leo_is_valid() -> None:
    # as a fetch there reads nothing (yet) and the leader's stream accepts it
    assert Offset.absolute(12).resolve(5, 10, leo=12) == 12
    with pytest.raises(OffsetOutOfRangeError, match="13"):
        Offset.absolute(13).resolve(5, 10, leo=12)


def test_negative_values_are_refused() -> None:
    with pytest.raises(InvalidRequestError):
        Offset.absolute(-1)
    with pytest.raises(InvalidRequestError):
        Offset.from_end(-2)


def test_a_timestamp_in_nanoseconds_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match=r"from_timestamp.*looks like nanoseconds"):
        Offset.from_timestamp(1_700_000_000_000_000_000)


def test_bad_log_range_is_refused() -> None:
    with pytest.raises(InvalidRequestError):
        Offset.beginning().resolve(10, 5)


def test_only_timestamps_need_a_lookup() -> None:
    assert Offset.from_timestamp(1).needs_timestamp_lookup
    assert not Offset.end().needs_timestamp_lookup
    assert str(Offset.absolute(3)) == "absolute(3)"

"""``spark_stream.units``: durations and sizes as people write them, one table each."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.units import format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("150ms", 0.15),
        ("20s", 20.0),
        ("1.5s", 1.5),
        ("30", 30.0),  # a bare number is seconds
        ("0", 0.0),
        ("5m", 300.0),
        ("12h", 43200.0),
        ("7d", 604800.0),
        ("1w", 604800.0),
        ("1h30m", 5400.0),  # humantime's compound form
        ("1h 30m", 5400.0),
        ("2min", 120.0),
        ("3 hours", 10800.0),
        ("250us", 0.00025),
        ("10MS", 0.01),  # units are case-insensitive
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--linger") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", " ", "abc", "10y", "-5s", "5 parsecs", "ms", "1h-30m"])
def test_bad_durations_name_the_flag(text: str) -> None:
    with pytest.raises(InvalidConfigError, match="^--linger: "):
        parse_duration(text, "--linger")


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("10B", 10),
        ("1Ki", 1024),
        ("1KiB", 1024),
        ("500Mi", 500 * 2**20),
        ("1Gi", 2**30),  # binary: humanfriendly would say 10**9
        ("1gi", 2**30),
        ("2Ti", 2 * 2**40),
        ("1K", 1000),
        ("100MB", 100 * 10**6),
        ("100mb", 100 * 10**6),
        ("1G", 10**9),
        ("1.5Ki", 1536),
        ("16 KB", 16000),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text, "--max-request-size") == size


@pytest.mark.parametrize("text", ["", "big", "1Xi", "-1Mi", "1.2.3K", "Gi", "1 G B"])
def test_bad_sizes_name_the_flag(text: str) -> None:
    with pytest.raises(InvalidConfigError, match="^--max-request-size: .*like 1Gi"):
        parse_size(text, "--max-request-size")


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (512, "512 B"), (1536, "1.5 KiB"), (3 * 2**20, "3.0 MiB"), (2**40, "1.0 TiB")],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text

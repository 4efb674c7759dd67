"""Durations (``150ms``, ``1h30m``) and sizes (``1Gi``, ``100MB``) from text: one parser.

Every place that takes a duration or a size from a person (CLI flags, topic and SPU
group specs) reads it here, so ``--linger 150ms``, ``--retention-time 7d``,
``--segment-size 1Gi`` and ``--max-request-size 100MB`` follow the same rules:

* A duration is one or more ``<number><unit>`` terms (``1h30m``, ``1.5s``) with the
  units ``ns us ms s m h d w`` (and their long forms: ``sec``, ``min``, ``hours``...),
  as Fluvio's ``humantime`` reads them; a bare number is seconds.
* A size is ``<number><unit>``: Kubernetes' binary ``Ki Mi Gi Ti Pi`` (and ``KiB``...)
  are powers of 1024, decimal ``K M G T P`` (and ``KB``...) powers of 1000, ``B`` or no
  unit are bytes. Unit letters are case-insensitive (``100mb``, ``1gi``); fractions
  are allowed and rounded down to whole bytes (``1.5Ki`` = 1536).

Why our own and not a library: ``humanfriendly.parse_size`` reads ``1Gi`` as 10^9
bytes (it matches the first letter of a unit), and ``pytimeparse`` has had no release
since 2017 and takes no ``ms``; see docs/decisions.md.
"""

from __future__ import annotations

import re

from spark_stream.errors import InvalidConfigError

__all__ = ["parse_duration", "parse_size", "format_size"]

_SECONDS = {
    "ns": 1e-9, "nsec": 1e-9,
    "us": 1e-6, "usec": 1e-6, "µs": 1e-6,
    "ms": 1e-3, "msec": 1e-3, "millis": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "week": 604800.0, "weeks": 604800.0,
}  # fmt: skip
_TERM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*$")

_BYTES = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15,
    "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30, "gib": 2**30,
    "ti": 2**40, "tib": 2**40, "pi": 2**50, "pib": 2**50,
}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_duration(text: str, what: str = "duration") -> float:
    """Seconds in ``text`` (``"150ms"`` -> 0.15, ``"1h30m"`` -> 5400.0, ``"30"`` -> 30.0).

    Args:
        text: the duration as written.
        what: how errors name the value (a flag, an option).

    Raises:
        InvalidConfigError: not a duration (the message shows the accepted forms).
    """
    bare = _NUMBER.match(text)
    if bare is not None:
        return float(bare.group(1))
    total, pos, stripped = 0.0, 0, text.strip()
    while pos < len(stripped):
        term = _TERM.match(stripped, pos)
        unit = term.group(2).lower() if term is not None else None
        if term is None or unit not in _SECONDS:
            raise InvalidConfigError(
                f"{what}: {text!r} is not a duration like 150ms, 30s, 5m, 12h or 7d"
            )
        total += float(term.group(1)) * _SECONDS[unit]
        pos = term.end()
    if not stripped:
        raise InvalidConfigError(f"{what}: empty; give a duration like 150ms, 30s or 7d")
    return total


def parse_size(text: str, what: str = "size") -> int:
    """Bytes in ``text`` (``"1Gi"`` -> 2^30, ``"100MB"`` -> 10^8, ``"4096"`` -> 4096).

    Args:
        text: the size as written.
        what: how errors name the value (a flag, an option).

    Raises:
        InvalidConfigError: not a size (the message shows the accepted forms).
    """
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match is not None else None
    if match is None or unit not in _BYTES:
        raise InvalidConfigError(
            f"{what}: {text!r} is not a size like 1Gi, 500Mi, 100MB or 4096 (bytes)"
        )
    return int(float(match.group(1)) * _BYTES[unit])


def format_size(size: int) -> str:
    """``size`` bytes for people: ``512 B``, ``1.5 KiB``, ``2.0 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")

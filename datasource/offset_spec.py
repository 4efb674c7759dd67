"""Where a read starts or ends: ``OffsetSpec`` and the parser of its option forms.

``startingOffsets``/``endingOffsets`` take Kafka's words and JSON (and, for starting
offsets, ``group:NAME``); the time options build the same spec. This module is pure: it
parses strings into frozen values (which pickle to executors) and resolves nothing;
``datasource.resolve`` turns a spec into offsets at query start. It sits apart from the
rest of the option parsing because the reader, the resolver and the vector generator use
the spec without the options record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from spark_stream.errors import DataSourceOptionError, InvalidRequestError
from spark_stream.models import check_group_name

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "TimeStrategy",
    "group_option",
    "parse_offset_spec",
]

EARLIEST = -2
"""In offset JSON, as in Kafka: start at the first offset still in the log."""
LATEST = -1
"""In offset JSON, as in Kafka: the end of the log (HW, or LEO when uncommitted)."""

TimeStrategy = Literal["error", "latest"]

_GROUP_PREFIX = "group:"
"""``startingOffsets=group:NAME``: start at a consumer group's committed offsets."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or end: ``earliest``, ``latest``, per-partition offsets, a time, or
    a consumer group's committed offsets.

    Attributes:
        default: ``EARLIEST`` or ``LATEST``, for every partition not named in ``specific``.
        specific: ``(topic, partition, offset)`` triples from the JSON form; the offset
            may be ``EARLIEST`` or ``LATEST``.
        timestamp_ms: the time form (milliseconds since the epoch): the first record at
            or after it; when set, ``specific`` is empty.
        group: the group form ``group:NAME`` (starting offsets only): each partition
            starts at the group's committed offset, or at ``default`` (``EARLIEST``)
            without one; resolved at query start, when ``specific`` is empty.
        timestamps: ``(topic, partition, ms)`` triples of the per-partition time form
            (``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp``, Kafka's JSON);
            partitions not named take ``default``.
        time_strategy: a starting time with no record at or after it: ``latest`` starts
            at the end, ``error`` fails the query (``startingOffsetsByTimestampStrategy``).
    """

    default: int = LATEST
    specific: tuple[tuple[str, int, int], ...] = ()
    timestamp_ms: int | None = None
    group: str | None = None
    timestamps: tuple[tuple[str, int, int], ...] = ()
    time_strategy: TimeStrategy = "latest"

    def for_partition(self, topic: str, partition: int) -> int:
        """The offset (or ``EARLIEST``/``LATEST``) this spec names for one partition."""
        for t, p, offset in self.specific:
            if t == topic and p == partition:
                return offset
        return self.default

    def time_for(self, topic: str, partition: int) -> int | None:
        """The time (ms) this spec names for one partition, or None (an offset form)."""
        for t, p, ms in self.timestamps:
            if t == topic and p == partition:
                return ms
        return self.timestamp_ms

    def topics(self) -> set[str]:
        """Topics the JSON forms name."""
        return {t for t, _, _ in self.specific} | {t for t, _, _ in self.timestamps}


def parse_offset_spec(raw: str, name: str, *, ending: bool) -> OffsetSpec:
    """Parse ``earliest``, ``latest``, Kafka-style JSON ``{"topic": {"0": 23}}`` or, for
    starting offsets, ``group:NAME``.

    In the JSON form -2 means earliest and -1 latest; partitions not named take the
    default (earliest for starting, latest for ending offsets). In the group form,
    partitions without a committed offset start at the earliest.

    Raises:
        DataSourceOptionError: naming ``name``, on anything else.
    """
    text = raw.strip()
    lowered = text.lower()
    if lowered.startswith(_GROUP_PREFIX):
        if ending:
            raise DataSourceOptionError(f"option '{name}' cannot be a group's offsets")
        return OffsetSpec(default=EARLIEST, group=group_option(text[len(_GROUP_PREFIX) :], name))
    if lowered == "earliest":
        if ending:
            raise DataSourceOptionError(f"option '{name}' cannot be 'earliest'")
        return OffsetSpec(default=EARLIEST)
    if lowered == "latest":
        return OffsetSpec(default=LATEST)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        forms = "latest" if ending else "earliest, latest, group:NAME"
        raise DataSourceOptionError(
            f'option \'{name}\' must be {forms} or JSON like {{"topic": {{"0": 23}}}}, got {raw!r}'
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise DataSourceOptionError(f"option '{name}' JSON must be a non-empty object")
    specific: list[tuple[str, int, int]] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise DataSourceOptionError(
                f"option '{name}': topic {topic!r} must map partition numbers to offsets"
            )
        for part, offset in parts.items():
            try:
                index = int(part)
            except ValueError:
                index = -1
            if index < 0 or isinstance(offset, bool) or not isinstance(offset, int):
                raise DataSourceOptionError(
                    f"option '{name}': {topic}/{part} -> {offset!r} is not a partition "
                    "number mapped to an integer offset"
                )
            if offset < EARLIEST or (ending and offset == EARLIEST):
                raise DataSourceOptionError(
                    f"option '{name}': offset {offset} for {topic}/{index} is invalid"
                )
            specific.append((topic, index, offset))
    default = LATEST if ending else EARLIEST
    return OffsetSpec(default=default, specific=tuple(sorted(specific)))


def group_option(raw: str, name: str) -> str:
    """A consumer group's name given in option ``name`` (``group:NAME``, ``progressGroup``),
    checked by the rule the SC applies (topic-name rules).

    Raises:
        DataSourceOptionError: naming the option, when the SC would refuse the name.
    """
    try:
        return check_group_name(raw.strip(), f"option '{name}'")
    except InvalidRequestError as exc:
        raise DataSourceOptionError(str(exc)) from None

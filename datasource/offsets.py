"""Streaming offsets as Spark stores them: per topic-partition, JSON, stable key order.

A source offset is ``{"topic": {"0": 12, "1": 40}}``: the next offset to read in each
partition. Spark compares offsets by their JSON text (an unchanged offset means "no new
data"), so ``to_json_dict`` always orders topics by name and partitions by number, and
keys are strings as JSON requires. In memory an offset is a ``dict[TopicPartition, int]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from spark_stream.errors import InvalidRequestError

__all__ = ["TopicPartition", "PartitionOffsetMap", "to_json_dict", "from_json_dict"]


class TopicPartition(NamedTuple):
    """One partition of one topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.partition}"


PartitionOffsetMap = dict[TopicPartition, int]


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The Spark offset for ``offsets``: nested dicts in stable (sorted) order."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json_dict(value: Mapping[str, Any]) -> PartitionOffsetMap:
    """Parse an offset Spark hands back (from ``initialOffset``/``latestOffset``/checkpoint).

    Raises:
        InvalidRequestError: the value is not ``{topic: {partition: offset}}``.
    """
    if not isinstance(value, Mapping):
        raise InvalidRequestError(f"a fluvio source offset must be an object, got {value!r}")
    out: PartitionOffsetMap = {}
    for topic, parts in value.items():
        if not isinstance(parts, Mapping):
            raise InvalidRequestError(f"offset of topic {topic!r} must be an object: {parts!r}")
        for part, offset in parts.items():
            try:
                index = int(part)
            except (TypeError, ValueError):
                index = -1
            if index < 0 or isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise InvalidRequestError(
                    f"bad offset entry {topic}/{part} -> {offset!r} in a fluvio source offset"
                )
            out[TopicPartition(str(topic), index)] = offset
    return out

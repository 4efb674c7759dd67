"""``evolved_schema``: what ``UPDATE_TOPIC_SCHEMA`` makes of a topic's schema (pure)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sc.public_api import evolved_schema
from spark_stream.errors import InvalidConfigError
from spark_stream.models import Partition, PartitionSpec, PartitionStatus, Topic, TopicSpec
from spark_stream.models.topic_schema import TopicSchema, encode_arrow

V1 = pa.schema([pa.field("id", pa.int64(), nullable=False)])
V2 = V1.append(pa.field("name", pa.string()))


def _partitions(*status: tuple[int, int]) -> list[Partition]:
    """Partitions of ``t`` whose leaders reported ``(leo, log start)``."""
    spec = PartitionSpec(initial_leader=1, replicas=(1,))
    return [
        Partition.new("t", i, spec).model_copy(
            update={"status": PartitionStatus(leo=leo, log_start_offset=start)}
        )
        for i, (leo, start) in enumerate(status)
    ]


@pytest.mark.parametrize(
    ("typed", "status", "arrow", "version", "refused"),
    [
        ("untyped, no report yet", [(-1, -1), (-1, -1)], V1, 1, None),
        ("untyped, empty", [(0, 0), (0, 0)], V1, 1, None),
        ("untyped, one record", [(0, 0), (1, 0)], V1, None, "is untyped and holds records"),
        ("untyped, all retained away", [(5, 5)], V1, None, "is untyped and holds records"),
        ("typed with records", [(9, 0)], V2, 2, None),
        ("typed, a new column not null", [(0, 0)], V1.append(pa.field("n", pa.int8(), False)),
         None, "must be nullable"),
        ("typed, nothing new", [(0, 0)], V1, None, "adds no column"),
    ],
)  # fmt: skip
def test_evolved_schema(
    typed: str,
    status: list[tuple[int, int]],
    arrow: pa.Schema,
    version: int | None,
    refused: str | None,
) -> None:
    schema = TopicSchema.of(V1) if typed.startswith("typed") else None
    topic = Topic.new("t", TopicSpec(partitions=len(status), topic_schema=schema))
    if refused is not None:
        with pytest.raises(InvalidConfigError, match=refused):
            evolved_schema(topic, encode_arrow(arrow), _partitions(*status))
        return
    new = evolved_schema(topic, encode_arrow(arrow), _partitions(*status))
    assert (new.version, new.arrow_schema) == (version, arrow)

"""A new topic's tier resolution, for the table setting (``--table delta``)."""

from __future__ import annotations

import pytest

from sc.topic_tier import with_tier
from spark_stream.errors import InvalidConfigError
from spark_stream.models import Topic, TopicSpec


def topic(**spec: object) -> Topic:
    return Topic.new("orders", TopicSpec.from_dict(spec))


@pytest.mark.parametrize(
    ("spec", "root", "tier"),
    [
        ({"table": "delta"}, "/data/tier", "/data/tier/orders"),  # the cluster's default
        ({"table": "delta", "tier": "/elsewhere/o"}, None, "/elsewhere/o"),
        ({}, None, None),  # no tier, no table: fine
    ],
)
def test_a_table_gets_the_tier(spec: dict[str, object], root: str | None, tier: str) -> None:
    assert with_tier(topic(**spec), root).spec.tier == tier


def test_a_table_without_a_tier_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match=r"a table \(delta\) is kept over the tier"):
        with_tier(topic(table="delta"), None)

"""A new topic's tier: the SC's default filled in, URLs and retentions checked (pure)."""

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
        ({}, None, None),  # no root, no tier: untiered
        ({}, "/data/tier", "/data/tier/orders"),  # the cluster's default
        ({}, "s3://b/t/", "s3://b/t/orders"),
        ({"tier": "/elsewhere/o"}, "/data/tier", "/elsewhere/o"),  # given wins
        ({"tier": "memory://x/o"}, None, "memory://x/o"),
        ({"table": "delta"}, "/data/tier", "/data/tier/orders"),  # a table over the default
        ({"table": "delta", "tier": "/elsewhere/o"}, None, "/elsewhere/o"),
    ],
)
def test_tier_resolution(spec: dict[str, object], root: str | None, tier: str | None) -> None:
    assert with_tier(topic(**spec), root).spec.tier == tier


@pytest.mark.parametrize(
    ("spec", "root", "message"),
    [
        ({"localRetentionSecs": 60}, None, "a local retention needs a tier"),
        ({"table": "delta"}, None, r"a table \(delta\) is kept over the tier"),
        ({"tier": "nosuchfs://x/y"}, None, "tier 'nosuchfs://x/y'"),
        (
            {"tier": "/t", "localRetentionSecs": 7200, "retentionSecs": 3600},
            None,
            "local retention 7200s is longer than the tier's retention 3600s",
        ),
    ],
)
def test_bad_tiers_are_refused(spec: dict[str, object], root: str | None, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        with_tier(topic(**spec), root)

"""``GroupMetrics.published``: what a published plan does to a group's counters."""

from __future__ import annotations

import pytest

from sc.groups.metrics import GroupMetrics
from spark_stream.models import ConsumerGroupStatus
from tests.sc.controllers.group_helpers import A, B, grants, member, status

BOTH = [member(A), member(B)]


@pytest.mark.parametrize(
    ("old", "new", "partitions", "rebalances", "timed"),
    [
        # the same plan again: nothing moves
        (status(1, 1, BOTH, grants(A, 1, [0])), status(1, 1, BOTH, grants(A, 1, [0])), 2, 0, 0),
        # a revoke starts partition 0's wait; a new generation is a rebalance
        (
            status(1, 1, BOTH, grants(A, 1, [0])),
            status(2, 2, BOTH, grants(A, 1, [0], revoking=True)),
            2,
            1,
            1,
        ),
        # partition 0 left the plan (its holder left)
        (status(1, 1, BOTH, grants(A, 1, [0])), status(2, 2, [member(B)]), 2, 1, 1),
        # it passed to another member at once (its holder died): it waited too
        (status(1, 1, BOTH, grants(A, 1, [0])), status(2, 2, BOTH, grants(B, 2, [0])), 2, 1, 1),
        # the partition was deleted (past the topic's count): it waits for nobody
        (status(1, 1, BOTH, grants(A, 1, [0, 1])), status(2, 2, BOTH, grants(A, 1, [0])), 1, 1, 0),
    ],
)
def test_published(
    old: ConsumerGroupStatus,
    new: ConsumerGroupStatus,
    partitions: int,
    rebalances: int,
    timed: int,
) -> None:
    metrics = GroupMetrics()
    metrics.published(old, new, {"t": partitions}, now=10.0)
    assert metrics.rebalances == rebalances
    # A grant of every partition after 0.25 s counts (and times) only those that waited.
    metrics.granted({("t", 0), ("t", 1)}, now=10.25)
    assert metrics.reassignments == timed
    assert metrics.reassign_ms_last == (250.0 if timed else None)


def test_a_kept_holder_stops_the_wait() -> None:
    metrics = GroupMetrics()
    revoking = status(2, 2, BOTH, grants(A, 1, [0], revoking=True))
    metrics.published(status(1, 1, BOTH, grants(A, 1, [0])), revoking, {"t": 1}, now=1.0)
    metrics.published(revoking, status(3, 2, BOTH, grants(A, 1, [0])), {"t": 1}, now=2.0)
    metrics.granted({("t", 0)}, now=3.0)
    assert (metrics.rebalances, metrics.reassignments) == (2, 0)

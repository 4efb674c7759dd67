"""Retry policy: the backoff a client config asks for, edge values included."""

from __future__ import annotations

import pytest

from spark_stream.backoff import BackoffPolicy
from spark_stream.client.leader import (
    RetryPolicy,
    from_leader,
    lookup_hints,
    replaced,
    retry_backoff,
)
from spark_stream.client.metadata import Leader
from spark_stream.errors import (
    FencedLeaderEpochError,
    FluvioError,
    GateNotReadyError,
    NotLeaderError,
    RequestTimeoutError,
    UnknownLeaderEpochError,
    UnknownPartitionError,
    UnknownTopicError,
)
from tests.spark_stream.client.test_metadata import base_view


@pytest.mark.parametrize(
    ("initial_ms", "maximum_ms", "expected"),
    [
        (50, 2000, [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]),
        (5, 1000, [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64]),
        (1500, 1000, [1.0] * 8),  # a first delay above the ceiling waits the ceiling
        (0, 1000, [0.0] * 8),  # no backoff: retry at once
        (50, 0, [0.0] * 8),
    ],
)
def test_config_backoff_doubles_up_to_the_ceiling(
    initial_ms: float, maximum_ms: float, expected: list[float]
) -> None:
    policy = RetryPolicy(retries=8, backoff=retry_backoff(initial_ms, maximum_ms))
    assert [policy.delay(i) for i in range(policy.retries)] == pytest.approx(expected)


def test_zero_backoff_is_none_and_the_default_is_the_usual_one() -> None:
    assert retry_backoff(0, 1000) is None
    assert retry_backoff(50, 2000) == BackoffPolicy(0.05, 2.0)
    assert RetryPolicy().delay(0) == 0.05 and RetryPolicy().delay(10) == 2.0


def test_a_gate_not_ready_retries_within_10_to_50_ms_other_errors_keep_the_backoff() -> None:
    policy = RetryPolicy(retries=8, backoff=retry_backoff(50, 2000))
    gate = GateNotReadyError("no gate yet")
    assert [policy.delay(i, gate) for i in range(5)] == pytest.approx(
        [0.01, 0.02, 0.04, 0.05, 0.05]
    )
    assert policy.delay(3, NotLeaderError("moved")) == pytest.approx(0.4)
    assert RetryPolicy(backoff=None).delay(2, gate) == 0.0


@pytest.mark.parametrize("error", [FencedLeaderEpochError("old"), UnknownLeaderEpochError("new")])
def test_a_leader_epoch_refusal_retries_as_soon_as_a_gate(error: Exception) -> None:
    policy = RetryPolicy(retries=8, backoff=retry_backoff(50, 2000))
    assert [policy.delay(i, error) for i in range(3)] == pytest.approx([0.01, 0.02, 0.04])  # type: ignore[arg-type]


def test_the_next_lookup_avoids_the_spu_or_the_epoch_that_failed() -> None:
    leader = Leader(2, "h", 1, leader_epoch=7)
    assert lookup_hints(NotLeaderError("moved"), leader) == (2, None)
    assert lookup_hints(FencedLeaderEpochError("stale"), leader) == (None, 7)
    assert lookup_hints(UnknownLeaderEpochError("behind"), leader) == (None, None)
    assert lookup_hints(RequestTimeoutError("slow"), leader) == (None, None)
    assert lookup_hints(NotLeaderError("moved"), None) == (None, None)


@pytest.mark.parametrize(
    ("error", "topic", "partition", "expected"),
    [
        # An SPU not yet told of a partition the SC lists: retried.
        (UnknownTopicError("SPU 2 holds no replica of topic 'orders'"), "orders", 1,
         UnknownPartitionError),
        # The metadata does not list it (deleted, never existed): stays final.
        (UnknownTopicError("no replica"), "orders", 2, UnknownTopicError),
        (UnknownTopicError("no replica"), "gone", 0, UnknownTopicError),
        (NotLeaderError("moved"), "orders", 0, NotLeaderError),
    ],
)  # fmt: skip
def test_an_spu_unaware_of_a_listed_partition_is_retried(
    error: FluvioError, topic: str, partition: int, expected: type[FluvioError]
) -> None:
    mapped = from_leader(error, base_view(), topic, partition)
    assert type(mapped) is expected
    assert mapped.retriable is (expected is not UnknownTopicError)
    assert str(error) in str(mapped)


@pytest.mark.parametrize(
    ("current", "spu_id", "expected"),
    [
        (Leader(5001, "127.0.0.1", 9005, 3), 5001, False),  # still the leader
        (Leader(5001, "127.0.0.1", 9005, 4), 5001, False),  # re-elected: it answers
        (Leader(5002, "127.0.0.1", 9007, 4), 5001, True),  # another SPU leads
        (None, 5001, True),  # offline (a hung SPU past its heartbeat), no leader yet
    ],
)
def test_replaced(current: Leader | None, spu_id: int, expected: bool) -> None:
    assert replaced(current, spu_id) is expected

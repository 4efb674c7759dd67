"""Backoff: the delay sequence, reset, and a sleep a change can cut short."""

from __future__ import annotations

import asyncio
import time

import pytest

from spark_stream.backoff import BackoffPolicy


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (BackoffPolicy(0.05, 2.0), [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]),
        (BackoffPolicy(0.1, 0.1), [0.1] * 8),
        (BackoffPolicy(1.0, 10.0, factor=3.0), [1.0, 3.0, 9.0, 10.0, 10.0, 10.0, 10.0, 10.0]),
    ],
)
def test_delays_grow_by_the_factor_up_to_the_ceiling(
    policy: BackoffPolicy, expected: list[float]
) -> None:
    assert [policy.delay(i) for i in range(8)] == pytest.approx(expected)
    state = policy.start()
    assert [state.next() for _ in range(8)] == pytest.approx(expected)


def test_reset_starts_again_and_huge_attempts_stay_at_the_ceiling() -> None:
    state = BackoffPolicy(0.05, 2.0).start()
    for _ in range(5000):
        state.next()
    assert state.next() == 2.0
    state.reset()
    assert state.next() == 0.05


@pytest.mark.parametrize(
    ("initial", "maximum", "factor"), [(0, 1, 2), (-1, 1, 2), (2, 1, 2), (0.1, 1, 0.5)]
)
def test_refuses_a_policy_that_cannot_back_off(
    initial: float, maximum: float, factor: float
) -> None:
    with pytest.raises(ValueError, match="backoff"):
        BackoffPolicy(initial, maximum, factor)


def test_sleep_waits_the_delay_or_wakes_early() -> None:
    async def body() -> None:
        state = BackoffPolicy(0.05, 5.0).start()
        began = time.monotonic()
        assert await state.sleep() is False
        assert time.monotonic() - began >= 0.045

        wake = asyncio.Event()
        state = BackoffPolicy(5.0, 5.0).start()
        asyncio.get_running_loop().call_later(0.05, wake.set)
        began = time.monotonic()
        assert await state.sleep(wake) is True
        assert time.monotonic() - began < 4.0  # woken, not the 5 s delay
        assert wake.is_set()

        state = BackoffPolicy(0.02, 0.02).start()
        assert await state.sleep(asyncio.Event()) is False

    asyncio.run(body())

"""The KV retry budget: the deadline arithmetic (table) and the context it travels in."""

from __future__ import annotations

import asyncio

import pytest

from sc.kv.budget import budget_deadline, call_deadline, retry_budget


@pytest.mark.parametrize(
    ("now", "reconnect", "budget", "expected"),
    [
        (100.0, 30.0, None, 130.0),  # the SC's own loops: the store's timeout
        (100.0, 30.0, 103.0, 103.0),  # an admin request: its budget ends first
        (100.0, 2.0, 110.0, 102.0),  # a budget longer than the store's timeout
        (100.0, 30.0, 99.0, 99.0),  # a spent budget: no retry at all
    ],
)
def test_call_deadline(now: float, reconnect: float, budget: float | None, expected: float) -> None:
    assert call_deadline(now, reconnect, budget) == expected


def test_budget_is_scoped_nests_to_the_earlier_deadline_and_reaches_child_tasks() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        assert budget_deadline() is None
        with retry_budget(5.0):
            outer = budget_deadline()
            assert outer is not None and outer <= loop.time() + 5.0
            with retry_budget(60.0):
                assert budget_deadline() == outer
            child = await asyncio.create_task(_read_budget())
            assert child == outer
        assert budget_deadline() is None

    asyncio.run(run())


async def _read_budget() -> float | None:
    return budget_deadline()


def test_budget_must_be_positive() -> None:
    async def run() -> None:
        with pytest.raises(ValueError, match="must be > 0"), retry_budget(0):
            pass

    asyncio.run(run())

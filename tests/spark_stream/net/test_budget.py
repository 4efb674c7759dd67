"""``ByteBudget`` (pure accounting, table-driven) and ``RequestBudget`` (its asyncio face)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from spark_stream.net.budget import (
    SMALL_FRAME,
    TRIM_AFTER_BYTES,
    ByteBudget,
    RequestBudget,
    release_free_memory,
    tune_heap,
)
from tests.polling import run_bounded as run
from tests.polling import until

# Each row: capacity, then steps ("take", key, n) -> granted now?, ("charge", n),
# ("release", n) -> keys granted by it, ("withdraw", key) -> keys granted by it; and the
# bytes held at the end.
ROWS: list[tuple[str, int, list[tuple[Any, ...]], int]] = [
    ("fits under the capacity", 100, [("take", "a", 60, True), ("take", "b", 40, True)], 100),
    (
        "waits past it until enough is released",
        100,
        [("take", "a", 60, True), ("take", "b", 50, False), ("release", 60, ["b"])],
        50,
    ),
    (
        "first come first served: a smaller later request does not overtake",
        100,
        [
            ("take", "a", 60, True),
            ("take", "b", 50, False),
            ("take", "c", 10, False),
            ("release", 60, ["b", "c"]),
        ],
        60,
    ),
    (
        "one release wakes only what fits, in order",
        100,
        [
            ("take", "a", 100, True),
            ("take", "b", 70, False),
            ("take", "c", 70, False),
            ("release", 100, ["b"]),
            ("release", 70, ["c"]),
        ],
        70,
    ),
    (
        "a frame larger than the budget is let in when nothing is held",
        100,
        [("take", "big", 500, True), ("take", "b", 1, False), ("release", 500, ["b"])],
        1,
    ),
    (
        "an oversize frame waits for everything held, then goes alone",
        100,
        [
            ("take", "a", 10, True),
            ("take", "big", 500, False),
            ("take", "c", 10, False),
            ("release", 10, ["big"]),
            ("release", 500, ["c"]),
        ],
        10,
    ),
    (
        "charges never wait, even past the capacity, and hold others back",
        100,
        [("charge", 90), ("charge", 30), ("take", "a", 10, False), ("release", 120, ["a"])],
        10,
    ),
    (
        "a withdrawn head unblocks the requests behind it",
        100,
        [
            ("take", "a", 50, True),
            ("take", "big", 80, False),
            ("take", "c", 40, False),
            ("withdraw", "big", ["c"]),
        ],
        90,
    ),
    ("withdrawing an unknown key changes nothing", 100, [("withdraw", "x", [])], 0),
    ("a zero-byte request is granted", 100, [("charge", 100), ("take", "z", 0, True)], 100),
    (
        "try_take grants what fits now and never queues or jumps the queue",
        100,
        [
            ("try", 60, True),
            ("try", 50, False),
            ("take", "a", 50, False),
            ("try", 10, False),
            ("release", 60, ["a"]),
            ("try", 50, True),
        ],
        100,
    ),
]


@pytest.mark.parametrize(
    ("capacity", "steps", "held"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_byte_budget(capacity: int, steps: list[tuple[Any, ...]], held: int) -> None:
    budget = ByteBudget(capacity)
    for step in steps:
        if step[0] == "take":
            assert budget.take(step[1], step[2]) is step[3], step
        elif step[0] == "try":
            assert budget.try_take(step[1]) is step[2], step
            assert budget.waiting == 0 or step[2] is False
        elif step[0] == "charge":
            budget.charge(step[1])
        elif step[0] == "release":
            assert budget.release(step[1]) == step[2], step
        else:
            assert budget.withdraw(step[1]) == step[2], step
    assert budget.used == held
    assert budget.peak >= held


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: ByteBudget(0), "positive capacity"),
        (lambda b: b.take("a", -1), "cannot be negative"),
        (lambda b: b.release(1), "only 0 are held"),
        (lambda b: (b.charge(100), b.take("a", 1), b.take("a", 1)), "already waiting"),
    ],
)
def test_byte_budget_refuses_bad_use(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(ByteBudget(100))


def test_request_budget_waits_then_wakes_in_order() -> None:
    async def main() -> None:
        budget = RequestBudget(2 * SMALL_FRAME)
        await budget.acquire(2 * SMALL_FRAME)
        order: list[str] = []

        async def want(name: str, n: int) -> None:
            await budget.acquire(n)
            order.append(name)

        tasks = [asyncio.create_task(want(n, SMALL_FRAME)) for n in ("b", "c")]
        await asyncio.sleep(0)
        assert budget.waiting == 2 and order == []
        await budget.acquire(10)  # small: charged at once although the budget is spent
        assert budget.used == 2 * SMALL_FRAME + 10
        budget.release(2 * SMALL_FRAME + 10)
        await asyncio.gather(*tasks)
        assert order == ["b", "c"] and budget.used == 2 * SMALL_FRAME and budget.waiting == 0

    run(main())


def test_a_cancelled_wait_leaves_nothing_held_and_lets_the_next_in() -> None:
    async def main() -> None:
        budget = RequestBudget(SMALL_FRAME)
        await budget.acquire(SMALL_FRAME)
        first = asyncio.create_task(budget.acquire(SMALL_FRAME))
        second = asyncio.create_task(budget.acquire(SMALL_FRAME))
        await asyncio.sleep(0)
        first.cancel()
        budget.release(SMALL_FRAME)  # decided while the cancelled wait was still queued
        await second
        with pytest.raises(asyncio.CancelledError):
            await first
        assert budget.used == SMALL_FRAME and budget.waiting == 0

    run(main())


def test_a_wait_cancelled_after_its_grant_gives_the_bytes_back() -> None:
    async def main() -> None:
        budget = RequestBudget(SMALL_FRAME)
        await budget.acquire(SMALL_FRAME)
        waiter = asyncio.create_task(budget.acquire(SMALL_FRAME))
        await asyncio.sleep(0)
        budget.release(SMALL_FRAME)  # granted; the waiter has not run yet
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert budget.used == 0

    run(main())


def test_a_drained_budget_trims_the_heap_once_after_a_burst() -> None:
    async def main() -> None:
        trims: list[int] = []
        budget = RequestBudget(TRIM_AFTER_BYTES, trim=lambda: trims.append(budget.used))
        await budget.acquire(TRIM_AFTER_BYTES // 2)
        budget.release(TRIM_AFTER_BYTES // 2)  # drained, but not enough released yet
        for _ in range(3):
            await budget.acquire(TRIM_AFTER_BYTES)
            budget.release(TRIM_AFTER_BYTES)
        await until(lambda: trims, what="a trim")
        assert trims == [0]  # one trim for the whole lull, with nothing held

    run(main())


def test_release_free_memory_works_here() -> None:
    # The test machines run glibc; elsewhere the call is a no-op returning False.
    assert release_free_memory() is True


def test_tune_heap_works_here() -> None:
    assert tune_heap() is True

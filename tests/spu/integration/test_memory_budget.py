"""The request-bytes budget with real processes: 24 connections sending large frames at once.

An SPU (produce) and the SC (any request: the frames' tails are read whole either way)
each get 24 connections sending 12 MiB frames concurrently. The server's RSS, sampled
with psutil while they send, stays under its baseline plus the budget plus the socket
read buffers the budget does not count (``PER_CONNECTION``) plus a margin; every frame
is answered and, on the SPU, every record is in the log; after the connections close the
RSS goes back near the baseline. Before the budget the SPU reached ~680 MiB from a 120 MiB
baseline here and kept ~520 MiB after the connections closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import psutil
import pytest

from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks, ApiKey, ProduceRequest, ProduceResponse
from spark_stream.records import encode_records
from tests.polling import until
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import offsets

pytestmark = pytest.mark.integration

MiB = 1 << 20
BUDGET = 64 * MiB
CONNECTIONS = 24
FRAMES = 3
PER_CONNECTION = 4 * MiB
"""What a connection holds outside the budget: its socket read buffer (asyncio pauses
reading past 2 MiB) and the chunk being read."""
MARGIN = 64 * MiB
RETURNED = 48 * MiB
"""How far above its baseline the RSS may stay once every connection closed."""


class RssSampler:
    """Samples a process's RSS every few milliseconds while a block runs."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    def rss(self) -> int:
        return int(self.process.memory_info().rss)

    async def __aenter__(self) -> RssSampler:
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self.peak = max(self.peak, self.rss())

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, self.rss())
            await asyncio.sleep(0.01)  # sampling interval


async def send_concurrently(
    conns: list[Connection], send: Callable[[Connection, int], Awaitable[Any]]
) -> list[Any]:
    """``FRAMES`` sends per connection, the connections all at once; every reply."""

    async def one(conn: Connection, c: int) -> list[Any]:
        return [await send(conn, c * FRAMES + i) for i in range(FRAMES)]

    per_conn = await asyncio.gather(*(one(conn, c) for c, conn in enumerate(conns)))
    return [reply for replies in per_conn for reply in replies]


async def check_bounded_and_returned(
    pid: int,
    open_conn: Callable[[], Awaitable[Connection]],
    send: Callable[[Connection, int], Awaitable[Any]],
) -> list[Any]:
    """Run the concurrent sends against ``pid``'s server; check its RSS; the replies."""
    sampler = RssSampler(pid)
    conns = [await open_conn() for _ in range(CONNECTIONS)]
    baseline = sampler.rss()
    async with sampler:
        replies = await send_concurrently(conns, send)
    for conn in conns:
        await conn.close()
    bound = baseline + BUDGET + CONNECTIONS * PER_CONNECTION + MARGIN
    assert sampler.peak <= bound, (
        f"RSS peaked at {sampler.peak / MiB:.0f} MiB, over {bound / MiB:.0f} MiB "
        f"(baseline {baseline / MiB:.0f} MiB)"
    )
    await until(
        lambda: sampler.rss() <= baseline + RETURNED,
        within=60,
        what=f"RSS back near its {baseline / MiB:.0f} MiB baseline (now {sampler.rss() / MiB:.0f})",
    )
    return replies


def test_spu_memory_stays_within_its_budget_and_returns(
    spu_cluster: ClusterFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUVIO_SC_REQUEST_BUDGET_BYTES", str(BUDGET))

    async def body() -> None:
        settings = {"max_batch_bytes": 16 * MiB, "request_budget_bytes": BUDGET}
        async with spu_cluster([1], spu_settings=settings) as cluster:
            await cluster.create_topic("big", partitions=1, replicationFactor=1)
            spu_pid = cluster.spus[1].pid
            assert spu_pid is not None
            value = b"v" * (3 * MiB)

            async def produce(conn: Connection, n: int) -> ProduceResponse:
                frame = encode_records([n.to_bytes(4, "big") + value for _ in range(4)])
                reply = await conn.call(
                    ProduceRequest("big", 0, Acks.LEADER, 120_000, frame), timeout=300
                )
                assert isinstance(reply, ProduceResponse)
                return reply

            replies = await check_bounded_and_returned(spu_pid, lambda: cluster.connect(1), produce)
            sent = CONNECTIONS * FRAMES
            assert sorted(r.base_offset for r in replies) == list(range(0, 4 * sent, 4))
            conn = await cluster.connect(1)
            assert (await offsets(conn, "big", 0)).leo == 4 * sent  # every record is in

            # The SC, with the same budget, under the same load (its public port).
            sc_pid = cluster.sc.pid
            assert sc_pid is not None
            tail = b"t" * (12 * MiB)

            async def ask(conn: Connection, n: int) -> int:
                meta, _ = await conn.request(ApiKey.API_VERSIONS, {"n": n}, tail, timeout=300)
                assert meta["apis"]
                return n

            answered = await check_bounded_and_returned(
                sc_pid,
                lambda: Connection.open("127.0.0.1", cluster.sc.public_port),
                ask,
            )
            assert sorted(answered) == list(range(sent))

    asyncio.run(body())

"""Test helpers that drive SPUs with ``Connection`` and the data-plane messages directly.

The client library is written in parallel; these helpers speak the protocol themselves:
produce, fetch every record in a range, read a streaming fetch, find a partition's
leader through the SC, and poll conditions with a deadline (never a bare sleep).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

from spark_stream.client.admin import AdminClient
from spark_stream.client.consumer.local_files import LocalFiles
from spark_stream.errors import FluvioError
from spark_stream.net.connection import Connection
from spark_stream.protocol import (
    Acks,
    FetchLocalRequest,
    FetchLocalResponse,
    FetchOffsetsRequest,
    FetchOffsetsResponse,
    FetchRequest,
    FetchResponse,
    Isolation,
    ProduceRequest,
    ProduceResponse,
    StreamFetchPush,
    StreamFetchRequest,
)
from spark_stream.records import decode_frames, encode_records

T = TypeVar("T")


def run(body: Callable[[], Awaitable[T]], timeout: float = 120) -> T:
    """Run ``body()`` on a new event loop, bounded against hangs."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await body()

    return asyncio.run(bounded())


__all__ = [
    "run",
    "until",
    "produce",
    "fetch_values",
    "stream_values",
    "offsets",
    "leader_of",
    "values",
]


async def until(
    check: Callable[[], Awaitable[T] | T],
    within: float = 20.0,
    what: str = "condition",
    interval: float = 0.05,
) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``within`` seconds.

    Exceptions from ``check`` count as "not yet" (a restarting peer refuses connections).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last: BaseException | None = None
    while True:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return result  # type: ignore[return-value]
        except (FluvioError, OSError) as exc:
            last = exc
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached within {within}s (last error: {last!r})")
        await asyncio.sleep(interval)  # poll interval of a bounded wait


def values(*items: str) -> list[bytes]:
    """Values as the consumer sees them."""
    return [i.encode() for i in items]


async def produce(
    conn: Connection,
    topic: str,
    partition: int,
    items: list[str],
    *,
    acks: Acks = Acks.LEADER,
    producer_id: int = -1,
    sequence: int = -1,
    timeout_ms: int = 5000,
    frame: bytes | None = None,
) -> ProduceResponse:
    """Produce one frame of ``items`` (or a prepared ``frame``)."""
    tail = (
        frame
        if frame is not None
        else encode_records(items, producer_id=producer_id, sequence=sequence)
    )
    reply = await conn.call(
        ProduceRequest(topic, partition, acks, timeout_ms, tail), timeout=timeout_ms / 1000 + 10
    )
    assert isinstance(reply, ProduceResponse)
    return reply


async def offsets(conn: Connection, topic: str, partition: int) -> FetchOffsetsResponse:
    """The partition's offsets from its leader."""
    reply = await conn.call(FetchOffsetsRequest(topic, partition), timeout=10)
    assert isinstance(reply, FetchOffsetsResponse)
    return reply


async def fetch_values(
    conn: Connection,
    topic: str,
    partition: int,
    offset: int = 0,
    isolation: Isolation = Isolation.COMMITTED,
    max_bytes: int = 1 << 20,
) -> list[bytes]:
    """Every visible record value from ``offset`` on, through repeated fetches."""
    out: list[bytes] = []
    position = offset
    while True:
        reply = await conn.call(
            FetchRequest(topic, partition, position, max_bytes, isolation), timeout=10
        )
        assert isinstance(reply, FetchResponse)
        if not len(reply.tail):  # type: ignore[arg-type]
            return out
        for batch in decode_frames(reply.tail, with_offsets=True):  # type: ignore[arg-type]
            for off, value in zip(
                batch.column("offset").to_pylist(),
                batch.column("value").to_pylist(),
                strict=True,
            ):
                if off >= position:
                    out.append(value)
            position = batch.column("offset")[-1].as_py() + 1


async def local_values(
    conn: Connection,
    topic: str,
    partition: int,
    offset: int = 0,
    isolation: Isolation = Isolation.COMMITTED,
) -> list[bytes]:
    """Every visible record value from ``offset`` on, through one local fetch: the leader
    names the file range and this process reads it (the test runs on the leader's host)."""
    reply = await conn.call(
        FetchLocalRequest(topic, partition, offset, 1 << 20, isolation), timeout=10
    )
    assert isinstance(reply, FetchLocalResponse)
    if not reply.path:
        return []
    files = LocalFiles()
    try:
        data = await asyncio.to_thread(
            files.read, reply.path, reply.position, reply.length, reply.device, reply.inode
        )
    finally:
        files.close()
    assert data is not None, f"{reply.path} is not the file the leader named"
    batches = decode_frames(data, with_offsets=True)
    assert batches[0].column("offset")[0].as_py() == reply.base_offset
    return [
        value
        for batch in batches
        for off, value in zip(
            batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
        )
        if off >= offset
    ]


async def stream_values(
    conn: Connection,
    topic: str,
    partition: int,
    offset: int,
    count: int,
    isolation: Isolation = Isolation.COMMITTED,
    within: float = 20.0,
) -> tuple[list[bytes], list[StreamFetchPush]]:
    """Read a streaming fetch until ``count`` records arrived (bounded by ``within`` seconds)."""
    got: list[bytes] = []
    pushes: list[StreamFetchPush] = []
    async with asyncio.timeout(within):
        request = StreamFetchRequest(topic, partition, offset, isolation=isolation)
        async with await conn.stream(request) as stream:
            async for item in stream:
                push = item.message()
                assert isinstance(push, StreamFetchPush)
                pushes.append(push)
                for batch in decode_frames(push.tail, with_offsets=True):  # type: ignore[arg-type]
                    for off, value in zip(
                        batch.column("offset").to_pylist(),
                        batch.column("value").to_pylist(),
                        strict=True,
                    ):
                        if off >= offset:
                            got.append(value)
                if len(got) >= count:
                    return got, pushes
    return got, pushes


async def leader_of(admin: AdminClient, name: str, *, not_in: set[int] = frozenset()) -> int:  # type: ignore[assignment]
    """The partition's leader as the SC reports it, once Online and not in ``not_in``."""

    async def check() -> int | None:
        for part in await admin.list_partitions():
            if part.name == name and part.status.resolution.value == "Online":
                leader = part.status.leader
                if leader is not None and leader not in not_in:
                    return leader
        return None

    leader = await until(check, what=f"an online leader of {name}")
    assert isinstance(leader, int)
    return leader

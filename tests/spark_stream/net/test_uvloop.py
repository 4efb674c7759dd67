"""``Connection`` and ``Server`` on a uvloop event loop, on loopback.

uvloop hands a ``StreamReaderProtocol`` its bytes through ``data_received`` even when it
also has ``get_buffer`` (it takes a protocol as buffered only when it is not an
``asyncio.Protocol``), so ``FrameReceiver`` must frame what arrives that way too: before
it did, a connection opened under uvloop never saw a reply (an SPU under uvloop never
finished its handshake with the SC). These run the receiver's paths (small frames in the
scratch buffer, bodies in their own, oversized frames skipped, streams) under uvloop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from spark_stream.errors import RecordTooLargeError
from spark_stream.net._receiver import OWN_BUFFER_BODY, SCRATCH_SIZE
from spark_stream.net.connection import Connection
from spark_stream.net.server import ConnContext, Server
from spark_stream.protocol import ApiKey, Request

uvloop = pytest.importorskip("uvloop")

pytestmark = pytest.mark.integration

ECHO, STREAM = ApiKey.CREATE_TOPIC, ApiKey.WATCH_METADATA


async def _echo(req: Request, ctx: ConnContext) -> Any:
    if req.meta.get("grow"):
        return req.meta, b"g" * req.meta["grow"]
    return req.meta, req.tail


async def _stream(req: Request, ctx: ConnContext) -> AsyncIterator[Any]:
    for i in range(req.meta["n"]):
        yield {"i": i}, b"p" * (i * 997)


def _on_uvloop(test: Callable[[Server], Awaitable[None]]) -> None:
    async def main() -> None:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with asyncio.timeout(30), Server({ECHO: _echo, STREAM: _stream}) as server:
            await test(server)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


def test_tails_of_every_size_arrive_intact_when_pipelined() -> None:
    sizes = [0, 1, 20, 4095, OWN_BUFFER_BODY - 64, OWN_BUFFER_BODY, OWN_BUFFER_BODY + 1]
    sizes += [SCRATCH_SIZE - 20, SCRATCH_SIZE, SCRATCH_SIZE + 7, 3 * SCRATCH_SIZE + 5]

    async def test(server: Server) -> None:
        conn = await Connection.open("127.0.0.1", server.port)
        try:
            tails = [bytes([i % 251]) * n for i, n in enumerate(sizes * 3)]
            replies = await asyncio.gather(
                *(conn.request(ECHO, {"i": i}, t) for i, t in enumerate(tails))
            )
            for i, ((meta, tail), sent) in enumerate(zip(replies, tails, strict=True)):
                assert meta == {"i": i}
                assert bytes(tail) == sent
        finally:
            await conn.close()

    _on_uvloop(test)


def test_a_stream_delivers_every_push_in_order() -> None:
    async def test(server: Server) -> None:
        conn = await Connection.open("127.0.0.1", server.port)
        try:
            async with await conn.stream(STREAM, {"n": 40}, window=4) as stream:
                pushes = [(push.meta["i"], bytes(push.tail)) async for push in stream]
            assert pushes == [(i, b"p" * (i * 997)) for i in range(40)]
        finally:
            await conn.close()

    _on_uvloop(test)


def test_an_oversized_reply_is_skipped_and_the_connection_stays_usable() -> None:
    async def test(server: Server) -> None:
        small = await Connection.open("127.0.0.1", server.port, max_frame_size=4096)
        try:
            big, ok = small.request(ECHO, {"grow": 3 << 20}), small.request(ECHO, {"ok": 2})
            results = await asyncio.gather(big, ok, return_exceptions=True)
            assert isinstance(results[0], RecordTooLargeError)
            assert results[1][0] == {"ok": 2}
            assert bytes((await small.request(ECHO, {"ok": 3}, b"y" * 3000))[1]) == b"y" * 3000
        finally:
            await small.close()

    _on_uvloop(test)

"""``ChunkReader`` on real loopback sockets: order, flow control, end of input, no copies."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from spark_stream.net._chunk_reader import ChunkReader, chunk_reader_of
from tests.polling import run_bounded, until

pytestmark = pytest.mark.integration

LIMIT = 64 * 1024

Accepted = asyncio.Queue[tuple[ChunkReader, asyncio.StreamWriter]]


async def _serve() -> tuple[
    asyncio.Server, asyncio.Queue[tuple[ChunkReader, asyncio.StreamWriter]]
]:
    """A server whose accepted connections arrive on the queue as (reader, writer)."""
    accepted: Accepted = asyncio.Queue()

    async def on_accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put((chunk_reader_of(writer), writer))

    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ChunkReader(on_accept, limit=LIMIT), "127.0.0.1", 0)
    return server, accepted


def test_bytes_arrive_whole_and_in_order_through_pauses_then_end_of_input() -> None:
    payload = os.urandom(8 << 20)

    async def main() -> None:
        server, accepted = await _serve()
        port = server.sockets[0].getsockname()[1]
        _, client = await asyncio.open_connection("127.0.0.1", port)
        source, writer = await accepted.get()
        client.write(payload)  # far more than 2 * LIMIT: the reader must pause the socket
        await until(lambda: source._read_paused, what="reading paused past 2 * limit")
        assert not writer.transport.is_reading()  # type: ignore[attr-defined]
        received = []
        while len(b"".join(received)) < len(payload):
            received.append(await source.read())
        assert b"".join(received) == payload
        assert writer.transport.is_reading()  # type: ignore[attr-defined]  # resumed
        client.close()
        assert await source.read() == b""
        assert await source.read() == b""  # and stays ended
        writer.close()
        server.close()
        await server.wait_closed()

    run_bounded(main())


def test_a_lost_connection_raises_after_the_bytes_received_before_it() -> None:
    async def main() -> None:
        server, accepted = await _serve()
        port = server.sockets[0].getsockname()[1]
        raw = socket.create_connection(("127.0.0.1", port))
        source, writer = await accepted.get()
        raw.sendall(b"last words")
        await until(lambda: source._waiting, what="bytes queued")
        # SO_LINGER 0: close sends a reset, which the server's transport reports as lost.
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        raw.close()
        await until(lambda: source._ended, what="connection lost")
        assert await source.read() == b"last words"  # what came before the reset first
        with pytest.raises(ConnectionResetError):
            await source.read()
        writer.close()
        server.close()
        await server.wait_closed()

    run_bounded(main())


def test_received_bytes_are_handed_on_as_they_are_and_views_are_copied_once() -> None:
    async def main() -> None:
        source = ChunkReader()
        chunk = b"x" * 1000
        source.data_received(chunk)
        assert await source.read() is chunk  # no copy of a bytes chunk
        scratch = bytearray(b"abc")
        source.data_received(memoryview(scratch))  # type: ignore[arg-type]  # a reused buffer
        scratch[:] = b"zzz"  # the transport reuses its buffer for the next read
        assert await source.read() == b"abc"
        source.eof_received()
        assert await source.read() == b""

    run_bounded(main())


def test_a_connection_made_with_another_protocol_is_a_typed_wiring_error() -> None:
    async def main() -> None:
        accepted: asyncio.Queue[asyncio.StreamWriter] = asyncio.Queue()

        async def on_accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await accepted.put(writer)

        server = await asyncio.start_server(on_accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, client = await asyncio.open_connection("127.0.0.1", port)
        writer = await accepted.get()
        with pytest.raises(TypeError, match="not ChunkReader"):
            chunk_reader_of(writer)
        client.close()
        writer.close()
        server.close()
        await server.wait_closed()

    run_bounded(main())

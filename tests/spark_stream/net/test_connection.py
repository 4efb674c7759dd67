"""``Connection`` against a real ``Server`` on loopback: multiplexing, streams, failures."""

from __future__ import annotations

import asyncio
import gc
import socket
import struct
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from spark_stream.errors import (
    ConnectionClosedError,
    CorruptFrameError,
    FluvioError,
    InvalidRequestError,
    NotLeaderError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from spark_stream.net._receiver import OWN_BUFFER_BODY, SCRATCH_SIZE
from spark_stream.net._sockets import reached_itself
from spark_stream.net.connection import Connection
from spark_stream.net.server import ConnContext, Server
from spark_stream.protocol import (
    ApiKey,
    Frame,
    FrameDecoder,
    FrameKind,
    ProduceRequest,
    ProduceResponse,
    Request,
    StreamFetchPush,
    StreamFetchRequest,
    decode_meta,
    encode_frame,
)
from tests.polling import run_bounded as run
from tests.polling import until

pytestmark = pytest.mark.integration

ECHO, HANG, FAIL, STREAM = (
    ApiKey.CREATE_TOPIC,
    ApiKey.DELETE_TOPIC,
    ApiKey.LIST_TOPICS,
    (ApiKey.WATCH_METADATA),
)


class App:
    """Handlers with hooks the tests can observe and steer."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.hanging = 0
        self.produced = 0
        self.stream_closed = asyncio.Event()

    async def echo(self, req: Request, ctx: ConnContext) -> Any:
        if req.meta.get("wait"):
            await self.release.wait()
        if req.meta.get("set"):
            self.release.set()
        if req.meta.get("grow"):
            return req.meta, b"g" * req.meta["grow"]
        return req.meta, req.tail

    async def hang(self, req: Request, ctx: ConnContext) -> None:
        self.hanging += 1
        await asyncio.Event().wait()

    async def fail(self, req: Request, ctx: ConnContext) -> None:
        if req.meta.get("typed"):
            raise NotLeaderError("partition 0 moved to spu 2")
        raise KeyError("a bug")

    async def stream(self, req: Request, ctx: ConnContext) -> AsyncIterator[dict]:
        try:
            for i in range(req.meta["n"]):
                self.produced += 1
                yield {"i": i}
            if req.meta.get("fail"):
                raise OffsetOutOfRangeError("offset 99 is past the end")
        finally:
            self.stream_closed.set()

    async def produce(self, req: Request, ctx: ConnContext) -> ProduceResponse:
        msg = req.message()
        assert isinstance(msg, ProduceRequest)
        return ProduceResponse(base_offset=len(bytes(msg.tail)), leo=0, hw=0)

    async def stream_fetch(self, req: Request, ctx: ConnContext) -> AsyncIterator[StreamFetchPush]:
        msg = req.message()
        assert isinstance(msg, StreamFetchRequest)
        for off in range(msg.offset, msg.offset + 3):
            yield StreamFetchPush(hw=off, leo=off, log_start=0, tail=b"frame%d" % off)

    def handlers(self) -> dict:
        return {
            ECHO: self.echo,
            HANG: self.hang,
            FAIL: self.fail,
            STREAM: self.stream,
            ApiKey.PRODUCE: self.produce,
            ApiKey.STREAM_FETCH: self.stream_fetch,
        }


def with_server(test: Callable[[App, Server, Connection], Awaitable[None]], **kw: Any) -> None:
    async def main() -> None:
        app = App()
        async with Server(app.handlers(), **kw) as server:
            conn = await Connection.open("127.0.0.1", server.port)
            try:
                await test(app, server, conn)
            finally:
                await conn.close()

    run(main())


def test_request_response_carries_meta_and_tail() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        meta, tail = await conn.request(ECHO, {"topic": "a", "n": [1, 2]}, [b"abc", b"def"])
        assert meta == {"topic": "a", "n": [1, 2]}
        assert isinstance(tail, memoryview)
        assert bytes(tail) == b"abcdef"
        big = bytes(range(256)) * 8192  # 2 MiB: spans many socket reads
        _, tail = await conn.request(ECHO, {}, big)
        assert bytes(tail) == big

    with_server(test)


def test_concurrent_requests_complete_out_of_order() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        order: list[str] = []

        async def ask(name: str, meta: dict) -> dict:
            reply, _ = await conn.request(ECHO, {"name": name, **meta})
            order.append(name)
            return reply

        slow = asyncio.create_task(ask("slow", {"wait": True}))
        await until(lambda: conn.in_flight == 1)
        fast = await ask("fast", {"set": True})
        assert (await slow)["name"] == "slow" and fast["name"] == "fast"
        assert order == ["fast", "slow"]  # the later request answered first
        asks = (conn.request(ECHO, {"k": i}, b"%d" % i) for i in range(200))
        replies = await asyncio.gather(*asks)
        assert [(m["k"], bytes(t)) for m, t in replies] == [(i, b"%d" % i) for i in range(200)]

    with_server(test)


def test_typed_error_round_trip_and_connection_survives() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        with pytest.raises(NotLeaderError, match="moved to spu 2") as info:
            await conn.request(FAIL, {"typed": True})
        assert info.value.retriable
        with pytest.raises(FluvioError, match="internal error: KeyError") as info2:
            await conn.request(FAIL, {})
        assert type(info2.value) is FluvioError
        assert (await conn.request(ECHO, {"ok": 1}))[0] == {"ok": 1}

    with_server(test)


def test_call_with_typed_messages() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        reply = await conn.call(ProduceRequest("t", 0, tail=[b"12345", b"678"]))
        assert reply == ProduceResponse(base_offset=8, leo=0, hw=0)
        with pytest.raises(InvalidRequestError, match="topic"):
            await conn.request(ApiKey.PRODUCE, {"partition": 0}, b"x")  # server-side decode

    with_server(test)


def test_stream_delivers_pushes_then_ends() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        async with await conn.stream(STREAM, {"n": 50}, window=4) as stream:
            items = [push.meta["i"] async for push in stream]
        assert items == list(range(50))
        assert stream.end_meta == {}
        async with await conn.stream(StreamFetchRequest("t", 0, 10)) as typed:
            pushes = [p.message() async for p in typed]
        assert [bytes(p.tail) for p in pushes] == [b"frame10", b"frame11", b"frame12"]
        assert all(isinstance(p, StreamFetchPush) for p in pushes)

    with_server(test)


def test_stream_backpressure_does_not_block_other_requests() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        stream = await conn.stream(STREAM, {"n": 1000}, window=4)
        await until(lambda: app.produced >= 4)
        for i in range(20):  # the connection keeps serving while the stream is stalled
            assert (await conn.request(ECHO, {"i": i}))[0] == {"i": i}
        assert app.produced <= 5  # 4 granted, at most one more waiting for credit
        got = [(await anext(stream)).meta["i"] for _ in range(10)]
        assert got == list(range(10))
        await until(lambda: app.produced >= 12)
        for _ in range(5):
            await conn.request(ECHO, {})
        assert app.produced <= 10 + 4 + 1
        await stream.aclose()
        await until(app.stream_closed.is_set)  # the cancel reached the server's generator

    with_server(test)


def test_stream_error_arrives_typed_after_the_items() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        stream = await conn.stream(STREAM, {"n": 2, "fail": True})
        got = []
        with pytest.raises(OffsetOutOfRangeError, match="past the end"):
            async for push in stream:
                got.append(push.meta["i"])
        assert got == [0, 1]

    with_server(test)


def test_stream_and_request_mismatch() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        with pytest.raises(InvalidRequestError, match="open it with stream"):
            await conn.request(STREAM, {"n": 3})
        async with await conn.stream(ECHO, {"one": 1}) as stream:
            assert [p.meta async for p in stream] == [{"one": 1}]

    with_server(test)


def test_timeout_raises_and_connection_stays_usable() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        with pytest.raises(RequestTimeoutError, match="DELETE_TOPIC"):
            await conn.request(HANG, timeout=0.2)
        assert conn.in_flight == 0
        assert (await conn.request(ECHO, {"a": 1}))[0] == {"a": 1}

    with_server(test)


def test_close_fails_pending_requests_and_streams() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        pending = [asyncio.create_task(conn.request(HANG)) for _ in range(3)]
        stream = await conn.stream(STREAM, {"n": 10**6}, window=2)
        await until(lambda: app.hanging == 3)
        await conn.close()
        await conn.close()  # idempotent
        for task in pending:
            with pytest.raises(ConnectionClosedError, match="closed by this side"):
                await task
        with pytest.raises(ConnectionClosedError):
            async for _ in stream:
                pass
        with pytest.raises(ConnectionClosedError):
            await conn.request(ECHO)
        assert conn.closed

    with_server(test)


def test_server_going_away_fails_pending_with_the_cause() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        pending = asyncio.create_task(conn.request(HANG))
        await until(lambda: app.hanging == 1)
        await server.stop()
        with pytest.raises(ConnectionClosedError) as info:
            await pending
        assert info.value.__cause__ is not None
        assert "peer closed" in str(info.value) or "reset" in str(info.value).lower()

    with_server(test)


def test_size_limits_fail_one_request_not_the_connection() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        small = await Connection.open("127.0.0.1", server.port, max_frame_size=4096)
        try:
            with pytest.raises(RecordTooLargeError, match="passes the limit"):
                await small.request(ECHO, {}, b"x" * 5000)  # refused before sending
            assert len((await conn.request(ECHO, {}, b"x" * 5000))[1]) == 5000
            with pytest.raises(RecordTooLargeError, match="reply of 50"):
                await small.request(ECHO, {"grow": 5000})  # the reply is too big
            assert (await small.request(ECHO, {"ok": 1}))[0] == {"ok": 1}
        finally:
            await small.close()

    with_server(test)


def test_tails_of_every_size_arrive_intact_when_pipelined() -> None:
    """Sizes straddle the receiver's small-frame and own-buffer paths; replies interleave."""
    sizes = [
        0,
        1,
        19,
        20,
        4095,
        OWN_BUFFER_BODY - 64,
        OWN_BUFFER_BODY,
        OWN_BUFFER_BODY + 1,
        SCRATCH_SIZE - 20,
        SCRATCH_SIZE,
        SCRATCH_SIZE + 7,
        3 * SCRATCH_SIZE + 5,
    ]

    async def test(app: App, server: Server, conn: Connection) -> None:
        tails = [bytes([i % 251]) * n for i, n in enumerate(sizes * 3)]
        replies = await asyncio.gather(
            *(conn.request(ECHO, {"i": i}, t) for i, t in enumerate(tails))
        )
        for i, ((meta, tail), sent) in enumerate(zip(replies, tails, strict=True)):
            assert meta == {"i": i}
            assert isinstance(tail, memoryview)
            assert bytes(tail) == sent

    with_server(test)


def test_oversized_reply_larger_than_the_scratch_buffer_is_skipped() -> None:
    async def test(app: App, server: Server, conn: Connection) -> None:
        small = await Connection.open("127.0.0.1", server.port, max_frame_size=4096)
        try:
            big, ok = small.request(ECHO, {"grow": 3 << 20}), small.request(ECHO, {"ok": 2})
            results = await asyncio.gather(big, ok, return_exceptions=True)
            assert isinstance(results[0], RecordTooLargeError)
            assert results[1][0] == {"ok": 2}
            assert (await small.request(ECHO, {"ok": 3}, b"y" * 3000))[1] == b"y" * 3000
        finally:
            await small.close()

    with_server(test)


def test_connect_refused_is_connection_closed() -> None:
    async def main() -> None:
        server = await Server({}).start()
        port = server.port
        await server.stop()
        with pytest.raises(ConnectionClosedError, match="cannot connect"):
            await Connection.open("127.0.0.1", port, timeout=5)

    run(main())


def test_usable_from_a_background_event_loop_thread() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        app_ready: dict[str, Any] = {}

        async def setup() -> None:
            app = App()
            app_ready["server"] = await Server(app.handlers()).start()
            app_ready["conn"] = await Connection.open("127.0.0.1", app_ready["server"].port)

        asyncio.run_coroutine_threadsafe(setup(), loop).result(10)
        conn: Connection = app_ready["conn"]
        futures = [
            asyncio.run_coroutine_threadsafe(conn.request(ECHO, {"i": i}), loop) for i in range(20)
        ]
        assert [f.result(10)[0]["i"] for f in futures] == list(range(20))

        async def teardown() -> None:
            await conn.close()
            await app_ready["server"].stop()

        asyncio.run_coroutine_threadsafe(teardown(), loop).result(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
    assert not thread.is_alive()


class RawServer:
    """A misbehaving peer: runs ``script(reader, writer, decoder)`` for each connection."""

    def __init__(self, script: Callable[..., Awaitable[None]]) -> None:
        self.script = script
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> int:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await self.script(reader, writer, FrameDecoder())
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def read_frame(reader: asyncio.StreamReader, decoder: FrameDecoder) -> Frame:
    while True:
        event = decoder.next_event()
        if event is not None:
            assert isinstance(event, Frame)
            return event
        data = await reader.read(65536)
        assert data, "client closed early"
        decoder.feed(data)


def test_garbage_from_the_server_fails_pending_with_corrupt_frame() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dec: Any) -> None:
        await read_frame(reader, dec)
        writer.write(b"\xff" * 64)
        await writer.drain()
        await reader.read()  # until the client hangs up

    async def main() -> None:
        async with RawServer(script) as port:
            conn = await Connection.open("127.0.0.1", port)
            with pytest.raises(ConnectionClosedError, match="magic") as info:
                await conn.request(ECHO, {})
            assert isinstance(info.value.__cause__, CorruptFrameError)
            await conn.close()

    run(main())


def test_server_ignoring_credit_fails_the_stream() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dec: Any) -> None:
        request = await read_frame(reader, dec)
        credit = await read_frame(reader, dec)
        assert credit.header.kind is FrameKind.CREDIT
        assert decode_meta(credit.meta) == {"credit": 2}
        cid = request.header.correlation_id
        for i in range(5):  # 3 more than granted
            writer.writelines(encode_frame(FrameKind.PUSH, STREAM, cid, {"i": i}))
        await writer.drain()
        cancel = await read_frame(reader, dec)
        assert cancel.header.kind is FrameKind.CANCEL and cancel.header.correlation_id == cid
        writer.writelines(encode_frame(FrameKind.RESPONSE, ECHO, cid + 1, {"alive": True}))
        await read_frame(reader, dec)
        await reader.read()

    async def main() -> None:
        async with RawServer(script) as port:
            conn = await Connection.open("127.0.0.1", port)
            stream = await conn.stream(STREAM, {}, window=2)
            got = []
            with pytest.raises(CorruptFrameError, match="more pushes than the 2 granted"):
                async for push in stream:
                    got.append(push.meta["i"])
            assert got == [0, 1]  # what fit in the window was delivered
            assert (await conn.request(ECHO, {}))[0] == {"alive": True}
            await conn.close()

    run(main())


def test_a_request_from_the_server_is_refused_not_ignored() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dec: Any) -> None:
        writer.writelines(encode_frame(FrameKind.REQUEST, ApiKey.UPDATE_LRS, 77, {}))
        await writer.drain()
        reply = await read_frame(reader, dec)
        while reply.header.kind is FrameKind.REQUEST:  # the client's own request
            reply = await read_frame(reader, dec)
        assert reply.header.kind is FrameKind.ERROR
        assert reply.header.correlation_id == 77
        code = decode_meta(reply.meta)["code"]
        # report the refusal back as a connection-level error, then hang up cleanly
        writer.writelines(encode_frame(FrameKind.ERROR, 0, 0, {"code": code, "message": "ok"}))
        writer.write_eof()
        await reader.read()

    async def main() -> None:
        async with RawServer(script) as port:
            conn = await Connection.open("127.0.0.1", port)
            with pytest.raises(ConnectionClosedError) as info:
                await conn.request(ECHO, {})
            assert isinstance(info.value.__cause__, UnsupportedVersionError)
            await conn.close()

    run(main())


def test_a_failed_write_leaves_no_unretrieved_future_exception() -> None:
    """A write that fails mid-request: the caller gets the typed error, asyncio logs nothing.

    The peer takes the first bytes of a request far bigger than the socket buffers (so the
    client is blocked in ``drain``) and resets the connection. Whether the writer or the
    reader task sees the reset first, the request's own future must not be left holding an
    exception nobody retrieves ("Future exception was never retrieved" when collected).
    """

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dec: Any) -> None:
        assert await reader.read(65536), "the request did not start"
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # RST: the client's pending write fails

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        async with RawServer(script) as port:
            conn = await Connection.open("127.0.0.1", port)
            failure: tuple[type[BaseException], BaseException | None] | None = None
            try:
                await conn.request(ECHO, {}, b"x" * (48 << 20), timeout=20)
            except FluvioError as exc:
                failure = type(exc), exc.__cause__
            await conn.close()
            del conn
            gc.collect()  # a dropped future reports an unretrieved exception when collected
        assert failure is not None and failure[0] is ConnectionClosedError
        assert isinstance(failure[1], OSError)  # the socket's own error is the cause
        assert [c.get("message") for c in reported] == []

    run(main())


def test_a_socket_connected_to_itself_is_recognised() -> None:
    """TCP's simultaneous open: bound to the port it connects to, with no listener."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with socket.socket() as own:
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        own.bind(("127.0.0.1", port))
        own.connect(("127.0.0.1", port))
        assert reached_itself(own.getsockname(), own.getpeername())
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        client.connect(server.getsockname())
        assert not reached_itself(client.getsockname(), client.getpeername())

"""``Server`` on loopback: dispatch, versions, bad input from raw sockets, hooks, stop."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spark_stream.errors import (
    ConnectionClosedError,
    CorruptFrameError,
    InvalidRequestError,
    RecordTooLargeError,
    UnauthorizedError,
    UnsupportedVersionError,
)
from spark_stream.net._replies import SENDFILE_MIN_BYTES
from spark_stream.net.budget import RequestBudget
from spark_stream.net.connection import Connection
from spark_stream.net.server import ConnContext, Route, Server
from spark_stream.protocol import (
    ApiKey,
    ErrorReply,
    Frame,
    FrameDecoder,
    FrameKind,
    Request,
    decode_meta,
    encode_frame,
)
from tests.polling import run_bounded as run
from tests.polling import until

pytestmark = pytest.mark.integration

REQ, TOPIC = FrameKind.REQUEST, ApiKey.CREATE_TOPIC


async def echo(req: Request, ctx: ConnContext) -> Any:
    return req.meta, req.tail


async def hang(req: Request, ctx: ConnContext) -> None:
    await asyncio.Event().wait()


async def connect(server: Server) -> Connection:
    return await Connection.open("127.0.0.1", server.port)


class RawPeer:
    """A client that writes arbitrary bytes and reads back decoded frames."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder()
        self.frames: list[Frame] = []

    @classmethod
    async def open(cls, port: int) -> RawPeer:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, data: bytes | list) -> None:
        self.writer.writelines([data] if isinstance(data, bytes) else data)
        await self.writer.drain()

    async def next_frame(self) -> Frame | None:
        """The next frame, or None at end of stream."""
        while not self.frames:
            data = await self.reader.read(65536)
            if not data:
                return None
            self.frames += [e for e in self.decoder.feed(data) if isinstance(e, Frame)]
        return self.frames.pop(0)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def error_of(frame: Frame) -> Exception:
    assert frame.header.kind is FrameKind.ERROR
    return ErrorReply.from_meta(decode_meta(frame.meta)).to_error()


def test_binds_a_free_port_and_answers_api_versions() -> None:
    async def main() -> None:
        routes = {TOPIC: echo, ApiKey.FETCH: Route(echo, 0, 2)}
        async with Server(routes) as server, await connect(server) as conn:
            assert server.port > 0
            meta, _ = await conn.request(ApiKey.API_VERSIONS)
        assert meta["apis"] == [[1, 0, 0], [1001, 0, 0], [3002, 0, 2]]

    run(main())


def test_unknown_api_and_version_get_unsupported_version() -> None:
    async def main() -> None:
        server = Server({ApiKey.FETCH: Route(echo, 1, 2)})
        async with server, await connect(server) as conn:
            assert (await conn.request(ApiKey.FETCH, {"v": 2}, version=2))[0] == {"v": 2}
            with pytest.raises(UnsupportedVersionError, match="version 0 is not supported"):
                await conn.request(ApiKey.FETCH)
            with pytest.raises(UnsupportedVersionError, match="PRODUCE is not served"):
                await conn.request(ApiKey.PRODUCE)
            with pytest.raises(UnsupportedVersionError, match="api 777"):
                await conn.request(777)

    run(main())


def test_malformed_meta_gets_an_error_reply_and_the_connection_stays() -> None:
    async def main() -> None:
        async with Server({TOPIC: echo}) as server:
            peer = await RawPeer.open(server.port)
            await peer.send(encode_frame(REQ, TOPIC, 5, b"\xc1"))  # not msgpack
            await peer.send(encode_frame(REQ, TOPIC, 6, b"\x92\x01\x00"))  # an array
            await peer.send(encode_frame(REQ, TOPIC, 7, {"ok": 1}))
            replies = {}
            for _ in range(3):
                frame = await peer.next_frame()
                assert frame is not None
                replies[frame.header.correlation_id] = frame
            assert isinstance(error_of(replies[5]), InvalidRequestError)
            assert "must be a msgpack map" in str(error_of(replies[6]))
            assert replies[7].header.kind is FrameKind.RESPONSE
            assert decode_meta(replies[7].meta) == {"ok": 1}
            await peer.close()

    run(main())


def test_garbage_closes_only_that_connection() -> None:
    async def main() -> None:
        disconnects: list[BaseException | None] = []
        server = Server({TOPIC: echo}, on_disconnect=lambda ctx, cause: disconnects.append(cause))
        async with server:
            good = await connect(server)
            bad = await RawPeer.open(server.port)
            await until(lambda: len(server.connections) == 2)
            await bad.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            frame = await bad.next_frame()
            assert frame is not None and frame.header.correlation_id == 0
            assert isinstance(error_of(frame), CorruptFrameError)
            assert await bad.next_frame() is None  # then the server closed it
            await bad.close()
            await until(lambda: len(disconnects) == 1)
            assert isinstance(disconnects[0], CorruptFrameError)
            assert (await good.request(TOPIC, {"still": "up"}))[0] == {"still": "up"}
            late = await connect(server)  # still accepting
            assert (await late.request(TOPIC, {"n": 1}))[0] == {"n": 1}
            await late.close()
            await good.close()

    run(main())


def test_corrupt_frame_reaches_a_connection_client_as_the_close_cause() -> None:
    async def main() -> None:
        async with Server({TOPIC: hang}) as server:
            peer = await RawPeer.open(server.port)
            conn = Connection(peer.reader, peer.writer)
            pending = asyncio.create_task(conn.request(TOPIC))
            await until(lambda: conn.in_flight == 1 and len(server.connections) == 1)
            await peer.send(b"\x00" * 40)
            with pytest.raises(ConnectionClosedError, match="CorruptFrameError") as info:
                await pending
            assert isinstance(info.value.__cause__, CorruptFrameError)
            await conn.close()

    run(main())


def test_oversized_request_gets_record_too_large_and_stream_stays_in_sync() -> None:
    async def main() -> None:
        server = Server({ApiKey.PRODUCE: echo}, max_frame_size=1024)
        async with server, await connect(server) as conn:
            with pytest.raises(RecordTooLargeError, match="max_frame_size 1024"):
                await conn.request(ApiKey.PRODUCE, {}, b"x" * 100_000)
            assert bytes((await conn.request(ApiKey.PRODUCE, {}, b"ok"))[1]) == b"ok"

    run(main())


def test_connection_state_and_hooks() -> None:
    async def main() -> None:
        seen: list[tuple[str, Any]] = []

        async def on_connect(ctx: ConnContext) -> None:
            seen.append(("connect", ctx.id))

        async def on_disconnect(ctx: ConnContext, cause: BaseException | None) -> None:
            seen.append(("disconnect", ctx.state.get("spu")))

        async def register(req: Request, ctx: ConnContext) -> dict:
            if req.meta.get("token") != "secret":
                ctx.close()
                raise UnauthorizedError(f"bad token for spu {req.meta.get('spu')}")
            ctx.state["spu"] = req.meta["spu"]
            return {"welcome": req.meta["spu"]}

        server = Server(
            {ApiKey.SPU_CONNECT: register}, on_connect=on_connect, on_disconnect=on_disconnect
        )
        async with server:
            ok = await connect(server)
            reply, _ = await ok.request(ApiKey.SPU_CONNECT, {"spu": 5001, "token": "secret"})
            assert reply == {"welcome": 5001}
            assert [c.state for c in server.connections] == [{"spu": 5001}]
            intruder = await connect(server)
            with pytest.raises(UnauthorizedError, match="bad token for spu 9"):
                await intruder.request(ApiKey.SPU_CONNECT, {"spu": 9, "token": "guess"})
            await until(lambda: intruder.closed)  # the server closed it after the reply
            await ok.close()
            await intruder.close()
            await until(lambda: len(seen) == 4)
        assert sorted(seen, key=str) == sorted(
            [("connect", 1), ("connect", 2), ("disconnect", None), ("disconnect", 5001)], key=str
        )

    run(main())


def test_on_connect_refusal_is_sent_as_the_close_cause() -> None:
    async def main() -> None:
        def refuse(ctx: ConnContext) -> None:
            raise UnauthorizedError("not registered")

        async with Server({TOPIC: echo}, on_connect=refuse) as server:
            conn = await connect(server)
            with pytest.raises(ConnectionClosedError, match="not registered") as info:
                await conn.request(TOPIC)
            assert isinstance(info.value.__cause__, UnauthorizedError)
            await conn.close()

    run(main())


def test_unexpected_exception_is_logged_and_answered(caplog: pytest.LogCaptureFixture) -> None:
    async def buggy(req: Request, ctx: ConnContext) -> Any:
        return 1 / req.meta["d"]

    async def wrong_type(req: Request, ctx: ConnContext) -> Any:
        return 42

    async def main() -> None:
        server = Server({TOPIC: buggy, ApiKey.DELETE_TOPIC: wrong_type})
        async with server, await connect(server) as conn:
            for _ in range(3):
                with pytest.raises(Exception, match="ZeroDivisionError"):
                    await conn.request(TOPIC, {"d": 0})
            with pytest.raises(Exception, match="TypeError"):
                await conn.request(ApiKey.DELETE_TOPIC)

    with caplog.at_level(logging.ERROR, logger="spark_stream.net.server"):
        run(main())
    assert sum("handler failed" in r.message for r in caplog.records) == 4


def test_in_flight_limit_bounds_concurrent_handlers() -> None:
    async def main() -> None:
        running = 0
        peak = 0
        gate = asyncio.Event()

        async def slow(req: Request, ctx: ConnContext) -> dict:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await gate.wait()
            running -= 1
            return req.meta

        server = Server({TOPIC: slow}, max_in_flight=2)
        async with server, await connect(server) as conn:
            tasks = [asyncio.create_task(conn.request(TOPIC, {"i": i})) for i in range(10)]
            await until(lambda: running == 2)
            gate.set()
            replies = await asyncio.gather(*tasks)
        assert [m["i"] for m, _ in replies] == list(range(10))
        assert peak == 2

    run(main())


def test_request_budget_stops_reading_until_bytes_are_released_and_loses_nothing() -> None:
    async def main() -> None:
        gate = asyncio.Event()
        running = 0

        async def gated(req: Request, ctx: ConnContext) -> Any:
            nonlocal running
            running += 1
            await gate.wait()
            return req.meta, bytes(req.tail)

        budget = RequestBudget(1 << 20)
        server = Server({TOPIC: gated}, budget=budget)
        async with server:
            conns = [await connect(server) for _ in range(4)]
            tails = [bytes([i]) * (600 << 10) for i in range(4)]
            tasks = [
                asyncio.create_task(c.request(TOPIC, {"i": i}, tails[i], timeout=30))
                for i, c in enumerate(conns)
            ]
            # One 600 KiB frame fits in 1 MiB; the three others wait, unread, for bytes.
            await until(lambda: running == 1 and budget.waiting == 3, what="one in, three waiting")
            assert budget.used < 1 << 20
            gate.set()
            replies = await asyncio.gather(*tasks)
            for conn in conns:
                await conn.close()
        assert [(m["i"], bytes(t)) for m, t in replies] == [(i, tails[i]) for i in range(4)]
        assert running == 4
        assert budget.used == 0 and budget.waiting == 0
        assert budget.peak <= 1 << 20  # never two of them held at once

    run(main())


def test_a_frame_larger_than_the_budget_is_let_in_alone() -> None:
    async def main() -> None:
        gate = asyncio.Event()
        running = 0

        async def gated(req: Request, ctx: ConnContext) -> Any:
            nonlocal running
            running += 1
            await gate.wait()
            return {"n": len(req.tail)}

        budget = RequestBudget(256 << 10)
        server = Server({TOPIC: gated}, budget=budget)
        async with server, await connect(server) as first, await connect(server) as second:
            one = asyncio.create_task(first.request(TOPIC, {}, b"a" * (1 << 20), timeout=30))
            await until(lambda: running == 1, what="the first oversize frame in")
            two = asyncio.create_task(second.request(TOPIC, {}, b"b" * (1 << 20), timeout=30))
            await until(lambda: budget.waiting == 1, what="the second waiting")
            assert running == 1
            gate.set()
            assert [m["n"] for m, _ in await asyncio.gather(one, two)] == [1 << 20, 1 << 20]
        assert budget.used == 0

    run(main())


def test_stop_ends_a_wait_for_budget_and_leaves_nothing_held() -> None:
    async def main() -> None:
        budget = RequestBudget(128 << 10)
        server = await Server({TOPIC: hang}, budget=budget).start()
        conns = [await connect(server) for _ in range(2)]
        pending = [
            asyncio.create_task(c.request(TOPIC, {}, b"x" * (200 << 10), timeout=30)) for c in conns
        ]
        await until(lambda: budget.waiting == 1, what="the second connection waiting")
        await server.stop(grace=60)  # well past run()'s bound if the wait were not ended
        assert budget.used == 0 and budget.waiting == 0
        for task in pending:
            with pytest.raises(ConnectionClosedError):
                await task
        for conn in conns:
            await conn.close()

    run(main())


def test_stop_closes_connections_and_cancels_handlers() -> None:
    async def main() -> None:
        started = 0
        cancelled = 0
        closed: list[int] = []

        async def waits(req: Request, ctx: ConnContext) -> None:
            nonlocal started, cancelled
            started += 1
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled += 1
                raise

        server = await Server(
            {TOPIC: waits}, on_disconnect=lambda ctx, cause: closed.append(ctx.id)
        ).start()
        conns = [await connect(server) for _ in range(3)]
        pending = [asyncio.create_task(c.request(TOPIC)) for c in conns]
        await until(lambda: started == 3)
        await server.stop()
        assert cancelled == 3
        assert sorted(closed) == [1, 2, 3]
        assert server.connections == []
        for task in pending:
            with pytest.raises(ConnectionClosedError):
                await task
        for conn in conns:
            await conn.close()
        with pytest.raises(ConnectionClosedError):
            await Connection.open("127.0.0.1", server.port, timeout=5)

    run(main())


@dataclass(frozen=True)
class Region:
    """A ``FileRegion`` whose in-memory ``data`` deliberately differs from the file, so
    the received bytes show which way the server sent it."""

    file: Any
    position: int
    data: memoryview

    def fileno(self) -> int:
        return self.file.fileno()


def test_file_region_tails_go_by_sendfile_whole_and_in_order_with_other_replies(
    tmp_path: Path,
) -> None:
    content = os.urandom(3 << 20)
    (tmp_path / "segment").write_bytes(content)
    spans = [(i * 300_000 + 7, 200_000 + i * 50_000) for i in range(6)]
    small = (11, SENDFILE_MIN_BYTES // 2)

    async def main(file: Any) -> None:
        async def region(req: Request, ctx: ConnContext) -> Any:
            pos, length = req.meta["pos"], req.meta["len"]
            decoy = memoryview(bytes(length))  # zeros: not what the file holds
            return {"pos": pos}, [b"<", Region(file, pos, decoy), b">"]

        server = Server({ApiKey.FETCH: region, TOPIC: echo})
        async with server, await connect(server) as conn:
            calls = [
                conn.request(ApiKey.FETCH, {"pos": pos, "len": length})
                for pos, length in [*spans, small]
            ] + [conn.request(TOPIC, {"i": i}, tail=bytes([i]) * 10) for i in range(30)]
            replies = await asyncio.gather(*calls)
        for (pos, length), (meta, tail) in zip(spans, replies, strict=False):
            assert meta == {"pos": pos}
            assert bytes(tail) == b"<" + content[pos : pos + length] + b">"
        meta, tail = replies[len(spans)]
        assert bytes(tail) == b"<" + bytes(small[1]) + b">"  # small: sent from memory
        for i, (meta, tail) in enumerate(replies[len(spans) + 1 :]):
            assert meta == {"i": i} and bytes(tail) == bytes([i]) * 10

    with open(tmp_path / "segment", "rb") as file:
        run(main(file))


def test_on_request_times_each_answered_request_by_api_and_no_stream() -> None:
    async def main() -> None:
        timed: list[tuple[int, float]] = []

        async def pushes(req: Request, ctx: ConnContext) -> Any:
            yield {"n": 1}

        routes = {TOPIC: echo, ApiKey.STREAM_FETCH: pushes}
        server = Server(routes, on_request=lambda key, s: timed.append((key, s)))
        async with server, await connect(server) as conn:
            await conn.request(TOPIC, {"a": 1})
            with pytest.raises(UnsupportedVersionError):
                await conn.request(ApiKey.PRODUCE)  # answered with an error: timed too
            async with await conn.stream(ApiKey.STREAM_FETCH, {}) as stream:
                assert [push.meta async for push in stream] == [{"n": 1}]
        assert [key for key, _ in timed] == [TOPIC, ApiKey.PRODUCE]
        assert all(0 <= seconds < 30 for _, seconds in timed)

    run(main())

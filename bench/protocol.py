"""Protocol benchmark: request round trips per second and MB/s of produce-sized tails.

Client and server run on one event loop over loopback, so the figures are the cost of
both ends together (framing, msgpack meta, asyncio streams), not of a network. Prints a
human summary and, as the last line, one JSON object.

    ./dev bench protocol [--seconds 2] [--tail-kib 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from spark_stream.net.connection import Connection
from spark_stream.net.server import ConnContext, Server
from spark_stream.protocol import ApiKey, Request

ECHO = ApiKey.FETCH_OFFSETS
SINK = ApiKey.PRODUCE
PUSHES = ApiKey.STREAM_FETCH


async def _echo(req: Request, ctx: ConnContext) -> dict[str, Any]:
    return req.meta


async def _sink(req: Request, ctx: ConnContext) -> dict[str, Any]:
    return {"base_offset": 0, "leo": len(req.tail), "hw": 0}


def _pusher(payload: bytes) -> Callable[[Request, ConnContext], AsyncIterator[Any]]:
    async def pushes(req: Request, ctx: ConnContext) -> AsyncIterator[Any]:
        meta = {"hw": 0, "leo": 0, "log_start": 0}
        for _ in range(req.meta["count"]):
            yield meta, payload

    return pushes


async def _timed(seconds: float, step: Callable[[], Awaitable[int]]) -> tuple[int, int, float]:
    """Run ``step`` until ``seconds`` pass; return (calls, bytes moved, elapsed)."""
    calls = moved = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        moved += await step()
        calls += 1
    return calls, moved, time.perf_counter() - start


async def run(seconds: float, tail_kib: int) -> dict[str, float]:
    payload = b"\xab" * (tail_kib * 1024)
    server = Server({ECHO: _echo, SINK: _sink, PUSHES: _pusher(payload)}, name="bench")
    async with server, await Connection.open("127.0.0.1", server.port) as conn:
        meta = {"topic": "bench", "partition": 0}

        async def one() -> int:
            await conn.request(ECHO, meta)
            return 0

        async def pipelined() -> int:
            await asyncio.gather(*(conn.request(ECHO, meta) for _ in range(64)))
            return 0

        async def produce() -> int:
            await asyncio.gather(*(conn.request(SINK, meta, payload) for _ in range(4)))
            return 4 * len(payload)

        async def stream() -> int:
            got = 0
            async with await conn.stream(PUSHES, {"count": 16}, window=8) as pushes:
                async for push in pushes:
                    got += len(push.tail)
            return got

        calls, _, t1 = await _timed(seconds, one)
        batches, _, t2 = await _timed(seconds, pipelined)
        _, produced, t3 = await _timed(seconds, produce)
        _, streamed, t4 = await _timed(seconds, stream)
    return {
        "rtt_per_s": round(calls / t1),
        "pipelined_req_per_s": round(batches * 64 / t2),
        "produce_mb_per_s": round(produced / t3 / 1e6, 1),
        "stream_push_mb_per_s": round(streamed / t4 / 1e6, 1),
        "tail_kib": tail_kib,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--tail-kib", type=int, default=1024, help="produce/push tail size")
    args = parser.parse_args()
    result = asyncio.run(run(args.seconds, args.tail_kib))
    print(
        f"sequential round trips: {result['rtt_per_s']}/s, pipelined (64 in flight): "
        f"{result['pipelined_req_per_s']}/s, produce {args.tail_kib} KiB tails: "
        f"{result['produce_mb_per_s']} MB/s, stream pushes: {result['stream_push_mb_per_s']} MB/s"
    )
    print(json.dumps({"bench": "protocol", **result}))


if __name__ == "__main__":
    main()

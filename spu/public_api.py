"""Handlers of the SPU public api (port 9005): produce, fetch, local fetch, stream fetch,
fetch offsets.

One handler per api, dispatched by api key. Each finds the partition's leader
controller (``NotLeaderError`` when this SPU holds the replica as a follower or holds no
leader for it, ``UnknownPartitionError``/``UnknownTopicError`` when it holds nothing of
it) and works on frames as bytes: produce tails go to the log as received, and reads hand
the log's frames to the reply tail without decoding them (the server sends them with
``sendfile``). A local fetch answers where those frames lie in the segment file instead,
for a client on this host to read itself.

The streaming fetch pushes frames as they become visible (up to the high watermark for
``committed``, the LEO for ``uncommitted``), at most ``max_bytes`` per push, sleeping on
an event the leader controller sets on every change; it ends with ``NotLeaderError``
when this SPU stops leading, so the consumer reconnects to the new leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Protocol

from spark_stream.errors import OffsetOutOfRangeError
from spark_stream.net.server import ConnContext, Handler
from spark_stream.protocol import (
    ApiKey,
    FetchLocalRequest,
    FetchLocalResponse,
    FetchOffsetsRequest,
    FetchOffsetsResponse,
    FetchRequest,
    FetchResponse,
    ProduceRequest,
    ProduceResponse,
    Request,
    StreamFetchPush,
    StreamFetchRequest,
)
from spu.leader import LeaderController
from spu.storage import LogSlice

__all__ = ["LeaderLookup", "public_routes"]


class LeaderLookup(Protocol):
    """What the public handlers need from the dispatcher."""

    def lookup(self, topic: str, partition: int) -> LeaderController:
        """The partition's leader controller on this SPU.

        Raises:
            NotLeaderError, UnknownPartitionError, UnknownTopicError.
        """
        ...


def public_routes(leaders: LeaderLookup) -> Mapping[int, Handler]:
    """The public server's dispatch table over ``leaders``."""

    async def produce(request: Request, ctx: ConnContext) -> ProduceResponse:
        msg = request.message()
        assert isinstance(msg, ProduceRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        # The received tail is one memoryview of the request frame: no copy until the log.
        return await leader.produce(request.tail, msg.acks, msg.timeout_ms)

    async def fetch(request: Request, ctx: ConnContext) -> FetchResponse:
        msg = request.message()
        assert isinstance(msg, FetchRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        piece = await _visible(leader, msg)
        # The slice is sent from the segment file with sendfile: no copy through Python.
        tail = [piece] if piece.length else b""
        return FetchResponse(leader.hw, leader.leo, leader.log_start, tail)

    async def fetch_local(request: Request, ctx: ConnContext) -> FetchLocalResponse:
        msg = request.message()
        assert isinstance(msg, FetchLocalRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        piece = await _visible(leader, msg)
        if not piece.length or piece.path is None:
            return FetchLocalResponse(leader.hw, leader.leo, leader.log_start)
        stat = os.fstat(piece.fileno())
        return FetchLocalResponse(
            leader.hw,
            leader.leo,
            leader.log_start,
            str(piece.path),
            piece.base_offset,
            piece.position,
            piece.length,
            stat.st_dev,
            stat.st_ino,
        )

    async def stream_fetch(request: Request, ctx: ConnContext) -> AsyncIterator[StreamFetchPush]:
        msg = request.message()
        assert isinstance(msg, StreamFetchRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        if not leader.log_start <= msg.offset <= leader.leo:
            raise OffsetOutOfRangeError(
                f"offset {msg.offset} is outside {msg.topic}-{msg.partition} "
                f"[{leader.log_start}, {leader.leo}]"
            )
        return _pushes(leader, msg)

    async def fetch_offsets(request: Request, ctx: ConnContext) -> FetchOffsetsResponse:
        msg = request.message()
        assert isinstance(msg, FetchOffsetsRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        offset = None
        if msg.timestamp_us is not None:
            offset = leader.offset_for_timestamp(msg.timestamp_us)
        return FetchOffsetsResponse(leader.log_start, leader.leo, leader.hw, offset)

    return {
        ApiKey.PRODUCE: produce,
        ApiKey.FETCH: fetch,
        ApiKey.STREAM_FETCH: stream_fetch,
        ApiKey.FETCH_OFFSETS: fetch_offsets,
        ApiKey.FETCH_LOCAL: fetch_local,
    }


async def _visible(leader: LeaderController, msg: FetchRequest) -> LogSlice:
    """What a fetch returns: frames from ``msg.offset``, waiting up to ``max_wait_ms`` for
    some to become visible when none are yet."""
    piece = leader.read(msg.offset, msg.max_bytes, msg.isolation)
    if piece.length or msg.max_wait_ms <= 0:
        return piece
    event = asyncio.Event()
    leader.subscribe(event)
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(msg.max_wait_ms / 1000):
                while not piece.length:
                    event.clear()
                    piece = leader.read(msg.offset, msg.max_bytes, msg.isolation)
                    if not piece.length:
                        await event.wait()
    finally:
        leader.unsubscribe(event)
    return piece


async def _pushes(
    leader: LeaderController, msg: StreamFetchRequest
) -> AsyncGenerator[StreamFetchPush, None]:
    """Frames from ``msg.offset`` on, pushed as they become visible, until leadership ends."""
    event = asyncio.Event()
    leader.subscribe(event)
    position = msg.offset
    try:
        while True:
            event.clear()
            piece = leader.read(position, msg.max_bytes, msg.isolation)  # NotLeaderError ends
            if piece.length:
                position = piece.next_offset
                yield StreamFetchPush(leader.hw, leader.leo, leader.log_start, [piece])
            else:
                await event.wait()
    finally:
        leader.unsubscribe(event)

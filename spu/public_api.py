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

Consumer-group fetches (version 1, ``group`` set) pass the partition's delivery gate
(``spu.gates``), always after the leader lookup (a follower answers ``NotLeaderError``,
not a gate error): ``fetch`` and ``fetch_local`` check it before reading and again after
waiting for data (the gate may have moved meanwhile, and the admission must cover the
reply); a stream checks it on open and before every push against the version it opened
under, and since a gate change wakes the leader's subscribers, a changed gate ends the
stream with ``FencedMemberError`` without waiting for data. Version 0 requests never
look at gates.

Fetches of version 2 carry the partition's ``leader_epoch`` as the requester's metadata
has it (KIP-320). The leader lookup checks it first: older than this SPU's is
``FencedLeaderEpochError``, newer ``UnknownLeaderEpochError`` (both retriable: the client
refreshes its metadata), and a request with an epoch is served only while the SC's
entry names this SPU leader. A stream checks it again before each push (an int compare),
so one opened under an epoch that a later election replaced ends, even on this SPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Protocol

from spark_stream.errors import OffsetOutOfRangeError
from spark_stream.net.server import ConnContext, Handler, Route
from spark_stream.protocol import (
    API_VERSIONS,
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
from spu.gates import Gate, GateTable
from spu.leader import LeaderController, check_leader_epoch
from spu.storage import LogSlice

__all__ = ["LeaderLookup", "public_routes"]


class LeaderLookup(Protocol):
    """What the public handlers need from the dispatcher."""

    def lookup(self, topic: str, partition: int, leader_epoch: int = -1) -> LeaderController:
        """The partition's leader controller on this SPU, at ``leader_epoch`` if given.

        Raises:
            FencedLeaderEpochError, UnknownLeaderEpochError, NotLeaderError,
            UnknownPartitionError, UnknownTopicError.
        """
        ...


GroupRead = FetchRequest | StreamFetchRequest


def _admit(gates: GateTable, msg: GroupRead, version: int | None = None) -> Gate | None:
    """Check a group request's gate (``None`` for a plain request: nothing to check).

    Raises:
        GateNotReadyError, FencedMemberError: see ``GateTable.check``.
    """
    if msg.group is None:
        return None
    assert msg.member_id is not None and msg.grant_epoch is not None  # the message checks
    return gates.check(
        msg.group, msg.topic, msg.partition, msg.member_id, msg.grant_epoch, version=version
    )


def public_routes(leaders: LeaderLookup, gates: GateTable) -> Mapping[int, Handler | Route]:
    """The public server's dispatch table over ``leaders``, group reads checked by ``gates``."""

    async def produce(request: Request, ctx: ConnContext) -> ProduceResponse:
        msg = request.message()
        assert isinstance(msg, ProduceRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        # The received tail is one memoryview of the request frame: no copy until the log.
        return await leader.produce(request.tail, msg.acks, msg.timeout_ms)

    async def fetch(request: Request, ctx: ConnContext) -> FetchResponse:
        msg = request.message()
        assert isinstance(msg, FetchRequest)
        leader = leaders.lookup(msg.topic, msg.partition, msg.leader_epoch)
        piece = await _visible(leader, msg, gates)
        leader.traffic.fetched(piece.length, piece.records)
        # The slice is sent from the segment file with sendfile: no copy through Python.
        tail = [piece] if piece.length else b""
        return FetchResponse(leader.hw, leader.leo, leader.log_start, tail)

    async def fetch_local(request: Request, ctx: ConnContext) -> FetchLocalResponse:
        msg = request.message()
        assert isinstance(msg, FetchLocalRequest)
        leader = leaders.lookup(msg.topic, msg.partition, msg.leader_epoch)
        piece = await _visible(leader, msg, gates)
        leader.traffic.fetched(piece.length, piece.records)
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
        leader = leaders.lookup(msg.topic, msg.partition, msg.leader_epoch)
        opened = _admit(gates, msg)
        if not leader.log_start <= msg.offset <= leader.leo:
            raise OffsetOutOfRangeError(
                f"offset {msg.offset} is outside {msg.topic}-{msg.partition} "
                f"[{leader.log_start}, {leader.leo}]"
            )
        return _pushes(leader, msg, gates, opened)

    async def fetch_offsets(request: Request, ctx: ConnContext) -> FetchOffsetsResponse:
        msg = request.message()
        assert isinstance(msg, FetchOffsetsRequest)
        leader = leaders.lookup(msg.topic, msg.partition)
        leader.check_hw_current()  # never a HW below one reported before
        offset = None
        if msg.timestamp_us is not None:
            offset = leader.offset_for_timestamp(msg.timestamp_us)
        return FetchOffsetsResponse(leader.log_start, leader.leo, leader.hw, offset)

    def versioned(handler: Handler) -> Route:
        low, high = API_VERSIONS[ApiKey.FETCH]
        return Route(handler, low, high)

    return {
        ApiKey.PRODUCE: produce,
        ApiKey.FETCH: versioned(fetch),
        ApiKey.STREAM_FETCH: versioned(stream_fetch),
        ApiKey.FETCH_OFFSETS: fetch_offsets,
        ApiKey.FETCH_LOCAL: versioned(fetch_local),
    }


async def _visible(leader: LeaderController, msg: FetchRequest, gates: GateTable) -> LogSlice:
    """What a fetch returns: frames from ``msg.offset``, waiting up to ``max_wait_ms`` for
    some to become visible when none are yet; a group fetch's gate is checked before the
    read and, after a wait, again before the answer."""
    admitted = _admit(gates, msg)
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
    if admitted is not None:
        _admit(gates, msg, admitted.version)
    return piece


async def _pushes(
    leader: LeaderController, msg: StreamFetchRequest, gates: GateTable, opened: Gate | None
) -> AsyncGenerator[StreamFetchPush, None]:
    """Frames from ``msg.offset`` on, pushed as they become visible, until leadership ends
    (or, for a group stream, until its gate changes: ``FencedMemberError``; for a stream
    with a leader epoch, until a newer one: ``FencedLeaderEpochError``)."""
    event = asyncio.Event()
    leader.subscribe(event)
    position = msg.offset
    try:
        while True:
            event.clear()
            piece = leader.read(position, msg.max_bytes, msg.isolation)  # NotLeaderError ends
            if msg.leader_epoch >= 0:  # an election while this SPU kept (or regained) it
                check_leader_epoch(leader.name, leader.leader_epoch, msg.leader_epoch)
            if opened is not None:  # before each push, and on each wake-up (a gate change)
                _admit(gates, msg, opened.version)
            if piece.length:
                position = piece.next_offset
                leader.traffic.fetched(piece.length, piece.records)
                yield StreamFetchPush(leader.hw, leader.leo, leader.log_start, [piece])
            else:
                await event.wait()
    finally:
        leader.unsubscribe(event)

"""Leader epochs on the SPU (KIP-320): the check itself, and fetches over a real server.

A dispatcher with its public routes on loopback (no SC): the replica entries are pushed
by hand, so the test decides when an election happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from spark_stream.config import load_settings
from spark_stream.errors import (
    FencedLeaderEpochError,
    FluvioError,
    NotLeaderError,
    UnknownLeaderEpochError,
)
from spark_stream.models import PartitionSpec
from spark_stream.net.connection import Connection
from spark_stream.net.server import Server
from spark_stream.protocol import FetchRequest, FetchResponse, StreamFetchPush, StreamFetchRequest
from spark_stream.protocol.control import Replica, UpdateReplicas
from spu.dispatcher import SpuDispatcher
from spu.leader import check_leader_epoch
from spu.public_api import public_routes
from spu.settings import SpuSettings
from tests.spu.helpers import produce

ME = 1
HOST = "127.0.0.1"


@pytest.mark.parametrize(
    ("current", "requested", "error"),
    [
        (3, -1, None),  # an old client: not checked
        (3, 3, None),
        (0, 0, None),
        (3, 2, FencedLeaderEpochError),  # the requester's metadata is stale
        (3, 0, FencedLeaderEpochError),
        (3, 4, UnknownLeaderEpochError),  # this SPU has not heard of the election yet
        (0, 7, UnknownLeaderEpochError),
    ],
)
def test_check_leader_epoch(current: int, requested: int, error: type[FluvioError] | None) -> None:
    if error is None:
        check_leader_epoch("t-0", current, requested)
        return
    with pytest.raises(error, match="t-0") as raised:
        check_leader_epoch("t-0", current, requested)
    assert raised.value.retriable


def entry(leader: int, epoch: int) -> Replica:
    spec = PartitionSpec(initial_leader=ME, replicas=(ME,))  # HW = LEO: no follower
    return Replica("t-0", leader, spec, 1, None, epoch)


@asynccontextmanager
async def serving(tmp_path: Path, epoch: int) -> AsyncIterator[tuple[SpuDispatcher, Connection]]:
    """This SPU leading ``t-0`` at ``epoch`` behind its public server, and a connection."""
    settings = load_settings(SpuSettings, id=ME, data_dir=str(tmp_path), replica_max_lag_ms=1000)
    dispatcher = SpuDispatcher(settings)
    await dispatcher.set_replicas([entry(ME, epoch)])
    server = Server(public_routes(dispatcher, dispatcher.gates), host=HOST)
    await server.start()
    conn = await Connection.open(HOST, server.port)
    try:
        yield dispatcher, conn
    finally:
        await conn.close()
        await server.stop()
        await dispatcher.stop()


def test_fetches_carrying_an_epoch_are_served_at_it_and_refused_otherwise(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with serving(tmp_path, epoch=3) as (dispatcher, conn):
            await produce(conn, "t", 0, ["a", "b"])
            for epoch in (3, -1):  # -1: a version 0 fetch, as every old client sends
                reply = await conn.call(FetchRequest("t", 0, 0, leader_epoch=epoch), timeout=10)
                assert isinstance(reply, FetchResponse) and reply.hw == 2
            with pytest.raises(FencedLeaderEpochError):
                await conn.call(FetchRequest("t", 0, 0, leader_epoch=2), timeout=10)
            with pytest.raises(UnknownLeaderEpochError):
                await conn.call(StreamFetchRequest("t", 0, 0, leader_epoch=4), timeout=10)
            # Deposed (SPU 2 leads at 4): the stale epoch is fenced, the new one not led here.
            await dispatcher.apply_replicas(UpdateReplicas.build([entry(2, 4)], full=False))
            with pytest.raises(FencedLeaderEpochError):
                await conn.call(FetchRequest("t", 0, 0, leader_epoch=3), timeout=10)
            with pytest.raises(NotLeaderError):
                await conn.call(FetchRequest("t", 0, 0, leader_epoch=4), timeout=10)

    asyncio.run(asyncio.wait_for(body(), 30))


def test_a_stream_ends_fenced_when_its_leader_moves_to_a_newer_epoch(tmp_path: Path) -> None:
    """The SPU keeps leading (re-elected while it missed a push): the stream opened under
    the old epoch ends without waiting for new records."""

    async def body() -> None:
        async with serving(tmp_path, epoch=3) as (dispatcher, conn):
            await produce(conn, "t", 0, ["a"])
            request = StreamFetchRequest("t", 0, 0, leader_epoch=3)
            pushes = 0
            with pytest.raises(FencedLeaderEpochError, match="epoch 3 is fenced"):
                async with await conn.stream(request) as stream:
                    async for item in stream:
                        assert isinstance(item.message(), StreamFetchPush)
                        pushes += 1
                        update = UpdateReplicas.build([entry(ME, 5)], full=False)
                        await dispatcher.apply_replicas(update)
            assert pushes == 1
            assert dispatcher.leader("t-0") is not None  # still leading, at epoch 5
            reply = await conn.call(FetchRequest("t", 0, 0, leader_epoch=5), timeout=10)
            assert isinstance(reply, FetchResponse) and reply.hw == 1

    asyncio.run(asyncio.wait_for(body(), 30))

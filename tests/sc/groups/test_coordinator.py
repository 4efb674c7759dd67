"""The group coordinator in process (``ScApp`` on the in-memory KV) with raw members."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.models import ConsumerGroup
from spark_stream.net.connection import Connection
from spark_stream.protocol import control as c
from tests.sc.groups.member import RawMember

pytestmark = pytest.mark.integration

TOPIC = "orders"


@contextlib.asynccontextmanager
async def running_sc(partitions: int = 6) -> AsyncIterator[tuple[ScApp, AdminClient]]:
    settings = load_settings(ScSettings, public_port=0, private_port=0, heartbeat_timeout_s=2.0)
    app = ScApp(settings, kv=MemoryKvStore())
    await app.start()
    admin = AdminClient("127.0.0.1", app.public_port, timeout=10)
    try:
        await admin.create_topic(TOPIC, partitions=partitions, allow_missing_spus=True)
        yield app, admin
    finally:
        await admin.close()
        await app.stop()


def run(body: Any) -> None:
    asyncio.run(asyncio.wait_for(body(), 60))


async def describe(port: int, group: str) -> c.DescribeGroupResponse:
    async with await Connection.open("127.0.0.1", port) as conn:
        reply = await conn.call(c.DescribeGroupRequest(group), timeout=10)
    assert isinstance(reply, c.DescribeGroupResponse)
    return reply


def stored(app: ScApp, group: str) -> ConsumerGroup:
    obj = app.public.groups.group(group)
    assert obj is not None
    return obj


ALL = {(TOPIC, p) for p in range(6)}


def settled(members: list[RawMember], total: int) -> bool:
    """No revoke held; the grants are disjoint, cover every partition, balanced."""
    owned = [m.assigned() for m in members]
    return (
        all(m.last is not None and not m.last.revoke for m in members)
        and sum(len(o) for o in owned) == total
        and len(set().union(*owned)) == total
        and max(map(len, owned)) - min(map(len, owned)) <= 1
    )


async def settle(members: list[RawMember], total: int = 6) -> None:
    """Read pushes, releasing every revoke, until the group is settled (bounded)."""
    members = [m for m in members if m.stream is not None]
    for _ in range(100):
        if settled(members, total):
            return
        for m in members:
            if m.last is not None and m.last.revoke:
                await m.release()
        for m in members:  # take whatever was pushed meanwhile
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    while True:
                        await m.next()
    raise AssertionError("the group did not settle")


def test_three_members_share_six_partitions() -> None:
    """T2: 2 partitions each, disjoint, full cover; generation moves only with grants."""

    async def body() -> None:
        async with running_sc() as (app, _):
            port = app.public_port
            members = [RawMember(port, "billing", [TOPIC]) for _ in range(3)]
            first = await members[0].join()
            assert len(first.assigned) == 6 and first.member_epoch == 1
            generations = [stored(app, "billing").status.generation]
            for m in members[1:]:
                await m.join()
                await settle(members)
                generations.append(stored(app, "billing").status.generation)
            owned = [m.assigned() for m in members]
            assert [len(o) for o in owned] == [2, 2, 2]
            assert set().union(*owned) == {(TOPIC, p) for p in range(6)}
            assert sum(len(o) for o in owned) == 6
            # Heartbeats change nothing.
            before = stored(app, "billing").revision
            for m in members:
                reply = await m.heartbeat()
                assert {(g["topic"], g["partition"]) for g in reply.assigned} == m.assigned()
            assert stored(app, "billing").revision == before
            assert generations == sorted(set(generations))  # strictly increasing per change
            desc = await describe(port, "billing")
            assert sorted(desc.live) == sorted(m.member_id for m in members)
            by_member = {}
            for row in desc.partitions:
                by_member.setdefault(row["memberId"], set()).add((row["topic"], row["partition"]))
            assert by_member == {m.member_id: m.assigned() for m in members}
            for m in members:
                await m.close()

    run(body)


def test_graceful_leave_hands_partitions_over() -> None:
    """A leave gives its partitions to the others at once; a revoke waits for release."""

    async def body() -> None:
        async with running_sc() as (app, _):
            port = app.public_port
            a, b = RawMember(port, "g", [TOPIC]), RawMember(port, "g", [TOPIC])
            await a.join()
            await b.join()
            # b's join marks 3 of a's partitions revoking: b gets nothing until a releases.
            assert b.assigned() == set()
            await a.until(lambda p: p.revoke)
            assert len(a.revoked()) == 3 and len(a.assigned()) == 3
            moving = a.revoked()
            status = stored(app, "g").status
            assert {g.tp for g in status.assignment if g.member_id == b.member_id} == set()
            await a.release()
            push = await b.until(lambda p: p.assigned)
            assert {(g["topic"], g["partition"]) for g in push.assigned} == moving
            generation = stored(app, "g").status.generation
            await a.leave()
            push = await b.until(lambda p: len(p.assigned) == 6)
            assert push.generation > generation
            assert [m.member_id for m in stored(app, "g").status.members] == [b.member_id]
            await a.close()
            await b.close()

    run(body)


def test_closed_connection_reassigns_at_once() -> None:
    """A dynamic member whose connection closes is gone: its partitions move now."""

    async def body() -> None:
        async with running_sc() as (app, _):
            port = app.public_port
            a, b = RawMember(port, "g", [TOPIC]), RawMember(port, "g", [TOPIC])
            await a.join()
            await b.join()
            await settle([a, b])
            assert len(b.assigned()) == 3
            await a.close()
            push = await b.until(lambda p: len(p.assigned) == 6)
            assert not push.revoke
            assert [m.member_id for m in stored(app, "g").status.members] == [b.member_id]
            await b.close()

    run(body)

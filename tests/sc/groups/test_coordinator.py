"""The group coordinator in process (``ScApp`` on the in-memory KV) with raw members."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.cli import group_cmds, main
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import (
    FencedMemberError,
    GroupNotEmptyError,
    InvalidRequestError,
    MemberIdConflictError,
    UnknownGroupError,
    UnreleasedInstanceIdError,
)
from spark_stream.models import ConsumerGroup
from spark_stream.net.connection import Connection
from spark_stream.protocol import STREAM_APIS, ApiKey
from spark_stream.protocol import control as c
from tests.polling import until
from tests.sc.conftest import Backend
from tests.sc.groups.member import RawMember, settle

pytestmark = pytest.mark.integration

TOPIC = "orders"


@contextlib.asynccontextmanager
async def running_sc(
    partitions: int = 6, spus: int = 0, backend: Backend | None = None
) -> AsyncIterator[tuple[ScApp, AdminClient]]:
    """An SC on the in-memory KV with topic ``orders``; ``spus`` registered custom SPUs
    give it partition objects (needed by commits), though no SPU runs."""
    settings = load_settings(ScSettings, public_port=0, private_port=0, heartbeat_timeout_s=2.0)
    app = ScApp(settings, kv=backend.make(10_000) if backend else MemoryKvStore())
    await app.start()
    admin = AdminClient("127.0.0.1", app.public_port, timeout=10)
    try:
        for spu in range(1, spus + 1):
            await admin.register_spu(spu)
        await admin.create_topic(TOPIC, partitions=partitions, allow_missing_spus=True)
        if spus:
            await until(lambda: len(app.store.partitions_of(TOPIC)) == partitions)
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


def test_three_members_share_six_partitions(backend: Backend) -> None:
    """T2: 2 partitions each, disjoint, full cover; generation moves only with grants."""

    async def body() -> None:
        async with running_sc(backend=backend) as (app, _):
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


def test_duplicate_member_id_is_refused_and_resume_takes_over() -> None:
    """T10: a new member with a live id is MemberIdConflict; a resume takes over."""

    async def body() -> None:
        async with running_sc() as (app, _):
            port = app.public_port
            a = RawMember(port, "g", [TOPIC])
            await a.join()
            twin = RawMember(port, "g", [TOPIC], member_id=a.member_id)
            with pytest.raises(MemberIdConflictError):
                await twin.join()
            assert len(stored(app, "g").status.members) == 1
            # One member per connection per group: a second identity on a's connection.
            second = RawMember(port, "g", [TOPIC])
            second.conn = a.conn
            with pytest.raises(MemberIdConflictError, match="already member"):
                await second.join()
            assert len(stored(app, "g").status.members) == 1
            await a.heartbeat()  # a's session on that connection is untouched
            # The same id resuming with its epoch on another connection takes over.
            push = await twin.join(member_epoch=a.epoch)
            assert {(g["topic"], g["partition"]) for g in push.assigned} == ALL
            with pytest.raises(FencedMemberError):
                await a.next()
            await a.close()
            await twin.close()

    run(body)


def test_malformed_fields_write_nothing_and_keep_the_connection(backend: Backend) -> None:
    """T11: each bad field is an InvalidRequestError naming it; the KV is untouched."""

    async def body() -> None:
        async with running_sc(backend=backend) as (app, _):
            member = str(uuid.uuid4())
            bad: list[tuple[ApiKey, dict[str, Any], str]] = [
                (
                    ApiKey.GROUP_JOIN,
                    {"group": "g", "member_id": "nope", "topics": [TOPIC]},
                    "member_id",
                ),
                (ApiKey.GROUP_JOIN, {"group": "", "member_id": member, "topics": [TOPIC]}, "group"),
                (ApiKey.GROUP_JOIN, {"group": "g", "member_id": member, "topics": []}, "topics"),
                (
                    ApiKey.GROUP_JOIN,
                    {"group": "g", "member_id": member, "topics": [TOPIC], "member_epoch": -3},
                    "member_epoch",
                ),
                (
                    ApiKey.GROUP_JOIN,
                    {
                        "group": "g",
                        "member_id": member,
                        "topics": [TOPIC],
                        "owned": [{"topic": TOPIC, "partition": -1}],
                    },
                    "owned[0].partition",
                ),
                (
                    ApiKey.GROUP_LEAVE,
                    {"group": "g", "member_id": member, "member_epoch": 0},
                    "member_epoch",
                ),
                (
                    ApiKey.OFFSET_COMMIT,
                    {
                        "group": "g",
                        "member_id": member,
                        "commits": [
                            {"topic": TOPIC, "partition": 0, "offset": -1, "grantEpoch": 1}
                        ],
                    },
                    "commits[0].offset",
                ),
                (ApiKey.RESET_OFFSETS, {"group": "g", "mode": "sideways"}, "mode"),
            ]
            revision = await app.kv.revision()
            async with await Connection.open("127.0.0.1", app.public_port) as conn:
                for api, meta, fieldname in bad:
                    with pytest.raises(InvalidRequestError, match=re.escape(fieldname)):
                        if api in STREAM_APIS:
                            async with await conn.stream(api, meta) as stream:
                                await stream.__anext__()
                        else:
                            await conn.request(api, meta, timeout=10)
                reply = await conn.call(c.ListGroupsRequest(), timeout=10)
                assert isinstance(reply, c.ListGroupsResponse) and reply.groups == []
            assert await app.kv.revision() == revision

    run(body)


def test_commit_is_fenced_after_a_move(backend: Backend) -> None:
    """T12: after a partition moved, its old holder's commit is fenced; the new one's is stored."""

    async def body() -> None:
        async with running_sc(spus=1, backend=backend) as (app, admin):
            port = app.public_port
            a, b = RawMember(port, "g", [TOPIC]), RawMember(port, "g", [TOPIC])
            await a.join()
            tp = (TOPIC, 5)
            old_epoch = a.grant_epoch(tp)
            [ok] = await a.commit({tp: (10, old_epoch)})
            assert ok["errorCode"] == 0 and ok["committed"] == 10
            await b.join()
            await settle([a, b])
            mover, keeper = (b, a) if tp in b.assigned() else (a, b)
            assert mover is b  # a's upper half moved to b
            [fenced] = await a.commit({tp: (20, old_epoch)})
            assert fenced["errorCode"] == FencedMemberError.code
            [stored_ok] = await b.commit({tp: (20, b.grant_epoch(tp))})
            assert stored_ok["errorCode"] == 0
            assert await admin.fetch_offsets("g") == {tp: 20}
            del keeper
            await a.close()
            await b.close()

    run(body)


def test_reset_and_delete_refused_while_members_live() -> None:
    """Admin: reset and delete say GroupNotEmpty with a member; work (dry run first) after."""

    async def body() -> None:
        async with running_sc(spus=1) as (app, admin):
            a = RawMember(app.public_port, "g", [TOPIC])
            await a.join()
            await a.commit({(TOPIC, 0): (7, a.grant_epoch((TOPIC, 0)))})
            with pytest.raises(GroupNotEmptyError):
                await admin.delete_group("g")
            with pytest.raises(GroupNotEmptyError):
                await admin.reset_offsets("g", "offset", value=3, execute=True)
            await a.leave()
            assert (await admin.list_groups())[0]["members"] == 0
            plan = await admin.reset_offsets("g", "offset", topic=TOPIC, value=0)
            assert not plan.executed and len(plan.plan) == 6
            assert await admin.fetch_offsets("g") == {(TOPIC, 0): 7}  # dry run wrote nothing
            await admin.reset_offsets("g", "offset", topic=TOPIC, value=0, execute=True)
            assert await admin.fetch_offsets("g") == {(TOPIC, p): 0 for p in range(6)}
            await admin.delete_group("g")
            assert await admin.list_groups() == []
            with pytest.raises(UnknownGroupError):
                await admin.describe_group("g")
            await a.close()

    run(body)


def test_silent_member_expires_after_its_session_timeout() -> None:
    """A member that stops heartbeating on an open connection is expired, not before."""

    async def body() -> None:
        async with running_sc() as (app, _):
            coordinator = app.public.groups
            now = [1_000.0]
            coordinator.clock = lambda: now[0]  # the sweeper's clock, moved by hand
            port = app.public_port
            quiet = RawMember(port, "g", [TOPIC], session_timeout_ms=3_000)
            alive = RawMember(port, "g", [TOPIC])
            await quiet.join()
            await alive.join()
            await settle([quiet, alive])
            now[0] += 2.9
            await alive.heartbeat()
            await coordinator.expire_due()
            assert len(stored(app, "g").status.members) == 2  # not before its timeout
            now[0] += 0.2
            await alive.heartbeat()
            await coordinator.expire_due()
            push = await alive.until(lambda p: len(p.assigned) == 6)
            assert not push.revoke
            assert [m.member_id for m in stored(app, "g").status.members] == [alive.member_id]
            assert quiet.conn is not None and not quiet.conn.closed
            await quiet.close()
            await alive.close()

    run(body)


def test_member_that_never_releases_is_fenced_at_the_rebalance_timeout() -> None:
    """A revoke not released within the rebalance timeout fences the member."""

    async def body() -> None:
        async with running_sc() as (app, _):
            port = app.public_port
            slow = RawMember(port, "g", [TOPIC], rebalance_timeout_ms=1_000)
            other = RawMember(port, "g", [TOPIC])
            await slow.join()
            await other.join()
            await slow.until(lambda p: p.revoke)
            with pytest.raises(FencedMemberError):
                await slow.next()  # never releases: the stream ends fenced
            push = await other.until(lambda p: len(p.assigned) >= 3)
            assert len(push.assigned) >= 3
            await slow.close()
            await other.close()

    run(body)


def test_cli_list_describe_columns(capsys: pytest.CaptureFixture[str]) -> None:
    """T13: ``consumer-group list|describe -O json`` with Kafka's columns and the lag."""

    async def cli(*argv: str) -> Any:
        capsys.readouterr()
        code = await asyncio.to_thread(main, ["--endpoint", endpoint, *argv, "-O", "json"])
        assert code == 0
        return json.loads(capsys.readouterr().out)

    async def body() -> None:
        nonlocal endpoint
        async with running_sc(spus=1) as (app, _):
            endpoint = f"127.0.0.1:{app.public_port}"
            a = RawMember(app.public_port, "g", [TOPIC], client_id="billing-1")
            await a.join()
            await a.commit({(TOPIC, 1): (4, a.grant_epoch((TOPIC, 1)))})
            # The leader's report as the SC holds it: HW 10 on partition 1.
            part = app.store.partition(f"{TOPIC}-1")
            assert part is not None
            written = await app.kv.update_status(
                "Partition", part.name, part.status.model_copy(update={"hw": 10, "leo": 12})
            )
            await app.dispatcher.wait_revision(written.revision)
            [listed] = await cli("consumer-group", "list")
            assert listed["lag"] == 6 and listed["state"] == "Stable"
            assert list(listed) == list(group_cmds.LIST_COLUMNS)
            assert listed["group"] == "g" and listed["members"] == 1
            assert listed["topics"] == [TOPIC]
            rows = await cli("consumer-group", "describe", "g")
            assert [list(r) for r in rows] == [list(group_cmds.DESCRIBE_COLUMNS)] * 6
            by_partition = {r["partition"]: r for r in rows}
            assert by_partition[1]["current-offset"] == 4
            one = by_partition[1]
            assert (one["high-watermark"], one["log-end-offset"], one["lag"]) == (10, 12, 6)
            assert by_partition[0]["current-offset"] is None
            assert {r["consumer-id"] for r in rows} == {a.member_id}
            assert {r["client-id"] for r in rows} == {"billing-1"}
            code = await asyncio.to_thread(
                main, ["--endpoint", endpoint, "consumer-group", "describe", "nope"]
            )
            assert code != 0
            assert "nope" in capsys.readouterr().err
            await a.close()

    endpoint = ""
    run(body)


def test_static_member_keeps_its_partitions_until_its_session_timeout() -> None:
    """A static member's closed connection is not a leave: it resumes; else it expires."""

    async def body() -> None:
        async with running_sc() as (app, _):
            coordinator = app.public.groups
            now = [1_000.0]
            coordinator.clock = lambda: now[0]
            port = app.public_port
            static = RawMember(port, "g", [TOPIC], instance_id="worker-1")
            other = RawMember(port, "g", [TOPIC])
            await static.join()
            await other.join()
            await settle([static, other])
            held, generation = static.assigned(), stored(app, "g").status.generation
            # Another member cannot take the instance id while its holder is live.
            thief = RawMember(port, "g", [TOPIC], instance_id="worker-1")
            with pytest.raises(UnreleasedInstanceIdError):
                await thief.join()
            await static.close()
            await until(lambda: static.member_id not in coordinator.live("g"))
            now[0] += 9.0
            await coordinator.expire_due()
            assert stored(app, "g").status.generation == generation  # nothing moved
            static.conn = None
            await static.join(member_epoch=static.epoch)
            assert static.assigned() == held
            assert stored(app, "g").status.generation == generation
            await static.close()
            await until(lambda: static.member_id not in coordinator.live("g"))
            # The sweeper runs on its own: ``other`` heartbeats before each step of the
            # clock, so only the static member's session (closed at 1009) can lapse.
            await other.heartbeat()
            now[0] += 5.05
            await other.heartbeat()
            now[0] += 5.05
            await other.heartbeat()
            await coordinator.expire_due()
            await other.until(lambda p: len(p.assigned) == 6)
            await thief.close()
            await other.close()

    run(body)


def test_topic_deletion_drops_its_grants() -> None:
    """A deleted topic's partitions leave the plan; members stay subscribed."""

    async def body() -> None:
        async with running_sc() as (app, admin):
            a = RawMember(app.public_port, "g", [TOPIC])
            await a.join()
            await admin.delete_topic(TOPIC)
            push = await a.until(lambda p: not p.assigned)
            assert push.revoke == []
            assert stored(app, "g").status.assignment == ()
            assert len(stored(app, "g").status.members) == 1
            await a.close()

    run(body)

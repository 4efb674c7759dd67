"""Leader epochs with real processes (Redis, ``python -m sc``, ``python -m spu`` x 2).

The leader is SIGSTOPped past the SC's heartbeat timeout: the SC elects the other
replica at leader epoch 1 and the partition's status says so. SIGCONT: the deposed
leader, still up, hears of the election and fences a member whose metadata still names
it at epoch 0, while the new leader serves the member at epoch 1 from its exact next
offset; the member's stream, open across the election, goes on without gap or repeat.
A client whose leader snapshot is stale is fenced and moves to the new leader by itself;
plain (version 0) fetches keep working; an SC restart keeps the stored epoch. The SPUs'
gate audits show no overlapping grants (Z1).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest

from sc.kv import Grant, RedisKvStore
from spark_stream.client.consumer import GroupFetch, Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.client.leader import RetryPolicy
from spark_stream.client.metadata import Leader
from spark_stream.errors import (
    FencedLeaderEpochError,
    GateNotReadyError,
    NotLeaderError,
    UnknownLeaderEpochError,
)
from spark_stream.models import ConsumerGroup
from spark_stream.models.group import ConsumerGroupStatus, GroupGrant, GroupMember, GroupState
from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks, FetchRequest, FetchResponse
from spark_stream.records import decode_frames
from spu.gate_audit import overlapping_grants, read_audit_file
from tests.harness.processes import ProcessCluster
from tests.integration.gate_audits import AUDIT
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import fetch_values, produce, run, until, values

pytestmark = pytest.mark.integration

A = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
HOST = "127.0.0.1"


def member_fetch(offset: int, leader_epoch: int) -> FetchRequest:
    """Member A's group fetch of ``orders-0`` at ``leader_epoch`` (version 2)."""
    return FetchRequest(
        "orders",
        0,
        offset,
        group="billing",
        member_id=A,
        grant_epoch=1,
        leader_epoch=leader_epoch,
    )


def decoded(reply: FetchResponse, offset: int) -> list[bytes]:
    out: list[bytes] = []
    for batch in decode_frames(reply.tail, with_offsets=True):  # type: ignore[arg-type]
        offsets, got = batch.column("offset").to_pylist(), batch.column("value").to_pylist()
        out += [v for o, v in zip(offsets, got, strict=True) if o >= offset]
    return out


async def publish_grant(kv: RedisKvStore) -> None:
    """Grant ``orders-0`` to member A at generation 1, as the coordinator would."""
    created = await kv.create(ConsumerGroup.new("billing"))
    status = ConsumerGroupStatus(
        state=GroupState.STABLE,
        generation=1,
        group_epoch=1,
        members=(GroupMember(member_id=A, topics=("orders",)),),
        assignment=(GroupGrant(topic="orders", partition=0, member_id=A, grant_epoch=1),),
    )
    await kv.publish_group_plan("billing", status, {("orders", 0): Grant(A, 1)}, created.revision)


async def epoch_of(cluster: ProcessCluster, name: str) -> int:
    """The partition's leader epoch as the SC stores it (``partition list``)."""
    assert cluster.admin is not None
    (part,) = [p for p in await cluster.admin.list_partitions() if p.name == name]
    return part.status.leader_epoch


def test_a_deposed_leader_fences_a_stale_member_and_the_client_moves_to_the_new_one(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        cluster = spu_cluster([1, 2], spu_settings={"gate_audit_file": AUDIT})
        stopped: int | None = None
        async with cluster:
            kv = RedisKvStore(cluster.redis_url)
            client: FluvioAsync | None = None
            try:
                await cluster.create_topic(
                    "orders", partitions=1, replicationFactor=2, minInSyncReplicas=1
                )
                old = await cluster.leader_of("orders-0")
                assert await epoch_of(cluster, "orders-0") == 0  # a new partition
                conn = await cluster.connect(old)
                await produce(conn, "orders", 0, ["a", "b", "c", "d"], acks=Acks.ALL)
                await publish_grant(kv)

                async def admitted(c: Connection, epoch: int) -> list[bytes] | None:
                    try:
                        reply = await c.call(member_fetch(2, epoch), timeout=10)
                    except (GateNotReadyError, NotLeaderError, UnknownLeaderEpochError):
                        return None
                    assert isinstance(reply, FetchResponse)
                    return decoded(reply, 2)

                assert await until(lambda: admitted(conn, 0), what="gate") == values("c", "d")

                # The member's stream (what the group consumer runs) at epoch 0, open
                # across the election: it must go on from its exact position.
                assert cluster.sc.public_port is not None
                client = await FluvioAsync.connect(f"{HOST}:{cluster.sc.public_port}")
                consumer = await client.partition_consumer("orders", 0)
                streamed: list[bytes] = []
                grant = GroupFetch("billing", A, 1)

                async def member() -> None:
                    async for record in consumer.stream(Offset.beginning(), group=grant):
                        streamed.append(record.value)

                reading = asyncio.ensure_future(member())
                await until(lambda: len(streamed) == 4, what="the stream at epoch 0")

                # The leader stops answering: the SC elects the other replica, epoch 1.
                pid = cluster.spus[old].pid
                assert pid is not None
                os.kill(pid, signal.SIGSTOP)
                stopped = pid
                new = await cluster.leader_of("orders-0", not_in={old})
                assert await epoch_of(cluster, "orders-0") == 1
                os.kill(pid, signal.SIGCONT)  # deposed, and up again
                stopped = None

                async def fenced_at_old() -> bool:
                    try:
                        await conn.call(member_fetch(2, 0), timeout=10)
                    except FencedLeaderEpochError:
                        return True
                    except NotLeaderError:
                        pytest.fail("a stale epoch must be fenced before leadership is checked")
                    return False  # not told of the election yet: the double-fault window

                await until(fenced_at_old, what="the deposed leader fences epoch 0")
                with pytest.raises(NotLeaderError):  # it knows epoch 1 and does not lead it
                    await conn.call(member_fetch(2, 1), timeout=10)

                new_conn = await cluster.connect(new)
                got = await until(lambda: admitted(new_conn, 1), what="the new leader")
                assert got == values("c", "d")  # the member's exact next offset
                with pytest.raises(FencedLeaderEpochError):
                    await new_conn.call(member_fetch(2, 0), timeout=10)
                with pytest.raises(UnknownLeaderEpochError):
                    await new_conn.call(member_fetch(2, 2), timeout=10)
                # Old clients (version 0, no epoch) keep working.
                assert await fetch_values(new_conn, "orders", 0) == values("a", "b", "c", "d")
                with pytest.raises(NotLeaderError):
                    await fetch_values(conn, "orders", 0)

                await produce(new_conn, "orders", 0, ["e", "f"], acks=Acks.ALL)
                await until(lambda: len(streamed) == 6, what="the stream at epoch 1")
                assert streamed == values("a", "b", "c", "d", "e", "f")  # no gap, no repeat
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reading

                # A client whose snapshot still names the deposed leader at epoch 0.
                stale = Leader(old, HOST, cluster.spus[old].ports[0], leader_epoch=0)
                sent_to: list[tuple[int, int]] = []

                def request(leader: Leader) -> FetchRequest:
                    sent_to.append((leader.spu_id, leader.leader_epoch))
                    return member_fetch(2, leader.leader_epoch)

                reply = await client.leaders.call(
                    "orders", 0, request, RetryPolicy(timeout_s=30), leader=stale
                )
                assert isinstance(reply, FetchResponse)
                assert decoded(reply, 2) == values("c", "d", "e", "f")
                assert sent_to[0] == (old, 0) and sent_to[-1] == (new, 1)
                # The client's own group reads carry the epoch of its metadata.
                batches = [b async for b in client.fetch_batches("orders", 0, 1, 4, group=grant)]
                got = [v for b in batches for v in b.column("value").to_pylist()]
                assert got == values("b", "c", "d")
                after = await kv.get(ConsumerGroup.kind, "billing")
                assert after is not None and after.status.generation == 1  # no rebalance

                # The epoch is stored with the status: an SC restart does not reset it, and
                # the leader keeps serving at the stored epoch after the SC's full pushes.
                await cluster.restart_sc()
                await cluster.wait_online({1, 2})
                leader = await cluster.leader_of("orders-0")
                epoch = await epoch_of(cluster, "orders-0")
                assert epoch >= 1
                leader_conn = await cluster.connect(leader)
                got = await until(lambda: admitted(leader_conn, epoch), what="after the restart")
                assert got == values("c", "d", "e", "f")
                with pytest.raises(FencedLeaderEpochError):
                    await leader_conn.call(member_fetch(2, epoch - 1), timeout=10)
            finally:
                if stopped is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(stopped, signal.SIGCONT)
                if client is not None:
                    await client.close()
                await kv.close()
        logs = [read_audit_file(cluster.spus[i].workdir / AUDIT, i) for i in (1, 2)]
        assert all(any(c.member == A for c in log.changes) for log in logs)
        assert overlapping_grants(logs) == []

    run(body)

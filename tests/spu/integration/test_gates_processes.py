"""Delivery gates with real processes (Redis, ``python -m sc``, ``python -m spu`` x 2).

The plan is published into Redis through the KV API, as the coordinator does; the SC
sends the gates to the leader. A leader SIGKILL: the new leader serves the granted
member at its exact next offset (T7 core) with the group generation unchanged, refuses
another member, and the SPUs' audit files (written as the changes happen, so they
outlive the kill) show no overlapping grants (Z1).
"""

from __future__ import annotations

import time

import pytest

from sc.kv import Grant, RedisKvStore
from spark_stream.errors import FencedMemberError, GateNotReadyError, NotLeaderError
from spark_stream.models import ConsumerGroup
from spark_stream.models.group import ConsumerGroupStatus, GroupGrant, GroupMember, GroupState
from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks, FetchRequest, FetchResponse
from spark_stream.records import decode_frames
from spu.gate_audit import overlapping_grants, read_audit_file
from tests.integration.gate_audits import AUDIT
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import fetch_values, produce, run, until, values

pytestmark = pytest.mark.integration

A = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
B = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a02"


def group_fetch(offset: int, member: str) -> FetchRequest:
    return FetchRequest("orders", 0, offset, group="billing", member_id=member, grant_epoch=1)


async def admitted_from(conn: Connection, offset: int, member: str) -> list[bytes] | None:
    """The values of a group fetch from ``offset`` on, or None while the gate is not there."""
    try:
        reply = await conn.call(group_fetch(offset, member), timeout=10)
    except (GateNotReadyError, NotLeaderError):
        return None
    assert isinstance(reply, FetchResponse)
    out: list[bytes] = []
    for batch in decode_frames(reply.tail, with_offsets=True):  # type: ignore[arg-type]
        for off, value in zip(
            batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
        ):
            if off >= offset:
                out.append(value)
    return out


def test_leader_sigkill_new_leader_serves_the_grant_and_no_grants_overlap(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        cluster = spu_cluster([1, 2], spu_settings={"gate_audit_file": AUDIT})
        async with cluster:
            kv = RedisKvStore(cluster.redis_url)
            try:
                await cluster.create_topic(
                    "orders", partitions=1, replicationFactor=2, minInSyncReplicas=1
                )
                old = await cluster.leader_of("orders-0")
                conn = await cluster.connect(old)
                await produce(conn, "orders", 0, ["a", "b", "c", "d"], acks=Acks.ALL)
                with pytest.raises(GateNotReadyError):
                    await conn.call(group_fetch(0, A), timeout=10)

                created = await kv.create(ConsumerGroup.new("billing"))
                status = ConsumerGroupStatus(
                    state=GroupState.STABLE,
                    generation=1,
                    group_epoch=1,
                    members=(GroupMember(member_id=A, topics=("orders",)),),
                    assignment=(
                        GroupGrant(topic="orders", partition=0, member_id=A, grant_epoch=1),
                    ),
                )
                await kv.publish_group_plan(
                    "billing", status, {("orders", 0): Grant(A, 1)}, created.revision
                )
                got = await until(lambda: admitted_from(conn, 2, A), what="the gate")
                assert got == values("c", "d")
                with pytest.raises(FencedMemberError):
                    await conn.call(group_fetch(0, B), timeout=10)
                assert await fetch_values(conn, "orders", 0) == values("a", "b", "c", "d")

                await cluster.kill_spu(old)
                killed_ns = time.monotonic_ns()
                new = await cluster.leader_of("orders-0", not_in={old})
                new_conn = await cluster.connect(new)
                got = await until(lambda: admitted_from(new_conn, 2, A), what="new leader's gate")
                assert got == values("c", "d")  # the member's exact next offset
                with pytest.raises(FencedMemberError):
                    await new_conn.call(group_fetch(2, B), timeout=10)
                after = await kv.get(ConsumerGroup.kind, "billing")
                assert after is not None and after.status.generation == 1
            finally:
                await kv.close()
        logs = [
            read_audit_file(cluster.spus[i].workdir / AUDIT, i, killed_ns if i == old else None)
            for i in (1, 2)
        ]
        assert all(any(c.member == A for c in log.changes) for log in logs)
        assert overlapping_grants(logs) == []

    run(body)

"""Delivery gates wired end to end: a plan published in the KV reaches the leader's gate,
and group fetches (v1) are admitted or refused by it; plain fetches (v0) are untouched.

A real SC app (memory KV) and real SPU apps on loopback in one event loop
(``cluster_inproc``); the plan is published with ``publish_group_plan``, as the
coordinator does. Every test ends with the Z1 check over the SPUs' gate audit.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sc.kv import Grant
from spark_stream.client.consumer import GroupFetch, Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.errors import (
    FencedMemberError,
    GateNotReadyError,
    InvalidRequestError,
    UnsupportedVersionError,
)
from spark_stream.models import ConsumerGroup
from spark_stream.models.group import ConsumerGroupStatus, GroupGrant, GroupMember, GroupState
from spark_stream.net.connection import Connection
from spark_stream.net.server import Server
from spark_stream.protocol import (
    Acks,
    ApiKey,
    FetchRequest,
    FetchResponse,
    StreamFetchPush,
    StreamFetchRequest,
    UpdateGates,
)
from spark_stream.records import decode_frames
from spu.gate_audit import AuditLog, overlapping_grants, read_audit_file
from tests.spu.cluster_inproc import HOST, InProcessCluster
from tests.spu.helpers import fetch_values, leader_of, produce, run, until, values

pytestmark = pytest.mark.integration

A = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
B = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a02"


async def publish(
    cluster: InProcessCluster, group: str, generation: int, grants: dict[int, tuple[str, int]]
) -> None:
    """Publish ``group``'s plan: partition of ``orders`` -> (member, grant epoch)."""
    assert cluster.sc is not None
    kv = cluster.sc.kv
    current = await kv.get(ConsumerGroup.kind, group)
    if current is None:
        current = await kv.create(ConsumerGroup.new(group))
    members = tuple(
        GroupMember(member_id=m, member_epoch=generation, topics=("orders",))
        for m in sorted({m for m, _ in grants.values()})
    )
    assignment = tuple(
        GroupGrant(topic="orders", partition=p, member_id=m, grant_epoch=e)
        for p, (m, e) in sorted(grants.items())
    )
    status = ConsumerGroupStatus(
        state=GroupState.STABLE if members else GroupState.EMPTY,
        generation=generation,
        group_epoch=generation,
        members=members,
        assignment=assignment,
    )
    owners = {("orders", p): Grant(m, e) for p, (m, e) in grants.items()}
    await kv.publish_group_plan(group, status, owners, current.revision)


def group_fetch(
    offset: int, member: str, epoch: int = 1, group: str = "billing", partition: int = 0
) -> FetchRequest:
    return FetchRequest(
        "orders", partition, offset, group=group, member_id=member, grant_epoch=epoch
    )


def decoded(reply: FetchResponse) -> list[bytes]:
    out: list[bytes] = []
    for batch in decode_frames(reply.tail, with_offsets=True):  # type: ignore[arg-type]
        out += batch.column("value").to_pylist()
    return out


def audits(cluster: InProcessCluster) -> list[AuditLog]:
    return [app.dispatcher.gates.audit_log() for app in cluster.spus.values()]


def test_plan_in_the_kv_gates_group_fetches_and_leaves_plain_ones_alone(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1]) as cluster:
            await cluster.create_topic("orders", partitions=1, replicationFactor=1)
            conn = await cluster.conn(1)
            await produce(conn, "orders", 0, ["a", "b", "c"])
            gates = cluster.spus[1].dispatcher.gates
            with pytest.raises(GateNotReadyError, match="no delivery gate"):
                await conn.call(group_fetch(0, A), timeout=10)

            await publish(cluster, "billing", 1, {0: (A, 1)})
            await until(lambda: gates.gate("billing", "orders", 0) is not None, what="gate")
            reply = await conn.call(group_fetch(0, A), timeout=10)
            assert isinstance(reply, FetchResponse) and decoded(reply) == values("a", "b", "c")
            with pytest.raises(FencedMemberError, match="granted to another member"):
                await conn.call(group_fetch(0, B), timeout=10)
            with pytest.raises(GateNotReadyError):
                await conn.call(group_fetch(0, A, group="other"), timeout=10)
            # Plain (v0) reads are untouched.
            assert await fetch_values(conn, "orders", 0) == values("a", "b", "c")
            assert gates.rejections == {"not_ready": 2, "fenced": 1}

            # The heartbeat reports the applied generation to the SC.
            assert cluster.sc is not None
            session = cluster.sc.cm.sessions[1]
            await until(lambda: session.applied_generations.get("billing") == 1, what="heartbeat")

            # A stale plan arriving late is ignored; an equal one applied again (no-op).
            await publish(cluster, "billing", 2, {0: (B, 2)})
            await until(lambda: gates.applied_generation("billing") == 2, what="generation 2")
            stale = UpdateGates(False, [_entry("billing", A, 1, 1)])
            cluster.spus[1].dispatcher.apply_gates(stale)
            assert (gate := gates.gate("billing", "orders", 0)) is not None
            assert (gate.member, gate.grant_epoch, gate.generation) == (B, 2, 2)
            with pytest.raises(FencedMemberError):
                await conn.call(group_fetch(0, A), timeout=10)
            reply = await conn.call(group_fetch(1, B, 2), timeout=10)
            assert isinstance(reply, FetchResponse) and decoded(reply) == values("a", "b", "c")
            again = UpdateGates(False, [_entry("billing", B, 2, 2)])
            cluster.spus[1].dispatcher.apply_gates(again)
            assert gates.gate("billing", "orders", 0) == gate  # same version: streams go on

            # A deleted group's gates go: its reads fail closed again.
            await publish(cluster, "billing", 3, {})
            await until(lambda: gates.applied_generation("billing") == 3, what="empty plan")
            assert (closed := gates.gate("billing", "orders", 0)) is not None
            assert closed.member is None
            await cluster.sc.kv.delete_group("billing")
            await until(lambda: gates.applied_generation("billing") is None, what="group dropped")
            assert gates.gate("billing", "orders", 0) is None
            with pytest.raises(GateNotReadyError):
                await conn.call(group_fetch(1, B, 2), timeout=10)
            assert overlapping_grants(audits(cluster)) == []

    run(body)


def _entry(group: str, member: str | None, epoch: int, generation: int) -> dict[str, object]:
    return {
        "group": group,
        "topic": "orders",
        "partition": 0,
        "member": member,
        "grant_epoch": epoch,
        "generation": generation,
    }


def test_a_plan_change_ends_a_running_group_stream_with_fenced_member(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1]) as cluster:
            await cluster.create_topic("orders", partitions=1, replicationFactor=1)
            conn = await cluster.conn(1)
            await produce(conn, "orders", 0, ["a"])
            gates = cluster.spus[1].dispatcher.gates
            await publish(cluster, "billing", 1, {0: (A, 1)})
            await until(lambda: gates.gate("billing", "orders", 0) is not None, what="gate")
            request = StreamFetchRequest(
                "orders", 0, 0, group="billing", member_id=A, grant_epoch=1
            )
            async with await conn.stream(request) as stream:
                first = (await anext(stream)).message()
                assert isinstance(first, StreamFetchPush)
                # No new data: only the gate change can end the stream.
                await publish(cluster, "billing", 2, {0: (B, 2)})
                with pytest.raises(FencedMemberError, match="granted to another member"):
                    await anext(stream)
            # The connection stays usable.
            assert await fetch_values(conn, "orders", 0) == values("a")
            assert overlapping_grants(audits(cluster)) == []

    run(body)


def test_malformed_group_fields_are_refused_by_name_and_the_connection_stays_usable(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1]) as cluster:
            await cluster.create_topic("orders", partitions=1, replicationFactor=1)
            conn = await cluster.conn(1)
            await produce(conn, "orders", 0, ["a"])
            base = {"topic": "orders", "partition": 0, "offset": 0}
            cases = [
                ({**base, "group": 5, "member_id": A, "grant_epoch": 1}, 1, "group"),
                ({**base, "group": "billing", "grant_epoch": 1}, 1, "member_id"),
                ({**base, "group": "billing", "member_id": A, "grant_epoch": -1}, 1, "grant_epoch"),
                ({**base, "group": "billing", "member_id": A, "grant_epoch": 1}, 0, "version 1"),
                (base, 1, "group is required"),
            ]
            for meta, version, named in cases:
                with pytest.raises(InvalidRequestError, match=named):
                    await conn.request(ApiKey.FETCH, meta, version=version, timeout=10)
            assert await fetch_values(conn, "orders", 0) == values("a")

    run(body)


def test_a_server_without_group_fetch_refuses_v1_rather_than_serve_ungated() -> None:
    async def body() -> None:
        async def old_fetch(*_: object) -> FetchResponse:
            return FetchResponse(0, 0, 0)

        server = Server({ApiKey.FETCH: old_fetch}, host=HOST)  # speaks version 0 only
        await server.start()
        conn = await Connection.open(HOST, server.port)
        try:
            with pytest.raises(UnsupportedVersionError, match="version 1"):
                await conn.call(group_fetch(0, A), timeout=10)
            assert isinstance(
                await conn.call(FetchRequest("orders", 0, 0), timeout=10), FetchResponse
            )
        finally:
            await conn.close()
            await server.stop()

    run(body)


def test_new_leader_gets_its_gates_with_the_leadership_and_serves_the_grant(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with InProcessCluster(
            tmp_path, [1, 2], gate_audit_file="gate-audit.jsonl"
        ) as cluster:
            await cluster.create_topic(
                "orders", partitions=1, replicationFactor=2, minInSyncReplicas=1
            )
            assert cluster.admin is not None and cluster.sc is not None
            old = await leader_of(cluster.admin, "orders-0")
            conn = await cluster.conn(old)
            await produce(conn, "orders", 0, ["a", "b", "c", "d"], acks=Acks.ALL)
            await publish(cluster, "billing", 1, {0: (A, 1)})
            gates = cluster.spus[old].dispatcher.gates
            await until(lambda: gates.gate("billing", "orders", 0) is not None, what="gate")
            reply = await conn.call(group_fetch(0, A), timeout=10)
            assert isinstance(reply, FetchResponse)
            before = await cluster.sc.kv.get(ConsumerGroup.kind, "billing")
            assert before is not None

            await cluster.stop_spu(old)
            stopped_ns = time.monotonic_ns()
            new = await leader_of(cluster.admin, "orders-0", not_in={old})
            new_conn = await cluster.conn(new)

            async def served() -> bool:
                try:
                    reply = await new_conn.call(group_fetch(2, A), timeout=10)
                except GateNotReadyError:
                    return False
                assert isinstance(reply, FetchResponse)
                return decoded(reply)[-2:] == values("c", "d")

            await until(served, what="the new leader serves the grant")
            with pytest.raises(FencedMemberError):
                await new_conn.call(group_fetch(2, B), timeout=10)
            after = await cluster.sc.kv.get(ConsumerGroup.kind, "billing")
            assert after is not None and after.status.generation == before.status.generation
        audit = {i: tmp_path / f"spu-{i}" / "gate-audit.jsonl" for i in (1, 2)}
        logs = [read_audit_file(audit[i], i, stopped_ns if i == old else None) for i in (1, 2)]
        assert any(change.member == A for change in logs[new - 1].changes)
        assert overlapping_grants(logs) == []

    run(body)


def test_the_client_sends_group_fields_local_network_and_stream(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1]) as cluster:
            await cluster.create_topic("orders", partitions=1, replicationFactor=1)
            conn = await cluster.conn(1)
            await produce(conn, "orders", 0, ["a", "b"])
            assert cluster.sc is not None
            client = await FluvioAsync.connect(f"{HOST}:{cluster.sc.public_port}")
            try:
                grant = GroupFetch("billing", A, 1)
                with pytest.raises(GateNotReadyError):  # retried briefly, then surfaced
                    async for _ in client.fetch_batches("orders", 0, 0, 2, group=grant):
                        pass
                await publish(cluster, "billing", 1, {0: (A, 1)})
                gates = cluster.spus[1].dispatcher.gates
                await until(lambda: gates.gate("billing", "orders", 0) is not None, what="gate")
                for local in (True, False):
                    got = [
                        v
                        for batch in [
                            b
                            async for b in client.fetch_batches(
                                "orders", 0, 0, 2, group=grant, local=local
                            )
                        ]
                        for v in batch.column("value").to_pylist()
                    ]
                    assert got == values("a", "b"), local
                with pytest.raises(FencedMemberError):
                    async for _ in client.fetch_batches(
                        "orders", 0, 0, 2, group=GroupFetch("billing", B, 1)
                    ):
                        pass
                consumer = await client.partition_consumer("orders", 0)
                seen: list[bytes] = []
                with pytest.raises(FencedMemberError):
                    async for record in consumer.stream(Offset.beginning(), group=grant):
                        seen.append(record.value)
                        if len(seen) == 2:
                            await publish(cluster, "billing", 2, {0: (B, 2)})
                assert seen == values("a", "b")
            finally:
                await client.close()
            assert overlapping_grants(audits(cluster)) == []

    run(body)

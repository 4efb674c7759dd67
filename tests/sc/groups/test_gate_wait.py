"""The coordinator pushes a grant only once the partition's leader holds its gate.

A real SC app (memory KV) and a real SPU app on loopback in one event loop
(``cluster_inproc``), raw members on the SC public port. At the instant a member reads a
push, the leader's gate table must already admit it at the pushed grant epoch; the
first group fetch then needs no ``GateNotReadyError`` retry, and the SPU acknowledged
the gates at once (no 200 ms wait ran out).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spark_stream.errors import FencedMemberError
from spark_stream.protocol import FetchRequest, FetchResponse
from spu.gate_audit import overlapping_grants
from tests.sc.groups.member import RawMember
from tests.spu.cluster_inproc import InProcessCluster
from tests.spu.helpers import produce, until

pytestmark = pytest.mark.integration


def _holds_push(cluster: InProcessCluster, member: RawMember) -> None:
    """Every grant of ``member``'s last push is admitted by the leader's gate now."""
    assert member.last is not None
    gates = cluster.spus[1].dispatcher.gates
    for grant in member.last.assigned:
        gate = gates.gate(member.group, grant["topic"], grant["partition"])
        assert gate is not None, f"no gate for {grant} when it was pushed"
        assert gate.member == member.member_id, (grant, gate)
        assert gate.grant_epoch == grant["grantEpoch"], (grant, gate)
        assert gate.generation >= grant["grantEpoch"], (grant, gate)


async def _fetch(cluster: InProcessCluster, member: RawMember, partition: int) -> None:
    conn = await cluster.conn(1)
    grant_epoch = member.grant_epoch(("orders", partition))
    request = FetchRequest(
        "orders",
        partition,
        0,
        group="billing",
        member_id=member.member_id,
        grant_epoch=grant_epoch,
    )
    reply = await conn.call(request, timeout=10)
    assert isinstance(reply, FetchResponse)


def test_grants_are_pushed_after_the_leader_holds_their_gates(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1]) as cluster:
            assert cluster.sc is not None
            await cluster.create_topic("orders", partitions=2, replicationFactor=1)
            conn = await cluster.conn(1)
            for p in (0, 1):
                await produce(conn, "orders", p, ["a", "b"])
            port = cluster.sc.public_port
            a = RawMember(port, "billing", ["orders"])
            await a.join()
            assert a.assigned() == {("orders", 0), ("orders", 1)}
            _holds_push(cluster, a)
            for p in (0, 1):
                await _fetch(cluster, a, p)

            # A second member: one partition moves A -> B (revoke, release, grant).
            b = RawMember(port, "billing", ["orders"])
            first = await b.join()
            assert not first.assigned
            await a.until(lambda push: bool(push.revoke))
            moved = a.revoked()
            await a.release()
            await b.until(lambda push: bool(push.assigned))
            assert b.assigned() == moved
            _holds_push(cluster, b)
            ((_, partition),) = moved
            await _fetch(cluster, b, partition)

            gates = cluster.spus[1].dispatcher.gates
            assert gates.rejections.get("not_ready", 0) == 0
            # A stranger is refused; the SPU reports it, per group, to the SC's describe.
            stranger = RawMember(port, "billing", ["orders"])
            stranger.last = b.last
            with pytest.raises(FencedMemberError):
                await _fetch(cluster, stranger, partition)
            coordinator = cluster.sc.public.groups
            await until(
                lambda: coordinator.report("billing")["gateRejections"]["fenced"] == 1,
                what="the SPU's heartbeat with its refusals",
            )
            assert coordinator.report("billing")["gateRejections"]["not_ready"] == 0
            metrics = cluster.sc.public.groups.metrics("billing")
            assert metrics.gate_wait_timeouts == 0
            assert metrics.reassignments == 1
            # A dies (its connection closes): B is granted its partition at once, after
            # the gate again, and the counters time that reassignment too.
            await a.close()
            await b.until(lambda push: len(push.assigned) == 2)
            _holds_push(cluster, b)
            for p in (0, 1):
                await _fetch(cluster, b, p)
            assert metrics.reassignments == 2 and metrics.gate_wait_timeouts == 0
            assert gates.rejections.get("not_ready", 0) == 0
            assert overlapping_grants([gates.audit_log()]) == []
            await b.close()

    asyncio.run(asyncio.wait_for(body(), 60))

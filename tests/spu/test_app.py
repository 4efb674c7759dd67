"""SPU apps with the real SC app in one event loop: replication, failover, reattach.

Real sockets and protocol on loopback, one process (see ``cluster_inproc``); the same
scenarios with real processes and SIGKILL are in ``tests/spu/integration``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import NotLeaderError
from spark_stream.protocol import Acks, Isolation
from spark_stream.records import encode_records
from tests.spu.cluster_inproc import InProcessCluster
from tests.spu.helpers import fetch_values, leader_of, produce, run, until, values

pytestmark = pytest.mark.integration


def test_replicated_produce_and_consume_both_isolations(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1, 2, 3]) as cluster:
            await cluster.create_topic(
                "orders", partitions=2, replicationFactor=3, minInSyncReplicas=2
            )
            assert cluster.admin is not None
            for partition in (0, 1):
                name = f"orders-{partition}"
                leader = await leader_of(cluster.admin, name)
                conn = await cluster.conn(leader)
                sent = [f"p{partition}-{i}" for i in range(5)]
                for i in range(0, 5, 2):
                    reply = await produce(conn, "orders", partition, sent[i : i + 2], acks=Acks.ALL)
                    assert reply.base_offset == i and reply.hw >= i + len(sent[i : i + 2])
                assert await fetch_values(conn, "orders", partition) == values(*sent)
                assert await fetch_values(
                    conn, "orders", partition, 3, Isolation.UNCOMMITTED
                ) == values(*sent[3:])
                # Every follower holds the committed records.
                for spu_id, app in cluster.spus.items():
                    if spu_id == leader:
                        continue
                    await until(
                        lambda a=app, n=name: (
                            (log := a.dispatcher.log(n)) is not None
                            and log.leo == 5
                            and log.hw == 5
                        ),
                        what=f"follower {spu_id} caught up",
                    )
                other = await cluster.conn(next(i for i in cluster.spus if i != leader))
                with pytest.raises(NotLeaderError):
                    await produce(other, "orders", partition, ["x"])

    run(body)


def test_failover_keeps_acknowledged_records_and_deduplicates_retries(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1, 2, 3], replica_max_lag_ms=2000) as cluster:
            await cluster.create_topic(
                "events", partitions=1, replicationFactor=3, minInSyncReplicas=2
            )
            assert cluster.admin is not None
            old = await leader_of(cluster.admin, "events-0")
            conn = await cluster.conn(old)
            acked = []
            for i in range(4):
                await produce(
                    conn, "events", 0, [f"e{i}"], acks=Acks.ALL, producer_id=9, sequence=i
                )
                acked.append(f"e{i}")
            retried = encode_records(["e4", "e5"], producer_id=9, sequence=4)
            first = await produce(conn, "events", 0, [], acks=Acks.ALL, frame=retried)
            acked += ["e4", "e5"]
            await cluster.stop_spu(old)
            new = await leader_of(cluster.admin, "events-0", not_in={old})
            conn2 = await cluster.conn(new)
            again = await produce(conn2, "events", 0, [], acks=Acks.ALL, frame=retried)
            assert again.base_offset == first.base_offset  # retry across a leader change
            await produce(conn2, "events", 0, ["e6"], acks=Acks.ALL, producer_id=9, sequence=6)
            acked.append("e6")
            assert await fetch_values(conn2, "events", 0) == values(*acked)
            # The old leader comes back as a follower and catches up (storage reattached).
            await cluster.start_spu(old)
            dispatcher = cluster.spus[old].dispatcher
            await until(
                lambda: (log := dispatcher.log("events-0")) is not None and log.leo == len(acked),
                what="old leader caught up",
            )
            with pytest.raises(NotLeaderError):
                await produce(await cluster.conn(old), "events", 0, ["x"])

    run(body)


def test_diverged_former_leader_truncates_to_the_new_leaders_log(tmp_path: Path) -> None:
    async def body() -> None:
        async with InProcessCluster(tmp_path, [1, 2], replica_max_lag_ms=300) as cluster:
            await cluster.create_topic(
                "audit",
                partitions=1,
                replicationFactor=2,
                minInSyncReplicas=1,
                uncleanLeaderElection=True,
            )
            assert cluster.admin is not None
            first = await leader_of(cluster.admin, "audit-0")
            second = next(i for i in cluster.spu_ids if i != first)
            conn = await cluster.conn(first)
            await produce(conn, "audit", 0, ["a", "b"], acks=Acks.ALL)
            follower_log = cluster.spus[second].dispatcher.log("audit-0")
            await until(
                lambda: follower_log is not None and follower_log.leo == 2, what="replicated"
            )
            await cluster.stop_spu(second)
            # Only the first SPU gets these: an uncommitted-elsewhere tail.
            await produce(conn, "audit", 0, ["first-only-1", "first-only-2"])
            await cluster.stop_spu(first)
            await cluster.start_spu(second)  # the only one up: an unclean leader
            await until(
                lambda: cluster.spus[second].dispatcher.leader("audit-0"), what="second SPU leads"
            )
            conn2 = await cluster.conn(second)
            await produce(conn2, "audit", 0, ["second-1"])
            await cluster.start_spu(first)  # comes back as a follower with a diverged tail
            dispatcher = cluster.spus[first].dispatcher

            def converged() -> bool:
                log = dispatcher.log("audit-0")
                follower = dispatcher.follower(second)
                return (
                    log is not None
                    and follower is not None
                    and follower.synced("audit-0")
                    and log.leo == 3
                )

            await until(converged, what="former leader truncated and caught up")
            log = dispatcher.log("audit-0")
            assert log is not None
            got = [v for b in log.read(0, 1 << 20).decode() for v in b.column("value").to_pylist()]
            assert got == values("a", "b", "second-1")
            assert await fetch_values(conn2, "audit", 0) == values("a", "b", "second-1")

    run(body)
